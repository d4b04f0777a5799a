//! `MasterCatalog`: the active master's durable region → server map, HBase's
//! `hbase:meta` locations, kept in ZooKeeper: one persistent znode
//! `regions/<region id>` per region, holding an `http_api::CatalogEntry`
//! as JSON.
//!
//! Why the master needs it: the servers' statuses say what each live server
//! holds now, and say nothing about a server that died or cannot be read.
//! The catalog says where the master put each region, and it outlives the
//! master that wrote it and the server that held the region. So:
//! - a dead server's regions are known from the catalog and reassigned even
//!   while another live server's status cannot be read (HBase's
//!   `ServerCrashProcedure` takes a dead server's regions from meta), and
//! - a master that takes over knows every table at once and assigns at its
//!   first pass, not a pass later.
//!
//! Writes come first (intent before action): before the master asks a
//! server to open a region it records the region OPENING there; before it
//! closes one to move it, CLOSING on the old server. After each pass that
//! read every serving server's status it reconciles: each region a server
//! holds is recorded with that server and the state it reports; a region no
//! server holds is OFFLINE unless the catalog puts it on a dead server (kept,
//! for its recovery) or an operator closed it (CLOSED: kept, and not
//! assigned until an operator assigns it, as HBase's `unassign`); a region
//! no server lists any more (a dropped table, a split or merged parent) is
//! removed.
//!
//! The catalog is the one authority over where a region opens or closes:
//! a region server in a cluster opens a region for an admin call only when
//! the catalog records it OPENING on that server, and closes one only when
//! it records it CLOSING or CLOSED there (`server/src/admin.rs`). Operators
//! move regions through the master (`operator.rs`).
//!
//! Invariant the master relies on: a region the catalog puts on a server
//! that has left the membership is on no live server. Servers open regions
//! on their own only when they make new ones (a created table, split
//! daughters, a merged region), which the catalog records at the next pass
//! on the server holding them; every other open is the master's, recorded
//! first. Server names are unique per start, so a dead server never comes
//! back under its name.
//!
//! Thread safety: owned by the active master's poller thread, the only
//! writer. A standby writes nothing; it loads the catalog when it becomes
//! active. A master whose session ended can write nothing more (ZooKeeper
//! refuses an expired session).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http_api::{CatalogEntry, RegionState};

use crate::error::{ClusterError, Result};
use crate::zk::Zk;

/// The znode (under the cluster root) whose children are the regions.
pub const REGIONS: &str = "regions";

/// Where catalog entries are kept: ZooKeeper in a cluster; a map in the
/// assignment pass's unit tests.
pub trait CatalogStore: Send + Sync {
    /// Every entry: region id and data.
    fn list(&self) -> Result<Vec<(String, Vec<u8>)>>;
    fn write(&self, region: &str, data: &[u8]) -> Result<()>;
    fn remove(&self, region: &str) -> Result<()>;
}

impl CatalogStore for Zk {
    fn list(&self) -> Result<Vec<(String, Vec<u8>)>> {
        self.ensure(REGIONS)?;
        let mut out = Vec::new();
        for id in self.children(REGIONS)? {
            if let Some(data) = self.get(&format!("{REGIONS}/{id}"))? {
                out.push((id, data));
            }
        }
        Ok(out)
    }

    fn write(&self, region: &str, data: &[u8]) -> Result<()> {
        self.ensure(REGIONS)?;
        self.put(&format!("{REGIONS}/{region}"), data)
    }

    fn remove(&self, region: &str) -> Result<()> {
        self.delete(&format!("{REGIONS}/{region}"))
    }
}

/// Where the catalog puts one region, as any member reads it (a region
/// server checks an assign call against it). `None`: no entry. Synced
/// first, so that the master's write just before its call is seen even
/// through another ZooKeeper server.
pub fn location(zk: &Zk, region: &str) -> Result<Option<CatalogEntry>> {
    zk.ping()?;
    let Some(data) = zk.get(&format!("{REGIONS}/{region}"))? else { return Ok(None) };
    serde_json::from_slice(&data).map(Some).map_err(|e| ClusterError::Malformed {
        what: "catalog entry",
        path: zk.path(&format!("{REGIONS}/{region}")),
        reason: e.to_string(),
    })
}

/// The catalog as the master holds it: every entry, read once when it
/// became active and kept in step with each write.
pub struct MasterCatalog {
    store: Arc<dyn CatalogStore>,
    entries: BTreeMap<String, CatalogEntry>,
    /// Grows with every change (the master copies the entries into its
    /// page's view only when it moved).
    version: u64,
}

impl std::fmt::Debug for MasterCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterCatalog").field("entries", &self.entries).finish()
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl MasterCatalog {
    /// Reads every entry. A malformed entry is reported and left out (the
    /// next reconciling pass writes it again); it does not stop the master.
    pub fn load(store: Arc<dyn CatalogStore>) -> Result<MasterCatalog> {
        let mut entries = BTreeMap::new();
        for (id, data) in store.list()? {
            match serde_json::from_slice::<CatalogEntry>(&data) {
                Ok(location) => {
                    entries.insert(id, location);
                }
                Err(e) => {
                    let e = ClusterError::Malformed { what: "catalog entry", path: id, reason: e.to_string() };
                    tracing::warn!(error = %e, "catalog entry left out");
                }
            }
        }
        Ok(MasterCatalog { store, entries, version: 0 })
    }

    pub fn get(&self, region: &str) -> Option<&CatalogEntry> {
        self.entries.get(region)
    }

    pub fn entries(&self) -> &BTreeMap<String, CatalogEntry> {
        &self.entries
    }

    /// A number that changes whenever an entry does.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The tables the catalog has regions of.
    pub fn tables(&self) -> BTreeSet<String> {
        self.entries.values().map(|l| l.table.clone()).collect()
    }

    /// Records `region` of `table` on `server` in `state`, durably, unless
    /// that is what the catalog already says.
    pub fn record(&mut self, region: &str, table: &str, server: Option<&str>, state: RegionState) -> Result<()> {
        if let Some(l) = self.entries.get(region)
            && l.table == table
            && l.server.as_deref() == server
            && l.state == state
        {
            return Ok(());
        }
        let location = CatalogEntry { table: table.into(), server: server.map(str::to_string), state, at_ms: now_ms() };
        self.store.write(region, &serde_json::to_vec(&location).expect("a location serialises"))?;
        self.entries.insert(region.to_string(), location);
        self.version += 1;
        Ok(())
    }

    /// Removes `region`'s entry.
    pub fn remove(&mut self, region: &str) -> Result<()> {
        if self.entries.contains_key(region) {
            self.store.remove(region)?;
            self.entries.remove(region);
            self.version += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Catalog entries in memory, for unit tests of the pass.
    #[derive(Default)]
    pub(crate) struct MemoryStore {
        pub(crate) entries: Mutex<BTreeMap<String, Vec<u8>>>,
        pub(crate) fail_writes: std::sync::atomic::AtomicBool,
    }

    impl CatalogStore for MemoryStore {
        fn list(&self) -> Result<Vec<(String, Vec<u8>)>> {
            Ok(self.entries.lock().expect("entries").iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        }

        fn write(&self, region: &str, data: &[u8]) -> Result<()> {
            if self.fail_writes.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(ClusterError::Io(std::io::Error::other("injected catalog write failure")));
            }
            self.entries.lock().expect("entries").insert(region.into(), data.to_vec());
            Ok(())
        }

        fn remove(&self, region: &str) -> Result<()> {
            self.entries.lock().expect("entries").remove(region);
            Ok(())
        }
    }

    #[test]
    fn entries_are_written_through_and_read_back_by_the_next_master() {
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store.clone()).expect("load");
        catalog.record("01", "t", Some("a"), RegionState::Opening).expect("record");
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("record");
        catalog.record("02", "t", None, RegionState::Offline).expect("record");
        store.entries.lock().expect("entries").insert("bad".into(), b"not json".to_vec());
        let next = MasterCatalog::load(store.clone()).expect("load");
        assert_eq!(next.entries().len(), 2, "the malformed entry is left out");
        assert_eq!(next.get("01").map(|l| (l.server.as_deref(), l.state)), Some((Some("a"), RegionState::Open)));
        assert_eq!(next.tables(), BTreeSet::from(["t".to_string()]));
        catalog.remove("02").expect("remove");
        assert!(!store.entries.lock().expect("entries").contains_key("02"));
    }

    #[test]
    fn a_failed_write_changes_nothing_the_master_believes() {
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store.clone()).expect("load");
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("record");
        store.fail_writes.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(catalog.record("01", "t", Some("b"), RegionState::Opening).is_err());
        assert_eq!(catalog.get("01").and_then(|l| l.server.as_deref()), Some("a"));
        // An unchanged record writes nothing, so it cannot fail.
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("unchanged");
    }
}
