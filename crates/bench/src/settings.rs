//! `RunSettings`: what one run was set up with, kept in its report (the
//! JSON's `settings` block) so that a number can be traced to its shape and
//! code: threads, regions, memstore budget, region flush size, A, S, scale,
//! batch bytes, key space, operations, durability, the writers' rate limit,
//! and the git commit the binary was built from (`build.rs`).
//!
//! The values are the preset's as the run received them (after command-line
//! overrides). Engines that do not use some of them say so in `note`.

use serde::{Deserialize, Serialize};
use store::wal::Durability;

/// The commit HEAD pointed at when this binary was built ("unknown" without
/// git); uncommitted changes are not flagged.
pub const GIT_COMMIT: &str = env!("BENCH_GIT_COMMIT");

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSettings {
    /// The memstore policy as configured (`adaptive:0.35`); `-` for RocksDB,
    /// `server` when the server's own setting decides.
    pub memstore_policy: String,
    pub threads: usize,
    pub regions: usize,
    /// Global memstore budget in bytes.
    pub memstore_bytes: u64,
    /// The block cache in bytes (every engine gets the same).
    pub block_cache_bytes: u64,
    pub region_flush_size: u64,
    pub wal_roll_size: u64,
    /// A: the active segment's share of the region flush size.
    pub inmemory_flush_share: f64,
    /// S: pipeline segments before a merge.
    pub pipeline_segments_limit: usize,
    /// The data block size of this engine's files.
    #[serde(default)]
    pub block_size: usize,
    pub scale: f64,
    /// Client-side write buffer per thread.
    pub batch_bytes: usize,
    pub key_space: u64,
    pub dist: String,
    pub fields: usize,
    pub value_size: usize,
    /// The workload's operations (a reader-under-writes run's writers stop
    /// with the reader, so this is their ceiling; the report's `ops` is what
    /// was done).
    pub ops: u64,
    /// Shares of the workload's operations that get one row and that scan.
    pub read_ratio: f64,
    pub scan_ratio: f64,
    /// Whether the workload's writes insert new rows (YCSB E).
    pub inserts: bool,
    /// Rows written before the measured phase (every key once), when the
    /// preset loads the table first; nothing of the load is measured.
    pub load_ops: u64,
    /// Gets the measured reader does (reader-under-writes presets).
    pub reader_gets: u64,
    /// HBase's name: SYNC_WAL, ASYNC_WAL, SKIP_WAL.
    pub durability: String,
    /// Total rows per second the writers were held to, if any.
    pub write_rate: Option<f64>,
    /// Whether gets named the row's columns (RocksDB's always do: its
    /// reads are of named keys) or asked for the whole row.
    #[serde(default)]
    pub named_gets: bool,
    pub git_commit: String,
    /// What of the above this engine does not use, or uses differently.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// HBase's name of a durability level.
pub fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::SyncWal => "SYNC_WAL",
        Durability::AsyncWal => "ASYNC_WAL",
        Durability::SkipWal => "SKIP_WAL",
    }
}

/// How `engine` maps the preset's store shape, when not one to one.
pub(crate) fn engine_note(engine: &str) -> Option<&'static str> {
    match engine {
        "rocksdb" => Some(
            "one column family, no regions: db_write_buffer_size = memstore_bytes, \
             write_buffer_size = region_flush_size, an LRU block cache of block_cache_bytes, full bloom \
             filters of 10 bits per key, 4 KiB blocks (ours: 64 KiB); A and S do not apply",
        ),
        "thrift" => Some(
            "a running server's table made over Thrift: one region and the server's own memstore \
             budget, flush size, policy, A and S; regions and the memstore settings here are not used",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_is_the_checkouts_head_or_unknown() {
        let hex = GIT_COMMIT.len() == 40 && GIT_COMMIT.bytes().all(|b| b.is_ascii_hexdigit());
        assert!(hex || GIT_COMMIT == "unknown", "{GIT_COMMIT:?}");
        // Built inside this repository with git at hand, it is a commit.
        let git_here = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .is_ok_and(|o| o.status.success());
        if git_here {
            assert!(hex, "{GIT_COMMIT:?}");
        }
    }
}
