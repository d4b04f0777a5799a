//! The write path's windows and failures, reproduced deterministically with
//! `WriteHooks` (a thread paused at a named point until the test lets it
//! go, an injected error, an injected panic) and with syncs held by the
//! `FaultInjectingFs`:
//!
//! - WAL archiving follows the WAL's own sequence-id accounting, so a file
//!   stays while it holds an edit that is durable but not yet in a memstore,
//!   an edit of a region created or split while an archive pass runs, or an
//!   edit appended while a flush of its region is in progress; after a
//!   crash (nothing but the fsynced bytes left, no final flush) every
//!   acknowledged row comes back;
//! - a SYNC_WAL batch is invisible to readers until its sync returned, and
//!   each region's part of a batch becomes visible whole;
//! - a failed WAL write or fsync, an error after the WAL append and a panic
//!   before it each fail the batch with nothing visible, and the region
//!   keeps working (its MVCC entry was abandoned, not leaked);
//! - a refused row does not stop the other rows of its batch.
//!
//! Nothing here sleeps to synchronise: every wait is on a channel or a
//! condvar, bounded by `TIMEOUT` so that a bug fails the test instead of
//! hanging it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::fs::{FaultInjectingFs, FaultKind, LocalFs};
use store::hooks::{HookPoint, WriteHooks};
use store::testing::scan_row_keys;
use store::wal::Durability;
use store::{FamilyDescriptor, Get, MutationRef, RowMutations, Scan, Store, StoreError, StoreOptions, TableDescriptor};
use tempfile::TempDir;

/// How long any wait may take before the test fails (never reached when
/// the store works: every wait here ends on an event).
const TIMEOUT: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------ hooks

enum Action {
    /// Signal `arrived`, then wait for `release` (or for the test's `Gate`
    /// to be dropped).
    Pause {
        arrived: Sender<()>,
        release: Receiver<()>,
    },
    Fail,
    Panic,
}

struct Rule {
    point: HookPoint,
    /// `None`: any region (store-wide points pass 0).
    region: Option<u64>,
    action: Action,
}

/// One-shot rules: the first call matching a rule consumes it.
#[derive(Default)]
struct TestHooks {
    rules: Mutex<Vec<Rule>>,
}

impl TestHooks {
    fn add(&self, point: HookPoint, region: Option<u64>, action: Action) {
        self.rules.lock().expect("hook rules").push(Rule { point, region, action });
    }

    /// Pauses the next thread reaching `point` (for `region`).
    fn pause(&self, point: HookPoint, region: Option<u64>) -> Gate {
        let (arrived_tx, arrived_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel();
        self.add(point, region, Action::Pause { arrived: arrived_tx, release: release_rx });
        Gate { point, arrived: arrived_rx, release: release_tx }
    }

    fn fail(&self, point: HookPoint, region: Option<u64>) {
        self.add(point, region, Action::Fail);
    }

    fn panic(&self, point: HookPoint, region: Option<u64>) {
        self.add(point, region, Action::Panic);
    }

    /// Rules not yet consumed.
    fn pending(&self) -> usize {
        self.rules.lock().expect("hook rules").len()
    }
}

impl WriteHooks for TestHooks {
    fn at(&self, point: HookPoint, region: u64) -> store::Result<()> {
        let action = {
            let mut rules = self.rules.lock().expect("hook rules");
            let Some(i) = rules.iter().position(|r| r.point == point && r.region.is_none_or(|id| id == region)) else {
                return Ok(());
            };
            rules.remove(i).action
        };
        match action {
            Action::Pause { arrived, release } => {
                let _ = arrived.send(());
                match release.recv_timeout(TIMEOUT) {
                    // Released, or the test is gone (it failed): go on.
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => Ok(()),
                    Err(RecvTimeoutError::Timeout) => {
                        Err(StoreError::WritesStopped(format!("test hook at {point:?}: never released")))
                    }
                }
            }
            Action::Fail => Err(StoreError::WritesStopped(format!("injected by a test hook at {point:?}"))),
            Action::Panic => panic!("injected panic at {point:?} (region {region})"),
        }
    }
}

/// The test's end of a pause rule.
struct Gate {
    point: HookPoint,
    arrived: Receiver<()>,
    release: Sender<()>,
}

impl Gate {
    /// Waits until a thread is paused at the gate.
    fn wait_arrived(&self) {
        self.arrived
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|e| panic!("no thread reached {:?} within {TIMEOUT:?}: {e}", self.point));
    }

    fn release(self) {
        self.release.send(()).expect("the paused thread is waiting");
    }
}

// -------------------------------------------------------- timed threads

/// A thread whose outcome the test awaits for at most `TIMEOUT`.
struct Timed<T> {
    what: String,
    done: Receiver<std::thread::Result<T>>,
}

fn spawn_timed<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> Timed<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    Timed { what: what.to_string(), done: rx }
}

impl<T> Timed<T> {
    /// The thread's result; fails the test if it does not finish in time
    /// (it is then left blocked: a hang becomes a failure, not a hung test).
    fn join(self) -> T {
        match self.done.recv_timeout(TIMEOUT) {
            Ok(Ok(v)) => v,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => panic!("{} did not finish within {TIMEOUT:?} ({e}): blocked forever?", self.what),
        }
    }
}

// ---------------------------------------------------------------- store

struct Env {
    _tmp: TempDir,
    dir: PathBuf,
    fault: FaultInjectingFs,
    hooks: Arc<TestHooks>,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    Env { dir, fault: FaultInjectingFs::new(Arc::new(LocalFs)), hooks: Arc::new(TestHooks::default()), _tmp: tmp }
}

impl Env {
    /// No background flushes or compactions (they would move the windows
    /// under test), and memory to spare (no flush inline in a writer).
    fn options(&self) -> StoreOptions {
        StoreOptions {
            fs: Arc::new(self.fault.clone()),
            background: false,
            memory_budget: 1 << 30,
            hooks: Some(self.hooks.clone()),
            ..StoreOptions::default()
        }
    }

    fn open(&self) -> Store {
        Store::open(&self.dir, self.options()).expect("open on the fault-injecting fs")
    }

    /// A crash of `store`, then a recovery on what the disk kept. From the
    /// crash on nothing reaches the disk (every write, sync, creation and
    /// rename fails); the store is dropped — which, unlike `Store::close`,
    /// flushes no memstore, so what was only in memory is gone — and every
    /// file loses what was not fsynced. Returns a new store on the same
    /// directory and file system, without hooks.
    fn crash_and_reopen(&self, store: Store) -> Store {
        for kind in [FaultKind::Write, FaultKind::Sync, FaultKind::Create, FaultKind::Rename] {
            self.fault.fail(kind, "", 0, u32::MAX);
        }
        drop(store);
        self.fault.drop_unsynced().expect("drop the unsynced bytes");
        self.fault.heal();
        Store::open(&self.dir, StoreOptions { hooks: None, ..self.options() }).expect("recovery after the crash")
    }
}

fn desc(name: &str) -> TableDescriptor {
    let mut d = TableDescriptor::new(name, vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
    d.durability = Durability::SyncWal;
    d
}

fn create(store: &Store, name: &str, split_keys: &[&str]) {
    let keys: Vec<Vec<u8>> = split_keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    store.create_table(desc(name), &keys).unwrap_or_else(|e| panic!("create table {name}: {e}"));
}

fn region_id(store: &Store, table: &str, row: &str) -> u64 {
    store
        .table_regions(table)
        .expect("regions")
        .iter()
        .find(|r| r.contains(row.as_bytes()))
        .map(|r| r.id)
        .expect("a region holds the row")
}

fn value(row: &str, v: u64, family: &str) -> Vec<u8> {
    format!("{row}/{v}/{family}").into_bytes()
}

/// Each row's two puts (families f and g, qualifier q) of its two values.
fn puts_f_and_g(values: &[[Vec<u8>; 2]]) -> Vec<[MutationRef<'_>; 2]> {
    values
        .iter()
        .map(|[f, g]| {
            [
                MutationRef::Put { family: b"f", qualifier: b"q", timestamp: None, value: f },
                MutationRef::Put { family: b"g", qualifier: b"q", timestamp: None, value: g },
            ]
        })
        .collect()
}

/// Writes version `v` of each row (two cells, families f and g) as one
/// client batch, SYNC_WAL.
fn put_batch<S: AsRef<str>>(store: &Store, table: &str, rows: &[S], v: u64) -> store::Result<()> {
    let values: Vec<[Vec<u8>; 2]> =
        rows.iter().map(|r| [value(r.as_ref(), v, "f"), value(r.as_ref(), v, "g")]).collect();
    let mutations = puts_f_and_g(&values);
    let batch: Vec<RowMutations<'_>> =
        rows.iter().zip(&mutations).map(|(r, m)| RowMutations { row: r.as_ref().as_bytes(), mutations: m }).collect();
    store.mutate_rows(table, &batch, Some(Durability::SyncWal))
}

fn put_row(store: &Store, table: &str, row: &str, v: u64) -> store::Result<()> {
    put_batch(store, table, &[row], v)
}

/// The version `row` holds (`None`: absent); panics unless both of its
/// cells are there with the same version (a row is written whole).
fn version(store: &Store, table: &str, row: &str) -> Option<u64> {
    let cells = store.get(table, &Get::new(row.as_bytes())).unwrap_or_else(|e| panic!("get {table}/{row}: {e}"));
    let first = cells.first()?;
    let v: u64 = std::str::from_utf8(&first.value)
        .ok()
        .and_then(|s| s.split('/').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{table}/{row}: unreadable value {:?}", first.value));
    let got: Vec<(Vec<u8>, Vec<u8>)> = cells.iter().map(|c| (c.family.to_vec(), c.value.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = ["f", "g"].iter().map(|f| (f.as_bytes().to_vec(), value(row, v, f))).collect();
    assert_eq!(got, want, "{table}/{row} is not whole version {v}");
    Some(v)
}

fn assert_rows<S: AsRef<str>>(store: &Store, table: &str, rows: &[S], v: Option<u64>, when: &str) {
    for row in rows {
        let row = row.as_ref();
        assert_eq!(version(store, table, row), v, "{when}: {table}/{row}");
    }
}

/// The WAL file being written now.
fn current_wal_file(store: &Store) -> PathBuf {
    store.wal().live_files().last().cloned().expect("the WAL has a current file")
}

/// After a roll and an archive pass: `file` must still be live (and no
/// longer the current file, so that the pass could have archived it).
fn assert_live(store: &Store, file: &Path, why: &str) {
    let live = store.wal().live_files();
    assert!(live.iter().any(|f| f == file), "{} was archived although {why} (live: {live:?})", file.display());
    assert!(live.last().is_some_and(|f| f != file), "the WAL rolled past {} (live: {live:?})", file.display());
}

/// Once recovery has replayed and flushed what `file` held, it may go:
/// nothing but the accounting kept it live before the crash.
fn assert_archived_after_recovery(store: &Store, file: &Path) {
    assert!(
        !store.wal().live_files().iter().any(|f| f == file),
        "{} is archived once recovery flushed its edits (live: {:?})",
        file.display(),
        store.wal().live_files()
    );
}

// --------------------------------------------------- archive vs. windows

/// Window: a SYNC_WAL edit is durable in WAL file N but in no memstore yet
/// (the writer is paused at `AfterWalAppend`) while the WAL rolls and an
/// archive pass runs. File N must stay, and after the writer is
/// acknowledged and the store crashes, the row must come back.
#[test]
fn a_file_holding_an_appended_but_not_inserted_edit_is_not_archived() {
    let e = env();
    let store = e.open();
    create(&store, "t", &[]);
    create(&store, "other", &[]);
    put_row(&store, "other", "o1", 1).expect("put other");
    let region = region_id(&store, "t", "r1");
    let gate = e.hooks.pause(HookPoint::AfterWalAppend, Some(region));
    let writer = spawn_timed("the paused writer", {
        let s = store.clone();
        move || put_row(&s, "t", "r1", 1)
    });
    gate.wait_arrived();
    let file_n = current_wal_file(&store);
    assert_eq!(version(&store, "t", "r1"), None, "the paused edit is in no memstore yet");

    store.wal().roll().expect("roll");
    // An archive pass (flushing another table first): region `t` has no
    // memstore data, only the WAL knows about its edit.
    store.flush_table("other").expect("flush another table, then archive");
    assert_live(&store, &file_n, "it holds an appended edit not yet in any memstore");

    gate.release();
    writer.join().expect("the writer is acknowledged");
    assert_eq!(version(&store, "t", "r1"), Some(1), "visible once acknowledged");

    let store = e.crash_and_reopen(store);
    assert_eq!(version(&store, "t", "r1"), Some(1), "the acknowledged row survives the crash");
    assert_eq!(version(&store, "other", "o1"), Some(1), "the flushed row survives the crash");
    assert_archived_after_recovery(&store, &file_n);
}

/// Window: a region is created (a new table) and written to while an
/// archive pass is paused at its start (`ArchivePass`); the WAL rolls and
/// the pass goes on. The file with the new region's rows must stay, and
/// they must survive a crash.
#[test]
fn a_region_created_during_an_archive_pass_keeps_its_wal_file() {
    let e = env();
    let store = e.open();
    create(&store, "a", &[]);
    put_row(&store, "a", "x", 1).expect("put a");
    let gate = e.hooks.pause(HookPoint::ArchivePass, None);
    let archiver = spawn_timed("the paused archive pass", {
        let s = store.clone();
        move || s.flush_table("a")
    });
    gate.wait_arrived();

    create(&store, "new", &["m"]);
    let rows = ["b1", "c2", "n1", "x2"];
    for row in rows {
        put_row(&store, "new", row, 1).expect("put into the new table");
    }
    let file_n = current_wal_file(&store);
    store.wal().roll().expect("roll");
    gate.release();
    archiver.join().expect("the archive pass");
    assert_live(&store, &file_n, "it holds rows of a region created during the archive pass");

    let store = e.crash_and_reopen(store);
    assert_rows(&store, "new", &rows, Some(1), "after the crash");
    assert_eq!(version(&store, "a", "x"), Some(1), "after the crash");
    assert_archived_after_recovery(&store, &file_n);
}

/// Window: a region splits while an archive pass is paused at its start;
/// its daughters (new region ids) are written to, the WAL rolls, the pass
/// goes on. The daughters' WAL file must stay; after a crash the split and
/// every row (flushed before the split or only in the WAL after it) are
/// there.
#[test]
fn a_split_during_an_archive_pass_keeps_the_daughters_wal_file() {
    let e = env();
    let store = e.open();
    create(&store, "s", &[]);
    create(&store, "a", &[]);
    let before: Vec<String> = (0..10).map(|i| format!("{}{i}", ["c", "p"][i % 2])).collect();
    put_batch(&store, "s", &before, 1).expect("rows before the split");
    let gate = e.hooks.pause(HookPoint::ArchivePass, None);
    let archiver = spawn_timed("the paused archive pass", {
        let s = store.clone();
        move || s.flush_table("a")
    });
    gate.wait_arrived();

    assert!(store.split_region("s", b"c", Some(b"m")).expect("split"), "the split went through");
    assert_eq!(store.table_regions("s").expect("regions").len(), 2);
    let after: Vec<String> = (0..10).map(|i| format!("{}{i}", ["d", "q"][i % 2])).collect();
    put_batch(&store, "s", &after, 2).expect("rows into the daughters");
    put_batch(&store, "s", &before[..4], 3).expect("new versions into the daughters");
    let file_n = current_wal_file(&store);
    store.wal().roll().expect("roll");
    gate.release();
    archiver.join().expect("the archive pass");
    assert_live(&store, &file_n, "it holds the daughters' unflushed rows");

    let store = e.crash_and_reopen(store);
    assert_eq!(store.table_regions("s").expect("regions").len(), 2, "the split survived");
    assert_rows(&store, "s", &before[..4], Some(3), "after the crash");
    assert_rows(&store, "s", &before[4..], Some(1), "after the crash");
    assert_rows(&store, "s", &after, Some(2), "after the crash");
    assert_archived_after_recovery(&store, &file_n);
}

/// Window: a flush of region R has taken its snapshot (paused at
/// `FlushSnapshotTaken`) when a writer appends to R — it is not blocked by
/// the flush — and the WAL rolls. When the flush completes and archives,
/// the file with the edit written after the flush started must stay (the
/// flush does not cover it), and the edit must survive a crash.
#[test]
fn an_edit_appended_during_a_flush_keeps_its_wal_file() {
    let e = env();
    let store = e.open();
    create(&store, "t", &[]);
    create(&store, "other", &[]);
    put_row(&store, "t", "r0", 1).expect("put before the flush");
    let region = region_id(&store, "t", "r0");
    let gate = e.hooks.pause(HookPoint::FlushSnapshotTaken, Some(region));
    let flusher = spawn_timed("the paused flush", {
        let s = store.clone();
        move || s.flush_region("t", b"r0")
    });
    gate.wait_arrived();

    spawn_timed("a write during the flush", {
        let s = store.clone();
        move || put_row(&s, "t", "r1", 1)
    })
    .join()
    .expect("a write during the flush is acknowledged");
    let file_n = current_wal_file(&store);
    store.wal().roll().expect("roll");
    gate.release();
    flusher.join().expect("the flush (and its archive pass)");
    store.flush_table("other").expect("another archive pass");
    assert_live(&store, &file_n, "it holds an edit appended after the flush took its snapshot");
    assert_eq!(version(&store, "t", "r1"), Some(1));

    let store = e.crash_and_reopen(store);
    assert_eq!(version(&store, "t", "r0"), Some(1), "the flushed row survives the crash");
    assert_eq!(version(&store, "t", "r1"), Some(1), "the row written during the flush survives the crash");
    assert_archived_after_recovery(&store, &file_n);
}

// ------------------------------------------------------------ visibility

/// Window: a SYNC_WAL batch over three regions is written to the WAL but
/// its fsync is held. No get and no scan may see any of its rows until the
/// sync returned; while it completes, a concurrent scanner sees each
/// region's part of the batch whole or not at all; afterwards every row is
/// visible.
#[test]
fn readers_never_see_a_syncwal_batch_before_its_sync_returned() {
    struct ReleaseOnDrop<'a>(&'a FaultInjectingFs);
    impl Drop for ReleaseOnDrop<'_> {
        fn drop(&mut self) {
            self.0.release_syncs();
        }
    }

    let e = env();
    let store = e.open();
    create(&store, "t", &["h", "p"]);
    let prefixes = ["c", "k", "t"]; // one per region
    let rows: Vec<String> = (0..21).map(|i| format!("{}{i:02}", prefixes[i % 3])).collect();
    put_row(&store, "t", "a-before", 1).expect("a row before the batch");

    e.fault.hold_syncs("/WALs/");
    let _release = ReleaseOnDrop(&e.fault);
    let writer = spawn_timed("the batch writer", {
        let (s, rows) = (store.clone(), rows.clone());
        move || put_batch(&s, "t", &rows, 1)
    });
    assert!(e.fault.wait_for_held_sync(TIMEOUT), "the batch's WAL sync is held");
    for _ in 0..50 {
        assert_rows(&store, "t", &rows, None, "while the sync is held");
        assert_eq!(scan_row_keys(&store, "t", Scan::default()), ["a-before"], "a scan while the sync is held");
    }
    assert!(e.fault.held_syncs() > 0, "the sync was held during every read above");

    // A scanner running while the batch completes: per region, all or
    // nothing of the batch.
    let done = Arc::new(AtomicBool::new(false));
    let reader = spawn_timed("the concurrent scanner", {
        let (s, done) = (store.clone(), done.clone());
        move || {
            let mut scans = 0u64;
            loop {
                let finished = done.load(Ordering::Acquire);
                let seen = scan_row_keys(&s, "t", Scan::default());
                for p in prefixes {
                    let n = seen.iter().filter(|r| r.starts_with(p)).count();
                    assert!(n == 0 || n == 7, "a scan saw {n} of the 7 rows of region {p:?}: {seen:?}");
                }
                scans += 1;
                if finished {
                    assert_eq!(seen.len(), 22, "the last scan sees the whole batch");
                    return scans;
                }
            }
        }
    });
    e.fault.release_syncs();
    writer.join().expect("the batch is acknowledged once its sync returned");
    done.store(true, Ordering::Release);
    assert!(reader.join() > 0);
    assert_rows(&store, "t", &rows, Some(1), "after the sync");
}

/// A SYNC_WAL client batch over three regions waits for one WAL sync
/// (region by region it waited for three, one after the other, each while
/// holding its rows' locks); a failure of that sync fails every region's
/// part, none of which becomes visible, and writes go on afterwards.
#[test]
fn a_syncwal_batch_over_regions_shares_one_sync_and_fails_whole() {
    let e = env();
    // No background sync round between the regions' appends.
    let wal = store::wal::WalOptions { sync_interval: Duration::from_secs(3600), ..Default::default() };
    let store = Store::open(&e.dir, StoreOptions { wal, ..e.options() }).expect("open");
    create(&store, "t", &["h", "p"]);
    let rows: Vec<String> = (0..21).map(|i| format!("{}{i:02}", ["c", "k", "t"][i % 3])).collect();
    let before = store.wal().stats().syncs;
    put_batch(&store, "t", &rows, 1).expect("the batch");
    assert_eq!(store.wal().stats().syncs - before, 1, "one sync for the three regions' parts");
    assert_rows(&store, "t", &rows, Some(1), "after the batch");

    e.fault.fail(FaultKind::Sync, "/WALs/", 0, 1);
    let err = put_batch(&store, "t", &rows, 2).expect_err("the shared sync fails");
    assert_eq!(e.fault.injected(), 1, "one failed sync ({err})");
    assert_rows(&store, "t", &rows, Some(1), "after the failed batch, nothing of it in any region");
    e.fault.heal();
    put_batch(&store, "t", &rows, 3).expect("writes go on after a roll");
    assert_rows(&store, "t", &rows, Some(3), "after the next batch");
    let store = e.crash_and_reopen(store);
    assert_rows(&store, "t", &rows, Some(3), "after a crash");
}

// -------------------------------------------------------------- failures

/// Failure: the WAL write (then, the WAL fsync) of a batch fails. The
/// batch errors and none of its rows is visible; once the fault is healed
/// the same region takes writes and serves reads.
#[test]
fn a_failed_wal_write_or_sync_fails_the_batch_with_nothing_visible() {
    let e = env();
    let store = e.open();
    create(&store, "t", &[]);
    put_row(&store, "t", "base", 1).expect("put");
    for (round, kind) in [FaultKind::Write, FaultKind::Sync].into_iter().enumerate() {
        let rows: Vec<String> = (0..8).map(|i| format!("{kind:?}-{i}")).collect();
        let injected = e.fault.injected();
        e.fault.fail(kind, "/WALs/", 0, 1);
        let err = put_batch(&store, "t", &rows, 1).expect_err("the batch fails with its WAL");
        assert_eq!(e.fault.injected(), injected + 1, "{kind:?}: the fault hit the batch ({err})");
        assert_rows(&store, "t", &rows, None, &format!("{kind:?}: after the failed batch"));
        e.fault.heal();

        let later: Vec<String> = (0..8).map(|i| format!("later-{round}-{i}")).collect();
        let (s, l, r) = (store.clone(), later.clone(), rows.clone());
        spawn_timed("writes after the failed batch", move || {
            put_batch(&s, "t", &l, 2).expect("a batch after the failure");
            put_batch(&s, "t", &r, 3).expect("the failed rows written again");
        })
        .join();
        assert_rows(&store, "t", &later, Some(2), &format!("{kind:?}: later batch"));
        assert_rows(&store, "t", &rows, Some(3), &format!("{kind:?}: the failed rows written again"));
        assert_eq!(version(&store, "t", "base"), Some(1));
    }
}

/// Failure: an error after the batch's WAL append (hook at
/// `AfterWalAppend`). The batch errors, nothing of it is visible, and later
/// batches of the region are acknowledged and visible — which they could
/// not be if the failed batch's MVCC entry had leaked (they would wait for
/// the read point forever; the timeout turns that into a failure).
#[test]
fn an_error_after_the_wal_append_abandons_the_batch_and_the_region_goes_on() {
    let e = env();
    let store = e.open();
    create(&store, "t", &[]);
    put_row(&store, "t", "base", 1).expect("put");
    let rows: Vec<String> = (0..8).map(|i| format!("failed-{i}")).collect();
    e.hooks.fail(HookPoint::AfterWalAppend, Some(region_id(&store, "t", "failed-0")));
    let err = put_batch(&store, "t", &rows, 1).expect_err("the batch fails after its WAL append");
    assert!(matches!(err, StoreError::WritesStopped(_)), "the hook's error: {err}");
    assert_eq!(e.hooks.pending(), 0, "the hook fired");
    assert_rows(&store, "t", &rows, None, "after the failed batch");
    assert_eq!(scan_row_keys(&store, "t", Scan::default()), ["base"]);

    let s = store.clone();
    spawn_timed("writes after the failed batch", move || {
        put_batch(&s, "t", &["later-0", "later-1"], 2).expect("a batch after the failure");
        put_row(&s, "t", "later-2", 2).expect("a single row after the failure");
    })
    .join();
    assert_rows(&store, "t", &["later-0", "later-1", "later-2"], Some(2), "later writes");
    assert_rows(&store, "t", &rows, None, "the failed batch stays invisible");
}

/// Failure: a panic on the write path before the WAL append (hook at
/// `BeforeWalAppend`), caught around `mutate_rows`. Row locks, the updates
/// lock and the MVCC entry are all released by unwinding: later writes to
/// the same rows are acknowledged and visible, and nothing of the failed
/// batch is.
#[test]
fn a_panic_before_the_wal_append_leaves_the_region_working() {
    let e = env();
    let store = e.open();
    create(&store, "t", &[]);
    put_row(&store, "t", "base", 1).expect("put");
    let rows: Vec<String> = (0..8).map(|i| format!("panicked-{i}")).collect();
    e.hooks.panic(HookPoint::BeforeWalAppend, Some(region_id(&store, "t", "panicked-0")));
    let caught = catch_unwind(AssertUnwindSafe(|| put_batch(&store, "t", &rows, 1)));
    assert!(caught.is_err(), "the injected panic unwound through mutate_rows: {caught:?}");
    assert_eq!(e.hooks.pending(), 0, "the hook fired");
    assert_rows(&store, "t", &rows, None, "after the panic");

    let (s, r) = (store.clone(), rows.clone());
    spawn_timed("writes after the panic", move || {
        // The same rows: their row locks were released.
        put_batch(&s, "t", &r, 2).expect("the rows again after the panic");
        put_row(&s, "t", "later", 2).expect("a row after the panic");
    })
    .join();
    assert_rows(&store, "t", &rows, Some(2), "after the panic");
    assert_eq!(version(&store, "t", "later"), Some(2));
    assert_eq!(version(&store, "t", "base"), Some(1));
}

/// Failure: one row of a batch is refused (an unknown family). The batch
/// returns that error, and every other row — in the same region and in
/// another one — is applied and readable.
#[test]
fn a_refused_row_does_not_stop_the_rest_of_its_batch() {
    let e = env();
    let store = e.open();
    create(&store, "t", &["m"]);
    let good = ["a1", "a2", "x1", "x2"];
    let values: Vec<[Vec<u8>; 2]> = good.iter().map(|r| [value(r, 1, "f"), value(r, 1, "g")]).collect();
    let mutations = puts_f_and_g(&values);
    let bad = [
        MutationRef::Put { family: b"f", qualifier: b"q", timestamp: None, value: b"a3/1/f" },
        MutationRef::Put { family: b"nope", qualifier: b"q", timestamp: None, value: b"x" },
    ];
    let mut batch: Vec<RowMutations<'_>> =
        good.iter().zip(&mutations).map(|(r, m)| RowMutations { row: r.as_bytes(), mutations: m }).collect();
    batch.insert(2, RowMutations { row: b"a3", mutations: &bad });
    let err = store.mutate_rows("t", &batch, Some(Durability::SyncWal)).expect_err("the refused row's error");
    assert!(matches!(err, StoreError::NoSuchFamily { .. }), "{err}");
    assert_rows(&store, "t", &good, Some(1), "the other rows of the batch");
    assert_eq!(version(&store, "t", "a3"), None, "the refused row is not applied, not even in part");
    assert_eq!(scan_row_keys(&store, "t", Scan::default()), good);
}

/// `mutate_rows_each` names every refused row, in both regions and on both
/// paths (a SYNC_WAL batch over two regions shares one sync; an ASYNC_WAL
/// one goes region by region), and applies the rest.
#[test]
fn mutate_rows_each_names_every_refused_row() {
    let e = env();
    let store = e.open();
    create(&store, "t", &["m"]);
    for (durability, v) in [(Durability::SyncWal, 1), (Durability::AsyncWal, 2)] {
        let good = ["a1", "a2", "x1", "x2"];
        let values: Vec<[Vec<u8>; 2]> = good.iter().map(|r| [value(r, v, "f"), value(r, v, "g")]).collect();
        let mutations = puts_f_and_g(&values);
        let bad = [MutationRef::Put { family: b"nope", qualifier: b"q", timestamp: None, value: b"x" }];
        let mut batch: Vec<RowMutations<'_>> =
            good.iter().zip(&mutations).map(|(r, m)| RowMutations { row: r.as_bytes(), mutations: m }).collect();
        batch.insert(2, RowMutations { row: b"a3", mutations: &bad });
        batch.insert(0, RowMutations { row: b"x3", mutations: &bad });
        let refused = store.mutate_rows_each("t", &batch, Some(durability)).expect("no batch fails as a whole");
        let at: Vec<usize> = refused.iter().map(|(i, _)| *i).collect();
        assert_eq!(at, vec![0, 3], "{durability:?}: the refused rows, by their index in the batch");
        assert!(refused.iter().all(|(_, e)| matches!(e, StoreError::NoSuchFamily { .. })));
        assert_rows(&store, "t", &good, Some(v), "the other rows of the batch");
        assert_eq!(version(&store, "t", "a3"), None);
        assert_eq!(version(&store, "t", "x3"), None);
    }
}
