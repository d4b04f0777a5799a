//! # http_api — what accordion's processes say to each other over HTTP
//!
//! A region server serves its state as `GET /status` and obeys admin calls
//! (`POST /admin/<call>?...`); the master reads the first and sends the
//! second, and the shell, the bench and the tests read and send both. Each
//! side used to build and read these documents by string keys and literals
//! (`"OPEN"`, `doc["tables"]`): a field renamed on one side broke the other
//! at run time, silently. Here each document and call is a type that both
//! sides use, so such a change fails to compile instead.
//!
//! - [`ServerStatus`]: a region server's `/status` document.
//! - [`CatalogEntry`]: where the master put a region (its catalog, in
//!   ZooKeeper), as the master writes it and members read it.
//! - [`ServerReport`]: what a region server tells the master (its regions
//!   and load, whole once and then as deltas), and the master's answer.
//! - [`RegionServerCall`]: the admin calls the master and peers make on a
//!   region server; [`OperatorCall`]: the calls an operator makes on the
//!   master. Each renders its request path and parses it back.
//!
//! Region states are the store's own [`RegionState`] (HBase's names).
//!
//! Thread safety: plain data.

mod admin_call;
mod catalog_entry;
mod report;
mod server_status;

pub use admin_call::{CallError, MAX_BATCH, OperatorCall, RegionCall, RegionServerCall, encode};
pub use catalog_entry::{CatalogEntry, CatalogLookup, LocatedEntry, MAX_LOOKUP, is_lookup_id};
pub use report::{ReportAnswer, ReportedLoad, ReportedRegion, ReportedTable, ServerReport, changes_in, changes_line};
pub use server_status::{
    ClusterSeen, FamilyStatus, MemberAddress, PipelineSegment, RegionStatus, SegmentCounts, ServerSection,
    ServerStatus, SnapshotSegment, SnapshotStatus, TableStatus,
};
pub use store::RegionState;
pub use store::metrics::{FamilyMetrics, StoreTotals};
