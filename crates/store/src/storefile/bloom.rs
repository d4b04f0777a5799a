//! The bloom filter of a store file: "may this file hold row r?" (ROW) or
//! "… column (r, f, q)?" (ROWCOL), so that a get skips files that cannot
//! hold its row without reading a block.
//!
//! A classic bloom filter over one bit array, probed at `k` positions
//! `h1 + i·h2 (mod m)` from the two 32-bit halves of a 64-bit MurmurHash64A
//! (Kirsch–Mitzenmacher double hashing). With 10 bits per key and k = 7 the
//! false-positive rate is about 0.8 %.
//!
//! ROWCOL keys are hashed as a chain — row, then family, then qualifier,
//! each seeded with the previous hash and mixed with its own length — so
//! the parts can't be confused with each other and no key is allocated.
//!
//! Section payload (inside a bloom block frame):
//!
//! ```text
//! version u8 = 1 | k u8 | bloom type u8 | reserved u8 | key_count u64 | nbits u64 | bits
//! ```
//!
//! Invariants: no false negatives — every key added before `finish` tests
//! positive. `nbits` is a positive multiple of 8 equal to the bit array's
//! length (checked by `parse`, so probing never indexes out of bounds).
//!
//! Thread safety: the builder belongs to one writer; a parsed
//! [`BloomFilter`] is immutable and shared by all readers of the file.

use super::options::BloomType;

const VERSION: u8 = 1;
const HEADER_LEN: usize = 4 + 8 + 8;
const MAX_PROBES: u32 = 30;
const SEED: u64 = 0x5354_4f52_4546_494c; // "STOREFIL"

/// MurmurHash64A (Austin Appleby), little-endian words.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The bloom hash of a row.
pub(crate) fn hash_row(row: &[u8]) -> u64 {
    murmur64a(row, SEED)
}

/// The bloom hash of a (row, family, qualifier) column.
pub(crate) fn hash_row_col(row: &[u8], family: &[u8], qualifier: &[u8]) -> u64 {
    murmur64a(qualifier, murmur64a(family, murmur64a(row, SEED)))
}

/// Probes per key for `bits_per_key`: k = bits·ln 2 minimises false positives.
fn probes(bits_per_key: u32) -> u32 {
    ((f64::from(bits_per_key) * std::f64::consts::LN_2).round() as u32).clamp(1, MAX_PROBES)
}

#[inline]
fn positions(hash: u64, k: u32, nbits: u64) -> impl Iterator<Item = u64> {
    let h1 = hash & 0xFFFF_FFFF;
    let h2 = hash >> 32;
    (0..u64::from(k)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % nbits)
}

/// Collects key hashes while a file is written (keys arrive in sorted
/// order, so the writer adds each distinct key once), then sizes and fills
/// the bit array at `finish`. Costs 8 bytes per key until then.
pub(crate) struct BloomBuilder {
    bloom_type: BloomType,
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub(crate) fn new(bloom_type: BloomType, bits_per_key: u32) -> BloomBuilder {
        BloomBuilder { bloom_type, bits_per_key, hashes: Vec::new() }
    }

    pub(crate) fn add_hash(&mut self, hash: u64) {
        self.hashes.push(hash);
    }

    pub(crate) fn key_count(&self) -> u64 {
        self.hashes.len() as u64
    }

    /// The section payload.
    pub(crate) fn finish(&self) -> Vec<u8> {
        let k = probes(self.bits_per_key);
        let nbits = (self.key_count().saturating_mul(u64::from(self.bits_per_key))).max(64).div_ceil(8) * 8;
        let mut out = Vec::with_capacity(HEADER_LEN + (nbits / 8) as usize);
        out.extend_from_slice(&[VERSION, k as u8, self.bloom_type.code(), 0]);
        out.extend_from_slice(&self.key_count().to_be_bytes());
        out.extend_from_slice(&nbits.to_be_bytes());
        out.resize(HEADER_LEN + (nbits / 8) as usize, 0);
        let bits = &mut out[HEADER_LEN..];
        for &h in &self.hashes {
            for p in positions(h, k, nbits) {
                bits[(p / 8) as usize] |= 1 << (p % 8);
            }
        }
        out
    }
}

/// A loaded bloom filter.
pub struct BloomFilter {
    bloom_type: BloomType,
    k: u32,
    nbits: u64,
    key_count: u64,
    bits: Box<[u8]>,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFilter")
            .field("type", &self.bloom_type)
            .field("k", &self.k)
            .field("nbits", &self.nbits)
            .field("keys", &self.key_count)
            .finish()
    }
}

impl BloomFilter {
    /// Checks and wraps a section payload; the error is why it is malformed.
    pub(crate) fn parse(payload: &[u8]) -> Result<BloomFilter, String> {
        if payload.len() < HEADER_LEN {
            return Err(format!("bloom section of {} bytes is shorter than its header", payload.len()));
        }
        if payload[0] != VERSION {
            return Err(format!("unknown bloom filter version {}", payload[0]));
        }
        let k = u32::from(payload[1]);
        if !(1..=MAX_PROBES).contains(&k) {
            return Err(format!("bloom filter probe count {k} is outside 1..={MAX_PROBES}"));
        }
        let bloom_type = BloomType::from_code(payload[2])
            .filter(|&t| t != BloomType::None)
            .ok_or_else(|| format!("bad bloom type code {}", payload[2]))?;
        let key_count = u64::from_be_bytes(payload[4..12].try_into().map_err(|_| "short bloom header")?);
        let nbits = u64::from_be_bytes(payload[12..20].try_into().map_err(|_| "short bloom header")?);
        let bits = &payload[HEADER_LEN..];
        if nbits == 0 || nbits % 8 != 0 || nbits / 8 != bits.len() as u64 {
            return Err(format!("bloom filter of {nbits} bits does not match its {}-byte bit array", bits.len()));
        }
        Ok(BloomFilter { bloom_type, k, nbits, key_count, bits: bits.into() })
    }

    pub fn bloom_type(&self) -> BloomType {
        self.bloom_type
    }

    /// Keys added when the file was written.
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// Size of the bit array.
    pub fn size_bytes(&self) -> usize {
        self.bits.len()
    }

    /// Whether a key with this hash may have been added (never false for
    /// one that was).
    pub(crate) fn might_contain_hash(&self, hash: u64) -> bool {
        positions(hash, self.k, self.nbits).all(|p| self.bits[(p / 8) as usize] & (1 << (p % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_basic_properties() {
        assert_eq!(murmur64a(b"", 0), 0);
        assert_ne!(murmur64a(b"a", 0), murmur64a(b"b", 0));
        assert_ne!(murmur64a(b"abcdefgh", 1), murmur64a(b"abcdefgh", 2));
    }

    #[test]
    fn row_col_chain_separates_parts() {
        assert_ne!(hash_row_col(b"ab", b"c", b""), hash_row_col(b"a", b"bc", b""));
        assert_ne!(hash_row_col(b"a", b"b", b"c"), hash_row_col(b"a", b"bc", b""));
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let mut b = BloomBuilder::new(BloomType::Row, 10);
        for i in 0..10_000u32 {
            b.add_hash(hash_row(format!("key{i}").as_bytes()));
        }
        let f = BloomFilter::parse(&b.finish()).expect("parse");
        assert_eq!(f.key_count(), 10_000);
        assert!((0..10_000u32).all(|i| f.might_contain_hash(hash_row(format!("key{i}").as_bytes()))));
        let fp = (0..20_000u32).filter(|i| f.might_contain_hash(hash_row(format!("other{i}").as_bytes()))).count();
        assert!(fp < 400, "{fp} false positives of 20000");
    }

    #[test]
    fn empty_filter_and_malformed_sections() {
        let f = BloomFilter::parse(&BloomBuilder::new(BloomType::Row, 10).finish()).expect("parse");
        assert!(!f.might_contain_hash(hash_row(b"x")));
        let good = BloomBuilder::new(BloomType::RowCol, 10).finish();
        assert!(BloomFilter::parse(&good[..10]).is_err());
        assert!(BloomFilter::parse(&good[..good.len() - 1]).is_err());
        let mut bad_k = good.clone();
        bad_k[1] = 0;
        assert!(BloomFilter::parse(&bad_k).is_err());
        let mut bad_type = good;
        bad_type[2] = 0;
        assert!(BloomFilter::parse(&bad_type).is_err());
    }
}
