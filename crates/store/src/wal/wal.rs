//! `Wal`: the write-ahead log of a store instance, shared by all its
//! regions — group commit, background sync, roll, archive, recovery.
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
//! rolls to a new file whose header seals the broken one at its last synced
//! length (see `reader.rs`), so there is never a hole inside a file that
//! replay trusts. If the new file cannot be created either (full disk), that
//! round's batch fails the same way and the next round tries again, so the
//! WAL heals by itself once the disk does; no manual `roll()` is needed.
//! A failed fsync is never retried on the same file (after a failed fsync,
//! Linux may have dropped the dirty pages, so a retry can falsely succeed).
//!
//! ## Files
//!
//! Rolls happen after a round once the file passes `roll_size` (and on a
//! broken file, and on `roll()`). A new file's header is fsynced and the
//! directory synced before any record goes in. The header seals the
//! previous file at its synced length; at recovery, it seals the last file
//! of the crashed run at the length replay could read, flagged as not known
//! to be synced (`reader.rs` explains how replay uses seals).
//!
//! `Wal` tracks, per live file, the highest seq per region written to it,
//! and per region the lowest seq appended and not yet flushed
//! ([`SequenceIdAccounting`], updated inside `append` under the same lock
//! that buffers the entry, and moved by `start_flush` / `complete_flush` /
//! `abort_flush`). `archive_obsolete` moves (or deletes) the oldest files
//! whose every region has flushed past them, in order, stopping at the
//! first that cannot go. It needs no list of regions from the caller, so a
//! region created, opened or split during the pass cannot be missed.
//!
//! ## Locks and invariants
//!
//! - `pending`: buffer, region maxima of the buffered entries, last txid,
//!   closed flag, and the sequence-id accounting. Held for a memcpy (or one
//!   accounting update or check) at a time; records are framed and
//!   checksummed in a per-thread buffer before it is taken.
//! - `io`: the writer, the numbering, the seal of the previous file. Held
//!   for a whole round or roll, so only one thread does file I/O at a time.
//! - `outcomes`: `done_txid`, the leader flag, failed txid ranges.
//! - `catalog`: live files and their per-region max seqs; `archiving`
//!   serializes archivers.
//! - Lock order: `io` → (`pending` | `catalog` | `outcomes`), and
//!   `archiving` → `catalog`. No thread holds `pending`, `catalog` or
//!   `outcomes` while taking another lock, and none waits on a condvar
//!   while holding `io`.
//! - Between rounds, a healthy writer has synced everything it wrote.
//! - Batches are contiguous txid ranges published in increasing order, so
//!   a single `done_txid` watermark plus a list of failed ranges tells each
//!   waiter its outcome.
//!
//! Thread safety: `Wal` is `Send + Sync`; share it as `Arc<Wal>`.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::layout::wal::{LEGACY_ARCHIVE_DIR, archive_dir, list_log_files, log_file_name};
use crate::wal::accounting::SequenceIdAccounting;
use crate::wal::codec;
use crate::wal::options::{Durability, WalOptions};
use crate::wal::reader::{ReplaySummary, WalReader, WalReplay};
use crate::wal::record::{self, ENTRY_FIXED_LEN, FileHeader, HEADER_LEN, MAX_PAYLOAD_LEN, RECORD_FRAME_LEN, WalEntry};
use crate::wal::stats::{Counters, SyncBuckets, SyncLatency, SyncTimes, WalStats};
use crate::wal::writer::LogWriter;

/// Failed txid ranges remembered for late waiters; older ones are forgotten
/// and their txids conservatively reported as failed.
const MAX_REMEMBERED_FAILURES: usize = 1024;
/// A recycled batch buffer larger than this is shrunk back.
const MAX_SPARE_CAPACITY: usize = 8 << 20;
/// A per-thread record buffer larger than this is shrunk back.
const MAX_RECORD_BUF_CAPACITY: usize = 1 << 20;

thread_local! {
    /// Where a record is framed and checksummed before the `pending` lock is
    /// taken; reused, so a steady stream of appends allocates nothing.
    static RECORD_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An append whose durability may still have to be awaited
/// ([`Wal::await_durable`]).
#[derive(Debug)]
#[must_use = "a SYNC_WAL append is not durable until awaited"]
pub struct AppendTicket {
    txid: u64,
    wait: bool,
}

/// The write-ahead log. See the module documentation.
pub struct Wal {
    shared: Arc<Shared>,
    syncer: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    archive_dir: PathBuf,
    options: WalOptions,
    pending: Mutex<Pending>,
    /// Wakes the syncer (paired with `pending`).
    syncer_wakeup: Condvar,
    io: Mutex<Io>,
    outcomes: Mutex<Outcomes>,
    /// Signals a published outcome or a free leader slot (paired with
    /// `outcomes`).
    outcome_cv: Condvar,
    catalog: Mutex<Catalog>,
    archiving: Mutex<()>,
    counters: Counters,
    sync_times: SyncTimes,
}

struct Pending {
    buf: Vec<u8>,
    /// Per region, the highest seq among the buffered entries.
    regions: HashMap<u64, u64>,
    last_txid: u64,
    closed: bool,
    accounting: SequenceIdAccounting,
}

struct Io {
    writer: Option<LogWriter>,
    /// The file the next file's header seals.
    prev: Seal,
    next_number: u64,
    spare_buf: Vec<u8>,
    spare_regions: HashMap<u64, u64>,
}

/// What a new file's header says about the file before it.
#[derive(Clone, Copy)]
struct Seal {
    number: u64,
    valid_len: u64,
    /// `valid_len` bytes were fsynced by this process (false: read back by
    /// recovery after a crash).
    synced: bool,
}

struct Failure {
    first: u64,
    last: u64,
    error: Arc<StoreError>,
}

struct Outcomes {
    /// Every txid up to this one has been written and synced, or failed.
    done_txid: u64,
    /// A `SyncWal` appender is running a round.
    leader: bool,
    failures: VecDeque<Failure>,
    /// Failures up to this txid may have been forgotten.
    forgotten_upto: u64,
}

struct LogFile {
    number: u64,
    path: PathBuf,
    region_max_seq: HashMap<u64, u64>,
}

struct Catalog {
    /// Live files, oldest first; the last is usually the current one.
    files: VecDeque<LogFile>,
    /// The file being written (never archived).
    current: Option<u64>,
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

        let mut removed = false;
        for f in summary.files.iter().filter(|f| f.abandoned) {
            fs.remove(&f.path)?;
            removed = true;
        }
        if removed {
            fs.sync_dir(dir)?;
        }
        let mut highest = summary.files.iter().map(|f| f.number).max().unwrap_or(0).max(place.numbered_after);
        if fs.exists(&archive_dir)? {
            highest = highest.max(list_log_files(&*fs, &archive_dir)?.last().map_or(0, |(n, _)| *n));
        }
        let live: Vec<_> = summary.files.iter().filter(|f| !f.abandoned).collect();
        // Recovery cannot know how much of the last file reached the disk
        // before the crash (see reader.rs, rule 3).
        let prev = live.last().map_or(Seal { number: 0, valid_len: 0, synced: true }, |f| Seal {
            number: f.number,
            valid_len: f.valid_len,
            synced: false,
        });
        let catalog = Catalog {
            files: live
                .iter()
                .map(|f| LogFile {
                    number: f.number,
                    path: f.path.clone(),
                    region_max_seq: f.region_max_seq.iter().map(|(&r, &s)| (r, s)).collect(),
                })
                .collect(),
            current: None,
        };
        let next_number = highest.checked_add(1).ok_or_else(|| {
            StoreError::corruption(dir, 0, format!("WAL file numbers are exhausted (a file is numbered {highest})"))
        })?;

        let shared = Arc::new(Shared {
            fs,
            dir: dir.to_path_buf(),
            archive_dir,
            options,
            pending: Mutex::new(Pending {
                buf: Vec::new(),
                regions: HashMap::new(),
                last_txid: 0,
                closed: false,
                accounting: SequenceIdAccounting::default(),
            }),
            syncer_wakeup: Condvar::new(),
            io: Mutex::new(Io {
                writer: None,
                prev,
                next_number,
                spare_buf: Vec::new(),
                spare_regions: HashMap::new(),
            }),
            outcomes: Mutex::new(Outcomes {
                done_txid: 0,
                leader: false,
                failures: VecDeque::new(),
                forgotten_upto: 0,
            }),
            outcome_cv: Condvar::new(),
            catalog: Mutex::new(catalog),
            archiving: Mutex::new(()),
            counters: Counters::default(),
            sync_times: SyncTimes::default(),
        });
        shared.roll_locked(&mut shared.io.lock())?;
        let syncer_shared = shared.clone();
        let syncer = std::thread::Builder::new()
            .name("wal-syncer".into())
            .spawn(move || syncer_shared.syncer_loop())
            .map_err(|e| StoreError::io("spawn the syncer of", dir, e))?;
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
        let s = &*self.shared;
        RECORD_BUF.with_borrow_mut(|buf| {
            buf.clear();
            buf.resize(record::record_len(cells_len), 0);
            encode(&mut buf[RECORD_FRAME_LEN + ENTRY_FIXED_LEN..]);
            record::frame_record_in_place(buf, region_id, seq);
            let (txid, wake_syncer, over_limit) = {
                let mut p = s.pending.lock();
                if p.closed {
                    return Err(StoreError::Closed);
                }
                p.accounting.on_append(region_id, seq);
                let before = p.buf.len() as u64;
                p.buf.extend_from_slice(buf);
                p.last_txid += 1;
                let max = p.regions.entry(region_id).or_insert(seq);
                *max = (*max).max(seq);
                let after = p.buf.len() as u64;
                let threshold = s.options.sync_bytes;
                (p.last_txid, before < threshold && after >= threshold, after > s.options.max_pending_bytes)
            };
            if buf.capacity() > MAX_RECORD_BUF_CAPACITY {
                *buf = Vec::new();
            }
            Counters::add(&s.counters.appends, 1);
            let wait = durability == Durability::SyncWal || over_limit;
            if !wait && wake_syncer {
                s.syncer_wakeup.notify_one();
            }
            Ok(AppendTicket { txid, wait })
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
        let s = &*self.shared;
        let _archiving = s.archiving.lock();
        // Snapshot the candidates, so that the caller's function runs (and
        // files are moved) without the catalog locked.
        let candidates: Vec<LogFile> = {
            let c = s.catalog.lock();
            c.files
                .iter()
                .take_while(|f| Some(f.number) != c.current)
                .map(|f| LogFile { number: f.number, path: f.path.clone(), region_max_seq: f.region_max_seq.clone() })
                .collect()
        };
        let mut archived = 0;
        let mut result = Ok(());
        for LogFile { number, path, region_max_seq } in candidates {
            let obsolete = s.pending.lock().accounting.is_obsolete(region_max_seq.iter());
            if !obsolete {
                break;
            }
            let moved = if s.options.keep_archived {
                s.fs.rename(&path, &s.archive_dir.join(log_file_name(number)))
            } else {
                s.fs.remove(&path)
            };
            if let Err(e) = moved {
                result = Err(e);
                break;
            }
            let mut c = s.catalog.lock();
            if c.files.front().is_some_and(|f| f.number == number) {
                c.files.pop_front();
            }
            drop(c);
            archived += 1;
            Counters::add(&s.counters.files_archived, 1);
        }
        if archived > 0 {
            tracing::info!(
                files = archived,
                to = %if s.options.keep_archived { s.archive_dir.display().to_string() } else { "deleted".into() },
                "WAL files archived (every edit in them flushed)"
            );
            let synced =
                s.fs.sync_dir(&s.dir)
                    .and_then(|()| if s.options.keep_archived { s.fs.sync_dir(&s.archive_dir) } else { Ok(()) });
            result = result.and(synced);
        }
        result.map(|()| archived)
    }

    /// When more than `max_logs` live files (the current one included)
    /// exist, the regions with entries in the oldest one, ascending: the
    /// caller force-flushes them, then calls `archive_obsolete`. Empty
    /// otherwise, or when no file but the current one has entries (files
    /// without entries go at the next `archive_obsolete` anyway).
    pub fn regions_to_flush(&self, max_logs: usize) -> Vec<u64> {
        let c = self.shared.catalog.lock();
        if c.files.len() <= max_logs {
            return Vec::new();
        }
        let oldest = c.files.iter().take_while(|f| Some(f.number) != c.current).find(|f| !f.region_max_seq.is_empty());
        let mut regions: Vec<u64> = oldest.map(|f| f.region_max_seq.keys().copied().collect()).unwrap_or_default();
        regions.sort_unstable();
        regions
    }

    /// The live files, oldest first.
    pub fn live_files(&self) -> Vec<PathBuf> {
        self.shared.catalog.lock().files.iter().map(|f| f.path.clone()).collect()
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

impl Shared {
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
    fn wait_durable(&self, txid: u64) -> Result<()> {
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
    fn round_locked(&self, io: &mut Io) {
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
        self.catalog.lock().note_regions(w.number(), regions);
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

    /// Closes the current file (if any) and starts the next one, sealing
    /// the previous file in the new header.
    fn roll_locked(&self, io: &mut Io) -> Result<()> {
        if let Some(w) = io.writer.take() {
            debug_assert!(w.is_broken() || w.len() == w.synced_len(), "a healthy writer is synced between rounds");
            io.prev = Seal { number: w.number(), valid_len: w.synced_len(), synced: true };
            self.counters.current_file_size.store(0, std::sync::atomic::Ordering::Relaxed);
            let path = w.path();
            if w.is_broken() {
                // Closing would wait on what broke it (on HDFS, a pipeline
                // that stopped answering, for another full call limit); its
                // seal is in the next header, and the next open recovers its
                // lease.
                drop(w);
            } else if let Err(e) = w.close() {
                tracing::warn!(path = %path.display(), error = %e, "closing a WAL file failed");
            }
        }
        let number = io.next_number;
        let path = self.dir.join(log_file_name(number));
        let header = FileHeader {
            version: record::FORMAT_VERSION,
            number,
            prev_number: io.prev.number,
            prev_valid_len: io.prev.valid_len,
            prev_synced: io.prev.synced,
        };
        let w = LogWriter::create(&*self.fs, &path, &header)?;
        if let Err(e) = self.fs.sync_dir(&self.dir) {
            let _ = w.close();
            let _ = self.fs.remove(&path);
            return Err(e);
        }
        io.next_number += 1;
        io.writer = Some(w);
        Counters::add(&self.counters.files_created, 1);
        Counters::add(&self.counters.bytes_written, HEADER_LEN as u64);
        self.counters.current_file_size.store(HEADER_LEN as u64, std::sync::atomic::Ordering::Relaxed);
        tracing::info!(file = %path.display(), sealed = io.prev.number, sealed_bytes = io.prev.valid_len, "WAL rolled");
        let mut c = self.catalog.lock();
        c.files.push_back(LogFile { number, path, region_max_seq: HashMap::new() });
        c.current = Some(number);
        Ok(())
    }
}

impl Outcomes {
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
    fn outcome(&self, txid: u64) -> Result<()> {
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

impl Catalog {
    fn note_regions(&mut self, number: u64, regions: &HashMap<u64, u64>) {
        if let Some(f) = self.files.iter_mut().rev().find(|f| f.number == number) {
            for (&region, &seq) in regions {
                let max = f.region_max_seq.entry(region).or_insert(seq);
                *max = (*max).max(seq);
            }
        }
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
        let mut o = Outcomes { done_txid: 0, leader: false, failures: VecDeque::new(), forgotten_upto: 0 };
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
