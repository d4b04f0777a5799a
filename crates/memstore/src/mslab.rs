//! `MemStoreLab`: a segment's concurrent bump allocator over pooled chunks
//! (HBase's MSLAB). Cell bytes of a segment are copied into its data lab; the
//! active skiplist's nodes live in a second lab of their own, so that
//! flattening a segment gives the node memory back to the pool.
//!
//! Invariants:
//! - Every chunk the lab ever handed memory from is in `chunks` and stays
//!   referenced until the lab is dropped; `current`, when non-null, points at
//!   the `Chunk` inside the last regular `ChunkRef` of `chunks`.
//! - Allocations never overlap and never move.
//!
//! Thread safety: `alloc` is lock-free in the common case (an atomic bump in
//! the current chunk); the mutex is taken only to install a new chunk (once
//! per 2 MiB) or to record a jumbo chunk.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::chunk::{CHUNK_SIZE, Chunk, ChunkRef, JUMBO_CELL_THRESHOLD};
use crate::chunk_pool::ChunkPool;

pub struct MemStoreLab {
    pool: ChunkPool,
    current: AtomicPtr<Chunk>,
    chunks: Mutex<Vec<ChunkRef>>,
    allocated: AtomicUsize,
    /// Capacity of every chunk in `chunks`: what the lab holds, read
    /// without the mutex by memory accounting on every write.
    held: AtomicUsize,
}

impl MemStoreLab {
    /// An empty lab; it takes no chunk until the first allocation.
    pub fn new(pool: ChunkPool) -> MemStoreLab {
        MemStoreLab {
            pool,
            current: AtomicPtr::new(std::ptr::null_mut()),
            chunks: Mutex::new(Vec::new()),
            allocated: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
        }
    }

    /// Reserves `size` bytes aligned to `align`. Requests above the jumbo
    /// threshold get a dedicated chunk.
    pub fn alloc(&self, size: usize, align: usize) -> NonNull<u8> {
        self.allocated.fetch_add(size, Ordering::Relaxed);
        if size > JUMBO_CELL_THRESHOLD {
            let chunk = self.pool.get_jumbo(size);
            let ptr = chunk.alloc(size, 1).expect("jumbo chunk is sized for its cell");
            self.held.fetch_add(chunk.capacity(), Ordering::Relaxed);
            self.chunks.lock().push(chunk);
            return ptr;
        }
        debug_assert!(size + align <= CHUNK_SIZE);
        loop {
            let cur = self.current.load(Ordering::Acquire);
            if !cur.is_null() {
                // SAFETY: `current` points into a ChunkRef held by `chunks`,
                // which lives as long as `self`.
                if let Some(p) = unsafe { &*cur }.alloc(size, align) {
                    return p;
                }
            }
            let mut chunks = self.chunks.lock();
            if self.current.load(Ordering::Acquire) != cur {
                continue; // another thread installed a fresh chunk
            }
            let chunk = self.pool.get();
            self.current.store(ChunkRef::as_ptr(&chunk) as *mut Chunk, Ordering::Release);
            self.held.fetch_add(chunk.capacity(), Ordering::Relaxed);
            chunks.push(chunk);
        }
    }

    /// References to every chunk this lab has used.
    pub fn chunks(&self) -> Vec<ChunkRef> {
        self.chunks.lock().clone()
    }

    /// Calls `f` with the id and capacity of every chunk held, under the
    /// lab's mutex (no reference is cloned).
    pub fn visit_chunks(&self, mut f: impl FnMut(crate::chunk::ChunkId, usize)) {
        for c in self.chunks.lock().iter() {
            f(c.id(), c.capacity());
        }
    }

    /// Number of chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.lock().len()
    }

    /// Bytes of memory the lab holds: every chunk it took, whole, at its
    /// capacity (a measured figure: the chunks' own sizes, summed as they
    /// are taken).
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Bytes requested so far (excluding alignment padding and chunk tails).
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_spill_into_new_chunks_and_jumbo_cells_get_their_own() {
        let pool = ChunkPool::new(8);
        let lab = MemStoreLab::new(pool.clone());
        assert_eq!(lab.chunk_count(), 0, "an unused lab holds no chunk");
        // 11 × 200 KiB does not fit one 2 MiB chunk.
        for _ in 0..11 {
            lab.alloc(200 * 1024, 1);
        }
        assert_eq!(lab.chunk_count(), 2);
        lab.alloc(JUMBO_CELL_THRESHOLD + 1, 1);
        assert_eq!(lab.chunk_count(), 3);
        assert_eq!(lab.held_bytes(), 2 * CHUNK_SIZE + JUMBO_CELL_THRESHOLD + 1, "whole chunks, at capacity");
        assert_eq!(pool.stats().jumbo_created, 1);
        drop(lab);
        let s = pool.stats();
        assert_eq!((s.in_use, s.idle), (0, 2));
    }
}
