//! `Catalog`: the one owner of which tables and regions exist on this
//! server — the table map (name → [`TableState`]), each table's ordered
//! region list, and region ids. Every change to them is a [`CatalogEdit`]
//! applied by [`Catalog::apply`], in one place (LevelDB's
//! `VersionSet::LogAndApply`, Pebble's `versionSet`): the jobs that change
//! regions (split, merge, open, table DDL) build the new regions, commit
//! them on disk, and hand the catalog an edit; nothing else changes a list.
//! What is on disk (descriptors, `.regioninfo`, markers; named and written
//! by `layout.rs`) stays with the jobs that write it; the catalog is the
//! in-memory view requests route by.
//!
//! Each edit and the disk commit that goes with it (LevelDB logs a
//! `VersionEdit`, then installs it; here the commit is the file or marker
//! whose atomic rename makes the change durable, and a restart rebuilds the
//! catalog from those files alone, `store/recovery.rs`):
//!
//! | edit | disk commit, and its order against the edit |
//! |------|---------------------------------------------|
//! | `AddTable` (create) | `<table>/.tabledesc` (fenced), after every region's `.regioninfo`; before the edit |
//! | `AddTable` (open, a member's refresh) | none: read from the files |
//! | `SetEnabled { false }` (disable) | edit first (writes stop), regions flushed, then `.tabledesc` with `enabled: false` |
//! | `SetEnabled { true }` (enable) | `.tabledesc` with `enabled: true`, then the edit |
//! | `DropTable` (delete) | edit, then the table directory renamed to `.trash-<table>` (the commit) and removed |
//! | `ReplaceRegions` split | daughters' references, manifests and `.regioninfo`, then the parent's `.split` marker (fenced: the commit); then the edit |
//! | `ReplaceRegions` merge | the merged region's `.regioninfo` (fenced: the commit); then the parents' `.merged` markers and the edit |
//! | `ReplaceRegions` reopen | `.closed` removed; then the edit |
//! | `ReplaceTable` alter | new family directories, then `.tabledesc` (fenced: the commit), then the edit; removed families' directories after |
//! | `ReplaceTable` member rebuild | none: read from the files another server committed |
//!
//! A close writes `.closed` and changes the region's state, not the lists.
//!
//! Invariants:
//! - A table's regions are sorted by start key and cover the whole key space
//!   without gap or overlap. `apply` checks that a replacement keeps this:
//!   its old regions are current and adjacent, and its new regions, in
//!   order, span exactly their range.
//! - Region ids only grow: `allocate_region_id` hands out ids above every id
//!   seen (`observe_region_id` at load).
//! - A region an edit takes out of the lists (replaced, or its table
//!   dropped) has its counters folded into the retired counters by the same
//!   edit, under their lock; [`Catalog::counters`] reads the lists and the
//!   retired counters under that lock too, so every region is counted once
//!   and the totals never go backwards (`table_counters.rs`).
//!
//! Thread safety: the table map and each region list sit behind `RwLock`s
//! held only for a lookup or a splice, never across I/O. Region list
//! changes and the state transitions around them (split, merge, close,
//! open, parent removal) run under the table's change lock
//! ([`Catalog::lock_changes`]), so two never interleave on one table;
//! table DDL runs under the catalog's DDL lock ([`Catalog::lock_ddl`]).
//! An edit that replaces or drops a table's state (`ReplaceTable`,
//! `DropTable`) runs under the DDL lock and the old state's change lock, and
//! retires the old state: a job that looked the table up before and waited
//! for the old lock must not go on under it (a job on the new state would
//! run beside it), so `Catalog::lock_changes` looks the table up again
//! until the state it locked is current.
//! Lock order: DDL lock → change lock → retired counters → table map →
//! region list. The retired counters' lock is held for a whole edit that
//! removes regions, and for a read of the counters; never across I/O.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{ArcMutexGuard, Mutex, MutexGuard, RawMutex, RwLock};

use crate::error::{Result, StoreError};
use crate::region::{Region, RegionInfo};
use crate::table::TableDescriptor;
use crate::table_counters::{RetiredCounters, TableCounters};

/// A table and its regions.
pub struct TableState {
    pub desc: Arc<TableDescriptor>,
    enabled: AtomicBool,
    regions: RwLock<Vec<Arc<Region>>>,
    change_lock: Arc<Mutex<()>>,
    /// Set by the edit that replaced or dropped this state (under its
    /// change lock): it is no table's current state any more.
    retired: AtomicBool,
}

/// A table's change lock, held (see [`Catalog::lock_changes`]).
pub(crate) type ChangeGuard = ArcMutexGuard<RawMutex, ()>;

impl TableState {
    /// A table with `regions` (sorted by start key, covering the key space).
    pub(crate) fn new(desc: Arc<TableDescriptor>, enabled: bool, regions: Vec<Arc<Region>>) -> TableState {
        TableState {
            desc,
            enabled: AtomicBool::new(enabled),
            regions: RwLock::new(regions),
            change_lock: Arc::new(Mutex::new(())),
            retired: AtomicBool::new(false),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Whether an edit replaced or dropped this state (see the module doc).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// The region holding `row`.
    pub fn region_for(&self, row: &[u8]) -> Option<Arc<Region>> {
        let regions = self.regions.read();
        let i = regions.partition_point(|r| r.info().start_key.as_slice() <= row);
        i.checked_sub(1).map(|i| regions[i].clone())
    }

    pub fn regions(&self) -> Vec<Arc<Region>> {
        self.regions.read().clone()
    }

    /// The info of the region with id `id`, if it is in the list: read
    /// under the list's lock without copying the list, since every RPC call
    /// looks up the region it names.
    pub fn region_info(&self, id: u64) -> Option<RegionInfo> {
        self.regions.read().iter().find(|r| r.info().id == id).map(|r| r.info().clone())
    }

    /// Whether `region` is still in the list (not replaced by a split,
    /// merge or reopen).
    pub fn is_current(&self, region: &Arc<Region>) -> bool {
        self.regions.read().iter().any(|r| Arc::ptr_eq(r, region))
    }

    /// Memory the memstores of all regions hold (`Region::memstore_held_size`;
    /// read under the list's lock, no copy of the list: writers call it
    /// under global pressure).
    pub fn memstore_held_size(&self) -> u64 {
        self.regions.read().iter().map(|r| r.memstore_held_size()).sum()
    }

    /// Whether (and after how long) a request that got `e` from `region`
    /// looks its row up again: at once when `region` is no longer current
    /// (split, merged, or reopened by `open_region` since the lookup), after
    /// a moment while a split or merge is replacing it; never for any other
    /// error (a region closed by an operator answers `NotServingRegion`).
    pub(crate) fn retry_after(&self, region: &Arc<Region>, e: &StoreError) -> Option<Duration> {
        match e {
            StoreError::NotServingRegion { .. } if !self.is_current(region) => Some(Duration::ZERO),
            e if e.is_region_moving() => Some(Duration::from_millis(1)),
            _ => None,
        }
    }

    /// Held while a job changes this table's regions (see the module doc).
    /// Only for a state looked up under the DDL lock (no edit can replace
    /// it meanwhile); other jobs take [`Catalog::lock_changes`].
    pub(crate) fn lock_changes(&self) -> MutexGuard<'_, ()> {
        self.change_lock.lock()
    }
}

/// A change to the catalog.
pub(crate) enum CatalogEdit {
    /// A new table (its name must be free).
    AddTable(Arc<TableState>),
    /// A table goes (its regions must be closed).
    DropTable(String),
    SetEnabled {
        table: String,
        enabled: bool,
    },
    /// `old` (current, adjacent, in key order) is replaced by `new` (in key
    /// order, spanning exactly `old`'s range): a split (1 → 2), a merge
    /// (2 → 1), a reopen (1 → 1).
    ReplaceRegions {
        table: String,
        old: Vec<Arc<Region>>,
        new: Vec<Arc<Region>>,
    },
    /// The same table, whole, replaces the current one: its regions opened
    /// again under a changed descriptor (alter), or a cluster member's list
    /// rebuilt from the root after another server split or merged (regions
    /// kept by identity stay). The new regions must cover the key space.
    ReplaceTable(Arc<TableState>),
}

/// The tables and regions of a store; see the module doc.
pub(crate) struct Catalog {
    tables: RwLock<BTreeMap<String, Arc<TableState>>>,
    next_region_id: AtomicU64,
    ddl_lock: Mutex<()>,
    retired: Mutex<RetiredCounters>,
}

/// Every table's counters, read at one instant of the catalog.
#[derive(Debug, Clone, Default)]
pub(crate) struct CatalogCounters {
    /// Per live table: its live regions plus the ones it replaced.
    pub(crate) tables: BTreeMap<String, TableCounters>,
    /// Every dropped table's.
    pub(crate) dropped: TableCounters,
    pub(crate) tables_dropped: u64,
}

impl Catalog {
    pub(crate) fn new() -> Catalog {
        Catalog {
            tables: RwLock::new(BTreeMap::new()),
            next_region_id: AtomicU64::new(1),
            ddl_lock: Mutex::new(()),
            retired: Mutex::new(RetiredCounters::default()),
        }
    }

    /// Every table's counters, live and retired, at one instant of the
    /// catalog (see the module doc).
    pub(crate) fn counters(&self) -> CatalogCounters {
        let retired = self.retired.lock();
        let tables = self
            .tables
            .read()
            .iter()
            .map(|(name, t)| {
                let mut c = retired.table(name);
                for r in t.regions.read().iter() {
                    c.add(&TableCounters::of_region(r));
                }
                (name.clone(), c)
            })
            .collect();
        CatalogCounters { tables, dropped: retired.dropped(), tables_dropped: retired.tables_dropped() }
    }

    /// Applies `edit`; an edit that would break the invariants is refused
    /// and changes nothing.
    pub(crate) fn apply(&self, edit: CatalogEdit) -> Result<()> {
        let applied = self.apply_edit(edit);
        if applied.is_ok() {
            crate::layout_changes::note_layout_change();
        }
        applied
    }

    fn apply_edit(&self, edit: CatalogEdit) -> Result<()> {
        match edit {
            CatalogEdit::AddTable(t) => {
                let mut tables = self.tables.write();
                if tables.contains_key(&t.desc.name) {
                    return Err(StoreError::TableExists(t.desc.name.clone()));
                }
                tables.insert(t.desc.name.clone(), t);
            }
            CatalogEdit::DropTable(name) => {
                let mut retired = self.retired.lock();
                let t = self.tables.write().remove(&name).ok_or(StoreError::TableNotFound(name.clone()))?;
                t.retired.store(true, Ordering::Release);
                retired.retire_table(&name, t.regions.read().iter().map(|r| r.as_ref()));
            }
            CatalogEdit::ReplaceTable(t) => {
                let mut retired = self.retired.lock();
                let mut tables = self.tables.write();
                let name = t.desc.name.clone();
                let current = tables.get(&name).ok_or_else(|| StoreError::TableNotFound(name.clone()))?;
                let covers = {
                    let regions = t.regions.read();
                    regions.first().is_some_and(|r| r.info().start_key.is_empty())
                        && regions.last().is_some_and(|r| r.info().end_key.is_empty())
                        && regions.windows(2).all(|w| w[0].info().end_key == w[1].info().start_key)
                };
                if !covers {
                    return Err(StoreError::Internal(format!(
                        "catalog edit of table {name:?}: a replaced table's regions must cover the key space"
                    )));
                }
                // A region the new table keeps goes on counting there.
                let kept = t.regions.read().clone();
                for r in current.regions.read().iter().filter(|r| !kept.iter().any(|k| Arc::ptr_eq(k, r))) {
                    retired.retire_region(&name, r);
                }
                current.retired.store(true, Ordering::Release);
                tables.insert(name, t);
            }
            CatalogEdit::SetEnabled { table, enabled } => {
                self.table(&table)?.enabled.store(enabled, Ordering::Release);
            }
            CatalogEdit::ReplaceRegions { table, old, new } => {
                let mut retired = self.retired.lock();
                let t = self.table(&table)?;
                let mut regions = t.regions.write();
                let refuse = |why: &str| StoreError::Internal(format!("catalog edit of table {table:?}: {why}"));
                let (first, last) = match (old.first(), old.last(), new.first(), new.last()) {
                    (Some(first), Some(last), Some(_), Some(_)) => (first, last),
                    _ => return Err(refuse("a replacement needs old and new regions")),
                };
                let at =
                    regions.iter().position(|r| Arc::ptr_eq(r, first)).ok_or_else(|| refuse("a region is gone"))?;
                let adjacent =
                    old.iter().enumerate().all(|(i, o)| regions.get(at + i).is_some_and(|r| Arc::ptr_eq(r, o)));
                if !adjacent {
                    return Err(refuse("the replaced regions are not current and adjacent"));
                }
                // Each new region a non-empty range (an empty end key only
                // for the last), chained one to the next.
                let ranges_ok = new.iter().enumerate().all(|(i, r)| {
                    let info = r.info();
                    if info.end_key.is_empty() { i == new.len() - 1 } else { info.start_key < info.end_key }
                });
                let chained = ranges_ok && new.windows(2).all(|w| w[0].info().end_key == w[1].info().start_key);
                let spans = new[0].info().start_key == first.info().start_key
                    && new[new.len() - 1].info().end_key == last.info().end_key;
                if !chained || !spans {
                    return Err(refuse("the new regions do not span the replaced ones exactly"));
                }
                regions.splice(at..at + old.len(), new);
                for o in &old {
                    retired.retire_region(&table, o);
                }
            }
        }
        Ok(())
    }

    /// The current state of table `name` with its change lock held (see the
    /// module doc): a state an edit replaced while this waited for its lock
    /// is let go, and the table looked up again.
    pub(crate) fn lock_changes(&self, name: &str) -> Result<(Arc<TableState>, ChangeGuard)> {
        loop {
            let t = self.table(name)?;
            let guard = t.change_lock.lock_arc();
            if !t.retired.load(Ordering::Acquire) {
                return Ok((t, guard));
            }
        }
    }

    /// Table `name` (`default:t` is `t`).
    pub(crate) fn table(&self, name: &str) -> Result<Arc<TableState>> {
        let key = crate::names::canonical_table_name(name);
        self.tables.read().get(key).cloned().ok_or_else(|| StoreError::TableNotFound(name.to_string()))
    }

    pub(crate) fn contains_table(&self, name: &str) -> bool {
        self.tables.read().contains_key(crate::names::canonical_table_name(name))
    }

    pub(crate) fn table_names(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    pub(crate) fn tables(&self) -> Vec<Arc<TableState>> {
        self.tables.read().values().cloned().collect()
    }

    /// Every region of every table.
    pub(crate) fn all_regions(&self) -> Vec<Arc<Region>> {
        self.tables.read().values().flat_map(|t| t.regions()).collect()
    }

    /// The current region with id `id`.
    pub(crate) fn region_by_id(&self, id: u64) -> Option<Arc<Region>> {
        self.tables.read().values().flat_map(|t| t.regions()).find(|r| r.info().id == id)
    }

    /// The region whose encoded name (its directory's name, unique in the
    /// store) is `name`, with its table.
    pub(crate) fn region_named(&self, name: &str) -> Option<(Arc<TableState>, Arc<Region>)> {
        self.tables().into_iter().find_map(|t| {
            let r = t.regions().into_iter().find(|r| r.info().dir_name() == name)?;
            Some((t, r))
        })
    }

    /// Memory the memstores of every region hold (`Region::memstore_held_size`):
    /// what the global memstore limit charges.
    pub(crate) fn memstore_held_size(&self) -> u64 {
        self.tables.read().values().map(|t| t.memstore_held_size()).sum()
    }

    /// The region whose memstores hold the most memory among those `keep`
    /// accepts, if it holds anything: the one a pressure flush relieves
    /// most.
    pub(crate) fn largest_memstore(&self, keep: impl Fn(&Region) -> bool) -> Option<Arc<Region>> {
        self.tables
            .read()
            .values()
            .flat_map(|t| t.regions())
            .filter(|r| keep(r))
            .map(|r| (r.memstore_held_size(), r))
            .filter(|(size, _)| *size > 0)
            .max_by_key(|(size, _)| *size)
            .map(|(_, r)| r)
    }

    /// A fresh region id.
    pub(crate) fn allocate_region_id(&self) -> u64 {
        self.next_region_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Notes an id found on disk, so that no allocated id repeats it.
    pub(crate) fn observe_region_id(&self, id: u64) {
        self.next_region_id.fetch_max(id + 1, Ordering::Relaxed);
    }

    /// Held for a whole table DDL operation (see the module doc).
    pub(crate) fn lock_ddl(&self) -> MutexGuard<'_, ()> {
        self.ddl_lock.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::LocalFs;
    use crate::test_support::regions;
    use crate::wal::{Wal, WalOptions};

    fn starts(t: &TableState) -> Vec<String> {
        t.regions().iter().map(|r| String::from_utf8_lossy(&r.info().start_key).into_owned()).collect()
    }

    #[test]
    fn replacements_keep_the_key_space_covered_or_are_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (wal, _) = Wal::open(Arc::new(LocalFs), &tmp.path().join("wal"), WalOptions::default()).expect("wal");
        let c = Catalog::new();
        let three = regions(tmp.path(), &wal, &[("", "g"), ("g", "p"), ("p", "")], 1);
        let desc = three[0].descriptor().clone();
        c.apply(CatalogEdit::AddTable(Arc::new(TableState::new(desc.clone(), true, three.clone())))).expect("add");
        let again = CatalogEdit::AddTable(Arc::new(TableState::new(desc, true, Vec::new())));
        assert!(matches!(c.apply(again), Err(StoreError::TableExists(_))));
        let t = c.table("t").expect("table");
        let edit = |old: Vec<Arc<Region>>, new: Vec<Arc<Region>>| {
            c.apply(CatalogEdit::ReplaceRegions { table: "t".into(), old, new })
        };

        // Refused, changing nothing: not adjacent; a gap; an overlap; nothing new.
        let merged = regions(tmp.path(), &wal, &[("", "")], 10);
        assert!(edit(vec![three[0].clone(), three[2].clone()], merged.clone()).is_err(), "not adjacent");
        let short = regions(tmp.path(), &wal, &[("g", "k"), ("m", "p")], 20);
        assert!(edit(vec![three[1].clone()], short).is_err(), "a gap between the new regions");
        let wide = regions(tmp.path(), &wal, &[("g", "z")], 30);
        assert!(edit(vec![three[1].clone()], wide).is_err(), "wider than the replaced region");
        let unbounded_first = regions(tmp.path(), &wal, &[("g", ""), ("", "p")], 35);
        assert!(edit(vec![three[1].clone()], unbounded_first).is_err(), "an unbounded region before another");
        assert!(edit(vec![three[1].clone()], Vec::new()).is_err(), "no new region");
        assert_eq!(starts(&t), ["", "g", "p"]);

        // A split, then a merge of its daughters with their neighbour.
        let daughters = regions(tmp.path(), &wal, &[("g", "k"), ("k", "p")], 40);
        edit(vec![three[1].clone()], daughters.clone()).expect("split");
        assert_eq!(starts(&t), ["", "g", "k", "p"]);
        assert!(!t.is_current(&three[1]) && t.is_current(&daughters[0]));
        assert!(edit(vec![three[1].clone()], regions(tmp.path(), &wal, &[("g", "p")], 50)).is_err(), "gone");
        let tail = regions(tmp.path(), &wal, &[("k", "")], 60);
        edit(vec![daughters[1].clone(), three[2].clone()], tail.clone()).expect("merge");
        assert_eq!(starts(&t), ["", "g", "k"]);
        assert!(Arc::ptr_eq(&t.region_for(b"zzz").expect("region"), &tail[0]));
    }

    #[test]
    fn region_ids_only_grow() {
        let c = Catalog::new();
        assert_eq!(c.allocate_region_id(), 1);
        c.observe_region_id(41);
        assert_eq!(c.allocate_region_id(), 42);
        c.observe_region_id(5);
        assert_eq!(c.allocate_region_id(), 43);
    }

    #[test]
    fn a_missing_table_is_refused_by_name() {
        let c = Catalog::new();
        assert!(matches!(c.table("t"), Err(StoreError::TableNotFound(n)) if n == "t"));
        assert!(matches!(c.apply(CatalogEdit::DropTable("t".into())), Err(StoreError::TableNotFound(_))));
        let edit = CatalogEdit::ReplaceRegions { table: "t".into(), old: vec![], new: vec![] };
        assert!(matches!(c.apply(edit), Err(StoreError::TableNotFound(_))));
    }
}
