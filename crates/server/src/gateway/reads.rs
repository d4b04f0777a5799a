//! The gateway's reads: gets of one row or many, the row at or before a
//! key, and scanners (open, next rows, close).

use std::time::Instant;

use memstore::Cell;
use store::{Column, Get, Scan};

use super::{Gateway, GatewayError, GatewayResult, Placement, ScanRequest, ScannedRows};
use crate::gateway::result_size::{encoded_row_bytes, row_bytes};
use crate::peer::cluster_scan::PieceScan;
use crate::peer::forward;
use crate::request_metrics::Op;
use crate::scanners::OpenScanner;

impl Gateway {
    /// One row's cells. A read on another server is timed there.
    pub fn get(&self, table: &str, request: Get) -> GatewayResult<Vec<Cell>> {
        if let Some(r) = self.forwarded(table, &request.row, |c| forward::get(c, table, &request)) {
            return r;
        }
        let started = Instant::now();
        let result = self.get_here(table, request);
        self.timed(table, Op::Get, started, result)
    }

    /// One row's cells when this server can answer at once from memory
    /// (the memstores and cached blocks), with no wait on a file, a peer
    /// or a region's split; `None`: do the read with [`Self::get`].
    pub fn get_from_memory(&self, table: &str, request: &Get) -> GatewayResult<Option<Vec<Cell>>> {
        if !matches!(self.placement(table, &request.row), Placement::Here) {
            return Ok(None);
        }
        let started = Instant::now();
        let Some(cells) = self.store.get_from_memory(table, request)? else {
            return Ok(None);
        };
        self.check_row_size(&cells)?;
        self.timed(table, Op::Get, started, Ok(cells)).map(Some)
    }

    fn get_here(&self, table: &str, request: Get) -> GatewayResult<Vec<Cell>> {
        let cells = self.store.get(table, &request)?;
        self.check_row_size(&cells)?;
        Ok(cells)
    }

    /// Several rows (one version of each column), each read where it is
    /// held; a row that does not exist has no entry. Refused when more rows
    /// are asked for than one call may return, or when the rows hold more
    /// than one answer may (`max_result_bytes`).
    pub fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        columns: &[Column],
        time_range: memstore::TimeRange,
    ) -> GatewayResult<Vec<Vec<Cell>>> {
        let started = Instant::now();
        if rows.len() > self.limits.max_rows_per_call {
            return Err(GatewayError::IllegalArgument(format!(
                "{} rows in one call; at most {}",
                rows.len(),
                self.limits.max_rows_per_call
            )));
        }
        let result = (|| {
            let mut out = Vec::with_capacity(rows.len());
            let mut bytes = 0usize;
            for row in rows {
                let request = Get { row: row.clone(), columns: columns.to_vec(), time_range, max_versions: 1 };
                let cells = match self.forwarded(table, row, |c| forward::get(c, table, &request)) {
                    Some(found) => found?,
                    None => self.get_here(table, request)?,
                };
                bytes += row_bytes(&cells);
                if bytes > self.limits.max_result_bytes {
                    return Err(GatewayError::ResultTooBig { limit: self.limits.max_result_bytes });
                }
                if !cells.is_empty() {
                    out.push(cells);
                }
            }
            Ok(out)
        })();
        if rows.is_empty() {
            // Nothing was read: the table may not even exist.
            return result;
        }
        self.timed(table, Op::Get, started, result)
    }

    /// The cells of `family` in the last row at or before `row` (HBase's
    /// `getRowOrBefore`), read here.
    pub fn row_or_before(&self, table: &str, row: Vec<u8>, family: Column) -> GatewayResult<Vec<Cell>> {
        let started = Instant::now();
        let scan = Scan { start: Some(row), reverse: true, columns: vec![family], limit: Some(1), ..Scan::default() };
        let cells = self
            .store
            .scan(table, scan)
            .and_then(|mut scanner| scanner.next().transpose())
            .map(Option::unwrap_or_default)
            .map_err(GatewayError::from);
        self.timed(table, Op::Get, started, cells)
    }

    /// Opens a scanner; its id is what [`Self::scanner_rows`] and
    /// [`Self::close_scanner`] take.
    pub fn open_scanner(&self, table: &str, request: ScanRequest) -> GatewayResult<i32> {
        let started = Instant::now();
        let mut scan = request.scan.clone();
        scan.filter = match request.filter.as_deref().filter(|f| !f.is_empty()) {
            None => None,
            Some(f) => Some(store::read::filter::parse(f).map_err(|e| GatewayError::UnparsableFilter(e.to_string()))?),
        };
        let sorted = request.sorted_columns;
        let open = match self.pieces_of(table, &scan, &request)? {
            Some(pieces) => OpenScanner::over_pieces(table.to_string(), pieces, sorted),
            None => OpenScanner::new(table.to_string(), self.store.scan(table, scan)?, sorted),
        };
        let id = self.scanners.insert(open).map_err(|limit| GatewayError::ScannerLimit(limit.to_string()));
        self.timed(table, Op::Scan, started, id)
    }

    /// In a cluster, the pieces of `scan` when other servers hold some of
    /// the regions it reads (`peer::cluster_scan`); `None`: the store scans
    /// it.
    fn pieces_of(&self, table: &str, scan: &Scan, request: &ScanRequest) -> GatewayResult<Option<PieceScan>> {
        // A scan another server forwarded covers only regions held here.
        if !self.router.is_cluster() || crate::peer::routing::serving_peer() {
            return Ok(None);
        }
        let regions = self.store.region_states(table)?;
        let remote = forward::remote_scan(request);
        let (store, router) = (self.store.clone(), self.router.clone());
        PieceScan::plan(store, router, table.to_string(), scan.clone(), remote, &regions)
    }

    /// Up to `n` more results of scanner `id` (fewer when they reach the
    /// result size limit; none at the end of the scan).
    pub fn scanner_rows(&self, id: i32, n: usize) -> GatewayResult<ScannedRows> {
        let started = Instant::now();
        let n = n.min(self.limits.max_rows_per_call);
        let scanner = self.scanners.get(id).ok_or(GatewayError::UnknownScanner)?;
        let mut s = scanner.lock();
        let result = s.next_rows(n, self.limits.max_result_bytes).and_then(|rows| {
            rows.iter().try_for_each(|r| self.check_row_bytes(encoded_row_bytes(r)))?;
            Ok(ScannedRows { rows, sorted_columns: s.sort_columns })
        });
        self.timed(&s.table, Op::Scan, started, result)
    }

    /// Closes scanner `id`.
    pub fn close_scanner(&self, id: i32) -> GatewayResult<()> {
        if self.scanners.remove(id) { Ok(()) } else { Err(GatewayError::UnknownScanner) }
    }
}
