//! `RunReport`: one engine × policy × preset run, with the fields every
//! consumer reads (`{"runs":[...]}` JSON, the human table).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::settings::RunSettings;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        (!h.is_empty()).then(|| Percentiles {
            p50: h.value_at_quantile(0.50),
            p75: h.value_at_quantile(0.75),
            p90: h.value_at_quantile(0.90),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunReport {
    pub engine: String,
    pub policy: String,
    pub preset: String,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub flushes: u64,
    pub inmemory_flushes: i64,
    pub merges: i64,
    pub inmemory_compactions: i64,
    pub compactions: u64,
    pub wal_files: u64,
    pub bytes_wal: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    pub user_bytes: u64,
    pub write_amplification: f64,
    /// Gets answered from the memstores alone (engines that count them).
    pub gets_from_memstore: Option<u64>,
    /// Per operation type ("put", "insert", "get", "scan").
    pub latency_us: BTreeMap<String, Percentiles>,
    pub peak_rss_bytes: u64,
    /// The most the memstores held in the run (data chunks, index memory,
    /// snapshots being flushed; `memory.rs`), sampled every 10 ms, for the
    /// embedded engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_held_bytes: Option<u64>,
    /// What was held, by part, at that peak, with the chunk pool and the
    /// resident set at the same moment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_at_peak: Option<crate::memory::HeldSample>,
    /// The most the chunk pool's chunks (in use + idle) came to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_pool_bytes: Option<u64>,
    /// The sample at which the resident set was largest, with the same
    /// parts, the WAL's buffers and malloc's statistics (`memory.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_peak_rss: Option<crate::memory::HeldSample>,
    pub cpu_seconds: f64,
    /// Heap allocations per operation in this process during the run
    /// (engine threads included); only for the embedded engine, when the
    /// binary counts allocations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocs_per_op: Option<f64>,
    /// The WAL's sync rounds in the run (write + fsync, or hsync on HDFS)
    /// and their latency percentiles, when the engine reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal_syncs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal_sync_p50_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal_sync_p99_us: Option<u64>,
    /// Rows the run's scans returned, when it scanned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_scanned: Option<u64>,
    /// Bytes the HDFS DataNodes wrote during the run, every replica counted
    /// (their `BytesWritten` metric), when the bench runs the mini HDFS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datanode_bytes: Option<u64>,
    /// The process that ran it, for the embedded engines (by default each
    /// run is a child process of its own: `accordion bench run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u32>,
    /// What the run was set up with (`settings.rs`).
    pub settings: Option<RunSettings>,
}

/// The header of the human table. Units are in the names: `_us` columns
/// are microseconds, `/op` per operation, MB are MiB; `wal` counts WAL
/// files, `flush`/`compct`/`inmem` disk flushes, disk compactions and
/// in-memory flushes; WA is bytes written to disk per byte put.
pub fn table_header() -> String {
    format!(
        "{:<10} {:<14} {:<20} {:>9} {:>10} {:>6} {:>6} {:>6} {:>5} {:>8} {:>8} {:>8} {:>5} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>8} {:>7} {:>7}",
        "engine",
        "policy",
        "preset",
        "ops",
        "ops/s",
        "flush",
        "compct",
        "inmem",
        "wal",
        "walMB",
        "flushMB",
        "compMB",
        "WA",
        "p99put_us",
        "p99get_us",
        "allocs/op",
        "cpu_us/op",
        "p50sync_us",
        "p99sync_us",
        "dnMB",
        "rssMB",
        "heldMB"
    )
}

impl RunReport {
    pub fn table_row(&self) -> String {
        let p99 = |op: &str| self.latency_us.get(op).map_or("-".to_string(), |p| p.p99.to_string());
        let mb = |b: u64| b as f64 / 1048576.0;
        format!(
            "{:<10} {:<14} {:<20} {:>9} {:>10.0} {:>6} {:>6} {:>6} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>5.2} {:>9} {:>9} {:>9} {:>9.2} {:>10} {:>10} {:>8} {:>7.1} {:>7}",
            self.engine,
            self.policy,
            self.preset,
            self.ops,
            self.ops_per_sec,
            self.flushes,
            self.compactions,
            self.inmemory_flushes,
            self.wal_files,
            mb(self.bytes_wal),
            mb(self.bytes_flushed),
            mb(self.bytes_compacted),
            self.write_amplification,
            p99("put"),
            p99("get"),
            self.allocs_per_op.map_or("-".to_string(), |a| format!("{a:.2}")),
            cpu_us_per_op(self),
            self.wal_sync_p50_us.map_or("-".to_string(), |v| v.to_string()),
            self.wal_sync_p99_us.map_or("-".to_string(), |v| v.to_string()),
            self.datanode_bytes.map_or("-".to_string(), |b| format!("{:.1}", mb(b))),
            mb(self.peak_rss_bytes),
            self.peak_held_bytes.map_or("-".to_string(), |b| format!("{:.1}", mb(b))),
        )
    }
}

/// `{"runs":[...]}`.
pub fn to_json(runs: &[RunReport]) -> String {
    serde_json::to_string_pretty(&serde_json::json!({ "runs": runs })).expect("reports serialise")
}

/// The memstore policy a run used: its settings' (`adaptive:0.2`), else its
/// label.
pub(crate) fn memstore_policy(r: &RunReport) -> &str {
    r.settings.as_ref().map(|s| s.memstore_policy.as_str()).filter(|p| !p.is_empty()).unwrap_or(&r.policy)
}

/// Runs whose numbers cannot show what their policy does: a pipeline
/// policy (on accordion or HBase) that never flushed in memory behaved as
/// `none` — the active segment never reached A × flush size before a disk
/// flush took it.
pub fn warnings(runs: &[RunReport]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.engine == "accordion" || r.engine == "hbase")
        .filter(|r| {
            let p = memstore_policy(r);
            memstore::CompactionPolicy::parse(p).is_ok_and(|p| p != memstore::CompactionPolicy::None)
        })
        .filter(|r| r.inmemory_flushes == 0)
        .map(|r| {
            format!(
                "{} {} {}: 0 in-memory flushes — the policy could not matter in this run (no active segment \
                 reached A × flush size before a disk flush took it)",
                r.preset, r.engine, r.policy
            )
        })
        .collect()
}

/// The median run (by ops/s) of each (preset, engine, policy), in the order
/// they first appear; the lower middle for an even count.
pub fn median_runs(runs: &[RunReport]) -> Vec<RunReport> {
    let mut groups: Vec<Vec<&RunReport>> = Vec::new();
    for r in runs {
        let same =
            |g: &&mut Vec<&RunReport>| g[0].preset == r.preset && g[0].engine == r.engine && g[0].policy == r.policy;
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            g.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
            g[(g.len() - 1) / 2].clone()
        })
        .collect()
}

/// CPU microseconds the engine's process spent per operation.
pub(crate) fn cpu_us_per_op(r: &RunReport) -> f64 {
    if r.ops == 0 { 0.0 } else { r.cpu_seconds * 1e6 / r.ops as f64 }
}

/// Bytes written by flushes and compactions.
pub(crate) fn disk_bytes(r: &RunReport) -> f64 {
    (r.bytes_flushed + r.bytes_compacted) as f64
}

pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 { "n/a".to_string() } else { format!("{:.2}x", a / b) }
}

/// The comparisons the issues ask for, per preset: accordion's best policy
/// over `none`, accordion over HBase per shared policy, and accordion's best
/// policy over RocksDB — for throughput and for bytes written by flushes and
/// compactions.
pub fn ratio_lines(runs: &[RunReport]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut presets: Vec<&str> = runs.iter().map(|r| r.preset.as_str()).collect();
    presets.dedup();
    for preset in presets {
        let of = |engine: &str| -> Vec<&RunReport> {
            runs.iter().filter(|r| r.preset == preset && r.engine == engine).collect()
        };
        let ours = of("accordion");
        let Some(best) = ours.iter().max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec)) else {
            continue;
        };
        if let Some(none) = ours.iter().find(|r| r.policy == "none") {
            let others = ours.iter().filter(|r| r.policy != "none");
            match others.max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec)) {
                Some(other) if best.policy == "none" => lines.push(format!(
                    "{preset}: warning: no accordion policy beats none; the best of them, {}, reaches \
                     throughput {}, disk bytes {} of none's",
                    other.policy,
                    ratio(other.ops_per_sec, none.ops_per_sec),
                    ratio(disk_bytes(other), disk_bytes(none))
                )),
                Some(_) => lines.push(format!(
                    "{preset}: accordion best policy {} / none: throughput {}, disk bytes {}",
                    best.policy,
                    ratio(best.ops_per_sec, none.ops_per_sec),
                    ratio(disk_bytes(best), disk_bytes(none))
                )),
                None => {}
            }
        }
        for h in of("hbase") {
            if let Some(o) = ours.iter().find(|r| r.policy == h.policy) {
                lines.push(format!(
                    "{preset}: accordion / hbase ({}): throughput {}, disk bytes {}",
                    h.policy,
                    ratio(o.ops_per_sec, h.ops_per_sec),
                    ratio(disk_bytes(o), disk_bytes(h))
                ));
            }
        }
        for r in of("rocksdb") {
            lines.push(format!(
                "{preset}: accordion {} / rocksdb: throughput {}, disk bytes {}, WAL bytes {}, CPU per op {}",
                best.policy,
                ratio(best.ops_per_sec, r.ops_per_sec),
                ratio(disk_bytes(best), disk_bytes(r)),
                ratio(best.bytes_wal as f64, r.bytes_wal as f64),
                ratio(cpu_us_per_op(best), cpu_us_per_op(r))
            ));
        }
        for h in of(HDFS_ENGINE) {
            if let Some(o) = ours.iter().find(|r| r.policy == h.policy) {
                let dn = h.datanode_bytes.map_or(String::new(), |b| {
                    format!(", DataNode bytes {:.1} MB = {:.2}× what the store wrote", b as f64 / 1048576.0, {
                        b as f64 / (h.bytes_wal + h.bytes_flushed + h.bytes_compacted).max(1) as f64
                    })
                });
                lines.push(format!(
                    "{preset}: {HDFS_ENGINE} / accordion ({}): throughput {}, store bytes {}, WAL sync p50 {} / p99 {} \
                     µs on HDFS vs {} / {} µs local{dn}",
                    h.policy,
                    ratio(h.ops_per_sec, o.ops_per_sec),
                    ratio(disk_bytes(h), disk_bytes(o)),
                    h.wal_sync_p50_us.map_or("-".into(), |v| v.to_string()),
                    h.wal_sync_p99_us.map_or("-".into(), |v| v.to_string()),
                    o.wal_sync_p50_us.map_or("-".into(), |v| v.to_string()),
                    o.wal_sync_p99_us.map_or("-".into(), |v| v.to_string()),
                ));
            }
        }
    }
    lines
}

/// The embedded engine's name in reports when its store is on HDFS.
pub const HDFS_ENGINE: &str = "acc-hdfs";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_fields_consumers_read() {
        let mut h = Histogram::<u64>::new(3).expect("histogram");
        for v in 1..=1000 {
            h.record(v).expect("record");
        }
        let mut r = RunReport { engine: "accordion".into(), policy: "basic".into(), ops: 10, ..RunReport::default() };
        r.latency_us.insert("put".into(), Percentiles::of(&h).expect("non-empty"));
        let json: serde_json::Value = serde_json::from_str(&to_json(&[r.clone()])).expect("valid json");
        let run = &json["runs"][0];
        for field in [
            "engine",
            "policy",
            "preset",
            "ops",
            "seconds",
            "ops_per_sec",
            "flushes",
            "inmemory_flushes",
            "merges",
            "inmemory_compactions",
            "compactions",
            "wal_files",
            "bytes_wal",
            "bytes_flushed",
            "bytes_compacted",
            "user_bytes",
            "write_amplification",
            "latency_us",
            "peak_rss_bytes",
            "cpu_seconds",
        ] {
            assert!(run.get(field).is_some(), "missing {field}");
        }
        let p = &run["latency_us"]["put"];
        assert!(p["p50"].as_u64().is_some_and(|v| (495..=505).contains(&v)), "{p}");
        assert!(p["p999"].as_u64().is_some_and(|v| v >= 995), "{p}");
        assert!(Percentiles::of(&Histogram::<u64>::new(3).expect("histogram")).is_none());
        assert!(r.table_row().contains("accordion"));
    }

    fn run(engine: &str, policy: &str, ops: f64, flushed: u64) -> RunReport {
        RunReport {
            engine: engine.into(),
            policy: policy.into(),
            preset: "p".into(),
            ops_per_sec: ops,
            bytes_flushed: flushed,
            ..RunReport::default()
        }
    }

    #[test]
    fn median_is_taken_per_engine_and_policy() {
        let runs = [
            run("accordion", "none", 3.0, 0),
            run("accordion", "none", 1.0, 0),
            run("accordion", "basic", 9.0, 0),
            run("accordion", "none", 2.0, 0),
        ];
        let m = median_runs(&runs);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].policy.as_str(), m[0].ops_per_sec), ("none", 2.0));
        assert_eq!((m[1].policy.as_str(), m[1].ops_per_sec), ("basic", 9.0));
    }

    #[test]
    fn ratios_compare_best_policy_hbase_and_rocksdb() {
        let runs = [
            run("accordion", "none", 100.0, 40),
            run("accordion", "basic", 150.0, 20),
            run("hbase", "none", 50.0, 80),
            run("rocksdb", "-", 300.0, 10),
        ];
        let lines = ratio_lines(&runs);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("basic / none: throughput 1.50x, disk bytes 0.50x"), "{}", lines[0]);
        assert!(lines[1].contains("hbase (none): throughput 2.00x, disk bytes 0.50x"), "{}", lines[1]);
        assert!(lines[2].contains("throughput 0.50x, disk bytes 2.00x"), "{}", lines[2]);
    }

    #[test]
    fn a_policy_that_never_flushed_in_memory_is_flagged() {
        let mut flushed = run("hbase", "adaptive:0.2", 1.0, 0);
        flushed.inmemory_flushes = 3;
        let mut labelled = run("accordion", "basic A=0.5", 1.0, 0);
        labelled.settings = Some(RunSettings { memstore_policy: "basic".into(), ..RunSettings::default() });
        let runs = [
            run("accordion", "none", 1.0, 0),
            run("accordion", "eager", 1.0, 0),
            flushed,
            labelled,
            run("rocksdb", "-", 1.0, 0),
            run("thrift", "server", 1.0, 0),
        ];
        let w = warnings(&runs);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("p accordion eager: 0 in-memory flushes"), "{}", w[0]);
        assert!(w[1].starts_with("p accordion basic A=0.5:"), "{}", w[1]);
    }

    #[test]
    fn none_beating_every_policy_is_a_warning_not_a_best_policy() {
        let runs = [
            run("accordion", "none", 100.0, 40),
            run("accordion", "basic", 90.0, 20),
            run("accordion", "eager", 80.0, 10),
        ];
        let lines = ratio_lines(&runs);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("warning: no accordion policy beats none; the best of them, basic, reaches throughput 0.90x, disk bytes 0.50x"), "{}", lines[0]);
        assert!(!lines.iter().any(|l| l.contains("none / none")));
        assert!(ratio_lines(&[run("accordion", "none", 1.0, 0)]).is_empty(), "none alone compares with nothing");
    }
}
