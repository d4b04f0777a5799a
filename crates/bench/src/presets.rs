//! Presets: the papers' experiments (DESIGN §7) scaled to one 2-core
//! machine, each a workload plus the store shape it runs on. `scale`
//! multiplies operations and key space for bigger machines.
//!
//! The write-only presets (and tune-a, tune-s, value-size, paper-mixed,
//! which start from them) take their shape from the regime calculator
//! ([`crate::regime`]), which keeps the paper's ratios at every scale:
//! budget per region ≈ 120/128 of the region flush size, live data ≥ 1.5 ×
//! the budget, 5 writes per key. `regions-per-gb` keeps the shape it was
//! made for instead: 2–128 regions sharing a 256 MiB budget with a 128 MiB
//! region flush size, where flushes are global-pressure flushes.

use std::path::Path;

use store::wal::Durability;

use crate::BenchError;
use crate::driver;
use crate::engine::{AccordionEngine, AccordionSetup, Engine};
use crate::keys::write_key;
use crate::regime::{MIN_LIVE_OVER_BUDGET, Regime, WRITES_PER_KEY, lean_row_heap_bytes};
use crate::report::{Percentiles, RunReport};
use crate::settings::{GIT_COMMIT, RunSettings, durability_name, engine_note};
use crate::sysinfo::{cpu_seconds, peak_rss_bytes, reset_peak_rss};
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
    /// RocksDB's memtable budget when it is not `memstore_bytes`: raised so
    /// that RocksDB's peak RSS equals ours, to compare at equal memory
    /// (`bench run --rocksdb-memtable-mib`).
    pub rocksdb_memtable_bytes: Option<u64>,
    /// The block cache every engine gets (ours: its share of the store's
    /// budget; RocksDB: its LRU cache).
    pub block_cache_bytes: u64,
    pub region_flush_size: u64,
    /// The WAL rolls to a new file past this size.
    pub wal_roll_size: u64,
    /// A.
    pub inmemory_flush_share: f64,
    /// S.
    pub pipeline_segments_limit: usize,
    /// The data block size of every engine's files; `None`: each engine's
    /// own default (ours HBase's 64 KiB, RocksDB's tuning guide's 16 KiB).
    pub block_size: Option<usize>,
    /// The `--scale` the preset was made at (recorded in the run settings).
    pub scale: f64,
    /// Total rows per second the writers are held to (`--write-rate`).
    pub write_rate: Option<f64>,
    /// Gets name the row's columns (`--named-gets`): ours and HBase ask for
    /// each field (HBase's `Get.addColumn`), as RocksDB's reads name their
    /// keys; otherwise they ask for the whole row (YCSB's `readallfields`).
    pub named_gets: bool,
}

/// The data block size RocksDB's "Setup Options and Basic Tuning" sets
/// (its default is 4 KiB): what RocksDB gets where a preset sets none.
pub const ROCKSDB_BLOCK_SIZE: usize = 16 << 10;

/// Names of the presets this build knows.
pub const PRESETS: &[&str] = &[
    "paper-write-zipf",
    "paper-write-uniform",
    "paper-mixed",
    "tune-a",
    "tune-s",
    "value-size",
    "regions-per-gb",
    "ycsb-b",
    "ycsb-c",
    "ycsb-e",
];

/// What preset `name` runs, in a line (`accordion bench run --list-presets`).
pub fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "paper-write-zipf" => {
            "the papers' write-only workload: writer threads putting client batches of Zipf-distributed keys \
             into regions that share the memstore budget; once per --policies policy"
        }
        "paper-write-uniform" => "the same with uniformly distributed keys",
        "paper-mixed" => {
            "load every key once (uniform, not measured), then one reader's 150 K Zipf gets measured \
             (p50..p99) while 12 writers write Zipf rows at a fixed rate (100 K rows/s unless --write-rate), \
             the same on every engine; the writers stop when the reader is done; once per policy"
        }
        "tune-a" => "throughput as A, the active segment's share of the flush size, goes from 1.0 down to 0.01 (basic)",
        "tune-s" => "throughput as S, the pipeline's segments before a merge, goes from 1 to 10 (basic)",
        "value-size" => "100 B and 1 KB values under none and basic, at about the bytes of the 25 B preset",
        "regions-per-gb" => "2 to 128 regions sharing one memstore budget under none and basic (small flushes)",
        "ycsb-b" | "ycsb-c" | "ycsb-e" => crate::read_presets::describe(name)?,
        _ => return None,
    })
}

/// How an experiment drives its engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Every operation of the workload, on an empty table.
    Workload,
    /// The table loaded first (every key once, [`load_workload`]; not
    /// measured), then every operation of the workload measured: YCSB's
    /// load and run phases.
    LoadThenRun,
    /// The table loaded first (not measured), then one reader thread's
    /// `reads` Zipf gets ([`reader_workload`]) measured while the
    /// workload's writes run in the background, until the reader is done.
    ReaderUnderWrites { reads: u64 },
}

impl Mode {
    /// Whether the table is loaded before the measured phase.
    pub fn loads(&self) -> bool {
        !matches!(self, Mode::Workload)
    }
}

/// The mixed workload's writers' operations: more than any reader outlasts
/// at any rate (they stop when the reader is done).
pub const MIXED_WRITER_CEILING: u64 = u64::MAX / 2;

/// The paper's mixed workload: the measured reader's gets at scale 1.
pub const MIXED_READER_GETS: f64 = 150_000.0;

/// The writers' rate in the mixed workload unless `--write-rate` says
/// otherwise: the rate of the first measurement, one that every
/// engine here sustains while its reader runs.
pub const MIXED_WRITE_RATE: f64 = 100_000.0;

/// One run of a preset: a label (the policy and the varied parameter), the
/// store shape and the workload.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub preset: Preset,
    pub policy: String,
    pub label: String,
    pub mode: Mode,
}

/// `workload` with its key space grown (and its operations with it, at
/// [`WRITES_PER_KEY`]) until the distinct keys its writes touch, at the
/// leanest row ([`lean_row_heap_bytes`]), hold at least
/// [`MIN_LIVE_OVER_BUDGET`] × `budget`: the paper's regime counted by keys
/// written, not by key space. The keys are counted
/// ([`Workload::distinct_keys_written`], deterministic from the seed), each
/// try growing the key space by the shortfall, as Zipf at a fixed number of
/// writes per key touches a near-constant share of its key space. The
/// answer is remembered per starting size and budget (counting millions of
/// draws takes a moment).
fn sized_by_keys_written(mut workload: Workload, budget: u64) -> Workload {
    static SIZED: std::sync::Mutex<Vec<((u64, u64), u64)>> = std::sync::Mutex::new(Vec::new());
    let start = (workload.key_space, budget);
    let known = SIZED.lock().map(|m| m.iter().find(|(k, _)| *k == start).map(|(_, v)| *v)).unwrap_or(None);
    let key_space = known.unwrap_or_else(|| {
        let row = lean_row_heap_bytes(workload.fields, workload.value_size);
        let needed = (MIN_LIVE_OVER_BUDGET * budget as f64 / row as f64).ceil() as u64;
        let mut w = workload.clone();
        for _ in 0..8 {
            let distinct = w.distinct_keys_written();
            if distinct >= needed {
                break;
            }
            let grow = needed as f64 / distinct.max(1) as f64 * 1.05;
            w.key_space = (w.key_space as f64 * grow).ceil() as u64;
            w.ops = WRITES_PER_KEY * w.key_space;
        }
        if let Ok(mut m) = SIZED.lock() {
            m.push((start, w.key_space));
        }
        w.key_space
    });
    workload.key_space = key_space;
    workload.ops = WRITES_PER_KEY * key_space;
    workload
}

impl Preset {
    /// The paper's write-only experiment in the paper's regime
    /// ([`Regime::paper_write`]): at scale 1, 5 regions sharing a 150 MiB
    /// memstore budget (30 MiB each) with a 32 MiB region flush size and
    /// 32 MiB WAL rolls; 4 M row writes over 800 K keys; 12 threads, rows of
    /// 4 × 25 B, 10 KB client batches, async WAL, A = 0.02, S = 5.
    ///
    /// Under Zipf the writes touch far fewer keys than the key space holds
    /// (at scale 1, 351 K of 800 K), so the Zipf preset's key space is grown,
    /// at the same writes per key, until the keys its writes touch hold the
    /// regime's share of the budget ([`sized_by_keys_written`]).
    pub fn paper_write(dist: KeyDist, scale: f64) -> Result<Preset, BenchError> {
        let regime = Regime::paper_write(scale)?;
        let workload = Workload {
            key_space: regime.key_space,
            dist,
            fields: 4,
            value_size: 25,
            ops: regime.ops,
            seed: 42,
            ..Workload::default()
        };
        let workload = match dist {
            KeyDist::Zipfian => sized_by_keys_written(workload, regime.memstore_bytes),
            _ => workload,
        };
        Ok(Preset {
            name: if dist == KeyDist::Zipfian { "paper-write-zipf" } else { "paper-write-uniform" },
            workload,
            threads: 12,
            regions: regime.regions,
            batch_bytes: 10 * 1024,
            durability: Durability::AsyncWal,
            memstore_bytes: regime.memstore_bytes,
            rocksdb_memtable_bytes: None,
            // As the store sizes it by default: the same 0.4 share of the
            // budget as the memstores.
            block_cache_bytes: regime.memstore_bytes,
            region_flush_size: regime.region_flush_size,
            wal_roll_size: regime.wal_roll_size,
            inmemory_flush_share: 0.02,
            pipeline_segments_limit: 5,
            block_size: None,
            scale,
            write_rate: None,
            named_gets: false,
        })
    }

    /// The shape `regions-per-gb` varies: the former paper-write shape, a
    /// 256 MiB budget (× the scale, clamped to 0.05–1) with a 128 MiB region
    /// flush size and 128 MiB WAL rolls, 2 M row writes over 1 M keys
    /// (× the scale), Zipf; the experiment sets the regions.
    pub fn regions_per_gb_base(scale: f64) -> Result<Preset, BenchError> {
        let mut p = Preset::paper_write(KeyDist::Zipfian, scale)?.named("regions-per-gb");
        let scaled = |n: f64| ((n * scale) as u64).max(2);
        p.workload.key_space = scaled(1_000_000.0);
        p.workload.ops = scaled(2_000_000.0);
        p.memstore_bytes = ((256u64 << 20) as f64 * scale.clamp(0.05, 1.0)) as u64;
        p.region_flush_size = 128 << 20;
        p.wal_roll_size = 128 << 20;
        Ok(p)
    }

    /// The write-only preset `name` (`paper-write-zipf` or `-uniform`).
    pub fn by_name(name: &str, scale: f64) -> Result<Preset, BenchError> {
        match name {
            "paper-write-zipf" => Preset::paper_write(KeyDist::Zipfian, scale),
            "paper-write-uniform" => Preset::paper_write(KeyDist::Uniform, scale),
            other => Err(BenchError::Invalid(format!("{other:?} is not a write-only preset"))),
        }
    }

    fn named(mut self, name: &'static str) -> Preset {
        self.name = name;
        self
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

/// The runs of preset `name` for `policies` (presets that vary a parameter
/// choose their own policies). Each finishes in minutes at scale 1 here.
pub fn experiments(name: &str, scale: f64, policies: &[String]) -> Result<Vec<Experiment>, BenchError> {
    let each_policy = |preset: Preset, mode: Mode| -> Vec<Experiment> {
        policies
            .iter()
            .map(|p| Experiment { preset: preset.clone(), policy: p.clone(), label: p.clone(), mode: mode.clone() })
            .collect()
    };
    let zipf = Preset::paper_write(KeyDist::Zipfian, scale)?;
    let variant = |preset: Preset, policy: &str, label: String| Experiment {
        preset,
        policy: policy.to_string(),
        label,
        mode: Mode::Workload,
    };
    Ok(match name {
        "paper-write-zipf" | "paper-write-uniform" => each_policy(Preset::by_name(name, scale)?, Mode::Workload),
        "paper-mixed" => {
            // The Zipf preset's key space loaded once, then 12 writers at a
            // fixed rate while one reader's gets are measured. The writers
            // run until the reader is done: their operations are no bound
            // (a bound they reached would leave the reader's last gets
            // without writes).
            let mut p = zipf.named("paper-mixed");
            p.workload.seed = 43;
            p.workload.ops = MIXED_WRITER_CEILING;
            p.write_rate = Some(MIXED_WRITE_RATE);
            let reads = ((MIXED_READER_GETS * scale) as u64).max(1);
            each_policy(p, Mode::ReaderUnderWrites { reads })
        }
        "ycsb-b" => each_policy(crate::read_presets::ycsb("ycsb-b", scale)?, Mode::LoadThenRun),
        "ycsb-c" => each_policy(crate::read_presets::ycsb("ycsb-c", scale)?, Mode::LoadThenRun),
        "ycsb-e" => each_policy(crate::read_presets::ycsb("ycsb-e", scale)?, Mode::LoadThenRun),
        "tune-a" => {
            // Throughput as the active segment's share goes from 1.0 (the
            // classic memstore) down to 0.01, under basic.
            let mut v = vec![variant(zipf.clone().named("tune-a"), "none", "A=1.0 (none)".into())];
            for a in [0.5, 0.2, 0.1, 0.05, 0.02, 0.01] {
                let mut p = zipf.clone().named("tune-a");
                p.inmemory_flush_share = a;
                v.push(variant(p, "basic", format!("basic A={a}")));
            }
            v
        }
        "tune-s" => [1usize, 2, 3, 5, 7, 10]
            .iter()
            .map(|&s| {
                let mut p = zipf.clone().named("tune-s");
                p.pipeline_segments_limit = s;
                variant(p, "basic", format!("basic S={s}"))
            })
            .collect(),
        "value-size" => {
            // 100 B and 1 KB values (4 fields) in a quarter and a fortieth
            // of the operations: about the bytes of the 25 B preset.
            let mut v = Vec::new();
            for (size, divisor) in [(100usize, 4u64), (1024, 40)] {
                let mut p = zipf.clone().named("value-size");
                p.workload.value_size = size;
                p.workload.ops = (p.workload.ops / divisor).max(2);
                for policy in ["none", "basic"] {
                    v.push(variant(p.clone(), policy, format!("{policy} value={size}B")));
                }
            }
            v
        }
        "regions-per-gb" => {
            // More regions sharing one memstore budget: flush files shrink and
            // HBase's throughput falls past ~7 regions per GB.
            let base = Preset::regions_per_gb_base(scale)?;
            let mut v = Vec::new();
            for regions in [2usize, 8, 32, 128] {
                let mut p = base.clone();
                p.regions = regions;
                let per_gb = regions as f64 / (p.memstore_bytes as f64 / (1u64 << 30) as f64);
                for policy in ["none", "basic"] {
                    v.push(variant(p.clone(), policy, format!("{policy} {per_gb:.0}/GB")));
                }
            }
            v
        }
        other => return Err(BenchError::Invalid(format!("unknown preset {other:?}; known: {}", PRESETS.join(", ")))),
    })
}

/// Runs one experiment on the embedded store, in a directory under `base`.
pub fn run_experiment(exp: &Experiment, base: &Path) -> Result<RunReport, BenchError> {
    let base = base.to_str().ok_or_else(|| BenchError::Invalid(format!("{} is not UTF-8", base.display())))?;
    run_experiment_at(exp, base, "accordion")
}

/// Runs one experiment on the embedded store, in a directory under `base`
/// (a local path, `file:///path` or `hdfs://host:port/path`), reported as
/// engine `name`.
pub fn run_experiment_at(exp: &Experiment, base: &str, name: &'static str) -> Result<RunReport, BenchError> {
    let preset = &exp.preset;
    memstore::CompactionPolicy::parse(&exp.policy).map_err(|e| BenchError::Invalid(e.to_string()))?;
    let setup = AccordionSetup {
        root: format!("{}/accordion-{}-{}", base.trim_end_matches('/'), preset.name, std::process::id()),
        name,
        policy: exp.policy.clone(),
        split_keys: preset.split_keys(),
        durability: preset.durability,
        memstore_bytes: preset.memstore_bytes,
        block_cache_bytes: preset.block_cache_bytes,
        region_flush_size: preset.region_flush_size,
        wal_roll_size: preset.wal_roll_size,
        inmemory_flush_share: preset.inmemory_flush_share,
        pipeline_segments_limit: preset.pipeline_segments_limit,
        block_size: preset.block_size,
        named_gets: preset.named_gets,
    };
    let engine = AccordionEngine::open(&setup, preset.workload.fields)?;
    let mut report = run_mode(exp, &engine, &exp.label)?;
    if let Some(s) = &mut report.settings {
        s.memstore_policy = exp.policy.clone();
    }
    Ok(report)
}

/// The load phase of the presets that load first (unthrottled, not
/// measured): every key of the key space once, in YCSB's hashed order, in
/// 10 KB client batches. Every engine loads this sequence.
pub fn load_workload(preset: &Preset) -> Workload {
    Workload {
        dist: KeyDist::Sequential,
        ops: preset.workload.key_space,
        read_ratio: 0.0,
        scan_ratio: 0.0,
        inserts: false,
        seed: 42,
        ..preset.workload.clone()
    }
}

/// Client batches of the load phase: YCSB's 10 KB write buffer.
const LOAD_BATCH_BYTES: usize = 10 * 1024;

/// The measured reader's gets of a reader-under-writes run: `reads` keys of
/// the loaded key space drawn by YCSB's scrambled zipfian (its own seed,
/// not the writers'). Every engine's reader reads this sequence.
pub fn reader_workload(preset: &Preset, reads: u64) -> Workload {
    Workload {
        dist: KeyDist::Zipfian,
        ops: reads,
        read_ratio: 1.0,
        scan_ratio: 0.0,
        inserts: false,
        seed: 44,
        ..preset.workload.clone()
    }
}

/// Runs `exp` on `engine` as its mode says: loads first if it loads, then
/// measures; always finishes the engine (removing its data).
pub fn run_mode(exp: &Experiment, engine: &dyn Engine, label: &str) -> Result<RunReport, BenchError> {
    let preset = &exp.preset;
    if exp.mode.loads() {
        let loaded = driver::run(engine, &load_workload(preset), preset.threads, LOAD_BATCH_BYTES, None)
            .and_then(|_| engine.settle());
        match loaded {
            Ok(true) => {}
            Ok(false) => eprintln!(
                "warning: {} {label}: background work still running {} s after the load; measuring anyway",
                engine.name(),
                crate::engine::SETTLE_LIMIT.as_secs()
            ),
            Err(e) => {
                let _ = engine.finish();
                return Err(e);
            }
        }
    }
    let reads = match exp.mode {
        Mode::ReaderUnderWrites { reads } => Some(reader_workload(preset, reads)),
        _ => None,
    };
    measure_mode(preset, engine, label, &exp.mode, reads.as_ref())
}

/// One RocksDB memtable: the region flush size, scaled with the memtable
/// budget when that is raised for an equal-memory comparison. Raising only
/// the budget changed nothing (measured: peak RSS 95.9 MB at 256 MiB, 99.5
/// MB at 384 MiB, 94–96 MB at 150 MiB): RocksDB flushes each memtable when it
/// reaches its size and never fills the budget, so the memory goes where
/// its tuning guide puts it for writes, into larger memtables.
pub fn rocksdb_write_buffer(region_flush_size: u64, memstore_bytes: u64, memtable_bytes: u64) -> u64 {
    if memtable_bytes <= memstore_bytes || memstore_bytes == 0 {
        return region_flush_size;
    }
    (region_flush_size as f64 * memtable_bytes as f64 / memstore_bytes as f64) as u64
}

/// Runs `exp` on RocksDB with the same memtable budget, a memtable of the
/// region flush size, the same block cache, WAL mode and threads, loading
/// first and measuring as on our engine (cargo feature `rocksdb`).
#[cfg(feature = "rocksdb")]
pub fn run_rocksdb(exp: &Experiment, base: &Path) -> Result<RunReport, BenchError> {
    let preset = &exp.preset;
    let memtable_bytes = preset.rocksdb_memtable_bytes.unwrap_or(preset.memstore_bytes);
    let engine = crate::rocksdb_engine::RocksDbEngine::open(&crate::rocksdb_engine::RocksDbSetup {
        dir: base.join(format!("rocksdb-{}-{}", preset.name, std::process::id())),
        memtable_bytes,
        write_buffer_bytes: rocksdb_write_buffer(preset.region_flush_size, preset.memstore_bytes, memtable_bytes),
        block_cache_bytes: preset.block_cache_bytes,
        block_size: preset.block_size.unwrap_or(ROCKSDB_BLOCK_SIZE),
        durability: preset.durability,
        fields: preset.workload.fields,
    })?;
    let mut report = run_mode(exp, &engine, "-")?;
    if let (Some(s), Some(bytes)) = (&mut report.settings, preset.rocksdb_memtable_bytes) {
        s.memstore_bytes = bytes;
    }
    Ok(report)
}

/// Runs `exp` against a running server over Thrift (`addr`; its HTTP port
/// `http` for counters). Presets that load do so first, as on the embedded
/// engine.
pub fn run_thrift(
    exp: &Experiment,
    addr: &str,
    http: Option<&str>,
    tls_ca: Option<&std::path::Path>,
) -> Result<RunReport, BenchError> {
    let engine = crate::thrift_engine::ThriftEngine::open(addr, http, exp.preset.workload.fields, tls_ca)?;
    run_mode(exp, &engine, "server")
}

/// Drives `engine` with the preset's workload on an empty table and
/// reports; always finishes the engine (removing its data).
pub fn measure(preset: &Preset, engine: &dyn Engine, policy: &str) -> Result<RunReport, BenchError> {
    measure_mode(preset, engine, policy, &Mode::Workload, None)
}

/// The measured phase: the workload (with `reads`, one reader under its
/// writes). Every counter is of this phase alone: what a load before it
/// counted is taken off (the engine's counters before and after), so that
/// every engine's figures cover the same operations. The WAL's sync
/// latency percentiles are lifetime figures that cannot be split, so a run
/// that loaded reports none.
fn measure_mode(
    preset: &Preset,
    engine: &dyn Engine,
    policy: &str,
    mode: &Mode,
    reads: Option<&Workload>,
) -> Result<RunReport, BenchError> {
    // The peak of this run, not of every run before it in this process.
    if !reset_peak_rss() {
        eprintln!("warning: cannot reset the peak RSS; peak_rss_bytes is the process's high-water mark");
    }
    let before = mode.loads().then(|| engine.counters());
    let cpu_before = cpu_seconds();
    let (threads, batch, rate) = (preset.threads, preset.batch_bytes, preset.write_rate);
    let (result, memory) = crate::memory::sampled(engine, || match reads {
        None => driver::run(engine, &preset.workload, threads, batch, rate),
        Some(r) => driver::run_reader_under_writes(engine, &preset.workload, threads, batch, rate, r),
    });
    let cpu = cpu_seconds() - cpu_before;
    let counters = match &before {
        Some(b) => engine.counters().since(b),
        None => engine.counters(),
    };
    engine.finish()?;
    let result = result?;
    let mut latency = std::collections::BTreeMap::new();
    let write_op = if preset.workload.inserts { "insert" } else { "put" };
    for (op, h) in
        [(write_op, &result.put_latency_us), ("get", &result.get_latency_us), ("scan", &result.scan_latency_us)]
    {
        if let Some(p) = Percentiles::of(h) {
            latency.insert(op.to_string(), p);
        }
    }
    let wa = if counters.user_bytes == 0 {
        0.0
    } else {
        (counters.bytes_flushed + counters.bytes_compacted) as f64 / counters.user_bytes as f64
    };
    let load_ops = if mode.loads() { load_workload(preset).ops } else { 0 };
    let reader_gets = reads.map_or(0, |r| r.ops);
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
        gets_from_memstore: counters.gets_from_memstore,
        latency_us: latency,
        peak_rss_bytes: peak_rss_bytes(),
        peak_held_bytes: memory.map(|m| m.at_peak_held.held()),
        held_at_peak: memory.map(|m| m.at_peak_held),
        peak_pool_bytes: memory.map(|m| m.peak_pool),
        at_peak_rss: memory.map(|m| m.at_peak_rss),
        cpu_seconds: cpu,
        allocs_per_op: None,
        wal_syncs: counters.wal_sync_p50_us.map(|_| counters.wal_syncs),
        wal_sync_p50_us: counters.wal_sync_p50_us,
        wal_sync_p99_us: counters.wal_sync_p99_us,
        datanode_bytes: None,
        process_id: None,
        rows_scanned: (result.rows_scanned > 0).then_some(result.rows_scanned),
        settings: Some(preset.run_settings(engine.name(), policy, load_ops, reader_gets)),
    })
}

impl Preset {
    /// The data block size `engine`'s files get in this preset.
    pub fn block_size_on(&self, engine: &str) -> usize {
        self.block_size.unwrap_or(if engine == "rocksdb" {
            ROCKSDB_BLOCK_SIZE
        } else {
            store::FamilyDescriptor::DEFAULT_BLOCK_SIZE
        })
    }

    /// The settings of this preset as run on `engine` with `policy`, after
    /// `load_ops` rows loaded first, with a reader doing `reader_gets` gets
    /// (the report's `settings` block).
    pub fn run_settings(&self, engine: &str, policy: &str, load_ops: u64, reader_gets: u64) -> RunSettings {
        let w = &self.workload;
        RunSettings {
            memstore_policy: policy.to_string(),
            threads: self.threads,
            regions: if engine == "thrift" { 1 } else { self.regions },
            memstore_bytes: self.memstore_bytes,
            block_cache_bytes: self.block_cache_bytes,
            region_flush_size: self.region_flush_size,
            wal_roll_size: self.wal_roll_size,
            inmemory_flush_share: self.inmemory_flush_share,
            pipeline_segments_limit: self.pipeline_segments_limit,
            block_size: self.block_size_on(engine),
            scale: self.scale,
            batch_bytes: self.batch_bytes,
            key_space: w.key_space,
            dist: format!("{:?}", w.dist).to_lowercase(),
            fields: w.fields,
            value_size: w.value_size,
            ops: w.ops,
            read_ratio: w.read_ratio,
            scan_ratio: w.scan_ratio,
            inserts: w.inserts,
            load_ops,
            reader_gets,
            durability: durability_name(self.durability).to_string(),
            write_rate: self.write_rate,
            named_gets: self.named_gets || engine == "rocksdb",
            git_commit: GIT_COMMIT.to_string(),
            note: engine_note(engine).map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_rocksdb_budget_raises_its_memtables_in_proportion() {
        let mib = 1u64 << 20;
        assert_eq!(rocksdb_write_buffer(32 * mib, 150 * mib, 150 * mib), 32 * mib, "the preset's own budget");
        assert_eq!(rocksdb_write_buffer(32 * mib, 150 * mib, 100 * mib), 32 * mib, "never below the flush size");
        assert_eq!(rocksdb_write_buffer(32 * mib, 150 * mib, 300 * mib), 64 * mib);
    }
    use crate::report::to_json;

    #[test]
    fn every_preset_runs_at_a_tiny_scale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policies = vec!["basic".to_string()];
        for name in PRESETS {
            assert!(describe(name).is_some(), "{name} has no description");
            let exps = experiments(name, 0.002, &policies).expect("preset");
            assert!(!exps.is_empty(), "{name}");
            for mut exp in exps {
                exp.preset.regions = exp.preset.regions.min(4);
                exp.preset.threads = 3;
                let report = run_experiment(&exp, dir.path()).expect("runs");
                assert_eq!(report.preset, *name);
                assert!(report.ops_per_sec > 0.0);
                let w = &exp.preset.workload;
                let s = report.settings.as_ref().expect("every run records its settings");
                assert_eq!((s.regions, s.memstore_bytes), (exp.preset.regions, exp.preset.memstore_bytes), "{name}");
                assert_eq!((s.memstore_policy.as_str(), s.scale, s.ops), (exp.policy.as_str(), 0.002, w.ops));
                assert_eq!(s.block_cache_bytes, exp.preset.block_cache_bytes);
                if matches!(exp.mode, Mode::ReaderUnderWrites { .. }) {
                    assert!(report.latency_us.contains_key("get"), "the reader was measured: {report:?}");
                }
                match exp.mode {
                    // The writers stop with the reader: its gets are all done.
                    Mode::ReaderUnderWrites { reads } => {
                        assert_eq!(report.latency_us.get("get").map(|_| reads), Some(reads), "{report:?}")
                    }
                    _ => assert_eq!(report.ops, w.ops),
                }
                if let Mode::ReaderUnderWrites { .. } = exp.mode {
                    // The writers' operations are no bound there.
                    assert_eq!(w.ops, MIXED_WRITER_CEILING);
                    continue;
                }
                let writes = (0..w.ops).filter(|&i| w.op_kind(i) == crate::workload::OpKind::Write).count() as u64;
                if exp.mode == Mode::LoadThenRun {
                    // The load is not counted: its rows alone would pass this.
                    let bound = (writes + w.key_space) * w.row_value_bytes() as u64;
                    assert!(report.user_bytes < bound, "{name}: {} of {bound}", report.user_bytes);
                }
                if matches!(exp.mode, Mode::Workload | Mode::LoadThenRun) {
                    assert!(report.user_bytes >= writes * w.row_value_bytes() as u64, "{report:?}");
                    let write_op = if w.inserts { "insert" } else { "put" };
                    assert_eq!(report.latency_us.contains_key(write_op), writes > 0, "{report:?}");
                    assert_eq!(report.latency_us.contains_key("scan"), w.scan_ratio > 0.0, "{report:?}");
                }
            }
        }
        assert!(experiments("nope", 1.0, &policies).is_err());
        assert!(experiments("paper-write-zipf", 0.0, &policies).is_err());
    }

    #[test]
    fn the_zipf_presets_writes_touch_keys_over_the_regimes_share_of_the_budget() {
        for scale in [0.25, 1.0] {
            let p = Preset::paper_write(KeyDist::Zipfian, scale).expect("valid");
            let row = lean_row_heap_bytes(p.workload.fields, p.workload.value_size);
            let touched = p.workload.distinct_keys_written() * row;
            let share = touched as f64 / p.memstore_bytes as f64;
            assert!(share >= MIN_LIVE_OVER_BUDGET, "scale {scale}: {share:.2} x the budget");
            // Not grown past need: the try before the last was short.
            assert!(share < 2.0 * MIN_LIVE_OVER_BUDGET, "scale {scale}: {share:.2} x the budget");
        }
    }

    #[test]
    fn write_presets_take_the_regime_and_regions_per_gb_keeps_its_shape() {
        // 4.4: beyond scale 4, where regions are added instead of flush size
        // (the Zipf preset's sizing counts tens of millions of draws there).
        for scale in [0.01, 1.0, 4.4] {
            let r = Regime::paper_write(scale).expect("valid");
            for dist in [KeyDist::Zipfian, KeyDist::Uniform] {
                let p = Preset::paper_write(dist, scale).expect("valid");
                assert_eq!(
                    (p.regions, p.memstore_bytes, p.region_flush_size),
                    (r.regions, r.memstore_bytes, r.region_flush_size)
                );
                assert_eq!(p.wal_roll_size, r.wal_roll_size);
                match dist {
                    KeyDist::Uniform => assert_eq!((p.workload.key_space, p.workload.ops), (r.key_space, r.ops)),
                    // Grown until its writes touch the regime's share of keys.
                    _ => assert!(
                        p.workload.key_space >= r.key_space && p.workload.ops == WRITES_PER_KEY * p.workload.key_space
                    ),
                }
                assert_eq!((p.threads, p.batch_bytes, p.durability), (12, 10 * 1024, Durability::AsyncWal));
                assert_eq!((p.inmemory_flush_share, p.pipeline_segments_limit), (0.02, 5));
                assert_eq!((p.workload.fields, p.workload.value_size, p.workload.dist), (4, 25, dist));
                // No block size of their own: each engine's default.
                assert_eq!((p.block_size_on("accordion"), p.block_size_on("hbase")), (64 << 10, 64 << 10));
                assert_eq!(p.block_size_on("rocksdb"), ROCKSDB_BLOCK_SIZE);
            }
            // The presets built on the write-only shape keep its store shape.
            for name in ["tune-a", "tune-s", "value-size", "paper-mixed"] {
                for e in experiments(name, scale, &["basic".to_string()]).expect("preset") {
                    assert_eq!((e.preset.regions, e.preset.memstore_bytes), (r.regions, r.memstore_bytes), "{name}");
                    assert_eq!(e.preset.region_flush_size, r.region_flush_size, "{name}");
                }
            }
        }
        let exps = experiments("regions-per-gb", 1.0, &[]).expect("preset");
        let regions: Vec<usize> = exps.iter().map(|e| e.preset.regions).collect();
        assert_eq!(regions, [2, 2, 8, 8, 32, 32, 128, 128]);
        for e in &exps {
            assert_eq!((e.preset.memstore_bytes, e.preset.region_flush_size), (256 << 20, 128 << 20), "{}", e.label);
            assert_eq!((e.preset.workload.ops, e.preset.workload.key_space), (2_000_000, 1_000_000), "{}", e.label);
        }
        assert_eq!(exps[0].label, "none 8/GB");
        assert_eq!(exps[7].label, "basic 512/GB");
    }

    #[test]
    fn the_thrift_engine_drives_a_running_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sets = [
            format!("data_dir={}", dir.path().display()),
            "thrift_addr=127.0.0.1:0".into(),
            "http_addr=127.0.0.1:0".into(),
            "rpc_addr=127.0.0.1:0".into(),
        ];
        let server = server::Server::start(server::ServerConfig::load(None, &sets).expect("config")).expect("start");
        let (addr, http) = (server.thrift_addr().to_string(), server.http_addr().to_string());
        for name in ["paper-write-zipf", "paper-mixed"] {
            let mut exp = experiments(name, 0.002, &["basic".to_string()]).expect("preset").remove(0);
            exp.preset.threads = 3;
            let report = run_thrift(&exp, &addr, Some(&http), None).expect("runs over thrift");
            assert_eq!(report.engine, "thrift");
            if let Mode::ReaderUnderWrites { reads } = exp.mode {
                let s = report.settings.as_ref().expect("settings");
                assert_eq!((s.load_ops, s.reader_gets), (exp.preset.workload.key_space, reads));
                assert!(report.latency_us.contains_key("get"), "{report:?}");
            } else {
                assert_eq!(report.ops, exp.preset.workload.ops);
                assert!(report.user_bytes >= report.ops * 100, "server counters reached: {report:?}");
                assert!(report.bytes_wal > 0, "{report:?}");
            }
        }
        let rows = server.store().scan("usertable", store::Scan::default()).expect("scan").count();
        assert!(rows > 0, "the rows are in the server's store");
    }

    #[test]
    fn the_json_settings_block_names_the_runs_shape_and_commit() {
        let mut exp = experiments("paper-write-zipf", 0.5, &["adaptive:0.2".to_string()]).expect("preset").remove(0);
        exp.preset.write_rate = Some(1234.0);
        let p = &exp.preset;
        let report =
            RunReport { settings: Some(p.run_settings("accordion", "adaptive:0.2", 0, 0)), ..Default::default() };
        let json: serde_json::Value = serde_json::from_str(&to_json(&[report])).expect("valid json");
        let s = &json["runs"][0]["settings"];
        assert_eq!(s["memstore_policy"], "adaptive:0.2");
        assert_eq!(s["threads"], 12);
        assert_eq!(s["regions"], p.regions as u64);
        assert_eq!(s["memstore_bytes"], p.memstore_bytes);
        assert_eq!(s["region_flush_size"], p.region_flush_size);
        assert_eq!(s["wal_roll_size"], p.wal_roll_size);
        assert_eq!(s["inmemory_flush_share"], 0.02);
        assert_eq!(s["pipeline_segments_limit"], 5);
        assert_eq!(s["scale"], 0.5);
        assert_eq!(s["batch_bytes"], 10 * 1024);
        assert_eq!(s["key_space"], p.workload.key_space);
        assert_eq!(s["ops"], p.workload.ops);
        assert_eq!(s["dist"], "zipfian");
        assert_eq!((s["fields"].as_u64(), s["value_size"].as_u64()), (Some(4), Some(25)));
        assert_eq!(s["durability"], "ASYNC_WAL");
        assert_eq!(s["write_rate"], 1234.0);
        assert_eq!(s["git_commit"], GIT_COMMIT);
        assert!(s.get("note").is_none(), "the embedded engine uses every setting");
        // Other engines say what they do not use; a report read back keeps it.
        let rocks = p.run_settings("rocksdb", "-", 0, 0);
        assert!(rocks.note.as_deref().is_some_and(|n| n.contains("write_buffer_size")));
        let thrift = p.run_settings("thrift", "server", 7, 3);
        assert_eq!((thrift.regions, thrift.load_ops, thrift.reader_gets), (1, 7, 3));
        let back: RunReport = serde_json::from_str(
            &serde_json::to_string(&RunReport { settings: Some(thrift.clone()), ..Default::default() })
                .expect("serialises"),
        )
        .expect("reads back");
        assert_eq!(back.settings, Some(thrift));
    }
}
