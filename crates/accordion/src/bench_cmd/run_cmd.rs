//! `accordion bench run`: runs presets on engines and policies in one
//! invocation and prints one table (and `--json FILE`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use bench::presets::{PRESETS, experiments, run_experiment};
use bench::report::{RunReport, median_runs, ratio_lines, table_header, to_json_with_all};

use super::progress_bar::ProgressBarThread;

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Presets to run (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "paper-write-zipf")]
    pub presets: Vec<String>,
    /// Engines: accordion (embedded), hbase (real HBase 2.6.4 through
    /// bench/hbase/run.sh; Java 17 and Maven), rocksdb (`--features rocksdb`).
    #[arg(long, value_delimiter = ',', default_value = "accordion")]
    pub engines: Vec<String>,
    /// Memstore policies for the accordion engine.
    #[arg(long, value_delimiter = ',', default_value = "none,basic,eager,adaptive:0.2,adaptive:0.35,adaptive:0.5")]
    pub policies: Vec<String>,
    /// Multiplies operations and key space.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Where stores are created (removed after each run).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Writes SVG plots (throughput and bytes written per preset) here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Runs every experiment this many times and reports the median run (by
    /// ops/s); the JSON keeps every run under "all_runs".
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Overrides every experiment's A (in-memory flush threshold as a share
    /// of the region flush size).
    #[arg(long)]
    pub inmemory_flush_share: Option<f64>,
    /// Overrides every experiment's S (pipeline segments before a merge).
    #[arg(long)]
    pub pipeline_segments: Option<usize>,
    /// For --engines thrift: a running server's Thrift address (the
    /// server's own settings decide the memstore policy).
    #[arg(long)]
    pub server: Option<String>,
    /// For --engines thrift: the server's HTTP address, to read its counters.
    #[arg(long)]
    pub server_http: Option<String>,
    /// The HBase engine's launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/hbase/run.sh"))]
    pub hbase_script: PathBuf,
}

pub fn run(args: &RunArgs) -> anyhow::Result<Vec<RunReport>> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let available: &[&str] = if cfg!(feature = "rocksdb") {
        &["accordion", "hbase", "thrift", "rocksdb"]
    } else {
        &["accordion", "hbase", "thrift"]
    };
    for e in &args.engines {
        if !available.contains(&e.as_str()) {
            bail!(
                "engine {e:?} is not available in this build (available: {}; rocksdb needs --features rocksdb)",
                available.join(", ")
            );
        }
    }
    if args.engines.iter().any(|e| e == "thrift") && args.server.is_none() {
        bail!("--engines thrift needs --server HOST:PORT (a running accordion server)");
    }
    let mut planned = Vec::new();
    for name in &args.presets {
        let mut exps = experiments(name, args.scale, &args.policies)
            .with_context(|| format!("preset {name:?} (known: {})", PRESETS.join(", ")))?;
        for exp in &mut exps {
            if let Some(a) = args.inmemory_flush_share {
                if !(a > 0.0 && a <= 1.0) {
                    bail!("--inmemory-flush-share must be in (0, 1], got {a}");
                }
                exp.preset.inmemory_flush_share = a;
            }
            if let Some(s) = args.pipeline_segments {
                exp.preset.pipeline_segments_limit = s.max(1);
            }
        }
        planned.push((name.clone(), exps));
    }
    println!("{}", table_header());
    let mut runs = Vec::new();
    let repeat = args.repeat.max(1);
    let bar = ProgressBarThread::start();
    for (name, exps) in &planned {
        if args.engines.iter().any(|e| e == "accordion") {
            for exp in exps {
                for _ in 0..repeat {
                    bar.set_label(&format!("{name} accordion {}", exp.label));
                    let allocs_before = crate::counting_alloc::allocations();
                    let mut r = run_experiment(exp, &base).with_context(|| format!("{name} / {}", exp.label))?;
                    let allocs = crate::counting_alloc::allocations() - allocs_before;
                    r.allocs_per_op = Some(allocs as f64 / r.ops.max(1) as f64);
                    bar.println(&r.table_row());
                    runs.push(r);
                }
            }
        }
        if args.engines.iter().any(|e| e == "hbase") {
            for exp in exps {
                for _ in 0..repeat {
                    bar.set_label(&format!("{name} hbase {}", exp.label));
                    let r = bench::hbase_engine::run_hbase(exp, &args.hbase_script, &base)
                        .with_context(|| format!("{name} / hbase {}", exp.label))?;
                    bar.println(&r.table_row());
                    runs.push(r);
                }
            }
        }
        if let Some(addr) = args.server.as_deref().filter(|_| args.engines.iter().any(|e| e == "thrift"))
            && let Some(first) = exps.first()
        {
            for _ in 0..repeat {
                bar.set_label(&format!("{name} thrift {addr}"));
                let r = bench::presets::run_thrift(first, addr, args.server_http.as_deref())
                    .with_context(|| format!("{name} / thrift {addr}"))?;
                bar.println(&r.table_row());
                runs.push(r);
            }
        }
        #[cfg(feature = "rocksdb")]
        if args.engines.iter().any(|e| e == "rocksdb")
            && let Some(first) = exps.first()
        {
            for _ in 0..repeat {
                bar.set_label(&format!("{name} rocksdb"));
                let r =
                    bench::presets::run_rocksdb(&first.preset, &base).with_context(|| format!("{name} / rocksdb"))?;
                bar.println(&r.table_row());
                runs.push(r);
            }
        }
    }
    drop(bar);
    let medians = median_runs(&runs);
    if repeat > 1 {
        println!("\nmedians of {repeat}:\n{}", table_header());
        for r in &medians {
            println!("{}", r.table_row());
        }
    }
    let ratios = ratio_lines(&medians);
    if !ratios.is_empty() {
        println!("\nratios:");
        for line in ratios {
            println!("  {line}");
        }
    }
    if let Some(path) = &args.json {
        let all = if repeat > 1 { &runs[..] } else { &[] };
        std::fs::write(path, to_json_with_all(&medians, all)).with_context(|| format!("write {}", path.display()))?;
    }
    if let Some(dir) = &args.plot {
        for f in bench::plot::write_plots(&medians, dir)? {
            println!("plot: {}", f.display());
        }
    }
    Ok(medians)
}
