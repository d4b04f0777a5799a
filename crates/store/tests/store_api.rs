//! End-to-end checks of the embedded API: tables, writes of every kind,
//! reads, scans, flush, compaction, split, disable/enable/delete, and
//! reopen — each through the public `Store` only.

use store::region::Mutation;
use store::testing::{StoreBuilder, scan_row_keys};
use store::{Column, FamilyDescriptor, Get, Scan, Store, StoreError, TableDescriptor};

fn table(name: &str) -> TableDescriptor {
    let mut f = FamilyDescriptor::new("f");
    f.max_versions = 3;
    TableDescriptor::new(name, vec![f, FamilyDescriptor::new("g")])
}

fn value(store: &Store, row: &str, q: &str) -> Option<Vec<u8>> {
    let get = Get {
        columns: vec![Column { family: b"f".to_vec(), qualifier: Some(q.as_bytes().to_vec()) }],
        ..Get::new(row.as_bytes())
    };
    store.get("t", &get).expect("get").first().map(|c| c.value.to_vec())
}

#[test]
fn writes_reads_flushes_compactions_splits_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(table("t"), &[b"m".to_vec()]).expect("create");
    assert!(matches!(store.create_table(table("t"), &[]), Err(StoreError::TableExists(_))));
    for i in 0..200 {
        let row = format!("row{i:03}");
        store.put("t", row.as_bytes(), &[(b"f", b"a", b"1"), (b"g", b"b", row.as_bytes())], None).expect("put");
    }
    assert_eq!(value(&store, "row007", "a"), Some(b"1".to_vec()));
    store.flush_table("t").expect("flush");
    store.put("t", b"row007", &[(b"f", b"a", b"2")], Some(u64::MAX / 2)).expect("put");
    assert_eq!(value(&store, "row007", "a"), Some(b"2".to_vec()));
    let all = Scan { max_versions: 3, ..Scan::default() };
    assert_eq!(scan_row_keys(&store, "t", all.clone()).len(), 200);
    let reverse = scan_row_keys(&store, "t", Scan { reverse: true, ..Scan::default() });
    assert_eq!(reverse.len(), 200);
    assert_eq!(reverse[0], "row199");
    assert_eq!(scan_row_keys(&store, "t", Scan { prefix: Some(b"row01".to_vec()), ..Scan::default() }).len(), 10);
    assert_eq!(
        scan_row_keys(&store, "t", Scan { prefix: Some(b"row01".to_vec()), reverse: true, ..Scan::default() })[0],
        "row019"
    );
    assert_eq!(
        scan_row_keys(&store, "t", Scan { start: Some(b"row190".to_vec()), limit: Some(3), ..Scan::default() }).len(),
        3
    );

    // Deletes of each kind.
    store
        .mutate_row(
            "t",
            b"row001",
            &[Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"a".to_vec(), timestamp: None }],
            None,
        )
        .expect("delete");
    assert_eq!(value(&store, "row001", "a"), None);
    store.mutate_row("t", b"row002", &[Mutation::DeleteRow { timestamp: None }], None).expect("delete row");
    assert!(store.get("t", &Get::new(b"row002".to_vec())).expect("get").is_empty());
    assert_eq!(store.increment("t", b"ctr", b"f", b"n", 5).expect("incr"), 5);
    assert_eq!(store.increment("t", b"ctr", b"f", b"n", -2).expect("incr"), 3);
    assert!(
        store
            .check_and_mutate(
                "t",
                b"cas",
                b"f",
                b"q",
                None,
                &[Mutation::Put {
                    family: b"f".to_vec(),
                    qualifier: b"q".to_vec(),
                    timestamp: None,
                    value: b"x".to_vec()
                }]
            )
            .expect("cas")
    );
    assert!(
        !store
            .check_and_mutate(
                "t",
                b"cas",
                b"f",
                b"q",
                None,
                &[Mutation::Put {
                    family: b"f".to_vec(),
                    qualifier: b"q".to_vec(),
                    timestamp: None,
                    value: b"y".to_vec()
                }]
            )
            .expect("cas")
    );
    assert!(matches!(store.put("t", b"r", &[(b"nope", b"q", b"v")], None), Err(StoreError::NoSuchFamily { .. })));

    store.flush_region("t", b"row150").expect("flush one region");
    store.compact_region("t", b"row150", false).expect("minor compaction of one region");
    store.compact_table("t", true).expect("major compact");
    assert_eq!(value(&store, "row007", "a"), Some(b"2".to_vec()));
    assert_eq!(store.table_regions("t").expect("regions").len(), 2);
    assert!(store.split_region("t", b"row100", Some(b"row150")).expect("split"));
    assert_eq!(store.table_regions("t").expect("regions").len(), 3);
    assert_eq!(scan_row_keys(&store, "t", Scan::default()).len(), 200 - 1 + 2);
    store.close().expect("close");

    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.table_regions("t").expect("regions").len(), 3);
    assert_eq!(value(&store, "row007", "a"), Some(b"2".to_vec()));
    assert_eq!(value(&store, "row001", "a"), None);
    assert_eq!(scan_row_keys(&store, "t", Scan::default()).len(), 201);
    store.disable_table("t").expect("disable");
    assert!(matches!(store.get("t", &Get::new(b"row003".to_vec())), Err(StoreError::TableDisabled(_))));
    store.enable_table("t").expect("enable");
    assert_eq!(value(&store, "row003", "a"), Some(b"1".to_vec()));
    store.disable_table("t").expect("disable");
    store.delete_table("t").expect("delete");
    assert!(store.list_tables().is_empty());
}

#[test]
fn unflushed_writes_survive_a_reopen_through_the_wal() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = StoreBuilder::new().open(dir.path()).expect("open");
        store.create_table(table("t"), &[]).expect("create");
        for i in 0..50 {
            store.put("t", format!("k{i}").as_bytes(), &[(b"f", b"a", b"v")], None).expect("put");
        }
        // Dropped without close: nothing flushed.
    }
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(scan_row_keys(&store, "t", Scan::default()).len(), 50);
}

/// One process at a time: while a store is open in another process, an
/// open of its root fails with an error naming that process (its pid) and
/// changes nothing; our open store likewise keeps another process out; the
/// lock is the kernel's `flock`, so a killed holder leaves none behind.
#[test]
fn a_root_open_in_another_process_is_refused() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = |dir: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crash-writer"))
            .arg(dir)
            .args(["0", "1", "single"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start crash-writer")
    };

    // Ours is open: the other process cannot open it.
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    let out = writer(dir.path()).wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "the other process fails to open: {stderr}");
    assert!(stderr.contains(&format!("open in process {}", std::process::id())), "{stderr}");
    assert!(store.list_tables().is_empty(), "it changed nothing");
    store.close().expect("close");

    // Theirs is open: ours cannot open it; once it is killed, ours can.
    let mut child = writer(dir.path());
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(lines.next().and_then(|l| l.ok()).as_deref(), Some("ready"), "the writer opened the store");
    let err = StoreBuilder::new().open(dir.path()).expect_err("refused while the writer runs").to_string();
    assert!(err.contains(&format!("open in process {}", child.id())) && err.contains("LOCK"), "{err}");
    child.kill().expect("kill");
    child.wait().expect("reap");
    let store = StoreBuilder::new().open(dir.path()).expect("open once the writer is dead");
    assert!(store.list_tables().iter().any(|t| t == "crash"), "the writer's table is there");
    store.close().expect("close");
}

/// Two live stores on one root in one process would fence and retire each
/// other's WAL (local disk has no leases to stop the first): the second
/// open is refused after a short wait for the first to go; once the first
/// is closed the root opens.
#[test]
fn a_second_store_on_an_open_root_in_this_process_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = StoreBuilder::new().open(dir.path()).expect("open");
    first.create_table(table("t"), &[]).expect("create");
    first.put("t", b"r", &[(b"f", b"q", b"v")], None).expect("put");
    let err = StoreBuilder::new().open(dir.path()).expect_err("a second live store is refused").to_string();
    assert!(err.contains("this process"), "{err}");
    first.put("t", b"s", &[(b"f", b"q", b"w")], None).expect("the first store goes on");
    first.close().expect("close");
    let second = StoreBuilder::new().open(dir.path()).expect("open once the first is closed");
    assert_eq!(value(&second, "s", "q"), Some(b"w".to_vec()));
    drop(first);
    second.close().expect("close");
}

/// FuzzyRowFilter and RandomRowFilter have no filter-language form (HBase's
/// ParseFilter registers neither): the embedded API builds them, and a scan
/// over a flushed and a live part of a split table runs them like any other.
#[test]
fn fuzzy_and_random_row_filters_run_in_embedded_scans() {
    use store::read::filter::Filter;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(table("t"), &[b"u5".to_vec()]).expect("create");
    for user in 0..10 {
        for day in ["2026-11-24", "2026-11-25"] {
            let row = format!("u{user}_{day}");
            store.put("t", row.as_bytes(), &[(b"f", b"a", b"1")], None).expect("put");
        }
        if user == 4 {
            store.flush_table("t").expect("flush");
        }
    }
    // Every user, the 25th: "u?_2026-11-25" with the user's digit free.
    let key = b"u0_2026-11-25".to_vec();
    let mut mask = vec![0u8; key.len()];
    mask[1] = 1;
    let fuzzy = Scan { filter: Some(Filter::FuzzyRow(vec![(key, mask)])), ..Scan::default() };
    let found = scan_row_keys(&store, "t", fuzzy);
    assert_eq!(found, (0..10).map(|u| format!("u{u}_2026-11-25")).collect::<Vec<_>>());

    let all = |chance: f32, seed: u64| {
        scan_row_keys(&store, "t", Scan { filter: Some(Filter::random_row(chance, seed)), ..Scan::default() })
    };
    assert_eq!(all(2.0, 1).len(), 20);
    assert!(all(-1.0, 1).is_empty());
    let some = all(0.5, 42);
    assert!(!some.is_empty() && some.len() < 20, "about half of 20 rows: {some:?}");
    assert_eq!(some, all(0.5, 42), "a seed draws the same rows again");
}

/// `alter_table` on an enabled table: a family's settings change, a family
/// is added and one is removed with its data, rows stay, and the result
/// survives a reopen. Regions closed by an operator stay closed.
#[test]
fn alter_changes_adds_and_removes_families_of_an_enabled_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(table("t"), &[b"m".to_vec()]).expect("create");
    for row in ["a", "z"] {
        store.put("t", row.as_bytes(), &[(b"f", b"a", b"1"), (b"g", b"b", b"g-data")], None).expect("put");
    }
    let closed = store.table_regions("t").expect("regions")[1].dir_name();
    store.close_region(&closed).expect("close the second region");

    let mut desc = store.describe_table("t").expect("describe");
    desc.families.retain(|f| f.name != "g");
    desc.families[0].max_versions = 5;
    desc.families.push(FamilyDescriptor::new("h"));
    store.alter_table(desc).expect("alter");

    let altered = store.describe_table("t").expect("describe");
    let names: Vec<&str> = altered.families.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["f", "h"]);
    assert_eq!(altered.families[0].max_versions, 5);
    assert!(store.is_table_enabled("t").expect("enabled"));
    assert_eq!(value(&store, "a", "a"), Some(b"1".to_vec()));
    assert!(matches!(store.put("t", b"a", &[(b"g", b"b", b"x")], None), Err(StoreError::NoSuchFamily { .. })));
    store.put("t", b"a", &[(b"h", b"c", b"new")], None).expect("the new family takes writes");
    for v in 2..=6 {
        store.put("t", b"a", &[(b"f", b"a", format!("{v}").as_bytes())], Some(1000 + v)).expect("put");
    }
    let versions = |store: &Store| {
        let get = Get { max_versions: 10, ..Get::new(b"a") };
        store.get("t", &get).expect("get").iter().filter(|c| c.family == b"f"[..]).count()
    };
    assert_eq!(versions(&store), 5, "f keeps five versions now");
    assert!(matches!(store.get("t", &Get::new(b"z")), Err(StoreError::NotServingRegion { .. })), "still closed");
    let region_dirs = || -> Vec<std::path::PathBuf> {
        let table_dir = dir.path().join("data").join("default").join("t");
        std::fs::read_dir(&table_dir)
            .expect("table dir")
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.is_dir())
            .collect()
    };
    assert!(region_dirs().iter().all(|d| !d.join("g").exists()), "the removed family's files are gone");

    drop(store);
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.describe_table("t").expect("describe").families.len(), 2);
    assert_eq!(versions(&store), 5);
    store.open_region(&closed).expect("open the closed region");
    let get = Get { columns: vec![Column { family: b"h".to_vec(), qualifier: None }], ..Get::new(b"a") };
    assert_eq!(store.get("t", &get).expect("get")[0].value, &b"new"[..]);
    let z = store.get("t", &Get::new(b"z")).expect("get z");
    assert_eq!(z.iter().map(|c| c.family.as_ref()).collect::<Vec<_>>(), [&b"f"[..]], "z's g cells are gone");

    // Adding back a family of a removed one's name starts it empty.
    let mut desc = store.describe_table("t").expect("describe");
    desc.families.push(FamilyDescriptor::new("g"));
    store.alter_table(desc).expect("alter");
    let get = Get { columns: vec![Column { family: b"g".to_vec(), qualifier: None }], ..Get::new(b"a") };
    assert!(store.get("t", &get).expect("get").is_empty());

    let mut desc = store.describe_table("t").expect("describe");
    desc.families[0].max_versions = 0;
    assert!(matches!(store.alter_table(desc), Err(StoreError::InvalidDescriptor { .. })));
    assert!(matches!(store.alter_table(table("missing")), Err(StoreError::TableNotFound(_))));
}

/// A crash after an alter committed, while the WAL still holds edits of the
/// family it removed (its archive failed): recovery skips those edits, as
/// HBase's replay skips a family that no longer exists (it failed with
/// NoSuchFamily before), and loses nothing acknowledged.
#[test]
fn recovery_skips_wal_edits_of_a_family_an_alter_removed() {
    use std::sync::Arc;
    use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
    let dir = tempfile::tempdir().expect("tempdir");
    let fault = FaultInjectingFs::new(Arc::new(LocalFs));
    let opts = || StoreBuilder::new().fs(Arc::new(fault.clone())).options();
    let store = Store::open(dir.path(), opts()).expect("open");
    let mut desc = table("t");
    desc.durability = store::wal::Durability::SyncWal;
    store.create_table(desc, &[]).expect("create");
    for i in 0..50 {
        let row = format!("r{i:02}");
        store.put("t", row.as_bytes(), &[(b"f", b"a", b"1"), (b"g", b"b", b"2")], None).expect("put");
    }
    // No WAL file can be archived: the edits of g stay in the log.
    fault.fail(FaultKind::Rename, "WALs/", 0, u32::MAX);
    let mut desc = store.describe_table("t").expect("describe");
    desc.families.retain(|f| f.name != "g");
    store.alter_table(desc).expect("alter (its archive failure is only logged)");
    store.put("t", b"after", &[(b"f", b"a", b"3")], None).expect("put after the alter");
    // The crash: nothing more reaches the disk, unsynced bytes are lost.
    for kind in [FaultKind::Write, FaultKind::Sync, FaultKind::Create, FaultKind::Rename] {
        fault.fail(kind, "", 0, u32::MAX);
    }
    drop(store);
    fault.drop_unsynced().expect("drop the unsynced bytes");
    fault.heal();
    let store = Store::open(dir.path(), opts()).expect("recovery replays past the removed family");
    assert_eq!(store.describe_table("t").expect("describe").families.len(), 1);
    assert_eq!(scan_row_keys(&store, "t", Scan::default()).len(), 51);
    assert_eq!(value(&store, "after", "a"), Some(b"3".to_vec()));
}

/// A family removed and added back is empty, also after a crash while the
/// WAL still holds the removed family's edits (its archive failed): the
/// added family's replay floor is the region's flushed sequence id, so
/// those edits are not replayed into it.
#[test]
fn a_family_removed_and_added_back_stays_empty_after_a_crash() {
    use std::sync::Arc;
    use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
    let dir = tempfile::tempdir().expect("tempdir");
    let fault = FaultInjectingFs::new(Arc::new(LocalFs));
    let opts = || StoreBuilder::new().fs(Arc::new(fault.clone())).options();
    let store = Store::open(dir.path(), opts()).expect("open");
    let mut desc = table("t");
    desc.durability = store::wal::Durability::SyncWal;
    store.create_table(desc, &[]).expect("create");
    for i in 0..20 {
        store.put("t", format!("r{i:02}").as_bytes(), &[(b"f", b"a", b"1"), (b"g", b"b", b"old")], None).expect("put");
    }
    fault.fail(FaultKind::Rename, "WALs/", 0, u32::MAX);
    let with = store.describe_table("t").expect("describe");
    let mut without = with.clone();
    without.families.retain(|f| f.name != "g");
    store.alter_table(without).expect("remove g");
    store.alter_table(with).expect("add g back");
    store.put("t", b"after", &[(b"f", b"a", b"2")], None).expect("put");
    for kind in [FaultKind::Write, FaultKind::Sync, FaultKind::Create, FaultKind::Rename] {
        fault.fail(kind, "", 0, u32::MAX);
    }
    drop(store);
    fault.drop_unsynced().expect("drop the unsynced bytes");
    fault.heal();
    let store = Store::open(dir.path(), opts()).expect("recovery");
    let g = Get { columns: vec![Column { family: b"g".to_vec(), qualifier: None }], ..Get::new(b"r00") };
    assert!(store.get("t", &g).expect("get").is_empty(), "the removed family's edits came back");
    assert_eq!(value(&store, "after", "a"), Some(b"2".to_vec()));
    assert_eq!(scan_row_keys(&store, "t", Scan::default()).len(), 21);
}

#[test]
fn scans_read_or_skip_their_start_and_stop_rows_as_asked_in_both_directions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(table("t"), &[b"d".to_vec(), b"h".to_vec(), b"m".to_vec()]).expect("create");
    let written = ["a", "c", "d", "d\0", "e", "g", "h", "i", "m", "n", "p"];
    for (i, r) in written.iter().enumerate() {
        store.put("t", r.as_bytes(), &[(b"f", b"q", b"v")], None).expect("put");
        if i == 5 {
            // Part of the rows in files, part in memstores.
            store.flush_table("t").expect("flush");
        }
    }
    let keys = [None, Some(""), Some("a"), Some("b"), Some("d"), Some("e"), Some("h"), Some("m"), Some("p"), Some("z")];
    let mut checked = 0;
    for start in keys {
        for stop in keys {
            for reverse in [false, true] {
                for (start_inclusive, stop_inclusive) in [(true, false), (false, false), (true, true), (false, true)] {
                    let scan = Scan {
                        start: start.map(|k| k.as_bytes().to_vec()),
                        stop: stop.map(|k| k.as_bytes().to_vec()),
                        start_inclusive,
                        stop_inclusive,
                        reverse,
                        ..Scan::default()
                    };
                    // The model: every written row within the bounds, in order.
                    let after_start = |r: &str| match start.filter(|s| !s.is_empty()) {
                        None => true,
                        Some(s) if reverse => r < s || (start_inclusive && r == s),
                        Some(s) => r > s || (start_inclusive && r == s),
                    };
                    let before_stop = |r: &str| match stop.filter(|s| !s.is_empty()) {
                        None => true,
                        Some(s) if reverse => r > s || (stop_inclusive && r == s),
                        Some(s) => r < s || (stop_inclusive && r == s),
                    };
                    let mut want: Vec<String> =
                        written.iter().filter(|r| after_start(r) && before_stop(r)).map(|r| r.to_string()).collect();
                    if reverse {
                        want.reverse();
                    }
                    assert_eq!(scan_row_keys(&store, "t", scan.clone()), want, "{scan:?}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 800);
}

/// The store reads time from `StoreOptions::clock`: cells written without a
/// timestamp carry the clock's time, and a family's TTL expires them when
/// the clock says so — in the memstore, and in files after a flush and a
/// major compaction — with no sleep in the test.
#[test]
fn an_injected_clock_timestamps_cells_and_expires_them_by_ttl() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = std::sync::Arc::new(memstore::ManualClock::new(1_000_000));
    let store = StoreBuilder::new().clock(clock.clone()).open(dir.path()).expect("open");
    let mut f = FamilyDescriptor::new("f");
    f.ttl_secs = Some(10);
    store.create_table(TableDescriptor::new("t", vec![f]), &[]).expect("create");
    store.put("t", b"old", &[(b"f", b"q", b"v")], None).expect("put");
    let cells = store.get("t", &Get::new(b"old")).expect("get");
    assert_eq!(cells.iter().map(|c| c.timestamp).collect::<Vec<_>>(), [1_000_000], "stamped by the clock");
    clock.set(1_008_000);
    store.put("t", b"new", &[(b"f", b"q", b"v")], None).expect("put");
    assert_eq!(scan_row_keys(&store, "t", Scan::default()), ["new", "old"], "8 s on: both live");
    clock.set(1_012_000);
    assert_eq!(scan_row_keys(&store, "t", Scan::default()), ["new"], "12 s on: old expired in the memstore");
    store.flush_table("t").expect("flush");
    store.compact_table("t", true).expect("compact");
    assert_eq!(scan_row_keys(&store, "t", Scan::default()), ["new"], "and stays expired in files");
    clock.set(1_019_000);
    assert!(scan_row_keys(&store, "t", Scan::default()).is_empty(), "19 s on: new expired too");
}

/// Increments faster than the clock stamp each version one ms past the one
/// they read (HBase's rule), so they run ahead of the clock; a put, a delete
/// or another write without a timestamp right after lands at or above them
/// (a tie goes to the later sequence id) and is the one read — in the
/// memstore, after a flush between them, and after a major compaction
/// (issue 29, item 7: happybase's counter_set after counter_inc).
#[test]
fn a_write_after_increments_ahead_of_the_clock_is_the_one_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = std::sync::Arc::new(memstore::ManualClock::new(5_000));
    let store = StoreBuilder::new().clock(clock.clone()).open(dir.path()).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    let counter = |row: &[u8]| -> (i64, u64) {
        let cells = store.get("t", &Get::new(row)).expect("get");
        let c = cells.first().expect("a cell");
        (i64::from_be_bytes(c.value.as_ref().try_into().expect("8 bytes")), c.timestamp)
    };
    for (row, flush_between) in [(&b"a"[..], false), (&b"b"[..], true)] {
        assert_eq!(store.increment("t", row, b"f", b"n", 1).expect("inc"), 1);
        assert_eq!(store.increment("t", row, b"f", b"n", 41).expect("inc"), 42);
        assert_eq!(store.increment("t", row, b"f", b"n", -2).expect("dec"), 40);
        let (value, ahead) = counter(row);
        assert_eq!(value, 40);
        assert!(ahead >= 5_002, "three versions in one ms of the clock (5000): {ahead}");
        if flush_between {
            store.flush_table("t").expect("flush");
        }
        store.put("t", row, &[(b"f", b"n", &7i64.to_be_bytes())], None).expect("set");
        assert_eq!(counter(row), (7, ahead), "the set, not the increment it ties with");
        store.flush_table("t").expect("flush");
        assert_eq!(counter(row).0, 7, "after a flush");
        assert_eq!(store.increment("t", row, b"f", b"n", 1).expect("inc"), 8);
    }
    store.compact_table("t", true).expect("major compaction");
    assert_eq!((counter(b"a").0, counter(b"b").0), (8, 8), "after a major compaction");
    // A delete without a timestamp covers versions ahead of the clock too.
    store.mutate_row("t", b"a", &[store::Mutation::DeleteRow { timestamp: None }], None).expect("delete");
    assert!(store.get("t", &Get::new(b"a")).expect("get").is_empty(), "deleted");
    clock.set(9_000);
    store.put("t", b"c", &[(b"f", b"n", b"x")], None).expect("put");
    assert_eq!(store.get("t", &Get::new(b"c")).expect("get")[0].timestamp, 9_000, "the clock again once it is ahead");
}

#[test]
fn increments_and_appends_of_several_columns_are_one_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), store::StoreOptions::default()).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    let counter = |q: &str| value(&store, "r", q).map(|v| i64::from_be_bytes(v.try_into().expect("8 bytes")));

    let values = store.increment_columns("t", b"r", &[(b"f", b"a", 2), (b"f", b"b", 5), (b"f", b"a", 3)]).expect("inc");
    assert_eq!(values, [2, 5, 5], "a column named twice gets both amounts, each answer after its own");
    assert_eq!((counter("a"), counter("b")), (Some(5), Some(5)));

    // A column that is not a counter refuses the whole increment: the
    // columns before it in the same call are not written either.
    store.put("t", b"r", &[(b"f", b"text", b"abc")], None).expect("put");
    let refused = store.increment_columns("t", b"r", &[(b"f", b"a", 1), (b"f", b"text", 1)]);
    assert!(matches!(refused, Err(StoreError::NotACounter { .. })), "{refused:?}");
    assert_eq!(counter("a"), Some(5), "nothing of a refused increment is written");

    let appended = store.append_columns("t", b"r", &[(b"f", b"text", b"de"), (b"f", b"new", b"x")]).expect("append");
    assert_eq!(appended, [b"abcde".to_vec(), b"x".to_vec()]);
    assert_eq!(value(&store, "r", "text").as_deref(), Some(&b"abcde"[..]));
    assert_eq!(value(&store, "r", "new").as_deref(), Some(&b"x"[..]));
}

/// A get skips a column's remaining versions once it has what it asked for
/// (HBase's SEEK_NEXT_COL): the answers stay those of reading every cell —
/// versions across the memstore and a file, columns after a long one, and
/// a family delete marker, which shares the empty qualifier's column with
/// a newer put there and masks the columns after it.
#[test]
fn gets_and_scans_skip_spent_versions_without_losing_markers_or_later_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(table("t"), &[]).expect("create");
    let put = |q: &str, ts: u64, v: &str| {
        store.put("t", b"r", &[(b"f", q.as_bytes(), v.as_bytes())], Some(ts)).expect("put");
    };
    put("b", 5, "old-b");
    for ts in 100..150 {
        put("a", ts, &format!("a{ts}"));
    }
    store.flush_table("t").expect("flush");
    for ts in 150..300 {
        put("a", ts, &format!("a{ts}"));
    }
    put("c", 400, "c");
    put("", 50, "empty");
    store
        .mutate_row("t", b"r", &[Mutation::DeleteFamily { family: b"f".to_vec(), timestamp: Some(10) }], None)
        .expect("delete");
    let seen = |versions: u32| -> Vec<(String, u64)> {
        let get = Get { max_versions: versions, ..Get::new(b"r".to_vec()) };
        let cells = store.get("t", &get).expect("get");
        cells
            .iter()
            .map(|c| {
                (
                    format!("{}:{}", String::from_utf8_lossy(&c.family), String::from_utf8_lossy(&c.qualifier)),
                    c.timestamp,
                )
            })
            .collect()
    };
    let col = |q: &str, ts: u64| (format!("f:{q}"), ts);
    // "b" at 5 is under the family marker at 10, which sorts after the put
    // at 50 in the empty qualifier's column.
    assert_eq!(seen(1), [col("", 50), col("a", 299), col("c", 400)]);
    assert_eq!(seen(2), [col("", 50), col("a", 299), col("a", 298), col("c", 400)]);
    // The family keeps 3 versions: a read for 5 still gets 3.
    assert_eq!(seen(5), [col("", 50), col("a", 299), col("a", 298), col("a", 297), col("c", 400)]);
    let scan = Scan { max_versions: 2, ..Scan::default() };
    let rows: Vec<_> = store.scan("t", scan).expect("scan").map(|r| r.expect("row")).collect();
    let cells: Vec<(Vec<u8>, u64)> = rows[0].iter().map(|c| (c.qualifier.to_vec(), c.timestamp)).collect();
    assert_eq!(cells, [(b"".to_vec(), 50), (b"a".to_vec(), 299), (b"a".to_vec(), 298), (b"c".to_vec(), 400)]);
}
