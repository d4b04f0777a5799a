//! The trailer: the fixed-size last bytes of a store file, read first, that
//! say where every other section is and prove the file is ours and whole.
//!
//! ```text
//! version u32 | data_end u64 | bloom_offset u64 | bloom_len u64 | index_offset u64 | index_len u64 |
//! meta_offset u64 | meta_len u64 | crc32c u32 (of the preceding 60 bytes) | magic "ACCSTF01"
//! ```
//!
//! (integers big-endian). The magic is last, like LevelDB's footer, so that a
//! file cut short anywhere loses it and fails to open rather than being
//! misread.
//!
//! Invariants checked by [`Trailer::parse`]: the sections tile the file —
//! data blocks `[0, data_end)`, then the bloom section (absent when
//! `bloom_len` = 0), the index, the metadata, and the trailer — with no gap
//! or overlap, so every later read is inside the file.

use std::path::Path;

use super::block_codec::FRAME_OVERHEAD;
use crate::error::{Result, StoreError};

pub(crate) const MAGIC: &[u8; 8] = b"ACCSTF01";
pub(crate) const FORMAT_VERSION: u32 = 1;
pub(crate) const TRAILER_LEN: usize = 4 + 7 * 8 + 4 + 8;
const CRC_OFFSET: usize = TRAILER_LEN - 12;

/// Where the sections of a file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trailer {
    pub(crate) version: u32,
    pub(crate) data_end: u64,
    pub(crate) bloom_offset: u64,
    pub(crate) bloom_len: u64,
    pub(crate) index_offset: u64,
    pub(crate) index_len: u64,
    pub(crate) meta_offset: u64,
    pub(crate) meta_len: u64,
}

impl Trailer {
    pub(crate) fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut out = [0u8; TRAILER_LEN];
        out[..4].copy_from_slice(&self.version.to_be_bytes());
        let fields = [
            self.data_end,
            self.bloom_offset,
            self.bloom_len,
            self.index_offset,
            self.index_len,
            self.meta_offset,
            self.meta_len,
        ];
        for (i, v) in fields.iter().enumerate() {
            out[4 + 8 * i..12 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        let crc = crc32c::crc32c(&out[..CRC_OFFSET]);
        out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        out[CRC_OFFSET + 4..].copy_from_slice(MAGIC);
        out
    }

    /// Parses the last [`TRAILER_LEN`] bytes of a `file_len`-byte file.
    pub(crate) fn parse(path: &Path, file_len: u64, b: &[u8]) -> Result<Trailer> {
        let at = file_len.saturating_sub(TRAILER_LEN as u64);
        let bad = |reason: String| StoreError::corruption(path, at, format!("trailer: {reason}"));
        if b.len() != TRAILER_LEN || file_len < TRAILER_LEN as u64 {
            return Err(StoreError::corruption(
                path,
                0,
                format!("a {file_len}-byte file is too short to be a store file (the trailer alone is {TRAILER_LEN})"),
            ));
        }
        if &b[CRC_OFFSET + 4..] != MAGIC {
            return Err(bad("no store file magic at the end: not a store file, or truncated".to_string()));
        }
        let stored = u32::from_be_bytes([b[CRC_OFFSET], b[CRC_OFFSET + 1], b[CRC_OFFSET + 2], b[CRC_OFFSET + 3]]);
        let computed = crc32c::crc32c(&b[..CRC_OFFSET]);
        if stored != computed {
            return Err(bad(format!("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")));
        }
        let u64_at = |i: usize| u64::from_be_bytes(b[4 + 8 * i..12 + 8 * i].try_into().unwrap_or([0xFF; 8]));
        let t = Trailer {
            version: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            data_end: u64_at(0),
            bloom_offset: u64_at(1),
            bloom_len: u64_at(2),
            index_offset: u64_at(3),
            index_len: u64_at(4),
            meta_offset: u64_at(5),
            meta_len: u64_at(6),
        };
        if t.version != FORMAT_VERSION {
            return Err(bad(format!("unsupported format version {} (this build reads {FORMAT_VERSION})", t.version)));
        }
        let min = FRAME_OVERHEAD as u64;
        let tiles = t.bloom_offset == t.data_end
            && Some(t.index_offset) == t.bloom_offset.checked_add(t.bloom_len)
            && Some(t.meta_offset) == t.index_offset.checked_add(t.index_len)
            && Some(at) == t.meta_offset.checked_add(t.meta_len);
        if !tiles || (t.bloom_len != 0 && t.bloom_len < min) || t.index_len < min || t.meta_len < min {
            return Err(bad(format!("sections do not tile a {file_len}-byte file: {t:?}")));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trailer {
        Trailer {
            version: FORMAT_VERSION,
            data_end: 1000,
            bloom_offset: 1000,
            bloom_len: 100,
            index_offset: 1100,
            index_len: 50,
            meta_offset: 1150,
            meta_len: 200,
        }
    }

    #[test]
    fn round_trip() {
        let t = sample();
        let len = 1350 + TRAILER_LEN as u64;
        assert_eq!(Trailer::parse(Path::new("f"), len, &t.encode()).expect("parse"), t);
    }

    #[test]
    fn every_flipped_byte_and_bad_geometry_is_corruption() {
        let enc = sample().encode();
        let len = 1350 + TRAILER_LEN as u64;
        for i in 0..TRAILER_LEN {
            let mut m = enc;
            m[i] ^= 0x01;
            let err = Trailer::parse(Path::new("/d/f9"), len, &m).expect_err("flipped");
            assert!(matches!(&err, StoreError::Corruption { .. }) && err.to_string().contains("/d/f9"), "{err}");
        }
        assert!(Trailer::parse(Path::new("f"), len + 1, &enc).is_err(), "a gap before the trailer");
        assert!(Trailer::parse(Path::new("f"), 10, &enc[..10]).is_err());
        let no_bloom = Trailer { bloom_len: 0, index_offset: 1000, index_len: 150, ..sample() };
        assert!(Trailer::parse(Path::new("f"), len, &no_bloom.encode()).is_ok());
    }
}
