//! Region split: when a region's files pass the table's maximum region size,
//! it is split at a midpoint row into two daughters, without losing or
//! duplicating a cell.
//!
//! Steps and their crash safety:
//! 1. flush the parent, close it to writes, wait for writes in flight, and
//!    flush again — all its data is now in files;
//! 2. write each daughter (its `.regioninfo` names the parent) with files
//!    holding exactly the parent's cells of its half and manifests carrying
//!    the parent's flushed sequence ids;
//! 3. commit: write the `.split` marker into the parent's directory;
//! 4. swap the daughters in for the parent, rename the parent directory to a
//!    `.trash-` name (atomic: the parent with its marker is either wholly
//!    there or gone) and remove it.
//!
//! At open, `.trash-` directories are removed; a parent with a marker is
//! removed the same way (the daughters are complete); a daughter whose parent
//! is present without a marker is removed (the split did not commit, the
//! parent is intact).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use memstore::CellKey;

use crate::cursor::{CellCursor, MergedCursor};
use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::manifest::StoreManifest;
use crate::region::{Region, RegionInfo};
use crate::store::{SPLIT_MARKER, StoreInner, TableState};
use crate::storefile::{FileMetaExtra, StoreFileOptions, StoreFileWriter};

/// Drops the leftovers of splits interrupted by a crash; returns the regions
/// to open.
pub(crate) fn resolve_split_leftovers(
    fs: &dyn FileSystem,
    infos: Vec<(PathBuf, RegionInfo)>,
) -> Result<Vec<(PathBuf, RegionInfo)>> {
    let mut keep = Vec::new();
    let mut split_parents = Vec::new();
    for (dir, info) in &infos {
        if fs.exists(&dir.join(SPLIT_MARKER))? {
            tracing::info!(region = info.id, "removing a split parent whose daughters committed");
            fs.remove_dir_all(dir)?;
            split_parents.push(info.id);
        }
    }
    for (dir, info) in infos {
        if split_parents.contains(&info.id) {
            continue;
        }
        let orphan = info.parent.is_some_and(|p| {
            !split_parents.contains(&p) && fs.exists(&dir.with_file_name(format!("{p:016x}"))).unwrap_or(false)
        });
        if orphan {
            tracing::info!(region = info.id, "removing the daughter of a split that did not commit");
            fs.remove_dir_all(&dir)?;
            continue;
        }
        keep.push((dir, info));
    }
    Ok(keep)
}

/// Splits `region` if its files exceed the table's maximum region size.
pub(crate) fn maybe_split(inner: &Arc<StoreInner>, table: &Arc<TableState>, region: &Arc<Region>) -> Result<bool> {
    if region.is_closed() || region.files_size() <= table.desc.max_region_size {
        return Ok(false);
    }
    split_region(inner, table, region, None)
}

/// The row at the middle of the region's largest family (by cells).
fn midpoint_row(region: &Region) -> Result<Option<Vec<u8>>> {
    let Some(store) = region.stores().max_by_key(|s| s.files_size()) else { return Ok(None) };
    let files = store.files();
    let total: u64 = files.iter().map(|f| f.info().cell_count).sum();
    let cursors: Vec<Box<dyn CellCursor>> =
        files.iter().map(|f| Box::new(f.scanner()) as Box<dyn CellCursor>).collect();
    let mut cursor = MergedCursor::new(cursors);
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
/// cannot be split there (a single row, or a split point outside it).
pub(crate) fn split_region(
    inner: &Arc<StoreInner>,
    table: &Arc<TableState>,
    region: &Arc<Region>,
    at: Option<Vec<u8>>,
) -> Result<bool> {
    let _split = table.split_lock.lock();
    if region.is_closed() || !table.regions.read().iter().any(|r| Arc::ptr_eq(r, region)) {
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
    region.close_and_drain();
    let result = write_daughters(inner, region, &mid);
    let daughters = match result {
        Ok(d) => d,
        Err(e) => {
            region.reopen();
            return Err(e);
        }
    };
    let fs = inner.ctx.fs.as_ref();
    // The commit point.
    if let Err(e) = fs.write_atomic(&region.dir().join(SPLIT_MARKER), b"split") {
        for (dir, _) in &daughters {
            let _ = fs.remove_dir_all(dir);
        }
        region.reopen();
        return Err(e);
    }
    let mut opened = Vec::with_capacity(2);
    for (dir, info) in daughters {
        opened.push(Arc::new(Region::open(dir, info, table.desc.clone(), inner.wal.clone(), &inner.region_config)?));
    }
    {
        let mut regions = table.regions.write();
        let i = regions.iter().position(|r| Arc::ptr_eq(r, region)).ok_or(StoreError::Closed)?;
        regions.splice(i..=i, opened);
    }
    if let Err(e) = remove_region_dir(fs, region.dir()) {
        tracing::warn!(error = %e, "could not remove a split parent; it is removed at the next open");
    }
    Ok(true)
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

fn write_daughters(inner: &Arc<StoreInner>, parent: &Arc<Region>, mid: &[u8]) -> Result<Vec<(PathBuf, RegionInfo)>> {
    parent.flush()?;
    let fs = inner.ctx.fs.clone();
    let p = parent.info();
    let halves = [(p.start_key.clone(), mid.to_vec()), (mid.to_vec(), p.end_key.clone())];
    let mut out: Vec<(PathBuf, RegionInfo)> = Vec::new();
    for (start, end) in halves {
        let info = RegionInfo {
            id: inner.next_region_id.fetch_add(1, Ordering::Relaxed),
            table: p.table.clone(),
            start_key: start.clone(),
            end_key: end.clone(),
            parent: Some(p.id),
        };
        let dir = parent.dir().with_file_name(info.dir_name());
        let written = (|| -> Result<()> {
            fs.create_dir_all(&dir)?;
            for store in parent.stores() {
                let family_dir = dir.join(store.name());
                fs.create_dir_all(&family_dir)?;
                let files = store.files();
                let cursors: Vec<Box<dyn CellCursor>> =
                    files.iter().map(|f| Box::new(f.scanner()) as Box<dyn CellCursor>).collect();
                let mut cursor = MergedCursor::new(cursors);
                cursor.seek(&CellKey::first_on_row(&start))?;
                let name = format!("{:016x}-split.sf", info.id);
                let tmp = crate::fs::tmp_path(&family_dir.join(&name));
                let d = store.descriptor();
                let opts = StoreFileOptions {
                    block_size: d.block_size,
                    compression: d.compression,
                    bloom: d.bloom,
                    ..StoreFileOptions::default()
                };
                let mut writer = StoreFileWriter::create(fs.clone(), &tmp, opts)?;
                // Everything is copied: the daughters hold exactly the parent's cells.
                let mut written = 0u64;
                while let Some(c) = cursor.current() {
                    if !end.is_empty() && c.row() >= end.as_slice() {
                        break;
                    }
                    writer.append(c)?;
                    written += 1;
                    cursor.advance()?;
                }
                let mut manifest = StoreManifest { files: Vec::new(), flushed_seq: store.flushed_seq() };
                if written > 0 {
                    writer.finish(FileMetaExtra::default())?;
                    fs.rename(&tmp, &family_dir.join(&name))?;
                    manifest.files.push(name);
                } else {
                    writer.abandon()?;
                }
                manifest.commit(fs.as_ref(), &family_dir)?;
            }
            let bytes = serde_json::to_vec_pretty(&info).map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            fs.write_atomic(&dir.join(crate::region::REGION_INFO_NAME), &bytes)
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
