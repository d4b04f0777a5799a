//! `Workload`: YCSB's core workload as this bench uses it — N keys
//! ("user" + fnv64(item)), drawn by the scrambled zipfian, uniform, or
//! latest distribution, or each once in turn (YCSB's load phase); rows of
//! F fields of V bytes; a mix of gets, short scans and writes (updates of
//! existing rows, or inserts of new ones as in YCSB's workload E).
//!
//! Operation `i`'s key and kind are a pure function of (seed, i), so every
//! engine (and every thread interleaving) sees the same sequence; the HBase
//! engine receives the same keys in a file.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::BenchError;
use crate::keys::{KeyChooser, ZIPFIAN_CONSTANT, ZipfianGenerator, write_key};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyDist {
    /// YCSB's scrambled zipfian (θ = 0.99).
    Zipfian,
    Uniform,
    /// Zipfian over the most recently written keys.
    Latest,
    /// Operation `i` takes item `i mod N`: every key once, in hashed order
    /// (YCSB's load phase, `insertorder=hashed`) — a uniformly loaded table.
    Sequential,
}

impl KeyDist {
    pub fn parse(s: &str) -> Result<KeyDist, BenchError> {
        match s {
            "zipf" | "zipfian" => Ok(KeyDist::Zipfian),
            "uniform" => Ok(KeyDist::Uniform),
            "latest" => Ok(KeyDist::Latest),
            "sequential" => Ok(KeyDist::Sequential),
            _ => {
                Err(BenchError::Invalid(format!("unknown key distribution {s:?} (zipf, uniform, latest, sequential)")))
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    /// Distinct rows.
    pub key_space: u64,
    pub dist: KeyDist,
    pub fields: usize,
    pub value_size: usize,
    /// Operations to run.
    pub ops: u64,
    /// Share of operations that are single-row gets.
    pub read_ratio: f64,
    /// Share of operations that are short scans (YCSB's workload E); the
    /// rest (after gets and scans) write a row.
    pub scan_ratio: f64,
    /// A scan reads 1 to this many rows, uniformly (YCSB's
    /// `maxscanlength`, 100).
    pub max_scan_length: u64,
    /// Whether writes insert new rows (keys past the key space, one per
    /// operation) instead of updating drawn ones (YCSB's workload E).
    pub inserts: bool,
    pub seed: u64,
}

impl Default for Workload {
    /// No operations over no keys (invalid until filled in): the base of
    /// struct literals that name what they set.
    fn default() -> Workload {
        Workload {
            key_space: 0,
            dist: KeyDist::Uniform,
            fields: 0,
            value_size: 0,
            ops: 0,
            read_ratio: 0.0,
            scan_ratio: 0.0,
            max_scan_length: 100,
            inserts: false,
            seed: 0,
        }
    }
}

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    /// A scan of this many rows from the operation's key.
    Scan(u64),
    Write,
}

/// Salts an operation's stream for its scan length, so that the length is
/// drawn independently of its key.
const SCAN_LENGTH_STREAM: u64 = 0x5CA1_AB1E;

/// splitmix64: a counter-based mixer, so that op `i` has its own stream.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the keys of a workload.
pub struct KeySource {
    workload: Workload,
    chooser: KeyChooser,
    latest: Option<ZipfianGenerator>,
}

impl Workload {
    pub fn validate(&self) -> Result<(), BenchError> {
        let shares_valid = (0.0..=1.0).contains(&self.read_ratio)
            && (0.0..=1.0).contains(&self.scan_ratio)
            && self.read_ratio + self.scan_ratio <= 1.0;
        if self.key_space < 2 || self.fields == 0 || self.ops == 0 || !shares_valid {
            return Err(BenchError::Invalid(
                "the key space must be at least 2, fields and ops positive, the read and scan ratios in [0, 1] \
                 and together at most 1"
                    .into(),
            ));
        }
        if self.scan_ratio > 0.0 && self.max_scan_length == 0 {
            return Err(BenchError::Invalid("a workload with scans needs a max scan length of at least 1".into()));
        }
        Ok(())
    }

    pub fn key_source(&self) -> KeySource {
        let chooser = match self.dist {
            KeyDist::Zipfian | KeyDist::Latest => KeyChooser::zipfian(self.key_space),
            KeyDist::Uniform | KeyDist::Sequential => KeyChooser::uniform(self.key_space),
        };
        let latest = (self.dist == KeyDist::Latest).then(|| ZipfianGenerator::new(self.key_space, ZIPFIAN_CONSTANT));
        KeySource { workload: self.clone(), chooser, latest }
    }

    /// Operation `i`'s slot in 0..1000: the first `read_ratio` × 1000 slots
    /// read, the next `scan_ratio` × 1000 scan, the rest write.
    fn slot(i: u64) -> u64 {
        i.wrapping_mul(2_654_435_761) % 1000
    }

    /// Whether operation `i` is a read — the same rule the HBase engine uses.
    pub fn is_read(&self, i: u64) -> bool {
        Self::slot(i) < (self.read_ratio * 1000.0).round() as u64
    }

    /// What operation `i` does; a scan's length is drawn uniformly from
    /// 1..=`max_scan_length` by the operation's own stream.
    pub fn op_kind(&self, i: u64) -> OpKind {
        if self.is_read(i) {
            return OpKind::Read;
        }
        let scans_end = ((self.read_ratio + self.scan_ratio) * 1000.0).round() as u64;
        if Self::slot(i) < scans_end {
            let mut rng = SmallRng::seed_from_u64(mix(self.seed ^ mix(i) ^ SCAN_LENGTH_STREAM));
            return OpKind::Scan(rng.random_range(1..=self.max_scan_length.max(1)));
        }
        OpKind::Write
    }

    /// Bytes a row write carries (row key excluded).
    pub fn row_value_bytes(&self) -> usize {
        self.fields * self.value_size
    }

    /// How many distinct keys the workload's writes touch: the keys of
    /// operations `0..ops` that are not reads, drawn as the driver draws
    /// them (an operation's key depends only on the seed and its index).
    /// With a skewed distribution this is far below the key space, and it
    /// is what a memstore that deduplicates could have to hold.
    pub fn distinct_keys_written(&self) -> u64 {
        let source = self.key_source();
        // Inserts take items past the key space, one per operation index.
        let items = self.key_space + if self.inserts { self.ops } else { 0 };
        let mut seen = vec![0u64; items.div_ceil(64) as usize];
        let mut distinct = 0u64;
        for i in (0..self.ops).filter(|&i| self.op_kind(i) == OpKind::Write) {
            let item = source.write_item(i);
            let (word, bit) = ((item / 64) as usize, 1u64 << (item % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                distinct += 1;
            }
        }
        distinct
    }
}

impl KeySource {
    /// The item of operation `i`.
    pub fn item(&self, i: u64) -> u64 {
        if self.workload.dist == KeyDist::Sequential {
            return i % self.workload.key_space;
        }
        let mut rng = SmallRng::seed_from_u64(mix(self.workload.seed ^ mix(i)));
        match &self.latest {
            Some(z) => i.saturating_sub(z.next_rank(&mut rng)) % self.workload.key_space,
            None => self.chooser.next_item(&mut rng),
        }
    }

    /// The item write `i` puts: a drawn one, or with inserts a new one past
    /// the key space (one per operation index, so never written twice).
    pub fn write_item(&self, i: u64) -> u64 {
        if self.workload.inserts { self.workload.key_space + i } else { self.item(i) }
    }

    /// Writes operation `i`'s row key into `buf`; returns its length.
    pub fn key(&self, i: u64, buf: &mut [u8; 32]) -> usize {
        write_key(self.item(i), buf)
    }

    /// Writes the row key write `i` puts ([`KeySource::write_item`]).
    pub fn write_key(&self, i: u64, buf: &mut [u8; 32]) -> usize {
        write_key(self.write_item(i), buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(dist: KeyDist) -> Workload {
        Workload {
            key_space: 1000,
            dist,
            fields: 4,
            value_size: 25,
            ops: 10_000,
            read_ratio: 0.3,
            seed: 7,
            ..Workload::default()
        }
    }

    #[test]
    fn operation_keys_depend_only_on_seed_and_index() {
        let a = workload(KeyDist::Zipfian).key_source();
        let b = workload(KeyDist::Zipfian).key_source();
        let seq = |s: &KeySource| (0..500).map(|i| s.item(i)).collect::<Vec<_>>();
        assert_eq!(seq(&a), seq(&b));
        // Any order of evaluation gives the same per-index result.
        let rev: Vec<u64> = (0..500).rev().map(|i| a.item(i)).collect();
        assert_eq!(rev.into_iter().rev().collect::<Vec<_>>(), seq(&a));
        let other = Workload { seed: 8, ..workload(KeyDist::Zipfian) }.key_source();
        assert_ne!(seq(&other), seq(&a));
    }

    /// Counted against a set of the keys themselves.
    #[test]
    fn distinct_keys_written_are_counted() {
        for dist in [KeyDist::Uniform, KeyDist::Zipfian] {
            let w = workload(dist);
            let source = w.key_source();
            let set: std::collections::HashSet<u64> =
                (0..w.ops).filter(|&i| !w.is_read(i)).map(|i| source.item(i)).collect();
            assert_eq!(w.distinct_keys_written(), set.len() as u64, "{dist:?}");
        }
        let skewed = Workload { key_space: 100_000, ops: 100_000, read_ratio: 0.0, ..workload(KeyDist::Zipfian) };
        let even = Workload { dist: KeyDist::Uniform, ..skewed.clone() };
        assert!(skewed.distinct_keys_written() < even.distinct_keys_written(), "Zipf touches fewer keys");
    }

    #[test]
    fn read_ratio_and_distributions_behave() {
        let w = workload(KeyDist::Uniform);
        let reads = (0..10_000).filter(|&i| w.is_read(i)).count();
        assert!((2700..3300).contains(&reads), "{reads}");
        let s = w.key_source();
        assert!((0..5000).all(|i| s.item(i) < 1000));
        let z = workload(KeyDist::Zipfian).key_source();
        let mut counts = std::collections::HashMap::new();
        for i in 0..20_000 {
            *counts.entry(z.item(i)).or_insert(0u32) += 1;
        }
        let top = counts.values().max().copied().unwrap_or(0);
        assert!(top > 20_000 / 20, "a zipfian has a hot key: top {top}");
        let l = workload(KeyDist::Latest).key_source();
        assert!((100..200).filter(|&i| l.item(i) + 50 >= i && l.item(i) <= i).count() > 50, "latest stays near i");
        assert!(KeyDist::parse("nope").is_err());
    }
    /// YCSB E's mix: 95 % scans of 1..=100 rows (each length drawn from the
    /// operation alone), 5 % inserts of keys never seen before.
    #[test]
    fn scans_and_inserts_follow_the_mix() {
        let w = Workload { read_ratio: 0.0, scan_ratio: 0.95, inserts: true, ..workload(KeyDist::Zipfian) };
        w.validate().expect("valid");
        let kinds: Vec<OpKind> = (0..w.ops).map(|i| w.op_kind(i)).collect();
        let scans: Vec<u64> =
            kinds.iter().filter_map(|k| if let OpKind::Scan(n) = k { Some(*n) } else { None }).collect();
        let writes = kinds.iter().filter(|k| **k == OpKind::Write).count();
        assert!((9_300..9_700).contains(&scans.len()), "{} scans", scans.len());
        assert_eq!(scans.len() + writes, w.ops as usize, "no gets in E");
        assert!(scans.iter().all(|&n| (1..=100).contains(&n)));
        assert!(scans.contains(&1) && scans.contains(&100), "the whole range is drawn");
        let mean = scans.iter().sum::<u64>() as f64 / scans.len() as f64;
        assert!((45.0..56.0).contains(&mean), "uniform lengths average ~50.5: {mean}");
        assert_eq!(kinds, (0..w.ops).map(|i| w.op_kind(i)).collect::<Vec<_>>(), "deterministic");
        let s = w.key_source();
        let inserted: std::collections::HashSet<u64> =
            (0..w.ops).filter(|&i| w.op_kind(i) == OpKind::Write).map(|i| s.write_item(i)).collect();
        assert_eq!(inserted.len(), writes, "every insert is a new key");
        assert!(inserted.iter().all(|&item| item >= w.key_space), "past the loaded keys");
        assert_eq!(w.distinct_keys_written(), writes as u64);
        // Updates write drawn keys; shares over 1 are refused.
        let b = Workload { read_ratio: 0.95, ..workload(KeyDist::Zipfian) };
        assert!((0..1000).all(|i| b.key_source().write_item(i) < b.key_space));
        assert!(Workload { read_ratio: 0.6, scan_ratio: 0.5, ..b.clone() }.validate().is_err());
        assert!(Workload { scan_ratio: 0.1, max_scan_length: 0, ..b }.validate().is_err());
    }

    #[test]
    fn sequential_loads_every_key_once() {
        let w = Workload { ops: 1000, read_ratio: 0.0, ..workload(KeyDist::Sequential) };
        let s = w.key_source();
        let items: std::collections::HashSet<u64> = (0..w.ops).map(|i| s.item(i)).collect();
        assert_eq!(items.len(), 1000);
        assert_eq!(w.distinct_keys_written(), 1000);
        assert_eq!(KeyDist::parse("sequential").expect("known"), KeyDist::Sequential);
    }
}
