//! `DataBlock`: one decoded (decompressed, checked) data block, the unit of
//! caching and of disk reads.
//!
//! Payload layout (what the block builder writes, before compression):
//!
//! ```text
//! cell 0 | cell 1 | … | cell n-1 | offset 0 u32 | … | offset n-1 u32 | n u32
//! ```
//!
//! Cells are whole `memstore` cell encodings in `compare_cells` order; the
//! offsets array makes a seek inside a block a binary search rather than a
//! walk.
//!
//! Invariants, established by `DataBlock::parse_within` and relied on by
//! every accessor: the payload `data[base..base + payload_len]` lies inside
//! the buffer (a raw block keeps the frame it was read in around it); n ≥ 1;
//! offsets start at 0 and strictly increase; each cell slice (from its
//! offset to the next, the last ending where the offsets begin) passes
//! `check_cell`. So `cell(i)` for `i < len()` never panics, whatever bytes
//! were on disk.
//!
//! Thread safety: immutable after `parse_within`; shared as `Arc<DataBlock>` by
//! the block cache and any number of scanners.

use std::cmp::Ordering;

use memstore::{CellKey, CellRef};

use super::cell_format::check_cell;

pub struct DataBlock {
    /// The payload is `data[base..base + payload_len]`: a raw block is kept in the
    /// frame it was read in (header and checksum around it), not copied out.
    data: Box<[u8]>,
    base: usize,
    payload_len: usize,
    count: usize,
    /// Where the cells end and the offsets array begins.
    cells_end: usize,
}

impl std::fmt::Debug for DataBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataBlock").field("bytes", &self.payload_len).field("cells", &self.count).finish()
    }
}

#[inline]
fn be_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl DataBlock {
    /// Checks a decompressed payload and wraps it. The error is the reason
    /// it is malformed (the caller adds the file and offset).
    #[cfg(test)]
    pub(crate) fn parse(data: Vec<u8>) -> Result<DataBlock, String> {
        let len = data.len();
        DataBlock::parse_within(data, 0..len)
    }

    /// Checks the decompressed payload at `range` of `buffer` (which must
    /// lie inside it) and wraps it, keeping the whole buffer. The error is
    /// the reason it is malformed (the caller adds the file and offset).
    pub(crate) fn parse_within(buffer: Vec<u8>, range: std::ops::Range<usize>) -> Result<DataBlock, String> {
        let base = range.start;
        let data = buffer.get(range).ok_or_else(|| "data block range outside its buffer".to_string())?;
        let len = data.len();
        if len < 4 {
            return Err(format!("data block of {len} bytes has no cell count"));
        }
        let count = be_u32(data, len - 4) as usize;
        if count == 0 {
            return Err("data block holds no cells".to_string());
        }
        let cells_end = count
            .checked_mul(4)
            .and_then(|n| (len - 4).checked_sub(n))
            .ok_or_else(|| format!("{count} cell offsets do not fit in a {len}-byte data block"))?;
        let mut prev_end = 0;
        for i in 0..count {
            let start = be_u32(data, cells_end + 4 * i) as usize;
            let end = if i + 1 < count { be_u32(data, cells_end + 4 * (i + 1)) as usize } else { cells_end };
            if start != prev_end || end <= start || end > cells_end {
                return Err(format!("cell {i} spans {start}..{end}, expected to start at {prev_end} (of {cells_end})"));
            }
            check_cell(&data[start..end]).map_err(|e| format!("cell {i} at block offset {start}: {e}"))?;
            prev_end = end;
        }
        Ok(DataBlock { data: buffer.into_boxed_slice(), base, payload_len: len, count, cells_end })
    }

    /// Number of cells (at least one).
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Always false: blocks are never empty. (For clippy's `len` rule.)
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        &self.data[self.base..self.base + self.payload_len]
    }

    #[inline]
    fn offset(&self, i: usize) -> usize {
        be_u32(self.payload(), self.cells_end + 4 * i) as usize
    }

    /// The `i`th cell; `i < len()`.
    #[inline]
    pub fn cell(&self, i: usize) -> CellRef<'_> {
        let start = self.offset(i);
        let end = if i + 1 < self.count { self.offset(i + 1) } else { self.cells_end };
        CellRef::new(&self.payload()[start..end])
    }

    /// The index of the first cell at or after `from` that is `>= key`
    /// (`len()` if none).
    pub fn lower_bound(&self, key: &CellKey<'_>, from: usize) -> usize {
        let (mut lo, mut hi) = (from.min(self.count), self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(mid).compare_key(key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes this block holds in memory (its frame's too, where it kept
    /// it), as charged to the block cache.
    pub fn charge(&self) -> usize {
        self.data.len() + std::mem::size_of::<DataBlock>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::block_builder::BlockBuilder;
    use super::*;
    use memstore::CellInput;

    fn block(rows: std::ops::Range<u32>) -> DataBlock {
        let mut b = BlockBuilder::new();
        for r in rows {
            let row = format!("r{r:04}");
            b.add(&CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v").to_encoded(1));
        }
        DataBlock::parse(b.finish().to_vec()).expect("parse")
    }

    #[test]
    fn cells_and_lower_bound() {
        let b = block(0..100);
        assert_eq!(b.len(), 100);
        assert_eq!(b.cell(42).row(), b"r0042");
        assert_eq!(b.lower_bound(&CellKey::first_on_row(b"r0042"), 0), 42);
        assert_eq!(b.lower_bound(&CellKey::first_on_row(b"r0042x"), 0), 43);
        assert_eq!(b.lower_bound(&CellKey::first_on_row(b"a"), 0), 0);
        assert_eq!(b.lower_bound(&CellKey::first_on_row(b"z"), 0), 100);
        assert_eq!(b.lower_bound(&CellKey::first_on_row(b"a"), 50), 50);
    }

    /// A payload inside a larger buffer (a raw block in its frame) reads
    /// as the same block; its bounds confine every cell, and a range outside
    /// the buffer is refused.
    #[test]
    fn a_payload_within_a_frame_reads_as_the_payload_alone() {
        let mut b = BlockBuilder::new();
        for r in 0..50u32 {
            b.add(&CellInput::put(format!("r{r:04}").as_bytes(), b"f", b"q", 1, b"v").to_encoded(1));
        }
        let payload = b.finish().to_vec();
        let mut framed = vec![0xAA; 10];
        framed.extend_from_slice(&payload);
        framed.extend_from_slice(&[0xBB; 4]);
        let range = 10..10 + payload.len();
        let within = DataBlock::parse_within(framed.clone(), range).expect("parse");
        let alone = DataBlock::parse(payload.clone()).expect("parse");
        assert_eq!(within.len(), alone.len());
        for i in 0..alone.len() {
            assert_eq!(within.cell(i).encoded(), alone.cell(i).encoded());
        }
        assert_eq!(within.lower_bound(&CellKey::first_on_row(b"r0031"), 0), 31);
        assert!(DataBlock::parse_within(framed.clone(), 10..framed.len() + 1).is_err());
        assert!(DataBlock::parse_within(framed, 0..payload.len()).is_err(), "the header is not a payload");
    }

    #[test]
    fn garbage_payloads_are_rejected_or_safe() {
        let good = {
            let mut b = BlockBuilder::new();
            for r in 0..5u32 {
                let row = format!("r{r}");
                b.add(&CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v").to_encoded(1));
            }
            b.finish().to_vec()
        };
        assert!(DataBlock::parse(Vec::new()).is_err());
        assert!(DataBlock::parse(vec![0, 0, 0, 0]).is_err());
        assert!(DataBlock::parse(vec![0xFF; 16]).is_err());
        for i in 0..good.len() {
            for v in [0u8, 1, 0x80, 0xFF] {
                let mut m = good.clone();
                m[i] = v;
                if let Ok(b) = DataBlock::parse(m) {
                    for j in 0..b.len() {
                        let c = b.cell(j);
                        let _ = (c.row(), c.family(), c.qualifier(), c.value(), c.seq());
                    }
                    let _ = b.lower_bound(&CellKey::first_on_row(b"r3"), 0);
                }
            }
        }
    }
}
