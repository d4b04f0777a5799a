//! Presets: the papers' experiments (DESIGN §7) scaled to one 2-core
//! machine, each a workload plus the store shape it runs on. `scale`
//! multiplies operations and key space for bigger machines.

use std::path::Path;

use store::wal::Durability;

use crate::BenchError;
use crate::driver;
use crate::engine::{AccordionEngine, AccordionSetup, Engine};
use crate::keys::write_key;
use crate::report::{Percentiles, RunReport};
use crate::sysinfo::{cpu_seconds, peak_rss_bytes};
use crate::workload::{KeyDist, Workload};

/// A scaled experiment.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    pub workload: Workload,
    pub threads: usize,
    pub regions: usize,
    pub batch_bytes: usize,
    pub durability: Durability,
    pub memstore_bytes: u64,
    pub region_flush_size: u64,
    /// A.
    pub inmemory_flush_share: f64,
    /// S.
    pub pipeline_segments_limit: usize,
}

/// Names of the presets this build knows.
pub const PRESETS: &[&str] = &["paper-write-zipf", "paper-write-uniform"];

impl Preset {
    /// The paper's write-only experiment: 50 regions, 12 threads, rows of
    /// 4 × 25 B, 10 KB client batches, async WAL, A = 0.02, S = 5, a 256 MiB
    /// memstore budget; 4 M operations over 1 M keys at scale 1.
    pub fn by_name(name: &str, scale: f64) -> Result<Preset, BenchError> {
        let dist = match name {
            "paper-write-zipf" => KeyDist::Zipfian,
            "paper-write-uniform" => KeyDist::Uniform,
            other => {
                return Err(BenchError::Invalid(format!("unknown preset {other:?}; known: {}", PRESETS.join(", "))));
            }
        };
        if scale.is_nan() || scale <= 0.0 {
            return Err(BenchError::Invalid("--scale must be positive".into()));
        }
        let scaled = |n: f64| ((n * scale) as u64).max(2);
        Ok(Preset {
            name: if dist == KeyDist::Zipfian { "paper-write-zipf" } else { "paper-write-uniform" },
            workload: Workload {
                key_space: scaled(1_000_000.0),
                dist,
                fields: 4,
                value_size: 25,
                ops: scaled(4_000_000.0),
                read_ratio: 0.0,
                seed: 42,
            },
            threads: 12,
            regions: 50,
            batch_bytes: 10 * 1024,
            durability: Durability::AsyncWal,
            memstore_bytes: ((256u64 << 20) as f64 * scale.clamp(0.05, 1.0)) as u64,
            region_flush_size: 128 << 20,
            inmemory_flush_share: 0.02,
            pipeline_segments_limit: 5,
        })
    }

    /// Split keys dividing the preset's key space evenly into its regions.
    pub fn split_keys(&self) -> Vec<Vec<u8>> {
        let n = self.workload.key_space.min(2_000_000);
        let mut all: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut buf = [0u8; 32];
                let len = write_key(i, &mut buf);
                buf[..len].to_vec()
            })
            .collect();
        all.sort_unstable();
        (1..self.regions).map(|i| all[i * all.len() / self.regions].clone()).collect()
    }
}

/// Runs `preset` on the embedded accordion engine with `policy`, in a fresh
/// directory under `base`.
pub fn run_accordion(preset: &Preset, policy: &str, base: &Path) -> Result<RunReport, BenchError> {
    memstore::CompactionPolicy::parse(policy).map_err(|e| BenchError::Invalid(e.to_string()))?;
    let setup = AccordionSetup {
        dir: base.join(format!("accordion-{}-{}-{}", preset.name, policy.replace(':', "_"), std::process::id())),
        policy: policy.to_string(),
        split_keys: preset.split_keys(),
        durability: preset.durability,
        memstore_bytes: preset.memstore_bytes,
        region_flush_size: preset.region_flush_size,
        inmemory_flush_share: preset.inmemory_flush_share,
        pipeline_segments_limit: preset.pipeline_segments_limit,
    };
    let engine = AccordionEngine::open(&setup, preset.workload.fields)?;
    measure(preset, &engine, policy)
}

/// Runs `preset` on RocksDB with the same memtable budget, WAL mode and
/// threads (cargo feature `rocksdb`).
#[cfg(feature = "rocksdb")]
pub fn run_rocksdb(preset: &Preset, base: &Path) -> Result<RunReport, BenchError> {
    let dir = base.join(format!("rocksdb-{}-{}", preset.name, std::process::id()));
    let engine = crate::rocksdb_engine::RocksDbEngine::open(
        dir,
        preset.memstore_bytes,
        preset.durability,
        preset.workload.fields,
    )?;
    measure(preset, &engine, "-")
}

/// Drives `engine` with the preset's workload and reports; always finishes
/// the engine (removing its data).
pub fn measure(preset: &Preset, engine: &dyn Engine, policy: &str) -> Result<RunReport, BenchError> {
    let cpu_before = cpu_seconds();
    let result = driver::run(engine, &preset.workload, preset.threads, preset.batch_bytes);
    let cpu = cpu_seconds() - cpu_before;
    let counters = engine.counters();
    engine.finish()?;
    let result = result?;
    let mut latency = std::collections::BTreeMap::new();
    if let Some(p) = Percentiles::of(&result.put_latency_us) {
        latency.insert("put".to_string(), p);
    }
    if let Some(p) = Percentiles::of(&result.get_latency_us) {
        latency.insert("get".to_string(), p);
    }
    let wa = if counters.user_bytes == 0 {
        0.0
    } else {
        (counters.bytes_flushed + counters.bytes_compacted) as f64 / counters.user_bytes as f64
    };
    Ok(RunReport {
        engine: engine.name().to_string(),
        policy: policy.to_string(),
        preset: preset.name.to_string(),
        ops: result.ops,
        seconds: result.seconds,
        ops_per_sec: result.ops as f64 / result.seconds,
        flushes: counters.flushes,
        inmemory_flushes: counters.inmemory_flushes as i64,
        merges: counters.merges as i64,
        inmemory_compactions: counters.inmemory_compactions as i64,
        compactions: counters.compactions,
        wal_files: counters.wal_files,
        bytes_wal: counters.bytes_wal,
        bytes_flushed: counters.bytes_flushed,
        bytes_compacted: counters.bytes_compacted,
        user_bytes: counters.user_bytes,
        write_amplification: wa,
        latency_us: latency,
        peak_rss_bytes: peak_rss_bytes(),
        cpu_seconds: cpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_runs_at_a_tiny_scale() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in PRESETS {
            let mut preset = Preset::by_name(name, 0.002).expect("preset");
            preset.regions = 4;
            preset.threads = 3;
            let report = run_accordion(&preset, "basic", dir.path()).expect("runs");
            assert_eq!(report.ops, preset.workload.ops);
            assert!(report.ops_per_sec > 0.0);
            assert!(report.user_bytes >= preset.workload.ops * 100, "{report:?}");
            assert!(report.bytes_wal > 0);
            assert!(report.latency_us.contains_key("put"));
        }
        assert!(Preset::by_name("nope", 1.0).is_err());
        assert!(Preset::by_name("paper-write-zipf", 0.0).is_err());
    }
}
