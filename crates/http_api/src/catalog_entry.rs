//! `CatalogEntry`: where the active master put one region — its catalog,
//! HBase's `hbase:meta` locations, kept in a log on the shared root
//! (`cluster/src/catalog.rs`). The master writes entries; a region server
//! asks the active master for the entry of a region an admin call names
//! before it opens or closes it (`server/src/admin.rs`) and for the
//! location of a region held elsewhere (`GET /catalog`, [`CatalogLookup`]),
//! and the master's status shows them all.
//!
//! Thread safety: plain data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use store::RegionState;

/// The most regions one `GET /catalog?regions=ID,…` names.
pub const MAX_LOOKUP: usize = 1_000;

/// The active master's answer to `GET /catalog?regions=ID,…`: the entry of
/// each region it has one for (a region it has none for is left out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogLookup {
    pub regions: BTreeMap<String, LocatedEntry>,
}

/// A catalog entry, with the addresses of its server when that server is
/// a live member serving clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocatedEntry {
    #[serde(flatten)]
    pub entry: CatalogEntry,
    /// Its server's Thrift address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thrift: Option<String>,
    /// Its server's HBase RPC address, when it serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<String>,
}

/// Whether `id` may be a region id in a lookup (what the master looks up
/// is a map key, never a path; this only keeps nonsense out).
pub fn is_lookup_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

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
