//! Writing a region made of references to other regions' files: a split's
//! daughters (a half of each parent file) and a merge's merged region (the
//! whole of each parent file, as a top half from the parent's start row).
//!
//! The region is complete on disk before its `.regioninfo` is written:
//! references fsynced, each family's manifest committed, the family
//! directories' entries fsynced; then `.regioninfo` and the region
//! directory's entry in its table directory. A directory without
//! `.regioninfo` is therefore never a region, and open removes it.

use std::path::Path;

use crate::error::Result;
use crate::fs::FileSystem;
use crate::manifest::StoreManifest;
use crate::region::{Region, RegionInfo};
use crate::storefile::{Half, Reference};

/// What one family of the new region refers to.
pub(crate) struct FamilyReferences {
    pub(crate) family: String,
    /// Every write at or below this is in the referred files.
    pub(crate) flushed_seq: u64,
    /// Oldest first, as manifests list files.
    pub(crate) references: Vec<Reference>,
}

/// For each family of `parent` (closed and flushed): references to the
/// files with rows in `half`, oldest first.
pub(crate) fn references_into(parent: &Region, half: &Half) -> Vec<FamilyReferences> {
    let parent_dir = parent.info().dir_name();
    parent
        .stores()
        .map(|store| {
            let references = store
                .files()
                .iter()
                .rev()
                .filter(|f| match (&f.info().first_row, &f.info().last_row) {
                    (Some(first), Some(last)) => half.overlaps(first, last),
                    _ => false,
                })
                .map(|f| Reference {
                    parent_region: parent_dir.clone(),
                    file: f.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                    half: half.clone(),
                })
                .collect();
            FamilyReferences { family: store.name().to_string(), flushed_seq: store.flushed_seq(), references }
        })
        .collect()
}

/// Writes the region `info` into `dir` from `families` (see the module
/// docs), calling `before_commit` just before `.regioninfo` (an error there
/// stops it), whose rename — the commit — `fence` must then allow
/// (`StoreContext::may_commit`). On error the directory may be left without
/// `.regioninfo`; the caller removes it (or open does).
pub(crate) fn write_region(
    fs: &dyn FileSystem,
    dir: &Path,
    info: &RegionInfo,
    families: &[FamilyReferences],
    before_commit: impl FnOnce() -> Result<()>,
    fence: &dyn Fn() -> Result<()>,
) -> Result<()> {
    fs.create_dir_all(dir)?;
    for f in families {
        let family_dir = crate::layout::family_dir(dir, &f.family)?;
        fs.create_dir_all(&family_dir)?;
        let mut manifest = StoreManifest { files: Vec::with_capacity(f.references.len()), flushed_seq: f.flushed_seq };
        for reference in &f.references {
            reference.write(fs, &family_dir)?;
            manifest.files.push(reference.file_name());
        }
        manifest.commit(fs, &family_dir)?;
    }
    fs.sync_dir(dir)?;
    before_commit()?;
    crate::layout::write_json(fs, &crate::layout::region_info(dir), info, fence)?;
    if let Some(table_dir) = dir.parent() {
        fs.sync_dir(table_dir)?;
    }
    Ok(())
}
