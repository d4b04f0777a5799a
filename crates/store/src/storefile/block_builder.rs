//! `BlockBuilder`: accumulates cells into the payload of one data block
//! (layout in `block.rs`) while a file is written.
//!
//! Invariants: `buf` holds whole cells back to back; `offsets[i]` is where
//! cell `i` starts. The writer keeps the block below `MAX_BLOCK_SIZE` plus
//! one cell, so offsets fit in `u32`.
//!
//! Thread safety: owned by one writer.

pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
}

impl BlockBuilder {
    pub(crate) fn new() -> BlockBuilder {
        BlockBuilder { buf: Vec::new(), offsets: Vec::new() }
    }

    /// Appends one encoded cell.
    pub(crate) fn add(&mut self, cell: &[u8]) {
        debug_assert!(self.buf.len() <= u32::MAX as usize, "block offsets overflow");
        self.offsets.push(self.buf.len() as u32);
        self.buf.extend_from_slice(cell);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The payload size if the block were finished now.
    pub(crate) fn size(&self) -> usize {
        self.buf.len() + 4 * self.offsets.len() + 4
    }

    /// Appends the offsets and count and returns the payload; call
    /// [`reset`](Self::reset) before adding again.
    pub(crate) fn finish(&mut self) -> &[u8] {
        for &o in &self.offsets {
            self.buf.extend_from_slice(&o.to_be_bytes());
        }
        self.buf.extend_from_slice(&(self.offsets.len() as u32).to_be_bytes());
        &self.buf
    }

    /// Empties the builder, keeping its allocations.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.offsets.clear();
    }
}
