//! The WAL's group-commit pipeline (Pebble's `commit.go`): how an append
//! becomes durable — the appenders' queue, the rounds that write and sync
//! it, the background syncer thread, and the outcomes every appender waits
//! for.
//!
//! ## How an append travels
//!
//! 1. `append` frames the record straight into the *pending* buffer (one
//!    short mutex: a memcpy and a crc) and takes the next *txid*. Txids
//!    number appends in buffer order.
//! 2. A *round* (under the I/O mutex, so rounds are serialized) swaps the
//!    whole pending buffer out, writes it to the current file with one
//!    append and one fsync, and publishes the outcome for its txid range:
//!    `done_txid` advances to the batch's last txid, and a failure is
//!    recorded for the range so that every appender in it gets the error.
//! 3. `SyncWal` appenders wait until `done_txid` covers their txid. The
//!    first waiter to find no round leader becomes the leader and runs the
//!    round itself; the others sleep on a condvar. While a leader is inside
//!    fsync, new appends pile up in the pending buffer, and the next leader
//!    takes them all: that is group commit (one fsync per batch, not per
//!    append), with no hand-off to another thread on the fast path.
//! 4. `AsyncWal` appenders return at step 1. A background *syncer* thread
//!    runs a round every `sync_interval`, or as soon as `sync_bytes` wait
//!    (the appender that crosses the threshold wakes it). Past
//!    `max_pending_bytes`, `AsyncWal` appenders wait like `SyncWal` ones.
//!
//! ## Failures
//!
//! A failed write or fsync fails the whole batch: every `SyncWal` appender
//! in it gets the error (none is acknowledged) and `AsyncWal` entries of the
//! batch may be lost (they are counted in `sync_failures` and logged). The
//! file is then *broken* and never written again: the next round first
//! rolls to a new file (`file_manager.rs`) whose header seals the broken one
//! at its last synced length, so there is never a hole inside a file that
//! replay trusts. If the new file cannot be created either (full disk), that
//! round's batch fails the same way and the next round tries again, so the
//! WAL heals by itself once the disk does; no manual `roll()` is needed.
//! A failed fsync is never retried on the same file (after a failed fsync,
//! Linux may have dropped the dirty pages, so a retry can falsely succeed).
//!
//! Invariants:
//! - The region's sequence-id accounting is updated under the same `pending`
//!   lock that buffers the entry, so it is current before the entry can
//!   reach any file.
//! - Batches are contiguous txid ranges published in increasing order, so
//!   a single `done_txid` watermark plus a list of failed ranges tells each
//!   waiter its outcome.
//! - Between rounds, a healthy writer has synced everything it wrote.
//! - At most one leader runs a round at a time (`Outcomes::leader`), and the
//!   slot is handed back even if the round panics.
//!
//! Thread safety: everything here runs on `Shared`, behind its mutexes
//! (`wal.rs` gives the lock order): `pending` is held for a memcpy or an
//! accounting update, `outcomes` for a watermark check or update, and a
//! round holds `io` throughout. No condvar is waited on while `io` is held.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::MutexGuard;

use crate::error::{Result, StoreError};
use crate::wal::accounting::SequenceIdAccounting;
use crate::wal::options::Durability;
use crate::wal::stats::Counters;
use crate::wal::wal::{AppendTicket, Io, Shared};
use crate::wal::writer::LogWriter;

/// Failed txid ranges remembered for late waiters; older ones are forgotten
/// and their txids conservatively reported as failed.
const MAX_REMEMBERED_FAILURES: usize = 1024;
/// A recycled batch buffer larger than this is shrunk back.
const MAX_SPARE_CAPACITY: usize = 8 << 20;

/// The appenders' queue: records framed and waiting for a round.
pub(super) struct Pending {
    pub(super) buf: Vec<u8>,
    /// Per region, the highest seq among the buffered entries.
    pub(super) regions: HashMap<u64, u64>,
    pub(super) last_txid: u64,
    pub(super) closed: bool,
    pub(super) accounting: SequenceIdAccounting,
}

impl Pending {
    pub(super) fn new() -> Pending {
        Pending {
            buf: Vec::new(),
            regions: HashMap::new(),
            last_txid: 0,
            closed: false,
            accounting: SequenceIdAccounting::default(),
        }
    }
}

struct Failure {
    first: u64,
    last: u64,
    error: Arc<StoreError>,
}

/// What the rounds published: how far appends are done, and which failed.
pub(super) struct Outcomes {
    /// Every txid up to this one has been written and synced, or failed.
    pub(super) done_txid: u64,
    /// A `SyncWal` appender is running a round.
    leader: bool,
    failures: VecDeque<Failure>,
    /// Failures up to this txid may have been forgotten.
    forgotten_upto: u64,
}

impl Outcomes {
    pub(super) fn new() -> Outcomes {
        Outcomes { done_txid: 0, leader: false, failures: VecDeque::new(), forgotten_upto: 0 }
    }

    fn record_failure(&mut self, first: u64, last: u64, error: Arc<StoreError>) {
        if let Some(prev) = self.failures.back_mut()
            && prev.last + 1 == first
        {
            prev.last = last; // consecutive failed batches: one range
            return;
        }
        if self.failures.len() == MAX_REMEMBERED_FAILURES
            && let Some(old) = self.failures.pop_front()
        {
            self.forgotten_upto = old.last;
        }
        self.failures.push_back(Failure { first, last, error });
    }

    /// The outcome of a txid that is done.
    pub(super) fn outcome(&self, txid: u64) -> Result<()> {
        for f in self.failures.iter().rev() {
            if f.last < txid {
                break;
            }
            if f.first <= txid {
                return Err(duplicate_error(&f.error));
            }
        }
        if txid <= self.forgotten_upto {
            return Err(StoreError::WritesStopped(format!(
                "the outcome of WAL append {txid} is no longer known; treat it as failed"
            )));
        }
        Ok(())
    }
}

impl Shared {
    /// Step 1 of an append: buffers `record` (framed, an entry of `seq` for
    /// `region_id`) and takes its txid, updating the region's accounting
    /// first. The ticket says whether the appender must wait for a round.
    pub(super) fn enqueue(
        &self,
        record: &[u8],
        region_id: u64,
        seq: u64,
        durability: Durability,
    ) -> Result<AppendTicket> {
        let (txid, wake_syncer, over_limit) = {
            let mut p = self.pending.lock();
            if p.closed {
                return Err(StoreError::Closed);
            }
            p.accounting.on_append(region_id, seq);
            let before = p.buf.len() as u64;
            p.buf.extend_from_slice(record);
            p.last_txid += 1;
            let max = p.regions.entry(region_id).or_insert(seq);
            *max = (*max).max(seq);
            let after = p.buf.len() as u64;
            let threshold = self.options.sync_bytes;
            (p.last_txid, before < threshold && after >= threshold, after > self.options.max_pending_bytes)
        };
        Counters::add(&self.counters.appends, 1);
        let wait = durability == Durability::SyncWal || over_limit;
        if !wait && wake_syncer {
            self.syncer_wakeup.notify_one();
        }
        Ok(AppendTicket { txid, wait })
    }

    /// Starts the background syncer thread.
    pub(super) fn start_syncer(self: &Arc<Shared>) -> Result<JoinHandle<()>> {
        let syncer_shared = self.clone();
        std::thread::Builder::new()
            .name("wal-syncer".into())
            .spawn(move || syncer_shared.syncer_loop())
            .map_err(|e| StoreError::io("spawn the syncer of", &self.dir, e))
    }

    fn syncer_loop(&self) {
        loop {
            {
                let mut p = self.pending.lock();
                if !p.closed && (p.buf.len() as u64) < self.options.sync_bytes {
                    self.syncer_wakeup.wait_for(&mut p, self.options.sync_interval);
                }
                if p.closed {
                    return; // `close` runs the final round itself.
                }
                if p.buf.is_empty() {
                    continue;
                }
            }
            self.sync_round();
        }
    }

    /// Waits until `txid` has an outcome, leading rounds when no one else
    /// does (see "How an append travels").
    pub(super) fn wait_durable(&self, txid: u64) -> Result<()> {
        let mut o = self.outcomes.lock();
        loop {
            if o.done_txid >= txid {
                return o.outcome(txid);
            }
            if o.leader {
                self.outcome_cv.wait(&mut o);
                continue;
            }
            o.leader = true;
            MutexGuard::unlocked(&mut o, || {
                // Hands the leader slot back even if the round panics, so
                // that followers are not left waiting forever.
                struct Leader<'a>(&'a Shared);
                impl Drop for Leader<'_> {
                    fn drop(&mut self) {
                        self.0.outcomes.lock().leader = false;
                        self.0.outcome_cv.notify_all();
                    }
                }
                let _leader = Leader(self);
                self.sync_round();
            });
        }
    }

    fn sync_round(&self) {
        let mut io = self.io.lock();
        self.round_locked(&mut io);
    }

    /// Writes and syncs the pending batch, publishes its outcome, and rolls
    /// if the file is full.
    pub(super) fn round_locked(&self, io: &mut Io) {
        let (mut batch, mut regions, last) = {
            let mut p = self.pending.lock();
            if p.buf.is_empty() {
                return;
            }
            let batch = std::mem::replace(&mut p.buf, std::mem::take(&mut io.spare_buf));
            let regions = std::mem::replace(&mut p.regions, std::mem::take(&mut io.spare_regions));
            (batch, regions, p.last_txid)
        };
        let result = self.write_batch(io, &batch, &regions);
        if let Err(e) = &result {
            Counters::add(&self.counters.sync_failures, 1);
            tracing::error!(dir = %self.dir.display(), error = %e, "WAL write failed; its appends are not durable");
        }
        {
            let mut o = self.outcomes.lock();
            let first = o.done_txid + 1;
            if let Err(e) = &result {
                o.record_failure(first, last, Arc::new(duplicate_error(e)));
            }
            o.done_txid = last;
        }
        self.outcome_cv.notify_all();

        batch.clear();
        if batch.capacity() > MAX_SPARE_CAPACITY {
            batch.shrink_to(MAX_SPARE_CAPACITY);
        }
        io.spare_buf = batch;
        regions.clear();
        io.spare_regions = regions;

        if result.is_ok()
            && io.writer.as_ref().is_some_and(|w| w.len() >= self.options.roll_size)
            && let Err(e) = self.roll_locked(io)
        {
            // The next round retries before it writes.
            tracing::warn!(dir = %self.dir.display(), error = %e, "WAL roll failed");
        }
    }

    fn write_batch(&self, io: &mut Io, batch: &[u8], regions: &HashMap<u64, u64>) -> Result<()> {
        if io.writer.as_ref().is_none_or(LogWriter::is_broken) {
            self.roll_locked(io)?;
        }
        let Some(w) = io.writer.as_mut() else {
            return Err(StoreError::WritesStopped("the WAL has no file to write to".into()));
        };
        // Noted before writing: if the write fails half-way, the file may
        // still hold some of these entries, so it must stay until they are
        // flushed (or are known to be garbage).
        self.live_files.lock().note_regions(w.number(), regions);
        let started = std::time::Instant::now();
        let result = w.write_and_sync(batch);
        if let Ok(written) = result {
            self.sync_times.record(started.elapsed());
            Counters::add(&self.counters.syncs, 1);
            Counters::add(&self.counters.bytes_written, written);
        }
        self.counters.current_file_size.store(w.len(), std::sync::atomic::Ordering::Relaxed);
        result.map(|_| ())
    }
}

/// A copy of an error for each appender of a failed batch (`StoreError` is
/// not `Clone`; an I/O error keeps its OS code, so `is_disk_full` still
/// works, its kind and its message).
fn duplicate_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::Io { op, path, source } => {
            let source = match source.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(source.kind(), source.to_string()),
            };
            StoreError::Io { op, path: path.clone(), source }
        }
        StoreError::Corruption { path, offset, reason } => {
            StoreError::Corruption { path: path.clone(), offset: *offset, reason: reason.clone() }
        }
        StoreError::Closed => StoreError::Closed,
        StoreError::InvalidArgument(m) => StoreError::InvalidArgument(m.clone()),
        other => StoreError::WritesStopped(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_ranges_merge_and_answer_each_txid() {
        let mut o = Outcomes::new();
        let err = || Arc::new(StoreError::io("fsync", "/x", std::io::Error::from_raw_os_error(28)));
        o.record_failure(3, 5, err());
        o.record_failure(6, 7, err());
        o.record_failure(10, 10, err());
        o.done_txid = 12;
        assert_eq!(o.failures.len(), 2, "3..=5 and 6..=7 merge");
        for t in 1..=12 {
            let failed = (3..=7).contains(&t) || t == 10;
            assert_eq!(o.outcome(t).is_err(), failed, "txid {t}");
        }
        assert!(o.outcome(4).expect_err("failed").is_disk_full(), "the OS error code survives duplication");
        for i in 0..MAX_REMEMBERED_FAILURES as u64 {
            o.record_failure(100 + 2 * i, 100 + 2 * i, err());
        }
        assert_eq!(o.forgotten_upto, 10, "the two oldest ranges were forgotten");
        assert!(o.outcome(9).is_err(), "a txid whose failure may have been forgotten is reported as failed");
        assert!(o.outcome(11).is_ok());
    }
}
