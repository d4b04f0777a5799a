//! The state the WAL's facade (`wal.rs`), its commit pipeline
//! (`commit.rs`) and its file manager (`file_manager.rs`) share, and the
//! ticket an append returns. Defined apart from all three so that each
//! imports it and none imports another: the pipeline's and the files'
//! data types are in `commit_queue.rs` and `live_files.rs`.
//!
//! Thread safety: see `wal.rs` for what each mutex guards and the lock
//! order.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::fs::FileSystem;
use crate::wal::commit_queue::{Outcomes, Pending};
use crate::wal::live_files::{LiveFiles, Seal};
use crate::wal::options::WalOptions;
use crate::wal::stats::{Counters, SyncTimes};
use crate::wal::writer::LogWriter;

/// An append whose durability may still have to be awaited
/// ([`Wal::await_durable`]).
#[derive(Debug)]
#[must_use = "a SYNC_WAL append is not durable until awaited"]
pub struct AppendTicket {
    pub(crate) txid: u64,
    pub(crate) wait: bool,
}

/// What the facade, the appenders and the syncer thread share.
pub(super) struct Shared {
    pub(super) fs: Arc<dyn FileSystem>,
    pub(super) dir: PathBuf,
    pub(super) archive_dir: PathBuf,
    pub(super) options: WalOptions,
    pub(super) pending: Mutex<Pending>,
    /// Wakes the syncer (paired with `pending`).
    pub(super) syncer_wakeup: Condvar,
    pub(super) io: Mutex<Io>,
    pub(super) outcomes: Mutex<Outcomes>,
    /// Signals a published outcome or a free leader slot (paired with
    /// `outcomes`).
    pub(super) outcome_cv: Condvar,
    pub(super) live_files: Mutex<LiveFiles>,
    pub(super) archiving: Mutex<()>,
    pub(super) counters: Counters,
    pub(super) sync_times: SyncTimes,
}

/// What the I/O mutex guards: the file being written and the next one's
/// numbering and seal (`file_manager.rs`), and the buffers a round recycles
/// (`commit.rs`).
pub(super) struct Io {
    pub(super) writer: Option<LogWriter>,
    /// The file the next file's header seals.
    pub(super) prev: Seal,
    pub(super) next_number: u64,
    pub(super) spare_buf: Vec<u8>,
    pub(super) spare_regions: HashMap<u64, u64>,
}
