//! `CellChunkIndex`: a flat segment's index as fixed-size entries stored
//! inside pooled chunks (HBase's CellChunkMap). An entry is 16 bytes: eight
//! bytes of the cell's row (its *row prefix*, below) and the chunk id (u32)
//! and offset (u32) of the cell — against HBase's 20 (chunk id, offset,
//! length, sequence id): the length and sequence id live in the cell's own
//! encoding, so the entry only locates and orders.
//!
//! Row prefix: the rows of a segment share the leading bytes its first and
//! last rows share (`common`, often a table's key prefix such as YCSB's
//! `user`); an entry keeps the eight row bytes after them, zero padded, as a
//! big-endian integer. Zero-padded prefixes order as the rows do whenever
//! they differ (a shorter row that is a prefix of a longer one pads to at
//! most the longer's bytes), so a binary-search probe whose prefix differs
//! from the search key's is decided from the entry alone; only equal
//! prefixes read the cell. Why: a probe that reads the cell costs three
//! cache misses (the entry, the chunk table, the cell); the reader of the
//! mixed workload spent a quarter of each get in these searches
//! (`bench-results/issue28-mixed-scale1/profile-reader-adaptive-64k.txt`).
//!
//! Invariants: entries are strictly increasing in cell order; every row
//! starts with `common`; every chunk id in an entry is one of the segment's
//! data chunks, which the segment keeps referenced, so the id resolves
//! through the chunk table for the index's whole life.
//!
//! Size: the entries fill whole index chunks from the pool
//! ([`INDEX_CHUNK_SIZE`], 128 KiB, 8 K entries: smaller than data chunks,
//! as HBase's index chunks are), so the index *holds*
//! `⌈cells / entries per chunk⌉ × index chunk size` bytes
//! ([`held_bytes`](CellChunkIndex::held_bytes)) while it *uses*
//! `16 × cells` ([`entry_bytes`](CellChunkIndex::entry_bytes)); a small
//! segment's index wastes most of its one chunk. Memstore heap accounting
//! charges the entries, as HBase charges `CELL_CHUNK_MAP_ENTRY` per cell and
//! not its index chunks; held accounting, which the global memstore limit
//! uses, charges the chunks (see `segment.rs`).
//!
//! Thread safety: immutable after construction; shared freely.

use std::cmp::Ordering;

use crate::cell::{CellKey, CellRef, compare_bytes, row_prefix};
use crate::chunk::{CHUNK_TABLE, ChunkId, ChunkRef, INDEX_CHUNK_SIZE};
use crate::chunk_pool::ChunkPool;

/// One entry: the row prefix, then chunk id << 32 | offset.
type Entry = [u64; 2];
const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
const ENTRIES_PER_CHUNK: usize = INDEX_CHUNK_SIZE / ENTRY_BYTES;

pub struct CellChunkIndex {
    index_chunks: Vec<ChunkRef>,
    len: usize,
    /// The leading row bytes every cell's row has.
    common: Box<[u8]>,
}

/// Where a search key stands against a segment's row prefixes.
#[derive(Clone, Copy)]
pub enum KeyProbe {
    /// The key's row sorts before every row of the segment.
    BeforeAll,
    /// The key's row sorts after every row of the segment.
    AfterAll,
    /// The key's row starts with the common bytes; its prefix after them.
    Prefix(u64),
}

/// Maps a cell pointer back to (chunk id, offset) over a segment's chunks.
pub struct ChunkLocator {
    ranges: Vec<(usize, usize, ChunkId)>,
}

impl ChunkLocator {
    pub fn new(chunks: &[ChunkRef]) -> ChunkLocator {
        let mut ranges: Vec<_> = chunks.iter().map(|c| (c.base() as usize, c.capacity(), c.id())).collect();
        ranges.sort_unstable();
        ChunkLocator { ranges }
    }

    /// The chunk id and offset of `ptr`, which must lie in one of the chunks.
    #[inline]
    pub fn locate(&self, ptr: *const u8) -> (ChunkId, u32) {
        let p = ptr as usize;
        let i = self.ranges.partition_point(|&(base, _, _)| base <= p) - 1;
        let (base, len, id) = self.ranges[i];
        debug_assert!(p < base + len, "cell pointer outside the segment's chunks");
        (id, (p - base) as u32)
    }
}

impl CellChunkIndex {
    /// Builds from sorted cell pointers, storing entries in chunks from `pool`.
    pub fn from_sorted(cells: &[*const u8], locator: &ChunkLocator, pool: &ChunkPool) -> CellChunkIndex {
        // SAFETY (all cell reads here): the pointers are live encoded cells
        // in the segment's chunks (the caller's contract, as for `locate`).
        let row = |p: *const u8| unsafe { CellRef::from_ptr(p) }.row();
        let common: Box<[u8]> = match (cells.first(), cells.last()) {
            (Some(&first), Some(&last)) => {
                let (a, b) = (row(first), row(last));
                let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                a[..n].into()
            }
            _ => Box::default(),
        };
        let mut index_chunks: Vec<ChunkRef> = Vec::with_capacity(cells.len().div_ceil(ENTRIES_PER_CHUNK));
        for group in cells.chunks(ENTRIES_PER_CHUNK) {
            let chunk = pool.get_index();
            let dst = chunk.alloc(group.len() * ENTRY_BYTES, ENTRY_BYTES).expect("entries fit a chunk");
            // SAFETY: `dst` is a fresh, aligned allocation of group.len() entries.
            let entries = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr() as *mut Entry, group.len()) };
            for (e, &p) in entries.iter_mut().zip(group) {
                let (id, off) = locator.locate(p);
                *e = [row_prefix(row(p), common.len()), (u64::from(id) << 32) | u64::from(off)];
            }
            index_chunks.push(chunk);
        }
        CellChunkIndex { index_chunks, len: cells.len(), common }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of index entries: what memstore heap accounting charges.
    pub fn entry_bytes(&self) -> usize {
        self.len * ENTRY_BYTES
    }

    /// Bytes the index actually holds: every chunk it took from the pool,
    /// whole, however few entries its last chunk has.
    pub fn held_bytes(&self) -> usize {
        self.index_chunks.iter().map(|c| c.capacity()).sum()
    }

    /// Calls `f` with the id and capacity of every chunk holding entries.
    pub fn visit_chunks(&self, mut f: impl FnMut(ChunkId, usize)) {
        self.index_chunks.iter().for_each(|c| f(c.id(), c.capacity()));
    }

    /// Chunks holding the entries.
    pub fn index_chunk_count(&self) -> usize {
        self.index_chunks.len()
    }

    #[inline]
    fn entry(&self, i: usize) -> &Entry {
        let chunk = &self.index_chunks[i / ENTRIES_PER_CHUNK];
        // SAFETY: entries were written at construction at this aligned slot,
        // and the chunk lives as long as `self`.
        unsafe { &*(chunk.base() as *const Entry).add(i % ENTRIES_PER_CHUNK) }
    }

    #[inline]
    fn locate_cell(location: u64) -> *const u8 {
        let base = CHUNK_TABLE.base((location >> 32) as ChunkId);
        debug_assert!(!base.is_null(), "data chunk of a live segment was released");
        // SAFETY: the offset lies within the referenced, live chunk.
        unsafe { base.add((location & 0xFFFF_FFFF) as usize) }
    }

    #[inline]
    pub fn cell_ptr(&self, i: usize) -> *const u8 {
        Self::locate_cell(self.entry(i)[1])
    }

    /// Where `key` stands against this segment's row prefixes; computed
    /// once per search and passed to [`is_below`](Self::is_below).
    #[inline]
    pub fn probe(&self, key: &CellKey<'_>) -> KeyProbe {
        let c = &self.common;
        let n = c.len().min(key.row.len());
        match compare_bytes(&key.row[..n], &c[..n]) {
            // A key row that is a proper prefix of `common` sorts first too.
            Ordering::Less => KeyProbe::BeforeAll,
            Ordering::Equal if n < c.len() => KeyProbe::BeforeAll,
            Ordering::Equal => KeyProbe::Prefix(row_prefix(key.row, c.len())),
            Ordering::Greater => KeyProbe::AfterAll,
        }
    }

    /// Whether the cell at `i` sorts before `key` (whose probe is `probe`).
    #[inline]
    pub fn is_below(&self, i: usize, probe: KeyProbe, key: &CellKey<'_>) -> bool {
        let [prefix, location] = *self.entry(i);
        match probe {
            KeyProbe::BeforeAll => false,
            KeyProbe::AfterAll => true,
            KeyProbe::Prefix(p) if prefix != p => prefix < p,
            // SAFETY: entries point at live encoded cells (invariant).
            KeyProbe::Prefix(_) => {
                unsafe { CellRef::from_ptr(Self::locate_cell(location)) }.compare_key(key) == Ordering::Less
            }
        }
    }

    /// Position of the first cell >= `key` (len if none).
    pub fn lower_bound(&self, key: &CellKey<'_>) -> usize {
        let probe = self.probe(key);
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.is_below(mid, probe, key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}
