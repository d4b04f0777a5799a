//! Table descriptors the tests share.

use crate::table::{FamilyDescriptor, TableDescriptor};
use crate::wal::Durability;

/// Table `name` with `families` (default settings each), whose writes are
/// acknowledged once synced to the WAL (`SyncWal`): a crash loses none.
pub fn sync_wal_table(name: &str, families: &[&str]) -> TableDescriptor {
    let families = families.iter().map(|f| FamilyDescriptor::new(*f)).collect();
    TableDescriptor { durability: Durability::SyncWal, ..TableDescriptor::new(name, families) }
}
