//! I/O failures injected under a live store (`FaultInjectingFs` as
//! `StoreOptions::fs`, wrapping the local disk), and what they may cost:
//!
//! - a failed WAL write, fsync or file creation fails the SyncWal puts it
//!   hits and nothing else: later puts succeed, and after a reopen every
//!   acknowledged put is there, while a failed one is there whole or not at
//!   all;
//! - a failed write, fsync, creation or rename of a store file or MANIFEST
//!   during a flush fails the flush; the data stays readable from memory, a
//!   crash at that moment loses nothing, the flush succeeds after healing,
//!   and no debris stays behind after a reopen;
//! - a region whose flush failed keeps the WAL files it needs while other
//!   regions flush and archive theirs; a failed background flush is retried
//!   until it succeeds;
//! - the same during a compaction: the compaction fails, every input file
//!   stays live and readable, nothing is lost, and it works after healing;
//! - a full disk fails writes and flushes with `is_disk_full()` errors,
//!   loses nothing acknowledged, and the store works again once space is
//!   back, without a restart;
//! - a power loss (everything not fsynced dropped) after SyncWal puts,
//!   flushes, a compaction and a split keeps every acknowledged put; with
//!   AsyncWal, data flushed before the power loss, and AsyncWal writes made
//!   durable by a later SyncWal write, survive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
use store::manifest::StoreManifest;
use store::region::Mutation;
use store::testing::{StoreBuilder, copy_dir};
use store::wal::{Durability, WalOptions};
use store::{FamilyDescriptor, Get, Store, StoreError, StoreOptions, TableDescriptor};
use tempfile::TempDir;

// ---------------------------------------------------------------- helpers

struct Env {
    _tmp: TempDir,
    dir: PathBuf,
    fault: FaultInjectingFs,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    Env { dir, fault: FaultInjectingFs::new(Arc::new(LocalFs)), _tmp: tmp }
}

impl Env {
    fn options(&self) -> StoreOptions {
        StoreBuilder::new().fs(Arc::new(self.fault.clone())).options()
    }

    fn open(&self) -> Store {
        Store::open(&self.dir, self.options()).expect("open on the fault-injecting fs")
    }

    /// A copy of the directory as it is now: what a crash at this instant
    /// would leave (nothing is written concurrently: no background work).
    fn crash_copy(&self, name: &str) -> PathBuf {
        let to = self.dir.with_file_name(name);
        copy_dir(&self.dir, &to).expect("copy the store directory");
        to
    }
}

fn reopen_local(dir: &Path) -> Store {
    StoreBuilder::new().open(dir).expect("reopen on the local fs")
}

fn table(durability: Durability) -> TableDescriptor {
    let mut desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
    desc.durability = durability;
    desc
}

fn create(store: &Store, durability: Durability) {
    store.create_table(table(durability), &[b"m".to_vec()]).expect("create table");
}

fn value(row: &str, v: u64, q: &str) -> Vec<u8> {
    format!("{row}/{v}/{q}/{}", "v".repeat(40 + (v % 13) as usize)).into_bytes()
}

/// Version `v` of `row`: three cells over two families, in one mutation.
fn mutations(row: &str, v: u64) -> Vec<Mutation> {
    [("f", "q0"), ("f", "q1"), ("g", "q0")]
        .iter()
        .map(|(f, q)| Mutation::Put {
            family: f.as_bytes().to_vec(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: None,
            value: value(row, v, &format!("{f}:{q}")),
        })
        .collect()
}

fn put(store: &Store, row: &str, v: u64) -> store::Result<()> {
    store.mutate_row("t", row.as_bytes(), &mutations(row, v), None)
}

fn put_with(store: &Store, row: &str, v: u64, durability: Durability) -> store::Result<()> {
    store.mutate_row("t", row.as_bytes(), &mutations(row, v), Some(durability))
}

/// The version `row` holds (`None`: absent); panics if it is not whole.
fn version(store: &Store, row: &str) -> Option<u64> {
    let cells = store.get("t", &Get::new(row.as_bytes())).unwrap_or_else(|e| panic!("get {row}: {e}"));
    let first = cells.first()?;
    let v: u64 = std::str::from_utf8(&first.value)
        .ok()
        .and_then(|s| s.split('/').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("row {row}: unreadable value {:?}", first.value));
    let got: Vec<_> = cells.iter().map(|c| (c.family.to_vec(), c.qualifier.to_vec(), c.value.to_vec())).collect();
    let want: Vec<_> = [("f", "q0"), ("f", "q1"), ("g", "q0")]
        .iter()
        .map(|(f, q)| (f.as_bytes().to_vec(), q.as_bytes().to_vec(), value(row, v, &format!("{f}:{q}"))))
        .collect();
    assert_eq!(got, want, "row {row} is not whole version {v}");
    Some(v)
}

/// What the test knows about each row: its acknowledged version, and the
/// versions of failed (or unsynced) writes since, which may or may not be
/// there.
#[derive(Default, Debug, Clone)]
struct Expect {
    rows: BTreeMap<String, (Option<u64>, Vec<u64>)>,
}

impl Expect {
    fn acked(&mut self, row: &str, v: u64) {
        self.rows.insert(row.to_string(), (Some(v), Vec::new()));
    }

    fn maybe(&mut self, row: &str, v: u64) {
        self.rows.entry(row.to_string()).or_default().1.push(v);
    }

    /// Puts `row` version `v`, recording the outcome; returns it.
    fn put(&mut self, store: &Store, row: &str, v: u64) -> store::Result<()> {
        let r = put(store, row, v);
        match &r {
            Ok(()) => self.acked(row, v),
            Err(_) => self.maybe(row, v),
        }
        r
    }

    fn check(&self, store: &Store, when: &str) {
        for (row, (acked, maybe)) in &self.rows {
            let got = version(store, row);
            let ok = got == *acked || got.is_some_and(|g| maybe.contains(&g));
            assert!(ok, "{when}: row {row} holds {got:?}; acknowledged {acked:?}, maybe one of {maybe:?}");
        }
    }
}

/// Every family directory's files are exactly its MANIFEST's: no debris of
/// failed flushes or compactions, no file missing.
fn assert_no_debris(dir: &Path, when: &str) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
            let p = entry.path();
            if p.join("MANIFEST").exists() {
                out.push(p.clone());
            }
            if p.is_dir() {
                walk(&p, out);
            }
        }
    }
    let mut families = Vec::new();
    walk(&dir.join("data"), &mut families);
    assert!(!families.is_empty(), "{when}: store files were committed");
    for family in families {
        let manifest = StoreManifest::load(&LocalFs, &family).expect("load manifest");
        let mut on_disk: Vec<String> = std::fs::read_dir(&family)
            .expect("read dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "MANIFEST")
            .collect();
        on_disk.sort();
        let mut named = manifest.files.clone();
        named.sort();
        assert_eq!(on_disk, named, "{when}: {} holds exactly its MANIFEST's files", family.display());
    }
}

/// `n` rows alternating between the two regions (split at "m").
fn rows(n: usize) -> Vec<String> {
    (0..n).map(|i| if i % 2 == 0 { format!("a{i:03}") } else { format!("n{i:03}") }).collect()
}

// ------------------------------------------------------------------- WAL

#[test]
fn a_failed_wal_write_fsync_or_roll_fails_only_the_puts_it_hits() {
    for kind in [FaultKind::Write, FaultKind::Sync] {
        let e = env();
        let store = e.open();
        create(&store, Durability::SyncWal);
        let mut expect = Expect::default();
        let all = rows(60);
        for (i, row) in all.iter().enumerate().take(30) {
            expect.put(&store, row, i as u64).expect("a put before any fault");
        }

        // One failed write (or fsync): that put fails, the next succeeds
        // (the WAL continues in a new file).
        e.fault.fail(kind, "wal-", 0, 1);
        let err = expect.put(&store, &all[3], 100).expect_err("the put hit by the WAL fault fails");
        assert!(matches!(err, StoreError::Io { .. }), "{kind:?}: {err:?}");
        assert!(err.to_string().contains("wal-"), "{kind:?}: the error names the WAL file: {err}");
        expect.check(&store, "after a failed WAL append, in memory");
        for (i, row) in all.iter().enumerate().skip(30).take(15) {
            expect.put(&store, row, i as u64).unwrap_or_else(|e| panic!("{kind:?}: the put after a fault: {e}"));
        }

        // A failed write and a refused new file: two puts fail, then the
        // WAL heals by itself.
        e.fault.fail(kind, "wal-", 0, 1);
        e.fault.fail(FaultKind::Create, "wal-", 0, 1);
        expect.put(&store, &all[5], 101).expect_err("the put hit by the WAL fault fails");
        expect.put(&store, &all[7], 102).expect_err("the put that finds no WAL file to roll to fails");
        for (i, row) in all.iter().enumerate().skip(45) {
            expect.put(&store, row, i as u64).unwrap_or_else(|e| panic!("{kind:?}: the put after a fault: {e}"));
        }
        for (i, row) in all.iter().enumerate().take(10) {
            expect.put(&store, row, 200 + i as u64).expect("an overwrite after the faults");
        }
        assert_eq!(e.fault.injected(), 3);
        expect.check(&store, &format!("{kind:?}: before the crash"));

        // A crash (nothing was flushed), then recovery twice over.
        drop(store);
        let store = reopen_local(&e.dir);
        expect.check(&store, &format!("{kind:?}: after recovery"));
        expect.put(&store, "zz", 1).expect("a put after recovery");
        drop(store);
        let store = reopen_local(&e.dir);
        expect.check(&store, &format!("{kind:?}: after a second recovery"));
        store.close().expect("close");
    }
}

// ----------------------------------------------------------------- flush

#[test]
fn a_failed_flush_keeps_the_data_in_memory_and_loses_nothing() {
    let cases = [
        (FaultKind::Write, ".sf"),
        (FaultKind::Sync, ".sf"),
        (FaultKind::Create, ".sf"),
        (FaultKind::Rename, ".sf"),
        (FaultKind::Write, "MANIFEST"),
        (FaultKind::Sync, "MANIFEST"),
        (FaultKind::Rename, "MANIFEST"),
        // The second family's file: the first family's flush committed.
        (FaultKind::Write, "/g/"),
    ];
    for (case, (kind, pattern)) in cases.into_iter().enumerate() {
        let what = format!("a failed {kind:?} of {pattern} during a flush");
        let e = env();
        let store = e.open();
        create(&store, Durability::SyncWal);
        let mut expect = Expect::default();
        let all = rows(40);
        for (i, row) in all.iter().enumerate() {
            expect.put(&store, row, i as u64).expect("put");
        }
        e.fault.fail(kind, pattern, 0, 1);
        let err = store.flush_table("t").expect_err(&what);
        assert!(e.fault.injected() >= 1, "{what}: the fault fired");
        assert!(matches!(err, StoreError::Io { .. }), "{what}: {err:?}");
        expect.check(&store, &format!("{what}: from memory"));
        // Writes go on, and a crash now loses nothing.
        for (i, row) in all.iter().enumerate().step_by(3) {
            expect.put(&store, row, 1000 + i as u64).expect("a put after the failed flush");
        }
        expect.put(&store, "new", 1).expect("a put after the failed flush");
        let crashed = e.crash_copy(&format!("crash-{case}"));

        // Healed, the flush succeeds. Like HBase's, it retries the
        // snapshot the failed flush took (with that snapshot's sequence id);
        // the writes made since stay in memory and in the WAL, as a crash
        // now shows, until the next flush.
        e.fault.heal();
        store.flush_table("t").unwrap_or_else(|err| panic!("{what}: the flush after healing: {err}"));
        let crashed_after_retry = e.crash_copy(&format!("crash-retry-{case}"));
        store.flush_table("t").unwrap_or_else(|err| panic!("{what}: the second flush after healing: {err}"));
        assert!(store.all_regions().iter().all(|r| r.memstore_data_size() == 0), "{what}: all flushed");
        expect.check(&store, &format!("{what}: after the retried flush"));
        store.close().expect("close");
        let store = reopen_local(&e.dir);
        expect.check(&store, &format!("{what}: after a reopen"));
        assert_no_debris(&e.dir, &what);
        drop(store);

        let store = reopen_local(&crashed);
        expect.check(&store, &format!("{what}: after a crash right after the failed flush"));
        drop(store);
        let store = reopen_local(&crashed_after_retry);
        expect.check(&store, &format!("{what}: after a crash right after the retried flush"));
        drop(store);
    }
}

// ------------------------------------------------------------ compaction

#[test]
fn a_failed_compaction_keeps_every_input_file_and_loses_nothing() {
    let cases = [
        (FaultKind::Write, ".sf"),
        (FaultKind::Sync, ".sf"),
        (FaultKind::Create, ".sf"),
        (FaultKind::Rename, ".sf"),
        (FaultKind::Write, "MANIFEST"),
        (FaultKind::Rename, "MANIFEST"),
    ];
    for (case, (kind, pattern)) in cases.into_iter().enumerate() {
        let what = format!("a failed {kind:?} of {pattern} during a compaction");
        let e = env();
        let store = e.open();
        // Everything is flushed before the faults: the WAL is not under test.
        create(&store, Durability::AsyncWal);
        let mut expect = Expect::default();
        let all = rows(60);
        for round in 0..4u64 {
            for (i, row) in all.iter().enumerate() {
                expect.put(&store, row, round * 100 + i as u64).expect("put");
            }
            store.flush_table("t").expect("flush");
        }
        let files_before: Vec<Vec<PathBuf>> = store
            .all_regions()
            .iter()
            .flat_map(|r| {
                r.stores().map(|s| s.files().iter().map(|f| f.path().to_path_buf()).collect()).collect::<Vec<_>>()
            })
            .collect();
        assert!(files_before.iter().all(|f| f.len() == 4), "four files per store: {files_before:?}");

        e.fault.fail(kind, pattern, 0, 1);
        let err = store.compact_table("t", true).expect_err(&what);
        assert!(matches!(err, StoreError::Io { .. }), "{what}: {err:?}");
        let files_after: Vec<Vec<PathBuf>> = store
            .all_regions()
            .iter()
            .flat_map(|r| {
                r.stores().map(|s| s.files().iter().map(|f| f.path().to_path_buf()).collect()).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(files_after, files_before, "{what}: the failed compaction changed no file list");
        assert!(files_after.iter().flatten().all(|p| p.exists()), "{what}: every input file is still there");
        expect.check(&store, &format!("{what}: after the failure"));
        let crashed = e.crash_copy(&format!("crash-{case}"));

        e.fault.heal();
        store.compact_table("t", true).unwrap_or_else(|err| panic!("{what}: the compaction after healing: {err}"));
        for r in store.all_regions() {
            for s in r.stores() {
                assert_eq!(s.files().len(), 1, "{what}: one file per store after the major compaction");
            }
        }
        expect.check(&store, &format!("{what}: after the retried compaction"));
        store.close().expect("close");
        let store = reopen_local(&e.dir);
        expect.check(&store, &format!("{what}: after a reopen"));
        assert_no_debris(&e.dir, &what);
        drop(store);

        let store = reopen_local(&crashed);
        expect.check(&store, &format!("{what}: after a crash right after the failed compaction"));
        assert_no_debris(&crashed, &format!("{what}: crash copy"));
        drop(store);
    }
}

#[test]
fn a_region_whose_flush_failed_keeps_the_wal_it_needs_while_others_flush() {
    let e = env();
    // Small WAL files, so that flushes of the other region can archive some.
    let options = StoreOptions { wal: WalOptions { roll_size: 4 << 10, ..WalOptions::default() }, ..e.options() };
    let store = Store::open(&e.dir, options).expect("open");
    create(&store, Durability::SyncWal);
    let mut expect = Expect::default();
    let all = rows(60);
    // The second region's rows first (WAL files only it needs), then the
    // first region's, then the second's again.
    for pass in 0..3u64 {
        for (i, row) in all.iter().enumerate() {
            if row.starts_with('a') == (pass == 1) {
                expect.put(&store, row, 1000 * pass + i as u64).expect("put");
            }
        }
    }
    // Every write of the first region's files fails from now on.
    let first = store.table_regions("t").expect("regions").remove(0);
    e.fault.fail(FaultKind::Write, &format!("/{}/", first.dir_name()), 0, u32::MAX);
    store.flush_region("t", b"a").expect_err("the first region's flush fails");
    // The other region flushes again and again, archiving what it can.
    for round in 0..4u64 {
        for (i, row) in all.iter().enumerate().filter(|(_, r)| r.starts_with('n')) {
            expect.put(&store, row, 100 * (round + 1) + i as u64).expect("put");
        }
        store.flush_region("t", b"n").expect("the second region's flush");
    }
    assert!(
        std::fs::read_dir(store.wal().archive_dir()).expect("archive dir").count() > 0,
        "the second region's flushes archived WAL files"
    );
    expect.check(&store, "in memory");
    let crashed = e.crash_copy("crash");
    let store2 = reopen_local(&crashed);
    expect.check(&store2, "after a crash: the failed region's writes come back from the WAL");
    drop(store2);
    e.fault.heal();
    store.flush_table("t").expect("flush after healing");
    store.close().expect("close");
    let store = reopen_local(&e.dir);
    expect.check(&store, "after a reopen");
}

#[test]
fn failed_background_flushes_are_retried_until_the_disk_heals() {
    let e = env();
    let options = StoreOptions { region_flush_size: 64 << 10, background: true, ..e.options() };
    let store = Store::open(&e.dir, options).expect("open");
    // The WAL is not under test here (the store is closed cleanly at the end).
    create(&store, Durability::AsyncWal);
    let mut expect = Expect::default();
    let all = rows(100);
    // Every store file write fails for a while: the flusher's attempts fail
    // and are retried; writes go on (the memstores have room).
    // (Writes stop at the first failed flush, or at two flush sizes in a
    // region: past four they would block until a flush succeeds, and none
    // can while the disk fails. The region's figure, all its families
    // together, is the one the writers' limit counts: a bound per family let
    // a loaded machine's writer reach the limit before the first flush had
    // failed, and the test hung in a put.)
    e.fault.fail(FaultKind::Write, ".sf", 0, u32::MAX);
    let fullest = |store: &Store| store.all_regions().iter().map(|r| r.memstore_heap_size()).max();
    let mut v = 0;
    'writing: for _ in 0..1000 {
        for row in &all {
            if e.fault.injected() > 0 || fullest(&store).unwrap_or(0) >= 2 * (64 << 10) {
                break 'writing;
            }
            v += 1;
            expect.put(&store, row, v).expect("a put while flushes fail");
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while e.fault.injected() == 0 {
        assert!(std::time::Instant::now() < deadline, "the background flusher tried to flush");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The failed flush is retried (every 100 ms).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while e.fault.injected() < 3 {
        assert!(std::time::Instant::now() < deadline, "the failed background flush is retried");
        std::thread::sleep(Duration::from_millis(10));
    }
    expect.check(&store, "while background flushes fail");
    e.fault.heal();
    // Once the disk heals, the retries go through by themselves.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while store.all_regions().iter().all(|r| r.stores().all(|s| s.files().is_empty())) {
        assert!(std::time::Instant::now() < deadline, "a retried background flush committed a file");
        std::thread::sleep(Duration::from_millis(10));
    }
    for row in &all {
        v += 1;
        expect.put(&store, row, v).expect("a put after the disk healed");
    }
    expect.check(&store, "after the disk healed");
    store.close().expect("close");
    let store = reopen_local(&e.dir);
    expect.check(&store, "after a reopen");
    assert_no_debris(&e.dir, "after failed background flushes");
}

/// A read never waits on the memstore limit: while failing flushes hold
/// writes at it, gets are served. (They waited with the writes once, and
/// `failed_background_flushes_are_retried_until_the_disk_heals` hung when
/// its writer reached the limit before the first flush failed.)
#[test]
fn gets_are_served_while_failing_flushes_hold_writes_at_the_limit() {
    let e = env();
    // A global limit of 0.4 MiB: a few hundred rows reach it.
    let options = StoreOptions { region_flush_size: 64 << 10, memory_budget: 1 << 20, background: true, ..e.options() };
    let store = Arc::new(Store::open(&e.dir, options).expect("open"));
    create(&store, Durability::AsyncWal);
    let all = rows(100);
    for row in &all {
        put(&store, row, 1).expect("put before the faults");
    }
    e.fault.fail(FaultKind::Write, ".sf", 0, u32::MAX);
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (store, all, written, stop) = (store.clone(), all.clone(), written.clone(), stop.clone());
        std::thread::spawn(move || {
            for v in 2.. {
                for row in &all {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    put(&store, row, v).expect("a put (held until the disk heals)");
                    written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        })
    };
    // Held: its count stands still for half a second.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = u64::MAX;
    loop {
        let now = written.load(std::sync::atomic::Ordering::Relaxed);
        if now == last && e.fault.injected() > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the writer is held at the limit");
        last = now;
        std::thread::sleep(Duration::from_millis(500));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let store = store.clone();
        let row = all[0].clone();
        std::thread::spawn(move || {
            let _ = tx.send(store.get("t", &Get::new(row.as_bytes())).map(|cells| cells.len()));
        });
    }
    let got = rx.recv_timeout(Duration::from_secs(10)).expect("a get is served while writes wait for memory");
    assert!(got.expect("the get succeeds") > 0, "the row's cells");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    e.fault.heal();
    writer.join().expect("the writer goes on once the disk heals");
}

// ------------------------------------------------------------- disk full

#[test]
fn a_full_disk_fails_writes_with_disk_full_and_loses_nothing() {
    let e = env();
    let store = e.open();
    create(&store, Durability::SyncWal);
    let mut expect = Expect::default();
    let all = rows(200);
    for (i, row) in all.iter().enumerate().take(50) {
        expect.put(&store, row, i as u64).expect("put");
    }

    e.fault.set_space_left(16 << 10);
    let mut failures = 0;
    for (i, row) in all.iter().enumerate().skip(50) {
        match expect.put(&store, row, i as u64) {
            Ok(()) => assert_eq!(failures, 0, "a put succeeded on a full disk"),
            Err(err) => {
                assert!(err.is_disk_full(), "the put fails with a disk-full error: {err:?}");
                failures += 1;
                if failures == 10 {
                    break;
                }
            }
        }
    }
    assert_eq!(failures, 10, "the disk filled up");
    let err = store.flush_table("t").expect_err("a flush on a full disk");
    assert!(err.is_disk_full(), "the flush fails with a disk-full error: {err:?}");
    let err = put(&store, "one-more", 1).expect_err("still full");
    assert!(err.is_disk_full(), "{err:?}");
    expect.maybe("one-more", 1);
    expect.check(&store, "on a full disk");
    let crashed = e.crash_copy("crash-full");
    let expect_crashed = expect.clone();

    // Space comes back: the same store instance works again.
    e.fault.heal();
    for (i, row) in all.iter().enumerate().skip(150) {
        expect.put(&store, row, i as u64).unwrap_or_else(|err| panic!("a put once there is space again: {err}"));
    }
    store.flush_table("t").expect("a flush once there is space again");
    expect.put(&store, &all[0], 999).expect("put");
    store.compact_table("t", true).expect("a compaction once there is space again");
    expect.check(&store, "after the disk was freed");
    store.close().expect("close");

    let store = reopen_local(&e.dir);
    expect.check(&store, "after a reopen");
    assert_no_debris(&e.dir, "after a full disk");
    drop(store);
    let store = reopen_local(&crashed);
    expect_crashed.check(&store, "after a crash on the full disk");
}

// ------------------------------------------------------------ power loss

/// Simulates a power loss under `store`: from now on nothing reaches the
/// disk (as if the machine were off), the store is dropped, and every file
/// loses what was not fsynced.
fn power_loss(e: &Env, store: Store) {
    for kind in [FaultKind::Write, FaultKind::Sync, FaultKind::Create, FaultKind::Rename] {
        e.fault.fail(kind, "", 0, u32::MAX);
    }
    drop(store);
    e.fault.drop_unsynced().expect("drop unsynced bytes");
    e.fault.heal();
}

#[test]
fn a_power_loss_keeps_every_syncwal_write_through_flushes_compactions_and_splits() {
    let e = env();
    let options = StoreOptions { wal: WalOptions { roll_size: 8 << 10, ..WalOptions::default() }, ..e.options() };
    let store = Store::open(&e.dir, options).expect("open");
    create(&store, Durability::SyncWal);
    let mut expect = Expect::default();
    let all = rows(120);
    let mut v = 0;
    let mut write_all = |store: &Store, expect: &mut Expect, step: usize| {
        for row in all.iter().step_by(step) {
            v += 1;
            expect.put(store, row, v).expect("put");
        }
    };
    write_all(&store, &mut expect, 1);
    store.flush_table("t").expect("flush");
    write_all(&store, &mut expect, 2);
    store.flush_table("t").expect("flush");
    write_all(&store, &mut expect, 3);
    store.compact_table("t", true).expect("compact");
    write_all(&store, &mut expect, 5);
    assert!(store.split_region("t", b"a", Some(b"a050")).expect("split"), "the split went through");
    write_all(&store, &mut expect, 4);
    store.flush_table("t").expect("flush");
    // The last writes are only in the WAL.
    write_all(&store, &mut expect, 7);
    expect.check(&store, "before the power loss");

    power_loss(&e, store);
    let store = reopen_local(&e.dir);
    assert_eq!(store.table_regions("t").expect("regions").len(), 3, "the split survived");
    expect.check(&store, "after the power loss");
    expect.put(&store, "after", 1).expect("a put after recovery");
    store.close().expect("close");
    let store = reopen_local(&e.dir);
    expect.check(&store, "after a clean reopen");
}

#[test]
fn a_power_loss_keeps_flushed_asyncwal_data_and_what_a_syncwal_write_made_durable() {
    let e = env();
    // No background WAL sync within the test: AsyncWal writes reach the
    // disk only through a flush or a later SyncWal write.
    let wal = WalOptions { sync_interval: Duration::from_secs(3600), sync_bytes: 1 << 30, ..WalOptions::default() };
    let store = Store::open(&e.dir, StoreOptions { wal, ..e.options() }).expect("open");
    create(&store, Durability::AsyncWal);
    let mut expect = Expect::default();
    let all = rows(100);

    // Flushed: must survive.
    for (i, row) in all.iter().enumerate() {
        expect.put(&store, row, i as u64).expect("put");
    }
    store.flush_table("t").expect("flush");
    // AsyncWal writes followed by a SyncWal one: all durable.
    for (i, row) in all.iter().enumerate().step_by(4) {
        expect.put(&store, row, 1000 + i as u64).expect("put");
    }
    put_with(&store, "sync", 1, Durability::SyncWal).expect("a SyncWal put");
    expect.acked("sync", 1);
    // Unsynced AsyncWal writes: may be lost, but not torn.
    let mut unsynced = Vec::new();
    for (i, row) in all.iter().enumerate().skip(1).step_by(4) {
        put(&store, row, 2000 + i as u64).expect("put");
        expect.maybe(row, 2000 + i as u64);
        unsynced.push((row.clone(), 2000 + i as u64));
    }
    expect.check(&store, "before the power loss");

    power_loss(&e, store);
    let store = reopen_local(&e.dir);
    expect.check(&store, "after the power loss");
    let lost = unsynced.iter().filter(|(row, v)| version(&store, row) != Some(*v)).count();
    assert_eq!(lost, unsynced.len(), "the simulated power loss took the unsynced AsyncWal writes");
}

// ---------------------------------------------------------- sanity checks

/// Every kind of file the store writes goes through `StoreOptions::fs`, so
/// that the faults above do hit them: for each kind, a fault armed on its
/// name alone fails the operation that writes it (a file written past the
/// fault-injecting fs would let the operation succeed).
#[test]
fn the_fault_injecting_fs_reaches_every_file_the_store_writes() {
    type Step = fn(&Store) -> store::Result<()>;
    let create_table: Step = |s| s.create_table(table(Durability::SyncWal), &[b"m".to_vec()]);
    let sync_put: Step = |s| put_with(s, "a", 1, Durability::SyncWal);
    let flush: Step = |s| s.flush_table("t");
    let cases: [(&str, FaultKind, &str, Step); 5] = [
        ("the table descriptor", FaultKind::Create, ".tabledesc", create_table),
        ("a region's .regioninfo", FaultKind::Create, ".regioninfo", create_table),
        ("a WAL file", FaultKind::Sync, "/WALs/", sync_put),
        ("a store file", FaultKind::Create, ".sf", flush),
        ("a family's MANIFEST", FaultKind::Rename, "MANIFEST", flush),
    ];
    for (what, kind, name, step) in cases {
        let e = env();
        let store = e.open();
        if name != ".tabledesc" && name != ".regioninfo" {
            create(&store, Durability::SyncWal);
            put(&store, "a", 1).expect("put");
        }
        let injected = e.fault.injected();
        e.fault.fail(kind, name, 0, u32::MAX);
        assert!(step(&store).is_err(), "{what} was written past the fault-injecting fs");
        assert!(e.fault.injected() > injected, "{what}: no fault fired");
        e.fault.heal();
    }
}
