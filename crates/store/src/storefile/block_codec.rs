//! The on-disk envelope of every section of a store file (data blocks,
//! bloom filter, block index, metadata):
//!
//! ```text
//! kind u8 | compression u8 | uncompressed_len u32 | payload_len u32 | payload | crc32c u32
//! ```
//!
//! (integers big-endian). The checksum covers the header and the payload, so
//! a flipped bit anywhere in a block — including its lengths — is caught
//! before anything is decompressed or parsed. `kind` catches a block read at
//! the wrong place (an index pointing into the bloom, say).
//!
//! A block is stored compressed only when that saves at least an eighth of
//! its size (RocksDB's rule); otherwise it is stored raw and says so, so a
//! reader never needs the file's options.
//!
//! Thread safety: [`BlockEncoder`] keeps scratch space and a zstd context
//! and belongs to one writer; [`decode`] is a free function, safe from any
//! thread (zstd decompression contexts are kept per thread).

use std::cell::RefCell;
use std::io;
use std::path::Path;

use super::options::Compression;
use crate::error::{Result, StoreError};

pub(crate) const FRAME_HEADER_LEN: usize = 10;
pub(crate) const FRAME_OVERHEAD: usize = FRAME_HEADER_LEN + 4;
/// zstd's own default level, which is also HBase's.
const ZSTD_LEVEL: i32 = 3;
/// The most an LZ4 block can expand: a match's length is spelled in bytes
/// of at most 255 each, so no payload decompresses to more than 255 times
/// its size (plus the last literals' few bytes).
const LZ4_MAX_RATIO: usize = 255;
/// The most a zstd frame can expand: an RLE block of 128 KiB takes four
/// bytes.
const ZSTD_MAX_RATIO: usize = 32 << 10;
/// The largest uncompressed block any writer of ours makes: the 16 MiB
/// block-size limit plus one cell (HBase bounds a cell at 2 GiB; a block
/// this size is only ever corrupt here).
pub(crate) const MAX_UNCOMPRESSED_BLOCK: usize = 1 << 30;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Data,
    Bloom,
    Index,
    Meta,
}

impl BlockKind {
    fn code(self) -> u8 {
        match self {
            BlockKind::Data => b'D',
            BlockKind::Bloom => b'B',
            BlockKind::Index => b'I',
            BlockKind::Meta => b'M',
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::Bloom => "bloom",
            BlockKind::Index => "index",
            BlockKind::Meta => "meta",
        }
    }
}

/// Frames payloads into blocks, compressing them when it pays.
pub(crate) struct BlockEncoder {
    zstd: Option<zstd::bulk::Compressor<'static>>,
    scratch: Vec<u8>,
}

impl BlockEncoder {
    pub(crate) fn new() -> BlockEncoder {
        BlockEncoder { zstd: None, scratch: Vec::new() }
    }

    /// Replaces `out` with the framed block of `payload`. Returns the
    /// compression actually used.
    pub(crate) fn encode(
        &mut self,
        kind: BlockKind,
        compression: Compression,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<Compression> {
        let uncompressed_len = u32::try_from(payload.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("a block of {} bytes is too large", payload.len()))
        })?;
        let used = match compression {
            Compression::None => Compression::None,
            Compression::Lz4 => {
                self.scratch.resize(lz4_flex::block::get_maximum_output_size(payload.len()), 0);
                let n = lz4_flex::block::compress_into(payload, &mut self.scratch)
                    .map_err(|e| io::Error::other(format!("lz4 compression failed: {e}")))?;
                self.scratch.truncate(n);
                Compression::Lz4
            }
            Compression::Zstd => {
                let zstd = match &mut self.zstd {
                    Some(z) => z,
                    none => none.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
                };
                self.scratch.clear();
                self.scratch.reserve(zstd::zstd_safe::compress_bound(payload.len()));
                zstd.compress_to_buffer(payload, &mut self.scratch)?;
                Compression::Zstd
            }
        };
        let worth_it = used != Compression::None && self.scratch.len() <= payload.len() - payload.len() / 8;
        let (used, body) = if worth_it { (used, &self.scratch[..]) } else { (Compression::None, payload) };
        out.clear();
        out.reserve(FRAME_OVERHEAD + body.len());
        out.push(kind.code());
        out.push(used.code());
        out.extend_from_slice(&uncompressed_len.to_be_bytes());
        // `body` is never larger than `payload` here, so it fits in a u32.
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        let crc = crc32c::crc32c(out);
        out.extend_from_slice(&crc.to_be_bytes());
        Ok(used)
    }
}

thread_local! {
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Checks and unpacks the block `frame` read from `path` at `offset`.
/// Any damage — a short frame, a checksum mismatch, the wrong kind, lengths
/// that disagree, a payload that does not decompress to the stated size —
/// is a [`StoreError::Corruption`] naming the file and offset.
pub(crate) fn decode(path: &Path, offset: u64, kind: BlockKind, frame: &[u8]) -> Result<Vec<u8>> {
    match unpack(path, offset, kind, frame)? {
        Unpacked::Raw(range) => Ok(frame[range].to_vec()),
        Unpacked::Decompressed(data) => Ok(data),
    }
}

/// As [`decode`], taking the frame: a raw payload stays where it was read
/// and its range in the returned buffer is given, so a data block read from
/// disk is not copied once more (a read of a 64 KiB block copied it twice).
pub(crate) fn decode_owned(
    path: &Path,
    offset: u64,
    kind: BlockKind,
    frame: Vec<u8>,
) -> Result<(Vec<u8>, std::ops::Range<usize>)> {
    match unpack(path, offset, kind, &frame)? {
        Unpacked::Raw(range) => Ok((frame, range)),
        Unpacked::Decompressed(data) => {
            let len = data.len();
            Ok((data, 0..len))
        }
    }
}

/// A checked frame: where its raw payload lies, or the decompressed one.
enum Unpacked {
    Raw(std::ops::Range<usize>),
    Decompressed(Vec<u8>),
}

fn unpack(path: &Path, offset: u64, kind: BlockKind, frame: &[u8]) -> Result<Unpacked> {
    let bad = |reason: String| StoreError::corruption(path, offset, format!("{} block: {reason}", kind.name()));
    if frame.len() < FRAME_OVERHEAD {
        return Err(bad(format!("{} bytes is shorter than a block header and checksum", frame.len())));
    }
    let (body, crc_bytes) = frame.split_at(frame.len() - 4);
    let stored = u32::from_be_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(bad(format!("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")));
    }
    if body[0] != kind.code() {
        return Err(bad(format!("block type byte {:#04x} is not {:#04x}", body[0], kind.code())));
    }
    let compression =
        Compression::from_code(body[1]).ok_or_else(|| bad(format!("unknown compression code {}", body[1])))?;
    let uncompressed_len = u32::from_be_bytes([body[2], body[3], body[4], body[5]]) as usize;
    let payload_len = u32::from_be_bytes([body[6], body[7], body[8], body[9]]) as usize;
    let payload = &body[FRAME_HEADER_LEN..];
    if payload_len != payload.len() {
        return Err(bad(format!("header says {payload_len} payload bytes, the block has {}", payload.len())));
    }
    // A declared length that no payload of this size can decompress to is
    // damage: refused before anything is allocated for it, so a corrupt (or
    // hostile) file cannot make a reader allocate more than the most its
    // bytes could expand to (255x for LZ4, 32768x for zstd), nor over 1 GiB.
    let most = match compression {
        Compression::None => payload_len,
        Compression::Lz4 => payload_len.saturating_mul(LZ4_MAX_RATIO).saturating_add(16),
        Compression::Zstd => payload_len.saturating_mul(ZSTD_MAX_RATIO),
    };
    if uncompressed_len > most.min(MAX_UNCOMPRESSED_BLOCK) {
        return Err(bad(format!(
            "claims {uncompressed_len} uncompressed bytes, more than a {payload_len}-byte {} payload can hold",
            compression.name()
        )));
    }
    let data = match compression {
        Compression::None => {
            if uncompressed_len != payload_len {
                return Err(bad(format!("raw block of {payload_len} bytes claims {uncompressed_len} uncompressed")));
            }
            return Ok(Unpacked::Raw(FRAME_HEADER_LEN..FRAME_HEADER_LEN + payload_len));
        }
        Compression::Lz4 => {
            let mut out = vec![0; uncompressed_len];
            let n = lz4_flex::block::decompress_into(payload, &mut out)
                .map_err(|e| bad(format!("lz4 decompression failed: {e}")))?;
            if n != uncompressed_len {
                return Err(bad(format!("lz4 payload decompressed to {n} bytes, expected {uncompressed_len}")));
            }
            out
        }
        Compression::Zstd => {
            let mut out = Vec::with_capacity(uncompressed_len);
            ZSTD_DECOMPRESSOR
                .with(|cell| -> io::Result<usize> {
                    let mut slot = cell.borrow_mut();
                    let d = match &mut *slot {
                        Some(d) => d,
                        none => none.insert(zstd::bulk::Decompressor::new()?),
                    };
                    d.decompress_to_buffer(payload, &mut out)
                })
                .map_err(|e| bad(format!("zstd decompression failed: {e}")))?;
            if out.len() != uncompressed_len {
                return Err(bad(format!(
                    "zstd payload decompressed to {} bytes, expected {uncompressed_len}",
                    out.len()
                )));
            }
            out
        }
    };
    Ok(Unpacked::Decompressed(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn payload() -> Vec<u8> {
        (0..10_000u32).flat_map(|i| format!("row-{:06}/value", i % 777).into_bytes()).collect()
    }

    /// The owned decode gives the same payload; a raw one stays in the
    /// frame's own buffer (no copy), a compressed one fills a new buffer.
    #[test]
    fn owned_decode_keeps_a_raw_payload_in_its_frame() {
        let p = payload();
        let mut enc = BlockEncoder::new();
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let mut frame = Vec::new();
            enc.encode(BlockKind::Data, c, &p, &mut frame).expect("encode");
            let frame_ptr = frame.as_ptr();
            let (buffer, range) = decode_owned(Path::new("f"), 0, BlockKind::Data, frame).expect("decode");
            assert_eq!(&buffer[range.clone()], &p[..], "{c}");
            assert_eq!(buffer.as_ptr() == frame_ptr, c == Compression::None, "{c}: raw payloads are not copied");
            if c == Compression::None {
                assert_eq!(range, FRAME_HEADER_LEN..FRAME_HEADER_LEN + p.len());
            }
        }
        let mut frame = Vec::new();
        enc.encode(BlockKind::Data, Compression::None, &p, &mut frame).expect("encode");
        let last = frame.len() - 1;
        frame[last] ^= 1;
        assert!(decode_owned(Path::new("f"), 0, BlockKind::Data, frame).is_err(), "the checksum is still checked");
    }

    #[test]
    fn every_compression_round_trips_and_compressible_data_shrinks() {
        let p = payload();
        let mut enc = BlockEncoder::new();
        let mut out = Vec::new();
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let used = enc.encode(BlockKind::Data, c, &p, &mut out).expect("encode");
            assert_eq!(used, c);
            if c != Compression::None {
                assert!(out.len() < p.len() / 2, "{c}: {} of {}", out.len(), p.len());
            }
            assert_eq!(decode(Path::new("f"), 0, BlockKind::Data, &out).expect("decode"), p);
        }
    }

    #[test]
    fn incompressible_blocks_are_stored_raw() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let p: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut out = Vec::new();
        let used = BlockEncoder::new().encode(BlockKind::Data, Compression::Zstd, &p, &mut out).expect("encode");
        assert_eq!(used, Compression::None);
        assert_eq!(decode(Path::new("f"), 0, BlockKind::Data, &out).expect("decode"), p);
    }

    #[test]
    fn damage_is_corruption_naming_file_and_offset() {
        let p = payload();
        let mut enc = BlockEncoder::new();
        let mut out = Vec::new();
        enc.encode(BlockKind::Index, Compression::Lz4, &p, &mut out).expect("encode");
        let path = PathBuf::from("/x/file-7");
        let err = decode(&path, 123, BlockKind::Data, &out).expect_err("wrong kind");
        assert!(matches!(err, StoreError::Corruption { offset: 123, .. }), "{err}");
        for i in [0, 1, 5, 9, 10, out.len() / 2, out.len() - 1] {
            let mut m = out.clone();
            m[i] ^= 0x40;
            let err = decode(&path, 123, BlockKind::Index, &m).expect_err("flipped");
            assert!(err.to_string().contains("/x/file-7"), "{err}");
        }
        assert!(decode(&path, 0, BlockKind::Index, &out[..7]).is_err());
    }

    #[test]
    fn impossible_uncompressed_lengths_are_refused_before_any_allocation() {
        for (code, len) in [(1u8, u32::MAX), (1, 255 * 100 + 17), (2, u32::MAX), (2, (32 << 10) * 100 + 1)] {
            let mut f = vec![b'D', code];
            f.extend_from_slice(&len.to_be_bytes());
            f.extend_from_slice(&100u32.to_be_bytes());
            f.extend(0..100u8);
            let crc = crc32c::crc32c(&f);
            f.extend_from_slice(&crc.to_be_bytes());
            let err = decode(Path::new("f"), 7, BlockKind::Data, &f).expect_err("impossible length");
            assert!(matches!(&err, StoreError::Corruption { offset: 7, .. }), "{err}");
            assert!(err.to_string().contains("more than a 100-byte"), "{err}");
        }
    }

    #[test]
    fn bad_compressed_payloads_with_valid_checksums_fail_cleanly() {
        // Craft frames whose checksum is right but whose payload is garbage:
        // decompression must fail with an error, not a panic or a huge allocation.
        for code in [1u8, 2] {
            for len in [0usize, 1, 7, 100] {
                let mut f = vec![b'D', code];
                f.extend_from_slice(&1000u32.to_be_bytes());
                f.extend_from_slice(&(len as u32).to_be_bytes());
                f.extend((0..len).map(|i| (i * 37) as u8));
                let crc = crc32c::crc32c(&f);
                f.extend_from_slice(&crc.to_be_bytes());
                assert!(decode(Path::new("f"), 0, BlockKind::Data, &f).is_err());
            }
        }
    }
}
