//! Changing a table's families (HBase's `modifyTable`, the shell's
//! `alter`): families added, removed, or given new settings (versions, TTL,
//! in-memory compaction policy, bloom filter, compression, block size,
//! caching).
//!
//! How: under the DDL lock and the table's change lock (no split, merge,
//! close or open meanwhile), requests are refused (the table reads as
//! disabled), every region is flushed and drained, the new descriptor is
//! written (the commit point), every region is opened again from its
//! directory under it, and the catalog swaps the table whole. Then the
//! directories of removed families go, and the table serves again. HBase
//! reopens regions one at a time and its clients retry; ours refuse calls
//! with "table disabled" for the seconds the flushes take.
//!
//! Crash safety: before the descriptor is written the table reopens as it
//! was (its regions' files are untouched, every edit flushed or in the WAL).
//! After it, the table reopens altered: WAL edits of a removed family are
//! skipped at replay (`Region::replay`, as HBase skips them), and a removed
//! family's directory left by the crash is never read (a region opens only
//! the families its descriptor names); an alter that adds a family of that
//! name removes it before it commits, and dropping the table removes it. An
//! added family's manifest starts at the region's highest flushed sequence
//! id, so a removed family's edits of the same name still in the WAL are
//! never replayed into it.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::Store;
use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::region::Region;
use crate::region::state::RegionState;
use crate::table::TableDescriptor;

impl Store {
    /// Gives table `desc.name` the families of `desc`: families new to it
    /// are added (empty), families it lacks are removed with their data,
    /// and the others take `desc`'s settings. Works on an enabled or a
    /// disabled table; a region closed by an operator stays closed.
    pub fn alter_table(&self, desc: TableDescriptor) -> Result<()> {
        self.check_open()?;
        desc.validate()?;
        let _ddl = self.inner.catalog.lock_ddl();
        let t = self.table(&desc.name)?;
        let _changes = t.lock_changes();
        if self.as_member().is_some() && t.is_enabled() {
            // Other servers hold regions of it open: they must have drained
            // them (a disable) before its families' files change.
            return Err(StoreError::AlterRefused {
                table: desc.name.clone(),
                reason: "it is enabled; in a cluster a table is altered disabled (the admin alter call does that)"
                    .into(),
            });
        }
        let started = std::time::Instant::now();
        let regions = t.regions();
        if let Some(r) = regions
            .iter()
            .find(|r| !matches!(r.state(), RegionState::Open | RegionState::Closed | RegionState::Offline))
        {
            return Err(StoreError::AlterRefused {
                table: desc.name.clone(),
                reason: format!("region {} is {}", r.info().region_name(), r.state()),
            });
        }
        let names = |d: &TableDescriptor| -> BTreeSet<String> { d.families.iter().map(|f| f.name.clone()).collect() };
        let (before, after) = (names(&t.desc), names(&desc));
        let removed: Vec<String> = before.difference(&after).cloned().collect();
        let added: Vec<String> = after.difference(&before).cloned().collect();
        let enabled = t.is_enabled();
        let desc = Arc::new(desc);
        if enabled {
            self.inner.catalog.apply(CatalogEdit::SetEnabled { table: desc.name.clone(), enabled: false })?;
        }
        let mut committed = false;
        let altered = self.reopen_under(&regions, &desc, &added, enabled, &mut committed);
        if let Err(e) = altered {
            if committed {
                tracing::error!(table = %desc.name, error = %e,
                    "alter committed the new descriptor but could not open the table under it; \
                     it serves again when the store is opened next");
                return Err(e);
            }
            // Nothing was committed: the old regions serve again.
            for r in &regions {
                if r.state() == RegionState::Open {
                    r.stores().for_each(|s| s.set_retired(false));
                    r.reopen();
                }
            }
            if enabled {
                self.inner.catalog.apply(CatalogEdit::SetEnabled { table: desc.name.clone(), enabled: true })?;
            }
            return Err(e);
        }
        let fs = self.inner.ctx.fs.as_ref();
        for r in &regions {
            for family in &removed {
                let dir = crate::layout::family_dir(r.dir(), family)?;
                if fs.exists(&dir)? {
                    fs.remove_dir_all(&dir)?;
                }
            }
            fs.sync_dir(r.dir())?;
        }
        // Old WAL files hold only flushed edits now; archiving them is not
        // part of the alter (the next flush's pass retries a failed one).
        if let Err(e) = self.inner.archive_wal() {
            tracing::warn!(table = %desc.name, error = %e, "could not archive WAL files after an alter");
        }
        tracing::info!(
            table = %desc.name,
            added = ?added,
            removed = ?removed,
            families = desc.families.len(),
            regions = regions.len(),
            seconds = started.elapsed().as_secs_f64(),
            "altered table"
        );
        Ok(())
    }

    /// Flushes and drains `regions`, commits `desc` (`committed` tells
    /// whether it got that far), opens each region again under it and swaps
    /// the table in the catalog. An error before the commit leaves the table
    /// as it was (the caller serves the old regions again); an error after
    /// leaves it unserved until the store is opened again, altered.
    fn reopen_under(
        &self,
        regions: &[Arc<Region>],
        desc: &Arc<TableDescriptor>,
        added: &[String],
        enabled: bool,
        committed: &mut bool,
    ) -> Result<()> {
        drain(regions)?;
        // Nothing of the alter reaches the root once this server may no
        // longer own the table's regions (`StoreOptions::commit_fence`).
        self.inner.ctx.may_commit()?;
        // A directory an earlier removal of a family of this name left
        // behind (a crash before its removal) must not come back as the new
        // family's data: it goes before the descriptor names the family.
        // A family's replay floor is its manifest's flushed sequence id: an
        // added family starts at the highest the region has flushed, so that
        // edits of a removed family of the same name still in the WAL are
        // not replayed into it after a crash.
        let fs = self.inner.ctx.fs.as_ref();
        for r in regions {
            let floor = region_flushed_seq(fs, r.dir())?;
            for family in added {
                let dir = crate::layout::family_dir(r.dir(), family)?;
                if fs.exists(&dir)? {
                    fs.remove_dir_all(&dir)?;
                }
                fs.create_dir_all(&dir)?;
                crate::manifest::StoreManifest { files: Vec::new(), flushed_seq: floor }.commit(fs, &dir)?;
                fs.sync_dir(r.dir())?;
            }
        }
        self.write_table_file(desc, enabled)?;
        *committed = true;
        let fresh = reopen(&self.inner, regions, desc)?;
        let table = Arc::new(TableState::new(desc.clone(), enabled, fresh));
        self.inner.catalog.apply(CatalogEdit::ReplaceTable(table))
    }
}

/// The highest sequence id any family of the region in `region_dir` has
/// flushed, from the manifests on disk (the region is drained, so every
/// edit up to it is in its files).
fn region_flushed_seq(fs: &dyn crate::fs::FileSystem, region_dir: &std::path::Path) -> Result<u64> {
    let mut floor = 0;
    for family in fs.list(region_dir)?.into_iter().filter(|n| crate::layout::may_be_family_dir(n)) {
        let dir = region_dir.join(family);
        if fs.exists(&crate::manifest::StoreManifest::path(&dir))? {
            floor = floor.max(crate::manifest::StoreManifest::load(fs, &dir)?.flushed_seq);
        }
    }
    Ok(floor)
}

/// Flushes and drains the regions of `regions` open here, and retires
/// their stores: nothing of them waits in memory or in the WAL.
pub(super) fn drain(regions: &[Arc<Region>]) -> Result<()> {
    for r in regions.iter().filter(|r| r.state() == RegionState::Open) {
        let held: Vec<_> = r.stores().map(|s| s.hold_compactions()).collect();
        crate::region::open_close::preclose_flush(r)?;
        r.close_and_drain();
        r.flush_all()?;
        r.stores().for_each(|s| s.set_retired(true));
        drop(held);
    }
    Ok(())
}

/// `regions` (drained) again under `desc`, each as it was: open here,
/// closed by an operator, or (a cluster member's) an OFFLINE placeholder
/// for a region another server holds.
pub(super) fn reopen(
    services: &crate::services::Services,
    regions: &[Arc<Region>],
    desc: &Arc<TableDescriptor>,
) -> Result<Vec<Arc<Region>>> {
    let mut fresh = Vec::with_capacity(regions.len());
    for r in regions {
        if r.state() == RegionState::Offline {
            let dir = r.dir().to_path_buf();
            fresh.push(Arc::new(Region::unassigned(
                dir,
                r.info().clone(),
                desc.clone(),
                services.wal.clone(),
                &services.region_config,
            )?));
            continue;
        }
        services.wal.forget_region(r.info().id);
        let opened = services.open_region(r.dir().to_path_buf(), r.info().clone(), desc.clone())?;
        if r.state() == RegionState::Closed {
            // Closed by an operator: it stays closed until opened.
            opened.close();
            opened.stores().for_each(|s| s.set_retired(true));
        }
        fresh.push(opened);
    }
    Ok(fresh)
}
