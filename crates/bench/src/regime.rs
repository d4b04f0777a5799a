//! The regime calculator: the store shape and workload size of the paper's
//! write-only experiment (seed 000, §Write-Only), scaled to this machine.
//!
//! The paper runs 25 regions per region server in ~3 GB of memstore: about
//! 120 MB of budget per region against a 128 MB region flush size, so most
//! disk flushes are size-triggered, not global-pressure flushes; 100 M keys
//! written 500 M times (5 writes per key), a data set larger than the
//! memstore. What has to survive scaling is those ratios, not the absolute
//! sizes:
//!
//! - budget / regions = [`REGION_SHARE_OF_FLUSH_SIZE`] × region flush size
//!   (120/128), exactly, at every scale;
//! - live data set (keys × [`lean_row_heap_bytes`]) ≥ [`MIN_LIVE_OVER_BUDGET`]
//!   × budget — even deduplicated and behind the leanest index, the data
//!   does not fit in memory, so eager cannot keep it all. Under Zipf the
//!   writes touch far fewer keys than the key space holds; the Zipf preset
//!   grows its key space until the keys written hold this share, counted
//!   (`presets::sized_by_keys_written`);
//! - operations = [`WRITES_PER_KEY`] × keys;
//! - dozens of size-triggered disk flushes for `none`.
//!
//! At scale 1 ([`Regime::paper_write`]): 5 regions, 32 MiB flush size,
//! 150 MiB budget (5 × 30 MiB), 800 K keys, 4 M row writes. A run takes
//! ~20–30 s here at 150–200 K rows/s; the paper's 128 MiB flush size with
//! the same ratios would need a 4× bigger budget and 4× the operations.
//! Up to scale 4 the flush size grows with the scale (reaching the paper's
//! 128 MiB at 4); beyond it the flush size stays at 128 MiB and regions are
//! added instead, as the paper's cluster has (scale 20: 25 regions, 3000 MiB,
//! the paper's region server). Keys, operations and budget follow.
//!
//! The WAL rolls at the region flush size: the paper's HDFS WAL rolls at
//! ~0.95 × its 128 MB block, about one flush size.

use memstore::CellInput;

use crate::BenchError;

/// Budget per region over region flush size: the paper's 120 MB / 128 MB.
pub const REGION_SHARE_OF_FLUSH_SIZE: f64 = 120.0 / 128.0;
/// Live data set over memstore budget, at least.
pub const MIN_LIVE_OVER_BUDGET: f64 = 1.5;
/// The paper's 500 M operations over 100 M keys.
pub const WRITES_PER_KEY: u64 = 5;

/// Scale 1's shape (module doc).
const BASE_REGIONS: usize = 5;
const BASE_FLUSH_SIZE: u64 = 32 << 20;
const BASE_KEYS: u64 = 800_000;
/// The paper's region flush size, reached at scale 4.
const PAPER_FLUSH_SIZE: u64 = 128 << 20;

/// A typical row key's length: "user" + fnv64 in decimal, which has 19
/// digits for 89 % of items and 18 for most of the rest (a test measures it).
pub const TYPICAL_KEY_BYTES: usize = 23;
/// The bench's family and qualifier names (`f`, `field0`…`field9`).
const FAMILY: &[u8] = b"f";
const QUALIFIER: &[u8] = b"field0";
/// One cell-array entry, the leanest index (a cell-chunk entry is 16 B: it
/// keeps eight row bytes beside the cell's location).
const FLAT_ENTRY_BYTES: u64 = 8;

/// Bytes a row of `fields` cells of `value_size` bytes occupies in the
/// memstore's heap at its leanest: each cell's encoding (`cell.rs`: header,
/// key with row, family, qualifier, timestamp and type, seq id, value) plus
/// one flat index entry. A skiplist segment costs more (its nodes), so this
/// is a lower bound for every policy. 364 B for the paper's 4 × 25 B rows.
pub fn lean_row_heap_bytes(fields: usize, value_size: usize) -> u64 {
    let key = [b'k'; TYPICAL_KEY_BYTES];
    let value = vec![0u8; value_size];
    let cell = CellInput::put(&key, FAMILY, QUALIFIER, 0, &value).encoded_len() as u64;
    fields as u64 * (cell + FLAT_ENTRY_BYTES)
}

/// The store shape and workload size of one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Regime {
    pub scale: f64,
    pub regions: usize,
    /// The global memstore budget (the flusher's high-water mark).
    pub memstore_bytes: u64,
    pub region_flush_size: u64,
    pub wal_roll_size: u64,
    pub key_space: u64,
    pub ops: u64,
}

impl Regime {
    /// The paper's write-only regime at `scale` (module doc).
    pub fn paper_write(scale: f64) -> Result<Regime, BenchError> {
        if !scale.is_finite() || scale <= 0.0 {
            return Err(BenchError::Invalid(format!("--scale must be positive, got {scale}")));
        }
        let paper_scale = (PAPER_FLUSH_SIZE / BASE_FLUSH_SIZE) as f64;
        let (regions, region_flush_size) = if scale <= paper_scale {
            (BASE_REGIONS, ((BASE_FLUSH_SIZE as f64 * scale) as u64).max(1))
        } else {
            (((BASE_REGIONS as f64 * scale / paper_scale).round() as usize).max(BASE_REGIONS), PAPER_FLUSH_SIZE)
        };
        let memstore_bytes = (regions as f64 * REGION_SHARE_OF_FLUSH_SIZE * region_flush_size as f64).round() as u64;
        let key_space = ((BASE_KEYS as f64 * scale).round() as u64).max(2);
        Ok(Regime {
            scale,
            regions,
            memstore_bytes,
            region_flush_size,
            wal_roll_size: region_flush_size,
            key_space,
            ops: WRITES_PER_KEY * key_space,
        })
    }

    /// Budget per region over region flush size.
    pub fn region_share_of_flush_size(&self) -> f64 {
        self.memstore_bytes as f64 / self.regions as f64 / self.region_flush_size as f64
    }

    /// Live data set (every key once, at `row_bytes`) over the budget.
    pub fn live_over_budget(&self, row_bytes: u64) -> f64 {
        (self.key_space * row_bytes) as f64 / self.memstore_bytes as f64
    }

    pub fn writes_per_key(&self) -> f64 {
        self.ops as f64 / self.key_space as f64
    }

    /// Size-triggered disk flushes to expect at least, with no in-memory
    /// compaction: the heap every write adds (at least `row_bytes` a row),
    /// less what may still be in memory at the end, in flush-size pieces.
    pub fn min_expected_flushes(&self, row_bytes: u64) -> f64 {
        (self.ops as f64 * row_bytes as f64 - self.memstore_bytes as f64) / self.region_flush_size as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::write_key;

    const SCALES: &[f64] = &[0.001, 0.002, 0.01, 0.05, 0.25, 0.5, 1.0, 2.0, 3.3, 4.0, 4.4, 5.0, 10.0, 20.0, 37.5];

    #[test]
    fn the_papers_ratios_hold_at_every_scale() {
        let row = lean_row_heap_bytes(4, 25);
        for &s in SCALES {
            let r = Regime::paper_write(s).expect("valid scale");
            let share = r.region_share_of_flush_size();
            assert!((share - 120.0 / 128.0).abs() < 1e-3, "scale {s}: budget per region / flush size {share}");
            assert!(r.live_over_budget(row) >= MIN_LIVE_OVER_BUDGET, "scale {s}: {}", r.live_over_budget(row));
            assert_eq!(r.writes_per_key(), 5.0, "scale {s}");
            assert!(r.min_expected_flushes(row) >= 36.0, "scale {s}: {} flushes", r.min_expected_flushes(row));
            assert!(r.region_flush_size <= 128 << 20, "scale {s}: never above the paper's flush size");
            assert_eq!(r.wal_roll_size, r.region_flush_size);
        }
    }

    #[test]
    fn scale_one_is_the_stated_shape_and_scale_twenty_the_papers_region_server() {
        let r = Regime::paper_write(1.0).expect("valid");
        assert_eq!((r.regions, r.region_flush_size, r.memstore_bytes), (5, 32 << 20, 150 << 20));
        assert_eq!((r.key_space, r.ops), (800_000, 4_000_000));
        let paper = Regime::paper_write(20.0).expect("valid");
        assert_eq!((paper.regions, paper.region_flush_size, paper.memstore_bytes), (25, 128 << 20, 3000 << 20));
        // Flush counts do not change with the scale up to 4 (everything
        // scales together), so a small smoke run shows scale 1's.
        let row = lean_row_heap_bytes(4, 25);
        let small = Regime::paper_write(0.05).expect("valid");
        assert!((small.min_expected_flushes(row) - r.min_expected_flushes(row)).abs() < 0.5);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Regime::paper_write(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_row_size_assumed_is_what_a_flat_segment_measures() {
        // The key length assumed is the workload's mean.
        let mut buf = [0u8; 32];
        let mean = (0..10_000u64).map(|i| write_key(i, &mut buf)).sum::<usize>() as f64 / 10_000.0;
        assert!((mean - TYPICAL_KEY_BYTES as f64).abs() < 0.5, "mean key length {mean}");
        assert_eq!(lean_row_heap_bytes(4, 25), 364);

        // Rows of the workload's keys in a memstore with the leanest flat
        // index, the cell array.
        use memstore::{CompactionMode, CompactionPolicy, InMemoryFlushThreshold, MemStore, MemStoreConfig, Mvcc};
        let mvcc = std::sync::Arc::new(Mvcc::new(0));
        let config = MemStoreConfig {
            policy: CompactionPolicy::Basic,
            in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(64 << 10),
            compaction_mode: CompactionMode::Inline,
            flat_layout: memstore::IndexLayout::CellArray,
            mvcc: mvcc.clone(),
            ..MemStoreConfig::new("f")
        };
        let m = MemStore::new(config).expect("valid config");
        let rows = 2_000u64;
        let value = [b'v'; 25];
        let quals: Vec<Vec<u8>> = (0..4).map(|i| format!("field{i}").into_bytes()).collect();
        for i in 0..rows {
            let n = write_key(i, &mut buf);
            let cells: Vec<CellInput<'_>> =
                quals.iter().map(|q| CellInput::put(&buf[..n], b"f", q, 1, &value)).collect();
            let w = mvcc.begin();
            m.add_row(&cells, w.seq()).expect("valid row");
            mvcc.complete(w);
        }
        let snapshot = m.snapshot();
        let flat: Vec<_> =
            snapshot.segments().iter().filter(|s| s.layout() != memstore::IndexLayout::SkipList).collect();
        assert!(!flat.is_empty(), "in-memory flushes made flat segments");
        let (bytes, cells) = flat.iter().fold((0u64, 0u64), |(b, c), s| {
            let st = s.stats();
            (b + st.data_size + st.index_size, c + st.cells)
        });
        let per_row = bytes as f64 / (cells as f64 / 4.0);
        assert!((per_row - 364.0).abs() < 364.0 * 0.02, "a flat segment holds {per_row} B per row");
    }
}
