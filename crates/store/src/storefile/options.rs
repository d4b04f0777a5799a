//! How a store file is written: target block size, block compression and
//! bloom filter — a column family's HBase options `BLOCKSIZE`, `COMPRESSION`
//! and `BLOOMFILTER`, with HBase's defaults (64 KiB, none, ROW).
//!
//! The options are recorded in the file's metadata; a reader never needs
//! them (every block says how it is compressed), so a family's options can
//! change while older files with other options are still being read.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};

/// HBase's default block size.
pub const DEFAULT_BLOCK_SIZE: usize = 64 << 10;
/// Bits of bloom filter per key: about 1 % false positives (RocksDB and
/// HBase use the same figure).
pub const DEFAULT_BLOOM_BITS_PER_KEY: u32 = 10;
/// Largest accepted target block size. A block holds its cells' offsets as
/// `u32`, and a block this large already defeats caching.
pub const MAX_BLOCK_SIZE: usize = 256 << 20;

/// The compression of data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Compression {
    #[default]
    None,
    Lz4,
    Zstd,
}

impl Compression {
    /// The code stored in each block header.
    pub(crate) fn code(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// HBase's name of the algorithm.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "NONE",
            Compression::Lz4 => "LZ4",
            Compression::Zstd => "ZSTD",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = StoreError;

    /// Parses HBase's names, case-insensitively.
    fn from_str(s: &str) -> Result<Compression> {
        match s.to_ascii_uppercase().as_str() {
            "NONE" => Ok(Compression::None),
            "LZ4" => Ok(Compression::Lz4),
            "ZSTD" => Ok(Compression::Zstd),
            _ => Err(StoreError::InvalidOption {
                name: "compression",
                reason: format!("{s:?} is none of NONE, LZ4 or ZSTD"),
            }),
        }
    }
}

/// What the bloom filter of a file is built over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum BloomType {
    /// No bloom filter.
    None,
    /// Rows: answers "may this file hold cells of row r?" (HBase's default).
    #[default]
    Row,
    /// (row, family, qualifier) columns: answers point gets of one column,
    /// but not row questions.
    RowCol,
}

impl BloomType {
    pub(crate) fn code(self) -> u8 {
        match self {
            BloomType::None => 0,
            BloomType::Row => 1,
            BloomType::RowCol => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<BloomType> {
        match code {
            0 => Some(BloomType::None),
            1 => Some(BloomType::Row),
            2 => Some(BloomType::RowCol),
            _ => None,
        }
    }

    /// HBase's name of the bloom type.
    pub fn name(self) -> &'static str {
        match self {
            BloomType::None => "NONE",
            BloomType::Row => "ROW",
            BloomType::RowCol => "ROWCOL",
        }
    }
}

impl fmt::Display for BloomType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BloomType {
    type Err = StoreError;

    /// Parses HBase's names, case-insensitively.
    fn from_str(s: &str) -> Result<BloomType> {
        match s.to_ascii_uppercase().as_str() {
            "NONE" => Ok(BloomType::None),
            "ROW" => Ok(BloomType::Row),
            "ROWCOL" => Ok(BloomType::RowCol),
            _ => Err(StoreError::InvalidOption {
                name: "bloom filter type",
                reason: format!("{s:?} is none of NONE, ROW or ROWCOL"),
            }),
        }
    }
}

/// How a store file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFileOptions {
    /// Target uncompressed size of a data block; a block is closed once it
    /// reaches this size, so blocks exceed it by at most one cell.
    pub block_size: usize,
    pub compression: Compression,
    pub bloom: BloomType,
    /// Bloom filter bits per key (1..=64); ignored without a bloom filter.
    pub bloom_bits_per_key: u32,
}

impl Default for StoreFileOptions {
    fn default() -> Self {
        StoreFileOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            compression: Compression::None,
            bloom: BloomType::Row,
            bloom_bits_per_key: DEFAULT_BLOOM_BITS_PER_KEY,
        }
    }
}

impl StoreFileOptions {
    /// Rejects options no file can be written with.
    pub fn validate(&self) -> Result<()> {
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return Err(StoreError::InvalidOption {
                name: "block size",
                reason: format!("{} is outside 1..={MAX_BLOCK_SIZE}", self.block_size),
            });
        }
        if self.bloom != BloomType::None && !(1..=64).contains(&self.bloom_bits_per_key) {
            return Err(StoreError::InvalidOption {
                name: "bloom bits per key",
                reason: format!("{} is outside 1..=64", self.bloom_bits_per_key),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_codes_are_stable() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            assert_eq!(c.name().to_lowercase().parse::<Compression>().expect("parse"), c);
            assert_eq!(Compression::from_code(c.code()), Some(c));
        }
        for b in [BloomType::None, BloomType::Row, BloomType::RowCol] {
            assert_eq!(b.name().parse::<BloomType>().expect("parse"), b);
            assert_eq!(BloomType::from_code(b.code()), Some(b));
        }
        assert!("snappy".parse::<Compression>().is_err());
        assert_eq!(Compression::from_code(9), None);
    }

    #[test]
    fn validation_rejects_unusable_options() {
        assert!(StoreFileOptions::default().validate().is_ok());
        assert!(StoreFileOptions { block_size: 0, ..Default::default() }.validate().is_err());
        assert!(StoreFileOptions { bloom_bits_per_key: 0, ..Default::default() }.validate().is_err());
        let no_bloom = StoreFileOptions { bloom: BloomType::None, bloom_bits_per_key: 0, ..Default::default() };
        assert!(no_bloom.validate().is_ok());
    }
}
