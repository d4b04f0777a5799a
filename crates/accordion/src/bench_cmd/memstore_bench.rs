//! `accordion bench memstore`: inserts rows into a memstore under every
//! policy and index layout, with 1 and 2 writer threads, keys from YCSB's
//! scrambled zipfian and uniform; reports insert rate, index and heap bytes
//! per cell, heap allocations per insert, cells retained, and the pipeline
//! counters. Disk flushes are simulated (snapshot, walk, release) when the
//! memstore's heap size passes the flush size, so the pipeline behaves as in
//! a region; nothing is written to disk.
//!
//! Index bytes per cell are measured on the segments each flush takes, per
//! layout: the memory each index holds (`Segment::index_held_bytes`: whole
//! chunks for a cell-chunk index and a skiplist's arena, the array for a
//! cell array), beside the entry bytes heap accounting charges, the data
//! bytes and the accounted heap bytes per cell.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, bail};
use memstore::{
    CellInput, ChunkPool, CompactionExecutor, CompactionMode, CompactionPolicy, InMemoryFlushThreshold, IndexLayout,
    MemStore, MemStoreConfig, MemStoreSnapshot, Mvcc,
};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;

use crate::counting_alloc::allocations;
use bench::keys::{KeyChooser, write_key};

const MAX_CELLS_PER_ROW: usize = 16;

#[derive(clap::Args, Debug, Clone)]
pub struct MemstoreBenchArgs {
    /// Cells to insert per run (rows × cells per row).
    #[arg(long, default_value_t = 4_000_000)]
    pub cells: u64,
    /// Size of the key space (distinct rows).
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Writer thread counts to run.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Key distributions: zipf (YCSB scrambled zipfian, θ = 0.99), uniform.
    #[arg(long, value_delimiter = ',', default_value = "zipf,uniform")]
    pub dists: Vec<String>,
    /// Policies: none, basic, eager, adaptive[:R].
    #[arg(long, value_delimiter = ',', default_value = "none,basic,eager,adaptive")]
    pub policies: Vec<String>,
    /// Flat layouts for the pipeline policies: cell-array, cell-chunk.
    #[arg(long, value_delimiter = ',', default_value = "cell-array,cell-chunk")]
    pub layouts: Vec<String>,
    /// Simulated disk flush size in MiB of memstore heap (0: never flush).
    #[arg(long, default_value_t = 128)]
    pub flush_size_mb: u64,
    /// A: the active segment's share of the flush size.
    #[arg(long, default_value_t = 0.02)]
    pub active_share: f64,
    /// S: pipeline segments before a merge.
    #[arg(long, default_value_t = 5)]
    pub pipeline_limit: usize,
    /// Cells per row.
    #[arg(long, default_value_t = 4)]
    pub cells_per_row: usize,
    /// Bytes per value.
    #[arg(long, default_value_t = 25)]
    pub value_size: usize,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Also write the runs as JSON `{"runs":[...]}` to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One run's results.
#[derive(Debug, Clone, Serialize)]
pub struct MemstoreRun {
    pub policy: String,
    pub layout: String,
    pub threads: usize,
    pub dist: String,
    pub cells: u64,
    pub seconds: f64,
    pub inserts_per_sec: f64,
    /// Index bytes per cell the run's layout holds (skiplist for `none`):
    /// whole chunks or arrays, measured.
    pub index_bytes_per_cell: f64,
    /// Index bytes per cell the skiplist segments of the run hold.
    pub skiplist_index_bytes_per_cell: f64,
    /// Per layout seen in the flushed segments: held and accounted index
    /// bytes, data bytes, cells.
    pub by_layout: BTreeMap<String, LayoutBytes>,
    /// Accounted heap (data + index entries + segment overhead) per cell.
    pub heap_bytes_per_cell: f64,
    pub data_bytes_per_cell: f64,
    pub allocs_per_insert: f64,
    /// Cells that survived in-memory compaction: handed to disk flushes or
    /// still in memory at the end.
    pub cells_retained: u64,
    pub inmemory_flushes: u64,
    pub flattens: u64,
    pub merges: u64,
    pub compactions: u64,
    pub cells_dropped: u64,
    pub disk_flushes: u64,
}

/// One index layout's bytes over the segments a run's flushes took.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct LayoutBytes {
    pub cells: u64,
    /// Index bytes held per cell (whole chunks or arrays).
    pub index_held_per_cell: f64,
    /// Index entry or node bytes per cell (what heap accounting charges).
    pub index_accounted_per_cell: f64,
    pub data_per_cell: f64,
}

/// Sums of one layout's segments: cells, held index, accounted index, data.
#[derive(Debug, Clone, Copy, Default)]
struct LayoutSums {
    cells: u64,
    held: u64,
    accounted: u64,
    data: u64,
}

impl LayoutSums {
    fn per_cell(&self) -> LayoutBytes {
        let c = self.cells.max(1) as f64;
        LayoutBytes {
            cells: self.cells,
            index_held_per_cell: self.held as f64 / c,
            index_accounted_per_cell: self.accounted as f64 / c,
            data_per_cell: self.data as f64 / c,
        }
    }
}

/// Index bytes per layout, and heap/data/cells, of every flushed snapshot
/// of a run.
#[derive(Default)]
struct Totals {
    by_layout: Mutex<BTreeMap<&'static str, LayoutSums>>,
    heap: Mutex<(u64, u64, u64)>,
}

#[derive(Debug, Clone, Copy)]
enum Dist {
    Zipf,
    Uniform,
}

fn parse_dist(s: &str) -> anyhow::Result<Dist> {
    match s {
        "zipf" | "zipfian" => Ok(Dist::Zipf),
        "uniform" => Ok(Dist::Uniform),
        _ => bail!("unknown key distribution {s:?} (zipf, uniform)"),
    }
}

fn parse_layout(s: &str) -> anyhow::Result<IndexLayout> {
    match s {
        "cell-array" | "array" => Ok(IndexLayout::CellArray),
        "cell-chunk" | "chunk" => Ok(IndexLayout::CellChunk),
        _ => bail!("unknown flat layout {s:?} (cell-array, cell-chunk)"),
    }
}

/// Records index and heap statistics of the segments a flush takes.
fn account_snapshot(totals: &Totals, snapshot: &MemStoreSnapshot) {
    let mut by_layout = totals.by_layout.lock().expect("totals lock");
    for s in snapshot.segments() {
        let st = s.stats();
        let e = by_layout.entry(s.layout().name()).or_default();
        e.cells += st.cells;
        e.held += s.index_held_bytes();
        e.accounted += st.index_size;
        e.data += st.data_size;
    }
    let st = snapshot.stats();
    let mut heap = totals.heap.lock().expect("totals lock");
    heap.0 += st.heap_size();
    heap.1 += st.data_size;
    heap.2 += st.cells;
}

fn run_one(
    args: &MemstoreBenchArgs,
    policy: CompactionPolicy,
    layout: IndexLayout,
    threads: usize,
    dist: Dist,
) -> anyhow::Result<MemstoreRun> {
    let flush_size = args.flush_size_mb << 20;
    let mvcc = Arc::new(Mvcc::new(0));
    let config = MemStoreConfig {
        policy,
        flat_layout: layout,
        in_memory_flush_threshold: InMemoryFlushThreshold::FlushSizeShare(args.active_share),
        flush_size: flush_size.max(1 << 20),
        pipeline_segments_limit: args.pipeline_limit,
        chunk_pool: ChunkPool::global(),
        compaction_mode: CompactionMode::Background(CompactionExecutor::global()),
        mvcc: mvcc.clone(),
        adaptive_seed: args.seed,
        ..MemStoreConfig::new("f")
    };
    let memstore = Arc::new(MemStore::new(config).context("memstore configuration")?);
    let chooser = match dist {
        Dist::Zipf => KeyChooser::zipfian(args.keys),
        Dist::Uniform => KeyChooser::uniform(args.keys),
    };
    let rows_total = args.cells / args.cells_per_row as u64;
    let totals = Arc::new(Totals::default());
    let flushing = Arc::new(AtomicBool::new(false));
    let qualifiers: Vec<Vec<u8>> = (0..args.cells_per_row).map(|i| format!("field{i}").into_bytes()).collect();

    let allocs_before = allocations();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let rows = rows_total / threads as u64 + u64::from((t as u64) < rows_total % threads as u64);
            let (memstore, mvcc, totals, flushing, chooser, qualifiers) =
                (&memstore, &mvcc, &totals, &flushing, &chooser, &qualifiers);
            let seed = args.seed.wrapping_add(t as u64 * 0x9E37_79B9);
            let value_size = args.value_size;
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                let mut key = [0u8; 32];
                let mut value = vec![b'x'; value_size];
                for i in 0..rows {
                    let len = write_key(chooser.next_item(&mut rng), &mut key);
                    let stamp = i.to_le_bytes();
                    let n = stamp.len().min(value.len());
                    value[..n].copy_from_slice(&stamp[..n]);
                    let w = mvcc.begin();
                    // A row on the stack: the put path itself must not allocate.
                    let mut cells = [CellInput::put(b"", b"", b"", 0, b""); MAX_CELLS_PER_ROW];
                    for (cell, q) in cells.iter_mut().zip(qualifiers) {
                        *cell = CellInput::put(&key[..len], b"f", q, i + 1, &value);
                    }
                    memstore.add_row(&cells[..qualifiers.len()], w.seq()).expect("valid bench row");
                    mvcc.complete(w);
                    if flush_size > 0
                        && i.is_multiple_of(64)
                        && memstore.size().heap_size >= flush_size
                        && !flushing.swap(true, Ordering::AcqRel)
                    {
                        let snapshot = memstore.snapshot();
                        account_snapshot(totals, &snapshot);
                        memstore.release_snapshot(snapshot.id()).expect("the snapshot just taken");
                        flushing.store(false, Ordering::Release);
                    }
                }
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let allocs = allocations() - allocs_before;
    memstore.wait_for_compactions();

    // What is still in memory counts like a final flush.
    let final_snapshot = memstore.snapshot();
    account_snapshot(&totals, &final_snapshot);
    memstore.release_snapshot(final_snapshot.id()).context("release the final snapshot")?;
    let counters = memstore.counters();
    let by_layout: BTreeMap<String, LayoutBytes> =
        totals.by_layout.lock().expect("totals lock").iter().map(|(k, v)| (k.to_string(), v.per_cell())).collect();
    let per_cell = |layout: &str| by_layout.get(layout).map_or(0.0, |b| b.index_held_per_cell);
    let run_layout = if policy == CompactionPolicy::None { IndexLayout::SkipList } else { layout };
    let (heap, data, heap_cells) = *totals.heap.lock().expect("totals lock");
    let cells = rows_total * args.cells_per_row as u64;
    Ok(MemstoreRun {
        policy: policy.name(),
        layout: run_layout.name().to_string(),
        threads,
        dist: match dist {
            Dist::Zipf => "zipf",
            Dist::Uniform => "uniform",
        }
        .to_string(),
        cells,
        seconds,
        inserts_per_sec: cells as f64 / seconds,
        index_bytes_per_cell: per_cell(run_layout.name()),
        skiplist_index_bytes_per_cell: per_cell(IndexLayout::SkipList.name()),
        by_layout: by_layout.clone(),
        heap_bytes_per_cell: heap as f64 / heap_cells.max(1) as f64,
        data_bytes_per_cell: data as f64 / heap_cells.max(1) as f64,
        allocs_per_insert: allocs as f64 / cells as f64,
        cells_retained: counters.snapshot_cells,
        inmemory_flushes: counters.inmemory_flushes,
        flattens: counters.flattens,
        merges: counters.merges,
        compactions: counters.compactions,
        cells_dropped: counters.cells_dropped,
        disk_flushes: counters.snapshots - 1,
    })
}

/// Runs every combination and prints the table (and JSON).
pub fn run(args: &MemstoreBenchArgs) -> anyhow::Result<Vec<MemstoreRun>> {
    let dists = args.dists.iter().map(|d| parse_dist(d)).collect::<anyhow::Result<Vec<_>>>()?;
    let policies = args
        .policies
        .iter()
        .map(|p| CompactionPolicy::parse(p).with_context(|| format!("policy {p:?}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let layouts = args.layouts.iter().map(|l| parse_layout(l)).collect::<anyhow::Result<Vec<_>>>()?;
    if args.cells_per_row == 0 || args.cells_per_row > MAX_CELLS_PER_ROW || args.cells < args.cells_per_row as u64 {
        bail!("--cells-per-row must be 1..={MAX_CELLS_PER_ROW} and --cells at least that");
    }
    if args.keys < 2 {
        bail!("--keys must be at least 2");
    }
    if args.threads.contains(&0) {
        bail!("--threads must be positive");
    }
    let mut runs = Vec::new();
    print_header();
    for &dist in &dists {
        for &threads in &args.threads {
            for &policy in &policies {
                let run_layouts: &[IndexLayout] =
                    if policy == CompactionPolicy::None { &[IndexLayout::CellArray] } else { &layouts };
                for &layout in run_layouts {
                    let r = run_one(args, policy, layout, threads, dist)?;
                    print_row(&r);
                    runs.push(r);
                }
            }
        }
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&serde_json::json!({ "runs": runs }))?;
        std::fs::write(path, json).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(runs)
}

fn print_header() {
    println!(
        "{:<14} {:<10} {:>3} {:<7} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>7} {:>6} {:>6} {:>6} {:>5}",
        "policy",
        "layout",
        "thr",
        "dist",
        "cells",
        "Mcells/s",
        "idx B/c",
        "acct/c",
        "skip/c",
        "data/c",
        "heap/c",
        "allocs/i",
        "retained",
        "inmem",
        "flat",
        "merge",
        "compct",
        "flush"
    );
}

/// `idx B/c`: index bytes per cell the run's layout holds (measured);
/// `acct/c`: its entry bytes per cell (what heap accounting charges);
/// `skip/c`: bytes per cell the skiplist segments hold; `heap/c`: accounted
/// heap per cell.
fn print_row(r: &MemstoreRun) {
    let accounted = r.by_layout.get(&r.layout).map_or(0.0, |b| b.index_accounted_per_cell);
    println!(
        "{:<14} {:<10} {:>3} {:<7} {:>9} {:>9.3} {:>7.2} {:>7.2} {:>7.2} {:>7.1} {:>7.1} {:>8.5} {:>9} {:>7} {:>6} {:>6} {:>6} {:>5}",
        r.policy,
        r.layout,
        r.threads,
        r.dist,
        r.cells,
        r.inserts_per_sec / 1e6,
        r.index_bytes_per_cell,
        accounted,
        r.skiplist_index_bytes_per_cell,
        r.data_bytes_per_cell,
        r.heap_bytes_per_cell,
        r.allocs_per_insert,
        r.cells_retained,
        r.inmemory_flushes,
        r.flattens,
        r.merges,
        r.compactions,
        r.disk_flushes
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(layout: &str) -> MemstoreBenchArgs {
        MemstoreBenchArgs {
            cells: 40_000,
            keys: 5_000,
            threads: vec![1],
            dists: vec!["uniform".into()],
            policies: vec!["basic".into()],
            layouts: vec![layout.into()],
            flush_size_mb: 1,
            active_share: 0.02,
            pipeline_limit: 5,
            cells_per_row: 4,
            value_size: 25,
            seed: 1,
            json: None,
        }
    }

    #[test]
    fn index_bytes_per_cell_are_what_each_layout_holds() {
        // 1 MiB flushes, 20 KiB active segments: small flat indexes.
        let chunk = run_one(&args("cell-chunk"), CompactionPolicy::Basic, IndexLayout::CellChunk, 1, Dist::Uniform)
            .expect("runs");
        let cc = chunk.by_layout["cell-chunk"];
        // 16 B entries: the cell's location and eight bytes of its row.
        assert_eq!(cc.index_accounted_per_cell, 16.0, "{cc:?}");
        // Whole 128 KiB index chunks hold more than the entries in them;
        // how much more depends on how many segments the background
        // compactions merged before the flush (timing), so only "more".
        assert!(cc.index_held_per_cell > cc.index_accounted_per_cell, "small indexes hold whole index chunks: {cc:?}");
        assert_eq!(chunk.index_bytes_per_cell, cc.index_held_per_cell);
        assert!(cc.data_per_cell > 60.0, "{cc:?}");
        let skip = chunk.by_layout["skiplist"];
        assert!(skip.index_held_per_cell >= skip.index_accounted_per_cell, "{skip:?}");
        assert!(skip.index_accounted_per_cell >= 16.0, "{skip:?}");

        let array = run_one(&args("cell-array"), CompactionPolicy::Basic, IndexLayout::CellArray, 1, Dist::Uniform)
            .expect("runs");
        let ca = array.by_layout["cell-array"];
        assert_eq!((ca.index_held_per_cell, ca.index_accounted_per_cell), (8.0, 8.0), "{ca:?}");
    }
}
