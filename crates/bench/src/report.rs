//! `RunReport`: one engine × policy × preset run, with the fields every
//! consumer reads (`{"runs":[...]}` JSON, the human table).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        (!h.is_empty()).then(|| Percentiles {
            p50: h.value_at_quantile(0.50),
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
    /// Per operation type ("put", "get").
    pub latency_us: BTreeMap<String, Percentiles>,
    pub peak_rss_bytes: u64,
    pub cpu_seconds: f64,
}

/// The header of the human table.
pub fn table_header() -> String {
    format!(
        "{:<10} {:<14} {:<20} {:>9} {:>10} {:>6} {:>6} {:>6} {:>5} {:>8} {:>8} {:>8} {:>5} {:>7} {:>7}",
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
        "p99put",
        "p99get"
    )
}

impl RunReport {
    pub fn table_row(&self) -> String {
        let p99 = |op: &str| self.latency_us.get(op).map_or("-".to_string(), |p| p.p99.to_string());
        let mb = |b: u64| b as f64 / 1048576.0;
        format!(
            "{:<10} {:<14} {:<20} {:>9} {:>10.0} {:>6} {:>6} {:>6} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>5.2} {:>7} {:>7}",
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
            p99("get")
        )
    }
}

/// `{"runs":[...]}`.
pub fn to_json(runs: &[RunReport]) -> String {
    serde_json::to_string_pretty(&serde_json::json!({ "runs": runs })).expect("reports serialise")
}

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
}
