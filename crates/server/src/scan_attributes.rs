//! The scan options HBase's `Scan` has and Thrift v1's `TScan` lacks, taken
//! from the scan's attributes (`scannerOpenWithScan`'s third argument):
//!
//! | attribute | value | HBase's `Scan` |
//! |---|---|---|
//! | `accordion.scan.start_exclusive` | `true` | `withStartRow(row, false)` |
//! | `accordion.scan.stop_inclusive` | `true` | `withStopRow(row, true)` |
//! | `accordion.scan.max_versions` | a decimal count ≥ 1 | `readVersions(n)` |
//! | `accordion.scan.time_range` | `min,max` (ms, max exclusive) | `setTimeRange(min, max)` |
//! | `accordion.scan.raw` | `true` | `setRaw(true)`: refused |
//!
//! The shell sends them for `scan 't', {VERSIONS => 3, TIMERANGE => [a, b]}`
//! and a get with those options; a server forwards them with each piece of
//! a cluster scan (`peer/cluster_scan.rs`). Real HBase's gateway ignores every
//! attribute, so a client using these against HBase reads one version.
//!
//! Rules: an attribute outside the `accordion.scan.` prefix is ignored, as
//! HBase ignores attributes it does not know; one inside it that is not in
//! the table, or a value that does not parse, is refused (`IllegalArgument`)
//! so that a typo cannot quietly read the newest version only. A raw scan is
//! refused rather than answered without what makes it raw: the store drops
//! delete markers and the cells they cover when it reads, and has no way to
//! return them.
//!
//! Thread safety: plain values, parsed per call.

use std::collections::BTreeMap;

use memstore::TimeRange;

/// Scan attribute ("true"): the start row itself is not read.
pub const START_EXCLUSIVE: &[u8] = b"accordion.scan.start_exclusive";
/// Scan attribute ("true"): the stop row itself is read.
pub const STOP_INCLUSIVE: &[u8] = b"accordion.scan.stop_inclusive";
/// Scan attribute: how many versions of each column to read.
pub const MAX_VERSIONS: &[u8] = b"accordion.scan.max_versions";
/// Scan attribute: `min,max`, the timestamps read (`min` ≤ ts < `max`).
pub const TIME_RANGE: &[u8] = b"accordion.scan.time_range";
/// Scan attribute: a raw scan (delete markers and deleted cells); refused.
pub const RAW: &[u8] = b"accordion.scan.raw";

const PREFIX: &[u8] = b"accordion.scan.";
const KNOWN: [&[u8]; 5] = [START_EXCLUSIVE, STOP_INCLUSIVE, MAX_VERSIONS, TIME_RANGE, RAW];

/// Why a scan's attributes were refused; the text is the client's message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttributeError {
    #[error("unknown scan attribute {0:?} (known: {known})", known = known_names())]
    Unknown(String),
    #[error("scan attribute {name}: {why}, got {value:?}")]
    Invalid { name: String, value: String, why: &'static str },
    #[error(
        "raw scans are not supported: this store drops delete markers and the cells they cover as it reads, so it \
         cannot return them"
    )]
    Raw,
}

fn known_names() -> String {
    KNOWN.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>().join(", ")
}

/// What a scan's attributes ask for beyond its `TScan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanAttributes {
    /// Whether the start row itself is read (HBase's default: yes).
    pub start_inclusive: bool,
    /// Whether the stop row itself is read (HBase's default: no).
    pub stop_inclusive: bool,
    /// Versions of each column to read (the family's own limit still holds).
    pub max_versions: u32,
    /// The timestamps read, beside the `TScan`'s own `timestamp` (an upper
    /// bound): a cell is read when both admit it.
    pub time_range: TimeRange,
}

impl Default for ScanAttributes {
    fn default() -> Self {
        ScanAttributes { start_inclusive: true, stop_inclusive: false, max_versions: 1, time_range: TimeRange::ALL }
    }
}

impl ScanAttributes {
    /// The options `attrs` carries; see the module doc for the rules.
    pub fn parse(attrs: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<ScanAttributes, AttributeError> {
        let mut out = ScanAttributes::default();
        for (name, value) in attrs.iter().filter(|(name, _)| name.starts_with(PREFIX)) {
            let text = String::from_utf8_lossy(value);
            let invalid = |why| AttributeError::Invalid {
                name: String::from_utf8_lossy(name).into_owned(),
                value: text.clone().into_owned(),
                why,
            };
            let flag = || match text.to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid("must be true or false")),
            };
            match name.as_slice() {
                START_EXCLUSIVE => out.start_inclusive = !flag()?,
                STOP_INCLUSIVE => out.stop_inclusive = flag()?,
                RAW if flag()? => return Err(AttributeError::Raw),
                RAW => {}
                MAX_VERSIONS => {
                    out.max_versions = text
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| invalid("must be a whole number of at least 1"))?;
                }
                TIME_RANGE => {
                    let why = "must be min,max with 0 <= min <= max (milliseconds, max exclusive)";
                    let (min, max) = text.split_once(',').ok_or_else(|| invalid(why))?;
                    let (min, max) = match (min.trim().parse::<u64>(), max.trim().parse::<u64>()) {
                        (Ok(min), Ok(max)) if min <= max => (min, max),
                        _ => return Err(invalid(why)),
                    };
                    out.time_range = TimeRange { min, max };
                }
                _ => return Err(AttributeError::Unknown(String::from_utf8_lossy(name).into_owned())),
            }
        }
        Ok(out)
    }

    /// The timestamps both `self` and an upper bound `before` (a `TScan`'s
    /// `timestamp`: cells strictly older) admit.
    pub fn time_range_before(&self, before: Option<u64>) -> TimeRange {
        match before {
            None => self.time_range,
            Some(b) => TimeRange { min: self.time_range.min, max: self.time_range.max.min(b) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&[u8], &str)]) -> BTreeMap<Vec<u8>, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_vec(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn the_options_are_read() {
        let a = ScanAttributes::parse(&attrs(&[
            (MAX_VERSIONS, "3"),
            (TIME_RANGE, "10, 20"),
            (START_EXCLUSIVE, "TRUE"),
            (STOP_INCLUSIVE, "true"),
            (RAW, "false"),
            (b"someone.else", "anything"),
        ]))
        .expect("valid");
        assert_eq!(
            a,
            ScanAttributes {
                start_inclusive: false,
                stop_inclusive: true,
                max_versions: 3,
                time_range: TimeRange { min: 10, max: 20 }
            }
        );
        assert_eq!(ScanAttributes::parse(&BTreeMap::new()), Ok(ScanAttributes::default()));
    }

    #[test]
    fn bad_values_typos_and_raw_are_refused() {
        for (name, value) in [
            (MAX_VERSIONS, "0"),
            (MAX_VERSIONS, "-1"),
            (MAX_VERSIONS, "x"),
            (TIME_RANGE, "20,10"),
            (TIME_RANGE, "10"),
            (TIME_RANGE, "-1,5"),
            (STOP_INCLUSIVE, "yes"),
        ] {
            let e = ScanAttributes::parse(&attrs(&[(name, value)])).expect_err(value);
            assert!(matches!(e, AttributeError::Invalid { .. }), "{value}: {e}");
        }
        let e = ScanAttributes::parse(&attrs(&[(b"accordion.scan.max_version", "3")])).expect_err("typo");
        assert!(e.to_string().contains("accordion.scan.max_versions"), "{e}");
        assert_eq!(ScanAttributes::parse(&attrs(&[(RAW, "true")])), Err(AttributeError::Raw));
    }

    #[test]
    fn the_tscan_timestamp_narrows_the_range() {
        let a = ScanAttributes { time_range: TimeRange { min: 5, max: 50 }, ..Default::default() };
        assert_eq!(a.time_range_before(Some(20)), TimeRange { min: 5, max: 20 });
        assert_eq!(a.time_range_before(Some(90)), TimeRange { min: 5, max: 50 });
        assert_eq!(a.time_range_before(None), TimeRange { min: 5, max: 50 });
    }
}
