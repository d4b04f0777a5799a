//! `MergingCursor`: one sorted stream over several segments (active,
//! pipeline, snapshot), the memstore half of the read path's merging
//! iterator.
//!
//! Invariants: `current` is the smallest current cell of all cursors. A cell
//! present in two segments with the same full key (possible for a moment
//! while a segment moves between views) is yielded once.
//!
//! Thread safety: owned by one reader; the cursors hold their segments (and
//! so the chunks) alive for the merging cursor's life.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cell::{CellKey, CellRef, compare_cells};
use crate::segment::{Segment, SegmentCursor};

pub struct MergingCursor {
    cursors: Vec<SegmentCursor>,
    current: Option<usize>,
}

impl MergingCursor {
    /// A cursor at the first cell of the union of `segments`.
    pub fn new(segments: impl IntoIterator<Item = Arc<Segment>>) -> MergingCursor {
        let cursors = segments.into_iter().map(SegmentCursor::new).collect();
        let mut m = MergingCursor { cursors, current: None };
        m.pick_current();
        m
    }

    fn pick_current(&mut self) {
        let mut best: Option<(usize, CellRef<'_>)> = None;
        for (i, c) in self.cursors.iter().enumerate() {
            if let Some(cell) = c.current()
                && best.as_ref().is_none_or(|(_, b)| compare_cells(&cell, b) == Ordering::Less)
            {
                best = Some((i, cell));
            }
        }
        self.current = best.map(|(i, _)| i);
    }

    /// The current cell, or `None` at the end.
    #[inline]
    pub fn current(&self) -> Option<CellRef<'_>> {
        self.current.and_then(|i| self.cursors[i].current())
    }

    /// Moves past the current cell (and any identical copies of it).
    pub fn advance(&mut self) {
        let Some(i) = self.current else { return };
        let Some(ptr) = self.cursors[i].current_ptr() else { return };
        // SAFETY: the cell lives in a segment held by cursor `i`, which is not
        // dropped while we compare.
        let cur = unsafe { CellRef::from_ptr(ptr) };
        for c in &mut self.cursors {
            if c.current().is_some_and(|x| compare_cells(&x, &cur) == Ordering::Equal) {
                c.advance();
            }
        }
        self.pick_current();
    }

    /// Moves to the first cell >= `key`.
    pub fn seek(&mut self, key: &CellKey<'_>) {
        for c in &mut self.cursors {
            c.seek(key);
        }
        self.pick_current();
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
