//! Scanners held open across operations and what the model expects of
//! them, result by result.

use std::collections::VecDeque;

use memstore::Cell;
use store::read::scanner::Scanner;
use store::{RegionInfo, RegionState, Scan, StoreError};

use crate::model::Model;

/// A scanner held open across operations, and what the model expects of it.
pub(crate) struct HeldScanner {
    pub(crate) scanner: Scanner,
    pub(crate) expect: ScanExpect,
    /// The step that opened it (for failure messages).
    pub(crate) opened: String,
}

/// What the model expects of a scanner, result by result.
pub(crate) struct ScanExpect {
    pub(crate) scan: Scan,
    /// The region its current region scanner reads, and the model as of when
    /// that region scanner opened (`None`: it has ended).
    pub(crate) region: Option<(RegionInfo, Model)>,
    /// Where the region it reads was looked up: the boundary of the one it
    /// read before (forward: its end key; reverse: its start key, exclusive).
    /// It reads on from there, even if that region and the one before were
    /// merged meanwhile.
    pub(crate) resume: Option<Vec<u8>>,
    /// The last row it returned.
    pub(crate) last_row: Option<Vec<u8>>,
    /// Rows returned (for the limit).
    pub(crate) rows: u64,
    /// The rest of the last row, cut into batches.
    pub(crate) pending: VecDeque<Vec<Cell>>,
}

impl ScanExpect {
    /// A scan whose first region scanner reads `region`, as of `model`.
    pub(crate) fn new(scan: Scan, region: RegionInfo, model: Model) -> ScanExpect {
        ScanExpect {
            scan,
            region: Some((region, model)),
            resume: None,
            last_row: None,
            rows: 0,
            pending: VecDeque::new(),
        }
    }
}

/// What a scanner must return next.
#[derive(Debug)]
pub(crate) enum Expected {
    Row(Vec<Cell>),
    End,
    /// `NotServingRegion` (CLOSED): it needs a closed region; then it ends.
    NotServing,
}

/// What a scanner returned.
#[derive(Debug)]
pub(crate) enum Got {
    Row(Vec<Cell>),
    End,
    NotServing,
    Error(#[expect(dead_code, reason = "shown in failure messages")] String),
}

impl Got {
    pub(crate) fn of(next: Option<store::Result<Vec<Cell>>>) -> Got {
        match next {
            None => Got::End,
            Some(Ok(cells)) => Got::Row(cells),
            Some(Err(StoreError::NotServingRegion { state: RegionState::Closed, .. })) => Got::NotServing,
            Some(Err(e)) => Got::Error(e.to_string()),
        }
    }
}

impl Expected {
    pub(crate) fn admits(&self, got: &Got) -> bool {
        match (self, got) {
            (Expected::Row(want), Got::Row(got)) => want == got,
            (Expected::End, Got::End) | (Expected::NotServing, Got::NotServing) => true,
            _ => false,
        }
    }
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut key = prefix.to_vec();
    while let Some(last) = key.pop() {
        if last < 0xFF {
            key.push(last + 1);
            return Some(key);
        }
    }
    None
}

/// `scan` with its prefix folded into its start and stop rows, as the
/// store's scanner does: the bounds by which it walks from region to region.
pub(crate) fn walk_bounds(scan: &Scan) -> Scan {
    let mut walk = scan.clone();
    if let Some(prefix) = &scan.prefix {
        if !scan.reverse {
            if walk.start.as_ref().is_none_or(|s| s < prefix) {
                walk.start = Some(prefix.clone());
            }
            if let Some(successor) = prefix_successor(prefix)
                && walk.stop.as_ref().is_none_or(|s| s.is_empty() || *s > successor)
            {
                walk.stop = Some(successor);
            }
        } else if walk.start.is_none() {
            walk.start = prefix_successor(prefix);
        }
    }
    walk
}
