//! The WAL's byte format: the file header, the checksummed record frame, the
//! entry a record carries, and the validation of the cells inside an entry.
//!
//! All integers are big-endian (as in the memstore's cell encoding).
//!
//! ```text
//! file   := header record*
//! header := magic "ACCRDWAL" (8) | version u32 (1..=3) | flags u32 |
//!           file_number u64 | prev_number u64 | prev_valid_len u64 |
//!           crc32c u32                                             (44 bytes)
//! record := crc32c u32 | len u32 | payload (len bytes)
//! payload:= region_id u64 | seq u64 | cells (len - 16 bytes)
//! ```
//!
//! - The header's crc covers the 40 bytes before it. `prev_number` /
//!   `prev_valid_len` *seal* the previous WAL file: the writer that created
//!   this file declares that file `prev_number` holds its data in its first
//!   `prev_valid_len` bytes, and that anything unreadable after that offset
//!   is the debris of a failed write or of a crash (see `reader.rs`).
//!   `prev_number == 0` means "no previous file" (file numbers start at 1).
//! - `flags` bit 0 (`PREV_NOT_SYNCED`): the seal was made by recovery, which
//!   read `prev_valid_len` bytes back after a crash but cannot know how many
//!   of them reached the disk; without it, all `prev_valid_len` bytes were
//!   fsynced by the writer. Other bits must be zero.
//! - A record's crc covers `len` and the payload, so a corrupt length is
//!   caught as surely as corrupt data. `len >= 16`; a length field of zero
//!   (a zero-filled tail) is therefore never a valid record.
//! - `cells`: in version 2 files, the entry's cells grouped by row and
//!   family (`codec.rs`); in version 1 files, the concatenation of cells in
//!   the memstore's encoding (`memstore::cell`), each self-delimiting by its
//!   `key_len`/`value_len` header. An entry is one region batch (one row
//!   mutation in version 1). In memory, a [`WalEntry`] always holds the
//!   memstore encoding.
//! - *Sync marks* (version 3): every write of a batch to a file, except the
//!   first after the header, begins with a record whose `region_id` is
//!   [`SYNC_MARK_REGION`], whose `seq` is its own offset in the file and
//!   which has no cells. It says "every byte before me was fsynced before I
//!   was written" (a closed file ends with one), which is what lets replay
//!   tell a hole that a power cut
//!   left in the unsynced tail of the last file from damage to data that
//!   was durable (`reader.rs`). It costs one 24-byte record per fsync, not
//!   per entry. Region ids are allocated upwards from 1, so no region has
//!   the mark's id.
//!
//! Thread safety: pure functions and plain values.

use memstore::{CellInput, CellRef, CellType};

use crate::error::{Result, StoreError};

/// Identifies a WAL file.
pub const FILE_MAGIC: [u8; 8] = *b"ACCRDWAL";
/// The format version written by this code: 3 adds sync marks; 2 groups an
/// entry's cells by row and family (`codec.rs`); 1 carried the memstore's
/// cell encoding. All are read.
pub const FORMAT_VERSION: u32 = 3;
/// The first format version with sync marks.
pub const SYNC_MARK_VERSION: u32 = 3;
/// The `region_id` of a sync mark record.
pub const SYNC_MARK_REGION: u64 = u64::MAX;
/// Bytes of a sync mark record.
pub const SYNC_MARK_LEN: usize = RECORD_FRAME_LEN + ENTRY_FIXED_LEN;
/// The oldest format version this code reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;
/// Bytes of the file header.
pub const HEADER_LEN: usize = 44;
/// Header flag: the previous file's seal was made by recovery.
const PREV_NOT_SYNCED: u32 = 1;
/// Bytes of a record's frame before the payload: crc + len.
pub const RECORD_FRAME_LEN: usize = 8;
/// Bytes of the payload before the cells: region id + seq.
pub const ENTRY_FIXED_LEN: usize = 16;
/// Largest payload a record can frame.
pub const MAX_PAYLOAD_LEN: usize = u32::MAX as usize;

/// Memstore cell layout constants (see `memstore::cell`): the 8-byte
/// `key_len | value_len` header, the fixed part of the key
/// (row_len u16 + family_len u8 + timestamp u64 + type u8) and the seq.
const CELL_HEADER_LEN: usize = 8;
const CELL_KEY_FIXED_LEN: usize = 2 + 1 + 8 + 1;
const CELL_SEQ_LEN: usize = 8;

/// One row mutation as logged: the region it belongs to, its sequence id,
/// and its cells (memstore encoding, concatenated, each carrying its seq).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WalEntry {
    pub region_id: u64,
    pub seq: u64,
    pub cells: Vec<u8>,
}

impl WalEntry {
    pub fn new(region_id: u64, seq: u64, cells: Vec<u8>) -> WalEntry {
        WalEntry { region_id, seq, cells }
    }

    /// Encodes `cells` (each stamped with `seq`) into a new entry.
    pub fn from_cells(region_id: u64, seq: u64, cells: &[CellInput<'_>]) -> WalEntry {
        let total = cells.iter().map(CellInput::encoded_len).sum();
        let mut buf = vec![0; total];
        let mut pos = 0;
        for c in cells {
            let len = c.encoded_len();
            c.encode_into(seq, &mut buf[pos..pos + len]);
            pos += len;
        }
        WalEntry { region_id, seq, cells: buf }
    }

    /// The entry's cells. The whole buffer is validated first (every length
    /// a `CellRef` accessor will trust is proven in bounds), so a malformed
    /// entry gives one `StoreError::MalformedCell` naming the byte offset,
    /// never a panic; the iterator then cannot fail. Entries returned by
    /// replay have been validated already (a bad one is reported there as
    /// corruption of its file).
    pub fn cells(&self) -> Result<WalCells<'_>> {
        validate_cells(&self.cells).map_err(|(at, reason)| StoreError::MalformedCell {
            place: format!("WAL entry (region {}, seq {}) at byte {at}", self.region_id, self.seq),
            reason,
        })?;
        Ok(WalCells { bytes: &self.cells, pos: 0 })
    }

    /// Bytes this entry occupies in a WAL file (written by this version:
    /// its cells grouped by row and family, `codec.rs`).
    pub fn record_len(&self) -> usize {
        match self.cells() {
            Ok(cells) => {
                let inputs: Vec<CellInput<'_>> = cells.map(|c| c.as_input()).collect();
                record_len(super::codec::encoded_len(&inputs))
            }
            Err(_) => record_len(self.cells.len()),
        }
    }
}

/// The cells of a buffer that `validate_cells` accepted.
pub(crate) fn iter_validated_cells(cells: &[u8]) -> WalCells<'_> {
    WalCells { bytes: cells, pos: 0 }
}

/// Iterator over the validated cells of a [`WalEntry`]; see
/// [`WalEntry::cells`].
pub struct WalCells<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for WalCells<'a> {
    type Item = CellRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        // Re-checked (cheap: a few header reads) rather than trusted, so
        // that no state outside this iterator can make it slice out of
        // bounds; on the validated buffer it never fails.
        let len = check_cell(self.bytes.get(self.pos..)?).ok()?;
        let cell = CellRef::new(&self.bytes[self.pos..self.pos + len]);
        self.pos += len;
        Some(cell)
    }
}

/// Checks that `bytes` starts with one well-formed encoded cell and returns
/// its length. Every offset a `CellRef` accessor computes from the cell's
/// own length fields is proven in bounds here, because `CellRef` trusts them
/// (it would panic on a lie).
fn check_cell(bytes: &[u8]) -> std::result::Result<usize, String> {
    if bytes.len() < CELL_HEADER_LEN {
        return Err(format!("{} bytes left, a cell header needs {CELL_HEADER_LEN}", bytes.len()));
    }
    let key_len = be_u32(bytes, 0) as usize;
    let value_len = be_u32(bytes, 4) as usize;
    if key_len < CELL_KEY_FIXED_LEN {
        return Err(format!("key length {key_len} is below the minimum {CELL_KEY_FIXED_LEN}"));
    }
    // Computed in u64: two u32 lengths plus constants cannot overflow it.
    let total = (CELL_HEADER_LEN + CELL_SEQ_LEN) as u64 + key_len as u64 + value_len as u64;
    if total > bytes.len() as u64 {
        return Err(format!("cell of {total} bytes overruns the {} bytes left", bytes.len()));
    }
    let total = total as usize;
    let row_len = u16::from_be_bytes([bytes[8], bytes[9]]) as usize;
    // row_len + fixed <= key_len guarantees the family length byte at
    // 10 + row_len lies inside the key.
    if row_len + CELL_KEY_FIXED_LEN > key_len {
        return Err(format!("row length {row_len} does not fit key length {key_len}"));
    }
    let family_len = bytes[CELL_HEADER_LEN + 2 + row_len] as usize;
    // With the family in, the qualifier's start is at most its end
    // (key end - timestamp - type).
    if row_len + family_len + CELL_KEY_FIXED_LEN > key_len {
        return Err(format!("row length {row_len} + family length {family_len} do not fit key length {key_len}"));
    }
    let type_code = bytes[CELL_HEADER_LEN + key_len - 1];
    if CellType::from_code(type_code).is_none() {
        return Err(format!("unknown cell type code {type_code}"));
    }
    Ok(total)
}

/// Validates a whole cells buffer; on failure, the byte offset of the bad
/// cell and why.
pub(crate) fn validate_cells(cells: &[u8]) -> std::result::Result<(), (usize, String)> {
    let mut pos = 0;
    while pos < cells.len() {
        pos += check_cell(&cells[pos..]).map_err(|reason| (pos, reason))?;
    }
    Ok(())
}

/// Bytes of a record carrying `cells_len` bytes of cells.
pub(crate) fn record_len(cells_len: usize) -> usize {
    RECORD_FRAME_LEN + ENTRY_FIXED_LEN + cells_len
}

/// Appends one framed record to `buf`. The caller has checked that the
/// payload fits `MAX_PAYLOAD_LEN`.
pub(crate) fn encode_record(buf: &mut Vec<u8>, region_id: u64, seq: u64, cells: &[u8]) {
    let start = buf.len();
    let payload_len = (ENTRY_FIXED_LEN + cells.len()) as u32;
    buf.reserve(record_len(cells.len()));
    buf.extend_from_slice(&[0; 4]);
    buf.extend_from_slice(&payload_len.to_be_bytes());
    buf.extend_from_slice(&region_id.to_be_bytes());
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.extend_from_slice(cells);
    let crc = crc32c::crc32c(&buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Frames a record whose cells are already in place: `buf` is exactly
/// `record_len(cells_len)` bytes with the cells after the frame and the
/// entry's fixed part; fills in the length, region, seq and checksum.
pub(crate) fn frame_record_in_place(buf: &mut [u8], region_id: u64, seq: u64) {
    let payload_len = (buf.len() - RECORD_FRAME_LEN) as u32;
    buf[4..8].copy_from_slice(&payload_len.to_be_bytes());
    buf[8..16].copy_from_slice(&region_id.to_be_bytes());
    buf[16..24].copy_from_slice(&seq.to_be_bytes());
    let crc = crc32c::crc32c(&buf[4..]);
    buf[..4].copy_from_slice(&crc.to_be_bytes());
}

/// The sync mark record to write at `offset` of a file (see the module doc).
pub(crate) fn sync_mark(offset: u64) -> [u8; SYNC_MARK_LEN] {
    let mut mark = [0u8; SYNC_MARK_LEN];
    frame_record_in_place(&mut mark, SYNC_MARK_REGION, offset);
    mark
}

/// What the first bytes of a possible record say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameCheck {
    /// A record of `payload_len` bytes whose checksum matches.
    Valid { payload_len: usize },
    /// Not a valid record here (reason given).
    Bad(&'static str),
}

/// Reads a record frame's crc and length from `frame` (8 bytes).
pub(crate) fn frame_fields(frame: &[u8]) -> (u32, usize) {
    (be_u32(frame, 0), be_u32(frame, 4) as usize)
}

/// Checks a whole record (`frame` followed by the payload) against its
/// checksum.
pub(crate) fn check_record(record: &[u8]) -> FrameCheck {
    if record.len() < RECORD_FRAME_LEN {
        return FrameCheck::Bad("short record frame");
    }
    let (crc, payload_len) = frame_fields(record);
    if payload_len < ENTRY_FIXED_LEN {
        return FrameCheck::Bad("record length below the minimum");
    }
    if record.len() != RECORD_FRAME_LEN + payload_len {
        return FrameCheck::Bad("record length does not match");
    }
    if crc32c::crc32c(&record[4..]) != crc {
        return FrameCheck::Bad("checksum mismatch");
    }
    FrameCheck::Valid { payload_len }
}

/// Splits a checked payload into (region id, seq, cells).
pub(crate) fn split_payload(payload: &[u8]) -> (u64, u64, &[u8]) {
    (be_u64(payload, 0), be_u64(payload, 8), &payload[ENTRY_FIXED_LEN..])
}

/// A WAL file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// The format version of the file's entries (see `FORMAT_VERSION`).
    pub version: u32,
    /// The file's own number (must match its name).
    pub number: u64,
    /// The file this one follows, 0 if none.
    pub prev_number: u64,
    /// Bytes of the previous file that hold its data (see module doc).
    pub prev_valid_len: u64,
    /// Whether those bytes were all fsynced (a seal made while writing),
    /// rather than read back by recovery after a crash.
    pub prev_synced: bool,
}

/// The verdict on a file's first `HEADER_LEN` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderCheck {
    Valid(FileHeader),
    /// Never completely written: too short, all zeros, or a checksum
    /// mismatch under the right magic.
    Torn(&'static str),
    /// Not a WAL file of ours (or a version we cannot read).
    Foreign(String),
}

impl FileHeader {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&FILE_MAGIC);
        h[8..12].copy_from_slice(&self.version.to_be_bytes());
        let flags = if self.prev_synced { 0 } else { PREV_NOT_SYNCED };
        h[12..16].copy_from_slice(&flags.to_be_bytes());
        h[16..24].copy_from_slice(&self.number.to_be_bytes());
        h[24..32].copy_from_slice(&self.prev_number.to_be_bytes());
        h[32..40].copy_from_slice(&self.prev_valid_len.to_be_bytes());
        let crc = crc32c::crc32c(&h[..40]);
        h[40..44].copy_from_slice(&crc.to_be_bytes());
        h
    }

    /// Judges the first bytes of a file (`bytes` may be shorter than a
    /// header when the file is).
    pub(crate) fn check(bytes: &[u8]) -> HeaderCheck {
        let n = bytes.len().min(HEADER_LEN);
        let head = &bytes[..n];
        if head.iter().all(|&b| b == 0) {
            return HeaderCheck::Torn("the header was never written");
        }
        let magic_len = n.min(FILE_MAGIC.len());
        if head[..magic_len] != FILE_MAGIC[..magic_len] {
            return HeaderCheck::Foreign("not a WAL file (bad magic)".to_string());
        }
        if n < HEADER_LEN {
            return HeaderCheck::Torn("the file is shorter than a header");
        }
        if crc32c::crc32c(&head[..40]) != be_u32(head, 40) {
            return HeaderCheck::Torn("header checksum mismatch");
        }
        let version = be_u32(head, 8);
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return HeaderCheck::Foreign(format!("unsupported WAL format version {version}"));
        }
        let flags = be_u32(head, 12);
        if flags & !PREV_NOT_SYNCED != 0 {
            return HeaderCheck::Foreign(format!("unsupported WAL header flags {flags:#x}"));
        }
        HeaderCheck::Valid(FileHeader {
            version,
            number: be_u64(head, 16),
            prev_number: be_u64(head, 24),
            prev_valid_len: be_u64(head, 32),
            prev_synced: flags & PREV_NOT_SYNCED == 0,
        })
    }
}

fn be_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn be_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_entry() -> WalEntry {
        WalEntry::from_cells(
            7,
            42,
            &[
                CellInput::put(b"row", b"cf", b"a", 1, b"value-a"),
                CellInput::put(b"row", b"cf", b"b", 1, b""),
                CellInput::delete(b"row", b"cf", b"", 1, CellType::DeleteFamily),
            ],
        )
    }

    #[test]
    fn record_round_trips() {
        let e = sample_entry();
        let mut buf = vec![0xAA]; // records are appended after existing bytes
        encode_record(&mut buf, e.region_id, e.seq, &e.cells);
        assert_eq!(buf.len(), 1 + record_len(e.cells.len()));
        assert!(e.record_len() < record_len(e.cells.len()), "on disk, cells are grouped by row and family");
        let rec = &buf[1..];
        assert_eq!(check_record(rec), FrameCheck::Valid { payload_len: ENTRY_FIXED_LEN + e.cells.len() });
        let (region, seq, cells) = split_payload(&rec[RECORD_FRAME_LEN..]);
        assert_eq!((region, seq, cells), (7, 42, &e.cells[..]));
    }

    #[test]
    fn every_flipped_byte_of_a_record_is_caught() {
        let e = sample_entry();
        let mut buf = Vec::new();
        encode_record(&mut buf, e.region_id, e.seq, &e.cells);
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x01;
            assert!(matches!(check_record(&bad), FrameCheck::Bad(_)), "flip at {i} undetected");
        }
    }

    #[test]
    fn cells_iterate_with_their_seq() {
        let e = sample_entry();
        let cells: Vec<_> = e.cells().expect("valid cells").collect();
        assert_eq!(cells.len(), 3);
        assert_eq!(cells[0].qualifier(), b"a");
        assert_eq!(cells[0].value(), b"value-a");
        assert_eq!(cells[2].cell_type(), CellType::DeleteFamily);
        assert!(cells.iter().all(|c| c.seq() == 42 && c.row() == b"row"));
        assert!(validate_cells(&e.cells).is_ok());
    }

    #[test]
    fn malformed_cells_give_errors_not_panics() {
        let e = sample_entry();
        // Every truncation and every single-byte corruption of the length
        // fields must be either accepted (consistent) or rejected, never
        // panic when the cells are then read.
        let mut boundaries = vec![0];
        while *boundaries.last().expect("non-empty") < e.cells.len() {
            let at = *boundaries.last().expect("non-empty");
            boundaries.push(at + check_cell(&e.cells[at..]).expect("valid"));
        }
        assert_eq!(boundaries.len(), 4, "three cells");
        for cut in 0..e.cells.len() {
            let t = WalEntry::new(1, 1, e.cells[..cut].to_vec());
            // A cut inside a cell is always caught; a cut between cells is
            // a shorter valid entry.
            let at_boundary = boundaries.contains(&cut);
            assert_eq!(t.cells().is_ok(), at_boundary, "cut at {cut}");
        }
        for i in 0..e.cells.len() {
            for v in [0u8, 1, 0x7F, 0xFF] {
                let mut bytes = e.cells.clone();
                bytes[i] = v;
                let t = WalEntry::new(1, 1, bytes);
                if let Ok(cells) = t.cells() {
                    for c in cells {
                        let _ = (c.row(), c.family(), c.qualifier(), c.timestamp(), c.seq(), c.value(), c.to_cell());
                    }
                }
            }
        }
        let mut huge = e.cells.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_be_bytes());
        let t = WalEntry::new(1, 1, huge);
        let err = t.cells().err().expect("overrun detected");
        assert!(err.to_string().contains("byte 0"), "{err}");
        assert!(validate_cells(&t.cells).is_err());
    }

    #[test]
    fn header_round_trips_and_recognises_foreign_and_torn_files() {
        for prev_synced in [true, false] {
            let h =
                FileHeader { version: FORMAT_VERSION, number: 12, prev_number: 11, prev_valid_len: 4096, prev_synced };
            assert_eq!(FileHeader::check(&h.encode()), HeaderCheck::Valid(h));
        }
        let bytes = FileHeader {
            version: FORMAT_VERSION,
            number: 12,
            prev_number: 11,
            prev_valid_len: 4096,
            prev_synced: true,
        }
        .encode();
        assert!(matches!(FileHeader::check(&bytes[..10]), HeaderCheck::Torn(_)));
        assert!(matches!(FileHeader::check(&[0u8; HEADER_LEN]), HeaderCheck::Torn(_)));
        assert!(matches!(FileHeader::check(b"PK\x03\x04 this is a zip"), HeaderCheck::Foreign(_)));
        let mut bad_crc = bytes;
        bad_crc[15] ^= 1;
        assert!(matches!(FileHeader::check(&bad_crc), HeaderCheck::Torn(_)));
        let rewrite = |at: usize, value: u32| {
            let mut h = bytes;
            h[at..at + 4].copy_from_slice(&value.to_be_bytes());
            let crc = crc32c::crc32c(&h[..40]);
            h[40..44].copy_from_slice(&crc.to_be_bytes());
            h
        };
        assert!(matches!(FileHeader::check(&rewrite(8, 4)), HeaderCheck::Foreign(m) if m.contains("version 4")));
        assert!(
            matches!(FileHeader::check(&rewrite(8, 2)), HeaderCheck::Valid(h) if h.version == 2),
            "version 2 files (no sync marks) are still read"
        );
        assert!(matches!(FileHeader::check(&rewrite(8, 0)), HeaderCheck::Foreign(m) if m.contains("version 0")));
        assert!(
            matches!(FileHeader::check(&rewrite(8, 1)), HeaderCheck::Valid(h) if h.version == 1),
            "version 1 files (per-cell memstore encoding) are still read"
        );
        assert!(matches!(FileHeader::check(&rewrite(12, 4)), HeaderCheck::Foreign(m) if m.contains("flags")));
    }
}
