//! Evaluating a [`Filter`] over a row: the cells it keeps, or whether the
//! row is dropped or the scan ends, and how a comparator matches a value.

use std::cmp::Ordering;

use memstore::Cell;

use super::{Comparator, CompareOp, Filter, Outcome};

impl Comparator {
    /// Whether `op` holds for `value` against this comparator. As in HBase,
    /// substring and regex comparators only support EQUAL and NOT_EQUAL.
    fn matches(&self, op: CompareOp, value: &[u8]) -> bool {
        let ord = match self {
            Comparator::Binary(b) => value.cmp(b.as_slice()),
            Comparator::BinaryPrefix(p) => value[..p.len().min(value.len())].cmp(p.as_slice()),
            Comparator::Substring(s) => {
                let found =
                    value.to_ascii_lowercase().windows(s.len().max(1)).any(|w| w == s.as_slice()) || s.is_empty();
                if found { Ordering::Equal } else { Ordering::Less }
            }
            Comparator::Regex(r) => {
                if r.is_match(value) {
                    Ordering::Equal
                } else {
                    Ordering::Less
                }
            }
        };
        match op {
            CompareOp::Less => ord == Ordering::Less,
            CompareOp::LessOrEqual => ord != Ordering::Greater,
            CompareOp::Equal => ord == Ordering::Equal,
            CompareOp::NotEqual => ord != Ordering::Equal,
            CompareOp::GreaterOrEqual => ord != Ordering::Less,
            CompareOp::Greater => ord == Ordering::Greater,
        }
    }
}

impl Filter {
    /// The row prefix this filter requires, if any (lets the scan start
    /// there instead of at the table's first row).
    pub fn required_prefix(&self) -> Option<&[u8]> {
        match self {
            Filter::Prefix(p) => Some(p),
            Filter::And(a, b) => a.required_prefix().or_else(|| b.required_prefix()),
            _ => None,
        }
    }

    /// Applies the filter to a row (cells in the store's order).
    pub fn apply(&mut self, row: &[Cell]) -> Outcome {
        let all: Vec<usize> = (0..row.len()).collect();
        self.apply_to(row, all)
    }

    fn apply_to(&mut self, row: &[Cell], cells: Vec<usize>) -> Outcome {
        let keep = |cells: Vec<usize>| {
            if cells.is_empty() { Outcome::DropRow } else { Outcome::Keep { cells, key_only: false } }
        };
        let row_key = row.first().map_or(&[][..], |c| c.row.as_slice());
        match self {
            // No "end the scan" past the prefix here: that holds only for a
            // forward scan. The handler turns a required prefix into the
            // scan's own prefix, which bounds the scan in both directions.
            Filter::Prefix(p) => {
                if row_key.starts_with(p) {
                    keep(cells)
                } else {
                    Outcome::DropRow
                }
            }
            Filter::KeyOnly => {
                if cells.is_empty() {
                    Outcome::DropRow
                } else {
                    Outcome::Keep { cells, key_only: true }
                }
            }
            Filter::FirstKeyOnly => keep(cells.into_iter().take(1).collect()),
            Filter::ColumnPrefix(p) => keep(cells.into_iter().filter(|&i| row[i].qualifier.starts_with(p)).collect()),
            Filter::Qualifier(op, c) => {
                keep(cells.into_iter().filter(|&i| c.matches(*op, &row[i].qualifier)).collect())
            }
            Filter::Value(op, c) => keep(cells.into_iter().filter(|&i| c.matches(*op, &row[i].value)).collect()),
            Filter::Family(op, c) => keep(cells.into_iter().filter(|&i| c.matches(*op, &row[i].family)).collect()),
            Filter::Row(op, c) => {
                if c.matches(*op, row_key) {
                    keep(cells)
                } else {
                    Outcome::DropRow
                }
            }
            Filter::SingleColumnValue { family, qualifier, op, cmp, filter_if_missing } => {
                // The newest version of the column decides (the store returns
                // newest first).
                match row.iter().find(|c| c.family == *family && c.qualifier == *qualifier) {
                    Some(c) if cmp.matches(*op, &c.value) => keep(cells),
                    Some(_) => Outcome::DropRow,
                    None if *filter_if_missing => Outcome::DropRow,
                    None => keep(cells),
                }
            }
            Filter::Page { limit, seen } => {
                if *seen >= *limit {
                    Outcome::EndScan
                } else {
                    *seen += 1;
                    keep(cells)
                }
            }
            Filter::And(a, b) => match a.apply_to(row, cells) {
                Outcome::Keep { cells, key_only } => match b.apply_to(row, cells) {
                    Outcome::Keep { cells, key_only: k2 } => Outcome::Keep { cells, key_only: key_only || k2 },
                    other => other,
                },
                other => other,
            },
            Filter::Or(a, b) => {
                let (ra, rb) = (a.apply_to(row, cells.clone()), b.apply_to(row, cells));
                match (ra, rb) {
                    (Outcome::Keep { cells: ca, key_only: ka }, Outcome::Keep { cells: cb, key_only: kb }) => {
                        let mut all = ca;
                        all.extend(cb);
                        all.sort_unstable();
                        all.dedup();
                        Outcome::Keep { cells: all, key_only: ka && kb }
                    }
                    (k @ Outcome::Keep { .. }, _) | (_, k @ Outcome::Keep { .. }) => k,
                    (Outcome::EndScan, Outcome::EndScan) => Outcome::EndScan,
                    _ => Outcome::DropRow,
                }
            }
            // SKIP: the row goes only if every cell passes.
            Filter::Skip(f) => {
                let n = cells.len();
                match f.apply_to(row, cells.clone()) {
                    Outcome::Keep { cells: kept, key_only } if kept.len() == n => {
                        Outcome::Keep { cells: kept, key_only }
                    }
                    Outcome::EndScan => Outcome::EndScan,
                    _ => Outcome::DropRow,
                }
            }
            // WHILE: the scan ends at the first row that does not pass whole.
            Filter::While(f) => {
                let n = cells.len();
                match f.apply_to(row, cells.clone()) {
                    Outcome::Keep { cells: kept, key_only } if kept.len() == n => {
                        Outcome::Keep { cells: kept, key_only }
                    }
                    _ => Outcome::EndScan,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::parse;
    use crate::filter::test_support::{cell, kept};

    #[test]
    fn cell_filters_choose_cells() {
        let row = [cell("r1", "aa", "x"), cell("r1", "ab", "yy"), cell("r1", "b", "z")];
        assert_eq!(kept("ColumnPrefixFilter('a')", &row), Outcome::Keep { cells: vec![0, 1], key_only: false });
        assert_eq!(kept("QualifierFilter(=, 'binary:b')", &row), Outcome::Keep { cells: vec![2], key_only: false });
        assert_eq!(kept("ValueFilter(=,'substring:Y')", &row), Outcome::Keep { cells: vec![1], key_only: false });
        assert_eq!(kept("ValueFilter(>, 'binary:x')", &row), Outcome::Keep { cells: vec![1, 2], key_only: false });
        assert_eq!(kept("ValueFilter(=, 'regexstring:^y+$')", &row), Outcome::Keep { cells: vec![1], key_only: false });
        assert_eq!(
            kept("FirstKeyOnlyFilter() AND KeyOnlyFilter()", &row),
            Outcome::Keep { cells: vec![0], key_only: true }
        );
        assert_eq!(kept("QualifierFilter(=,'binary:zz')", &row), Outcome::DropRow);
    }

    #[test]
    fn row_filters_and_pages() {
        let r = |k: &str| vec![cell(k, "q", "v")];
        let mut f = parse(b"PrefixFilter('b') AND PageFilter(2)").expect("parses");
        assert_eq!(f.required_prefix(), Some(&b"b"[..]));
        assert_eq!(f.apply(&r("a")), Outcome::DropRow);
        assert!(matches!(f.apply(&r("b1")), Outcome::Keep { .. }));
        assert!(matches!(f.apply(&r("b2")), Outcome::Keep { .. }));
        assert_eq!(f.apply(&r("b3")), Outcome::EndScan, "page of 2 rows is full");
        let mut f = parse(b"PrefixFilter('b')").expect("parses");
        assert_eq!(f.apply(&r("c")), Outcome::DropRow, "past the prefix (either direction) the row is dropped");
    }

    #[test]
    fn single_column_value_filter_tests_the_column() {
        let row = [cell("r", "a", "1"), cell("r", "b", "2")];
        assert!(matches!(kept("SingleColumnValueFilter('f','a',=,'binary:1')", &row), Outcome::Keep { .. }));
        assert_eq!(kept("SingleColumnValueFilter('f','a',=,'binary:2')", &row), Outcome::DropRow);
        assert!(matches!(kept("SingleColumnValueFilter('f','z',=,'binary:2')", &row), Outcome::Keep { .. }));
        assert_eq!(kept("SingleColumnValueFilter('f','z',=,'binary:2', true, true)", &row), Outcome::DropRow);
    }
}
