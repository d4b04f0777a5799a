//! Closing and opening single regions through the public `Store`: a closed
//! region refuses requests with `NotServingRegion` at once while its table's
//! other regions serve, its directory alone holds everything (the WAL can
//! go), it stays closed across a restart, and opening it serves every
//! acknowledged write again — also with writers running during the close.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use store::testing::{StoreBuilder, sync_wal_table};
use store::{Get, RegionState, Scan, Store, StoreError, StoreOptions};

/// A store whose table `t` has regions [, m) and [m, ), with rows a0..a49
/// and z0..z49, some flushed and some only in the WAL; returns the name of
/// the region holding the a-rows.
fn populated(dir: &Path) -> (Store, String) {
    let store = StoreBuilder::new().open(dir).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[b"m".to_vec()]).expect("create");
    for i in 0..50 {
        for p in ["a", "z"] {
            store.put("t", format!("{p}{i:02}").as_bytes(), &[(b"f", b"q", b"v1")], None).expect("put");
        }
        if i == 25 {
            store.flush_table("t").expect("flush");
        }
    }
    let first = store.table_regions("t").expect("regions")[0].dir_name();
    (store, first)
}

fn value(store: &Store, row: &str) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(store.get("t", &Get::new(row.as_bytes()))?.first().map(|c| c.value.to_vec()))
}

fn state_of(store: &Store, name: &str) -> RegionState {
    store.region_states("t").expect("states").into_iter().find(|(i, _)| i.dir_name() == name).expect("region").1
}

fn assert_not_serving<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::NotServingRegion { state: RegionState::Closed, region }) => {
            assert!(region.starts_with("t,,"), "{what}: region name {region}");
        }
        other => panic!("{what}: expected NotServingRegion(CLOSED), got {other:?}"),
    }
}

#[test]
fn a_closed_region_refuses_requests_and_its_neighbour_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, first) = populated(dir.path());
    store.close_region(&first).expect("close");
    assert_eq!(state_of(&store, &first), RegionState::Closed);
    assert_not_serving(value(&store, "a01"), "get");
    assert_not_serving(store.put("t", b"a01", &[(b"f", b"q", b"v2")], None), "put");
    assert_not_serving(store.increment("t", b"a02", b"f", b"n", 1), "increment");
    let scan = store.scan("t", Scan::default()).and_then(|s| s.collect::<Result<Vec<_>, _>>());
    assert_not_serving(scan, "scan");
    // The other region serves.
    assert_eq!(value(&store, "z01").expect("get z"), Some(b"v1".to_vec()));
    store.put("t", b"z01", &[(b"f", b"q", b"v2")], None).expect("put z");
    let from_m = Scan { start: Some(b"m".to_vec()), ..Scan::default() };
    assert_eq!(store.scan("t", from_m).expect("scan").count(), 50);
    // A closed region is not split, closed again, or compacted.
    assert!(!store.split_region("t", b"a", Some(b"a10")).expect("split"), "split of a closed region");
    assert!(matches!(store.close_region(&first), Err(StoreError::NotServingRegion { .. })));
    store.compact_table("t", true).expect("compact skips it");

    store.open_region(&first).expect("open");
    assert_eq!(state_of(&store, &first), RegionState::Open);
    for i in 0..50 {
        assert_eq!(value(&store, &format!("a{i:02}")).expect("get"), Some(b"v1".to_vec()), "a{i:02}");
    }
    store.put("t", b"a01", &[(b"f", b"q", b"v2")], None).expect("put after open");
    assert_eq!(value(&store, "a01").expect("get"), Some(b"v2".to_vec()));
    assert!(matches!(store.open_region(&first), Err(StoreError::RegionNotClosed { .. })), "open of an open region");
    assert!(matches!(store.close_region("00000000000000ff"), Err(StoreError::UnknownRegion(_))));
}

#[test]
fn a_closed_region_stays_closed_across_a_restart_and_needs_no_wal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, first) = populated(dir.path());
    store.close_region(&first).expect("close");
    // Nothing of the closed region holds a WAL file back any more: only the
    // other region's unflushed edits do.
    store.flush_region("t", b"z").expect("flush z");
    store.wal().roll().expect("roll");
    store.wal().archive_obsolete().expect("archive");
    assert_eq!(store.wal().live_files().len(), 1, "{:?}", store.wal().live_files());
    drop(store); // a crash: no close

    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(state_of(&store, &first), RegionState::Closed);
    assert_not_serving(value(&store, "a01"), "get after restart");
    store.close().expect("close store");

    // The region's directory alone is the region: with the WAL gone (as on
    // another server), opening it serves everything.
    std::fs::remove_dir_all(dir.path().join("WALs")).expect("remove the WAL directories");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen without wal");
    store.open_region(&first).expect("open");
    for i in 0..50 {
        assert_eq!(value(&store, &format!("a{i:02}")).expect("get"), Some(b"v1".to_vec()), "a{i:02}");
    }
    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen after open");
    assert_eq!(state_of(&store, &first), RegionState::Open, "an opened region stays open");
}

#[test]
fn writers_during_a_close_see_success_or_not_serving_and_nothing_acknowledged_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let name = store.table_regions("t").expect("regions")[0].dir_name();
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicU64::new(0));
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (store, stop, refused, written) = (store.clone(), stop.clone(), refused.clone(), written.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let value = vec![b'x'; 2000];
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let row = format!("w{w}-{i:08}");
                    match store.put("t", row.as_bytes(), &[(b"f", b"q", &value)], None) {
                        Ok(()) => {
                            acked.push(row);
                            written.fetch_add(1, Ordering::Release);
                        }
                        Err(StoreError::NotServingRegion { state, .. }) => {
                            assert!(
                                matches!(state, RegionState::Closing | RegionState::Closed | RegionState::Opening),
                                "refused in state {state}"
                            );
                            refused.fetch_add(1, Ordering::Release);
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        Err(e) => panic!("put {row}: {e}"),
                    }
                    i += 1;
                }
                acked
            })
        })
        .collect();
    // Ordered by what the writers did, not by sleeps: writes before the
    // close, a write refused while closed, writes after the reopen.
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}: not within 60 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    wait_until("writes before the close", &|| written.load(Ordering::Acquire) >= 100);
    store.close_region(&name).expect("close");
    wait_until("a write refused by the closed region", &|| refused.load(Ordering::Acquire) > 0);
    let before_open = written.load(Ordering::Acquire);
    store.open_region(&name).expect("open");
    wait_until("writes after the reopen", &|| written.load(Ordering::Acquire) >= before_open + 100);
    stop.store(true, Ordering::Release);
    let acked: Vec<String> = writers.into_iter().flat_map(|w| w.join().expect("writer")).collect();
    assert!(refused.load(Ordering::Relaxed) > 0, "no write met the closed region");
    store.close().expect("close store");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    for row in &acked {
        assert!(value(&store, row).expect("get").is_some(), "acknowledged {row} lost");
    }
}

#[test]
fn a_close_that_cannot_commit_leaves_the_region_open_here_and_after_a_restart() {
    use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
    let dir = tempfile::tempdir().expect("tempdir");
    let fault = FaultInjectingFs::new(Arc::new(LocalFs));
    let opts = || StoreBuilder::new().fs(Arc::new(fault.clone())).options();
    let store = Store::open(dir.path(), opts()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    store.put("t", b"a", &[(b"f", b"q", b"v1")], None).expect("put");
    let name = store.table_regions("t").expect("regions")[0].dir_name();
    // The marker's rename into place fails.
    fault.fail(FaultKind::Rename, ".closed", 0, 1);
    let err = store.close_region(&name).expect_err("the close cannot commit");
    assert!(err.to_string().contains("injected fault"), "{err}");
    assert_eq!(state_of(&store, &name), RegionState::Open);
    store.put("t", b"b", &[(b"f", b"q", b"v2")], None).expect("it serves on");
    assert_eq!(value(&store, "a").expect("get"), Some(b"v1".to_vec()));
    drop(store);
    let store = Store::open(dir.path(), opts()).expect("reopen");
    assert_eq!(state_of(&store, &name), RegionState::Open);
    assert_eq!(value(&store, "b").expect("get"), Some(b"v2".to_vec()));
}

/// A close, split or merge that must flush writes made after a failed flush
/// (whose retry writes only its old snapshot) commits them too.
#[test]
fn a_close_after_a_failed_flush_keeps_the_writes_made_since() {
    use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
    let dir = tempfile::tempdir().expect("tempdir");
    let fault = FaultInjectingFs::new(Arc::new(LocalFs));
    let store = StoreBuilder::new().fs(Arc::new(fault.clone())).open(dir.path()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[b"m".to_vec()]).expect("create");
    store.put("t", b"a1", &[(b"f", b"q", b"v1")], None).expect("put");
    store.put("t", b"z1", &[(b"f", b"q", b"v1")], None).expect("put");
    fault.fail(FaultKind::Create, ".sf", 0, 2);
    assert!(store.flush_table("t").is_err(), "the flush fails");
    store.put("t", b"a2", &[(b"f", b"q", b"v2")], None).expect("put after the failed flush");
    store.put("t", b"z2", &[(b"f", b"q", b"v2")], None).expect("put after the failed flush");
    fault.heal();
    let names: Vec<String> = store.table_regions("t").expect("regions").iter().map(|r| r.dir_name()).collect();
    // Close and open (the region comes back from its directory alone) ...
    store.close_region(&names[0]).expect("close");
    store.open_region(&names[0]).expect("open");
    // ... and merge (the merged region reads the parents' files alone).
    store.merge_regions(&names[0], &names[1]).expect("merge");
    store.wal().roll().expect("roll");
    store.wal().archive_obsolete().expect("archive");
    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    for row in ["a1", "a2", "z1", "z2"] {
        assert!(value(&store, row).expect("get").is_some(), "{row} lost");
    }
}

/// Fails the second WAL append of its region (once) as a region drained by
/// a split would refuse it: a batch's second mini-batch meets the drain.
struct DrainAtSecondBatch(std::sync::atomic::AtomicU32);

impl store::hooks::WriteHooks for DrainAtSecondBatch {
    fn at(&self, point: store::hooks::HookPoint, _region: u64) -> store::Result<()> {
        if point == store::hooks::HookPoint::BeforeWalAppend && self.0.fetch_add(1, Ordering::SeqCst) == 1 {
            return Err(StoreError::NotServingRegion { region: "t,,test".into(), state: RegionState::Splitting });
        }
        Ok(())
    }
}

#[test]
fn a_batch_whose_second_mini_batch_meets_a_drain_applies_its_first_once() {
    use store::{Mutation, MutationRef, RowMutations};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut desc = sync_wal_table("t", &["f"]);
    desc.families[0].max_versions = 3;
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(desc, &[]).expect("create");
    for (ts, v) in [(1, "v1"), (2, "v2")] {
        store.put("t", b"a", &[(b"f", b"q", v.as_bytes())], Some(ts)).expect("put");
    }
    drop(store);
    let hooks = Arc::new(DrainAtSecondBatch(std::sync::atomic::AtomicU32::new(0)));
    let store = StoreBuilder::new().hooks(hooks).open(dir.path()).expect("reopen");
    // The row twice: two mini-batches. The first deletes the latest version
    // (v2); the second, refused once by the "drain", puts v3.
    let delete = [MutationRef::DeleteVersion { family: b"f", qualifier: b"q", timestamp: None }];
    let put =
        Mutation::Put { family: b"f".to_vec(), qualifier: b"q".to_vec(), timestamp: Some(3), value: b"v3".to_vec() };
    let put = [put.as_ref()];
    let rows = [RowMutations { row: b"a", mutations: &delete }, RowMutations { row: b"a", mutations: &put }];
    store.mutate_rows("t", &rows, None).expect("batch");
    let get = Get { max_versions: 3, ..Get::new(&b"a"[..]) };
    let versions: Vec<String> =
        store.get("t", &get).expect("get").iter().map(|c| String::from_utf8_lossy(&c.value).into_owned()).collect();
    assert_eq!(versions, ["v3", "v1"], "the delete of the latest version ran once");
}

/// Once armed, holds the first request that has looked its region up until
/// the test has done something to that region.
struct PauseAfterLookup {
    armed: AtomicBool,
    reached: std::sync::Barrier,
    release: std::sync::Barrier,
}

impl store::hooks::WriteHooks for PauseAfterLookup {
    fn at(&self, point: store::hooks::HookPoint, _region: u64) -> store::Result<()> {
        if point == store::hooks::HookPoint::RegionLookedUp && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.wait();
            self.release.wait();
        }
        Ok(())
    }
}

/// A request that found a closed region just before `open_region` put a
/// fresh instance in its place looks the row up again and is served, as it
/// would be after a split: only a region that is still closed answers
/// `NotServingRegion`.
#[test]
fn a_request_that_meets_a_region_reopened_under_it_is_served_by_the_new_one() {
    use store::{MutationRef, RowMutations};
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = Arc::new(PauseAfterLookup {
        armed: AtomicBool::new(false),
        reached: std::sync::Barrier::new(2),
        release: std::sync::Barrier::new(2),
    });
    let store = StoreBuilder::new().hooks(hooks.clone()).open(dir.path()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let name = store.table_regions("t").expect("regions")[0].dir_name();
    let put = [MutationRef::Put { family: b"f", qualifier: b"q", timestamp: None, value: b"batch" }];
    type Request<'a> = Box<dyn Fn(&Store) -> store::Result<()> + Sync + 'a>;
    let requests: [(&str, Request<'_>); 3] = [
        ("put", Box::new(|s: &Store| s.put("t", b"p", &[(b"f", b"q", b"put")], None))),
        ("batch", Box::new(|s: &Store| s.mutate_rows("t", &[RowMutations { row: b"b", mutations: &put }], None))),
        ("get", Box::new(|s: &Store| s.get("t", &Get::new(&b"p"[..])).map(|_| ()))),
    ];
    for (what, request) in &requests {
        store.close_region(&name).expect("close");
        assert!(matches!(request(&store), Err(StoreError::NotServingRegion { .. })), "{what}: closed");
        hooks.armed.store(true, Ordering::SeqCst);
        std::thread::scope(|scope| {
            let caller = scope.spawn(|| request(&store));
            hooks.reached.wait(); // it holds the closed instance
            store.open_region(&name).expect("open");
            hooks.release.wait();
            caller.join().expect("caller").unwrap_or_else(|e| panic!("{what} failed after the reopen: {e}"));
        });
    }
    let value = |row: &[u8]| store.get("t", &Get::new(row)).expect("get")[0].value.to_vec();
    assert_eq!(value(b"p"), b"put");
    assert_eq!(value(b"b"), b"batch");

    // A get from memory (answered on a thread that must not wait) that
    // meets the same reopen hands the get back instead of waiting or
    // failing. The row is now in a file (the close flushed it): once a
    // `get` has read its block, a get from memory answers.
    store.close_region(&name).expect("close");
    hooks.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|scope| {
        let caller = scope.spawn(|| store.get_from_memory("t", &Get::new(&b"p"[..])));
        hooks.reached.wait();
        store.open_region(&name).expect("open");
        hooks.release.wait();
        assert_eq!(caller.join().expect("caller").expect("no error: handed back"), None);
    });
    assert_eq!(value(b"p"), b"put");
    let cells = store.get_from_memory("t", &Get::new(&b"p"[..])).expect("get from memory").expect("cached");
    assert_eq!(cells[0].value.as_ref(), b"put");
}

/// The count a master reporter reads to know whether to look at every
/// region again: it moves on a close, an open, a disable and a split
/// (other tests of this binary run beside it, so it cannot assert that
/// the count stays put; `server::master_report` reuses a snapshot only
/// while the count is unchanged, which errs toward looking again).
#[test]
fn the_layout_count_moves_with_what_a_report_lists() {
    use store::layout_changes::layout_changes;
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, first) = populated(dir.path());
    let moved = |before: u64| layout_changes() > before;
    let before = layout_changes();
    store.close_region(&first).expect("close");
    assert!(moved(before), "a close");
    let before = layout_changes();
    store.open_region(&first).expect("open");
    assert!(moved(before), "an open");
    let before = layout_changes();
    store.disable_table("t").expect("disable");
    assert!(moved(before), "a disable");
    store.enable_table("t").expect("enable");
    let before = layout_changes();
    assert!(store.split_region("t", b"a01", Some(b"a20")).expect("split"), "split");
    assert!(moved(before), "a split");
}
