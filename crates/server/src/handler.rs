//! `ThriftHandler`: HBase's Thrift v1 service over a [`Store`], call by
//! call with the semantics of HBase's ThriftHBaseServiceHandler (time
//! ranges `[0, ts)` for reads at a timestamp, "family" vs "family:qualifier"
//! columns, deletes of all versions at or below a timestamp, errors as
//! IOError / IllegalArgument / AlreadyExists, and a filter string that does
//! not parse as the TApplicationException HBase's gateway raises).
//!
//! Every call that reached the store and succeeded is timed into the
//! handler's [`RequestMetrics`] (put, delete, get, scan per table; see
//! `request_metrics` for which call is which).
//!
//! Thread safety: one handler serves every connection thread; it holds no
//! lock across calls other than a scanner's own (see `scanners`); timing a
//! call takes none.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use memstore::{Cell, TimeRange};
use store::wal::Durability;
use store::{FamilyDescriptor, Get, Mutation as StoreMutation, MutationRef, RowMutations, Scan, Store};

use crate::client::{THbaseSyncClient, ThriftClient};
use crate::cluster_scan::{PieceScan, RemoteScan, ScanError};
use crate::convert::{column_descriptor, parse_column, parse_columns, row_result, table_descriptor, tcell, timestamp};
use crate::errors::{from_store, illegal_argument, io_error, io_only, unparsable_filter};
use crate::hbase_thrift::{
    BatchMutation, Bytes, ColumnDescriptor, HbaseSyncHandler, Mutation, ScannerID, TAppend, TCell, TIncrement,
    TRegionInfo, TRowResult, TScan, Text,
};
use crate::request_metrics::{Op, RequestMetrics};
use crate::result_size::{result_bytes, row_bytes};
use crate::routing::Router;
use crate::scan_attributes::ScanAttributes;
use crate::scanners::{OpenScanner, ScannerRegistry};

/// Limits the handler enforces on requests.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// `hbase.table.max.rowsize` (1 GiB): a row bigger than this is refused
    /// on write and on read (RowTooBigException).
    pub max_row_bytes: usize,
    /// Rows one scannerGetList or getRows may return.
    pub max_rows_per_call: usize,
    /// `hbase.server.scanner.max.result.size` (100 MiB): a scannerGetList
    /// answer stops at the row that reaches it (the client asks again for
    /// the rest); a getRows answer over it is refused.
    pub max_result_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits { max_row_bytes: 1 << 30, max_rows_per_call: 100_000, max_result_bytes: 100 << 20 }
    }
}

pub struct ThriftHandler {
    store: Arc<Store>,
    scanners: Arc<ScannerRegistry>,
    family_template: FamilyDescriptor,
    table_durability: Durability,
    limits: RequestLimits,
    requests: Arc<RequestMetrics>,
    /// Where this server's Thrift service listens (set once it is bound),
    /// reported as the host and port of every region it serves.
    served_at: Arc<std::sync::OnceLock<std::net::SocketAddr>>,
    /// Cluster mode: where calls for regions held elsewhere go.
    router: Arc<Router>,
}

type Attributes = BTreeMap<Text, Text>;
type ThriftResult<T> = thrift::Result<T>;

fn table_name(name: &[u8]) -> ThriftResult<String> {
    String::from_utf8(name.to_vec()).map_err(|_| illegal_argument("table names must be UTF-8"))
}

/// A scan's failure as the client sees it: the store's, an owner's own
/// answer as it gave it, or an IOError.
fn scan_error(e: ScanError) -> thrift::Error {
    match e {
        ScanError::Store(e) => from_store(e),
        ScanError::Remote(e @ thrift::Error::User(_)) => e,
        other => io_error(format!("org.apache.hadoop.hbase.NotServingRegionException: {other}")),
    }
}

/// A read at "timestamp": HBase's `setTimeRange(0, ts)`.
fn before(ts: Option<i64>) -> ThriftResult<TimeRange> {
    Ok(match ts {
        None => TimeRange::ALL,
        Some(ts) => TimeRange { min: 0, max: timestamp(ts)? },
    })
}

impl ThriftHandler {
    pub fn new(
        store: Arc<Store>,
        scanners: Arc<ScannerRegistry>,
        family_template: FamilyDescriptor,
        table_durability: Durability,
        limits: RequestLimits,
    ) -> ThriftHandler {
        let requests = Arc::new(RequestMetrics::default());
        let served_at = Arc::new(std::sync::OnceLock::new());
        let router = Arc::new(Router::default());
        ThriftHandler { store, scanners, family_template, table_durability, limits, requests, served_at, router }
    }

    /// In a cluster, has every other server take `table`'s state (`done`:
    /// what this server did) from the root before the call returns, as
    /// HBase's DDL returns once every region server has acted on it.
    fn ddl_everywhere(&self, table: &str, done: &str) -> ThriftResult<()> {
        let failed = self.router.sync_table_everywhere(table);
        if failed.is_empty() {
            return Ok(());
        }
        Err(io_error(format!(
            "table {table} is {done} on this server, but not every other server confirmed it (it retries at the \
             master's next pass): {}",
            failed.join("; ")
        )))
    }

    /// Where calls for regions another server holds go (cluster mode).
    pub fn router(&self) -> &Arc<Router> {
        &self.router
    }

    /// The region holding `row` of `table` and the Thrift address of the
    /// server holding it, when that is another server: in a cluster, the
    /// region is OFFLINE here (a placeholder) and a live server has it
    /// OPEN. Otherwise the call is this server's to answer (or refuse).
    fn elsewhere(&self, table: &[u8], row: &[u8]) -> Option<(String, String)> {
        // A call another server forwarded is answered here, never again
        // forwarded (see `routing.rs`).
        if !self.router.is_cluster() || crate::routing::serving_peer() {
            return None;
        }
        let name = std::str::from_utf8(table).ok()?;
        let (info, state) = self.store.region_state_for(name, row).ok()??;
        if state != store::RegionState::Offline {
            return None;
        }
        let encoded = info.dir_name();
        let owner = self.router.owner(&encoded)?;
        Some((encoded, owner))
    }

    /// `call` on the server holding `row` of `table`, when another server
    /// holds it (see `routing.rs`); `None`: this server answers.
    fn forwarded<T>(
        &self,
        table: &[u8],
        row: &[u8],
        call: impl FnMut(&mut ThriftClient) -> ThriftResult<T>,
    ) -> Option<ThriftResult<T>> {
        let (encoded, owner) = self.elsewhere(table, row)?;
        let mut call = call;
        let mut result = self.router.call(&owner, &mut call);
        if let Err(e) = &result
            && Router::moved(e)
        {
            // It has moved (or its server died): look it up again, and call
            // the new owner once, as HBase's client relocates and retries.
            self.router.forget(&encoded);
            if let Some((_, now)) = self.elsewhere(table, row).filter(|(_, now)| *now != owner) {
                result = self.router.call(&now, &mut call);
            }
        }
        // The owner's own answer as it gave it; a failure to reach it as
        // the IOError HBase's client knows (not an "internal error").
        Some(result.map_err(|e| match e {
            e @ thrift::Error::User(_) => e,
            other => io_error(format!(
                "org.apache.hadoop.hbase.NotServingRegionException: the server holding region {encoded} ({owner}) \
                 could not be reached: {other}"
            )),
        }))
    }

    /// Set once the Thrift listener is bound (see `served_at`).
    pub fn served_at(&self) -> &Arc<std::sync::OnceLock<std::net::SocketAddr>> {
        &self.served_at
    }

    /// The region as `getTableRegions` and `getRegionInfo` describe it: its
    /// HBase-style name and the host and Thrift port of the server holding
    /// it (this one).
    fn region_info(&self, r: store::RegionInfo) -> TRegionInfo {
        let at = self.served_at.get().map_or(("localhost".to_string(), 0), |a| (a.ip().to_string(), a.port()));
        self.region_info_at(r, at)
    }

    /// The region as [`Self::region_info`] describes it, held by the server
    /// at `host`, `port`.
    fn region_info_at(&self, r: store::RegionInfo, (host, port): (String, u16)) -> TRegionInfo {
        let name = format!("{},{},{}", r.table, String::from_utf8_lossy(&r.start_key), r.id);
        TRegionInfo::new(
            r.start_key,
            r.end_key,
            r.id as i64,
            name.into_bytes(),
            1i8,
            host.into_bytes(),
            i32::from(port),
        )
    }

    /// The latencies of the calls this handler served.
    pub fn request_metrics(&self) -> &Arc<RequestMetrics> {
        &self.requests
    }

    /// Records `result` of an `op` call on `table` begun at `started`, if
    /// it succeeded.
    fn timed<T>(&self, table: &str, op: Op, started: Instant, result: ThriftResult<T>) -> ThriftResult<T> {
        if result.is_ok() {
            self.requests.observe(table, op, started.elapsed());
        }
        result
    }

    fn check_row_size(&self, cells: &[Cell]) -> ThriftResult<()> {
        let n = row_bytes(cells);
        if n > self.limits.max_row_bytes {
            return Err(io_error(format!(
                "org.apache.hadoop.hbase.regionserver.RowTooBigException: row of {n} bytes is over \
                 hbase.table.max.rowsize ({})",
                self.limits.max_row_bytes
            )));
        }
        Ok(())
    }

    fn read_row(
        &self,
        table: &[u8],
        row: &[u8],
        columns: &[Vec<u8>],
        ts: Option<i64>,
        versions: u32,
    ) -> ThriftResult<Vec<Cell>> {
        let table = table_name(table)?;
        let get =
            Get { row: row.to_vec(), columns: parse_columns(columns), time_range: before(ts)?, max_versions: versions };
        let cells = self.store.get(&table, &get).map_err(from_store)?;
        self.check_row_size(&cells)?;
        Ok(cells)
    }

    fn get_rows(
        &self,
        table: &[u8],
        rows: &[Vec<u8>],
        columns: &[Vec<u8>],
        ts: Option<i64>,
    ) -> ThriftResult<Vec<TRowResult>> {
        let started = Instant::now();
        if rows.len() > self.limits.max_rows_per_call {
            return Err(illegal_argument(format!(
                "{} rows in one call; at most {}",
                rows.len(),
                self.limits.max_rows_per_call
            )));
        }
        let result = (|| {
            let mut out = Vec::new();
            let mut bytes = 0usize;
            for row in rows {
                let remote = self.forwarded(table, row, |c| {
                    let (t, r, cols) = (table.to_vec(), row.clone(), columns.to_vec());
                    match ts {
                        Some(ts) => c.get_row_with_columns_ts(t, r, cols, ts, BTreeMap::new()),
                        None => c.get_row_with_columns(t, r, cols, BTreeMap::new()),
                    }
                });
                match remote {
                    Some(found) => {
                        let found = found?;
                        bytes += found.iter().map(result_bytes).sum::<usize>();
                        out.extend(found);
                    }
                    None => {
                        let cells = self.read_row(table, row, columns, ts, 1)?;
                        bytes += row_bytes(&cells);
                        out.extend(row_result(&cells, false));
                    }
                }
                if bytes > self.limits.max_result_bytes {
                    return Err(io_error(format!(
                        "org.apache.hadoop.hbase.DoNotRetryIOException: the rows asked for hold more than \
                         hbase.server.scanner.max.result.size ({} bytes); ask for fewer rows at a time",
                        self.limits.max_result_bytes
                    )));
                }
            }
            Ok(out)
        })();
        if rows.is_empty() {
            // Nothing was read: the table may not even exist.
            return result;
        }
        self.timed(&String::from_utf8_lossy(table), Op::Get, started, result)
    }

    fn cells_of_column(
        &self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        ts: Option<i64>,
        versions: i32,
    ) -> ThriftResult<Vec<TCell>> {
        let started = Instant::now();
        if versions < 1 {
            return Err(illegal_argument(format!("number of versions must be at least 1, got {versions}")));
        }
        let cells = self.read_row(table, row, std::slice::from_ref(&column.to_vec()), ts, versions as u32);
        let cells = self.timed(&String::from_utf8_lossy(table), Op::Get, started, cells)?;
        Ok(cells.iter().map(tcell).collect())
    }

    /// Thrift mutations of one row as the store's: puts and deletes, with
    /// the row's durability (SKIP_WAL if any mutation asks not to log).
    fn store_mutations(
        &self,
        mutations: Vec<Mutation>,
        ts: Option<u64>,
    ) -> ThriftResult<(Vec<StoreMutation>, Option<Durability>)> {
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
        // HBase's Thrift handler sends the row's deletes before its puts.
        out.sort_by_key(|m| matches!(m, StoreMutation::Put { .. }));
        Ok((out, skip_wal.then_some(Durability::SkipWal)))
    }

    fn mutate(&self, table: &[u8], row: &[u8], mutations: Vec<Mutation>, ts: Option<i64>) -> ThriftResult<()> {
        let started = Instant::now();
        let name = table_name(table)?;
        let (ms, durability) = self.row_mutations(mutations, ts)?;
        if ms.is_empty() {
            return Ok(());
        }
        let result = self.store.mutate_row(&name, row, &ms, durability).map_err(from_store);
        self.timed(&name, Op::Put, started, result)
    }

    /// One row's Thrift mutations as the store's, checked against the row
    /// size limit.
    fn row_mutations(
        &self,
        mutations: Vec<Mutation>,
        ts: Option<i64>,
    ) -> ThriftResult<(Vec<StoreMutation>, Option<Durability>)> {
        let ts = ts.map(timestamp).transpose()?;
        let size: usize = mutations
            .iter()
            .map(|m| m.value.as_ref().map_or(0, Vec::len) + m.column.as_ref().map_or(0, Vec::len))
            .sum();
        if size > self.limits.max_row_bytes {
            return Err(illegal_argument(format!("mutation of {size} bytes is over hbase.table.max.rowsize")));
        }
        self.store_mutations(mutations, ts)
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
        let started = Instant::now();
        let name = table_name(table)?;
        let (mut puts, mut deletes) = (Vec::new(), Vec::new());
        for b in batches {
            let (d, p): (Vec<Mutation>, Vec<Mutation>) =
                b.mutations.unwrap_or_default().into_iter().partition(|m| m.is_delete.unwrap_or(false));
            for (ms, half) in [(p, &mut puts), (d, &mut deletes)] {
                if !ms.is_empty() {
                    half.push(BatchMutation::new(b.row.clone(), ms));
                }
            }
        }
        let puts = self.checked_rows(table, puts, ts)?;
        let deletes = self.checked_rows(table, deletes, ts)?;
        if puts.is_empty() && deletes.is_empty() {
            return Ok(());
        }
        let mut result = self.write_rows(table, &name, puts, ts);
        if result.is_ok() {
            result = self.write_rows(table, &name, deletes, ts);
        }
        self.timed(&name, Op::Put, started, result)
    }

    /// Half of a mutateRows call (its puts or its deletes), every row
    /// checked: the rows this server writes as the store's mutations, and
    /// the rows other servers hold (cluster mode), so that a malformed row
    /// refuses the call before anything is written anywhere.
    fn checked_rows(&self, table: &[u8], batches: Vec<BatchMutation>, ts: Option<i64>) -> ThriftResult<CheckedRows> {
        let (batches, remote) = self.split_by_owner(table, batches);
        let mut here = Vec::with_capacity(batches.len());
        for b in batches {
            let (ms, durability) = self.row_mutations(b.mutations.unwrap_or_default(), ts)?;
            if !ms.is_empty() {
                here.push((b.row.unwrap_or_default(), ms, durability));
            }
        }
        for (_, batch) in remote.values() {
            for b in batch {
                self.row_mutations(b.mutations.clone().unwrap_or_default(), ts)?;
            }
        }
        Ok(CheckedRows { here, remote })
    }

    /// Writes checked rows: those other servers hold go to them, one call
    /// per server; this server's go to the store as one batch (HBase's
    /// batchMutate): each region's rows are one WAL record with one sync,
    /// visible only once durable. A row the store refuses (e.g. an unknown
    /// family) fails the call, but the other rows are applied, as HBase
    /// applies them. Rows that asked for writeToWAL=false form their own
    /// SKIP_WAL batch.
    fn write_rows(&self, table: &[u8], name: &str, rows: CheckedRows, ts: Option<i64>) -> ThriftResult<()> {
        let CheckedRows { here: rows, remote } = rows;
        let mut result = Ok(());
        for (owner, (encoded, batch)) in remote {
            let sent = self.router.call(&owner, |c| match ts {
                Some(ts) => c.mutate_rows_ts(table.to_vec(), batch.clone(), ts, BTreeMap::new()),
                None => c.mutate_rows(table.to_vec(), batch.clone(), BTreeMap::new()),
            });
            if let Err(e) = &sent
                && Router::moved(e)
            {
                encoded.iter().for_each(|e| self.router.forget(e));
            }
            result = result.and(sent);
        }
        let refs: Vec<Vec<MutationRef<'_>>> =
            rows.iter().map(|(_, ms, _)| ms.iter().map(StoreMutation::as_ref).collect()).collect();
        for skip in [false, true] {
            let batch: Vec<RowMutations<'_>> = rows
                .iter()
                .zip(&refs)
                .filter(|((_, _, d), _)| d.is_some() == skip)
                .map(|((row, _, _), mutations)| RowMutations { row, mutations })
                .collect();
            if batch.is_empty() {
                continue;
            }
            let durability = skip.then_some(Durability::SkipWal);
            let applied = self.store.mutate_rows(name, &batch, durability).map_err(from_store);
            result = result.and(applied);
        }
        result
    }

    /// The batches this server answers, and per other server the ones it
    /// holds (with the encoded names of their regions), in batch order.
    #[expect(clippy::type_complexity, reason = "a private helper's grouping, named where it is used")]
    fn split_by_owner(
        &self,
        table: &[u8],
        batches: Vec<BatchMutation>,
    ) -> (Vec<BatchMutation>, BTreeMap<String, (Vec<String>, Vec<BatchMutation>)>) {
        if !self.router.is_cluster() {
            return (batches, BTreeMap::new());
        }
        let mut here = Vec::with_capacity(batches.len());
        let mut remote: BTreeMap<String, (Vec<String>, Vec<BatchMutation>)> = BTreeMap::new();
        for b in batches {
            match self.elsewhere(table, b.row.as_deref().unwrap_or_default()) {
                Some((encoded, owner)) => {
                    let entry = remote.entry(owner).or_default();
                    entry.0.push(encoded);
                    entry.1.push(b);
                }
                None => here.push(b),
            }
        }
        (here, remote)
    }

    fn delete(&self, table: &[u8], row: &[u8], column: Option<&[u8]>, ts: Option<i64>) -> ThriftResult<()> {
        let started = Instant::now();
        let table = table_name(table)?;
        let ts = ts.map(timestamp).transpose()?;
        let m = match column.map(parse_column) {
            None => StoreMutation::DeleteRow { timestamp: ts },
            Some(c) => match c.qualifier {
                Some(q) => StoreMutation::DeleteColumn { family: c.family, qualifier: q, timestamp: ts },
                None => StoreMutation::DeleteFamily { family: c.family, timestamp: ts },
            },
        };
        let result = self.store.mutate_row(&table, row, &[m], None).map_err(from_store);
        self.timed(&table, Op::Delete, started, result)
    }

    fn increment_column(&self, table: &[u8], row: &[u8], column: &[u8], amount: i64) -> ThriftResult<i64> {
        let table = table_name(table)?;
        let c = parse_column(column);
        let q = c.qualifier.unwrap_or_default();
        self.store.increment(&table, row, &c.family, &q, amount).map_err(from_store)
    }

    #[expect(clippy::too_many_arguments, reason = "mirrors the fields of HBase's TScan")]
    fn open_scanner(
        &self,
        table: &[u8],
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        prefix: Option<Vec<u8>>,
        columns: &[Vec<u8>],
        ts: Option<i64>,
        filter_string: Option<&[u8]>,
        batch: Option<i32>,
        sort_columns: bool,
        reverse: bool,
        options: ScanAttributes,
    ) -> ThriftResult<ScannerID> {
        let started = Instant::now();
        let table = table_name(table)?;
        let filter = match filter_string.filter(|f| !f.is_empty()) {
            None => None,
            Some(f) => Some(store::read::filter::parse(f).map_err(|e| unparsable_filter("scannerOpenWithScan", e))?),
        };
        // The scan as another server runs a piece of it (cluster mode).
        let remote = RemoteScan {
            scan: TScan::new(
                None,
                None,
                ts,
                columns.to_vec(),
                None,
                filter_string.map(<[u8]>::to_vec),
                batch,
                // Versions come back only as a list (the map holds one).
                options.max_versions > 1,
                false,
            ),
            attributes: options.read_options(),
        };
        let batch = match batch {
            Some(b) if b < 0 => return Err(illegal_argument(format!("batch size must not be negative, got {b}"))),
            Some(b) if b > 0 => Some(b as usize),
            _ => None,
        };
        let start = start.filter(|s| !s.is_empty());
        let stop = stop.filter(|s| !s.is_empty());
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
            prefix,
            reverse,
            columns: parse_columns(columns),
            time_range: options.time_range_before(ts.map(timestamp).transpose()?),
            max_versions: options.max_versions,
            batch,
            limit: None,
            filter,
        };
        let open = match self.pieces_of(&table, &scan, remote)? {
            Some(pieces) => OpenScanner::over_pieces(table.clone(), pieces, sort_columns),
            None => OpenScanner::new(table.clone(), self.store.scan(&table, scan).map_err(from_store)?, sort_columns),
        };
        let id = self.scanners.insert(open).map_err(|limit| io_error(limit.to_string()));
        self.timed(&table, Op::Scan, started, id)
    }

    /// In a cluster, the pieces of `scan` when other servers hold some of
    /// the regions it reads (`cluster_scan.rs`); `None`: the store scans it.
    fn pieces_of(&self, table: &str, scan: &Scan, remote: RemoteScan) -> ThriftResult<Option<PieceScan>> {
        // A scan another server forwarded covers only regions held here.
        if !self.router.is_cluster() || crate::routing::serving_peer() {
            return Ok(None);
        }
        let regions = self.store.region_states(table).map_err(from_store)?;
        let (store, router) = (self.store.clone(), self.router.clone());
        PieceScan::plan(store, router, table.to_string(), scan.clone(), remote, &regions).map_err(scan_error)
    }

    fn scanner_rows(&self, id: ScannerID, n: i32) -> ThriftResult<Vec<TRowResult>> {
        let started = Instant::now();
        if n < 0 {
            return Err(illegal_argument(format!("number of rows must not be negative, got {n}")));
        }
        let n = (n as usize).min(self.limits.max_rows_per_call);
        let scanner = self.scanners.get(id).ok_or_else(|| illegal_argument("scanner ID is invalid"))?;
        let mut s = scanner.lock();
        let result = s.next_rows(n, self.limits.max_result_bytes).map_err(scan_error).and_then(|rows| {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                self.check_row_size(&r)?;
                out.extend(row_result(&r, s.sort_columns));
            }
            Ok(out)
        });
        self.timed(&s.table, Op::Scan, started, result)
    }
}

impl HbaseSyncHandler for ThriftHandler {
    fn handle_enable_table(&self, table_name_: Bytes) -> ThriftResult<()> {
        let name = table_name(&table_name_)?;
        io_only(self.store.enable_table(&name).map_err(from_store).and_then(|()| self.ddl_everywhere(&name, "enabled")))
    }

    fn handle_disable_table(&self, table_name_: Bytes) -> ThriftResult<()> {
        let name = table_name(&table_name_)?;
        io_only(
            self.store.disable_table(&name).map_err(from_store).and_then(|()| self.ddl_everywhere(&name, "disabled")),
        )
    }

    fn handle_is_table_enabled(&self, table_name_: Bytes) -> ThriftResult<bool> {
        io_only(self.store.is_table_enabled(&table_name(&table_name_)?).map_err(from_store))
    }

    fn handle_compact(&self, name: Bytes) -> ThriftResult<()> {
        io_only(self.store.compact_table(&table_name(&name)?, false).map_err(from_store))
    }

    fn handle_major_compact(&self, name: Bytes) -> ThriftResult<()> {
        io_only(self.store.compact_table(&table_name(&name)?, true).map_err(from_store))
    }

    fn handle_get_table_names(&self) -> ThriftResult<Vec<Text>> {
        io_only(Ok(self.store.list_tables().into_iter().map(String::into_bytes).collect()))
    }

    fn handle_get_column_descriptors(&self, table: Text) -> ThriftResult<BTreeMap<Text, ColumnDescriptor>> {
        io_only((|| -> ThriftResult<BTreeMap<Text, ColumnDescriptor>> {
            let desc = self.store.describe_table(&table_name(&table)?).map_err(from_store)?;
            Ok(desc.families.iter().map(|f| (format!("{}:", f.name).into_bytes(), column_descriptor(f))).collect())
        })())
    }

    fn handle_get_table_regions(&self, table: Text) -> ThriftResult<Vec<TRegionInfo>> {
        io_only((|| -> ThriftResult<Vec<TRegionInfo>> {
            let name = table_name(&table)?;
            // HBase answers a missing table with no regions, not an error.
            let regions = match self.store.region_states(&name) {
                Err(store::StoreError::TableNotFound(_)) => Vec::new(),
                other => other.map_err(from_store)?,
            };
            // In a cluster, a region held elsewhere names its owner, as the
            // live servers report it now.
            if self.router.is_cluster() && regions.iter().any(|(_, s)| *s == store::RegionState::Offline) {
                self.router.refresh();
            }
            let owner_of = |r: &store::RegionInfo, state| -> Option<(String, u16)> {
                if state != store::RegionState::Offline || !self.router.is_cluster() {
                    return None;
                }
                let addr: std::net::SocketAddr = self.router.owner(&r.dir_name())?.parse().ok()?;
                Some((addr.ip().to_string(), addr.port()))
            };
            Ok(regions
                .into_iter()
                .map(|(r, state)| match owner_of(&r, state) {
                    Some(at) => self.region_info_at(r, at),
                    None => self.region_info(r),
                })
                .collect())
        })())
    }

    fn handle_create_table(&self, table: Text, column_families: Vec<ColumnDescriptor>) -> ThriftResult<()> {
        let name = table_name(&table)?;
        let mut desc = table_descriptor(&name, &column_families, &self.family_template)?;
        desc.durability = self.table_durability;
        self.store.create_table(desc, &[]).map_err(from_store)?;
        // Every server of a cluster lists it before the call returns.
        self.ddl_everywhere(&name, "created")
    }

    fn handle_delete_table(&self, table: Text) -> ThriftResult<()> {
        let name = table_name(&table)?;
        // In a cluster every server must have the table disabled (its
        // regions flushed) before its files go, and forget it after.
        let result = self
            .ddl_everywhere(&name, "disabled")
            .and_then(|()| self.store.delete_table(&name).map_err(from_store))
            .and_then(|()| self.ddl_everywhere(&name, "deleted"));
        if result.is_ok() {
            // Its latencies join the dropped tables', as its store counters do.
            self.requests.table_dropped(&name);
        }
        io_only(result)
    }

    fn handle_get(&self, table: Text, row: Text, column: Text, attrs: Attributes) -> ThriftResult<Vec<TCell>> {
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.get(table.clone(), row.clone(), column.clone(), attrs.clone()))
        {
            return r;
        }
        io_only(self.cells_of_column(&table, &row, &column, None, 1))
    }

    fn handle_get_ver(
        &self,
        table: Text,
        row: Text,
        column: Text,
        n: i32,
        attrs: Attributes,
    ) -> ThriftResult<Vec<TCell>> {
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.get_ver(table.clone(), row.clone(), column.clone(), n, attrs.clone()))
        {
            return r;
        }
        io_only(self.cells_of_column(&table, &row, &column, None, n))
    }

    fn handle_get_ver_ts(
        &self,
        table: Text,
        row: Text,
        column: Text,
        ts: i64,
        n: i32,
        attrs: Attributes,
    ) -> ThriftResult<Vec<TCell>> {
        if let Some(r) = self
            .forwarded(&table, &row, |c| c.get_ver_ts(table.clone(), row.clone(), column.clone(), ts, n, attrs.clone()))
        {
            return r;
        }
        io_only(self.cells_of_column(&table, &row, &column, Some(ts), n))
    }

    fn handle_get_row(&self, table: Text, row: Text, attrs: Attributes) -> ThriftResult<Vec<TRowResult>> {
        if let Some(r) = self.forwarded(&table, &row, |c| c.get_row(table.clone(), row.clone(), attrs.clone())) {
            return r;
        }
        io_only(self.get_rows(&table, &[row], &[], None))
    }

    fn handle_get_row_with_columns(
        &self,
        table: Text,
        row: Text,
        columns: Vec<Text>,
        attrs: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        if let Some(r) = self.forwarded(&table, &row, |c| {
            c.get_row_with_columns(table.clone(), row.clone(), columns.clone(), attrs.clone())
        }) {
            return r;
        }
        io_only(self.get_rows(&table, &[row], &columns, None))
    }

    fn handle_get_row_ts(&self, table: Text, row: Text, ts: i64, attrs: Attributes) -> ThriftResult<Vec<TRowResult>> {
        if let Some(r) = self.forwarded(&table, &row, |c| c.get_row_ts(table.clone(), row.clone(), ts, attrs.clone())) {
            return r;
        }
        io_only(self.get_rows(&table, &[row], &[], Some(ts)))
    }

    fn handle_get_row_with_columns_ts(
        &self,
        table: Text,
        row: Text,
        columns: Vec<Text>,
        ts: i64,
        attrs: Attributes,
    ) -> ThriftResult<Vec<TRowResult>> {
        if let Some(r) = self.forwarded(&table, &row, |c| {
            c.get_row_with_columns_ts(table.clone(), row.clone(), columns.clone(), ts, attrs.clone())
        }) {
            return r;
        }
        io_only(self.get_rows(&table, &[row], &columns, Some(ts)))
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

    fn handle_mutate_row(
        &self,
        table: Text,
        row: Text,
        mutations: Vec<Mutation>,
        attrs: Attributes,
    ) -> ThriftResult<()> {
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.mutate_row(table.clone(), row.clone(), mutations.clone(), attrs.clone()))
        {
            return r;
        }
        self.mutate(&table, &row, mutations, None)
    }

    fn handle_mutate_row_ts(
        &self,
        table: Text,
        row: Text,
        mutations: Vec<Mutation>,
        ts: i64,
        attrs: Attributes,
    ) -> ThriftResult<()> {
        if let Some(r) = self.forwarded(&table, &row, |c| {
            c.mutate_row_ts(table.clone(), row.clone(), mutations.clone(), ts, attrs.clone())
        }) {
            return r;
        }
        self.mutate(&table, &row, mutations, Some(ts))
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
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.atomic_increment(table.clone(), row.clone(), column.clone(), value))
        {
            return r;
        }
        self.increment_column(&table, &row, &column, value)
    }

    fn handle_delete_all(&self, table: Text, row: Text, column: Text, attrs: Attributes) -> ThriftResult<()> {
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.delete_all(table.clone(), row.clone(), column.clone(), attrs.clone()))
        {
            return r;
        }
        io_only(self.delete(&table, &row, Some(&column), None))
    }

    fn handle_delete_all_ts(
        &self,
        table: Text,
        row: Text,
        column: Text,
        ts: i64,
        attrs: Attributes,
    ) -> ThriftResult<()> {
        if let Some(r) = self
            .forwarded(&table, &row, |c| c.delete_all_ts(table.clone(), row.clone(), column.clone(), ts, attrs.clone()))
        {
            return r;
        }
        io_only(self.delete(&table, &row, Some(&column), Some(ts)))
    }

    fn handle_delete_all_row(&self, table: Text, row: Text, attrs: Attributes) -> ThriftResult<()> {
        if let Some(r) = self.forwarded(&table, &row, |c| c.delete_all_row(table.clone(), row.clone(), attrs.clone())) {
            return r;
        }
        io_only(self.delete(&table, &row, None, None))
    }

    fn handle_increment(&self, inc: TIncrement) -> ThriftResult<()> {
        io_only((|| -> ThriftResult<()> {
            let table = inc.table.ok_or_else(|| illegal_argument("increment without a table"))?;
            let row = inc.row.ok_or_else(|| illegal_argument("increment without a row"))?;
            let column = inc.column.ok_or_else(|| illegal_argument("increment without a column"))?;
            let amount = inc.ammount;
            if let Some(r) = self.forwarded(&table, &row, |c| {
                c.increment(TIncrement::new(table.clone(), row.clone(), column.clone(), amount))
            }) {
                return r;
            }
            self.increment_column(&table, &row, &column, inc.ammount.unwrap_or(1)).map(|_| ())
        })())
    }

    fn handle_increment_rows(&self, increments: Vec<TIncrement>) -> ThriftResult<()> {
        io_only(increments.into_iter().try_for_each(|i| self.handle_increment(i)))
    }

    fn handle_delete_all_row_ts(&self, table: Text, row: Text, ts: i64, attrs: Attributes) -> ThriftResult<()> {
        if let Some(r) =
            self.forwarded(&table, &row, |c| c.delete_all_row_ts(table.clone(), row.clone(), ts, attrs.clone()))
        {
            return r;
        }
        io_only(self.delete(&table, &row, None, Some(ts)))
    }

    fn handle_scanner_open_with_scan(&self, table: Text, scan: TScan, attrs: Attributes) -> ThriftResult<ScannerID> {
        let reverse = scan.reversed.unwrap_or(false);
        let options = ScanAttributes::parse(&attrs).map_err(|e| illegal_argument(e.to_string()));
        io_only(options.and_then(|options| {
            self.open_scanner(
                &table,
                scan.start_row,
                scan.stop_row,
                None,
                scan.columns.as_deref().unwrap_or_default(),
                scan.timestamp,
                scan.filter_string.as_deref(),
                scan.batch_size,
                scan.sort_columns.unwrap_or(false),
                reverse,
                options,
            )
        }))
    }

    fn handle_scanner_open(
        &self,
        table: Text,
        start: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        io_only(self.open_scanner(
            &table,
            Some(start),
            None,
            None,
            &columns,
            None,
            None,
            None,
            false,
            false,
            ScanAttributes::default(),
        ))
    }

    fn handle_scanner_open_with_stop(
        &self,
        table: Text,
        start: Text,
        stop: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        io_only(self.open_scanner(
            &table,
            Some(start),
            Some(stop),
            None,
            &columns,
            None,
            None,
            None,
            false,
            false,
            ScanAttributes::default(),
        ))
    }

    fn handle_scanner_open_with_prefix(
        &self,
        table: Text,
        prefix: Text,
        columns: Vec<Text>,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        io_only(self.open_scanner(
            &table,
            None,
            None,
            Some(prefix),
            &columns,
            None,
            None,
            None,
            false,
            false,
            ScanAttributes::default(),
        ))
    }

    fn handle_scanner_open_ts(
        &self,
        table: Text,
        start: Text,
        columns: Vec<Text>,
        ts: i64,
        _: Attributes,
    ) -> ThriftResult<ScannerID> {
        io_only(self.open_scanner(
            &table,
            Some(start),
            None,
            None,
            &columns,
            Some(ts),
            None,
            None,
            false,
            false,
            ScanAttributes::default(),
        ))
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
        io_only(self.open_scanner(
            &table,
            Some(start),
            Some(stop),
            None,
            &columns,
            Some(ts),
            None,
            None,
            false,
            false,
            ScanAttributes::default(),
        ))
    }

    fn handle_scanner_get(&self, id: ScannerID) -> ThriftResult<Vec<TRowResult>> {
        self.scanner_rows(id, 1)
    }

    fn handle_scanner_get_list(&self, id: ScannerID, nb_rows: i32) -> ThriftResult<Vec<TRowResult>> {
        self.scanner_rows(id, nb_rows)
    }

    fn handle_scanner_close(&self, id: ScannerID) -> ThriftResult<()> {
        if self.scanners.remove(id) { Ok(()) } else { Err(illegal_argument("scanner ID is invalid")) }
    }

    fn handle_get_row_or_before(&self, table: Text, row: Text, family: Text) -> ThriftResult<Vec<TCell>> {
        io_only((|| -> ThriftResult<Vec<TCell>> {
            let started = Instant::now();
            let name = table_name(&table)?;
            let scan = Scan {
                start: Some(row),
                reverse: true,
                columns: vec![parse_column(&family)],
                limit: Some(1),
                ..Scan::default()
            };
            let cells = self
                .store
                .scan(&name, scan)
                .and_then(|mut scanner| scanner.next().transpose())
                .map(Option::unwrap_or_default)
                .map_err(from_store);
            let cells = self.timed(&name, Op::Get, started, cells)?;
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
            let regions = self.store.table_regions(table).map_err(from_store)?;
            let r = regions
                .into_iter()
                .find(|r| r.contains(key.as_bytes()))
                .ok_or_else(|| io_error(format!("no region of {table} holds {key:?}")))?;
            Ok(self.region_info(r))
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
            if let Some(r) = self.forwarded(&table, &row, |c| {
                c.append(TAppend::new(table.clone(), row.clone(), columns.clone(), values.clone()))
            }) {
                return r;
            }
            let name = table_name(&table)?;
            let mut out = Vec::new();
            for (column, suffix) in columns.iter().zip(values) {
                let c = parse_column(column);
                // "f" alone means the empty qualifier here.
                let q = c.qualifier.clone().unwrap_or_default();
                let value = self.store.append(&name, &row, &c.family, &q, &suffix).map_err(from_store)?;
                out.push(TCell::new(value, None));
            }
            Ok(out)
        })())
    }

    fn handle_check_and_put(
        &self,
        table: Text,
        row: Text,
        column: Text,
        value: Text,
        mput: Mutation,
        attrs: Attributes,
    ) -> ThriftResult<bool> {
        if let Some(r) = self.forwarded(&table, &row, |c| {
            c.check_and_put(table.clone(), row.clone(), column.clone(), value.clone(), mput.clone(), attrs.clone())
        }) {
            return r;
        }
        let name = table_name(&table)?;
        let c = parse_column(&column);
        let (ms, _) = self.store_mutations(vec![mput], None)?;
        let expected = (!value.is_empty()).then_some(value.as_slice());
        self.store
            .check_and_mutate(&name, &row, &c.family, &c.qualifier.unwrap_or_default(), expected, &ms)
            .map_err(from_store)
    }
}

/// Half of a mutateRows call, checked (see `ThriftHandler::checked_rows`):
/// this server's rows with their mutations and durability, and per other
/// server the rows it holds (with their regions' encoded names).
struct CheckedRows {
    here: Vec<(Vec<u8>, Vec<StoreMutation>, Option<Durability>)>,
    remote: BTreeMap<String, (Vec<String>, Vec<BatchMutation>)>,
}

impl CheckedRows {
    fn is_empty(&self) -> bool {
        self.here.is_empty() && self.remote.is_empty()
    }
}
