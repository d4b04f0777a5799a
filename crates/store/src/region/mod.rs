//! `Region`: a contiguous row range of a table (HBase's HRegion) — one
//! [`FamilyStore`] per column family, one MVCC, row locks, and the write,
//! read and flush paths (`write.rs`, `read.rs`, `flush.rs`; the request
//! types in `request.rs`).
//!
//! Its lifecycle lives beside it: identity and range (`info.rs`), states
//! (`state.rs`), an operator's close and open (`open_close.rs`), split
//! (`split.rs`) and merge (`merge.rs`), regions written as references to
//! their parents (`reference_region.rs`), and what becomes of the parents
//! (`retired_parents.rs`).
//!
//! Invariants:
//! - A *region batch* (the rows of one client batch that fall in this
//!   region, HBase's mini-batch; a single row mutation is a batch of one)
//!   takes its rows' locks and one sequence id, is appended to the WAL as
//!   one record (unless SKIP_WAL), waits for its sync under SYNC_WAL, is
//!   inserted into the memstores, and only then is made visible by
//!   completing its MVCC entry: a reader sees a batch whole or not at all,
//!   and never before it is durable under its durability setting.
//! - Everything that can fail (families, cell limits, the WAL) fails before
//!   the first memstore insert; the insert itself cannot fail. So an error
//!   or a panic abandons the MVCC entry (a `PendingWrite` guard) with
//!   nothing of the batch readable, and the read point moves on.
//! - A batch holds no row twice (a repeated row starts a new batch), so
//!   cells of one batch never collide on one key and sequence id.
//! - The WAL's sequence-id accounting learns of each edit at append time;
//!   a flush moves it with `start_flush` while holding `updates`
//!   exclusively, so no edit is between its append and its insert then.
//! - Writers hold `updates` shared; a flush takes it exclusively for the
//!   instant it snapshots every memstore, so the snapshot holds exactly the
//!   writes with a sequence id at or below the flush's.
//! - Row mutations of one row are serialised by a striped row lock, so that
//!   read-modify-write operations (increment, check-and-put, delete of the
//!   latest version) are atomic.
//!
//! Thread safety: `Region` is shared (`Arc`) by writers, readers, flushers

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use memstore::{MemStore, MemStoreConfig, Mvcc};
use parking_lot::{Mutex, RwLock};

use crate::error::{Result, StoreError};
use crate::family_store::{FamilyStore, StoreContext};
use crate::hooks::{HookPoint, WriteHooks};
use crate::region::state::{RegionState, StateCell};
use crate::table::{FamilyDescriptor, TableDescriptor};
use crate::wal::Wal;

mod flush;
pub mod info;
pub mod merge;
pub mod open_close;
mod read;
pub(crate) mod reference_region;
mod request;
pub mod retired_parents;
pub mod split;
pub mod state;
mod write;

pub use crate::clock::now_ms;
pub use info::{RegionInfo, to_string_binary};
pub use request::{BatchOutcome, Column, Get, Mutation, MutationRef, RowMutations};
pub use write::LATEST_TIMESTAMP;

/// Row lock stripes; a batch's set of stripes is one `u128` bitmap.
const ROW_LOCK_STRIPES: usize = 128;
const _: () = assert!(ROW_LOCK_STRIPES <= 128, "a batch's stripes are a u128 bitmap");

/// Counters of one region.
#[derive(Debug, Default)]
pub struct RegionCounters {
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets: AtomicU64,
    /// Gets answered from the memstores alone (no store file read).
    pub gets_from_memstore: AtomicU64,
    pub scans: AtomicU64,
    pub flushes: AtomicU64,
    pub user_bytes: AtomicU64,
    /// Rows written (each row of a batch: a put, delete, increment, append
    /// or check-and-mutate that applied), as HBase counts a region's
    /// `writeRequestsCount` — where `puts` and `deletes` count cells.
    pub write_requests: AtomicU64,
}

pub struct Region {
    info: RegionInfo,
    dir: PathBuf,
    desc: Arc<TableDescriptor>,
    stores: BTreeMap<Vec<u8>, Arc<FamilyStore>>,
    mvcc: Arc<Mvcc>,
    wal: Arc<Wal>,
    updates: RwLock<()>,
    row_locks: Vec<Mutex<()>>,
    /// Held during a flush; holds the flush sequence id of each family whose
    /// snapshot is still outstanding (a failed flush is retried with the id
    /// its snapshot was taken at, never a later one).
    flush_lock: Mutex<BTreeMap<Vec<u8>, u64>>,
    flush_size: u64,
    state: StateCell,
    hooks: Option<Arc<dyn WriteHooks>>,
    /// Timestamps of cells written without one, and TTL on reads.
    clock: Arc<dyn memstore::Clock>,
    /// The highest timestamp an increment or append stamped (HBase's rule:
    /// one past the version it read when that is not older than the clock,
    /// so fast counter updates run ahead of the clock). Timestamps the
    /// region assigns never go below it: a write made after such an update
    /// lands at or above it (a tie goes to the later sequence id), not
    /// under it where no read would see it.
    stamped: AtomicU64,
    max_cell_size: usize,
    pub counters: RegionCounters,
}

/// Settings a region takes from its store instance.
#[derive(Clone)]
pub struct RegionConfig {
    pub ctx: StoreContext,
    pub flush_size: u64,
    pub max_cell_size: usize,
    pub hooks: Option<Arc<dyn WriteHooks>>,
}

/// The memstore settings of family `f` in a region of `families` families.
fn memstore_config(
    f: &FamilyDescriptor,
    families: u64,
    mvcc: &Arc<Mvcc>,
    cfg: &RegionConfig,
) -> Result<MemStoreConfig> {
    Ok(MemStoreConfig {
        policy: f.policy()?,
        flat_layout: f.layout()?,
        in_memory_flush_threshold: f.inmemory_threshold(),
        flush_size: cfg.flush_size / families,
        pipeline_segments_limit: f.pipeline_segments_limit,
        rules: f.rules(),
        max_cell_size: cfg.max_cell_size,
        mvcc: mvcc.clone(),
        clock: cfg.ctx.clock.clone(),
        memory_gauge: cfg.ctx.memory_gauge.clone(),
        ..MemStoreConfig::new(f.name.as_bytes())
    })
}

impl Region {
    /// Opens (or creates) the region in `dir`.
    pub fn open(
        dir: PathBuf,
        info: RegionInfo,
        desc: Arc<TableDescriptor>,
        wal: Arc<Wal>,
        cfg: &RegionConfig,
    ) -> Result<Region> {
        let fs = cfg.ctx.fs.as_ref();
        fs.create_dir_all(&dir)?;
        let info_path = crate::layout::region_info(&dir);
        let created = !fs.exists(&info_path)?;
        if created {
            crate::layout::write_json(fs, &info_path, &info, &crate::layout::unfenced)?;
        }
        let mvcc = Arc::new(Mvcc::new(0));
        let families = desc.families.len().max(1) as u64;
        let mut stores = BTreeMap::new();
        let mut max_seq = 0;
        for f in &desc.families {
            let memstore = MemStore::new(memstore_config(f, families, &mvcc, cfg)?)?;
            let store = FamilyStore::open(
                crate::layout::family_dir(&dir, &f.name)?,
                f.clone(),
                memstore,
                mvcc.clone(),
                cfg.ctx.clone(),
            )?;
            max_seq = max_seq.max(store.flushed_seq());
            for file in store.files().iter() {
                max_seq = max_seq.max(file.info().max_seq_id);
            }
            stores.insert(f.name.as_bytes().to_vec(), Arc::new(store));
        }
        if created {
            // The family directories' entries and the region directory's own
            // entry in its table directory: a manifest committed later in a
            // family directory is durable only if the path to it is.
            fs.sync_dir(&dir)?;
            if let Some(table_dir) = dir.parent() {
                fs.sync_dir(table_dir)?;
            }
        }
        mvcc.advance_to(max_seq);
        Ok(Region::assemble(info, dir, desc, stores, mvcc, wal, cfg, StateCell::new(RegionState::Open, true)))
    }

    /// A region of the shared root that this server does not serve
    /// (cluster mode): OFFLINE, its stores empty and retired, nothing read
    /// or written on disk. It keeps the table's region list whole, so a
    /// request for its rows is refused as not served here; assigning it
    /// opens it from disk (`store/member.rs`).
    pub(crate) fn unassigned(
        dir: PathBuf,
        info: RegionInfo,
        desc: Arc<TableDescriptor>,
        wal: Arc<Wal>,
        cfg: &RegionConfig,
    ) -> Result<Region> {
        let mvcc = Arc::new(Mvcc::new(0));
        let families = desc.families.len().max(1) as u64;
        let mut stores = BTreeMap::new();
        for f in &desc.families {
            let memstore = MemStore::new(memstore_config(f, families, &mvcc, cfg)?)?;
            let store = FamilyStore::unassigned(
                crate::layout::family_dir(&dir, &f.name)?,
                f.clone(),
                memstore,
                mvcc.clone(),
                cfg.ctx.clone(),
            );
            stores.insert(f.name.as_bytes().to_vec(), Arc::new(store));
        }
        Ok(Region::assemble(info, dir, desc, stores, mvcc, wal, cfg, StateCell::new(RegionState::Offline, false)))
    }

    #[expect(clippy::too_many_arguments, reason = "the parts of a region, each built by its caller")]
    fn assemble(
        info: RegionInfo,
        dir: PathBuf,
        desc: Arc<TableDescriptor>,
        stores: BTreeMap<Vec<u8>, Arc<FamilyStore>>,
        mvcc: Arc<Mvcc>,
        wal: Arc<Wal>,
        cfg: &RegionConfig,
        state: StateCell,
    ) -> Region {
        Region {
            info,
            dir,
            desc,
            stores,
            mvcc,
            wal,
            updates: RwLock::new(()),
            row_locks: (0..ROW_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            flush_lock: Mutex::new(BTreeMap::new()),
            flush_size: cfg.flush_size,
            state,
            hooks: cfg.hooks.clone(),
            clock: cfg.ctx.clock.clone(),
            stamped: AtomicU64::new(0),
            max_cell_size: cfg.max_cell_size,
            counters: RegionCounters::default(),
        }
    }

    pub fn info(&self) -> &RegionInfo {
        &self.info
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn descriptor(&self) -> &Arc<TableDescriptor> {
        &self.desc
    }

    pub fn stores(&self) -> impl Iterator<Item = &Arc<FamilyStore>> {
        self.stores.values()
    }

    pub fn mvcc(&self) -> &Arc<Mvcc> {
        &self.mvcc
    }

    pub fn flush_size(&self) -> u64 {
        self.flush_size
    }

    pub(crate) fn store(&self, family: &[u8]) -> Result<&Arc<FamilyStore>> {
        self.stores.get(family).ok_or_else(|| StoreError::NoSuchFamily {
            table: self.info.table.clone(),
            family: String::from_utf8_lossy(family).into_owned(),
        })
    }

    fn row_stripe(&self, row: &[u8]) -> usize {
        let h = row.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        (h % ROW_LOCK_STRIPES as u64) as usize
    }

    fn row_lock(&self, row: &[u8]) -> &Mutex<()> {
        &self.row_locks[self.row_stripe(row)]
    }

    fn check_open(&self) -> Result<()> {
        if !self.state.serving() {
            return Err(StoreError::NotServingRegion { region: self.info.region_name(), state: self.state.get() });
        }
        Ok(())
    }

    /// Memstore heap size of all families (active, pipeline and snapshot).
    pub fn memstore_heap_size(&self) -> u64 {
        self.stores.values().map(|s| s.memstore().size().heap_size).sum()
    }

    /// Heap bytes a new flush would take: every family's active segment and
    /// pipeline, without a snapshot being flushed.
    pub fn flushable_heap_size(&self) -> u64 {
        self.stores.values().map(|s| s.memstore().flushable_size().heap_size).sum()
    }

    /// Memory the memstores of all families hold (active, pipeline and
    /// snapshot): whole chunks at capacity, index memory, counted once
    /// (`MemStoreSize::held_size`). What the global memory limit charges.
    pub fn memstore_held_size(&self) -> u64 {
        self.stores.values().map(|s| s.memstore().size().held_size).sum()
    }

    /// Memstore data size of all families.
    pub fn memstore_data_size(&self) -> u64 {
        self.stores.values().map(|s| s.memstore().size().data_size).sum()
    }

    /// Lowest sequence id this region has in the WAL and not yet flushed
    /// (the WAL's accounting, updated at append time).
    pub fn lowest_unflushed_seq(&self) -> Option<u64> {
        self.wal.lowest_unflushed(self.info.id)
    }

    /// Bytes of all store files.
    pub fn files_size(&self) -> u64 {
        self.stores.values().map(|s| s.files_size()).sum()
    }

    fn hook(&self, point: HookPoint) -> Result<()> {
        match &self.hooks {
            Some(h) => h.at(point, self.info.id),
            None => Ok(()),
        }
    }

    /// Where the region is in its life (see `region_state.rs`).
    pub fn state(&self) -> RegionState {
        self.state.get()
    }

    /// Records a transition that leaves the region serving (CLOSING,
    /// SPLITTING, MERGING: it serves until drained) or ends it (SPLIT,
    /// MERGED, CLOSED after a drain).
    pub(crate) fn set_state(&self, state: RegionState) {
        self.state.set(state);
    }

    /// Stops accepting operations (the caller flushes first if it wants).
    pub fn close(&self) {
        self.state.set_serving(false);
        self.state.set(RegionState::Closed);
    }

    /// Stops accepting operations and waits for writes already inside to
    /// finish. The state is the caller's (CLOSING, SPLITTING, MERGING).
    pub fn close_and_drain(&self) {
        self.state.set_serving(false);
        drop(self.updates.write());
    }

    /// Serves again after a close, split or merge that did not go through.
    pub fn reopen(&self) {
        self.state.set(RegionState::Open);
        self.state.set_serving(true);
    }

    /// Whether the region refuses requests.
    pub fn is_closed(&self) -> bool {
        !self.state.serving()
    }

    /// Whether any store still reads through references to a split parent.
    pub fn has_references(&self) -> bool {
        self.stores().any(|s| s.has_references())
    }

    /// Whether any store reads through a reference into the region directory
    /// named `parent_dir`.
    pub fn refers_to(&self, parent_dir: &str) -> bool {
        self.stores().any(|s| s.refers_to(parent_dir))
    }
}
