//! `Services`: what the store's jobs share — the catalog, the WAL, the file
//! system context, the options, and the flush and compaction queues. A job
//! (flush, compaction, split, merge, close, open, recovery) takes
//! `&Services` and changes regions only through the catalog's edits; the
//! public `Store` is a handle on it. The fields are handles, each owned and
//! guarded by its own type (`Catalog`, `Wal`, `FlushQueue`,
//! `CompactionQueue`); `Services` itself holds no mutable state but the
//! closed flag.
//!
//! Thread safety: `Send + Sync`, shared as `Arc<Services>`; background
//! threads hold a `Weak` and stop when the last `Store` handle goes, as
//! dropping `Services` stops the queues.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::catalog::Catalog;
use crate::error::{Result, StoreError};
use crate::family_store::StoreContext;
use crate::hooks::HookPoint;
use crate::jobs::compaction::queue::CompactionQueue;
use crate::jobs::flush::queue::FlushQueue;
use crate::options::StoreOptions;
use crate::region::{Region, RegionConfig, RegionInfo};
use crate::table::TableDescriptor;
use crate::wal::Wal;

pub(crate) struct Services {
    pub(crate) dir: PathBuf,
    pub(crate) options: StoreOptions,
    pub(crate) wal: Arc<Wal>,
    pub(crate) ctx: StoreContext,
    pub(crate) region_config: RegionConfig,
    pub(crate) catalog: Catalog,
    pub(crate) flush_queue: FlushQueue,
    pub(crate) compaction_queue: CompactionQueue,
    closed: AtomicBool,
    /// The root's lock, held until the store is closed or dropped.
    root_lock: parking_lot::Mutex<Option<crate::fs::RootLock>>,
    /// Told the table's name after each split or merge (see
    /// [`crate::Store::on_regions_changed`]).
    region_listener: parking_lot::RwLock<Option<RegionListener>>,
    /// The global memstore limit, registered with the chunk pool the
    /// memstores share for as long as the store is open: the pool keeps
    /// idle chunks only within it, so the limit bounds the pool too.
    _pool_budget: memstore::PoolBudget,
}

/// What [`crate::Store::on_regions_changed`] installs.
pub(crate) type RegionListener = Arc<dyn Fn(&str) + Send + Sync>;

impl Services {
    pub(crate) fn new(
        dir: PathBuf,
        options: StoreOptions,
        wal: Arc<Wal>,
        ctx: StoreContext,
        root_lock: Option<crate::fs::RootLock>,
    ) -> Services {
        let region_config = RegionConfig {
            ctx: ctx.clone(),
            flush_size: options.region_flush_size,
            max_cell_size: options.max_cell_size,
            hooks: options.hooks.clone(),
        };
        let pool_budget = memstore::ChunkPool::global().register_budget(options.global_memstore_limit());
        Services {
            dir,
            _pool_budget: pool_budget,
            flush_queue: FlushQueue::new(options.flusher_threads),
            compaction_queue: CompactionQueue::new(options.compaction_threads),
            options,
            wal,
            ctx,
            region_config,
            catalog: Catalog::new(),
            closed: AtomicBool::new(false),
            root_lock: parking_lot::Mutex::new(root_lock),
            region_listener: parking_lot::RwLock::new(None),
        }
    }

    pub(crate) fn set_region_listener(&self, listener: RegionListener) {
        *self.region_listener.write() = Some(listener);
    }

    /// Tells the listener that `table`'s regions changed (a split or merge
    /// committed). It runs on the calling thread, outside the listener's
    /// lock.
    pub(crate) fn regions_changed(&self, table: &str) {
        let listener = self.region_listener.read().clone();
        if let Some(l) = listener {
            l(table);
        }
    }

    /// A region id for a new region (a table's, a split's daughter, a
    /// merge's result): the store's counter, or in a cluster the cluster's
    /// source (ids key WAL entries and its split, so they must be unique
    /// across the servers that share the root; `StoreOptions::region_ids`).
    pub(crate) fn new_region_id(&self) -> Result<u64> {
        if self.options.member.is_none() {
            return Ok(self.catalog.allocate_region_id());
        }
        let Some(source) = &self.options.region_ids else {
            return Err(StoreError::ClusterRefused(
                "this cluster member has no source of cluster-unique region ids, so it cannot create regions".into(),
            ));
        };
        let id = source().map_err(|e| StoreError::ClusterRefused(format!("allocating a region id: {e}")))?;
        self.catalog.observe_region_id(id);
        Ok(id)
    }

    /// `<dir>/data/<ns>/<qualifier>` of table `ns:qualifier`, refusing a
    /// name whose parts are not plain segments.
    pub(crate) fn table_dir(&self, table: &str) -> Result<PathBuf> {
        crate::layout::table_dir(&self.dir, table)
    }

    /// Lets another store open the root (after a close: nothing of this
    /// one writes any more).
    pub(crate) fn release_root_lock(&self) {
        self.root_lock.lock().take();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the store closed; whether it already was.
    pub(crate) fn mark_closed(&self) -> bool {
        self.closed.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() { Err(StoreError::Closed) } else { Ok(()) }
    }

    /// Opens the region `info` of table `desc` from `dir`, replaying (and
    /// flushing) the recovered edits a WAL split left for it.
    pub(crate) fn open_region(
        &self,
        dir: PathBuf,
        info: RegionInfo,
        desc: Arc<TableDescriptor>,
    ) -> Result<Arc<Region>> {
        let region = Arc::new(Region::open(dir, info, desc, self.wal.clone(), &self.region_config)?);
        region.replay_recovered_edits()?;
        Ok(region)
    }

    /// Opens the regions a committed split or merge wrote, retrying a failed
    /// attempt twice (a transient I/O error must not leave the rows
    /// unserved). Past that the commit still stands: the parent(s) stay
    /// SPLIT or MERGED, requests to their rows fail, and the next open of
    /// the store finishes the switch from the directories (HBase aborts the
    /// region server here for the same reason).
    pub(crate) fn open_committed(
        &self,
        regions: &[(PathBuf, RegionInfo)],
        desc: &Arc<TableDescriptor>,
    ) -> Result<Vec<Arc<Region>>> {
        let mut attempt = 0;
        loop {
            let opened = self.hook(HookPoint::OpenCommittedRegion).and_then(|()| {
                regions.iter().map(|(dir, info)| self.open_region(dir.clone(), info.clone(), desc.clone())).collect()
            });
            match opened {
                Ok(opened) => return Ok(opened),
                Err(e) if attempt < 2 => {
                    attempt += 1;
                    tracing::warn!(error = %e, attempt, "opening the regions of a committed split or merge failed; retrying");
                    std::thread::sleep(std::time::Duration::from_millis(50 << attempt));
                }
                Err(e) => {
                    tracing::error!(
                        error = %e,
                        "the regions of a committed split or merge could not be opened: their rows are not served until \
                         the store is reopened, which finishes the switch"
                    );
                    return Err(e);
                }
            }
        }
    }

    /// Archives WAL files that no region needs any more (the WAL's own
    /// sequence-id accounting decides; see `wal/accounting.rs`).
    pub(crate) fn archive_wal(&self) -> Result<usize> {
        self.hook(HookPoint::ArchivePass)?;
        self.wal.archive_obsolete()
    }

    /// Runs the test hook at store-wide `point`, if any.
    pub(crate) fn hook(&self, point: HookPoint) -> Result<()> {
        self.hook_at(point, 0)
    }

    /// Runs the test hook at `point` for `region`, if any.
    pub(crate) fn hook_at(&self, point: HookPoint, region: u64) -> Result<()> {
        match &self.options.hooks {
            Some(h) => h.at(point, region),
            None => Ok(()),
        }
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        self.flush_queue.stop();
        self.compaction_queue.stop();
    }
}
