//! # store — regions, WAL, store files, flush, reads, compaction, recovery
//!
//! The write and read path of docs/DESIGN.md §2, §4.5–§4.6 and §5, usable as an
//! embedded library. All I/O goes through [`fs::FileSystem`].

pub(crate) mod catalog;
pub(crate) mod clock;
pub mod compaction_policy;
pub(crate) mod compaction_queue;
pub mod compactor;
pub mod cursor;
pub mod error;
pub mod events;
pub mod family_store;
pub mod filter;
pub(crate) mod flush_queue;
pub mod flusher;
pub mod fs;
pub mod hooks;
pub mod layout;
pub mod manifest;
pub mod merge;
pub mod metrics;
pub mod names;
pub mod options;
pub(crate) mod reference_region;
pub mod region;
pub mod region_info;
pub mod region_open_close;
pub mod region_scanner;
pub mod region_state;
pub mod retired_parents;
pub mod row_reader;
pub mod scanner;
pub(crate) mod services;
pub mod split;
pub mod store;
pub mod storefile;
pub mod table;
pub mod table_counters;
#[cfg(test)]
mod test_support;
pub mod wal;
pub(crate) mod worker_pool;

pub use error::{Result, StoreError};
pub use options::{RegionIdSource, StoreOptions};
pub use region::{Column, Get, Mutation, MutationRef, RegionInfo, RowMutations};
pub use region_state::RegionState;
pub use scanner::Scan;
pub use store::Store;
pub use table::{FamilyDescriptor, TableDescriptor};
pub use table_counters::TableCounters;
