//! Scan filters in HBase's filter language (ParseFilter), evaluated inside
//! the store's scan as HBase's `ScanQueryMatcher` evaluates them: every
//! filter HBase's `ParseFilter` knows (listed in [`SUPPORTED`]), combined
//! with AND, OR, SKIP, WHILE and parentheses (precedence SKIP/WHILE > AND >
//! OR, as in HBase). Any other filter name is refused, naming it.
//! FuzzyRowFilter and RandomRowFilter have no filter-language form in HBase
//! 2.6 (its `ParseFilter` registers neither, so its Thrift gateway refuses
//! them too): the embedded API builds them as [`Filter::FuzzyRow`] and
//! [`Filter::random_row`], and the string parser refuses them as HBase does.
//!
//! How a scan uses a filter (see `scanner.rs`): the filter sees a whole row
//! with *every* version of each column the family keeps, and versions are
//! counted only among the cells it keeps, so on a family with several
//! versions a ValueFilter returns the newest version that matches (HBase
//! runs the filter before its version tracker). What it returns for a row is
//! an [`Outcome`]: the cells to keep (with the value transformation a
//! KeyOnlyFilter asks for), "drop the row", or "end the scan". After the
//! versions are counted, [`Filter::filter_row_cells`] gets the row once more
//! (HBase's `filterRowCells`: DependentColumnFilter drops cells there).
//!
//! Filters that take only a column's newest version (HBase's
//! INCLUDE_AND_NEXT_COL: ColumnCountGetFilter, ColumnPaginationFilter) and
//! filters that end the scan in the middle of a row (WHILE,
//! ColumnCountGetFilter: HBase's matcher answers DONE_SCAN at the cell after
//! `filterAllRemaining` turned true) return the part of the row before it.
//!
//! HBase asks the filter about a cell before its version tracker counts it,
//! and the tracker ends a column at the first version beyond the scan's
//! `max_versions` that the filter included: filters that include versions
//! they do not decide on (SingleColumnValueFilter with latestVersionOnly
//! false, DependentColumnFilter) therefore see `max_versions + 1` of them,
//! and [`Filter::apply`] takes the scan's versions for them.
//!
//! A filter is per scanner and has state: PageFilter counts the rows it let
//! through, and a WHILE that rejected something stays stopped.
//!
//! The language's parser and the evaluation are apart: `parse.rs` turns a
//! filter string into a [`Filter`] tree ([`parse()`]), `evaluate.rs` runs
//! that tree over rows ([`Filter::apply`]), and `comparator.rs` matches
//! values as HBase's comparators do (`java_regex.rs` turns a Java regex into
//! one over bytes).

use bytes::Bytes;

mod comparator;
mod evaluate;
mod java_regex;
mod parse;

pub use comparator::Comparator;
pub use parse::parse;

/// Why a filter string was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterError {
    #[error("filter {0} is not supported (supported: {SUPPORTED})")]
    Unsupported(String),
    #[error("malformed filter string at byte {at}: {reason}")]
    Syntax { at: usize, reason: String },
}

pub const SUPPORTED: &str = "PrefixFilter, KeyOnlyFilter, FirstKeyOnlyFilter, ColumnPrefixFilter, \
                             MultipleColumnPrefixFilter, ColumnRangeFilter, ColumnCountGetFilter, \
                             ColumnPaginationFilter, InclusiveStopFilter, TimestampsFilter, QualifierFilter, \
                             ValueFilter, RowFilter, FamilyFilter, SingleColumnValueFilter, \
                             SingleColumnValueExcludeFilter, DependentColumnFilter, PageFilter";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompareOp {
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
    GreaterOrEqual,
    Greater,
}

#[derive(Debug, Clone)]
pub enum Filter {
    Prefix(Vec<u8>),
    /// `len_as_value`: the value becomes its length as a 4-byte big-endian
    /// integer instead of nothing (`KeyOnlyFilter(true)`).
    KeyOnly {
        len_as_value: bool,
    },
    FirstKeyOnly,
    ColumnPrefix(Vec<u8>),
    MultipleColumnPrefix(Vec<Vec<u8>>),
    /// Qualifiers between `min` and `max` (`None`: unbounded).
    ColumnRange {
        min: Option<Vec<u8>>,
        min_inclusive: bool,
        max: Option<Vec<u8>>,
        max_inclusive: bool,
    },
    /// The newest version of the row's first `limit` columns. At column
    /// `limit + 1` HBase's filterAllRemaining turns true until the row
    /// ends, and every family's store scanner that looks at another cell
    /// meanwhile answers DONE_SCAN and is closed for the rest of the scan:
    /// that column's family and each family with cells later in the row
    /// (`dead`) give no more cells (recorded against HBase 2.6.4).
    ColumnCountGet {
        limit: usize,
        dead: Vec<Vec<u8>>,
    },
    /// The newest version of `limit` columns after the row's first `offset`.
    ColumnPagination {
        limit: usize,
        offset: usize,
    },
    /// Rows up to and including `stop` (down to it, reversed), then the end.
    InclusiveStop {
        stop: Vec<u8>,
        reversed: bool,
    },
    /// Cells with one of these timestamps (sorted).
    Timestamps(Vec<u64>),
    Qualifier(CompareOp, Comparator),
    Value(CompareOp, Comparator),
    Row(CompareOp, Comparator),
    Family(CompareOp, Comparator),
    SingleColumnValue {
        family: Vec<u8>,
        qualifier: Vec<u8>,
        op: CompareOp,
        cmp: Comparator,
        filter_if_missing: bool,
        /// Only the newest version of the column decides (HBase's default);
        /// otherwise the row passes if any version matches.
        latest_version_only: bool,
        /// The tested column is left out of the results
        /// (SingleColumnValueExcludeFilter).
        exclude_column: bool,
    },
    /// Cells whose timestamp is one of the reference column's (those of its
    /// versions that pass `value`, if given); the reference column itself
    /// is dropped with `drop_column`. `stamps` is the current row's.
    DependentColumn {
        family: Vec<u8>,
        qualifier: Vec<u8>,
        drop_column: bool,
        value: Option<(CompareOp, Comparator)>,
        stamps: Vec<u64>,
    },
    /// `seen`: rows counted so far. HBase counts a row in the PageFilter's
    /// `filterRow`, which the filter lists call only in turn (an AND until
    /// a filter drops the row, an OR until one keeps it) and only for a row
    /// that has cells left: `reached` says that this row got that far, and
    /// the row is counted once it is kept.
    Page {
        limit: u64,
        seen: u64,
        reached: bool,
    },
    /// Rows matching one of the (key, mask) pairs (HBase's
    /// FuzzyRowFilter): a mask byte 0 fixes the row's byte at that position
    /// to the key's, any other value lets it be anything. As in HBase, only
    /// the first `min(row, key)` bytes are compared, so a row shorter than a
    /// key matches when the bytes it has do.
    FuzzyRow(Vec<(Vec<u8>, Vec<u8>)>),
    /// Each row passes with probability `chance` (HBase's RandomRowFilter:
    /// below 0 none, above 1 all); `state` is the filter's own xorshift
    /// generator, so a scan draws its rows independently of other scans.
    RandomRow {
        chance: f32,
        state: u64,
    },
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Skip(Box<Filter>),
    /// `stopped`: the inner filter rejected a cell or row; nothing more
    /// passes, for the rest of the scan.
    While {
        inner: Box<Filter>,
        stopped: bool,
    },
}

impl Filter {
    /// A RandomRowFilter passing each row with probability `chance`, its
    /// generator seeded from `seed` (a zero seed is replaced, as xorshift
    /// would stay at zero).
    pub fn random_row(chance: f32, seed: u64) -> Filter {
        Filter::RandomRow { chance, state: if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed } }
    }
}

/// What happens to the value of a kept cell (KeyOnlyFilter's transform).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueTransform {
    Keep,
    /// The value is dropped.
    Strip,
    /// The value becomes its length, a 4-byte big-endian integer.
    Length,
}

impl ValueTransform {
    /// `self` then `later`, as HBase applies the transforms of the filters
    /// that kept a cell one after the other (a later KeyOnlyFilter wins).
    fn then(self, later: ValueTransform) -> ValueTransform {
        if later == ValueTransform::Keep { self } else { later }
    }

    /// Applies the transform to a value in place.
    pub fn apply(self, value: &mut Bytes) {
        match self {
            ValueTransform::Keep => {}
            ValueTransform::Strip => value.clear(),
            ValueTransform::Length => {
                let len = u32::try_from(value.len()).unwrap_or(u32::MAX);
                *value = Bytes::copy_from_slice(&len.to_be_bytes());
            }
        }
    }
}

/// A cell a filter keeps: its index in the row and its value's transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptCell {
    pub index: usize,
    pub transform: ValueTransform,
}

/// What a filter makes of one row.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The cells kept, in row order (never empty).
    Keep(Vec<KeptCell>),
    DropRow,
    EndScan,
}

impl Outcome {
    /// The indexes of the kept cells (tests and callers that ignore
    /// transforms).
    pub fn kept_indexes(&self) -> Vec<usize> {
        match self {
            Outcome::Keep(cells) => cells.iter().map(|c| c.index).collect(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod test_support {
    //! Rows to filter and a parse-then-apply shorthand, for the tests of
    //! both halves.

    use memstore::Cell;

    use super::{Outcome, parse};

    pub(super) fn cell(row: &str, q: &str, v: &str) -> Cell {
        versioned(row, "f", q, 1, v)
    }

    pub(super) fn versioned(row: &str, f: &str, q: &str, ts: u64, v: &str) -> Cell {
        Cell {
            row: bytes::Bytes::copy_from_slice(row.as_bytes()),
            family: bytes::Bytes::copy_from_slice(f.as_bytes()),
            qualifier: bytes::Bytes::copy_from_slice(q.as_bytes()),
            timestamp: ts,
            cell_type: memstore::CellType::Put,
            value: bytes::Bytes::copy_from_slice(v.as_bytes()),
            seq: 1,
        }
    }

    /// Versions per column of the scans in the tests.
    pub(super) const VERSIONS: u32 = 3;

    pub(super) fn kept(f: &str, row: &[Cell]) -> Outcome {
        parse(f.as_bytes()).expect("parses").apply(row, VERSIONS)
    }

    /// The indexes a filter keeps: `Ok(None)` for a dropped row, `Err(())`
    /// when the scan ends.
    pub(super) fn indexes(f: &str, row: &[Cell]) -> Result<Option<Vec<usize>>, ()> {
        match kept(f, row) {
            o @ Outcome::Keep(_) => Ok(Some(o.kept_indexes())),
            Outcome::DropRow => Ok(None),
            Outcome::EndScan => Err(()),
        }
    }
}
