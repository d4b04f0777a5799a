//! Crash points: a split by reference, a merge by reference (each followed
//! by the compactions that remove its parents), and the recovery of a store
//! are each run once on the fault-injecting file system to count the
//! changes they make to the disk, then again from the same starting state
//! once for every `k`, stopped after their `k`-th change as a killed process
//! would be, and followed by a power cut (everything not synced is lost,
//! directory entries included). The store opened from what is left must
//! hold every acknowledged row exactly once, its regions must cover the key
//! space without gap or overlap, and it must go on working: a write, a
//! flush, a major compaction and a reopen later, everything is still there.
//! The recovery scenario also stops its own recovery at every change (a
//! crash during recovery) before the final check.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use store::fs::{FaultInjectingFs, LocalFs};
use store::testing::{StoreBuilder, copy_dir, sync_wal_table};
use store::{Scan, Store};

const ROWS: usize = 120;

fn row(i: usize) -> String {
    format!("r{i:03}")
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}").into_bytes()
}

/// A store in `dir` whose table `t` (families f and g, `split_keys`) holds
/// rows 0..ROWS: the first half flushed into files, the second only in the
/// WAL (SYNC_WAL), as a crash leaves it. Everything written is durable.
fn base(dir: &Path, split_keys: &[Vec<u8>]) {
    let fs = FaultInjectingFs::new(Arc::new(LocalFs));
    let store = StoreBuilder::new().fs(Arc::new(fs.clone())).open(dir).expect("open");
    store.create_table(sync_wal_table("t", &["f", "g"]), split_keys).expect("create");
    for i in 0..ROWS {
        store.put("t", row(i).as_bytes(), &[(b"f", b"q", &value(i)), (b"g", b"q", &value(i))], None).expect("put");
        if i == ROWS / 2 {
            store.flush_table("t").expect("flush");
        }
    }
    drop(store);
    fs.drop_unsynced().expect("power cut");
}

/// Every row once with its value in both families, and regions covering
/// the key space; `extra` rows written after the crash too.
fn check(store: &Store, extra: usize, when: &str) {
    let mut seen = Vec::new();
    for r in store.scan("t", Scan::default()).expect("scan") {
        let cells = r.unwrap_or_else(|e| panic!("{when}: scan failed: {e}"));
        let key = String::from_utf8_lossy(&cells[0].row).into_owned();
        let i: usize = key[1..].parse().expect("row number");
        let families: Vec<&[u8]> = cells.iter().map(|c| c.family.as_ref()).collect();
        assert_eq!(families, [&b"f"[..], b"g"], "{when}: row {key} has both families once");
        assert!(cells.iter().all(|c| c.value == value(i)), "{when}: row {key} holds its value");
        seen.push(i);
    }
    let want: Vec<usize> = (0..ROWS + extra).collect();
    assert_eq!(seen, want, "{when}: every row exactly once, in order");
    let regions = store.table_regions("t").expect("regions");
    assert!(regions[0].start_key.is_empty(), "{when}: the first region starts the key space");
    assert!(regions[regions.len() - 1].end_key.is_empty(), "{when}: the last region ends it");
    for w in regions.windows(2) {
        assert_eq!(w[0].end_key, w[1].start_key, "{when}: regions {:?} chain without gap or overlap", regions);
    }
}

/// Opens what a crash left in `dir`, checks it, and makes it work: a write,
/// a flush, a major compaction (removing what a split or merge left to
/// remove), a reopen, and the check again.
fn recover_and_check(dir: &Path, when: &str) {
    let fs = FaultInjectingFs::new(Arc::new(LocalFs));
    let store = StoreBuilder::new()
        .fs(Arc::new(fs.clone()))
        .open(dir)
        .unwrap_or_else(|e| panic!("{when}: recovery failed: {e}"));
    check(&store, 0, when);
    store.put("t", row(ROWS).as_bytes(), &[(b"f", b"q", &value(ROWS)), (b"g", b"q", &value(ROWS))], None).expect("put");
    store.flush_table("t").expect("flush");
    store.compact_table("t", true).expect("compact");
    store.close().expect("close");
    let store =
        StoreBuilder::new().fs(Arc::new(fs.clone())).open(dir).unwrap_or_else(|e| panic!("{when}: reopen failed: {e}"));
    check(&store, 1, &format!("{when}, after a write, a flush, a compaction and a reopen"));
    store.close().expect("close");
}

/// Runs `op` on a store opened from a copy of `base_dir`, stopped after
/// its `k`-th change to the disk for every `k` up to the changes it makes
/// uninterrupted, then a power cut, then `recover_and_check`. Returns how
/// many changes the operation made.
fn crash_at_every_change(base_dir: &Path, work: &Path, what: &str, regions_after: usize, op: impl Fn(&Store)) -> u64 {
    let run = |k: Option<u64>| -> (PathBuf, u64) {
        let dir = work.join(format!("{what}-{}", k.map_or("all".to_string(), |k| k.to_string())));
        copy_dir(base_dir, &dir).expect("copy the store directory");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        let store = StoreBuilder::new().fs(Arc::new(fs.clone())).open(&dir).expect("open the base");
        let before = fs.mutations();
        if let Some(k) = k {
            fs.stop_after(k);
        }
        op(&store);
        let changes = fs.mutations() - before;
        if k.is_none() {
            let regions = store.table_regions("t").expect("regions").len();
            assert_eq!(regions, regions_after, "{what}, uninterrupted, leaves {regions_after} regions");
        }
        drop(store);
        fs.drop_unsynced().expect("power cut");
        (dir, changes)
    };
    let (dir, changes) = run(None);
    recover_and_check(&dir, &format!("{what}, uninterrupted"));
    std::fs::remove_dir_all(&dir).expect("clean up");
    assert!(changes > 10, "{what} changes the disk ({changes} changes)");
    for k in 0..changes {
        let (dir, _) = run(Some(k));
        recover_and_check(&dir, &format!("{what}, stopped after {k} of {changes} changes"));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
    changes
}

#[test]
fn a_split_and_its_compactions_stopped_at_every_change_lose_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base_dir = tmp.path().join("base");
    base(&base_dir, &[]);
    let changes = crash_at_every_change(&base_dir, tmp.path(), "split", 2, |store| {
        // Errors are expected once the file system has stopped.
        let _ = store.split_region("t", b"r000", Some(b"r060"));
        let _ = store.compact_table("t", true);
    });
    println!("split and compactions: crashed at each of {changes} changes");
}

#[test]
fn a_merge_and_its_compaction_stopped_at_every_change_lose_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base_dir = tmp.path().join("base");
    base(&base_dir, &[b"r060".to_vec()]);
    let changes = crash_at_every_change(&base_dir, tmp.path(), "merge", 1, |store| {
        let names: Vec<String> = store.table_regions("t").expect("regions").iter().map(|r| r.dir_name()).collect();
        let _ = store.merge_regions(&names[0], &names[1]);
        let _ = store.compact_table("t", true);
    });
    println!("merge and compaction: crashed at each of {changes} changes");
}

/// Recovery (replay of the WAL-only half, its flushes, the WAL's new file
/// and archiving) stopped at every change, then stopped again at every
/// change of the next recovery from there, before a full one.
#[test]
fn a_recovery_stopped_at_every_change_and_again_during_the_next_loses_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base_dir = tmp.path().join("base");
    base(&base_dir, &[b"r060".to_vec()]);
    let open_stopped = |dir: &Path, k: Option<u64>| -> u64 {
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        if let Some(k) = k {
            fs.stop_after(k);
        }
        drop(StoreBuilder::new().fs(Arc::new(fs.clone())).open(dir));
        fs.drop_unsynced().expect("power cut");
        fs.mutations()
    };
    let counting = tmp.path().join("count");
    copy_dir(&base_dir, &counting).expect("copy the store directory");
    let changes = open_stopped(&counting, None);
    assert!(changes > 10, "recovery changes the disk ({changes} changes)");
    for k in 0..changes {
        let dir = tmp.path().join(format!("recovery-{k}"));
        copy_dir(&base_dir, &dir).expect("copy the store directory");
        open_stopped(&dir, Some(k));
        // The next recovery, stopped at a few of its own changes in turn.
        for j in [0, 1, 2, 3, 5, 8, 13, 21] {
            let again = tmp.path().join(format!("recovery-{k}-{j}"));
            copy_dir(&dir, &again).expect("copy the store directory");
            open_stopped(&again, Some(j));
            recover_and_check(&again, &format!("recovery stopped after {k} of {changes} changes, then after {j}"));
            std::fs::remove_dir_all(&again).expect("clean up");
        }
        recover_and_check(&dir, &format!("recovery stopped after {k} of {changes} changes"));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
    println!("recovery: crashed at each of {changes} changes, and again during the next");
}
