//! Splits by reference, through the public `Store`: the daughters read the
//! parent's files through references to their halves (forward and reverse
//! scans, gets, bloom-filtered gets), take writes at once, have the
//! references compacted away, and the parent's directory goes only when no
//! daughter refers to it — across reopens and crashes (a dropped store
//! without `close`), and with writers running during the split.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use store::testing::StoreBuilder;
use store::wal::Durability;
use store::{FamilyDescriptor, Get, Scan, Store, StoreOptions, TableDescriptor};

fn table() -> TableDescriptor {
    let mut f = FamilyDescriptor::new("f");
    f.max_versions = 2;
    f.block_size = 512; // many blocks, so that the split row comes from the index
    let mut desc = TableDescriptor::new("t", vec![f, FamilyDescriptor::new("g")]);
    desc.durability = Durability::SyncWal;
    desc
}

fn row(i: usize) -> String {
    format!("r{i:04}")
}

/// Every row's newest `f:q` value, by a forward scan.
fn scan_all(store: &Store, reverse: bool) -> Vec<(String, String)> {
    let cells = store.scan("t", Scan { reverse, ..Scan::default() }).expect("scan");
    cells
        .map(|r| r.expect("row"))
        .map(|cells| {
            let c = cells.iter().find(|c| c.family == b"f"[..]).expect("an f cell");
            (String::from_utf8_lossy(&c.row).into_owned(), String::from_utf8_lossy(&c.value).into_owned())
        })
        .collect()
}

fn get(store: &Store, r: &str) -> Option<String> {
    let cells = store.get("t", &Get::new(r.as_bytes())).expect("get");
    cells.iter().find(|c| c.family == b"f"[..]).map(|c| String::from_utf8_lossy(&c.value).into_owned())
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A store with 400 rows in three flushed files (and some overwritten),
/// plus unflushed writes; returns the parent region's directory.
fn populated(dir: &Path) -> (Store, PathBuf) {
    let store = StoreBuilder::new().open(dir).expect("open");
    store.create_table(table(), &[]).expect("create");
    for round in 0..3 {
        for i in (round..400).step_by(3) {
            let v = format!("v{i}-{round}");
            store.put("t", row(i).as_bytes(), &[(b"f", b"q", v.as_bytes()), (b"g", b"q", b"g")], None).expect("put");
        }
        store.flush_table("t").expect("flush");
    }
    for i in (0..400).step_by(7) {
        store.put("t", row(i).as_bytes(), &[(b"f", b"q", b"late")], None).expect("put");
    }
    let parent = store.table_regions("t").expect("regions").remove(0);
    let parent_dir = dir.join("data").join("default").join("t").join(parent.dir_name());
    (store, parent_dir)
}

fn expected(i: usize, after_split: bool) -> String {
    if after_split && i.is_multiple_of(5) {
        "after".to_string()
    } else if i.is_multiple_of(7) {
        "late".to_string()
    } else {
        format!("v{i}-{}", i % 3)
    }
}

fn check_all(store: &Store, after_split: bool, when: &str) {
    let want: Vec<(String, String)> = (0..400).map(|i| (row(i), expected(i, after_split))).collect();
    assert_eq!(scan_all(store, false), want, "{when}: forward scan");
    let mut reversed = want.clone();
    reversed.reverse();
    assert_eq!(scan_all(store, true), reversed, "{when}: reverse scan");
    for i in (0..400).step_by(13) {
        assert_eq!(get(store, &row(i)), Some(expected(i, after_split)), "{when}: get {}", row(i));
    }
    assert_eq!(get(store, "r9999"), None, "{when}: a missing row");
}

#[test]
fn daughters_read_their_halves_through_references_until_compaction_rewrites_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, parent_dir) = populated(tmp.path());
    check_all(&store, false, "before the split");

    assert!(store.split_region("t", b"r0000", None).expect("split"), "the split went through");
    let daughters = store.table_regions("t").expect("regions");
    assert_eq!(daughters.len(), 2);
    let mid = daughters[1].start_key.clone();
    assert!(mid.as_slice() > b"r0100".as_slice() && mid.as_slice() < b"r0300".as_slice(), "a middle row: {mid:?}");
    // Nothing was copied: each daughter family lists references only.
    for d in &daughters {
        let family = tmp.path().join("data").join("default").join("t").join(d.dir_name()).join("f");
        let refs = files_in(&family).into_iter().filter(|n| n.ends_with(".ref")).count();
        let data = files_in(&family).into_iter().filter(|n| n.ends_with(".sf")).count();
        assert_eq!(
            (refs, data),
            (4, 0),
            "three flushes and the split's own; daughter {}: {:?}",
            d.dir_name(),
            files_in(&family)
        );
    }
    assert!(parent_dir.join(".split").exists(), "the parent stays, marked, while referred to");
    check_all(&store, false, "after the split");
    // A daughter with references is not split again.
    assert!(!store.split_region("t", b"r0000", Some(b"r0050")).expect("split"), "references first");

    // Writes go to the daughters at once, and survive their flushes.
    for i in (0..400).step_by(5) {
        store.put("t", row(i).as_bytes(), &[(b"f", b"q", b"after")], None).expect("put");
    }
    store.flush_table("t").expect("flush");
    check_all(&store, true, "after writes to the daughters");

    // Compaction rewrites the references into the daughters' own files;
    // once neither refers to the parent, its directory goes.
    store.compact_region("t", b"r0000", false).expect("compact the first daughter");
    assert!(parent_dir.exists(), "the other daughter still refers to the parent");
    store.compact_region("t", mid.as_slice(), false).expect("compact the second daughter");
    assert!(!parent_dir.exists(), "no reference is left: the parent is gone");
    for d in store.table_regions("t").expect("regions") {
        let family = tmp.path().join("data").join("default").join("t").join(d.dir_name()).join("f");
        assert!(!files_in(&family).iter().any(|n| n.ends_with(".ref")), "references compacted away");
    }
    check_all(&store, true, "after the daughters' compactions");
    // Now the daughters may split again.
    assert!(store.split_region("t", b"r0000", Some(b"r0050")).expect("split"), "a daughter splits again");
    check_all(&store, true, "after a second split");
    store.close().expect("close");
    let store = StoreBuilder::new().open(tmp.path()).expect("reopen");
    check_all(&store, true, "after a reopen");
}

#[test]
fn a_crash_after_a_split_keeps_the_parent_for_its_daughters_and_recovery_finishes_the_job() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, parent_dir) = populated(tmp.path());
    assert!(store.split_region("t", b"r0000", Some(b"r0200")).expect("split"));
    for i in (0..400).step_by(5) {
        store.put("t", row(i).as_bytes(), &[(b"f", b"q", b"after")], None).expect("put");
    }
    drop(store); // a crash: nothing flushed or closed after the split

    let store = StoreBuilder::new().open(tmp.path()).expect("recovery");
    assert_eq!(store.table_regions("t").expect("regions").len(), 2, "both daughters, not the parent");
    assert!(parent_dir.exists(), "the daughters still refer to the parent's files");
    check_all(&store, true, "after recovery");
    // One daughter compacts, then the process dies before the other does.
    store.compact_region("t", b"r0000", false).expect("compact");
    drop(store);
    let store = StoreBuilder::new().open(tmp.path()).expect("recovery");
    assert!(parent_dir.exists());
    check_all(&store, true, "after a second recovery");
    store.compact_region("t", b"r0300", false).expect("compact");
    assert!(!parent_dir.exists(), "the parent goes with the last reference");
    drop(store);
    let store = StoreBuilder::new().open(tmp.path()).expect("recovery");
    check_all(&store, true, "after a third recovery");
}

#[test]
fn an_uncommitted_split_leaves_the_parent_whole() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, parent_dir) = populated(tmp.path());
    assert!(store.split_region("t", b"r0000", Some(b"r0200")).expect("split"));
    let daughters = store.table_regions("t").expect("regions");
    drop(store);
    // As if the process died before the commit point: no marker.
    std::fs::remove_file(parent_dir.join(".split")).expect("remove the marker");
    let store = StoreBuilder::new().open(tmp.path()).expect("recovery");
    let regions = store.table_regions("t").expect("regions");
    assert_eq!(regions.len(), 1, "the parent alone: {regions:?}");
    for d in daughters {
        assert!(!tmp.path().join("data").join("default").join("t").join(d.dir_name()).exists(), "daughter removed");
    }
    // The writes after the split were the daughters'; without the commit
    // the parent serves what it had (its WAL edits were flushed before).
    check_all(&store, false, "parent after an uncommitted split");
}

/// Writers keep going while a region of tens of megabytes splits: no write
/// fails, every acknowledged write is there afterwards, and the split's
/// stop of writes (the "split" event) is reported.
#[test]
fn writes_never_fail_while_a_big_region_splits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path(), StoreOptions::default()).expect("open");
    let mut desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]);
    desc.durability = Durability::AsyncWal;
    store.create_table(desc, &[]).expect("create");
    let value = vec![b'x'; 1000];
    for i in 0..30_000 {
        store.put("t", format!("k{:08}", i * 7919 % 30_000).as_bytes(), &[(b"f", b"q", &value)], None).expect("put");
    }
    store.flush_table("t").expect("flush");

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, stop, written) = (store.clone(), stop.clone(), written.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let key = format!("w{w}-{:08}", n * 104_729 % 1_000_000);
                    // Rows on both sides of any split row.
                    let row = if n.is_multiple_of(2) { format!("a{key}") } else { format!("z{key}") };
                    store.put("t", row.as_bytes(), &[(b"f", b"q", b"w")], None).expect("a write during the split");
                    n += 1;
                    written.fetch_add(1, Ordering::Relaxed);
                }
                n
            })
        })
        .collect();
    while written.load(Ordering::Relaxed) < 200 {
        std::thread::yield_now();
    }
    assert!(store.split_region("t", b"k", None).expect("split"), "the split went through");
    let after_split = written.load(Ordering::Relaxed);
    while written.load(Ordering::Relaxed) < after_split + 200 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Release);
    let counts: Vec<u64> = writers.into_iter().map(|w| w.join().expect("writer")).collect();
    let split = store.recent_events().into_iter().find(|e| e.kind == "split").expect("a split event");
    eprintln!("writes stopped for {} ms during the split", split.millis);
    assert_eq!(store.table_regions("t").expect("regions").len(), 2);
    for (w, n) in counts.iter().enumerate() {
        for i in (0..*n).step_by(97) {
            let key = format!("w{w}-{:08}", i * 104_729 % 1_000_000);
            let row = if i.is_multiple_of(2) { format!("a{key}") } else { format!("z{key}") };
            let cells = store.get("t", &Get::new(row.as_bytes())).expect("get");
            assert_eq!(cells.len(), 1, "acknowledged write {row}");
        }
    }
    let scanned = store.scan("t", Scan { start: Some(b"k".to_vec()), stop: Some(b"l".to_vec()), ..Scan::default() });
    assert_eq!(scanned.expect("scan").count(), 30_000, "every row of the split region");
}

/// A compaction of the parent that comes after its split (a queued request,
/// or an admin compaction holding the old region) must not touch the files
/// the daughters' references name. Before stores were retired at the split,
/// this compaction replaced the parent's files and the daughters failed to
/// open or read them (the concurrent model test found it).
#[test]
fn a_compaction_of_a_split_parent_leaves_its_files_to_the_daughters() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, parent_dir) = populated(tmp.path());
    let parent = store.all_regions().into_iter().next().expect("the parent region");
    assert!(store.split_region("t", b"r0000", Some(b"r0200")).expect("split"));
    let before = files_in(&parent_dir.join("f"));
    for s in parent.stores() {
        let compacted = s.compact_selected(true, |files| Some(files.to_vec())).expect("compaction call");
        assert_eq!(compacted, None, "a split parent's store does not compact");
    }
    assert_eq!(files_in(&parent_dir.join("f")), before, "the parent's files are untouched");
    check_all(&store, false, "after a late compaction of the parent");
    drop(store);
    let store = StoreBuilder::new().open(tmp.path()).expect("reopen");
    check_all(&store, false, "after a reopen");
}

/// Fails the opening of a committed split's daughters `n` times.
struct FailOpeningDaughters(std::sync::atomic::AtomicU32);

impl store::hooks::WriteHooks for FailOpeningDaughters {
    fn at(&self, point: store::hooks::HookPoint, _region: u64) -> store::Result<()> {
        let failing = point == store::hooks::HookPoint::OpenCommittedRegion
            && self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if failing {
            return Err(store::StoreError::io("open", "daughter", std::io::Error::other("injected open failure")));
        }
        Ok(())
    }
}

/// Once the split's marker is written the split stands: a failure to open
/// the daughters is retried, and if it persists the rows are not served
/// (never by the retired parent) until a reopen finishes the switch.
#[test]
fn daughters_that_fail_to_open_after_the_commit_are_retried_then_opened_by_a_reopen() {
    for failures in [2, u32::MAX] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = populated(dir.path());
        let want = scan_all(&store, false);
        drop(store);
        let hooks = Arc::new(FailOpeningDaughters(std::sync::atomic::AtomicU32::new(failures)));
        let wait = std::time::Duration::from_millis(300);
        let store =
            StoreBuilder::new().hooks(hooks).with(|o| o.region_move_wait = wait).open(dir.path()).expect("reopen");
        let split = store.split_region("t", b"", None);
        if failures == 2 {
            assert!(split.expect("split after two failed opens"), "split");
            assert_eq!(store.table_regions("t").expect("regions").len(), 2);
            assert_eq!(scan_all(&store, false), want);
            continue;
        }
        assert!(split.is_err(), "the daughters never opened");
        assert_eq!(store.table_regions("t").expect("regions").len(), 1, "the parent is still listed");
        // Requests wait for the switch for `region_move_wait`, then fail.
        let started = std::time::Instant::now();
        let got = store.get("t", &Get::new(want[0].0.as_bytes()));
        assert!(
            matches!(&got, Err(store::StoreError::WritesStopped(m)) if m.contains("split or merged")),
            "its rows are not served: {got:?}"
        );
        assert!(started.elapsed() >= wait, "the get waited for the split to finish ({:?})", started.elapsed());
        assert!(started.elapsed() < wait * 10, "and no longer ({:?})", started.elapsed());
        assert!(store.put("t", b"r0001", &[(b"f", b"q", b"lost?")], None).is_err(), "nor written");
        drop(store);
        let store = StoreBuilder::new().open(dir.path()).expect("reopen finishes the split");
        assert_eq!(store.table_regions("t").expect("regions").len(), 2, "the daughters serve");
        assert_eq!(scan_all(&store, false), want, "every row, none lost or changed");
    }
}
