//! The gateway's namespace calls: create, drop, list and describe
//! namespaces, and list a namespace's tables. Namespaces live on the root
//! (see `store::store::namespaces`), so every member of a cluster sharing
//! it sees the same ones without a broadcast.
//!
//! Thread safety: each call is one store call (the store serialises
//! namespace DDL under its DDL lock).

use store::NamespaceDescriptor;

use super::{Gateway, GatewayResult};

impl Gateway {
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> GatewayResult<()> {
        Ok(self.store.create_namespace(descriptor)?)
    }

    /// Drops an empty namespace (neither `default` nor `hbase`).
    pub fn drop_namespace(&self, name: &str) -> GatewayResult<()> {
        Ok(self.store.drop_namespace(name)?)
    }

    /// Every namespace's name.
    pub fn list_namespaces(&self) -> GatewayResult<Vec<String>> {
        Ok(self.store.list_namespaces()?)
    }

    pub fn describe_namespace(&self, name: &str) -> GatewayResult<NamespaceDescriptor> {
        Ok(self.store.describe_namespace(name)?)
    }

    /// The full names of namespace `name`'s tables (`ns:t`; `t` in `default`).
    pub fn namespace_tables(&self, name: &str) -> GatewayResult<Vec<String>> {
        Ok(self.store.namespace_tables(name)?)
    }
}
