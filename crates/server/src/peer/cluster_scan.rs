//! A Thrift scan over a table whose regions are held by several servers
//! (cluster mode): the scan's key range is cut at region boundaries into
//! pieces, read in key order — a run of regions held here through the
//! store's own scanner, bounded to the run, and a region held elsewhere
//! through a scanner on its owner's Thrift port, bounded to the region — so
//! no server is asked for a row it does not hold. HBase's client scans
//! region by region the same way.
//!
//! A piece is opened only when the scan reaches it, so the owner of a
//! region is looked up (`routing.rs`) when its rows are wanted: a region
//! that moved meanwhile is read where it is now. A filter runs on each
//! piece separately (its state, a PageFilter's count, is per piece, as it
//! is per region in HBase). A reverse scan reads the pieces from the last
//! down; each piece `[a, b)` is then read from just below `b` (an exclusive
//! start row) down to `a` (an inclusive stop row), as HBase's reversed
//! client scanner moves from region to region with `withStartRow(end,
//! false)`. Thrift v1 has no such flags, so a remote piece carries them as
//! scan attributes (`scan_attributes.rs`), which any client may use and
//! real HBase ignores; the scan's versions and time range go the same way.
//!
//! Thread safety: one `PieceScan` is used by one Thrift call at a time (its
//! `OpenScanner`'s mutex); the connection to a remote piece's owner is its
//! own, so the remote scanner closes with it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use memstore::Cell;
use store::{RegionState, Scan, Store};

use crate::gateway::error::GatewayError;
use crate::peer::forward::RemoteScan;
use crate::peer::routing::Router;
use crate::scan_attributes::{START_EXCLUSIVE, STOP_INCLUSIVE};
use crate::thrift::client::{THbaseSyncClient, ThriftClient};

/// Rows asked of a remote scanner per call.
const REMOTE_BATCH: i32 = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Here { start: Vec<u8>, stop: Vec<u8> },
    Elsewhere { region: String, start: Vec<u8>, stop: Vec<u8> },
}

enum Current {
    Here(Box<store::read::scanner::Scanner>),
    Elsewhere { region: String, owner: String, client: ThriftClient, id: i32, rows: VecDeque<Vec<Cell>>, done: bool },
}

/// The pieces of a scan being read; see the module doc.
pub struct PieceScan {
    store: Arc<Store>,
    router: Arc<Router>,
    table: String,
    /// The scan as the store runs it; each local piece narrows its bounds.
    local: Scan,
    /// The scan as a remote owner runs it; each remote piece sets its bounds.
    remote: RemoteScan,
    pieces: VecDeque<Piece>,
    current: Option<Current>,
    /// The scan's whole key range `[lo, hi)`, for a re-plan.
    range: (Vec<u8>, Vec<u8>),
    /// The key of the last whole row returned (`None`: none yet, or the
    /// scan returns rows in parts, which cannot be resumed).
    last_row: Option<Vec<u8>>,
    /// Rows come in parts (a batch size): a failed piece is not resumed.
    partial_rows: bool,
}

impl PieceScan {
    /// The pieces of `local`'s range over `regions` (in key order, with their
    /// states), or `None` when every region it touches is held here.
    pub fn plan(
        store: Arc<Store>,
        router: Arc<Router>,
        table: String,
        local: Scan,
        remote: RemoteScan,
        regions: &[(store::RegionInfo, RegionState)],
    ) -> Result<Option<PieceScan>, GatewayError> {
        let (lo, hi) = bounds(&local);
        let mut pieces: VecDeque<Piece> = pieces(regions, &lo, &hi).into();
        // An empty range reads nothing, wherever its key lies (a piece
        // [k, k) sent on would be read there as a get of k).
        let empty = !hi.is_empty() && lo >= hi;
        if !empty && !pieces.iter().any(|p| matches!(p, Piece::Elsewhere { .. })) {
            return Ok(None);
        }
        if local.reverse {
            pieces = pieces.into_iter().rev().collect();
        }
        let partial_rows = local.batch.is_some() || remote.scan.batch_size.is_some_and(|b| b > 0);
        Ok(Some(PieceScan {
            store,
            router,
            table,
            local,
            remote,
            pieces,
            current: None,
            range: (lo, hi),
            last_row: None,
            partial_rows,
        }))
    }

    /// The next row (or piece of a row, with a batch size), in key order.
    ///
    /// A piece that fails because its region is moving (closed, splitting,
    /// its owner gone: what a retry fixes) is not the scan's end: as
    /// HBase's client scanner does, the rest of the range, from just past
    /// the last row returned, is cut again at the regions as they are now
    /// and read on, after HBase's back-off, for up to
    /// [`MOVE_DEADLINE`](crate::thrift::retry::MOVE_DEADLINE). A scan that
    /// returns rows in parts fails instead (a row half returned cannot be
    /// resumed without repeating or losing cells).
    pub fn next_row(&mut self) -> Result<Option<Vec<Cell>>, GatewayError> {
        let mut attempt = 0;
        let mut deadline = None;
        loop {
            match self.next_row_once() {
                Ok(row) => {
                    if let Some(cells) = &row
                        && !self.partial_rows
                        && let Some(first) = cells.first()
                    {
                        self.last_row = Some(first.row.to_vec());
                    }
                    return Ok(row);
                }
                Err(e) if !self.partial_rows && crate::thrift::retry::region_moving(&e, true, true) => {
                    let deadline =
                        *deadline.get_or_insert_with(|| Instant::now() + crate::thrift::retry::MOVE_DEADLINE);
                    let wait = crate::thrift::retry::pause(attempt);
                    if Instant::now() + wait >= deadline {
                        return Err(e);
                    }
                    tracing::debug!(table = %self.table, attempt, error = %e, "a scan met a region in a move: resuming");
                    std::thread::sleep(wait);
                    attempt += 1;
                    self.replan()?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The pieces of what is left of the range (past the last row
    /// returned), cut at the table's regions as this server lists them now.
    fn replan(&mut self) -> Result<(), GatewayError> {
        let (lo, hi) = remaining(&self.range, self.last_row.as_deref(), self.local.reverse);
        self.current = None;
        let regions = self.store.region_states(&self.table)?;
        let mut pieces: VecDeque<Piece> = pieces(&regions, &lo, &hi).into();
        if self.local.reverse {
            pieces = pieces.into_iter().rev().collect();
        }
        self.pieces = pieces;
        Ok(())
    }

    fn next_row_once(&mut self) -> Result<Option<Vec<Cell>>, GatewayError> {
        loop {
            let current = match &mut self.current {
                Some(c) => c,
                None => {
                    let Some(piece) = self.pieces.pop_front() else { return Ok(None) };
                    self.current = Some(self.open(piece)?);
                    continue;
                }
            };
            match current {
                Current::Here(scanner) => match scanner.next().transpose()? {
                    Some(row) => return Ok(Some(row)),
                    None => self.current = None,
                },
                Current::Elsewhere { region, owner, client, id, rows, done } => {
                    if let Some(row) = rows.pop_front() {
                        return Ok(Some(row));
                    }
                    if *done {
                        self.current = None;
                        continue;
                    }
                    let got =
                        client.scanner_get_list(*id, REMOTE_BATCH).map_err(|e| remote_failure(e, region, owner))?;
                    if got.is_empty() {
                        // Dropping the connection closes the remote scanner.
                        *done = true;
                    }
                    rows.extend(got.into_iter().map(crate::peer::forward::cells_of));
                }
            }
        }
    }

    /// Adds the memstore segments the piece being read here holds.
    pub fn add_memstore_footprint(&self, footprint: &mut memstore::Footprint) {
        if let Some(Current::Here(scanner)) = &self.current {
            scanner.add_memstore_footprint(footprint);
        }
    }

    fn open(&self, piece: Piece) -> Result<Current, GatewayError> {
        match piece {
            Piece::Here { start, stop } => {
                let mut scan = self.local.clone();
                let (start, stop) = (Some(start).filter(|s| !s.is_empty()), Some(stop).filter(|s| !s.is_empty()));
                if scan.reverse {
                    (scan.start, scan.stop) = (stop, start);
                    (scan.start_inclusive, scan.stop_inclusive) = (false, true);
                } else {
                    (scan.start, scan.stop) = (start, stop);
                    (scan.start_inclusive, scan.stop_inclusive) = (true, false);
                }
                Ok(Current::Here(Box::new(self.store.scan(&self.table, scan)?)))
            }
            Piece::Elsewhere { region, start, stop } => {
                let owner = self.router.owner(&region).ok_or_else(|| {
                    GatewayError::NotServing(format!(
                        "region {region} is held by no live server (in transition); retry"
                    ))
                })?;
                let opened = self.router.connect(&owner).and_then(|mut client| {
                    let mut scan = self.remote.scan.clone();
                    let mut attributes = self.remote.attributes.clone();
                    if self.local.reverse {
                        scan.start_row = Some(stop).filter(|s| !s.is_empty());
                        scan.stop_row = Some(start).filter(|s| !s.is_empty());
                        scan.reversed = Some(true);
                        attributes.insert(START_EXCLUSIVE.to_vec(), b"true".to_vec());
                        attributes.insert(STOP_INCLUSIVE.to_vec(), b"true".to_vec());
                    } else {
                        scan.start_row = Some(start);
                        scan.stop_row = Some(stop).filter(|s| !s.is_empty());
                    }
                    let id = client.scanner_open_with_scan(self.table.as_bytes().to_vec(), scan, attributes)?;
                    Ok((client, id))
                });
                match opened {
                    Ok((client, id)) => {
                        Ok(Current::Elsewhere { region, owner, client, id, rows: VecDeque::new(), done: false })
                    }
                    Err(e) => {
                        if Router::moved(&e) {
                            self.router.forget(&region);
                        }
                        Err(remote_failure(e, &region, &owner))
                    }
                }
            }
        }
    }
}

/// What is left of a scan's range `[lo, hi)` once `last` was returned: a
/// forward scan goes on just above it, a reverse one just below it.
fn remaining(range: &(Vec<u8>, Vec<u8>), last: Option<&[u8]>, reverse: bool) -> (Vec<u8>, Vec<u8>) {
    let (lo, hi) = range.clone();
    match last {
        None => (lo, hi),
        Some(last) if reverse => (lo, last.to_vec()),
        Some(last) => ([last, &[0]].concat(), hi),
    }
}

/// The key range `[lo, hi)` a scan reads (`hi` empty: unbounded), from its
/// start, stop, their inclusiveness and prefix (a reverse scan starts at its
/// upper end and stops at its lower one).
fn bounds(scan: &Scan) -> (Vec<u8>, Vec<u8>) {
    // A bound as a key of `[lo, hi)`: the key itself, or the one just above
    // it (nothing lies between `k` and `k\0`).
    let key = |k: &Option<Vec<u8>>, above: bool| match k.as_ref().filter(|k| !k.is_empty()) {
        Some(k) if above => [k.as_slice(), &[0]].concat(),
        Some(k) => k.clone(),
        None => Vec::new(),
    };
    let (mut lo, mut hi) = if scan.reverse {
        (key(&scan.stop, !scan.stop_inclusive), key(&scan.start, scan.start_inclusive))
    } else {
        (key(&scan.start, !scan.start_inclusive), key(&scan.stop, scan.stop_inclusive))
    };
    if let Some(p) = &scan.prefix {
        lo = lo.max(p.clone());
        if let Some(end) = successor(p)
            && (hi.is_empty() || end < hi)
        {
            hi = end;
        }
    }
    (lo, hi)
}

/// The smallest key above every key starting with `prefix` (`None`: none,
/// the prefix is all 0xFF).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// `[lo, hi)` cut at the boundaries of `regions`: consecutive regions held
/// here form one piece, each region held elsewhere its own.
fn pieces(regions: &[(store::RegionInfo, RegionState)], lo: &[u8], hi: &[u8]) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    if !hi.is_empty() && lo >= hi {
        return out;
    }
    for (r, state) in regions {
        let below_hi = hi.is_empty() || r.start_key.as_slice() < hi;
        let above_lo = r.end_key.is_empty() || r.end_key.as_slice() > lo;
        if !below_hi || !above_lo {
            continue;
        }
        let start = lo.max(r.start_key.as_slice()).to_vec();
        let stop = match (hi.is_empty(), r.end_key.is_empty()) {
            (true, _) => r.end_key.clone(),
            (false, true) => hi.to_vec(),
            (false, false) => hi.min(r.end_key.as_slice()).to_vec(),
        };
        if *state == RegionState::Offline {
            out.push(Piece::Elsewhere { region: r.dir_name(), start, stop });
        } else if let Some(Piece::Here { stop: run_stop, .. }) = out.last_mut() {
            *run_stop = stop;
        } else {
            out.push(Piece::Here { start, stop });
        }
    }
    out
}

/// A remote piece's failure: the owner's own answer as it gave it; a
/// failure to reach it says the region is not served where it was sought
/// (the client retries, as HBase's does).
fn remote_failure(e: thrift::Error, region: &str, owner: &str) -> GatewayError {
    match crate::peer::forward::failure(e, region, owner) {
        GatewayError::Unreachable { cause, .. } => GatewayError::NotServing(cause),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(start: &str, end: &str) -> store::RegionInfo {
        store::RegionInfo {
            id: start.len() as u64,
            table: "t".into(),
            start_key: start.as_bytes().to_vec(),
            end_key: end.as_bytes().to_vec(),
            parent: None,
            merged_from: Vec::new(),
        }
    }

    fn here(a: &str, b: &str) -> Piece {
        Piece::Here { start: a.as_bytes().to_vec(), stop: b.as_bytes().to_vec() }
    }

    #[test]
    fn a_scan_resumed_after_a_move_reads_what_it_had_not_returned_once() {
        let range = (b"b".to_vec(), b"y".to_vec());
        assert_eq!(remaining(&range, None, false), range);
        // Forward: from just above the last row (k\0 is the next key).
        assert_eq!(remaining(&range, Some(b"k"), false), (b"k\0".to_vec(), b"y".to_vec()));
        // Reverse: down from just below it (the upper bound is exclusive).
        assert_eq!(remaining(&range, Some(b"k"), true), (b"b".to_vec(), b"k".to_vec()));
        // Cut again at the regions as they are after a split of [f, m).
        let regions = vec![
            (region("", "f"), RegionState::Open),
            (region("f", "h"), RegionState::Offline),
            (region("h", "m"), RegionState::Open),
        ];
        let (lo, hi) = remaining(&(Vec::new(), Vec::new()), Some(b"g"), false);
        let cut = pieces(&regions, &lo, &hi);
        assert_eq!(
            cut,
            [
                Piece::Elsewhere { region: regions[1].0.dir_name(), start: b"g\0".to_vec(), stop: b"h".to_vec() },
                here("h", "m")
            ]
        );
    }

    #[test]
    fn a_range_is_cut_at_the_regions_held_elsewhere() {
        let regions = vec![
            (region("", "c"), RegionState::Open),
            (region("c", "f"), RegionState::Open),
            (region("f", "m"), RegionState::Offline),
            (region("m", ""), RegionState::Open),
        ];
        let cut = pieces(&regions, b"", b"");
        let elsewhere = |a: &str, b: &str| Piece::Elsewhere {
            region: regions[2].0.dir_name(),
            start: a.as_bytes().to_vec(),
            stop: b.as_bytes().to_vec(),
        };
        assert_eq!(cut, [here("", "f"), elsewhere("f", "m"), here("m", "")]);
        assert_eq!(pieces(&regions, b"d", b"g"), [here("d", "f"), elsewhere("f", "g")]);
        assert_eq!(pieces(&regions, b"g", b"h"), [elsewhere("g", "h")]);
        assert_eq!(pieces(&regions, b"a", b"b"), [here("a", "b")]);
        assert_eq!(pieces(&regions, b"n", b""), [here("n", "")]);
        // An empty range has no piece, even inside a region held elsewhere.
        assert_eq!(pieces(&regions, b"g\0", b"g\0"), []);
        assert_eq!(pieces(&regions, b"h", b"g"), []);
    }

    #[test]
    fn prefixes_bound_the_range() {
        let scan = |prefix: &[u8]| Scan { prefix: Some(prefix.to_vec()), ..Scan::default() };
        assert_eq!(bounds(&scan(b"ab")), (b"ab".to_vec(), b"ac".to_vec()));
        assert_eq!(bounds(&scan(b"a\xff")), (b"a\xff".to_vec(), b"b".to_vec()));
        assert_eq!(bounds(&scan(b"\xff")), (b"\xff".to_vec(), Vec::new()));
    }

    #[test]
    fn inclusive_and_exclusive_rows_bound_the_range() {
        let k = |s: &str| Some(s.as_bytes().to_vec());
        let scan = |start, stop, reverse, start_inclusive, stop_inclusive| Scan {
            start,
            stop,
            reverse,
            start_inclusive,
            stop_inclusive,
            ..Scan::default()
        };
        assert_eq!(bounds(&scan(k("b"), k("m"), false, true, false)), (b"b".to_vec(), b"m".to_vec()));
        assert_eq!(bounds(&scan(k("b"), k("m"), false, false, true)), (b"b\0".to_vec(), b"m\0".to_vec()));
        // Reverse: from m down to b.
        assert_eq!(bounds(&scan(k("m"), k("b"), true, true, false)), (b"b\0".to_vec(), b"m\0".to_vec()));
        assert_eq!(bounds(&scan(k("m"), k("b"), true, false, true)), (b"b".to_vec(), b"m".to_vec()));
        assert_eq!(bounds(&scan(None, None, true, false, true)), (Vec::new(), Vec::new()));
    }
}
