//! The read presets: YCSB's workloads B (95 % gets, 5 % updates), C (gets
//! only) and E (95 % short scans, 5 % inserts) on the embedded engines, our
//! store beside RocksDB with the same block cache, bloom filters and
//! memtable budget. Each loads its table first (every key once, not
//! measured), waits until the engine has no flush or compaction queued or
//! running (`Engine::settle`; RocksDB's `WaitForCompact`), then measures
//! the run phase.
//!
//! YCSB's defaults where they apply: rows of 10 fields × 100 B, Zipfian
//! requests (scrambled, θ 0.99), scans of 1..100 rows of uniform length.
//! Updates write the whole row (YCSB's `writeallfields=true`; its default
//! writes one field), and each write is sent alone (no client buffer), as
//! YCSB's embedded bindings write. The data set is ~2.5 × the block cache:
//! at scale 1, 120 K rows of ~1.5 KB on disk (~180 MB) against 64 MiB, so
//! gets and scans miss the cache (the files stay in the OS page cache,
//! which this machine's RAM holds whole: a miss costs a read from memory,
//! not from the disk). Inserted rows are not read back: gets and scans
//! draw from the loaded keys (YCSB's E reads keys inserted so far too; at
//! 5 % of the operations that changes little).

use store::wal::Durability;

use crate::BenchError;
use crate::presets::Preset;
use crate::workload::{KeyDist, Workload};

/// The data block size of both engines' files: RocksDB's tuning guide's
/// 16 KiB, and what HBase's guide advises for random reads (smaller than
/// its 64 KiB default). Ours measured at 64, 16 and 4 KiB on these presets
/// (`bench-results/issue28-block-size/`): 16 KiB served YCSB C 1.8x and B
/// 1.5x the gets of 64 KiB, and E's scans no slower.
pub const READ_BLOCK_SIZE: usize = 16 << 10;

/// Rows loaded at scale 1.
const ROWS: f64 = 120_000.0;
/// The block cache at scale 1; the memstore budget is half of it, in
/// region flushes of a quarter of the budget.
const BLOCK_CACHE_BYTES: f64 = (64u64 << 20) as f64;

/// What preset `name` runs, in a line.
pub fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "ycsb-b" => {
            "YCSB B on a loaded table (~2.5 x the block cache): 95 % Zipf gets, 5 % row updates; \
             the run phase measured, throughput and p99 per operation"
        }
        "ycsb-c" => "YCSB C on the same loaded table: Zipf gets only",
        "ycsb-e" => {
            "YCSB E on the same loaded table: 95 % scans of 1..100 rows from a Zipf key, 5 % inserts of new rows"
        }
        _ => return None,
    })
}

/// The preset `name` (`ycsb-b`, `ycsb-c`, `ycsb-e`) at `scale`.
pub fn ycsb(name: &'static str, scale: f64) -> Result<Preset, BenchError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(BenchError::Invalid(format!("--scale must be positive, got {scale}")));
    }
    // Gets cost tens of µs and scans of ~50 rows a few hundred: operation
    // counts that keep a run phase near half a minute here.
    let (read_ratio, scan_ratio, inserts, ops) = match name {
        "ycsb-b" => (0.95, 0.0, false, 400_000.0),
        "ycsb-c" => (1.0, 0.0, false, 400_000.0),
        "ycsb-e" => (0.0, 0.95, true, 40_000.0),
        other => return Err(BenchError::Invalid(format!("{other:?} is not a YCSB preset"))),
    };
    let scaled = |n: f64| ((n * scale) as u64).max(2);
    let block_cache_bytes = scaled(BLOCK_CACHE_BYTES);
    let memstore_bytes = block_cache_bytes / 2;
    Ok(Preset {
        name,
        workload: Workload {
            key_space: scaled(ROWS),
            dist: KeyDist::Zipfian,
            fields: 10,
            value_size: 100,
            ops: scaled(ops),
            read_ratio,
            scan_ratio,
            max_scan_length: 100,
            inserts,
            seed: 45,
        },
        threads: 8,
        regions: 4,
        // Each write alone.
        batch_bytes: 1,
        durability: Durability::AsyncWal,
        rocksdb_memtable_bytes: None,
        memstore_bytes,
        block_cache_bytes,
        region_flush_size: (memstore_bytes / 4).max(1 << 20),
        wal_roll_size: (memstore_bytes / 4).max(1 << 20),
        inmemory_flush_share: 0.02,
        pipeline_segments_limit: 5,
        block_size: Some(READ_BLOCK_SIZE),
        scale,
        write_rate: None,
        named_gets: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{Mode, experiments};
    use crate::regime::lean_row_heap_bytes;
    use crate::workload::OpKind;

    #[test]
    fn the_ycsb_presets_have_ycsbs_mixes_over_a_table_larger_than_the_cache() {
        for (name, gets, scans, inserts) in
            [("ycsb-b", 0.95, 0.0, false), ("ycsb-c", 1.0, 0.0, false), ("ycsb-e", 0.0, 0.95, true)]
        {
            let exps = experiments(name, 1.0, &["none".to_string(), "basic".to_string()]).expect("preset");
            assert_eq!(exps.len(), 2, "once per policy");
            let p = &exps[0].preset;
            assert_eq!(exps[0].mode, Mode::LoadThenRun);
            let w = &p.workload;
            assert_eq!((w.read_ratio, w.scan_ratio, w.inserts), (gets, scans, inserts), "{name}");
            assert_eq!((w.fields, w.value_size, w.dist, w.max_scan_length), (10, 100, KeyDist::Zipfian, 100));
            // Even at the leanest in-memory row the loaded table is over
            // twice the block cache.
            let table = w.key_space * lean_row_heap_bytes(w.fields, w.value_size);
            assert!(table > 2 * p.block_cache_bytes, "{name}: {table} B against {}", p.block_cache_bytes);
            assert!(p.memstore_bytes < p.block_cache_bytes);
            for engine in ["accordion", "rocksdb", "hbase"] {
                assert_eq!(p.block_size_on(engine), READ_BLOCK_SIZE, "{name}: one block size for every engine");
            }
            let kinds: Vec<OpKind> = (0..2000).map(|i| w.op_kind(i)).collect();
            let writes = kinds.iter().filter(|k| **k == OpKind::Write).count();
            assert!((name == "ycsb-c") == (writes == 0), "{name}: {writes} writes");
        }
        assert!(ycsb("ycsb-a", 1.0).is_err());
        assert!(ycsb("ycsb-c", 0.0).is_err());
    }
}
