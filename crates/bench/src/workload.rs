//! `Workload`: YCSB's core workload as this bench uses it — N keys
//! ("user" + fnv64(item)), drawn by the scrambled zipfian, uniform, or
//! latest distribution; rows of F fields of V bytes; a read/write mix.
//!
//! Operation `i`'s key and kind are a pure function of (seed, i), so every
//! engine (and every thread interleaving) sees the same sequence; the HBase
//! engine receives the same keys in a file.

use rand::SeedableRng;
use rand::rngs::SmallRng;
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
}

impl KeyDist {
    pub fn parse(s: &str) -> Result<KeyDist, BenchError> {
        match s {
            "zipf" | "zipfian" => Ok(KeyDist::Zipfian),
            "uniform" => Ok(KeyDist::Uniform),
            "latest" => Ok(KeyDist::Latest),
            _ => Err(BenchError::Invalid(format!("unknown key distribution {s:?} (zipf, uniform, latest)"))),
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
    /// Share of operations that are single-row gets (the rest write a row).
    pub read_ratio: f64,
    pub seed: u64,
}

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
        if self.key_space < 2 || self.fields == 0 || self.ops == 0 || !(0.0..=1.0).contains(&self.read_ratio) {
            return Err(BenchError::Invalid(
                "the key space must be at least 2, fields and ops positive, the read ratio in [0, 1]".into(),
            ));
        }
        Ok(())
    }

    pub fn key_source(&self) -> KeySource {
        let chooser = match self.dist {
            KeyDist::Zipfian | KeyDist::Latest => KeyChooser::zipfian(self.key_space),
            KeyDist::Uniform => KeyChooser::uniform(self.key_space),
        };
        let latest = (self.dist == KeyDist::Latest).then(|| ZipfianGenerator::new(self.key_space, ZIPFIAN_CONSTANT));
        KeySource { workload: self.clone(), chooser, latest }
    }

    /// Whether operation `i` is a read — the same rule the HBase engine uses.
    pub fn is_read(&self, i: u64) -> bool {
        (i.wrapping_mul(2_654_435_761) % 1000) < (self.read_ratio * 1000.0).round() as u64
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
        let mut seen = vec![0u64; self.key_space.div_ceil(64) as usize];
        let mut distinct = 0u64;
        for i in (0..self.ops).filter(|&i| !self.is_read(i)) {
            let item = source.item(i);
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
        let mut rng = SmallRng::seed_from_u64(mix(self.workload.seed ^ mix(i)));
        match &self.latest {
            Some(z) => i.saturating_sub(z.next_rank(&mut rng)) % self.workload.key_space,
            None => self.chooser.next_item(&mut rng),
        }
    }

    /// Writes operation `i`'s row key into `buf`; returns its length.
    pub fn key(&self, i: u64, buf: &mut [u8; 32]) -> usize {
        write_key(self.item(i), buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(dist: KeyDist) -> Workload {
        Workload { key_space: 1000, dist, fields: 4, value_size: 25, ops: 10_000, read_ratio: 0.3, seed: 7 }
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
}
