//! Evaluating a [`Filter`] over a row: the cells it keeps (and how their
//! values are transformed), or whether the row is dropped or the scan ends.
//!
//! Each filter is given the cells that earlier filters of an AND kept (the
//! "candidates", in row order), as HBase's `FilterListWithAND` hands a cell
//! to the next filter only when the earlier ones included it. Row-level
//! filters (PrefixFilter, RowFilter, SingleColumnValueFilter, PageFilter)
//! pass or drop the candidates as a whole; SingleColumnValueFilter looks
//! for its column among the candidates.

use memstore::Cell;

use super::{Filter, KeptCell, Outcome, ValueTransform};

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

    /// Tells filters that depend on the direction (InclusiveStopFilter)
    /// that the scan runs backwards.
    pub fn set_reversed(&mut self, reversed: bool) {
        match self {
            Filter::InclusiveStop { reversed: r, .. } => *r = reversed,
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.set_reversed(reversed);
                b.set_reversed(reversed);
            }
            Filter::Skip(f) | Filter::While { inner: f, .. } => f.set_reversed(reversed),
            _ => {}
        }
    }

    /// The second look at a row, after its versions were counted (HBase's
    /// `filterRowCells`): DependentColumnFilter keeps only cells with one of
    /// its reference column's timestamps.
    pub fn filter_row_cells(&self, cells: &mut Vec<Cell>) {
        match self {
            Filter::DependentColumn { stamps, .. } => cells.retain(|c| stamps.contains(&c.timestamp)),
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.filter_row_cells(cells);
                b.filter_row_cells(cells);
            }
            Filter::Skip(f) | Filter::While { inner: f, .. } => f.filter_row_cells(cells),
            _ => {}
        }
    }

    /// Forgets what a filter learned of the previous row (HBase's `reset`).
    fn reset_row(&mut self) {
        match self {
            Filter::DependentColumn { stamps, .. } => stamps.clear(),
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.reset_row();
                b.reset_row();
            }
            Filter::Skip(f) | Filter::While { inner: f, .. } => f.reset_row(),
            _ => {}
        }
    }

    /// Applies the filter to a row (cells in the store's order: by column,
    /// newest version first, every version the family keeps) of a scan
    /// returning `versions` versions per column.
    pub fn apply(&mut self, row: &[Cell], versions: u32) -> Outcome {
        self.reset_row();
        let all = (0..row.len()).map(|index| KeptCell { index, transform: ValueTransform::Keep }).collect();
        let (outcome, _) = self.apply_to(row, all, versions.max(1) as usize, true);
        // HBase calls filterRow, where a PageFilter counts, only for a row
        // that kept cells.
        self.count_pages(matches!(outcome, Outcome::Keep(_)));
        outcome
    }

    /// What the filter makes of a row the scan reads no cell of (its cells
    /// are all in columns the scan does not ask for, or deleted): HBase
    /// still shows the row's key to the filter (`filterRowKey`, with the
    /// first cell the store holds for the row), so a WHILE whose row check
    /// rejects that key ends the scan there. Never [`Outcome::Keep`].
    pub fn apply_to_key(&mut self, row_key: &[u8]) -> Outcome {
        match self.check_key(row_key) {
            KeyCheck::End => Outcome::EndScan,
            KeyCheck::Pass | KeyCheck::Drop => Outcome::DropRow,
        }
    }

    /// HBase's `filterRowKey`, then `filterAllRemaining`: whether a row
    /// passes on its key, is dropped, or ends the scan. Only filters that
    /// decide on the key take part; any other passes every key, and so
    /// does SKIP (HBase's SkipFilter does not show the key to the filter it
    /// wraps).
    fn check_key(&mut self, key: &[u8]) -> KeyCheck {
        match self {
            Filter::Prefix(p) => KeyCheck::pass_if(key.starts_with(p)),
            Filter::Row(op, cmp) => KeyCheck::pass_if(cmp.matches(*op, key)),
            Filter::InclusiveStop { stop, reversed } => {
                let past = if *reversed { key < stop.as_slice() } else { key > stop.as_slice() };
                if past { KeyCheck::End } else { KeyCheck::Pass }
            }
            Filter::Page { limit, seen, .. } => {
                if seen >= limit {
                    KeyCheck::End
                } else {
                    KeyCheck::Pass
                }
            }
            Filter::While { inner, stopped } => {
                if !*stopped && inner.check_key(key) == KeyCheck::Pass {
                    return KeyCheck::Pass;
                }
                *stopped = true;
                KeyCheck::End
            }
            // Both operands see the key, whatever the first answers (HBase's
            // lists ask each of their filters, which may track rows).
            Filter::And(a, b) => {
                let (x, y) = (a.check_key(key), b.check_key(key));
                x.and(y)
            }
            Filter::Or(a, b) => {
                let (x, y) = (a.check_key(key), b.check_key(key));
                x.or(y)
            }
            _ => KeyCheck::Pass,
        }
    }

    /// Whether HBase's `filterRow` of this filter drops a row it rejected
    /// (the filters that decide on whole rows); a cell-level filter's is
    /// always false, whatever cells it kept.
    fn decides_rows(&self) -> bool {
        matches!(
            self,
            Filter::Prefix(_)
                | Filter::Row(..)
                | Filter::SingleColumnValue { .. }
                | Filter::FuzzyRow(_)
                | Filter::RandomRow { .. }
        )
    }

    /// Counts the row in every PageFilter HBase's `filterRow` reached, if
    /// the row was kept; then forgets which were reached.
    fn count_pages(&mut self, kept: bool) {
        match self {
            Filter::Page { seen, reached, .. } => {
                if kept && *reached {
                    *seen += 1;
                }
                *reached = false;
            }
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.count_pages(kept);
                b.count_pages(kept);
            }
            Filter::Skip(f) | Filter::While { inner: f, .. } => f.count_pages(kept),
            _ => {}
        }
    }

    /// The filter on a row's candidates: what it keeps, and its answer to
    /// HBase's `filterRow` (true: it wants the row dropped), by which AND
    /// and OR decide how far their own `filterRow` goes. `reached`: whether
    /// HBase would call this filter's `filterRow` for the row (should the
    /// row keep cells).
    fn apply_to(&mut self, row: &[Cell], cells: Vec<KeptCell>, versions: usize, reached: bool) -> (Outcome, bool) {
        let row_key = row.first().map_or(&[][..], |c| c.row.as_ref());
        let select = |cells: Vec<KeptCell>, pass: &dyn Fn(&Cell) -> bool| {
            keep(cells.into_iter().filter(|k| pass(&row[k.index])).collect())
        };
        let decides_rows = self.decides_rows();
        let outcome = match self {
            // No "end the scan" past the prefix here: that holds only for a
            // forward scan. The scanner turns a required prefix into the
            // scan's own prefix, which bounds the scan in both directions.
            Filter::Prefix(p) => whole_row(row_key.starts_with(p), cells),
            Filter::KeyOnly { len_as_value } => {
                let t = if *len_as_value { ValueTransform::Length } else { ValueTransform::Strip };
                keep(cells.into_iter().map(|k| KeptCell { index: k.index, transform: k.transform.then(t) }).collect())
            }
            Filter::FirstKeyOnly => keep(cells.into_iter().take(1).collect()),
            Filter::ColumnPrefix(p) => select(cells, &|c| c.qualifier.starts_with(p)),
            Filter::MultipleColumnPrefix(ps) => select(cells, &|c| ps.iter().any(|p| c.qualifier.starts_with(p))),
            Filter::ColumnRange { min, min_inclusive, max, max_inclusive } => select(cells, &|c| {
                let q = c.qualifier.as_ref();
                let above = min.as_deref().is_none_or(|m| q > m || (*min_inclusive && q == m));
                let below = max.as_deref().is_none_or(|m| q < m || (*max_inclusive && q == m));
                above && below
            }),
            Filter::Timestamps(ts) => select(cells, &|c| ts.binary_search(&c.timestamp).is_ok()),
            Filter::InclusiveStop { stop, reversed } => {
                let past = if *reversed { row_key < stop.as_slice() } else { row_key > stop.as_slice() };
                if past { Outcome::EndScan } else { keep(cells) }
            }
            Filter::ColumnCountGet { limit, dead } => {
                let live: Vec<KeptCell> =
                    cells.into_iter().filter(|k| !dead.iter().any(|d| d[..] == row[k.index].family[..])).collect();
                let mut columns = newest_of_each_column(row, &live);
                if let Some(over) = columns.get(*limit).copied() {
                    // Its family looks at another cell next (this row's or
                    // a later row's) and so does every family with cells
                    // later in this row: each of them is done.
                    let families = std::iter::once(over).chain(live.iter().copied().filter(|k| k.index > over.index));
                    for k in families {
                        let family = &row[k.index].family;
                        if !dead.iter().any(|d| d[..] == family[..]) {
                            dead.push(family.to_vec());
                        }
                    }
                    columns.truncate(*limit);
                }
                keep(columns)
            }
            Filter::ColumnPagination { limit, offset } => {
                keep(newest_of_each_column(row, &cells).into_iter().skip(*offset).take(*limit).collect())
            }
            Filter::DependentColumn { family, qualifier, drop_column, value, stamps } => {
                let mut out = Vec::with_capacity(cells.len());
                // Versions of the reference column it included: once one
                // more than the scan's versions are, HBase shows it no more.
                let mut included = 0;
                for k in cells {
                    let c = &row[k.index];
                    if c.family != *family || c.qualifier != *qualifier {
                        out.push(k);
                        continue;
                    }
                    if included > versions || value.as_ref().is_some_and(|(op, cmp)| !cmp.matches(*op, &c.value)) {
                        continue;
                    }
                    stamps.push(c.timestamp);
                    if !*drop_column {
                        included += 1;
                        out.push(k);
                    }
                }
                // Without a reference timestamp nothing of the row survives
                // `filter_row_cells`.
                if stamps.is_empty() { Outcome::DropRow } else { keep(out) }
            }
            Filter::Qualifier(op, cmp) => select(cells, &|c| cmp.matches(*op, &c.qualifier)),
            Filter::Value(op, cmp) => select(cells, &|c| cmp.matches(*op, &c.value)),
            Filter::Family(op, cmp) => select(cells, &|c| cmp.matches(*op, &c.family)),
            Filter::Row(op, cmp) => whole_row(cmp.matches(*op, row_key), cells),
            Filter::SingleColumnValue {
                family,
                qualifier,
                op,
                cmp,
                filter_if_missing,
                latest_version_only,
                exclude_column,
            } => {
                // Versions of the column among the candidates, newest first;
                // the filter includes each it sees, so it sees one more than
                // the scan's versions (the version tracker drops that one).
                let mut seen = cells
                    .iter()
                    .map(|k| &row[k.index])
                    .filter(|c| c.family == *family && c.qualifier == *qualifier)
                    .take(versions + 1);
                let pass = if *latest_version_only {
                    seen.next().map(|c| cmp.matches(*op, &c.value))
                } else {
                    let mut any = None;
                    for c in seen {
                        if cmp.matches(*op, &c.value) {
                            any = Some(true);
                            break;
                        }
                        any = Some(false);
                    }
                    any
                };
                let cells = if *exclude_column {
                    cells
                        .into_iter()
                        .filter(|k| row[k.index].family != *family || row[k.index].qualifier != *qualifier)
                        .collect()
                } else {
                    cells
                };
                whole_row(pass.unwrap_or(!*filter_if_missing), cells)
            }
            Filter::Page { limit, seen, reached: r } => {
                if *seen >= *limit {
                    // A full page's filterRow answers true.
                    return (Outcome::EndScan, true);
                }
                // It includes every cell; once it has counted the row its
                // filterRow answers `seen > limit`, false here. The row is
                // counted when it is kept (`count_pages`).
                *r = reached;
                return (keep(cells), false);
            }
            Filter::FuzzyRow(pairs) => {
                whole_row(pairs.iter().any(|(key, mask)| fuzzy_match(row_key, key, mask)), cells)
            }
            Filter::RandomRow { chance, state } => {
                let pass = if *chance < 0.0 {
                    false
                } else if *chance > 1.0 {
                    true
                } else {
                    next_unit_float(state) < *chance
                };
                whole_row(pass, cells)
            }
            Filter::And(..) => {
                // A PageFilter counts only rows the rest of the AND keeps
                // (HBase's PageFilter counts in filterRow, after the others'
                // row-key and cell checks), so page filters go last.
                let mut operands = Vec::new();
                self.and_operands(&mut operands);
                if operands.iter().any(|f| matches!(f, Filter::Page { limit, seen, .. } if seen >= limit)) {
                    return (Outcome::EndScan, true);
                }
                operands.sort_by_key(|f| matches!(f, Filter::Page { .. }));
                let mut cells = cells;
                // HBase's FilterListWithAND.filterRow asks its filters in
                // turn until one wants the row dropped.
                let mut drops = false;
                for f in operands {
                    let (outcome, drop) = f.apply_to(row, cells, versions, reached && !drops);
                    drops |= drop;
                    match outcome {
                        Outcome::Keep(kept) => cells = kept,
                        other => return (other, drops),
                    }
                }
                return (Outcome::Keep(cells), drops);
            }
            Filter::Or(a, b) => {
                // HBase's FilterListWithOR.filterRow asks its filters in
                // turn until one keeps the row: a PageFilter after a filter
                // that keeps the row does not count it (and, in
                // `PrefixFilter('a') OR PageFilter(2)`, counts only rows
                // outside the prefix).
                let (ra, drop_a) = a.apply_to(row, cells.clone(), versions, reached);
                let (rb, drop_b) = b.apply_to(row, cells, versions, reached && drop_a);
                let outcome = match (ra, rb) {
                    (Outcome::Keep(ka), Outcome::Keep(kb)) => Outcome::Keep(union(ka, kb)),
                    (k @ Outcome::Keep(_), _) | (_, k @ Outcome::Keep(_)) => k,
                    (Outcome::EndScan, Outcome::EndScan) => Outcome::EndScan,
                    _ => Outcome::DropRow,
                };
                return (outcome, drop_a && drop_b);
            }
            // SKIP: the row goes only if every candidate passes. HBase's
            // SkipFilter answers filterRow itself, never asking the filter
            // it wraps (whose PageFilters are never reached).
            Filter::Skip(f) => {
                let n = cells.len();
                let outcome = match f.apply_to(row, cells, versions, false).0 {
                    Outcome::Keep(kept) if kept.len() == n => Outcome::Keep(kept),
                    Outcome::EndScan => Outcome::EndScan,
                    _ => Outcome::DropRow,
                };
                let drops = !matches!(outcome, Outcome::Keep(_));
                return (outcome, drops);
            }
            // WHILE: everything up to the first cell (or row) the inner
            // filter rejects, then nothing more for the rest of the scan
            // (HBase's WhileMatchFilter sets filterAllRemaining there, and
            // the matcher ends the scan at the next cell).
            Filter::While { inner, stopped } => {
                if *stopped {
                    return (Outcome::EndScan, true);
                }
                let offered: Vec<usize> = cells.iter().map(|k| k.index).collect();
                // HBase's WhileMatchFilter.filterRow is its inner filter's.
                let (inner_outcome, inner_drops) = inner.apply_to(row, cells, versions, reached);
                let outcome = match inner_outcome {
                    Outcome::Keep(kept) => {
                        // `kept` is in row order and a subset of `offered`:
                        // the first offered cell missing from it ends the run.
                        let run = kept.iter().zip(&offered).take_while(|(k, o)| k.index == **o).count();
                        if run < offered.len() {
                            *stopped = true;
                        }
                        let mut kept = kept;
                        kept.truncate(run);
                        if kept.is_empty() { Outcome::EndScan } else { Outcome::Keep(kept) }
                    }
                    Outcome::DropRow | Outcome::EndScan => {
                        *stopped = true;
                        Outcome::EndScan
                    }
                };
                let drops = inner_drops || !matches!(outcome, Outcome::Keep(_));
                return (outcome, drops);
            }
        };
        let drops = decides_rows && !matches!(outcome, Outcome::Keep(_));
        (outcome, drops)
    }

    /// The operands of a chain of ANDs, in order.
    fn and_operands<'a>(&'a mut self, out: &mut Vec<&'a mut Filter>) {
        match self {
            Filter::And(a, b) => {
                a.and_operands(out);
                b.and_operands(out);
            }
            other => out.push(other),
        }
    }
}

/// The first candidate of each column (its newest version), in order.
fn newest_of_each_column(row: &[Cell], cells: &[KeptCell]) -> Vec<KeptCell> {
    let mut out: Vec<KeptCell> = Vec::new();
    for k in cells {
        let c = &row[k.index];
        let same = out.last().is_some_and(|p| row[p.index].family == c.family && row[p.index].qualifier == c.qualifier);
        if !same {
            out.push(*k);
        }
    }
    out
}

/// Whether `row` matches a FuzzyRowFilter pair: every byte the mask fixes
/// (mask byte 0) equals the key's, over the bytes both have (HBase's
/// `satisfies` compares `min(row, key)` bytes). A mask shorter than the key
/// fixes the bytes past its end.
fn fuzzy_match(row: &[u8], key: &[u8], mask: &[u8]) -> bool {
    row.iter().zip(key).enumerate().all(|(i, (r, k))| mask.get(i).is_some_and(|m| *m != 0) || r == k)
}

/// The next float in [0, 1) from a xorshift64* generator.
fn next_unit_float(state: &mut u64) -> f32 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    // The top 24 bits: every value exactly representable in an f32.
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32
}

/// A row's fate on its key alone (see [`Filter::check_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyCheck {
    Pass,
    Drop,
    End,
}

impl KeyCheck {
    fn pass_if(pass: bool) -> KeyCheck {
        if pass { KeyCheck::Pass } else { KeyCheck::Drop }
    }

    /// Both filters of an AND: the scan ends when either has ended it (its
    /// filterAllRemaining), the row goes when either drops it.
    fn and(self, other: KeyCheck) -> KeyCheck {
        match (self, other) {
            (KeyCheck::End, _) | (_, KeyCheck::End) => KeyCheck::End,
            (KeyCheck::Drop, _) | (_, KeyCheck::Drop) => KeyCheck::Drop,
            _ => KeyCheck::Pass,
        }
    }

    /// Either filter of an OR: the row passes when either passes it, the
    /// scan ends only when both have ended it.
    fn or(self, other: KeyCheck) -> KeyCheck {
        match (self, other) {
            (KeyCheck::Pass, _) | (_, KeyCheck::Pass) => KeyCheck::Pass,
            (KeyCheck::End, KeyCheck::End) => KeyCheck::End,
            _ => KeyCheck::Drop,
        }
    }
}

fn keep(cells: Vec<KeptCell>) -> Outcome {
    if cells.is_empty() { Outcome::DropRow } else { Outcome::Keep(cells) }
}

/// A row-level decision over the candidates.
fn whole_row(pass: bool, cells: Vec<KeptCell>) -> Outcome {
    if pass { keep(cells) } else { Outcome::DropRow }
}

/// Cells kept by either branch of an OR, in row order; a cell both kept
/// gets both transforms, in filter order (HBase's FilterListWithOR
/// transforms a cell by every filter that included it).
fn union(a: Vec<KeptCell>, b: Vec<KeptCell>) -> Vec<KeptCell> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (Some(x), Some(y)) if x.index == y.index => {
                out.push(KeptCell { index: x.index, transform: x.transform.then(y.transform) });
                a.next();
                b.next();
            }
            (Some(x), Some(y)) if x.index < y.index => {
                out.push(x);
                a.next();
            }
            (_, Some(y)) => {
                out.push(y);
                b.next();
            }
            (Some(x), None) => {
                out.push(x);
                a.next();
            }
            (None, None) => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::filter::parse;
    use crate::read::filter::test_support::{VERSIONS, cell, indexes, kept, versioned};

    #[test]
    fn cell_filters_choose_cells() {
        let row = [cell("r1", "aa", "x"), cell("r1", "ab", "yy"), cell("r1", "b", "z")];
        assert_eq!(indexes("ColumnPrefixFilter('a')", &row), Ok(Some(vec![0, 1])));
        assert_eq!(indexes("QualifierFilter(=, 'binary:b')", &row), Ok(Some(vec![2])));
        assert_eq!(indexes("ValueFilter(=,'substring:Y')", &row), Ok(Some(vec![1])));
        assert_eq!(indexes("ValueFilter(>, 'binary:x')", &row), Ok(Some(vec![1, 2])));
        assert_eq!(indexes("ValueFilter(=, 'regexstring:^y+$')", &row), Ok(Some(vec![1])));
        assert_eq!(
            kept("FirstKeyOnlyFilter() AND KeyOnlyFilter()", &row),
            Outcome::Keep(vec![KeptCell { index: 0, transform: ValueTransform::Strip }])
        );
        assert_eq!(indexes("QualifierFilter(=,'binary:zz')", &row), Ok(None));
    }

    #[test]
    fn row_filters_and_pages() {
        let r = |k: &str| vec![cell(k, "q", "v")];
        let mut f = parse(b"PrefixFilter('b') AND PageFilter(2)").expect("parses");
        assert_eq!(f.required_prefix(), Some(&b"b"[..]));
        assert_eq!(f.apply(&r("a"), VERSIONS), Outcome::DropRow);
        assert!(matches!(f.apply(&r("b1"), VERSIONS), Outcome::Keep(_)));
        assert!(matches!(f.apply(&r("b2"), VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&r("b3"), VERSIONS), Outcome::EndScan, "page of 2 rows is full");
        let mut f = parse(b"PrefixFilter('b')").expect("parses");
        assert_eq!(
            f.apply(&r("c"), VERSIONS),
            Outcome::DropRow,
            "past the prefix (either direction) the row is dropped"
        );
    }

    /// Issue 15 item 5: `PageFilter(1) AND RowFilter(>=,'binary:fb')` over
    /// rows fa, fb returns fb in HBase; the page counted fa before.
    #[test]
    fn a_page_counts_only_rows_the_rest_of_the_and_keeps() {
        let r = |k: &str| vec![cell(k, "q", "v")];
        let mut f = parse(b"PageFilter(1) AND RowFilter(>=, 'binary:fb')").expect("parses");
        assert_eq!(f.apply(&r("fa"), VERSIONS), Outcome::DropRow);
        assert!(matches!(f.apply(&r("fb"), VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&r("fc"), VERSIONS), Outcome::EndScan);
        let mut f = parse(b"PageFilter(1) AND ValueFilter(=, 'binary:x') AND PrefixFilter('f')").expect("parses");
        assert_eq!(f.apply(&r("fa"), VERSIONS), Outcome::DropRow, "value v is not x");
        assert!(matches!(f.apply(&[cell("fb", "q", "x")], VERSIONS), Outcome::Keep(_)));
    }

    /// Issue 29 item 8: HBase's OR asks its filters' filterRow in turn until
    /// one keeps the row, and a PageFilter counts there: after a filter
    /// that keeps the row it does not count it. `PrefixFilter('fa') OR
    /// PageFilter(2)` keeps fa without counting it, then counts fb and fc;
    /// after a cell-level filter (whose filterRow keeps every row) a page
    /// never counts, and passes every row whole.
    #[test]
    fn a_page_inside_or_counts_only_rows_the_filters_before_it_drop() {
        let r = |k: &str| vec![cell(k, "q", "v")];
        let mut f = parse(b"PrefixFilter('fa') OR PageFilter(2)").expect("parses");
        for key in ["fa", "fb", "fc"] {
            assert!(matches!(f.apply(&r(key), VERSIONS), Outcome::Keep(_)), "{key}");
        }
        assert_eq!(f.apply(&r("fd"), VERSIONS), Outcome::DropRow, "the page is full, fd lacks the prefix");
        assert!(matches!(f.apply(&r("fa"), VERSIONS), Outcome::Keep(_)));

        let mut f = parse(b"PageFilter(2) OR PrefixFilter('fa')").expect("parses");
        assert!(matches!(f.apply(&r("fa"), VERSIONS), Outcome::Keep(_)));
        assert!(matches!(f.apply(&r("fb"), VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&r("fc"), VERSIONS), Outcome::DropRow, "first in the OR, the page counted fa and fb");

        let mut f = parse(b"ValueFilter(=, 'binary:x') OR PageFilter(1)").expect("parses");
        for key in ["fa", "fb", "fc"] {
            assert_eq!(f.apply(&[cell(key, "a", "x"), cell(key, "b", "y")], VERSIONS).kept_indexes(), [0, 1], "{key}");
        }

        let mut f = parse(b"SKIP PageFilter(1)").expect("parses");
        assert!(matches!(f.apply(&r("fa"), VERSIONS), Outcome::Keep(_)));
        assert!(matches!(f.apply(&r("fb"), VERSIONS), Outcome::Keep(_)), "SKIP never asks the page's filterRow");
    }

    /// Issue 29 item 8: a row the scan reads no cell of still shows its key
    /// to the filter, as HBase's filterRowKey sees it: a WHILE whose row
    /// check rejects the key ends the scan; nothing else does, and the row
    /// is never kept.
    #[test]
    fn a_row_without_cells_shows_its_key_to_the_filter() {
        let mut f = parse(b"WHILE RowFilter(!=, 'binary:q')").expect("parses");
        assert_eq!(f.apply_to_key(b"p"), Outcome::DropRow);
        assert_eq!(f.apply_to_key(b"q"), Outcome::EndScan);
        assert_eq!(f.apply(&[cell("r", "a", "v")], VERSIONS), Outcome::EndScan, "the WHILE has stopped");

        let mut f = parse(b"WHILE RowFilter(!=, 'binary:q') OR PrefixFilter('r')").expect("parses");
        assert_eq!(f.apply_to_key(b"q"), Outcome::DropRow, "the OR goes on");
        assert_eq!(f.apply(&[cell("p", "a", "v")], VERSIONS), Outcome::DropRow, "without its stopped WHILE");
        assert!(matches!(f.apply(&[cell("r", "a", "v")], VERSIONS), Outcome::Keep(_)));

        let mut f = parse(b"InclusiveStopFilter('b') AND ValueFilter(=, 'binary:v')").expect("parses");
        assert_eq!(f.apply_to_key(b"b"), Outcome::DropRow);
        assert_eq!(f.apply_to_key(b"c"), Outcome::EndScan);
        assert_eq!(parse(b"SKIP RowFilter(=, 'binary:q')").expect("parses").apply_to_key(b"p"), Outcome::DropRow);
        assert_eq!(parse(b"PageFilter(0)").expect("parses").apply_to_key(b"p"), Outcome::EndScan);
    }

    /// Issue 15 item 5: KeyOnlyFilter inside OR strips the values of every
    /// cell it included, whatever the other branch kept.
    #[test]
    fn key_only_inside_or_strips_every_cell_it_included() {
        let row = [cell("r", "a", "1"), cell("r", "b", "2")];
        let strip = |index| KeptCell { index, transform: ValueTransform::Strip };
        assert_eq!(
            kept("KeyOnlyFilter() OR QualifierFilter(=, 'binary:a')", &row),
            Outcome::Keep(vec![strip(0), strip(1)])
        );
        assert_eq!(
            kept("QualifierFilter(=, 'binary:a') OR KeyOnlyFilter()", &row),
            Outcome::Keep(vec![strip(0), strip(1)])
        );
        assert_eq!(
            kept("(KeyOnlyFilter() AND QualifierFilter(=, 'binary:b')) OR QualifierFilter(=, 'binary:a')", &row),
            Outcome::Keep(vec![KeptCell { index: 0, transform: ValueTransform::Keep }, strip(1)])
        );
        assert_eq!(
            kept("KeyOnlyFilter(true)", &row),
            Outcome::Keep(vec![
                KeptCell { index: 0, transform: ValueTransform::Length },
                KeptCell { index: 1, transform: ValueTransform::Length }
            ])
        );
    }

    /// Issue 15 item 5: WHILE over a cell-level filter returns the row up
    /// to the first rejected cell, then ends the scan; inside OR, a stopped
    /// WHILE stays stopped while the other branch goes on.
    #[test]
    fn while_returns_the_partial_row_then_stays_stopped() {
        let row = [versioned("r1", "f1", "a", 1, "x"), versioned("r1", "f2", "a", 1, "y")];
        let mut f = parse(b"WHILE FamilyFilter(=, 'binary:f1')").expect("parses");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0]);
        assert_eq!(f.apply(&[versioned("r2", "f1", "a", 1, "x")], VERSIONS), Outcome::EndScan);

        let mut f = parse(b"WHILE ValueFilter(=, 'binary:x') OR RowFilter(=, 'binary:r3')").expect("parses");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0]);
        let only_x = [versioned("r2", "f1", "a", 1, "x")];
        assert_eq!(f.apply(&only_x, VERSIONS), Outcome::DropRow, "the WHILE branch has stopped; r2 is not r3");
        assert_eq!(f.apply(&[versioned("r3", "f1", "a", 1, "y")], VERSIONS).kept_indexes(), vec![0]);

        let mut f = parse(b"WHILE RowFilter(<, 'binary:r2')").expect("parses");
        assert!(matches!(f.apply(&row, VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&only_x, VERSIONS), Outcome::EndScan);
    }

    /// The column filters of HBase's filter language beyond the common ones.
    #[test]
    fn column_filters() {
        let row = [
            versioned("r", "f", "a", 2, "1"),
            versioned("r", "f", "a", 1, "0"),
            versioned("r", "f", "b", 1, "2"),
            versioned("r", "f", "c", 3, "3"),
            versioned("r", "g", "d", 1, "4"),
        ];
        assert_eq!(indexes("MultipleColumnPrefixFilter('b', 'c')", &row), Ok(Some(vec![2, 3])));
        assert_eq!(indexes("ColumnRangeFilter('a', false, 'c', true)", &row), Ok(Some(vec![2, 3])));
        assert_eq!(indexes("ColumnRangeFilter('', true, 'b', false)", &row), Ok(Some(vec![0, 1])));
        assert_eq!(indexes("TimestampsFilter(1, 3)", &row), Ok(Some(vec![1, 2, 3, 4])));
        assert_eq!(indexes("ColumnPaginationFilter(2, 1)", &row), Ok(Some(vec![2, 3])), "newest version of b and c");
        assert_eq!(indexes("ColumnCountGetFilter(5)", &row), Ok(Some(vec![0, 2, 3, 4])));
        let mut f = parse(b"ColumnCountGetFilter(3)").expect("parses");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0, 2, 3], "column 4 is g's: g is done");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0, 2, 3], "f goes on");
        let mut f = parse(b"ColumnCountGetFilter(2)").expect("parses");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0, 2], "column 3 is f's, and g follows: both done");
        assert_eq!(f.apply(&row, VERSIONS), Outcome::DropRow);
        assert_eq!(
            indexes("SingleColumnValueExcludeFilter('f', 'b', =, 'binary:2')", &row),
            Ok(Some(vec![0, 1, 3, 4]))
        );
    }

    #[test]
    fn inclusive_stop_and_dependent_column() {
        let r = |k: &str| vec![cell(k, "q", "v")];
        let mut f = parse(b"InclusiveStopFilter('b')").expect("parses");
        assert!(matches!(f.apply(&r("b"), VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&r("c"), VERSIONS), Outcome::EndScan);
        f.set_reversed(true);
        assert!(matches!(f.apply(&r("c"), VERSIONS), Outcome::Keep(_)));
        assert_eq!(f.apply(&r("a"), VERSIONS), Outcome::EndScan);

        let row = [
            versioned("r", "f", "a", 2, "x"),
            versioned("r", "f", "a", 1, "y"),
            versioned("r", "f", "dep", 2, "on"),
            versioned("r", "f", "dep", 1, "off"),
        ];
        let mut f = parse(b"DependentColumnFilter('f', 'dep', true, =, 'binary:off')").expect("parses");
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), vec![0, 1], "the reference column is dropped");
        let mut cells = row.to_vec();
        f.filter_row_cells(&mut cells);
        assert_eq!(cells.iter().map(|c| c.timestamp).collect::<Vec<_>>(), [1, 1], "cells at the reference's stamp 1");
        assert_eq!(kept("DependentColumnFilter('f', 'none')", &row), Outcome::DropRow);
    }

    /// Versions: a cell filter sees every version; SingleColumnValueFilter
    /// with latestVersionOnly false passes a row where any version matches.
    #[test]
    fn single_column_value_filter_tests_the_column() {
        let row = [cell("r", "a", "1"), cell("r", "b", "2")];
        assert!(matches!(kept("SingleColumnValueFilter('f','a',=,'binary:1')", &row), Outcome::Keep(_)));
        assert_eq!(kept("SingleColumnValueFilter('f','a',=,'binary:2')", &row), Outcome::DropRow);
        assert!(matches!(kept("SingleColumnValueFilter('f','z',=,'binary:2')", &row), Outcome::Keep(_)));
        assert_eq!(kept("SingleColumnValueFilter('f','z',=,'binary:2', true, true)", &row), Outcome::DropRow);

        let versions = [versioned("r", "f", "a", 3, "new"), versioned("r", "f", "a", 2, "old")];
        assert_eq!(kept("SingleColumnValueFilter('f','a',=,'binary:old')", &versions), Outcome::DropRow);
        assert_eq!(
            indexes("SingleColumnValueFilter('f','a',=,'binary:old', false, false)", &versions),
            Ok(Some(vec![0, 1]))
        );
        assert_eq!(kept("SingleColumnValueFilter('f','a',=,'binary:no', true, false)", &versions), Outcome::DropRow);
        assert_eq!(indexes("ValueFilter(=, 'binary:old')", &versions), Ok(Some(vec![1])));
    }

    /// FuzzyRowFilter: mask byte 0 fixes a position, 1 frees it; pairs are
    /// alternatives; a row shorter than the key is compared over its own
    /// bytes (HBase's `satisfies`), and the filter combines like any other.
    #[test]
    fn fuzzy_row_filter_matches_the_fixed_bytes_of_any_pair() {
        let f = |pairs: &[(&str, &[u8])]| {
            Filter::FuzzyRow(pairs.iter().map(|(k, m)| (k.as_bytes().to_vec(), m.to_vec())).collect())
        };
        let pass = |filter: &Filter, row: &str| {
            matches!(filter.clone().apply(&[cell(row, "a", "1")], VERSIONS), Outcome::Keep(_))
        };
        // "????_2026": any user, the year fixed.
        let year = f(&[("0000_2026", &[1, 1, 1, 1, 0, 0, 0, 0, 0])]);
        assert!(pass(&year, "u042_2026"));
        assert!(pass(&year, "zzzz_2026-11"), "bytes past the key are free");
        assert!(!pass(&year, "u042_2025"));
        assert!(!pass(&year, "u042-2026"));
        assert!(pass(&year, "u04"), "a shorter row is compared over its own bytes");
        let either = f(&[("a?", &[0, 1]), ("?b", &[1, 0])]);
        assert!(pass(&either, "ax") && pass(&either, "xb"));
        assert!(!pass(&either, "xx"));
        // A mask shorter than its key fixes the rest.
        assert!(pass(&f(&[("?bc", &[1])]), "xbc"));
        assert!(!pass(&f(&[("?bc", &[1])]), "xbd"));
        let mut and =
            Filter::And(Box::new(year.clone()), Box::new(parse(b"QualifierFilter(=, 'binary:b')").expect("parses")));
        let row = [cell("u042_2026", "a", "1"), cell("u042_2026", "b", "2")];
        assert_eq!(and.apply(&row, VERSIONS).kept_indexes(), [1]);
    }

    /// RandomRowFilter: below 0 no row, above 1 every row, in between about
    /// `chance` of the rows, the same rows for the same seed and whole rows.
    #[test]
    fn random_row_filter_passes_about_its_chance_of_rows() {
        // A function, not a closure: rustc (1.91 and later, release
        // builds) passes a constant argument of a closure call by pointer
        // to one shared temporary, so the second `passed(Filter::
        // random_row(0.25, 7))` started from the state the first call left
        // (rust-lang/rust#155241).
        fn passed(mut f: Filter) -> Vec<usize> {
            (0..10_000)
                .filter(|i| {
                    let key = format!("r{i:05}");
                    f.apply(&[cell(&key, "a", "1"), cell(&key, "b", "2")], VERSIONS) != Outcome::DropRow
                })
                .collect()
        }
        assert!(passed(Filter::random_row(-0.5, 1)).is_empty());
        assert_eq!(passed(Filter::random_row(1.5, 1)).len(), 10_000);
        let quarter = passed(Filter::random_row(0.25, 7));
        assert!((2_300..2_700).contains(&quarter.len()), "{} of 10000 at 0.25", quarter.len());
        assert_eq!(quarter, passed(Filter::random_row(0.25, 7)), "the same seed draws the same rows");
        assert_ne!(quarter, passed(Filter::random_row(0.25, 8)));
        assert!(passed(Filter::random_row(0.0, 0)).is_empty(), "a zero seed still draws, and 0 passes nothing");
        let mut f = Filter::random_row(1.0, 3);
        let row = [cell("r", "a", "1"), cell("r", "b", "2")];
        assert_eq!(f.apply(&row, VERSIONS).kept_indexes(), [0, 1], "a passing row passes whole");
    }
}
