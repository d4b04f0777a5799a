//! `accordion bench run`: runs presets on engines and policies in one
//! invocation and prints one table (and `--json FILE`), then the ratios,
//! the paper presets beside the paper's figures, the measured reader's
//! latency percentiles, and warnings about runs whose policy could not
//! matter.

use std::path::PathBuf;

use anyhow::{Context, bail};
use bench::document::to_json_document;
use bench::presets::{Experiment, PRESETS, experiments, run_experiment, run_experiment_at};
use bench::read_report::{goal_lines, operation_lines, reader_lines};
use bench::report::{HDFS_ENGINE, RunReport, median_runs, ratio_lines, table_header, warnings};
use mini_hdfs::{MiniHdfs, MiniHdfsOptions};
use store::wal::Durability;

use super::progress_bar::ProgressBarThread;

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Presets to run (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "paper-write-zipf")]
    pub presets: Vec<String>,
    /// Engines: accordion (embedded), acc-hdfs (embedded, its store on HDFS:
    /// needs --hdfs), hbase (real HBase 2.6.4 through bench/hbase/run.sh;
    /// Java 17 and Maven), rocksdb (`--features rocksdb`).
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
    /// Also writes every run as JSON to this file: the table's figures and
    /// more (latency percentiles per operation, peak RSS, the settings each
    /// run used).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Lists the presets, what each runs and its shape at --scale, and exits.
    #[arg(long)]
    pub list_presets: bool,
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
    /// Holds the writers of every engine and policy to this many rows per
    /// second in total (the measured phase; a load phase runs free), so
    /// that paper-mixed's reader is measured under the same write load
    /// (paper-mixed's own default: 100 K rows/s).
    #[arg(long, value_name = "ROWS_PER_SEC")]
    pub write_rate: Option<f64>,
    /// For --engines thrift: a running server's Thrift address (the
    /// server's own settings decide the memstore policy).
    #[arg(long)]
    pub server: Option<String>,
    /// For --engines thrift: the server's HTTP address, to read its counters.
    #[arg(long)]
    pub server_http: Option<String>,
    /// For --engines thrift: the server serves Thrift over TLS; trust the
    /// CA certificates in this PEM file.
    #[arg(long, value_name = "CA_FILE")]
    pub server_tls_ca: Option<PathBuf>,
    /// For --engines acc-hdfs: `mini` starts the repository's mini HDFS
    /// (3 DataNodes that fsync on hsync) for this invocation and reports the
    /// bytes its DataNodes wrote per run; or an `hdfs://host:port/path` of a
    /// running cluster.
    #[arg(long, value_name = "mini|URI")]
    pub hdfs: Option<String>,
    /// The mini HDFS launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../hdfs/minicluster/run.sh"))]
    pub hdfs_script: PathBuf,
    /// Overrides every experiment's WAL durability (SYNC_WAL, ASYNC_WAL or
    /// SKIP_WAL), for every engine.
    #[arg(long, value_parser = parse_durability)]
    pub durability: Option<Durability>,
    /// The HBase engine's launcher.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/hbase/run.sh"))]
    pub hbase_script: PathBuf,
    /// RocksDB's memtable budget in MiB instead of the preset's memstore
    /// budget: to compare at equal memory, raise it until RocksDB's peak RSS
    /// equals ours (the report's settings give the budget each engine had).
    /// Each memtable grows in proportion (the region flush size × this /
    /// the preset's budget): RocksDB never fills a larger budget of small
    /// memtables.
    #[arg(long, value_name = "MIB")]
    pub rocksdb_memtable_mib: Option<u64>,
    /// The data block size of every engine's files, in KiB (ours, RocksDB
    /// and HBase alike), instead of the preset's: the YCSB presets set
    /// 16; the others leave ours and HBase at HBase's 64 and RocksDB at its
    /// tuning guide's 16.
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub block_size_kib: Option<u32>,
    /// Gets name the row's fields (HBase's `Get.addColumn` for each) on ours
    /// and HBase, as RocksDB's reads name their keys, instead of asking for
    /// the whole row. A get of named columns newer in the memstore than in
    /// any file is answered without reading files, ours and HBase's alike
    /// (HBase's lazy seek).
    #[arg(long)]
    pub named_gets: bool,
    /// Runs every embedded run (accordion, rocksdb) in this process instead
    /// of a child process of its own each. A child's peak RSS, malloc
    /// arenas and chunk pool are its run's alone; in one process a run
    /// starts with the pool and arenas the runs before it grew.
    #[arg(long)]
    pub in_process: bool,
    #[command(flatten)]
    pub child: super::run_isolated::ChildArgs,
}

pub(crate) fn parse_durability(s: &str) -> Result<Durability, String> {
    match s.to_ascii_uppercase().as_str() {
        "SYNC_WAL" => Ok(Durability::SyncWal),
        "ASYNC_WAL" => Ok(Durability::AsyncWal),
        "SKIP_WAL" => Ok(Durability::SkipWal),
        _ => Err(format!("{s:?}: SYNC_WAL, ASYNC_WAL or SKIP_WAL")),
    }
}

/// Where the acc-hdfs engine's stores go, and the mini cluster if the bench
/// started one.
struct HdfsTarget {
    base: String,
    mini: Option<MiniHdfs>,
    _dir: Option<tempfile::TempDir>,
}

impl HdfsTarget {
    fn start(args: &RunArgs, base: &std::path::Path) -> anyhow::Result<HdfsTarget> {
        match args.hdfs.as_deref() {
            Some("mini") => {
                let dir = tempfile::Builder::new().prefix("mini-hdfs-").tempdir_in(base)?;
                eprintln!("starting the mini HDFS ({}) ...", args.hdfs_script.display());
                // DataNodes that fsync on hsync, as a real cluster's do.
                let options = MiniHdfsOptions { script: args.hdfs_script.clone(), fsync: true, ..Default::default() };
                let mini = MiniHdfs::start(&dir.path().join("cluster"), &options)?;
                eprintln!("mini HDFS at {} (started in {:.1} s)", mini.uri, mini.started_in.as_secs_f64());
                Ok(HdfsTarget { base: format!("{}/bench", mini.uri), mini: Some(mini), _dir: Some(dir) })
            }
            Some(uri) if uri.starts_with("hdfs://") => Ok(HdfsTarget { base: uri.to_string(), mini: None, _dir: None }),
            Some(other) => bail!("--hdfs wants `mini` or an hdfs://host:port/path URI, got {other:?}"),
            None => bail!("--engines {HDFS_ENGINE} needs --hdfs mini (or --hdfs hdfs://host:port/path)"),
        }
    }

    /// Runs `exp` with its store on HDFS; with the mini cluster, the bytes
    /// its DataNodes wrote during the run.
    fn run(&mut self, exp: &Experiment) -> anyhow::Result<RunReport> {
        let before = self.mini.as_mut().map(MiniHdfs::bytes_written).transpose()?;
        let mut r = run_experiment_at(exp, &self.base, HDFS_ENGINE)?;
        if let (Some(before), Some(mini)) = (before, self.mini.as_mut()) {
            r.datanode_bytes = Some(mini.bytes_written()?.saturating_sub(before));
        }
        Ok(r)
    }
}

/// `--list-presets`: each preset, what it runs, and its shape at `scale`
/// (read from the experiments it makes, not restated).
fn list_presets(scale: f64, policies: &[String]) -> anyhow::Result<()> {
    for name in PRESETS {
        let exps = experiments(name, scale, policies)?;
        let Some(first) = exps.first() else { continue };
        let p = &first.preset;
        println!("{name}");
        println!("    {}", bench::presets::describe(name).unwrap_or("(no description)"));
        println!(
            "    at --scale {scale}: {} runs; {} writer threads, {} regions, {} ops over {} keys, \
             memstore budget {} MiB, region flush size {} MiB",
            exps.len(),
            p.threads,
            p.regions,
            thousands(p.workload.ops),
            thousands(p.workload.key_space),
            p.memstore_bytes >> 20,
            p.region_flush_size >> 20,
        );
        if first.mode == bench::presets::Mode::Workload && p.workload.read_ratio < 1.0 {
            // Counted from the key sequence the writers draw, not estimated.
            let distinct = p.workload.distinct_keys_written();
            let row = bench::regime::lean_row_heap_bytes(p.workload.fields, p.workload.value_size);
            println!(
                "    its writes touch {} distinct keys: at the leanest row ({row} B) {:.2} × the memstore budget",
                thousands(distinct),
                (distinct * row) as f64 / p.memstore_bytes as f64,
            );
        }
    }
    Ok(())
}

/// `n` with thousands separators: 4,000,000.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn run(args: &RunArgs) -> anyhow::Result<Vec<RunReport>> {
    if args.list_presets {
        list_presets(args.scale, &args.policies)?;
        return Ok(Vec::new());
    }
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let available: &[&str] = if cfg!(feature = "rocksdb") {
        &["accordion", HDFS_ENGINE, "hbase", "thrift", "rocksdb"]
    } else {
        &["accordion", HDFS_ENGINE, "hbase", "thrift"]
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
    if let Some(rate) = args.write_rate
        && !(rate.is_finite() && rate > 0.0)
    {
        bail!("--write-rate must be a positive number of rows per second, got {rate}");
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
            if args.write_rate.is_some() {
                exp.preset.write_rate = args.write_rate;
            }
            if let Some(d) = args.durability {
                exp.preset.durability = d;
            }
            exp.preset.rocksdb_memtable_bytes = args.rocksdb_memtable_mib.map(|m| m << 20);
            if let Some(kib) = args.block_size_kib {
                exp.preset.block_size = Some((kib as usize) << 10);
            }
            exp.preset.named_gets |= args.named_gets;
        }
        planned.push((name.clone(), exps));
    }
    let jobs = schedule(args, &planned);
    if let Some(index) = args.child.child_job {
        return super::run_isolated::serve_child(&args.child, index, jobs.len(), |i| {
            run_job(args, &base, &jobs[i], None)
        });
    }
    let mut hdfs =
        if args.engines.iter().any(|e| e == HDFS_ENGINE) { Some(HdfsTarget::start(args, &base)?) } else { None };
    println!("{}", table_header());
    let mut runs = Vec::new();
    // A run that fails (a peer that crashes, a full disk) is reported and
    // the others go on: one engine's failure took every later run of the
    // invocation with it, and the runs before it went unsummarised.
    let mut failed: Vec<String> = Vec::new();
    let repeat = args.repeat.max(1);
    let bar = ProgressBarThread::start();
    // Repeats run in rounds (every engine and policy once per round), so that
    // a slow spell of this noisy machine falls on all of them alike instead
    // of on one policy's repeats.
    for _round in 0..repeat {
        for (index, (name, job)) in jobs.iter().enumerate() {
            bar.set_label(&format!("{name} {}", job.label()));
            let r = if args.in_process || !job.isolated() {
                run_job(args, &base, &(name, *job), hdfs.as_mut())
            } else {
                super::run_isolated::run_in_child(index).with_context(|| format!("{name} / {}", job.label()))
            };
            match r {
                Ok(r) => {
                    bar.println(&r.table_row());
                    runs.push(r);
                }
                Err(e) => {
                    let line = format!("{name} / {}: {e:#}", job.label());
                    bar.println(&format!("FAILED {line}"));
                    failed.push(line);
                }
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
    let paper = bench::paper::lines(&bench::paper::compare(&medians));
    if !paper.is_empty() {
        println!();
        for line in paper {
            println!("{line}");
        }
    }
    for (title, lines) in [
        ("reader get latency µs (p50 / p75 / p90 / p95 / p99):", reader_lines(&medians)),
        ("operations after the load (latency µs):", operation_lines(&medians)),
        ("read goals (ours / the other; latency and CPU: below 1 is better, throughput: above):", goal_lines(&medians)),
    ] {
        if !lines.is_empty() {
            println!("\n{title}");
            for line in lines {
                println!("  {line}");
            }
        }
    }
    let warned = warnings(&medians);
    if !warned.is_empty() {
        println!("\nwarnings:");
        for line in warned {
            println!("  {line}");
        }
    }
    if let Some(path) = &args.json {
        let all = if repeat > 1 { &runs[..] } else { &[] };
        std::fs::write(path, to_json_document(&medians, all)).with_context(|| format!("write {}", path.display()))?;
    }
    if let Some(dir) = &args.plot {
        for f in bench::plot::write_plots(&medians, dir)? {
            println!("plot: {}", f.display());
        }
    }
    if !failed.is_empty() {
        // After the summaries and the JSON of the runs that finished.
        anyhow::bail!("{} run(s) failed:\n  {}", failed.len(), failed.join("\n  "));
    }
    Ok(medians)
}

/// Runs `job` in this process.
fn run_job(
    args: &RunArgs,
    base: &std::path::Path,
    (name, job): &(&str, Job<'_>),
    hdfs: Option<&mut HdfsTarget>,
) -> anyhow::Result<RunReport> {
    let mut r = match job {
        Job::Accordion(exp) => {
            let allocs_before = crate::counting_alloc::allocations();
            let mut r = run_experiment(exp, base).with_context(|| format!("{name} / {}", exp.label))?;
            let allocs = crate::counting_alloc::allocations() - allocs_before;
            r.allocs_per_op = Some(allocs as f64 / r.ops.max(1) as f64);
            r
        }
        Job::AccordionHdfs(exp) => {
            let target = hdfs.context("the HDFS engine runs in the process that started HDFS")?;
            target.run(exp).with_context(|| format!("{name} / {HDFS_ENGINE} {}", exp.label))?
        }
        Job::Hbase(exp) => bench::hbase_engine::run_hbase(exp, &args.hbase_script, base)
            .with_context(|| format!("{name} / hbase {}", exp.label))?,
        Job::Thrift(exp, addr) => {
            bench::presets::run_thrift(exp, addr, args.server_http.as_deref(), args.server_tls_ca.as_deref())
                .with_context(|| format!("{name} / thrift {addr}"))?
        }
        #[cfg(feature = "rocksdb")]
        Job::Rocksdb(exp) => bench::presets::run_rocksdb(exp, base).with_context(|| format!("{name} / rocksdb"))?,
    };
    if job.isolated() {
        r.process_id = Some(std::process::id());
    }
    Ok(r)
}

/// One run of one engine in a round.
#[derive(Debug, Clone, Copy)]
enum Job<'a> {
    Accordion(&'a Experiment),
    /// The embedded engine with its store on HDFS.
    AccordionHdfs(&'a Experiment),
    Hbase(&'a Experiment),
    /// The preset's first experiment against a running server.
    Thrift(&'a Experiment, &'a str),
    /// The preset on RocksDB (its first experiment's shape: no policies).
    #[cfg(feature = "rocksdb")]
    Rocksdb(&'a Experiment),
}

impl Job<'_> {
    /// The engine and policy, for the progress bar and errors.
    fn label(&self) -> String {
        match self {
            Job::Accordion(exp) => format!("accordion {}", exp.label),
            Job::AccordionHdfs(exp) => format!("{HDFS_ENGINE} {}", exp.label),
            Job::Hbase(exp) => format!("hbase {}", exp.label),
            Job::Thrift(_, addr) => format!("thrift {addr}"),
            #[cfg(feature = "rocksdb")]
            Job::Rocksdb(_) => "rocksdb".to_string(),
        }
    }

    /// Whether the run is an embedded engine's, which runs in a child
    /// process of its own unless `--in-process` (HBase runs in a JVM of its
    /// own anyway; the HDFS engine needs the mini HDFS this process
    /// started; the Thrift engine is a client of another process).
    fn isolated(&self) -> bool {
        match self {
            Job::Accordion(_) => true,
            #[cfg(feature = "rocksdb")]
            Job::Rocksdb(_) => true,
            Job::AccordionHdfs(_) | Job::Hbase(_) | Job::Thrift(..) => false,
        }
    }
}

/// The runs of one round, labelled by preset: per preset, our policies, then
/// HBase's, the server, RocksDB.
fn schedule<'a>(args: &'a RunArgs, planned: &'a [(String, Vec<Experiment>)]) -> Vec<(&'a str, Job<'a>)> {
    let wants = |engine: &str| args.engines.iter().any(|e| e == engine);
    let mut jobs = Vec::new();
    for (name, exps) in planned {
        if wants("accordion") {
            jobs.extend(exps.iter().map(|e| (name.as_str(), Job::Accordion(e))));
        }
        if wants(HDFS_ENGINE) {
            jobs.extend(exps.iter().map(|e| (name.as_str(), Job::AccordionHdfs(e))));
        }
        if wants("hbase") {
            jobs.extend(exps.iter().map(|e| (name.as_str(), Job::Hbase(e))));
        }
        if let (Some(addr), Some(first), true) = (args.server.as_deref(), exps.first(), wants("thrift")) {
            jobs.push((name.as_str(), Job::Thrift(first, addr)));
        }
        #[cfg(feature = "rocksdb")]
        if let (Some(first), true) = (exps.first(), wants("rocksdb")) {
            jobs.push((name.as_str(), Job::Rocksdb(first)));
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(presets: &str, write_rate: Option<f64>) -> RunArgs {
        RunArgs {
            presets: vec![presets.into()],
            engines: vec!["accordion".into()],
            policies: vec!["basic".into()],
            scale: 0.002,
            dir: None,
            json: None,
            plot: None,
            repeat: 1,
            inmemory_flush_share: None,
            pipeline_segments: None,
            write_rate,
            server: None,
            server_http: None,
            server_tls_ca: None,
            hbase_script: PathBuf::from("/nonexistent"),
            hdfs: None,
            hdfs_script: PathBuf::from("/nonexistent"),
            durability: None,
            list_presets: false,
            in_process: true,
            rocksdb_memtable_mib: None,
            block_size_kib: None,
            named_gets: false,
            child: Default::default(),
        }
    }

    /// A run that fails does not take the others with it: they are run,
    /// summarised and written to the JSON, and the invocation still fails.
    #[test]
    fn a_failed_run_leaves_the_others_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("paper-write-zipf", None);
        a.dir = Some(dir.path().to_path_buf());
        a.json = Some(dir.path().join("runs.json"));
        // Per preset, ours then HBase's, from a script that does not exist:
        // the first preset's HBase run fails before the second preset's.
        a.presets = vec!["paper-write-zipf".into(), "paper-write-uniform".into()];
        a.engines = vec!["accordion".into(), "hbase".into()];
        let err = run(&a).expect_err("the HBase runs fail");
        assert!(format!("{err:#}").contains("2 run(s) failed"), "{err:#}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs.json")).expect("json")).expect("parse");
        let runs: Vec<(&str, &str)> = doc["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| Some((r["preset"].as_str()?, r["engine"].as_str()?)))
            .collect();
        assert_eq!(
            runs,
            [("paper-write-zipf", "accordion"), ("paper-write-uniform", "accordion")],
            "the run after the failed one was made, and both are written"
        );
    }

    #[test]
    fn a_block_size_and_named_gets_given_on_the_command_line_reach_every_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("paper-write-zipf", None);
        a.dir = Some(dir.path().to_path_buf());
        a.json = Some(dir.path().join("runs.json"));
        let runs = run(&a).expect("runs");
        assert_eq!(runs[0].settings.as_ref().expect("settings").block_size, 64 << 10, "the preset's: HBase's default");
        assert!(!runs[0].settings.as_ref().expect("settings").named_gets, "whole rows unless asked");
        a.block_size_kib = Some(16);
        a.named_gets = true;
        let runs = run(&a).expect("runs");
        let settings = runs[0].settings.as_ref().expect("settings");
        assert_eq!(settings.block_size, 16 << 10);
        assert!(settings.named_gets, "--named-gets reaches the run");
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_000_000), "4,000,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }

    #[test]
    fn repeats_run_in_rounds_across_policies() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("paper-write-zipf", None);
        a.policies = vec!["none".into(), "basic".into()];
        a.repeat = 2;
        a.dir = Some(dir.path().to_path_buf());
        a.json = Some(dir.path().join("runs.json"));
        let medians = run(&a).expect("runs");
        assert_eq!(medians.len(), 2);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs.json")).expect("json")).expect("valid");
        let order: Vec<&str> = json["all_runs"]
            .as_array()
            .expect("all runs")
            .iter()
            .map(|r| r["policy"].as_str().expect("policy"))
            .collect();
        assert_eq!(order, ["none", "basic", "none", "basic"], "one round of every policy, then the next");
    }

    #[test]
    fn write_rate_holds_the_mixed_presets_writers_and_the_reader_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("paper-mixed", Some(40_000.0));
        a.dir = Some(dir.path().to_path_buf());
        a.json = Some(dir.path().join("runs.json"));
        let runs = run(&a).expect("runs");
        let r = &runs[0];
        let s = r.settings.as_ref().expect("settings");
        // The load wrote every key once; the reader did its 150 K gets at
        // this scale, and the writers wrote while it read.
        assert_eq!(s.write_rate, Some(40_000.0));
        assert_eq!(s.load_ops, s.key_space);
        assert_eq!(s.reader_gets, 300);
        let get = &r.latency_us["get"];
        assert!(get.p50 >= 1 && get.p99 >= get.p50, "{get:?}");
        // N rows at 40 000 rows/s cannot take less than N / 40 000 s.
        let rows = r.ops - s.reader_gets;
        assert!(r.seconds >= 0.95 * rows as f64 / 40_000.0, "{} s for {rows} rows", r.seconds);
        let line = reader_lines(&runs);
        assert_eq!(line.len(), 1, "{line:?}");
        assert!(line[0].contains("limit 40000"), "{}", line[0]);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs.json")).expect("json")).expect("valid");
        assert_eq!(json["runs"][0]["settings"]["write_rate"], 40_000.0);
        let get = &json["runs"][0]["latency_us"]["get"];
        assert!(get["p75"].as_u64().is_some() && get["p90"].as_u64().is_some(), "{get}");
        assert!(run(&args("paper-mixed", Some(0.0))).is_err());
    }
}
