//! `accordion bench ycsb`: YCSB through HBase's Java client against
//! `accordion server` and real HBase 2.6.4, the same client, binding,
//! threads and workloads for both (the `bench` crate's `ycsb` module). Prints
//! every phase as it finishes, then a Markdown table per workload and
//! operation (throughput and p50/p95/p99, ours, HBase's, the ratio); `--json`
//! keeps everything, `--raw-dir` YCSB's own output of every phase.

use std::path::PathBuf;

use anyhow::{Context, bail};
use bench::ycsb::server::{Server, data_dir};
use bench::ycsb::{EngineRun, Phase, YcsbOptions, check_workloads, run_on};

#[derive(clap::Args, Debug, Clone)]
pub struct YcsbArgs {
    /// Servers to measure, in order: accordion (this binary's `server`),
    /// hbase (real HBase 2.6.4, bench/hbase/standalone.sh).
    #[arg(long, value_delimiter = ',', default_value = "accordion,hbase")]
    pub engines: Vec<String>,
    /// Workloads after the load, in order: YCSB's a..f and `write` (the
    /// papers' write-only shape), files under bench/ycsb/workloads/.
    #[arg(long, value_delimiter = ',', default_value = "a,b,c,f,e,write")]
    pub workloads: Vec<String>,
    /// Rows loaded.
    #[arg(long, default_value_t = 300_000)]
    pub records: u64,
    /// Operations per workload but E. Each phase is a new client JVM, whose
    /// start and JIT compiling are a fixed cost on the same cores as the
    /// server: with 200 K gets its JIT compiler took a third of its CPU in
    /// the phase's middle and the client 77-96 µs of CPU per get; with 1 M
    /// the compiling was done early and the client took 39.
    #[arg(long, default_value_t = 1_000_000)]
    pub operations: u64,
    /// Operations of workload E, each a scan of up to 100 rows (ten times a
    /// get's work and more, so fewer operations reach the steady state).
    #[arg(long, default_value_t = 200_000)]
    pub scan_operations: u64,
    /// YCSB client threads.
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Regions the table is pre-split into.
    #[arg(long, default_value_t = 8)]
    pub presplits: usize,
    /// Further YCSB properties for every phase (`-p NAME=VALUE`), e.g.
    /// clientbuffering=true.
    #[arg(short = 'p', long = "property", value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
    /// `--set` settings for accordion server.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// HBase's heap (`-Xmx`); its memstore and block cache are HBase's
    /// default shares of it (0.4 each), as ours are of memory_budget (4 GiB).
    #[arg(long, default_value = "4g")]
    pub hbase_heap: String,
    /// Where the servers keep their data (removed after each engine).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// YCSB's raw stdout and stderr of every phase go here.
    #[arg(long)]
    pub raw_dir: Option<PathBuf>,
    /// Also writes every phase as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The YCSB launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/ycsb/run.sh"))]
    pub ycsb_script: PathBuf,
    /// The HBase launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/hbase/standalone.sh"))]
    pub hbase_script: PathBuf,
}

/// A phase's line; `cpus` turns its steal time into a share of the
/// machine.
fn phase_line(engine: &str, p: &Phase, cpus: usize) -> String {
    let ops: Vec<String> = p
        .result
        .ops
        .iter()
        .filter(|(class, _)| class.as_str() != "VERIFY")
        .map(|(class, s)| {
            let us = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            format!("{class} {} p50/p95/p99 {}/{}/{} µs", s.operations, us(s.p50_us), us(s.p95_us), us(s.p99_us))
        })
        .collect();
    let cpu = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    format!(
        "{engine:<10} {:<6} {:>10.0} ops/s  {:>6.1} s  CPU µs/op server {} client {}  disk written {}  steal {}  {}",
        p.workload,
        p.result.throughput_ops_per_sec,
        p.seconds,
        cpu(p.server_cpu_us_per_op()),
        cpu(p.client_cpu_us_per_op()),
        p.server_disk_write_bytes.map_or("-".to_string(), |b| format!("{} MiB", b >> 20)),
        p.steal_seconds
            .filter(|_| p.seconds > 0.0)
            .map_or("-".to_string(), |s| format!("{:.1}%", s * 100.0 / (p.seconds * cpus as f64))),
        ops.join("; ")
    )
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 { format!("{:.2}", ours / theirs) } else { "-".into() }
}

/// The Markdown table: one row per workload's throughput, then one per
/// operation class with its percentiles; ours, HBase's, ratio (ours/HBase
/// for throughput, HBase/ours for latency and server CPU per operation:
/// above 1 is ours better in every row).
fn table(runs: &[EngineRun]) -> Vec<String> {
    let (Some(ours), Some(theirs)) =
        (runs.iter().find(|r| r.engine == "accordion"), runs.iter().find(|r| r.engine == "hbase"))
    else {
        return Vec::new();
    };
    let mut lines = vec![
        "ratio: accordion/HBase for throughput, HBase/accordion for latency and CPU (above 1: accordion better)"
            .to_string(),
        String::new(),
        "| workload | figure | accordion | HBase 2.6.4 | ratio |".to_string(),
        "|---|---|---:|---:|---:|".to_string(),
    ];
    for p in &ours.phases {
        let Some(q) = theirs.phases.iter().find(|q| q.workload == p.workload) else { continue };
        let (a, b) = (p.result.throughput_ops_per_sec, q.result.throughput_ops_per_sec);
        lines.push(format!("| {} | throughput (ops/s) | {a:.0} | {b:.0} | {} |", p.workload, ratio(a, b)));
        if let (Some(x), Some(y)) = (p.server_cpu_us_per_op(), q.server_cpu_us_per_op()) {
            lines.push(format!("| {} | server CPU per op (µs) | {x:.0} | {y:.0} | {} |", p.workload, ratio(y, x)));
        }
        if let (Some(x), Some(y)) = (p.server_disk_bytes_per_op(), q.server_disk_bytes_per_op()) {
            lines.push(format!("| {} | disk bytes written per op | {x:.0} | {y:.0} | {} |", p.workload, ratio(y, x)));
        }
        for (class, s) in &p.result.ops {
            let Some(t) = q.result.ops.get(class) else { continue };
            if class == "VERIFY" {
                continue;
            }
            for (name, x, y) in [("p50", s.p50_us, t.p50_us), ("p95", s.p95_us, t.p95_us), ("p99", s.p99_us, t.p99_us)]
            {
                let (Some(x), Some(y)) = (x, y) else { continue };
                lines.push(format!(
                    "| {} | {class} {name} (µs) | {x} | {y} | {} |",
                    p.workload,
                    ratio(y as f64, x as f64)
                ));
            }
        }
    }
    lines
}

pub fn run(args: &YcsbArgs) -> anyhow::Result<Vec<EngineRun>> {
    for e in &args.engines {
        if e != "accordion" && e != "hbase" {
            bail!("engine {e:?}: accordion or hbase");
        }
    }
    let opts = YcsbOptions {
        run_sh: args.ycsb_script.clone(),
        workloads: args.workloads.clone(),
        records: args.records,
        operations: args.operations,
        scan_operations: args.scan_operations,
        threads: args.threads.max(1),
        presplits: args.presplits.max(1),
        properties: args.properties.clone(),
        raw_dir: args.raw_dir.clone(),
    };
    check_workloads(&opts)?;
    let host = bench::sysinfo::host();
    eprintln!("host: {} ({} CPUs)", host.cpu_model.as_deref().unwrap_or("unknown CPU"), host.cpus);
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let me = std::env::current_exe().context("this binary's path (to start accordion server)")?;
    let mut runs = Vec::new();
    for engine in &args.engines {
        let dir = data_dir(&base, engine)?;
        eprintln!("starting {engine} on {} ...", dir.display());
        let server = if engine == "accordion" {
            Server::accordion(&me, &dir, &args.sets)?
        } else {
            Server::hbase(&args.hbase_script, &dir, &args.hbase_heap)?
        };
        eprintln!("{engine} ready in {:.1} s ({} {})", server.startup_secs, server.registry[0], server.registry[1]);
        let run = run_on(&server, engine, &opts, |p| {
            println!("{}", phase_line(engine, p, host.cpus));
            for f in &p.failures {
                println!("  FAILED: {f}");
            }
        })
        .with_context(|| format!("YCSB against {engine}"));
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
        let run = run?;
        println!(
            "{engine}: server peak RSS {}",
            run.server_peak_rss_bytes.map_or("unknown".into(), |b| format!("{} MiB", b >> 20))
        );
        runs.push(run);
    }
    let lines = table(&runs);
    if !lines.is_empty() {
        println!();
        for l in lines {
            println!("{l}");
        }
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({
            "records": args.records,
            "operations": args.operations,
            "scan_operations": args.scan_operations,
            "threads": args.threads,
            "presplits": args.presplits,
            "properties": args.properties,
            "hbase_heap": args.hbase_heap,
            "accordion_sets": args.sets,
            "host": host,
            "runs": runs,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&doc)?).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(runs)
}
