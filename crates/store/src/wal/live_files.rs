//! The WAL's live files, as data: the seal a new file's header puts on the
//! one before it (`Seal`), which regions each live file holds entries of
//! (`LiveFiles`), and at open, cleaning up what replay left and numbering on
//! after every file ever written. Rolling and archiving, which act on them,
//! are `file_manager.rs`; these live apart so that `Shared` (`shared.rs`)
//! can hold them without importing the file manager.
//!
//! Thread safety: `LiveFiles` is behind `Shared::live_files`; `Seal` is
//! behind `Shared::io`. The functions are called at open, before sharing.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::layout::wal::list_log_files;
use crate::wal::reader::ReplaySummary;

/// What a new file's header says about the file before it.
#[derive(Clone, Copy)]
pub(super) struct Seal {
    pub(super) number: u64,
    pub(super) valid_len: u64,
    /// `valid_len` bytes were fsynced by this process (false: read back by
    /// recovery after a crash).
    pub(super) synced: bool,
}

pub(super) struct LogFile {
    pub(super) number: u64,
    pub(super) path: PathBuf,
    pub(super) region_max_seq: HashMap<u64, u64>,
}

/// The live files of the WAL (those not archived yet) and, per file, the
/// highest seq per region written to it.
pub(super) struct LiveFiles {
    /// Live files, oldest first; the last is usually the current one.
    pub(super) files: VecDeque<LogFile>,
    /// The file being written (never archived).
    pub(super) current: Option<u64>,
}

impl LiveFiles {
    /// The live files replay found (abandoned ones left out), and the seal
    /// of the last: recovery cannot know how much of it reached the disk
    /// before the crash (see reader.rs, rule 3).
    pub(super) fn recovered(summary: &ReplaySummary) -> (LiveFiles, Seal) {
        let live: Vec<_> = summary.files.iter().filter(|f| !f.abandoned).collect();
        let prev = live.last().map_or(Seal { number: 0, valid_len: 0, synced: true }, |f| Seal {
            number: f.number,
            valid_len: f.valid_len,
            synced: false,
        });
        let files = LiveFiles {
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
        (files, prev)
    }

    pub(super) fn note_regions(&mut self, number: u64, regions: &HashMap<u64, u64>) {
        if let Some(f) = self.files.iter_mut().rev().find(|f| f.number == number) {
            for (&region, &seq) in regions {
                let max = f.region_max_seq.entry(region).or_insert(seq);
                *max = (*max).max(seq);
            }
        }
    }

    /// See [`Wal::regions_to_flush`](crate::wal::Wal::regions_to_flush).
    pub(super) fn regions_to_flush(&self, max_logs: usize) -> Vec<u64> {
        if self.files.len() <= max_logs {
            return Vec::new();
        }
        let oldest =
            self.files.iter().take_while(|f| Some(f.number) != self.current).find(|f| !f.region_max_seq.is_empty());
        let mut regions: Vec<u64> = oldest.map(|f| f.region_max_seq.keys().copied().collect()).unwrap_or_default();
        regions.sort_unstable();
        regions
    }

    /// The live files' paths, oldest first.
    pub(super) fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

/// Removes the files replay found abandoned (see `reader.rs`).
pub(super) fn remove_abandoned(fs: &dyn FileSystem, dir: &Path, summary: &ReplaySummary) -> Result<()> {
    let mut removed = false;
    for f in summary.files.iter().filter(|f| f.abandoned) {
        fs.remove(&f.path)?;
        removed = true;
    }
    if removed {
        fs.sync_dir(dir)?;
    }
    Ok(())
}

/// The number of the next file: after every file replay found, every
/// archived one, and `numbered_after`.
pub(super) fn next_file_number(
    fs: &dyn FileSystem,
    dir: &Path,
    archive_dir: &Path,
    summary: &ReplaySummary,
    numbered_after: u64,
) -> Result<u64> {
    let mut highest = summary.files.iter().map(|f| f.number).max().unwrap_or(0).max(numbered_after);
    if fs.exists(archive_dir)? {
        highest = highest.max(list_log_files(fs, archive_dir)?.last().map_or(0, |(n, _)| *n));
    }
    highest.checked_add(1).ok_or_else(|| {
        StoreError::corruption(dir, 0, format!("WAL file numbers are exhausted (a file is numbered {highest})"))
    })
}
