//! `Store`: the embedded API — a store instance in a directory, holding
//! tables of regions, one WAL shared by all regions, the block cache, and
//! the background flushers and compactors. This module routes requests to
//! regions; `recovery.rs` opens a store, `ddl.rs` administers tables and
//! regions. Which tables and regions exist is the catalog's (`catalog.rs`);
//! what the jobs share is `services.rs`.
//!
//! Layout on disk:
//! ```text
//! <dir>/wal/                      the WAL (see wal/)
//! <dir>/data/<table>/.tabledesc   the table's descriptor and state (JSON)
//! <dir>/data/<table>/<region>/    .regioninfo and one directory per family
//! ```
//!
//! Invariants:
//! - Everything acknowledged is in the WAL (within its durability setting) or
//!   in committed store files; recovery replays the WAL entries newer than
//!   each family's flushed sequence id.
//! - A request that meets a region being replaced (split, merge) looks the
//!   row up again; one that meets a closed region gets `NotServingRegion`.
//!
//! Thread safety: `Store` is `Send + Sync`; clones share one instance.

mod alter;
mod ddl;
pub mod member;
pub mod namespaces;
pub use member::Member;
mod one_sync;
mod recovery;

use std::path::Path;
use std::sync::Arc;

use memstore::{Cell, TimeRange};
use smallvec::SmallVec;

use crate::catalog::TableState;
use crate::error::{Result, StoreError};
use crate::hooks::HookPoint;
use crate::options::StoreOptions;
use crate::read::scanner::{Scan, Scanner};
use crate::region::{Column, Get, Mutation, Region, RowMutations};
use crate::services::Services;
use crate::storefile::BlockCache;
use crate::wal::{Durability, Wal};

/// An open store instance.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Services>,
}

/// What a batch's `note` is told was not applied: one row the region
/// refused (the others of its region batch were applied), or a region batch
/// that failed as a whole (none of its rows, or of its last mini-batch, was
/// applied), by its first row's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unapplied {
    Row,
    RegionBatch,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.inner.dir).finish()
    }
}

/// How a request waits for a region that a split or merge is replacing:
/// until a deadline, sleeping the catalog's suggested wait, growing to at
/// most 50 ms between lookups.
struct MoveRetry {
    deadline: std::time::Instant,
    backoff: std::time::Duration,
}

impl MoveRetry {
    fn new(limit: std::time::Duration) -> MoveRetry {
        MoveRetry { deadline: std::time::Instant::now() + limit, backoff: std::time::Duration::ZERO }
    }

    /// Sleeps before the next lookup (`suggested`, or longer once the
    /// region has been moving for a while); false once the deadline passed.
    fn wait(&mut self, suggested: std::time::Duration) -> bool {
        if std::time::Instant::now() >= self.deadline {
            return false;
        }
        if !suggested.is_zero() {
            self.backoff = (self.backoff * 2).clamp(suggested, std::time::Duration::from_millis(50));
            std::thread::sleep(self.backoff);
        }
        true
    }
}

impl Store {
    /// Opens the store in `dir` (creating it if needed) and recovers it: the
    /// tables and regions on disk are opened and the WAL is replayed.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Ok(Store { inner: recovery::open(dir.as_ref().to_path_buf(), options)? })
    }

    fn check_open(&self) -> Result<()> {
        self.inner.check_open()
    }

    fn table(&self, name: &str) -> Result<Arc<TableState>> {
        self.inner.catalog.table(name)
    }

    fn enabled_table(&self, name: &str) -> Result<Arc<TableState>> {
        let t = self.table(name)?;
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(name.to_string()));
        }
        Ok(t)
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
        let (refused, failed) = self.apply_rows(table, rows, durability)?;
        let first_refused = refused.into_iter().min_by_key(|(i, _)| *i);
        match (first_refused, failed) {
            (Some((i, e)), Some((j, _))) if i < j => Err(e),
            (_, Some((_, e))) | (Some((_, e)), None) => Err(e),
            (None, None) => Ok(()),
        }
    }

    /// Applies a batch as [`Store::mutate_rows`] does and says, row by row,
    /// which rows it refused and why: `(index in rows, error)`, ascending;
    /// every row not listed was applied (a client's multi reports each
    /// action's own result, as HBase's region server does). `Err`: a region
    /// batch failed as a whole (its WAL append or sync, a closed region) or
    /// the table cannot be written; rows of other regions may have been
    /// applied, and the caller reports the error for every row, as HBase's
    /// region-level exception does (its client retries the actions).
    pub fn mutate_rows_each(
        &self,
        table: &str,
        rows: &[RowMutations<'_>],
        durability: Option<Durability>,
    ) -> Result<Vec<(usize, StoreError)>> {
        let (mut refused, failed) = self.apply_rows(table, rows, durability)?;
        if let Some((_, e)) = failed {
            return Err(e);
        }
        refused.sort_unstable_by_key(|(i, _)| *i);
        Ok(refused)
    }

    /// The rows refused one by one, and the first (by row index) region
    /// batch that failed as a whole.
    #[expect(clippy::type_complexity, reason = "a private helper's two lists, named by its callers")]
    fn apply_rows(
        &self,
        table: &str,
        rows: &[RowMutations<'_>],
        durability: Option<Durability>,
    ) -> Result<(Vec<(usize, StoreError)>, Option<(usize, StoreError)>)> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let durability = durability.unwrap_or(t.desc.durability);
        // Sorted by row (stable: a repeated row keeps its order), so the
        // rows of one region are contiguous.
        let mut rows: SmallVec<[(usize, RowMutations<'_>); 8]> = rows.iter().copied().enumerate().collect();
        rows.sort_unstable_by(|a, b| a.1.row.cmp(b.1.row).then(a.0.cmp(&b.0)));
        let mut refused = Vec::new();
        let mut failed: Option<(usize, StoreError)> = None;
        let mut note = |i: usize, e: StoreError, what: Unapplied| match what {
            Unapplied::Row => refused.push((i, e)),
            Unapplied::RegionBatch => {
                if failed.as_ref().is_none_or(|(j, _)| i < *j) {
                    failed = Some((i, e));
                }
            }
        };
        // A SYNC_WAL batch over several regions shares one sync; what it
        // leaves (regions being split, merged or closed) goes region by
        // region below.
        let leftovers = one_sync::apply(&self.inner, &t, &rows, durability, &mut note)?;
        let mut retry = MoveRetry::new(self.inner.options.region_move_wait);
        for range in leftovers {
            self.mutate_range(&t, &rows[range], durability, &mut retry, &mut note)?;
        }
        Ok((refused, failed))
    }

    /// Applies `rows` (sorted by row) region by region, each region's rows
    /// as one region batch, following splits and merges.
    fn mutate_range(
        &self,
        t: &TableState,
        rows: &[(usize, RowMutations<'_>)],
        durability: Durability,
        retry: &mut MoveRetry,
        note: &mut dyn FnMut(usize, StoreError, Unapplied),
    ) -> Result<()> {
        let mut group: SmallVec<[RowMutations<'_>; 8]> = SmallVec::new();
        let mut at = 0;
        while at < rows.len() {
            let region = t.region_for(rows[at].1.row).ok_or_else(|| StoreError::TableNotFound(t.desc.name.clone()))?;
            let n = rows[at..].iter().take_while(|(_, r)| region.info().contains(r.row)).count().max(1);
            group.clear();
            group.extend(rows[at..at + n].iter().map(|(_, r)| *r));
            crate::jobs::flush::flusher::reclaim_memory(&self.inner, &region)?;
            self.inner.hook_at(HookPoint::RegionLookedUp, region.info().id)?;
            let result = region.mutate_rows(&group, durability);
            match result {
                Err(e)
                    if let Some(wait) = t.retry_after(&region, &e)
                        && retry.wait(wait) =>
                {
                    continue; // replaced, or being replaced: look the rows up again
                }
                Err(e) => {
                    crate::jobs::flush::flusher::after_write(&self.inner, &region);
                    note(rows[at].0, e, Unapplied::RegionBatch);
                }
                Ok(outcome) => {
                    crate::jobs::flush::flusher::after_write(&self.inner, &region);
                    for (i, e) in outcome.refused {
                        note(rows[at + i].0, e, Unapplied::Row);
                    }
                    at += outcome.done;
                    continue;
                }
            }
            at += n;
        }
        Ok(())
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

    /// The visible cells of one row. A read never waits on the memstore
    /// limit (as in HBase, only mutations do): while flushes fail — a full
    /// disk — writes stop at the limit and gets go on being served.
    pub fn get(&self, table: &str, get: &Get) -> Result<Vec<Cell>> {
        self.on_region(table, &get.row, Access::Read, |_, region| region.get(get))
    }

    /// The visible cells of one row, when this can be answered at once from
    /// memory: the memstores and cached blocks, with no file read and no
    /// wait for a split or merge (HBase's server has no such read; it is
    /// for a caller that answers on a thread other work waits behind, as
    /// RocksDB's `kBlockCacheTier` reads are). `None`: call [`Self::get`].
    pub fn get_from_memory(&self, table: &str, get: &Get) -> Result<Option<Vec<Cell>>> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(&get.row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        self.inner.hook_at(HookPoint::RegionLookedUp, region.info().id)?;
        match region.get_from_memory(get) {
            // Being split or merged: `get` waits for the region's successor.
            Err(e) if t.retry_after(&region, &e).is_some() => Ok(None),
            result => result,
        }
    }

    /// Adds `amount` to a counter column; returns the new value.
    pub fn increment(&self, table: &str, row: &[u8], family: &[u8], qualifier: &[u8], amount: i64) -> Result<i64> {
        let values = self.increment_columns(table, row, &[(family, qualifier, amount)])?;
        Ok(values[0])
    }

    /// Adds each amount to its counter column of one row, atomically (one
    /// write: HBase's Increment of several columns); the new values, in
    /// the order asked.
    pub fn increment_columns(&self, table: &str, row: &[u8], columns: &[(&[u8], &[u8], i64)]) -> Result<Vec<i64>> {
        self.with_region(table, row, |t, region| region.increment(row, columns, t.desc.durability))
    }

    /// Appends `suffix` to a column's newest value atomically (HBase's
    /// append); returns the new value.
    pub fn append(&self, table: &str, row: &[u8], family: &[u8], qualifier: &[u8], suffix: &[u8]) -> Result<Vec<u8>> {
        let mut values = self.append_columns(table, row, &[(family, qualifier, suffix)])?;
        Ok(values.swap_remove(0))
    }

    /// Appends each suffix to its column of one row, atomically (one
    /// write: HBase's Append of several columns); the new values, in the
    /// order asked.
    pub fn append_columns(&self, table: &str, row: &[u8], columns: &[(&[u8], &[u8], &[u8])]) -> Result<Vec<Vec<u8>>> {
        self.with_region(table, row, |t, region| region.append(row, columns, t.desc.durability))
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
        let services = self.inner.clone();
        let hooks = services.options.hooks.clone();
        Scanner::new(t, Arc::new(move |name| services.catalog.table(name).ok()), hooks, scan)
    }

    /// Runs the mutation `op` on the region holding `row` (see
    /// [`Store::on_region`]).
    fn with_region<T>(
        &self,
        table: &str,
        row: &[u8],
        op: impl Fn(&TableState, &Arc<Region>) -> Result<T>,
    ) -> Result<T> {
        self.on_region(table, row, Access::Write, op)
    }

    /// Runs `op` on the region holding `row`, looking the row up again
    /// while a split or merge replaces that region (up to the store's
    /// `region_move_wait`); a region closed for any other reason answers
    /// `NotServingRegion` at once. A write first waits until the memstores
    /// are under their limit and queues a flush after; a read does neither.
    fn on_region<T>(
        &self,
        table: &str,
        row: &[u8],
        access: Access,
        op: impl Fn(&TableState, &Arc<Region>) -> Result<T>,
    ) -> Result<T> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let mut retry = MoveRetry::new(self.inner.options.region_move_wait);
        loop {
            let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
            if access == Access::Write {
                crate::jobs::flush::flusher::reclaim_memory(&self.inner, &region)?;
            }
            self.inner.hook_at(HookPoint::RegionLookedUp, region.info().id)?;
            match op(&t, &region) {
                Err(e) if let Some(wait) = t.retry_after(&region, &e) => {
                    if !retry.wait(wait) {
                        return Err(StoreError::WritesStopped(format!(
                            "the region of row {:?} was being split or merged for {:?}: {e}",
                            String::from_utf8_lossy(row),
                            self.inner.options.region_move_wait
                        )));
                    }
                    // Replaced, or being replaced: look the row up again.
                }
                result => {
                    if access == Access::Write {
                        crate::jobs::flush::flusher::after_write(&self.inner, &region);
                    }
                    return result;
                }
            }
        }
    }

    /// Flushes every region of a table.
    pub fn flush_table(&self, table: &str) -> Result<()> {
        self.check_open()?;
        for r in self.enabled_table(table)?.regions() {
            r.flush()?;
        }
        self.inner.archive_wal()?;
        Ok(())
    }

    /// Compacts every store of a table now (major: all files, purging deletes).
    pub fn compact_table(&self, table: &str, major: bool) -> Result<()> {
        self.compact_table_family(table, None, major)
    }

    /// Compacts `family`'s store (every store with `None`) in each region
    /// of `table` now (HBase's `compact 't', 'f'`); an unknown family is
    /// `NoSuchFamily` before anything is compacted.
    pub fn compact_table_family(&self, table: &str, family: Option<&[u8]>, major: bool) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        if let Some(f) = family {
            t.desc.family(f).ok_or_else(|| StoreError::NoSuchFamily {
                table: table.to_string(),
                family: String::from_utf8_lossy(f).into_owned(),
            })?;
        }
        for r in t.regions() {
            self.compact_stores(&r, family, major)?;
            crate::region::split::maybe_split(&self.inner, &*self.enabled_table(table)?, &r)?;
        }
        Ok(())
    }

    /// Compacts `family`'s store (every store with `None`) of the region
    /// whose encoded name is `region` (HBase's `compact 'REGION'[, 'f']`).
    pub fn compact_named_region(&self, region: &str, family: Option<&[u8]>, major: bool) -> Result<()> {
        self.check_open()?;
        let (t, r) = self.region_named(region)?;
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(t.desc.name.clone()));
        }
        self.compact_stores(&r, family, major)
    }

    fn compact_stores(&self, region: &Arc<Region>, family: Option<&[u8]>, major: bool) -> Result<()> {
        let stores: Vec<&Arc<crate::family_store::FamilyStore>> = match family {
            Some(f) => vec![region.store(f)?],
            None => region.stores().collect(),
        };
        for s in stores {
            crate::jobs::compaction::compactor::compact_store(&self.inner, region, s, major)?;
        }
        Ok(())
    }

    /// Flushes the region holding `row`.
    pub fn flush_region(&self, table: &str, row: &[u8]) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        region.flush()?;
        self.inner.archive_wal()?;
        Ok(())
    }

    /// Compacts the stores of the region holding `row` (major: all files).
    pub fn compact_region(&self, table: &str, row: &[u8], major: bool) -> Result<()> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        for s in region.stores() {
            crate::jobs::compaction::compactor::compact_store(&self.inner, &region, s, major)?;
        }
        Ok(())
    }

    /// Splits the region holding `row` at `at` (or its midpoint).
    pub fn split_region(&self, table: &str, row: &[u8], at: Option<&[u8]>) -> Result<bool> {
        self.check_open()?;
        let t = self.enabled_table(table)?;
        let region = t.region_for(row).ok_or_else(|| StoreError::TableNotFound(table.to_string()))?;
        crate::region::split::split_region(&self.inner, &t, &region, at.map(|a| a.to_vec()))
    }

    /// The region of `table` that holds `row`, with its state (a cluster
    /// member's router forwards calls for an OFFLINE one).
    pub fn region_state_for(&self, table: &str, row: &[u8]) -> Result<Option<(crate::RegionInfo, crate::RegionState)>> {
        Ok(self.table(table)?.region_for(row).map(|r| (r.info().clone(), r.state())))
    }

    /// Installs `listener`, called with a table's name after each split or
    /// merge of its regions commits here, whatever started it (a call, or a
    /// region grown past the table's maximum size). It runs on the thread
    /// that split or merged, holding the table's change lock: it must not
    /// block (a cluster server hands the news to a thread of its own, which
    /// tells the other servers).
    pub fn on_regions_changed(&self, listener: impl Fn(&str) + Send + Sync + 'static) {
        self.inner.set_region_listener(std::sync::Arc::new(listener));
    }

    /// Flushes every region and stops. Writes after `close` fail.
    pub fn close(&self) -> Result<()> {
        if self.inner.mark_closed() {
            return Ok(());
        }
        self.inner.flush_queue.stop();
        self.inner.compaction_queue.stop();
        let mut first_error = None;
        for r in self.inner.catalog.all_regions() {
            if r.state() == crate::region::state::RegionState::Offline {
                continue; // another server's (cluster mode): nothing of it is here
            }
            if let Err(e) = r.flush() {
                first_error.get_or_insert(e);
            }
            r.close();
        }
        let closed = self.inner.wal.close();
        self.inner.release_root_lock();
        closed?;
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

    /// What every open region's memstores hold now (their segments'
    /// chunks and indexes).
    pub fn memstore_footprint(&self) -> memstore::Footprint {
        let mut f = memstore::Footprint::default();
        for region in self.all_regions() {
            for family in region.stores() {
                family.memstore().read_segments().iter().for_each(|s| f.add(s));
            }
        }
        f
    }

    /// What every open region's memstores hold now, by part (active
    /// segments, pipelines, snapshots being flushed), summed.
    pub fn memstore_held(&self) -> memstore::MemStoreHeld {
        let mut held = memstore::MemStoreHeld::default();
        for region in self.all_regions() {
            for family in region.stores() {
                let h = family.memstore().held();
                held.active.add(h.active);
                held.pipeline.add(h.pipeline);
                held.snapshot.add(h.snapshot);
                held.compacting += h.compacting;
            }
        }
        held
    }

    /// The pool the memstores take their chunks from.
    pub fn chunk_pool(&self) -> memstore::ChunkPool {
        memstore::ChunkPool::global()
    }

    /// Regions of every table.
    pub fn all_regions(&self) -> Vec<Arc<Region>> {
        self.inner.catalog.all_regions()
    }

    /// A snapshot of every counter.
    pub fn metrics(&self) -> crate::metrics::StoreMetrics {
        crate::metrics::collect(&self.inner)
    }

    /// A convenience point read of whole columns.
    pub fn get_columns(&self, table: &str, row: &[u8], columns: &[Column], versions: u32) -> Result<Vec<Cell>> {
        let get =
            Get { row: row.to_vec(), columns: columns.to_vec(), time_range: TimeRange::ALL, max_versions: versions };
        self.get(table, &get)
    }
}

/// Whether a call on one region writes (and so waits for memstore room)
/// or only reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}
