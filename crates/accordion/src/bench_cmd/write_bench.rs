//! `accordion bench write`: the paper's write-only shape through the
//! embedded store — a table pre-split into regions, rows of F fields of V
//! bytes, T writer threads, YCSB keys (scrambled zipfian or uniform), WAL
//! durability as chosen — once per memstore policy, reporting throughput and
//! what reached the disk (flushes, compactions, WAL files, bytes).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;
use store::region::{MutationRef, RowMutations};
use store::wal::Durability;
use store::{FamilyDescriptor, Store, StoreOptions, TableDescriptor};

use ::bench::keys::{KeyChooser, write_key};

#[derive(clap::Args, Debug, Clone)]
pub struct WriteBenchArgs {
    /// Rows to write per policy.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Key space (distinct rows).
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Pre-split regions.
    #[arg(long, default_value_t = 50)]
    pub regions: usize,
    #[arg(long, default_value_t = 12)]
    pub threads: usize,
    /// zipf or uniform.
    #[arg(long, default_value = "zipf")]
    pub dist: String,
    #[arg(long, value_delimiter = ',', default_value = "none,basic,eager,adaptive")]
    pub policies: Vec<String>,
    #[arg(long, default_value_t = 4)]
    pub fields: usize,
    #[arg(long, default_value_t = 25)]
    pub value_size: usize,
    /// sync, async or skip.
    #[arg(long, default_value = "async")]
    pub wal: String,
    /// Global memstore limit in MiB (the write-buffer budget).
    #[arg(long, default_value_t = 256)]
    pub memstore_mb: u64,
    /// Region flush size in MiB.
    #[arg(long, default_value_t = 128)]
    pub region_flush_mb: u64,
    /// A: the active segment's share of the flush size.
    #[arg(long, default_value_t = 0.02)]
    pub active_share: f64,
    /// S: pipeline segments before a merge.
    #[arg(long, default_value_t = 5)]
    pub pipeline_limit: usize,
    /// Where the stores are created (a fresh subdirectory per run, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WriteRun {
    pub policy: String,
    pub dist: String,
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_sec: f64,
    pub flushes: u64,
    pub compactions: u64,
    pub inmemory_flushes: u64,
    pub merges: u64,
    pub inmemory_compactions: u64,
    pub wal_files: u64,
    pub bytes_wal: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    pub user_bytes: u64,
    pub write_amplification: f64,
    /// Heap allocations the writer threads made per row (the put path
    /// alone; flush and compaction threads are not counted).
    pub put_path_allocs_per_row: f64,
    /// Process CPU seconds per row (writers, flushes, compactions, WAL).
    pub cpu_us_per_row: f64,
    /// Seconds writers spent blocked on memory limits, summed over writers.
    pub blocked_write_seconds: f64,
}

/// Region boundaries that split YCSB's key space evenly.
fn split_keys(keys: u64, regions: usize) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = (0..keys)
        .map(|i| {
            let mut buf = [0u8; 32];
            let n = write_key(i, &mut buf);
            buf[..n].to_vec()
        })
        .collect();
    all.sort_unstable();
    (1..regions).map(|i| all[i * all.len() / regions].clone()).collect()
}

fn run_one(
    args: &WriteBenchArgs,
    policy: &str,
    splits: &[Vec<u8>],
    base: &std::path::Path,
) -> anyhow::Result<WriteRun> {
    let dir = base.join(format!("write-bench-{}-{}", policy.replace(':', "_"), std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let durability = match args.wal.as_str() {
        "sync" => Durability::SyncWal,
        "async" => Durability::AsyncWal,
        "skip" => Durability::SkipWal,
        other => bail!("unknown --wal {other:?} (sync, async, skip)"),
    };
    let options = StoreOptions {
        region_flush_size: args.region_flush_mb << 20,
        memory_budget: ((args.memstore_mb << 20) as f64 / 0.4) as u64,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir, options).with_context(|| format!("open {}", dir.display()))?;
    let mut family = FamilyDescriptor::new("f");
    family.memstore_policy = policy.to_string();
    family.inmemory_flush_share = Some(args.active_share);
    family.pipeline_segments_limit = args.pipeline_limit;
    let mut desc = TableDescriptor::new("usertable", vec![family]);
    desc.durability = durability;
    store.create_table(desc, splits)?;
    let chooser = match args.dist.as_str() {
        "zipf" | "zipfian" => KeyChooser::zipfian(args.keys),
        "uniform" => KeyChooser::uniform(args.keys),
        other => bail!("unknown --dist {other:?}"),
    };
    let qualifiers: Vec<Vec<u8>> = (0..args.fields).map(|i| format!("field{i}").into_bytes()).collect();
    let next = AtomicU64::new(0);
    let failures = AtomicU64::new(0);
    let writer_allocs = AtomicU64::new(0);
    let cpu_before = bench::sysinfo::cpu_seconds();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..args.threads {
            let (store, chooser, qualifiers, next, failures, writer_allocs) =
                (&store, &chooser, &qualifiers, &next, &failures, &writer_allocs);
            let seed = args.seed.wrapping_add(t as u64 * 7919);
            let value_size = args.value_size;
            let rows = args.rows;
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                let mut key = [0u8; 32];
                let value = vec![b'v'; value_size];
                // Borrowed once per thread: the put path itself allocates nothing.
                let mutations: Vec<MutationRef<'_>> = qualifiers
                    .iter()
                    .map(|q| MutationRef::Put { family: b"f", qualifier: q, timestamp: None, value: &value })
                    .collect();
                let allocs_before = crate::counting_alloc::thread_allocations();
                while next.fetch_add(1, Ordering::Relaxed) < rows {
                    let n = write_key(chooser.next_item(&mut rng), &mut key);
                    let row = [RowMutations { row: &key[..n], mutations: &mutations }];
                    if store.mutate_rows("usertable", &row, None).is_err() {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let allocs = crate::counting_alloc::thread_allocations() - allocs_before;
                writer_allocs.fetch_add(allocs, Ordering::Relaxed);
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let cpu = bench::sysinfo::cpu_seconds() - cpu_before;
    if failures.load(Ordering::Relaxed) > 0 {
        bail!("{} writes failed", failures.load(Ordering::Relaxed));
    }
    let m = store.metrics().totals;
    store.close()?;
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(WriteRun {
        policy: policy.to_string(),
        dist: args.dist.clone(),
        rows: args.rows,
        seconds,
        rows_per_sec: args.rows as f64 / seconds,
        flushes: m.disk_flushes,
        compactions: m.disk_compactions,
        inmemory_flushes: m.inmemory_flushes,
        merges: m.merges,
        inmemory_compactions: m.inmemory_compactions,
        wal_files: m.wal_files_created,
        bytes_wal: m.wal_bytes,
        bytes_flushed: m.bytes_flushed,
        bytes_compacted: m.bytes_compacted,
        user_bytes: m.user_bytes,
        write_amplification: m.write_amplification,
        put_path_allocs_per_row: writer_allocs.load(Ordering::Relaxed) as f64 / args.rows.max(1) as f64,
        cpu_us_per_row: cpu * 1e6 / args.rows.max(1) as f64,
        blocked_write_seconds: m.blocked_write_seconds,
    })
}

pub fn run(args: &WriteBenchArgs) -> anyhow::Result<Vec<WriteRun>> {
    if args.threads == 0 || args.regions == 0 || args.fields == 0 || args.keys < 2 {
        bail!("--threads, --regions and --fields must be positive and --keys at least 2");
    }
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let splits = split_keys(args.keys, args.regions);
    println!(
        "{:<14} {:>9} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>5} {:>11} {:>7} {:>9}",
        "policy",
        "rows",
        "rows/s",
        "flush",
        "compct",
        "inmem",
        "merge",
        "wal",
        "wal MB",
        "flush MB",
        "compct MB",
        "WA",
        "put allocs",
        "cpu us",
        "blocked s"
    );
    let mut runs = Vec::new();
    for policy in &args.policies {
        memstore::CompactionPolicy::parse(policy).with_context(|| format!("policy {policy:?}"))?;
        let r = run_one(args, policy, &splits, &base)?;
        println!(
            "{:<14} {:>9} {:>10.0} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>5.2} {:>11.3} {:>7.2} {:>9.1}",
            r.policy,
            r.rows,
            r.rows_per_sec,
            r.flushes,
            r.compactions,
            r.inmemory_flushes,
            r.merges,
            r.wal_files,
            r.bytes_wal as f64 / 1048576.0,
            r.bytes_flushed as f64 / 1048576.0,
            r.bytes_compacted as f64 / 1048576.0,
            r.write_amplification,
            r.put_path_allocs_per_row,
            r.cpu_us_per_row,
            r.blocked_write_seconds
        );
        runs.push(r);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&serde_json::json!({ "runs": runs }))?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keys_are_sorted_and_balanced() {
        let splits = split_keys(10_000, 10);
        assert_eq!(splits.len(), 9);
        assert!(splits.windows(2).all(|w| w[0] < w[1]));
        assert!(splits.iter().all(|k| k.starts_with(b"user")));
    }

    #[test]
    fn tiny_run_writes_and_reports() {
        let dir = tempfile_dir();
        let args = WriteBenchArgs {
            rows: 2_000,
            keys: 500,
            regions: 3,
            threads: 2,
            dist: "zipf".into(),
            policies: vec!["basic".into()],
            fields: 4,
            value_size: 25,
            wal: "async".into(),
            memstore_mb: 1,
            region_flush_mb: 1,
            active_share: 0.02,
            pipeline_limit: 5,
            dir: Some(dir.clone()),
            seed: 1,
            json: None,
        };
        let runs = run(&args).expect("bench runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].rows, 2_000);
        assert!(runs[0].user_bytes > 2_000 * 4 * 25);
        assert!(runs[0].bytes_wal > 0);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("accordion-write-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }
}
