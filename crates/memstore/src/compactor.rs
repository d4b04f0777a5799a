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
use crate::segment::{IndexLayout, Segment, SegmentStats};
use crate::sorted_runs;
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
        // A drained segment's own statistics are exact; re-reading every cell
        // for them is needed only to count unique keys.
        let stats = (!count_uniques).then(|| segment.stats());
        Segment::flat_with_stats(id, self.layout, cells, segment.data_chunks(), self.pool, stats, count_uniques)
    }

    /// One flat index over all cells of `segments`; cell bytes stay in place.
    /// The runs are merged by galloping (`sorted_runs`), so the cells of a big
    /// segment between two cells of the small ones are never read.
    pub fn merge(&self, id: u64, segments: &[Arc<Segment>], count_uniques: bool) -> Result<Segment, Interrupted> {
        let runs: Vec<Vec<*const u8>> = segments.iter().map(|s| s.cell_ptrs()).collect();
        // SAFETY: the pointers are cells of `segments`, which we hold.
        let cells = unsafe { sorted_runs::merge_newest_first(runs, self.interrupted) }.ok_or(Interrupted)?;
        if (self.interrupted)() {
            return Err(Interrupted);
        }
        let chunks: Vec<ChunkRef> = segments.iter().flat_map(|s| s.data_chunks()).collect();
        // Nothing is dropped: the inputs' statistics add up exactly.
        let stats = (!count_uniques).then(|| segments.iter().fold(SegmentStats::EMPTY, |acc, s| acc.merge(&s.stats())));
        Ok(Segment::flat_with_stats(id, self.layout, cells, chunks, self.pool, stats, count_uniques))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use crate::mutable_segment::MutableSegment;
    use crate::segment::{SegmentCursor, SegmentStats};

    fn frozen(rows: &[(&str, u64)], first_seq: u64, pool: &ChunkPool) -> Arc<Segment> {
        let m = Arc::new(MutableSegment::new(pool.clone()));
        for (i, (r, ts)) in rows.iter().enumerate() {
            let g = m.begin_write().expect("not frozen");
            let cells = [
                CellInput::put(r.as_bytes(), b"f", b"q", *ts, b"value"),
                CellInput::put(r.as_bytes(), b"f", b"z", *ts, b"v"),
            ];
            m.insert_row(&g, &cells, first_seq + i as u64);
        }
        m.freeze();
        Arc::new(Segment::from_active(first_seq, m))
    }

    fn cells_of(seg: &Arc<Segment>) -> Vec<(Vec<u8>, Vec<u8>, u64, u64)> {
        let mut c = SegmentCursor::new(seg.clone());
        let mut out = Vec::new();
        while let Some(cell) = c.current() {
            out.push((cell.row().to_vec(), cell.qualifier().to_vec(), cell.timestamp(), cell.seq()));
            c.advance();
        }
        out
    }

    #[test]
    fn flatten_and_merge_keep_every_cell_and_exact_statistics_without_recounting() {
        let pool = ChunkPool::new(16);
        let never = || false;
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            let c = MemStoreCompactor { layout, pool: &pool, interrupted: &never };
            let old = Arc::new(c.flatten(10, &frozen(&[("m", 5), ("a", 1), ("x", 9), ("m", 6)], 1, &pool), false));
            let new1 = frozen(&[("b", 2), ("m", 7)], 20, &pool);
            let new2 = Arc::new(c.flatten(11, &frozen(&[("z", 3), ("a", 4)], 30, &pool), false));
            let segments = [new2.clone(), new1.clone(), old.clone()];
            let merged = Arc::new(c.merge(12, &segments, false).expect("not interrupted"));

            let mut want: Vec<_> = segments.iter().flat_map(cells_of).collect();
            // HBase's order: row, qualifier ascending; timestamp, seq descending.
            want.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)).then(b.3.cmp(&a.3)));
            assert_eq!(cells_of(&merged), want, "{layout:?}: every cell once, in cell order");

            // The statistics added up from the inputs equal a full recount.
            let recount = SegmentStats::of_cells(&merged.cell_ptrs(), merged.stats().index_size, false);
            assert_eq!(merged.stats(), recount, "{layout:?}: merged statistics");
            let recount = SegmentStats::of_cells(&old.cell_ptrs(), old.stats().index_size, false);
            assert_eq!(old.stats(), recount, "{layout:?}: flattened statistics");
            // Counting uniques still reads the cells.
            let counted = c.merge(13, &segments, true).expect("not interrupted");
            assert_eq!(counted.stats().unique_keys, Some(2 * 5), "{layout:?}: a, b, m, x, z × two qualifiers");
        }
    }
}
