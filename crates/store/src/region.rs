//! `Region`: a contiguous row range of a table (HBase's HRegion) — one
//! [`FamilyStore`] per column family, one MVCC, row locks, and the write,
//! read and flush paths.
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
//! and compactions; all methods take `&self`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memstore::{Cell, CellInput, CellKey, CellType, MemStore, MemStoreConfig, Mvcc, ReadOptions, TimeRange};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::cursor::{CellCursor, MergedCursor};
use crate::error::{Result, StoreError};
use crate::family_store::{FamilyStore, StoreContext};
use crate::hooks::{HookPoint, WriteHooks};
use crate::region_state::{RegionState, StateCell};
use crate::row_reader::{FamilyReadSpec, RowReader};
use crate::table::TableDescriptor;
use crate::wal::{Durability, Wal, codec};

/// Row lock stripes; a batch's set of stripes is one `u128` bitmap.
const ROW_LOCK_STRIPES: usize = 128;
const _: () = assert!(ROW_LOCK_STRIPES <= 128, "a batch's stripes are a u128 bitmap");
pub const REGION_INFO_NAME: &str = ".regioninfo";

/// A region's identity and key range, persisted beside its families.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfo {
    pub id: u64,
    pub table: String,
    /// Inclusive start row (empty: the table's first row).
    pub start_key: Vec<u8>,
    /// Exclusive end row (empty: unbounded).
    pub end_key: Vec<u8>,
    /// For a daughter of a split: the parent region's id.
    pub parent: Option<u64>,
    /// For a merged region: the ids of the regions it was merged from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<u64>,
}

impl RegionInfo {
    pub fn contains(&self, row: &[u8]) -> bool {
        row >= self.start_key.as_slice() && (self.end_key.is_empty() || row < self.end_key.as_slice())
    }

    /// The regions whose files this one may read through references: a
    /// split's parent, a merge's parents.
    pub fn parents(&self) -> impl Iterator<Item = u64> + '_ {
        self.parent.iter().chain(self.merged_from.iter()).copied()
    }

    pub fn dir_name(&self) -> String {
        format!("{:016x}", self.id)
    }

    /// The name HBase gives a region: table, start row, id (the encoded
    /// name, which is also the directory's name).
    pub fn region_name(&self) -> String {
        format!("{},{},{}", self.table, to_string_binary(&self.start_key), self.dir_name())
    }
}

/// A key as HBase's `Bytes.toStringBinary` prints it: printable ASCII as
/// is, every other byte as `\\xNN`.
pub fn to_string_binary(key: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(key.len());
    for &b in key {
        if (b' '..=b'~').contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}

/// One change to a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// A value; `timestamp` defaults to now.
    Put { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64>, value: Vec<u8> },
    /// One version of a column: the one at `timestamp`, or the latest.
    DeleteVersion { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64> },
    /// Every version of a column at or below `timestamp` (default now).
    DeleteColumn { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64> },
    /// Every column of a family at or below `timestamp` (default now).
    DeleteFamily { family: Vec<u8>, timestamp: Option<u64> },
    /// Every column of a family at exactly `timestamp`.
    DeleteFamilyVersion { family: Vec<u8>, timestamp: u64 },
    /// Every family of the row at or below `timestamp` (default now).
    DeleteRow { timestamp: Option<u64> },
}

impl Mutation {
    /// The same change, borrowed.
    pub fn as_ref(&self) -> MutationRef<'_> {
        match self {
            Mutation::Put { family, qualifier, timestamp, value } => {
                MutationRef::Put { family, qualifier, timestamp: *timestamp, value }
            }
            Mutation::DeleteVersion { family, qualifier, timestamp } => {
                MutationRef::DeleteVersion { family, qualifier, timestamp: *timestamp }
            }
            Mutation::DeleteColumn { family, qualifier, timestamp } => {
                MutationRef::DeleteColumn { family, qualifier, timestamp: *timestamp }
            }
            Mutation::DeleteFamily { family, timestamp } => MutationRef::DeleteFamily { family, timestamp: *timestamp },
            Mutation::DeleteFamilyVersion { family, timestamp } => {
                MutationRef::DeleteFamilyVersion { family, timestamp: *timestamp }
            }
            Mutation::DeleteRow { timestamp } => MutationRef::DeleteRow { timestamp: *timestamp },
        }
    }
}

/// One change to a row, borrowing its bytes (the write path copies them
/// once into the WAL buffer and once into MSLAB chunks, nowhere else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationRef<'a> {
    Put { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64>, value: &'a [u8] },
    DeleteVersion { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64> },
    DeleteColumn { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64> },
    DeleteFamily { family: &'a [u8], timestamp: Option<u64> },
    DeleteFamilyVersion { family: &'a [u8], timestamp: u64 },
    DeleteRow { timestamp: Option<u64> },
}

/// The changes to one row in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowMutations<'a> {
    pub row: &'a [u8],
    pub mutations: &'a [MutationRef<'a>],
}

/// What a region batch did: the rows refused one by one (index into the
/// batch, and why); every other row was applied.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    pub refused: Vec<(usize, StoreError)>,
    /// The batch's last sequence id (0 if nothing was applied).
    pub seq: u64,
    /// Rows dealt with (applied or refused): all of them, unless the region
    /// closed between two mini-batches (a repeated row) — the caller sends
    /// the rest to whichever region serves them now.
    pub done: usize,
}

/// Which columns a read wants: a family, or one column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub family: Vec<u8>,
    pub qualifier: Option<Vec<u8>>,
}

/// A point read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get {
    pub row: Vec<u8>,
    /// Empty: every column of every family.
    pub columns: Vec<Column>,
    pub time_range: TimeRange,
    pub max_versions: u32,
}

impl Get {
    pub fn new(row: impl Into<Vec<u8>>) -> Get {
        Get { row: row.into(), columns: Vec::new(), time_range: TimeRange::ALL, max_versions: 1 }
    }
}

/// Counters of one region.
#[derive(Debug, Default)]
pub struct RegionCounters {
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets: AtomicU64,
    pub scans: AtomicU64,
    pub flushes: AtomicU64,
    pub user_bytes: AtomicU64,
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

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
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
        let info_path = dir.join(REGION_INFO_NAME);
        let created = !fs.exists(&info_path)?;
        if created {
            let bytes = serde_json::to_vec_pretty(&info).map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            fs.write_atomic(&info_path, &bytes)?;
        }
        let mvcc = Arc::new(Mvcc::new(0));
        let families = desc.families.len().max(1) as u64;
        let mut stores = BTreeMap::new();
        let mut max_seq = 0;
        for f in &desc.families {
            let config = MemStoreConfig {
                policy: f.policy()?,
                flat_layout: f.layout()?,
                in_memory_flush_threshold: f.inmemory_threshold(),
                flush_size: cfg.flush_size / families,
                pipeline_segments_limit: f.pipeline_segments_limit,
                rules: f.rules(),
                max_cell_size: cfg.max_cell_size,
                mvcc: mvcc.clone(),
                ..MemStoreConfig::new(f.name.as_bytes())
            };
            let store =
                FamilyStore::open(dir.join(&f.name), f.clone(), MemStore::new(config)?, mvcc.clone(), cfg.ctx.clone())?;
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
        Ok(Region {
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
            state: StateCell::new(RegionState::Open, true),
            hooks: cfg.hooks.clone(),
            max_cell_size: cfg.max_cell_size,
            counters: RegionCounters::default(),
        })
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

    fn store(&self, family: &[u8]) -> Result<&Arc<FamilyStore>> {
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

    /// Applies the mutations of one row atomically; returns its sequence id.
    pub fn mutate_row(&self, row: &[u8], mutations: &[Mutation], durability: Durability) -> Result<u64> {
        let refs: SmallVec<[MutationRef<'_>; 8]> = mutations.iter().map(Mutation::as_ref).collect();
        let mut outcome = self.mutate_rows(&[RowMutations { row, mutations: &refs }], durability)?;
        match outcome.refused.pop() {
            Some((_, e)) => Err(e),
            None => Ok(outcome.seq),
        }
    }

    /// Applies a batch of row mutations, each row atomically (see the
    /// module invariants). A row that cannot be applied (outside the
    /// region, unknown family, cell too large, …) is refused alone and
    /// listed in the outcome; the others are applied, as HBase's
    /// batchMutate does. An `Err` means nothing of the batch (or of its
    /// last mini-batch, after a repeated row) was applied.
    pub fn mutate_rows(&self, rows: &[RowMutations<'_>], durability: Durability) -> Result<BatchOutcome> {
        self.check_open()?;
        let mut outcome = BatchOutcome::default();
        let mut start = 0;
        while start < rows.len() {
            let end = start + distinct_prefix(&rows[start..]);
            let _locks = self.lock_rows(&rows[start..end]);
            match self.apply_locked(&rows[start..end], start, durability, &mut outcome.refused) {
                Ok(seq) => outcome.seq = seq,
                // Drained by a split, merge or close between two
                // mini-batches: report what was done; the caller sends the
                // rest to whichever region serves it now.
                Err(StoreError::NotServingRegion { .. } | StoreError::Closed) if start > 0 => break,
                Err(e) => return Err(e),
            }
            start = end;
        }
        outcome.done = start;
        Ok(outcome)
    }

    /// Takes the row locks of `rows` in stripe order (no deadlock between
    /// batches, or with a single-row lock), each stripe once, without
    /// allocating.
    fn lock_rows(&self, rows: &[RowMutations<'_>]) -> RowLockSet<'_> {
        let stripes = rows.iter().fold(0u128, |set, r| set | (1u128 << self.row_stripe(r.row)));
        let mut rest = stripes;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            // Released by `RowLockSet::drop`, which unlocks exactly the set.
            std::mem::forget(self.row_locks[i].lock());
            rest &= rest - 1;
        }
        RowLockSet { locks: &self.row_locks, stripes }
    }

    /// Resolves one row's mutations into cells (appended to `cells`, sorted
    /// by family so each family's cells are one run).
    fn resolve_row<'a>(
        &'a self,
        row: &'a [u8],
        mutations: &[MutationRef<'a>],
        now: u64,
        cells: &mut SmallVec<[CellInput<'a>; 32]>,
    ) -> Result<()> {
        if !self.info.contains(row) {
            return Err(StoreError::InvalidArgument(format!(
                "row {:?} is outside region {:016x} of table {:?}",
                String::from_utf8_lossy(row),
                self.info.id,
                self.info.table
            )));
        }
        if mutations.is_empty() {
            return Err(StoreError::InvalidArgument("a row mutation needs at least one change".into()));
        }
        let start = cells.len();
        let mk = |family: &'a [u8], qualifier: &'a [u8], timestamp: u64, cell_type: CellType, value: &'a [u8]| {
            CellInput { row, family, qualifier, timestamp, cell_type, value }
        };
        for m in mutations {
            match *m {
                MutationRef::Put { family, qualifier, timestamp, value } => {
                    self.store(family)?;
                    cells.push(mk(family, qualifier, timestamp.unwrap_or(now), CellType::Put, value));
                }
                MutationRef::DeleteVersion { family, qualifier, timestamp } => {
                    self.store(family)?;
                    let ts = match timestamp {
                        Some(ts) => Some(ts),
                        None => self.latest_timestamp(row, family, qualifier)?,
                    };
                    // Nothing to delete: HBase places the marker at now.
                    cells.push(mk(family, qualifier, ts.unwrap_or(now), CellType::Delete, &[]));
                }
                MutationRef::DeleteColumn { family, qualifier, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, qualifier, timestamp.unwrap_or(now), CellType::DeleteColumn, &[]));
                }
                MutationRef::DeleteFamily { family, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, &[], timestamp.unwrap_or(now), CellType::DeleteFamily, &[]));
                }
                MutationRef::DeleteFamilyVersion { family, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, &[], timestamp, CellType::DeleteFamilyVersion, &[]));
                }
                MutationRef::DeleteRow { timestamp } => {
                    for family in self.stores.keys() {
                        cells.push(mk(family, &[], timestamp.unwrap_or(now), CellType::DeleteFamily, &[]));
                    }
                }
            }
        }
        for c in &cells[start..] {
            c.validate(self.max_cell_size)?;
        }
        // Stable: mutations of one column keep their order.
        cells[start..].sort_by(|a, b| a.family.cmp(b.family));
        Ok(())
    }

    fn latest_timestamp(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> Result<Option<u64>> {
        let get = Get {
            row: row.to_vec(),
            columns: vec![Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) }],
            time_range: TimeRange::ALL,
            max_versions: 1,
        };
        Ok(self.get(&get)?.first().map(|c| c.timestamp))
    }

    /// One mini-batch of distinct rows whose locks the caller holds.
    /// Refused rows go to `refused` (indices offset by `base`). Returns the
    /// batch's sequence id (0: nothing to apply).
    fn apply_locked(
        &self,
        rows: &[RowMutations<'_>],
        base: usize,
        durability: Durability,
        refused: &mut Vec<(usize, StoreError)>,
    ) -> Result<u64> {
        let now = now_ms();
        // On the stack for the usual region batch of a few rows.
        let mut cells: SmallVec<[CellInput<'_>; 32]> = SmallVec::new();
        // Per applied row: where its cells end in `cells`.
        let mut ends: SmallVec<[usize; 16]> = SmallVec::new();
        for (i, r) in rows.iter().enumerate() {
            let start = cells.len();
            match self.resolve_row(r.row, r.mutations, now, &mut cells) {
                Ok(()) => ends.push(cells.len()),
                // A read of the row (delete of the latest version) met the
                // region draining: the whole mini-batch goes elsewhere, not
                // this row alone refused.
                Err(e @ StoreError::NotServingRegion { .. }) => return Err(e),
                Err(e) => {
                    cells.truncate(start);
                    refused.push((base + i, e));
                }
            }
        }
        if cells.is_empty() {
            return Ok(0);
        }
        let _updates = self.updates.read();
        self.check_open()?;
        let write = self.mvcc.begin_write();
        let seq = write.seq();
        self.hook(HookPoint::BeforeWalAppend)?;
        let user_bytes: usize = cells.iter().map(CellInput::encoded_len).sum();
        // Cells of a row are sorted by family, so the WAL codec writes each
        // row and family once.
        let ticket = self
            .wal
            .append_with(self.info.id, seq, codec::encoded_len(&cells), durability, |dst| codec::encode(&cells, dst))?;
        self.wal.await_durable(ticket)?;
        self.hook(HookPoint::AfterWalAppend)?;
        // The point of no return: nothing below fails.
        let mut start = 0;
        for &end in &ends {
            let mut run = start;
            while run < end {
                let family = cells[run].family;
                let run_end = run + cells[run..end].iter().take_while(|c| c.family == family).count();
                if let Some(store) = self.stores.get(family) {
                    store.memstore().add_validated_row(&cells[run..run_end], seq);
                }
                run = run_end;
            }
            start = end;
        }
        write.complete_and_wait();
        let puts = cells.iter().filter(|c| c.cell_type == CellType::Put).count() as u64;
        self.counters.puts.fetch_add(puts, Ordering::Relaxed);
        self.counters.deletes.fetch_add(cells.len() as u64 - puts, Ordering::Relaxed);
        self.counters.user_bytes.fetch_add(user_bytes as u64, Ordering::Relaxed);
        Ok(seq)
    }

    /// One row mutation whose row lock the caller holds.
    fn mutate_row_locked(&self, row: &[u8], mutations: &[Mutation], durability: Durability) -> Result<u64> {
        let refs: SmallVec<[MutationRef<'_>; 8]> = mutations.iter().map(Mutation::as_ref).collect();
        let mut refused = Vec::new();
        let seq = self.apply_locked(&[RowMutations { row, mutations: &refs }], 0, durability, &mut refused)?;
        match refused.pop() {
            Some((_, e)) => Err(e),
            None => Ok(seq),
        }
    }

    /// Re-inserts a WAL entry during recovery (cells already flushed to a
    /// family's files are skipped). An entry is one region batch: its cells
    /// come in runs of one row and family. Returns whether anything was
    /// applied; what was is accounted in the WAL until the region flushes.
    pub fn replay(&self, seq: u64, cells: &[Cell]) -> Result<bool> {
        let mut applied = false;
        let mut inputs: Vec<CellInput<'_>> = Vec::new();
        let mut run = 0;
        while run < cells.len() {
            let (row, family) = (&cells[run].row, &cells[run].family);
            let len = cells[run..].iter().take_while(|c| &c.row == row && &c.family == family).count();
            let store = self.store(family)?;
            if seq > store.replay_floor() {
                inputs.clear();
                inputs.extend(cells[run..run + len].iter().map(Cell::as_input));
                store.memstore().add_replayed_row(&inputs, seq)?;
                applied = true;
            }
            run += len;
        }
        if applied {
            self.wal.note_replayed(self.info.id, seq);
        }
        self.mvcc.advance_to(seq);
        Ok(applied)
    }

    /// Adds `amount` to a big-endian 8-byte counter; returns the new value.
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        amount: i64,
        durability: Durability,
    ) -> Result<i64> {
        self.check_open()?;
        let _row = self.row_lock(row).lock();
        let get = Get {
            row: row.to_vec(),
            columns: vec![Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) }],
            time_range: TimeRange::ALL,
            max_versions: 1,
        };
        let current = match self.get(&get)?.first() {
            None => 0,
            Some(c) => {
                let bytes: [u8; 8] = c.value.as_slice().try_into().map_err(|_| {
                    StoreError::InvalidArgument(format!(
                        "column {}:{} holds {} bytes, not an 8-byte counter",
                        String::from_utf8_lossy(family),
                        String::from_utf8_lossy(qualifier),
                        c.value.len()
                    ))
                })?;
                i64::from_be_bytes(bytes)
            }
        };
        let next = current.wrapping_add(amount);
        let put = Mutation::Put {
            family: family.to_vec(),
            qualifier: qualifier.to_vec(),
            timestamp: None,
            value: next.to_be_bytes().to_vec(),
        };
        self.mutate_row_locked(row, &[put], durability)?;
        Ok(next)
    }

    /// Applies `mutations` if the column's latest value equals `expected`
    /// (`None`: the column must not exist). Returns whether it applied.
    pub fn check_and_mutate(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        mutations: &[Mutation],
        durability: Durability,
    ) -> Result<bool> {
        self.check_open()?;
        let _row = self.row_lock(row).lock();
        let get = Get {
            row: row.to_vec(),
            columns: vec![Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) }],
            time_range: TimeRange::ALL,
            max_versions: 1,
        };
        let current = self.get(&get)?;
        let matches = match (current.first(), expected) {
            (None, None) => true,
            (Some(c), Some(e)) => c.value == e,
            _ => false,
        };
        if matches {
            self.mutate_row_locked(row, mutations, durability)?;
        }
        Ok(matches)
    }

    /// Per-family read specifications for `columns` (empty: all families).
    fn read_specs(
        &self,
        columns: &[Column],
        time_range: TimeRange,
        max_versions: u32,
        read_point: u64,
    ) -> Result<Vec<FamilyReadSpec>> {
        let mut by_family: BTreeMap<Vec<u8>, Option<Vec<Vec<u8>>>> = BTreeMap::new();
        if columns.is_empty() {
            for f in self.stores.keys() {
                by_family.insert(f.clone(), None);
            }
        }
        for c in columns {
            self.store(&c.family)?;
            let entry = by_family.entry(c.family.clone()).or_insert_with(|| Some(Vec::new()));
            match (&c.qualifier, entry.as_mut()) {
                (None, _) => *entry = None,
                (Some(q), Some(list)) => list.push(q.clone()),
                (Some(_), None) => {}
            }
        }
        let now = now_ms();
        Ok(by_family
            .into_iter()
            .map(|(family, qualifiers)| {
                let store = &self.stores[&family];
                FamilyReadSpec {
                    family,
                    opts: ReadOptions { read_point, qualifiers, time_range, max_versions, now_ms: Some(now) },
                    rules: store.descriptor().rules(),
                }
            })
            .collect())
    }

    fn cursor_for(&self, specs: &[FamilyReadSpec], row: Option<&[u8]>) -> Result<MergedCursor> {
        let mut cursors: Vec<Box<dyn CellCursor>> = Vec::new();
        for spec in specs {
            cursors.extend(self.stores[&spec.family].cursor(row)?);
        }
        Ok(MergedCursor::new(cursors))
    }

    /// The visible cells of one row.
    pub fn get(&self, get: &Get) -> Result<Vec<Cell>> {
        self.check_open()?;
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        let guard = self.mvcc.register_reader();
        let specs = self.read_specs(&get.columns, get.time_range, get.max_versions.max(1), guard.read_point())?;
        let mut cursor = self.cursor_for(&specs, Some(&get.row))?;
        cursor.seek(&CellKey::first_on_row(&get.row))?;
        RowReader::new(&specs).read_row(&mut cursor, &get.row)
    }

    /// A scanner over this region's rows in `[start, stop)` (forward) or
    /// from `start` down to `stop` (reverse).
    pub fn scanner(
        self: &Arc<Self>,
        columns: &[Column],
        time_range: TimeRange,
        max_versions: u32,
    ) -> Result<crate::region_scanner::RegionScanner> {
        self.check_open()?;
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        let guard = self.mvcc.register_reader();
        let specs = self.read_specs(columns, time_range, max_versions.max(1), guard.read_point())?;
        let cursor = self.cursor_for(&specs, None)?;
        Ok(crate::region_scanner::RegionScanner::new(self.clone(), cursor, specs, guard))
    }

    /// Flushes every family's memstore into new files. Returns bytes written.
    /// On error the snapshots stay in memory and the next flush retries them.
    ///
    /// A flush that starts with no failed snapshot outstanding covers every
    /// edit appended so far and tells the WAL's accounting so
    /// (`start_flush`, then `complete_flush` or `abort_flush`). A retry only
    /// rewrites old snapshots, so it leaves the accounting alone: the edits
    /// stay needed until the next complete flush, which is conservative.
    pub fn flush(&self) -> Result<u64> {
        self.flush_recording(true)
    }

    /// A flush during WAL replay, to stay under the memory limit: it writes
    /// the replayed cells but leaves each family's flushed sequence id where
    /// it was. A region's entries can be out of seq order in the log (a
    /// writer takes its seq before it appends), so an entry below the
    /// highest replayed so far may still come; and a crash before replay
    /// ends must replay everything above the old mark again. (Cells replayed
    /// twice are identical, seq included, and read as one.)
    pub fn flush_replayed(&self) -> Result<u64> {
        self.flush_recording(false)
    }

    /// Flushes until everything in memory is in files and the WAL's
    /// accounting holds nothing of the region: a flush that retries an
    /// earlier failed one writes only that old snapshot, so the writes made
    /// after it need one more. For a drained region, before a close, split
    /// or merge commits on its files alone.
    pub fn flush_all(&self) -> Result<()> {
        for _ in 0..3 {
            self.flush()?;
            if self.flush_lock.lock().is_empty()
                && self.memstore_data_size() == 0
                && self.wal.lowest_unflushed(self.info.id).is_none()
            {
                return Ok(());
            }
        }
        Err(StoreError::WritesStopped(format!(
            "region {} still holds unflushed edits after three flushes",
            self.info.region_name()
        )))
    }

    /// Flushes; `advance`: record the flush's sequence id as flushed.
    fn flush_recording(&self, advance: bool) -> Result<u64> {
        let mut pending = self.flush_lock.lock();
        let retry = !pending.is_empty();
        let snapshots = {
            let _updates = self.updates.write();
            if !retry {
                self.wal.start_flush(self.info.id);
            }
            // 0 leaves the families' flushed sequence ids as they are.
            let flush_seq = if advance { self.mvcc.last_assigned() } else { 0 };
            let snapshots: Vec<_> = self
                .stores
                .iter()
                .map(|(family, store)| {
                    let seq = *pending.entry(family.clone()).or_insert(flush_seq);
                    (family.clone(), store.clone(), store.memstore().snapshot(), seq)
                })
                .collect();
            snapshots
        };
        let written = self.hook(HookPoint::FlushSnapshotTaken).and_then(|()| {
            let mut bytes = 0;
            for (family, store, snapshot, seq) in &snapshots {
                bytes += store.flush_snapshot(snapshot, *seq)?;
                store.memstore().release_snapshot(snapshot.id())?;
                pending.remove(family);
            }
            Ok(bytes)
        });
        match &written {
            Ok(_) if !retry => self.wal.complete_flush(self.info.id),
            Err(_) if !retry => self.wal.abort_flush(self.info.id),
            _ => {}
        }
        if written.is_ok() {
            self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        }
        written
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

/// The row locks a batch holds: the stripes in `stripes`, locked in
/// ascending order by `Region::lock_rows` (their guards forgotten), unlocked
/// here.
struct RowLockSet<'a> {
    locks: &'a [Mutex<()>],
    stripes: u128,
}

impl Drop for RowLockSet<'_> {
    fn drop(&mut self) {
        let mut rest = self.stripes;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            // SAFETY: `lock_rows` locked stripe `i` in this thread and
            // forgot its guard; nothing else unlocks it.
            unsafe { self.locks[i].force_unlock() };
            rest &= rest - 1;
        }
    }
}

/// How many leading rows of `rows` are distinct (a region batch holds no
/// row twice). Allocation-free for the common case of a few dozen rows.
fn distinct_prefix(rows: &[RowMutations<'_>]) -> usize {
    for (i, r) in rows.iter().enumerate().skip(1) {
        if rows[..i].iter().any(|p| p.row == r.row) {
            return i;
        }
    }
    rows.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_row_ends_the_distinct_prefix() {
        let m: [MutationRef<'_>; 0] = [];
        let rows: Vec<RowMutations<'_>> =
            [&b"a"[..], b"b", b"c", b"a", b"d"].iter().map(|row| RowMutations { row, mutations: &m }).collect();
        assert_eq!(distinct_prefix(&rows), 3);
        assert_eq!(distinct_prefix(&rows[3..]), 2);
        assert_eq!(distinct_prefix(&rows[..0]), 0);
    }
}
