//! `StoreFileScanner`: a cursor over one store file's cells, in the style
//! of the memstore's cursors (`current` / `advance` / `seek`), for the
//! read path's merging iterator; and [`StoreFileCells`], an iterator of
//! owned cells for tools.
//!
//! A scanner starts unpositioned (`current()` is `None`) until `seek` or
//! `seek_to_first`, like HBase's StoreFileScanner, so creating one costs
//! no I/O. A seek forward within the current block (the common case: the
//! next column, the next row) searches that block only: one key compare
//! against the next block's first key instead of an index search and a
//! cache lookup.
//!
//! Invariants: when `pos` is `Some((b, c))`, `block` holds data block `b`
//! and `c < block.len()`; when `pos` is `None` the scanner is exhausted (or
//! unpositioned). An I/O or corruption error leaves the scanner exhausted.
//! Over a half file the current cell is always in the half: seeks of a top
//! half start at the split row at the earliest, and a bottom half is
//! exhausted at the first cell at or past it.
//!
//! Thread safety: owned by one reader; it holds its file's reader and its
//! current block alive (so a block evicted from the cache meanwhile stays
//! readable).

use std::cmp::Ordering;
use std::sync::Arc;

use memstore::{Cell, CellKey, CellRef};

use super::block::DataBlock;
use super::reader::{BlockReads, StoreFileReader};
use crate::error::Result;

/// The reader's cursors, defined beside the cursor (the reader itself
/// knows nothing of scanning: no import circle between the two).
impl StoreFileReader {
    /// A cursor over the file's cells, adding blocks it reads to the cache.
    /// It is unpositioned until `seek` or `seek_to_first`.
    pub fn scanner(self: &Arc<Self>) -> StoreFileScanner {
        self.scanner_with(BlockReads::ReadAndCache)
    }

    /// A cursor that does not add the blocks it reads to the cache (it still
    /// uses blocks already there): for compactions and full scans, which
    /// would otherwise flush the cache's working set (HBase's
    /// `setCacheBlocks(false)`).
    pub fn scanner_uncached(self: &Arc<Self>) -> StoreFileScanner {
        self.scanner_with(BlockReads::ReadUncached)
    }

    /// A cursor that takes its blocks as `reads` says.
    pub fn scanner_with(self: &Arc<Self>, reads: BlockReads) -> StoreFileScanner {
        StoreFileScanner::new(self.clone(), reads)
    }

    /// Every cell in order, as owned cells (for tools such as `inspect --cells`).
    pub fn cells(self: &Arc<Self>) -> StoreFileCells {
        StoreFileCells::new(self.scanner_uncached())
    }

    /// All cells of `row`, in order (none if the bloom filter rules it out).
    pub fn get_row_cells(self: &Arc<Self>, row: &[u8]) -> Result<Vec<Cell>> {
        let mut out = Vec::new();
        if !self.might_contain_row(row) {
            return Ok(out);
        }
        let mut s = self.scanner();
        s.seek(&CellKey::first_on_row(row))?;
        while let Some(c) = s.current() {
            if c.row() != row {
                break;
            }
            out.push(c.to_cell());
            s.advance()?;
        }
        Ok(out)
    }
}

pub struct StoreFileScanner {
    reader: Arc<StoreFileReader>,
    reads: BlockReads,
    /// The last block loaded, with its index (kept after exhaustion so a
    /// seek back into it needs no read).
    block: Option<(usize, Arc<DataBlock>)>,
    pos: Option<(usize, usize)>,
}

impl std::fmt::Debug for StoreFileScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreFileScanner").field("file", &self.reader.path()).field("pos", &self.pos).finish()
    }
}

impl StoreFileScanner {
    pub(crate) fn new(reader: Arc<StoreFileReader>, reads: BlockReads) -> StoreFileScanner {
        StoreFileScanner { reader, reads, block: None, pos: None }
    }

    pub fn reader(&self) -> &Arc<StoreFileReader> {
        &self.reader
    }

    /// Positions at cell `c` of block `b`, loading the block unless it is
    /// the one already held; returns the block.
    fn position(&mut self, b: usize, c: usize) -> Result<&DataBlock> {
        self.pos = None;
        let block = match self.block.take() {
            Some((i, block)) if i == b => block,
            _ => self.reader.read_block(b, self.reads)?,
        };
        self.pos = Some((b, c));
        Ok(&self.block.insert((b, block)).1)
    }

    /// Positions at the first cell of block `b`, or past the end when `b`
    /// is the number of blocks.
    fn enter_block(&mut self, b: usize) -> Result<()> {
        if b < self.reader.index().len() {
            self.position(b, 0).map(|_| ())
        } else {
            self.pos = None;
            Ok(())
        }
    }

    /// The block currently positioned in.
    fn current_block(&self) -> Option<&DataBlock> {
        self.pos.and(self.block.as_ref()).map(|(_, b)| &**b)
    }

    /// The current cell, or `None` when exhausted or unpositioned.
    #[inline]
    pub fn current(&self) -> Option<CellRef<'_>> {
        let (_, c) = self.pos?;
        self.current_block().map(|b| b.cell(c))
    }

    /// Moves to the first cell of the file (of its half).
    pub fn seek_to_first(&mut self) -> Result<()> {
        match self.reader.half() {
            Some(h) if h.top => {
                let split = h.split_row.clone();
                self.seek(&CellKey::first_on_row(&split))
            }
            _ => self.enter_block(0).map(|()| self.clip()),
        }
    }

    /// Moves to the next cell (no-op when exhausted).
    pub fn advance(&mut self) -> Result<()> {
        let Some((b, c)) = self.pos else { return Ok(()) };
        if c + 1 < self.current_block().map_or(0, DataBlock::len) {
            self.pos = Some((b, c + 1));
        } else {
            self.enter_block(b + 1)?;
        }
        self.clip();
        Ok(())
    }

    /// A bottom half ends before the split row: a cell at or past it
    /// exhausts the scanner. (A top half starts at the split row: seeks are
    /// clamped to it, and it ends where the file does.)
    #[inline]
    fn clip(&mut self) {
        if let Some(h) = self.reader.half()
            && !h.top
            && self.current().is_some_and(|c| c.row() >= h.split_row.as_slice())
        {
            self.pos = None;
        }
    }

    /// Moves to the first cell `>= key` (exhausted if there is none). Works
    /// in both directions.
    pub fn seek(&mut self, key: &CellKey<'_>) -> Result<()> {
        if let Some(h) = self.reader.half()
            && h.top
            && key.row < h.split_row.as_slice()
        {
            let split = h.split_row.clone();
            self.seek_whole(&CellKey::first_on_row(&split))?;
        } else {
            self.seek_whole(key)?;
        }
        self.clip();
        Ok(())
    }

    fn seek_whole(&mut self, key: &CellKey<'_>) -> Result<()> {
        let n = self.reader.index().len();
        // Forward within the current block: when the key is past the
        // current cell and not past the next block's first key, the answer
        // is in this block or is the next block's first cell.
        let within = match (self.pos, &self.block) {
            (Some((b, c)), Some((_, block)))
                if block.cell(c).compare_key(key) == Ordering::Less
                    && (b + 1 == n || self.reader.index().first_key(b + 1).compare_key(key) != Ordering::Less) =>
            {
                Some((b, block.lower_bound(key, c + 1), block.len()))
            }
            _ => None,
        };
        let (b, i, len) = match within {
            Some(found) => found,
            None => {
                // The first cell >= key is in the last block starting before
                // the key, or is the first cell of the block after it.
                let before = self.reader.index().blocks_before(key);
                if before == 0 {
                    return self.enter_block(0);
                }
                let block = self.position(before - 1, 0)?;
                (before - 1, block.lower_bound(key, 0), block.len())
            }
        };
        if i < len {
            self.pos = Some((b, i));
            Ok(())
        } else {
            self.enter_block(b + 1)
        }
    }

    /// The row of the last cell strictly before the first cell of `row`, or
    /// the file's last row for `None` (for reverse scans; mirrors
    /// `MergingCursor::row_before`). Does not move the scanner.
    pub fn row_before(&self, row: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        self.reader.row_before(row)
    }
}

/// Every cell of a file, in order, as owned cells. Stops after the first
/// error (which it yields).
pub struct StoreFileCells {
    scanner: StoreFileScanner,
    started: bool,
    done: bool,
}

impl StoreFileCells {
    pub(crate) fn new(scanner: StoreFileScanner) -> StoreFileCells {
        StoreFileCells { scanner, started: false, done: false }
    }
}

impl Iterator for StoreFileCells {
    type Item = Result<Cell>;

    fn next(&mut self) -> Option<Result<Cell>> {
        if self.done {
            return None;
        }
        let step = if self.started { self.scanner.advance() } else { self.scanner.seek_to_first() };
        self.started = true;
        if let Err(e) = step {
            self.done = true;
            return Some(Err(e));
        }
        match self.scanner.current() {
            Some(c) => Some(Ok(c.to_cell())),
            None => {
                self.done = true;
                None
            }
        }
    }
}
