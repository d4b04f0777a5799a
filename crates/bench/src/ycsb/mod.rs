//! YCSB through HBase's own Java client against a server: `accordion
//! server` or real HBase 2.6.4, the same client, binding, threads and
//! settings for both (issue 27's benchmark). The client is YCSB 0.17 with
//! our binding on hbase-client 2.6.4 (`bench/ycsb/run.sh`); this module
//! starts the server ([`server`]), loads `records` rows once, runs each
//! workload for `operations` operations on them in order (E, whose every
//! operation is a scan of up to 100 rows, for `scan_operations`), reads YCSB's
//! report ([`output`]: throughput, per-operation p50/p95/p99 from its
//! HdrHistogram measurement) and keeps YCSB's raw output. Each phase also
//! records the CPU the server and the client spent, since both share this
//! machine's cores: a server's CPU per operation is its own cost even where
//! the client bounds the throughput.
//!
//! Workloads are YCSB's files under `bench/ycsb/workloads/` by suffix:
//! `a`..`f` as YCSB ships them and `write`, the papers' write-only shape
//! (100% whole-row updates of 4 × 25 B fields, zipfian, sent in 10 KB
//! client batches through a `BufferedMutator`). They run on the one loaded table, as
//! YCSB's own guide runs A, B, C, F (D and E insert new keys, so they go last).

pub mod output;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;

use crate::BenchError;
use crate::sysinfo::ended_children_cpu_seconds;
use output::YcsbOutput;
use server::Server;

/// What every engine runs.
#[derive(Debug, Clone)]
pub struct YcsbOptions {
    /// `bench/ycsb/run.sh`.
    pub run_sh: PathBuf,
    /// Workload suffixes, in order (`a`, `b`, `c`, `f`, `e`, `write`, …).
    pub workloads: Vec<String>,
    pub records: u64,
    /// Operations per workload, but E.
    pub operations: u64,
    /// Operations of workload E (short scans).
    pub scan_operations: u64,
    /// YCSB client threads.
    pub threads: usize,
    /// Regions the table is pre-split into (YCSB's split points).
    pub presplits: usize,
    /// Further `-p name=value` for every phase (e.g. `clientbuffering=true`).
    pub properties: Vec<String>,
    /// Where YCSB's raw stdout and stderr of every phase go.
    pub raw_dir: Option<PathBuf>,
}

/// One phase (`load` or a workload) on one engine.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub workload: String,
    pub seconds: f64,
    pub result: YcsbOutput,
    /// CPU seconds the server process spent during the phase (all its
    /// threads, background work included; `None` where `/proc` cannot be
    /// read).
    pub server_cpu_seconds: Option<f64>,
    /// Bytes the server process wrote to disk during the phase (WAL,
    /// flushes, compactions: `/proc/<pid>/io`, see
    /// `sysinfo::process_disk_write_bytes`; `None` where it cannot be read).
    /// The same measure for every engine, whatever it counts internally.
    pub server_disk_write_bytes: Option<u64>,
    /// CPU seconds YCSB's client spent (its JVM from start to exit, the
    /// build check before it), which shares the machine's cores with the
    /// server.
    pub client_cpu_seconds: f64,
    /// CPU seconds the hypervisor gave other guests during the phase, all
    /// CPUs summed (`sysinfo::machine_steal_seconds`; `None` where it
    /// cannot be read): how noisy the host was while this phase ran.
    pub steal_seconds: Option<f64>,
    /// Non-OK returns YCSB counted (empty for a clean run).
    pub failures: Vec<String>,
}

impl Phase {
    /// Operations YCSB completed (its throughput × its runtime).
    pub fn operations(&self) -> f64 {
        self.result.throughput_ops_per_sec * self.result.runtime_ms / 1e3
    }

    /// The server's CPU microseconds per operation.
    pub fn server_cpu_us_per_op(&self) -> Option<f64> {
        let ops = self.operations();
        self.server_cpu_seconds.filter(|_| ops > 0.0).map(|s| s * 1e6 / ops)
    }

    /// Bytes the server wrote to disk per operation.
    pub fn server_disk_bytes_per_op(&self) -> Option<f64> {
        let ops = self.operations();
        self.server_disk_write_bytes.filter(|_| ops > 0.0).map(|b| b as f64 / ops)
    }

    /// The client's CPU microseconds per operation (its JVM's start-up
    /// included).
    pub fn client_cpu_us_per_op(&self) -> Option<f64> {
        let ops = self.operations();
        (ops > 0.0).then(|| self.client_cpu_seconds * 1e6 / ops)
    }
}

/// One engine's runs.
#[derive(Debug, Clone, Serialize)]
pub struct EngineRun {
    pub engine: String,
    pub startup_secs: f64,
    /// The server process's peak resident set over all phases.
    pub server_peak_rss_bytes: Option<u64>,
    pub phases: Vec<Phase>,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> BenchError {
    move |source| BenchError::Io { what, source }
}

/// Runs YCSB's client for one phase against `server`.
fn phase(server: &Server, engine: &str, workload: &str, opts: &YcsbOptions) -> Result<Phase, BenchError> {
    let load = workload == "load";
    // The load phase takes the first workload's file (all of YCSB's share the row shape).
    let file = format!("workloads/workload{}", if load { &opts.workloads[0] } else { workload });
    let mut cmd = Command::new(&opts.run_sh);
    cmd.args(&server.registry).arg(if load { "-load" } else { "-t" }).args(["-P", &file]);
    cmd.args(["-threads", &opts.threads.to_string()]);
    let mut props = vec![
        format!("recordcount={}", opts.records),
        format!("operationcount={}", if workload == "e" { opts.scan_operations } else { opts.operations }),
        "createtable=true".to_string(),
        format!("presplits={}", opts.presplits),
        "measurementtype=hdrhistogram".to_string(),
        "hdrhistogram.percentiles=50,95,99".to_string(),
    ];
    props.extend(opts.properties.iter().cloned());
    for p in &props {
        cmd.args(["-p", p]);
    }
    let started = Instant::now();
    let (server_cpu_before, client_cpu_before) = (server.cpu_seconds(), ended_children_cpu_seconds());
    let disk_before = server.disk_write_bytes();
    let steal_before = crate::sysinfo::machine_steal_seconds();
    let out = cmd.output().map_err(io(format!("run {}", opts.run_sh.display())))?;
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_seconds = server_cpu_before.zip(server.cpu_seconds()).map(|(a, b)| b - a);
    let client_cpu_seconds = ended_children_cpu_seconds() - client_cpu_before;
    let server_disk_write_bytes = disk_before.zip(server.disk_write_bytes()).map(|(a, b)| b.saturating_sub(a));
    let steal_seconds = steal_before.zip(crate::sysinfo::machine_steal_seconds()).map(|(a, b)| b - a);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if let Some(dir) = &opts.raw_dir {
        let base = dir.join(format!("{engine}-{workload}"));
        std::fs::write(base.with_extension("out"), stdout.as_bytes()).map_err(io(format!("write {base:?}.out")))?;
        std::fs::write(base.with_extension("err"), stderr.as_bytes()).map_err(io(format!("write {base:?}.err")))?;
    }
    if !out.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        return Err(BenchError::Engine {
            engine: engine.into(),
            message: format!(
                "YCSB {workload} exited with {}:\n{}\nserver log tail:\n{}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
                server.log_tail(3000)
            ),
        });
    }
    let result = output::parse(&stdout)?;
    let failures = result.failures();
    Ok(Phase {
        workload: workload.to_string(),
        seconds,
        result,
        server_cpu_seconds,
        server_disk_write_bytes,
        client_cpu_seconds,
        steal_seconds,
        failures,
    })
}

/// Loads, then runs every workload, against `server` (named `engine`).
pub fn run_on(
    server: &Server,
    engine: &str,
    opts: &YcsbOptions,
    mut progress: impl FnMut(&Phase),
) -> Result<EngineRun, BenchError> {
    if opts.workloads.is_empty() {
        return Err(BenchError::Invalid("no workloads to run".into()));
    }
    if let Some(dir) = &opts.raw_dir {
        std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    }
    let mut phases = Vec::new();
    for workload in std::iter::once("load").chain(opts.workloads.iter().map(String::as_str)) {
        let p = phase(server, engine, workload, opts)?;
        progress(&p);
        phases.push(p);
    }
    Ok(EngineRun {
        engine: engine.to_string(),
        startup_secs: server.startup_secs,
        server_peak_rss_bytes: server.peak_rss_bytes(),
        phases,
    })
}

/// The workload files `opts` names exist beside run.sh.
pub fn check_workloads(opts: &YcsbOptions) -> Result<(), BenchError> {
    let dir = opts.run_sh.parent().unwrap_or(Path::new(".")).join("workloads");
    for w in &opts.workloads {
        let file = dir.join(format!("workload{w}"));
        if !file.is_file() {
            return Err(BenchError::Invalid(format!("no workload {w:?}: {} is missing", file.display())));
        }
    }
    Ok(())
}
