//! A cell as HBase's RPC carries it, and its `KeyValue` serialization.
//!
//! A `KeyValue` is `key length (4) | value length (4) | key | value`, with,
//! when tags are carried, `tags length (2) | tags` after the value; the key
//! is `row length (2) | row | family length (1) | family | qualifier |
//! timestamp (8) | type (1)`. All integers are big-endian. The qualifier has
//! no length of its own: it is what remains of the key.
//!
//! Decoding takes a `Bytes` and slices it (no copy), checks every length
//! against what is there before using it, and returns a typed error on a
//! malformed record; it never panics and never allocates from a length it
//! read.
//!
//! Thread safety: a `Cell` is an immutable value (`Send + Sync`); its fields
//! are reference-counted `Bytes`, so clones are cheap and share the frame.

use bytes::{BufMut, Bytes};

/// HBase's `Cell.Type` / `KeyValue.Type` codes (the key's last byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CellType {
    Put = 4,
    Delete = 8,
    DeleteFamilyVersion = 10,
    DeleteColumn = 12,
    DeleteFamily = 14,
}

impl CellType {
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            4 => Self::Put,
            8 => Self::Delete,
            10 => Self::DeleteFamilyVersion,
            12 => Self::DeleteColumn,
            14 => Self::DeleteFamily,
            _ => return None,
        })
    }
}

/// One cell: coordinates, version, type and value (and HBase's opaque tags,
/// which only `KeyValueCodecWithTags` carries; empty otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub row: Bytes,
    pub family: Bytes,
    pub qualifier: Bytes,
    pub timestamp: i64,
    pub cell_type: CellType,
    pub value: Bytes,
    pub tags: Bytes,
}

/// Why a `KeyValue` could not be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    #[error("{0}")]
    Malformed(String),
    #[error("row of {0} bytes is over 32767, the longest a KeyValue holds")]
    RowTooLong(usize),
    #[error("family of {0} bytes is over 127, the longest a KeyValue holds")]
    FamilyTooLong(usize),
    #[error("tags of {0} bytes are over 65535, the most a KeyValue holds")]
    TagsTooLong(usize),
    #[error("cell of {0} bytes is over 2 GiB, the most a KeyValue holds")]
    TooLarge(usize),
}

/// Fixed parts of a key: row length (2), family length (1), timestamp (8),
/// type (1).
const KEY_INFRASTRUCTURE: usize = 2 + 1 + 8 + 1;

/// A cell's fields, borrowed from wherever they are: what a `KeyValue` is
/// written from. A [`Cell`] lends its own; a server writing cells it holds
/// in another form lends those without building a [`Cell`] of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyValueParts<'a> {
    pub row: &'a [u8],
    pub family: &'a [u8],
    pub qualifier: &'a [u8],
    pub timestamp: i64,
    pub cell_type: CellType,
    pub value: &'a [u8],
    pub tags: &'a [u8],
}

impl KeyValueParts<'_> {
    fn key_len(&self) -> usize {
        KEY_INFRASTRUCTURE + self.row.len() + self.family.len() + self.qualifier.len()
    }

    /// Bytes of the serialized `KeyValue` (without the cell block's own
    /// 4-byte length in front of it).
    pub fn key_value_len(&self, with_tags: bool) -> usize {
        let tags = if with_tags { 2 + self.tags.len() } else { 0 };
        8 + self.key_len() + self.value.len() + tags
    }

    /// Appends the `KeyValue` to `out`, refusing what the format cannot hold.
    pub fn write_key_value(&self, out: &mut Vec<u8>, with_tags: bool) -> Result<(), CellError> {
        let row_len = u16::try_from(self.row.len())
            .ok()
            .filter(|&l| l <= i16::MAX as u16)
            .ok_or(CellError::RowTooLong(self.row.len()))?;
        let family_len = u8::try_from(self.family.len())
            .ok()
            .filter(|&l| l <= i8::MAX as u8)
            .ok_or(CellError::FamilyTooLong(self.family.len()))?;
        let tags_len = u16::try_from(self.tags.len()).map_err(|_| CellError::TagsTooLong(self.tags.len()))?;
        let total = self.key_value_len(with_tags);
        let too_large = || CellError::TooLarge(total);
        let key_len = i32::try_from(self.key_len()).map_err(|_| too_large())?;
        let value_len = i32::try_from(self.value.len()).map_err(|_| too_large())?;
        i32::try_from(total).map_err(|_| too_large())?;

        out.reserve(total);
        out.put_i32(key_len);
        out.put_i32(value_len);
        out.put_u16(row_len);
        out.put_slice(self.row);
        out.put_u8(family_len);
        out.put_slice(self.family);
        out.put_slice(self.qualifier);
        out.put_i64(self.timestamp);
        out.put_u8(self.cell_type.code());
        out.put_slice(self.value);
        if with_tags {
            out.put_u16(tags_len);
            out.put_slice(self.tags);
        }
        Ok(())
    }
}

impl Cell {
    /// A `Put` cell.
    pub fn put(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        value: impl Into<Bytes>,
    ) -> Self {
        Self {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp,
            cell_type: CellType::Put,
            value: value.into(),
            tags: Bytes::new(),
        }
    }

    /// The cell's fields as a `KeyValue` writes them.
    pub fn parts(&self) -> KeyValueParts<'_> {
        KeyValueParts {
            row: &self.row,
            family: &self.family,
            qualifier: &self.qualifier,
            timestamp: self.timestamp,
            cell_type: self.cell_type,
            value: &self.value,
            tags: &self.tags,
        }
    }

    /// Bytes of the serialized `KeyValue` (without the cell block's own
    /// 4-byte length in front of it).
    pub fn key_value_len(&self, with_tags: bool) -> usize {
        self.parts().key_value_len(with_tags)
    }

    /// Appends the `KeyValue` to `out`, refusing what the format cannot hold.
    pub fn write_key_value(&self, out: &mut Vec<u8>, with_tags: bool) -> Result<(), CellError> {
        self.parts().write_key_value(out, with_tags)
    }

    /// Reads one `KeyValue` that fills `kv` exactly.
    pub fn read_key_value(kv: &Bytes, with_tags: bool) -> Result<Self, CellError> {
        let bad = |what: &str| CellError::Malformed(what.to_owned());
        let len = kv.len();
        if len < 8 {
            return Err(bad("shorter than its two lengths"));
        }
        let key_len = read_len(kv, 0)?;
        let value_len = read_len(kv, 4)?;
        let key_end = 8usize
            .checked_add(key_len)
            .filter(|&e| e <= len)
            .ok_or_else(|| CellError::Malformed(format!("key length {key_len} runs past the record ({len} bytes)")))?;
        let value_end = key_end.checked_add(value_len).filter(|&e| e <= len).ok_or_else(|| {
            CellError::Malformed(format!("value length {value_len} runs past the record ({len} bytes)"))
        })?;
        let tags = if with_tags && value_end < len {
            if len - value_end < 2 {
                return Err(bad("tags length truncated"));
            }
            let tags_len = u16::from_be_bytes([kv[value_end], kv[value_end + 1]]) as usize;
            if value_end + 2 + tags_len != len {
                return Err(CellError::Malformed(format!(
                    "tags length {tags_len} does not fill the record's last {} bytes",
                    len - value_end - 2
                )));
            }
            kv.slice(value_end + 2..len)
        } else if value_end != len {
            return Err(CellError::Malformed(format!("{} bytes after the value", len - value_end)));
        } else {
            Bytes::new()
        };

        if key_len < KEY_INFRASTRUCTURE {
            return Err(CellError::Malformed(format!("key of {key_len} bytes is shorter than 12")));
        }
        let row_len = u16::from_be_bytes([kv[8], kv[9]]) as usize;
        let row_end = 10 + row_len;
        // The family length byte, then 9 bytes of timestamp and type, must
        // still fit in the key after the row.
        if row_end + 1 + 9 > key_end {
            return Err(CellError::Malformed(format!("row length {row_len} runs past the key ({key_len} bytes)")));
        }
        let family_len = kv[row_end] as usize;
        let family_end = row_end + 1 + family_len;
        if family_end + 9 > key_end {
            return Err(CellError::Malformed(format!(
                "family length {family_len} runs past the key ({key_len} bytes)"
            )));
        }
        let qualifier_end = key_end - 9;
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&kv[qualifier_end..qualifier_end + 8]);
        let type_code = kv[key_end - 1];
        let cell_type = CellType::from_code(type_code)
            .ok_or_else(|| CellError::Malformed(format!("unknown cell type {type_code}")))?;
        Ok(Self {
            row: kv.slice(10..row_end),
            family: kv.slice(row_end + 1..family_end),
            qualifier: kv.slice(family_end..qualifier_end),
            timestamp: i64::from_be_bytes(ts),
            cell_type,
            value: kv.slice(key_end..value_end),
            tags,
        })
    }
}

/// A non-negative big-endian `int` at `at` (the caller checked 4 bytes).
fn read_len(kv: &[u8], at: usize) -> Result<usize, CellError> {
    let v = i32::from_be_bytes([kv[at], kv[at + 1], kv[at + 2], kv[at + 3]]);
    usize::try_from(v).map_err(|_| CellError::Malformed(format!("negative length {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Cell {
        Cell {
            row: Bytes::from_static(b"row-1"),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"qual"),
            timestamp: 1_700_000_000_123,
            cell_type: CellType::DeleteColumn,
            value: Bytes::from_static(b"value bytes"),
            tags: Bytes::new(),
        }
    }

    #[test]
    fn key_value_round_trips_with_the_documented_layout() {
        let cell = sample();
        let mut out = Vec::new();
        cell.write_key_value(&mut out, false).unwrap();
        assert_eq!(out.len(), cell.key_value_len(false));
        // key length: 12 + 5 + 1 + 4 = 22; value length 11; row length 5.
        assert_eq!(&out[..10], &[0, 0, 0, 22, 0, 0, 0, 11, 0, 5]);
        assert_eq!(&out[10..15], b"row-1");
        assert_eq!(out[15], 1);
        assert_eq!(out[8 + 22 - 1], 12, "the type byte ends the key");
        let back = Cell::read_key_value(&Bytes::from(out), false).unwrap();
        assert_eq!(back, cell);
    }

    #[test]
    fn tags_round_trip_when_carried() {
        let cell = Cell { tags: Bytes::from_static(&[0, 3, 1, b'a', b'b']), ..sample() };
        let mut out = Vec::new();
        cell.write_key_value(&mut out, true).unwrap();
        assert_eq!(Cell::read_key_value(&Bytes::from(out), true).unwrap(), cell);
    }

    #[test]
    fn empty_qualifier_and_value_round_trip() {
        let cell = Cell::put("r", "f", "", -1, "");
        let mut out = Vec::new();
        cell.write_key_value(&mut out, false).unwrap();
        assert_eq!(Cell::read_key_value(&Bytes::from(out), false).unwrap(), cell);
    }

    #[test]
    fn every_truncation_and_hostile_length_is_a_typed_error() {
        let mut good = Vec::new();
        sample().write_key_value(&mut good, false).unwrap();
        for cut in 0..good.len() {
            let r = Cell::read_key_value(&Bytes::copy_from_slice(&good[..cut]), false);
            assert!(matches!(r, Err(CellError::Malformed(_))), "cut at {cut}: {r:?}");
        }
        for (at, patch) in [
            (0, i32::MAX.to_be_bytes()),
            (0, (-1i32).to_be_bytes()),
            (4, i32::MAX.to_be_bytes()),
            (0, 3i32.to_be_bytes()),
        ] {
            let mut bad = good.clone();
            bad[at..at + 4].copy_from_slice(&patch);
            let r = Cell::read_key_value(&Bytes::from(bad), false);
            assert!(matches!(r, Err(CellError::Malformed(_))), "patch at {at}: {r:?}");
        }
        let mut bad_row = good.clone();
        bad_row[8..10].copy_from_slice(&u16::MAX.to_be_bytes());
        assert!(Cell::read_key_value(&Bytes::from(bad_row), false).is_err());
        let mut bad_family = good.clone();
        bad_family[15] = 200;
        assert!(Cell::read_key_value(&Bytes::from(bad_family), false).is_err());
        let mut bad_type = good;
        bad_type[8 + 22 - 1] = 99;
        assert!(Cell::read_key_value(&Bytes::from(bad_type), false).is_err());
    }

    #[test]
    fn writing_refuses_what_a_key_value_cannot_hold() {
        let long_family = Cell::put("r", vec![b'f'; 128], "q", 1, "v");
        assert_eq!(long_family.write_key_value(&mut Vec::new(), false), Err(CellError::FamilyTooLong(128)));
        let long_row = Cell::put(vec![0u8; 40_000], "f", "q", 1, "v");
        assert_eq!(long_row.write_key_value(&mut Vec::new(), false), Err(CellError::RowTooLong(40_000)));
    }
}
