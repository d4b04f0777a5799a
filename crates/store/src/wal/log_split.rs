//! WAL splitting (HBase's `WALSplitter`): the edits of a fenced WAL
//! directory — a dead server's — written out per region, so that each
//! region can be opened on any server and replay only its own edits.
//!
//! ```text
//! <region dir>/recovered.edits/wal-<n>.log   one file per split that had edits for the region
//! ```
//!
//! Each output file is a WAL file of its own (version 1 entries: the
//! memstore's cell encoding; no predecessor), read back with the ordinary
//! [`WalReader`], so the torn-tail and corruption rules and the checksums
//! are the WAL's. A file is written under a temporary name, fsynced, and
//! only then renamed into place (and the directory fsynced): a split that
//! crashes leaves no partial `wal-<n>.log`, and is simply run again (the
//! fenced directory is retired only after every output is in place). Its
//! number `n` is one above the highest already in the region's
//! `recovered.edits`, so edits of several dead servers for one region sit
//! side by side; a split run twice writes the same edits twice, which
//! replay applies idempotently (same cells, same sequence ids).
//!
//! Opening a region replays its recovered edits above each family's
//! flushed sequence id, flushes, and only then removes them
//! ([`replay_recovered_edits`](crate::region::Region::replay_recovered_edits)).
//!
//! Entries of regions the caller does not name (a region split or merged
//! away, whose edits its close flushed) are counted and skipped, as the
//! store's own replay skips them.
//!
//! Thread safety: runs in one thread over a fenced directory no one writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::{FileSystem, WritableFile};
use crate::layout::wal::{list_log_files, log_file_name};
use crate::wal::reader::{ReplaySummary, WalReader};
use crate::wal::record::{self, FileHeader};

/// What an output file is called until it is complete.
const TEMP_SUFFIX: &str = ".tmp";
/// Bytes buffered per region before they are handed to its file.
const BUFFER: usize = 1 << 20;

/// What a split wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitSummary {
    /// Entries read from the fenced directory.
    pub entries: u64,
    /// Entries written, per region id.
    pub per_region: BTreeMap<u64, u64>,
    /// Entries of regions not named, per region id (skipped).
    pub skipped: BTreeMap<u64, u64>,
    /// The files written, one per region with edits.
    pub files: Vec<PathBuf>,
}

/// One region's output while the split runs.
struct Output {
    temp: PathBuf,
    path: PathBuf,
    file: Box<dyn WritableFile>,
    buf: Vec<u8>,
}

/// Splits the files of a checked fenced directory (`summary.files`, as
/// [`takeover::check`](crate::wal::takeover::check) left them) into the
/// recovered edits of the regions in `region_dirs` (region id → region
/// directory).
pub fn split(
    fs: &dyn FileSystem,
    summary: &ReplaySummary,
    region_dirs: &BTreeMap<u64, PathBuf>,
) -> Result<SplitSummary> {
    let files: Vec<(u64, PathBuf)> = summary.files.iter().map(|f| (f.number, f.path.clone())).collect();
    let mut reader = WalReader::open_files(fs, files)?;
    let mut outputs: BTreeMap<u64, Output> = BTreeMap::new();
    let mut out = SplitSummary::default();
    for entry in reader.by_ref() {
        let entry = entry?;
        out.entries += 1;
        let Some(dir) = region_dirs.get(&entry.region_id) else {
            *out.skipped.entry(entry.region_id).or_default() += 1;
            continue;
        };
        let output = match outputs.entry(entry.region_id) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(Output::create(fs, dir)?),
        };
        record::encode_record(&mut output.buf, entry.region_id, entry.seq, &entry.cells);
        if output.buf.len() >= BUFFER {
            output.file.append(&output.buf)?;
            output.buf.clear();
        }
        *out.per_region.entry(entry.region_id).or_default() += 1;
    }
    for (_, mut output) in outputs {
        output.file.append(&output.buf)?;
        output.file.sync()?;
        // Closed, not dropped: on HDFS a file still open for writing reads
        // as its completed blocks only, so the region opening it would
        // replay nothing (found by the cluster failover test on HDFS).
        output.file.close()?;
        fs.rename(&output.temp, &output.path)?;
        if let Some(parent) = output.path.parent() {
            fs.sync_dir(parent)?;
        }
        out.files.push(output.path);
    }
    if !out.skipped.is_empty() {
        tracing::info!(regions = ?out.skipped.keys().collect::<Vec<_>>(), "WAL split skipped the edits of regions no longer open");
    }
    tracing::info!(entries = out.entries, regions = out.per_region.len(), "WAL split");
    Ok(out)
}

impl Output {
    /// A new recovered-edits file for the region in `region_dir`, numbered
    /// after those already there, under its temporary name.
    fn create(fs: &dyn FileSystem, region_dir: &Path) -> Result<Output> {
        let dir = crate::layout::wal::recovered_edits_dir(region_dir);
        let fresh = !fs.exists(&dir)?;
        fs.create_dir_all(&dir)?;
        if fresh {
            fs.sync_dir(region_dir)?;
        }
        let number = list_log_files(fs, &dir)?.last().map_or(1, |(n, _)| n + 1);
        let path = dir.join(log_file_name(number));
        let temp = dir.join(format!("{}{TEMP_SUFFIX}", log_file_name(number)));
        if fs.exists(&temp)? {
            fs.remove(&temp)?; // debris of a split that crashed
        }
        let mut file = fs.create(&temp)?;
        let header = FileHeader { version: 1, number, prev_number: 0, prev_valid_len: 0, prev_synced: true };
        file.append(&header.encode())?;
        Ok(Output { temp, path, file, buf: Vec::with_capacity(BUFFER) })
    }
}

/// The recovered-edits files of the region in `region_dir`, oldest first
/// (none if it has none); temporary files of a crashed split are removed.
pub fn recovered_edits(fs: &dyn FileSystem, region_dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let dir = crate::layout::wal::recovered_edits_dir(region_dir);
    if !fs.exists(&dir)? {
        return Ok(Vec::new());
    }
    for name in fs.list(&dir)? {
        if name.ends_with(TEMP_SUFFIX) {
            fs.remove(&dir.join(name))?;
        }
    }
    list_log_files(fs, &dir)
}

/// Removes a region's recovered edits once they are replayed and flushed.
pub fn remove_recovered_edits(fs: &dyn FileSystem, region_dir: &Path) -> Result<()> {
    let dir = crate::layout::wal::recovered_edits_dir(region_dir);
    if fs.exists(&dir)? {
        fs.remove_dir_all(&dir)?;
        fs.sync_dir(region_dir)?;
    }
    Ok(())
}
