//! What a store file assumes about an encoded cell, and the one check that
//! makes the assumption safe.
//!
//! `memstore::CellRef` trusts the lengths inside an encoding (it slices
//! with them, and a bad length would panic). Bytes read from disk are not
//! trusted: every cell of a data block and every key of the block index is
//! passed through [`check_cell`] once, when the block is decoded, so that
//! all later `CellRef` accesses to it stay in bounds. A block's checksum
//! already catches media corruption; this check is what stands between a
//! bug (or a crafted file) and a panic.
//!
//! Index and last keys are stored as *key-only* cells ([`push_key_only`]):
//! the cell encoding with the value cut off, so that they decode with the
//! same `CellRef` and compare with the same `compare_cells`.

use memstore::{CellRef, CellType};

const HEADER_LEN: usize = 8;
/// `row_len u16 | family_len u8 | timestamp u64 | type u8`.
const KEY_FIXED_LEN: usize = 2 + 1 + 8 + 1;
const SEQ_LEN: usize = 8;

#[inline]
fn be_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// The length of the encoded cell starting at `bytes[0]`, from its header,
/// or `None` if the header does not fit.
pub(crate) fn encoded_len(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_LEN {
        return None;
    }
    Some((HEADER_LEN + SEQ_LEN) as u64 + u64::from(be_u32(bytes, 0)) + u64::from(be_u32(bytes, 4)))
}

/// Checks that `bytes` is exactly one well-formed cell encoding: header
/// lengths that add up to the slice, row and family lengths inside the
/// key, and a known type code.
pub(crate) fn check_cell(bytes: &[u8]) -> Result<(), String> {
    let total =
        encoded_len(bytes).ok_or_else(|| format!("cell of {} bytes is shorter than its header", bytes.len()))?;
    if total != bytes.len() as u64 {
        return Err(format!("cell header says {total} bytes but the cell has {}", bytes.len()));
    }
    let key_len = be_u32(bytes, 0) as usize;
    if key_len < KEY_FIXED_LEN {
        return Err(format!("cell key of {key_len} bytes is shorter than its fixed fields"));
    }
    let row_len = u16::from_be_bytes([bytes[8], bytes[9]]) as usize;
    if key_len < KEY_FIXED_LEN + row_len {
        return Err(format!("row of {row_len} bytes overruns a {key_len}-byte cell key"));
    }
    let family_len = bytes[HEADER_LEN + 2 + row_len] as usize;
    if key_len < KEY_FIXED_LEN + row_len + family_len {
        return Err(format!("family of {family_len} bytes overruns a {key_len}-byte cell key"));
    }
    let type_code = bytes[HEADER_LEN + key_len - 1];
    if CellType::from_code(type_code).is_none() {
        return Err(format!("unknown cell type code {type_code}"));
    }
    Ok(())
}

/// Appends the key-only form of `cell` to `out`: its encoding with
/// `value_len = 0` and the value left out.
pub(crate) fn push_key_only(cell: &CellRef<'_>, out: &mut Vec<u8>) {
    let enc = cell.encoded();
    let without_value = enc.len() - cell.value().len();
    out.extend_from_slice(&enc[..4]);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&enc[HEADER_LEN..without_value]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use memstore::CellInput;

    #[test]
    fn valid_cells_pass_and_key_only_keeps_the_key() {
        let enc = CellInput::put(b"row", b"cf", b"q", 7, b"value").to_encoded(3);
        check_cell(&enc).expect("valid");
        let mut key = Vec::new();
        push_key_only(&CellRef::new(&enc), &mut key);
        check_cell(&key).expect("key-only is a valid cell");
        let k = CellRef::new(&key);
        assert_eq!(k.key(), CellRef::new(&enc).key());
        assert_eq!(k.value(), b"");
    }

    #[test]
    fn malformed_cells_are_rejected_without_panicking() {
        let enc = CellInput::delete(b"row", b"cf", b"", 7, CellType::DeleteFamily).to_encoded(3);
        assert!(check_cell(&enc[..enc.len() - 1]).is_err());
        assert!(check_cell(&[0; 3]).is_err());
        let mut bad_row = enc.clone();
        bad_row[8] = 0xFF;
        assert!(check_cell(&bad_row).is_err());
        let mut bad_type = enc.clone();
        let key_len = be_u32(&enc, 0) as usize;
        bad_type[HEADER_LEN + key_len - 1] = 5;
        assert!(check_cell(&bad_type).is_err());
        // Every mutation of every byte either passes or fails, never panics,
        // and whatever passes can be read through CellRef.
        for i in 0..enc.len() {
            for v in [0u8, 1, 0x7F, 0xFF] {
                let mut m = enc.clone();
                m[i] = v;
                if check_cell(&m).is_ok() {
                    let c = CellRef::new(&m);
                    let _ = (c.row(), c.family(), c.qualifier(), c.timestamp(), c.seq(), c.value());
                }
            }
        }
    }
}
