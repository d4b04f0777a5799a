//! The cells one read returns, copied once into one buffer:
//! [`CellCollector`] gathers them as the read finds them, and hands them
//! out either as owned [`Cell`]s sharing the buffer or, for a caller that
//! only looks at them, as [`RowCells`]: the buffer itself, read in place
//! through [`CellRef`]s.
//!
//! Why two forms: an owned `Cell` is four reference-counted `Bytes`, and a
//! scan of short rows spent 14 % of its samples making them
//! (profile of YCSB E, `bench-results/issue28-row-cells/`). A row read in
//! place costs one buffer and no count per field.
//!
//! Thread safety: a `CellCollector` is owned by one reader; a `RowCells`
//! is immutable and cheap to clone (it shares its buffer), so it may be
//! sent and shared freely.

use bytes::Bytes;

use crate::cell::{Cell, CellRef, encoded_len_at};

/// Collects the cells a read returns by copying their encodings into one
/// buffer: one allocation per row (or per get) where copying each field
/// cost four per cell.
#[derive(Debug, Default)]
pub struct CellCollector {
    /// Whole encoded cells, back to back (each one's header gives its
    /// length, so no offsets are kept).
    encoded: Vec<u8>,
    cells: usize,
    /// Where the cell pushed last starts.
    last_at: usize,
}

impl CellCollector {
    pub fn new() -> CellCollector {
        CellCollector::default()
    }

    /// A collector whose buffer starts with room for `bytes` of encoded
    /// cells (a scanner passes the size of the row before, so that a row
    /// of ten cells is not copied through five growing buffers).
    pub fn with_capacity(bytes: usize) -> CellCollector {
        CellCollector { encoded: Vec::with_capacity(bytes), cells: 0, last_at: 0 }
    }

    /// Bytes of encoded cells collected since the last `take`.
    pub fn encoded_len(&self) -> usize {
        self.encoded.len()
    }

    /// Copies `cell` in.
    pub fn push(&mut self, cell: CellRef<'_>) {
        self.last_at = self.encoded.len();
        self.encoded.extend_from_slice(cell.encoded());
        self.cells += 1;
    }

    /// How many cells were collected since the last `take`.
    pub fn len(&self) -> usize {
        self.cells
    }

    pub fn is_empty(&self) -> bool {
        self.cells == 0
    }

    /// The cell pushed last, in the collector's buffer (a reader that must
    /// remember a cell's column after moving past it compares with this
    /// copy instead of making another).
    pub fn last(&self) -> Option<CellRef<'_>> {
        (self.cells > 0).then(|| CellRef::new(&self.encoded[self.last_at..]))
    }

    /// The collected cells as one shared buffer; the collector is empty
    /// after.
    pub fn take_row(&mut self) -> RowCells {
        let row = RowCells { encoded: Bytes::from(std::mem::take(&mut self.encoded)), cells: self.cells };
        self.cells = 0;
        self.last_at = 0;
        row
    }

    /// The collected cells, in the order pushed, as owned cells sharing
    /// one buffer; the collector is empty after.
    pub fn take(&mut self) -> Vec<Cell> {
        self.take_row().to_cells()
    }
}

/// The cells of one row (or of one get), encoded back to back in one
/// shared buffer, in the order the read returned them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowCells {
    encoded: Bytes,
    cells: usize,
}

impl RowCells {
    /// Encodes `cells` (each with its own sequence id) into one buffer.
    pub fn from_cells(cells: &[Cell]) -> RowCells {
        let mut collector = CellCollector::with_capacity(cells.iter().map(|c| c.as_input().encoded_len()).sum());
        for c in cells {
            let input = c.as_input();
            let at = collector.encoded.len();
            collector.encoded.resize(at + input.encoded_len(), 0);
            input.encode_into(c.seq, &mut collector.encoded[at..]);
            collector.last_at = at;
            collector.cells += 1;
        }
        collector.take_row()
    }

    /// How many cells.
    pub fn len(&self) -> usize {
        self.cells
    }

    pub fn is_empty(&self) -> bool {
        self.cells == 0
    }

    /// Bytes of the encoded cells.
    pub fn encoded_len(&self) -> usize {
        self.encoded.len()
    }

    /// The first cell (its row is the row's key).
    pub fn first(&self) -> Option<CellRef<'_>> {
        self.iter().next()
    }

    /// The cells, read in place.
    pub fn iter(&self) -> RowCellsIter<'_> {
        RowCellsIter { rest: &self.encoded }
    }

    /// The cells as owned cells sharing this buffer.
    pub fn to_cells(&self) -> Vec<Cell> {
        let mut cells = Vec::with_capacity(self.cells);
        for c in self.iter() {
            cells.push(Cell::within(&self.encoded, c));
        }
        cells
    }
}

impl<'a> IntoIterator for &'a RowCells {
    type Item = CellRef<'a>;
    type IntoIter = RowCellsIter<'a>;

    fn into_iter(self) -> RowCellsIter<'a> {
        self.iter()
    }
}

/// The cells of a [`RowCells`], in order.
#[derive(Debug, Clone)]
pub struct RowCellsIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RowCellsIter<'a> {
    type Item = CellRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<CellRef<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let (cell, rest) = self.rest.split_at(encoded_len_at(self.rest));
        self.rest = rest;
        Some(CellRef::new(cell))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{CellInput, CellType};

    fn two_cells() -> (Vec<u8>, Vec<u8>) {
        (
            CellInput::put(b"row-1", b"cf", b"q1", 42, b"one").to_encoded(7),
            CellInput::delete(b"row-1", b"cf", b"", 9, CellType::DeleteFamily).to_encoded(8),
        )
    }

    #[test]
    fn collected_cells_share_one_buffer_and_keep_every_field() {
        let (a, b) = two_cells();
        let mut collector = CellCollector::new();
        collector.push(CellRef::new(&a));
        collector.push(CellRef::new(&b));
        assert_eq!(collector.len(), 2);
        let cells = collector.take();
        assert!(collector.is_empty(), "take empties the collector");
        assert_eq!(cells, vec![CellRef::new(&a).to_cell(), CellRef::new(&b).to_cell()]);
        assert_eq!(
            (&cells[0].row[..], &cells[0].qualifier[..], &cells[0].value[..]),
            (&b"row-1"[..], &b"q1"[..], &b"one"[..])
        );
        assert_eq!((cells[1].cell_type, cells[1].timestamp, cells[1].seq), (CellType::DeleteFamily, 9, 8));
        // One buffer: the second cell's row lies after the first's value.
        let first_value_end = cells[0].value.as_ptr() as usize + cells[0].value.len();
        assert!(cells[1].row.as_ptr() as usize >= first_value_end);
        assert!((cells[1].row.as_ptr() as usize) - (cells[0].row.as_ptr() as usize) < a.len() + b.len());
        assert!(collector.take().is_empty());
    }

    #[test]
    fn a_row_read_in_place_gives_the_cells_the_owned_ones_give() {
        let (a, b) = two_cells();
        let mut collector = CellCollector::with_capacity(4);
        assert!(collector.last().is_none());
        collector.push(CellRef::new(&a));
        assert_eq!(collector.last().map(|c| c.encoded()), Some(&a[..]));
        collector.push(CellRef::new(&b));
        assert_eq!(collector.last().map(|c| c.encoded()), Some(&b[..]), "the last pushed, whole");
        let row = collector.take_row();
        assert!(collector.is_empty() && collector.last().is_none() && collector.encoded_len() == 0);
        assert_eq!((row.len(), row.encoded_len()), (2, a.len() + b.len()));
        let in_place: Vec<&[u8]> = row.iter().map(|c| c.encoded()).collect();
        assert_eq!(in_place, vec![&a[..], &b[..]]);
        assert_eq!(row.first().map(|c| c.row()), Some(&b"row-1"[..]));
        assert_eq!(row.to_cells(), vec![CellRef::new(&a).to_cell(), CellRef::new(&b).to_cell()]);
        assert_eq!(RowCells::from_cells(&row.to_cells()), row, "owned cells encode back to the same row");
        let empty = RowCells::default();
        assert!(empty.is_empty() && empty.first().is_none() && empty.to_cells().is_empty());
        assert_eq!(RowCells::from_cells(&[]), empty);
    }
}
