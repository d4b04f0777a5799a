//! The store's background jobs: flushes (`flush/`) and compactions
//! (`compaction/`), each a queue of requests served by a pool of worker
//! threads (`worker_pool.rs`).
//!
//! Thread safety: see each module; the queues are shared by the threads
//! that ask for work and the workers that do it.

pub mod compaction;
pub mod flush;
pub(crate) mod worker_pool;
