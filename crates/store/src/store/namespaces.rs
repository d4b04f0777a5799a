//! Namespaces, as HBase has them: `default` (tables named without one) and
//! `hbase` (the system's own tables) always exist; others are created and
//! dropped by name. A namespace is a directory under `data/` with its
//! descriptor (`layout::NAMESPACE_DESC`, written last: the commit), read
//! from the root on every call, so every member of a cluster sharing the
//! root sees the same namespaces. Its tables are the catalog's tables named
//! `ns:qualifier`.
//!
//! Thread safety: creation and removal run under the catalog's DDL lock,
//! as table DDL does, so a table cannot be created in a namespace being
//! dropped.

use super::Store;
use crate::error::{Result, StoreError};
use crate::layout::NamespaceFile;
use crate::names::{DEFAULT_NAMESPACE, SYSTEM_NAMESPACE, check_namespace_name};

/// A namespace and its configuration (HBase's `NamespaceDescriptor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceDescriptor {
    pub name: String,
    pub configuration: std::collections::BTreeMap<String, String>,
}

impl Store {
    /// Whether namespace `name` exists.
    pub fn namespace_exists(&self, name: &str) -> Result<bool> {
        if name == DEFAULT_NAMESPACE || name == SYSTEM_NAMESPACE {
            return Ok(true);
        }
        check_namespace_name(name)?;
        let dir = crate::layout::namespace_dir(&self.inner.dir, name)?;
        self.inner.ctx.fs.exists(&crate::layout::namespace_desc(&dir))
    }

    /// Every namespace, by name.
    pub fn list_namespaces(&self) -> Result<Vec<String>> {
        let fs = self.inner.ctx.fs.as_ref();
        let data = crate::layout::data_dir(&self.inner.dir);
        let mut out = vec![DEFAULT_NAMESPACE.to_string(), SYSTEM_NAMESPACE.to_string()];
        for name in fs.list(&data)? {
            if name.starts_with('.') || out.contains(&name) {
                continue;
            }
            if fs.exists(&crate::layout::namespace_desc(&data.join(&name)))? {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Namespace `name`'s descriptor.
    pub fn describe_namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        if !self.namespace_exists(name)? {
            return Err(StoreError::NamespaceNotFound(name.to_string()));
        }
        let dir = crate::layout::namespace_dir(&self.inner.dir, name)?;
        let path = crate::layout::namespace_desc(&dir);
        let file: Option<NamespaceFile> = crate::layout::read_json(self.inner.ctx.fs.as_ref(), &path, "namespace")?;
        let configuration = file.map(|f| f.configuration).unwrap_or_default();
        Ok(NamespaceDescriptor { name: name.to_string(), configuration })
    }

    /// The tables of namespace `name` (their full names, `ns:t`; a table of
    /// `default` by its qualifier).
    pub fn namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        if !self.namespace_exists(name)? {
            return Err(StoreError::NamespaceNotFound(name.to_string()));
        }
        let mut tables: Vec<String> =
            self.list_tables().into_iter().filter(|t| crate::names::split_table_name(t).0 == name).collect();
        tables.sort();
        Ok(tables)
    }

    /// Creates namespace `name`.
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> Result<()> {
        self.check_open()?;
        check_namespace_name(&descriptor.name)?;
        let _ddl = self.inner.catalog.lock_ddl();
        if self.namespace_exists(&descriptor.name)? {
            return Err(StoreError::NamespaceExists(descriptor.name));
        }
        let file = NamespaceFile { name: descriptor.name.clone(), configuration: descriptor.configuration };
        crate::layout::write_namespace(self.inner.ctx.fs.as_ref(), &self.inner.dir, &file)?;
        self.inner.ctx.fs.sync_dir(&crate::layout::data_dir(&self.inner.dir))?;
        tracing::info!(namespace = %descriptor.name, "created namespace");
        Ok(())
    }

    /// Drops namespace `name`, which must be empty and neither `default`
    /// nor `hbase` (HBase's rules).
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if name == DEFAULT_NAMESPACE || name == SYSTEM_NAMESPACE {
            return Err(StoreError::NamespaceConstraint(format!("Reserved namespace {name} cannot be removed.")));
        }
        let _ddl = self.inner.catalog.lock_ddl();
        if !self.namespace_exists(name)? {
            return Err(StoreError::NamespaceNotFound(name.to_string()));
        }
        let fs = self.inner.ctx.fs.as_ref();
        let dir = crate::layout::namespace_dir(&self.inner.dir, name)?;
        // Tables this server has not heard of yet (another member created
        // them) count too: the root decides.
        let on_root = fs.list(&dir)?.into_iter().filter(|n| !n.starts_with('.')).count();
        let listed = self.namespace_tables(name)?.len();
        let tables = on_root.max(listed);
        if tables > 0 {
            return Err(StoreError::NamespaceConstraint(format!(
                "Only empty namespaces can be removed. Namespace {name} has {tables} tables"
            )));
        }
        // Renamed away first (one step): a crash after it leaves trash,
        // removed at the next open.
        let trash = crate::layout::trash_for(&dir);
        fs.rename(&dir, &trash)?;
        fs.remove_dir_all(&trash)?;
        fs.sync_dir(&crate::layout::data_dir(&self.inner.dir))?;
        tracing::info!(namespace = %name, "dropped namespace");
        Ok(())
    }
}
