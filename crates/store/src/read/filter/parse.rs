//! The filter language → [`Filter`]: [`parse`] and its recursive-descent
//! parser (with the bounds on nesting and size), building each named filter
//! from its arguments, and reading a comparator (`'binary:…'`, …).

use super::{Comparator, CompareOp, Filter, FilterError};

/// A comparator written `'type:value'` at byte `at` of the filter string.
fn comparator(s: &[u8], at: usize) -> Result<Comparator, FilterError> {
    let err = |reason: String| FilterError::Syntax { at, reason };
    let i =
        s.iter().position(|&b| b == b':').ok_or_else(|| err("comparator needs a type, as 'binary:value'".into()))?;
    Comparator::new(&s[..i], &s[i + 1..]).map_err(err)
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
            return Ok(Filter::While { inner: Box::new(self.unary()?), stopped: false });
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
        Arg::Str(s, at) => comparator(s, *at),
        Arg::Word(..) => Err(err(format!("{name}: expected a quoted comparator"))),
    };
    // HBase's ParseFilter.createCompareFilter: substring and regex
    // comparators answer only equal or not.
    let compare = |o: &Arg, c: &Arg| -> Result<(CompareOp, Comparator), FilterError> {
        let (o, c) = (op(o)?, comparator(c)?);
        if c.is_equality_only() && !matches!(o, CompareOp::Equal | CompareOp::NotEqual) {
            return Err(err(format!(
                "{name}: a regexstring comparator and substring comparator can only be used with EQUAL and NOT_EQUAL"
            )));
        }
        Ok((o, c))
    };
    let number = |a: &Arg| match a {
        Arg::Word(w) => w.parse::<u64>().map_err(|_| err(format!("{name}: {w} is not a non-negative integer"))),
        Arg::Str(..) => Err(err(format!("{name}: expected a number"))),
    };
    let count =
        |a: &Arg| number(a).and_then(|n| usize::try_from(n).map_err(|_| err(format!("{name}: {n} is too large"))));
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
        "KeyOnlyFilter" => match args.as_slice() {
            [] => Filter::KeyOnly { len_as_value: false },
            [a] => Filter::KeyOnly { len_as_value: boolean(a)? },
            _ => return Err(err(format!("{name} takes 0 or 1 argument(s), got {}", args.len()))),
        },
        "FirstKeyOnlyFilter" => {
            want(0)?;
            Filter::FirstKeyOnly
        }
        "ColumnPrefixFilter" => {
            want(1)?;
            Filter::ColumnPrefix(string(&args[0])?)
        }
        "MultipleColumnPrefixFilter" => {
            if args.is_empty() {
                return Err(err(format!("{name} takes at least one prefix")));
            }
            let prefixes = args.iter().map(string).collect::<Result<Vec<_>, _>>()?;
            // HBase refuses a repeated prefix (its sorted set would drop it).
            for (i, p) in prefixes.iter().enumerate() {
                if prefixes[..i].contains(p) {
                    return Err(err(format!("{name}: prefix {} is repeated", String::from_utf8_lossy(p))));
                }
            }
            Filter::MultipleColumnPrefix(prefixes)
        }
        "ColumnRangeFilter" => {
            want(4)?;
            let bound = |a: &Arg| string(a).map(|s| Some(s).filter(|s| !s.is_empty()));
            Filter::ColumnRange {
                min: bound(&args[0])?,
                min_inclusive: boolean(&args[1])?,
                max: bound(&args[2])?,
                max_inclusive: boolean(&args[3])?,
            }
        }
        "ColumnCountGetFilter" => {
            want(1)?;
            Filter::ColumnCountGet { limit: count(&args[0])?, dead: Vec::new() }
        }
        "ColumnPaginationFilter" => {
            want(2)?;
            Filter::ColumnPagination { limit: count(&args[0])?, offset: count(&args[1])? }
        }
        "InclusiveStopFilter" => {
            want(1)?;
            Filter::InclusiveStop { stop: string(&args[0])?, reversed: false }
        }
        "TimestampsFilter" => {
            let mut ts = args.iter().map(number).collect::<Result<Vec<_>, _>>()?;
            ts.sort_unstable();
            ts.dedup();
            Filter::Timestamps(ts)
        }
        "DependentColumnFilter" => {
            let value = match args.len() {
                2 | 3 => None,
                5 => Some(compare(&args[3], &args[4])?),
                n => return Err(err(format!("{name} takes 2, 3 or 5 arguments, got {n}"))),
            };
            Filter::DependentColumn {
                family: string(&args[0])?,
                qualifier: string(&args[1])?,
                drop_column: if args.len() > 2 { boolean(&args[2])? } else { false },
                value,
                stamps: Vec::new(),
            }
        }
        "QualifierFilter" | "ValueFilter" | "RowFilter" | "FamilyFilter" => {
            want(2)?;
            let (o, c) = compare(&args[0], &args[1])?;
            match name {
                "QualifierFilter" => Filter::Qualifier(o, c),
                "ValueFilter" => Filter::Value(o, c),
                "RowFilter" => Filter::Row(o, c),
                _ => Filter::Family(o, c),
            }
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            if args.len() != 4 && args.len() != 6 {
                return Err(err(format!("{name} takes 4 or 6 arguments, got {}", args.len())));
            }
            let (op, cmp) = compare(&args[2], &args[3])?;
            let (filter_if_missing, latest_version_only) =
                if args.len() == 6 { (boolean(&args[4])?, boolean(&args[5])?) } else { (false, true) };
            Filter::SingleColumnValue {
                family: string(&args[0])?,
                qualifier: string(&args[1])?,
                op,
                cmp,
                filter_if_missing,
                latest_version_only,
                exclude_column: name == "SingleColumnValueExcludeFilter",
            }
        }
        "PageFilter" => {
            want(1)?;
            Filter::Page { limit: number(&args[0])?, seen: 0, reached: false }
        }
        other => return Err(FilterError::Unsupported(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::filter::test_support::{cell, indexes};

    #[test]
    fn boolean_combinations_follow_hbase_precedence() {
        let row = [cell("r1", "a", "1"), cell("r1", "b", "2"), cell("r1", "c", "3")];
        // AND binds tighter than OR.
        let f = "QualifierFilter(=,'binary:a') OR QualifierFilter(=,'binary:b') AND ValueFilter(=,'binary:9')";
        assert_eq!(indexes(f, &row), Ok(Some(vec![0])));
        let f = "(QualifierFilter(=,'binary:a') OR QualifierFilter(=,'binary:b')) AND ValueFilter(=,'binary:2')";
        assert_eq!(indexes(f, &row), Ok(Some(vec![1])));
        assert_eq!(indexes("SKIP ValueFilter(!=, 'binary:2')", &row), Ok(None));
        assert_eq!(indexes("WHILE ValueFilter(!=, 'binary:2')", &row), Ok(Some(vec![0])), "the cells before b");
        assert_eq!(indexes("WHILE ValueFilter(=, 'binary:2')", &row), Err(()), "a is rejected first");
    }

    /// HBase refuses substring and regex comparators with an ordering
    /// operator, and a sixth SingleColumnValueFilter argument that is not a
    /// boolean (issue 15 item 5); ours evaluated and ignored them.
    #[test]
    fn comparators_and_arguments_hbase_refuses_are_refused() {
        for f in [
            "ValueFilter(<, 'substring:a')",
            "RowFilter(>=, 'regexstring:a.*')",
            "QualifierFilter(>, 'substring:a')",
            "SingleColumnValueFilter('f', 'q', <=, 'regexstring:x')",
        ] {
            let e = parse(f.as_bytes()).expect_err(f).to_string();
            assert!(e.contains("EQUAL and NOT_EQUAL"), "{f}: {e}");
        }
        for f in ["ValueFilter(=, 'substring:a')", "RowFilter(!=, 'regexstring:a.*')", "ValueFilter(<, 'binary:a')"] {
            assert!(parse(f.as_bytes()).is_ok(), "{f}");
        }
        let e = parse(b"SingleColumnValueFilter('f', 'q', =, 'binary:x', true, 7)").expect_err("not a boolean");
        assert!(e.to_string().contains("true or false"), "{e}");
        assert!(parse(b"SingleColumnValueFilter('f', 'q', =, 'binary:x', true, true)").is_ok());
        assert!(parse(b"SingleColumnValueFilter('f', 'q', =, 'binary:x', true, false)").is_ok());
        assert!(parse(b"KeyOnlyFilter(true)").is_ok());
        assert!(parse(b"KeyOnlyFilter(7)").is_err());
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
            "ColumnRangeFilter('a', true, 'b')",
            "ColumnPaginationFilter(1)",
            "TimestampsFilter(-1)",
            "DependentColumnFilter('f', 'q', true, =)",
            "MultipleColumnPrefixFilter()",
            "ColumnCountGetFilter('x')",
        ] {
            assert!(matches!(parse(bad.as_bytes()), Err(FilterError::Syntax { .. })), "{bad}");
        }
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
