//! What a cluster member asks ZooKeeper before it obeys an admin call that
//! could lose data if it were wrong: whether a server named in a `recover`
//! call is really dead, and where the master's catalog puts a region an
//! `assign` call asks this server to open.
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
    /// The server the master's catalog puts region `encoded` on (`None`: no
    /// entry, or on no server).
    fn catalog_server(&self, encoded: &str) -> Result<Option<String>, String>;
}
