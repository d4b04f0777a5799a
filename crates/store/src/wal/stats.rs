//! The WAL's counters (docs/DESIGN.md §6: WAL files created / archived, bytes
//! written to the WAL) and the latency of its sync rounds.
//!
//! Thread safety: relaxed atomics; each counter is exact, a snapshot of all
//! of them is not taken atomically (it is for reporting). The latency
//! histogram and the exact sum of the rounds' times are behind one mutex
//! taken once per sync round (rounds run one at a time anyway, under the
//! WAL's I/O lock) and by readers.

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

/// The sync rounds as counts at or below fixed bounds (a Prometheus
/// histogram's buckets), with their count and the exact sum of their times.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncBuckets {
    /// `cumulative[i]`: rounds that took at most `bounds[i]` of the call.
    /// The histogram keeps 2 significant digits, so a round is counted at a
    /// bound only if every time its histogram bucket stands for is at or
    /// below it: a round within 1 % above a bound may count in the next.
    pub cumulative: Vec<u64>,
    /// Rounds that succeeded (the `+Inf` bucket).
    pub count: u64,
    /// Their times, summed exactly (not from the histogram).
    pub sum: Duration,
}

struct Times {
    histogram: Histogram<u64>,
    sum_nanos: u64,
}

/// The histogram of sync rounds, in microseconds (1 µs .. 10 min, 2
/// significant digits), and the exact sum of their times.
pub(crate) struct SyncTimes(Mutex<Times>);

impl Default for SyncTimes {
    fn default() -> SyncTimes {
        SyncTimes(Mutex::new(Times {
            histogram: Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid histogram bounds"),
            sum_nanos: 0,
        }))
    }
}

impl SyncTimes {
    pub fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).clamp(1, 600_000_000);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let mut t = self.0.lock();
        t.histogram.saturating_record(us);
        t.sum_nanos = t.sum_nanos.saturating_add(nanos);
    }

    /// The rounds at or below each of `bounds` (ascending).
    pub fn buckets(&self, bounds: &[Duration]) -> SyncBuckets {
        let t = self.0.lock();
        let h = &t.histogram;
        let bounds_us: Vec<u64> = bounds.iter().map(|b| u64::try_from(b.as_micros()).unwrap_or(u64::MAX)).collect();
        let mut cumulative = vec![0u64; bounds.len()];
        for v in h.iter_recorded() {
            // The highest time this histogram bucket stands for.
            let top = v.value_iterated_to();
            let first = bounds_us.partition_point(|&b| b < top);
            for c in &mut cumulative[first..] {
                *c += v.count_at_value();
            }
        }
        SyncBuckets { cumulative, count: h.len(), sum: Duration::from_nanos(t.sum_nanos) }
    }

    pub fn snapshot(&self) -> SyncLatency {
        let t = self.0.lock();
        let h = &t.histogram;
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
    /// Capacity of the batch buffer a round writes or keeps as its spare
    /// (the other of the two buffers; `Wal::buffer_bytes`). Set once per
    /// round, so that reading it never waits for a round's fsync.
    pub round_buffer_bytes: AtomicU64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_count_each_round_at_every_bound_at_or_above_it() {
        let t = SyncTimes::default();
        for us in [50, 100, 150, 900, 5_000, 20_000_000] {
            t.record(Duration::from_micros(us));
        }
        let bounds = [100, 1_000, 10_000].map(Duration::from_micros);
        let b = t.buckets(&bounds);
        assert_eq!(b.cumulative, [2, 4, 5]);
        assert_eq!(b.count, 6);
        assert_eq!(b.sum, Duration::from_micros(50 + 100 + 150 + 900 + 5_000 + 20_000_000));
        assert_eq!(SyncTimes::default().buckets(&bounds), SyncBuckets { cumulative: vec![0; 3], ..Default::default() });
    }
}
