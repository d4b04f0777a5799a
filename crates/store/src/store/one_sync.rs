//! One WAL sync for a SYNC_WAL client batch that spans regions.
//!
//! Region by region, a client batch over five regions waits for five syncs
//! one after the other, each while holding that region's row locks (HBase's
//! `multi` does the same). Here every region's batch is appended first and
//! one sync serves them all: the rows of a 40-row client batch wait for one
//! `fsync`/`hsync` instead of one per region.
//!
//! Steps, and why they cannot deadlock:
//! 1. Memory is reclaimed for every region first (that may wait for
//!    flushes), while nothing is held.
//! 2. The row locks of every region batch are taken, region after region in
//!    key order, before any MVCC entry: every batch takes row locks in that
//!    one order, and a batch waiting for a lock holds no entry that another
//!    batch's visibility waits for.
//! 3. Each region batch is prepared: its `updates` lock taken shared, an
//!    MVCC entry begun, its edits appended to the WAL (nothing durable,
//!    inserted or visible yet).
//! 4. The first batch awaits its sync; the sync covers every append before
//!    it, so the others find theirs done.
//! 5. Each durable batch is published (inserted into its memstores, its
//!    entry completed) and its `updates` lock released at once, so that a
//!    flush waiting for it can go on.
//! 6. Then — row locks still held, as HBase holds them until its writes
//!    are visible, so that an increment or check-and-mutate of the row
//!    reads them — the batch waits until each region's read point covers
//!    its entry, and releases its row locks.
//!
//! Nothing of a region batch is visible before its sync returned; a failed
//! sync fails every batch it covered and none of them becomes visible (the
//! unpublished entries are abandoned). A region that is being split,
//! merged or closed is left to the caller's region-by-region path, which
//! retries it.
//!
//! Thread safety: runs in the calling thread; the invariants above are
//! what lets it hold several regions' row locks at once.

use std::ops::Range;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::catalog::TableState;
use crate::error::{Result, StoreError};
use crate::hooks::HookPoint;
use crate::region::{Region, RowMutations};
use crate::services::Services;
use crate::wal::Durability;

use super::Unapplied;

/// Ranges of `rows` the caller still has to apply region by region.
pub(super) type Leftovers = SmallVec<[Range<usize>; 4]>;

/// Applies `rows` (sorted by row) with one sync when they are a SYNC_WAL
/// batch of distinct rows in more than one region; refused rows and failed
/// region batches go to `note` (by their index in the caller's batch; a
/// failed region batch by its first row's).
/// Returns what is left for the region-by-region path: everything when the
/// batch does not qualify, else the batches of regions that were moving.
pub(super) fn apply(
    services: &Services,
    t: &TableState,
    rows: &[(usize, RowMutations<'_>)],
    durability: Durability,
    note: &mut dyn FnMut(usize, StoreError, Unapplied),
) -> Result<Leftovers> {
    let everything = || -> Leftovers { std::iter::once(0..rows.len()).collect() };
    if durability != Durability::SyncWal || rows.len() < 2 {
        return Ok(everything());
    }
    // Most batches fall in one region: one lookup tells.
    match t.region_for(rows[0].1.row) {
        Some(first) if !first.info().contains(rows[rows.len() - 1].1.row) => {}
        _ => return Ok(everything()),
    }
    let mut groups: SmallVec<[(Arc<Region>, Range<usize>); 8]> = SmallVec::new();
    let mut at = 0;
    while at < rows.len() {
        let Some(region) = t.region_for(rows[at].1.row) else { return Ok(everything()) };
        let n = rows[at..].iter().take_while(|(_, r)| region.info().contains(r.row)).count().max(1);
        groups.push((region, at..at + n));
        at += n;
    }
    let repeats = |r: &Range<usize>| rows[r.clone()].windows(2).any(|w| w[0].1.row == w[1].1.row);
    if groups.len() < 2 || groups.iter().any(|(_, r)| repeats(r)) {
        return Ok(everything());
    }
    for (region, _) in &groups {
        crate::jobs::flush::flusher::reclaim_memory(services, region)?;
        services.hook_at(HookPoint::RegionLookedUp, region.info().id)?;
    }
    let batches: SmallVec<[SmallVec<[RowMutations<'_>; 8]>; 8]> =
        groups.iter().map(|(_, r)| rows[r.clone()].iter().map(|(_, m)| *m).collect()).collect();
    let locks: SmallVec<[_; 8]> = groups.iter().zip(&batches).map(|((region, _), b)| region.lock_batch(b)).collect();

    let mut leftovers = Leftovers::new();
    let mut prepared = SmallVec::<[_; 8]>::new();
    let mut refused = Vec::new();
    for (g, ((region, range), batch)) in groups.iter().zip(&batches).enumerate() {
        refused.clear();
        match region.prepare_locked(batch, 0, durability, &mut refused) {
            Ok(p) => {
                for (i, e) in refused.drain(..) {
                    note(rows[range.start + i].0, e, Unapplied::Row);
                }
                if let Some(p) = p {
                    prepared.push((g, p));
                }
            }
            Err(e) if t.retry_after(region, &e).is_some() => leftovers.push(range.clone()),
            Err(e) => note(rows[range.start].0, e, Unapplied::RegionBatch),
        }
    }

    let mut published: SmallVec<[(usize, u64); 8]> = SmallVec::new();
    for (g, mut p) in prepared {
        let first_row = rows[groups[g].1.start].0;
        if let Err(e) = p.durable() {
            note(first_row, e, Unapplied::RegionBatch);
            continue; // dropped: abandoned, nothing visible
        }
        match p.publish() {
            Ok((seq, updates)) => {
                drop(updates);
                published.push((g, seq));
            }
            Err(e) => note(first_row, e, Unapplied::RegionBatch),
        }
    }
    for &(g, seq) in &published {
        groups[g].0.wait_visible(seq);
    }
    drop(locks);
    for (region, _) in &groups {
        crate::jobs::flush::flusher::after_write(services, region);
    }
    Ok(leftovers)
}
