//! `MasterCatalog`: the active master's durable region → server map, HBase's
//! `hbase:meta` locations. It is kept in a store of the master's own on the
//! shared root, a compacted log (`catalog_log.rs`, `store::record_log`):
//! a master that takes over reads it in one sequential read, and every
//! change is one appended record (a pass's changes, one record). ZooKeeper
//! keeps no region: only membership, the active master and the client
//! znodes.
//!
//! Why the master needs it: the servers' reports say what each live server
//! holds now, and say nothing about a server that died. The catalog says
//! where the master put each region, and it outlives the master that wrote
//! it and the server that held the region. So:
//! - a dead server's regions are known from the catalog and reassigned
//!   (HBase's `ServerCrashProcedure` takes a dead server's regions from
//!   meta), and
//! - a master that takes over knows every table at once and assigns at its
//!   first pass, not a pass later.
//!
//! Writes come first (intent before action): before the master asks a
//! server to open a region it records the region OPENING there; before it
//! closes one to move it, CLOSING on the old server. Each pass reconciles:
//! each region a server holds is recorded with that server and the state it
//! reports; a region no server holds is OFFLINE unless the catalog puts it
//! on a dead server (kept, for its recovery) or an operator closed it
//! (CLOSED: kept, and not assigned until an operator assigns it, as HBase's
//! `unassign`); a region no server lists any more (a dropped table, a split
//! or merged parent) is removed.
//!
//! The catalog is the one authority over where a region opens or closes:
//! a region server in a cluster opens a region for an admin call only when
//! the active master — the one ZooKeeper names at that moment — answers
//! that its catalog records it OPENING on that server, and closes one only
//! when it records CLOSING or CLOSED there (`GET /catalog` on the master,
//! `server/src/admin.rs`). So a master that lost its place cannot move a
//! region even before it notices: the servers ask its successor. Operators
//! move regions through the master (`operator.rs`).
//!
//! Invariant the master relies on: a region the catalog puts on a server
//! that has left the membership is on no live server. Servers open regions
//! on their own only when they make new ones (a created table, split
//! daughters, a merged region), which the catalog records at the next pass
//! that reads their report; every other open is the master's, recorded
//! first. Server names are unique per start, so a dead server never comes
//! back under its name.
//!
//! Thread safety: owned by the active master's poller thread, the only
//! writer; the master's HTTP thread reads the entries through a
//! [`CatalogReader`] (a read lock, never held across a call). A standby
//! writes nothing; it loads the catalog when it becomes active.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use http_api::{CatalogEntry, RegionState};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One change to the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogChange {
    Put { region: String, entry: CatalogEntry },
    Remove { region: String },
}

impl CatalogChange {
    /// Makes the change to `entries`.
    pub fn apply_to(self, entries: &mut BTreeMap<String, CatalogEntry>) {
        match self {
            CatalogChange::Put { region, entry } => {
                entries.insert(region, entry);
            }
            CatalogChange::Remove { region } => {
                entries.remove(&region);
            }
        }
    }
}

/// Where catalog entries are kept: a log on the shared root in a cluster
/// (`catalog_log.rs`); a map in the assignment pass's unit tests.
pub trait CatalogStore: Send + Sync {
    /// Takes the catalog over as the master of `epoch` (its place in the
    /// order masters become active in) and returns every entry (a store a
    /// newer master took over refuses).
    fn load(&self, epoch: u64) -> Result<Vec<(String, CatalogEntry)>>;
    /// Makes `changes` durable, in order, all or none.
    fn apply(&self, changes: &[CatalogChange]) -> Result<()>;
    /// Whether the next change should first be preceded by a snapshot of
    /// every entry ([`compact`](Self::compact)): the log outgrew the
    /// catalog, or a failed write left its tail unknown.
    fn wants_snapshot(&self, entries: usize) -> bool;
    /// Replaces what is kept with `entries`, durably.
    fn compact(&self, entries: &BTreeMap<String, CatalogEntry>) -> Result<()>;
}

/// The catalog's entries as the master's HTTP thread reads them (region
/// servers' `GET /catalog`, the status page): shared with the poller,
/// which writes them only after they are durable.
#[derive(Clone, Default)]
pub struct CatalogReader(Arc<Shared>);

#[derive(Default)]
struct Shared {
    entries: RwLock<BTreeMap<String, CatalogEntry>>,
    /// Durable writes made (each one append of one or more changes).
    writes: AtomicU64,
}

impl CatalogReader {
    /// Durable writes made since this master loaded the catalog.
    pub fn writes(&self) -> u64 {
        self.0.writes.load(Ordering::Relaxed)
    }

    pub fn get(&self, region: &str) -> Option<CatalogEntry> {
        self.read().get(region).cloned()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The entries, read-locked while the guard lives.
    pub fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, CatalogEntry>> {
        self.0.entries.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for CatalogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CatalogReader({} entries)", self.len())
    }
}

impl Serialize for CatalogReader {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.read().serialize(s)
    }
}

/// The catalog as the master holds it: every entry, read once when it
/// became active and kept in step with each write.
pub struct MasterCatalog {
    store: Arc<dyn CatalogStore>,
    entries: CatalogReader,
}

impl std::fmt::Debug for MasterCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterCatalog").field("entries", &*self.entries.read()).finish()
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl MasterCatalog {
    /// Takes the catalog over as the master of `epoch` (see
    /// [`CatalogStore::load`]) and reads every entry.
    pub fn load(store: Arc<dyn CatalogStore>, epoch: u64) -> Result<MasterCatalog> {
        let entries: BTreeMap<String, CatalogEntry> = store.load(epoch)?.into_iter().collect();
        let shared = Shared { entries: RwLock::new(entries), writes: AtomicU64::new(0) };
        Ok(MasterCatalog { store, entries: CatalogReader(Arc::new(shared)) })
    }

    pub fn get(&self, region: &str) -> Option<CatalogEntry> {
        self.entries.get(region)
    }

    /// The entries, read-locked while the guard lives (the HTTP thread's
    /// readers wait meanwhile; never hold it across a call).
    pub fn entries(&self) -> RwLockReadGuard<'_, BTreeMap<String, CatalogEntry>> {
        self.entries.read()
    }

    /// A handle the HTTP thread reads the entries through.
    pub fn reader(&self) -> CatalogReader {
        self.entries.clone()
    }

    /// The tables the catalog has regions of.
    pub fn tables(&self) -> BTreeSet<String> {
        self.entries.read().values().map(|l| l.table.clone()).collect()
    }

    /// Records `region` of `table` on `server` in `state`, durably, unless
    /// that is what the catalog already says.
    pub fn record(&mut self, region: &str, table: &str, server: Option<&str>, state: RegionState) -> Result<()> {
        self.record_all(&[Recorded::new(region, table, server, state)])
    }

    /// Removes `region`'s entry.
    pub fn remove(&mut self, region: &str) -> Result<()> {
        self.record_all(&[Recorded::Remove(region.to_string())])
    }

    /// Records every change in `changes` durably in one write, or none of
    /// them (the entries change only once the write is done). Changes that
    /// record what the catalog already says write nothing.
    pub fn record_all(&mut self, changes: &[Recorded]) -> Result<()> {
        let at_ms = now_ms();
        let mut effective = Vec::new();
        {
            let entries = self.entries.read();
            // A region changed twice in one batch is written twice.
            let mut touched = BTreeSet::new();
            for c in changes {
                let (region, change) = match c {
                    Recorded::Put { region, table, server, state } => {
                        let same = |l: &CatalogEntry| l.table == *table && l.server == *server && l.state == *state;
                        if !touched.contains(region.as_str()) && entries.get(region).is_some_and(same) {
                            continue;
                        }
                        let entry = CatalogEntry { table: table.clone(), server: server.clone(), state: *state, at_ms };
                        (region, CatalogChange::Put { region: region.clone(), entry })
                    }
                    Recorded::Remove(region) => {
                        if !touched.contains(region.as_str()) && !entries.contains_key(region) {
                            continue;
                        }
                        (region, CatalogChange::Remove { region: region.clone() })
                    }
                };
                touched.insert(region.as_str());
                effective.push(change);
            }
        }
        if effective.is_empty() {
            return Ok(());
        }
        if self.store.wants_snapshot(self.entries.len()) {
            // Best effort: the log still takes the change without one,
            // unless a failed write broke it, and then this says why.
            if let Err(e) = self.store.compact(&self.entries.read()) {
                tracing::warn!(error = %e, "could not write a snapshot of the catalog");
            }
        }
        self.store.apply(&effective)?;
        self.entries.0.writes.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.0.entries.write().unwrap_or_else(|p| p.into_inner());
        for c in effective {
            c.apply_to(&mut entries);
        }
        Ok(())
    }
}

/// The znode under which masters before the catalog log kept one znode
/// per region (`regions/<id>`, an `http_api::CatalogEntry` each).
pub const LEGACY_REGIONS: &str = "regions";

/// Moves a catalog an earlier master kept in ZooKeeper into `catalog`, once:
/// when the znodes exist and `catalog` is empty, their entries are written
/// to it (one durable write); then the znodes are deleted (also when a
/// master that moved them stopped before it deleted them all). Returns how
/// many entries moved. A malformed znode is reported and left out (the
/// next pass records what the servers hold).
pub fn take_legacy_znodes(zk: &crate::zk::Zk, catalog: &mut MasterCatalog) -> Result<usize> {
    if zk.get(LEGACY_REGIONS)?.is_none() {
        return Ok(0);
    }
    let ids = zk.children(LEGACY_REGIONS)?;
    let mut moved = Vec::new();
    let empty = catalog.entries().is_empty();
    for id in ids.iter().filter(|_| empty) {
        let Some(data) = zk.get(&format!("{LEGACY_REGIONS}/{id}"))? else { continue };
        match serde_json::from_slice::<CatalogEntry>(&data) {
            Ok(e) => moved.push(Recorded::Put { region: id.clone(), table: e.table, server: e.server, state: e.state }),
            Err(e) => tracing::warn!(region = %id, error = %e, "a malformed catalog znode left out"),
        }
    }
    catalog.record_all(&moved)?;
    for id in &ids {
        zk.delete(&format!("{LEGACY_REGIONS}/{id}"))?;
    }
    zk.delete(LEGACY_REGIONS)?;
    Ok(moved.len())
}

/// A change [`MasterCatalog::record_all`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    Put { region: String, table: String, server: Option<String>, state: RegionState },
    Remove(String),
}

impl Recorded {
    pub fn new(region: &str, table: &str, server: Option<&str>, state: RegionState) -> Recorded {
        Recorded::Put { region: region.into(), table: table.into(), server: server.map(str::to_string), state }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    use super::*;
    use crate::error::ClusterError;

    /// Catalog entries in memory, for unit tests of the pass.
    #[derive(Default)]
    pub(crate) struct MemoryStore {
        pub(crate) entries: Mutex<BTreeMap<String, CatalogEntry>>,
        pub(crate) fail_writes: AtomicBool,
        /// Writes made (each `apply` one).
        pub(crate) writes: AtomicUsize,
    }

    impl CatalogStore for MemoryStore {
        fn load(&self, _epoch: u64) -> Result<Vec<(String, CatalogEntry)>> {
            Ok(self.entries.lock().expect("entries").iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        }

        fn apply(&self, changes: &[CatalogChange]) -> Result<()> {
            if self.fail_writes.load(Ordering::Relaxed) {
                return Err(ClusterError::Io(std::io::Error::other("injected catalog write failure")));
            }
            self.writes.fetch_add(1, Ordering::Relaxed);
            let mut entries = self.entries.lock().expect("entries");
            for c in changes {
                c.clone().apply_to(&mut entries);
            }
            Ok(())
        }

        fn wants_snapshot(&self, _entries: usize) -> bool {
            false
        }

        fn compact(&self, _entries: &BTreeMap<String, CatalogEntry>) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn entries_are_written_through_and_read_back_by_the_next_master() {
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store.clone(), 1).expect("load");
        catalog.record("01", "t", Some("a"), RegionState::Opening).expect("record");
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("record");
        catalog.record("02", "t", None, RegionState::Offline).expect("record");
        let next = MasterCatalog::load(store.clone(), 2).expect("load");
        assert_eq!(next.entries().len(), 2);
        assert_eq!(next.get("01").map(|l| (l.server, l.state)), Some((Some("a".into()), RegionState::Open)));
        assert_eq!(next.tables(), BTreeSet::from(["t".to_string()]));
        catalog.remove("02").expect("remove");
        assert!(!store.entries.lock().expect("entries").contains_key("02"));
    }

    #[test]
    fn a_batch_is_one_write_and_skips_what_is_already_recorded() {
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store.clone(), 1).expect("load");
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("record");
        let writes = store.writes.load(Ordering::Relaxed);
        catalog
            .record_all(&[
                Recorded::new("01", "t", Some("a"), RegionState::Open),
                Recorded::new("02", "t", Some("a"), RegionState::Opening),
                Recorded::new("02", "t", Some("a"), RegionState::Open),
                Recorded::Remove("03".into()),
            ])
            .expect("record");
        assert_eq!(store.writes.load(Ordering::Relaxed), writes + 1);
        assert_eq!(store.entries.lock().expect("entries")["02"].state, RegionState::Open, "the last change wins");
        catalog.record_all(&[Recorded::new("01", "t", Some("a"), RegionState::Open)]).expect("unchanged");
        assert_eq!(store.writes.load(Ordering::Relaxed), writes + 1, "nothing new: no write");
        catalog
            .record_all(&[Recorded::new("04", "t", None, RegionState::Offline), Recorded::Remove("04".into())])
            .expect("record");
        assert!(catalog.get("04").is_none(), "put then removed in one batch");
    }

    #[test]
    fn a_failed_write_changes_nothing_the_master_believes() {
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store.clone(), 1).expect("load");
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("record");
        let reader = catalog.reader();
        store.fail_writes.store(true, Ordering::Relaxed);
        assert!(catalog.record("01", "t", Some("b"), RegionState::Opening).is_err());
        let both = [Recorded::new("01", "t", Some("b"), RegionState::Opening), Recorded::Remove("01".into())];
        assert!(catalog.record_all(&both).is_err());
        assert_eq!(catalog.get("01").and_then(|l| l.server), Some("a".into()));
        assert_eq!(reader.get("01").and_then(|l| l.server), Some("a".into()), "nor what the HTTP thread reads");
        // An unchanged record writes nothing, so it cannot fail.
        catalog.record("01", "t", Some("a"), RegionState::Open).expect("unchanged");
    }
}
