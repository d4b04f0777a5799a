//! `RegionScanner`: the visible rows of one region in a row range, forward
//! or reverse, at the read point it was opened with.
//!
//! Invariants: the scanner is registered with the region's MVCC for its
//! whole life, so flushes and compactions keep every version it can see; it
//! holds the memstore segments and store files it opened, so neither a
//! flush nor a compaction disturbs it.
//!
//! Thread safety: owned by one reader.

use memstore::{CellCollector, CellKey, ReaderGuard, RowCells};

use crate::error::Result;
use crate::read::cursor::MergedCursor;
use crate::read::row_reader::{FamilyReadSpec, RowReader};
use crate::region::info::RegionInfo;

/// The largest buffer a row starts with from the size of the row before:
/// a row's cells keep their whole buffer alive, so a small row after a huge
/// one must not hold the huge one's size.
const ROW_BUFFER_HINT_LIMIT: usize = 64 << 10;

/// The buffer a row starts with after a row of `previous` encoded bytes.
fn row_buffer_for(previous: usize) -> usize {
    previous.min(ROW_BUFFER_HINT_LIMIT)
}

pub struct RegionScanner {
    /// The region read (its key range tells a table scan where to go on).
    info: RegionInfo,
    cursor: MergedCursor,
    specs: Vec<FamilyReadSpec>,
    _reader: ReaderGuard,
    /// Bounds: forward [start, stop); reverse from start down to stop (exclusive).
    start: Option<Vec<u8>>,
    stop: Option<Vec<u8>>,
    reverse: bool,
    last_row: Option<Vec<u8>>,
    started: bool,
    /// Reverse only: the start row itself was already returned.
    exclusive_start: bool,
    /// Reverse only: the stop row itself is read.
    inclusive_stop: bool,
    /// Rows none of whose cells are visible are returned too, without
    /// cells (a filter sees their keys, as HBase's does).
    empty_rows: bool,
    /// The encoded size of the row read last: the next row's buffer starts
    /// that large (rows of a table tend to be alike), up to
    /// [`ROW_BUFFER_HINT_LIMIT`].
    row_bytes: usize,
}

impl RegionScanner {
    pub(crate) fn new(info: RegionInfo, cursor: MergedCursor, specs: Vec<FamilyReadSpec>, reader: ReaderGuard) -> Self {
        RegionScanner {
            info,
            cursor,
            specs,
            _reader: reader,
            start: None,
            stop: None,
            reverse: false,
            last_row: None,
            started: false,
            exclusive_start: false,
            inclusive_stop: false,
            empty_rows: false,
            row_bytes: 0,
        }
    }

    /// Sets the row range (call before the first `next_row`).
    pub fn with_range(mut self, start: Option<Vec<u8>>, stop: Option<Vec<u8>>, reverse: bool) -> Self {
        self.start = start;
        self.stop = stop;
        self.reverse = reverse;
        self
    }

    /// For a reverse scan: begin at the last row *before* the start row
    /// (a table scan resuming below rows it has already returned).
    pub fn with_exclusive_start(mut self) -> Self {
        self.exclusive_start = true;
        self
    }

    /// For a reverse scan: read the stop row too (the scan's lower bound
    /// is inclusive).
    pub fn with_inclusive_stop(mut self, inclusive: bool) -> Self {
        self.inclusive_stop = inclusive;
        self
    }

    /// Whether rows that hold cells of the families read but none that is
    /// visible to this read (other columns, deleted, outside the time
    /// range) are returned, without cells.
    pub fn with_empty_rows(mut self, empty_rows: bool) -> Self {
        self.empty_rows = empty_rows;
        self
    }

    /// The region this scanner reads.
    pub fn info(&self) -> &RegionInfo {
        &self.info
    }

    /// The memstore segments this scanner keeps alive.
    pub fn add_memstore_footprint(&self, f: &mut memstore::Footprint) {
        self.cursor.add_memstore_footprint(f);
    }

    /// The next row's key and cells, or `None` at the end of the range.
    /// The cells are empty only `with_empty_rows`.
    pub fn next_row(&mut self) -> Result<Option<(Vec<u8>, RowCells)>> {
        if self.reverse { self.next_reverse() } else { self.next_forward() }
    }

    fn next_forward(&mut self) -> Result<Option<(Vec<u8>, RowCells)>> {
        if !self.started {
            self.started = true;
            let start = self.start.clone().unwrap_or_default();
            self.cursor.seek(&CellKey::first_on_row(&start))?;
        }
        loop {
            let Some(row) = self.cursor.current().map(|c| c.row().to_vec()) else { return Ok(None) };
            if self.stop.as_ref().is_some_and(|stop| !stop.is_empty() && row >= *stop) {
                return Ok(None);
            }
            let cells = self.read_row(&row)?;
            if self.empty_rows || !cells.is_empty() {
                return Ok(Some((row, cells)));
            }
        }
    }

    /// The visible cells of `row`, at the cursor.
    fn read_row(&mut self, row: &[u8]) -> Result<RowCells> {
        let mut cells = CellCollector::with_capacity(row_buffer_for(self.row_bytes));
        RowReader::new(&self.specs).read_row(&mut self.cursor, row, &mut cells)?;
        self.row_bytes = cells.encoded_len();
        Ok(cells.take_row())
    }

    fn next_reverse(&mut self) -> Result<Option<(Vec<u8>, RowCells)>> {
        loop {
            let row = if !self.started {
                self.started = true;
                match self.start.clone().filter(|s| !s.is_empty()) {
                    Some(start) if self.exclusive_start => self.cursor.row_before(Some(&start))?,
                    Some(start) => {
                        self.cursor.seek(&CellKey::first_on_row(&start))?;
                        if self.cursor.current().is_some_and(|c| c.row() == start.as_slice()) {
                            Some(start)
                        } else {
                            self.cursor.row_before(Some(&start))?
                        }
                    }
                    None => self.cursor.row_before(None)?,
                }
            } else {
                match self.last_row.clone() {
                    Some(last) => self.cursor.row_before(Some(&last))?,
                    None => None,
                }
            };
            let Some(row) = row else { return Ok(None) };
            if self.stop.as_ref().is_some_and(|stop| if self.inclusive_stop { row < *stop } else { row <= *stop }) {
                return Ok(None);
            }
            self.cursor.seek(&CellKey::first_on_row(&row))?;
            let cells = self.read_row(&row)?;
            if self.empty_rows || !cells.is_empty() {
                self.last_row = Some(row.clone());
                return Ok(Some((row, cells)));
            }
            self.last_row = Some(row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_starts_at_the_size_of_the_row_before_but_never_a_huge_one() {
        assert_eq!(row_buffer_for(0), 0);
        assert_eq!(row_buffer_for(1_400), 1_400);
        assert_eq!(row_buffer_for(10 << 20), ROW_BUFFER_HINT_LIMIT, "a 10 MiB row does not size the next");
    }
}
