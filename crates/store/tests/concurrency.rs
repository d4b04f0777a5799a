//! Writers, readers, background flushes and compactions, and an admin
//! thread flushing, compacting and splitting, all at once on one store:
//!
//! - row atomicity: every get and every scan returns each row whole — all
//!   six cells of its two families from the same write (each cell carries
//!   the row's version counter);
//! - read-your-acknowledged-writes: a read started after a write was
//!   acknowledged sees that version or a newer one, through flushes,
//!   compactions and splits (a scan also skips no row that existed when it
//!   started, returns rows in order and none twice);
//! - no admin operation fails under load, and at the end every row holds
//!   exactly its last acknowledged version, in the running store and after a
//!   reopen.
//!
//! The run is bounded by operation counts (writers' puts; readers and the
//! admin thread stop when the writers are done).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use memstore::Cell;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use store::jobs::compaction::policy::CompactionConfig;
use store::wal::{Durability, WalOptions};
use store::{FamilyDescriptor, Get, Scan, Store, StoreOptions, TableDescriptor};

const WRITERS: usize = 3;
const READERS: usize = 2;
const ROWS_PER_WRITER: usize = 300;
const PUTS_PER_WRITER: usize = 30_000;
const ROWS: usize = WRITERS * ROWS_PER_WRITER;
/// The cells of a row: (family, qualifier).
const CELLS: [(&str, &str); 6] = [("f", "q0"), ("f", "q1"), ("f", "q2"), ("f", "q3"), ("g", "q0"), ("g", "q1")];

/// Row `i` (writer `i % WRITERS` owns it): rows of all writers interleave
/// over the key space, so that every region and every split sees them all.
fn row_key(i: usize) -> String {
    format!("r{i:05}")
}

fn row_index(key: &[u8]) -> Option<usize> {
    std::str::from_utf8(key).ok()?.strip_prefix('r')?.parse().ok().filter(|&i| i < ROWS)
}

fn cell_value(row: &str, version: u64, family: &str, qualifier: &str) -> Vec<u8> {
    let pad = 20 + (version as usize * 7 + qualifier.len()) % 90;
    format!("{row}:{version}:{family}:{qualifier}:{}", "p".repeat(pad)).into_bytes()
}

/// The version a row's cells carry; an error unless the row is whole.
fn row_version(row: &str, cells: &[Cell]) -> Result<u64, String> {
    let version_of = |c: &Cell| -> Option<u64> { std::str::from_utf8(&c.value).ok()?.split(':').nth(1)?.parse().ok() };
    let first = cells.first().ok_or_else(|| format!("row {row} is empty"))?;
    let v = version_of(first).ok_or_else(|| format!("row {row}: unreadable cell {first:?}"))?;
    let got: Vec<(&[u8], &[u8], &[u8])> =
        cells.iter().map(|c| (c.family.as_ref(), c.qualifier.as_ref(), c.value.as_ref())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> =
        CELLS.iter().map(|(f, q)| (f.as_bytes().to_vec(), q.as_bytes().to_vec(), cell_value(row, v, f, q))).collect();
    let want: Vec<(&[u8], &[u8], &[u8])> =
        want.iter().map(|(f, q, val)| (f.as_slice(), q.as_slice(), val.as_slice())).collect();
    if got != want {
        let versions: Vec<Option<u64>> = cells.iter().map(version_of).collect();
        return Err(format!("row {row} is torn: {} cells of versions {versions:?}", cells.len()));
    }
    Ok(v)
}

fn options() -> StoreOptions {
    StoreOptions {
        region_flush_size: 128 << 10,
        memory_budget: 256 << 20,
        wal: WalOptions { roll_size: 1 << 20, ..WalOptions::default() },
        max_logs: 8,
        compaction: CompactionConfig {
            min_files: 3,
            blocking_store_files: 10,
            blocking_wait_ms: 200,
            ..CompactionConfig::default()
        },
        background: true,
        ..StoreOptions::default()
    }
}

struct Shared {
    store: Store,
    /// Per row, its last acknowledged version (0: never written).
    acked: Vec<AtomicU64>,
    writers_done: AtomicUsize,
    stop: AtomicBool,
    failures: Mutex<Vec<String>>,
    gets: AtomicU64,
    scanned_rows: AtomicU64,
    admin_ops: Mutex<Vec<String>>,
}

impl Shared {
    fn fail(&self, what: String) {
        self.failures.lock().push(what);
        self.stop.store(true, Ordering::Release);
    }

    fn running(&self) -> bool {
        !self.stop.load(Ordering::Acquire) && self.writers_done.load(Ordering::Acquire) < WRITERS
    }
}

fn writer(s: &Shared, w: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut versions = vec![0u64; ROWS_PER_WRITER];
    for _ in 0..PUTS_PER_WRITER {
        if s.stop.load(Ordering::Acquire) {
            break;
        }
        let k = rng.random_range(0..ROWS_PER_WRITER);
        let i = k * WRITERS + w;
        let row = row_key(i);
        let v = versions[k] + 1;
        let values: Vec<Vec<u8>> = CELLS.iter().map(|(f, q)| cell_value(&row, v, f, q)).collect();
        let cells: Vec<(&[u8], &[u8], &[u8])> =
            CELLS.iter().zip(&values).map(|((f, q), val)| (f.as_bytes(), q.as_bytes(), val.as_slice())).collect();
        match s.store.put("t", row.as_bytes(), &cells, None) {
            Ok(()) => {
                versions[k] = v;
                s.acked[i].store(v, Ordering::Release);
            }
            Err(e) => {
                s.fail(format!("writer {w}: put {row} v{v}: {e}"));
                break;
            }
        }
    }
    s.writers_done.fetch_add(1, Ordering::AcqRel);
}

fn reader(s: &Shared, r: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while s.running() {
        if rng.random_bool(0.7) {
            let i = rng.random_range(0..ROWS);
            let row = row_key(i);
            let before = s.acked[i].load(Ordering::Acquire);
            let cells = match s.store.get("t", &Get::new(row.as_bytes())) {
                Ok(c) => c,
                Err(e) => return s.fail(format!("reader {r}: get {row}: {e}")),
            };
            s.gets.fetch_add(1, Ordering::Relaxed);
            if cells.is_empty() {
                if before > 0 {
                    return s.fail(format!("reader {r}: row {row} (acknowledged v{before}) is missing"));
                }
                continue;
            }
            match row_version(&row, &cells) {
                Ok(v) if v < before => {
                    return s.fail(format!("reader {r}: row {row} reads v{v} after v{before} was acknowledged"));
                }
                Ok(_) => {}
                Err(e) => return s.fail(format!("reader {r}: get: {e}")),
            }
        } else {
            let start = rng.random_range(0..ROWS);
            let reverse = rng.random_bool(0.2);
            let limit = rng.random_range(1..200u64);
            let before: Vec<u64> = s.acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
            let scan =
                Scan { start: Some(row_key(start).into_bytes()), reverse, limit: Some(limit), ..Scan::default() };
            let scanner = match s.store.scan("t", scan) {
                Ok(sc) => sc,
                Err(e) => return s.fail(format!("reader {r}: opening a scan from {start}: {e}")),
            };
            // The next row the scan may return, at the latest (`None`: no
            // row can follow).
            let mut next = Some(start);
            let mut count = 0u64;
            for result in scanner {
                let cells = match result {
                    Ok(c) => c,
                    Err(e) => return s.fail(format!("reader {r}: scan from {start}, after {count} rows: {e}")),
                };
                let Some(i) = row_index(&cells[0].row) else {
                    return s.fail(format!("reader {r}: a scan returned an unknown row {:?}", cells[0].row));
                };
                // Rows in order, none twice, none skipped that existed
                // before the scan began.
                let skipped: Option<Vec<usize>> = match next {
                    Some(n) if reverse && i <= n => Some((i + 1..=n).filter(|&j| before[j] > 0).collect()),
                    Some(n) if !reverse && i >= n => Some((n..i).filter(|&j| before[j] > 0).collect()),
                    _ => None,
                };
                if skipped.as_ref().is_none_or(|v| !v.is_empty()) {
                    return s.fail(format!(
                        "reader {r}: a {} scan from {start} returned row {i} when {next:?} was next (skipped \
                         existing rows {skipped:?})",
                        if reverse { "reverse" } else { "forward" }
                    ));
                }
                let row = row_key(i);
                match row_version(&row, &cells) {
                    Ok(v) if v < before[i] => {
                        return s.fail(format!(
                            "reader {r}: a scan read row {row} v{v} after v{} was acknowledged",
                            before[i]
                        ));
                    }
                    Ok(_) => {}
                    Err(e) => return s.fail(format!("reader {r}: scan: {e}")),
                }
                count += 1;
                next = if reverse { i.checked_sub(1) } else { Some(i + 1) };
            }
            s.scanned_rows.fetch_add(count, Ordering::Relaxed);
            // A scan that ended before its limit must not have left out
            // any row that existed when it began.
            if count < limit
                && let Some(n) = next
            {
                let missing: Vec<usize> = if reverse {
                    (0..=n.min(ROWS - 1)).filter(|&j| before[j] > 0).collect()
                } else {
                    (n..ROWS).filter(|&j| before[j] > 0).collect()
                };
                if !missing.is_empty() {
                    return s.fail(format!(
                        "reader {r}: a scan from {start} ended after {count} of {limit} rows, missing existing rows \
                         {missing:?}"
                    ));
                }
            }
        }
    }
}

fn admin(s: &Shared, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut op = 0usize;
    while s.running() {
        std::thread::sleep(Duration::from_millis(rng.random_range(2..20)));
        if !s.running() {
            break;
        }
        let row = row_key(rng.random_range(0..ROWS));
        let (what, result) = match op % 5 {
            0 => ("flush".to_string(), s.store.flush_table("t").map(|()| true)),
            1 => (format!("split at the middle of {row}'s region"), s.store.split_region("t", row.as_bytes(), None)),
            2 => ("major compaction".to_string(), s.store.compact_table("t", true).map(|()| true)),
            3 => {
                let at = row_key(rng.random_range(0..ROWS));
                (
                    format!("split of {row}'s region at {at}"),
                    s.store.split_region("t", row.as_bytes(), Some(at.as_bytes())),
                )
            }
            _ => ("minor compaction".to_string(), s.store.compact_table("t", false).map(|()| true)),
        };
        op += 1;
        match result {
            Ok(done) => s.admin_ops.lock().push(format!("{what}: {done}")),
            Err(e) => return s.fail(format!("admin: {what}: {e}")),
        }
    }
}

/// Every row holds exactly its last acknowledged version, by get and by a
/// full scan.
fn check_final(store: &Store, acked: &[u64], when: &str) {
    for (i, &v) in acked.iter().enumerate() {
        let row = row_key(i);
        let cells = store.get("t", &Get::new(row.as_bytes())).unwrap_or_else(|e| panic!("{when}: get {row}: {e}"));
        if v == 0 {
            assert!(cells.is_empty(), "{when}: row {row} was never written but reads {cells:?}");
        } else {
            assert_eq!(row_version(&row, &cells), Ok(v), "{when}: row {row}");
        }
    }
    let mut rows = 0;
    let mut prev = None;
    for result in store.scan("t", Scan::default()).expect("scan") {
        let cells = result.unwrap_or_else(|e| panic!("{when}: scan: {e}"));
        let i = row_index(&cells[0].row).expect("a known row");
        assert!(acked[i] > 0 && row_version(&row_key(i), &cells) == Ok(acked[i]), "{when}: scan row {i}");
        assert!(prev.is_none_or(|p| p < i), "{when}: rows in order, none twice ({prev:?}, then {i})");
        prev = Some(i);
        rows += 1;
    }
    assert_eq!(rows, acked.iter().filter(|&&v| v > 0).count(), "{when}: the scan returns every written row");
}

#[test]
fn concurrent_writes_reads_flushes_compactions_and_splits_keep_rows_whole_and_acknowledged() {
    let seed = std::env::var("CONCURRENCY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(11, |d| d.as_nanos() as u64)
    });
    eprintln!("concurrency test seed: CONCURRENCY_SEED={seed}");
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path(), options()).expect("open");
    let mut desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
    desc.durability = Durability::AsyncWal;
    store.create_table(desc, &[row_key(ROWS / 3).into_bytes(), row_key(2 * ROWS / 3).into_bytes()]).expect("create");

    let shared = Arc::new(Shared {
        store: store.clone(),
        acked: (0..ROWS).map(|_| AtomicU64::new(0)).collect(),
        writers_done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        failures: Mutex::new(Vec::new()),
        gets: AtomicU64::new(0),
        scanned_rows: AtomicU64::new(0),
        admin_ops: Mutex::new(Vec::new()),
    });
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let s = shared.clone();
        threads.push(std::thread::spawn(move || writer(&s, w, seed.wrapping_add(w as u64))));
    }
    for r in 0..READERS {
        let s = shared.clone();
        threads.push(std::thread::spawn(move || reader(&s, r, seed.wrapping_add(100 + r as u64))));
    }
    {
        let s = shared.clone();
        threads.push(std::thread::spawn(move || admin(&s, seed.wrapping_add(200))));
    }
    for t in threads {
        t.join().expect("a test thread panicked");
    }
    let failures = shared.failures.lock().clone();
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");

    let acked: Vec<u64> = shared.acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let puts: u64 = acked.iter().sum();
    assert_eq!(puts, (WRITERS * PUTS_PER_WRITER) as u64, "every put was acknowledged");
    check_final(&store, &acked, "in the running store");
    let regions = store.table_regions("t").expect("regions").len();
    let admin_ops = shared.admin_ops.lock().clone();
    let gets = shared.gets.load(Ordering::Relaxed);
    let scanned = shared.scanned_rows.load(Ordering::Relaxed);
    let flushes: u64 = store
        .all_regions()
        .iter()
        .flat_map(|r| r.stores().map(|s| s.counters.flushes.load(Ordering::Relaxed)).collect::<Vec<_>>())
        .sum();
    drop(shared);
    store.close().expect("close");
    drop(store);

    let store = Store::open(tmp.path(), StoreOptions { background: false, ..options() }).expect("reopen");
    check_final(&store, &acked, "after a reopen");
    eprintln!(
        "{puts} puts, {gets} gets, {scanned} rows scanned, {regions} regions, \
         {flushes} family flushes since the last split, {} admin operations, {:?}",
        admin_ops.len(),
        started.elapsed()
    );
    assert!(admin_ops.iter().any(|o| o.starts_with("split") && o.ends_with("true")), "a split ran: {admin_ops:?}");
}

// ------------------------------------------------- regressions of found bugs

#[test]
fn concurrent_compactions_of_a_store_both_succeed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path(), StoreOptions { background: false, ..StoreOptions::default() }).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    for round in 0..50u64 {
        for file in 0..3u64 {
            for i in 0..50u64 {
                let v = format!("{round}-{file}-{i}");
                store.put("t", format!("r{i:03}").as_bytes(), &[(b"f", b"q", v.as_bytes())], None).expect("put");
            }
            store.flush_table("t").expect("flush");
        }
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let other = {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.compact_table("t", true)
            })
        };
        barrier.wait();
        let mine = store.compact_table("t", true);
        let theirs = other.join().expect("compaction thread");
        assert!(mine.is_ok() && theirs.is_ok(), "round {round}: two major compactions: {mine:?} / {theirs:?}");
    }
}

/// A file system that stops the first creation of a split daughter's
/// reference until the test lets it go: a split held open in its critical
/// section.
struct SplitGateFs {
    armed: AtomicBool,
    reached: std::sync::Barrier,
    release: std::sync::Barrier,
}

/// A file system that holds the first creation of a reference (a split
/// writing its daughters, the parent closed) until the test releases it.
fn gated_fs(gate: Arc<SplitGateFs>) -> store::fs::FaultInjectingFs {
    let fs = store::fs::FaultInjectingFs::new(Arc::new(store::fs::LocalFs));
    fs.before(move |op, path| {
        if op == store::fs::FsOp::Create
            && path.to_string_lossy().contains(".ref")
            && gate.armed.swap(false, Ordering::AcqRel)
        {
            gate.reached.wait();
            gate.release.wait();
        }
        Ok(())
    });
    fs
}

/// Signals the first time a scan waits for a region closed under it.
struct ScanWaitSignal(Mutex<Option<std::sync::mpsc::Sender<u64>>>);

impl store::hooks::WriteHooks for ScanWaitSignal {
    fn at(&self, point: store::hooks::HookPoint, region: u64) -> store::Result<()> {
        if point == store::hooks::HookPoint::ScanWaitsForRegion
            && let Some(tx) = self.0.lock().take()
        {
            let _ = tx.send(region);
        }
        Ok(())
    }
}

/// A scan that meets a region its split has closed waits for the
/// daughters and reads every row from them: the split is held with the
/// parent closed until the scan has found it closed (the hook), so the scan
/// really runs into the split.
#[test]
fn a_scan_during_a_split_waits_for_the_daughters_and_reads_every_row() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let gate = Arc::new(SplitGateFs {
        armed: AtomicBool::new(true),
        reached: std::sync::Barrier::new(2),
        release: std::sync::Barrier::new(2),
    });
    let (waits_tx, waits) = std::sync::mpsc::channel();
    let options = StoreOptions {
        fs: Arc::new(gated_fs(gate.clone())),
        background: false,
        hooks: Some(Arc::new(ScanWaitSignal(Mutex::new(Some(waits_tx))))),
        ..StoreOptions::default()
    };
    let store = Store::open(tmp.path(), options).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    for i in 0..100 {
        store.put("t", row_key(i).as_bytes(), &[(b"f", b"q", b"v")], None).expect("put");
    }
    let parent = store.table_regions("t").expect("regions")[0].id;
    let splitter = {
        let store = store.clone();
        std::thread::spawn(move || store.split_region("t", row_key(0).as_bytes(), Some(row_key(50).as_bytes())))
    };
    gate.reached.wait(); // the parent is closed; its daughters are being written
    let scanner = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.scan("t", Scan::default()).and_then(|s| s.collect::<store::Result<Vec<_>>>()).map(|rows| rows.len())
        })
    };
    let waited_on = waits.recv_timeout(Duration::from_secs(30)).expect("the scan waits for the closed parent");
    assert_eq!(waited_on, parent, "the scan waited for the region being split");
    gate.release.wait();
    assert!(splitter.join().expect("split thread").expect("split"), "the split went through");
    let scanned = scanner.join().expect("scan thread");
    assert!(matches!(scanned, Ok(100)), "a scan during a split: {scanned:?}");
    assert_eq!(store.table_regions("t").expect("regions").len(), 2, "the scan read the daughters");
}
