//! The flush job: which regions to flush and when (`queue.rs`: requests by
//! size, count and age, HBase's `MemStoreFlusher`), and the flusher that
//! writes a region's snapshot to store files (`flusher.rs`). The region's
//! own part of a flush (taking the snapshot) is `region/flush.rs`.
//!
//! Thread safety: see each module; the queue is shared by the writers
//! that ask for flushes and the flusher threads.

pub mod flusher;
pub(crate) mod queue;
