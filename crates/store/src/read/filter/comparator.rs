//! HBase's comparators as the filter language names them, matching values
//! byte for byte as HBase 2.6 does:
//!
//! - `binary:` and `binaryprefix:` compare bytes (the prefix comparator only
//!   the value's first bytes);
//! - `substring:` decodes the value as UTF-8 and compares case-insensitively
//!   with Java's `toLowerCase(Locale.ROOT)` (Unicode lower case, so É
//!   matches é), as `SubstringComparator` does;
//! - `regexstring:` runs a Java regex with DOTALL over the value decoded as
//!   UTF-8, as HBase 2.6's `RegexStringComparator` does, looking for a
//!   match anywhere (`find`); `java_regex.rs` translates it.
//!
//! Substring and regex comparators only answer "equal" (found) or not, so
//! the parser refuses them with an ordering operator, as HBase does.

use std::cmp::Ordering;

use regex::Regex;

use super::CompareOp;
use super::java_regex;

#[derive(Debug, Clone)]
pub enum Comparator {
    Binary(Vec<u8>),
    BinaryPrefix(Vec<u8>),
    /// The substring, lower-cased.
    Substring(String),
    Regex(Regex),
}

impl Comparator {
    /// A comparator from its type and value (the text after `type:`); the
    /// error says what is wrong.
    pub fn new(kind: &[u8], value: &[u8]) -> Result<Comparator, String> {
        Ok(match kind {
            b"binary" => Comparator::Binary(value.to_vec()),
            b"binaryprefix" => Comparator::BinaryPrefix(value.to_vec()),
            // HBase decodes the filter string's bytes as UTF-8.
            b"substring" => Comparator::Substring(String::from_utf8_lossy(value).to_lowercase()),
            b"regexstring" => {
                let pattern = java_regex::translate(&String::from_utf8_lossy(value))?;
                Comparator::Regex(Regex::new(&pattern).map_err(|e| format!("bad regex: {e}"))?)
            }
            other => return Err(format!("unknown comparator type {:?}", String::from_utf8_lossy(other))),
        })
    }

    /// Whether this comparator only tells found from not found.
    pub fn is_equality_only(&self) -> bool {
        matches!(self, Comparator::Substring(_) | Comparator::Regex(_))
    }

    /// Whether `value op comparator` holds.
    pub fn matches(&self, op: CompareOp, value: &[u8]) -> bool {
        let ord = match self {
            Comparator::Binary(b) => value.cmp(b.as_slice()),
            Comparator::BinaryPrefix(p) => value[..p.len().min(value.len())].cmp(p.as_slice()),
            Comparator::Substring(s) => found(contains_ignoring_case(value, s)),
            Comparator::Regex(r) => found(r.is_match(&String::from_utf8_lossy(value))),
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

/// HBase's found/not-found comparators answer 0 or 1.
fn found(yes: bool) -> Ordering {
    if yes { Ordering::Equal } else { Ordering::Less }
}

/// Whether `value`, decoded as UTF-8 (malformed bytes become U+FFFD, as in
/// Java) and lower-cased, contains `needle` (already lower-cased).
fn contains_ignoring_case(value: &[u8], needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if value.is_ascii() && needle.is_ascii() {
        // The common case without decoding: ASCII lower-casing is Java's
        // for ASCII text.
        let n = needle.as_bytes();
        return value.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    String::from_utf8_lossy(value).to_lowercase().contains(needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(kind: &str, pattern: &str, value: &[u8]) -> bool {
        Comparator::new(kind.as_bytes(), pattern.as_bytes()).expect("valid").matches(CompareOp::Equal, value)
    }

    #[test]
    fn substring_folds_case_as_java_does() {
        assert!(eq("substring", "Y", b"xyz"));
        assert!(eq("substring", "caf\u{c9}", "un caf\u{e9}".as_bytes()), "É matches é");
        assert!(eq("substring", "\u{3a3}", "\u{3c3}".as_bytes()), "Σ matches σ");
        assert!(!eq("substring", "e", "\u{e9}".as_bytes()), "é is not e");
        assert!(eq("substring", "", b""));
        assert!(eq("substring", "\u{fffd}", &[0xff, b'a']), "malformed UTF-8 reads as U+FFFD");
    }

    #[test]
    fn binary_comparators_order_bytes() {
        let b = Comparator::new(b"binary", b"m").expect("valid");
        assert!(b.matches(CompareOp::Less, b"a") && b.matches(CompareOp::Greater, b"z"));
        assert!(b.matches(CompareOp::GreaterOrEqual, b"m") && !b.matches(CompareOp::NotEqual, b"m"));
        let p = Comparator::new(b"binaryprefix", b"ab").expect("valid");
        assert!(p.matches(CompareOp::Equal, b"abc") && p.matches(CompareOp::Less, b"a"));
    }
}
