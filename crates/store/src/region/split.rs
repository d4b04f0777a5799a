//! Region split by reference (HBase's split with `Reference` files): when a
//! region's files pass the table's maximum region size (or on request), it
//! is split at a row into two daughters that read the parent's files
//! through references to their half, so writes stop only for a flush and
//! the switch, not for a copy of the data.
//!
//! Steps and their crash safety:
//! 1. flush the parent, choose the split row (the middle row of its largest
//!    file's block index, HBase's `midKey`), close it to writes, wait for
//!    writes in flight and flush again — all its data is now in files;
//! 2. write each daughter: one reference per parent file that has rows in
//!    its half, a manifest listing them with the parent's flushed sequence
//!    ids, its `.regioninfo` (naming the parent); fsync the table directory;
//! 3. commit: write the `.split` marker into the parent's directory;
//! 4. open the daughters and swap them in for the parent; ask for their
//!    compaction, which rewrites the references into files of their own;
//! 5. when neither daughter refers to the parent any more, the parent's
//!    directory is renamed to a `.trash-` name and removed.
//!
//! What open does with the leftovers of a split a crash interrupted is in
//! `retired_parents.rs`. A region that still has references is not split
//! again.

use std::path::PathBuf;
use std::sync::Arc;

use memstore::CellKey;

use crate::catalog::{CatalogEdit, TableState};
use crate::error::Result;
use crate::layout::Marker;
use crate::read::cursor::{CellCursor, MergedCursor};
use crate::region::reference_region::{references_into, write_region};
use crate::region::retired_parents::remove_region_dir;
use crate::region::state::RegionState;
use crate::region::{Region, RegionInfo};
use crate::services::Services;
use crate::storefile::Half;

/// Splits `region` if its files exceed the table's maximum region size.
pub(crate) fn maybe_split(services: &Services, table: &TableState, region: &Arc<Region>) -> Result<bool> {
    if region.state() != RegionState::Open
        || region.has_references()
        || region.files_size() <= table.desc.max_region_size
    {
        return Ok(false);
    }
    split_region(services, table, region, None)
}

/// The split row: the middle row of the largest file of the largest family
/// by its block index (HBase's `midKey`), or, for a file of one block, the
/// row of its middle cell.
fn midpoint_row(region: &Region) -> Result<Option<Vec<u8>>> {
    let Some(store) = region.stores().max_by_key(|s| s.files_size()) else { return Ok(None) };
    let files = store.files();
    let Some(largest) = files.iter().max_by_key(|f| f.info().file_size) else { return Ok(None) };
    if let Some(row) = largest.middle_row() {
        return Ok(Some(row));
    }
    let total = largest.info().cell_count;
    let mut cursor = MergedCursor::new(vec![Box::new(largest.scanner()) as Box<dyn CellCursor>]);
    cursor.seek(&CellKey::first_on_row(&[]))?;
    let mut seen = 0u64;
    while let Some(c) = cursor.current() {
        if seen >= total / 2 {
            return Ok(Some(c.row().to_vec()));
        }
        seen += 1;
        cursor.advance()?;
    }
    Ok(None)
}

/// Splits `region` at `at` (or its midpoint). Returns false if the region
/// cannot be split there (a single row, a split point outside it, or
/// references of an earlier split not compacted away yet).
pub(crate) fn split_region(
    services: &Services,
    table: &TableState,
    region: &Arc<Region>,
    at: Option<Vec<u8>>,
) -> Result<bool> {
    services.hook(crate::hooks::HookPoint::ChangeLockWanted)?;
    let (table, _split) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    if region.state() != RegionState::Open || region.has_references() || !table.is_current(region) {
        return Ok(false);
    }
    region.flush()?;
    let Some(mid) = (match at {
        Some(a) => Some(a),
        None => midpoint_row(region)?,
    }) else {
        return Ok(false);
    };
    let info = region.info();
    if mid <= info.start_key || (!info.end_key.is_empty() && mid >= info.end_key) {
        return Ok(false);
    }
    region.set_state(RegionState::Splitting);
    let task = services.ctx.tasks.start(crate::tasks::TaskKind::Split, info.region_name());
    let result = split_at(services, table, region, &mid);
    drop(task);
    if result.is_err() && region.state() == RegionState::Splitting {
        // It did not commit: the parent serves on.
        region.reopen();
    }
    result?;
    services.regions_changed(&table.desc.name);
    Ok(true)
}

/// The split of `region` at `mid` once chosen (the region is SPLITTING).
fn split_at(services: &Services, table: &TableState, region: &Arc<Region>, mid: &[u8]) -> Result<()> {
    let info = region.info();
    // The references will name the parent's files: no compaction may
    // replace them from here on. One running now finishes first, while the
    // region still takes writes.
    let held: Vec<_> = region.stores().map(|s| s.hold_compactions()).collect();
    // Writes stop for the flush of what arrived meanwhile: pre-flush while
    // that is more than a little (HBase pre-flushes above
    // hbase.hregion.preclose.flush.size).
    crate::region::open_close::preclose_flush(region)?;
    // Writes stop here, until the daughters are in place.
    let stopped = std::time::Instant::now();
    region.close_and_drain();
    let retire = |retired: bool| region.stores().for_each(|s| s.set_retired(retired));
    retire(true);
    let fs = services.ctx.fs.as_ref();
    let daughters = match write_daughters(services, region, mid) {
        Ok(d) => d,
        Err(e) => {
            retire(false);
            region.reopen();
            return Err(e);
        }
    };
    // The commit point.
    if let Err(e) = crate::layout::write_marker(fs, region.dir(), Marker::Split, &|| services.ctx.may_commit()) {
        // The marker may be in place if only the directory sync failed:
        // with it, open would retire the parent and (its daughters gone)
        // lose it whole. Take it back, or stop serving the parent.
        if crate::layout::has_marker(fs, region.dir(), Marker::Split).unwrap_or(true)
            && let Err(e) =
                crate::layout::remove_marker(fs, region.dir(), Marker::Split).and_then(|()| fs.sync_dir(region.dir()))
        {
            tracing::error!(error = %e, region = info.id, "could not take back a failed split's marker; the region stays closed");
            region.close();
            return Err(e);
        }
        for (dir, _) in &daughters {
            if let Err(e) = remove_region_dir(fs, dir) {
                tracing::warn!(error = %e, "could not remove an uncommitted daughter; it is removed at the next open");
            }
        }
        retire(false);
        region.reopen();
        return Err(e);
    }
    drop(held);
    region.set_state(RegionState::Split);
    let opened = services.open_committed(&daughters, &table.desc)?;
    services.catalog.apply(CatalogEdit::ReplaceRegions {
        table: table.desc.name.clone(),
        old: vec![region.clone()],
        new: opened.clone(),
    })?;
    services.ctx.events.record("split", event_name(region), 0, region.stores().count(), stopped);
    tracing::info!(
        region = info.id,
        split_row = %String::from_utf8_lossy(mid),
        writes_stopped_ms = stopped.elapsed().as_secs_f64() * 1e3,
        "split by reference"
    );
    // The daughters' compactions rewrite the references away.
    for d in &opened {
        services.compaction_queue.request_all(d);
    }
    Ok(())
}

fn event_name(region: &Region) -> String {
    format!("{}/{}", region.info().table, region.info().dir_name())
}

/// Writes both daughters of `parent` (closed and drained): references to
/// every parent file with rows in the daughter's half, manifests with the
/// parent's flushed sequence ids, and `.regioninfo`.
fn write_daughters(services: &Services, parent: &Arc<Region>, mid: &[u8]) -> Result<Vec<(PathBuf, RegionInfo)>> {
    parent.flush_all()?;
    let fs = services.ctx.fs.as_ref();
    let p = parent.info();
    let halves = [(p.start_key.clone(), mid.to_vec(), false), (mid.to_vec(), p.end_key.clone(), true)];
    let mut out: Vec<(PathBuf, RegionInfo)> = Vec::new();
    for (start, end, top) in halves {
        let info = RegionInfo {
            id: services.new_region_id()?,
            table: p.table.clone(),
            start_key: start,
            end_key: end,
            parent: Some(p.id),
            merged_from: Vec::new(),
        };
        let dir = crate::layout::sibling_region_dir(parent.dir(), info.id);
        let families = references_into(parent, &Half { split_row: mid.to_vec(), top });
        if let Err(e) = write_region(fs, &dir, &info, &families, || Ok(()), &|| services.ctx.may_commit()) {
            // Uncommitted daughters (references only); open removes what
            // is left if this fails too.
            for d in out.iter().map(|(d, _)| d).chain([&dir]) {
                if fs.exists(d).unwrap_or(false)
                    && let Err(e) = remove_region_dir(fs, d)
                {
                    tracing::warn!(error = %e, dir = %d.display(), "could not remove an uncommitted daughter");
                }
            }
            return Err(e);
        }
        out.push((dir, info));
    }
    Ok(out)
}
