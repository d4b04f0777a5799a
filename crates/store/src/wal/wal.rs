//! `Wal`: the write-ahead log of a store instance, shared by all its
//! regions — the facade and its public API: opening (recovery), appending,
//! the flush bookkeeping that decides which files may go, rolling,
//! archiving, statistics, closing. The work is done in two places:
//!
//! - `commit.rs`: the group-commit pipeline — the appenders' queue, the
//!   rounds that write and fsync it, the background syncer thread, the
//!   outcome each appender waits for, and what a failed write does.
//! - `file_manager.rs`: the files — roll, seals, which regions each live
//!   file holds, archiving the obsolete ones, cleanup and numbering at open.
//!
//! Their data lives in modules of its own, so that no two of these files
//! import each other: `shared.rs` (`Shared`, `Io`, `AppendTicket`), held
//! by all three; `commit_queue.rs` (`Pending`, `Outcomes`) and
//! `live_files.rs` (`LiveFiles`, `Seal`), which `Shared` holds.
//!
//! ## Locks and invariants
//!
//! `Shared` is the state the facade, the appenders and the syncer share:
//! - `pending` (`commit.rs`): buffer, region maxima of the buffered
//!   entries, last txid, closed flag, and the sequence-id accounting. Held
//!   for a memcpy (or one accounting update or check) at a time; records
//!   are framed and checksummed in a per-thread buffer before it is taken.
//! - `io` (`Io`): the writer, the numbering, the seal of the previous
//!   file. Held for a whole round or roll, so only one thread does file I/O
//!   at a time.
//! - `outcomes` (`commit.rs`): `done_txid`, the leader flag, failed txid
//!   ranges.
//! - `live_files` (`file_manager.rs`): live files and their per-region max
//!   seqs; `archiving` serializes archivers.
//! - Lock order: `io` → (`pending` | `live_files` | `outcomes`), and
//!   `archiving` → `live_files`. No thread holds `pending`, `live_files` or
//!   `outcomes` while taking another lock, and none waits on a condvar
//!   while holding `io`.
//! - Between rounds, a healthy writer has synced everything it wrote.
//!
//! Thread safety: `Wal` is `Send + Sync`; share it as `Arc<Wal>`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::layout::wal::{LEGACY_ARCHIVE_DIR, archive_dir, list_log_files};
use crate::wal::codec;
use crate::wal::commit_queue::{Outcomes, Pending};
use crate::wal::live_files::{self, LiveFiles, Seal};
use crate::wal::options::{Durability, WalOptions};
use crate::wal::reader::{ReplaySummary, WalReader, WalReplay};
use crate::wal::record::{self, ENTRY_FIXED_LEN, MAX_PAYLOAD_LEN, RECORD_FRAME_LEN, WalEntry};
use crate::wal::shared::{AppendTicket, Io, Shared};
use crate::wal::stats::{Counters, SyncBuckets, SyncLatency, SyncTimes, WalStats};

/// A per-thread record buffer larger than this is shrunk back.
const MAX_RECORD_BUF_CAPACITY: usize = 1 << 20;

thread_local! {
    /// Where a record is framed and checksummed before the `pending` lock is
    /// taken (`commit.rs`); reused, so a steady stream of appends allocates
    /// nothing.
    static RECORD_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The write-ahead log. See the module documentation.
pub struct Wal {
    shared: Arc<Shared>,
    syncer: Mutex<Option<JoinHandle<()>>>,
}

/// Where a WAL lives: its directory, its archive, and the number its files
/// start after (see [`Wal::open_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalPlace {
    pub dir: PathBuf,
    pub archive_dir: PathBuf,
    pub numbered_after: u64,
}

impl Wal {
    /// Recovers and opens the WAL in `dir` (its own directory, e.g.
    /// `<store>/wal`; created if missing): reads every entry of the live
    /// files into the returned [`WalReplay`] (the caller re-inserts those
    /// with a seq above its region's flushed seq), then starts writing; see
    /// [`open_with`](Self::open_with), which streams the entries instead of
    /// holding them all in memory.
    pub fn open(fs: Arc<dyn FileSystem>, dir: &Path, options: WalOptions) -> Result<(Arc<Wal>, WalReplay)> {
        let mut entries = Vec::new();
        let (wal, summary) = Wal::open_with(fs, dir, options, |e| {
            entries.push(e);
            Ok(())
        })?;
        Ok((wal, WalReplay { entries, torn_tail: summary.torn_tail, files: summary.files }))
    }

    /// Recovers and opens the WAL in `dir`: replays every entry of the live
    /// files through `apply`, oldest first (an error from `apply` aborts
    /// the open), removes abandoned files, then starts a new file numbered
    /// after every existing one, live or archived (old files are never
    /// appended to; the new header seals the last one at its valid length),
    /// and the background syncer.
    pub fn open_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: WalOptions,
        apply: impl FnMut(WalEntry) -> Result<()>,
    ) -> Result<(Arc<Wal>, ReplaySummary)> {
        let place = WalPlace { dir: dir.to_path_buf(), archive_dir: archive_dir(dir), numbered_after: 0 };
        Wal::open_at(fs, &place, options, apply)
    }

    /// Like [`open_with`](Self::open_with), at `place`: its own archive
    /// directory, and file numbers after `place.numbered_after` (a store
    /// numbers its new instance's files after those of the instances it
    /// took over; see `takeover.rs`).
    pub fn open_at(
        fs: Arc<dyn FileSystem>,
        place: &WalPlace,
        options: WalOptions,
        mut apply: impl FnMut(WalEntry) -> Result<()>,
    ) -> Result<(Arc<Wal>, ReplaySummary)> {
        options.validate()?;
        let dir = place.dir.as_path();
        let archive_dir = place.archive_dir.clone();
        crate::fs::create_dir_all_durably(&*fs, dir)?;
        if options.keep_archived {
            crate::fs::create_dir_all_durably(&*fs, &archive_dir)?;
        }
        crate::wal::takeover::move_archived(&*fs, &dir.join(LEGACY_ARCHIVE_DIR), &archive_dir, options.keep_archived)?;
        // Fencing: a writer of the previous run (or another process) may
        // still hold a file open. Once its lease is recovered it can append
        // nothing more, and the file's length is final (HBase recovers the
        // lease of every WAL it splits). On local disk this does nothing.
        for (_, path) in list_log_files(&*fs, dir)? {
            fs.recover_lease(&path)?;
        }
        let mut reader = WalReader::open(&*fs, dir)?;
        for entry in reader.by_ref() {
            apply(entry?)?;
        }
        let summary = reader.into_summary();

        live_files::remove_abandoned(&*fs, dir, &summary)?;
        let next_number = live_files::next_file_number(&*fs, dir, &archive_dir, &summary, place.numbered_after)?;
        let (live_files, prev) = LiveFiles::recovered(&summary);

        let shared = Arc::new(Shared {
            fs,
            dir: dir.to_path_buf(),
            archive_dir,
            options,
            pending: Mutex::new(Pending::new()),
            syncer_wakeup: Condvar::new(),
            io: Mutex::new(Io {
                writer: None,
                prev,
                next_number,
                spare_buf: Vec::new(),
                spare_regions: HashMap::new(),
            }),
            outcomes: Mutex::new(Outcomes::new()),
            outcome_cv: Condvar::new(),
            live_files: Mutex::new(live_files),
            archiving: Mutex::new(()),
            counters: Counters::default(),
            sync_times: SyncTimes::default(),
        });
        shared.roll_locked(&mut shared.io.lock())?;
        let syncer = shared.start_syncer()?;
        Ok((Arc::new(Wal { shared, syncer: Mutex::new(Some(syncer)) }), summary))
    }

    /// Reads every entry of the live files in `dir` (read-only; see
    /// `reader.rs` for how a torn tail is told from corruption).
    pub fn replay(fs: &dyn FileSystem, dir: &Path) -> Result<WalReplay> {
        WalReader::read_all(fs, dir)
    }

    /// Logs one row mutation; see [`append_cells`](Self::append_cells).
    pub fn append(&self, entry: &WalEntry, durability: Durability) -> Result<()> {
        self.append_cells(entry.region_id, entry.seq, &entry.cells, durability)
    }

    /// Logs one row mutation given by parts (`cells`: encoded memstore
    /// cells, concatenated). `SyncWal` returns once the record is fsynced,
    /// `AsyncWal` once it is buffered, `SkipWal` at once without logging.
    /// Malformed cells are refused (`MalformedCell`) before anything is
    /// logged, because replay would have to call them corruption.
    pub fn append_cells(&self, region_id: u64, seq: u64, cells: &[u8], durability: Durability) -> Result<()> {
        if durability == Durability::SkipWal {
            return Ok(());
        }
        record::validate_cells(cells).map_err(|(at, reason)| StoreError::MalformedCell {
            place: format!("WAL entry (region {region_id}, seq {seq}) at byte {at}"),
            reason,
        })?;
        let inputs: Vec<memstore::CellInput<'_>> = record::iter_validated_cells(cells).map(|c| c.as_input()).collect();
        let ticket = self
            .append_with(region_id, seq, codec::encoded_len(&inputs), durability, |dst| codec::encode(&inputs, dst))?;
        self.await_durable(ticket)
    }

    /// Logs one entry whose `cells_len` bytes of cells `encode` writes in
    /// place (the grouped encoding of `codec.rs`, from validated cells),
    /// without waiting: the returned ticket
    /// says whether [`await_durable`](Self::await_durable) must wait for a
    /// sync (`SyncWal`, or `AsyncWal` past `max_pending_bytes`). The
    /// region's sequence-id accounting is updated before the entry can reach
    /// any file. `SkipWal` logs nothing.
    pub fn append_with(
        &self,
        region_id: u64,
        seq: u64,
        cells_len: usize,
        durability: Durability,
        encode: impl FnOnce(&mut [u8]),
    ) -> Result<AppendTicket> {
        if durability == Durability::SkipWal {
            return Ok(AppendTicket { txid: 0, wait: false });
        }
        if region_id == record::SYNC_MARK_REGION {
            return Err(StoreError::InvalidArgument(format!("region id {region_id} is reserved for WAL sync marks")));
        }
        if ENTRY_FIXED_LEN + cells_len > MAX_PAYLOAD_LEN {
            return Err(StoreError::TooLarge {
                what: "WAL entry",
                len: (ENTRY_FIXED_LEN + cells_len) as u64,
                limit: MAX_PAYLOAD_LEN as u64,
            });
        }
        RECORD_BUF.with_borrow_mut(|buf| {
            buf.clear();
            buf.resize(record::record_len(cells_len), 0);
            encode(&mut buf[RECORD_FRAME_LEN + ENTRY_FIXED_LEN..]);
            record::frame_record_in_place(buf, region_id, seq);
            let ticket = self.shared.enqueue(buf, region_id, seq, durability);
            if buf.capacity() > MAX_RECORD_BUF_CAPACITY {
                *buf = Vec::new();
            }
            ticket
        })
    }

    /// Waits for the sync an append needs under its durability; the error
    /// of the batch that held it if that failed.
    pub fn await_durable(&self, ticket: AppendTicket) -> Result<()> {
        if ticket.wait { self.shared.wait_durable(ticket.txid) } else { Ok(()) }
    }

    /// A flush of `region` begins: every edit appended for it so far is
    /// covered by the flush. Call it while no edit of the region is between
    /// its append and its memstore insert.
    pub fn start_flush(&self, region: u64) {
        self.shared.pending.lock().accounting.start_flush(region);
    }

    /// The flush begun by `start_flush` committed.
    pub fn complete_flush(&self, region: u64) {
        self.shared.pending.lock().accounting.complete_flush(region);
    }

    /// The flush begun by `start_flush` failed; its edits stay needed.
    pub fn abort_flush(&self, region: u64) {
        self.shared.pending.lock().accounting.abort_flush(region);
    }

    /// Recovery put an entry of `region` back into its memstore: the files
    /// holding it are needed until the region flushes.
    pub fn note_replayed(&self, region: u64, seq: u64) {
        self.shared.pending.lock().accounting.on_append(region, seq);
    }

    /// `region`'s data is gone for good (its table was deleted); its entries
    /// no longer hold files back.
    pub fn forget_region(&self, region: u64) {
        self.shared.pending.lock().accounting.forget(region);
    }

    /// Lowest seq of `region` appended and not yet flushed.
    pub fn lowest_unflushed(&self, region: u64) -> Option<u64> {
        self.shared.pending.lock().accounting.lowest(region)
    }

    /// Waits until everything appended so far is durable; the error of the
    /// batch holding the latest append if that failed.
    pub fn sync(&self) -> Result<()> {
        let txid = {
            let p = self.shared.pending.lock();
            if p.closed {
                return Err(StoreError::Closed);
            }
            p.last_txid
        };
        if txid == 0 { Ok(()) } else { self.shared.wait_durable(txid) }
    }

    /// Writes out what is buffered, closes the current file and starts a
    /// new one.
    pub fn roll(&self) -> Result<()> {
        let s = &*self.shared;
        if s.pending.lock().closed {
            return Err(StoreError::Closed);
        }
        let mut io = s.io.lock();
        s.round_locked(&mut io);
        s.roll_locked(&mut io)
    }

    /// Archives (moves to `oldWALs/` beside the WAL directory, or deletes when `keep_archived` is
    /// off) the oldest non-current files whose entries are all flushed:
    /// for each region with entries in the file, the accounting's lowest
    /// unflushed seq (`None`: nothing unflushed) must be above the file's
    /// max seq for it. Stops at the first file that must stay. Returns how
    /// many went.
    pub fn archive_obsolete(&self) -> Result<usize> {
        self.shared.archive_obsolete()
    }

    /// When more than `max_logs` live files (the current one included)
    /// exist, the regions with entries in the oldest one, ascending: the
    /// caller force-flushes them, then calls `archive_obsolete`. Empty
    /// otherwise, or when no file but the current one has entries (files
    /// without entries go at the next `archive_obsolete` anyway).
    pub fn regions_to_flush(&self, max_logs: usize) -> Vec<u64> {
        self.shared.live_files.lock().regions_to_flush(max_logs)
    }

    /// The live files, oldest first.
    pub fn live_files(&self) -> Vec<PathBuf> {
        self.shared.live_files.lock().paths()
    }

    /// The WAL's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Where archived files go.
    pub fn archive_dir(&self) -> &Path {
        &self.shared.archive_dir
    }

    pub fn stats(&self) -> WalStats {
        let last = self.shared.pending.lock().last_txid;
        let done = self.shared.outcomes.lock().done_txid;
        self.shared.counters.snapshot(last, done)
    }

    /// Bytes the WAL's two batch buffers take: the pending one appends go
    /// into and the one a round writes (or keeps as its spare), at their
    /// capacities. Under `AsyncWal` this is memory outside the memstores
    /// that the process holds; `max_pending_bytes` bounds the first.
    pub fn buffer_bytes(&self) -> u64 {
        let pending = self.shared.pending.lock().buf.capacity() as u64;
        pending + self.shared.counters.round_buffer_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How long the sync rounds of this WAL (since it was opened) took.
    pub fn sync_latency(&self) -> SyncLatency {
        self.shared.sync_times.snapshot()
    }

    /// The same sync rounds as counts at or below each of `bounds`
    /// (ascending), with their exact sum: a Prometheus histogram.
    pub fn sync_latency_buckets(&self, bounds: &[std::time::Duration]) -> SyncBuckets {
        self.shared.sync_times.buckets(bounds)
    }

    /// Writes and syncs what is buffered, stops the syncer and closes the
    /// file. Later appends fail with `StoreError::Closed`. Returns the error
    /// of the final batch, if it failed. Idempotent; `Drop` calls it.
    pub fn close(&self) -> Result<()> {
        let s = &*self.shared;
        s.pending.lock().closed = true;
        s.syncer_wakeup.notify_all();
        if let Some(handle) = self.syncer.lock().take()
            && handle.join().is_err()
        {
            tracing::error!(dir = %s.dir.display(), "the WAL syncer thread panicked");
        }
        let mut io = s.io.lock();
        s.round_locked(&mut io);
        let last = s.pending.lock().last_txid;
        let result = if last == 0 { Ok(()) } else { s.outcomes.lock().outcome(last) };
        if let Some(mut w) = io.writer.take() {
            if w.is_broken() {
                drop(w); // see roll_locked
                return result;
            }
            // A last sync mark: everything before it was fsynced, so replay
            // judges damage anywhere in this file as corruption, not as a
            // hole in an unsynced tail (`reader.rs`).
            if let Err(e) = w.write_and_sync(&[]) {
                tracing::warn!(dir = %s.dir.display(), error = %e, "writing the WAL's closing sync mark failed");
            }
            io.prev = Seal { number: w.number(), valid_len: w.synced_len(), synced: true };
            s.counters.current_file_size.store(0, std::sync::atomic::Ordering::Relaxed);
            w.close()?;
        }
        result
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(dir = %self.shared.dir.display(), error = %e, "closing the WAL failed");
        }
    }
}
