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
//! Thread safety: [`http_api::OperatorCall`]s are sent over a channel by the HTTP
//! threads; the poller thread, the catalog's only writer, runs them.

use std::collections::HashMap;
use std::time::Instant;

use http_api::{RegionCall, RegionServerCall, RegionState, ServerStatus};

use crate::assignment::executor::Noted;
use crate::assignment::plan::{Listed, Listing};
use crate::assignment::{RegionServers, SLOW_CALL};
use crate::catalog::MasterCatalog;
use crate::membership::ServerInfo;

/// A result, or an HTTP status and why the call was refused.
pub type Refusable<T> = Result<T, (u16, String)>;

/// A call's answer: its text, or why it was refused.
pub type Answer = Refusable<String>;

fn refused(code: u16, why: impl Into<String>) -> (u16, String) {
    (code, why.into())
}

/// Where a region is, from every serving server's status.
struct Placement {
    listed: Listed,
    /// The server holding it and its state there (OPEN preferred).
    holder: Option<(String, RegionState)>,
    /// Open regions per serving server.
    open: HashMap<String, usize>,
    /// Some server lists its table disabled.
    disabled: bool,
}

fn place(region: &str, serving: &[&ServerInfo], statuses: &HashMap<String, ServerStatus>) -> Refusable<Placement> {
    if let Some(s) = serving.iter().find(|s| !statuses.contains_key(&s.name)) {
        return Err(refused(503, format!("the status of region server {} could not be read; try again", s.name)));
    }
    let listing = Listing::of(serving, statuses);
    let listed =
        listing.all.get(region).cloned().ok_or_else(|| refused(404, format!("no region {region} in the cluster")))?;
    Ok(Placement {
        // Disabled on any server: a DDL in progress there.
        disabled: listing.disabled.contains(&listed.table),
        holder: listing.holders.get(region).cloned(),
        open: listing.open.into_iter().collect(),
        listed,
    })
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

/// Runs `call` against the live servers `live` (with their `statuses`,
/// read in this iteration) through `servers`, recording each step in
/// `catalog`.
pub fn run(
    call: &RegionCall,
    live: &[ServerInfo],
    statuses: &HashMap<String, ServerStatus>,
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    noted: &mut Vec<Noted>,
) -> Answer {
    let serving: Vec<&ServerInfo> = live.iter().filter(|s| s.is_serving()).collect();
    let region = call.region();
    let p = place(region, &serving, statuses)?;
    if p.disabled {
        return Err(refused(409, format!("table {} is disabled (or being altered) on some server", p.listed.table)));
    }
    let table = p.listed.table.clone();
    let by_name = |name: &str| serving.iter().find(|s| s.name == name).copied();
    let started = Instant::now();
    let fail = |what: &str, e: crate::ClusterError| refused(503, format!("{what}: {e}"));
    let recorded = catalog.get(region);
    match call {
        RegionCall::Move { .. } | RegionCall::Unassign { .. } => {
            let (from, state) = p.holder.clone().ok_or_else(|| refused(409, format!("region {region} is not open")))?;
            if state != RegionState::Open {
                return Err(refused(409, format!("region {region} is {state} on {from}; try again once it settles")));
            }
            // The catalog must agree (an intent of an earlier call or pass
            // not yet carried out means the region is in transition).
            if let Some(l) = &recorded
                && !l.is(RegionState::Open, &from)
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
                RegionCall::Move { to, .. } => Some(target(to.as_deref(), &serving, &p.open, Some(&from))?),
                _ => None,
            };
            let closing = if to.is_some() { RegionState::Closing } else { RegionState::Closed };
            catalog.record(region, &table, Some(&from), closing).map_err(|e| fail("recording the close", e))?;
            let answer = servers
                .call(from_info, &RegionServerCall::Unassign { region: region.to_string() }, SLOW_CALL)
                .map_err(|e| refused(502, format!("closing region {region} on {from} failed: {e}")))?;
            noted.extend(noted_by(&answer, &from, region, &table, false));
            let Some(to) = to else {
                return Ok(format!("closed region {region} of {table} on {from}; it stays closed until assigned"));
            };
            open_on(servers, catalog, region, &table, to, noted).map(|()| {
                format!("moved region {region} of {table} from {from} to {} ({:.2} s)", to.name, secs(started))
            })
        }
        RegionCall::Assign { to, .. } => {
            if let Some((server, state)) = &p.holder {
                return Err(refused(409, format!("region {region} is {state} on {server}")));
            }
            // An open on its way (recorded, not yet listed) counts as held.
            if let Some(l) = &recorded
                && l.state == RegionState::Opening
                && l.server.as_deref().is_some_and(|s| serving.iter().any(|x| x.name == s))
            {
                return Err(refused(
                    409,
                    format!("region {region} is being opened on {}", l.server.as_deref().unwrap_or("")),
                ));
            }
            let to = target(to.as_deref(), &serving, &p.open, None)?;
            open_on(servers, catalog, region, &table, to, noted)
                .map(|()| format!("assigned region {region} of {table} to {} ({:.2} s)", to.name, secs(started)))
        }
    }
}

/// What an open's or close's `answer` tells the master's view.
fn noted_by(answer: &str, server: &str, region: &str, table: &str, open: bool) -> Option<Noted> {
    let changes = http_api::changes_in(answer)?;
    Some(Noted { server: server.to_string(), region: region.to_string(), table: table.to_string(), open, changes })
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

/// Records `region` OPENING on `to`, asks `to` to open it, records it OPEN.
/// A failed open leaves it OPENING there; the next pass takes it as
/// unassigned once the grace for an open in flight has passed.
fn open_on(
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    region: &str,
    table: &str,
    to: &ServerInfo,
    noted: &mut Vec<Noted>,
) -> Refusable<()> {
    catalog
        .record(region, table, Some(&to.name), RegionState::Opening)
        .map_err(|e| refused(503, format!("recording region {region} opening on {}: {e}", to.name)))?;
    let answer = servers
        .call(to, &RegionServerCall::Assign { region: region.to_string() }, SLOW_CALL)
        .map_err(|e| refused(502, format!("opening region {region} on {} failed: {e}", to.name)))?;
    noted.extend(noted_by(&answer, &to.name, region, table, true));
    let _ = catalog.record(region, table, Some(&to.name), RegionState::Open);
    Ok(())
}
