//! The read path above a region: a table scan across regions
//! (`scanner.rs`, which follows splits and merges under it), one region's
//! scan (`region_scanner.rs`), rows assembled from a merged cursor
//! (`row_reader.rs`) over the cursors of memstore segments and store files
//! (`cursor.rs`), and HBase's filter language (`filter/`).
//!
//! Thread safety: see each module; scanners are owned by one caller.

pub mod cursor;
pub mod filter;
pub mod region_scanner;
pub mod row_reader;
pub mod scanner;
