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

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::MutexGuard;

use crate::error::{Result, StoreError};
use crate::wal::commit_queue::duplicate_error;
use crate::wal::options::Durability;
use crate::wal::shared::{AppendTicket, Io, Shared};
use crate::wal::stats::Counters;
use crate::wal::writer::LogWriter;

/// A recycled batch buffer larger than this is shrunk back. Small: it is
/// memory outside the memstores' budget that the process keeps between
/// rounds (two buffers, the spare becoming the next pending one), and a
/// round's batch is far smaller in steady state (a few hundred KB at the
/// paper's write rates); a burst grows the pending buffer again, which for
/// a block above malloc's mmap threshold is a `mremap`, not a copy.
const MAX_SPARE_CAPACITY: usize = 1 << 20;

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
        self.counters.round_buffer_bytes.store(batch.capacity() as u64, std::sync::atomic::Ordering::Relaxed);
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
        self.counters.round_buffer_bytes.store(batch.capacity() as u64, std::sync::atomic::Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use memstore::CellInput;

    use super::MAX_SPARE_CAPACITY;
    use crate::fs::LocalFs;
    use crate::wal::{Durability, Wal, WalEntry, WalOptions};

    #[test]
    fn the_buffers_are_counted_and_a_round_keeps_at_most_the_spare_cap() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // No sync unless asked: an hour-long interval, 1 GiB of sync bytes.
        let options = WalOptions {
            sync_interval: Duration::from_secs(3600),
            sync_bytes: 1 << 30,
            roll_size: 1 << 30,
            ..WalOptions::default()
        };
        let (wal, _) = Wal::open(Arc::new(LocalFs), &tmp.path().join("wal"), options).expect("open");
        let value = vec![b'v'; 4096];
        let mut appended = 0usize;
        let mut seq = 0;
        while appended < 4 * MAX_SPARE_CAPACITY {
            seq += 1;
            let entry = WalEntry::from_cells(1, seq, &[CellInput::put(b"row", b"f", b"q", seq, &value)]);
            appended += entry.record_len();
            wal.append(&entry, Durability::AsyncWal).expect("append");
        }
        assert!(wal.buffer_bytes() >= appended as u64, "{} buffered, {appended} appended", wal.buffer_bytes());
        wal.sync().expect("sync");
        // The pending buffer is the previous spare (empty), the round's
        // buffer shrunk back to the cap.
        assert!(wal.buffer_bytes() <= MAX_SPARE_CAPACITY as u64, "{} after the round", wal.buffer_bytes());
    }
}
