//! `StoreFileReader`: an open store file — its trailer, block index, bloom
//! filter and metadata in memory, its data blocks read on demand through
//! the shared block cache.
//!
//! Opening reads the trailer, then the bloom, index and meta sections, and
//! checks each one and their agreement (sections tile the file, blocks tile
//! the data region, the metadata's counts match the index and the bloom).
//! A file that is not ours, truncated, or damaged anywhere outside the data
//! blocks fails to open with a `Corruption` naming it; damage in a data
//! block is found when that block is read (its checksum, its structure, and
//! its first cell against the index), also as `Corruption`. Nothing is
//! trusted before it is checked, so no bytes can make a reader panic.
//!
//! A split daughter reads its parent's file through a reference
//! (`reference.rs`): `open_half` gives a reader of the same file that sees
//! only the rows of one half — bloom and range checks and `row_before`
//! answer for that half, and its scanners stay inside it (`scanner.rs`).
//!
//! Thread safety: immutable after `open`; share it as `Arc` among any
//! number of scanners and threads. Block reads are positional, with no
//! shared file cursor.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use memstore::CellKey;
use memstore::cell::compare_cells;

use super::block::DataBlock;
use super::block_cache::BlockCache;
use super::block_codec::{self, BlockKind};
use super::block_index::BlockIndex;
use super::bloom::{BloomFilter, hash_row, hash_row_col};
use super::display::{describe_key, human_bytes};
use super::meta::StoreFileInfo;
use super::options::BloomType;
use super::reference::{Half, Reference};
use super::trailer::{TRAILER_LEN, Trailer};
use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, ReadableFile};

/// Where a read takes the data blocks the cache does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReads {
    /// From the file, adding them to the cache.
    ReadAndCache,
    /// From the file, leaving the cache as it was (compactions and full
    /// scans: HBase's `setCacheBlocks(false)`).
    ReadUncached,
    /// Nowhere: the read fails with [`StoreError::NotInCache`] (RocksDB's
    /// `kBlockCacheTier`), for a caller that must not wait on a disk and
    /// will hand the read to a thread that may.
    CacheOnly,
}

pub struct StoreFileReader {
    /// The file whose bytes are read.
    data_path: PathBuf,
    /// The name the store's manifest lists: `path` itself, or the reference
    /// through which a split daughter reads half of its parent's file.
    path: PathBuf,
    /// The half of the file this reader sees (a reference), or all of it.
    half: Option<Half>,
    file_id: u64,
    file: Arc<dyn ReadableFile>,
    cache: Option<Arc<BlockCache>>,
    /// Blocks go into the cache with in-memory priority (the family's
    /// IN_MEMORY); a hint read without ordering.
    in_memory_priority: AtomicBool,
    index: BlockIndex,
    bloom: Option<BloomFilter>,
    info: StoreFileInfo,
}

impl std::fmt::Debug for StoreFileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreFileReader")
            .field("path", &self.data_path)
            .field("file_id", &self.file_id)
            .field("blocks", &self.index.len())
            .field("cells", &self.info.cell_count)
            .finish()
    }
}

fn read_range(file: &dyn ReadableFile, offset: u64, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len)
        .map_err(|_| StoreError::corruption(file.path(), offset, format!("a section of {len} bytes")))?;
    let mut buf = vec![0; len];
    file.read_at(offset, &mut buf)?;
    Ok(buf)
}

fn read_section(file: &dyn ReadableFile, kind: BlockKind, offset: u64, len: u64) -> Result<Vec<u8>> {
    let frame = read_range(file, offset, len)?;
    block_codec::decode(file.path(), offset, kind, &frame)
}

impl StoreFileReader {
    /// Opens `path`. `fs` is an `Arc<dyn FileSystem>` or a `&dyn FileSystem`.
    /// `file_id` keys this file's blocks in `cache` and must be unique among
    /// the files sharing that cache.
    pub fn open(
        fs: impl Borrow<dyn FileSystem>,
        path: impl AsRef<Path>,
        file_id: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Arc<StoreFileReader>> {
        let path = path.as_ref();
        let file = fs.borrow().open(path)?;
        let len = file.len();
        if len < TRAILER_LEN as u64 {
            return Err(StoreError::corruption(
                path,
                0,
                format!("a {len}-byte file is too short to be a store file (the trailer alone is {TRAILER_LEN})"),
            ));
        }
        let tail = read_range(&*file, len - TRAILER_LEN as u64, TRAILER_LEN as u64)?;
        let trailer = Trailer::parse(path, len, &tail)?;

        let bloom = if trailer.bloom_len == 0 {
            None
        } else {
            let payload = read_section(&*file, BlockKind::Bloom, trailer.bloom_offset, trailer.bloom_len)?;
            let bloom = BloomFilter::parse(&payload)
                .map_err(|e| StoreError::corruption(path, trailer.bloom_offset, format!("bloom section: {e}")))?;
            Some(bloom)
        };
        let payload = read_section(&*file, BlockKind::Index, trailer.index_offset, trailer.index_len)?;
        let index = BlockIndex::parse(payload, trailer.data_end)
            .map_err(|e| StoreError::corruption(path, trailer.index_offset, format!("index section: {e}")))?;
        let payload = read_section(&*file, BlockKind::Meta, trailer.meta_offset, trailer.meta_len)?;
        let mut info: StoreFileInfo = serde_json::from_slice(&payload)
            .map_err(|e| StoreError::corruption(path, trailer.meta_offset, format!("meta section: {e}")))?;
        info.file_size = len;

        let bad_meta =
            |reason: String| StoreError::corruption(path, trailer.meta_offset, format!("meta section: {reason}"));
        if info.block_count != index.len() as u64 || (info.cell_count == 0) != index.is_empty() {
            return Err(bad_meta(format!(
                "{} cells in {} blocks, but the index has {} blocks",
                info.cell_count,
                info.block_count,
                index.len()
            )));
        }
        if info.cell_types.total() != info.cell_count {
            return Err(bad_meta(format!("cell types add up to {}, not {}", info.cell_types.total(), info.cell_count)));
        }
        let bloom_type = bloom.as_ref().map_or(BloomType::None, BloomFilter::bloom_type);
        if info.bloom_type != bloom_type {
            return Err(bad_meta(format!("says bloom {}, the file has {bloom_type}", info.bloom_type)));
        }
        let last_row = index.last_key().map(|k| k.row().to_vec());
        let first_row = (!index.is_empty()).then(|| index.first_key(0).row().to_vec());
        if info.last_row != last_row || info.first_row != first_row {
            return Err(bad_meta("the first and last rows disagree with the index".to_string()));
        }

        Ok(Arc::new(StoreFileReader {
            data_path: path.to_path_buf(),
            path: path.to_path_buf(),
            half: None,
            file_id,
            file,
            cache,
            in_memory_priority: AtomicBool::new(false),
            index,
            bloom,
            info,
        }))
    }

    /// Opens `data_path` through the reference at `reference_path`: the
    /// reader sees only `half` of the file's rows. Its size and cell count
    /// are estimated as half the file's (as HBase estimates a reference's);
    /// everything else in its metadata is the whole file's.
    pub fn open_half(
        fs: impl Borrow<dyn FileSystem>,
        reference_path: impl AsRef<Path>,
        data_path: impl AsRef<Path>,
        half: Half,
        file_id: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Arc<StoreFileReader>> {
        let whole = Self::open(fs, data_path, file_id, cache)?;
        let mut reader = Arc::into_inner(whole).expect("a reader just opened has no other owner");
        reader.path = reference_path.as_ref().to_path_buf();
        reader.info.file_size /= 2;
        reader.info.cell_count /= 2;
        reader.half = Some(half);
        Ok(Arc::new(reader))
    }

    /// Opens what a manifest lists at `path`: a store file, or — for a
    /// reference (`*.ref`) — the half of the parent's file it names.
    pub fn open_listed(
        fs: Arc<dyn FileSystem>,
        path: impl AsRef<Path>,
        file_id: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Arc<StoreFileReader>> {
        let path = path.as_ref();
        let is_reference = path.file_name().is_some_and(|n| Reference::is_reference_name(&n.to_string_lossy()));
        if !is_reference {
            return Self::open(fs, path, file_id, cache);
        }
        let reference = Reference::read(fs.as_ref(), path)?;
        let family_dir = path.parent().unwrap_or(Path::new(""));
        let target = reference.target(family_dir)?;
        Self::open_half(fs, path, &target, reference.half, file_id, cache)
    }

    /// The path the manifest lists (the reference for a half file): what a
    /// compaction removes when the file is compacted away.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file read (the parent's file for a half file).
    pub fn data_path(&self) -> &Path {
        &self.data_path
    }

    /// The half this reader sees, if it reads through a reference.
    pub fn half(&self) -> Option<&Half> {
        self.half.as_ref()
    }

    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// The file's metadata.
    pub fn info(&self) -> &StoreFileInfo {
        &self.info
    }

    pub fn index(&self) -> &BlockIndex {
        &self.index
    }

    pub fn bloom(&self) -> Option<&BloomFilter> {
        self.bloom.as_ref()
    }

    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.cache.as_ref()
    }

    /// Whether the file may hold cells of `row`. False means certainly not.
    /// Always true without a ROW bloom filter (a ROWCOL filter can't tell).
    pub fn might_contain_row(&self, row: &[u8]) -> bool {
        if !self.row_in_range(row) {
            return false;
        }
        match &self.bloom {
            Some(b) if b.bloom_type() == BloomType::Row => b.might_contain_hash(hash_row(row)),
            _ => true,
        }
    }

    /// Whether the file may hold cells a get of column `family:qualifier`
    /// of `row` must see: cells of that column or family-wide delete
    /// markers of its family. False means certainly not.
    pub fn might_contain(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> bool {
        if !self.row_in_range(row) {
            return false;
        }
        match &self.bloom {
            Some(b) if b.bloom_type() == BloomType::Row => b.might_contain_hash(hash_row(row)),
            Some(b) => {
                b.might_contain_hash(hash_row_col(row, family, qualifier))
                    || (self.info.has_family_deletes() && b.might_contain_hash(hash_row_col(row, family, b"")))
            }
            None => true,
        }
    }

    /// Whether `row` is within the file's first and last rows (and half).
    fn row_in_range(&self, row: &[u8]) -> bool {
        if self.half.as_ref().is_some_and(|h| !h.contains(row)) {
            return false;
        }
        match (&self.info.first_row, &self.info.last_row) {
            (Some(first), Some(last)) => first.as_slice() <= row && row <= last.as_slice(),
            _ => false,
        }
    }

    /// Caches this file's blocks with in-memory priority (HBase's IN_MEMORY
    /// family setting), or not.
    pub fn set_in_memory_priority(&self, yes: bool) {
        self.in_memory_priority.store(yes, AtomicOrdering::Relaxed);
    }

    /// Reads data block `i`: from the cache when there is one and it holds
    /// the block, else from the file as `reads` allows.
    pub fn read_block(&self, i: usize, reads: BlockReads) -> Result<Arc<DataBlock>> {
        let (offset, size) = self.index.block(i);
        if let Some(cache) = &self.cache
            && let Some(b) = cache.get(self.file_id, offset)
        {
            return Ok(b);
        }
        if reads == BlockReads::CacheOnly {
            return Err(StoreError::NotInCache { path: self.data_path.clone(), offset });
        }
        let frame = read_range(&*self.file, offset, u64::from(size))?;
        let (buffer, payload) = block_codec::decode_owned(&self.data_path, offset, BlockKind::Data, frame)?;
        let bad = |reason: String| StoreError::corruption(&self.data_path, offset, format!("data block {i}: {reason}"));
        let block = DataBlock::parse_within(buffer, payload).map_err(bad)?;
        if compare_cells(&block.cell(0), &self.index.first_key(i)) != Ordering::Equal {
            return Err(bad(format!(
                "first cell {} is not the index's {}",
                describe_key(&block.cell(0)),
                describe_key(&self.index.first_key(i))
            )));
        }
        if i + 1 < self.index.len() {
            if compare_cells(&block.cell(block.len() - 1), &self.index.first_key(i + 1)) != Ordering::Less {
                return Err(bad("its last cell is not before the next block's first".to_string()));
            }
        } else if let Some(last) = self.index.last_key()
            && compare_cells(&block.cell(block.len() - 1), &last) != Ordering::Equal
        {
            return Err(bad("its last cell is not the file's last key".to_string()));
        }
        let block = Arc::new(block);
        if reads == BlockReads::ReadAndCache
            && let Some(cache) = &self.cache
        {
            let in_memory = self.in_memory_priority.load(AtomicOrdering::Relaxed);
            cache.insert_with_priority(self.file_id, offset, block.clone(), in_memory);
        }
        Ok(block)
    }

    /// The row of the last cell strictly before the first cell of `row`
    /// (the greatest row `< row`), or the file's last row for `None`: the
    /// step of a reverse scan. Reads at most one block.
    pub fn row_before(&self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let Some(half) = &self.half else { return self.whole_row_before(row) };
        if half.top {
            // The whole file's answer, unless it lies in the bottom half.
            Ok(self.whole_row_before(row)?.filter(|r| half.contains(r)))
        } else {
            // Nothing at or after the split row exists in the bottom half.
            let split = half.split_row.as_slice();
            self.whole_row_before(Some(row.map_or(split, |r| r.min(split))))
        }
    }

    fn whole_row_before(&self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let Some(row) = row else {
            return Ok(self.info.last_row.clone());
        };
        let key = CellKey::first_on_row(row);
        // Blocks starting before `key`: the last of them holds the last
        // cell before it (its first cell is before `key`, so it has one).
        let n = self.index.blocks_before(&key);
        if n == 0 {
            return Ok(None);
        }
        let block = self.read_block(n - 1, BlockReads::ReadAndCache)?;
        let i = block.lower_bound(&key, 0);
        Ok(Some(block.cell(i.max(1) - 1).row().to_vec()))
    }

    /// A row near the middle of the file's rows, from the block index (the
    /// first row of the middle block, as HBase's `midKey`); `None` with
    /// fewer than two blocks.
    pub fn middle_row(&self) -> Option<Vec<u8>> {
        (self.index.len() >= 2).then(|| self.index.first_key(self.index.len() / 2).row().to_vec())
    }

    /// A human-readable report: the file, its metadata and key range
    /// (`accordion inspect FILE`).
    pub fn describe(&self) -> String {
        let mut s = format!("store file:         {}\nfile id:            {}\n", self.data_path.display(), self.file_id);
        if let Some(h) = &self.half {
            let side = if h.top { "top (rows >= split)" } else { "bottom (rows < split)" };
            s.push_str(&format!(
                "through reference:  {}\nhalf:               {side}, split row {}\n",
                self.path.display(),
                String::from_utf8_lossy(&h.split_row)
            ));
        }
        s.push_str(&self.info.to_string());
        if let Some(first) = (!self.index.is_empty()).then(|| self.index.first_key(0)) {
            s.push_str(&format!("first key:          {}\n", describe_key(&first)));
        }
        if let Some(last) = self.index.last_key() {
            s.push_str(&format!("last key:           {}\n", describe_key(&last)));
        }
        s.push_str(&format!("index in memory:    {}\n", human_bytes(self.index.size_bytes() as u64)));
        if let Some(b) = &self.bloom {
            s.push_str(&format!("bloom in memory:    {}\n", human_bytes(b.size_bytes() as u64)));
        }
        s
    }
}

/// [`StoreFileReader::describe`] as a free function.
pub fn describe(reader: &StoreFileReader) -> String {
    reader.describe()
}
