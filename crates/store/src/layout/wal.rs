//! Where WAL files live and what they are called (part of [`crate::layout`]).
//!
//! ```text
//! <root>/WALs/<instance>/wal-00000000000000000001.log   live files, numbered from 1
//! <root>/WALs/<instance>-splitting/                     a fenced instance's (takeover.rs)
//! <root>/oldWALs/wal-<number>.log                        archived files (keep_archived)
//! <root>/wal/                                            one directory for every instance, before
//! ```
//!
//! A store's WAL directory is `<root>/WALs/<instance>` and its archive
//! `<root>/oldWALs` (HBase's layout; see `wal/takeover.rs`); a WAL opened on a
//! directory alone archives to `oldWALs` beside it. The archive is never
//! inside a WAL directory, so that what is done to one — fencing it by a
//! rename, replaying it, removing it once replayed — never touches the
//! archive. WALs written before kept it in `<wal dir>/archive`; opening one
//! moves those files (`LEGACY_ARCHIVE_DIR`).
//!
//! Numbers are zero-padded to 20 digits (all of `u64`) so that the
//! file system's name order is the log order. Names that do not match the
//! pattern exactly are not WAL files and are ignored.
//!
//! Thread safety: pure functions over the file system.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::FileSystem;

/// The directory of the instances' WAL directories, under the store's root.
pub const WALS_DIR: &str = "WALs";
/// The WAL directory of stores written before (one directory for every
/// instance), under the root.
pub const LEGACY_WAL_DIR: &str = "wal";
/// What a fenced directory's name ends with.
pub const SPLITTING_SUFFIX: &str = "-splitting";

/// `<root>/WALs`.
pub fn wals_dir(root: &Path) -> PathBuf {
    root.join(WALS_DIR)
}

/// The directory of a region's recovered edits.
pub const RECOVERED_EDITS_DIR: &str = crate::names::RECOVERED_EDITS;

/// `<region dir>/recovered.edits`, where a log split leaves a region's
/// edits for its next open to replay.
pub fn recovered_edits_dir(region_dir: &Path) -> PathBuf {
    region_dir.join(RECOVERED_EDITS_DIR)
}

/// `<root>/oldWALs`.
pub fn archive_root(root: &Path) -> PathBuf {
    root.join(ARCHIVE_DIR)
}

/// `<root>/WALs/<instance>`; refuses a name that is not one plain segment.
pub fn instance_dir(root: &Path, instance: &str) -> Result<PathBuf> {
    crate::names::child(&wals_dir(root), instance)
}

/// `<root>/oldWALs/<instance>`, where a cluster member's archived files go;
/// refuses a name that is not one plain segment.
pub fn instance_archive_dir(root: &Path, instance: &str) -> Result<PathBuf> {
    crate::names::child(&archive_root(root), instance)
}

/// The name instance `name`'s WAL directory takes once fenced.
pub fn fenced_name(name: &str) -> String {
    format!("{name}{SPLITTING_SUFFIX}")
}

/// The directory, beside the WAL directory, that archived files move to.
pub const ARCHIVE_DIR: &str = "oldWALs";
/// Where archived files went before: a subdirectory of the WAL directory.
pub const LEGACY_ARCHIVE_DIR: &str = "archive";

/// The archive directory of the WAL directory `wal_dir`: `oldWALs` beside
/// it.
pub fn archive_dir(wal_dir: &Path) -> PathBuf {
    wal_dir.parent().unwrap_or(wal_dir).join(ARCHIVE_DIR)
}

const PREFIX: &str = "wal-";
const SUFFIX: &str = ".log";
const DIGITS: usize = 20;

/// The file name of WAL file `number`.
pub fn log_file_name(number: u64) -> String {
    format!("{PREFIX}{number:020}{SUFFIX}")
}

/// The number of a WAL file name, `None` if `name` is not one.
pub fn parse_log_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.len() != DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The WAL files in `dir`, by ascending number (empty if `dir` is absent).
pub fn list_log_files(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    if !fs.exists(dir)? {
        return Ok(Vec::new());
    }
    let mut files: Vec<(u64, PathBuf)> =
        fs.list(dir)?.into_iter().filter_map(|n| parse_log_file_name(&n).map(|num| (num, dir.join(n)))).collect();
    files.sort_by_key(|(n, _)| *n);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_in_number_order() {
        assert_eq!(log_file_name(7), "wal-00000000000000000007.log");
        assert_eq!(parse_log_file_name(&log_file_name(u64::MAX)), Some(u64::MAX));
        assert!(log_file_name(9) < log_file_name(10));
        for bad in ["wal-7.log", "wal-0000000000000000000a.log", "wal-00000000000000000007.log.tmp", "x.log"] {
            assert_eq!(parse_log_file_name(bad), None, "{bad}");
        }
        assert_eq!(parse_log_file_name("wal-99999999999999999999.log"), None, "overflows u64");
    }
}
