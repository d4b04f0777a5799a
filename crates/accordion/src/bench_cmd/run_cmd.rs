//! `accordion bench run`: runs presets on engines and policies in one
//! invocation and prints one table (and `--json FILE`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use bench::presets::{PRESETS, experiments, run_experiment};
use bench::report::{RunReport, table_header, to_json};

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
    /// The HBase engine's launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/hbase/run.sh"))]
    pub hbase_script: PathBuf,
}

pub fn run(args: &RunArgs) -> anyhow::Result<Vec<RunReport>> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let available: &[&str] =
        if cfg!(feature = "rocksdb") { &["accordion", "hbase", "rocksdb"] } else { &["accordion", "hbase"] };
    for e in &args.engines {
        if !available.contains(&e.as_str()) {
            bail!(
                "engine {e:?} is not available in this build (available: {}; rocksdb needs --features rocksdb)",
                available.join(", ")
            );
        }
    }
    let mut planned = Vec::new();
    for name in &args.presets {
        let exps = experiments(name, args.scale, &args.policies)
            .with_context(|| format!("preset {name:?} (known: {})", PRESETS.join(", ")))?;
        planned.push((name.clone(), exps));
    }
    println!("{}", table_header());
    let mut runs = Vec::new();
    for (name, exps) in &planned {
        if args.engines.iter().any(|e| e == "accordion") {
            for exp in exps {
                let r = run_experiment(exp, &base).with_context(|| format!("{name} / {}", exp.label))?;
                println!("{}", r.table_row());
                runs.push(r);
            }
        }
        if args.engines.iter().any(|e| e == "hbase") {
            for exp in exps {
                let r = bench::hbase_engine::run_hbase(exp, &args.hbase_script, &base)
                    .with_context(|| format!("{name} / hbase {}", exp.label))?;
                println!("{}", r.table_row());
                runs.push(r);
            }
        }
        #[cfg(feature = "rocksdb")]
        if args.engines.iter().any(|e| e == "rocksdb")
            && let Some(first) = exps.first()
        {
            let r = bench::presets::run_rocksdb(&first.preset, &base).with_context(|| format!("{name} / rocksdb"))?;
            println!("{}", r.table_row());
            runs.push(r);
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(path, to_json(&runs)).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(runs)
}
