//! Closing and opening single regions (HBase's region server `closeRegion`
//! / `openRegion`, the shell's `unassign` / `assign`): the seam that moving
//! a region to another server needs.
//!
//! Close: the region is CLOSING and still serves while compactions are
//! held (a running one finishes) and it pre-flushes; then writes stop
//! (drain), the rest is flushed (`flush_all`: also what came after a failed
//! flush), its stores are retired (no compaction can
//! change its files any more), the `.closed` marker is committed in its
//! directory (fsynced), and the WAL's accounting forgets it — every edit is
//! in its files, so its directory alone is the region. It stays in its
//! table as CLOSED, answering `NotServingRegion`, also after a restart.
//!
//! Open: a new `Region` is built from the directory alone (manifests,
//! flushed sequence ids), the marker is removed (fsynced), and it replaces
//! the closed one in the table, OPEN. No WAL edit of a closed region is
//! newer than its flushed sequence id (close flushed them all), so open
//! replays none; edits written elsewhere (another server's WAL, cluster
//! mode) are the WAL splitter's to deliver.
//!
//! Both run under the table's change lock (`Catalog::lock_changes`), so they never interleave with
//! a split, a merge or each other on one table.

use std::sync::Arc;

use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::layout::Marker;
use crate::region::Region;
use crate::region::state::RegionState;
use crate::services::Services;

/// Memstore bytes worth flushing before a close stops writes (HBase's
/// `hbase.hregion.preclose.flush.size`).
pub(crate) const PRECLOSE_FLUSH_SIZE: u64 = 5 << 20;
/// Most pre-flushes before a close stops writes (a fast writer can refill
/// the pre-close size during one).
pub(crate) const PRECLOSE_FLUSHES: usize = 3;

/// Flushes `region` while it serves, until what is left for the flush after
/// the drain is small.
pub(crate) fn preclose_flush(region: &Region) -> Result<()> {
    for _ in 0..PRECLOSE_FLUSHES {
        if region.memstore_heap_size() <= PRECLOSE_FLUSH_SIZE {
            break;
        }
        region.flush()?;
    }
    Ok(())
}

fn not_open(region: &Region) -> StoreError {
    StoreError::NotServingRegion { region: region.info().region_name(), state: region.state() }
}

/// Closes `region` of `table` (see the module docs). Fails, leaving the
/// region OPEN, if a flush or the marker cannot be written.
pub(crate) fn close_region(services: &Services, table: &TableState, region: &Arc<Region>) -> Result<()> {
    let (table, _change) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    if region.state() != RegionState::Open || !table.is_current(region) {
        return Err(not_open(region));
    }
    let started = std::time::Instant::now();
    region.set_state(RegionState::Closing);
    let held: Vec<_> = region.stores().map(|s| s.hold_compactions()).collect();
    let closed = (|| -> Result<()> {
        preclose_flush(region)?;
        region.close_and_drain();
        region.flush_all()?;
        let fs = services.ctx.fs.as_ref();
        crate::layout::write_marker(fs, region.dir(), Marker::Closed, &crate::layout::unfenced)?;
        fs.sync_dir(region.dir())
    })();
    if let Err(e) = closed {
        // The marker may be in place if only its directory sync failed: a
        // close that reports failure must not come back closed at restart.
        let fs = services.ctx.fs.as_ref();
        if crate::layout::has_marker(fs, region.dir(), Marker::Closed).unwrap_or(false)
            && let Err(e) =
                crate::layout::remove_marker(fs, region.dir(), Marker::Closed).and_then(|()| fs.sync_dir(region.dir()))
        {
            tracing::warn!(error = %e, "could not take back the marker of a failed close");
        }
        region.reopen();
        return Err(e);
    }
    region.stores().for_each(|s| s.set_retired(true));
    drop(held);
    services.wal.forget_region(region.info().id);
    region.set_state(RegionState::Closed);
    tracing::info!(
        region = %region.info().region_name(),
        seconds = started.elapsed().as_secs_f64(),
        "region closed"
    );
    Ok(())
}

/// Opens the CLOSED `region` of `table` again from its directory.
pub(crate) fn open_region(services: &Services, table: &TableState, region: &Arc<Region>) -> Result<Arc<Region>> {
    let (table, _change) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    if region.state() != RegionState::Closed || !table.is_current(region) {
        return Err(StoreError::RegionNotClosed { region: region.info().region_name(), state: region.state() });
    }
    let started = std::time::Instant::now();
    region.set_state(RegionState::Opening);
    let opened = (|| -> Result<Arc<Region>> {
        let fresh = services.open_region(region.dir().to_path_buf(), region.info().clone(), table.desc.clone())?;
        let fs = services.ctx.fs.as_ref();
        crate::layout::remove_marker(fs, region.dir(), Marker::Closed)?;
        fs.sync_dir(region.dir())?;
        Ok(fresh)
    })();
    let fresh = match opened {
        Ok(f) => f,
        Err(e) => {
            region.set_state(RegionState::Closed);
            return Err(e);
        }
    };
    // Under the change lock the region is still current: the edit applies.
    let edit = CatalogEdit::ReplaceRegions {
        table: table.desc.name.clone(),
        old: vec![region.clone()],
        new: vec![fresh.clone()],
    };
    if let Err(e) = services.catalog.apply(edit) {
        region.set_state(RegionState::Closed);
        return Err(e);
    }
    region.set_state(RegionState::Closed);
    if fresh.has_references() {
        services.compaction_queue.request_all(&fresh);
    }
    tracing::info!(
        region = %fresh.info().region_name(),
        seconds = started.elapsed().as_secs_f64(),
        "region opened"
    );
    Ok(fresh)
}
