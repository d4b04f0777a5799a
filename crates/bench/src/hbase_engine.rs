//! The real-HBase peer: runs `bench/hbase/run.sh` (HBase 2.6.4 HRegions
//! in-process, see bench/hbase/README.md) on the same workload. The key
//! sequence is written to a file (`[u32 BE length][key]` per operation, in
//! order) so that HBase sees exactly the keys our engines see; the program
//! prints one JSON object with the report's fields.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::BenchError;
use crate::presets::Experiment;
use crate::report::RunReport;
use crate::settings::durability_name;

fn io(what: &str) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io { what: what.to_string(), source }
}

fn write_keys(path: &Path, keys: impl Iterator<Item = Vec<u8>>) -> Result<(), BenchError> {
    let file = std::fs::File::create(path).map_err(io("create the key file"))?;
    let mut w = std::io::BufWriter::new(file);
    for k in keys {
        w.write_all(&(k.len() as u32).to_be_bytes()).map_err(io("write the key file"))?;
        w.write_all(&k).map_err(io("write the key file"))?;
    }
    w.flush().map_err(io("write the key file"))
}

/// The row keys of `workload`'s operations, in order.
fn workload_keys(workload: &crate::workload::Workload) -> impl Iterator<Item = Vec<u8>> + '_ {
    let source = workload.key_source();
    (0..workload.ops).map(move |i| {
        let mut buf = [0u8; 32];
        let n = source.key(i, &mut buf);
        buf[..n].to_vec()
    })
}

/// The writers' workload as HBaseBench gets it. A reader-under-writes run's
/// writers go on until the reader is done (their operations are no bound):
/// HBaseBench then cycles through the keys of as many writes as the write
/// preset makes.
fn writer_workload(exp: &Experiment) -> crate::workload::Workload {
    let w = &exp.preset.workload;
    match exp.mode {
        crate::presets::Mode::ReaderUnderWrites { .. } => {
            crate::workload::Workload { ops: w.ops.min(crate::regime::WRITES_PER_KEY * w.key_space), ..w.clone() }
        }
        _ => w.clone(),
    }
}

/// Where a run's inputs are.
struct Files<'a> {
    work: &'a Path,
    keys: &'a Path,
    splits: &'a Path,
    load_keys: Option<&'a Path>,
    read_keys: Option<&'a Path>,
}

/// The CONFIG.json of bench/hbase (its README's protocol): the preset's
/// store shape — regions, memstore budget, block cache, region flush size,
/// WAL roll size, A, S — and workload, as the embedded engine gets them.
fn config_json(exp: &Experiment, files: &Files<'_>, load_ops: u64, read_ops: u64) -> serde_json::Value {
    let preset = &exp.preset;
    let row_bytes = preset.workload.fields * preset.workload.value_size + 24;
    serde_json::json!({
        "preset": preset.name,
        "policy": exp.policy.split(':').next().unwrap_or("none"),
        "adaptive_threshold": exp.policy.split_once(':').and_then(|(_, r)| r.parse::<f64>().ok()).unwrap_or(0.5),
        "regions": preset.regions,
        "split_keys_file": files.splits,
        "threads": preset.threads,
        "fields": preset.workload.fields,
        "value_size": preset.workload.value_size,
        "batch_rows": (preset.batch_bytes / row_bytes).max(1),
        "durability": durability_name(preset.durability),
        "flush_size": preset.region_flush_size,
        // FSHLog rolls at half the WAL block size.
        "wal_block_size": 2 * preset.wal_roll_size,
        "write_rate": preset.write_rate.unwrap_or(0.0),
        "named_gets": preset.named_gets,
        "memstore_limit": preset.memstore_bytes,
        "block_cache_bytes": preset.block_cache_bytes,
        "block_size": preset.block_size_on("hbase"),
        "inmemory_flush_share": preset.inmemory_flush_share,
        "pipeline_segments_limit": preset.pipeline_segments_limit,
        "keys_file": files.keys,
        "ops": writer_workload(exp).ops,
        "read_ratio": preset.workload.read_ratio,
        "load_ops": load_ops,
        "read_ops": read_ops,
        "load_keys_file": files.load_keys,
        "read_keys_file": files.read_keys,
        "dir": files.work.join("hbase"),
        "family": "f",
        "table": "usertable",
    })
}

/// Runs `exp` on real HBase through `script` (bench/hbase/run.sh).
pub fn run_hbase(exp: &Experiment, script: &Path, base: &Path) -> Result<RunReport, BenchError> {
    let preset = &exp.preset;
    // HBaseBench runs gets and puts, a load only before a measured reader.
    if exp.mode == crate::presets::Mode::LoadThenRun || preset.workload.scan_ratio > 0.0 || preset.workload.inserts {
        return Err(BenchError::Unsupported {
            engine: "hbase".into(),
            what: "the YCSB read presets (scans, inserts, a measured run after a load)",
        });
    }
    let work = base.join(format!("hbase-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(io("create the hbase work directory"))?;
    let keys_file = work.join("keys.bin");
    write_keys(&keys_file, workload_keys(&writer_workload(exp)))?;
    // Reader under writes: the load phase's keys (every key once) and the
    // reader's gets, the sequences the embedded engines use.
    let (load_ops, read_ops, load_keys_file, read_keys_file) = match exp.mode {
        crate::presets::Mode::Workload | crate::presets::Mode::LoadThenRun => (0, 0, None, None),
        crate::presets::Mode::ReaderUnderWrites { reads } => {
            let load = crate::presets::load_workload(preset);
            let reader = crate::presets::reader_workload(preset, reads);
            let (load_file, read_file) = (work.join("load_keys.bin"), work.join("read_keys.bin"));
            write_keys(&load_file, workload_keys(&load))?;
            write_keys(&read_file, workload_keys(&reader))?;
            (load.ops, reader.ops, Some(load_file), Some(read_file))
        }
    };
    let splits_file = work.join("splits.bin");
    write_keys(&splits_file, preset.split_keys().into_iter())?;
    let files = Files {
        work: &work,
        keys: &keys_file,
        splits: &splits_file,
        load_keys: load_keys_file.as_deref(),
        read_keys: read_keys_file.as_deref(),
    };
    let config = config_json(exp, &files, load_ops, read_ops);
    let config_file = work.join("config.json");
    std::fs::write(&config_file, serde_json::to_vec_pretty(&config).expect("config serialises"))
        .map_err(io("write the hbase config"))?;
    let out = Command::new(script).arg(&config_file).output().map_err(io("run bench/hbase/run.sh"))?;
    let _ = std::fs::remove_dir_all(&work);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        return Err(BenchError::Engine {
            engine: "hbase".into(),
            message: format!(
                "{} exited with {}: {}",
                script.display(),
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ),
        });
    }
    let mut report: RunReport = serde_json::from_slice(&out.stdout).map_err(|e| BenchError::Engine {
        engine: "hbase".into(),
        message: format!("unreadable result: {e}: {}", String::from_utf8_lossy(&out.stdout)),
    })?;
    report.policy = exp.label.clone();
    report.preset = preset.name.to_string();
    report.settings = Some(preset.run_settings("hbase", &exp.policy, load_ops, read_ops));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::experiments;

    #[test]
    fn hbase_gets_the_presets_store_shape() {
        let p = Path::new("/x");
        let files = Files { work: p, keys: p, splits: p, load_keys: None, read_keys: None };
        for (name, scale) in [("paper-write-zipf", 1.0), ("paper-write-uniform", 0.3), ("regions-per-gb", 1.0)] {
            for mut exp in experiments(name, scale, &["adaptive:0.35".to_string()]).expect("preset") {
                exp.preset.write_rate = Some(50_000.0);
                let c = config_json(&exp, &files, 0, 0);
                let pr = &exp.preset;
                assert_eq!(c["regions"], pr.regions as u64, "{name}");
                assert_eq!(c["memstore_limit"], pr.memstore_bytes, "{name}");
                assert_eq!(c["block_cache_bytes"], pr.block_cache_bytes, "{name}");
                assert_eq!(c["block_size"], 65536, "{name}: HBase's default where the preset sets none");
                assert_eq!(c["flush_size"], pr.region_flush_size, "{name}");
                assert_eq!(c["wal_block_size"], 2 * pr.wal_roll_size, "{name}");
                assert_eq!(c["inmemory_flush_share"], pr.inmemory_flush_share, "{name}");
                assert_eq!(c["pipeline_segments_limit"], pr.pipeline_segments_limit as u64, "{name}");
                assert_eq!(c["write_rate"], 50_000.0, "{name}");
                assert_eq!(c["ops"], pr.workload.ops, "{name}");
                if exp.policy == "adaptive:0.35" {
                    assert_eq!(
                        (c["policy"].as_str(), c["adaptive_threshold"].as_f64()),
                        (Some("adaptive"), Some(0.35))
                    );
                }
            }
        }
        let zipf = &experiments("paper-write-zipf", 1.0, &["none".to_string()]).expect("preset")[0];
        let c = config_json(zipf, &files, 0, 0);
        assert_eq!((c["regions"].as_u64(), c["flush_size"].as_u64()), (Some(5), Some(32 << 20)));
        assert_eq!(c["memstore_limit"].as_u64(), Some(150 << 20));
    }
}
