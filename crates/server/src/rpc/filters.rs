//! hbase-client's filters (`Filter` protobufs: a Java class name and that
//! class's serialized message) as HBase's filter language, the text the
//! gateway takes for every protocol (`store::read::filter`). Going through
//! the text keeps one parser and one evaluator, checked against HBase
//! 2.6.4's own answers, and lets a scan be forwarded as it came.
//!
//! Mapped: every filter the language has — PrefixFilter, KeyOnlyFilter,
//! FirstKeyOnlyFilter, ColumnPrefixFilter, MultipleColumnPrefixFilter,
//! ColumnRangeFilter, ColumnCountGetFilter, ColumnPaginationFilter (by
//! offset), InclusiveStopFilter, TimestampsFilter, QualifierFilter,
//! ValueFilter, RowFilter, FamilyFilter, SingleColumnValueFilter,
//! SingleColumnValueExcludeFilter, DependentColumnFilter, PageFilter — and
//! FilterList (AND / OR of its filters), SkipFilter and WhileMatchFilter;
//! comparators binary, binary prefix, substring and regex (Java's engine
//! with HBase's default DOTALL flag). Anything else is refused with a
//! `DoNotRetryIOException` naming it, never approximated.
//!
//! Thread safety: pure functions.

use bytes::Bytes;
use hbase_rpc::RpcError;
use hbase_rpc::pb::hbase::pb::{self as pb, CompareType, filter_list::Operator};
use prost::Message;

const PACKAGE: &str = "org.apache.hadoop.hbase.filter.";
/// `java.util.regex.Pattern.DOTALL`, which HBase's RegexStringComparator
/// and its filter language use by default.
const DOTALL: i32 = 32;

fn refuse(what: impl std::fmt::Display) -> RpcError {
    RpcError::do_not_retry(format!("{what} is not supported over HBase RPC here"))
}

fn decode<M: Message + Default>(bytes: &Option<Bytes>, what: &str) -> Result<M, RpcError> {
    M::decode(bytes.clone().unwrap_or_default()).map_err(|e| RpcError::do_not_retry(format!("malformed {what}: {e}")))
}

/// `bytes` as a quoted string of the language ('' is a quote).
fn quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.push(b'\'');
        }
        out.push(b);
    }
    out.push(b'\'');
}

fn op(compare_op: i32) -> Result<&'static str, RpcError> {
    Ok(match CompareType::try_from(compare_op) {
        Ok(CompareType::Less) => "<",
        Ok(CompareType::LessOrEqual) => "<=",
        Ok(CompareType::Equal) => "=",
        Ok(CompareType::NotEqual) => "!=",
        Ok(CompareType::GreaterOrEqual) => ">=",
        Ok(CompareType::Greater) => ">",
        _ => return Err(refuse(format!("comparison {compare_op}"))),
    })
}

/// A comparator as the language's quoted `type:value`.
fn comparator(out: &mut Vec<u8>, c: &pb::Comparator) -> Result<(), RpcError> {
    let name = c.name.strip_prefix(PACKAGE).unwrap_or(&c.name);
    let (kind, value): (&[u8], Vec<u8>) = match name {
        "BinaryComparator" => {
            let m: pb::BinaryComparator = decode(&c.serialized_comparator, name)?;
            (b"binary", m.comparable.value.unwrap_or_default().to_vec())
        }
        "BinaryPrefixComparator" => {
            let m: pb::BinaryPrefixComparator = decode(&c.serialized_comparator, name)?;
            (b"binaryprefix", m.comparable.value.unwrap_or_default().to_vec())
        }
        "SubstringComparator" => {
            let m: pb::SubstringComparator = decode(&c.serialized_comparator, name)?;
            (b"substring", m.substr.into_bytes())
        }
        "RegexStringComparator" => {
            let m: pb::RegexStringComparator = decode(&c.serialized_comparator, name)?;
            if m.pattern_flags != DOTALL {
                return Err(refuse(format!("RegexStringComparator with flags {} (only DOTALL)", m.pattern_flags)));
            }
            if m.engine.as_deref().is_some_and(|e| e != "JAVA") {
                return Err(refuse(format!("RegexStringComparator's {} engine", m.engine.unwrap_or_default())));
            }
            (b"regexstring", m.pattern.into_bytes())
        }
        other => return Err(refuse(format!("comparator {other}"))),
    };
    let mut text = kind.to_vec();
    text.push(b':');
    text.extend_from_slice(&value);
    quoted(out, &text);
    Ok(())
}

/// `op, 'comparator'` of a compare filter.
fn compare(out: &mut Vec<u8>, compare_op: i32, c: Option<&pb::Comparator>) -> Result<(), RpcError> {
    out.extend_from_slice(op(compare_op)?.as_bytes());
    out.push(b',');
    comparator(out, c.ok_or_else(|| RpcError::do_not_retry("a compare filter without a comparator"))?)
}

fn call(
    out: &mut Vec<u8>,
    name: &str,
    args: impl FnOnce(&mut Vec<u8>) -> Result<(), RpcError>,
) -> Result<(), RpcError> {
    out.extend_from_slice(name.as_bytes());
    out.push(b'(');
    args(out)?;
    out.push(b')');
    Ok(())
}

/// `name('bytes')`.
fn one_string(out: &mut Vec<u8>, name: &str, bytes: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.push(b'(');
    quoted(out, bytes);
    out.push(b')');
}

fn number(out: &mut Vec<u8>, n: i64, what: &str) -> Result<(), RpcError> {
    if n < 0 {
        return Err(RpcError::do_not_retry(format!("{what} must not be negative: {n}")));
    }
    out.extend_from_slice(n.to_string().as_bytes());
    Ok(())
}

fn boolean(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// `filter` as filter-language text; `None` for a filter that passes
/// everything (an empty FilterList).
pub fn filter_text(filter: &pb::Filter) -> Result<Option<Vec<u8>>, RpcError> {
    let mut out = Vec::new();
    Ok(write(&mut out, filter)?.then_some(out))
}

/// Writes `filter` to `out`; false (writing nothing) for one that passes
/// everything.
fn write(out: &mut Vec<u8>, f: &pb::Filter) -> Result<bool, RpcError> {
    let name = f.name.strip_prefix(PACKAGE).unwrap_or(&f.name);
    let s = &f.serialized_filter;
    match name {
        "FilterList" => {
            let list: pb::FilterList = decode(s, name)?;
            let joiner: &[u8] = match Operator::try_from(list.operator) {
                Ok(Operator::MustPassAll) => b" AND ",
                Ok(Operator::MustPassOne) => b" OR ",
                Err(_) => return Err(refuse(format!("FilterList operator {}", list.operator))),
            };
            let mut parts = Vec::new();
            for inner in &list.filters {
                let mut part = Vec::new();
                if write(&mut part, inner)? {
                    parts.push(part);
                } else if joiner == b" OR " {
                    // One member passes everything: so does the list.
                    return Ok(false);
                }
            }
            if parts.is_empty() {
                return Ok(false);
            }
            out.push(b'(');
            out.extend_from_slice(&parts.join(joiner));
            out.push(b')');
        }
        "SkipFilter" | "WhileMatchFilter" => {
            let inner = if name == "SkipFilter" {
                decode::<pb::SkipFilter>(s, name)?.filter
            } else {
                decode::<pb::WhileMatchFilter>(s, name)?.filter
            };
            let mut part = Vec::new();
            if !write(&mut part, &inner)? {
                return Ok(false);
            }
            out.extend_from_slice(if name == "SkipFilter" { b"SKIP (" } else { b"WHILE (" });
            out.extend_from_slice(&part);
            out.push(b')');
        }
        "PrefixFilter" => {
            let m: pb::PrefixFilter = decode(s, name)?;
            one_string(out, name, &m.prefix.unwrap_or_default());
        }
        "KeyOnlyFilter" => {
            let m: pb::KeyOnlyFilter = decode(s, name)?;
            call(out, name, |o| {
                boolean(o, m.len_as_val);
                Ok(())
            })?;
        }
        "FirstKeyOnlyFilter" => call(out, name, |_| Ok(()))?,
        "ColumnPrefixFilter" => {
            let m: pb::ColumnPrefixFilter = decode(s, name)?;
            one_string(out, name, &m.prefix);
        }
        "MultipleColumnPrefixFilter" => {
            let m: pb::MultipleColumnPrefixFilter = decode(s, name)?;
            if m.sorted_prefixes.is_empty() {
                return Ok(false);
            }
            call(out, name, |o| {
                for (i, p) in m.sorted_prefixes.iter().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    quoted(o, p);
                }
                Ok(())
            })?;
        }
        "ColumnRangeFilter" => {
            let m: pb::ColumnRangeFilter = decode(s, name)?;
            call(out, name, |o| {
                quoted(o, &m.min_column.unwrap_or_default());
                o.push(b',');
                boolean(o, m.min_column_inclusive.unwrap_or(false));
                o.push(b',');
                quoted(o, &m.max_column.unwrap_or_default());
                o.push(b',');
                boolean(o, m.max_column_inclusive.unwrap_or(false));
                Ok(())
            })?;
        }
        "ColumnCountGetFilter" => {
            let m: pb::ColumnCountGetFilter = decode(s, name)?;
            call(out, name, |o| number(o, i64::from(m.limit), "ColumnCountGetFilter's limit"))?;
        }
        "ColumnPaginationFilter" => {
            let m: pb::ColumnPaginationFilter = decode(s, name)?;
            if m.column_offset.is_some() {
                return Err(refuse("ColumnPaginationFilter with a column offset"));
            }
            call(out, name, |o| {
                number(o, i64::from(m.limit), "ColumnPaginationFilter's limit")?;
                o.push(b',');
                number(o, i64::from(m.offset.unwrap_or(0)), "ColumnPaginationFilter's offset")
            })?;
        }
        "InclusiveStopFilter" => {
            let m: pb::InclusiveStopFilter = decode(s, name)?;
            one_string(out, name, &m.stop_row_key.unwrap_or_default());
        }
        "TimestampsFilter" => {
            let m: pb::TimestampsFilter = decode(s, name)?;
            call(out, name, |o| {
                for (i, t) in m.timestamps.iter().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    number(o, *t, "a timestamp")?;
                }
                Ok(())
            })?;
        }
        "QualifierFilter" | "ValueFilter" | "RowFilter" | "FamilyFilter" => {
            // Each is a CompareFilter in a message of its own, field 1.
            let m: pb::RowFilter = decode(s, name)?;
            call(out, name, |o| compare(o, m.compare_filter.compare_op, m.compare_filter.comparator.as_ref()))?;
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            let m = if name == "SingleColumnValueFilter" {
                decode::<pb::SingleColumnValueFilter>(s, name)?
            } else {
                decode::<pb::SingleColumnValueExcludeFilter>(s, name)?.single_column_value_filter
            };
            call(out, name, |o| {
                quoted(o, &m.column_family.clone().unwrap_or_default());
                o.push(b',');
                quoted(o, &m.column_qualifier.clone().unwrap_or_default());
                o.push(b',');
                compare(o, m.compare_op, Some(&m.comparator))?;
                o.push(b',');
                boolean(o, m.filter_if_missing.unwrap_or(false));
                o.push(b',');
                boolean(o, m.latest_version_only.unwrap_or(true));
                Ok(())
            })?;
        }
        "DependentColumnFilter" => {
            let m: pb::DependentColumnFilter = decode(s, name)?;
            call(out, name, |o| {
                quoted(o, &m.column_family.clone().unwrap_or_default());
                o.push(b',');
                quoted(o, &m.column_qualifier.clone().unwrap_or_default());
                o.push(b',');
                boolean(o, m.drop_dependent_column.unwrap_or(false));
                // NO_OP with no comparator: no value test.
                let cf = &m.compare_filter;
                if cf.compare_op != CompareType::NoOp as i32 || cf.comparator.is_some() {
                    o.push(b',');
                    compare(o, cf.compare_op, cf.comparator.as_ref())?;
                }
                Ok(())
            })?;
        }
        "PageFilter" => {
            let m: pb::PageFilter = decode(s, name)?;
            call(out, name, |o| number(o, m.page_size, "PageFilter's page size"))?;
        }
        other => return Err(refuse(format!("filter {other}"))),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hbase_rpc::pb::hbase::pb::ByteArrayComparable;

    fn filter(name: &str, message: &impl Message) -> pb::Filter {
        pb::Filter { name: format!("{PACKAGE}{name}"), serialized_filter: Some(message.encode_to_vec().into()) }
    }

    fn binary(value: &'static [u8]) -> pb::Comparator {
        pb::Comparator {
            name: format!("{PACKAGE}BinaryComparator"),
            serialized_comparator: Some(
                pb::BinaryComparator { comparable: ByteArrayComparable { value: Some(Bytes::from_static(value)) } }
                    .encode_to_vec()
                    .into(),
            ),
        }
    }

    fn text(f: &pb::Filter) -> String {
        String::from_utf8(filter_text(f).expect("mapped").expect("a filter")).unwrap()
    }

    #[test]
    fn filters_become_the_language_and_parse_back() {
        let prefix = filter("PrefixFilter", &pb::PrefixFilter { prefix: Some(Bytes::from_static(b"it's")) });
        assert_eq!(text(&prefix), "PrefixFilter('it''s')");
        let value = filter(
            "ValueFilter",
            &pb::ValueFilter {
                compare_filter: pb::CompareFilter {
                    compare_op: CompareType::GreaterOrEqual as i32,
                    comparator: Some(binary(b"v1")),
                },
            },
        );
        assert_eq!(text(&value), "ValueFilter(>=,'binary:v1')");
        let page = filter("PageFilter", &pb::PageFilter { page_size: 10 });
        let list = filter(
            "FilterList",
            &pb::FilterList { operator: Operator::MustPassOne as i32, filters: vec![prefix.clone(), value] },
        );
        let all = filter(
            "FilterList",
            &pb::FilterList { operator: Operator::MustPassAll as i32, filters: vec![list, page.clone()] },
        );
        let while_ = filter("WhileMatchFilter", &pb::WhileMatchFilter { filter: all });
        let t = text(&while_);
        assert_eq!(t, "WHILE (((PrefixFilter('it''s') OR ValueFilter(>=,'binary:v1')) AND PageFilter(10)))");
        store::read::filter::parse(t.as_bytes()).expect("the store parses what the mapping writes");

        let scvf = filter(
            "SingleColumnValueFilter",
            &pb::SingleColumnValueFilter {
                column_family: Some(Bytes::from_static(b"f")),
                column_qualifier: Some(Bytes::from_static(b"q")),
                compare_op: CompareType::Equal as i32,
                comparator: binary(b"x"),
                filter_if_missing: Some(true),
                latest_version_only: None,
            },
        );
        assert_eq!(text(&scvf), "SingleColumnValueFilter('f','q',=,'binary:x',true,true)");
        store::read::filter::parse(text(&scvf).as_bytes()).expect("parses");
    }

    #[test]
    fn an_empty_list_passes_everything_and_unknown_filters_are_refused() {
        let empty = filter("FilterList", &pb::FilterList { operator: Operator::MustPassAll as i32, filters: vec![] });
        assert_eq!(filter_text(&empty).unwrap(), None);
        let fuzzy = filter("FuzzyRowFilter", &pb::FuzzyRowFilter::default());
        let e = filter_text(&fuzzy).unwrap_err();
        assert!(e.is_do_not_retry() && e.message().contains("FuzzyRowFilter"), "{}", e.message());
        let long = pb::Comparator { name: format!("{PACKAGE}LongComparator"), serialized_comparator: None };
        let row = filter(
            "RowFilter",
            &pb::RowFilter {
                compare_filter: pb::CompareFilter { compare_op: CompareType::Equal as i32, comparator: Some(long) },
            },
        );
        assert!(filter_text(&row).unwrap_err().message().contains("LongComparator"));
    }
}
