//! `StoreOptions`: the settings of a store instance, with HBase's defaults
//! and HBase's property names where we share a setting.

use std::sync::Arc;

use crate::fs::{FileSystem, LocalFs};
use crate::jobs::compaction::policy::CompactionConfig;
use crate::wal::WalOptions;

#[derive(Clone)]
pub struct StoreOptions {
    pub fs: Arc<dyn FileSystem>,
    /// `hbase.hregion.memstore.flush.size` (128 MiB).
    pub region_flush_size: u64,
    /// The memory the store may plan with (a region server's heap).
    pub memory_budget: u64,
    /// `hbase.regionserver.global.memstore.size`: the memstores' share of the
    /// budget (0.4).
    pub global_memstore_share: f64,
    /// `hbase.regionserver.global.memstore.size.lower.limit` (0.95 of the limit).
    pub global_memstore_lower_mark: f64,
    /// `hbase.hregion.memstore.block.multiplier` (4): writes to a region block
    /// above this many flush sizes.
    pub block_multiplier: u64,
    /// `hfile.block.cache.size`: the block cache's share of the budget (0.4).
    pub block_cache_share: f64,
    pub wal: WalOptions,
    /// `hbase.regionserver.maxlogs` (32).
    pub max_logs: usize,
    /// `hbase.hstore.flusher.count` (2).
    pub flusher_threads: usize,
    /// Disk compaction threads.
    pub compaction_threads: usize,
    pub compaction: CompactionConfig,
    /// `hbase.server.keyvalue.maxsize` (10 MiB).
    pub max_cell_size: usize,
    /// How long a request waits for a region that a split or merge is
    /// replacing before it fails with `WritesStopped` (HBase's client
    /// retries such a region for `hbase.client.operation.timeout`). Writes
    /// stop for milliseconds in a split or merge; this bounds the wait when
    /// one takes far longer (a slow file system) or cannot finish.
    pub region_move_wait: std::time::Duration,
    /// Run flushes and compactions in background threads (tests may turn
    /// this off and drive them through the admin calls).
    pub background: bool,
    /// Pause points and fault injection on the write path (tests only).
    pub hooks: Option<Arc<dyn crate::hooks::WriteHooks>>,
    /// The clock that timestamps cells written without a timestamp and
    /// decides TTL expiry on reads, flushes and compactions (the wall
    /// clock; a test's `memstore::ManualClock` makes time a step it takes).
    pub clock: Arc<dyn memstore::Clock>,
    /// Cluster mode: this store is one region server, named so (HBase's
    /// `host,port,startcode`), of several sharing the root; see
    /// `store/member.rs`. `None`: the store owns its root alone.
    pub member: Option<String>,
    /// Cluster mode: where new region ids come from. Ids key the WAL's
    /// entries and the recovery of a dead server's edits, so they must be
    /// unique among every server of the root, which a store's own counter
    /// cannot promise; the cluster hands them out (a ZooKeeper sequence).
    /// A member without one cannot create tables.
    pub region_ids: Option<RegionIdSource>,
    /// Cluster mode: asked right before every commit that changes which
    /// files a region reads (a flush's or a compaction's MANIFEST, a split's
    /// or a merge's new `.regioninfo`), after everything else of the commit
    /// is written and synced; an error refuses the commit (`Fenced`). The
    /// region server answers from its ZooKeeper lease: a server whose
    /// session may have ended — its regions possibly open elsewhere —
    /// commits nothing over the new owner's files.
    pub commit_fence: Option<CommitFence>,
}

/// Hands out cluster-unique region ids (see [`StoreOptions::region_ids`]).
pub type RegionIdSource = Arc<dyn Fn() -> std::result::Result<u64, String> + Send + Sync>;

/// Whether this store may still commit (see [`StoreOptions::commit_fence`]):
/// `Err` says why not.
pub type CommitFence = Arc<dyn Fn() -> std::result::Result<(), String> + Send + Sync>;

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("region_flush_size", &self.region_flush_size)
            .field("memory_budget", &self.memory_budget)
            .field("global_memstore_share", &self.global_memstore_share)
            .field("block_cache_share", &self.block_cache_share)
            .field("max_logs", &self.max_logs)
            .field("compaction", &self.compaction)
            .field("background", &self.background)
            .finish()
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            fs: Arc::new(LocalFs),
            region_flush_size: 128 << 20,
            memory_budget: 4 << 30,
            global_memstore_share: 0.4,
            global_memstore_lower_mark: 0.95,
            block_multiplier: 4,
            block_cache_share: 0.4,
            wal: WalOptions::default(),
            max_logs: 32,
            flusher_threads: 2,
            compaction_threads: 1,
            compaction: CompactionConfig::default(),
            max_cell_size: 10 << 20,
            region_move_wait: std::time::Duration::from_secs(60),
            background: true,
            hooks: None,
            clock: Arc::new(memstore::SystemClock),
            member: None,
            region_ids: None,
            commit_fence: None,
        }
    }
}

impl StoreOptions {
    /// The global memstore limit in bytes.
    pub fn global_memstore_limit(&self) -> u64 {
        (self.memory_budget as f64 * self.global_memstore_share) as u64
    }

    /// Above this, the flusher flushes the largest region.
    pub fn global_memstore_low_mark(&self) -> u64 {
        (self.global_memstore_limit() as f64 * self.global_memstore_lower_mark) as u64
    }

    pub fn block_cache_bytes(&self) -> u64 {
        (self.memory_budget as f64 * self.block_cache_share) as u64
    }
}
