//! `accordion bench split`: how long writers stall while a big region
//! splits. One region is loaded with `--mb` MiB of rows and flushed; writer
//! threads then put rows (one row per put, both sides of the split row)
//! without pause; after a baseline of `--baseline-secs` the region is split
//! at its midpoint, and writing goes on for `--after-secs`. Reported: the
//! split call's duration, the longest put while the split ran (the write
//! stall a client sees), the longest put of the baseline beside it, and
//! failed puts (there must be none).
//!
//! With `--merge` the table is created as two regions (split at the middle
//! of the key range), both loaded the same way, and the two are merged
//! instead: the same figures for a merge.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use store::wal::Durability;
use store::{FamilyDescriptor, Store, StoreOptions, TableDescriptor};

#[derive(clap::Args, Debug, Clone)]
pub struct SplitBenchArgs {
    /// MiB of rows in the region before it splits.
    #[arg(long, default_value_t = 256)]
    pub mb: u64,
    /// Bytes per value (one cell per row).
    #[arg(long, default_value_t = 1000)]
    pub value_size: usize,
    /// Writer threads during the split.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Seconds of writing before the split.
    #[arg(long, default_value_t = 2.0)]
    pub baseline_secs: f64,
    /// Seconds of writing after the split.
    #[arg(long, default_value_t = 1.0)]
    pub after_secs: f64,
    /// Where the store is created (a fresh subdirectory, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the result as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Merge two loaded regions instead of splitting one.
    #[arg(long)]
    pub merge: bool,
}

#[derive(Debug, Serialize)]
pub struct SplitRun {
    /// "split" or "merge".
    pub operation: &'static str,
    pub region_mb: u64,
    pub rows_loaded: u64,
    pub split_ms: f64,
    pub longest_put_during_split_ms: f64,
    pub longest_put_baseline_ms: f64,
    pub puts_during_split: u64,
    pub puts_total: u64,
    pub failed_puts: u64,
    pub regions_after: usize,
}

/// Nanoseconds since `origin`.
fn since(origin: Instant) -> u64 {
    origin.elapsed().as_nanos() as u64
}

pub fn run(args: &SplitBenchArgs) -> anyhow::Result<SplitRun> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("accordion-split-bench-{}", std::process::id()));
    let result = run_in(args, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let run = result?;
    println!(
        "{op}: {} MiB ({} rows): {op} took {:.1} ms; longest put during the {op} {:.1} ms \
         (baseline {:.1} ms); {} puts during the {op}, {} in all, {} failed; {} regions after",
        run.region_mb,
        run.rows_loaded,
        run.split_ms,
        run.longest_put_during_split_ms,
        run.longest_put_baseline_ms,
        run.puts_during_split,
        run.puts_total,
        run.failed_puts,
        run.regions_after,
        op = run.operation
    );
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&run)?).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(run)
}

fn run_in(args: &SplitBenchArgs, dir: &std::path::Path) -> anyhow::Result<SplitRun> {
    let store = Store::open(dir, StoreOptions::default()).context("open the store")?;
    let mut desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]);
    desc.durability = Durability::AsyncWal;
    let value = vec![b'v'; args.value_size];
    let rows = (args.mb << 20) / (args.value_size as u64 + 16).max(1);
    let middle = format!("row{:016}", rows * 2).into_bytes();
    let split_keys = if args.merge { vec![middle] } else { Vec::new() };
    store.create_table(desc, &split_keys).context("create the table")?;
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..rows {
        let key = format!("row{:016}", rng.random_range(0..rows * 4));
        store.put("t", key.as_bytes(), &[(b"f", b"q", &value)], None)?;
    }
    store.flush_table("t")?;
    // Let the load's compactions settle, as a region would have before it
    // reached the split size.
    store.compact_table("t", true)?;

    let origin = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // Split window in nanoseconds since `origin` (start, end); 0 = not yet.
    let window = Arc::new((AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)));
    let (during_max, baseline_max) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (during_puts, total_puts, failed) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let writers: Vec<_> = (0..args.threads)
        .map(|w| {
            let store = store.clone();
            let (stop, window) = (stop.clone(), window.clone());
            let (during_max, baseline_max) = (during_max.clone(), baseline_max.clone());
            let (during_puts, total_puts, failed) = (during_puts.clone(), total_puts.clone(), failed.clone());
            let value = value.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + w as u64);
                while !stop.load(Ordering::Acquire) {
                    let key = format!("row{:016}", rng.random_range(0..rows * 4));
                    let started = since(origin);
                    let ok = store.put("t", key.as_bytes(), &[(b"f", b"q", &value)], None).is_ok();
                    let ended = since(origin);
                    total_puts.fetch_add(1, Ordering::Relaxed);
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    let (split_start, split_end) = (window.0.load(Ordering::Acquire), window.1.load(Ordering::Acquire));
                    let latency = ended - started;
                    if ended >= split_start && started <= split_end {
                        during_max.fetch_max(latency, Ordering::Relaxed);
                        during_puts.fetch_add(1, Ordering::Relaxed);
                    } else if ended < split_start {
                        baseline_max.fetch_max(latency, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(args.baseline_secs));
    window.0.store(since(origin), Ordering::Release);
    let split_started = Instant::now();
    let split = if args.merge {
        let names: Vec<String> = store.table_regions("t")?.iter().map(|r| r.dir_name()).collect();
        store.merge_regions(&names[0], &names[1]).map(|_| true)
    } else {
        store.split_region("t", b"row", None)
    };
    let split_ms = split_started.elapsed().as_secs_f64() * 1e3;
    window.1.store(since(origin), Ordering::Release);
    std::thread::sleep(Duration::from_secs_f64(args.after_secs));
    stop.store(true, Ordering::Release);
    for w in writers {
        w.join().map_err(|_| anyhow::anyhow!("a writer panicked"))?;
    }
    anyhow::ensure!(split.context("split or merge")?, "the region did not split");
    let regions_after = store.table_regions("t")?.len();
    store.close()?;
    let ms = |ns: u64| ns as f64 / 1e6;
    Ok(SplitRun {
        operation: if args.merge { "merge" } else { "split" },
        region_mb: args.mb,
        rows_loaded: rows,
        split_ms,
        longest_put_during_split_ms: ms(during_max.load(Ordering::Relaxed)),
        longest_put_baseline_ms: ms(baseline_max.load(Ordering::Relaxed)),
        puts_during_split: during_puts.load(Ordering::Relaxed),
        puts_total: total_puts.load(Ordering::Relaxed),
        failed_puts: failed.load(Ordering::Relaxed),
        regions_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_split_bench_splits_the_region_and_no_put_fails() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let args = SplitBenchArgs {
            mb: 2,
            value_size: 200,
            threads: 2,
            baseline_secs: 0.2,
            after_secs: 0.1,
            dir: Some(tmp.path().to_path_buf()),
            json: None,
            merge: false,
        };
        let run = run(&args).expect("bench");
        assert_eq!(run.regions_after, 2);
        assert_eq!(run.failed_puts, 0);
        assert!(run.puts_total > 0 && run.rows_loaded > 0);
        let merged = super::run(&SplitBenchArgs { merge: true, ..args }).expect("merge bench");
        assert_eq!((merged.operation, merged.regions_after, merged.failed_puts), ("merge", 1, 0));
    }
}
