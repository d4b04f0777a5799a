//! The WAL's file manager (Pebble's `wal/` manager): which files the log
//! is made of — starting the next one (roll), sealing the one before it,
//! knowing per live file which regions it holds entries of, archiving the
//! files every region has flushed past, and at open, cleaning up what replay
//! left (abandoned files) and numbering on after every file ever written.
//! File names and directory listing are `crate::layout::wal`'s.
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
//! The WAL tracks, per live file, the highest seq per region written to it
//! (`LiveFiles`), and per region the lowest seq appended and not yet
//! flushed (`SequenceIdAccounting`, in the commit pipeline's `pending`
//! state). `archive_obsolete` moves (or deletes) the oldest files whose
//! every region has flushed past them, in order, stopping at the first that
//! cannot go. It needs no list of regions from the caller, so a region
//! created, opened or split during the pass cannot be missed.
//!
//! Invariants:
//! - File numbers only grow: a new file is numbered after every file of
//!   the directory and of the archive, live or archived, abandoned or not.
//! - `LiveFiles::files` is in number order, oldest first; the current file
//!   (the one being written) is never archived, and files go only from the
//!   front, so the live files are always a suffix of the log.
//! - A file's region maxima are noted before a batch is written to it, so
//!   a file that may hold an entry is never judged obsolete without it.
//!
//! Thread safety: a roll runs under `Shared::io` (with the rounds, one at a
//! time); `LiveFiles` is behind `Shared::live_files`, held for a lookup or
//! an update and never while taking another lock; `Shared::archiving`
//! serializes archive passes, which move files without `live_files` held.

use std::collections::HashMap;

use crate::error::Result;
use crate::layout::wal::log_file_name;
use crate::wal::live_files::{LogFile, Seal};
use crate::wal::record::{self, FileHeader, HEADER_LEN};
use crate::wal::shared::{Io, Shared};
use crate::wal::stats::Counters;
use crate::wal::writer::LogWriter;

impl Shared {
    /// Closes the current file (if any) and starts the next one, sealing
    /// the previous file in the new header.
    pub(super) fn roll_locked(&self, io: &mut Io) -> Result<()> {
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
        let mut c = self.live_files.lock();
        c.files.push_back(LogFile { number, path, region_max_seq: HashMap::new() });
        c.current = Some(number);
        Ok(())
    }

    /// See [`Wal::archive_obsolete`](crate::wal::Wal::archive_obsolete).
    pub(super) fn archive_obsolete(&self) -> Result<usize> {
        let _archiving = self.archiving.lock();
        // Snapshot the candidates, so that the caller's function runs (and
        // files are moved) without the live files locked.
        let candidates: Vec<LogFile> = {
            let c = self.live_files.lock();
            c.files
                .iter()
                .take_while(|f| Some(f.number) != c.current)
                .map(|f| LogFile { number: f.number, path: f.path.clone(), region_max_seq: f.region_max_seq.clone() })
                .collect()
        };
        let mut archived = 0;
        let mut result = Ok(());
        for LogFile { number, path, region_max_seq } in candidates {
            let obsolete = self.pending.lock().accounting.is_obsolete(region_max_seq.iter());
            if !obsolete {
                break;
            }
            let moved = if self.options.keep_archived {
                self.fs.rename(&path, &self.archive_dir.join(log_file_name(number)))
            } else {
                self.fs.remove(&path)
            };
            if let Err(e) = moved {
                result = Err(e);
                break;
            }
            let mut c = self.live_files.lock();
            if c.files.front().is_some_and(|f| f.number == number) {
                c.files.pop_front();
            }
            drop(c);
            archived += 1;
            Counters::add(&self.counters.files_archived, 1);
        }
        if archived > 0 {
            tracing::info!(
                files = archived,
                to = %if self.options.keep_archived { self.archive_dir.display().to_string() } else { "deleted".into() },
                "WAL files archived (every edit in them flushed)"
            );
            let synced = self
                .fs
                .sync_dir(&self.dir)
                .and_then(|()| if self.options.keep_archived { self.fs.sync_dir(&self.archive_dir) } else { Ok(()) });
            result = result.and(synced);
        }
        result.map(|()| archived)
    }
}
