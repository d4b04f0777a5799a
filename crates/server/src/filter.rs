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

use std::cmp::Ordering;

use memstore::Cell;
use regex::bytes::Regex;

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

impl Comparator {
    fn parse(s: &[u8], at: usize) -> Result<Comparator, FilterError> {
        let err = |reason: &str| FilterError::Syntax { at, reason: reason.to_string() };
        let i = s.iter().position(|&b| b == b':').ok_or_else(|| err("comparator needs a type, as 'binary:value'"))?;
        let (kind, value) = (&s[..i], s[i + 1..].to_vec());
        Ok(match kind {
            b"binary" => Comparator::Binary(value),
            b"binaryprefix" => Comparator::BinaryPrefix(value),
            b"substring" => Comparator::Substring(value.to_ascii_lowercase()),
            b"regexstring" => {
                let pattern = String::from_utf8(value).map_err(|_| err("regex is not UTF-8"))?;
                Comparator::Regex(Regex::new(&pattern).map_err(|e| err(&format!("bad regex: {e}")))?)
            }
            other => return Err(err(&format!("unknown comparator type {:?}", String::from_utf8_lossy(other)))),
        })
    }

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

/// Parses a filter string.
pub fn parse(s: &[u8]) -> Result<Filter, FilterError> {
    let mut p = Parser { s, pos: 0, depth: 0, filters: 0 };
    let f = p.or_expr()?;
    p.skip_ws();
    if p.pos != s.len() {
        return Err(p.error("unexpected text after the filter"));
    }
    Ok(f)
}

/// Bounds on a filter string, so that a client cannot make the server
/// recurse deeply (the parser, the evaluator and dropping the tree all
/// recurse; a stack overflow would abort the whole server).
const MAX_DEPTH: usize = 32;
const MAX_FILTERS: usize = 128;

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
    filters: usize,
}

enum Arg {
    Str(Vec<u8>, usize),
    Word(String),
}

impl Parser<'_> {
    fn error(&self, reason: &str) -> FilterError {
        FilterError::Syntax { at: self.pos, reason: reason.to_string() }
    }

    fn skip_ws(&mut self) {
        while self.s.get(self.pos).is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn keyword(&mut self, kw: &str) -> bool {
        self.skip_ws();
        let end = self.pos + kw.len();
        let next_is_word = self.s.get(end).is_some_and(|b| b.is_ascii_alphanumeric());
        if self.s.len() >= end && self.s[self.pos..end].eq_ignore_ascii_case(kw.as_bytes()) && !next_is_word {
            self.pos = end;
            true
        } else {
            false
        }
    }

    fn or_expr(&mut self) -> Result<Filter, FilterError> {
        let mut f = self.and_expr()?;
        while self.keyword("OR") {
            f = Filter::Or(Box::new(f), Box::new(self.and_expr()?));
        }
        Ok(f)
    }

    fn and_expr(&mut self) -> Result<Filter, FilterError> {
        let mut f = self.unary()?;
        while self.keyword("AND") {
            f = Filter::And(Box::new(f), Box::new(self.unary()?));
        }
        Ok(f)
    }

    fn unary(&mut self) -> Result<Filter, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(&format!("filter nested deeper than {MAX_DEPTH}")));
        }
        let f = self.unary_inner();
        self.depth -= 1;
        f
    }

    fn unary_inner(&mut self) -> Result<Filter, FilterError> {
        if self.keyword("SKIP") {
            return Ok(Filter::Skip(Box::new(self.unary()?)));
        }
        if self.keyword("WHILE") {
            return Ok(Filter::While(Box::new(self.unary()?)));
        }
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'(') {
            self.pos += 1;
            let f = self.or_expr()?;
            self.skip_ws();
            if self.s.get(self.pos) != Some(&b')') {
                return Err(self.error("missing ')'"));
            }
            self.pos += 1;
            return Ok(f);
        }
        self.filter()
    }

    fn filter(&mut self) -> Result<Filter, FilterError> {
        self.filters += 1;
        if self.filters > MAX_FILTERS {
            return Err(self.error(&format!("more than {MAX_FILTERS} filters in one filter string")));
        }
        self.skip_ws();
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.error("expected a filter name"));
        }
        let name = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.skip_ws();
        if self.s.get(self.pos) != Some(&b'(') {
            return Err(self.error(&format!("expected '(' after {name}")));
        }
        self.pos += 1;
        let args = self.args()?;
        build(&name, args, start)
    }

    fn args(&mut self) -> Result<Vec<Arg>, FilterError> {
        let mut args = Vec::new();
        loop {
            self.skip_ws();
            match self.s.get(self.pos) {
                None => return Err(self.error("missing ')'")),
                Some(b')') => {
                    self.pos += 1;
                    return Ok(args);
                }
                Some(b',') if !args.is_empty() => self.pos += 1,
                Some(_) if args.is_empty() => {}
                Some(_) => return Err(self.error("expected ',' or ')'")),
            }
            self.skip_ws();
            let at = self.pos;
            match self.s.get(self.pos) {
                Some(b'\'') => args.push(Arg::Str(self.quoted()?, at)),
                Some(_) => {
                    while self.s.get(self.pos).is_some_and(|b| !matches!(b, b',' | b')') && !b.is_ascii_whitespace()) {
                        self.pos += 1;
                    }
                    if at == self.pos {
                        return Err(self.error("expected an argument"));
                    }
                    args.push(Arg::Word(String::from_utf8_lossy(&self.s[at..self.pos]).into_owned()));
                }
                None => return Err(self.error("missing ')'")),
            }
        }
    }

    /// A single-quoted string; '' is a quote inside it.
    fn quoted(&mut self) -> Result<Vec<u8>, FilterError> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.pos) {
                None => return Err(self.error("unterminated quoted string")),
                Some(b'\'') if self.s.get(self.pos + 1) == Some(&b'\'') => {
                    out.push(b'\'');
                    self.pos += 2;
                }
                Some(b'\'') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(&b) => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }
}

fn build(name: &str, args: Vec<Arg>, at: usize) -> Result<Filter, FilterError> {
    let err = |reason: String| FilterError::Syntax { at, reason };
    let want = |n: usize| {
        if args.len() == n { Ok(()) } else { Err(err(format!("{name} takes {n} argument(s), got {}", args.len()))) }
    };
    let string = |a: &Arg| match a {
        Arg::Str(s, _) => Ok(s.clone()),
        Arg::Word(w) => Err(err(format!("{name}: expected a quoted string, got {w}"))),
    };
    let op = |a: &Arg| match a {
        Arg::Word(w) => match w.as_str() {
            "<" => Ok(CompareOp::Less),
            "<=" => Ok(CompareOp::LessOrEqual),
            "=" => Ok(CompareOp::Equal),
            "!=" => Ok(CompareOp::NotEqual),
            ">=" => Ok(CompareOp::GreaterOrEqual),
            ">" => Ok(CompareOp::Greater),
            other => Err(err(format!("{name}: unknown comparison operator {other}"))),
        },
        Arg::Str(..) => Err(err(format!("{name}: expected a comparison operator"))),
    };
    let comparator = |a: &Arg| match a {
        Arg::Str(s, at) => Comparator::parse(s, *at),
        Arg::Word(..) => Err(err(format!("{name}: expected a quoted comparator"))),
    };
    let boolean = |a: &Arg| match a {
        Arg::Word(w) if w.eq_ignore_ascii_case("true") => Ok(true),
        Arg::Word(w) if w.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(err(format!("{name}: expected true or false"))),
    };
    Ok(match name {
        "PrefixFilter" => {
            want(1)?;
            Filter::Prefix(string(&args[0])?)
        }
        "KeyOnlyFilter" => {
            want(0)?;
            Filter::KeyOnly
        }
        "FirstKeyOnlyFilter" => {
            want(0)?;
            Filter::FirstKeyOnly
        }
        "ColumnPrefixFilter" => {
            want(1)?;
            Filter::ColumnPrefix(string(&args[0])?)
        }
        "QualifierFilter" | "ValueFilter" | "RowFilter" | "FamilyFilter" => {
            want(2)?;
            let (o, c) = (op(&args[0])?, comparator(&args[1])?);
            match name {
                "QualifierFilter" => Filter::Qualifier(o, c),
                "ValueFilter" => Filter::Value(o, c),
                "RowFilter" => Filter::Row(o, c),
                _ => Filter::Family(o, c),
            }
        }
        "SingleColumnValueFilter" => {
            if args.len() != 4 && args.len() != 6 {
                return Err(err(format!("{name} takes 4 or 6 arguments, got {}", args.len())));
            }
            Filter::SingleColumnValue {
                family: string(&args[0])?,
                qualifier: string(&args[1])?,
                op: op(&args[2])?,
                cmp: comparator(&args[3])?,
                filter_if_missing: if args.len() == 6 { boolean(&args[4])? } else { false },
            }
        }
        "PageFilter" => {
            want(1)?;
            let limit = match &args[0] {
                Arg::Word(w) => w.parse::<u64>().map_err(|_| err(format!("{name}: {w} is not a page size")))?,
                Arg::Str(..) => return Err(err(format!("{name}: expected a number"))),
            };
            Filter::Page { limit, seen: 0 }
        }
        other => return Err(FilterError::Unsupported(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, q: &str, v: &str) -> Cell {
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

    fn kept(f: &str, row: &[Cell]) -> Outcome {
        parse(f.as_bytes()).expect("parses").apply(row)
    }

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
    fn boolean_combinations_follow_hbase_precedence() {
        let row = [cell("r1", "a", "1"), cell("r1", "b", "2"), cell("r1", "c", "3")];
        // AND binds tighter than OR.
        let f = "QualifierFilter(=,'binary:a') OR QualifierFilter(=,'binary:b') AND ValueFilter(=,'binary:9')";
        assert_eq!(kept(f, &row), Outcome::Keep { cells: vec![0], key_only: false });
        let f = "(QualifierFilter(=,'binary:a') OR QualifierFilter(=,'binary:b')) AND ValueFilter(=,'binary:2')";
        assert_eq!(kept(f, &row), Outcome::Keep { cells: vec![1], key_only: false });
        assert_eq!(kept("SKIP ValueFilter(!=, 'binary:2')", &row), Outcome::DropRow);
        assert_eq!(kept("WHILE ValueFilter(!=, 'binary:2')", &row), Outcome::EndScan);
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

    #[test]
    fn deep_or_long_filter_strings_are_refused_not_recursed_into() {
        let deep = format!("{}PageFilter(1){}", "(".repeat(5000), ")".repeat(5000));
        assert!(matches!(parse(deep.as_bytes()), Err(FilterError::Syntax { .. })));
        let skips = format!("{}PageFilter(1)", "SKIP ".repeat(5000));
        assert!(matches!(parse(skips.as_bytes()), Err(FilterError::Syntax { .. })));
        let long = vec!["KeyOnlyFilter()"; 100_000].join(" AND ");
        assert!(matches!(parse(long.as_bytes()), Err(FilterError::Syntax { .. })));
        let fine = vec!["KeyOnlyFilter()"; 100].join(" AND ");
        assert!(parse(fine.as_bytes()).is_ok());
    }

    #[test]
    fn unknown_and_malformed_filters_are_refused() {
        assert_eq!(parse(b"FuzzyRowFilter('x')").unwrap_err(), FilterError::Unsupported("FuzzyRowFilter".into()));
        for bad in [
            "PrefixFilter('a'",
            "PrefixFilter(a)",
            "ValueFilter(~, 'binary:a')",
            "ValueFilter(=, 'nope:a')",
            "",
            "PrefixFilter('a') junk",
            "PageFilter('x')",
        ] {
            assert!(matches!(parse(bad.as_bytes()), Err(FilterError::Syntax { .. })), "{bad}");
        }
        assert_eq!(
            parse(b"PrefixFilter('it''s')").map(|f| f.required_prefix().map(<[u8]>::to_vec)).ok().flatten(),
            Some(b"it's".to_vec())
        );
    }
}
