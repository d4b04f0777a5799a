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

use crate::presets::Preset;

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
    pub region_flush_size: u64,
    pub wal_roll_size: u64,
    /// A: the active segment's share of the region flush size.
    pub inmemory_flush_share: f64,
    /// S: pipeline segments before a merge.
    pub pipeline_segments_limit: usize,
    pub scale: f64,
    /// Client-side write buffer per thread.
    pub batch_bytes: usize,
    pub key_space: u64,
    pub dist: String,
    pub fields: usize,
    pub value_size: usize,
    /// Operations measured.
    pub ops: u64,
    /// Rows written before the measured phase (reader-under-writes presets).
    pub load_ops: u64,
    /// HBase's name: SYNC_WAL, ASYNC_WAL, SKIP_WAL.
    pub durability: String,
    /// Total rows per second the writers were held to, if any.
    pub write_rate: Option<f64>,
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
fn engine_note(engine: &str) -> Option<&'static str> {
    match engine {
        "rocksdb" => Some(
            "one column family, no regions: db_write_buffer_size = memstore_bytes, \
             write_buffer_size = region_flush_size; A and S do not apply",
        ),
        "thrift" => Some(
            "a running server's table made over Thrift: one region and the server's own memstore \
             budget, flush size, policy, A and S; regions and the memstore settings here are not used",
        ),
        _ => None,
    }
}

impl RunSettings {
    /// The settings of `preset` as run on `engine` with `policy`, after
    /// `load_ops` rows loaded first.
    pub fn of(preset: &Preset, engine: &str, policy: &str, load_ops: u64) -> RunSettings {
        let w = &preset.workload;
        RunSettings {
            memstore_policy: policy.to_string(),
            threads: preset.threads,
            regions: if engine == "thrift" { 1 } else { preset.regions },
            memstore_bytes: preset.memstore_bytes,
            region_flush_size: preset.region_flush_size,
            wal_roll_size: preset.wal_roll_size,
            inmemory_flush_share: preset.inmemory_flush_share,
            pipeline_segments_limit: preset.pipeline_segments_limit,
            scale: preset.scale,
            batch_bytes: preset.batch_bytes,
            key_space: w.key_space,
            dist: format!("{:?}", w.dist).to_lowercase(),
            fields: w.fields,
            value_size: w.value_size,
            ops: w.ops,
            load_ops,
            durability: durability_name(preset.durability).to_string(),
            write_rate: preset.write_rate,
            git_commit: GIT_COMMIT.to_string(),
            note: engine_note(engine).map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::experiments;
    use crate::report::{RunReport, to_json};

    #[test]
    fn the_json_settings_block_names_the_runs_shape_and_commit() {
        let mut exp = experiments("paper-write-zipf", 0.5, &["adaptive:0.2".to_string()]).expect("preset").remove(0);
        exp.preset.write_rate = Some(1234.0);
        let p = &exp.preset;
        let report =
            RunReport { settings: Some(RunSettings::of(p, "accordion", "adaptive:0.2", 0)), ..Default::default() };
        let json: serde_json::Value = serde_json::from_str(&to_json(&[report])).expect("valid json");
        let s = &json["runs"][0]["settings"];
        assert_eq!(s["memstore_policy"], "adaptive:0.2");
        assert_eq!(s["threads"], 12);
        assert_eq!(s["regions"], p.regions as u64);
        assert_eq!(s["memstore_bytes"], p.memstore_bytes);
        assert_eq!(s["region_flush_size"], p.region_flush_size);
        assert_eq!(s["wal_roll_size"], p.wal_roll_size);
        assert_eq!(s["inmemory_flush_share"], 0.02);
        assert_eq!(s["pipeline_segments_limit"], 5);
        assert_eq!(s["scale"], 0.5);
        assert_eq!(s["batch_bytes"], 10 * 1024);
        assert_eq!(s["key_space"], p.workload.key_space);
        assert_eq!(s["ops"], p.workload.ops);
        assert_eq!(s["dist"], "zipfian");
        assert_eq!((s["fields"].as_u64(), s["value_size"].as_u64()), (Some(4), Some(25)));
        assert_eq!(s["durability"], "ASYNC_WAL");
        assert_eq!(s["write_rate"], 1234.0);
        assert_eq!(s["git_commit"], GIT_COMMIT);
        assert!(s.get("note").is_none(), "the embedded engine uses every setting");
        // Other engines say what they do not use; a report read back keeps it.
        let rocks = RunSettings::of(p, "rocksdb", "-", 0);
        assert!(rocks.note.as_deref().is_some_and(|n| n.contains("write_buffer_size")));
        let thrift = RunSettings::of(p, "thrift", "server", 7);
        assert_eq!((thrift.regions, thrift.load_ops), (1, 7));
        let back: RunReport = serde_json::from_str(
            &serde_json::to_string(&RunReport { settings: Some(thrift.clone()), ..Default::default() })
                .expect("serialises"),
        )
        .expect("reads back");
        assert_eq!(back.settings, Some(thrift));
    }

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
