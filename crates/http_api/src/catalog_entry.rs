//! `CatalogEntry`: where the active master put one region — its catalog,
//! HBase's `hbase:meta` locations, kept in ZooKeeper as one JSON znode per
//! region (`cluster/src/catalog.rs`). The master writes entries; a region
//! server reads the entry of a region an admin call names before it opens
//! or closes it (`server/src/admin.rs`), and the master's status shows
//! them all.
//!
//! Thread safety: plain data.

use serde::{Deserialize, Serialize};
use store::RegionState;

/// Where the master put one region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub table: String,
    /// The server the region is on or going to; `None`: on none.
    pub server: Option<String>,
    /// OPENING, OPEN, CLOSING, SPLITTING, MERGING (as a server reports
    /// them), OFFLINE, or CLOSED (closed by an operator, `server` the one
    /// it was closed on: it stays closed until an operator assigns it).
    pub state: RegionState,
    /// When this was recorded (ms since the epoch).
    pub at_ms: u64,
}

impl CatalogEntry {
    /// Whether it records the region in `state` on server `name`.
    pub fn is(&self, state: RegionState, name: &str) -> bool {
        self.state == state && self.server.as_deref() == Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_written_before_the_state_was_typed_still_read() {
        // The znodes an earlier master wrote: the state as HBase's name.
        let old = r#"{"table":"t","server":"h,1,2","state":"OPENING","at_ms":5}"#;
        let entry: CatalogEntry = serde_json::from_str(old).expect("parse");
        assert!(entry.is(RegionState::Opening, "h,1,2"));
        assert!(!entry.is(RegionState::Open, "h,1,2"));
        assert_eq!(serde_json::to_string(&entry).expect("json"), old);
    }
}
