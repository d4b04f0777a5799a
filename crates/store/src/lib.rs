//! # store — regions, WAL, store files, flush, reads, compaction, recovery
//!
//! The write and read path of docs/DESIGN.md §2, §4.5–§4.6 and §5, usable as an
//! embedded library. All I/O goes through [`fs::FileSystem`].

pub(crate) mod catalog;
pub(crate) mod clock;
pub mod error;
pub mod events;
pub mod family_store;
pub mod fs;
pub mod hooks;
pub mod jobs;
pub mod layout;
pub mod layout_changes;
pub mod manifest;
pub mod metrics;
pub mod names;
pub mod options;
pub mod read;
pub mod record_log;
pub mod region;
pub(crate) mod services;
pub mod store;
pub mod storefile;
pub mod table;
pub mod table_counters;
pub mod tasks;
#[cfg(test)]
mod test_support;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wal;

pub use error::{Result, StoreError};
pub use options::{RegionIdSource, StoreOptions};
pub use read::scanner::Scan;
pub use region::state::RegionState;
pub use region::{Column, Get, Mutation, MutationRef, RegionInfo, RowMutations};
pub use store::Store;
pub use store::namespaces::NamespaceDescriptor;
pub use table::{FamilyDescriptor, TableDescriptor};
pub use table_counters::TableCounters;
