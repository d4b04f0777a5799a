//! `MergingCursor`: one sorted stream over several segments (active,
//! pipeline, snapshot), the memstore half of the read path's merging
//! iterator.
//!
//! Invariants: `heap` orders the non-exhausted cursors by their current
//! cell, so `current` is the smallest current cell of all cursors. A cell
//! present in two segments with the same full key (possible for a moment
//! while a segment moves between views) is yielded once.
//!
//! Thread safety: owned by one reader; the cursors hold their segments (and
//! so the chunks) alive for the merging cursor's life.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cell::{CellKey, CellRef, same_cell};
use crate::cursor_heap::{CursorHeap, HeapCursor};
use crate::segment::{Segment, SegmentCursor};

pub struct MergingCursor {
    cursors: Vec<SegmentCursor>,
    /// Orders the cursors: a step costs O(log segments) however long the
    /// pipeline gets.
    heap: CursorHeap,
}

impl HeapCursor for SegmentCursor {
    fn current(&self) -> Option<CellRef<'_>> {
        SegmentCursor::current(self)
    }
}

impl MergingCursor {
    /// A cursor at the first cell of the union of `segments`, newest first.
    pub fn new(segments: impl IntoIterator<Item = Arc<Segment>>) -> MergingCursor {
        let cursors: Vec<SegmentCursor> = segments.into_iter().map(SegmentCursor::new).collect();
        let mut heap = CursorHeap::default();
        heap.rebuild(&cursors);
        MergingCursor { cursors, heap }
    }

    /// The segments this cursor reads (and keeps alive).
    pub fn segments(&self) -> impl Iterator<Item = &Arc<Segment>> {
        self.cursors.iter().map(SegmentCursor::segment)
    }

    fn advance_top(&mut self) {
        if let Some(top) = self.heap.top() {
            self.cursors[top].advance();
            self.heap.top_advanced(&self.cursors);
        }
    }

    /// The current cell, or `None` at the end.
    #[inline]
    pub fn current(&self) -> Option<CellRef<'_>> {
        self.heap.top().and_then(|i| self.cursors[i].current())
    }

    /// Moves past the current cell (and any identical copies of it).
    pub fn advance(&mut self) {
        let Some(ptr) = self.heap.top().and_then(|i| self.cursors[i].current_ptr()) else { return };
        // SAFETY: the cell lives in a segment held by one of our cursors; no
        // segment is dropped while we compare.
        let cur = unsafe { CellRef::from_ptr(ptr) };
        self.advance_top();
        while self.current().is_some_and(|x| same_cell(&x, &cur)) {
            self.advance_top();
        }
    }

    /// Moves to the first cell >= `key`.
    pub fn seek(&mut self, key: &CellKey<'_>) {
        for c in &mut self.cursors {
            c.seek(key);
        }
        self.heap.rebuild(&self.cursors);
    }

    /// Moves forward to the first cell >= `key` (not before the current
    /// cell): only the segments still behind `key` move, each from where it
    /// is — the step a reader takes past a column's spent versions.
    pub fn reseek(&mut self, key: &CellKey<'_>) {
        for c in &mut self.cursors {
            if c.current().is_some_and(|x| x.compare_key(key) == Ordering::Less) {
                c.reseek(key);
            }
        }
        self.heap.rebuild(&self.cursors);
    }

    /// The row of the last cell strictly before `row` (or the last row of
    /// all, for `None`), for reverse scans.
    pub fn row_before(&self, row: Option<&[u8]>) -> Option<Vec<u8>> {
        let key = row.map(CellKey::first_on_row);
        self.cursors
            .iter()
            .filter_map(|c| match &key {
                Some(k) => c.peek_before(k).map(|cell| cell.row().to_vec()),
                None => c.peek_last().map(|cell| cell.row().to_vec()),
            })
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use crate::chunk_pool::ChunkPool;
    use crate::mutable_segment::MutableSegment;

    fn segment(pool: &ChunkPool, rows: &[u32], seq: u64) -> Arc<Segment> {
        let m = Arc::new(MutableSegment::new(pool.clone()));
        for r in rows {
            let g = m.begin_write().expect("not frozen");
            let row = format!("{r:05}");
            m.insert_row(&g, &[CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v")], seq);
        }
        Arc::new(Segment::from_active(seq, m))
    }

    #[test]
    fn merges_many_segments_in_order_and_yields_shared_cells_once() {
        let pool = ChunkPool::new(64);
        // 40 segments with interleaved rows; segment 0 appears twice.
        let mut segs: Vec<_> = (0..40u32).map(|s| segment(&pool, &[s, s + 40, s + 80], u64::from(s) + 1)).collect();
        segs.push(segs[0].clone());
        let mut m = MergingCursor::new(segs);
        let mut rows = Vec::new();
        while let Some(c) = m.current() {
            rows.push(String::from_utf8(c.row().to_vec()).expect("utf8"));
            m.advance();
        }
        let expected: Vec<_> = (0..120).map(|r| format!("{r:05}")).collect();
        assert_eq!(rows, expected);
        m.seek(&CellKey::first_on_row(b"00100"));
        assert_eq!(m.current().expect("row 100").row(), b"00100");
        assert_eq!(m.row_before(Some(b"00100")), Some(b"00099".to_vec()));
        assert_eq!(m.row_before(None), Some(b"00119".to_vec()));
    }
}
