//! `MemStoreLab`: a segment's concurrent bump allocator over pooled chunks
//! (HBase's MSLAB). Cell bytes of a segment are copied into its data lab; the
//! active skiplist's nodes live in a second lab of their own, so that
//! flattening a segment gives the node memory back to the pool.
//!
//! A lab may start in its predecessor's last chunk
//! ([`continuing`](MemStoreLab::continuing)): an in-memory flush happens at
//! A × the flush size (0.64 MiB in the paper's shape), far below a 2 MiB
//! chunk, so a fresh chunk per active segment left two thirds of every data
//! chunk (and nearly all of every node chunk) empty — measured, basic held
//! 3× its cell bytes. The two labs then share that chunk; it goes back to
//! the pool when the last of them (and of their readers) lets go. The new
//! lab holds only a weak reference until its first allocation: a lab that
//! never allocates keeps nothing alive (an empty memstore holds nothing),
//! and if the predecessor's segment is gone by then, so is the chunk.
//!
//! Invariants:
//! - Every chunk the lab ever handed memory from is in `chunks` and stays
//!   referenced until the lab is dropped; `current`, when non-null, points at
//!   the `Chunk` inside the last regular `ChunkRef` of `chunks`.
//! - `held` counts the chunks this lab took from the pool, not the one it
//!   continued in (its predecessor took that one): summing `held` over labs
//!   counts a shared chunk once. Whoever counts a chunk a lab continued in
//!   after its predecessor is gone asks [`inherited`](MemStoreLab::inherited),
//!   which names it from the allocation that took it on (`inherited_id` is
//!   published after `inherited_capacity`, with release ordering).
//! - Allocations never overlap and never move, also between two labs in one
//!   chunk: both bump the chunk's own atomic cursor.
//!
//! Thread safety: `alloc` is lock-free in the common case (an atomic bump in
//! the current chunk); the mutex is taken only to install a new chunk (once
//! per 2 MiB) or to record a jumbo chunk.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::chunk::{CHUNK_SIZE, Chunk, ChunkId, ChunkRef, JUMBO_CELL_THRESHOLD};
use crate::chunk_pool::ChunkPool;

pub struct MemStoreLab {
    pool: ChunkPool,
    current: AtomicPtr<Chunk>,
    chunks: Mutex<Vec<ChunkRef>>,
    allocated: AtomicUsize,
    /// Capacity of every chunk in `chunks` but the inherited one: what the
    /// lab took, read without the mutex by memory accounting on every write.
    held: AtomicUsize,
    /// The predecessor's chunk this lab may start in, until the first
    /// allocation takes it on (or finds it gone). Locked only under `chunks`.
    pending: Mutex<Option<Weak<Chunk>>>,
    /// The predecessor's chunk this lab did start in (0: none; ids start
    /// at 1) and its capacity.
    inherited_id: AtomicU32,
    inherited_capacity: AtomicUsize,
}

/// A lab continues in its predecessor's chunk only if at least this much of
/// it is free; a fuller chunk is not worth the sharing.
const MIN_CONTINUED_ROOM: usize = 16 * 1024;

impl MemStoreLab {
    /// An empty lab; it takes no chunk until the first allocation.
    pub fn new(pool: ChunkPool) -> MemStoreLab {
        MemStoreLab {
            pool,
            current: AtomicPtr::new(std::ptr::null_mut()),
            chunks: Mutex::new(Vec::new()),
            allocated: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            pending: Mutex::new(None),
            inherited_id: AtomicU32::new(0),
            inherited_capacity: AtomicUsize::new(0),
        }
    }

    /// An empty lab that allocates in `prev`'s current chunk until it is
    /// full, then takes chunks from `pool`. `prev` belongs to a segment
    /// that takes no new writer (writers still in it may go on allocating
    /// in the shared chunk: the chunk's bump pointer keeps them apart).
    pub fn continuing(pool: ChunkPool, prev: &MemStoreLab) -> MemStoreLab {
        let lab = MemStoreLab::new(pool);
        let chunks = prev.chunks.lock();
        let cur = prev.current.load(Ordering::Acquire);
        if let Some(chunk) = chunks.iter().rev().find(|c| std::ptr::eq(ChunkRef::as_ptr(c), cur))
            && chunk.capacity() - chunk.used() >= MIN_CONTINUED_ROOM
        {
            *lab.pending.lock() = Some(Arc::downgrade(chunk));
        }
        lab
    }

    /// The chunk this lab continued in, once an allocation took it on: id
    /// and capacity.
    pub fn inherited(&self) -> Option<(ChunkId, usize)> {
        let id = self.inherited_id.load(Ordering::Acquire);
        (id != 0).then(|| (id, self.inherited_capacity.load(Ordering::Relaxed)))
    }

    /// The next chunk to allocate in (under `chunks`): the predecessor's,
    /// if it is alive and has room, else a fresh one from the pool.
    fn next_chunk(&self) -> ChunkRef {
        let inherited = self.pending.lock().take().and_then(|w| w.upgrade());
        if let Some(chunk) = inherited
            && chunk.capacity() - chunk.used() >= MIN_CONTINUED_ROOM
        {
            self.inherited_capacity.store(chunk.capacity(), Ordering::Relaxed);
            self.inherited_id.store(chunk.id(), Ordering::Release);
            return chunk;
        }
        let chunk = self.pool.get();
        self.held.fetch_add(chunk.capacity(), Ordering::Relaxed);
        chunk
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
            let chunk = self.next_chunk();
            self.current.store(ChunkRef::as_ptr(&chunk) as *mut Chunk, Ordering::Release);
            chunks.push(chunk);
        }
    }

    /// References to every chunk this lab has used.
    pub fn chunks(&self) -> Vec<ChunkRef> {
        self.chunks.lock().clone()
    }

    /// Calls `f` with the id and capacity of every chunk held, under the
    /// lab's mutex (no reference is cloned).
    pub fn visit_chunks(&self, mut f: impl FnMut(ChunkId, usize)) {
        for c in self.chunks.lock().iter() {
            f(c.id(), c.capacity());
        }
    }

    /// Number of chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.lock().len()
    }

    /// Bytes of memory the lab took: every chunk it took from the pool,
    /// whole, at its capacity (the chunks' own sizes, summed as they are
    /// taken), not the one it continued in.
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

    #[test]
    fn a_continuing_lab_fills_its_predecessors_chunk_and_counts_only_what_it_took() {
        // In pieces below the jumbo threshold.
        let fill = |lab: &MemStoreLab, bytes: usize| {
            let piece = 64 * 1024;
            (0..bytes / piece).map(|_| lab.alloc(piece, 1).as_ptr() as usize).collect::<Vec<_>>()
        };
        let pool = ChunkPool::new(8);
        let first = MemStoreLab::new(pool.clone());
        let a = fill(&first, CHUNK_SIZE / 4);
        let second = MemStoreLab::continuing(pool.clone(), &first);
        let b = fill(&second, CHUNK_SIZE / 4);
        assert_eq!(pool.stats().in_use, 1, "one chunk for both");
        assert!(b[0] >= a[a.len() - 1] + 64 * 1024, "no overlap");
        assert_eq!((first.held_bytes(), second.held_bytes()), (CHUNK_SIZE, 0), "the shared chunk counted once");
        assert_eq!(second.inherited().map(|(_, cap)| cap), Some(CHUNK_SIZE));
        // Until it allocates, a continuing lab keeps nothing alive.
        let idle = MemStoreLab::continuing(pool.clone(), &second);
        assert_eq!((idle.chunk_count(), idle.inherited()), (0, None));
        drop(first);
        assert_eq!(pool.stats().in_use, 1, "the successor keeps the shared chunk");
        fill(&second, CHUNK_SIZE / 2 + 64 * 1024);
        assert_eq!((pool.stats().in_use, second.held_bytes()), (2, CHUNK_SIZE), "past it, a chunk of its own");
        drop(second);
        assert_eq!(pool.stats().in_use, 0);
        // A nearly full chunk is not continued in; an unused lab has none.
        let full = MemStoreLab::new(pool.clone());
        fill(&full, CHUNK_SIZE);
        assert_eq!(full.chunk_count(), 1);
        assert_eq!(MemStoreLab::continuing(pool.clone(), &full).inherited(), None);
        let unused = MemStoreLab::new(pool.clone());
        assert_eq!(MemStoreLab::continuing(pool, &unused).chunk_count(), 0);
    }
}
