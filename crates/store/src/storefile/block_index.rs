//! The block index: the first key, offset and on-disk size of every data
//! block, and the file's last key, so that a reader finds the one block
//! that may hold a key by binary search, in memory, without I/O. Single
//! level: one entry per block (for 64 KiB blocks, about 1/1000 of the data).
//!
//! Keys are key-only cells (see `cell_format`). Section payload:
//!
//! ```text
//! count u32 | count × (offset u64 | size u32 | key_len u32 | key) | last_key_len u32 | last_key
//! ```
//!
//! Invariants, checked by `parse` against the trailer: blocks tile the data
//! region exactly (the first at offset 0, each starting where the previous
//! ends, the last ending at `data_end`), so a block read through the index
//! is always inside the file; first keys strictly increase; the last key is
//! not before the last block's first key; an empty file has no blocks and
//! no last key.
//!
//! Thread safety: immutable once parsed; shared by all readers of the file.

use std::cmp::Ordering;

use memstore::CellKey;
use memstore::CellRef;
use memstore::cell::compare_cells;

use super::block_codec::FRAME_OVERHEAD;
use super::cell_format::check_cell;

/// Accumulates index entries while a file is written.
pub(crate) struct IndexBuilder {
    buf: Vec<u8>,
    count: u32,
}

impl IndexBuilder {
    pub(crate) fn new() -> IndexBuilder {
        IndexBuilder { buf: 0u32.to_be_bytes().to_vec(), count: 0 }
    }

    pub(crate) fn add(&mut self, offset: u64, size: u32, first_key: &[u8]) {
        self.buf.extend_from_slice(&offset.to_be_bytes());
        self.buf.extend_from_slice(&size.to_be_bytes());
        self.buf.extend_from_slice(&(first_key.len() as u32).to_be_bytes());
        self.buf.extend_from_slice(first_key);
        self.count += 1;
    }

    /// The section payload.
    pub(crate) fn finish(mut self, last_key: &[u8]) -> Vec<u8> {
        self.buf[..4].copy_from_slice(&self.count.to_be_bytes());
        self.buf.extend_from_slice(&(last_key.len() as u32).to_be_bytes());
        self.buf.extend_from_slice(last_key);
        self.buf
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: u64,
    size: u32,
    key_start: usize,
    key_end: usize,
}

/// A loaded block index.
pub struct BlockIndex {
    payload: Box<[u8]>,
    entries: Vec<Entry>,
    last_key: Option<(usize, usize)>,
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| {
            format!("index section ends at byte {} but an entry needs {n} bytes at {}", self.b.len(), self.pos)
        })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let s = self.take(8)?;
        Ok(u64::from_be_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
    }
}

impl BlockIndex {
    /// Checks and wraps a section payload for a file whose data blocks end
    /// at `data_end`; the error is why it is malformed.
    pub(crate) fn parse(payload: Vec<u8>, data_end: u64) -> Result<BlockIndex, String> {
        let mut c = Cursor { b: &payload, pos: 0 };
        let count = c.u32()? as usize;
        // Each entry takes at least 16 bytes: don't trust `count` to size
        // an allocation before the bytes are there.
        if count > payload.len() / 16 {
            return Err(format!("index claims {count} blocks in {} bytes", payload.len()));
        }
        let mut entries = Vec::with_capacity(count);
        let mut next_offset = 0u64;
        for i in 0..count {
            let offset = c.u64()?;
            let size = c.u32()?;
            let key_len = c.u32()? as usize;
            let key_start = c.pos;
            let key = c.take(key_len)?;
            if offset != next_offset {
                return Err(format!("block {i} starts at {offset}, expected {next_offset}"));
            }
            if (size as usize) < FRAME_OVERHEAD {
                return Err(format!("block {i} at {offset} is only {size} bytes"));
            }
            next_offset = offset + u64::from(size);
            check_cell(key).map_err(|e| format!("first key of block {i}: {e}"))?;
            if let Some(prev) = entries.last() {
                let prev: &Entry = prev;
                let prev_key = CellRef::new(&payload[prev.key_start..prev.key_end]);
                if compare_cells(&prev_key, &CellRef::new(key)) != Ordering::Less {
                    return Err(format!("first key of block {i} is not after that of block {}", i - 1));
                }
            }
            entries.push(Entry { offset, size, key_start, key_end: key_start + key_len });
        }
        if next_offset != data_end {
            return Err(format!("data blocks end at {next_offset}, the trailer says {data_end}"));
        }
        let last_len = c.u32()? as usize;
        let last_start = c.pos;
        let last = c.take(last_len)?;
        if c.pos != payload.len() {
            return Err(format!("{} stray bytes after the index", payload.len() - c.pos));
        }
        let last_key = match (entries.last(), last_len) {
            (None, 0) => None,
            (None, _) => return Err("an index without blocks has a last key".to_string()),
            (Some(_), 0) => return Err("the index has no last key".to_string()),
            (Some(e), _) => {
                check_cell(last).map_err(|e| format!("last key: {e}"))?;
                let first = CellRef::new(&payload[e.key_start..e.key_end]);
                if compare_cells(&CellRef::new(last), &first) == Ordering::Less {
                    return Err("the last key is before the last block's first key".to_string());
                }
                Some((last_start, last_start + last_len))
            }
        };
        Ok(BlockIndex { payload: payload.into_boxed_slice(), entries, last_key })
    }

    /// Number of data blocks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(offset, on-disk size)` of block `i < len()`.
    pub fn block(&self, i: usize) -> (u64, u32) {
        let e = &self.entries[i];
        (e.offset, e.size)
    }

    /// The first key of block `i < len()` (a key-only cell).
    pub fn first_key(&self, i: usize) -> CellRef<'_> {
        let e = &self.entries[i];
        CellRef::new(&self.payload[e.key_start..e.key_end])
    }

    /// The last key of the file (a key-only cell), if it has cells.
    pub fn last_key(&self) -> Option<CellRef<'_>> {
        self.last_key.map(|(s, e)| CellRef::new(&self.payload[s..e]))
    }

    /// How many blocks start with a key `< key`. The first cell `>= key` is
    /// in block `n - 1` or is the first cell of block `n`.
    pub fn blocks_before(&self, key: &CellKey<'_>) -> usize {
        self.entries
            .partition_point(|e| CellRef::new(&self.payload[e.key_start..e.key_end]).compare_key(key) == Ordering::Less)
    }

    /// Memory held by the index.
    pub fn size_bytes(&self) -> usize {
        self.payload.len() + self.entries.len() * std::mem::size_of::<Entry>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::cell_format::push_key_only;
    use super::*;
    use memstore::CellInput;

    fn key(row: &str) -> Vec<u8> {
        let cell = CellInput::put(row.as_bytes(), b"f", b"q", 1, b"value").to_encoded(1);
        let mut k = Vec::new();
        push_key_only(&CellRef::new(&cell), &mut k);
        k
    }

    #[test]
    fn round_trip_and_search() {
        let mut b = IndexBuilder::new();
        b.add(0, 100, &key("b"));
        b.add(100, 50, &key("d"));
        b.add(150, 70, &key("f"));
        let idx = BlockIndex::parse(b.finish(&key("g")), 220).expect("parse");
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.block(1), (100, 50));
        assert_eq!(idx.first_key(2).row(), b"f");
        assert_eq!(idx.last_key().expect("last").row(), b"g");
        assert_eq!(idx.blocks_before(&CellKey::first_on_row(b"a")), 0);
        assert_eq!(idx.blocks_before(&CellKey::first_on_row(b"b")), 0);
        assert_eq!(idx.blocks_before(&CellKey::first_on_row(b"c")), 1);
        assert_eq!(idx.blocks_before(&CellKey::first_on_row(b"z")), 3);
    }

    #[test]
    fn inconsistent_indexes_are_rejected() {
        let empty = IndexBuilder::new().finish(&[]);
        assert!(BlockIndex::parse(empty.clone(), 0).expect("empty").is_empty());
        assert!(BlockIndex::parse(empty, 10).is_err());
        let mut gap = IndexBuilder::new();
        gap.add(0, 100, &key("b"));
        gap.add(101, 50, &key("d"));
        assert!(BlockIndex::parse(gap.finish(&key("d")), 151).is_err());
        let mut unsorted = IndexBuilder::new();
        unsorted.add(0, 100, &key("d"));
        unsorted.add(100, 50, &key("b"));
        assert!(BlockIndex::parse(unsorted.finish(&key("d")), 150).is_err());
        let mut huge = 0xFFFF_FFFFu32.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0; 12]);
        assert!(BlockIndex::parse(huge, 0).is_err());
    }
}
