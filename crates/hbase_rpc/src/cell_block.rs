//! Cell blocks: the cells of a call or response, carried after the protobuf
//! messages instead of inside them, in the encoding of the codec the client
//! named in its connection header.
//!
//! Both codecs HBase's client may name write, for each cell, a 4-byte
//! big-endian length and then the `KeyValue` (see [`crate::cell`]);
//! `KeyValueCodecWithTags` appends the tags. hbase-client 2.6 names
//! `org.apache.hadoop.hbase.codec.KeyValueCodec` unless `hbase.client.rpc.codec`
//! says otherwise; an empty name means no cell blocks at all (cells then
//! travel inside the protobuf messages). Compressed cell blocks are refused.
//!
//! Thread safety: `CellCodec` is a `Copy` value; encoding and decoding are
//! pure functions of their arguments.

use bytes::Bytes;

use crate::cell::{Cell, CellError, KeyValueParts};
use crate::error::WireError;

/// Cells a cell block is written from, lent one at a time as
/// [`KeyValueParts`]: wire [`Cell`]s, or cells a server holds in its own
/// form, which it then writes into the response frame without making a
/// [`Cell`] of each (a scan's thousand cells go from the buffer the store
/// read them into straight into the frame).
pub trait CellSource: Send {
    /// How many cells there are.
    fn cell_count(&self) -> usize;
    /// Calls `f` with each cell, in order.
    fn for_each_cell(&self, f: &mut dyn FnMut(KeyValueParts<'_>));
}

impl CellSource for Vec<Cell> {
    fn cell_count(&self) -> usize {
        self.len()
    }

    fn for_each_cell(&self, f: &mut dyn FnMut(KeyValueParts<'_>)) {
        self.iter().for_each(|c| f(c.parts()));
    }
}

/// The cell block codecs this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellCodec {
    /// `org.apache.hadoop.hbase.codec.KeyValueCodec`: no tags.
    KeyValue,
    /// `org.apache.hadoop.hbase.codec.KeyValueCodecWithTags`.
    KeyValueWithTags,
}

pub const KEY_VALUE_CODEC: &str = "org.apache.hadoop.hbase.codec.KeyValueCodec";
pub const KEY_VALUE_CODEC_WITH_TAGS: &str = "org.apache.hadoop.hbase.codec.KeyValueCodecWithTags";

impl CellCodec {
    /// The codec a connection header names: `None` for no name or an empty
    /// one (no cell blocks), an error for a codec this server lacks.
    pub fn from_class_name(name: Option<&str>) -> Result<Option<Self>, WireError> {
        match name.unwrap_or("") {
            "" => Ok(None),
            KEY_VALUE_CODEC => Ok(Some(Self::KeyValue)),
            KEY_VALUE_CODEC_WITH_TAGS => Ok(Some(Self::KeyValueWithTags)),
            other => Err(WireError::UnsupportedCodec(other.to_owned())),
        }
    }

    pub fn class_name(self) -> &'static str {
        match self {
            Self::KeyValue => KEY_VALUE_CODEC,
            Self::KeyValueWithTags => KEY_VALUE_CODEC_WITH_TAGS,
        }
    }

    fn with_tags(self) -> bool {
        self == Self::KeyValueWithTags
    }

    /// The bytes [`Self::encode`] appends for `cells`.
    pub fn encoded_len(self, cells: &[Cell]) -> usize {
        cells.iter().map(|c| 4 + c.key_value_len(self.with_tags())).sum()
    }

    /// Appends the cells' block to `out`.
    pub fn encode(self, cells: &[Cell], out: &mut Vec<u8>) -> Result<(), CellError> {
        cells.iter().try_for_each(|c| self.encode_one(c.parts(), out))
    }

    /// The bytes [`Self::encode_source`] appends for `cells`.
    pub fn source_len(self, cells: &dyn CellSource) -> usize {
        let mut len = 0;
        cells.for_each_cell(&mut |c| len += 4 + c.key_value_len(self.with_tags()));
        len
    }

    /// Appends the cells' block to `out`; the first cell the format cannot
    /// hold fails it.
    pub fn encode_source(self, cells: &dyn CellSource, out: &mut Vec<u8>) -> Result<(), CellError> {
        let mut result = Ok(());
        cells.for_each_cell(&mut |cell| {
            if result.is_ok() {
                result = self.encode_one(cell, out);
            }
        });
        result
    }

    fn encode_one(self, cell: KeyValueParts<'_>, out: &mut Vec<u8>) -> Result<(), CellError> {
        let len = cell.key_value_len(self.with_tags());
        let prefix = i32::try_from(len).map_err(|_| CellError::TooLarge(len))?;
        out.extend_from_slice(&prefix.to_be_bytes());
        cell.write_key_value(out, self.with_tags())
    }

    /// The cells of a whole block; the cells slice `block`.
    pub fn decode(self, block: &Bytes) -> Result<Vec<Cell>, WireError> {
        let mut cells = Vec::new();
        let mut at = 0;
        while at < block.len() {
            let malformed = |reason: String| WireError::MalformedCell { offset: at, reason };
            let rest = block.len() - at;
            if rest < 4 {
                return Err(malformed(format!("{rest} bytes where a 4-byte length belongs")));
            }
            let len = i32::from_be_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]]);
            let len = usize::try_from(len).map_err(|_| malformed(format!("negative length {len}")))?;
            if len > rest - 4 {
                return Err(malformed(format!("length {len} runs past the block ({} bytes left)", rest - 4)));
            }
            let kv = block.slice(at + 4..at + 4 + len);
            let cell = Cell::read_key_value(&kv, self.with_tags()).map_err(|e| malformed(e.to_string()))?;
            cells.push(cell);
            at += 4 + len;
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellType;

    fn cells() -> Vec<Cell> {
        vec![
            Cell::put("r1", "f", "a", 5, "one"),
            Cell::put("r1", "f", "b", 5, ""),
            Cell { cell_type: CellType::DeleteFamily, ..Cell::put("r2", "g", "", i64::MAX, "") },
        ]
    }

    #[test]
    fn codec_names_are_hbase_classes_and_empty_means_none() {
        assert_eq!(CellCodec::from_class_name(None).unwrap(), None);
        assert_eq!(CellCodec::from_class_name(Some("")).unwrap(), None);
        assert_eq!(CellCodec::from_class_name(Some(KEY_VALUE_CODEC)).unwrap(), Some(CellCodec::KeyValue));
        assert!(matches!(
            CellCodec::from_class_name(Some("org.apache.hadoop.hbase.codec.MessageCodec")),
            Err(WireError::UnsupportedCodec(name)) if name.ends_with("MessageCodec")
        ));
    }

    #[test]
    fn a_block_round_trips_in_both_codecs() {
        for codec in [CellCodec::KeyValue, CellCodec::KeyValueWithTags] {
            let mut block = Vec::new();
            codec.encode(&cells(), &mut block).unwrap();
            assert_eq!(codec.decode(&Bytes::from(block)).unwrap(), cells(), "{codec:?}");
        }
        assert!(CellCodec::KeyValue.decode(&Bytes::new()).unwrap().is_empty());
    }

    #[test]
    fn malformed_blocks_are_typed_errors_at_their_offset() {
        let mut block = Vec::new();
        CellCodec::KeyValue.encode(&cells(), &mut block).unwrap();
        let first_len = 4 + cells()[0].key_value_len(false);
        // Cut inside the second cell's length prefix.
        let cut = Bytes::copy_from_slice(&block[..first_len + 2]);
        assert!(matches!(
            CellCodec::KeyValue.decode(&cut),
            Err(WireError::MalformedCell { offset, .. }) if offset == first_len
        ));
        // A hostile length: 2 GiB claimed, a few bytes present.
        let mut hostile = block.clone();
        hostile[..4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            CellCodec::KeyValue.decode(&Bytes::from(hostile)),
            Err(WireError::MalformedCell { offset: 0, .. })
        ));
        let mut negative = block;
        negative[..4].copy_from_slice(&(-8i32).to_be_bytes());
        assert!(CellCodec::KeyValue.decode(&Bytes::from(negative)).is_err());
    }
}
