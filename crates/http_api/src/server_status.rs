//! `ServerStatus`: a region server's `GET /status` document.
//!
//! Who reads it: the master (regions and their states, the WAL directories
//! on the root, request counters for the load), peer servers (which regions
//! a peer has open), the shell (`status`, `list_regions`, the cluster's
//! servers), the bench (a server's counters) and the tests. The status page
//! renders it for people.
//!
//! In a cluster every server lists every region of the shared root: those
//! it serves in their state (OPEN, OPENING, CLOSING, ...), those it does
//! not as OFFLINE. The memstore's structure per family (`families`) and the
//! recent events are for people; the fields programs read are typed, the
//! rest (`thrift`, `requests`, `recent_events`) are documents of their own
//! kept as JSON values.
//!
//! Thread safety: plain data.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::RegionState;
use store::metrics::{FamilyMetrics, StoreTotals};
use store::tasks::TaskStatus;

/// A region server's status document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub server: ServerSection,
    /// The store's counters (they never go backwards) and levels.
    pub totals: StoreTotals,
    /// Every table, with every region this server lists.
    pub tables: Vec<TableStatus>,
    /// The latest disk flushes and compactions (`store::events::StoreEvent`).
    #[serde(default)]
    pub recent_events: Vec<Value>,
    /// Request rates over recent periods (`server::request_history`).
    #[serde(default)]
    pub requests: Value,
    /// The flushes, compactions, splits and merges running now.
    #[serde(default)]
    pub tasks: Vec<TaskStatus>,
}

impl ServerStatus {
    /// Every region listed, with its table.
    pub fn regions(&self) -> impl Iterator<Item = (&TableStatus, &RegionStatus)> {
        self.tables.iter().flat_map(|t| t.regions.iter().map(move |r| (t, r)))
    }

    /// The regions this server serves (OPEN).
    pub fn open_regions(&self) -> impl Iterator<Item = &RegionStatus> {
        self.regions().map(|(_, r)| r).filter(|r| r.state == RegionState::Open)
    }

    /// The encoded names of the regions this server serves.
    pub fn open_region_ids(&self) -> Vec<String> {
        self.open_regions().map(|r| r.id.clone()).collect()
    }

    /// Table `name`, if listed.
    pub fn table(&self, name: &str) -> Option<&TableStatus> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// The server itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSection {
    pub version: String,
    pub uptime_secs: u64,
    /// Where its store lives (a local directory, or the HDFS root's path).
    pub data_dir: PathBuf,
    pub thrift_addr: String,
    /// Where HBase's native RPC listens (absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_addr: Option<String>,
    /// The Thrift port's connection counters (`server::thrift::listener`).
    #[serde(default)]
    pub thrift: Value,
    pub open_scanners: u64,
    /// Bytes the open scanners keep alive (blocks, memstore segments).
    pub scanner_pinned_bytes: u64,
    /// Scanners busy in a call when counted (their bytes are not).
    pub scanners_busy_uncounted: u64,
    pub scanners_closed_on_disconnect: u64,
    pub global_memstore_limit: u64,
    /// In a cluster: this server's member name (`host,port,startcode`).
    pub member: Option<String>,
    /// In a cluster: the cluster as this server reads it from ZooKeeper.
    pub cluster: Option<ClusterSeen>,
    /// In a cluster: the servers with a WAL directory on the shared root
    /// (the master recovers those of dead servers).
    pub wal_owners: Option<Vec<String>>,
    /// Why `wal_owners` could not be listed, if it could not.
    pub wal_owners_error: Option<String>,
}

/// The cluster as a member reads it from ZooKeeper.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterSeen {
    pub active_master: Option<MemberAddress>,
    /// Masters in the election (active and standby).
    pub masters: usize,
    /// The live region servers.
    pub servers: Vec<MemberAddress>,
    /// Why ZooKeeper could not be read (then the rest is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A member's name and addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberAddress {
    pub name: String,
    /// Its Thrift address (empty for a master).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thrift: String,
    /// Its HTTP address.
    pub http: String,
}

/// A table and the regions listed of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableStatus {
    pub name: String,
    pub enabled: bool,
    pub regions: Vec<RegionStatus>,
}

/// One region as a server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionStatus {
    /// The encoded name (also its directory's name).
    pub id: String,
    /// HBase's region name: table, start row, id.
    pub name: String,
    /// OFFLINE where another server (or none) holds it.
    pub state: RegionState,
    /// Keys as HBase's `Bytes.toStringBinary` prints them.
    pub start_key: String,
    pub end_key: String,
    pub memstore_data_bytes: u64,
    pub memstore_heap_bytes: u64,
    pub files_bytes: u64,
    /// Gets and region scanners opened since the region opened here.
    #[serde(default)]
    pub read_requests: u64,
    /// Rows written since the region opened here.
    #[serde(default)]
    pub write_requests: u64,
    #[serde(default)]
    pub families: Vec<FamilyStatus>,
}

impl RegionStatus {
    /// A region listed in `state` with nothing in it (tests, fakes).
    pub fn listed(id: &str, state: RegionState) -> RegionStatus {
        RegionStatus {
            id: id.to_string(),
            name: String::new(),
            state,
            start_key: String::new(),
            end_key: String::new(),
            memstore_data_bytes: 0,
            memstore_heap_bytes: 0,
            files_bytes: 0,
            read_requests: 0,
            write_requests: 0,
            families: Vec::new(),
        }
    }
}

/// One family's memstore, live: the active segment, the pipeline and the
/// snapshot being flushed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyStatus {
    pub family: String,
    pub policy: String,
    pub active: SegmentCounts,
    pub pipeline: Vec<PipelineSegment>,
    pub snapshot: Option<SnapshotStatus>,
    /// The family's counters (none for a region opened a moment ago).
    pub counters: Option<FamilyMetrics>,
}

/// What a memstore segment holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentCounts {
    pub cells: u64,
    pub data_bytes: u64,
    pub index_bytes: u64,
}

/// A segment of the compaction pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineSegment {
    pub id: u64,
    /// Its index's layout (skiplist, cell array, cell chunk).
    pub layout: String,
    pub stats: SegmentCounts,
}

/// The snapshot a flush is writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStatus {
    pub id: u64,
    pub segments: Vec<SnapshotSegment>,
}

/// A segment of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotSegment {
    pub layout: String,
    pub stats: SegmentCounts,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> ServerStatus {
        let table = |name: &str, regions: Vec<RegionStatus>| TableStatus { name: name.into(), enabled: true, regions };
        ServerStatus {
            tables: vec![
                table(
                    "t",
                    vec![RegionStatus::listed("a", RegionState::Open), RegionStatus::listed("b", RegionState::Offline)],
                ),
                table(
                    "u",
                    vec![RegionStatus::listed("c", RegionState::Closing), RegionStatus::listed("d", RegionState::Open)],
                ),
            ],
            ..ServerStatus::default()
        }
    }

    #[test]
    fn only_open_regions_are_served() {
        assert_eq!(status().open_region_ids(), ["a", "d"]);
        assert!(ServerStatus::default().open_region_ids().is_empty());
    }

    #[test]
    fn a_status_reads_back_as_written_with_hbases_state_names() {
        let mut s = status();
        s.server.member = Some("h,1,2".into());
        s.server.cluster = Some(ClusterSeen { masters: 2, ..ClusterSeen::default() });
        let text = serde_json::to_string(&s).expect("json");
        assert!(text.contains(r#""state":"OPEN""#) && text.contains(r#""state":"OFFLINE""#), "{text}");
        assert!(!text.contains(r#""error""#), "no error field when ZooKeeper was read: {text}");
        let back: ServerStatus = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, s);
    }

    #[test]
    fn an_unknown_state_is_refused_rather_than_read_as_another() {
        let mut doc = serde_json::to_value(status()).expect("json");
        doc["tables"][0]["regions"][0]["state"] = "SIDEWAYS".into();
        assert!(serde_json::from_value::<ServerStatus>(doc).is_err());
    }
}
