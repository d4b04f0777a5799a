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
}
