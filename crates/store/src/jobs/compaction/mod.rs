//! The compaction job: which files to compact (`policy.rs`, HBase's
//! exploring policy), the queue of requests (`queue.rs`) and the compactor
//! that merges files into one and commits it (`compactor.rs`).
//!
//! Thread safety: see each module; the queue is shared by the flushers
//! that ask for compactions and the compaction threads.

pub mod compactor;
pub mod policy;
pub(crate) mod queue;
