//! `ClientService.Scan`: hbase-client scans a table region by region. The
//! first call of each region opens a scanner with the client's `Scan` and
//! the region; later calls name the scanner id for the next results, renew
//! its lease or close it.
//!
//! Invariants:
//! * A scanner reads only its region: the scan's range is clamped to the
//!   region's keys, and when the region has no more rows the response says
//!   `more_results_in_region: false` and the scanner is closed here (the
//!   client then opens the next region, as with HBase's region servers).
//! * One call returns at most `number_of_rows` results (the client's
//!   caching) and stops once they reach the scan's `max_result_size` (the
//!   client's 2 MB). To tell "the region is done" from "the answer is
//!   full", one result is read ahead and kept for the next call.
//! * `hbase:meta` is answered whole in one response (see `meta`).
//! * Scanner ids are the gateway's (its lease applies: 60 s idle).
//!
//! Thread safety: `Scans` holds each open scanner's read-ahead under one
//! mutex, taken out of the map for the length of a call and put back after,
//! so no lock is held across a gateway call. The client never overlaps
//! calls on one scanner; one that did would find it missing
//! (`UnknownScannerException`), never corrupt it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hbase_rpc::pb::hbase::pb::{self as pb, ScanRequest as PbScanRequest, ScanResponse};
use hbase_rpc::{Call, Cell as WireCell, Reply, RpcError};
use memstore::RowCells;
use parking_lot::Mutex;
use store::{RegionInfo, Scan};

use super::cells::{RowsCellBlock, result, wire_cell};
use super::client::{columns, time_range};
use super::errors::from_gateway;

/// Rows of a meta scan whose servers are looked up fresh when the request
/// does not say how many rows it takes (HBase's
/// `hbase.client.locate.prefetch.limit`), and the most a request's caching
/// may ask for (one question to the master's catalog each).
const META_FRESH_ROWS: usize = 10;
const MAX_META_FRESH_ROWS: usize = 100;
use super::filters::filter_text;
use super::{RpcAdapter, Target};
use crate::gateway::ScanRequest;
use crate::gateway::result_size::encoded_row_bytes;

/// The lease the client is told (the gateway's scanner lease).
const LEASE_MS: u32 = 60_000;
/// Read-aheads of scanners untouched this long are dropped (the gateway
/// has closed their scanners by then).
const STALE: Duration = Duration::from_secs(120);
/// The answer size when the client names none (its own default).
const DEFAULT_MAX_RESULT_BYTES: usize = 2 << 20;
/// The scanner id of a (one-shot) scan of `hbase:meta`.
const META_SCANNER: u64 = u64::MAX;

struct OpenScan {
    region: RegionInfo,
    scan: pb::Scan,
    /// The result read ahead of the last answer.
    ahead: Option<RowCells>,
    /// Results returned so far, against the scan's limit.
    returned: u64,
    limit: Option<u64>,
    max_bytes: usize,
    last_used: Instant,
}

/// The open scanners' read-ahead, by scanner id.
#[derive(Default)]
pub struct Scans {
    open: Mutex<HashMap<u64, OpenScan>>,
}

/// The store's scan for the part of `scan` that lies in `region`.
pub fn region_scan(scan: &pb::Scan, region: &RegionInfo, limit: Option<u64>) -> Result<Scan, RpcError> {
    let reverse = scan.reversed.unwrap_or(false);
    let start = scan.start_row.as_deref().filter(|s| !s.is_empty());
    let stop = scan.stop_row.as_deref().filter(|s| !s.is_empty());
    let (rs, re) = (&region.start_key[..], &region.end_key[..]);
    let mut out = Scan {
        reverse,
        columns: columns(&scan.column),
        time_range: time_range(scan.time_range.as_ref()),
        max_versions: scan.max_versions.unwrap_or(1).max(1),
        batch: scan.batch_size.filter(|&b| b > 0).map(|b| b as usize),
        limit,
        ..Scan::default()
    };
    let (include_start, include_stop) =
        (scan.include_start_row.unwrap_or(true), scan.include_stop_row.unwrap_or(false));
    if !reverse {
        // Up from max(start, region start), to min(stop, region end).
        match start {
            Some(s) if s >= rs => (out.start, out.start_inclusive) = (Some(s.to_vec()), include_start),
            _ => (out.start, out.start_inclusive) = ((!rs.is_empty()).then(|| rs.to_vec()), true),
        }
        match stop {
            Some(s) if re.is_empty() || s <= re => (out.stop, out.stop_inclusive) = (Some(s.to_vec()), include_stop),
            _ => (out.stop, out.stop_inclusive) = ((!re.is_empty()).then(|| re.to_vec()), false),
        }
    } else {
        // Down from min(start, below region end), to max(stop, region start).
        match start {
            Some(s) if re.is_empty() || s < re => (out.start, out.start_inclusive) = (Some(s.to_vec()), include_start),
            _ => (out.start, out.start_inclusive) = ((!re.is_empty()).then(|| re.to_vec()), false),
        }
        match stop {
            Some(s) if s >= rs => (out.stop, out.stop_inclusive) = (Some(s.to_vec()), include_stop),
            _ => (out.stop, out.stop_inclusive) = ((!rs.is_empty()).then(|| rs.to_vec()), true),
        }
    }
    Ok(out)
}

/// Whether the scan goes on past `region` once the region is done.
fn continues_past(scan: &pb::Scan, region: &RegionInfo) -> bool {
    let stop = scan.stop_row.as_deref().filter(|s| !s.is_empty());
    if scan.reversed.unwrap_or(false) {
        !region.start_key.is_empty() && stop.is_none_or(|s| s < &region.start_key[..])
    } else {
        !region.end_key.is_empty() && stop.is_none_or(|s| s > &region.end_key[..])
    }
}

/// A scan response carrying `rows`: in the cell block or the message.
/// The response carrying `rows`, each cell made a wire cell by `wire`
/// (straight into the cell block, without a vector per row).
fn response<C>(rows: Vec<Vec<C>>, cell_block: bool, wire: impl Fn(C) -> WireCell) -> (ScanResponse, Vec<WireCell>) {
    // Sized once: grown from empty, a scan's thousand cells were moved
    // through a dozen ever larger vectors (the last ones mapped and
    // unmapped by malloc, each page faulted in anew).
    let mut block = Vec::with_capacity(if cell_block { rows.iter().map(Vec::len).sum() } else { 0 });
    let mut out = ScanResponse { ttl: Some(LEASE_MS), stale: Some(false), ..Default::default() };
    for row in rows {
        if cell_block {
            out.cells_per_result.push(row.len() as u32);
            out.partial_flag_per_result.push(false);
            block.extend(row.into_iter().map(&wire));
        } else {
            out.results.push(result(row.into_iter().map(&wire).collect(), false, &mut block));
        }
    }
    (out, block)
}

/// The response carrying `rows` as the scan read them: in the cell block
/// they are written from their buffers ([`RowsCellBlock`]); a client that
/// takes no cell block gets them in the message.
fn rows_response(rows: Vec<RowCells>, cell_block: bool) -> (ScanResponse, RowsCellBlock) {
    if !cell_block {
        let owned = rows.iter().map(RowCells::to_cells).collect();
        let (out, _) = response(owned, false, wire_cell);
        return (out, RowsCellBlock(Vec::new()));
    }
    let mut out = ScanResponse { ttl: Some(LEASE_MS), stale: Some(false), ..Default::default() };
    for row in &rows {
        out.cells_per_result.push(row.len() as u32);
        out.partial_flag_per_result.push(false);
    }
    (out, RowsCellBlock(rows))
}

impl RpcAdapter {
    pub(super) fn scan(&self, call: &Call) -> Result<Reply, RpcError> {
        let request: PbScanRequest = call.decode()?;
        if let Some(scan) = &request.scan {
            let spec = request.region.as_ref().ok_or_else(|| RpcError::do_not_retry("a scan names no region"))?;
            return match self.target(spec)? {
                Target::Meta => self.scan_meta(scan, &request, call.cell_block_supported),
                Target::Region(region) => self
                    .open_scan(scan.clone(), region.clone(), &request, call.cell_block_supported)
                    .map_err(|e| self.redirected(&region, e)),
            };
        }
        let id = request
            .scanner_id
            .ok_or_else(|| RpcError::do_not_retry("a scan call names neither a scan nor a scanner"))?;
        if request.close_scanner.unwrap_or(false) {
            // Closing a scanner that is already closed (its region ran out,
            // its lease expired, a meta scan) is not an error to the client.
            self.scans.open.lock().remove(&id);
            if id != META_SCANNER {
                let _ = self.gateway.close_scanner(id as i32);
            }
            return Ok(Reply::new(&ScanResponse {
                scanner_id: Some(id),
                more_results: Some(false),
                ..Default::default()
            }));
        }
        let open = self
            .scans
            .open
            .lock()
            .remove(&id)
            .ok_or_else(|| RpcError::unknown_scanner(format!("Unknown scanner '{id}'")))?;
        if request.renew.unwrap_or(false) {
            // Touching the gateway's scanner restarts its lease.
            self.gateway.scanner_rows(id as i32, 0).map_err(from_gateway)?;
            self.scans.open.lock().insert(id, OpenScan { last_used: Instant::now(), ..open });
            return Ok(Reply::new(&ScanResponse {
                scanner_id: Some(id),
                more_results: Some(true),
                ttl: Some(LEASE_MS),
                ..Default::default()
            }));
        }
        self.next_results(id, open, request.number_of_rows, call.cell_block_supported)
    }

    fn scan_meta(&self, scan: &pb::Scan, request: &PbScanRequest, cell_block: bool) -> Result<Reply, RpcError> {
        let limit = request.limit_of_rows.filter(|&l| l > 0).map(|l| l as usize);
        // The rows a client takes into its location cache: its caching.
        let fresh_rows = request.number_of_rows.filter(|&n| n > 0).map_or(META_FRESH_ROWS, |n| n as usize);
        let rows = self.meta_scan(scan, limit, fresh_rows.min(MAX_META_FRESH_ROWS))?;
        let (mut out, block) = response(rows, cell_block, |c| c);
        out.scanner_id = Some(META_SCANNER);
        out.more_results = Some(false);
        out.more_results_in_region = Some(false);
        Ok(Reply::with_cells(&out, block))
    }

    fn open_scan(
        &self,
        scan: pb::Scan,
        region: RegionInfo,
        request: &PbScanRequest,
        cell_block: bool,
    ) -> Result<Reply, RpcError> {
        let filter = scan.filter.as_ref().map(filter_text).transpose()?.flatten();
        let limit = request.limit_of_rows.filter(|&l| l > 0).map(u64::from);
        let store_scan = region_scan(&scan, &region, limit)?;
        let gateway_request = ScanRequest { scan: store_scan, filter, sorted_columns: false };
        let id = self.gateway.open_scanner(&region.table, gateway_request).map_err(from_gateway)? as u32 as u64;
        let max_bytes = scan.max_result_size.filter(|&b| b > 0).map_or(DEFAULT_MAX_RESULT_BYTES, |b| b as usize);
        self.scans.open.lock().retain(|_, s| s.last_used.elapsed() < STALE);
        let open = OpenScan { region, scan, ahead: None, returned: 0, limit, max_bytes, last_used: Instant::now() };
        if request.close_scanner.unwrap_or(false) {
            let reply = self.next_results(id, open, request.number_of_rows, cell_block);
            self.scans.open.lock().remove(&id);
            let _ = self.gateway.close_scanner(id as i32);
            return reply;
        }
        self.next_results(id, open, request.number_of_rows, cell_block)
    }

    /// The next results of scanner `id` (see the module's invariants).
    fn next_results(
        &self,
        id: u64,
        mut open: OpenScan,
        number_of_rows: Option<u32>,
        cell_block: bool,
    ) -> Result<Reply, RpcError> {
        let max_rows = self.gateway.limits().max_rows_per_call;
        let mut want = number_of_rows.map_or(max_rows, |n| (n as usize).min(max_rows)).max(1);
        if let Some(limit) = open.limit {
            want = want.min(limit.saturating_sub(open.returned) as usize);
        }
        let gid = id as i32;
        let mut rows: Vec<RowCells> = Vec::new();
        let mut bytes = 0;
        if want > 0
            && let Some(row) = open.ahead.take()
        {
            bytes += encoded_row_bytes(&row);
            rows.push(row);
        }
        let mut exhausted = want == 0;
        while !exhausted && rows.len() < want && bytes < open.max_bytes {
            let got = self.gateway.scanner_rows(gid, want - rows.len()).map_err(from_gateway)?.rows;
            if got.is_empty() {
                exhausted = true;
            }
            for row in got {
                bytes += encoded_row_bytes(&row);
                rows.push(row);
            }
        }
        open.returned += rows.len() as u64;
        let limit_reached = open.limit.is_some_and(|l| open.returned >= l);
        // A scan at its limit is closed below: a row read ahead would be
        // read for nothing (YCSB E's every scan ends at its limit).
        if !exhausted && !limit_reached && open.ahead.is_none() {
            match self.gateway.scanner_rows(gid, 1).map_err(from_gateway)?.rows.pop() {
                Some(row) => open.ahead = Some(row),
                None => exhausted = true,
            }
        }
        let (mut out, block) = rows_response(rows, cell_block);
        out.scanner_id = Some(id);
        if exhausted || limit_reached {
            out.more_results_in_region = Some(false);
            out.more_results = Some(!limit_reached && continues_past(&open.scan, &open.region));
            let _ = self.gateway.close_scanner(gid);
        } else {
            out.more_results_in_region = Some(true);
            out.more_results = Some(true);
            open.last_used = Instant::now();
            self.scans.open.lock().insert(id, open);
        }
        Ok(Reply::with_cells(&out, block))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn region(start: &[u8], end: &[u8]) -> RegionInfo {
        RegionInfo {
            id: 1,
            table: "t".into(),
            start_key: start.to_vec(),
            end_key: end.to_vec(),
            parent: None,
            merged_from: vec![],
        }
    }

    fn scan(start: &'static [u8], stop: &'static [u8], reversed: bool) -> pb::Scan {
        pb::Scan {
            start_row: Some(Bytes::from_static(start)),
            stop_row: Some(Bytes::from_static(stop)),
            reversed: Some(reversed),
            ..Default::default()
        }
    }

    #[test]
    fn a_forward_scan_is_clamped_to_the_region() {
        let s = region_scan(&scan(b"a", b"z", false), &region(b"g", b"p"), None).unwrap();
        assert_eq!((s.start.as_deref(), s.start_inclusive), (Some(&b"g"[..]), true));
        assert_eq!((s.stop.as_deref(), s.stop_inclusive), (Some(&b"p"[..]), false));
        let s = region_scan(&scan(b"h", b"k", false), &region(b"g", b"p"), Some(3)).unwrap();
        assert_eq!((s.start.as_deref(), s.stop.as_deref(), s.limit), (Some(&b"h"[..]), Some(&b"k"[..]), Some(3)));
        assert!(continues_past(&scan(b"a", b"", false), &region(b"g", b"p")));
        assert!(!continues_past(&scan(b"a", b"k", false), &region(b"g", b"p")));
        assert!(!continues_past(&scan(b"a", b"", false), &region(b"g", b"")));
    }

    #[test]
    fn a_reversed_scan_is_clamped_to_the_region() {
        let s = region_scan(&scan(b"z", b"a", true), &region(b"g", b"p"), None).unwrap();
        assert_eq!((s.start.as_deref(), s.start_inclusive), (Some(&b"p"[..]), false));
        assert_eq!((s.stop.as_deref(), s.stop_inclusive), (Some(&b"g"[..]), true));
        let s = region_scan(&scan(b"k", b"h", true), &region(b"g", b"p"), None).unwrap();
        assert_eq!(
            (s.start.as_deref(), s.start_inclusive, s.stop.as_deref(), s.stop_inclusive),
            (Some(&b"k"[..]), true, Some(&b"h"[..]), false)
        );
        assert!(s.reverse);
        assert!(continues_past(&scan(b"z", b"", true), &region(b"g", b"p")));
        assert!(!continues_past(&scan(b"z", b"", true), &region(b"", b"p")));
    }
}
