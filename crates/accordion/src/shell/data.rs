//! The data commands (HBase's `dml` group, less truncate): put, get, scan,
//! count, delete, deleteall, incr, get_counter — over Thrift, printed in
//! HBase shell's layout (`COLUMN  CELL`, `ROW  COLUMN+CELL`, `N row(s)`).
//!
//! Options are checked before anything is sent (see `args`); the numbers
//! that must be positive (VERSIONS, INTERVAL, CACHE) are checked here.
//!
//! What Thrift v1's `TScan` cannot say (VERSIONS, TIMERANGE, TIMESTAMP,
//! RAW) goes as scan attributes the server reads
//! (`server::scan_attributes`); a `get` with any of those or a FILTER is a
//! scan of its one row, so that get and scan take the same options with the
//! same meaning, as they do in HBase's shell.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{anyhow, bail};
use server::scan_attributes;
use server::thrift::client::THbaseSyncClient;
use server::thrift::hbase_thrift::{Mutation, TRowResult, TScan};

use super::args::{Args, Kind, Options, bytes_list};
use super::parse::Command;
use super::{Shell, text, thrift_err};

const GET_OPTIONS: &[(&str, Kind)] = &[
    ("COLUMN", Kind::BytesList),
    ("COLUMNS", Kind::BytesList),
    ("TIMESTAMP", Kind::Int),
    ("TIMERANGE", Kind::IntPair),
    ("VERSIONS", Kind::Int),
    ("FILTER", Kind::Bytes),
];

const SCAN_OPTIONS: &[(&str, Kind)] = &[
    ("COLUMNS", Kind::BytesList),
    ("COLUMN", Kind::BytesList),
    ("STARTROW", Kind::Bytes),
    ("STOPROW", Kind::Bytes),
    ("ENDROW", Kind::Bytes),
    ("LIMIT", Kind::Int),
    ("FILTER", Kind::Bytes),
    ("ROWPREFIXFILTER", Kind::Bytes),
    ("REVERSED", Kind::Bool),
    ("CACHE", Kind::Int),
    ("VERSIONS", Kind::Int),
    ("TIMERANGE", Kind::IntPair),
    ("TIMESTAMP", Kind::Int),
    ("RAW", Kind::Bool),
];

const COUNT_OPTIONS: &[(&str, Kind)] = &[
    ("INTERVAL", Kind::Int),
    ("CACHE", Kind::Int),
    ("FILTER", Kind::Bytes),
    ("COLUMNS", Kind::BytesList),
    ("COLUMN", Kind::BytesList),
    ("STARTROW", Kind::Bytes),
    ("STOPROW", Kind::Bytes),
    ("ENDROW", Kind::Bytes),
];

/// Rows fetched per Thrift call when CACHE is not given.
const DEFAULT_CACHE: i64 = 100;

/// HBase's count shows its progress every 1000 rows unless told otherwise.
const DEFAULT_COUNT_INTERVAL: i64 = 1000;

/// What count asks for when no FILTER is given: one key per row is enough
/// to count it (HBase's count uses FirstKeyOnlyFilter the same way).
const COUNT_FILTER: &str = "FirstKeyOnlyFilter() AND KeyOnlyFilter()";

/// A scan as the options describe it.
struct ScanSpec {
    scan: TScan,
    /// What `scan` cannot say (`server::scan_attributes`).
    attributes: BTreeMap<Vec<u8>, Vec<u8>>,
    limit: Option<u64>,
    /// Rows per `scannerGetList` call.
    cache: i32,
}

/// The scan attributes for the VERSIONS, TIMERANGE, TIMESTAMP and RAW
/// options: HBase's `readVersions`, `setTimeRange(from, to)` (to
/// exclusive), `setTimestamp(ts)` (exactly ts) and `setRaw`.
fn read_attributes(cmd: &str, opts: &Options) -> anyhow::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut attributes = BTreeMap::new();
    let versions = at_least(cmd, opts, "VERSIONS", 1, 1)?;
    if versions > 1 {
        attributes.insert(scan_attributes::MAX_VERSIONS.to_vec(), versions.to_string().into_bytes());
    }
    let range = match (opts.int_pair("TIMERANGE"), opts.int("TIMESTAMP")) {
        (Some(_), Some(_)) => bail!("{cmd}: give TIMERANGE or TIMESTAMP, not both"),
        (Some((from, to)), None) if from < 0 || to < from => {
            bail!("{cmd}: TIMERANGE must be [from, to] with 0 <= from <= to, got [{from}, {to}]")
        }
        (Some((from, to)), None) => Some((from, to)),
        (None, Some(ts)) if ts < 0 => bail!("{cmd}: TIMESTAMP must not be negative, got {ts}"),
        (None, Some(ts)) => Some((ts, ts.saturating_add(1))),
        (None, None) => None,
    };
    if let Some((from, to)) = range {
        attributes.insert(scan_attributes::TIME_RANGE.to_vec(), format!("{from},{to}").into_bytes());
    }
    if opts.flag("RAW") == Some(true) {
        // The server refuses it, with the reason.
        attributes.insert(scan_attributes::RAW.to_vec(), b"true".to_vec());
    }
    Ok(attributes)
}

/// `key`'s integer option, at least `min`, or `default`.
fn at_least(cmd: &str, opts: &Options, key: &str, min: i64, default: i64) -> anyhow::Result<i64> {
    match opts.int(key) {
        Some(v) if v < min => bail!("{cmd}: {key} must be at least {min}, got {v}"),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

fn scan_spec(cmd: &str, opts: &Options, default_filter: Option<&str>) -> anyhow::Result<ScanSpec> {
    let mut columns = opts.bytes_list("COLUMNS");
    columns.extend(opts.bytes_list("COLUMN"));
    let mut filter = opts.bytes("FILTER").or_else(|| default_filter.map(|f| f.as_bytes().to_vec()));
    if let Some(p) = opts.bytes("ROWPREFIXFILTER") {
        let prefix = format!("PrefixFilter('{}')", String::from_utf8_lossy(&p).replace('\'', "''"));
        filter = Some(match filter {
            Some(f) => format!("{prefix} AND ({})", String::from_utf8_lossy(&f)).into_bytes(),
            None => prefix.into_bytes(),
        });
    }
    let limit = match opts.int("LIMIT") {
        Some(l) if l < 0 => bail!("{cmd}: LIMIT must not be negative, got {l}"),
        l => l.map(|l| l as u64),
    };
    let cache = at_least(cmd, opts, "CACHE", 1, DEFAULT_CACHE)?.min(i32::MAX as i64) as i32;
    // ENDROW is HBase's other name for STOPROW.
    let stop_row = match (opts.bytes("STOPROW"), opts.bytes("ENDROW")) {
        (Some(_), Some(_)) => bail!("{cmd}: STOPROW and ENDROW are one option; give one"),
        (stop, end) => stop.or(end),
    };
    let scan = TScan {
        start_row: opts.bytes("STARTROW"),
        stop_row,
        timestamp: None,
        columns: (!columns.is_empty()).then_some(columns),
        caching: Some(cache),
        filter_string: filter,
        batch_size: None,
        sort_columns: Some(true),
        reversed: Some(opts.flag("REVERSED").unwrap_or(false)),
    };
    Ok(ScanSpec { scan, attributes: read_attributes(cmd, opts)?, limit, cache })
}

fn cell_line(out: &mut impl Write, column: &[u8], timestamp: i64, value: &[u8]) -> std::io::Result<()> {
    writeln!(out, " {:<31}timestamp={timestamp}, value={}", text(column), text(value))
}

impl<W: Write> Shell<W> {
    /// `put 't', 'r', 'f:q', 'v'[, ts]`
    pub(super) fn put(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 5, &[])?;
        let (t, r, c, v) =
            (args.bytes(0, "table")?, args.bytes(1, "row")?, args.bytes(2, "column")?, args.bytes(3, "value")?);
        let m = Mutation { is_delete: Some(false), column: Some(c), value: Some(v), write_to_w_a_l: Some(true) };
        match args.opt_int(4, "timestamp")? {
            Some(ts) => self.client()?.mutate_row_ts(t, r, vec![m], ts, BTreeMap::new()),
            None => self.client()?.mutate_row(t, r, vec![m], BTreeMap::new()),
        }
        .map_err(thrift_err)
    }

    /// `get 't', 'r'[, 'f:q'...][, COLUMN => ..., VERSIONS => n, TIMESTAMP => ts, TIMERANGE => [a, b],
    /// FILTER => "..."]`
    pub(super) fn get(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, usize::MAX, GET_OPTIONS)?;
        let (t, r) = (args.bytes(0, "table")?, args.bytes(1, "row")?);
        let mut columns = Vec::new();
        for (i, v) in args.positional().iter().enumerate().skip(2) {
            columns.extend(bytes_list(v).ok_or_else(|| {
                anyhow!("get: argument {} (column) must be a string or a list of strings, got {v}", i + 1)
            })?);
        }
        let opts = &args.options;
        columns.extend(opts.bytes_list("COLUMN"));
        columns.extend(opts.bytes_list("COLUMNS"));
        let attributes = read_attributes("get", opts)?;
        let filter = opts.bytes("FILTER");
        writeln!(self.out, "{:<32}CELL", "COLUMN")?;
        let mut n = 0;
        if attributes.is_empty() && filter.is_none() {
            let rows = if columns.is_empty() {
                self.client()?.get_row(t, r, BTreeMap::new())
            } else {
                self.client()?.get_row_with_columns(t, r, columns, BTreeMap::new())
            }
            .map_err(thrift_err)?;
            for row in rows {
                for (c, cell) in row.columns.unwrap_or_default() {
                    n += 1;
                    cell_line(&mut self.out, &c, cell.timestamp.unwrap_or_default(), &cell.value.unwrap_or_default())?;
                }
            }
        } else {
            // A scan of the one row: [r, r + 0x00).
            let scan = TScan {
                start_row: Some(r.clone()),
                stop_row: Some([r.as_slice(), &[0]].concat()),
                timestamp: None,
                columns: (!columns.is_empty()).then_some(columns),
                caching: Some(1),
                filter_string: filter,
                batch_size: None,
                sort_columns: Some(true),
                reversed: Some(false),
            };
            let spec = ScanSpec { scan, attributes, limit: Some(1), cache: 1 };
            self.scan_rows(&t, spec, |out, _, row| {
                for c in row.sorted_columns.unwrap_or_default() {
                    let cell = c.cell.unwrap_or_default();
                    n += 1;
                    let (ts, value) = (cell.timestamp.unwrap_or_default(), cell.value.unwrap_or_default());
                    cell_line(out, &c.column_name.unwrap_or_default(), ts, &value)?;
                }
                Ok(())
            })?;
        }
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    /// The rows of a scan, `spec.limit` at most, handed to `each` with
    /// their number (from 1).
    fn scan_rows(
        &mut self,
        t: &[u8],
        spec: ScanSpec,
        mut each: impl FnMut(&mut W, u64, TRowResult) -> anyhow::Result<()>,
    ) -> anyhow::Result<u64> {
        let id = self.client()?.scanner_open_with_scan(t.to_vec(), spec.scan, spec.attributes).map_err(thrift_err)?;
        let mut n = 0u64;
        let result = (|| -> anyhow::Result<()> {
            loop {
                let rows = self.client()?.scanner_get_list(id, spec.cache).map_err(thrift_err)?;
                if rows.is_empty() {
                    return Ok(());
                }
                for row in rows {
                    if spec.limit.is_some_and(|l| n >= l) {
                        return Ok(());
                    }
                    n += 1;
                    each(&mut self.out, n, row)?;
                }
            }
        })();
        // The scan's answer (or error) matters more than the close's.
        if let Ok(client) = self.client() {
            let _ = client.scanner_close(id);
        }
        result.map(|()| n)
    }

    /// `scan 't'[, STARTROW => ..., LIMIT => n, ...]`
    pub(super) fn scan(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 1, SCAN_OPTIONS)?;
        let t = args.bytes(0, "table")?;
        let spec = scan_spec("scan", &args.options, None)?;
        writeln!(self.out, "{:<32}COLUMN+CELL", "ROW")?;
        let n = self.scan_rows(&t, spec, |out, _, row| {
            let key = text(&row.row.unwrap_or_default());
            for c in row.sorted_columns.unwrap_or_default() {
                let cell = c.cell.unwrap_or_default();
                writeln!(
                    out,
                    " {:<31}column={}, timestamp={}, value={}",
                    key,
                    text(&c.column_name.unwrap_or_default()),
                    cell.timestamp.unwrap_or_default(),
                    text(&cell.value.unwrap_or_default())
                )?;
            }
            Ok(())
        })?;
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    /// `count 't'[, INTERVAL => n, CACHE => n, FILTER => ..., ...]`: prints
    /// "Current count: N, row: R" every INTERVAL rows, then "N row(s)".
    pub(super) fn count(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 1, COUNT_OPTIONS)?;
        let t = args.bytes(0, "table")?;
        let interval = at_least("count", &args.options, "INTERVAL", 1, DEFAULT_COUNT_INTERVAL)? as u64;
        let spec = scan_spec("count", &args.options, Some(COUNT_FILTER))?;
        let n = self.scan_rows(&t, spec, |out, n, row| {
            if n % interval == 0 {
                writeln!(out, "Current count: {n}, row: {}", text(&row.row.unwrap_or_default()))?;
            }
            Ok(())
        })?;
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    /// `delete 't', 'r', 'f:q'[, ts]` and `deleteall 't', 'r'[, 'f:q'[, ts]]`.
    pub(super) fn delete(&mut self, cmd: &Command, all: bool) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 4, &[])?;
        let (t, r) = (args.bytes(0, "table")?, args.bytes(1, "row")?);
        let column = if all { args.opt_bytes(2, "column")? } else { Some(args.bytes(2, "column")?) };
        let ts = args.opt_int(3, "timestamp")?;
        let attrs = BTreeMap::new();
        match (column, ts) {
            (None, _) => self.client()?.delete_all_row(t, r, attrs),
            (Some(c), None) => self.client()?.delete_all(t, r, c, attrs),
            (Some(c), Some(ts)) => self.client()?.delete_all_ts(t, r, c, ts, attrs),
        }
        .map_err(thrift_err)
    }

    /// `incr 't', 'r', 'f:q'[, n]`: the counter's new value.
    pub(super) fn incr(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 4, &[])?;
        let (t, r, c) = (args.bytes(0, "table")?, args.bytes(1, "row")?, args.bytes(2, "column")?);
        let by = args.opt_int(3, "increment")?.unwrap_or(1);
        let v = self.client()?.atomic_increment(t, r, c, by).map_err(thrift_err)?;
        writeln!(self.out, "COUNTER VALUE = {v}")?;
        Ok(())
    }

    /// `get_counter 't', 'r', 'f:q'`: the cell read as an 8-byte
    /// big-endian counter (what incr writes).
    pub(super) fn get_counter(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 3, &[])?;
        let (t, r, c) = (args.bytes(0, "table")?, args.bytes(1, "row")?, args.bytes(2, "column")?);
        let cells = self.client()?.get(t, r.clone(), c.clone(), BTreeMap::new()).map_err(thrift_err)?;
        let Some(cell) = cells.into_iter().next() else {
            // HBase's shell says so, and it is not an error there.
            writeln!(self.out, "No counter found at specified coordinates")?;
            return Ok(());
        };
        let value = cell.value.unwrap_or_default();
        let bytes: [u8; 8] = value.as_slice().try_into().map_err(|_| {
            anyhow!(
                "get_counter: the value of {} in row {} is {} bytes, not an 8-byte counter",
                text(&c),
                text(&r),
                value.len()
            )
        })?;
        writeln!(self.out, "COUNTER VALUE = {}", i64::from_be_bytes(bytes))?;
        Ok(())
    }
}
