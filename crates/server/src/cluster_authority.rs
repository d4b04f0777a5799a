//! What a cluster member asks before it obeys an admin call that could lose
//! data if it were wrong: whether a server named in a `recover` call is
//! really dead (ZooKeeper's membership), and what the master's catalog
//! records for a region an `assign` or `unassign` call names (the master
//! records OPENING, or CLOSING/CLOSED, on this server before it calls;
//! nothing else may). The catalog is asked of the active master that
//! ZooKeeper names at that moment, so a master that lost its place cannot
//! move a region.
//!
//! Why: `recover` fences and retires a server's WAL directory, and `assign`
//! opens a region for writing. Done for a live server's WAL, or for a region
//! another live server holds, either makes two writers of one set of files
//! (HBase's master refuses both: `ServerCrashProcedure` runs only for an
//! expired server, and `AssignmentManager` is the one authority over where
//! a region opens). The binary implements it over ZooKeeper
//! (`accordion/src/server_cmd.rs`); the server crate knows only this trait.
//!
//! It is also how a member hands on what only the master does: an
//! operator's move, assign, unassign or balancer run that a client sent to
//! this member (HBase's `Admin.move`, `balance`, … through `MasterService`)
//! goes to the active master as the shell would send it
//! ([`ClusterAuthority::master_call`]).
//!
//! Thread safety: implementations are called from admin threads at once.

/// The cluster's membership and catalog, as a member reads them.
pub trait ClusterAuthority: Send + Sync {
    /// Whether ZooKeeper lists region server `name` as a member now.
    fn is_member(&self, name: &str) -> Result<bool, String>;
    /// What the master's catalog records for region `encoded` (`None`: no
    /// entry).
    fn catalog_entry(&self, encoded: &str) -> Result<Option<http_api::CatalogEntry>, String> {
        Ok(self.catalog_entries(&[encoded.to_string()])?.remove(encoded))
    }
    /// What the catalog records for each of `regions` (one question for a
    /// batch; a region without an entry is left out).
    fn catalog_entries(
        &self,
        regions: &[String],
    ) -> Result<std::collections::BTreeMap<String, http_api::CatalogEntry>, String>;
    /// Runs `call` on the active master ZooKeeper names now; its answer.
    fn master_call(&self, call: &http_api::OperatorCall) -> Result<String, MasterRefusal>;
    /// Whether the cluster's periodic balancer is switched on.
    fn balancer_on(&self) -> Result<bool, String>;
}

/// Why the active master did not carry out an operator's call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", status.map_or(String::new(), |s| format!("the master answered {s}: ")))]
pub struct MasterRefusal {
    /// The master's HTTP status (400 a bad call, 404 no such region, 409
    /// a region in transition or a table disabled, 503/504 the master
    /// busy or not active); `None`: no master could be reached.
    pub status: Option<u16>,
    pub message: String,
}

impl MasterRefusal {
    /// Whether the same call may succeed later unchanged: the master was
    /// not reached, was busy, or found the region in transition.
    pub fn is_transient(&self) -> bool {
        self.status.is_none_or(|s| s == 409 || s == 502 || s >= 503)
    }
}
