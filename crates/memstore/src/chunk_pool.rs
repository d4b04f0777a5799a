//! The chunk pool: hands out 2 MiB data chunks and 128 KiB index chunks
//! and takes them back when their last reference drops, so that
//! steady-state writing allocates no memory.
//!
//! Invariants:
//! - A chunk in a free list has no [`ChunkRef`](crate::chunk::ChunkRef)
//!   anywhere: it is only pushed there by `Chunk::drop`. Each size has its
//!   own free list; a chunk goes back to the list of its size.
//! - Jumbo chunks (one oversized cell each) are never pooled, whatever their
//!   size; they are freed when released. Idle chunks are kept while their
//!   bytes stay within `max_pooled` data chunks' worth; any more are freed,
//!   and so are the idle ones when the pool itself goes (every chunk in use
//!   holds the pool alive).
//! - While budgets are registered ([`ChunkPool::register_budget`]: each
//!   store registers its global memstore limit), idle chunks are kept only
//!   while in-use plus idle bytes stay within their sum: what the pool holds
//!   is then at most the larger of that sum and the bytes in use, so a pool
//!   cannot keep idle chunks of one size while chunks of the other are
//!   allocated beside them past the budget. (Measured on paper-write-zipf,
//!   issue 28: without it, a pool of 168 MB for a 157 MB budget, 49 MB of
//!   it idle, at the process's peak RSS.)
//!
//! Thread safety: all methods take `&self`; the free lists are behind one
//! mutex that is touched once per chunk (every 2 MiB of cells, or 16 K
//! index entries), never per cell.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::chunk::{CHUNK_SIZE, Chunk, ChunkMemory, ChunkRef, INDEX_CHUNK_SIZE, Recycler};

/// Counters of a pool's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkPoolStats {
    /// Regular chunks allocated from the system.
    pub created: u64,
    /// Chunks handed out again from the free list.
    pub reused: u64,
    /// Chunks returned to the free list.
    pub recycled: u64,
    /// Chunks (regular or jumbo) given back to the system.
    pub freed: u64,
    /// Jumbo chunks allocated.
    pub jumbo_created: u64,
    /// Chunks currently referenced by someone.
    pub in_use: u64,
    /// Chunks idle in the free list.
    pub idle: u64,
    /// Bytes of the chunks in use (their capacities; jumbo chunks at their
    /// own size).
    pub in_use_bytes: u64,
    /// Bytes of the idle chunks.
    pub idle_bytes: u64,
}

/// The idle chunks, by size.
#[derive(Default)]
struct FreeLists {
    data: Vec<ChunkMemory>,
    index: Vec<ChunkMemory>,
}

impl FreeLists {
    fn bytes(&self) -> usize {
        self.data.len() * CHUNK_SIZE + self.index.len() * INDEX_CHUNK_SIZE
    }

    fn list(&mut self, len: usize) -> Option<&mut Vec<ChunkMemory>> {
        match len {
            CHUNK_SIZE => Some(&mut self.data),
            INDEX_CHUNK_SIZE => Some(&mut self.index),
            _ => None,
        }
    }
}

struct PoolShared {
    free: Mutex<FreeLists>,
    /// Idle bytes kept at most.
    max_pooled_bytes: usize,
    /// The registered budgets' sum (0: none registered, no bound): in-use
    /// plus idle bytes kept at most.
    budget_bytes: AtomicU64,
    created: AtomicU64,
    reused: AtomicU64,
    recycled: AtomicU64,
    freed: AtomicU64,
    jumbo_created: AtomicU64,
    in_use: AtomicU64,
    in_use_bytes: AtomicU64,
}

impl Recycler for PoolShared {
    fn recycle(&self, memory: ChunkMemory) {
        self.in_use.fetch_sub(1, Ordering::Relaxed);
        self.in_use_bytes.fetch_sub(memory.len as u64, Ordering::Relaxed);
        if !memory.jumbo {
            let mut free = self.free.lock();
            let idle_after = free.bytes() + memory.len;
            let room = idle_after <= self.max_pooled_bytes && self.within_budget(idle_after);
            if let (true, Some(list)) = (room, free.list(memory.len)) {
                list.push(memory);
                self.recycled.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        self.freed.fetch_add(1, Ordering::Relaxed);
        memory.free();
    }
}

impl PoolShared {
    /// Whether `idle` bytes beside those in use fit the budget.
    fn within_budget(&self, idle: usize) -> bool {
        let budget = self.budget_bytes.load(Ordering::Relaxed);
        budget == 0 || self.in_use_bytes.load(Ordering::Relaxed) + idle as u64 <= budget
    }

    /// Frees idle chunks of the other size than `len` (the caller is about
    /// to allocate a fresh `len` chunk) while the pool would be over budget.
    fn make_room_for(&self, free: &mut FreeLists, len: usize) {
        while !self.within_budget(free.bytes() + len) {
            let other = if len == CHUNK_SIZE { &mut free.index } else { &mut free.data };
            let Some(memory) = other.pop() else { return };
            self.freed.fetch_add(1, Ordering::Relaxed);
            memory.free();
        }
    }
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        // The last chunk in use holds the pool, so only idle chunks remain.
        let free = self.free.get_mut();
        for memory in free.data.drain(..).chain(free.index.drain(..)) {
            memory.free();
        }
    }
}

/// A pool of chunks; clones share the same pool.
#[derive(Clone)]
pub struct ChunkPool {
    shared: Arc<PoolShared>,
}

impl std::fmt::Debug for ChunkPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkPool").field("stats", &self.stats()).finish()
    }
}

impl ChunkPool {
    /// A pool keeping at most `max_pooled` data chunks' worth of idle
    /// chunks.
    pub fn new(max_pooled: usize) -> ChunkPool {
        ChunkPool {
            shared: Arc::new(PoolShared {
                free: Mutex::new(FreeLists::default()),
                max_pooled_bytes: max_pooled.saturating_mul(CHUNK_SIZE),
                budget_bytes: AtomicU64::new(0),
                created: AtomicU64::new(0),
                reused: AtomicU64::new(0),
                recycled: AtomicU64::new(0),
                freed: AtomicU64::new(0),
                jumbo_created: AtomicU64::new(0),
                in_use: AtomicU64::new(0),
                in_use_bytes: AtomicU64::new(0),
            }),
        }
    }

    /// The process-wide pool (keeps up to 4 GiB of idle chunks).
    pub fn global() -> ChunkPool {
        static GLOBAL: OnceLock<ChunkPool> = OnceLock::new();
        GLOBAL.get_or_init(|| ChunkPool::new(2048)).clone()
    }

    /// A regular (data) chunk, recycled if one is idle.
    pub fn get(&self) -> ChunkRef {
        self.get_sized(CHUNK_SIZE)
    }

    /// An index chunk ([`INDEX_CHUNK_SIZE`]), recycled if one is idle.
    pub fn get_index(&self) -> ChunkRef {
        self.get_sized(INDEX_CHUNK_SIZE)
    }

    fn get_sized(&self, len: usize) -> ChunkRef {
        let recycled = {
            let mut free = self.shared.free.lock();
            let recycled = free.list(len).and_then(|l| l.pop());
            if recycled.is_none() {
                self.shared.make_room_for(&mut free, len);
            }
            recycled
        };
        let memory = match recycled {
            Some(m) => {
                self.shared.reused.fetch_add(1, Ordering::Relaxed);
                m
            }
            None => {
                self.shared.created.fetch_add(1, Ordering::Relaxed);
                ChunkMemory::allocate(len, false)
            }
        };
        self.shared.in_use.fetch_add(1, Ordering::Relaxed);
        self.shared.in_use_bytes.fetch_add(memory.len as u64, Ordering::Relaxed);
        Arc::new(Chunk::new(memory, Some(self.shared.clone() as Arc<dyn Recycler>)))
    }

    /// A dedicated chunk of exactly `len` bytes for one oversized cell.
    pub fn get_jumbo(&self, len: usize) -> ChunkRef {
        self.shared.jumbo_created.fetch_add(1, Ordering::Relaxed);
        self.shared.in_use.fetch_add(1, Ordering::Relaxed);
        self.shared.in_use_bytes.fetch_add(len as u64, Ordering::Relaxed);
        Arc::new(Chunk::new(ChunkMemory::allocate(len, true), Some(self.shared.clone() as Arc<dyn Recycler>)))
    }

    /// Allocates `count` chunks up front so that the first writes allocate
    /// nothing either.
    pub fn preallocate(&self, count: usize) {
        let mut fresh: Vec<ChunkMemory> = (0..count).map(|_| ChunkMemory::allocate(CHUNK_SIZE, false)).collect();
        self.shared.created.fetch_add(count as u64, Ordering::Relaxed);
        let mut free = self.shared.free.lock();
        while free.bytes() + CHUNK_SIZE <= self.shared.max_pooled_bytes {
            match fresh.pop() {
                Some(m) => free.data.push(m),
                None => break,
            }
        }
        drop(free);
        for m in fresh {
            m.free();
        }
    }

    /// Adds `bytes` to the budget the pool's in-use plus idle bytes are kept
    /// within, until the returned registration drops (a store registers its
    /// global memstore limit for as long as it is open; several stores in a
    /// process share the pool and the sum of their limits).
    pub fn register_budget(&self, bytes: u64) -> PoolBudget {
        self.shared.budget_bytes.fetch_add(bytes, Ordering::Relaxed);
        PoolBudget { shared: self.shared.clone(), bytes }
    }

    /// A snapshot of the pool's counters.
    pub fn stats(&self) -> ChunkPoolStats {
        let s = &self.shared;
        let (idle, idle_bytes) = {
            let free = s.free.lock();
            ((free.data.len() + free.index.len()) as u64, free.bytes() as u64)
        };
        ChunkPoolStats {
            created: s.created.load(Ordering::Relaxed),
            reused: s.reused.load(Ordering::Relaxed),
            recycled: s.recycled.load(Ordering::Relaxed),
            freed: s.freed.load(Ordering::Relaxed),
            jumbo_created: s.jumbo_created.load(Ordering::Relaxed),
            in_use: s.in_use.load(Ordering::Relaxed),
            idle,
            in_use_bytes: s.in_use_bytes.load(Ordering::Relaxed),
            idle_bytes,
        }
    }
}

/// A budget registered with a pool ([`ChunkPool::register_budget`]);
/// withdrawn when dropped.
pub struct PoolBudget {
    shared: Arc<PoolShared>,
    bytes: u64,
}

impl std::fmt::Debug for PoolBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBudget").field("bytes", &self.bytes).finish()
    }
}

impl Drop for PoolBudget {
    fn drop(&mut self) {
        self.shared.budget_bytes.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_chunks_are_recycled_with_their_id() {
        let pool = ChunkPool::new(4);
        let c = pool.get();
        let id = c.id();
        assert_eq!(pool.stats().in_use, 1);
        drop(c);
        assert_eq!(pool.stats().idle, 1);
        let again = pool.get();
        assert_eq!(again.id(), id, "recycled memory keeps its id");
        assert_eq!(again.used(), 0, "recycled chunk starts empty");
        assert_eq!(pool.stats().reused, 1);
    }

    #[test]
    fn chunk_is_not_recycled_while_referenced() {
        let pool = ChunkPool::new(4);
        let c = pool.get();
        let holder = c.clone();
        drop(c);
        assert_eq!(pool.stats().idle, 0);
        let other = pool.get();
        assert_ne!(other.id(), holder.id());
        drop(holder);
        assert_eq!(pool.stats().idle, 1);
    }

    #[test]
    fn jumbo_chunks_are_freed_not_pooled_and_cap_is_honoured() {
        let pool = ChunkPool::new(1);
        drop(pool.get_jumbo(300 * 1024));
        assert_eq!(pool.stats().idle, 0);
        assert_eq!(pool.stats().freed, 1);
        let (a, b) = (pool.get(), pool.get());
        drop(a);
        drop(b);
        let s = pool.stats();
        assert_eq!((s.idle, s.freed, s.in_use), (1, 2, 0));
    }

    #[test]
    fn index_chunks_are_their_own_size_and_recycled_as_such() {
        let pool = ChunkPool::new(1);
        let index = pool.get_index();
        assert_eq!(index.capacity(), INDEX_CHUNK_SIZE);
        assert_eq!(pool.stats().in_use_bytes, INDEX_CHUNK_SIZE as u64);
        let id = index.id();
        drop(index);
        let s = pool.stats();
        assert_eq!((s.idle, s.idle_bytes, s.in_use_bytes), (1, INDEX_CHUNK_SIZE as u64, 0));
        let data = pool.get();
        assert_eq!(data.capacity(), CHUNK_SIZE, "an idle index chunk never serves a data request");
        assert_ne!(data.id(), id);
        assert_eq!(pool.get_index().id(), id, "but serves the next index request");
        // The cap is in bytes: a data chunk does not fit beside an idle
        // index chunk in one data chunk's worth.
        drop(data);
        assert_eq!(pool.stats().freed, 1);
    }

    #[test]
    fn a_registered_budget_bounds_in_use_plus_idle_bytes() {
        let pool = ChunkPool::new(64);
        let budget = pool.register_budget(3 * CHUNK_SIZE as u64);
        let chunks: Vec<_> = (0..4).map(|_| pool.get()).collect();
        drop(chunks);
        let s = pool.stats();
        assert_eq!((s.idle, s.freed), (3, 1), "idle chunks fill the budget, no more");
        drop(budget);
        let chunks: Vec<_> = (0..5).map(|_| pool.get()).collect();
        drop(chunks);
        assert_eq!(pool.stats().idle, 5, "no budget registered: only max_pooled bounds the idle chunks");
    }

    #[test]
    fn a_fresh_chunk_past_the_budget_frees_idle_chunks_of_the_other_size() {
        let pool = ChunkPool::new(64);
        let _budget = pool.register_budget(CHUNK_SIZE as u64 + 2 * INDEX_CHUNK_SIZE as u64);
        let index: Vec<_> = (0..2).map(|_| pool.get_index()).collect();
        drop(index);
        assert_eq!(pool.stats().idle, 2);
        let data = pool.get();
        assert_eq!(pool.stats().idle, 2, "in use plus idle still fit");
        let more = pool.get();
        let s = pool.stats();
        assert_eq!((s.idle, s.freed), (0, 2), "a second data chunk past the budget frees the idle index chunks");
        drop(data);
        assert_eq!(pool.stats().idle, 0, "a data chunk idle beside one in use is over the budget: freed");
        drop(more);
        assert_eq!(pool.stats().idle_bytes, CHUNK_SIZE as u64, "the last one fits the budget: kept");
    }
}
