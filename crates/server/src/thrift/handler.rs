//! `ThriftHandler`: HBase's Thrift v1 service as a thin adapter over the
//! [`Gateway`]: each call's arguments become the gateway's request values
//! with the semantics of HBase's ThriftHBaseServiceHandler (time ranges
//! `[0, ts)` for reads at a timestamp, "family" vs "family:qualifier"
//! columns, deletes of all versions at or below a timestamp, a
//! `mutateRows` call's puts written before its deletes), and the results
//! and errors go back as Thrift's structures and exceptions (IOError /
//! IllegalArgument / AlreadyExists, and a filter string that does not parse
//! as the TApplicationException HBase's gateway raises).
//!
//! Thread safety: one handler serves every connection thread; it holds no
//! state of its own beyond the gateway (see `gateway` for its rules).

use std::collections::BTreeMap;
use std::sync::Arc;

use memstore::{Cell, TimeRange};
use store::wal::Durability;
use store::{Get, Mutation as StoreMutation, Scan};

use crate::gateway::{CheckAndMutate, Gateway, GatewayResult, RegionLocation, RowWrite, ScanRequest};
use crate::scan_attributes::ScanAttributes;
use crate::thrift::convert::{
    column_descriptor, parse_column, parse_columns, row_result, table_descriptor, tcell, timestamp,
};
use crate::thrift::errors::{from_gateway, illegal_argument, io_error, io_only};
use crate::thrift::hbase_thrift::{
    BatchMutation, Bytes, ColumnDescriptor, HbaseSyncHandler, Mutation, ScannerID, TAppend, TCell, TIncrement,
    TRegionInfo, TRowResult, TScan, Text,
};

pub struct ThriftHandler {
    gateway: Arc<Gateway>,
}

type Attributes = BTreeMap<Text, Text>;
type ThriftResult<T> = thrift::Result<T>;

fn table_name(name: &[u8]) -> ThriftResult<String> {
    String::from_utf8(name.to_vec()).map_err(|_| illegal_argument("table names must be UTF-8"))
}

/// A read at "timestamp": HBase's `setTimeRange(0, ts)`.
fn before(ts: Option<i64>) -> ThriftResult<TimeRange> {
    Ok(match ts {
        None => TimeRange::ALL,
        Some(ts) => TimeRange { min: 0, max: timestamp(ts)? },
    })
}

/// A gateway result as a Thrift one (`call`: the Thrift call's name).
fn thrift<T>(call: &str, r: GatewayResult<T>) -> ThriftResult<T> {
    r.map_err(|e| from_gateway(call, e))
}

/// The region as `getTableRegions` and `getRegionInfo` describe it: its
/// HBase-style name and the host and Thrift port of the server holding it.
fn region_info(location: RegionLocation) -> TRegionInfo {
    let RegionLocation { info: r, host, port, .. } = location;
    let name = format!("{},{},{}", r.table, String::from_utf8_lossy(&r.start_key), r.id);
    TRegionInfo::new(r.start_key, r.end_key, r.id as i64, name.into_bytes(), 1i8, host.into_bytes(), i32::from(port))
}

/// Thrift mutations of one row as a gateway write: puts and deletes, with
/// the row's durability (SKIP_WAL if any mutation asks not to log), the
/// deletes before the puts as HBase's Thrift handler sends them.
fn row_write(row: Vec<u8>, mutations: Vec<Mutation>, ts: Option<u64>) -> ThriftResult<RowWrite> {
    let mut out = Vec::with_capacity(mutations.len());
    let mut skip_wal = false;
    for m in mutations {
        let column = m.column.ok_or_else(|| illegal_argument("mutation without a column"))?;
        let col = parse_column(&column);
        skip_wal |= m.write_to_w_a_l == Some(false);
        if m.is_delete.unwrap_or(false) {
            out.push(match col.qualifier {
                Some(q) => StoreMutation::DeleteColumn { family: col.family, qualifier: q, timestamp: ts },
                None => StoreMutation::DeleteFamily { family: col.family, timestamp: ts },
            });
        } else {
            let Some(q) = col.qualifier else {
                return Err(illegal_argument(format!(
                    "put needs a column as family:qualifier, got {:?}",
                    String::from_utf8_lossy(&column)
                )));
            };
            // Moved, not copied: the request owns it.
            let value = m.value.unwrap_or_default();
            out.push(StoreMutation::Put { family: col.family, qualifier: q, timestamp: ts, value });
        }
    }
    out.sort_by_key(|m| matches!(m, StoreMutation::Put { .. }));
    Ok(RowWrite { row, mutations: out, durability: skip_wal.then_some(Durability::SkipWal) })
}

impl ThriftHandler {
    pub fn new(gateway: Arc<Gateway>) -> ThriftHandler {
        ThriftHandler { gateway }
    }

    /// One row's Thrift mutations as a gateway write, checked against the
    /// row size limit.
    fn checked_row(&self, row: Vec<u8>, mutations: Vec<Mutation>, ts: Option<i64>) -> ThriftResult<RowWrite> {
        let ts = ts.map(timestamp).transpose()?;
        let size: usize = mutations
            .iter()
            .map(|m| m.value.as_ref().map_or(0, Vec::len) + m.column.as_ref().map_or(0, Vec::len))
            .sum();
        if size > self.gateway.limits().max_row_bytes {
            return Err(illegal_argument(format!("mutation of {size} bytes is over hbase.table.max.rowsize")));
        }
        row_write(row, mutations, ts)
    }

    fn get(
        &self,
        table: &[u8],
        row: Vec<u8>,
        columns: &[Vec<u8>],
        ts: Option<i64>,
        versions: u32,
    ) -> ThriftResult<Vec<Cell>> {
        let table = table_name(table)?;
        let request = Get { row, columns: parse_columns(columns), time_range: before(ts)?, max_versions: versions };
        thrift("get", self.retrying(true, "get", || self.gateway.get(&table, request.clone())))
    }

    fn cells_of_column(
        &self,
        table: &[u8],
        row: Vec<u8>,
        column: Vec<u8>,
        ts: Option<i64>,
        versions: i32,
    ) -> ThriftResult<Vec<TCell>> {
        if versions < 1 {
            return Err(illegal_argument(format!("number of versions must be at least 1, got {versions}")));
        }
        let cells = self.get(table, row, &[column], ts, versions as u32)?;
        Ok(cells.iter().map(tcell).collect())
    }

    fn get_row(
        &self,
        table: &[u8],
        row: Vec<u8>,
        columns: &[Vec<u8>],
        ts: Option<i64>,
    ) -> ThriftResult<Vec<TRowResult>> {
        let cells = self.get(table, row, columns, ts, 1)?;
        Ok(row_result(&cells, false).into_iter().collect())
    }

    fn get_rows(
        &self,
        table: &[u8],
        rows: &[Vec<u8>],
        columns: &[Vec<u8>],
        ts: Option<i64>,
    ) -> ThriftResult<Vec<TRowResult>> {
        let table = table_name(table)?;
        let (columns, range) = (parse_columns(columns), before(ts)?);
        let found =
            thrift("getRows", self.retrying(true, "getRows", || self.gateway.get_rows(&table, rows, &columns, range)))?;
        Ok(found.iter().filter_map(|cells| row_result(cells, false)).collect())
    }

    fn mutate(&self, table: &[u8], row: Vec<u8>, mutations: Vec<Mutation>, ts: Option<i64>) -> ThriftResult<()> {
        let name = table_name(table)?;
        let write = self.checked_row(row, mutations, ts)?;
        thrift("mutateRow", self.retrying(true, "mutateRow", || self.gateway.mutate_row(&name, write.clone())))
    }

    /// mutateRows as HBase's gateway runs it (`mutateRowsTs`): every row is
    /// converted first, so a malformed row refuses the batch before anything
    /// is written; then the puts of every row go as one batch (its
    /// `table.put(puts)`) and after them, only if every put was applied, the
    /// deletes of every row as another (`table.delete(deletes)`). A row's
    /// puts and deletes are therefore not one atomic mutation, as they are
    /// not in HBase: a put of every row is applied before any delete (a
    /// delete of a column the same call puts removes it), and when a row's
    /// put is refused no delete of the call is applied — `put pb1, put pb2
    /// nofam:a, put pb3, delete pb1 fh:a` keeps pb1 and pb3, as HBase 2.6.4
    /// does (issue 29, item 8).
    fn mutate_batch(&self, table: &[u8], batches: Vec<BatchMutation>, ts: Option<i64>) -> ThriftResult<()> {
        let name = table_name(table)?;
        let (mut puts, mut deletes) = (Vec::new(), Vec::new());
        for b in batches {
            let row = b.row.unwrap_or_default();
            let (d, p): (Vec<Mutation>, Vec<Mutation>) =
                b.mutations.unwrap_or_default().into_iter().partition(|m| m.is_delete.unwrap_or(false));
            for (ms, half) in [(p, &mut puts), (d, &mut deletes)] {
                if !ms.is_empty() {
                    half.push(self.checked_row(row.clone(), ms, ts)?);
                }
            }
        }
        thrift("mutateRows", self.write_phases(&name, vec![puts, deletes]))
    }

    /// `call`, made again while its region moves (in a cluster; see
    /// `thrift::retry`); `repeatable`: it may be applied twice without harm.
    fn retrying<T>(&self, repeatable: bool, what: &str, call: impl FnMut() -> GatewayResult<T>) -> GatewayResult<T> {
        crate::thrift::retry::retrying(self.gateway.router().is_cluster(), repeatable, what, call)
    }

    /// A mutateRows call's phases (its puts, then its deletes), each row
    /// retried on its own while its region moves: a row applied is never
    /// sent again (a delete re-sent later could remove another client's
    /// put made in between), as HBase's client retries only the actions
    /// that failed. A phase runs only once every row of the one before was
    /// applied. A failure of a whole store batch (which may have applied
    /// some of its rows) is retried for every row still pending, as HBase's
    /// client retries a region-level exception for each of its actions.
    fn write_phases(&self, table: &str, phases: Vec<Vec<RowWrite>>) -> GatewayResult<()> {
        let cluster = self.gateway.router().is_cluster();
        for rows in phases.into_iter().filter(|rows| !rows.is_empty()) {
            let mut pending = rows;
            let deadline = std::time::Instant::now() + crate::thrift::retry::MOVE_DEADLINE;
            let mut attempt = 0;
            loop {
                use crate::thrift::retry::{pause, region_moving};
                let moving = |e: &crate::gateway::GatewayError| {
                    !crate::peer::routing::serving_peer() && region_moving(e, cluster, true)
                };
                let wait = pause(attempt);
                let in_time = std::time::Instant::now() + wait < deadline;
                pending = match self.gateway.write_rows_each(table, &pending) {
                    Ok(refused) if refused.is_empty() => break,
                    Ok(refused) => {
                        if !in_time || !refused.iter().all(|(_, e)| moving(e)) {
                            let at = refused.iter().position(|(_, e)| !moving(e)).unwrap_or(0);
                            return Err(refused.into_iter().nth(at).expect("a refusal").1);
                        }
                        let again: std::collections::BTreeSet<usize> = refused.iter().map(|(i, _)| *i).collect();
                        pending.into_iter().enumerate().filter(|(i, _)| again.contains(i)).map(|(_, r)| r).collect()
                    }
                    Err(e) if in_time && moving(&e) => pending,
                    Err(e) => return Err(e),
                };
                tracing::debug!(rows = pending.len(), attempt, "mutateRows: rows whose region moves, retried");
                std::thread::sleep(wait);
                attempt += 1;
            }
        }
        Ok(())
    }

    fn delete(&self, table: &[u8], row: Vec<u8>, column: Option<&[u8]>, ts: Option<i64>) -> ThriftResult<()> {
        let table = table_name(table)?;
        let ts = ts.map(timestamp).transpose()?;
        let m = match column.map(parse_column) {
            None => StoreMutation::DeleteRow { timestamp: ts },
            Some(c) => match c.qualifier {
                Some(q) => StoreMutation::DeleteColumn { family: c.family, qualifier: q, timestamp: ts },
                None => StoreMutation::DeleteFamily { family: c.family, timestamp: ts },
            },
        };
        let write = RowWrite { row, mutations: vec![m], durability: None };
        thrift("deleteAll", self.retrying(true, "deleteAll", || self.gateway.mutate_row(&table, write.clone())))
    }

    fn increment_column(&self, table: &[u8], row: &[u8], column: &[u8], amount: i64) -> ThriftResult<i64> {
        let table = table_name(table)?;
        let c = parse_column(column);
        let q = c.qualifier.unwrap_or_default();
        let column = [(c.family, q, amount)];
        let values =
            thrift("increment", self.retrying(false, "increment", || self.gateway.increment(&table, row, &column)))?;
        Ok(values[0])
    }

    /// Opens a scanner on `table` over `scan`, whose start and stop rows
    /// are Thrift's (empty: unbounded; a start equal to the stop is a get
    /// of that row, as HBase's `Scan(start, stop)` is) and whose read at
    /// `ts` (HBase's `[0, ts)`) narrows the attributes' time range.
    fn open_scanner(
        &self,
        table: &[u8],
        scan: ScanRequest,
        ts: Option<i64>,
        options: ScanAttributes,
    ) -> ThriftResult<ScannerID> {
        let table = table_name(table)?;
        let ScanRequest { scan, filter, sorted_columns } = scan;
        let start = scan.start.filter(|s| !s.is_empty());
        let stop = scan.stop.filter(|s| !s.is_empty());
        // HBase's Scan(start, stop) with start == stop is a get of that row
        // (`setStopRow` includes a stop row equal to the start row), forward
        // and reverse alike: the stop row is included.
        let get_scan =
            (options.start_inclusive, options.stop_inclusive) == (true, false) && start.is_some() && start == stop;
        let scan = Scan {
            start,
            stop,
            start_inclusive: options.start_inclusive,
            stop_inclusive: options.stop_inclusive || get_scan,
            time_range: options.time_range_before(ts.map(timestamp).transpose()?),
            max_versions: options.max_versions,
            ..scan
        };
        let request = ScanRequest { scan, filter, sorted_columns };
        thrift(
            "scannerOpenWithScan",
            self.retrying(true, "scannerOpenWithScan", || self.gateway.open_scanner(&table, request.clone())),
        )
    }

    /// A scanner opened by one of the simple `scannerOpen*` calls.
    fn open_simple(
        &self,
        table: &[u8],
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        prefix: Option<Vec<u8>>,
        columns: &[Vec<u8>],
        ts: Option<i64>,
    ) -> ThriftResult<ScannerID> {
        let scan = Scan { start, stop, prefix, columns: parse_columns(columns), ..Scan::default() };
        let scan = ScanRequest { scan, ..ScanRequest::default() };
        io_only(self.open_scanner(table, scan, ts, ScanAttributes::default()))
    }

    fn scanner_rows(&self, id: ScannerID, n: i32) -> ThriftResult<Vec<TRowResult>> {
        if n < 0 {
            return Err(illegal_argument(format!("number of rows must not be negative, got {n}")));
        }
        let scanned = thrift("scannerGetList", self.gateway.scanner_rows(id, n as usize))?;
        Ok(scanned.rows.iter().filter_map(|r| row_result(&r.to_cells(), scanned.sorted_columns)).collect())
    }
}

impl HbaseSyncHandler for ThriftHandler {
    fn handle_enable_table(&self, table_name_: Bytes) -> ThriftResult<()> {
        let name = table_name(&table_name_)?;
        io_only(thrift("enableTable", self.gateway.enable_table(&name)))
    }

    fn handle_disable_table(&self, table_name_: Bytes) -> ThriftResult<()> {
        let name = table_name(&table_name_)?;
        io_only(thrift("disableTable", self.gateway.disable_table(&name)))
    }

    fn handle_is_table_enabled(&self, table_name_: Bytes) -> ThriftResult<bool> {
        io_only(table_name(&table_name_).and_then(|t| thrift("isTableEnabled", self.gateway.is_table_enabled(&t))))
    }

    fn handle_compact(&self, name: Bytes) -> ThriftResult<()> {
        io_only(table_name(&name).and_then(|t| thrift("compact", self.gateway.compact_table(&t, false))))
    }

    fn handle_major_compact(&self, name: Bytes) -> ThriftResult<()> {
        io_only(table_name(&name).and_then(|t| thrift("majorCompact", self.gateway.compact_table(&t, true))))
    }

    fn handle_get_table_names(&self) -> ThriftResult<Vec<Text>> {
        Ok(self.gateway.list_tables().into_iter().map(String::into_bytes).collect())
    }

    fn handle_get_column_descriptors(&self, table: Text) -> ThriftResult<BTreeMap<Text, ColumnDescriptor>> {
        io_only((|| -> ThriftResult<BTreeMap<Text, ColumnDescriptor>> {
            let desc = thrift("getColumnDescriptors", self.gateway.describe_table(&table_name(&table)?))?;
            Ok(desc.families.iter().map(|f| (format!("{}:", f.name).into_bytes(), column_descriptor(f))).collect())
        })())
    }

    fn handle_get_table_regions(&self, table: Text) -> ThriftResult<Vec<TRegionInfo>> {
        io_only((|| -> ThriftResult<Vec<TRegionInfo>> {
            let regions = thrift("getTableRegions", self.gateway.table_regions(&table_name(&table)?))?;
            Ok(regions.into_iter().map(region_info).collect())
        })())
    }

    fn handle_create_table(&self, table: Text, column_families: Vec<ColumnDescriptor>) -> ThriftResult<()> {
        let name = table_name(&table)?;
        let desc = table_descriptor(&name, &column_families, self.gateway.family_template())?;
        thrift("createTable", self.gateway.create_table(desc))
    }

    fn handle_delete_table(&self, table: Text) -> ThriftResult<()> {
        let name = table_name(&table)?;
        io_only(thrift("deleteTable", self.gateway.delete_table(&name)))
    }

    fn handle_get(&self, table: Text, row: Text, column: Text, _: Attributes) -> ThriftResult<Vec<TCell>> {
        io_only(self.cells_of_column(&table, row, column, None, 1))
    }

    fn handle_get_ver(&self, table: Text, row: Text, column: Text, n: i32, _: Attributes) -> ThriftResult<Vec<TCell>> {
        io_only(self.cells_of_column(&table, row, column, None, n))
    }

    fn handle_get_ver_ts(
        &self,
        table: Text,
        row: Text,
        column: Text,
        ts: i64,
        n: i32,
        _: Attributes,
    ) -> ThriftResult<Vec<TCell>> {
        io_only(self.cells_of_column(&table, row, column, Some(ts), n))
    }

    fn handle_get_row(&self, table: Text, row: Text, _: Attributes) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_row(&table, row, &[], None))
    }

    fn handle_get_row_with_columns(
        &self,
        table: Text,
        row: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_row(&table, row, &columns, None))
    }

    fn handle_get_row_ts(&self, table: Text, row: Text, ts: i64, _: Attributes) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_row(&table, row, &[], Some(ts)))
    }

    fn handle_get_row_with_columns_ts(
        &self,
        table: Text,
        row: Text,
        columns: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_row(&table, row, &columns, Some(ts)))
    }

    fn handle_get_rows(&self, table: Text, rows: Vec<Text>, _: Attributes) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_rows(&table, &rows, &[], None))
    }

    fn handle_get_rows_with_columns(
        &self,
        table: Text,
        rows: Vec<Text>,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_rows(&table, &rows, &columns, None))
    }

    fn handle_get_rows_ts(
        &self,
        table: Text,
        rows: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_rows(&table, &rows, &[], Some(ts)))
    }

    fn handle_get_rows_with_columns_ts(
        &self,
        table: Text,
        rows: Vec<Text>,
        columns: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        io_only(self.get_rows(&table, &rows, &columns, Some(ts)))
    }

    fn handle_mutate_row(&self, table: Text, row: Text, mutations: Vec<Mutation>, _: Attributes) -> ThriftResult<()> {
        self.mutate(&table, row, mutations, None)
    }

    fn handle_mutate_row_ts(
        &self,
        table: Text,
        row: Text,
        mutations: Vec<Mutation>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<()> {
        self.mutate(&table, row, mutations, Some(ts))
    }

    fn handle_mutate_rows(&self, table: Text, batches: Vec<BatchMutation>, _: Attributes) -> ThriftResult<()> {
        self.mutate_batch(&table, batches, None)
    }

    fn handle_mutate_rows_ts(
        &self,
        table: Text,
        batches: Vec<BatchMutation>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<()> {
        self.mutate_batch(&table, batches, Some(ts))
    }

    fn handle_atomic_increment(&self, table: Text, row: Text, column: Text, value: i64) -> ThriftResult<i64> {
        self.increment_column(&table, &row, &column, value)
    }

    fn handle_delete_all(&self, table: Text, row: Text, column: Text, _: Attributes) -> ThriftResult<()> {
        io_only(self.delete(&table, row, Some(&column), None))
    }

    fn handle_delete_all_ts(&self, table: Text, row: Text, column: Text, ts: i64, _: Attributes) -> ThriftResult<()> {
        io_only(self.delete(&table, row, Some(&column), Some(ts)))
    }

    fn handle_delete_all_row(&self, table: Text, row: Text, _: Attributes) -> ThriftResult<()> {
        io_only(self.delete(&table, row, None, None))
    }

    fn handle_increment(&self, inc: TIncrement) -> ThriftResult<()> {
        io_only((|| -> ThriftResult<()> {
            let table = inc.table.ok_or_else(|| illegal_argument("increment without a table"))?;
            let row = inc.row.ok_or_else(|| illegal_argument("increment without a row"))?;
            let column = inc.column.ok_or_else(|| illegal_argument("increment without a column"))?;
            self.increment_column(&table, &row, &column, inc.ammount.unwrap_or(1)).map(|_| ())
        })())
    }

    fn handle_increment_rows(&self, increments: Vec<TIncrement>) -> ThriftResult<()> {
        io_only(increments.into_iter().try_for_each(|i| self.handle_increment(i)))
    }

    fn handle_delete_all_row_ts(&self, table: Text, row: Text, ts: i64, _: Attributes) -> ThriftResult<()> {
        io_only(self.delete(&table, row, None, Some(ts)))
    }

    fn handle_scanner_open_with_scan(&self, table: Text, scan: TScan, attrs: Attributes) -> ThriftResult<ScannerID> {
        let options = ScanAttributes::parse(&attrs).map_err(|e| illegal_argument(e.to_string()));
        io_only(options.and_then(|options| {
            let batch = match scan.batch_size {
                Some(b) if b < 0 => return Err(illegal_argument(format!("batch size must not be negative, got {b}"))),
                Some(b) if b > 0 => Some(b as usize),
                _ => None,
            };
            let request = ScanRequest {
                scan: Scan {
                    start: scan.start_row,
                    stop: scan.stop_row,
                    reverse: scan.reversed.unwrap_or(false),
                    columns: parse_columns(scan.columns.as_deref().unwrap_or_default()),
                    batch,
                    ..Scan::default()
                },
                filter: scan.filter_string,
                sorted_columns: scan.sort_columns.unwrap_or(false),
            };
            self.open_scanner(&table, request, scan.timestamp, options)
        }))
    }

    fn handle_scanner_open(
        &self,
        table: Text,
        start: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        self.open_simple(&table, Some(start), None, None, &columns, None)
    }

    fn handle_scanner_open_with_stop(
        &self,
        table: Text,
        start: Text,
        stop: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        self.open_simple(&table, Some(start), Some(stop), None, &columns, None)
    }

    fn handle_scanner_open_with_prefix(
        &self,
        table: Text,
        prefix: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        self.open_simple(&table, None, None, Some(prefix), &columns, None)
    }

    fn handle_scanner_open_ts(
        &self,
        table: Text,
        start: Text,
        columns: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        self.open_simple(&table, Some(start), None, None, &columns, Some(ts))
    }

    fn handle_scanner_open_with_stop_ts(
        &self,
        table: Text,
        start: Text,
        stop: Text,
        columns: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        self.open_simple(&table, Some(start), Some(stop), None, &columns, Some(ts))
    }

    fn handle_scanner_get(&self, id: ScannerID) -> ThriftResult<Vec<TRowResult>> {
        self.scanner_rows(id, 1)
    }

    fn handle_scanner_get_list(&self, id: ScannerID, nb_rows: i32) -> ThriftResult<Vec<TRowResult>> {
        self.scanner_rows(id, nb_rows)
    }

    fn handle_scanner_close(&self, id: ScannerID) -> ThriftResult<()> {
        thrift("scannerClose", self.gateway.close_scanner(id))
    }

    fn handle_get_row_or_before(&self, table: Text, row: Text, family: Text) -> ThriftResult<Vec<TCell>> {
        io_only((|| -> ThriftResult<Vec<TCell>> {
            let name = table_name(&table)?;
            let cells = thrift("getRowOrBefore", self.gateway.row_or_before(&name, row, parse_column(&family)))?;
            Ok(cells.iter().map(tcell).collect())
        })())
    }

    fn handle_get_region_info(&self, row: Text) -> ThriftResult<TRegionInfo> {
        io_only((|| -> ThriftResult<TRegionInfo> {
            // A meta row key: "table,row,...".
            let text = String::from_utf8_lossy(&row).into_owned();
            let mut parts = text.splitn(3, ',');
            let (Some(table), Some(key)) = (parts.next(), parts.next()) else {
                return Err(io_error(format!("{text:?} is not a meta row key (table,row,id)")));
            };
            let location = thrift("getRegionInfo", self.gateway.region_holding(table, key.as_bytes()))?;
            Ok(region_info(location))
        })())
    }

    fn handle_append(&self, append: TAppend) -> ThriftResult<Vec<TCell>> {
        io_only((|| -> ThriftResult<Vec<TCell>> {
            let table = append.table.ok_or_else(|| illegal_argument("append without a table"))?;
            let row = append.row.ok_or_else(|| illegal_argument("append without a row"))?;
            let (columns, values) = (append.columns.unwrap_or_default(), append.values.unwrap_or_default());
            if columns.len() != values.len() {
                return Err(illegal_argument("append needs as many values as columns"));
            }
            let name = table_name(&table)?;
            let columns: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = columns
                .iter()
                .zip(values)
                .map(|(column, suffix)| {
                    let c = parse_column(column);
                    // "f" alone means the empty qualifier here.
                    (c.family, c.qualifier.unwrap_or_default(), suffix)
                })
                .collect();
            let values =
                thrift("append", self.retrying(false, "append", || self.gateway.append(&name, &row, &columns)))?;
            Ok(values.into_iter().map(|v| TCell::new(v, None)).collect())
        })())
    }

    fn handle_check_and_put(
        &self,
        table: Text,
        row: Text,
        column: Text,
        value: Text,
        mput: Mutation,
        _: Attributes,
    ) -> ThriftResult<bool> {
        let name = table_name(&table)?;
        let c = parse_column(&column);
        let write = row_write(row, vec![mput], None)?;
        let check = CheckAndMutate {
            row: write.row,
            family: c.family,
            qualifier: c.qualifier.unwrap_or_default(),
            expected: (!value.is_empty()).then_some(value),
            mutations: write.mutations,
        };
        thrift(
            "checkAndPut",
            self.retrying(false, "checkAndPut", || self.gateway.check_and_mutate(&name, check.clone())),
        )
    }
}
