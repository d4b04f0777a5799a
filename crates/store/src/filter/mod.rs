//! Scan filters in HBase's filter language (ParseFilter): the common
//! filters — PrefixFilter, KeyOnlyFilter, FirstKeyOnlyFilter,
//! ColumnPrefixFilter, QualifierFilter, ValueFilter, RowFilter,
//! FamilyFilter, SingleColumnValueFilter, PageFilter — combined with AND,
//! OR, SKIP, WHILE and parentheses (precedence SKIP/WHILE > AND > OR, as in
//! HBase). Any other filter name is refused, naming it.
//!
//! Filters run on whole rows after the store read them: a row's cells go in
//! and the cells to return (or "drop the row", or "end the scan") come out.
//! PageFilter counts the rows that reach it, so a filter is per scanner.
//!
//! The language's parser and the evaluation are apart: `parse.rs` turns a
//! filter string into a [`Filter`] tree ([`parse()`]), and `evaluate.rs`
//! runs that tree over rows ([`Filter::apply`]). This module holds the
//! types they share.

use regex::bytes::Regex;

mod evaluate;
mod parse;

pub use parse::parse;

/// Why a filter string was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterError {
    #[error("filter {0} is not supported (supported: {SUPPORTED})")]
    Unsupported(String),
    #[error("malformed filter string at byte {at}: {reason}")]
    Syntax { at: usize, reason: String },
}

const SUPPORTED: &str = "PrefixFilter, KeyOnlyFilter, FirstKeyOnlyFilter, ColumnPrefixFilter, QualifierFilter, \
                         ValueFilter, RowFilter, FamilyFilter, SingleColumnValueFilter, PageFilter";

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
pub enum Comparator {
    Binary(Vec<u8>),
    BinaryPrefix(Vec<u8>),
    Substring(Vec<u8>),
    Regex(Regex),
}

#[derive(Debug, Clone)]
pub enum Filter {
    Prefix(Vec<u8>),
    KeyOnly,
    FirstKeyOnly,
    ColumnPrefix(Vec<u8>),
    Qualifier(CompareOp, Comparator),
    Value(CompareOp, Comparator),
    Row(CompareOp, Comparator),
    Family(CompareOp, Comparator),
    SingleColumnValue { family: Vec<u8>, qualifier: Vec<u8>, op: CompareOp, cmp: Comparator, filter_if_missing: bool },
    Page { limit: u64, seen: u64 },
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Skip(Box<Filter>),
    While(Box<Filter>),
}

/// What a filter makes of one row: the indexes of the cells it keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Keep { cells: Vec<usize>, key_only: bool },
    DropRow,
    EndScan,
}

#[cfg(test)]
mod test_support {
    //! Rows to filter and a parse-then-apply shorthand, for the tests of
    //! both halves.

    use memstore::Cell;

    use super::{Outcome, parse};

    pub(super) fn cell(row: &str, q: &str, v: &str) -> Cell {
        Cell {
            row: row.as_bytes().to_vec(),
            family: b"f".to_vec(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: 1,
            cell_type: memstore::CellType::Put,
            value: v.as_bytes().to_vec(),
            seq: 1,
        }
    }

    pub(super) fn kept(f: &str, row: &[Cell]) -> Outcome {
        parse(f.as_bytes()).expect("parses").apply(row)
    }
}
