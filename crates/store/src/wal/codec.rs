//! The cells of a WAL entry as written by format version 2: grouped by row
//! and family, so a row key and a family are written once per group rather
//! than once per cell, and no cell repeats the entry's sequence id (every
//! cell of an entry has it). This is the idea of HBase's `WALEdit` with its
//! cell codec (tags off): the WAL carries what recovery needs and no more.
//!
//! ```text
//! cells := group*
//! group := row_len varint | row | family_len u8 | family | count varint (>= 1) | cell{count}
//! cell  := qualifier_len varint | qualifier | timestamp u64 | type u8 | value_len varint | value
//! ```
//!
//! Varints are LEB128 (7 bits a byte, low first, at most 10 bytes); the
//! timestamp is big-endian. Version 1 files carried the memstore's cell
//! encoding instead (`record.rs`); both are read.
//!
//! [`decode`] checks every length against the bytes left and the limits of
//! the memstore's encoding before anything is sliced, so a malformed entry
//! (whose record checksum nevertheless matched) is an error naming the
//! byte offset, never a panic. It produces the memstore encoding, stamped
//! with the entry's sequence id, which is what replay inserts.
//!
//! Thread safety: pure functions.

use memstore::cell::bytes_equal;
use memstore::{CellInput, CellType};

/// Largest row and family the memstore's encoding can hold.
const MAX_ROW_LEN: usize = u16::MAX as usize;
const MAX_FAMILY_LEN: usize = u8::MAX as usize;

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(dst: &mut [u8], at: &mut usize, mut v: u64) {
    while v >= 0x80 {
        dst[*at] = (v as u8) | 0x80;
        v >>= 7;
        *at += 1;
    }
    dst[*at] = v as u8;
    *at += 1;
}

fn put(dst: &mut [u8], at: &mut usize, bytes: &[u8]) {
    dst[*at..*at + bytes.len()].copy_from_slice(bytes);
    *at += bytes.len();
}

/// The groups of `cells`: maximal runs of one row and family.
fn groups<'c, 'a>(cells: &'c [CellInput<'a>]) -> impl Iterator<Item = &'c [CellInput<'a>]> {
    let mut rest = cells;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let n =
            rest.iter().take_while(|c| bytes_equal(c.row, first.row) && bytes_equal(c.family, first.family)).count();
        let (group, tail) = rest.split_at(n);
        rest = tail;
        Some(group)
    })
}

fn cell_len(c: &CellInput<'_>) -> usize {
    varint_len(c.qualifier.len() as u64) + c.qualifier.len() + 8 + 1 + varint_len(c.value.len() as u64) + c.value.len()
}

/// Bytes [`encode`] writes for `cells` (validated cells: rows and families
/// within the memstore's limits).
pub fn encoded_len(cells: &[CellInput<'_>]) -> usize {
    groups(cells)
        .map(|g| {
            let first = &g[0];
            varint_len(first.row.len() as u64)
                + first.row.len()
                + 1
                + first.family.len()
                + varint_len(g.len() as u64)
                + g.iter().map(cell_len).sum::<usize>()
        })
        .sum()
}

/// Writes `cells` into `dst`, which is exactly [`encoded_len`] bytes.
pub fn encode(cells: &[CellInput<'_>], dst: &mut [u8]) {
    let mut at = 0;
    for g in groups(cells) {
        let first = &g[0];
        put_varint(dst, &mut at, first.row.len() as u64);
        put(dst, &mut at, first.row);
        dst[at] = first.family.len() as u8;
        at += 1;
        put(dst, &mut at, first.family);
        put_varint(dst, &mut at, g.len() as u64);
        for c in g {
            put_varint(dst, &mut at, c.qualifier.len() as u64);
            put(dst, &mut at, c.qualifier);
            put(dst, &mut at, &c.timestamp.to_be_bytes());
            dst[at] = c.cell_type as u8;
            at += 1;
            put_varint(dst, &mut at, c.value.len() as u64);
            put(dst, &mut at, c.value);
        }
    }
    debug_assert_eq!(at, dst.len(), "encoded_len and encode disagree");
}

/// Reads `bytes` front to back, refusing to go past the end.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

type DecodeError = (usize, String);

impl<'a> Input<'a> {
    fn varint(&mut self, what: &str) -> Result<u64, DecodeError> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err((start, format!("{what} runs past the end of the entry")));
            };
            self.at += 1;
            if shift == 63 && b > 1 {
                return Err((start, format!("{what} overflows 64 bits")));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err((start, format!("{what} is longer than 10 bytes")))
    }

    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], DecodeError> {
        let left = self.bytes.len() - self.at;
        if len > left as u64 {
            return Err((self.at, format!("{what} of {len} bytes overruns the {left} bytes left")));
        }
        let s = &self.bytes[self.at..self.at + len as usize];
        self.at += len as usize;
        Ok(s)
    }

    fn byte(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
}

/// Calls `f` with every cell of a version-2 entry, in order; the first
/// malformed byte stops it with its offset and the reason.
pub fn for_each_cell<'a>(
    bytes: &'a [u8],
    mut f: impl FnMut(CellInput<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut input = Input { bytes, at: 0 };
    while input.at < bytes.len() {
        let row_len = input.varint("row length")?;
        let at = input.at;
        if row_len == 0 || row_len > MAX_ROW_LEN as u64 {
            return Err((at, format!("row length {row_len} is outside 1..={MAX_ROW_LEN}")));
        }
        let row = input.take(row_len, "row")?;
        let family_len = input.byte("family length")? as u64;
        if family_len == 0 {
            return Err((input.at - 1, "empty family".into()));
        }
        let family = input.take(family_len.min(MAX_FAMILY_LEN as u64), "family")?;
        let count_at = input.at;
        let count = input.varint("cell count")?;
        if count == 0 {
            return Err((count_at, "a group holds at least one cell".into()));
        }
        for _ in 0..count {
            let q_len = input.varint("qualifier length")?;
            let qualifier = input.take(q_len, "qualifier")?;
            let ts = input.take(8, "timestamp")?;
            let timestamp = u64::from_be_bytes(ts.try_into().expect("8 bytes"));
            let type_at = input.at;
            let code = input.byte("cell type")?;
            let cell_type =
                CellType::from_code(code).ok_or_else(|| (type_at, format!("unknown cell type code {code}")))?;
            let v_len = input.varint("value length")?;
            let value = input.take(v_len, "value")?;
            let key_len = 2 + row.len() + 1 + family.len() + qualifier.len() + 8 + 1;
            if key_len > u32::MAX as usize || value.len() > u32::MAX as usize {
                return Err((type_at, "a cell exceeds the memstore's 4 GiB key or value limit".into()));
            }
            f(CellInput { row, family, qualifier, timestamp, cell_type, value })?;
        }
    }
    Ok(())
}

/// Decodes a version-2 entry into the memstore's cell encoding, every cell
/// stamped with `seq` (what replay and `WalEntry::cells` work on).
pub fn decode(bytes: &[u8], seq: u64) -> Result<Vec<u8>, DecodeError> {
    let mut total = 0usize;
    for_each_cell(bytes, |c| {
        total += c.encoded_len();
        Ok(())
    })?;
    let mut out = vec![0u8; total];
    let mut at = 0;
    for_each_cell(bytes, |c| {
        let len = c.encoded_len();
        c.encode_into(seq, &mut out[at..at + len]);
        at += len;
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<CellInput<'static>> {
        vec![
            CellInput::put(b"row1", b"f", b"a", 7, b"v1"),
            CellInput::put(b"row1", b"f", b"b", 7, b""),
            CellInput { cell_type: CellType::DeleteColumn, ..CellInput::put(b"row1", b"g", b"c", 9, b"") },
            CellInput::put(b"row2", b"f", &[b'q'; 200], u64::MAX, &[b'v'; 300]),
        ]
    }

    #[test]
    fn round_trips_into_the_memstore_encoding() {
        let cells = sample();
        let mut buf = vec![0u8; encoded_len(&cells)];
        encode(&cells, &mut buf);
        let mut seen = Vec::new();
        for_each_cell(&buf, |c| {
            seen.push(c);
            Ok(())
        })
        .expect("valid");
        assert_eq!(seen, cells);
        let decoded = decode(&buf, 42).expect("valid");
        let mut expected = Vec::new();
        for c in &cells {
            let mut b = vec![0u8; c.encoded_len()];
            c.encode_into(42, &mut b);
            expected.extend(b);
        }
        assert_eq!(decoded, expected);
        let naive: usize = cells.iter().map(CellInput::encoded_len).sum();
        assert!(buf.len() < naive, "grouped {} bytes < per-cell {naive}", buf.len());
    }

    #[test]
    fn every_truncation_and_many_corruptions_are_errors_not_panics() {
        let cells = sample();
        let mut buf = vec![0u8; encoded_len(&cells)];
        encode(&cells, &mut buf);
        let full = decode(&buf, 1).expect("valid");
        for n in 0..buf.len() {
            // A cut at a group boundary is a shorter valid entry (the record
            // checksum is what catches that); anywhere else it is an error.
            assert_ne!(decode(&buf[..n], 1).ok().as_ref(), Some(&full), "truncated at {n}");
        }
        for i in 0..buf.len() {
            for b in [0u8, 0x7f, 0x80, 0xff] {
                let mut bad = buf.clone();
                bad[i] = b;
                let _ = decode(&bad, 1); // must not panic
            }
        }
        assert_eq!(decode(&[], 1), Ok(Vec::new()), "an entry without cells");
        assert!(decode(&[0xff; 12], 1).is_err(), "an overlong varint");
    }
}
