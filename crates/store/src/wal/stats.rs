//! The WAL's counters (DESIGN.md §6: WAL files created / archived, bytes
//! written to the WAL).
//!
//! Thread safety: relaxed atomics; each counter is exact, a snapshot of all
//! of them is not taken atomically (it is for reporting).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of a WAL's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalStats {
    /// Entries accepted by `append` (`SkipWal` ones excluded).
    pub appends: u64,
    /// fsyncs of appended records (group commit makes this far lower than
    /// `appends`); header syncs of new files are not counted.
    pub syncs: u64,
    /// fsyncs or writes that failed.
    pub sync_failures: u64,
    /// Bytes written to WAL files (records and headers).
    pub bytes_written: u64,
    pub files_created: u64,
    pub files_archived: u64,
    /// Bytes in the file being written (0 if none is open).
    pub current_file_size: u64,
    /// Id of the latest accepted append (appends are numbered from 1).
    pub last_txid: u64,
    /// Every append up to this id has been written and fsynced, or has
    /// failed (its appender was told, or for `AsyncWal`, it is counted in
    /// `sync_failures`).
    pub synced_txid: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub appends: AtomicU64,
    pub syncs: AtomicU64,
    pub sync_failures: AtomicU64,
    pub bytes_written: AtomicU64,
    pub files_created: AtomicU64,
    pub files_archived: AtomicU64,
    pub current_file_size: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn snapshot(&self, last_txid: u64, synced_txid: u64) -> WalStats {
        WalStats {
            appends: self.appends.load(Relaxed),
            syncs: self.syncs.load(Relaxed),
            sync_failures: self.sync_failures.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            files_created: self.files_created.load(Relaxed),
            files_archived: self.files_archived.load(Relaxed),
            current_file_size: self.current_file_size.load(Relaxed),
            last_txid,
            synced_txid,
        }
    }
}
