//! `ServerReport`: what a region server tells the active master about
//! itself (`POST /report` on the master's HTTP port), HBase's
//! `RegionServerReport`, and the master's [`ReportAnswer`].
//!
//! A report names only what the server holds (its regions in any state but
//! OFFLINE) and what it saw change; never a region it does not hold. The
//! first report to a master is whole (`base: None`); every later one is a
//! delta against the last report the master acknowledged (`base`: that
//! report's `seq`). The master applies a delta only when `base` is the
//! last report it applied from that server; otherwise (a report lost, a
//! duplicate, a new master) it answers `need_full` and the server sends
//! its whole state next. So a lost or repeated report costs one whole
//! report, never a wrong view.
//!
//! What a delta carries, each entry "set to", never "add one":
//! - `held`: regions held now whose state changed (or newly held);
//! - `released`: regions held before and not now (closed, or moved away);
//! - `retired`: regions that no longer exist on this server at all (a
//!   split or merged parent, a dropped table's regions);
//! - `appeared`: regions new to this server that it does not hold (another
//!   server's split daughters or created table, taken from the root);
//! - `tables`: tables whose enabled state changed or that are new;
//!   `dropped_tables`: tables gone.
//!
//! A whole report lists no region the server does not hold, except the
//! one a new master asks for (`list_known`): one server, once per
//! takeover, lists every region it knows of, so regions created while no
//! master listened are found.
//!
//! Thread safety: plain data.

use serde::{Deserialize, Serialize};
use store::RegionState;

/// One region a server holds (or newly knows of).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedRegion {
    /// The encoded name.
    pub id: String,
    pub table: String,
    pub state: RegionState,
    /// In `appeared`: the region is a split or merge's daughter, which the
    /// server that split or merged opens itself (the master waits for its
    /// report, also when a whole report lists it). A created table's region
    /// is opened by the server that created it too: the master waits for a
    /// region that appears in a delta whatever this says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub daughter: bool,
}

/// A table and whether it is enabled, as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedTable {
    pub name: String,
    pub enabled: bool,
}

/// The server's load when it reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedLoad {
    /// Regions it serves (OPEN).
    pub open_regions: u64,
    /// Bytes of data in its memstores.
    pub memstore_bytes: u64,
    /// Puts, gets and scans served since it started (a counter).
    pub requests: u64,
}

/// A region server's report; see the module doc.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerReport {
    /// The server's member name (`host,port,startcode`).
    pub server: String,
    /// This report's number; grows by one per report the server makes.
    pub seq: u64,
    /// The report this one is a delta against; `None`: a whole report.
    #[serde(default)]
    pub base: Option<u64>,
    /// Where the server serves HBase's native RPC (whole reports only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_addr: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<ReportedRegion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub appeared: Vec<ReportedRegion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<ReportedTable>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_tables: Vec<String>,
    /// A whole report whose `appeared` lists every region this server
    /// knows of and does not hold (asked for by [`ReportAnswer::list_known`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lists_known: bool,
    /// The server's count of region opens and closes made for the master,
    /// read before this report's snapshot was taken: an open or close the
    /// master was told of with a higher count (its call's answer ends with
    /// [`changes_line`]) happened after the snapshot, so this report does
    /// not undo it in the master's view.
    #[serde(default)]
    pub changes_seen: u64,
    pub load: ReportedLoad,
}

/// The last line of a region server's answer to an open or close: its
/// change count once the call is done (see `ServerReport::changes_seen`).
pub fn changes_line(changes: u64) -> String {
    format!("changes {changes}")
}

/// The change count an answer ends with ([`changes_line`]), if any.
pub fn changes_in(answer: &str) -> Option<u64> {
    answer.lines().rev().find_map(|l| l.strip_prefix("changes ")?.trim().parse().ok())
}

impl ServerReport {
    /// Whether it says nothing but the load (a heartbeat).
    pub fn is_heartbeat(&self) -> bool {
        self.base.is_some()
            && self.held.is_empty()
            && self.released.is_empty()
            && self.retired.is_empty()
            && self.appeared.is_empty()
            && self.tables.is_empty()
            && self.dropped_tables.is_empty()
    }
}

/// The master's answer to a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportAnswer {
    /// The report was applied: the next delta may be against it.
    pub applied: bool,
    /// Send a whole report next (the master has no base for a delta).
    pub need_full: bool,
    /// Make the next whole report list every region known and not held
    /// (`ServerReport::lists_known`): a master that just took over asks one
    /// server once, so a table created while no master was active is known
    /// without every server listing every region.
    #[serde(default)]
    pub list_known: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_s_change_count_reads_back() {
        let answer = format!("opened 01\nfailed 02: no\n{}", changes_line(42));
        assert_eq!(changes_in(&answer), Some(42));
        assert_eq!(changes_in("opened 01"), None);
    }

    #[test]
    fn a_heartbeat_is_small_and_reads_back() {
        let report = ServerReport { server: "h,1,2".into(), seq: 7, base: Some(6), ..ServerReport::default() };
        assert!(report.is_heartbeat());
        let json = serde_json::to_string(&report).expect("json");
        assert!(json.len() < 120, "{json}");
        assert_eq!(serde_json::from_str::<ServerReport>(&json).expect("parse"), report);
        let whole = ServerReport { base: None, ..report };
        assert!(!whole.is_heartbeat(), "a whole report says the server holds nothing");
    }
}
