//! `RegionInfo`: a region's identity and key range (HBase's `RegionInfo`),
//! persisted as `.regioninfo` in its directory, and the names HBase gives
//! regions and keys.
//!
//! Invariant: a region holds rows in `[start_key, end_key)`, an empty end
//! key meaning unbounded; `id` is unique in the store and never reused.
//!
//! Thread safety: plain values.

use serde::{Deserialize, Serialize};

/// A region's identity and key range, persisted beside its families.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfo {
    pub id: u64,
    pub table: String,
    /// Inclusive start row (empty: the table's first row).
    pub start_key: Vec<u8>,
    /// Exclusive end row (empty: unbounded).
    pub end_key: Vec<u8>,
    /// For a daughter of a split: the parent region's id.
    pub parent: Option<u64>,
    /// For a merged region: the ids of the regions it was merged from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<u64>,
}

impl RegionInfo {
    pub fn contains(&self, row: &[u8]) -> bool {
        row >= self.start_key.as_slice() && (self.end_key.is_empty() || row < self.end_key.as_slice())
    }

    /// The regions whose files this one may read through references: a
    /// split's parent, a merge's parents.
    pub fn parents(&self) -> impl Iterator<Item = u64> + '_ {
        self.parent.iter().chain(self.merged_from.iter()).copied()
    }

    pub fn dir_name(&self) -> String {
        crate::layout::region_dir_name(self.id)
    }

    /// The name HBase gives a region: table, start row, id (the encoded
    /// name, which is also the directory's name).
    pub fn region_name(&self) -> String {
        format!("{},{},{}", self.table, to_string_binary(&self.start_key), self.dir_name())
    }
}

/// A key as HBase's `Bytes.toStringBinary` prints it: printable ASCII as
/// is, every other byte as `\\xNN`.
pub fn to_string_binary(key: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(key.len());
    for &b in key {
        if (b' '..=b'~').contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}
