//! `BlockCache`: the LRU cache of decoded data blocks shared by every store
//! file of a server (HBase's LruBlockCache, RocksDB's block cache), sized in
//! bytes.
//!
//! Keyed by (file id, block offset): file ids must be unique among the
//! files that share a cache while any of their blocks can be cached (call
//! [`BlockCache::evict_file`] when a file is removed, so a recycled id can't
//! see stale blocks and the memory comes back at once).
//!
//! Values are `Arc<DataBlock>`: blocks are checked (checksum, structure)
//! before they are inserted and are immutable afterwards, so a hit needs no
//! verification, and a block evicted while a scanner still reads it stays
//! alive until that scanner lets go.
//!
//! Blocks of an in-memory family (HBase's IN_MEMORY) are evicted last: while
//! they charge at most a quarter of the shard (HBase's LruBlockCache gives
//! its in-memory priority a quarter of the cache), one that reaches the
//! least recently used end moves back to the front instead of going, and
//! they go, oldest first, only when nothing else is left to evict.
//!
//! Invariants (per shard, under its mutex): `bytes` is the sum of the
//! charges of the entries and never exceeds the shard's capacity;
//! `in_memory_bytes` is the part of it charged by in-memory entries; the
//! shards' capacities add up to at most the cache's, so the cache never
//! holds more than `capacity` bytes of charged blocks; `map` and the LRU
//! list hold the same entries, most recently used at `head`.
//!
//! Thread safety: shared between threads; the key hashes to one of up to
//! 16 independently locked shards, so concurrent readers rarely contend.
//! The counters are relaxed atomics (statistics, not synchronisation).
//! Capacity 0 disables the cache: nothing is stored and no lookups counted.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::block::DataBlock;

/// What a cached block costs besides its bytes (list node, map slot, Arc).
const ENTRY_OVERHEAD: usize = 96;
const MAX_SHARDS: usize = 16;
/// Shards are not made smaller than this, so a large block still fits one.
const MIN_SHARD_CAPACITY: usize = 4 << 20;
const NIL: usize = usize::MAX;

type BlockKey = (u64, u64);

/// A snapshot of the cache's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    pub capacity: u64,
    /// Bytes charged by the cached blocks.
    pub bytes: u64,
    /// Cached blocks.
    pub count: u64,
    pub hits: u64,
    pub misses: u64,
    /// Blocks pushed out to make room (not explicit `evict_file` removals).
    pub evictions: u64,
    pub inserts: u64,
}

impl BlockCacheStats {
    /// Hits over lookups (0 without lookups).
    pub fn hit_ratio(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 { 0.0 } else { self.hits as f64 / lookups as f64 }
    }
}

struct Node {
    key: BlockKey,
    block: Option<Arc<DataBlock>>,
    charge: usize,
    in_memory: bool,
    prev: usize,
    next: usize,
}

/// One LRU list over a slab of nodes (indices, not pointers, so no unsafe).
struct Shard {
    capacity: usize,
    bytes: usize,
    in_memory_bytes: usize,
    map: HashMap<BlockKey, usize>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
}

impl Shard {
    fn new(capacity: usize) -> Shard {
        Shard {
            capacity,
            bytes: 0,
            in_memory_bytes: 0,
            map: HashMap::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next].prev = prev;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    fn get(&mut self, key: &BlockKey) -> Option<Arc<DataBlock>> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        self.nodes[i].block.clone()
    }

    fn remove(&mut self, i: usize) {
        self.unlink(i);
        let node = &mut self.nodes[i];
        self.map.remove(&node.key);
        self.bytes -= node.charge;
        if node.in_memory {
            self.in_memory_bytes -= node.charge;
        }
        node.block = None;
        self.free.push(i);
    }

    /// Inserts unless present or larger than the shard; returns how many
    /// entries were evicted for it, or `None` if it was not inserted.
    fn insert(&mut self, key: BlockKey, block: Arc<DataBlock>, charge: usize, in_memory: bool) -> Option<u64> {
        if charge > self.capacity {
            return None;
        }
        if let Some(&i) = self.map.get(&key) {
            // Another reader loaded the same block concurrently; the copy
            // already cached is just as good.
            self.unlink(i);
            self.push_front(i);
            return None;
        }
        let mut evicted = 0;
        // First pass: the oldest block goes unless it is a protected
        // in-memory one, which moves to the front instead (so the next
        // eviction does not walk past it again); at most one lap.
        let mut looked = 0;
        while self.bytes + charge > self.capacity && self.tail != NIL && looked < self.map.len() {
            let victim = self.tail;
            if self.nodes[victim].in_memory && self.in_memory_bytes <= self.capacity / 4 {
                self.unlink(victim);
                self.push_front(victim);
            } else {
                self.remove(victim);
                evicted += 1;
            }
            looked += 1;
        }
        // Then in-memory blocks too, if nothing else made room.
        while self.bytes + charge > self.capacity && self.tail != NIL {
            self.remove(self.tail);
            evicted += 1;
        }
        let node = Node { key, block: Some(block), charge, in_memory, prev: NIL, next: NIL };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.push_front(i);
        self.map.insert(key, i);
        self.bytes += charge;
        if in_memory {
            self.in_memory_bytes += charge;
        }
        Some(evicted)
    }
}

/// A shared, byte-bounded LRU cache of decoded data blocks.
pub struct BlockCache {
    capacity: u64,
    shards: Box<[Mutex<Shard>]>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    inserts: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache").field("shards", &self.shards.len()).field("stats", &self.stats()).finish()
    }
}

impl BlockCache {
    /// A cache holding at most `capacity` bytes of blocks; 0 disables it.
    pub fn new(capacity: u64) -> BlockCache {
        // Beyond what memory can hold anyway; keeps shard sizes in `usize`.
        let bytes = usize::try_from(capacity).unwrap_or(usize::MAX);
        let mut n = 1;
        while n < MAX_SHARDS && bytes / (n * 2) >= MIN_SHARD_CAPACITY {
            n *= 2;
        }
        let shards = (0..n).map(|_| Mutex::new(Shard::new(bytes / n))).collect();
        BlockCache {
            capacity,
            shards,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        // A multiplicative mix: offsets of one file differ in their middle bits.
        let h = (key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        &self.shards[(h >> 59) as usize % self.shards.len()]
    }

    /// The cached block at `offset` of file `file_id`, marking it recently used.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Arc<DataBlock>> {
        if !self.is_enabled() {
            return None;
        }
        let key = (file_id, offset);
        let found = self.shard(&key).lock().get(&key);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches a block, evicting the least recently used ones to make room.
    /// A block larger than a shard is not cached.
    pub fn insert(&self, file_id: u64, offset: u64, block: Arc<DataBlock>) {
        self.insert_with_priority(file_id, offset, block, false);
    }

    /// As [`insert`](Self::insert); an `in_memory` block is evicted last
    /// (see the module doc).
    pub fn insert_with_priority(&self, file_id: u64, offset: u64, block: Arc<DataBlock>, in_memory: bool) {
        if !self.is_enabled() {
            return;
        }
        let key = (file_id, offset);
        let charge = block.charge() + ENTRY_OVERHEAD;
        let inserted = self.shard(&key).lock().insert(key, block, charge, in_memory);
        if let Some(evicted) = inserted {
            self.inserts.fetch_add(1, Ordering::Relaxed);
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
    }

    /// Drops every cached block of `file_id` (when the file is deleted);
    /// returns how many there were.
    pub fn evict_file(&self, file_id: u64) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let victims: Vec<usize> = s.map.iter().filter(|(k, _)| k.0 == file_id).map(|(_, &i)| i).collect();
            removed += victims.len();
            for i in victims {
                s.remove(i);
            }
        }
        removed
    }

    /// Drops every cached block.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let cap = s.capacity;
            *s = Shard::new(cap);
        }
    }

    pub fn stats(&self) -> BlockCacheStats {
        let (mut bytes, mut count) = (0u64, 0u64);
        for shard in self.shards.iter() {
            let s = shard.lock();
            bytes += s.bytes as u64;
            count += s.map.len() as u64;
        }
        BlockCacheStats {
            capacity: self.capacity,
            bytes,
            count,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::block_builder::BlockBuilder;
    use super::*;
    use memstore::CellInput;

    fn block(value_len: usize) -> Arc<DataBlock> {
        let mut b = BlockBuilder::new();
        b.add(&CellInput::put(b"r", b"f", b"q", 1, &vec![7u8; value_len]).to_encoded(1));
        Arc::new(DataBlock::parse(b.finish().to_vec()).expect("parse"))
    }

    #[test]
    fn lru_order_capacity_and_eviction() {
        let one = block(1000);
        let charge = one.charge() + ENTRY_OVERHEAD;
        let cache = BlockCache::new(charge as u64 * 3);
        for off in 0..3 {
            cache.insert(1, off, block(1000));
        }
        assert_eq!(cache.stats().count, 3);
        assert!(cache.get(1, 0).is_some(), "0 becomes most recently used");
        cache.insert(1, 3, block(1000));
        assert!(cache.get(1, 1).is_none(), "1 was least recently used");
        assert!(cache.get(1, 0).is_some());
        let s = cache.stats();
        assert_eq!((s.count, s.evictions, s.hits, s.misses, s.inserts), (3, 1, 2, 1, 4));
        assert!(s.bytes <= s.capacity);
        assert_eq!(cache.evict_file(1), 3);
        assert_eq!(cache.stats().bytes, 0);
    }

    /// IN_MEMORY blocks outlive newer ordinary ones while they hold at most
    /// a quarter of the cache; beyond that share they age out as any block.
    #[test]
    fn in_memory_blocks_are_evicted_last_within_their_quarter() {
        let charge = (block(1000).charge() + ENTRY_OVERHEAD) as u64;
        let cache = BlockCache::new(charge * 8);
        cache.insert_with_priority(9, 0, block(1000), true);
        cache.insert_with_priority(9, 1, block(1000), true);
        for off in 0..20 {
            cache.insert(1, off, block(1000));
        }
        assert!(cache.get(9, 0).is_some() && cache.get(9, 1).is_some(), "two of eight slots: protected");
        assert!(cache.get(1, 13).is_none() && cache.get(1, 14).is_some(), "ordinary blocks took the other six");

        let cache = BlockCache::new(charge * 8);
        for off in 0..4 {
            cache.insert_with_priority(9, off, block(1000), true);
        }
        for off in 0..20 {
            cache.insert(1, off, block(1000));
        }
        let in_memory_left = (0..4).filter(|&off| cache.get(9, off).is_some()).count();
        assert_eq!(in_memory_left, 2, "beyond a quarter, the oldest in-memory blocks went");
        assert!(cache.stats().bytes <= cache.stats().capacity);
    }

    #[test]
    fn oversized_blocks_and_disabled_cache_store_nothing() {
        let cache = BlockCache::new(100);
        cache.insert(1, 0, block(1000));
        assert_eq!(cache.stats().count, 0);
        let off = BlockCache::new(0);
        off.insert(1, 0, block(10));
        assert!(off.get(1, 0).is_none());
        assert_eq!(off.stats(), BlockCacheStats::default());
    }

    #[test]
    fn sharded_cache_stays_within_capacity_under_threads() {
        let cache = Arc::new(BlockCache::new(64 << 20));
        assert_eq!(cache.shards.len(), MAX_SHARDS);
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    let b = block(64 << 10);
                    for i in 0..3000u64 {
                        cache.insert(t, i * 70_000, b.clone());
                        let _ = cache.get(t, (i / 2) * 70_000);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let s = cache.stats();
        assert!(s.bytes <= s.capacity, "{s:?}");
        assert!(s.evictions > 0 && s.hits > 0, "{s:?}");
        cache.clear();
        assert_eq!(cache.stats().count, 0);
    }
}
