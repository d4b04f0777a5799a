//! `WalReader`: replays the live WAL files of a directory, oldest first,
//! one entry at a time, telling a torn tail (the expected debris of a crash
//! or of a failed write) from corruption (damage to data that was durable).
//!
//! ## Torn tail or corruption?
//!
//! A *bad record* is one whose frame is cut short by the end of the file,
//! whose length is impossible (below 16 or past the end of the file), or
//! whose checksum does not match. What a bad record at offset `X` of file
//! `F` means depends on what is known about `F`'s end:
//!
//! 1. **`F` is the last file.** No seal: the writer may have died mid-write.
//!    The bad record is a **torn tail** only if no valid record (plausible
//!    length, matching checksum) starts anywhere after it in `F`; replay
//!    then ends cleanly and reports `torn_tail = (F, X)`. If a valid record
//!    follows, the bad one was written whole and damaged later:
//!    **corruption**.
//! 2. **`F` has a successor, sealed while writing** (the successor's header
//!    has `prev_synced`): the writer fsynced `F`'s first `prev_valid_len`
//!    bytes (after a clean roll, the whole file; after a failed write or
//!    fsync, up to the last successful fsync). `X >= prev_valid_len`: the
//!    debris of the failure, reading of `F` stops there (`cut_at`) and goes
//!    on with the successor. `X < prev_valid_len`: durable data is damaged:
//!    **corruption**, and so is a file shorter than its seal.
//! 3. **`F` has a successor, sealed by recovery** (`prev_synced` false): `F`
//!    was the last file of a run that crashed; recovery read its first
//!    `prev_valid_len` bytes but cannot know how many were on disk, so a
//!    later power loss may still take some of them. Bytes at or past the
//!    seal are debris; below it, `F` is judged like a last file ending at
//!    the seal (rule 1, looking for valid records only below the seal), and
//!    a file shorter than its seal is not an error.
//!
//! A record whose checksum matches but whose cells are malformed is always
//! corruption (it cannot be a torn write). So is a foreign header (bad
//! magic, unknown version or flags), a header whose number disagrees with
//! its file name, or a successor whose header names another predecessor (a
//! file is missing).
//!
//! **Holes in the unsynced tail** (point-in-time recovery, as RocksDB's
//! `kPointInTimeRecovery`): after a power loss, unsynced pages of the last
//! file can be lost out of order, leaving a hole followed by intact records.
//! In files with sync marks (version 3, `record.rs`), the valid records
//! after a bad one decide: a valid *sync mark* after it says the writer had
//! fsynced the bad bytes before it wrote the mark, so they were durable:
//! **corruption**. Intact records but no mark after it: the bad bytes were
//! never known to be on disk, so replay ends at the hole as at a torn tail
//! (the records after it were not synced either, and no `SyncWal` write
//! among them was acknowledged) and logs what it dropped. Rules 1 and 3
//! (below the seal) both judge this way; version 1 and 2 files, without
//! marks, keep the strict rule (any valid record after a bad one is
//! corruption). Known limit: damage to the synced bytes of the last round
//! before the crash, together with the loss of every later mark, reads as
//! a hole — the file holds no later proof that those bytes were durable.
//!
//! A trailing file whose header itself is torn (shorter than a header, all
//! zeros, or a checksum mismatch) and that holds no valid record is the
//! debris of a file creation that did not complete; it holds nothing,
//! is reported as `abandoned`, and the file before it is judged as the last
//! file. `Wal::open` removes such files before it starts its new file.
//!
//! Corruption is returned as `StoreError::Corruption` naming the file and
//! the offset; replay never skips it silently and never panics on any input.
//!
//! Thread safety: a reader has one owner; it only reads files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, ReadableFile};
use crate::layout::wal::list_log_files;
use crate::wal::codec;
use crate::wal::record::{
    self, ENTRY_FIXED_LEN, FileHeader, FrameCheck, HEADER_LEN, HeaderCheck, RECORD_FRAME_LEN, SYNC_MARK_REGION,
    SYNC_MARK_VERSION, WalEntry,
};

/// How much of a file is read at a time.
const READ_BLOCK: usize = 1 << 20;

/// What replay found in one WAL file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalFileSummary {
    pub number: u64,
    pub path: PathBuf,
    /// The file's size in bytes.
    pub len: u64,
    /// Offset just past the last valid record (or the header).
    pub valid_len: u64,
    pub entries: u64,
    /// Per region, the highest seq of its entries in this file.
    pub region_max_seq: BTreeMap<u64, u64>,
    /// Where unreadable bytes began that were ignored as a torn tail or as
    /// sealed debris, if any.
    pub cut_at: Option<u64>,
    /// A trailing file whose creation never completed (torn header, no
    /// records): it holds nothing.
    pub abandoned: bool,
}

/// The outcome of a replay, apart from the entries themselves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplaySummary {
    /// Entries replayed.
    pub entries: u64,
    /// Where the log ends in a torn record: the last file with data and the
    /// offset of its first bad byte (or an abandoned file, at offset 0).
    pub torn_tail: Option<(PathBuf, u64)>,
    /// Every live file, oldest first.
    pub files: Vec<WalFileSummary>,
}

/// All the entries of a WAL directory, oldest first, with what
/// [`ReplaySummary`] tells.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WalReplay {
    pub entries: Vec<WalEntry>,
    pub torn_tail: Option<(PathBuf, u64)>,
    pub files: Vec<WalFileSummary>,
}

/// How the end of a file is judged (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Rule 1: bad bytes are torn only if no valid record follows.
    Last,
    /// Rule 2: bad bytes at or past this offset are debris, before it
    /// corruption.
    Synced(u64),
    /// Rule 3: bad bytes at or past this offset are debris, before it torn
    /// if no valid record follows below it.
    Recovered(u64),
}

struct PlannedFile {
    number: u64,
    path: PathBuf,
    file: Arc<dyn ReadableFile>,
    /// False: the header is torn (and the file is sealed at 0 or abandoned).
    valid_header: bool,
    /// The header's format version (how entries encode their cells).
    version: u32,
    tail: Tail,
    abandoned: bool,
}

/// Streams the entries of every live WAL file, oldest first. Iterate it
/// (`Result<WalEntry>` items; it stops after the first error), then take
/// [`into_summary`](Self::into_summary).
pub struct WalReader {
    files: Vec<PlannedFile>,
    index: usize,
    cursor: Option<FileCursor>,
    summary: ReplaySummary,
    failed: bool,
}

impl WalReader {
    /// Opens the WAL files of `dir` (its live files, not the archive) and
    /// checks how they chain, before any entry is read.
    pub fn open(fs: &dyn FileSystem, dir: &Path) -> Result<WalReader> {
        Self::open_files(fs, list_log_files(fs, dir)?)
    }

    /// Like [`open`](Self::open), over the given files only (numbers and
    /// paths, oldest first): a second pass of recovery reads the files the
    /// first pass found, not the file the reopened WAL started since.
    pub fn open_files(fs: &dyn FileSystem, listed: Vec<(u64, PathBuf)>) -> Result<WalReader> {
        let mut files = Vec::new();
        let mut headers = Vec::new();
        for (number, path) in listed {
            let file = fs.open(&path)?;
            let mut head = vec![0u8; (file.len() as usize).min(HEADER_LEN)];
            file.read_at(0, &mut head)?;
            let header = match FileHeader::check(&head) {
                HeaderCheck::Valid(h) if h.number != number => {
                    return Err(StoreError::corruption(
                        &path,
                        16,
                        format!("the header says this is WAL file {}, not {number}", h.number),
                    ));
                }
                HeaderCheck::Valid(h) => Some(h),
                HeaderCheck::Torn(_) => None,
                HeaderCheck::Foreign(reason) => return Err(StoreError::corruption(&path, 0, reason)),
            };
            headers.push(header);
            files.push(PlannedFile {
                number,
                path,
                file,
                valid_header: header.is_some(),
                version: header.map_or(record::FORMAT_VERSION, |h| h.version),
                tail: Tail::Last,
                abandoned: false,
            });
        }

        // Trailing files with a torn header and no record are abandoned
        // creations; the file before them is the last one with data.
        let mut last = files.len();
        while last > 0 && !files[last - 1].valid_header {
            let f = &files[last - 1];
            let mut cursor = FileCursor::new(f.file.clone(), f.path.clone(), 0);
            if let Some(y) = cursor.find_valid_record(1, f.file.len())? {
                return Err(StoreError::corruption(
                    &f.path,
                    0,
                    format!("the file header is damaged but a valid record follows at offset {y}"),
                ));
            }
            files[last - 1].abandoned = true;
            last -= 1;
        }

        // Each file before the last one with data is sealed by its successor.
        for i in 0..last.saturating_sub(1) {
            let next = headers[i + 1].ok_or_else(|| {
                StoreError::corruption(&files[i + 1].path, 0, "the file header is damaged in the middle of the log")
            })?;
            let f = &files[i];
            if next.prev_number != f.number {
                return Err(StoreError::corruption(
                    &files[i + 1].path,
                    24,
                    format!(
                        "this file follows WAL file {} but the file before it is {}: a WAL file is missing",
                        next.prev_number, f.number
                    ),
                ));
            }
            if next.prev_synced && next.prev_valid_len > f.file.len() {
                return Err(StoreError::corruption(
                    &f.path,
                    f.file.len(),
                    format!(
                        "the file has {} bytes but {} sealed {} bytes of it as durable: synced data is lost",
                        f.file.len(),
                        files[i + 1].path.display(),
                        next.prev_valid_len
                    ),
                ));
            }
            if !f.valid_header && next.prev_valid_len > 0 {
                return Err(StoreError::corruption(&f.path, 0, "the file header is damaged"));
            }
            files[i].tail =
                if next.prev_synced { Tail::Synced(next.prev_valid_len) } else { Tail::Recovered(next.prev_valid_len) };
        }

        Ok(WalReader { files, index: 0, cursor: None, summary: ReplaySummary::default(), failed: false })
    }

    /// Reads every entry of `dir` into memory.
    pub fn read_all(fs: &dyn FileSystem, dir: &Path) -> Result<WalReplay> {
        let mut reader = WalReader::open(fs, dir)?;
        let mut entries = Vec::new();
        for e in reader.by_ref() {
            entries.push(e?);
        }
        let summary = reader.into_summary();
        Ok(WalReplay { entries, torn_tail: summary.torn_tail, files: summary.files })
    }

    /// What was read (complete once the iterator has returned `None`).
    pub fn into_summary(self) -> ReplaySummary {
        self.summary
    }

    fn next_entry(&mut self) -> Result<Option<WalEntry>> {
        loop {
            let Some(f) = self.files.get(self.index) else {
                return Ok(None);
            };
            if self.cursor.is_none() {
                if f.abandoned || !f.valid_header {
                    // Abandoned, or a torn header sealed at 0: nothing in it.
                    if f.abandoned && self.summary.torn_tail.is_none() {
                        self.summary.torn_tail = Some((f.path.clone(), 0));
                    }
                    self.summary.files.push(WalFileSummary {
                        number: f.number,
                        path: f.path.clone(),
                        len: f.file.len(),
                        valid_len: 0,
                        entries: 0,
                        region_max_seq: BTreeMap::new(),
                        cut_at: Some(0),
                        abandoned: f.abandoned,
                    });
                    self.index += 1;
                    continue;
                }
                let mut cursor = FileCursor::new(f.file.clone(), f.path.clone(), HEADER_LEN as u64);
                cursor.version = f.version;
                self.cursor = Some(cursor);
                self.summary.files.push(WalFileSummary {
                    number: f.number,
                    path: f.path.clone(),
                    len: f.file.len(),
                    valid_len: HEADER_LEN as u64,
                    entries: 0,
                    region_max_seq: BTreeMap::new(),
                    cut_at: None,
                    abandoned: false,
                });
            }
            let tail = f.tail;
            let cursor = self.cursor.as_mut().expect("cursor was just set");
            let file_summary = self.summary.files.last_mut().expect("summary was pushed with the cursor");
            match cursor.next_record()? {
                Next::Entry(e) => {
                    file_summary.entries += 1;
                    file_summary.valid_len = cursor.offset;
                    let max = file_summary.region_max_seq.entry(e.region_id).or_insert(e.seq);
                    *max = (*max).max(e.seq);
                    self.summary.entries += 1;
                    return Ok(Some(e));
                }
                Next::Mark => {
                    file_summary.valid_len = cursor.offset;
                    continue;
                }
                Next::End => {}
                Next::Bad { offset, reason } => {
                    // Below which offset a valid record after the bad one
                    // would prove corruption (None: the bad bytes are debris).
                    let proof_end = match tail {
                        Tail::Last => Some(cursor.len),
                        Tail::Synced(seal) | Tail::Recovered(seal) if offset >= seal => None,
                        Tail::Synced(seal) => {
                            return Err(StoreError::corruption(
                                &cursor.path,
                                offset,
                                format!("{reason} (inside the first {seal} bytes, sealed as durable)"),
                            ));
                        }
                        Tail::Recovered(seal) => Some(seal.min(cursor.len)),
                    };
                    if let Some(end) = proof_end {
                        if cursor.version >= SYNC_MARK_VERSION {
                            if let Some(m) = cursor.find_sync_mark(offset + 1, end)? {
                                return Err(StoreError::corruption(
                                    &cursor.path,
                                    offset,
                                    format!("{reason}, and a sync mark at offset {m} says it was fsynced"),
                                ));
                            }
                            if let Some(y) = cursor.find_valid_record(offset + 1, end)? {
                                tracing::warn!(
                                    file = %cursor.path.display(),
                                    offset,
                                    reason,
                                    first_intact = y,
                                    dropped_bytes = end - offset,
                                    "WAL replay ended at a hole in the unsynced tail (point-in-time recovery): \
                                     the intact records after it were never synced and are dropped"
                                );
                            }
                        } else if let Some(y) = cursor.find_valid_record(offset + 1, end)? {
                            return Err(StoreError::corruption(
                                &cursor.path,
                                offset,
                                format!("{reason}, and a valid record follows at offset {y}"),
                            ));
                        }
                    }
                    if tail == Tail::Last {
                        self.summary.torn_tail = Some((cursor.path.clone(), offset));
                    }
                    tracing::debug!(file = %cursor.path.display(), offset, reason, "WAL replay cut a file short");
                    file_summary.cut_at = Some(offset);
                }
            }
            self.cursor = None;
            self.index += 1;
        }
    }
}

impl Iterator for WalReader {
    type Item = Result<WalEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_entry() {
            Ok(e) => e.map(Ok),
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

enum Next {
    Entry(WalEntry),
    /// A sync mark (version 3): no entry, reading goes on after it.
    Mark,
    End,
    Bad {
        offset: u64,
        reason: &'static str,
    },
}

/// Sequential reads of one file through a window buffer.
struct FileCursor {
    file: Arc<dyn ReadableFile>,
    path: PathBuf,
    len: u64,
    /// Offset of the next record.
    offset: u64,
    buf: Vec<u8>,
    buf_start: u64,
    /// Format version of the file's entries.
    version: u32,
}

impl FileCursor {
    fn new(file: Arc<dyn ReadableFile>, path: PathBuf, offset: u64) -> FileCursor {
        let len = file.len();
        FileCursor { file, path, len, offset, buf: Vec::new(), buf_start: 0, version: record::FORMAT_VERSION }
    }

    /// `n` bytes at `off`, or `None` if the file ends before.
    fn fetch(&mut self, off: u64, n: usize) -> Result<Option<&[u8]>> {
        let end = off.checked_add(n as u64).filter(|&e| e <= self.len);
        let Some(end) = end else {
            return Ok(None);
        };
        let buf_end = self.buf_start + self.buf.len() as u64;
        if off < self.buf_start || end > buf_end {
            let want = (n.max(READ_BLOCK) as u64).min(self.len - off) as usize;
            self.buf.resize(want, 0);
            self.file.read_at(off, &mut self.buf)?;
            self.buf_start = off;
        }
        let start = (off - self.buf_start) as usize;
        Ok(Some(&self.buf[start..start + n]))
    }

    /// Checks the record at `off`: its payload length if it is valid.
    fn check_at(&mut self, off: u64) -> Result<std::result::Result<usize, &'static str>> {
        let Some(frame) = self.fetch(off, RECORD_FRAME_LEN)? else {
            return Ok(Err("truncated record frame"));
        };
        let (_, payload_len) = record::frame_fields(frame);
        if payload_len < ENTRY_FIXED_LEN {
            return Ok(Err("record length below the minimum"));
        }
        let Some(rec) = self.fetch(off, RECORD_FRAME_LEN + payload_len)? else {
            return Ok(Err("record extends past the end of the file"));
        };
        Ok(match record::check_record(rec) {
            FrameCheck::Valid { payload_len } => Ok(payload_len),
            FrameCheck::Bad(reason) => Err(reason),
        })
    }

    fn next_record(&mut self) -> Result<Next> {
        let off = self.offset;
        if off == self.len {
            return Ok(Next::End);
        }
        let payload_len = match self.check_at(off)? {
            Ok(n) => n,
            Err(reason) => return Ok(Next::Bad { offset: off, reason }),
        };
        let grouped = self.version >= 2;
        let marks = self.version >= SYNC_MARK_VERSION;
        let Some(rec) = self.fetch(off, RECORD_FRAME_LEN + payload_len)? else {
            return Ok(Next::Bad { offset: off, reason: "record extends past the end of the file" });
        };
        let (region_id, seq, cells) = record::split_payload(&rec[RECORD_FRAME_LEN..]);
        if marks && region_id == SYNC_MARK_REGION {
            let cells_len = cells.len();
            if seq != off || cells_len != 0 {
                return Err(StoreError::corruption(
                    &self.path,
                    off,
                    format!(
                        "the record's checksum matches but it is a malformed sync mark (says offset {seq}, \
                         {cells_len} bytes of cells)"
                    ),
                ));
            }
            self.offset = off + (RECORD_FRAME_LEN + payload_len) as u64;
            return Ok(Next::Mark);
        }
        let decoded =
            if grouped { codec::decode(cells, seq) } else { record::validate_cells(cells).map(|()| cells.to_vec()) };
        let cells = decoded.map_err(|(at, reason)| {
            StoreError::corruption(
                &self.path,
                off,
                format!("the record's checksum matches but its cell at byte {at} is malformed: {reason}"),
            )
        })?;
        let entry = WalEntry { region_id, seq, cells };
        self.offset = off + (RECORD_FRAME_LEN + payload_len) as u64;
        Ok(Next::Entry(entry))
    }

    /// The first offset at or after `from` where a valid sync mark starts
    /// that ends by `end` (a valid record of the mark's region, length and
    /// own offset).
    fn find_sync_mark(&mut self, from: u64, end: u64) -> Result<Option<u64>> {
        let mut y = from;
        while let Some(at) = self.find_valid_record(y, end)? {
            if let Some(rec) = self.fetch(at, record::SYNC_MARK_LEN)?
                && record::frame_fields(rec).1 == ENTRY_FIXED_LEN
                && record::split_payload(&rec[RECORD_FRAME_LEN..]).0 == SYNC_MARK_REGION
                && record::split_payload(&rec[RECORD_FRAME_LEN..]).1 == at
            {
                return Ok(Some(at));
            }
            y = at + 1;
        }
        Ok(None)
    }

    /// The first offset at or after `from` where a valid record starts
    /// that ends by `end`.
    fn find_valid_record(&mut self, from: u64, end: u64) -> Result<Option<u64>> {
        let min = (RECORD_FRAME_LEN + ENTRY_FIXED_LEN) as u64;
        let mut y = from;
        while y + min <= end {
            if let Ok(payload_len) = self.check_at(y)?
                && y + (RECORD_FRAME_LEN + payload_len) as u64 <= end
            {
                return Ok(Some(y));
            }
            y += 1;
        }
        Ok(None)
    }
}
