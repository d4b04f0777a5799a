//! `Segment`: an immutable segment of the compaction pipeline or snapshot, in
//! one of three index layouts — a frozen skiplist (the former active
//! segment), a cell array, or a cell chunk index — plus `SegmentCursor`, a
//! positioned reader over any of them.
//!
//! Invariants:
//! - A segment holds a reference to every chunk that its cells and index
//!   entries live in; the chunks are released when the last `Arc<Segment>`
//!   (pipeline, snapshot, or a reader's cursor) drops.
//! - A flat segment's statistics are exact and fixed at construction. A
//!   skiplist segment's are read from its (frozen) active segment.
//!
//! Index bytes, two measures:
//! - `SegmentStats::index_size` is what heap accounting (and the region
//!   flush size trigger) charges: the bytes of the index's entries or nodes
//!   — 8 per cell for a cell array, 16 for a cell-chunk index (which keeps
//!   a row prefix in each entry) plus its long-column table, the node
//!   bytes of a skiplist. Data
//!   is charged the same way, per cell, not per MSLAB chunk. This is
//!   HBase's rule: `CellChunkImmutableSegment` charges
//!   `CELL_CHUNK_MAP_ENTRY` per cell, not its index chunks, and cells their
//!   length, not their chunks.
//! - [`Segment::index_held_bytes`] is the memory the index really keeps
//!   from being reused: every index chunk a cell-chunk index took, whole; a
//!   cell array's heap block; a skiplist's node chunks, whole (one of them
//!   may be shared with the list of the next active segment, `mslab.rs`).
//!   The bench reports this one as "index bytes per cell"; with the data
//!   chunks it makes the held size (`footprint.rs`) that the global
//!   memstore limit charges.
//!
//! Thread safety: immutable; share through `Arc`. A cursor is owned by one
//! reader and holds its segment alive.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cell::common_prefix_len;
use crate::cell::{CellKey, CellRef};
use crate::cell_array_index::CellArrayIndex;
use crate::cell_chunk_index::{CellChunkIndex, ChunkLocator, Entry};
use crate::chunk::{ChunkId, ChunkRef};
use crate::chunk_pool::ChunkPool;
use crate::gallop::gallop;
use crate::mutable_segment::MutableSegment;
pub use crate::segment_stats::{SEGMENT_OVERHEAD, SegmentStats};
use crate::skiplist::CellSkipList;

/// The index layout of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexLayout {
    SkipList,
    CellArray,
    CellChunk,
}

impl IndexLayout {
    pub fn name(self) -> &'static str {
        match self {
            IndexLayout::SkipList => "skiplist",
            IndexLayout::CellArray => "cell-array",
            IndexLayout::CellChunk => "cell-chunk",
        }
    }
}

enum FlatIndex {
    Array(CellArrayIndex),
    Chunk(CellChunkIndex),
}

impl FlatIndex {
    fn len(&self) -> usize {
        match self {
            FlatIndex::Array(a) => a.len(),
            FlatIndex::Chunk(c) => c.len(),
        }
    }

    fn cell_ptr(&self, i: usize) -> *const u8 {
        match self {
            FlatIndex::Array(a) => a.cell_ptr(i),
            FlatIndex::Chunk(c) => c.cell_ptr(i),
        }
    }

    /// Asks the CPU to start loading the head of the cell at `i`: the
    /// lines of its first [`HEAD_BYTES`], the header and (most of) the key
    /// a comparison reads (nothing past the end).
    #[inline]
    fn prefetch_head(&self, i: usize) {
        if i < self.len() {
            prefetch_lines(self.cell_ptr(i), 0, HEAD_BYTES);
        }
    }

    /// Asks the CPU to start loading the rest of the cell at `i`, past the
    /// head [`Self::prefetch_head`] asked for [`PREFETCH_AHEAD`] steps ago:
    /// its header, loaded by then, gives the cell's length. A returned
    /// cell is copied whole, value and all, and a YCSB cell (a 100-byte
    /// value) spans three or four lines.
    #[inline]
    fn prefetch_tail(&self, i: usize) {
        if i < self.len() {
            let cell = self.cell_ptr(i);
            // SAFETY: positions below `len` are live encoded cells.
            let len = unsafe { CellRef::from_ptr(cell) }.encoded().len();
            prefetch_lines(cell, HEAD_BYTES, len);
        }
    }
}

/// How many cells ahead a flat segment's cursor has the next cell loaded
/// while it steps (see [`SegmentCursor::advance`]): the head is asked for
/// twice this far ahead, the rest of the cell this far ahead.
const PREFETCH_AHEAD: usize = 4;

/// The bytes of a cell's head that [`FlatIndex::prefetch_head`] loads.
const HEAD_BYTES: usize = 64;

/// Starts loading the cache lines holding bytes `from..to` of the cell at
/// `cell`. A hint only: it never faults and changes no memory.
#[inline]
fn prefetch_lines(cell: *const u8, from: usize, to: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        if from >= to {
            return;
        }
        // Whole lines: a cell need not start on one.
        let start = cell.wrapping_add(from);
        let mut line = start.wrapping_sub(start as usize % LINE);
        let end = cell.wrapping_add(to - 1);
        while line <= end {
            // SAFETY: a prefetch does not access memory architecturally;
            // any address is allowed, and these lines hold a live cell.
            unsafe {
                use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                _mm_prefetch::<_MM_HINT_T0>(line.cast());
            }
            line = line.wrapping_add(LINE);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (cell, from, to);
}

enum SegmentBody {
    SkipList(Arc<MutableSegment>),
    Flat { index: FlatIndex, _data_chunks: Vec<ChunkRef>, stats: SegmentStats },
}

/// An immutable segment.
pub struct Segment {
    id: u64,
    body: SegmentBody,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("id", &self.id)
            .field("layout", &self.layout())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Segment {
    /// Wraps a (frozen) active segment as is.
    pub fn from_active(id: u64, active: Arc<MutableSegment>) -> Segment {
        Segment { id, body: SegmentBody::SkipList(active) }
    }

    /// Builds a flat segment over sorted cell pointers that live in
    /// `data_chunks`.
    pub fn flat(
        id: u64,
        layout: IndexLayout,
        cells: Vec<*const u8>,
        data_chunks: Vec<ChunkRef>,
        pool: &ChunkPool,
        count_uniques: bool,
    ) -> Segment {
        let stats = SegmentStats::of_cells(&cells, 0, count_uniques);
        Segment::flat_with_stats(id, layout, cells, data_chunks, pool, stats)
    }

    /// Like [`flat`](Self::flat), with the cells' statistics known already
    /// (data size, counts, seq and time ranges, unique keys when counted;
    /// the index size is set here).
    pub fn flat_with_stats(
        id: u64,
        layout: IndexLayout,
        cells: Vec<*const u8>,
        data_chunks: Vec<ChunkRef>,
        pool: &ChunkPool,
        known: SegmentStats,
    ) -> Segment {
        debug_assert_eq!(known.cells, cells.len() as u64, "known statistics of other cells");
        debug_assert!(
            known.unique_keys.is_none_or(|u| u <= known.cells && (u > 0) == (known.cells > 0)),
            "unique keys out of range"
        );
        let mut stats = known;
        let index = match layout {
            IndexLayout::CellChunk => {
                FlatIndex::Chunk(CellChunkIndex::from_sorted(&cells, &ChunkLocator::new(&data_chunks), pool))
            }
            IndexLayout::CellArray | IndexLayout::SkipList => FlatIndex::Array(CellArrayIndex::from_sorted(cells)),
        };
        stats.index_size = match &index {
            FlatIndex::Array(a) => a.entry_bytes(),
            FlatIndex::Chunk(c) => c.charged_bytes(),
        } as u64;
        Segment { id, body: SegmentBody::Flat { index, _data_chunks: data_chunks, stats } }
    }

    /// A cell-chunk segment over a built `index` (entries locating cells in
    /// `data_chunks`), with the cells' statistics known.
    pub fn flat_from_chunk_index(
        id: u64,
        index: CellChunkIndex,
        data_chunks: Vec<ChunkRef>,
        known: SegmentStats,
    ) -> Segment {
        debug_assert_eq!(known.cells, index.len() as u64, "known statistics of other cells");
        let stats = SegmentStats { index_size: index.charged_bytes() as u64, ..known };
        Segment { id, body: SegmentBody::Flat { index: FlatIndex::Chunk(index), _data_chunks: data_chunks, stats } }
    }

    /// The cell-chunk index, for a segment in that layout.
    pub fn chunk_index(&self) -> Option<&CellChunkIndex> {
        match &self.body {
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => Some(c),
            _ => None,
        }
    }

    /// The leading row bytes every cell's row has (the longest such), or
    /// `None` for an empty segment. Reads two cells at most.
    pub fn row_common(self: &Arc<Self>) -> Option<Vec<u8>> {
        if let SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } = &self.body {
            return (!c.is_empty()).then(|| c.common().to_vec());
        }
        let cursor = SegmentCursor::new(self.clone());
        let (first, last) = (cursor.current()?.row(), cursor.peek_last()?.row());
        Some(first[..common_prefix_len(first, last)].to_vec())
    }

    /// The cells as cell-chunk index entries in cell order, prefixes past
    /// `skip` row bytes (`skip` at most [`row_common`](Self::row_common)'s
    /// length). A cell-chunk segment copies its entries and reads no cell.
    pub fn index_entries(self: &Arc<Self>, skip: usize) -> Vec<Entry> {
        if let SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } = &self.body {
            return c.entries_past(skip);
        }
        let locator = ChunkLocator::new(&self.data_chunks());
        // SAFETY: the pointers are this segment's cells, in its data chunks,
        // and every row starts with the common bytes `skip` counts.
        unsafe { CellChunkIndex::entries_of_sorted(&self.cell_ptrs(), skip, &locator) }
    }

    /// Bytes of memory the segment's index holds (module doc): whole pool
    /// chunks for a cell-chunk index and for a skiplist's node arena (plus
    /// its head tower), the array's heap block for a cell array.
    pub fn index_held_bytes(&self) -> u64 {
        let mut chunks = 0u64;
        self.visit_index_chunks(|_, capacity| chunks += capacity as u64);
        chunks + self.index_heap_bytes()
    }

    /// Calls `f` with the id and capacity of every pool chunk the index
    /// lives in: a skiplist's node chunks (one it shares with its
    /// successor's included), a cell-chunk index's entry chunks.
    pub fn visit_index_chunks(&self, f: impl FnMut(ChunkId, usize)) {
        match &self.body {
            SegmentBody::SkipList(m) => m.visit_index_chunks(f),
            SegmentBody::Flat { index: FlatIndex::Array(_), .. } => {}
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => c.visit_chunks(f),
        }
    }

    /// Index bytes on the heap rather than in pool chunks: a cell array's
    /// block, a non-empty skiplist's head tower, a cell-chunk index's
    /// long-column table.
    pub fn index_heap_bytes(&self) -> u64 {
        match &self.body {
            SegmentBody::SkipList(m) if m.is_empty() => 0,
            SegmentBody::SkipList(_) => crate::mutable_segment::SKIPLIST_HEAD_BYTES as u64,
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => a.held_bytes() as u64,
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => c.long_column_bytes() as u64,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// What identifies this segment's index memory: the skiplist a frozen
    /// active segment shares with it (every view of one active segment is
    /// the same skiplist), else the segment itself.
    pub fn index_identity(&self) -> usize {
        match &self.body {
            SegmentBody::SkipList(m) => Arc::as_ptr(m) as usize,
            SegmentBody::Flat { .. } => std::ptr::from_ref(self) as usize,
        }
    }

    pub fn layout(&self) -> IndexLayout {
        match &self.body {
            SegmentBody::SkipList(_) => IndexLayout::SkipList,
            SegmentBody::Flat { index: FlatIndex::Array(_), .. } => IndexLayout::CellArray,
            SegmentBody::Flat { index: FlatIndex::Chunk(_), .. } => IndexLayout::CellChunk,
        }
    }

    pub fn stats(&self) -> SegmentStats {
        match &self.body {
            SegmentBody::SkipList(m) => m.stats(),
            SegmentBody::Flat { stats, .. } => *stats,
        }
    }

    pub fn cell_count(&self) -> u64 {
        match &self.body {
            SegmentBody::SkipList(m) => m.cell_count(),
            SegmentBody::Flat { stats, .. } => stats.cells,
        }
    }

    /// The active segment this was frozen from, if it is a skiplist segment.
    pub fn as_active(&self) -> Option<&Arc<MutableSegment>> {
        match &self.body {
            SegmentBody::SkipList(m) => Some(m),
            SegmentBody::Flat { .. } => None,
        }
    }

    /// Calls `f` with the id and capacity of every data chunk the segment
    /// holds (no reference is cloned).
    pub fn visit_data_chunks(&self, mut f: impl FnMut(ChunkId, usize)) {
        match &self.body {
            SegmentBody::SkipList(m) => m.visit_data_chunks(f),
            SegmentBody::Flat { _data_chunks, .. } => _data_chunks.iter().for_each(|c| f(c.id(), c.capacity())),
        }
    }

    /// The data chunks this segment's cells live in.
    pub fn data_chunks(&self) -> Vec<ChunkRef> {
        match &self.body {
            SegmentBody::SkipList(m) => m.data_chunks(),
            SegmentBody::Flat { _data_chunks, .. } => _data_chunks.clone(),
        }
    }

    /// Sorted pointers to all cells (for flatten, merge and compaction).
    pub fn cell_ptrs(self: &Arc<Self>) -> Vec<*const u8> {
        let mut out = Vec::with_capacity(self.cell_count() as usize);
        let mut cursor = SegmentCursor::new(self.clone());
        while let Some(p) = cursor.current_ptr() {
            out.push(p);
            cursor.advance();
        }
        out
    }
}

/// A positioned reader over one segment; holds the segment alive.
pub struct SegmentCursor {
    segment: Arc<Segment>,
    /// Skiplist node, or index position (as usize) for flat segments.
    node: *mut u8,
    pos: usize,
}

// SAFETY: the raw node pointer refers into the segment the cursor holds.
unsafe impl Send for SegmentCursor {}

impl SegmentCursor {
    /// A cursor at the segment's first cell.
    pub fn new(segment: Arc<Segment>) -> SegmentCursor {
        let node = match &segment.body {
            SegmentBody::SkipList(m) => m.skiplist().first(),
            SegmentBody::Flat { .. } => std::ptr::null_mut(),
        };
        SegmentCursor { segment, node, pos: 0 }
    }

    pub fn segment(&self) -> &Arc<Segment> {
        &self.segment
    }

    /// Pointer to the current cell, or `None` when exhausted.
    #[inline]
    pub fn current_ptr(&self) -> Option<*const u8> {
        match &self.segment.body {
            SegmentBody::SkipList(_) => {
                // SAFETY: non-null nodes belong to the held segment's list.
                (!self.node.is_null()).then(|| unsafe { CellSkipList::cell(self.node) })
            }
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => (self.pos < a.len()).then(|| a.cell_ptr(self.pos)),
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => (self.pos < c.len()).then(|| c.cell_ptr(self.pos)),
        }
    }

    /// The current cell, or `None` when exhausted.
    #[inline]
    pub fn current(&self) -> Option<CellRef<'_>> {
        // SAFETY: the cell lives in a chunk of the held segment.
        self.current_ptr().map(|p| unsafe { CellRef::from_ptr(p) })
    }

    /// Moves to the next cell. A flat segment's cells lie where they were
    /// written, not in key order, so every step of a scan met the next
    /// cell's header cold: under YCSB E (after A, B and F) one load in the
    /// merge heap's comparison was a quarter of our server's samples. The
    /// cursor has the cell [`PREFETCH_AHEAD`] positions on loaded meanwhile:
    /// its head first, then (once its header says how long it is) the rest,
    /// which the copy of each returned cell reads.
    #[inline]
    pub fn advance(&mut self) {
        match &self.segment.body {
            SegmentBody::SkipList(_) => {
                if !self.node.is_null() {
                    // SAFETY: non-null nodes belong to the held segment's list.
                    self.node = unsafe { CellSkipList::next(self.node) };
                }
            }
            SegmentBody::Flat { index, .. } => {
                self.pos += 1;
                index.prefetch_head(self.pos + 2 * PREFETCH_AHEAD);
                index.prefetch_tail(self.pos + PREFETCH_AHEAD);
            }
        }
    }

    /// Moves to the first cell >= `key`.
    pub fn seek(&mut self, key: &CellKey<'_>) {
        match &self.segment.body {
            SegmentBody::SkipList(m) => self.node = m.skiplist().seek(key),
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => self.pos = a.lower_bound(key),
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => self.pos = c.lower_bound(key),
        }
    }

    /// Moves forward to the first cell >= `key`, which must not be before
    /// the current cell: a flat segment gallops from where it is (the next
    /// column is usually a few cells on), a skiplist seeks as `seek` does
    /// (steps first were tried: `bench-results/issue27-skiplist-steps/`).
    pub fn reseek(&mut self, key: &CellKey<'_>) {
        match &self.segment.body {
            SegmentBody::SkipList(m) => self.node = m.skiplist().seek(key),
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => {
                // SAFETY: positions below `len` point at live encoded cells
                // (the array's invariant).
                let below = |i| unsafe { CellRef::from_ptr(a.cell_ptr(i)) }.compare_key(key) == Ordering::Less;
                self.pos = gallop(self.pos, a.len(), below);
            }
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => {
                let probe = c.probe(key);
                let below = |i| c.is_below(i, probe, key);
                let mut from = self.pos;
                // Past a long column's versions in one probe of its last
                // (`cell_chunk_index.rs`).
                if let Some(end) = c.long_column_end(from)
                    && below(end - 1)
                {
                    from = end;
                }
                self.pos = gallop(from, c.len(), below);
            }
        }
    }

    /// The segment's last cell, without moving the cursor.
    pub fn peek_last(&self) -> Option<CellRef<'_>> {
        let ptr = match &self.segment.body {
            SegmentBody::SkipList(m) => {
                let n = m.skiplist().last();
                // SAFETY: non-null nodes belong to the held segment's list.
                (!n.is_null()).then(|| unsafe { CellSkipList::cell(n) })
            }
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => a.len().checked_sub(1).map(|i| a.cell_ptr(i)),
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => c.len().checked_sub(1).map(|i| c.cell_ptr(i)),
        };
        // SAFETY: the cell lives in a chunk of the held segment.
        ptr.map(|p| unsafe { CellRef::from_ptr(p) })
    }

    /// The last cell < `key`, without moving the cursor.
    pub fn peek_before(&self, key: &CellKey<'_>) -> Option<CellRef<'_>> {
        let ptr = match &self.segment.body {
            SegmentBody::SkipList(m) => {
                let n = m.skiplist().seek_before(key);
                // SAFETY: non-null nodes belong to the held segment's list.
                (!n.is_null()).then(|| unsafe { CellSkipList::cell(n) })
            }
            SegmentBody::Flat { index: FlatIndex::Array(a), .. } => {
                a.lower_bound(key).checked_sub(1).map(|i| a.cell_ptr(i))
            }
            SegmentBody::Flat { index: FlatIndex::Chunk(c), .. } => {
                c.lower_bound(key).checked_sub(1).map(|i| c.cell_ptr(i))
            }
        };
        // SAFETY: the cell lives in a chunk of the held segment.
        ptr.map(|p| unsafe { CellRef::from_ptr(p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use crate::chunk::{CHUNK_SIZE, INDEX_CHUNK_SIZE};

    fn active_with(rows: &[&str], pool: &ChunkPool) -> Arc<MutableSegment> {
        let m = Arc::new(MutableSegment::new(pool.clone()));
        for (i, r) in rows.iter().enumerate() {
            let g = m.begin_write().expect("not frozen");
            m.insert_row(&g, &[CellInput::put(r.as_bytes(), b"f", b"q", i as u64, b"value")], i as u64 + 1);
        }
        m
    }

    fn rows_of(seg: &Arc<Segment>) -> Vec<Vec<u8>> {
        let mut c = SegmentCursor::new(seg.clone());
        let mut out = Vec::new();
        while let Some(cell) = c.current() {
            out.push(cell.row().to_vec());
            c.advance();
        }
        out
    }

    /// A column of `hot_columns`: row, qualifier, versions.
    type HotColumn = (String, &'static [u8], usize);

    /// A store's shape after hot updates: rows whose columns hold from one
    /// to hundreds of versions (the empty qualifier too), and rows sharing
    /// their first eight bytes past the common ones (equal prefixes).
    fn hot_columns(pool: &ChunkPool) -> (Arc<Segment>, Vec<HotColumn>) {
        let columns: Vec<HotColumn> = vec![
            ("user0001".into(), b"a", 1),
            ("user0001".into(), b"b", 3),
            ("user0002xx".into(), b"", 40),
            ("user0002xx".into(), b"a", 15),
            ("user0002xx".into(), b"b", 16),
            ("user0002yy".into(), b"a", 300),
            ("user0002yy".into(), b"c", 17),
            ("user0003".into(), b"a", 2),
            ("user0004".into(), b"z", 64),
        ];
        let m = Arc::new(MutableSegment::new(pool.clone()));
        let mut seq = 0;
        for (row, qualifier, versions) in &columns {
            for ts in 0..*versions as u64 {
                seq += 1;
                let g = m.begin_write().expect("not frozen");
                m.insert_row(&g, &[CellInput::put(row.as_bytes(), b"f", qualifier, 1000 + ts, b"v")], seq);
            }
        }
        m.freeze();
        (Arc::new(Segment::from_active(1, m)), columns)
    }

    /// The long-column table lists exactly the columns of at least
    /// `LONG_COLUMN` cells, whether the index was built from sorted cells
    /// (a flatten, a compaction) or written entry by entry (a merge), and
    /// its bytes are charged as index bytes.
    #[test]
    fn a_chunk_index_lists_its_long_columns_however_it_is_built() {
        use crate::cell_chunk_index::{CellChunkIndexBuilder, LONG_COLUMN};
        use crate::sorted_runs::Sink;
        let pool = ChunkPool::new(16);
        let (skip, columns) = hot_columns(&pool);
        let mut expected = Vec::new();
        let mut at = 0;
        for (_, _, versions) in &columns {
            if *versions >= LONG_COLUMN {
                expected.push((at, at + versions));
            }
            at += versions;
        }
        assert_eq!(expected.len(), 5, "the empty qualifier's 40, 16, 300, 17 and 64 versions; not 15");
        let ends = |index: &CellChunkIndex| -> Vec<(usize, usize)> {
            let mut found = Vec::new();
            let mut i = 0;
            while i < index.len() {
                match index.long_column_end(i) {
                    Some(end) => {
                        found.push((i, end));
                        i = end;
                    }
                    None => i += 1,
                }
            }
            found
        };
        let flat = Segment::flat(2, IndexLayout::CellChunk, skip.cell_ptrs(), skip.data_chunks(), &pool, false);
        let built = flat.chunk_index().expect("a chunk index");
        assert_eq!(ends(built), expected, "built from sorted cells");
        assert_eq!(built.long_column_bytes(), 8 * expected.len());
        assert_eq!(flat.stats().index_size, (16 * at + 8 * expected.len()) as u64);
        assert_eq!(flat.index_heap_bytes(), 8 * expected.len() as u64);
        // Written as a merge writes: single entries and slices, the slices
        // cutting through long columns.
        let locator = ChunkLocator::new(&skip.data_chunks());
        let skip_bytes = built.common().len();
        // SAFETY: the pointers are the segment's cells, in its chunks.
        let entries = unsafe { CellChunkIndex::entries_of_sorted(&skip.cell_ptrs(), skip_bytes, &locator) };
        let mut builder = CellChunkIndexBuilder::new(&pool);
        let mut rest = &entries[..];
        let mut n = 1;
        while !rest.is_empty() {
            let k = n.min(rest.len());
            if k == 1 {
                builder.push(rest[0]);
            } else {
                builder.extend_from_slice(&rest[..k]);
            }
            rest = &rest[k..];
            n = n * 3 % 37 + 1;
        }
        let merged = builder.finish(built.common().into());
        assert_eq!(ends(&merged), expected, "written entry by entry");
    }

    /// A reseek from any position, in or before a long column, lands where
    /// a full search does, for every key a reader asks (a row's start, a
    /// column's start and end, versions inside and past a column): in a
    /// cell-chunk segment (its long-column table) and in the skiplist it
    /// was flattened from.
    #[test]
    fn a_reseek_past_long_columns_lands_where_a_full_search_does() {
        let pool = ChunkPool::new(16);
        let (skip, columns) = hot_columns(&pool);
        let flat =
            Arc::new(Segment::flat(2, IndexLayout::CellChunk, skip.cell_ptrs(), skip.data_chunks(), &pool, false));
        let mut keys = vec![CellKey::first_on_row(b"user0000"), CellKey::first_on_row(b"user0005")];
        for (row, qualifier, versions) in &columns {
            keys.push(CellKey::first_on_row(row.as_bytes()));
            keys.push(CellKey::first_on_column(row.as_bytes(), b"f", qualifier));
            keys.push(CellKey::last_on_column(row.as_bytes(), b"f", qualifier));
            // A version in the middle, the last two and one older than all.
            for ts in [1000 + (*versions as u64) / 2, 1001, 1000, 999] {
                let mut version = CellKey::first_on_column(row.as_bytes(), b"f", qualifier);
                version.timestamp = ts;
                keys.push(version);
            }
        }
        let cells = skip.cell_ptrs();
        for segment in [&skip, &flat] {
            for key in &keys {
                let want =
                    cells.partition_point(|&p| unsafe { CellRef::from_ptr(p) }.compare_key(key) == Ordering::Less);
                let mut c = SegmentCursor::new(segment.clone());
                for from in 0..=want {
                    let mut r = SegmentCursor::new(segment.clone());
                    r.pos = c.pos;
                    r.node = c.node;
                    r.reseek(key);
                    let got = r.current().map(|cell| cell.encoded().as_ptr());
                    assert_eq!(got, cells.get(want).copied(), "{:?}: {key:?} from {from}", segment.layout());
                    c.advance();
                }
            }
        }
    }

    #[test]
    fn flattening_keeps_order_stats_and_seek_in_both_layouts() {
        let pool = ChunkPool::new(8);
        let active = active_with(&["d", "b", "a", "c", "b"], &pool);
        active.freeze();
        let skip = Arc::new(Segment::from_active(1, active.clone()));
        let expected = rows_of(&skip);
        assert_eq!(expected, [b"a".to_vec(), b"b".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]);
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            let flat = Arc::new(Segment::flat(2, layout, skip.cell_ptrs(), skip.data_chunks(), &pool, true));
            assert_eq!(flat.layout(), layout);
            assert_eq!(rows_of(&flat), expected);
            let (a, b) = (skip.stats(), flat.stats());
            assert_eq!((a.data_size, a.cells, a.min_seq, a.max_seq), (b.data_size, b.cells, b.min_seq, b.max_seq));
            let (entries, held) =
                if layout == IndexLayout::CellChunk { (16 * 5, INDEX_CHUNK_SIZE as u64) } else { (8 * 5, 8 * 5) };
            assert_eq!(b.index_size, entries, "{layout:?}");
            assert_eq!(flat.index_held_bytes(), held, "{layout:?}");
            assert_eq!(b.unique_keys, Some(4), "two writes of b:f:q are one key");
            let mut c = SegmentCursor::new(flat.clone());
            c.seek(&CellKey::first_on_row(b"c"));
            assert_eq!(c.current().expect("c exists").row(), b"c");
            assert_eq!(c.peek_before(&CellKey::first_on_row(b"c")).expect("b before c").row(), b"b");
            assert_eq!(c.peek_last().expect("non-empty").row(), b"d");
        }
        assert!(skip.stats().index_size >= 5 * 16, "skiplist nodes are at least 16 bytes");
    }

    /// A cell-chunk index decides probes by row prefix where they differ;
    /// every seek and reseek must still land where a full comparison of the
    /// cells does — rows that are prefixes of one another, rows with zero
    /// bytes (which pad like absent bytes), rows longer than the prefix,
    /// and keys before, inside and after the segment's common bytes.
    #[test]
    fn row_prefixes_in_the_chunk_index_order_as_the_rows_do() {
        let zeros = |n: usize| format!("user{}", "\0".repeat(n));
        let mut sets: Vec<Vec<String>> = vec![
            [
                "user",
                "user1",
                "user12345678",
                "user123456780",
                "user12345678\0",
                "user123456789",
                "user2",
                "user\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}z",
            ]
            .map(String::from)
            .to_vec(),
            ["a", "a\0", "b", "b\0\0", "ba"].map(String::from).to_vec(),
        ];
        sets[0].extend([zeros(1), zeros(8), zeros(9)]);
        for rows in sets {
            let pool = ChunkPool::new(8);
            let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
            let active = active_with(&refs, &pool);
            active.freeze();
            let skip = Arc::new(Segment::from_active(1, active));
            let flat =
                Arc::new(Segment::flat(2, IndexLayout::CellChunk, skip.cell_ptrs(), skip.data_chunks(), &pool, false));
            let sorted = skip.cell_ptrs();
            // SAFETY: the skiplist segment holds its cells.
            let full = |key: &CellKey<'_>| {
                sorted.partition_point(|&p| unsafe { CellRef::from_ptr(p) }.compare_key(key) == Ordering::Less)
            };
            let mut probes: Vec<String> = rows.clone();
            probes.extend(["", "a", "us", "use", "usea", "user", "uses", "v", "b\0", "c"].map(String::from));
            probes.extend([zeros(2), zeros(7), zeros(10), "user12345677".into(), "user1234567800".into()]);
            for row in &probes {
                for key in [CellKey::first_on_row(row.as_bytes()), CellKey::last_on_column(row.as_bytes(), b"f", b"q")]
                {
                    let want = full(&key);
                    let mut c = SegmentCursor::new(flat.clone());
                    c.seek(&key);
                    let got = c.current().map(|cell| cell.encoded().as_ptr());
                    assert_eq!(got, sorted.get(want).copied(), "seek {row:?} in {rows:?}");
                    for from in 0..=want {
                        let mut c = SegmentCursor::new(flat.clone());
                        (0..from).for_each(|_| c.advance());
                        c.reseek(&key);
                        let got = c.current().map(|cell| cell.encoded().as_ptr());
                        assert_eq!(got, sorted.get(want).copied(), "reseek {row:?} from {from} in {rows:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_half_full_index_chunk_is_held_whole() {
        let pool = ChunkPool::new(64);
        // Half a chunk of 16-byte entries.
        let cells = INDEX_CHUNK_SIZE / 32;
        let active = Arc::new(MutableSegment::new(pool.clone()));
        for i in 0..cells {
            let g = active.begin_write().expect("not frozen");
            let row = format!("row{i:08}");
            active.insert_row(&g, &[CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v")], i as u64 + 1);
        }
        active.freeze();
        let skip = Arc::new(Segment::from_active(1, active));
        let nodes = skip.stats().index_size;
        assert!(skip.index_held_bytes() >= nodes, "the arena holds at least its nodes");
        let head = (crate::skiplist::HEAD_WORDS * 8) as u64;
        assert_eq!((skip.index_held_bytes() - head) % CHUNK_SIZE as u64, 0, "whole arena chunks plus the head");

        let chunk = Segment::flat(2, IndexLayout::CellChunk, skip.cell_ptrs(), skip.data_chunks(), &pool, false);
        assert_eq!(chunk.stats().index_size, (INDEX_CHUNK_SIZE / 2) as u64, "accounting charges the entries");
        assert_eq!(chunk.index_held_bytes(), INDEX_CHUNK_SIZE as u64, "the index holds its whole chunk");
        let st = chunk.stats();
        assert_eq!(st.heap_size(), st.data_size + (INDEX_CHUNK_SIZE / 2) as u64 + SEGMENT_OVERHEAD);

        let array = Segment::flat(3, IndexLayout::CellArray, skip.cell_ptrs(), skip.data_chunks(), &pool, false);
        assert_eq!(array.index_held_bytes(), (cells * 8) as u64, "a boxed array holds exactly its entries");
        assert_eq!(array.stats().index_size, array.index_held_bytes());
    }

    #[test]
    fn empty_segment_has_zero_heap_size() {
        let pool = ChunkPool::new(1);
        let seg = Segment::from_active(1, Arc::new(MutableSegment::new(pool.clone())));
        assert_eq!(seg.stats().heap_size(), 0);
        assert_eq!(pool.stats().in_use, 0, "an empty active segment holds no chunk");
    }
}
