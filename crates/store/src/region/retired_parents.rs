//! Retired parent regions — a split's parent, a merge's two parents — and
//! what open does with the leftovers of a split or merge that a crash
//! interrupted.
//!
//! A parent stays on disk, never opened, while a region reads its files
//! through references; then its directory goes through the trash (renamed
//! to a `.trash-` name, fsynced, deleted; open deletes what a crash left
//! under that name), so a parent is never seen half-deleted.
//!
//! Commit points, and so what open concludes from what it finds:
//! - split: the `.split` marker in the parent. A parent with it is retired;
//!   a daughter whose parent is present without it is the leftover of a
//!   split that did not commit and goes (the parent is intact);
//! - merge: the merged region's `.regioninfo`, written once its references
//!   and manifests are durable. The parents named by any merged region's
//!   `merged_from` are retired; their `.merged` markers are written right
//!   after the commit, and by open if a crash (or a failed write) came
//!   first;
//! - a region directory without `.regioninfo` never committed (a daughter or
//!   merged region being written) and goes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::fs::FileSystem;
use crate::layout::{self, Marker};
use crate::region::{Region, RegionInfo};
use crate::services::Services;

/// What open does with the regions found on disk.
pub(crate) struct OnDisk {
    /// Regions to open.
    pub(crate) regions: Vec<(PathBuf, RegionInfo)>,
    /// Retired parents of committed splits and merges: kept while a region
    /// refers to them.
    pub(crate) retired: Vec<PathBuf>,
}

pub(crate) fn is_retired(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
    Ok(layout::has_marker(fs, dir, Marker::Split)? || layout::has_marker(fs, dir, Marker::Merged)?)
}

/// Sorts the regions found on disk (with their `.regioninfo`) into those to
/// open and retired parents, removing the leftovers of splits that did not
/// commit and finishing merges that did.
pub(crate) fn resolve_leftovers(fs: &dyn FileSystem, infos: Vec<(PathBuf, RegionInfo)>) -> Result<OnDisk> {
    let mut out = OnDisk { regions: Vec::new(), retired: Vec::new() };
    let mut retired_ids = Vec::new();
    for (dir, info) in &infos {
        if is_retired(fs, dir)? {
            retired_ids.push(info.id);
        }
    }
    // Every merged region names its parents, retired or not: a merged
    // region may itself have split or merged since, while a crash (or a
    // failed marker write) left a parent unmarked.
    let merged_parents: Vec<u64> = infos.iter().flat_map(|(_, info)| info.merged_from.iter().copied()).collect();
    for (dir, info) in &infos {
        if merged_parents.contains(&info.id) && !retired_ids.contains(&info.id) {
            tracing::info!(region = info.id, "finishing a merge that committed: marking its parent");
            layout::write_marker(fs, dir, Marker::Merged, &layout::unfenced)?;
            retired_ids.push(info.id);
        }
    }
    for (dir, info) in infos {
        if retired_ids.contains(&info.id) {
            out.retired.push(dir);
            continue;
        }
        let orphan = info.parent.is_some_and(|p| {
            !retired_ids.contains(&p) && fs.exists(&layout::sibling_region_dir(&dir, p)).unwrap_or(false)
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

/// Removes the directory of retired parent `parent_id` of `table` once no
/// region of the table reads through references into it.
pub(crate) fn remove_parent_if_unreferenced(services: &Services, table: &str, parent_id: u64) -> Result<()> {
    let Ok((t, _change)) = services.catalog.lock_changes(table) else { return Ok(()) };
    let regions = t.regions();
    let parent_dir = layout::region_dir(&services.table_dir(table)?, parent_id);
    remove_if_unreferenced(services.ctx.fs.as_ref(), &parent_dir, &regions)
}

/// Removes `parent_dir` (a retired parent, with its marker) when none of
/// `regions` reads through references into it. A region this server does
/// not hold open (a cluster member's OFFLINE placeholder, whose stores are
/// not loaded: another server may be reading it) is judged by its
/// manifests on disk.
pub(crate) fn remove_if_unreferenced(fs: &dyn FileSystem, parent_dir: &Path, regions: &[Arc<Region>]) -> Result<()> {
    let name = parent_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !fs.exists(parent_dir)? || !is_retired(fs, parent_dir)? {
        return Ok(());
    }
    for r in regions {
        let refers = if r.state() == crate::region::state::RegionState::Offline {
            refers_on_disk(fs, r.dir(), &name)?
        } else {
            r.refers_to(&name)
        };
        if refers {
            return Ok(());
        }
    }
    tracing::info!(dir = %parent_dir.display(), "removing a retired parent region no region refers to");
    remove_region_dir(fs, parent_dir)
}

/// Whether the region in `region_dir` reads through a reference into the
/// region directory named `parent`, by its families' committed manifests
/// (a reference is named `<file>.<parent dir>.ref`).
fn refers_on_disk(fs: &dyn FileSystem, region_dir: &Path, parent: &str) -> Result<bool> {
    for family in fs.list(region_dir)?.into_iter().filter(|n| layout::may_be_family_dir(n)) {
        let dir = region_dir.join(&family);
        if !fs.exists(&layout::manifest(&dir))? {
            continue;
        }
        if crate::manifest::StoreManifest::load(fs, &dir)?.files.iter().any(|f| layout::refers_into(f, parent)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether any region directory under `table_dir` holds a store file (a
/// `.sf` file in a family directory).
pub(crate) fn holds_store_files(fs: &dyn FileSystem, table_dir: &Path) -> Result<bool> {
    for region in fs.list(table_dir)?.into_iter().filter(|n| layout::is_region_dir_name(n)) {
        let region_dir = table_dir.join(region);
        for family in fs.list(&region_dir)?.into_iter().filter(|n| layout::may_be_family_dir(n)) {
            // Not a directory (or gone): nothing under it.
            let Ok(names) = fs.list(&region_dir.join(family)) else { continue };
            if names.iter().any(|n| layout::is_store_file(n)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Removes a region's (or a table's) directory crash-safely: one atomic
/// rename takes it out of use, then the renamed directory is deleted.
pub(crate) fn remove_region_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let trash = layout::trash_for(dir);
    fs.rename(dir, &trash)?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent)?;
    }
    fs.remove_dir_all(&trash)
}
