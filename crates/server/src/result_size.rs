//! How many bytes a row counts for against the request limits
//! (`RequestLimits`: `hbase.server.keyvalue.maxsize`-like row caps and the
//! per-call result cap), whether the row was read here or answered by
//! another server.
//!
//! Thread safety: pure functions.

use memstore::Cell;

use crate::hbase_thrift::TRowResult;

/// The bytes of a row read here: every cell's row, family, qualifier and
/// value, and 12 for its timestamp and type.
pub(crate) fn row_bytes(cells: &[Cell]) -> usize {
    cells.iter().map(|c| c.row.len() + c.family.len() + c.qualifier.len() + c.value.len() + 12).sum()
}

/// The bytes of a row another server answered, counted as [`row_bytes`].
pub(crate) fn result_bytes(r: &TRowResult) -> usize {
    let row = r.row.as_ref().map_or(0, Vec::len);
    let columns =
        r.columns.iter().flatten().map(|(name, c)| row + name.len() + c.value.as_ref().map_or(0, Vec::len) + 12);
    let sorted = r.sorted_columns.iter().flatten().map(|c| {
        row + c.column_name.as_ref().map_or(0, Vec::len)
            + c.cell.as_ref().and_then(|c| c.value.as_ref()).map_or(0, Vec::len)
            + 12
    });
    columns.chain(sorted).sum()
}
