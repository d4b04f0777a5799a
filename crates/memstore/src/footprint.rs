//! `Footprint`: the memory a set of segments holds, counted as held — whole
//! chunks at their capacity, each index's held bytes
//! ([`Segment::index_held_bytes`]) — and deduplicated, so that a chunk two
//! segments share (a flattened segment keeps its predecessor's data chunks)
//! counts once.
//!
//! Its use: what readers pin. A scan's cursor holds the segments it
//! started on; when the memstore lets a segment go (after a flush, an
//! in-memory merge or compaction), the segment's memory stays until the
//! cursor drops. The bytes a set of readers pin are the bytes of their
//! footprint that the memstores' own footprint lacks
//! ([`Footprint::bytes_not_in`]).
//!
//! Its other use: what a memstore holds, by part ([`HeldBytes`]), which
//! memory accounting and the flush triggers charge
//! (`MemStoreSize::held_size`).
//!
//! Thread safety: a plain value, built by one thread from segments it holds.

use std::collections::HashMap;
use std::sync::Arc;

use crate::chunk::ChunkId;
use crate::segment::Segment;

/// Bytes held, split into cell data (data chunks) and index memory (index
/// chunks, cell arrays, skiplist node arenas).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldBytes {
    pub data: u64,
    pub index: u64,
}

impl HeldBytes {
    pub fn total(&self) -> u64 {
        self.data + self.index
    }

    pub fn add(&mut self, o: HeldBytes) {
        self.data += o.data;
        self.index += o.index;
    }
}

/// What a pool chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Data,
    Index,
}

#[derive(Debug, Default, Clone)]
pub struct Footprint {
    /// Pool chunks by id (data chunks, index chunks, skiplist node chunks),
    /// with their capacity. Keyed by id, so that a chunk two segments share
    /// counts once.
    chunks: HashMap<ChunkId, (u64, Part)>,
    /// Index bytes on the heap (cell arrays, skiplist heads) by index
    /// identity ([`Segment::index_identity`]).
    heap: HashMap<usize, u64>,
}

impl Footprint {
    pub fn add(&mut self, segment: &Arc<Segment>) {
        segment.visit_data_chunks(|id, capacity| {
            self.chunks.insert(id, (capacity as u64, Part::Data));
        });
        segment.visit_index_chunks(|id, capacity| {
            self.chunks.insert(id, (capacity as u64, Part::Index));
        });
        self.heap.insert(segment.index_identity(), segment.index_heap_bytes());
    }

    /// Whether the footprint holds chunk `id`.
    pub fn holds_chunk(&self, id: ChunkId) -> bool {
        self.chunks.contains_key(&id)
    }

    /// The ids of the pool chunks the footprint holds.
    pub fn chunk_ids(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.chunks.keys().copied()
    }

    /// Every byte of the footprint.
    pub fn bytes(&self) -> u64 {
        self.held().total()
    }

    /// The bytes of this footprint that `other` does not hold.
    pub fn bytes_not_in(&self, other: &Footprint) -> u64 {
        self.held_not_in(other).total()
    }

    /// The footprint's bytes, data and index apart.
    pub fn held(&self) -> HeldBytes {
        self.held_not_in(&Footprint::default())
    }

    /// The bytes of this footprint that `other` does not hold, data and
    /// index apart.
    pub fn held_not_in(&self, other: &Footprint) -> HeldBytes {
        let mut held = HeldBytes::default();
        for (id, &(bytes, part)) in &self.chunks {
            if !other.chunks.contains_key(id) {
                match part {
                    Part::Data => held.data += bytes,
                    Part::Index => held.index += bytes,
                }
            }
        }
        held.index += self.heap.iter().filter(|(id, _)| !other.heap.contains_key(id)).map(|(_, b)| b).sum::<u64>();
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use crate::memstore::MemStore;
    use crate::merge_iter::MergingCursor;
    use crate::{CHUNK_SIZE, ChunkPool, MemStoreConfig};

    fn put(m: &MemStore, row: &str) {
        let w = m.config().mvcc.begin();
        let seq = w.seq();
        m.add_row(&[CellInput::put(row.as_bytes(), b"f", b"q", seq, &[7u8; 100])], seq).expect("put");
        m.config().mvcc.complete(w);
    }

    fn live(m: &MemStore) -> Footprint {
        let mut f = Footprint::default();
        m.read_segments().iter().for_each(|s| f.add(s));
        f
    }

    #[test]
    fn a_reader_pins_only_what_the_memstore_let_go_and_shared_chunks_count_once() {
        let config = MemStoreConfig { chunk_pool: ChunkPool::new(4), ..MemStoreConfig::new("f") };
        let m = MemStore::new(config).expect("memstore");
        for i in 0..100 {
            put(&m, &format!("r{i:03}"));
        }
        let cursor = MergingCursor::new(m.read_segments());
        let mut held = Footprint::default();
        cursor.segments().for_each(|s| held.add(s));
        assert!(held.bytes() >= CHUNK_SIZE as u64, "at least the active segment's data chunk: {held:?}");
        assert_eq!(held.bytes_not_in(&live(&m)), 0, "nothing pinned while the memstore holds it all");

        // The memstore flushes and lets the snapshot go; the cursor keeps it.
        let snapshot = m.snapshot();
        m.release_snapshot(snapshot.id()).expect("release");
        drop(snapshot);
        let pinned = held.bytes_not_in(&live(&m));
        assert!(pinned >= CHUNK_SIZE as u64, "the released segment's chunk is pinned: {pinned}");
        assert_eq!(pinned, held.bytes(), "the memstore holds none of the cursor's segments now");

        // Two readers of one segment pin it once.
        let mut twice = held.clone();
        cursor.segments().for_each(|s| twice.add(s));
        assert_eq!(twice.bytes(), held.bytes());
    }
}
