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
            let room = free.bytes() + memory.len <= self.max_pooled_bytes;
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
        let recycled = self.shared.free.lock().list(len).and_then(|l| l.pop());
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
}
