//! Where WAL files live and what they are called.
//!
//! ```text
//! <wal dir>/wal-00000000000000000001.log   live files, numbered from 1
//! <archive dir>/wal-<number>.log            archived files (keep_archived)
//! ```
//!
//! A store's WAL directory is `<root>/WALs/<instance>` and its archive
//! `<root>/oldWALs` (HBase's layout; see `takeover.rs`); a WAL opened on a
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
