//! The write-ahead log (docs/DESIGN.md §5): one per store instance, shared by all
//! its regions. Every region batch (the rows of a client batch that fall in
//! one region, or a single row mutation) is appended as one checksummed
//! record before it goes into the memstore; after a crash, replay
//! re-inserts what was not flushed yet.
//!
//! - [`record`]: the byte format (file header, record frame, entry, cells).
//! - [`codec`]: how an entry's cells are grouped by row and family on disk.
//! - [`accounting`]: per region, the lowest sequence id not yet flushed,
//!   updated at append time; it decides which files may be archived.
//! - [`layout`]: file names and directories.
//! - [`takeover`]: a store's instances each write their own WAL directory;
//!   opening fences the earlier ones (rename, lease recovery) before it
//!   replays them, so a writer still running acknowledges nothing more.
//! - `writer` (private): one file being written.
//! - [`reader`]: replay, and how a torn tail is told from corruption.
//! - [`wal`]: the shared log's facade, `Wal` — its public API, opening
//!   (recovery) and closing, over two private parts:
//!   - `commit` (private): the group-commit pipeline — the appenders'
//!     queue, sync rounds, the syncer thread, durability outcomes, failure
//!     handling;
//!   - `file_manager` (private): roll, seals, which regions each live file
//!     holds, archiving, cleanup and numbering at open.
//! - [`options`], [`stats`]: tuning, durability levels, counters.
//!
//! The guarantees, in one place:
//! - An acknowledged `SyncWal` append is on disk (fsynced) and is replayed
//!   after any crash; an append that returned an error may or may not be.
//! - Concurrent `SyncWal` appenders share fsyncs (group commit).
//! - `AsyncWal` appends are synced within `sync_interval` (or `sync_bytes`).
//! - Replay returns every entry of the live files in log order, stops
//!   cleanly at a torn tail, and reports damage to durable data as
//!   `StoreError::Corruption` (file and offset), never skipping it.
//! - After a write or fsync failure the WAL continues in a new file; the
//!   damaged one is sealed at its last synced length.
//! - Once another instance has fenced a WAL's directory, the WAL
//!   acknowledges nothing more (on HDFS; local disk has no leases).
//!
//! Thread safety: see each module; [`Wal`] is `Send + Sync`.

pub mod accounting;
pub mod codec;
mod commit;
mod commit_queue;
mod file_manager;
mod live_files;
pub mod log_split;
pub mod options;
pub mod reader;
pub mod record;
mod shared;
pub mod stats;
pub mod takeover;
#[expect(clippy::module_inception, reason = "the concept is the WAL, in the wal module")]
pub mod wal;
mod writer;

pub use crate::layout::wal::{ARCHIVE_DIR, LEGACY_ARCHIVE_DIR, archive_dir, log_file_name, parse_log_file_name};
pub use options::{Durability, WalOptions};
pub use reader::{ReplaySummary, WalFileSummary, WalReader, WalReplay};
pub use record::{FileHeader, WalCells, WalEntry};
pub use shared::AppendTicket;
pub use stats::{SyncBuckets, SyncLatency, WalStats};
pub use wal::{Wal, WalPlace};
