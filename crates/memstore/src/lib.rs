//! # memstore — Accordion, the in-memory LSM store
//!
//! The memory store of one (region, column family): cells are copied into
//! pooled 2 MiB chunks ([`chunk`], [`chunk_pool`], [`mslab`]) and indexed by
//! a concurrent arena skiplist ([`skiplist`]) in the active segment
//! ([`mutable_segment`]). When the active segment passes the in-memory flush
//! threshold it is pushed into the [`pipeline`], where the policy
//! ([`policy`]) flattens it into a flat index ([`cell_array_index`],
//! [`cell_chunk_index`]), merges indexes, or compacts away what no reader can
//! see ([`compactor`], [`visibility`]), in the background ([`executor`]).
//! A disk flush takes the whole pipeline as a [`snapshot`].
//!
//! This crate does no I/O. See docs/DESIGN.md §4.

pub mod cell;
pub mod cell_array_index;
pub mod cell_chunk_index;
pub mod chunk;
pub mod chunk_pool;
pub mod compactor;
pub mod config;
pub mod counters;
pub mod cursor_heap;
pub mod error;
pub mod executor;
pub mod footprint;
mod gallop;
pub mod memory_gauge;
pub mod memstore;
pub mod merge_iter;
pub mod mslab;
pub mod mutable_segment;
pub mod mvcc;
pub mod pipeline;
pub mod policy;
pub mod row_cells;
pub mod scanner;
pub mod segment;
pub mod segment_stats;
pub mod skiplist;
pub mod snapshot;
pub mod sorted_runs;
pub mod visibility;

pub use cell::{Cell, CellInput, CellKey, CellRef, CellType};
pub use chunk::{CHUNK_SIZE, INDEX_CHUNK_SIZE, JUMBO_CELL_THRESHOLD};
pub use chunk_pool::{ChunkPool, ChunkPoolStats, PoolBudget};
pub use config::{
    Clock, CompactionMode, CompactionPolicy, InMemoryFlushThreshold, ManualClock, MemStoreConfig, SystemClock,
};
pub use counters::CountersSnapshot;
pub use error::MemStoreError;
pub use executor::CompactionExecutor;
pub use footprint::{Footprint, HeldBytes};
pub use memory_gauge::MemoryGauge;
pub use memstore::{MemStore, MemStoreHeld, MemStoreLayoutInfo, MemStoreSize, SegmentInfo};
pub use merge_iter::MergingCursor;
pub use mvcc::{Mvcc, PendingWrite, ReaderGuard, WriteEntry};
pub use row_cells::{CellCollector, RowCells, RowCellsIter};
pub use scanner::{RowScanner, ScanRange};
pub use segment::{IndexLayout, SegmentStats};
pub use snapshot::MemStoreSnapshot;
pub use visibility::{ReadOptions, TimeRange, VersionRules};
