//! Merging two adjacent regions by reference (HBase's `merge_region`): the
//! merged region reads both parents' files through references (each the
//! whole file: a top half from the parent's start row), so writes stop only
//! for the final flushes and the switch.
//!
//! Steps and their crash safety (what open concludes is in
//! `retired_parents.rs`):
//! 1. both parents are MERGING: their compactions are held and they
//!    pre-flush while serving; then writes stop (drain) and they flush —
//!    all their data is in files; their stores are retired;
//! 2. the merged region is written: references to every file of both,
//!    manifests with the higher of the parents' flushed sequence ids per
//!    family, then its `.regioninfo` naming both parents — the commit;
//! 3. `.merged` markers go into the parents, the merged region opens and
//!    replaces them in the table, the WAL's accounting forgets them, and its
//!    compaction is asked for, which rewrites the references away; then the
//!    parents' directories go.
//!
//! Regions that still read through references (an uncompacted split or
//! merge) are not merged, as in HBase.

use std::sync::Arc;

use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::hooks::HookPoint;
use crate::layout::Marker;
use crate::region::reference_region::{FamilyReferences, references_into, write_region};
use crate::region::retired_parents::remove_region_dir;
use crate::region::state::RegionState;
use crate::region::{Region, RegionInfo};
use crate::services::Services;
use crate::storefile::Half;

/// Merges `a` and `b` of `table` (in either order; they must be adjacent,
/// OPEN and without references). Returns the merged region.
pub(crate) fn merge_regions(
    services: &Services,
    table: &TableState,
    a: &Arc<Region>,
    b: &Arc<Region>,
) -> Result<Arc<Region>> {
    let (table, _change) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    let (low, high) = if a.info().start_key <= b.info().start_key { (a, b) } else { (b, a) };
    let regions = table.regions();
    let adjacent = regions.windows(2).any(|w| Arc::ptr_eq(&w[0], low) && Arc::ptr_eq(&w[1], high));
    if !adjacent {
        return Err(StoreError::MergeRefused {
            a: low.info().region_name(),
            b: high.info().region_name(),
            reason: format!("they are not adjacent regions of table {}", table.desc.name),
        });
    }
    for r in [low, high] {
        if r.state() != RegionState::Open {
            return Err(StoreError::NotServingRegion { region: r.info().region_name(), state: r.state() });
        }
        if r.has_references() {
            return Err(StoreError::MergeRefused {
                a: low.info().region_name(),
                b: high.info().region_name(),
                reason: format!(
                    "region {} still reads through references; it can merge once compacted",
                    r.info().region_name()
                ),
            });
        }
    }
    let started = std::time::Instant::now();
    low.set_state(RegionState::Merging);
    high.set_state(RegionState::Merging);
    let target = format!("{} + {}", low.info().region_name(), high.info().region_name());
    let task = services.ctx.tasks.start(crate::tasks::TaskKind::Merge, target);
    let merged = merge_closed(services, table, low, high, started);
    drop(task);
    if merged.is_err() {
        for r in [low, high] {
            if r.state() == RegionState::Merging {
                // It did not commit: the parents serve on.
                r.reopen();
            }
        }
    }
    merged
}

fn merge_closed(
    services: &Services,
    table: &TableState,
    low: &Arc<Region>,
    high: &Arc<Region>,
    started: std::time::Instant,
) -> Result<Arc<Region>> {
    let held: Vec<_> = low.stores().chain(high.stores()).map(|s| s.hold_compactions()).collect();
    let mut stopped = std::time::Instant::now();
    let fs = services.ctx.fs.as_ref();
    let mut written_dir = None;
    let committed = (|| -> Result<(RegionInfo, std::path::PathBuf)> {
        crate::region::open_close::preclose_flush(low)?;
        crate::region::open_close::preclose_flush(high)?;
        stopped = std::time::Instant::now();
        for r in [low, high] {
            r.close_and_drain();
            r.flush_all()?;
            r.stores().for_each(|s| s.set_retired(true));
        }
        let info = RegionInfo {
            id: services.new_region_id()?,
            table: table.desc.name.clone(),
            start_key: low.info().start_key.clone(),
            end_key: high.info().end_key.clone(),
            parent: None,
            merged_from: vec![low.info().id, high.info().id],
        };
        let dir = crate::layout::sibling_region_dir(low.dir(), info.id);
        written_dir = Some(dir.clone());
        let families = merged_references(low, high);
        write_region(fs, &dir, &info, &families, || services.hook(HookPoint::MergeBeforeCommit), &|| {
            services.ctx.may_commit()
        })?;
        Ok((info, dir))
    })();
    let (info, dir) = match committed {
        Ok(c) => c,
        Err(e) => {
            // Take the merged region back: with its `.regioninfo` in place
            // (only its directory sync failed) open would retire the
            // parents, and what they take from now on would be lost.
            let left = written_dir.filter(|d| fs.exists(d).unwrap_or(true));
            if let Some(dir) = left
                && let Err(e) = remove_region_dir(fs, &dir)
            {
                tracing::error!(error = %e, dir = %dir.display(), "could not remove an uncommitted merged region; its parents stay closed until a restart sorts it out");
                low.close();
                high.close();
                return Err(e);
            }
            for r in [low, high] {
                r.stores().for_each(|s| s.set_retired(false));
            }
            return Err(e);
        }
    };
    // Committed. Nothing below may undo it; open finishes what a crash
    // leaves undone.
    low.set_state(RegionState::Merged);
    high.set_state(RegionState::Merged);
    drop(held);
    if let Err(e) = services.hook(HookPoint::MergeCommitted) {
        tracing::warn!(error = %e, "merge-committed hook failed; the merge stands");
    }
    for r in [low, high] {
        if let Err(e) = crate::layout::write_marker(fs, r.dir(), Marker::Merged, &crate::layout::unfenced) {
            tracing::warn!(error = %e, region = r.info().id, "could not mark a merged parent; open does it");
        }
    }
    let merged = services.open_committed(&[(dir, info)], &table.desc)?.remove(0);
    services.catalog.apply(CatalogEdit::ReplaceRegions {
        table: table.desc.name.clone(),
        old: vec![low.clone(), high.clone()],
        new: vec![merged.clone()],
    })?;
    for r in [low, high] {
        services.wal.forget_region(r.info().id);
    }
    services.ctx.events.record("merge", format!("{}/{}", merged.info().table, merged.info().dir_name()), 0, 2, stopped);
    tracing::info!(
        merged = %merged.info().region_name(),
        low = low.info().id,
        high = high.info().id,
        writes_stopped_ms = stopped.elapsed().as_secs_f64() * 1e3,
        seconds = started.elapsed().as_secs_f64(),
        "regions merged"
    );
    services.compaction_queue.request_all(&merged);
    services.regions_changed(&table.desc.name);
    Ok(merged)
}

/// Per family: references to every file of both parents (each the top
/// half from its parent's start row, i.e. the whole file), the low
/// parent's first, and the higher of their flushed sequence ids.
fn merged_references(low: &Region, high: &Region) -> Vec<FamilyReferences> {
    let whole = |r: &Region| references_into(r, &Half { split_row: r.info().start_key.clone(), top: true });
    let mut out = whole(low);
    for (mine, theirs) in out.iter_mut().zip(whole(high)) {
        debug_assert_eq!(mine.family, theirs.family, "regions of one table have the same families");
        mine.flushed_seq = mine.flushed_seq.max(theirs.flushed_seq);
        mine.references.extend(theirs.references);
    }
    out
}
