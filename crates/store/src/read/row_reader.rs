//! `RowReader`: turns the merged cells of one row (every family asked for)
//! into the visible cells, applying each family's version and TTL rules and
//! the read's columns, time range, versions and read point.
//!
//! Thread safety: a plain function object, used by one reader.

use memstore::visibility::RowResolver;
use memstore::{CellCollector, CellKey, ReadOptions, VersionRules};
use smallvec::SmallVec;

use crate::error::Result;
use crate::read::cursor::MergedCursor;

/// How to read one family.
#[derive(Debug, Clone)]
pub struct FamilyReadSpec {
    pub family: Vec<u8>,
    pub opts: ReadOptions,
    pub rules: VersionRules,
}

pub struct RowReader<'a> {
    /// Sorted by family.
    specs: &'a [FamilyReadSpec],
}

impl<'a> RowReader<'a> {
    pub fn new(specs: &'a [FamilyReadSpec]) -> RowReader<'a> {
        RowReader { specs }
    }

    /// Reads the row at the cursor (which must be at or before its first
    /// cell); leaves the cursor at the next row.
    ///
    /// Once a column can yield nothing more (its versions are returned or
    /// used up), the rest of it is skipped: a few steps, then a seek past
    /// its last cell (HBase's `SEEK_NEXT_COL`). A hot row rewritten many
    /// times since its last flush holds every version in the memstore, and
    /// stepping through them all made a get cost thousands of cell steps
    /// (measured: YCSB B at 0.07x RocksDB). Never within the empty
    /// qualifier: family delete markers live there (every write path gives
    /// them an empty qualifier), and they mask the columns after them.
    ///
    /// The visible cells are collected into `out` (one buffer per row).
    pub fn read_row(&self, cursor: &mut MergedCursor, row: &[u8], out: &mut CellCollector) -> Result<()> {
        let mut resolver: Option<(usize, RowResolver<'a>)> = None;
        // The spent column when its cell was not collected, copied (the
        // cell may go with the step past it); inline for a typical family
        // and qualifier: once per row on the heap was an allocation per row
        // of every scan.
        let mut column: SmallVec<[u8; 40]> = SmallVec::new();
        while let Some(c) = cursor.current() {
            if c.row() != row {
                break;
            }
            let same_family = resolver.as_ref().is_some_and(|(i, _)| self.specs[*i].family.as_slice() == c.family());
            if !same_family {
                resolver = self.specs.iter().position(|s| s.family.as_slice() == c.family()).map(|i| {
                    let s = &self.specs[i];
                    (i, RowResolver::new(&s.opts, s.rules, s.opts.now_ms.unwrap_or(0)))
                });
            }
            let collected = out.len();
            let column_done = match resolver.as_mut() {
                Some((_, r)) => r.push(c, out) && !c.qualifier().is_empty(),
                None => false,
            };
            if column_done
                && out.len() > collected
                && let Some(last) = out.last()
            {
                // The cell just collected is this column's: its copy in
                // `out` names the column, so none is made here (a copy per
                // returned cell was 5 % of a short scan's samples).
                skip_column(cursor, row, last.family(), last.qualifier())?;
            } else if column_done {
                let (family_len, qualifier) = (c.family().len(), c.qualifier());
                column.clear();
                column.extend_from_slice(c.family());
                column.extend_from_slice(qualifier);
                let (family, qualifier) = column.split_at(family_len);
                skip_column(cursor, row, family, qualifier)?;
            } else {
                cursor.advance()?;
            }
        }
        Ok(())
    }
}

/// Steps a column's cells before seeking past them: a seek repositions
/// the sources still in the column, which costs more than a few steps
/// when the column has only a version or two left.
const STEPS_BEFORE_SEEK: usize = 4;

/// Moves the cursor past the cells of column `family:qualifier` of `row`.
fn skip_column(cursor: &mut MergedCursor, row: &[u8], family: &[u8], qualifier: &[u8]) -> Result<()> {
    for _ in 0..STEPS_BEFORE_SEEK {
        cursor.advance()?;
        match cursor.current() {
            Some(c) if c.row() == row && c.family() == family && c.qualifier() == qualifier => {}
            _ => return Ok(()),
        }
    }
    cursor.reseek(&CellKey::last_on_column(row, family, qualifier))?;
    // The seek lands at or after the column's last cell; step past it.
    if cursor.current().is_some_and(|c| c.row() == row && c.family() == family && c.qualifier() == qualifier) {
        cursor.advance()?;
    }
    Ok(())
}
