//! `CatalogLog`: the master's catalog (`catalog.rs`) kept on the cluster's
//! shared root as a compacted log (`store::record_log`), in
//! `<root>/MasterData/catalog/`: the first record of a file is a snapshot
//! of every entry, each later record one batch of changes, all JSON.
//!
//! Why not ZooKeeper: a znode per region made a takeover R sequential reads
//! and a `getChildren` past ZooKeeper's 1 MB `jute.maxbuffer` at about
//! 50,000 regions. The log is read in one sequential read (about 120 bytes
//! an entry), and a pass's changes are one append and one sync.
//!
//! Who may write: the active master, whose election sequence (after the
//! time the cluster's configuration was recorded in ZooKeeper, so that a
//! ZooKeeper whose data was reset comes after: `master::catalog_epoch`) is
//! the log's epoch. A master taking over recovers the newest file's lease (HDFS),
//! reads it, and starts a file of its own epoch with a snapshot; a file of
//! a greater epoch refuses it. Each write first checks that this master's
//! ZooKeeper session has not ended (`still_active`); a master that lost its
//! place without noticing writes only to its superseded files, and region
//! servers ask the master ZooKeeper names (see `catalog.rs`).
//!
//! A new snapshot is written when the changes appended since the last one
//! outnumber the entries (and at least [`MIN_CHANGES_BEFORE_SNAPSHOT`]), so
//! the log stays within about twice the catalog and a write costs O(1)
//! amortised.
//!
//! Thread safety: called by the poller thread only; the log behind a mutex
//! so the type is `Sync` as `CatalogStore` requires.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http_api::CatalogEntry;
use store::fs::FileSystem;
use store::record_log::{self, RecordLog};

use crate::catalog::{CatalogChange, CatalogStore};
use crate::error::{ClusterError, Result};

/// Changes appended before the log is worth a new snapshot, however small
/// the catalog.
pub const MIN_CHANGES_BEFORE_SNAPSHOT: u64 = 10_000;

/// Whether the master that writes may still write (its ZooKeeper session
/// has not ended).
pub type StillActive = Arc<dyn Fn() -> bool + Send + Sync>;

struct Written {
    log: RecordLog,
    /// Changes appended since the current file's snapshot.
    changes: u64,
}

pub struct CatalogLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    still_active: StillActive,
    written: Mutex<Option<Written>>,
}

/// What [`CatalogLog::load`] read, for the master's event list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub entries: usize,
    pub records: usize,
    pub bytes: u64,
}

impl CatalogLog {
    /// The catalog of the cluster whose shared root is `root` (on `fs`).
    pub fn new(fs: Arc<dyn FileSystem>, root: &Path, still_active: StillActive) -> CatalogLog {
        CatalogLog { fs, dir: store::layout::master_catalog_dir(root), still_active, written: Mutex::new(None) }
    }

    /// The catalog of the cluster whose shared root URI is `root`.
    pub fn on_root(root: &str, still_active: StillActive) -> Result<CatalogLog> {
        let (fs, dir) = store::fs::resolve_root(root)?;
        Ok(CatalogLog::new(fs, &dir, still_active))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Written>> {
        self.written.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_active(&self) -> Result<()> {
        if (self.still_active)() {
            Ok(())
        } else {
            Err(ClusterError::SessionEnded("this master may no longer write the catalog".into()))
        }
    }
}

fn malformed(dir: &Path, reason: String) -> ClusterError {
    ClusterError::Malformed { what: "catalog log record", path: dir.display().to_string(), reason }
}

fn snapshot_of(entries: &BTreeMap<String, CatalogEntry>) -> Vec<u8> {
    let changes: Vec<CatalogChange> = entries
        .iter()
        .map(|(region, entry)| CatalogChange::Put { region: region.clone(), entry: entry.clone() })
        .collect();
    serde_json::to_vec(&changes).expect("catalog changes serialise")
}

impl CatalogStore for CatalogLog {
    fn load(&self, epoch: u64) -> Result<Vec<(String, CatalogEntry)>> {
        self.check_active()?;
        let read = record_log::read_newest(self.fs.as_ref(), &self.dir)?;
        if let Some((offset, len)) = read.unreadable_tail {
            tracing::warn!(dir = %self.dir.display(), offset, len, "the catalog log ends in a write cut short; ignored");
        }
        for id in &read.skipped {
            tracing::warn!(dir = %self.dir.display(), ?id, "a catalog log file whose snapshot is incomplete; ignored");
        }
        let mut entries = BTreeMap::new();
        for (i, record) in read.records.iter().enumerate() {
            let changes: Vec<CatalogChange> = serde_json::from_slice(record)
                .map_err(|e| malformed(&self.dir, format!("record {i} of {:?}: {e}", read.file)))?;
            for change in changes {
                change.apply_to(&mut entries);
            }
        }
        tracing::info!(
            dir = %self.dir.display(),
            entries = entries.len(),
            records = read.records.len(),
            bytes = read.bytes,
            "read the catalog"
        );
        let log = RecordLog::start(self.fs.clone(), &self.dir, epoch, &snapshot_of(&entries)).map_err(|e| match e {
            // Said as what it is here: another master took the catalog over.
            store::StoreError::Fenced(why) => {
                ClusterError::SessionEnded(format!("a newer master took the catalog over: {why}"))
            }
            other => other.into(),
        })?;
        *self.lock() = Some(Written { log, changes: 0 });
        Ok(entries.into_iter().collect())
    }

    fn apply(&self, changes: &[CatalogChange]) -> Result<()> {
        self.check_active()?;
        let mut written = self.lock();
        let w = written.as_mut().ok_or_else(|| malformed(&self.dir, "written before it was loaded".into()))?;
        w.log.append(&serde_json::to_vec(changes).expect("catalog changes serialise"))?;
        w.changes += changes.len() as u64;
        Ok(())
    }

    fn wants_snapshot(&self, entries: usize) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|w| w.log.is_broken() || w.changes > (entries as u64).max(MIN_CHANGES_BEFORE_SNAPSHOT))
    }

    fn compact(&self, entries: &BTreeMap<String, CatalogEntry>) -> Result<()> {
        self.check_active()?;
        let mut written = self.lock();
        let w = written.as_mut().ok_or_else(|| malformed(&self.dir, "compacted before it was loaded".into()))?;
        w.log.compact(&snapshot_of(entries))?;
        w.changes = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use http_api::RegionState;
    use store::fs::LocalFs;

    use super::*;
    use crate::catalog::{MasterCatalog, Recorded};

    fn on(dir: &Path, active: Arc<AtomicBool>) -> Arc<CatalogLog> {
        Arc::new(CatalogLog::new(Arc::new(LocalFs), dir, Arc::new(move || active.load(Ordering::Relaxed))))
    }

    #[test]
    fn the_next_master_reads_what_this_one_wrote_and_fences_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let active = Arc::new(AtomicBool::new(true));
        let mut first = MasterCatalog::load(on(dir.path(), active.clone()), 4).expect("load");
        first.record("01", "t", Some("a"), RegionState::Opening).expect("record");
        first
            .record_all(&[
                Recorded::new("01", "t", Some("a"), RegionState::Open),
                Recorded::new("02", "t", None, RegionState::Offline),
                Recorded::new("03", "u", Some("b"), RegionState::Open),
            ])
            .expect("record");
        first.remove("03").expect("remove");
        let second = MasterCatalog::load(on(dir.path(), Arc::new(AtomicBool::new(true))), 9).expect("load");
        assert_eq!(*second.entries(), *first.entries());
        assert_eq!(second.get("01").map(|e| e.state), Some(RegionState::Open));
        // The first master, whose session ended, writes nothing more.
        active.store(false, Ordering::Relaxed);
        assert!(matches!(first.record("02", "t", Some("a"), RegionState::Opening), Err(ClusterError::SessionEnded(_))));
        // A master of an older election cannot take the catalog back.
        let refused = MasterCatalog::load(on(dir.path(), Arc::new(AtomicBool::new(true))), 5).expect_err("refused");
        assert!(refused.to_string().contains("a newer master took the catalog over"), "{refused}");
    }

    #[test]
    fn many_changes_are_folded_into_a_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = on(dir.path(), Arc::new(AtomicBool::new(true)));
        let mut catalog = MasterCatalog::load(log.clone(), 1).expect("load");
        for round in 0..4 {
            let state = if round % 2 == 0 { RegionState::Opening } else { RegionState::Open };
            let batch: Vec<Recorded> =
                (0..4_000).map(|i| Recorded::new(&format!("{i:016x}"), "t", Some("a"), state)).collect();
            catalog.record_all(&batch).expect("record");
        }
        // 16,000 changes to 4,000 entries: a snapshot came before the last.
        let files = std::fs::read_dir(log.dir()).expect("dir").count();
        assert_eq!(files, 1, "superseded files are removed");
        let read = record_log::read_newest(&LocalFs, log.dir()).expect("read");
        assert_eq!(read.records.len(), 2, "a snapshot, then the last batch");
        let next = MasterCatalog::load(on(dir.path(), Arc::new(AtomicBool::new(true))), 2).expect("load");
        assert_eq!(next.entries().len(), 4_000);
        assert!(next.entries().values().all(|e| e.state == RegionState::Open));
    }
}
