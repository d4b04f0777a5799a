//! The data commands (HBase's `dml` group, less truncate): put, get, scan,
//! count, delete, deleteall, incr, get_counter — over Thrift, printed in
//! HBase shell's layout (`COLUMN  CELL`, `ROW  COLUMN+CELL`, `N row(s)`).
//!
//! Options are checked before anything is sent (see `args`); the numbers
//! that must be positive (VERSIONS, INTERVAL, CACHE) are checked here.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{anyhow, bail};
use server::client::THbaseSyncClient;
use server::hbase_thrift::{Mutation, TRowResult, TScan};

use super::args::{Args, Kind, Options, bytes_list};
use super::parse::Command;
use super::{Shell, text, thrift_err};

const GET_OPTIONS: &[(&str, Kind)] =
    &[("COLUMN", Kind::BytesList), ("COLUMNS", Kind::BytesList), ("TIMESTAMP", Kind::Int), ("VERSIONS", Kind::Int)];

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
    limit: Option<u64>,
    /// Rows per `scannerGetList` call.
    cache: i32,
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
    Ok(ScanSpec { scan, limit, cache })
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

    /// `get 't', 'r'[, 'f:q'...][, COLUMN => ..., VERSIONS => n, TIMESTAMP => ts]`
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
        let versions = at_least("get", opts, "VERSIONS", 1, 1)?.min(i32::MAX as i64) as i32;
        let ts = opts.int("TIMESTAMP");
        writeln!(self.out, "{:<32}CELL", "COLUMN")?;
        let mut n = 0;
        if versions > 1 || ts.is_some() {
            // Per column, with versions: getVer / getVerTs (ts is inclusive in
            // the shell, exclusive over Thrift).
            if columns.is_empty() {
                let fams = self.client()?.get_column_descriptors(t.clone()).map_err(thrift_err)?;
                columns = fams.keys().cloned().collect();
            }
            for c in &columns {
                let cells = match ts {
                    Some(ts) => self.client()?.get_ver_ts(
                        t.clone(),
                        r.clone(),
                        c.clone(),
                        ts.saturating_add(1),
                        versions,
                        BTreeMap::new(),
                    ),
                    None => self.client()?.get_ver(t.clone(), r.clone(), c.clone(), versions, BTreeMap::new()),
                }
                .map_err(thrift_err)?;
                for cell in cells {
                    n += 1;
                    cell_line(&mut self.out, c, cell.timestamp.unwrap_or_default(), &cell.value.unwrap_or_default())?;
                }
            }
        } else {
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
        let id = self.client()?.scanner_open_with_scan(t.to_vec(), spec.scan, BTreeMap::new()).map_err(thrift_err)?;
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
