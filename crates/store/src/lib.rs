//! # store — regions, WAL, store files, flush, reads, compaction, recovery
//!
//! The write and read path of DESIGN.md §2, §4.5–§4.6 and §5, usable as an
//! embedded library. All I/O goes through [`fs::FileSystem`].

pub mod error;
pub mod fs;
pub mod storefile;
pub mod wal;

pub use error::{Result, StoreError};
