//! `MemStoreCompactor`: builds the new segment for a pipeline action —
//! flatten (skiplist → flat index over the same cell bytes), merge (several
//! segments → one flat index over the same cell bytes, nothing removed) and
//! compact (drop what no reader can see, copy survivors into fresh chunks).
//!
//! Invariants: inputs are immutable segments (frozen and drained); outputs
//! hold references to every chunk their cells live in, so that releasing the
//! inputs later is always safe. A result built from segments that a
//! snapshot has taken meanwhile is abandoned (`Interrupted`).
//!
//! Thread safety: the functions are pure over their (shared, immutable)
//! inputs; the `interrupted` probe is polled every few thousand cells.

use std::sync::Arc;

use crate::chunk::ChunkRef;
use crate::chunk_pool::ChunkPool;
use crate::merge_iter::MergingCursor;
use crate::mslab::MemStoreLab;
use crate::segment::{IndexLayout, Segment};
use crate::visibility::CompactionRetainer;

/// Cells between two polls of the interrupt probe.
const INTERRUPT_POLL: usize = 4096;

/// The compactor gave up because the pipeline changed under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

pub struct MemStoreCompactor<'a> {
    pub layout: IndexLayout,
    pub pool: &'a ChunkPool,
    pub interrupted: &'a dyn Fn() -> bool,
}

impl MemStoreCompactor<'_> {
    /// The same cells as `segment`, in the flat layout.
    pub fn flatten(&self, id: u64, segment: &Arc<Segment>, count_uniques: bool) -> Segment {
        let cells = segment.cell_ptrs();
        Segment::flat(id, self.layout, cells, segment.data_chunks(), self.pool, count_uniques)
    }

    /// One flat index over all cells of `segments`; cell bytes stay in place.
    pub fn merge(&self, id: u64, segments: &[Arc<Segment>], count_uniques: bool) -> Result<Segment, Interrupted> {
        let total: u64 = segments.iter().map(|s| s.cell_count()).sum();
        let mut cells = Vec::with_capacity(total as usize);
        let mut cursor = MergingCursor::new(segments.iter().cloned());
        while let Some(c) = cursor.current() {
            cells.push(c.encoded().as_ptr());
            cursor.advance();
            if cells.len() % INTERRUPT_POLL == 0 && (self.interrupted)() {
                return Err(Interrupted);
            }
        }
        let chunks: Vec<ChunkRef> = segments.iter().flat_map(|s| s.data_chunks()).collect();
        Ok(Segment::flat(id, self.layout, cells, chunks, self.pool, count_uniques))
    }

    /// Merges `segments`, keeps what `retainer` keeps, and copies the
    /// survivors into fresh chunks. Returns the segment and the number of
    /// cells dropped.
    pub fn compact(
        &self,
        id: u64,
        segments: &[Arc<Segment>],
        mut retainer: CompactionRetainer,
    ) -> Result<(Segment, u64), Interrupted> {
        let lab = MemStoreLab::new(self.pool.clone());
        let mut cells = Vec::new();
        let mut dropped = 0u64;
        let mut seen = 0usize;
        let mut cursor = MergingCursor::new(segments.iter().cloned());
        while let Some(c) = cursor.current() {
            if retainer.keep(c) {
                let src = c.encoded();
                let dst = lab.alloc(src.len(), 1);
                // SAFETY: `dst` is a fresh allocation of src.len() bytes.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), src.len()) };
                cells.push(dst.as_ptr() as *const u8);
            } else {
                dropped += 1;
            }
            cursor.advance();
            seen += 1;
            if seen.is_multiple_of(INTERRUPT_POLL) && (self.interrupted)() {
                return Err(Interrupted);
            }
        }
        Ok((Segment::flat(id, self.layout, cells, lab.chunks(), self.pool, true), dropped))
    }
}
