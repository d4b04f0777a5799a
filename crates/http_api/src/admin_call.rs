//! The admin calls that change where regions are, typed: each renders its
//! request path (`POST /admin/<call>?<query>`) and parses it back, so the
//! side that sends a call and the side that obeys it cannot disagree on a
//! name or a parameter.
//!
//! - [`RegionServerCall`]: what the master (and a peer) asks of a region
//!   server: recover a dead server's WAL, open or close a region as the
//!   catalog records, take tables from the root.
//! - [`OperatorCall`]: what an operator asks of the master (HBase's shell
//!   `move`, `unassign`, `assign`).
//!
//! Parameters are percent-encoded UTF-8 (`+` is a space, as in a form).
//! Parsing checks the syntax of what could reach a path: a server is its
//! member name (`host,port,startcode`), a region an operator names to the
//! master its encoded name (hex digits); a region server looks regions and
//! tables up by name in the store, which refuses what it does not hold. A
//! parameter a call does not take is refused.
//!
//! Thread safety: plain data.

use std::fmt;

/// Why a request was refused before it ran: the HTTP status to answer with
/// (400 bad parameter, 404 no such call) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub status: u16,
    pub message: String,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}

fn bad(message: impl Into<String>) -> CallError {
    CallError { status: 400, message: message.into() }
}

/// A call to a region server's HTTP port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionServerCall {
    /// List the tables created elsewhere and take every table's state and
    /// regions from the root (the master's first step in each pass).
    Refresh,
    /// Open a region the catalog records OPENING on this server.
    Assign { region: String },
    /// Close a region the catalog records CLOSING or CLOSED on this server.
    Unassign { region: String },
    /// Fence a dead server's WAL directory and split it into recovered
    /// edits (only for a server ZooKeeper no longer lists).
    Recover { server: String },
    /// Take table `table`'s descriptor and regions from the root after
    /// another server's DDL, split or merge.
    SyncTable { table: String },
    /// Open several regions the catalog records OPENING on this server, in
    /// one call (the master's batched assignment; at most
    /// [`MAX_BATCH`] regions). The answer lists each region's outcome, one
    /// line per region: `opened ID` or `failed ID: why`.
    AssignBatch { regions: Vec<String> },
    /// List the servers with a WAL directory on the shared root (the master
    /// asks one live server when it becomes active and when a server
    /// leaves, then recovers the dead ones'); the answer is a JSON array.
    WalOwners,
}

/// Regions one [`RegionServerCall::AssignBatch`] names at most (its query
/// stays under 8 KiB: encoded names are 16 to 32 hex digits).
pub const MAX_BATCH: usize = 200;

impl RegionServerCall {
    /// The call's name: the path after `/admin/`.
    pub fn name(&self) -> &'static str {
        match self {
            RegionServerCall::Refresh => "refresh",
            RegionServerCall::Assign { .. } => "assign",
            RegionServerCall::Unassign { .. } => "unassign",
            RegionServerCall::Recover { .. } => "recover",
            RegionServerCall::SyncTable { .. } => "sync_table",
            RegionServerCall::AssignBatch { .. } => "assign_batch",
            RegionServerCall::WalOwners => "wal_owners",
        }
    }

    /// The request path with its query.
    pub fn path(&self) -> String {
        let query = match self {
            RegionServerCall::Refresh => return "/admin/refresh".to_string(),
            RegionServerCall::WalOwners => return "/admin/wal_owners".to_string(),
            // Encoded names are hex digits: the comma needs no escaping.
            RegionServerCall::AssignBatch { regions } => {
                return format!("/admin/assign_batch?regions={}", regions.join(","));
            }
            RegionServerCall::Assign { region } | RegionServerCall::Unassign { region } => ("region", region),
            RegionServerCall::Recover { server } => ("server", server),
            RegionServerCall::SyncTable { table } => ("table", table),
        };
        format!("/admin/{}?{}={}", self.name(), query.0, encode(query.1))
    }

    /// Call `name` with `query`; `None` when `name` is not one of these
    /// calls (the server has others: flush, split, merge, alter).
    pub fn parse(name: &str, query: &str) -> Option<Result<RegionServerCall, CallError>> {
        let parsed = |key: &str| -> Result<String, CallError> {
            let mut params = Params::parse(query, &[key])?;
            params.required(key)
        };
        Some(match name {
            "refresh" => Params::parse(query, &[]).map(|_| RegionServerCall::Refresh),
            // The store looks the region up by name and refuses one it does
            // not hold (`no region named ...`); nothing joins it into a path.
            "assign" => parsed("region").map(|region| RegionServerCall::Assign { region }),
            "unassign" => parsed("region").map(|region| RegionServerCall::Unassign { region }),
            "recover" => parsed("server").and_then(checked_server).map(|server| RegionServerCall::Recover { server }),
            "sync_table" => parsed("table").map(|table| RegionServerCall::SyncTable { table }),
            "wal_owners" => Params::parse(query, &[]).map(|_| RegionServerCall::WalOwners),
            "assign_batch" => parsed("regions").and_then(|list| {
                let regions = list.split(',').map(|r| checked_region(r.to_string())).collect::<Result<Vec<_>, _>>()?;
                if regions.len() > MAX_BATCH || regions.iter().any(String::is_empty) {
                    return Err(bad(format!("regions= names 1 to {MAX_BATCH} encoded region names")));
                }
                Ok(RegionServerCall::AssignBatch { regions })
            }),
            _ => return None,
        })
    }
}

/// An operator's call to the active master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorCall {
    /// A region's move, close or open ([`RegionCall`]).
    Region(RegionCall),
    /// Run the balancer now (HBase's shell `balancer`): it moves regions
    /// only when it is switched on and nothing is in transition.
    Balance,
    /// Switch the periodic balancer on or off (HBase's `balance_switch`);
    /// the answer says the previous state.
    BalanceSwitch { on: bool },
}

/// An operator's call about one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionCall {
    /// Close the region where it is open and open it on `to` (by server
    /// name), or on the least loaded other server.
    Move { region: String, to: Option<String> },
    /// Close the region; it stays closed until assigned.
    Unassign { region: String },
    /// Open a region no server holds, on `to` or the least loaded server.
    Assign { region: String, to: Option<String> },
}

impl RegionCall {
    pub fn name(&self) -> &'static str {
        match self {
            RegionCall::Move { .. } => "move",
            RegionCall::Unassign { .. } => "unassign",
            RegionCall::Assign { .. } => "assign",
        }
    }

    /// The region the call is about.
    pub fn region(&self) -> &str {
        match self {
            RegionCall::Move { region, .. } | RegionCall::Unassign { region } | RegionCall::Assign { region, .. } => {
                region
            }
        }
    }
}

impl OperatorCall {
    pub fn name(&self) -> &'static str {
        match self {
            OperatorCall::Region(call) => call.name(),
            OperatorCall::Balance => "balancer",
            OperatorCall::BalanceSwitch { .. } => "balance_switch",
        }
    }

    /// The request path with its query.
    pub fn path(&self) -> String {
        let call = match self {
            OperatorCall::Region(call) => call,
            OperatorCall::Balance => return "/admin/balancer".to_string(),
            OperatorCall::BalanceSwitch { on } => return format!("/admin/balance_switch?on={on}"),
        };
        let to = match call {
            RegionCall::Move { to, .. } | RegionCall::Assign { to, .. } => to.as_deref(),
            RegionCall::Unassign { .. } => None,
        };
        let server = to.map_or(String::new(), |s| format!("&server={}", encode(s)));
        format!("/admin/{}?region={}{server}", self.name(), encode(call.region()))
    }

    /// Call `name` (the path after `/admin/`) with its query; an unknown
    /// call is refused with 404.
    pub fn parse(name: &str, query: &str) -> Result<OperatorCall, CallError> {
        match name {
            "balancer" => {
                Params::parse(query, &[])?;
                return Ok(OperatorCall::Balance);
            }
            "balance_switch" => {
                let mut params = Params::parse(query, &["on"])?;
                let on = match params.required("on")?.as_str() {
                    "true" => true,
                    "false" => false,
                    other => return Err(bad(format!("on= is true or false, not {other:?}"))),
                };
                return Ok(OperatorCall::BalanceSwitch { on });
            }
            _ => {}
        }
        let mut params = Params::parse(query, &["region", "server"])?;
        let region = checked_region(params.required("region")?)?;
        // An empty server= (the shell's `move 'r', ''`) means "any".
        let to = params.take("server").filter(|s| !s.is_empty());
        Ok(OperatorCall::Region(match name {
            "move" => RegionCall::Move { region, to },
            "unassign" if to.is_none() => RegionCall::Unassign { region },
            "unassign" => return Err(bad("unassign takes no server=")),
            "assign" => RegionCall::Assign { region, to },
            other => return Err(CallError { status: 404, message: format!("no admin call {other:?} on the master") }),
        }))
    }
}

/// A query's parameters, decoded, each known to the call.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: &str, known: &[&str]) -> Result<Params, CallError> {
        let mut out = Vec::new();
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            if !known.contains(&k) {
                return Err(bad(format!("unknown parameter {k:?}")));
            }
            let v = percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8()
                .map_err(|_| bad(format!("{k}: not valid percent-encoded UTF-8")))?
                .into_owned();
            out.push((k.to_string(), v));
        }
        Ok(Params(out))
    }

    fn take(&mut self, key: &str) -> Option<String> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.swap_remove(at).1)
    }

    fn required(&mut self, key: &str) -> Result<String, CallError> {
        self.take(key).filter(|v| !v.is_empty()).ok_or_else(|| bad(format!("{key}= is required")))
    }
}

/// An encoded region name is hex digits; nothing else reaches a path.
fn checked_region(region: String) -> Result<String, CallError> {
    if region.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(region)
    } else {
        Err(bad(format!("{region:?} is not an encoded region name")))
    }
}

fn checked_server(server: String) -> Result<String, CallError> {
    store::names::check_server_name(&server).map_err(|e| bad(e.to_string()))?;
    Ok(server)
}

/// `text` percent-encoded for a query string (every byte but the
/// unreserved ones).
pub fn encode(text: &str) -> String {
    const RESERVED: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    percent_encoding::utf8_percent_encode(text, RESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(call: RegionServerCall) {
        let path = call.path();
        let (name, query) = path.trim_start_matches("/admin/").split_once('?').unwrap_or((&path[7..], ""));
        assert_eq!(RegionServerCall::parse(name, query), Some(Ok(call)), "{path}");
    }

    #[test]
    fn region_server_calls_read_back_as_sent() {
        round_trip(RegionServerCall::Refresh);
        round_trip(RegionServerCall::Assign { region: "00000000000000ab".into() });
        round_trip(RegionServerCall::Unassign { region: "0a".into() });
        round_trip(RegionServerCall::Recover { server: "host-1.example,4711,1764000000000".into() });
        round_trip(RegionServerCall::SyncTable { table: "ns:t-1".into() });
        round_trip(RegionServerCall::WalOwners);
        round_trip(RegionServerCall::AssignBatch { regions: vec!["0a".into(), "00000000000000ab".into()] });
        assert_eq!(RegionServerCall::Recover { server: "h,1,2".into() }.path(), "/admin/recover?server=h%2C1%2C2");
        assert_eq!(RegionServerCall::parse("flush", "table=t"), None, "not one of these calls");
    }

    #[test]
    fn hostile_region_server_calls_are_refused() {
        let refused = |name: &str, query: &str| match RegionServerCall::parse(name, query) {
            Some(Err(e)) => e.status,
            other => panic!("{name}?{query} was not refused: {other:?}"),
        };
        assert_eq!(refused("assign", ""), 400);
        assert_eq!(refused("assign", "region=0a&force=1"), 400);
        assert_eq!(refused("recover", "server=..%2Fdata%2Ft"), 400);
        assert_eq!(refused("recover", "server=h,1"), 400);
        assert_eq!(refused("recover", "server=%FF"), 400);
        assert_eq!(refused("refresh", "x=1"), 400);
        assert_eq!(refused("sync_table", "table="), 400);
        assert_eq!(refused("assign_batch", "regions=0a,..%2Fx"), 400);
        assert_eq!(refused("assign_batch", "regions=0a,,0b"), 400);
        let too_many = vec!["0a"; MAX_BATCH + 1].join(",");
        assert_eq!(refused("assign_batch", &format!("regions={too_many}")), 400);
        assert_eq!(refused("wal_owners", "x=1"), 400);
    }

    #[test]
    fn operator_calls_read_back_as_sent_and_hostile_ones_are_refused() {
        for call in [
            OperatorCall::Region(RegionCall::Move { region: "0a".into(), to: Some("h,1,2".into()) }),
            OperatorCall::Region(RegionCall::Move { region: "0a".into(), to: None }),
            OperatorCall::Region(RegionCall::Unassign { region: "0b".into() }),
            OperatorCall::Region(RegionCall::Assign { region: "0c".into(), to: None }),
            OperatorCall::Balance,
            OperatorCall::BalanceSwitch { on: false },
            OperatorCall::BalanceSwitch { on: true },
        ] {
            let path = call.path();
            let (name, query) = path.trim_start_matches("/admin/").split_once('?').unwrap_or((&path[7..], ""));
            assert_eq!(OperatorCall::parse(name, query), Ok(call), "{path}");
        }
        assert_eq!(
            OperatorCall::parse("move", "region=0a&server="),
            Ok(OperatorCall::Region(RegionCall::Move { region: "0a".into(), to: None }))
        );
        let status = |name: &str, query: &str| OperatorCall::parse(name, query).expect_err("refused").status;
        assert_eq!(status("move", "region=..%2Fx"), 400);
        assert_eq!(status("move", "region=ab%2"), 400);
        assert_eq!(status("move", "server=h,1,2"), 400);
        assert_eq!(status("move", "region=0a&to=h"), 400);
        assert_eq!(status("unassign", "region=0a&server=h,1,2"), 400);
        assert_eq!(status("drop", "region=0a"), 404);
        assert_eq!(status("move", "region=%C3%28"), 400);
        assert_eq!(status("balancer", "force=1"), 400);
        assert_eq!(status("balance_switch", ""), 400);
        assert_eq!(status("balance_switch", "on=yes"), 400);
    }
}
