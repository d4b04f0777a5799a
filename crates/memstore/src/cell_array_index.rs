//! `CellArrayIndex`: a flat segment's index as a sorted array of cell
//! pointers (HBase's CellArrayMap) — 8 bytes per cell, binary searched.
//!
//! Invariants: the pointers are strictly increasing in cell order and point
//! into chunks held by the owning segment, which outlives the index. The
//! array is a boxed slice, so the heap block it holds is exactly one entry
//! per cell ([`held_bytes`](CellArrayIndex::held_bytes) ==
//! [`entry_bytes`](CellArrayIndex::entry_bytes)): building it from a `Vec`
//! drops any spare capacity the builder reserved.
//!
//! Thread safety: immutable after construction; shared freely.

use std::cmp::Ordering;

use crate::cell::{CellKey, CellRef};

pub struct CellArrayIndex {
    cells: Box<[*const u8]>,
}

// SAFETY: the pointers refer to immutable cell bytes kept alive by the segment.
unsafe impl Send for CellArrayIndex {}
// SAFETY: see above.
unsafe impl Sync for CellArrayIndex {}

impl CellArrayIndex {
    /// Builds from cell pointers already in sorted order.
    pub fn from_sorted(cells: Vec<*const u8>) -> CellArrayIndex {
        CellArrayIndex { cells: cells.into_boxed_slice() }
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Bytes of the entries: what memstore heap accounting charges.
    pub fn entry_bytes(&self) -> usize {
        self.cells.len() * std::mem::size_of::<*const u8>()
    }

    /// Bytes the index actually holds: the array's heap block.
    pub fn held_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.cells)
    }

    #[inline]
    pub fn cell_ptr(&self, i: usize) -> *const u8 {
        self.cells[i]
    }

    /// Position of the first cell >= `key` (len if none).
    pub fn lower_bound(&self, key: &CellKey<'_>) -> usize {
        // SAFETY: every pointer refers to a live encoded cell (invariant).
        self.cells.partition_point(|&p| unsafe { CellRef::from_ptr(p) }.compare_key(key) == Ordering::Less)
    }
}
