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
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cell::CellRef;
use crate::cell::common_prefix_len;
use crate::cell_chunk_index::{CellChunkIndex, CellChunkIndexBuilder, ChunkLocator, Entry};
use crate::chunk::ChunkRef;
use crate::chunk_pool::ChunkPool;
use crate::mslab::MemStoreLab;
use crate::segment::{IndexLayout, Segment, SegmentStats};
use crate::sorted_runs::{self, Run, RunItem, Sink};
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
    /// Where an action publishes the bytes it holds beside its inputs, for
    /// the memstore's accounting: the cell pointer arrays it builds (their
    /// capacities) and a compaction's copy (its chunks so far, every few
    /// thousand cells). Measured on paper-write-zipf, the arrays of a merge
    /// over a whole pipeline came to tens of MB outside every chunk.
    pub building: Option<&'a AtomicU64>,
}

/// Bytes a vector of run items holds: its capacity.
fn array_bytes<T>(items: &Vec<T>) -> u64 {
    (items.capacity() * std::mem::size_of::<T>()) as u64
}

/// The row bytes every cell of every segment starts with. A set's longest
/// common prefix is the common prefix of its parts' (so each segment's own
/// is enough).
fn common_row_bytes(segments: &[Arc<Segment>]) -> Box<[u8]> {
    let mut commons = segments.iter().filter_map(|s| s.row_common());
    let Some(mut acc) = commons.next() else { return Box::default() };
    for c in commons {
        acc.truncate(common_prefix_len(&acc, &c));
    }
    acc.into()
}

impl MemStoreCompactor<'_> {
    /// The same cells as `segment`, in the flat layout.
    pub fn flatten(&self, id: u64, segment: &Arc<Segment>, count_uniques: bool) -> Segment {
        let cells = segment.cell_ptrs();
        self.publish(array_bytes(&cells));
        if self.layout == IndexLayout::CellChunk {
            // One pass over the cells gives the entries and the unique keys.
            let data_chunks = segment.data_chunks();
            let (index, columns) = CellChunkIndex::from_sorted_counting(
                &cells,
                &ChunkLocator::new(&data_chunks),
                self.pool,
                count_uniques,
            );
            let stats = SegmentStats { unique_keys: columns.or(segment.stats().unique_keys), ..segment.stats() };
            return Segment::flat_from_chunk_index(id, index, data_chunks, stats);
        }
        // A drained segment's own statistics are exact; re-reading every cell
        // for them is needed only to count unique keys.
        let stats = if count_uniques { SegmentStats::of_cells(&cells, 0, true) } else { segment.stats() };
        Segment::flat_with_stats(id, self.layout, cells, segment.data_chunks(), self.pool, stats)
    }

    /// One flat index over all cells of `segments`; cell bytes stay in place.
    /// The runs are merged by galloping (`sorted_runs`), so the cells of a big
    /// segment between two cells of the small ones are never read — not for
    /// the statistics either: they add up from the inputs, and unique keys
    /// are counted by the merge from the inputs' counts.
    ///
    /// In the cell-chunk layout the runs are index entries
    /// (`cell_chunk_index::Entry`), which order by row prefix and read a
    /// cell only where rows tie. The pipeline's usual shape — a few small
    /// new segments over the big result of the last merge — is merged with
    /// the big index read in place and the result written straight into the
    /// new index's chunks: besides its output, the merge holds only the
    /// small segments' entries.
    pub fn merge(&self, id: u64, segments: &[Arc<Segment>], count_uniques: bool) -> Result<Segment, Interrupted> {
        // Neighbouring segments may share a chunk (`mslab.rs`): hold it once.
        let mut chunks: Vec<ChunkRef> = segments.iter().flat_map(|s| s.data_chunks()).collect();
        chunks.sort_unstable_by_key(|c| c.id());
        chunks.dedup_by_key(|c| c.id());
        // Nothing is dropped: the inputs' statistics add up exactly.
        let sum = segments.iter().fold(SegmentStats::EMPTY, |acc, s| acc.merge(&s.stats()));
        if self.layout == IndexLayout::CellChunk {
            let common = common_row_bytes(segments);
            let mut out = CellChunkIndexBuilder::new(self.pool);
            let columns = self.merge_entries(segments, common.len(), count_uniques, &mut out)?;
            let stats = SegmentStats { unique_keys: columns, ..sum };
            return Ok(Segment::flat_from_chunk_index(id, out.finish(common), chunks, stats));
        }
        let merged = self.merged_runs(Self::pointer_runs(segments), count_uniques)?;
        self.publish(array_bytes(&merged.cells));
        let stats = SegmentStats { unique_keys: merged.columns, ..sum };
        Ok(Segment::flat_with_stats(id, self.layout, merged.cells, chunks, self.pool, stats))
    }

    /// Merges the segments' index entries, prefixes past `skip` row bytes
    /// (which every row has), into `out`; returns the column count when
    /// `count`. When the oldest segment is a cell-chunk segment at least as
    /// long as each of the others, the others are folded first and the
    /// result galloped into its index in place.
    fn merge_entries(
        &self,
        segments: &[Arc<Segment>],
        skip: usize,
        count: bool,
        out: &mut impl Sink<Entry>,
    ) -> Result<Option<u64>, Interrupted> {
        let entries = |s: &Arc<Segment>| Run::new(s.index_entries(skip), s.stats().unique_keys);
        if let Some((big, newer)) = segments.split_last()
            && let Some(index) = big.chunk_index()
            && !newer.is_empty()
            && newer.iter().all(|s| s.cell_count() <= big.cell_count())
        {
            let runs: Vec<Run<Entry>> = newer.iter().map(entries).collect();
            self.publish(runs.iter().map(|r| array_bytes(&r.cells)).sum());
            // SAFETY: the entries locate cells of `segments`, which we hold.
            let small = unsafe { sorted_runs::fold_from_oldest(runs, count, self.interrupted) }.ok_or(Interrupted)?;
            if (self.interrupted)() {
                return Err(Interrupted);
            }
            self.publish(array_bytes(&small.cells));
            let view = index.view_past(skip);
            // SAFETY: as above; every small run is newer than the big one.
            let columns = unsafe { sorted_runs::merge_into_older(&small, &view, big.stats().unique_keys, count, out) };
            return if (self.interrupted)() { Err(Interrupted) } else { Ok(columns) };
        }
        let merged = self.merged_runs(segments.iter().map(entries).collect(), count)?;
        out.extend_from_slice(&merged.cells);
        Ok(merged.columns)
    }

    fn publish(&self, bytes: u64) {
        if let Some(b) = self.building {
            b.store(bytes, Ordering::Relaxed);
        }
    }

    fn pointer_runs(segments: &[Arc<Segment>]) -> Vec<Run<*const u8>> {
        segments.iter().map(|s| Run::new(s.cell_ptrs(), s.stats().unique_keys)).collect()
    }

    /// The cells of `runs` (the segments' runs, newest first) in cell order
    /// (the merging cursor's order, ties to the newer segment).
    fn merged_runs<T: RunItem>(&self, runs: Vec<Run<T>>, count_uniques: bool) -> Result<Run<T>, Interrupted> {
        self.publish(runs.iter().map(|r| array_bytes(&r.cells)).sum());
        // SAFETY: the items are cells of the caller's segments, which it holds.
        let merged =
            unsafe { sorted_runs::merge_newest_first(runs, count_uniques, self.interrupted) }.ok_or(Interrupted)?;
        if (self.interrupted)() {
            return Err(Interrupted);
        }
        Ok(merged)
    }

    /// Merges `segments`, keeps what `retainer` keeps, and copies the
    /// survivors into fresh chunks. Returns the segment and the number of
    /// cells dropped. The cells are ordered by the galloping merge, which
    /// hands them, in order, to the copy (`Survivors`): the retainer, the
    /// copy and the statistics (unique keys included) read each cell once.
    pub fn compact(
        &self,
        id: u64,
        segments: &[Arc<Segment>],
        retainer: CompactionRetainer,
    ) -> Result<(Segment, u64), Interrupted> {
        let mut survivors = Survivors::new(self, retainer);
        if self.layout == IndexLayout::CellChunk {
            let skip = common_row_bytes(segments).len();
            self.merge_entries(segments, skip, false, &mut survivors)?;
        } else {
            let merged = self.merged_runs(Self::pointer_runs(segments), false)?;
            survivors.extend_from_slice(&merged.cells);
        }
        if survivors.interrupted {
            return Err(Interrupted);
        }
        let Survivors { lab, cells, stats, dropped, .. } = survivors;
        Ok((Segment::flat_with_stats(id, self.layout, cells, lab.chunks(), self.pool, stats), dropped))
    }
}

/// A compaction's copy, fed the merged cells in order: keeps what the
/// retainer keeps, copies it into fresh chunks and counts its statistics.
struct Survivors<'c, 'a> {
    compactor: &'c MemStoreCompactor<'a>,
    retainer: CompactionRetainer,
    lab: MemStoreLab,
    cells: Vec<*const u8>,
    stats: SegmentStats,
    /// Whether a cell of the current column was kept.
    column_kept: bool,
    dropped: u64,
    seen: usize,
    interrupted: bool,
    /// What the merge feeding the copy published it holds (its arrays),
    /// read at the first cell: the copy publishes its own bytes beside it.
    merge_bytes: Option<u64>,
}

impl<'c, 'a> Survivors<'c, 'a> {
    fn new(compactor: &'c MemStoreCompactor<'a>, retainer: CompactionRetainer) -> Self {
        Survivors {
            compactor,
            retainer,
            lab: MemStoreLab::new(compactor.pool.clone()),
            cells: Vec::new(),
            stats: SegmentStats { unique_keys: Some(0), ..SegmentStats::EMPTY },
            column_kept: false,
            dropped: 0,
            seen: 0,
            interrupted: false,
            merge_bytes: None,
        }
    }

    /// Takes the next cell in cell order (nothing once interrupted).
    #[inline]
    fn take(&mut self, p: *const u8) {
        if self.interrupted {
            return;
        }
        self.seen += 1;
        if self.seen.is_multiple_of(INTERRUPT_POLL) {
            if (self.compactor.interrupted)() {
                self.interrupted = true;
                return;
            }
            let building = self.compactor.building;
            let merge = *self.merge_bytes.get_or_insert_with(|| building.map_or(0, |b| b.load(Ordering::Relaxed)));
            self.compactor.publish(merge + array_bytes(&self.cells) + self.lab.held_bytes() as u64);
        }
        // SAFETY: `p` is a cell of the compacted segments, which the caller holds.
        let c = unsafe { CellRef::from_ptr(p) };
        let keep = self.retainer.keep(c);
        if self.retainer.started_column() {
            self.column_kept = false;
        }
        if !keep {
            self.dropped += 1;
            return;
        }
        let src = c.encoded();
        let dst = self.lab.alloc(src.len(), 1);
        // SAFETY: `dst` is a fresh allocation of src.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), src.len()) };
        self.cells.push(dst.as_ptr() as *const u8);
        // The first kept cell of its column is a unique key.
        let new_column = !std::mem::replace(&mut self.column_kept, true);
        self.stats.add_cell(&c, new_column);
    }
}

impl<T: RunItem> Sink<T> for Survivors<'_, '_> {
    #[inline]
    fn push(&mut self, item: T) {
        self.take(item.cell_ptr());
    }

    fn extend_from_slice(&mut self, items: &[T]) {
        items.iter().for_each(|&item| self.take(item.cell_ptr()));
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

    /// Every cell of `segments` in HBase's order: row, qualifier ascending;
    /// timestamp, seq descending.
    fn in_cell_order(segments: &[Arc<Segment>]) -> Vec<(Vec<u8>, Vec<u8>, u64, u64)> {
        let mut want: Vec<_> = segments.iter().flat_map(cells_of).collect();
        want.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)).then(b.3.cmp(&a.3)));
        want
    }

    fn as_refs(rows: &[(String, u64)]) -> Vec<(&str, u64)> {
        rows.iter().map(|(s, t)| (s.as_str(), *t)).collect()
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
            let c = MemStoreCompactor { layout, pool: &pool, interrupted: &never, building: None };
            let old = Arc::new(c.flatten(10, &frozen(&[("m", 5), ("a", 1), ("x", 9), ("m", 6)], 1, &pool), false));
            let new1 = frozen(&[("b", 2), ("m", 7)], 20, &pool);
            let new2 = Arc::new(c.flatten(11, &frozen(&[("z", 3), ("a", 4)], 30, &pool), false));
            let segments = [new2.clone(), new1.clone(), old.clone()];
            let merged = Arc::new(c.merge(12, &segments, false).expect("not interrupted"));

            assert_eq!(cells_of(&merged), in_cell_order(&segments), "{layout:?}: every cell once, in cell order");

            // The statistics added up from the inputs equal a full recount.
            let recount = SegmentStats::of_cells(&merged.cell_ptrs(), merged.stats().index_size, false);
            assert_eq!(merged.stats(), recount, "{layout:?}: merged statistics");
            let recount = SegmentStats::of_cells(&old.cell_ptrs(), old.stats().index_size, false);
            assert_eq!(old.stats(), recount, "{layout:?}: flattened statistics");
            // Counting uniques still reads the cells.
            let counted = c.merge(13, &segments, true).expect("not interrupted");
            assert_eq!(counted.stats().unique_keys, Some(2 * 5), "{layout:?}: a, b, m, x, z × two qualifiers");
            // Inputs whose unique keys were counted when flattened: the merge
            // adds them up less the keys they share, and agrees with a recount.
            let counted_inputs = [
                Arc::new(c.flatten(14, &new2, true)),
                Arc::new(c.flatten(15, &new1, true)),
                Arc::new(c.flatten(16, &old, true)),
            ];
            let counted = c.merge(17, &counted_inputs, true).expect("not interrupted");
            assert_eq!(counted.stats().unique_keys, Some(2 * 5), "{layout:?}: shared keys counted once");
        }
    }

    /// A merge and a compaction publish what they hold beside their inputs:
    /// at least their output's pointer array (8 bytes a cell), and a
    /// compaction also its copy's chunk.
    #[test]
    fn actions_publish_the_bytes_they_build_beside_their_inputs() {
        use crate::visibility::VersionRules;
        let pool = ChunkPool::new(16);
        let never = || false;
        let building = AtomicU64::new(0);
        let c = MemStoreCompactor {
            layout: IndexLayout::CellChunk,
            pool: &pool,
            interrupted: &never,
            building: Some(&building),
        };
        let segments = [frozen(&[("b", 2), ("m", 7)], 20, &pool), frozen(&[("a", 1), ("x", 9)], 1, &pool)];
        let merged = c.merge(5, &segments, false).expect("not interrupted");
        assert!(building.load(Ordering::Relaxed) >= 8 * merged.cell_count(), "the merged pointer array");
        let rows: Vec<(String, u64)> = (0..5000).map(|i| (format!("r{i:05}"), 1)).collect();
        let rows: Vec<(&str, u64)> = rows.iter().map(|(r, t)| (r.as_str(), *t)).collect();
        let big = [frozen(&rows, 100, &pool)];
        let retainer = CompactionRetainer::new(u64::MAX, VersionRules { max_versions: 1, ttl_ms: None }, 0);
        let (compacted, _) = c.compact(6, &big, retainer).expect("not interrupted");
        let published = building.load(Ordering::Relaxed);
        assert!(
            published >= crate::CHUNK_SIZE as u64,
            "the copy's chunk, once past {INTERRUPT_POLL} cells: {published}"
        );
        assert!(published >= 2 * 8 * compacted.cell_count(), "and both pointer arrays");
    }

    #[test]
    fn compaction_keeps_the_newest_version_per_column_with_statistics_counted_on_the_way() {
        use crate::visibility::VersionRules;
        let pool = ChunkPool::new(16);
        let never = || false;
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            let c = MemStoreCompactor { layout, pool: &pool, interrupted: &never, building: None };
            let old = Arc::new(c.flatten(10, &frozen(&[("m", 5), ("a", 1), ("x", 9), ("m", 6)], 1, &pool), true));
            let new1 = frozen(&[("b", 2), ("m", 7)], 20, &pool);
            let new2 = Arc::new(c.flatten(11, &frozen(&[("z", 3), ("a", 4), ("a", 4)], 30, &pool), true));
            let segments = [new2, new1, old];
            // Every write is older than the smallest read point: one version per column survives.
            let retainer = CompactionRetainer::new(u64::MAX, VersionRules { max_versions: 1, ttl_ms: None }, 0);
            let (compacted, dropped) = c.compact(12, &segments, retainer).expect("not interrupted");
            let compacted = Arc::new(compacted);
            let got: Vec<_> = cells_of(&compacted).into_iter().map(|(r, q, ts, _)| (r, q, ts)).collect();
            let want: Vec<(Vec<u8>, Vec<u8>, u64)> = [("a", 4), ("b", 2), ("m", 7), ("x", 9), ("z", 3)]
                .iter()
                .flat_map(|(r, ts)| [b"q", b"z"].map(|q| (r.as_bytes().to_vec(), q.to_vec(), *ts)))
                .collect();
            assert_eq!(got, want, "{layout:?}: the newest version of each column");
            assert_eq!(dropped, 2 * 9 - 10, "{layout:?}: everything else dropped");
            // Statistics taken while copying equal a full recount, unique keys included.
            let recount = SegmentStats::of_cells(&compacted.cell_ptrs(), compacted.stats().index_size, true);
            assert_eq!(compacted.stats(), recount, "{layout:?}: compacted statistics");
            assert_eq!(compacted.stats().unique_keys, Some(10));
            // Three versions per column: more cells kept than columns, each
            // column counted once (at its first kept cell).
            let retainer = CompactionRetainer::new(u64::MAX, VersionRules { max_versions: 3, ttl_ms: None }, 0);
            let (three, _) = c.compact(13, &segments, retainer).expect("not interrupted");
            let three = Arc::new(three);
            assert!(three.cell_count() > 10, "{layout:?}: older versions kept");
            let recount = SegmentStats::of_cells(&three.cell_ptrs(), three.stats().index_size, true);
            assert_eq!(three.stats(), recount, "{layout:?}: statistics with versions");
            assert_eq!(three.stats().unique_keys, Some(10));
        }
    }

    /// Rows of the YCSB kind, "user" and a long number: segments whose rows
    /// share more bytes than the merge's inputs together share (eight and
    /// more, and fewer than eight, past the common bytes of all) are
    /// merged in the cell-chunk layout from their entries alone, the oldest
    /// (18 K cells, three index chunks) read in place and the result written
    /// across index chunks. The merged index must order and find every cell
    /// as a recount does.
    #[test]
    fn cell_chunk_merges_rebase_segments_whose_rows_share_more_bytes() {
        let pool = ChunkPool::new(64);
        let never = || false;
        let c = MemStoreCompactor { layout: IndexLayout::CellChunk, pool: &pool, interrupted: &never, building: None };
        let rows = |lead: &str, n: u64| -> Vec<(String, u64)> {
            (0..n).map(|i| (format!("{lead}{:07}", (i * 7_919) % 1_000_003), i % 3)).collect()
        };
        // Commons: "user12345678901" (11 bytes past "user1"), "user123" and
        // "user1" and "user19": all together share "user1".
        let long = rows("user12345678901", 9_000);
        let mid = rows("user123", 200);
        let short = rows("user1", 100);
        let other = rows("user19", 50);
        let segments = [
            frozen(&as_refs(&other), 4_000, &pool),
            Arc::new(c.flatten(3, &frozen(&as_refs(&short), 3_000, &pool), true)),
            Arc::new(c.flatten(2, &frozen(&as_refs(&mid), 2_000, &pool), true)),
            Arc::new(c.flatten(1, &frozen(&as_refs(&long), 1_000, &pool), true)),
        ];
        let merged = Arc::new(c.merge(9, &segments, true).expect("not interrupted"));
        let want = in_cell_order(&segments);
        assert_eq!(cells_of(&merged), want, "every cell once, in cell order");
        let recount = SegmentStats::of_cells(&merged.cell_ptrs(), merged.stats().index_size, true);
        assert_eq!(merged.stats(), recount, "statistics, unique keys included");
        // Every row is found by a seek, which decides by the merged entries'
        // prefixes: a wrongly re-based prefix misplaces the search.
        for (row, q, ts, seq) in &want {
            let key = crate::cell::CellKey {
                row,
                family: b"f",
                qualifier: q,
                timestamp: *ts,
                type_code: crate::cell::CellType::Put as u8,
                seq: *seq,
            };
            let mut cursor = SegmentCursor::new(merged.clone());
            cursor.seek(&key);
            let at = cursor.current().expect("found");
            assert_eq!((at.row(), at.seq()), (row.as_slice(), *seq), "seek to {}", String::from_utf8_lossy(row));
        }
        // A merge of the merged segment with a newer one re-bases again.
        let newer = frozen(&as_refs(&rows("user2", 20)), 5_000, &pool);
        let again = Arc::new(c.merge(10, &[newer.clone(), merged.clone()], false).expect("not interrupted"));
        assert_eq!(
            cells_of(&again),
            in_cell_order(&[newer, merged]),
            "every cell once, in cell order, after a second merge"
        );
    }
}
