//! `SegmentStats`: a segment's size and content statistics, kept by every
//! kind of segment (the mutable one as cells arrive, the immutable ones
//! once, from their cells) and merged for composite views.
//!
//! Thread safety: a plain value.

use crate::cell::CellRef;

/// Fixed bookkeeping cost charged per non-empty segment in heap size.
pub const SEGMENT_OVERHEAD: u64 = 256;

/// A segment's size and content statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStats {
    /// Bytes of encoded cells.
    pub data_size: u64,
    /// Bytes of index (nodes or entries).
    pub index_size: u64,
    pub cells: u64,
    /// Lowest sequence id (u64::MAX when empty).
    pub min_seq: u64,
    pub max_seq: u64,
    /// Time range of the cells (min u64::MAX when empty).
    pub min_ts: u64,
    pub max_ts: u64,
    /// Distinct (row, family, qualifier) keys, when counted.
    pub unique_keys: Option<u64>,
}

impl SegmentStats {
    pub const EMPTY: SegmentStats = SegmentStats {
        data_size: 0,
        index_size: 0,
        cells: 0,
        min_seq: u64::MAX,
        max_seq: 0,
        min_ts: u64::MAX,
        max_ts: 0,
        unique_keys: None,
    };

    /// Data plus index plus fixed overhead; zero for an empty segment.
    pub fn heap_size(&self) -> u64 {
        if self.cells == 0 { 0 } else { self.data_size + self.index_size + SEGMENT_OVERHEAD }
    }

    /// Computes exact statistics of sorted cells.
    pub fn of_cells(cells: &[*const u8], index_size: u64, count_uniques: bool) -> SegmentStats {
        let mut s = SegmentStats { index_size, unique_keys: count_uniques.then_some(0), ..SegmentStats::EMPTY };
        let mut prev: Option<CellRef<'_>> = None;
        for &p in cells {
            // SAFETY: callers pass pointers to live encoded cells.
            let c = unsafe { CellRef::from_ptr(p) };
            let new_column = count_uniques && prev.is_none_or(|p| !p.same_column(&c));
            s.add_cell(&c, new_column);
            prev = Some(c);
        }
        s
    }

    /// Counts one more cell (in cell order); `new_column` when it starts a
    /// column, which adds a unique key if they are counted.
    #[inline]
    pub fn add_cell(&mut self, c: &CellRef<'_>, new_column: bool) {
        self.data_size += c.encoded().len() as u64;
        self.cells += 1;
        self.min_seq = self.min_seq.min(c.seq());
        self.max_seq = self.max_seq.max(c.seq());
        self.min_ts = self.min_ts.min(c.timestamp());
        self.max_ts = self.max_ts.max(c.timestamp());
        if new_column && let Some(u) = self.unique_keys.as_mut() {
            *u += 1;
        }
    }

    /// Adds another segment's statistics (for composite views).
    pub fn merge(&self, o: &SegmentStats) -> SegmentStats {
        SegmentStats {
            data_size: self.data_size + o.data_size,
            index_size: self.index_size + o.index_size,
            cells: self.cells + o.cells,
            min_seq: self.min_seq.min(o.min_seq),
            max_seq: self.max_seq.max(o.max_seq),
            min_ts: self.min_ts.min(o.min_ts),
            max_ts: self.max_ts.max(o.max_ts),
            unique_keys: match (self.unique_keys, o.unique_keys) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            },
        }
    }
}
