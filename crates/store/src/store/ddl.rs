//! Table and region administration of a `Store`: create, disable, enable
//! and delete tables (their descriptor file is the commit point of a
//! creation), and close, open and merge single regions. Each change to the
//! table or region lists is an edit to the catalog.
//!
//! Thread safety: table DDL runs under the catalog's DDL lock, region
//! close/open/merge under the table's change lock (lock order in
//! `catalog.rs`).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Store;
use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::region::{Region, RegionInfo};
use crate::table::TableDescriptor;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct TableFile {
    pub(super) descriptor: TableDescriptor,
    pub(super) enabled: bool,
}

/// Reads a table's descriptor file. Its family names are checked as a
/// client's are (an older version accepted names that destroy data when
/// opened, a family `.` among them) and its table name must be its
/// directory's (so it is one plain path segment; a table an older version
/// named by laxer rules, `-t` say, still opens): such a descriptor is
/// refused as corrupt, and nothing of the table is touched.
pub(super) fn read_table_file(fs: &dyn FileSystem, path: &Path) -> Result<TableFile> {
    let file: TableFile = crate::layout::parse_json(path, &fs.read_all(path)?, "table descriptor")?;
    // The table's directory is `<ns>/<qualifier>` of the name it holds.
    fn name_of(p: Option<&Path>) -> Option<&str> {
        p.and_then(Path::file_name).and_then(|n| n.to_str())
    }
    let table_dir = path.parent();
    let on_disk = (name_of(table_dir.and_then(Path::parent)), name_of(table_dir));
    let (namespace, qualifier) = crate::names::split_table_name(&file.descriptor.name);
    if on_disk != (Some(namespace), Some(qualifier)) {
        return Err(StoreError::corruption(
            path,
            0,
            format!("the descriptor names table {:?}, not its directory's {:?}", file.descriptor.name, on_disk),
        ));
    }
    for family in &file.descriptor.families {
        if let Err(e) = crate::names::check_family_name(&family.name) {
            return Err(StoreError::corruption(
                path,
                0,
                format!(
                    "{e}; the table cannot be opened safely with this family: rename the family in the \
                     descriptor and its directories, or move the table's directory away"
                ),
            ));
        }
    }
    Ok(file)
}

impl Store {
    pub(super) fn write_table_file(&self, desc: &TableDescriptor, enabled: bool) -> Result<()> {
        let table_dir = self.inner.table_dir(&desc.name)?;
        self.inner.ctx.fs.create_dir_all(&table_dir)?;
        // A descriptor is a commit like a manifest: fenced.
        let file = TableFile { descriptor: desc.clone(), enabled };
        crate::layout::write_json(self.inner.ctx.fs.as_ref(), &crate::layout::table_desc(&table_dir), &file, &|| {
            self.inner.ctx.may_commit()
        })
    }

    /// Creates a table, pre-split at `split_keys`.
    pub fn create_table(&self, mut desc: TableDescriptor, split_keys: &[Vec<u8>]) -> Result<()> {
        self.check_open()?;
        desc.name = crate::names::canonical_table_name(&desc.name).to_string();
        desc.validate()?;
        let _ddl = self.inner.catalog.lock_ddl();
        let (namespace, _) = crate::names::split_table_name(&desc.name);
        if !self.namespace_exists(namespace)? {
            return Err(StoreError::NamespaceNotFound(namespace.to_string()));
        }
        if self.inner.catalog.contains_table(&desc.name) {
            return Err(StoreError::TableExists(desc.name.clone()));
        }
        // A cluster member may not have heard of a table another server
        // created yet: the root's descriptor decides.
        let on_root = crate::layout::table_desc(&self.inner.table_dir(&desc.name)?);
        if self.as_member().is_some() && self.inner.ctx.fs.exists(&on_root)? {
            return Err(StoreError::TableExists(desc.name.clone()));
        }
        let mut keys: Vec<Vec<u8>> = split_keys.to_vec();
        keys.sort();
        keys.dedup();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(StoreError::EmptySplitKey);
        }
        let desc = Arc::new(desc);
        let table_dir = self.inner.table_dir(&desc.name)?;
        let fs = self.inner.ctx.fs.as_ref();
        fs.create_dir_all(&table_dir)?;
        let mut bounds = vec![Vec::new()];
        bounds.extend(keys);
        let mut regions = Vec::with_capacity(bounds.len());
        for (i, start) in bounds.iter().enumerate() {
            let end = bounds.get(i + 1).cloned().unwrap_or_default();
            let info = RegionInfo {
                id: self.inner.new_region_id()?,
                table: desc.name.clone(),
                start_key: start.clone(),
                end_key: end,
                parent: None,
                merged_from: Vec::new(),
            };
            let dir = crate::layout::region_dir(&table_dir, info.id);
            regions.push(self.inner.open_region(dir, info, desc.clone())?);
        }
        // The descriptor is the commit point: without it the directory is
        // removed at the next open. The table directory's entry is made
        // durable with it.
        self.write_table_file(&desc, true)?;
        fs.sync_dir(table_dir.parent().unwrap_or(&table_dir))?;
        let (name, families, n) = (desc.name.clone(), desc.families.len(), regions.len());
        self.inner.catalog.apply(CatalogEdit::AddTable(Arc::new(TableState::new(desc, true, regions))))?;
        tracing::info!(table = %name, families, regions = n, "created table");
        Ok(())
    }

    pub fn list_tables(&self) -> Vec<String> {
        self.inner.catalog.table_names()
    }

    pub fn describe_table(&self, name: &str) -> Result<TableDescriptor> {
        Ok((*self.table(name)?.desc).clone())
    }

    pub fn is_table_enabled(&self, name: &str) -> Result<bool> {
        Ok(self.table(name)?.is_enabled())
    }

    /// The regions of a table, in key order.
    pub fn table_regions(&self, name: &str) -> Result<Vec<RegionInfo>> {
        Ok(self.table(name)?.regions().iter().map(|r| r.info().clone()).collect())
    }

    /// The region of table `name` whose id is `id`, if the table has it now.
    pub fn table_region(&self, name: &str, id: u64) -> Result<Option<RegionInfo>> {
        Ok(self.table(name)?.region_info(id))
    }

    /// The region whose encoded name (its directory's name, unique in the
    /// store) is `name`, with its table.
    pub(super) fn region_named(&self, name: &str) -> Result<(Arc<TableState>, Arc<Region>)> {
        self.inner.catalog.region_named(name).ok_or_else(|| StoreError::UnknownRegion(name.to_string()))
    }

    /// Closes one region (HBase's `unassign`): flushed, its files left to
    /// its directory alone, refusing requests with `NotServingRegion` until
    /// `open_region`, across restarts too. `name` is its encoded name
    /// ([`RegionInfo::dir_name`]).
    pub fn close_region(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if let Some(member) = self.as_member() {
            // In a cluster a closed region is one this server leaves to others.
            return member.unassign_region(name);
        }
        let (t, region) = self.region_named(name)?;
        crate::region::open_close::close_region(&self.inner, &t, &region)
    }

    /// Opens a closed region again from its directory (HBase's `assign`).
    pub fn open_region(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if let Some(member) = self.as_member() {
            return member.assign_region(name);
        }
        let (t, region) = self.region_named(name)?;
        crate::region::open_close::open_region(&self.inner, &t, &region).map(|_| ())
    }

    /// Merges two adjacent regions, named by their encoded names (HBase's
    /// `merge_region`); returns the merged region's.
    pub fn merge_regions(&self, a: &str, b: &str) -> Result<String> {
        self.check_open()?;
        let (t, ra) = self.region_named(a)?;
        let (tb, rb) = self.region_named(b)?;
        if !Arc::ptr_eq(&t, &tb) {
            return Err(StoreError::MergeRefused {
                a: a.into(),
                b: b.into(),
                reason: "they belong to different tables".into(),
            });
        }
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(t.desc.name.clone()));
        }
        crate::region::merge::merge_regions(&self.inner, &t, &ra, &rb).map(|m| m.info().dir_name())
    }

    /// The table of the region whose encoded name is `name`, if any.
    pub fn table_of_region(&self, name: &str) -> Option<String> {
        self.region_named(name).ok().map(|(t, _)| t.desc.name.clone())
    }

    /// Every region of `table` with its state, in key order.
    pub fn region_states(&self, table: &str) -> Result<Vec<(RegionInfo, crate::region::state::RegionState)>> {
        Ok(self.table(table)?.regions().iter().map(|r| (r.info().clone(), r.state())).collect())
    }

    /// Flushes and stops serving a table; its data stays on disk.
    pub fn disable_table(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.catalog.lock_ddl();
        let t = self.table(name)?;
        if !t.is_enabled() {
            return Err(StoreError::TableDisabled(name.to_string()));
        }
        self.inner.catalog.apply(CatalogEdit::SetEnabled { table: name.to_string(), enabled: false })?;
        for r in t.regions() {
            r.flush()?;
        }
        self.write_table_file(&t.desc, false)?;
        tracing::info!(table = %name, "disabled table");
        Ok(())
    }

    pub fn enable_table(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.catalog.lock_ddl();
        let t = self.table(name)?;
        if t.is_enabled() {
            return Err(StoreError::TableEnabled(name.to_string()));
        }
        self.write_table_file(&t.desc, true)?;
        self.inner.catalog.apply(CatalogEdit::SetEnabled { table: name.to_string(), enabled: true })?;
        tracing::info!(table = %name, "enabled table");
        Ok(())
    }

    /// Deletes a disabled table and all its data.
    pub fn delete_table(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.catalog.lock_ddl();
        let t = self.table(name)?;
        if t.is_enabled() {
            return Err(StoreError::TableEnabled(name.to_string()));
        }
        // A server that may no longer own the table removes nothing.
        self.inner.ctx.may_commit()?;
        // No split, merge, close or open of its regions runs meanwhile.
        let _changes = t.lock_changes();
        for r in t.regions() {
            r.close_and_drain();
            self.inner.wal.forget_region(r.info().id);
        }
        self.inner.catalog.apply(CatalogEdit::DropTable(name.to_string()))?;
        crate::region::retired_parents::remove_region_dir(self.inner.ctx.fs.as_ref(), &self.inner.table_dir(name)?)?;
        self.inner.archive_wal()?;
        tracing::info!(table = %name, "deleted table");
        Ok(())
    }
}
