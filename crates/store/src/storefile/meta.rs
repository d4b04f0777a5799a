//! The metadata section of a store file (HBase's "file info"): what a
//! store needs to know about a file without reading its data — sequence
//! ids (for WAL replay and compaction ordering), the time range (to skip
//! files for time-bounded reads), counts per cell type (to decide whether a
//! compaction can drop deletes), the key range, sizes, how the file was
//! written, and what the caller asked to record ([`FileMetaExtra`]).
//!
//! Stored as JSON inside a checksummed meta block: small, written once per
//! file, easy to evolve (new fields take `#[serde(default)]`) and readable
//! by hand. `file_size` is not stored (the metadata is written before the
//! file's length is known); readers fill it from the file.
//!
//! Thread safety: plain values.

use std::collections::BTreeMap;
use std::fmt;

use memstore::CellType;
use serde::{Deserialize, Serialize};

use super::display::{escape_bytes, human_bytes};
use super::options::{BloomType, Compression};

/// What the caller records in a file beyond what the writer measures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMetaExtra {
    /// Whether the file is the output of a major compaction (it then holds
    /// every cell of the store up to its max seq id, so no delete marker in
    /// older files can still matter).
    #[serde(default)]
    pub major_compaction: bool,
    /// Names of the files this one was compacted from (HBase's compaction
    /// event marker), so that a store opening after a crash between
    /// committing the output and removing the inputs can tell they are
    /// obsolete.
    #[serde(default)]
    pub compacted_from: Vec<String>,
    /// Free-form properties.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// Cells per type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellTypeCounts {
    pub puts: u64,
    pub deletes: u64,
    pub delete_family_versions: u64,
    pub delete_columns: u64,
    pub delete_families: u64,
}

impl CellTypeCounts {
    pub(crate) fn add(&mut self, t: CellType) {
        match t {
            CellType::Put => self.puts += 1,
            CellType::Delete => self.deletes += 1,
            CellType::DeleteFamilyVersion => self.delete_family_versions += 1,
            CellType::DeleteColumn => self.delete_columns += 1,
            CellType::DeleteFamily => self.delete_families += 1,
        }
    }

    /// Delete markers of all four kinds. (Saturating: the counts may come
    /// from a damaged file, and checking them must not overflow.)
    pub fn delete_markers(&self) -> u64 {
        self.deletes
            .saturating_add(self.delete_family_versions)
            .saturating_add(self.delete_columns)
            .saturating_add(self.delete_families)
    }

    /// All cells.
    pub fn total(&self) -> u64 {
        self.puts.saturating_add(self.delete_markers())
    }
}

/// Everything known about a store file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreFileInfo {
    pub format_version: u32,
    /// Cells in the file.
    pub cell_count: u64,
    /// Distinct rows.
    pub row_count: u64,
    pub cell_types: CellTypeCounts,
    /// Smallest and largest cell sequence id (0 and 0 for an empty file).
    pub min_seq_id: u64,
    pub max_seq_id: u64,
    /// Smallest and largest cell timestamp, all types (0 and 0 when empty).
    pub min_timestamp: u64,
    pub max_timestamp: u64,
    /// Smallest timestamp of a put (HBase's EARLIEST_PUT_TS).
    pub earliest_put_timestamp: Option<u64>,
    pub first_row: Option<Vec<u8>>,
    pub last_row: Option<Vec<u8>>,
    /// Sum of the cells' encoded sizes.
    pub cell_bytes: u64,
    /// Data block payloads before compression (cells plus in-block offsets).
    pub data_bytes_uncompressed: u64,
    /// Data blocks as stored (framed, maybe compressed).
    pub data_bytes_on_disk: u64,
    pub block_count: u64,
    /// On-disk sizes of the index and bloom sections.
    pub index_bytes: u64,
    pub bloom_bytes: u64,
    /// Target block size the file was written with.
    pub block_size: u64,
    pub compression: Compression,
    pub bloom_type: BloomType,
    pub bloom_bits_per_key: u32,
    /// Keys in the bloom filter (rows, or columns for ROWCOL).
    pub bloom_key_count: u64,
    /// When the writer finished, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    pub extra: FileMetaExtra,
    /// The file's length in bytes (not stored; filled in on write and open).
    #[serde(skip)]
    pub file_size: u64,
}

impl StoreFileInfo {
    /// Whether the file is a major compaction's output.
    pub fn major_compaction(&self) -> bool {
        self.extra.major_compaction
    }

    /// Whether the file holds any family-wide delete marker.
    pub fn has_family_deletes(&self) -> bool {
        self.cell_types.delete_families > 0 || self.cell_types.delete_family_versions > 0
    }
}

fn opt_row(r: &Option<Vec<u8>>) -> String {
    r.as_deref().map_or_else(|| "-".to_string(), |r| format!("\"{}\"", escape_bytes(r)))
}

impl fmt::Display for StoreFileInfo {
    /// The report of `accordion inspect`: one fact per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.cell_types;
        writeln!(f, "format version:     {}", self.format_version)?;
        writeln!(f, "file size:          {} ({} bytes)", human_bytes(self.file_size), self.file_size)?;
        writeln!(f, "cells:              {}", self.cell_count)?;
        writeln!(
            f,
            "  by type:          put {}, delete {}, delete-column {}, delete-family {}, delete-family-version {}",
            t.puts, t.deletes, t.delete_columns, t.delete_families, t.delete_family_versions
        )?;
        writeln!(f, "rows:               {}", self.row_count)?;
        writeln!(f, "first row:          {}", opt_row(&self.first_row))?;
        writeln!(f, "last row:           {}", opt_row(&self.last_row))?;
        writeln!(f, "seq ids:            {} ..= {}", self.min_seq_id, self.max_seq_id)?;
        writeln!(f, "timestamps:         {} ..= {}", self.min_timestamp, self.max_timestamp)?;
        match self.earliest_put_timestamp {
            Some(ts) => writeln!(f, "earliest put:       {ts}")?,
            None => writeln!(f, "earliest put:       -")?,
        }
        writeln!(
            f,
            "data blocks:        {} (target size {}); cells {}, uncompressed {}, on disk {} ({})",
            self.block_count,
            human_bytes(self.block_size),
            human_bytes(self.cell_bytes),
            human_bytes(self.data_bytes_uncompressed),
            human_bytes(self.data_bytes_on_disk),
            self.compression
        )?;
        writeln!(f, "block index:        {}", human_bytes(self.index_bytes))?;
        if self.bloom_type == BloomType::None {
            writeln!(f, "bloom filter:       NONE")?;
        } else {
            writeln!(
                f,
                "bloom filter:       {}, {} keys, {} bits/key, {}",
                self.bloom_type,
                self.bloom_key_count,
                self.bloom_bits_per_key,
                human_bytes(self.bloom_bytes)
            )?;
        }
        writeln!(f, "created at (ms):    {}", self.created_at_ms)?;
        writeln!(f, "major compaction:   {}", self.extra.major_compaction)?;
        if !self.extra.compacted_from.is_empty() {
            writeln!(f, "compacted from:     {}", self.extra.compacted_from.join(", "))?;
        }
        for (k, v) in &self.extra.properties {
            writeln!(f, "property:           {k} = {v}")?;
        }
        Ok(())
    }
}
