//! Cells in HBase's data model, their byte encoding inside chunks, and their
//! total order.
//!
//! A cell is `(row, family, qualifier, timestamp, type, value)` plus an MVCC
//! sequence id. Cells are copied once, into chunks, in this layout (all
//! integers big-endian, HBase's KeyValue layout with the sequence id stored
//! after the key so that an index entry needs nothing but a locator):
//!
//! ```text
//! key_len u32 | value_len u32 | row_len u16 | row | family_len u8 | family |
//! qualifier | timestamp u64 | type u8 | seq u64 | value
//! ```
//!
//! `key_len` covers `row_len ..= type`. Order: row ↑, family ↑, qualifier ↑,
//! timestamp ↓, type ↓ (deletes before puts at equal timestamp), seq ↓.
//!
//! Thread safety: encoded cells are immutable once published; [`CellRef`] is
//! a plain borrowed slice and may be shared freely.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::error::MemStoreError;

/// Largest row key, as in HBase (`Short.MAX_VALUE`).
pub const MAX_ROW_LEN: usize = i16::MAX as usize;
/// Largest family name, as in HBase (`Byte.MAX_VALUE`).
pub const MAX_FAMILY_LEN: usize = i8::MAX as usize;

const HEADER_LEN: usize = 8;
const KEY_FIXED_LEN: usize = 2 + 1 + 8 + 1;
const SEQ_LEN: usize = 8;

/// The kind of a cell; the discriminants are HBase's `KeyValue.Type` codes, so
/// that sorting by code descending puts delete markers before puts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CellType {
    /// A value.
    Put = 4,
    /// Deletes the one version of a column at exactly this timestamp.
    Delete = 8,
    /// Deletes every column of the family at exactly this timestamp.
    DeleteFamilyVersion = 10,
    /// Deletes every version of a column at or below this timestamp.
    DeleteColumn = 12,
    /// Deletes every column of the family at or below this timestamp.
    DeleteFamily = 14,
}

impl CellType {
    /// Decodes a type byte; `None` for codes HBase does not store.
    pub fn from_code(code: u8) -> Option<CellType> {
        match code {
            4 => Some(CellType::Put),
            8 => Some(CellType::Delete),
            10 => Some(CellType::DeleteFamilyVersion),
            12 => Some(CellType::DeleteColumn),
            14 => Some(CellType::DeleteFamily),
            _ => None,
        }
    }

    /// Whether this is one of the four delete markers.
    pub fn is_delete(self) -> bool {
        self != CellType::Put
    }

    /// Whether the marker applies to the whole family rather than a column.
    pub fn is_family_delete(self) -> bool {
        matches!(self, CellType::DeleteFamily | CellType::DeleteFamilyVersion)
    }
}

/// A cell to be written, borrowed from the caller (no allocation on the put
/// path). The sequence id is supplied per row mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellInput<'a> {
    pub row: &'a [u8],
    pub family: &'a [u8],
    pub qualifier: &'a [u8],
    pub timestamp: u64,
    pub cell_type: CellType,
    pub value: &'a [u8],
}

impl<'a> CellInput<'a> {
    /// A put of `value` into `family:qualifier` of `row` at `timestamp`.
    pub fn put(row: &'a [u8], family: &'a [u8], qualifier: &'a [u8], timestamp: u64, value: &'a [u8]) -> Self {
        CellInput { row, family, qualifier, timestamp, cell_type: CellType::Put, value }
    }

    /// A delete marker of the given type (value empty).
    pub fn delete(row: &'a [u8], family: &'a [u8], qualifier: &'a [u8], timestamp: u64, cell_type: CellType) -> Self {
        CellInput { row, family, qualifier, timestamp, cell_type, value: &[] }
    }

    /// Bytes this cell occupies once encoded into a chunk.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.key_len() + SEQ_LEN + self.value.len()
    }

    fn key_len(&self) -> usize {
        KEY_FIXED_LEN + self.row.len() + self.family.len() + self.qualifier.len()
    }

    /// Checks the limits of the encoding and of HBase's model.
    pub fn validate(&self, max_cell_size: usize) -> Result<(), MemStoreError> {
        if self.row.is_empty() {
            return Err(MemStoreError::EmptyRow);
        }
        if self.row.len() > MAX_ROW_LEN {
            return Err(MemStoreError::RowTooLong { len: self.row.len(), max: MAX_ROW_LEN });
        }
        if self.family.is_empty() {
            return Err(MemStoreError::EmptyFamily);
        }
        if self.family.len() > MAX_FAMILY_LEN {
            return Err(MemStoreError::FamilyTooLong { len: self.family.len(), max: MAX_FAMILY_LEN });
        }
        if self.cell_type.is_family_delete() && !self.qualifier.is_empty() {
            return Err(MemStoreError::FamilyDeleteWithQualifier);
        }
        if self.cell_type.is_delete() && !self.value.is_empty() {
            return Err(MemStoreError::DeleteWithValue);
        }
        let len = self.encoded_len();
        if len > max_cell_size || len > u32::MAX as usize {
            return Err(MemStoreError::CellTooLarge { len, max: max_cell_size });
        }
        Ok(())
    }

    /// Writes the encoded cell into `dst`, which must be exactly
    /// [`encoded_len`](Self::encoded_len) bytes.
    pub fn encode_into(&self, seq: u64, dst: &mut [u8]) {
        debug_assert_eq!(dst.len(), self.encoded_len());
        let mut w = Writer { buf: dst, pos: 0 };
        w.put(&(self.key_len() as u32).to_be_bytes());
        w.put(&(self.value.len() as u32).to_be_bytes());
        w.put(&(self.row.len() as u16).to_be_bytes());
        w.put(self.row);
        w.put(&[self.family.len() as u8]);
        w.put(self.family);
        w.put(self.qualifier);
        w.put(&self.timestamp.to_be_bytes());
        w.put(&[self.cell_type as u8]);
        w.put(&seq.to_be_bytes());
        w.put(self.value);
    }

    /// Encodes into a fresh vector (tests, tools; not the put path).
    pub fn to_encoded(&self, seq: u64) -> Vec<u8> {
        let mut v = vec![0; self.encoded_len()];
        self.encode_into(seq, &mut v);
        v
    }
}

struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
}

/// A view of one encoded cell.
#[derive(Clone, Copy)]
pub struct CellRef<'a> {
    bytes: &'a [u8],
}

impl<'a> CellRef<'a> {
    /// Wraps an encoded cell. The slice must hold exactly one cell written by
    /// [`CellInput::encode_into`]; lengths inside it are trusted.
    pub fn new(bytes: &'a [u8]) -> Self {
        CellRef { bytes }
    }

    /// Reads the cell starting at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point at a cell encoded by [`CellInput::encode_into`] that
    /// stays alive and unmodified for `'a`.
    #[inline]
    pub unsafe fn from_ptr(ptr: *const u8) -> CellRef<'a> {
        // SAFETY: the caller guarantees a complete encoded cell at `ptr`; its
        // header gives its length.
        unsafe {
            let header = std::slice::from_raw_parts(ptr, HEADER_LEN);
            let key_len = be_u32(header, 0) as usize;
            let value_len = be_u32(header, 4) as usize;
            CellRef { bytes: std::slice::from_raw_parts(ptr, HEADER_LEN + key_len + SEQ_LEN + value_len) }
        }
    }

    /// The whole encoding.
    #[inline]
    pub fn encoded(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    fn key_len(&self) -> usize {
        be_u32(self.bytes, 0) as usize
    }

    #[inline]
    fn row_len(&self) -> usize {
        u16::from_be_bytes([self.bytes[8], self.bytes[9]]) as usize
    }

    #[inline]
    pub fn row(&self) -> &'a [u8] {
        &self.bytes[10..10 + self.row_len()]
    }

    #[inline]
    fn family_offset(&self) -> usize {
        10 + self.row_len()
    }

    #[inline]
    pub fn family(&self) -> &'a [u8] {
        let off = self.family_offset();
        let len = self.bytes[off] as usize;
        &self.bytes[off + 1..off + 1 + len]
    }

    #[inline]
    pub fn qualifier(&self) -> &'a [u8] {
        let off = self.family_offset();
        let start = off + 1 + self.bytes[off] as usize;
        let end = HEADER_LEN + self.key_len() - 9;
        &self.bytes[start..end]
    }

    #[inline]
    pub fn timestamp(&self) -> u64 {
        let off = HEADER_LEN + self.key_len() - 9;
        u64::from_be_bytes(self.bytes[off..off + 8].try_into().expect("8 bytes"))
    }

    #[inline]
    pub fn type_code(&self) -> u8 {
        self.bytes[HEADER_LEN + self.key_len() - 1]
    }

    /// The cell's type. Cells are validated before encoding, so an unknown
    /// code means memory corruption; it is reported as a Put-sorting code
    /// rather than panicking on the read path.
    #[inline]
    pub fn cell_type(&self) -> CellType {
        CellType::from_code(self.type_code()).unwrap_or(CellType::Put)
    }

    #[inline]
    pub fn seq(&self) -> u64 {
        let off = HEADER_LEN + self.key_len();
        u64::from_be_bytes(self.bytes[off..off + 8].try_into().expect("8 bytes"))
    }

    #[inline]
    pub fn value(&self) -> &'a [u8] {
        &self.bytes[HEADER_LEN + self.key_len() + SEQ_LEN..]
    }

    /// The cell as an input (borrowing this encoding's bytes).
    pub fn as_input(&self) -> CellInput<'a> {
        CellInput {
            row: self.row(),
            family: self.family(),
            qualifier: self.qualifier(),
            timestamp: self.timestamp(),
            cell_type: self.cell_type(),
            value: self.value(),
        }
    }

    /// Copies out an owned cell (one buffer its fields share). A read
    /// returning many cells collects them with [`CellCollector`] instead:
    /// one buffer per row.
    pub fn to_cell(&self) -> Cell {
        let shared = Bytes::copy_from_slice(self.bytes);
        Cell::within(&shared, CellRef::new(&shared))
    }

    /// The search key of this cell.
    #[inline]
    pub fn key(&self) -> CellKey<'a> {
        CellKey {
            row: self.row(),
            family: self.family(),
            qualifier: self.qualifier(),
            timestamp: self.timestamp(),
            type_code: self.type_code(),
            seq: self.seq(),
        }
    }

    /// Compares this cell with a key, decoding fields only as far as needed
    /// (rows differ in most comparisons on the hot insert path).
    #[inline]
    pub fn compare_key(&self, key: &CellKey<'_>) -> Ordering {
        match compare_bytes(self.row(), key.row) {
            Ordering::Equal => {}
            o => return o,
        }
        match compare_bytes(self.family(), key.family) {
            Ordering::Equal => {}
            o => return o,
        }
        compare_bytes(self.qualifier(), key.qualifier)
            .then_with(|| key.timestamp.cmp(&self.timestamp()))
            .then_with(|| key.type_code.cmp(&self.type_code()))
            .then_with(|| key.seq.cmp(&self.seq()))
    }

    /// Whether both cells are in the same (row, family, qualifier) column.
    #[inline]
    pub fn same_column(&self, other: &CellRef<'_>) -> bool {
        bytes_equal(self.row(), other.row())
            && bytes_equal(self.family(), other.family())
            && bytes_equal(self.qualifier(), other.qualifier())
    }
}

impl std::fmt::Debug for CellRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_cell().fmt(f)
    }
}

#[inline]
fn be_u32(bytes: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(bytes[off..off + 4].try_into().expect("4 bytes"))
}

/// The length of the encoded cell `bytes` starts with (its header's
/// lengths; trusted as [`CellRef::new`] trusts them).
#[inline]
pub(crate) fn encoded_len_at(bytes: &[u8]) -> usize {
    HEADER_LEN + be_u32(bytes, 0) as usize + SEQ_LEN + be_u32(bytes, 4) as usize
}

/// A position in cell order: a real cell's key or a seek target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellKey<'a> {
    pub row: &'a [u8],
    pub family: &'a [u8],
    pub qualifier: &'a [u8],
    pub timestamp: u64,
    pub type_code: u8,
    pub seq: u64,
}

impl<'a> CellKey<'a> {
    /// Sorts before every cell of `row` (families are never empty).
    pub fn first_on_row(row: &'a [u8]) -> Self {
        CellKey { row, family: &[], qualifier: &[], timestamp: u64::MAX, type_code: u8::MAX, seq: u64::MAX }
    }

    /// Sorts before every cell of the column.
    pub fn first_on_column(row: &'a [u8], family: &'a [u8], qualifier: &'a [u8]) -> Self {
        CellKey { row, family, qualifier, timestamp: u64::MAX, type_code: u8::MAX, seq: u64::MAX }
    }

    /// Sorts at or after every cell of the column (the oldest timestamp,
    /// type and sequence id): a seek to it skips the column's versions.
    pub fn last_on_column(row: &'a [u8], family: &'a [u8], qualifier: &'a [u8]) -> Self {
        CellKey { row, family, qualifier, timestamp: 0, type_code: 0, seq: 0 }
    }

    /// HBase's cell order.
    #[inline]
    pub fn compare(&self, other: &CellKey<'_>) -> Ordering {
        self.row
            .cmp(other.row)
            .then_with(|| self.family.cmp(other.family))
            .then_with(|| self.qualifier.cmp(other.qualifier))
            .then_with(|| other.timestamp.cmp(&self.timestamp))
            .then_with(|| other.type_code.cmp(&self.type_code))
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Compares two encoded cells in HBase's order. Cells whose key, row and
/// family lengths are equal (a column's versions, a row's columns of one
/// width, YCSB's rows of one length) compare their row, family length, family and qualifier as one run of
/// bytes: each part has the same length in both, so the run orders as the
/// parts do in turn. Others are decoded part by part.
#[inline]
pub fn compare_cells(a: &CellRef<'_>, b: &CellRef<'_>) -> Ordering {
    let key_len = a.key_len();
    let (x, y) = (a.bytes, b.bytes);
    // Row length (bytes 8..10), then the family length after the row.
    if key_len == b.key_len() && x[8..10] == y[8..10] {
        let fam_len_at = 10 + a.row_len();
        if x[fam_len_at] == y[fam_len_at] {
            // Row, family length, family and qualifier: up to the timestamp.
            let ts_at = HEADER_LEN + key_len - 9;
            return compare_bytes(&x[10..ts_at], &y[10..ts_at])
                .then_with(|| b.timestamp().cmp(&a.timestamp()))
                .then_with(|| b.type_code().cmp(&a.type_code()))
                .then_with(|| b.seq().cmp(&a.seq()));
        }
    }
    compare_cells_by_parts(a, b)
}

/// [`compare_cells`] decoding each part.
#[inline]
fn compare_cells_by_parts(a: &CellRef<'_>, b: &CellRef<'_>) -> Ordering {
    match compare_bytes(a.row(), b.row()) {
        Ordering::Equal => {}
        o => return o,
    }
    match compare_bytes(a.family(), b.family()) {
        Ordering::Equal => {}
        o => return o,
    }
    compare_bytes(a.qualifier(), b.qualifier())
        .then_with(|| b.timestamp().cmp(&a.timestamp()))
        .then_with(|| b.type_code().cmp(&a.type_code()))
        .then_with(|| b.seq().cmp(&a.seq()))
}

/// Whether `a` and `b` are the same cell: [`compare_cells`] would call them
/// equal. Decided on the encoding — the key bytes (row length ..= type),
/// which determine row, family, qualifier, timestamp and type, and the
/// sequence id — without taking the key apart. The merges ask this after
/// every step (is the next cell a copy of the one just passed, in a
/// snapshot and the file it was flushed to?), where the answer is nearly
/// always no; the sequence id, compared first, says so for any two cells
/// written by different mutations.
#[inline]
pub fn same_cell(a: &CellRef<'_>, b: &CellRef<'_>) -> bool {
    let key_len = a.key_len();
    key_len == b.key_len()
        && a.seq() == b.seq()
        && a.bytes[HEADER_LEN..HEADER_LEN + key_len] == b.bytes[HEADER_LEN..HEADER_LEN + key_len]
}

/// The eight row bytes after the first `skip`, zero padded, big-endian.
/// Where two rows' prefixes differ they order as the rows do (a row that
/// ends pads with zeros, which sort first, as a shorter row does); where
/// they tie, only the rows can tell. Indexes keep it beside their cell
/// pointers so that a search reads a cell only on a tie.
#[inline]
pub(crate) fn row_prefix(row: &[u8], skip: usize) -> u64 {
    let tail = row.get(skip..).unwrap_or(&[]);
    let n = tail.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(b)
}

/// The length of the longest common prefix of `a` and `b`.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A row prefix that orders rows within and around the rows starting with
/// `common`: the eight bytes past `common` for a row that starts with it,
/// 0 for a row before all such rows, `u64::MAX` for one after them. Where
/// two rows' values differ they order as the rows do (rows with `common`
/// form one contiguous stretch of the order); where they tie, only the rows
/// can tell. With an empty `common` it is `row_prefix(row, 0)`.
#[inline]
pub(crate) fn row_prefix_past(row: &[u8], common: &[u8]) -> u64 {
    let n = common.len().min(row.len());
    match compare_bytes(&row[..n], &common[..n]) {
        Ordering::Less => 0,
        // A row that is a proper prefix of `common` sorts first too.
        Ordering::Equal if n < common.len() => 0,
        Ordering::Equal => row_prefix(row, common.len()),
        Ordering::Greater => u64::MAX,
    }
}

/// Lexicographic byte order, eight bytes at a time. Keys are short (tens of
/// bytes), where an inlined word compare beats a call into `memcmp`. The
/// bytes past the last whole word are compared as one word too — the last
/// eight of the common length, overlapping bytes already found equal, or
/// for fewer than eight bytes a word built from overlapping loads — rather
/// than byte by byte: a YCSB row's seven-byte tail and a `field0`
/// qualifier were most of a skiplist compare's time (issue 28's zipf
/// profile, `perf annotate` of `compare_key`).
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    if i < n {
        let (x, y) = if n >= 8 {
            // Bytes before `i` are equal, so the window's order is theirs.
            (
                u64::from_be_bytes(a[n - 8..n].try_into().expect("8 bytes")),
                u64::from_be_bytes(b[n - 8..n].try_into().expect("8 bytes")),
            )
        } else {
            (short_word(&a[..n]), short_word(&b[..n]))
        };
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

/// A word that orders as the bytes of `s` (1 to 7 of them) do, among
/// slices of the same length: overlapping big-endian loads of its first and
/// last four (or two, or one) bytes, the first in the high half. Where the
/// first parts are equal the overlap is too, so the last part's order is
/// that of the bytes past the first.
#[inline]
fn short_word(s: &[u8]) -> u64 {
    let n = s.len();
    if n >= 4 {
        let hi = u32::from_be_bytes(s[..4].try_into().expect("4 bytes"));
        let lo = u32::from_be_bytes(s[n - 4..].try_into().expect("4 bytes"));
        (u64::from(hi) << 32) | u64::from(lo)
    } else {
        (u64::from(s[0]) << 16) | (u64::from(s[n / 2]) << 8) | u64::from(s[n - 1])
    }
}

/// Whether `a` and `b` hold the same bytes, eight at a time: the merges and
/// the compaction's retainer ask it of rows, families and qualifiers once or
/// more per cell, where a call into `memcmp` cost more than the compare.
#[inline]
pub fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return false;
        }
        i += 8;
    }
    if i == n {
        return true;
    }
    if n >= 8 {
        // The last eight bytes, overlapping the words already compared.
        let x = u64::from_ne_bytes(a[n - 8..].try_into().expect("8 bytes"));
        let y = u64::from_ne_bytes(b[n - 8..].try_into().expect("8 bytes"));
        return x == y;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// An owned cell, as returned by reads. The fields are `Bytes` so that
/// the cells of one read share the buffer they were copied into (see
/// [`CellCollector`]): a YCSB E scan of 50 ten-column rows made 2,000
/// allocations when each field was a `Vec` of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cell {
    pub row: Bytes,
    pub family: Bytes,
    pub qualifier: Bytes,
    pub timestamp: u64,
    pub cell_type: CellType,
    pub value: Bytes,
    pub seq: u64,
}

impl Cell {
    /// The owned cell whose fields are `encoded`'s, sliced from `shared`
    /// (which must contain `encoded`'s bytes).
    pub(crate) fn within(shared: &Bytes, encoded: CellRef<'_>) -> Cell {
        Cell {
            row: shared.slice_ref(encoded.row()),
            family: shared.slice_ref(encoded.family()),
            qualifier: shared.slice_ref(encoded.qualifier()),
            timestamp: encoded.timestamp(),
            cell_type: encoded.cell_type(),
            value: shared.slice_ref(encoded.value()),
            seq: encoded.seq(),
        }
    }

    /// Borrows this cell as a write input.
    pub fn as_input(&self) -> CellInput<'_> {
        CellInput {
            row: &self.row,
            family: &self.family,
            qualifier: &self.qualifier,
            timestamp: self.timestamp,
            cell_type: self.cell_type,
            value: &self.value,
        }
    }

    /// This cell's key.
    pub fn key(&self) -> CellKey<'_> {
        CellKey {
            row: &self.row,
            family: &self.family,
            qualifier: &self.qualifier,
            timestamp: self.timestamp,
            type_code: self.cell_type as u8,
            seq: self.seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_cell_agrees_with_compare_cells() {
        let rows: [&[u8]; 3] = [b"r", b"r1", b"r\x00"];
        let families: [&[u8]; 2] = [b"f", b"fa"];
        let qualifiers: [&[u8]; 3] = [b"", b"q", b"qq"];
        let mut cells = Vec::new();
        for row in rows {
            for family in families {
                for qualifier in qualifiers {
                    for ts in [1, 2] {
                        for (t, seq) in [(CellType::Put, 5), (CellType::Put, 6), (CellType::Delete, 5)] {
                            let input = CellInput { row, family, qualifier, timestamp: ts, cell_type: t, value: b"v" };
                            cells.push(input.to_encoded(seq));
                        }
                    }
                }
            }
        }
        // A copy with another value is still the same cell (the key and
        // sequence id are what identify it).
        cells.push(CellInput::put(b"r", b"f", b"q", 1, b"other").to_encoded(5));
        for a in &cells {
            for b in &cells {
                let (a, b) = (CellRef::new(a), CellRef::new(b));
                assert_eq!(same_cell(&a, &b), compare_cells(&a, &b) == Ordering::Equal, "{:?} {:?}", a.key(), b.key());
            }
        }
    }

    #[test]
    fn encoding_round_trips_every_field() {
        let input = CellInput::put(b"row-1", b"cf", b"qual", 42, b"value!");
        let bytes = input.to_encoded(7);
        assert_eq!(bytes.len(), input.encoded_len());
        let c = CellRef::new(&bytes);
        assert_eq!(c.row(), b"row-1");
        assert_eq!(c.family(), b"cf");
        assert_eq!(c.qualifier(), b"qual");
        assert_eq!(c.timestamp(), 42);
        assert_eq!(c.cell_type(), CellType::Put);
        assert_eq!(c.seq(), 7);
        assert_eq!(c.value(), b"value!");
        // SAFETY: `bytes` holds one encoded cell and outlives `d`.
        let d = unsafe { CellRef::from_ptr(bytes.as_ptr()) };
        assert_eq!(d.encoded().len(), bytes.len());
    }

    #[test]
    fn empty_qualifier_and_value_decode() {
        let input = CellInput::delete(b"r", b"f", b"", 9, CellType::DeleteFamily);
        let bytes = input.to_encoded(1);
        let c = CellRef::new(&bytes);
        assert_eq!(c.qualifier(), b"");
        assert_eq!(c.value(), b"");
        assert_eq!(c.cell_type(), CellType::DeleteFamily);
    }

    #[test]
    fn order_is_hbase_order() {
        let mk = |row: &[u8], q: &[u8], ts, t, seq| {
            CellInput { row, family: b"f", qualifier: q, timestamp: ts, cell_type: t, value: b"" }.to_encoded(seq)
        };
        let cells = [
            mk(b"a", b"", 5, CellType::DeleteFamily, 1),
            mk(b"a", b"q", 9, CellType::Put, 1),
            mk(b"a", b"q", 5, CellType::DeleteColumn, 1),
            mk(b"a", b"q", 5, CellType::Put, 3),
            mk(b"a", b"q", 5, CellType::Put, 2),
            mk(b"a", b"r", 1, CellType::Put, 1),
            mk(b"b", b"", 1, CellType::Put, 1),
        ];
        for w in cells.windows(2) {
            let (a, b) = (CellRef::new(&w[0]), CellRef::new(&w[1]));
            assert_eq!(compare_cells(&a, &b), Ordering::Less, "{a:?} < {b:?}");
        }
        let first = CellKey::first_on_row(b"a");
        assert_eq!(first.compare(&CellRef::new(&cells[0]).key()), Ordering::Less);
    }

    /// A tiny deterministic generator (xorshift) of numbers below `n`.
    fn below_from(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// Random cells over few rows, families, qualifiers, timestamps, types
    /// and sequence ids, of equal and unequal lengths: `compare_cells`, its
    /// run-of-bytes path included, and `compare_key` order every pair as
    /// the decoded keys do (it fails when the run stops short of the
    /// qualifier's end or takes in the timestamp, or when the path is taken
    /// for unequal family lengths).
    #[test]
    fn compare_cells_orders_as_the_decoded_keys_do() {
        let mut next = below_from(0x2545_F491_4F6C_DD1D);
        let rows: [&[u8]; 6] = [b"a", b"b", b"ab", b"ba", b"abcdefghi", b"abcdefghj"];
        let families: [&[u8]; 4] = [b"f", b"g", b"ff", b"fg"];
        let qualifiers: [&[u8]; 6] = [b"", b"q", b"r", b"qq", b"f", b"gq"];
        let types = [CellType::Put, CellType::Delete, CellType::DeleteColumn, CellType::DeleteFamily];
        let cells: Vec<Vec<u8>> = (0..400)
            .map(|_| {
                let input = CellInput {
                    row: rows[next(6) as usize],
                    family: families[next(4) as usize],
                    qualifier: qualifiers[next(6) as usize],
                    timestamp: next(3),
                    cell_type: types[next(4) as usize],
                    value: &b"vv"[..next(3) as usize],
                };
                input.to_encoded(next(3))
            })
            .collect();
        for a in &cells {
            for b in &cells {
                let (a, b) = (CellRef::new(a), CellRef::new(b));
                let want = a.key().compare(&b.key());
                assert_eq!(compare_cells(&a, &b), want, "{a:?} vs {b:?}");
                assert_eq!(a.compare_key(&b.key()), want, "{a:?} vs key of {b:?}");
            }
        }
    }

    #[test]
    fn bytes_equal_is_slice_equality() {
        let samples: [&[u8]; 12] = [
            b"",
            b"a",
            b"b",
            b"ab",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgi",
            b"abcdefgh\x00",
            b"abcdefghijklmnop",
            b"abcdefghijklmnoq",
            b"bbcdefghijklmnopq",
            b"abcdefghijklmnopq",
        ];
        for a in samples {
            for b in samples {
                assert_eq!(bytes_equal(a, b), a == b, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn compare_bytes_is_lexicographic() {
        let samples: [&[u8]; 9] =
            [b"", b"a", b"ab", b"abcdefgh", b"abcdefgh\x00", b"abcdefgi", b"b", b"\xff", b"abcdefghijklmnopq"];
        for a in samples {
            for b in samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    /// Every pair of slices up to 19 bytes over three byte values, differing
    /// at every position: the word-wide tails order as the bytes do (it fails
    /// when a tail window or a short word loses a byte or its place).
    #[test]
    fn compare_bytes_orders_every_tail_as_the_bytes_do() {
        let mut next = below_from(0x9E37_79B9_7F4A_7C15);
        for _ in 0..200_000 {
            let (la, lb) = ((next(20)) as usize, (next(20)) as usize);
            let a: Vec<u8> = (0..la).map(|_| [0u8, 0x7f, 0xff][(next(3)) as usize]).collect();
            let mut b: Vec<u8> = a.iter().copied().take(lb).collect();
            b.resize(lb, 0x7f);
            // One byte of b changed somewhere, or none.
            if lb > 0 && next(4) != 0 {
                let at = next(lb as u64) as usize;
                b[at] = [0u8, 0x7f, 0xff][(next(3)) as usize];
            }
            assert_eq!(compare_bytes(&a, &b), a.cmp(&b), "{a:?} vs {b:?}");
            assert_eq!(compare_bytes(&b, &a), b.cmp(&a), "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn validation_rejects_bad_cells() {
        let ok = CellInput::put(b"r", b"f", b"q", 1, b"v");
        assert!(ok.validate(1 << 20).is_ok());
        assert!(matches!(CellInput::put(b"", b"f", b"q", 1, b"v").validate(1 << 20), Err(MemStoreError::EmptyRow)));
        assert!(matches!(CellInput::put(b"r", b"", b"q", 1, b"v").validate(1 << 20), Err(MemStoreError::EmptyFamily)));
        let long_row = vec![b'x'; MAX_ROW_LEN + 1];
        assert!(matches!(
            CellInput::put(&long_row, b"f", b"q", 1, b"v").validate(1 << 20),
            Err(MemStoreError::RowTooLong { .. })
        ));
        let big = vec![0u8; 2000];
        assert!(matches!(
            CellInput::put(b"r", b"f", b"q", 1, &big).validate(1000),
            Err(MemStoreError::CellTooLarge { .. })
        ));
        assert!(matches!(
            CellInput::delete(b"r", b"f", b"q", 1, CellType::DeleteFamily).validate(1000),
            Err(MemStoreError::FamilyDeleteWithQualifier)
        ));
    }
}
