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
//! At open: `.trash-` directories are removed; a parent with a marker is
//! kept while a daughter refers to it and removed (through the trash)
//! otherwise; a daughter whose parent is present without a marker is
//! removed through the trash (the split did not commit; the parent is
//! intact). A region that still has references is not split again.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use memstore::CellKey;

use crate::cursor::{CellCursor, MergedCursor};
use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::manifest::StoreManifest;
use crate::region::{Region, RegionInfo};
use crate::region_state::RegionState;
use crate::store::{SPLIT_MARKER, StoreInner, TableState};
use crate::storefile::{Half, Reference};

/// What open does with the regions found on disk.
pub(crate) struct OnDisk {
    /// Regions to open.
    pub(crate) regions: Vec<(PathBuf, RegionInfo)>,
    /// Parents of committed splits: kept while a daughter refers to them.
    pub(crate) split_parents: Vec<PathBuf>,
}

/// Sorts out the leftovers of splits interrupted by a crash.
pub(crate) fn resolve_split_leftovers(fs: &dyn FileSystem, infos: Vec<(PathBuf, RegionInfo)>) -> Result<OnDisk> {
    let mut out = OnDisk { regions: Vec::new(), split_parents: Vec::new() };
    let mut parent_ids = Vec::new();
    for (dir, info) in &infos {
        if fs.exists(&dir.join(SPLIT_MARKER))? {
            parent_ids.push(info.id);
            out.split_parents.push(dir.clone());
        }
    }
    for (dir, info) in infos {
        if parent_ids.contains(&info.id) {
            continue;
        }
        let orphan = info.parent.is_some_and(|p| {
            !parent_ids.contains(&p) && fs.exists(&dir.with_file_name(format!("{p:016x}"))).unwrap_or(false)
        });
        if orphan {
            tracing::info!(region = info.id, "removing the daughter of a split that did not commit");
            remove_region_dir(fs, &dir)?;
            continue;
        }
        out.regions.push((dir, info));
    }
    Ok(out)
}

/// Removes the directory of split parent `parent_id` of `table` once no
/// region of the table reads through references into it.
pub(crate) fn remove_parent_if_unreferenced(inner: &StoreInner, table: &str, parent_id: u64) -> Result<()> {
    let Some(t) = inner.tables.read().get(table).cloned() else { return Ok(()) };
    // One split or parent removal at a time per table.
    let _split = t.change_lock.lock();
    let regions = t.regions();
    let Some(any) = regions.first() else { return Ok(()) };
    let parent_dir = any.dir().with_file_name(format!("{parent_id:016x}"));
    remove_split_parent_if_unreferenced(inner.ctx.fs.as_ref(), &parent_dir, &regions)
}

/// Removes `parent_dir` (a committed split's parent, with its marker) when
/// none of `regions` reads through references into it.
pub(crate) fn remove_split_parent_if_unreferenced(
    fs: &dyn FileSystem,
    parent_dir: &std::path::Path,
    regions: &[Arc<Region>],
) -> Result<()> {
    let name = parent_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if regions.iter().any(|r| r.refers_to(&name)) || !fs.exists(&parent_dir.join(SPLIT_MARKER))? {
        return Ok(());
    }
    tracing::info!(dir = %parent_dir.display(), "removing a split parent no daughter refers to");
    remove_region_dir(fs, parent_dir)
}

/// Splits `region` if its files exceed the table's maximum region size.
pub(crate) fn maybe_split(inner: &Arc<StoreInner>, table: &Arc<TableState>, region: &Arc<Region>) -> Result<bool> {
    if region.state() != RegionState::Open
        || region.has_references()
        || region.files_size() <= table.desc.max_region_size
    {
        return Ok(false);
    }
    split_region(inner, table, region, None)
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
    inner: &Arc<StoreInner>,
    table: &Arc<TableState>,
    region: &Arc<Region>,
    at: Option<Vec<u8>>,
) -> Result<bool> {
    let _split = table.change_lock.lock();
    if region.state() != RegionState::Open
        || region.has_references()
        || !table.regions.read().iter().any(|r| Arc::ptr_eq(r, region))
    {
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
    let result = split_at(inner, table, region, &mid);
    if result.is_err() && region.state() == RegionState::Splitting {
        // It did not commit: the parent serves on.
        region.reopen();
    }
    result.map(|()| true)
}

/// The split of `region` at `mid` once chosen (the region is SPLITTING).
fn split_at(inner: &Arc<StoreInner>, table: &Arc<TableState>, region: &Arc<Region>, mid: &[u8]) -> Result<()> {
    let info = region.info();
    // The references will name the parent's files: no compaction may
    // replace them from here on. One running now finishes first, while the
    // region still takes writes.
    let held: Vec<_> = region.stores().map(|s| s.hold_compactions()).collect();
    // Writes stop for the flush of what arrived meanwhile: pre-flush while
    // that is more than a little (HBase pre-flushes above
    // hbase.hregion.preclose.flush.size).
    crate::region_open_close::preclose_flush(region)?;
    // Writes stop here, until the daughters are in place.
    let stopped = std::time::Instant::now();
    region.close_and_drain();
    let retire = |retired: bool| region.stores().for_each(|s| s.set_retired(retired));
    retire(true);
    let fs = inner.ctx.fs.as_ref();
    let daughters = match write_daughters(inner, region, mid) {
        Ok(d) => d,
        Err(e) => {
            retire(false);
            region.reopen();
            return Err(e);
        }
    };
    // The commit point.
    if let Err(e) = fs.write_atomic(&region.dir().join(SPLIT_MARKER), b"split") {
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
    let mut opened = Vec::with_capacity(2);
    for (dir, info) in daughters {
        opened.push(Arc::new(Region::open(dir, info, table.desc.clone(), inner.wal.clone(), &inner.region_config)?));
    }
    {
        let mut regions = table.regions.write();
        let i = regions.iter().position(|r| Arc::ptr_eq(r, region)).ok_or(StoreError::Closed)?;
        regions.splice(i..=i, opened.iter().cloned());
    }
    inner.ctx.events.record("split", event_name(region), 0, region.stores().count(), stopped);
    tracing::info!(
        region = info.id,
        split_row = %String::from_utf8_lossy(mid),
        writes_stopped_ms = stopped.elapsed().as_secs_f64() * 1e3,
        "split by reference"
    );
    // The daughters' compactions rewrite the references away.
    for d in &opened {
        for s in d.stores() {
            inner.compactor.request(d, s);
        }
    }
    Ok(())
}

fn event_name(region: &Region) -> String {
    format!("{}/{}", region.info().table, region.info().dir_name())
}

/// The prefix of region directories being removed; open removes them.
pub(crate) const TRASH_PREFIX: &str = ".trash-";

/// Removes a region's (or a table's) directory crash-safely: one atomic
/// rename takes it out of use (a split parent is never seen half-deleted,
/// e.g. without its marker), then the renamed directory is deleted; open
/// removes what a crash left under the trash name.
pub(crate) fn remove_region_dir(fs: &dyn FileSystem, dir: &std::path::Path) -> Result<()> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let trash = dir.with_file_name(format!("{TRASH_PREFIX}{name}"));
    fs.rename(dir, &trash)?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent)?;
    }
    fs.remove_dir_all(&trash)
}

/// Writes both daughters of `parent` (closed and drained): references to
/// every parent file with rows in the daughter's half, manifests with the
/// parent's flushed sequence ids, and `.regioninfo`.
fn write_daughters(inner: &Arc<StoreInner>, parent: &Arc<Region>, mid: &[u8]) -> Result<Vec<(PathBuf, RegionInfo)>> {
    parent.flush()?;
    let fs = inner.ctx.fs.clone();
    let p = parent.info();
    let parent_dir = p.dir_name();
    let halves = [(p.start_key.clone(), mid.to_vec(), false), (mid.to_vec(), p.end_key.clone(), true)];
    let mut out: Vec<(PathBuf, RegionInfo)> = Vec::new();
    for (start, end, top) in halves {
        let info = RegionInfo {
            id: inner.next_region_id.fetch_add(1, Ordering::Relaxed),
            table: p.table.clone(),
            start_key: start,
            end_key: end,
            parent: Some(p.id),
        };
        let dir = parent.dir().with_file_name(info.dir_name());
        let half = Half { split_row: mid.to_vec(), top };
        let written = (|| -> Result<()> {
            fs.create_dir_all(&dir)?;
            for store in parent.stores() {
                let family_dir = dir.join(store.name());
                fs.create_dir_all(&family_dir)?;
                let mut manifest = StoreManifest { files: Vec::new(), flushed_seq: store.flushed_seq() };
                // Oldest first, as manifests list files.
                for f in store.files().iter().rev() {
                    let (Some(first), Some(last)) = (&f.info().first_row, &f.info().last_row) else { continue };
                    if !half.overlaps(first, last) {
                        continue;
                    }
                    let file = f.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let reference = Reference { parent_region: parent_dir.clone(), file, half: half.clone() };
                    reference.write(fs.as_ref(), &family_dir)?;
                    manifest.files.push(reference.file_name());
                }
                manifest.commit(fs.as_ref(), &family_dir)?;
            }
            fs.sync_dir(&dir)?;
            let bytes = serde_json::to_vec_pretty(&info).map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            fs.write_atomic(&dir.join(crate::region::REGION_INFO_NAME), &bytes)?;
            // The daughter's own directory entry.
            if let Some(table_dir) = dir.parent() {
                fs.sync_dir(table_dir)?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            let _ = fs.remove_dir_all(&dir);
            for (d, _) in &out {
                let _ = fs.remove_dir_all(d);
            }
            return Err(e);
        }
        out.push((dir, info));
    }
    Ok(out)
}
