//! Merges of adjacent regions by reference, through the public `Store`:
//! the merged region reads both parents' files (gets, forward and reverse
//! scans), takes writes at once, has its references compacted away, and the
//! parents' directories go only when no region refers to them — across
//! restarts, a crash just before the commit and just after it (simulated by
//! a panic at the merge's hook points, then a dropped store), and with
//! writers running during the merge.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use store::hooks::{HookPoint, WriteHooks};
use store::testing::{StoreBuilder, scan_row_keys};
use store::wal::Durability;
use store::{FamilyDescriptor, Get, RegionState, Scan, Store, StoreError, StoreOptions, TableDescriptor};

fn table() -> TableDescriptor {
    let mut f = FamilyDescriptor::new("f");
    f.max_versions = 2;
    let mut desc = TableDescriptor::new("t", vec![f, FamilyDescriptor::new("g")]);
    desc.durability = Durability::SyncWal;
    desc
}

fn row(p: &str, i: usize) -> String {
    format!("{p}{i:03}")
}

/// Table `t` split at "h" and "p" (three regions), rows in each with two
/// flushed files and unflushed writes; returns the region names in order.
fn populated(dir: &Path) -> (Store, Vec<String>) {
    populated_with(dir, StoreBuilder::new().options())
}

fn populated_with(dir: &Path, options: StoreOptions) -> (Store, Vec<String>) {
    let store = Store::open(dir, options).expect("open");
    store.create_table(table(), &[b"h".to_vec(), b"p".to_vec()]).expect("create");
    for round in 0..3 {
        for p in ["c", "k", "s"] {
            for i in (round..60).step_by(2) {
                let v = format!("{p}{i}-{round}");
                store
                    .put("t", row(p, i).as_bytes(), &[(b"f", b"q", v.as_bytes()), (b"g", b"q", b"g")], None)
                    .expect("put");
            }
        }
        if round < 2 {
            store.flush_table("t").expect("flush");
        }
    }
    let names = store.table_regions("t").expect("regions").iter().map(|r| r.dir_name()).collect();
    (store, names)
}

fn expected(p: &str, i: usize) -> String {
    // Round r writes i = r, r + 2, ...
    let round = match i {
        0 => 0,
        i if i.is_multiple_of(2) => 2,
        _ => 1,
    };
    format!("{p}{i}-{round}")
}

fn value(store: &Store, r: &str) -> Option<String> {
    let cells = store.get("t", &Get::new(r.as_bytes())).expect("get");
    cells.iter().find(|c| c.family == b"f"[..]).map(|c| String::from_utf8_lossy(&c.value).into_owned())
}

/// Every populated row is there, newest values first (rows the tests add
/// besides, one letter long, are left out of the scans' comparison).
fn assert_all_there(store: &Store) {
    let scan_rows = |reverse| {
        scan_row_keys(store, "t", Scan { reverse, ..Scan::default() })
            .into_iter()
            .filter(|r| r.len() == 4)
            .collect::<Vec<_>>()
    };
    let mut want: Vec<String> = ["c", "k", "s"].iter().flat_map(|p| (0..60).map(move |i| row(p, i))).collect();
    assert_eq!(scan_rows(false), want);
    want.reverse();
    assert_eq!(scan_rows(true), want);
    for p in ["c", "k", "s"] {
        for i in 0..60 {
            assert_eq!(value(store, &row(p, i)).as_deref(), Some(expected(p, i).as_str()), "{}", row(p, i));
        }
    }
}

fn region_dir(dir: &Path, name: &str) -> PathBuf {
    dir.join("data").join("default").join("t").join(name)
}

#[test]
fn a_merged_region_serves_both_parents_and_compaction_removes_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = populated(dir.path());
    // Either order names the same pair.
    let merged = store.merge_regions(&names[1], &names[0]).expect("merge");
    let regions = store.table_regions("t").expect("regions");
    assert_eq!(regions.len(), 2);
    assert_eq!(regions[0].dir_name(), merged);
    assert_eq!((regions[0].start_key.as_slice(), regions[0].end_key.as_slice()), (&b""[..], &b"p"[..]));
    assert_eq!(regions[0].merged_from.len(), 2);
    assert_all_there(&store);
    // The parents stay, marked, while the merged region refers to them.
    for parent in &names[..2] {
        assert!(region_dir(dir.path(), parent).join(".merged").exists(), "marker of {parent}");
    }
    // Writes go to the merged region; a region with references does not
    // merge or split again until compacted.
    store.put("t", b"a", &[(b"f", b"q", b"new")], None).expect("put");
    assert_eq!(value(&store, "a").as_deref(), Some("new"));
    assert!(matches!(store.merge_regions(&merged, &names[2]), Err(StoreError::MergeRefused { .. })));
    assert!(!store.split_region("t", b"c", Some(b"k")).expect("split"));

    store.compact_table("t", false).expect("compact");
    for parent in &names[..2] {
        assert!(!region_dir(dir.path(), parent).exists(), "{parent} still there after compaction");
    }
    assert_all_there(&store);
    // Now it merges again, with the last region: one region for the table.
    let all = store.merge_regions(&merged, &names[2]).expect("merge again");
    assert_eq!(store.table_regions("t").expect("regions").len(), 1);
    assert_all_there(&store);
    store.close().expect("close");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.table_regions("t").expect("regions")[0].dir_name(), all);
    assert_all_there(&store);
    assert_eq!(value(&store, "a").as_deref(), Some("new"));
}

#[test]
fn a_merge_refuses_regions_that_are_not_adjacent_or_not_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = populated(dir.path());
    assert!(matches!(store.merge_regions(&names[0], &names[2]), Err(StoreError::MergeRefused { .. })));
    assert!(matches!(store.merge_regions(&names[0], &names[0]), Err(StoreError::MergeRefused { .. })));
    store.close_region(&names[1]).expect("close");
    assert!(matches!(
        store.merge_regions(&names[0], &names[1]),
        Err(StoreError::NotServingRegion { state: RegionState::Closed, .. })
    ));
    // The refused merge changed nothing.
    assert_eq!(store.table_regions("t").expect("regions").len(), 3);
    store.open_region(&names[1]).expect("open");
    assert_all_there(&store);
}

#[test]
fn after_a_crash_a_merged_region_keeps_its_parents_until_compacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = populated(dir.path());
    let merged = store.merge_regions(&names[1], &names[2]).expect("merge");
    store.put("t", b"z", &[(b"f", b"q", b"late")], None).expect("put");
    drop(store); // a crash: nothing flushed since the merge

    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    let regions = store.table_regions("t").expect("regions");
    assert_eq!(regions.iter().map(|r| r.dir_name()).collect::<Vec<_>>(), [names[0].clone(), merged]);
    assert_all_there(&store);
    assert_eq!(value(&store, "z").as_deref(), Some("late"));
    assert!(region_dir(dir.path(), &names[1]).exists());
    store.compact_table("t", true).expect("compact");
    assert!(!region_dir(dir.path(), &names[1]).exists() && !region_dir(dir.path(), &names[2]).exists());
    assert_all_there(&store);
}

/// Panics (a simulated crash of the process) at one hook point.
struct CrashAt(HookPoint);

impl WriteHooks for CrashAt {
    fn at(&self, point: HookPoint, _region: u64) -> store::Result<()> {
        assert!(point != self.0, "simulated crash at {point:?}");
        Ok(())
    }
}

/// Merges the first two regions with a crash at `point`, then reopens.
fn crash_during_merge(dir: &Path, point: HookPoint) -> (Store, Vec<String>) {
    let hooked = StoreBuilder::new().hooks(Arc::new(CrashAt(point))).options();
    let (store, names) = populated_with(dir, hooked);
    let (s, a, b) = (store.clone(), names[0].clone(), names[1].clone());
    let crashed = std::thread::spawn(move || s.merge_regions(&a, &b)).join();
    assert!(crashed.is_err(), "the merge did not reach {point:?}");
    drop(store);
    (StoreBuilder::new().open(dir).expect("reopen"), names)
}

#[test]
fn a_crash_before_the_commit_leaves_both_parents_and_removes_the_merged_region() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = crash_during_merge(dir.path(), HookPoint::MergeBeforeCommit);
    let regions: Vec<String> = store.table_regions("t").expect("regions").iter().map(|r| r.dir_name()).collect();
    assert_eq!(regions, names);
    assert_all_there(&store);
    // Only the three regions' directories are left.
    let mut entries: Vec<String> = std::fs::read_dir(dir.path().join("data").join("default").join("t"))
        .expect("table dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    entries.sort();
    assert_eq!(entries, names);
    // And they merge now.
    store.merge_regions(&names[0], &names[1]).expect("merge after recovery");
    assert_all_there(&store);
}

#[test]
fn a_crash_right_after_the_commit_finishes_the_merge_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = crash_during_merge(dir.path(), HookPoint::MergeCommitted);
    let regions = store.table_regions("t").expect("regions");
    assert_eq!(regions.len(), 2);
    assert_eq!(regions[0].merged_from.len(), 2);
    assert_all_there(&store);
    for parent in &names[..2] {
        assert!(region_dir(dir.path(), parent).join(".merged").exists(), "open marks {parent}");
    }
    store.compact_table("t", true).expect("compact");
    assert!(!region_dir(dir.path(), &names[0]).exists());
    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_all_there(&store);
}

#[test]
fn writers_during_a_merge_never_fail_and_nothing_acknowledged_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open");
    store.create_table(table(), &[b"m".to_vec()]).expect("create");
    let names: Vec<String> = store.table_regions("t").expect("regions").iter().map(|r| r.dir_name()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let value = vec![b'x'; 1000];
                let mut acked = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    // Rows on both sides of the merge.
                    let row = format!("{}{w}-{i:08}", if i.is_multiple_of(2) { "a" } else { "z" });
                    store.put("t", row.as_bytes(), &[(b"f", b"q", &value)], None).expect("a put failed during a merge");
                    acked.push(row);
                    i += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    store.merge_regions(&names[0], &names[1]).expect("merge");
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::Release);
    let acked: Vec<String> = writers.into_iter().flat_map(|w| w.join().expect("writer")).collect();
    assert_eq!(store.table_regions("t").expect("regions").len(), 1);
    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    for row in &acked {
        assert!(value(&store, row).is_some(), "acknowledged {row} lost");
    }
}

/// A parent whose `.merged` marker never landed stays retired even once its
/// merged region has split since (and is itself a retired parent).
#[test]
fn an_unmarked_merge_parent_stays_retired_after_its_merged_region_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, names) = populated(dir.path());
    store.merge_regions(&names[0], &names[1]).expect("merge");
    // As if writing the low parent's marker had failed.
    std::fs::remove_file(region_dir(dir.path(), &names[0]).join(".merged")).expect("remove marker");
    store.compact_table("t", true).expect("compact the references away");
    assert!(store.split_region("t", b"c", Some(b"k")).expect("split"), "the merged region splits");
    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    let regions = store.table_regions("t").expect("regions");
    assert_eq!(regions.len(), 3, "{regions:?}");
    assert!(!regions.iter().any(|r| r.dir_name() == names[0]), "the old parent came back: {regions:?}");
    assert_all_there(&store);
}
