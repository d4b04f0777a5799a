//! `RowScanner`: visible rows of a memstore in a row range, forward or
//! reverse, at a fixed read point.
//!
//! Invariants: the scanner holds the segments it was opened on (and their
//! chunks) until it is dropped, so compactions and flushes that happen
//! meanwhile neither disturb it nor recycle memory it reads.
//!
//! Thread safety: owned by one reader.

use crate::cell::{Cell, CellKey};
use crate::merge_iter::MergingCursor;
use crate::row_cells::CellCollector;
use crate::visibility::{ReadOptions, RowResolver, VersionRules};

/// Rows to scan. Forward: `start` inclusive, `stop` exclusive. Reverse (as
/// in HBase): from `start` inclusive down to `stop` exclusive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanRange {
    pub start: Option<Vec<u8>>,
    pub stop: Option<Vec<u8>>,
    pub reverse: bool,
}

pub struct RowScanner {
    cursor: MergingCursor,
    range: ScanRange,
    opts: ReadOptions,
    rules: VersionRules,
    now_ms: u64,
    /// Reverse scans: the last row returned (None before the first).
    last_row: Option<Vec<u8>>,
    started: bool,
    done: bool,
}

impl RowScanner {
    pub(crate) fn new(
        mut cursor: MergingCursor,
        range: ScanRange,
        opts: ReadOptions,
        rules: VersionRules,
        now_ms: u64,
    ) -> RowScanner {
        if !range.reverse
            && let Some(start) = &range.start
        {
            cursor.seek(&CellKey::first_on_row(start));
        }
        RowScanner { cursor, range, opts, rules, now_ms, last_row: None, started: false, done: false }
    }

    /// Resolves the row the cursor is positioned at; leaves the cursor on
    /// the next row.
    fn read_row(&mut self, row: &[u8]) -> Vec<Cell> {
        let mut resolver = RowResolver::new(&self.opts, self.rules, self.now_ms);
        let mut out = CellCollector::new();
        while let Some(c) = self.cursor.current() {
            if c.row() != row {
                break;
            }
            resolver.push(c, &mut out);
            self.cursor.advance();
        }
        out.take()
    }

    fn next_forward(&mut self) -> Option<Vec<Cell>> {
        loop {
            let row = self.cursor.current()?.row().to_vec();
            if self.range.stop.as_ref().is_some_and(|stop| row.as_slice() >= stop.as_slice()) {
                return None;
            }
            let cells = self.read_row(&row);
            if !cells.is_empty() {
                return Some(cells);
            }
        }
    }

    fn next_reverse(&mut self) -> Option<Vec<Cell>> {
        loop {
            let row = if !self.started {
                self.started = true;
                match self.range.start.clone() {
                    Some(start) => {
                        self.cursor.seek(&CellKey::first_on_row(&start));
                        if self.cursor.current().is_some_and(|c| c.row() == start.as_slice()) {
                            Some(start)
                        } else {
                            self.cursor.row_before(Some(&start))
                        }
                    }
                    None => self.cursor.row_before(None),
                }
            } else {
                let last = self.last_row.clone()?;
                self.cursor.row_before(Some(&last))
            }?;
            if self.range.stop.as_ref().is_some_and(|stop| row.as_slice() <= stop.as_slice()) {
                return None;
            }
            self.cursor.seek(&CellKey::first_on_row(&row));
            let cells = self.read_row(&row);
            self.last_row = Some(row);
            if !cells.is_empty() {
                return Some(cells);
            }
        }
    }
}

impl Iterator for RowScanner {
    type Item = Vec<Cell>;

    fn next(&mut self) -> Option<Vec<Cell>> {
        if self.done {
            return None;
        }
        let row = if self.range.reverse { self.next_reverse() } else { self.next_forward() };
        self.done = row.is_none();
        row
    }
}
