//! Taking over the WAL directories of earlier instances of a store (HBase's
//! WAL splitting, in the same process that replays).
//!
//! ```text
//! <root>/WALs/<host>,<pid>,<start ms>/wal-<n>.log   one directory per instance
//! <root>/WALs/<name>-splitting/                     an earlier one, fenced
//! <root>/oldWALs/wal-<n>.log                        archived files
//! <root>/wal/                                       a store written before (legacy)
//! ```
//!
//! Every opening of a store writes its WAL in a directory of its own. Before
//! it replays the directories of earlier instances it *fences* them, as
//! HBase's master does before it splits a dead server's logs:
//! 1. it renames each to `<name>-splitting`, so that a writer of that
//!    instance still running (a zombie: paused, partitioned, not yet dead)
//!    can no longer create a file there when it rolls — files are created
//!    only in an existing directory, on local disk as on HDFS;
//! 2. it recovers the lease of every file in it (`recover_lease`), so that
//!    the zombie's next append or `hsync` to the file it holds fails.
//!
//! From then on the zombie acknowledges nothing more, and every byte it
//! ever acknowledged is in the fenced files, whose lengths are final. The
//! store replays them, flushes what they held, and then [`retire`]s each
//! fenced directory: its files go to the archive (or are deleted) and the
//! directory is removed. A crash part-way leaves `-splitting` directories
//! that the next open replays again (replay is idempotent above each
//! family's flushed sequence id).
//!
//! File numbers are unique across instances: a new instance numbers its
//! files after every file it found (fenced or archived), so archived files
//! never collide and the directories' files are in log order by number.
//!
//! Thread safety: runs once, in the thread opening the store, before its
//! own WAL exists.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::FileSystem;
use crate::layout::wal::{LEGACY_ARCHIVE_DIR, fenced_name, list_log_files, log_file_name, wals_dir};
pub use crate::layout::wal::{LEGACY_WAL_DIR, SPLITTING_SUFFIX, WALS_DIR};
use crate::wal::reader::{ReplaySummary, WalReader};

/// A name for this instance's WAL directory: host, process id and start
/// time in milliseconds (HBase's server name is host, port, start code).
pub fn instance_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty() && !h.contains('/'))
        .unwrap_or_else(|| "localhost".to_string());
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("{host},{},{millis}", std::process::id())
}

/// An earlier instance's WAL directory, fenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedDir {
    pub dir: PathBuf,
    /// Its WAL files by ascending number.
    pub files: Vec<(u64, PathBuf)>,
}

/// Fences every WAL directory under `root` except `own` (the legacy
/// `<root>/wal` too; see the module doc) and returns them in log order (by
/// their first file's number; empty ones first). The legacy directory's
/// archived files move to `archive_dir` first (or are deleted when
/// archives are not kept).
pub fn fence_earlier(
    fs: &dyn FileSystem,
    root: &Path,
    own: &str,
    archive_dir: &Path,
    keep_archived: bool,
) -> Result<Vec<FencedDir>> {
    let wals = wals_dir(root);
    let mut earlier: Vec<(PathBuf, String)> = Vec::new();
    let legacy = root.join(LEGACY_WAL_DIR);
    if fs.exists(&legacy)? {
        move_archived(fs, &legacy.join(LEGACY_ARCHIVE_DIR), archive_dir, keep_archived)?;
        earlier.push((legacy, LEGACY_WAL_DIR.to_string()));
    }
    for name in fs.list(&wals)? {
        if name != own {
            earlier.push((wals.join(&name), name));
        }
    }
    let mut fenced = Vec::with_capacity(earlier.len());
    let mut renamed = false;
    for (dir, name) in earlier {
        let dir = if name.ends_with(SPLITTING_SUFFIX) {
            dir
        } else {
            let to = wals.join(fenced_name(&name));
            tracing::info!(from = %dir.display(), to = %to.display(), "fencing an earlier instance's WAL directory");
            fs.rename(&dir, &to)?;
            renamed = true;
            to
        };
        fenced.push(dir);
    }
    if renamed {
        fs.sync_dir(&wals)?;
        fs.sync_dir(root)?;
    }
    let mut out = Vec::with_capacity(fenced.len());
    for dir in fenced {
        let files = list_log_files(fs, &dir)?;
        for (_, path) in &files {
            fs.recover_lease(path)?;
        }
        out.push(FencedDir { dir, files });
    }
    out.sort_by_key(|d| d.files.first().map_or(0, |(n, _)| *n));
    Ok(out)
}

/// Fences the WAL directory of one server, `WALs/<server>` (cluster mode:
/// a dead region server's), as [`fence_earlier`] fences each: renamed to
/// `<server>-splitting` (kept if a failed recovery renamed it already) and
/// the leases of its files recovered, so a writer that still runs can
/// acknowledge nothing more. `None` if the server has no WAL directory.
pub fn fence_server(fs: &dyn FileSystem, root: &Path, server: &str) -> Result<Option<FencedDir>> {
    let wals = wals_dir(root);
    let live = crate::layout::wal::instance_dir(root, server)?;
    let fenced = wals.join(fenced_name(server));
    if fs.exists(&live)? {
        tracing::info!(from = %live.display(), to = %fenced.display(), "fencing a dead server's WAL directory");
        fs.rename(&live, &fenced)?;
        fs.sync_dir(&wals)?;
    } else if !fs.exists(&fenced)? {
        return Ok(None);
    }
    let files = list_log_files(fs, &fenced)?;
    for (_, path) in &files {
        fs.recover_lease(path)?;
    }
    Ok(Some(FencedDir { dir: fenced, files }))
}

/// Moves the WAL files of `from` to `archive_dir` (or deletes them when
/// archives are not kept) and removes `from`; a crash part-way leaves some
/// files in each, and the next call finishes. Nothing if `from` is absent.
pub(crate) fn move_archived(fs: &dyn FileSystem, from: &Path, archive_dir: &Path, keep: bool) -> Result<usize> {
    if !fs.exists(from)? {
        return Ok(0);
    }
    let files = list_log_files(fs, from)?;
    for (number, path) in &files {
        if keep {
            fs.rename(path, &archive_dir.join(log_file_name(*number)))?;
        } else {
            fs.remove(path)?;
        }
    }
    if keep && !files.is_empty() {
        fs.sync_dir(archive_dir)?;
    }
    fs.remove_dir_all(from)?;
    if let Some(parent) = from.parent() {
        fs.sync_dir(parent)?;
    }
    if !files.is_empty() {
        tracing::info!(from = %from.display(), files = files.len(), to = %archive_dir.display(), "moved WAL files");
    }
    Ok(files.len())
}

/// The first pass over a fenced directory: reads every entry (checking how
/// its files chain and where its log ends, without keeping any), removes
/// abandoned files, and returns what it found; the second pass streams the
/// entries of `summary.files` (those not abandoned) into the regions.
pub fn check(fs: &dyn FileSystem, fenced: &FencedDir) -> Result<ReplaySummary> {
    let mut reader = WalReader::open_files(fs, fenced.files.clone())?;
    for entry in reader.by_ref() {
        entry?;
    }
    let mut summary = reader.into_summary();
    let abandoned: Vec<PathBuf> = summary.files.iter().filter(|f| f.abandoned).map(|f| f.path.clone()).collect();
    for path in &abandoned {
        fs.remove(path)?;
    }
    if !abandoned.is_empty() {
        fs.sync_dir(&fenced.dir)?;
    }
    summary.files.retain(|f| !f.abandoned);
    Ok(summary)
}

/// Retires a fenced directory whose edits are replayed and flushed: its
/// files go to `archive_dir` (or are deleted when archives are not kept),
/// then the directory is removed.
pub fn retire(fs: &dyn FileSystem, fenced: &Path, archive_dir: &Path, keep_archived: bool) -> Result<()> {
    move_archived(fs, &fenced.join(LEGACY_ARCHIVE_DIR), archive_dir, keep_archived)?;
    let n = move_archived(fs, fenced, archive_dir, keep_archived)?;
    tracing::info!(dir = %fenced.display(), files = n, "retired an earlier instance's WAL directory");
    Ok(())
}

/// The highest WAL file number among `fenced` and the files in
/// `archive_dir` (0 if none): a new instance numbers its files after it.
pub fn highest_number(fs: &dyn FileSystem, fenced: &[FencedDir], archive_dir: &Path) -> Result<u64> {
    let mut highest = fenced.iter().filter_map(|d| d.files.last()).map(|(n, _)| *n).max().unwrap_or(0);
    highest = highest.max(list_log_files(fs, archive_dir)?.last().map_or(0, |(n, _)| *n));
    Ok(highest)
}
