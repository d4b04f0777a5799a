//! The read path of a region: point reads and region scanners over the
//! memstores and store files of the families asked for.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use memstore::{Cell, CellCollector, CellKey, ReadOptions, TimeRange};

use super::{Column, Get, Region};
use crate::error::{Result, StoreError};
use crate::read::cursor::{CellCursor, MergedCursor};
use crate::read::region_scanner::RegionScanner;
use crate::read::row_reader::{FamilyReadSpec, RowReader};
use crate::storefile::BlockReads;

/// A get's first buffer: room for a YCSB row of ten 100-byte fields
/// (~1.4 KB encoded) in one allocation; it lives as long as the cells.
const GET_BUFFER_BYTES: usize = 2048;

/// What the memstores alone made of a get.
enum FromMemstores {
    /// Every named column, each newer than the files: the answer.
    Answered(Vec<Cell>),
    /// The files must be read; whether the memstores had any cell of the row.
    NeedFiles { memstore_has_row: bool },
    /// Not a get the memstores can answer alone (whole rows or families,
    /// time ranges, several versions).
    NotTried,
}

impl Region {
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
        let now = self.clock.now_ms();
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

    fn cursor_for(&self, specs: &[FamilyReadSpec], row: Option<&[u8]>, reads: BlockReads) -> Result<MergedCursor> {
        let mut cursors: Vec<Box<dyn CellCursor>> = Vec::new();
        for spec in specs {
            cursors.extend(self.stores[&spec.family].cursor(row, reads)?);
        }
        Ok(MergedCursor::new(cursors))
    }

    /// The visible cells of one row.
    ///
    /// The row's buffer starts at [`GET_BUFFER_BYTES`]: grown from empty,
    /// a YCSB row (ten 100-byte fields) was copied through five buffers,
    /// and each growth could wait on a malloc arena lock (the largest
    /// source of a YCSB B get's context switches after the block cache).
    pub fn get(&self, get: &Get) -> Result<Vec<Cell>> {
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        self.read_row(get, BlockReads::ReadAndCache)
    }

    /// The visible cells of one row, when memory holds all the get needs
    /// (the memstores, and the cached blocks of the files that may hold
    /// the row): the same answer as [`Self::get`], read without waiting
    /// on a file. `None`: a block it needed is not cached; nothing was
    /// counted, and the caller does the get with `get`, on a thread that
    /// may wait.
    pub fn get_from_memory(&self, get: &Get) -> Result<Option<Vec<Cell>>> {
        match self.read_row(get, BlockReads::CacheOnly) {
            Err(StoreError::NotInCache { .. }) => Ok(None),
            result => {
                self.counters.gets.fetch_add(1, Ordering::Relaxed);
                result.map(Some)
            }
        }
    }

    fn read_row(&self, get: &Get, reads: BlockReads) -> Result<Vec<Cell>> {
        self.check_open()?;
        let guard = self.mvcc.register_reader();
        let specs = self.read_specs(&get.columns, get.time_range, get.max_versions.max(1), guard.read_point())?;
        let memstore_has_row = match self.get_from_memstores(get, &specs)? {
            FromMemstores::Answered(cells) => {
                self.counters.gets_from_memstore.fetch_add(1, Ordering::Relaxed);
                return Ok(cells);
            }
            FromMemstores::NeedFiles { memstore_has_row } => memstore_has_row,
            FromMemstores::NotTried => true,
        };
        // A row the memstores had no cell of (their view was taken under
        // this read point, before the files are listed) is read from the
        // files alone: seeking every segment again found nothing the first
        // time, and it was the cold rows' gets that paid for it.
        let mut cursor = if memstore_has_row {
            self.cursor_for(&specs, Some(&get.row), reads)?
        } else {
            let mut cursors: Vec<Box<dyn CellCursor>> = Vec::new();
            for spec in &specs {
                cursors.extend(self.stores[&spec.family].file_cursors(Some(&get.row), reads));
            }
            MergedCursor::new(cursors)
        };
        cursor.seek(&CellKey::first_on_row(&get.row))?;
        let mut cells = CellCollector::with_capacity(GET_BUFFER_BYTES);
        RowReader::new(&specs).read_row(&mut cursor, &get.row, &mut cells)?;
        Ok(cells.take())
    }

    /// The answer of a get that names its columns, read from the memstores
    /// alone when they answer it.
    ///
    /// HBase's lazy seek, for the gets where it pays: a get of the newest
    /// version of named columns needs a store file only if the file could
    /// hold something newer than what the memstore has for those columns.
    /// When the memstore's visible cell for every named column is newer
    /// than the newest cell (of any type) of every file that may hold the
    /// row, no file cell can be returned (older versions) or hide one
    /// (a delete masks only cells no newer than itself), so the memstore's
    /// answer is the answer — and the row's blocks are never read. A hot
    /// row, rewritten since its region's last flush, is answered this way
    /// (RocksDB stops at the newest memtable holding a key for the same
    /// reason). Otherwise — a column missing or deleted in the memstore, a
    /// timestamp tie, a client timestamp older than the files' — the
    /// caller reads memstores and files together.
    ///
    /// The same rule is tried first on the active segment alone, against
    /// the pipeline's and snapshot's segments as well as the files: the
    /// active segment and the newest timestamps of the rest come from one
    /// memstore view, taken before the files are listed.
    fn get_from_memstores(&self, get: &Get, specs: &[FamilyReadSpec]) -> Result<FromMemstores> {
        let named = get.max_versions <= 1
            && get.time_range == TimeRange::ALL
            && !specs.is_empty()
            && specs.iter().all(|s| s.opts.qualifiers.is_some());
        if !named {
            return Ok(FromMemstores::NotTried);
        }
        // The active segment alone first: a hot row's newest cells are
        // there, newer than the pipeline's segments, which a get then need
        // not seek (RocksDB stops at the newest memtable holding a key).
        let mut cursors = Vec::with_capacity(specs.len());
        let mut newest_elsewhere = Vec::with_capacity(specs.len());
        let mut active_is_all = true;
        for spec in specs {
            let (cursor, newest, whole) = self.stores[&spec.family].active_cursor_and_newest_other_timestamp(&get.row);
            cursors.push(cursor);
            newest_elsewhere.push(newest);
            active_is_all &= whole;
        }
        let from_active = self.answer_if_newer(get, specs, cursors, &newest_elsewhere)?;
        if active_is_all || matches!(from_active, FromMemstores::Answered(_)) {
            return Ok(from_active);
        }
        let mut cursors = Vec::with_capacity(specs.len());
        let mut newest_in_files = Vec::with_capacity(specs.len());
        for spec in specs {
            let (cursor, newest) = self.stores[&spec.family].memstore_cursor_and_newest_file_timestamp(&get.row);
            cursors.push(cursor);
            newest_in_files.push(newest);
        }
        self.answer_if_newer(get, specs, cursors, &newest_in_files)
    }

    /// The answer the memstore `cursors` (one per family of `specs`) give,
    /// when every named column's visible cell there is newer than
    /// `newest_elsewhere` (per family: the newest timestamp of every other
    /// place that may hold the row).
    fn answer_if_newer(
        &self,
        get: &Get,
        specs: &[FamilyReadSpec],
        cursors: Vec<Box<dyn CellCursor>>,
        newest_elsewhere: &[Option<u64>],
    ) -> Result<FromMemstores> {
        let mut cursor = MergedCursor::new(cursors);
        cursor.seek(&CellKey::first_on_row(&get.row))?;
        if cursor.current().is_none_or(|c| c.row() != get.row.as_slice()) {
            return Ok(FromMemstores::NeedFiles { memstore_has_row: false });
        }
        let need_files = FromMemstores::NeedFiles { memstore_has_row: true };
        let mut collector = CellCollector::with_capacity(GET_BUFFER_BYTES);
        RowReader::new(specs).read_row(&mut cursor, &get.row, &mut collector)?;
        let cells = collector.take();
        // One cell per column (one version): every named column answered,
        // each newer than anything else of its family may hold.
        let mut answered = 0;
        for cell in &cells {
            let Some(i) = specs.iter().position(|s| s.family.as_slice() == cell.family.as_ref()) else {
                return Ok(need_files);
            };
            if newest_elsewhere[i].is_some_and(|newest| cell.timestamp <= newest) {
                return Ok(need_files);
            }
            answered += 1;
        }
        // Distinct columns asked for (a get may name one twice); a handful,
        // so compared pairwise rather than collected into a set per get.
        let distinct = |q: &[Vec<u8>]| q.iter().enumerate().filter(|(i, x)| !q[..*i].contains(x)).count();
        let asked: usize = specs.iter().map(|s| s.opts.qualifiers.as_deref().map_or(0, distinct)).sum();
        Ok(if answered == asked { FromMemstores::Answered(cells) } else { need_files })
    }

    /// A scanner over this region's rows in `[start, stop)` (forward) or
    /// from `start` down to `stop` (reverse).
    pub fn scanner(&self, columns: &[Column], time_range: TimeRange, max_versions: u32) -> Result<RegionScanner> {
        self.check_open()?;
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        let guard = self.mvcc.register_reader();
        let specs = self.read_specs(columns, time_range, max_versions.max(1), guard.read_point())?;
        let cursor = self.cursor_for(&specs, None, BlockReads::ReadAndCache)?;
        Ok(RegionScanner::new(self.info.clone(), cursor, specs, guard))
    }
}
