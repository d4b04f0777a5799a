//! The WAL's counters (DESIGN.md §6: WAL files created / archived, bytes
//! written to the WAL) and the latency of its sync rounds.
//!
//! Thread safety: relaxed atomics; each counter is exact, a snapshot of all
//! of them is not taken atomically (it is for reporting). The latency
//! histogram is behind a mutex taken once per sync round (rounds run one at
//! a time anyway, under the WAL's I/O lock).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// How long the WAL's sync rounds took: each round writes the group's
/// records and syncs them (`fsync` on local disk, `hsync` on HDFS) once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncLatency {
    /// Rounds that succeeded.
    pub rounds: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// The histogram of sync rounds, in microseconds (1 µs .. 10 min, 2
/// significant digits).
pub(crate) struct SyncTimes(Mutex<Histogram<u64>>);

impl Default for SyncTimes {
    fn default() -> SyncTimes {
        SyncTimes(Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid histogram bounds")))
    }
}

impl SyncTimes {
    pub fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).clamp(1, 600_000_000);
        self.0.lock().saturating_record(us);
    }

    pub fn snapshot(&self) -> SyncLatency {
        let h = self.0.lock();
        if h.is_empty() {
            return SyncLatency::default();
        }
        SyncLatency {
            rounds: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
        }
    }
}

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
