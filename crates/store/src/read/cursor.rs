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
use std::ptr::NonNull;

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

/// One source of the merge, its current cell cached (RocksDB's
/// `IteratorWrapper`): the heap compares current cells a few times per
/// step, and asking a file scanner each time re-derived the cell from its
/// block's offsets — in YCSB E's profile the scanner's `current` and the
/// offset reads behind it were a fifth of a scan's CPU.
///
/// Invariant: `current` is what `cursor.current()` returned after the
/// cursor's last move. Every call that takes the cursor by `&mut` goes
/// through this type and refreshes it, so the cell it points at is still
/// held by the cursor (its block, its segment's chunks); `cursor` is boxed,
/// so moving a `Source` moves no memory the pointer refers to.
struct Source {
    cursor: Box<dyn CellCursor>,
    current: Option<(NonNull<u8>, usize)>,
}

// SAFETY: `current` points into memory that `cursor` (which is `Send`)
// owns and keeps alive; nothing else reaches it.
unsafe impl Send for Source {}

impl Source {
    fn new(cursor: Box<dyn CellCursor>) -> Source {
        let mut source = Source { cursor, current: None };
        source.refresh();
        source
    }

    fn refresh(&mut self) {
        self.current = self.cursor.current().map(|c| {
            let bytes = c.encoded();
            (NonNull::from(bytes).cast::<u8>(), bytes.len())
        });
    }

    #[inline]
    fn current(&self) -> Option<CellRef<'_>> {
        // SAFETY: by the invariant above the cursor has not moved since
        // `refresh`, so these bytes are the cell it still holds; `&self`
        // keeps it from moving for the returned lifetime.
        self.current.map(|(ptr, len)| CellRef::new(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }))
    }

    fn moved(&mut self, result: Result<()>) -> Result<()> {
        self.refresh();
        result
    }

    fn advance(&mut self) -> Result<()> {
        let result = self.cursor.advance();
        self.moved(result)
    }

    fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        let result = self.cursor.seek(key);
        self.moved(result)
    }

    fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        let result = self.cursor.reseek(key);
        self.moved(result)
    }

    fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        // It does not move the cursor, but it may load blocks: refreshed
        // all the same.
        let result = self.cursor.row_before(row);
        self.refresh();
        result
    }
}

impl HeapCursor for Source {
    #[inline]
    fn current(&self) -> Option<CellRef<'_>> {
        Source::current(self)
    }
}

/// Merges several cursors into one sorted stream.
pub struct MergedCursor {
    sources: Vec<Source>,
    heap: CursorHeap,
}

impl MergedCursor {
    /// Merges `cursors`, given newest source first (equal cells go to it).
    pub fn new(cursors: Vec<Box<dyn CellCursor>>) -> MergedCursor {
        let sources: Vec<Source> = cursors.into_iter().map(Source::new).collect();
        let mut heap = CursorHeap::default();
        heap.rebuild(&sources);
        MergedCursor { sources, heap }
    }

    fn advance_top(&mut self) -> Result<()> {
        let Some(top) = self.heap.top() else { return Ok(()) };
        let result = self.sources[top].advance();
        if result.is_err() {
            // A failed source is dropped from the merge; the error surfaces.
            self.heap.drop_top(&self.sources);
        } else {
            self.heap.top_advanced(&self.sources);
        }
        result
    }

    /// The memstore segments the merged cursors keep alive.
    pub fn add_memstore_footprint(&self, f: &mut Footprint) {
        self.sources.iter().for_each(|s| s.cursor.add_memstore_footprint(f));
    }

    #[inline]
    pub fn current(&self) -> Option<CellRef<'_>> {
        self.heap.top().and_then(|i| self.sources[i].current())
    }

    /// Moves past the current cell and any identical copies of it (the
    /// same cell in a memstore snapshot and the file it was flushed to).
    /// A copy is found before the step, among the heap's next cursors:
    /// the passed cell's memory may go with its source's step.
    pub fn advance(&mut self) -> Result<()> {
        loop {
            let copy_follows = self.heap.top_has_equal(&self.sources);
            self.advance_top()?;
            if !copy_follows {
                return Ok(());
            }
        }
    }

    pub fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        for s in &mut self.sources {
            s.seek(key)?;
        }
        self.heap.rebuild(&self.sources);
        Ok(())
    }

    /// Moves forward to the first cell >= `key` (not before the current
    /// cell): only the sources still behind `key` move (HBase's reseek).
    pub fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        for s in &mut self.sources {
            if s.current().is_some_and(|x| x.compare_key(key) == Ordering::Less) {
                s.reseek(key)?;
            }
        }
        self.heap.rebuild(&self.sources);
        Ok(())
    }

    pub fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut best: Option<Vec<u8>> = None;
        for s in &mut self.sources {
            if let Some(r) = s.row_before(row)?
                && best.as_ref().is_none_or(|b| r > *b)
            {
                best = Some(r);
            }
        }
        Ok(best)
    }
}

impl CellCursor for MergedCursor {
    fn current(&self) -> Option<CellRef<'_>> {
        MergedCursor::current(self)
    }

    fn advance(&mut self) -> Result<()> {
        MergedCursor::advance(self)
    }

    fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        MergedCursor::seek(self, key)
    }

    fn reseek(&mut self, key: &CellKey<'_>) -> Result<()> {
        MergedCursor::reseek(self, key)
    }

    fn row_before(&mut self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        MergedCursor::row_before(self, row)
    }

    fn add_memstore_footprint(&self, f: &mut Footprint) {
        MergedCursor::add_memstore_footprint(self, f)
    }
}

#[cfg(test)]
mod tests {
    use memstore::CellInput;

    use super::*;

    /// A cursor that keeps only its current cell, in one buffer it
    /// overwrites on every move: a merge that read a cell it cached before
    /// the move would see the next cell's bytes.
    struct OneBufferCursor {
        cells: Vec<Vec<u8>>,
        pos: usize,
        buffer: Vec<u8>,
    }

    impl OneBufferCursor {
        fn boxed(cells: &[(&str, u64)]) -> Box<dyn CellCursor> {
            let cells =
                cells.iter().map(|(row, seq)| CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v").to_encoded(*seq));
            let mut c = OneBufferCursor { cells: cells.collect(), pos: 0, buffer: Vec::new() };
            c.load();
            Box::new(c)
        }

        fn load(&mut self) {
            self.buffer.clear();
            if let Some(cell) = self.cells.get(self.pos) {
                self.buffer.extend_from_slice(cell);
            }
        }
    }

    impl CellCursor for OneBufferCursor {
        fn current(&self) -> Option<CellRef<'_>> {
            (self.pos < self.cells.len()).then(|| CellRef::new(&self.buffer))
        }

        fn advance(&mut self) -> Result<()> {
            self.pos = (self.pos + 1).min(self.cells.len());
            self.load();
            Ok(())
        }

        fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
            self.pos = self
                .cells
                .iter()
                .position(|c| CellRef::new(c).compare_key(key) != Ordering::Less)
                .unwrap_or(self.cells.len());
            self.load();
            Ok(())
        }

        fn row_before(&mut self, _row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }
    }

    fn drain(cursor: &mut MergedCursor) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        while let Some(c) = cursor.current() {
            // Bounded: a merge stuck on a stale cell fails, not hangs.
            assert!(out.len() < 64, "the merge does not end: {out:?}");
            out.push((String::from_utf8_lossy(c.row()).into_owned(), c.seq()));
            cursor.advance().expect("in memory");
        }
        out
    }

    fn owned(cells: &[(&str, u64)]) -> Vec<(String, u64)> {
        cells.iter().map(|(r, s)| (r.to_string(), *s)).collect()
    }

    #[test]
    fn merges_in_order_yields_copies_once_and_reads_each_cell_after_its_move() {
        // The same cell (row and seq) in a snapshot and the file it was
        // flushed to, in up to three sources; older versions of a row stay.
        let mut cursor = MergedCursor::new(vec![
            OneBufferCursor::boxed(&[("a", 9), ("c", 7)]),
            OneBufferCursor::boxed(&[("a", 9), ("b", 5), ("c", 7), ("e", 2)]),
            OneBufferCursor::boxed(&[("a", 3), ("c", 7), ("d", 1), ("e", 2)]),
            OneBufferCursor::boxed(&[]),
        ]);
        let expected = owned(&[("a", 9), ("a", 3), ("b", 5), ("c", 7), ("d", 1), ("e", 2)]);
        assert_eq!(drain(&mut cursor), expected);

        cursor.seek(&CellKey::first_on_row(b"c")).expect("in memory");
        assert_eq!(drain(&mut cursor), expected[3..]);
        cursor.seek(&CellKey::first_on_row(b"a")).expect("in memory");
        cursor.advance().expect("in memory");
        cursor.reseek(&CellKey::first_on_row(b"d")).expect("in memory");
        assert_eq!(drain(&mut cursor), expected[4..]);
    }
}
