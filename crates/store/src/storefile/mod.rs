//! Store files (our HFile): the immutable, sorted files a store flushes
//! its memstore into and compacts, docs/DESIGN.md §5.
//!
//! # File layout
//!
//! ```text
//! ┌──────────────────────────────┐ 0
//! │ data block 0                 │  cells in compare_cells order + offsets array
//! │ …                            │  each block framed: header, payload, crc32c
//! │ data block n-1               │  (payload LZ4/Zstd-compressed when it pays)
//! ├──────────────────────────────┤ data_end = bloom_offset
//! │ bloom block (optional)       │  ROW or ROWCOL bloom filter
//! ├──────────────────────────────┤ index_offset
//! │ index block                  │  per data block: offset, size, first key; last key
//! ├──────────────────────────────┤ meta_offset
//! │ meta block                   │  StoreFileInfo as JSON (seq ids, time range, counts…)
//! ├──────────────────────────────┤ file_len - 72
//! │ trailer (fixed, 72 bytes)    │  version, section offsets/lengths, crc32c, "ACCSTF01"
//! └──────────────────────────────┘ file_len
//! ```
//!
//! Every byte of the file is covered by a checksum (each block's crc32c,
//! the trailer's), and the sections must tile the file exactly, so damage
//! anywhere is reported as `StoreError::Corruption` naming the file and
//! offset — on open for the trailer, bloom, index and meta, on read for a
//! data block.
//!
//! # Files
//!
//! - [`options`]: block size, compression, bloom type.
//! - [`writer`]: `StoreFileWriter`, appending cells in order and finishing the file.
//! - [`reader`]: `StoreFileReader`, opening and checking a file, bloom
//!   queries, block reads, `row_before`, `describe`.
//! - [`scanner`]: `StoreFileScanner`, the seekable cursor of the read path.
//! - [`reference`]: half files, how split daughters read their parent's files.
//! - [`block_cache`]: the shared cache of decoded blocks (CLOCK, shared-lock hits).
//! - [`block`], `block_builder`: a data block, decoded and being built.
//! - `block_codec`: the framing, checksum and compression of every block.
//! - [`block_index`], [`bloom`], [`meta`], `trailer`: the other sections.
//! - `cell_format`: checking cells read from disk before `CellRef` sees them.
//! - [`display`]: showing keys and metadata to people.

pub mod block;
mod block_builder;
pub mod block_cache;
mod block_codec;
pub mod block_index;
pub mod bloom;
mod cell_format;
pub mod display;
pub mod meta;
pub mod options;
pub mod reader;
pub mod reference;
pub mod scanner;
mod trailer;
pub mod writer;

pub use block::DataBlock;
pub use block_cache::{BlockCache, BlockCacheStats};
pub use meta::{CellTypeCounts, FileMetaExtra, StoreFileInfo};
pub use options::{BloomType, Compression, DEFAULT_BLOCK_SIZE, DEFAULT_BLOOM_BITS_PER_KEY, StoreFileOptions};
pub use reader::{BlockReads, StoreFileReader, describe};
pub use reference::{Half, Reference};
pub use scanner::{StoreFileCells, StoreFileScanner};
pub use writer::StoreFileWriter;

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread-safety promises of the module headers, checked by the compiler.
    #[test]
    fn shared_types_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<StoreFileReader>();
        send_sync::<BlockCache>();
        send_sync::<DataBlock>();
        send::<StoreFileScanner>();
        send::<StoreFileCells>();
        send::<StoreFileWriter>();
    }
}
