//! `Scanner`: the visible rows of a table in a row range, across its
//! regions in key order (or reverse), with HBase's scan options.
//!
//! Invariants: each region is read by a `RegionScanner` clamped to the
//! region's range; the next region is looked up from the previous one's
//! boundary when it is needed, so a region split during the scan neither
//! skips nor repeats rows.
//!
//! A filter (`Scan::filter`) runs inside the scan, on whole rows, before
//! versions are counted: the regions are read with every version the
//! families keep, the filter chooses cells, and then the newest
//! `max_versions` of the chosen cells of each column are returned (HBase's
//! `ScanQueryMatcher` order: filter, then version tracker). Batches are cut
//! after filtering, so row-level filters never see a piece of a row.
//!
//! Thread safety: owned by one reader.

use std::collections::VecDeque;
use std::sync::Arc;

use memstore::{Cell, RowCells, TimeRange};

use crate::catalog::TableState;
use crate::error::Result;
use crate::read::filter::{Filter, Outcome};
use crate::read::region_scanner::RegionScanner;
use crate::region::Column;

/// What a scan reads.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Forward: first row (inclusive). Reverse: the row to start from, going down.
    pub start: Option<Vec<u8>>,
    /// Forward: end row (exclusive). Reverse: the row to stop above (exclusive).
    pub stop: Option<Vec<u8>>,
    /// Whether the start row itself is read (HBase's
    /// `withStartRow(row, inclusive)`; true by default). A reverse scan of a
    /// key range `[a, b)` starts below `b`, which no inclusive start row
    /// names: a scan across servers reads each region's range so.
    pub start_inclusive: bool,
    /// Whether the stop row itself is read (HBase's
    /// `withStopRow(row, inclusive)`; false by default).
    pub stop_inclusive: bool,
    /// Only rows starting with this prefix.
    pub prefix: Option<Vec<u8>>,
    pub reverse: bool,
    /// Empty: every column of every family.
    pub columns: Vec<Column>,
    pub time_range: TimeRange,
    pub max_versions: u32,
    /// At most this many cells per result (a wide row comes in pieces).
    pub batch: Option<usize>,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// HBase's filter, evaluated on every row (see the module doc); its
    /// state (a PageFilter's count) is this scan's.
    pub filter: Option<Filter>,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            start: None,
            stop: None,
            start_inclusive: true,
            stop_inclusive: false,
            prefix: None,
            reverse: false,
            columns: Vec::new(),
            time_range: TimeRange::ALL,
            max_versions: 1,
            batch: None,
            limit: None,
            filter: None,
        }
    }
}

/// The smallest row greater than every row with `prefix`, if any.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last != 0xFF {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// The table's current state by name (`None`: dropped): a scanner whose
/// state was replaced (an alter, a member's rebuild of its region list)
/// looks the table up again to find the regions that replaced its own.
pub(crate) type TableLookup = Arc<dyn Fn(&str) -> Option<Arc<TableState>> + Send + Sync>;

pub struct Scanner {
    table: Arc<TableState>,
    lookup: TableLookup,
    /// The store's test hooks (`HookPoint::ScanWaitsForRegion`).
    hooks: Option<Arc<dyn crate::hooks::WriteHooks>>,
    scan: Scan,
    current: Option<RegionScanner>,
    pending: VecDeque<Vec<Cell>>,
    rows: u64,
    done: bool,
}

impl Scanner {
    pub(crate) fn new(
        table: Arc<TableState>,
        lookup: TableLookup,
        hooks: Option<Arc<dyn crate::hooks::WriteHooks>>,
        mut scan: Scan,
    ) -> Result<Scanner> {
        let reverse = scan.reverse;
        if !reverse {
            // Forward, an exclusive bound is the inclusive one just above
            // it: nothing lies between `k` and `k\0`.
            let just_above = |k: &mut Option<Vec<u8>>| {
                if let Some(k) = k.as_mut().filter(|k| !k.is_empty()) {
                    k.push(0);
                }
            };
            if !scan.start_inclusive {
                just_above(&mut scan.start);
            }
            if scan.stop_inclusive {
                just_above(&mut scan.stop);
            }
            (scan.start_inclusive, scan.stop_inclusive) = (true, false);
        }
        if let Some(f) = scan.filter.as_mut() {
            f.set_reversed(reverse);
        }
        // A PrefixFilter every row must pass bounds the scan itself.
        if scan.prefix.is_none() {
            scan.prefix = scan.filter.as_ref().and_then(|f| f.required_prefix().map(<[u8]>::to_vec));
        }
        if let Some(prefix) = scan.prefix.clone() {
            if !scan.reverse {
                if scan.start.as_ref().is_none_or(|s| *s < prefix) {
                    scan.start = Some(prefix.clone());
                }
                if let Some(succ) = prefix_successor(&prefix)
                    && scan.stop.as_ref().is_none_or(|s| s.is_empty() || *s > succ)
                {
                    scan.stop = Some(succ);
                }
            } else if scan.start.is_none() {
                // Start at the last row that can carry the prefix.
                scan.start = prefix_successor(&prefix);
            }
        }
        let mut s =
            Scanner { table, lookup, hooks, scan, current: None, pending: VecDeque::new(), rows: 0, done: false };
        let (reverse, start, inclusive) = (s.scan.reverse, s.scan.start.clone(), s.scan.start_inclusive);
        s.current = s.open_retrying(None, |t| {
            if reverse {
                match start.as_ref().filter(|r| !r.is_empty()) {
                    // The region holding the rows just below the start row.
                    Some(start) if !inclusive => {
                        t.regions().iter().rev().find(|r| r.info().start_key < *start).cloned()
                    }
                    Some(start) => t.region_for(start),
                    None => t.regions().last().cloned(),
                }
            } else {
                t.region_for(start.as_deref().unwrap_or(&[]))
            }
        })?;
        Ok(s)
    }

    /// Opens the region `locate` finds, looking again while a split closes
    /// it (the daughters take its place a moment later).
    fn open_retrying(
        &mut self,
        resume: Option<&[u8]>,
        locate: impl Fn(&TableState) -> Option<Arc<crate::region::Region>>,
    ) -> Result<Option<RegionScanner>> {
        for _ in 0..10_000 {
            if self.table.is_retired()
                && let Some(current) = (self.lookup)(&self.table.desc.name)
            {
                self.table = current;
            }
            let Some(region) = locate(&self.table) else { return Ok(None) };
            match self.open(&region, resume) {
                Err(e)
                    if self.table.is_enabled()
                        && let Some(wait) = self.table.retry_after(&region, &e) =>
                {
                    if let Some(hooks) = &self.hooks {
                        hooks.at(crate::hooks::HookPoint::ScanWaitsForRegion, region.info().id)?;
                    }
                    std::thread::sleep(wait);
                }
                other => return other.map(Some),
            }
        }
        Err(crate::error::StoreError::WritesStopped("a region stayed closed during a scan".into()))
    }

    /// A scanner over `region` for this scan. A region holds only rows of
    /// its own range, so only the scan's own bounds need applying — and,
    /// when the scan moves on from a region, where that region ended
    /// (`resume`): the region found there may have been merged with the
    /// one just read, and must not return its rows again.
    fn open(&self, region: &Arc<crate::region::Region>, resume: Option<&[u8]>) -> Result<RegionScanner> {
        let info = region.info();
        // A filter sees every version; versions are counted after it.
        let versions = if self.scan.filter.is_some() { u32::MAX } else { self.scan.max_versions };
        // A filter sees the key of every row the families read hold, even
        // of one with no cell this scan returns (see `Filter::apply_to_key`).
        let scanner = region
            .scanner(&self.scan.columns, self.scan.time_range, versions)?
            .with_empty_rows(self.scan.filter.is_some());
        let stop = self.scan.stop.clone().filter(|s| !s.is_empty());
        if let Some(resume) = resume {
            // Forward: rows from the old region's end key on; reverse: rows
            // before the old region's start key.
            let scanner = scanner.with_range(Some(resume.to_vec()), stop, self.scan.reverse);
            return Ok(if self.scan.reverse {
                scanner.with_exclusive_start().with_inclusive_stop(self.scan.stop_inclusive)
            } else {
                scanner
            });
        }
        Ok(if self.scan.reverse {
            // Start at the scan's start row if it lies in this region, else
            // at the region's last row.
            let start = self.scan.start.clone().filter(|s| !s.is_empty() && info.contains(s));
            let exclusive = start.is_some() && !self.scan.start_inclusive;
            let scanner = scanner.with_range(start, stop, true).with_inclusive_stop(self.scan.stop_inclusive);
            if exclusive { scanner.with_exclusive_start() } else { scanner }
        } else {
            scanner.with_range(self.scan.start.clone(), stop, false)
        })
    }

    fn next_region(&mut self) -> Result<()> {
        let Some(cur) = self.current.take() else { return Ok(()) };
        let info = cur.info().clone();
        let done = if self.scan.reverse {
            // Rows below a start key at or below the prefix cannot carry it.
            info.start_key.is_empty()
                || self.scan.stop.as_ref().is_some_and(|s| *s >= info.start_key)
                || self.scan.prefix.as_ref().is_some_and(|p| info.start_key <= *p)
        } else {
            info.end_key.is_empty() || self.scan.stop.as_ref().is_some_and(|s| !s.is_empty() && *s <= info.end_key)
        };
        if done {
            return Ok(());
        }
        let reverse = self.scan.reverse;
        // Looked up by key each time, so that a split between two steps
        // hands over to its daughters.
        let resume = if reverse { info.start_key.clone() } else { info.end_key.clone() };
        self.current = self.open_retrying(Some(&resume), |t| {
            if reverse {
                t.regions().iter().rev().find(|r| r.info().start_key < info.start_key).cloned()
            } else {
                t.region_for(&info.end_key)
            }
        })?;
        Ok(())
    }

    /// The next row's key and cells (none only for a scan with a filter).
    fn next_row(&mut self) -> Result<Option<(Vec<u8>, RowCells)>> {
        loop {
            let Some(cur) = self.current.as_mut() else { return Ok(None) };
            match cur.next_row()? {
                Some((key, row)) => {
                    if let Some(prefix) = &self.scan.prefix
                        && !key.starts_with(prefix)
                    {
                        if self.scan.reverse && key.as_slice() < prefix.as_slice() {
                            return Ok(None);
                        }
                        continue;
                    }
                    return Ok(Some((key, row)));
                }
                None => self.next_region()?,
            }
        }
    }
}

impl Scanner {
    /// Adds the memstore segments this scan keeps alive (those of the
    /// region it is reading) to `f`; with the memstores' own footprint
    /// ([`crate::Store::memstore_footprint`]) this gives what open scans
    /// pin (`memstore::footprint`).
    pub fn add_memstore_footprint(&self, f: &mut memstore::Footprint) {
        if let Some(cur) = &self.current {
            cur.add_memstore_footprint(f);
        }
    }

    /// The row as the filter leaves it, its versions counted.
    fn filtered(&mut self, row: Vec<Cell>) -> Filtered {
        let Some(filter) = self.scan.filter.as_mut() else { return Filtered::Row(row) };
        let kept = match filter.apply(&row, self.scan.max_versions) {
            Outcome::Keep(kept) => kept,
            Outcome::DropRow => return Filtered::Skip,
            Outcome::EndScan => return Filtered::End,
        };
        let mut row: Vec<Option<Cell>> = row.into_iter().map(Some).collect();
        let mut out: Vec<Cell> = Vec::with_capacity(kept.len());
        let mut versions = 0u32;
        for k in kept {
            let Some(mut cell) = row[k.index].take() else { continue };
            let same_column =
                out.last().is_some_and(|p: &Cell| p.family == cell.family && p.qualifier == cell.qualifier);
            versions = if same_column { versions + 1 } else { 1 };
            if versions > self.scan.max_versions.max(1) {
                continue;
            }
            k.transform.apply(&mut cell.value);
            out.push(cell);
        }
        filter.filter_row_cells(&mut out);
        if out.is_empty() { Filtered::Skip } else { Filtered::Row(out) }
    }
}

/// What the filter made of a row.
enum Filtered {
    Row(Vec<Cell>),
    Skip,
    End,
}

impl Scanner {
    /// The next row (or piece of a row, with `Scan::batch`) as one encoded
    /// buffer read in place: the same cells [`Iterator::next`] returns,
    /// without making an owned [`Cell`] (four reference-counted fields)
    /// of each. An embedded caller that only looks at the cells, or copies
    /// them into its own form, reads a scan so.
    pub fn next_row_cells(&mut self) -> Option<Result<RowCells>> {
        self.next_piece().map(|r| {
            r.map(|piece| match piece {
                Piece::Encoded(row) => row,
                Piece::Owned(cells) => RowCells::from_cells(&cells),
            })
        })
    }

    fn next_piece(&mut self) -> Option<Result<Piece>> {
        if let Some(piece) = self.pending.pop_front() {
            return Some(Ok(Piece::Owned(piece)));
        }
        if self.done || self.scan.limit.is_some_and(|l| self.rows >= l) {
            return None;
        }
        let row = loop {
            match self.next_row() {
                // Only a filtered scan reads rows without cells: the filter
                // sees the key, and may end the scan there.
                Ok(Some((key, row))) if row.is_empty() => {
                    match self.scan.filter.as_mut().map(|f| f.apply_to_key(&key)) {
                        Some(Outcome::EndScan) => break Ok(None),
                        _ => continue,
                    }
                }
                Ok(Some((_, row))) if self.scan.filter.is_none() => break Ok(Some(Piece::Encoded(row))),
                Ok(Some((_, row))) => match self.filtered(row.to_cells()) {
                    Filtered::Row(row) => break Ok(Some(Piece::Owned(row))),
                    Filtered::Skip => continue,
                    Filtered::End => break Ok(None),
                },
                Ok(None) => break Ok(None),
                Err(e) => break Err(e),
            }
        };
        match row {
            Ok(Some(row)) => {
                self.rows += 1;
                match self.scan.batch.filter(|&b| b > 0 && row.len() > b) {
                    Some(b) => {
                        let mut pieces: VecDeque<Vec<Cell>> = row.into_cells().chunks(b).map(|c| c.to_vec()).collect();
                        let first = pieces.pop_front();
                        self.pending = pieces;
                        first.map(|p| Ok(Piece::Owned(p)))
                    }
                    None => Some(Ok(row)),
                }
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A row (or a piece of one) as the scan has it: still in the buffer it
/// was read into, or owned cells (filtered, or cut into batches).
enum Piece {
    Encoded(RowCells),
    Owned(Vec<Cell>),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Encoded(row) => row.len(),
            Piece::Owned(cells) => cells.len(),
        }
    }

    fn into_cells(self) -> Vec<Cell> {
        match self {
            Piece::Encoded(row) => row.to_cells(),
            Piece::Owned(cells) => cells,
        }
    }
}

impl Iterator for Scanner {
    type Item = Result<Vec<Cell>>;

    fn next(&mut self) -> Option<Result<Vec<Cell>>> {
        self.next_piece().map(|r| r.map(Piece::into_cells))
    }
}
