//! `StoreFileWriter`: writes one store file from cells arriving in
//! `compare_cells` order (a memstore snapshot on flush, a merge of files
//! on compaction).
//!
//! ```text
//! append(cell)* → finish(extra): last data block, bloom, index, meta, trailer, fsync
//!             ↘ abandon(): close and remove the partial file
//! ```
//!
//! Invariants:
//! - Cells are strictly increasing in `compare_cells` order: an append
//!   that is not after the previous cell (including an exact duplicate) is
//!   refused with `InvalidArgument` and changes nothing, so a bug upstream
//!   can never produce a file whose index and blocks disagree.
//! - `offset` is the number of bytes appended to the file; each data block
//!   is recorded in the index at the offset it was written at.
//! - After an I/O error the writer is *failed*: the file's contents are
//!   unknown, so every later `append`/`finish` is refused; `abandon` it.
//! - `finish` either returns a complete, synced file or an error with the
//!   partial file removed (best effort): a caller never has to clean up
//!   after a failed finish.
//!
//! The writer writes exactly the path it is given; committing the file
//! under its final name (write to a temporary name, rename atomically) is
//! the caller's job. Dropping a writer without `finish` or `abandon` leaves
//! the partial file behind for the store's startup cleanup.
//!
//! Memory: one block (plus its compressed copy), the index (one key per
//! block) and 8 bytes per bloom key until `finish`.
//!
//! Thread safety: a writer has one owner (`Send`, not shared).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use memstore::CellRef;
use memstore::cell::{bytes_equal, compare_cells};

use super::block_builder::BlockBuilder;
use super::block_codec::{BlockEncoder, BlockKind};
use super::block_index::IndexBuilder;
use super::bloom::{BloomBuilder, hash_row, hash_row_col};
use super::cell_format::{check_cell, push_key_only};
use super::display::describe_key;
use super::meta::{CellTypeCounts, FileMetaExtra, StoreFileInfo};
use super::options::{BloomType, Compression, StoreFileOptions};
use super::trailer::{FORMAT_VERSION, Trailer};
use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, WritableFile};

/// Largest cell a store file takes; block offsets and lengths are `u32`.
const MAX_CELL_LEN: usize = (u32::MAX / 2) as usize;
/// A block is closed before a cell would push it past what `u32` block
/// lengths can describe, whatever the target size.
const MAX_BLOCK_PAYLOAD: usize = u32::MAX as usize - (64 << 10);

/// Running totals for the metadata.
#[derive(Default)]
struct Tally {
    cells: u64,
    rows: u64,
    types: CellTypeCounts,
    min_seq: u64,
    max_seq: u64,
    min_ts: u64,
    max_ts: u64,
    earliest_put: Option<u64>,
    first_row: Option<Vec<u8>>,
    cell_bytes: u64,
    data_uncompressed: u64,
    data_on_disk: u64,
    blocks: u64,
}

pub struct StoreFileWriter {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    file: Box<dyn WritableFile>,
    options: StoreFileOptions,
    encoder: BlockEncoder,
    block: BlockBuilder,
    /// Key-only form of the current block's first cell.
    block_first_key: Vec<u8>,
    /// Key-only form of the last cell appended (empty before the first).
    last_key: Vec<u8>,
    frame: Vec<u8>,
    index: IndexBuilder,
    bloom: Option<BloomBuilder>,
    offset: u64,
    tally: Tally,
    failed: bool,
}

impl std::fmt::Debug for StoreFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreFileWriter")
            .field("path", &self.path)
            .field("cells", &self.tally.cells)
            .field("offset", &self.offset)
            .finish()
    }
}

impl StoreFileWriter {
    /// Creates (or truncates) `path` and starts a file.
    pub fn create(
        fs: Arc<dyn FileSystem>,
        path: impl AsRef<Path>,
        options: StoreFileOptions,
    ) -> Result<StoreFileWriter> {
        options.validate()?;
        let path = path.as_ref().to_path_buf();
        let file = fs.create(&path)?;
        let bloom = match options.bloom {
            BloomType::None => None,
            t => Some(BloomBuilder::new(t, options.bloom_bits_per_key)),
        };
        Ok(StoreFileWriter {
            fs,
            path,
            file,
            options,
            encoder: BlockEncoder::new(),
            block: BlockBuilder::new(),
            block_first_key: Vec::new(),
            last_key: Vec::new(),
            frame: Vec::new(),
            index: IndexBuilder::new(),
            bloom,
            offset: 0,
            tally: Tally::default(),
            failed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Cells appended so far.
    pub fn cell_count(&self) -> u64 {
        self.tally.cells
    }

    /// Bytes written to the file so far (data blocks only, until `finish`).
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(StoreError::InvalidArgument(format!(
                "store file writer for {} failed earlier; abandon it",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// Appends the next cell, which must sort strictly after the previous one.
    pub fn append(&mut self, cell: CellRef<'_>) -> Result<()> {
        self.check_usable()?;
        let enc = cell.encoded();
        check_cell(enc).map_err(|reason| StoreError::MalformedCell {
            place: format!("store file {}", self.path.display()),
            reason,
        })?;
        if enc.len() > MAX_CELL_LEN {
            return Err(StoreError::TooLarge {
                what: "store file cell",
                len: enc.len() as u64,
                limit: MAX_CELL_LEN as u64,
            });
        }
        let prev = (!self.last_key.is_empty()).then(|| CellRef::new(&self.last_key));
        if let Some(prev) = prev
            && compare_cells(&prev, &cell) != Ordering::Less
        {
            return Err(StoreError::InvalidArgument(format!(
                "cells out of order for store file {}: {} does not sort after {}",
                self.path.display(),
                describe_key(&cell),
                describe_key(&prev)
            )));
        }
        let new_row = prev.is_none_or(|p| !bytes_equal(p.row(), cell.row()));
        if let Some(bloom) = &mut self.bloom {
            match self.options.bloom {
                BloomType::Row if new_row => bloom.add_hash(hash_row(cell.row())),
                BloomType::RowCol if prev.is_none_or(|p| !p.same_column(&cell)) => {
                    bloom.add_hash(hash_row_col(cell.row(), cell.family(), cell.qualifier()))
                }
                _ => {}
            }
        }
        self.tally_cell(&cell, new_row);

        if !self.block.is_empty() && self.block.size() + enc.len() + 4 > MAX_BLOCK_PAYLOAD {
            self.flush_block()?;
        }
        if self.block.is_empty() {
            self.block_first_key.clear();
            push_key_only(&cell, &mut self.block_first_key);
        }
        self.block.add(enc);
        self.last_key.clear();
        push_key_only(&cell, &mut self.last_key);
        if self.block.size() >= self.options.block_size {
            self.flush_block()?;
        }
        Ok(())
    }

    fn tally_cell(&mut self, cell: &CellRef<'_>, new_row: bool) {
        let t = &mut self.tally;
        let (seq, ts) = (cell.seq(), cell.timestamp());
        if t.cells == 0 {
            (t.min_seq, t.max_seq, t.min_ts, t.max_ts) = (seq, seq, ts, ts);
            t.first_row = Some(cell.row().to_vec());
        } else {
            (t.min_seq, t.max_seq) = (t.min_seq.min(seq), t.max_seq.max(seq));
            (t.min_ts, t.max_ts) = (t.min_ts.min(ts), t.max_ts.max(ts));
        }
        t.cells += 1;
        t.rows += u64::from(new_row);
        t.types.add(cell.cell_type());
        if cell.cell_type() == memstore::CellType::Put {
            t.earliest_put = Some(t.earliest_put.map_or(ts, |e| e.min(ts)));
        }
        t.cell_bytes += cell.encoded().len() as u64;
    }

    /// Records the outcome of appending `len` bytes of `what`: on error
    /// the writer is failed (the file's contents are unknown).
    fn after_append(&mut self, what: &'static str, r: Result<()>, len: usize) -> Result<u64> {
        if let Err(e) = r {
            self.failed = true;
            tracing::warn!(path = %self.path.display(), section = what, error = %e, "store file write failed");
            return Err(e);
        }
        self.offset += len as u64;
        Ok(len as u64)
    }

    /// Appends the framed block in `self.frame`; returns its length.
    fn write_frame(&mut self, kind: BlockKind) -> Result<u64> {
        let r = self.file.append(&self.frame);
        self.after_append(kind.name(), r, self.frame.len())
    }

    /// Frames `payload` into `self.frame`.
    fn encode(&mut self, kind: BlockKind, compression: Compression, payload: &[u8]) -> Result<()> {
        let r = self.encoder.encode(kind, compression, payload, &mut self.frame);
        r.map(|_| ()).map_err(|e| {
            self.failed = true;
            StoreError::io("encode block of", &self.path, e)
        })
    }

    fn flush_block(&mut self) -> Result<()> {
        let payload = self.block.finish();
        self.tally.data_uncompressed += payload.len() as u64;
        let r = self.encoder.encode(BlockKind::Data, self.options.compression, payload, &mut self.frame);
        self.block.reset();
        if let Err(e) = r {
            self.failed = true;
            return Err(StoreError::io("encode block of", &self.path, e));
        }
        let size = u32::try_from(self.frame.len()).map_err(|_| {
            self.failed = true;
            StoreError::TooLarge {
                what: "store file data block",
                len: self.frame.len() as u64,
                limit: u64::from(u32::MAX),
            }
        })?;
        let offset = self.offset;
        self.write_frame(BlockKind::Data)?;
        self.index.add(offset, size, &self.block_first_key);
        self.tally.data_on_disk += u64::from(size);
        self.tally.blocks += 1;
        Ok(())
    }

    /// Writes the rest of the file, syncs it and returns its metadata. On
    /// error the partial file is removed (best effort) and the error returned.
    pub fn finish(self, extra: FileMetaExtra) -> Result<StoreFileInfo> {
        let fs = self.fs.clone();
        let path = self.path.clone();
        self.finish_inner(extra).inspect_err(|e| {
            tracing::warn!(path = %path.display(), error = %e, "store file finish failed; removing the partial file");
            if let Err(re) = fs.remove(&path) {
                tracing::warn!(path = %path.display(), error = %re, "could not remove a partial store file");
            }
        })
    }

    fn finish_inner(mut self, extra: FileMetaExtra) -> Result<StoreFileInfo> {
        self.check_usable()?;
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        let data_end = self.offset;

        let mut bloom_key_count = 0;
        let bloom_len = match self.bloom.take() {
            Some(bloom) => {
                bloom_key_count = bloom.key_count();
                let payload = bloom.finish();
                self.encode(BlockKind::Bloom, Compression::None, &payload)?;
                self.write_frame(BlockKind::Bloom)?
            }
            None => 0,
        };

        let index_offset = self.offset;
        let index = std::mem::replace(&mut self.index, IndexBuilder::new());
        let payload = index.finish(&self.last_key);
        self.encode(BlockKind::Index, Compression::None, &payload)?;
        let index_len = self.write_frame(BlockKind::Index)?;

        let t = std::mem::take(&mut self.tally);
        let mut info = StoreFileInfo {
            format_version: FORMAT_VERSION,
            cell_count: t.cells,
            row_count: t.rows,
            cell_types: t.types,
            min_seq_id: t.min_seq,
            max_seq_id: t.max_seq,
            min_timestamp: t.min_ts,
            max_timestamp: t.max_ts,
            earliest_put_timestamp: t.earliest_put,
            first_row: t.first_row,
            last_row: (!self.last_key.is_empty()).then(|| CellRef::new(&self.last_key).row().to_vec()),
            cell_bytes: t.cell_bytes,
            data_bytes_uncompressed: t.data_uncompressed,
            data_bytes_on_disk: t.data_on_disk,
            block_count: t.blocks,
            index_bytes: index_len,
            bloom_bytes: bloom_len,
            block_size: self.options.block_size as u64,
            compression: self.options.compression,
            bloom_type: self.options.bloom,
            bloom_bits_per_key: if self.options.bloom == BloomType::None { 0 } else { self.options.bloom_bits_per_key },
            bloom_key_count,
            created_at_ms: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
            extra,
            file_size: 0,
        };
        let meta = serde_json::to_vec(&info)
            .map_err(|e| StoreError::io("serialize metadata of", &self.path, std::io::Error::other(e.to_string())))?;
        let meta_offset = self.offset;
        self.encode(BlockKind::Meta, Compression::None, &meta)?;
        let meta_len = self.write_frame(BlockKind::Meta)?;

        let trailer = Trailer {
            version: FORMAT_VERSION,
            data_end,
            bloom_offset: data_end,
            bloom_len,
            index_offset,
            index_len,
            meta_offset,
            meta_len,
        };
        let trailer = trailer.encode();
        let r = self.file.append(&trailer);
        self.after_append("trailer", r, trailer.len())?;
        self.file.sync()?;
        self.file.close()?;
        info.file_size = self.offset;
        Ok(info)
    }

    /// Gives up on the file: closes it and removes it.
    pub fn abandon(self) -> Result<()> {
        // The contents no longer matter; a close error must not keep the
        // partial file around.
        if let Err(e) = self.file.close() {
            tracing::debug!(path = %self.path.display(), error = %e, "closing an abandoned store file");
        }
        if self.fs.exists(&self.path)? {
            self.fs.remove(&self.path)?;
        }
        Ok(())
    }
}
