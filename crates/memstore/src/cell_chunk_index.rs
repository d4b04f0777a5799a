//! `CellChunkIndex`: a flat segment's index as fixed-size entries stored
//! inside pooled chunks (HBase's CellChunkMap). An entry is 8 bytes — chunk
//! id (u32) and offset (u32) of the cell — against HBase's 20: the sequence
//! id and length live in the cell's own encoding, so the entry only locates.
//!
//! Invariants: entries are strictly increasing in cell order; every chunk id
//! in an entry is one of the segment's data chunks, which the segment keeps
//! referenced, so the id resolves through the chunk table for the index's
//! whole life.
//!
//! Size: the entries fill whole index chunks from the pool
//! ([`INDEX_CHUNK_SIZE`], 128 KiB, 16 K entries: smaller than data chunks,
//! as HBase's index chunks are), so the index *holds*
//! `⌈cells / entries per chunk⌉ × index chunk size` bytes
//! ([`held_bytes`](CellChunkIndex::held_bytes)) while it *uses*
//! `8 × cells` ([`entry_bytes`](CellChunkIndex::entry_bytes)); a small
//! segment's index wastes most of its one chunk. Memstore heap accounting
//! charges the entries, as HBase charges `CELL_CHUNK_MAP_ENTRY` per cell and
//! not its index chunks; held accounting, which the global memstore limit
//! uses, charges the chunks (see `segment.rs`).
//!
//! Thread safety: immutable after construction; shared freely.

use std::cmp::Ordering;

use crate::cell::{CellKey, CellRef};
use crate::chunk::{CHUNK_TABLE, ChunkId, ChunkRef, INDEX_CHUNK_SIZE};
use crate::chunk_pool::ChunkPool;

const ENTRY_BYTES: usize = 8;
const ENTRIES_PER_CHUNK: usize = INDEX_CHUNK_SIZE / ENTRY_BYTES;

pub struct CellChunkIndex {
    index_chunks: Vec<ChunkRef>,
    len: usize,
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
        let mut index_chunks: Vec<ChunkRef> = Vec::with_capacity(cells.len().div_ceil(ENTRIES_PER_CHUNK));
        for group in cells.chunks(ENTRIES_PER_CHUNK) {
            let chunk = pool.get_index();
            let dst = chunk.alloc(group.len() * ENTRY_BYTES, ENTRY_BYTES).expect("entries fit a chunk");
            // SAFETY: `dst` is a fresh, aligned allocation of group.len() entries.
            let entries = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr() as *mut u64, group.len()) };
            for (e, &p) in entries.iter_mut().zip(group) {
                let (id, off) = locator.locate(p);
                *e = (u64::from(id) << 32) | u64::from(off);
            }
            index_chunks.push(chunk);
        }
        CellChunkIndex { index_chunks, len: cells.len() }
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
    fn entry(&self, i: usize) -> u64 {
        let chunk = &self.index_chunks[i / ENTRIES_PER_CHUNK];
        // SAFETY: entries were written at construction at this aligned slot.
        unsafe { *(chunk.base() as *const u64).add(i % ENTRIES_PER_CHUNK) }
    }

    #[inline]
    pub fn cell_ptr(&self, i: usize) -> *const u8 {
        let e = self.entry(i);
        let base = CHUNK_TABLE.base((e >> 32) as ChunkId);
        debug_assert!(!base.is_null(), "data chunk of a live segment was released");
        // SAFETY: the offset lies within the referenced, live chunk.
        unsafe { base.add((e & 0xFFFF_FFFF) as usize) }
    }

    /// Position of the first cell >= `key` (len if none).
    pub fn lower_bound(&self, key: &CellKey<'_>) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // SAFETY: entries point at live encoded cells (invariant).
            if unsafe { CellRef::from_ptr(self.cell_ptr(mid)) }.compare_key(key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}
