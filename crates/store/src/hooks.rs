//! `WriteHooks`: named points on the write path and the WAL archive pass
//! where a test can pause a thread, inject an error or panic — the way the
//! write path's races and failures are reproduced deterministically (tests
//! in `tests/write_path.rs`). With no hooks installed (the default) each
//! point costs one `Option` check per region batch.
//!
//! Thread safety: hooks are called from writer, flusher and archiver
//! threads concurrently; implementations synchronise themselves.

use crate::error::Result;

/// Where on the write path a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookPoint {
    /// A region batch holds its row locks and sequence id; nothing is
    /// logged yet. An error here fails the batch with nothing written.
    BeforeWalAppend,
    /// The batch is in the WAL (and durable, for SYNC_WAL) but not in any
    /// memstore. An error here fails the batch; nothing becomes visible in
    /// the running store, but the WAL holds the batch, so a recovery after
    /// a crash replays it (a failed call's outcome is unknown, as in HBase).
    AfterWalAppend,
    /// The batch is in the memstores but not yet visible (its MVCC entry is
    /// still pending).
    BeforeVisible,
    /// A WAL archive pass is about to decide which files may go.
    ArchivePass,
    /// A region flush has taken its snapshot and not yet written files.
    FlushSnapshotTaken,
    /// A merge has written the merged region's references and manifests but
    /// not its `.regioninfo` (the commit). An error abandons the merge.
    MergeBeforeCommit,
    /// A merge has committed; the parents' markers and the switch in memory
    /// are next. An error here is only logged (the merge stands).
    MergeCommitted,
    /// A split or merge has committed and is about to open the region(s)
    /// that replace its parent(s). An error fails that attempt to open them
    /// (it is retried).
    OpenCommittedRegion,
    /// A request (`Store`'s get, put, batch, increment, check-and-mutate)
    /// has found the region of its row and not yet called it. An error
    /// fails the request.
    RegionLookedUp,
    /// A split has looked its table up and is about to take the table's
    /// change lock.
    ChangeLockWanted,
    /// A flush or compaction has written its new store file and is about to
    /// commit the family's manifest (region id 0: the family does not know
    /// it). An error fails the flush or compaction before its commit.
    BeforeManifestCommit,
    /// A scan found the region it reads closed by a split or merge and is
    /// about to wait before looking again. An error fails the scan.
    ScanWaitsForRegion,
    /// Opening a store has fenced the WAL directories of earlier instances
    /// (renamed, leases recovered) and not yet read them. An error fails
    /// the open.
    WalDirsFenced,
    /// A cluster member reading a table's regions from the shared root has
    /// listed them and read their `.regioninfo`, and not yet looked for
    /// split and merge markers. An error fails the read.
    RootRegionsRead,
}

/// Test hooks; see the module documentation.
pub trait WriteHooks: Send + Sync {
    /// Runs at `point` for region `region` (0 for store-wide points). An
    /// error fails the operation at that point.
    fn at(&self, point: HookPoint, region: u64) -> Result<()>;
}
