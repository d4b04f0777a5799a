//! How many bytes a row counts for against the request limits
//! (`RequestLimits`: `hbase.server.keyvalue.maxsize`-like row caps and the
//! per-call result cap), whether the row was read here or answered by
//! another server (which the gateway has as cells either way).
//!
//! Thread safety: pure functions.

use memstore::{Cell, RowCells};

/// The bytes of a row read here: every cell's row, family, qualifier and
/// value, and 12 for its timestamp and type.
pub(crate) fn row_bytes(cells: &[Cell]) -> usize {
    cells.iter().map(|c| c.row.len() + c.family.len() + c.qualifier.len() + c.value.len() + 12).sum()
}

/// [`row_bytes`] of a row as a scan read it (one encoded buffer).
pub(crate) fn encoded_row_bytes(row: &RowCells) -> usize {
    row.iter().map(|c| c.row().len() + c.family().len() + c.qualifier().len() + c.value().len() + 12).sum()
}
