//! `CellCursor`: one sorted stream of cells (a memstore, a store file), and
//! `MergedCursor`, the read path's merging iterator over many of them.
//!
//! Invariants: `MergedCursor::heap` orders the non-exhausted cursors by
//! their current cell; `current` is the smallest. Identical cells (same full
//! key, including seq) seen in two sources — a memstore snapshot and the
//! file it was just flushed to — are yielded once.
//!
//! Thread safety: owned by one reader; the sources hold their memory (chunks,
//! cached blocks) alive for the cursor's life.

use std::cmp::Ordering;

use memstore::cell::compare_cells;
use memstore::cursor_heap::{CursorHeap, HeapCursor};
use memstore::{CellKey, CellRef, Footprint, MergingCursor};

use crate::error::Result;

/// A positioned, sorted cell stream.
pub trait CellCursor: Send {
    fn current(&self) -> Option<CellRef<'_>>;
    fn advance(&mut self) -> Result<()>;
    /// Moves to the first cell >= `key`.
    fn seek(&mut self, key: &CellKey<'_>) -> Result<()>;
    /// Moves forward to the first cell >= `key`, which is not before the
    /// current cell (a source may search from where it is).
    fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        self.seek(key)
    }
    /// The row of the last cell strictly before the first cell of `row` (or
    /// the last row, for `None`); does not move the cursor.
    fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>>;
    /// Adds the memstore segments this cursor keeps alive to `f` (none for
    /// a file cursor).
    fn add_memstore_footprint(&self, _f: &mut Footprint) {}
}

impl CellCursor for MergingCursor {
    fn current(&self) -> Option<CellRef<'_>> {
        MergingCursor::current(self)
    }

    fn advance(&mut self) -> Result<()> {
        MergingCursor::advance(self);
        Ok(())
    }

    fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        MergingCursor::seek(self, key);
        Ok(())
    }

    fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        MergingCursor::reseek(self, key);
        Ok(())
    }

    fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        Ok(MergingCursor::row_before(self, row))
    }

    fn add_memstore_footprint(&self, f: &mut Footprint) {
        self.segments().for_each(|s| f.add(s));
    }
}

impl CellCursor for crate::storefile::StoreFileScanner {
    fn current(&self) -> Option<CellRef<'_>> {
        crate::storefile::StoreFileScanner::current(self)
    }

    fn advance(&mut self) -> Result<()> {
        crate::storefile::StoreFileScanner::advance(self)
    }

    fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        crate::storefile::StoreFileScanner::seek(self, key)
    }

    fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        crate::storefile::StoreFileScanner::row_before(self, row)
    }
}

impl HeapCursor for Box<dyn CellCursor> {
    fn current(&self) -> Option<CellRef<'_>> {
        CellCursor::current(self.as_ref())
    }
}

/// Merges several cursors into one sorted stream.
pub struct MergedCursor {
    cursors: Vec<Box<dyn CellCursor>>,
    heap: CursorHeap,
    /// The cell just passed, reused across steps (its source may release its
    /// memory when it advances).
    last: Vec<u8>,
}

impl MergedCursor {
    /// Merges `cursors`, given newest source first (equal cells go to it).
    pub fn new(cursors: Vec<Box<dyn CellCursor>>) -> MergedCursor {
        let mut heap = CursorHeap::default();
        heap.rebuild(&cursors);
        MergedCursor { cursors, heap, last: Vec::new() }
    }

    fn advance_top(&mut self) -> Result<()> {
        let Some(top) = self.heap.top() else { return Ok(()) };
        let result = self.cursors[top].advance();
        if result.is_err() {
            // A failed source is dropped from the merge; the error surfaces.
            self.heap.drop_top(&self.cursors);
        } else {
            self.heap.top_advanced(&self.cursors);
        }
        result
    }

    /// The memstore segments the merged cursors keep alive.
    pub fn add_memstore_footprint(&self, f: &mut Footprint) {
        self.cursors.iter().for_each(|c| c.add_memstore_footprint(f));
    }

    pub fn current(&self) -> Option<CellRef<'_>> {
        self.heap.top().and_then(|i| self.cursors[i].current())
    }

    /// Moves past the current cell and any identical copies of it.
    pub fn advance(&mut self) -> Result<()> {
        let mut last = std::mem::take(&mut self.last);
        last.clear();
        match self.current() {
            Some(c) => last.extend_from_slice(c.encoded()),
            None => return Ok(()),
        }
        let result = self.advance_duplicates_of(&last);
        self.last = last;
        result
    }

    fn advance_duplicates_of(&mut self, cell: &[u8]) -> Result<()> {
        let cur = CellRef::new(cell);
        self.advance_top()?;
        while self.current().is_some_and(|x| compare_cells(&x, &cur) == Ordering::Equal) {
            self.advance_top()?;
        }
        Ok(())
    }

    pub fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        for c in &mut self.cursors {
            c.seek(key)?;
        }
        self.heap.rebuild(&self.cursors);
        Ok(())
    }

    /// Moves forward to the first cell >= `key` (not before the current
    /// cell): only the sources still behind `key` move (HBase's reseek).
    pub fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        for c in &mut self.cursors {
            if c.current().is_some_and(|x| x.compare_key(key) == Ordering::Less) {
                c.reseek(key)?;
            }
        }
        self.heap.rebuild(&self.cursors);
        Ok(())
    }

    pub fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut best: Option<Vec<u8>> = None;
        for c in &mut self.cursors {
            if let Some(r) = c.row_before(row)?
                && best.as_ref().is_none_or(|b| r > *b)
            {
                best = Some(r);
            }
        }
        Ok(best)
    }
}
