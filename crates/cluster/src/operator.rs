//! An operator's region moves, through the active master (HBase's shell
//! `move`, `unassign`, `assign`, which go through its `AssignmentManager`):
//! `POST /admin/move?region=ID[&server=NAME]`, `POST /admin/unassign?region=ID`
//! and `POST /admin/assign?region=ID[&server=NAME]` on the master's HTTP port.
//!
//! Why through the master: the catalog is the one authority over where a
//! region opens (`catalog.rs`). Each call records its intent in the catalog
//! first (CLOSING on the old server, then OPENING on the new one; CLOSED
//! for an unassign), and a region server obeys an assign or unassign only
//! when the catalog records it so (`server/src/admin.rs`), so no call made
//! to a region server directly can open a region twice.
//!
//! A call runs on the master's poller thread, between assignment passes,
//! one per iteration, on statuses read in the same iteration: it is refused
//! while any serving server's status is missing (a region it does not list
//! may be open there), while the region is in transition (by the statuses
//! or by the catalog's intents), or while its table is disabled somewhere.
//! A call whose caller stopped waiting is not run.
//!
//! Thread safety: [`OperatorCall`]s are sent over a channel by the HTTP
//! threads; the poller thread, the catalog's only writer, runs them.

use std::collections::HashMap;
use std::time::Instant;

use crate::assignment::{Listed, SLOW_CALL, encode, regions};
use crate::catalog::{CLOSED, Catalog};
use crate::membership::ServerInfo;
use crate::server_load::request;

/// What an operator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorCall {
    /// Close the region where it is open and open it on `to` (by server
    /// name), or on the least loaded other server.
    Move { region: String, to: Option<String> },
    /// Close the region; it stays closed until assigned.
    Unassign { region: String },
    /// Open a region no server holds, on `to` or the least loaded server.
    Assign { region: String, to: Option<String> },
}

/// A result, or an HTTP status and why the call was refused.
pub type Refusable<T> = Result<T, (u16, String)>;

/// A call's answer: its text, or why it was refused.
pub type Answer = Refusable<String>;

fn refused(code: u16, why: impl Into<String>) -> (u16, String) {
    (code, why.into())
}

/// Parses admin call `call` (the path after `/admin/`) with its query.
pub fn parse(call: &str, query: &str) -> Result<OperatorCall, (u16, String)> {
    let mut region = None;
    let mut server = None;
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v = percent_encoding::percent_decode_str(v)
            .decode_utf8()
            .map_err(|_| refused(400, format!("{k}: not valid percent-encoded UTF-8")))?
            .into_owned();
        match k {
            "region" => region = Some(v),
            "server" => server = Some(v).filter(|s| !s.is_empty()),
            other => return Err(refused(400, format!("unknown parameter {other:?}"))),
        }
    }
    let region = region.filter(|r| !r.is_empty()).ok_or_else(|| refused(400, "region= is required"))?;
    // Encoded region names are hex digits; nothing else reaches a path.
    if !region.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(refused(400, format!("{region:?} is not an encoded region name")));
    }
    Ok(match call {
        "move" => OperatorCall::Move { region, to: server },
        "unassign" if server.is_none() => OperatorCall::Unassign { region },
        "unassign" => return Err(refused(400, "unassign takes no server=")),
        "assign" => OperatorCall::Assign { region, to: server },
        other => return Err(refused(404, format!("no admin call {other:?} on the master"))),
    })
}

/// Where a region is, from every serving server's status.
struct Placement {
    listed: Listed,
    /// The server holding it and its state there (OPEN preferred).
    holder: Option<(String, String)>,
    /// Open regions per serving server.
    open: HashMap<String, usize>,
    /// Some server lists its table disabled.
    disabled: bool,
}

fn place(region: &str, serving: &[&ServerInfo], docs: &HashMap<String, serde_json::Value>) -> Refusable<Placement> {
    let mut found: Option<Listed> = None;
    let mut holder: Option<(String, String)> = None;
    let mut open = HashMap::new();
    let mut listings = Vec::new();
    for s in serving {
        let doc = docs.get(&s.name).ok_or_else(|| {
            refused(503, format!("the status of region server {} could not be read; try again", s.name))
        })?;
        let listed = regions(doc);
        open.insert(s.name.clone(), listed.values().filter(|l| l.state == "OPEN").count());
        if let Some(l) = listed.get(region) {
            if l.state != "OFFLINE" && holder.as_ref().is_none_or(|(_, state)| state != "OPEN") {
                holder = Some((s.name.clone(), l.state.clone()));
            }
            found.get_or_insert_with(|| l.clone());
        }
        listings.push(listed);
    }
    // Disabled on any server: a DDL in progress there.
    let disabled = found
        .as_ref()
        .is_some_and(|f| listings.iter().flat_map(|l| l.values()).any(|l| l.table == f.table && !l.enabled));
    let listed = found.ok_or_else(|| refused(404, format!("no region {region} in the cluster")))?;
    Ok(Placement { listed, holder, open, disabled })
}

/// The server named `to`, which must be serving; or the serving server
/// with the fewest open regions other than `except`.
fn target<'a>(
    to: Option<&str>,
    serving: &[&'a ServerInfo],
    open: &HashMap<String, usize>,
    except: Option<&str>,
) -> Refusable<&'a ServerInfo> {
    match to {
        Some(name) => {
            let s = serving
                .iter()
                .find(|s| s.name == name)
                .ok_or_else(|| refused(400, format!("{name} is not a serving region server of this cluster")))?;
            if Some(name) == except {
                return Err(refused(409, format!("the region is already open on {name}")));
            }
            Ok(s)
        }
        None => serving
            .iter()
            .filter(|s| Some(s.name.as_str()) != except)
            .min_by_key(|s| (open.get(&s.name).copied().unwrap_or(0), s.name.clone()))
            .copied()
            .ok_or_else(|| refused(409, "no other serving region server to move it to")),
    }
}

/// Runs `call` against the live servers `live` (with their statuses
/// `docs`, read in this iteration), recording each step in `catalog`.
pub fn run(
    call: &OperatorCall,
    live: &[ServerInfo],
    docs: &HashMap<String, serde_json::Value>,
    catalog: &mut Catalog,
) -> Answer {
    let serving: Vec<&ServerInfo> = live.iter().filter(|s| s.is_serving()).collect();
    let region = match call {
        OperatorCall::Move { region, .. } | OperatorCall::Unassign { region } | OperatorCall::Assign { region, .. } => {
            region
        }
    };
    let p = place(region, &serving, docs)?;
    if p.disabled {
        return Err(refused(409, format!("table {} is disabled (or being altered) on some server", p.listed.table)));
    }
    let table = p.listed.table.clone();
    let by_name = |name: &str| serving.iter().find(|s| s.name == name).copied();
    let started = Instant::now();
    let fail = |what: &str, e: crate::ClusterError| refused(503, format!("{what}: {e}"));
    let recorded = catalog.get(region).cloned();
    match call {
        OperatorCall::Move { .. } | OperatorCall::Unassign { .. } => {
            let (from, state) = p.holder.clone().ok_or_else(|| refused(409, format!("region {region} is not open")))?;
            if state != "OPEN" {
                return Err(refused(409, format!("region {region} is {state} on {from}; try again once it settles")));
            }
            // The catalog must agree (an intent of an earlier call or pass
            // not yet carried out means the region is in transition).
            if let Some(l) = &recorded
                && (l.server.as_deref() != Some(from.as_str()) || l.state != "OPEN")
            {
                return Err(refused(
                    409,
                    format!(
                        "region {region} is open on {from} but the catalog records it {} on {}; try again once it \
                         settles",
                        l.state,
                        l.server.as_deref().unwrap_or("no server")
                    ),
                ));
            }
            let from_info = by_name(&from).ok_or_else(|| refused(409, format!("{from} is not serving")))?;
            let to = match call {
                OperatorCall::Move { to, .. } => Some(target(to.as_deref(), &serving, &p.open, Some(&from))?),
                _ => None,
            };
            let closing = if to.is_some() { "CLOSING" } else { CLOSED };
            catalog.record(region, &table, Some(&from), closing).map_err(|e| fail("recording the close", e))?;
            request(&from_info.http, "POST", &format!("/admin/unassign?region={}", encode(region)), SLOW_CALL)
                .map_err(|e| refused(502, format!("closing region {region} on {from} failed: {e}")))?;
            let Some(to) = to else {
                return Ok(format!("closed region {region} of {table} on {from}; it stays closed until assigned"));
            };
            open_on(catalog, region, &table, to).map(|()| {
                format!("moved region {region} of {table} from {from} to {} ({:.2} s)", to.name, secs(started))
            })
        }
        OperatorCall::Assign { to, .. } => {
            if let Some((server, state)) = &p.holder {
                return Err(refused(409, format!("region {region} is {state} on {server}")));
            }
            // An open on its way (recorded, not yet listed) counts as held.
            if let Some(l) = &recorded
                && l.state == "OPENING"
                && l.server.as_deref().is_some_and(|s| serving.iter().any(|x| x.name == s))
            {
                return Err(refused(
                    409,
                    format!("region {region} is being opened on {}", l.server.as_deref().unwrap_or("")),
                ));
            }
            let to = target(to.as_deref(), &serving, &p.open, None)?;
            open_on(catalog, region, &table, to)
                .map(|()| format!("assigned region {region} of {table} to {} ({:.2} s)", to.name, secs(started)))
        }
    }
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

/// Records `region` OPENING on `to`, asks `to` to open it, records it OPEN.
/// A failed open leaves it OPENING there; the next pass takes it as
/// unassigned once the grace for an open in flight has passed.
fn open_on(catalog: &mut Catalog, region: &str, table: &str, to: &ServerInfo) -> Refusable<()> {
    catalog
        .record(region, table, Some(&to.name), "OPENING")
        .map_err(|e| refused(503, format!("recording region {region} opening on {}: {e}", to.name)))?;
    request(&to.http, "POST", &format!("/admin/assign?region={}", encode(region)), SLOW_CALL)
        .map_err(|e| refused(502, format!("opening region {region} on {} failed: {e}", to.name)))?;
    let _ = catalog.record(region, table, Some(&to.name), "OPEN");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_parsed_and_hostile_queries_refused() {
        assert_eq!(
            parse("move", "region=0a1B&server=h%2C1%2C2"),
            Ok(OperatorCall::Move { region: "0a1B".into(), to: Some("h,1,2".into()) })
        );
        assert_eq!(parse("unassign", "region=ff"), Ok(OperatorCall::Unassign { region: "ff".into() }));
        assert_eq!(parse("assign", "region=ff&server="), Ok(OperatorCall::Assign { region: "ff".into(), to: None }));
        for (call, query, code) in [
            ("move", "", 400),
            ("move", "region=..%2F..", 400),
            ("move", "region=ab%2", 400),
            ("move", "region=%FF", 400),
            ("move", "region=ab&evil=1", 400),
            ("unassign", "region=ab&server=x", 400),
            ("split", "region=ab", 404),
        ] {
            assert_eq!(parse(call, query).map_err(|(c, _)| c), Err(code), "{call}?{query}");
        }
    }
}
