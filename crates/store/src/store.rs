//! `Store`: the embedded API — a store instance in a directory, holding
//! tables of regions, one WAL shared by all regions, the block cache, and
//! the background flushers and compactors.
//!
//! Layout on disk:
//! ```text
//! <dir>/wal/                      the WAL (see wal/)
//! <dir>/data/<table>/.tabledesc   the table's descriptor and state (JSON)
//! <dir>/data/<table>/<region>/    .regioninfo and one directory per family
//! ```
//!
//! Invariants:
//! - A table's regions are sorted by start key and cover the whole key space
//!   without overlap (a split replaces one region by its two daughters in one
//!   step under the table's region lock).
//! - Everything acknowledged is in the WAL (within its durability setting) or
//!   in committed store files; recovery replays the WAL entries newer than
//!   each family's flushed sequence id.
//!
//! Thread safety: `Store` is `Send + Sync`; clones share one instance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use memstore::{Cell, TimeRange};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::compactor::Compactor;
use crate::error::{Result, StoreError};
use crate::family_store::StoreContext;
use crate::flusher::Flusher;
use crate::hooks::HookPoint;
use crate::options::StoreOptions;
use crate::region::{Column, Get, Mutation, REGION_INFO_NAME, Region, RegionConfig, RegionInfo, RowMutations};
use crate::scanner::{Scan, Scanner};
use crate::storefile::BlockCache;
use crate::table::TableDescriptor;
use crate::wal::{Durability, Wal};

const TABLE_DESC_NAME: &str = ".tabledesc";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TableFile {
    descriptor: TableDescriptor,
    enabled: bool,
}

/// A table and its regions.
pub struct TableState {
    pub desc: Arc<TableDescriptor>,
    enabled: AtomicBool,
    pub(crate) regions: RwLock<Vec<Arc<Region>>>,
    /// One change of the region list at a time per table (split, merge,
    /// close, open, parent removal); region state transitions happen under it.
    pub(crate) change_lock: Mutex<()>,
}

impl TableState {
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// The region holding `row`.
    pub fn region_for(&self, row: &[u8]) -> Option<Arc<Region>> {
        let regions = self.regions.read();
        let i = regions.partition_point(|r| r.info().start_key.as_slice() <= row);
        i.checked_sub(1).map(|i| regions[i].clone())
    }

    pub fn regions(&self) -> Vec<Arc<Region>> {
        self.regions.read().clone()
    }

    /// Memstore heap bytes of all regions (read under the region lock, no
    /// copy of the region list: writers call it under global pressure).
    pub fn memstore_heap_size(&self) -> u64 {
        self.regions.read().iter().map(|r| r.memstore_heap_size()).sum()
    }
}

pub(crate) struct StoreInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: StoreOptions,
    pub(crate) wal: Arc<Wal>,
    pub(crate) ctx: StoreContext,
    pub(crate) region_config: RegionConfig,
    pub(crate) tables: RwLock<BTreeMap<String, Arc<TableState>>>,
    admin: Mutex<()>,
    pub(crate) next_region_id: AtomicU64,
    pub(crate) flusher: Flusher,
    pub(crate) compactor: Compactor,
    pub(crate) closed: AtomicBool,
}

/// An open store instance.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<StoreInner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.inner.dir).finish()
    }
}

fn data_dir(dir: &Path) -> PathBuf {
    dir.join("data")
}

fn json<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(value).map_err(|e| StoreError::InvalidArgument(e.to_string()))
}

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::corruption(path, e.column() as u64, e.to_string()))
}

impl Store {
    /// Opens the store in `dir` (creating it if needed) and recovers it: the
    /// tables and regions on disk are opened and the WAL is replayed.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        let fs = options.fs.clone();
        crate::fs::create_dir_all_durably(fs.as_ref(), &data_dir(&dir))?;
        let cache_bytes = options.block_cache_bytes();
        let ctx = StoreContext {
            fs: fs.clone(),
            block_cache: (cache_bytes > 0).then(|| Arc::new(BlockCache::new(cache_bytes))),
            next_file_id: Arc::new(AtomicU64::new(1)),
            events: Arc::new(crate::events::EventLog::default()),
        };
        // Recovery reads the WAL twice, holding no entry in memory: this
        // first pass checks every file and learns what each holds (which
        // regions, up to which seq) so the WAL can start its new file; the
        // second, once the regions are open, streams the entries into them.
        let (wal, summary) = Wal::open_with(fs.clone(), &dir.join("wal"), options.wal.clone(), |_| Ok(()))?;
        let region_config = RegionConfig {
            ctx: ctx.clone(),
            flush_size: options.region_flush_size,
            max_cell_size: options.max_cell_size,
            hooks: options.hooks.clone(),
        };
        let inner = Arc::new(StoreInner {
            dir: dir.clone(),
            flusher: Flusher::new(&options),
            compactor: Compactor::new(&options),
            options,
            wal: wal.clone(),
            ctx,
            region_config,
            tables: RwLock::new(BTreeMap::new()),
            admin: Mutex::new(()),
            next_region_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        });
        let store = Store { inner };
        let reference_holders = store.load_tables()?;
        store.replay(&summary)?;
        if store.inner.options.background {
            Flusher::start(&store.inner);
            Compactor::start(&store.inner);
            for r in &reference_holders {
                for s in r.stores() {
                    store.inner.compactor.request(r, s);
                }
            }
        }
        Ok(store)
    }

    /// Opens the tables and regions on disk; returns the regions that still
    /// read through references (their compaction is asked for once the
    /// background threads run).
    fn load_tables(&self) -> Result<Vec<Arc<Region>>> {
        let inner = &self.inner;
        let mut reference_holders = Vec::new();
        let fs = inner.ctx.fs.as_ref();
        let data = data_dir(&inner.dir);
        let mut max_region_id = 0;
        for table_name in fs.list(&data)? {
            let table_dir = data.join(&table_name);
            if table_name.starts_with(crate::retired_parents::TRASH_PREFIX) {
                // A table or region whose removal a crash interrupted.
                fs.remove_dir_all(&table_dir)?;
                continue;
            }
            let desc_path = table_dir.join(TABLE_DESC_NAME);
            if !fs.exists(&desc_path)? {
                // A table whose creation did not commit.
                tracing::warn!(dir = %table_dir.display(), "removing a table directory without a descriptor");
                fs.remove_dir_all(&table_dir)?;
                continue;
            }
            let file: TableFile = parse_json(&desc_path, &fs.read_all(&desc_path)?)?;
            let desc = Arc::new(file.descriptor);
            let mut infos = Vec::new();
            for name in fs.list(&table_dir)? {
                let region_dir = table_dir.join(&name);
                if name.starts_with(crate::retired_parents::TRASH_PREFIX) {
                    fs.remove_dir_all(&region_dir)?;
                    continue;
                }
                let info_path = region_dir.join(REGION_INFO_NAME);
                if name.starts_with('.') {
                    continue;
                }
                if !fs.exists(&info_path)? {
                    if crate::retired_parents::is_region_dir_name(&name) {
                        // A daughter or merged region whose writing a crash
                        // interrupted before its commit.
                        tracing::info!(dir = %region_dir.display(), "removing a region directory without .regioninfo");
                        crate::retired_parents::remove_region_dir(fs, &region_dir)?;
                    }
                    continue;
                }
                let info: RegionInfo = parse_json(&info_path, &fs.read_all(&info_path)?)?;
                max_region_id = max_region_id.max(info.id);
                infos.push((region_dir, info));
            }
            let on_disk = crate::retired_parents::resolve_leftovers(fs, infos)?;
            let mut opened = Vec::with_capacity(on_disk.regions.len());
            for (region_dir, info) in on_disk.regions {
                let closed = fs.exists(&region_dir.join(crate::region_open_close::CLOSED_MARKER))?;
                let region = Region::open(region_dir, info, desc.clone(), inner.wal.clone(), &inner.region_config)?;
                if closed {
                    // Closed by an operator: it stays closed until opened.
                    region.close();
                    region.stores().for_each(|s| s.set_retired(true));
                }
                opened.push(Arc::new(region));
            }
            opened.sort_by(|a, b| a.info().start_key.cmp(&b.info().start_key));
            for parent_dir in on_disk.retired {
                crate::retired_parents::remove_if_unreferenced(fs, &parent_dir, &opened)?;
            }
            for r in &opened {
                if r.has_references() && !r.is_closed() {
                    reference_holders.push(r.clone());
                }
            }
            inner.tables.write().insert(
                desc.name.clone(),
                Arc::new(TableState {
                    desc,
                    enabled: AtomicBool::new(file.enabled),
                    regions: RwLock::new(opened),
                    change_lock: Mutex::new(()),
                }),
            );
        }
        inner.next_region_id.store(max_region_id + 1, Ordering::Relaxed);
        Ok(reference_holders)
    }

    /// Replays the WAL entries of the files the first pass found into their
    /// regions, one entry at a time, flushing the largest regions whenever
    /// the memstores pass the global limit (so recovery of a log of any
    /// length holds about that much), then flushes what was replayed so
    /// that the old WAL files are no longer needed.
    fn replay(&self, summary: &crate::wal::ReplaySummary) -> Result<()> {
        let started = std::time::Instant::now();
        let mut by_id: BTreeMap<u64, Arc<Region>> = BTreeMap::new();
        for t in self.inner.tables.read().values() {
            for r in t.regions() {
                by_id.insert(r.info().id, r);
            }
        }
        let files: Vec<(u64, PathBuf)> =
            summary.files.iter().filter(|f| !f.abandoned).map(|f| (f.number, f.path.clone())).collect();
        let fs = self.inner.ctx.fs.as_ref();
        let limit = self.inner.options.global_memstore_limit();
        let low_mark = self.inner.options.global_memstore_low_mark();
        let mut touched: BTreeMap<u64, Arc<Region>> = BTreeMap::new();
        let (mut entries, mut flushes) = (0u64, 0u64);
        let mut since_check = 0u64;
        let mut reader = crate::wal::WalReader::open_files(fs, files)?;
        for entry in reader.by_ref() {
            let entry = entry?;
            entries += 1;
            let Some(region) = by_id.get(&entry.region_id) else { continue };
            let cells: Vec<Cell> = entry.cells()?.map(|c| c.to_cell()).collect();
            if !cells.is_empty() && region.replay(entry.seq, &cells)? {
                touched.insert(entry.region_id, region.clone());
            }
            // Look at the memstores' total after every sixteenth of the
            // limit replayed (by WAL bytes, close to what the cells take).
            since_check += entry.cells.len() as u64;
            if since_check >= limit / 16 {
                since_check = 0;
                flushes += flush_down_to(touched.values(), limit, low_mark)?;
            }
        }
        let torn_tail = reader.into_summary().torn_tail;
        if let Some((path, offset)) = &torn_tail {
            tracing::warn!(file = %path.display(), offset, "WAL ended in a torn record; replayed everything before it");
        }
        for region in touched.values() {
            region.flush()?;
        }
        if entries > 0 {
            tracing::info!(
                entries,
                regions = touched.len(),
                flushes_under_memory_limit = flushes,
                seconds = started.elapsed().as_secs_f64(),
                "WAL replayed"
            );
        }
        self.archive_wal()?;
        Ok(())
    }

    /// Archives WAL files that no region needs any more (the WAL's own
    /// sequence-id accounting decides; see `wal/accounting.rs`).
    pub(crate) fn archive_wal(&self) -> Result<usize> {
        if let Some(h) = &self.inner.options.hooks {
            h.at(HookPoint::ArchivePass, 0)?;
        }
        self.inner.wal.archive_obsolete()
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        Ok(())
    }

    fn table(&self, name: &str) -> Result<Arc<TableState>> {
        self.inner.tables.read().get(name).cloned().ok_or_else(|| StoreError::TableNotFound(name.to_string()))
    }

    fn enabled_table(&self, name: &str) -> Result<Arc<TableState>> {
        let t = self.table(name)?;
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(name.to_string()));
        }
        Ok(t)
    }

    fn write_table_file(&self, desc: &TableDescriptor, enabled: bool) -> Result<()> {
        let table_dir = data_dir(&self.inner.dir).join(&desc.name);
        self.inner.ctx.fs.create_dir_all(&table_dir)?;
        self.inner
            .ctx
            .fs
            .write_atomic(&table_dir.join(TABLE_DESC_NAME), &json(&TableFile { descriptor: desc.clone(), enabled })?)
    }

    /// Creates a table, pre-split at `split_keys`.
    pub fn create_table(&self, desc: TableDescriptor, split_keys: &[Vec<u8>]) -> Result<()> {
        self.check_open()?;
        desc.validate()?;
        let _admin = self.inner.admin.lock();
        if self.inner.tables.read().contains_key(&desc.name) {
            return Err(StoreError::TableExists(desc.name.clone()));
        }
        let mut keys: Vec<Vec<u8>> = split_keys.to_vec();
        keys.sort();
        keys.dedup();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(StoreError::InvalidArgument("split keys must not be empty".into()));
        }
        let desc = Arc::new(desc);
        let table_dir = data_dir(&self.inner.dir).join(&desc.name);
        let fs = self.inner.ctx.fs.as_ref();
        fs.create_dir_all(&table_dir)?;
        let mut bounds = vec![Vec::new()];
        bounds.extend(keys);
        let mut regions = Vec::with_capacity(bounds.len());
        for (i, start) in bounds.iter().enumerate() {
            let end = bounds.get(i + 1).cloned().unwrap_or_default();
            let info = RegionInfo {
                id: self.inner.next_region_id.fetch_add(1, Ordering::Relaxed),
                table: desc.name.clone(),
                start_key: start.clone(),
                end_key: end,
                parent: None,
                merged_from: Vec::new(),
            };
            let dir = table_dir.join(info.dir_name());
            regions.push(Arc::new(Region::open(
                dir,
                info,
                desc.clone(),
                self.inner.wal.clone(),
                &self.inner.region_config,
            )?));
        }
        // The descriptor is the commit point: without it the directory is
        // removed at the next open. The table directory's entry is made
        // durable with it.
        self.write_table_file(&desc, true)?;
        fs.sync_dir(&data_dir(&self.inner.dir))?;
        self.inner.tables.write().insert(
            desc.name.clone(),
            Arc::new(TableState {
                desc,
                enabled: AtomicBool::new(true),
                regions: RwLock::new(regions),
                change_lock: Mutex::new(()),
            }),
        );
        Ok(())
    }

    pub fn list_tables(&self) -> Vec<String> {
        self.inner.tables.read().keys().cloned().collect()
    }

    pub fn describe_table(&self, name: &str) -> Result<TableDescriptor> {
        Ok((*self.table(name)?.desc).clone())
    }

    pub fn is_table_enabled(&self, name: &str) -> Result<bool> {
        Ok(self.table(name)?.is_enabled())
    }

    /// The regions of a table, in key order.
    pub fn table_regions(&self, name: &str) -> Result<Vec<RegionInfo>> {
        Ok(self.table(name)?.regions().iter().map(|r| r.info().clone()).collect())
    }

    pub(crate) fn table_state(&self, name: &str) -> Result<Arc<TableState>> {
        self.table(name)
    }

    /// The region whose encoded name (its directory's name, unique in the
    /// store) is `name`, with its table.
    fn region_named(&self, name: &str) -> Result<(Arc<TableState>, Arc<Region>)> {
        let tables: Vec<Arc<TableState>> = self.inner.tables.read().values().cloned().collect();
        for t in tables {
            if let Some(r) = t.regions().into_iter().find(|r| r.info().dir_name() == name) {
                return Ok((t, r));
            }
        }
        Err(StoreError::InvalidArgument(format!("no region named {name:?} (regions are named by their encoded id)")))
    }

    /// Closes one region (HBase's `unassign`): flushed, its files left to
    /// its directory alone, refusing requests with `NotServingRegion` until
    /// `open_region`, across restarts too. `name` is its encoded name
    /// ([`RegionInfo::dir_name`]).
    pub fn close_region(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let (t, region) = self.region_named(name)?;
        crate::region_open_close::close_region(&self.inner, &t, &region)
    }

    /// Opens a closed region again from its directory (HBase's `assign`).
    pub fn open_region(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let (t, region) = self.region_named(name)?;
        crate::region_open_close::open_region(&self.inner, &t, &region).map(|_| ())
    }

    /// Merges two adjacent regions, named by their encoded names (HBase's
    /// `merge_region`); returns the merged region's.
    pub fn merge_regions(&self, a: &str, b: &str) -> Result<String> {
        self.check_open()?;
        let (t, ra) = self.region_named(a)?;
        let (tb, rb) = self.region_named(b)?;
        if !Arc::ptr_eq(&t, &tb) {
            return Err(StoreError::InvalidArgument(format!("regions {a} and {b} belong to different tables")));
        }
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(t.desc.name.clone()));
        }
        crate::merge::merge_regions(&self.inner, &t, &ra, &rb).map(|m| m.info().dir_name())
    }

    /// Every region of `table` with its state, in key order.
    pub fn region_states(&self, table: &str) -> Result<Vec<(RegionInfo, crate::region_state::RegionState)>> {
        Ok(self.table(table)?.regions().iter().map(|r| (r.info().clone(), r.state())).collect())
    }

    /// Flushes and stops serving a table; its data stays on disk.
    pub fn disable_table(&self, name: &str) -> Result<()> {
        let _admin = self.inner.admin.lock();
        let t = self.table(name)?;
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(name.to_string()));
        }
        t.enabled.store(false, Ordering::Release);
        for r in t.regions() {
            r.flush()?;
        }
        self.write_table_file(&t.desc, false)
    }

    pub fn enable_table(&self, name: &str) -> Result<()> {
        let _admin = self.inner.admin.lock();
        let t = self.table(name)?;
        if t.is_enabled() {
            return Err(StoreError::TableEnabled(name.to_string()));
        }
        self.write_table_file(&t.desc, true)?;
        t.enabled.store(true, Ordering::Release);
        Ok(())
    }

    /// Deletes a disabled table and all its data.
    pub fn delete_table(&self, name: &str) -> Result<()> {
        let _admin = self.inner.admin.lock();
        let t = self.table(name)?;
        if t.is_enabled() {
            return Err(StoreError::TableEnabled(name.to_string()));
        }
        for r in t.regions() {
            r.close_and_drain();
            self.inner.wal.forget_region(r.info().id);
        }
        self.inner.tables.write().remove(name);
        crate::retired_parents::remove_region_dir(self.inner.ctx.fs.as_ref(), &data_dir(&self.inner.dir).join(name))?;
        self.archive_wal()?;
        Ok(())
    }

    /// Applies `mutations` to `row` atomically. `durability` overrides the
    /// table's default.
    pub fn mutate_row(
        &self,
        table: &str,
        row: &[u8],
        mutations: &[Mutation],
        durability: Option<Durability>,
    ) -> Result<()> {
        self.with_region(table, row, |t, region| {
            region.mutate_row(row, mutations, durability.unwrap_or(t.desc.durability)).map(|_| ())
        })
    }

    /// Applies a batch of row mutations: each row atomically, the rows of
    /// each region as one region batch (one WAL record, one sync under
    /// SYNC_WAL, visible only once durable; HBase's batchMutate). A row that
    /// cannot be applied does not stop the others: they are applied and the
    /// first such error is returned, as HBase's batch does. `durability`
    /// overrides the table's default.
    pub fn mutate_rows(&self, table: &str, rows: &[RowMutations<'_>], durability: Option<Durability>) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let durability = durability.unwrap_or(t.desc.durability);
        // Sorted by row (stable: a repeated row keeps its order), so the
        // rows of one region are contiguous.
        let mut rows: SmallVec<[(usize, RowMutations<'_>); 8]> = rows.iter().copied().enumerate().collect();
        rows.sort_unstable_by(|a, b| a.1.row.cmp(b.1.row).then(a.0.cmp(&b.0)));
        let mut group: SmallVec<[RowMutations<'_>; 8]> = SmallVec::new();
        let mut first_error: Option<(usize, StoreError)> = None;
        let mut note = |i: usize, e: StoreError| {
            if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                first_error = Some((i, e));
            }
        };
        let mut at = 0;
        let mut attempts = 0;
        while at < rows.len() {
            let region = t.region_for(rows[at].1.row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
            let n = rows[at..].iter().take_while(|(_, r)| region.info().contains(r.row)).count().max(1);
            group.clear();
            group.extend(rows[at..at + n].iter().map(|(_, r)| *r));
            crate::flusher::reclaim_memory(&self.inner, &region)?;
            match region.mutate_rows(&group, durability) {
                Err(e) if e.is_region_moving() && attempts < 1000 => {
                    attempts += 1;
                    if region_is_current(&t, &region) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    continue; // a split or merge replaced it: look the rows up again
                }
                Err(e) => {
                    crate::flusher::after_write(&self.inner, &region);
                    note(rows[at].0, e);
                }
                Ok(outcome) => {
                    crate::flusher::after_write(&self.inner, &region);
                    for (i, e) in outcome.refused {
                        note(rows[at + i].0, e);
                    }
                    at += outcome.done;
                    continue;
                }
            }
            at += n;
        }
        match first_error {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Puts `(family, qualifier, value)` cells into one row at `timestamp`
    /// (default now).
    pub fn put(&self, table: &str, row: &[u8], cells: &[(&[u8], &[u8], &[u8])], timestamp: Option<u64>) -> Result<()> {
        let mutations: Vec<Mutation> = cells
            .iter()
            .map(|(f, q, v)| Mutation::Put { family: f.to_vec(), qualifier: q.to_vec(), timestamp, value: v.to_vec() })
            .collect();
        self.mutate_row(table, row, &mutations, None)
    }

    pub fn get(&self, table: &str, get: &Get) -> Result<Vec<Cell>> {
        self.with_region(table, &get.row, |_, region| region.get(get))
    }

    /// Adds `amount` to a counter column; returns the new value.
    pub fn increment(&self, table: &str, row: &[u8], family: &[u8], qualifier: &[u8], amount: i64) -> Result<i64> {
        self.with_region(table, row, |t, region| region.increment(row, family, qualifier, amount, t.desc.durability))
    }

    /// Applies `mutations` if the column's value equals `expected` (`None`:
    /// absent). Returns whether they were applied.
    pub fn check_and_mutate(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        mutations: &[Mutation],
    ) -> Result<bool> {
        self.with_region(table, row, |t, region| {
            region.check_and_mutate(row, family, qualifier, expected, mutations, t.desc.durability)
        })
    }

    /// A scanner over a table.
    pub fn scan(&self, table: &str, scan: Scan) -> Result<Scanner> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        Scanner::new(t, scan)
    }

    /// Runs `op` on the region holding `row`, retrying while a split or merge
    /// replaces it (milliseconds), after waiting for memory if the store is
    /// over its limits. A region closed for any other reason answers
    /// `NotServingRegion` at once.
    fn with_region<T>(
        &self,
        table: &str,
        row: &[u8],
        op: impl Fn(&TableState, &Arc<Region>) -> Result<T>,
    ) -> Result<T> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        for _ in 0..1000 {
            let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
            crate::flusher::reclaim_memory(&self.inner, &region)?;
            match op(&t, &region) {
                Err(e) if e.is_region_moving() && !region_is_current(&t, &region) => {
                    continue; // split or merged: the new regions are in place now
                }
                Err(e) if e.is_region_moving() => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                result => {
                    crate::flusher::after_write(&self.inner, &region);
                    return result;
                }
            }
        }
        Err(StoreError::WritesStopped(format!("region of row {:?} stayed closed", String::from_utf8_lossy(row))))
    }

    /// Flushes every region of a table.
    pub fn flush_table(&self, table: &str) -> Result<()> {
        self.check_open()?;
        for r in self.enabled_table(table)?.regions() {
            r.flush()?;
        }
        self.archive_wal()?;
        Ok(())
    }

    /// Compacts every store of a table now (major: all files, purging deletes).
    pub fn compact_table(&self, table: &str, major: bool) -> Result<()> {
        self.check_open()?;
        for r in self.enabled_table(table)?.regions() {
            for s in r.stores() {
                crate::compactor::compact_store(&self.inner, &r, s, major)?;
            }
            crate::split::maybe_split(&self.inner, &self.enabled_table(table)?, &r)?;
        }
        Ok(())
    }

    /// Flushes the region holding `row`.
    pub fn flush_region(&self, table: &str, row: &[u8]) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        region.flush()?;
        self.archive_wal()?;
        Ok(())
    }

    /// Compacts the stores of the region holding `row` (major: all files).
    pub fn compact_region(&self, table: &str, row: &[u8], major: bool) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        for s in region.stores() {
            crate::compactor::compact_store(&self.inner, &region, s, major)?;
        }
        Ok(())
    }

    /// Splits the region holding `row` at `at` (or its midpoint).
    pub fn split_region(&self, table: &str, row: &[u8], at: Option<&[u8]>) -> Result<bool> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        crate::split::split_region(&self.inner, &t, &region, at.map(|a| a.to_vec()))
    }

    /// Flushes every region and stops. Writes after `close` fail.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.flusher.stop();
        self.inner.compactor.stop();
        let mut first_error = None;
        for t in self.inner.tables.read().values() {
            for r in t.regions() {
                if let Err(e) = r.flush() {
                    first_error.get_or_insert(e);
                }
                r.close();
            }
        }
        self.inner.wal.close()?;
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }

    pub fn wal(&self) -> &Arc<Wal> {
        &self.inner.wal
    }

    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.inner.ctx.block_cache.as_ref()
    }

    /// The most recent disk flushes and compactions, newest first.
    pub fn recent_events(&self) -> Vec<crate::events::StoreEvent> {
        self.inner.ctx.events.recent()
    }

    /// Regions of every table.
    pub fn all_regions(&self) -> Vec<Arc<Region>> {
        self.inner.tables.read().values().flat_map(|t| t.regions()).collect()
    }

    /// A convenience point read of whole columns.
    pub fn get_columns(&self, table: &str, row: &[u8], columns: &[Column], versions: u32) -> Result<Vec<Cell>> {
        let get =
            Get { row: row.to_vec(), columns: columns.to_vec(), time_range: TimeRange::ALL, max_versions: versions };
        self.get(table, &get)
    }
}

/// When the memstores of `regions` hold more than `limit` bytes, flushes the
/// largest of them until they hold at most `low_mark`; returns the flushes.
fn flush_down_to<'a>(regions: impl Iterator<Item = &'a Arc<Region>> + Clone, limit: u64, low_mark: u64) -> Result<u64> {
    let total = |rs: &mut dyn Iterator<Item = &'a Arc<Region>>| rs.map(|r| r.memstore_heap_size()).sum::<u64>();
    if total(&mut regions.clone()) <= limit {
        return Ok(0);
    }
    let mut flushes = 0;
    while total(&mut regions.clone()) > low_mark {
        let Some(largest) = regions.clone().max_by_key(|r| r.memstore_heap_size()) else { break };
        if largest.memstore_heap_size() == 0 {
            break;
        }
        largest.flush_replayed()?;
        flushes += 1;
    }
    Ok(flushes)
}

fn region_is_current(t: &TableState, region: &Arc<Region>) -> bool {
    t.regions.read().iter().any(|r| Arc::ptr_eq(r, region))
}

impl Drop for StoreInner {
    fn drop(&mut self) {
        self.flusher.stop();
        self.compactor.stop();
    }
}
