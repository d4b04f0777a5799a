//! The real-HBase peer: runs `bench/hbase/run.sh` (HBase 2.6.4 HRegions
//! in-process, see bench/hbase/README.md) on the same workload. The key
//! sequence is written to a file (`[u32 BE length][key]` per operation, in
//! order) so that HBase sees exactly the keys our engines see; the program
//! prints one JSON object with the report's fields.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use store::wal::Durability;

use crate::BenchError;
use crate::presets::Experiment;
use crate::report::RunReport;

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

/// Runs `exp` on real HBase through `script` (bench/hbase/run.sh).
pub fn run_hbase(exp: &Experiment, script: &Path, base: &Path) -> Result<RunReport, BenchError> {
    let preset = &exp.preset;
    let work = base.join(format!("hbase-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(io("create the hbase work directory"))?;
    let keys = preset.workload.key_source();
    let keys_file = work.join("keys.bin");
    write_keys(
        &keys_file,
        (0..preset.workload.ops).map(|i| {
            let mut buf = [0u8; 32];
            let n = keys.key(i, &mut buf);
            buf[..n].to_vec()
        }),
    )?;
    // Reader under writes: the load phase's keys and the reader's, the same
    // sequences the embedded engine uses (the load workload, seed 42).
    let (load_ops, load_keys_file, read_keys_file) = match exp.mode {
        crate::presets::Mode::Workload => (0, None, None),
        crate::presets::Mode::ReaderUnderWrites { load_ops } => {
            let load = crate::workload::Workload { ops: load_ops, seed: 42, ..preset.workload.clone() };
            let source = load.key_source();
            let key = |i: u64| {
                let mut buf = [0u8; 32];
                let n = source.key(i, &mut buf);
                buf[..n].to_vec()
            };
            let (load_file, read_file) = (work.join("load_keys.bin"), work.join("read_keys.bin"));
            write_keys(&load_file, (0..load_ops).map(key))?;
            // The reader walks the same sequence from its start, cycling.
            write_keys(&read_file, (0..load_ops.min(4_000_000)).map(key))?;
            (load_ops, Some(load_file), Some(read_file))
        }
    };
    let splits_file = work.join("splits.bin");
    write_keys(&splits_file, preset.split_keys().into_iter())?;
    let row_bytes = preset.workload.fields * preset.workload.value_size + 24;
    let config = serde_json::json!({
        "preset": preset.name,
        "policy": exp.policy.split(':').next().unwrap_or("none"),
        "adaptive_threshold": exp.policy.split_once(':').and_then(|(_, r)| r.parse::<f64>().ok()).unwrap_or(0.5),
        "regions": preset.regions,
        "split_keys_file": splits_file,
        "threads": preset.threads,
        "fields": preset.workload.fields,
        "value_size": preset.workload.value_size,
        "batch_rows": (preset.batch_bytes / row_bytes).max(1),
        "durability": match preset.durability {
            Durability::SyncWal => "SYNC_WAL",
            Durability::AsyncWal => "ASYNC_WAL",
            Durability::SkipWal => "SKIP_WAL",
        },
        "flush_size": preset.region_flush_size,
        "memstore_limit": preset.memstore_bytes,
        "inmemory_flush_share": preset.inmemory_flush_share,
        "pipeline_segments_limit": preset.pipeline_segments_limit,
        "keys_file": keys_file,
        "ops": preset.workload.ops,
        "read_ratio": preset.workload.read_ratio,
        "load_ops": load_ops,
        "load_keys_file": load_keys_file,
        "read_keys_file": read_keys_file,
        "dir": work.join("hbase"),
        "family": "f",
        "table": "usertable",
    });
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
    Ok(report)
}
