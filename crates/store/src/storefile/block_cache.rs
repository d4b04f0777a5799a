//! `BlockCache`: the cache of decoded data blocks shared by every store
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
//! Replacement is CLOCK (second chance), not a strict LRU list: a hit takes
//! its shard's lock *shared* and sets the block's `referenced` bit, where an
//! LRU list must relink the block under an exclusive lock. Readers of hot
//! blocks all hit the same few shards, and on a busy machine an exclusive
//! lock on every hit made them queue and sleep behind each other: profiled
//! on YCSB C (issue 28), a fifth of all the context switches of the run were
//! readers parked on a shard's mutex (none are now). A miss inserts under
//! the exclusive lock; the clock hand sweeps the shard's slots, clearing set
//! bits and evicting the first block whose bit is clear, so a block read
//! again since the hand last passed survives a lap (RocksDB's clock caches
//! make the same trade). A new block starts unreferenced: a
//! block read once (a scan's) is the first to go, one read twice stays.
//!
//! Blocks of an in-memory family (HBase's IN_MEMORY) are evicted last: while
//! they charge at most a quarter of the shard (HBase's LruBlockCache gives
//! its in-memory priority a quarter of the cache), the hand passes over them,
//! and they go only when the hand has swept the shard twice without making
//! room.
//!
//! Evicted blocks are dropped after the shard's lock is released: freeing a
//! 64 KiB block takes the allocator's lock of the thread that decoded it,
//! and a reader must not wait for that while holding the shard.
//!
//! Invariants (per shard, under its lock): `bytes` is the sum of the charges
//! of the entries and never exceeds the shard's capacity; `in_memory_bytes`
//! is the part of it charged by in-memory entries; the shards' capacities
//! add up to at most the cache's, so the cache never holds more than
//! `capacity` bytes of charged blocks; `map` holds exactly the occupied
//! slots of `nodes` (`block` is `Some`), the others are listed in `free`;
//! `hand < nodes.len()` unless `nodes` is empty.
//!
//! Thread safety: shared between threads; the key hashes to one of up to
//! 16 independently locked shards. A hit writes only the block's atomic
//! `referenced` bit (relaxed: a lost or late bit costs at most one lap of
//! the hand, never a wrong block). The counters are relaxed atomics
//! (statistics, not synchronisation). Capacity 0 disables the cache:
//! nothing is stored and no lookups counted.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

use super::block::DataBlock;

/// What a cached block costs besides its bytes (slot, map entry, Arc).
const ENTRY_OVERHEAD: usize = 96;
const MAX_SHARDS: usize = 16;
/// Shards are not made smaller than this, so a large block still fits one.
const MIN_SHARD_CAPACITY: usize = 4 << 20;

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

/// One slot of a shard; free while `block` is `None`.
struct Node {
    key: BlockKey,
    block: Option<Arc<DataBlock>>,
    charge: usize,
    in_memory: bool,
    /// Read since the clock hand last passed (set by hits, shared lock).
    referenced: AtomicBool,
}

/// Blocks taken out of a shard, to be dropped once its lock is released.
type Evicted = Vec<Arc<DataBlock>>;

/// One clock over a slab of slots (indices, not pointers, so no unsafe).
struct Shard {
    capacity: usize,
    bytes: usize,
    in_memory_bytes: usize,
    map: HashMap<BlockKey, usize>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    hand: usize,
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
            hand: 0,
        }
    }

    /// A hit: shared access only.
    fn get(&self, key: &BlockKey) -> Option<Arc<DataBlock>> {
        let node = &self.nodes[*self.map.get(key)?];
        // Only a clear bit is written, so hot blocks' cache lines stay shared.
        if !node.referenced.load(Ordering::Relaxed) {
            node.referenced.store(true, Ordering::Relaxed);
        }
        node.block.clone()
    }

    fn remove(&mut self, i: usize, evicted: &mut Evicted) {
        let node = &mut self.nodes[i];
        self.map.remove(&node.key);
        self.bytes -= node.charge;
        if node.in_memory {
            self.in_memory_bytes -= node.charge;
        }
        evicted.extend(node.block.take());
        self.free.push(i);
    }

    /// Inserts unless present or larger than the shard; returns how many
    /// entries were evicted for it, or `None` if it was not inserted. The
    /// evicted blocks are moved to `evicted`.
    fn insert(
        &mut self,
        key: BlockKey,
        block: Arc<DataBlock>,
        charge: usize,
        in_memory: bool,
        evicted: &mut Evicted,
    ) -> Option<u64> {
        if charge > self.capacity {
            return None;
        }
        if let Some(&i) = self.map.get(&key) {
            // Another reader loaded the same block concurrently; the copy
            // already cached is just as good.
            self.nodes[i].referenced.store(true, Ordering::Relaxed);
            return None;
        }
        let before = evicted.len();
        // Two laps clear every referenced bit and pass protected in-memory
        // blocks; after them anything goes, so the sweep always ends.
        let laps = 2 * self.nodes.len();
        let mut swept = 0;
        while self.bytes + charge > self.capacity && !self.map.is_empty() {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.nodes.len();
            swept += 1;
            let node = &self.nodes[i];
            if node.block.is_none() {
                continue;
            }
            if swept <= laps {
                if node.referenced.swap(false, Ordering::Relaxed) {
                    continue;
                }
                if node.in_memory && self.in_memory_bytes <= self.capacity / 4 {
                    continue;
                }
            }
            self.remove(i, evicted);
        }
        let node = Node { key, block: Some(block), charge, in_memory, referenced: AtomicBool::new(false) };
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
        self.map.insert(key, i);
        self.bytes += charge;
        if in_memory {
            self.in_memory_bytes += charge;
        }
        Some((evicted.len() - before) as u64)
    }
}

/// A shared, byte-bounded cache of decoded data blocks.
pub struct BlockCache {
    capacity: u64,
    shards: Box<[RwLock<Shard>]>,
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
        let shards = (0..n).map(|_| RwLock::new(Shard::new(bytes / n))).collect();
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

    fn shard(&self, key: &BlockKey) -> &RwLock<Shard> {
        // A multiplicative mix: offsets of one file differ in their middle bits.
        let h = (key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        &self.shards[(h >> 59) as usize % self.shards.len()]
    }

    /// The cached block at `offset` of file `file_id`, marking it referenced.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Arc<DataBlock>> {
        if !self.is_enabled() {
            return None;
        }
        let key = (file_id, offset);
        let found = self.shard(&key).read().get(&key);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches a block, evicting unreferenced ones to make room. A block
    /// larger than a shard is not cached.
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
        let mut evicted = Evicted::new();
        let inserted = self.shard(&key).write().insert(key, block, charge, in_memory, &mut evicted);
        drop(evicted);
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
            let mut evicted = Evicted::new();
            {
                let mut s = shard.write();
                let victims: Vec<usize> = s.map.iter().filter(|(k, _)| k.0 == file_id).map(|(_, &i)| i).collect();
                for i in victims {
                    s.remove(i, &mut evicted);
                }
            }
            removed += evicted.len();
        }
        removed
    }

    /// Drops every cached block.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let emptied = {
                let mut s = shard.write();
                let cap = s.capacity;
                std::mem::replace(&mut *s, Shard::new(cap))
            };
            drop(emptied);
        }
    }

    pub fn stats(&self) -> BlockCacheStats {
        let (mut bytes, mut count) = (0u64, 0u64);
        for shard in self.shards.iter() {
            let s = shard.read();
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
    fn clock_order_capacity_and_eviction() {
        let one = block(1000);
        let charge = one.charge() + ENTRY_OVERHEAD;
        let cache = BlockCache::new(charge as u64 * 3);
        for off in 0..3 {
            cache.insert(1, off, block(1000));
        }
        assert_eq!(cache.stats().count, 3);
        assert!(cache.get(1, 0).is_some(), "0 is referenced");
        cache.insert(1, 3, block(1000));
        assert!(cache.get(1, 1).is_none(), "1 was the first unreferenced block the hand met");
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

    /// Second chance: a block read since the hand last passed outlives a
    /// newer block nobody read again (a scan's blocks go first).
    #[test]
    fn referenced_blocks_survive_a_lap_and_blocks_read_once_go_first() {
        let charge = (block(1000).charge() + ENTRY_OVERHEAD) as u64;
        let cache = BlockCache::new(charge * 3);
        for off in 0..3 {
            cache.insert(1, off, block(1000));
        }
        assert!(cache.get(1, 1).is_some() && cache.get(1, 2).is_some());
        cache.insert(1, 3, block(1000));
        assert!(cache.get(1, 0).is_none(), "0 was never read again");
        cache.insert(1, 4, block(1000));
        assert!(cache.get(1, 3).is_none(), "3, read once, went before 1 and 2");
        assert!(cache.get(1, 1).is_some() && cache.get(1, 2).is_some() && cache.get(1, 4).is_some());
        assert_eq!(cache.stats().evictions, 2);
    }

    /// A hit needs only the shared lock: it is served while another reader
    /// holds the shard (with an exclusive lock per hit it would wait).
    #[test]
    fn hits_share_the_shard_lock() {
        let cache = Arc::new(BlockCache::new(1 << 20));
        cache.insert(1, 0, block(1000));
        let held = cache.shard(&(1, 0)).read();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let cache = cache.clone();
            std::thread::spawn(move || tx.send(cache.get(1, 0).is_some()).expect("send"))
        };
        let hit = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(held);
        reader.join().expect("reader");
        assert_eq!(hit, Ok(true), "the hit waited for the other reader");
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
