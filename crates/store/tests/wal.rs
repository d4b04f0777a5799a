//! The WAL end to end: round trips across rolls, group commit, background
//! sync, torn tails and corruption, injected I/O failures, power loss,
//! recovery chains, archiving and maxlogs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use memstore::{CellInput, CellType};
use store::StoreError;
use store::fs::{FaultInjectingFs, FaultKind, FileSystem, LocalFs};
use store::wal::record::{HEADER_LEN, SYNC_MARK_LEN, SYNC_MARK_REGION};
use store::wal::{Durability, LEGACY_ARCHIVE_DIR, Wal, WalEntry, WalOptions, archive_dir, log_file_name};
use tempfile::TempDir;

// ---------------------------------------------------------------- helpers

struct Env {
    _tmp: TempDir,
    fault: FaultInjectingFs,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fault = FaultInjectingFs::new(Arc::new(LocalFs));
    let dir = tmp.path().join("wal");
    Env { fs: Arc::new(fault.clone()), fault, dir, _tmp: tmp }
}

/// Small files, a fast syncer that never fires by itself within a test
/// unless asked to.
fn options() -> WalOptions {
    WalOptions {
        roll_size: 1 << 20,
        sync_interval: Duration::from_secs(3600),
        sync_bytes: 1 << 30,
        ..Default::default()
    }
}

/// A row mutation of `cells` cells whose contents derive from (region, seq).
fn entry(region: u64, seq: u64, cells: usize) -> WalEntry {
    let row = format!("row-{region}-{seq:08}");
    let values: Vec<Vec<u8>> =
        (0..cells).map(|i| format!("value-{seq}-{i}-{}", "x".repeat(i * 7)).into_bytes()).collect();
    let quals: Vec<Vec<u8>> = (0..cells).map(|i| format!("q{i}").into_bytes()).collect();
    let mut inputs: Vec<CellInput<'_>> =
        (0..cells).map(|i| CellInput::put(row.as_bytes(), b"cf", &quals[i], seq * 10, &values[i])).collect();
    if seq.is_multiple_of(5) {
        inputs.push(CellInput::delete(row.as_bytes(), b"cf", b"", seq * 10, CellType::DeleteFamily));
    }
    WalEntry::from_cells(region, seq, &inputs)
}

fn open(e: &Env, options: WalOptions) -> Arc<Wal> {
    let (wal, replay) = Wal::open(e.fs.clone(), &e.dir, options).expect("open the WAL");
    assert!(replay.entries.is_empty(), "a fresh WAL directory has nothing to replay");
    wal
}

fn replay(e: &Env) -> store::wal::WalReplay {
    Wal::replay(&*e.fs, &e.dir).expect("replay")
}

fn expect_corruption(result: store::Result<store::wal::WalReplay>, file: &Path) -> String {
    match result {
        Err(err @ StoreError::Corruption { .. }) => {
            let msg = err.to_string();
            let name = file.file_name().expect("file name").to_string_lossy().into_owned();
            assert!(msg.contains(&name), "the error names {name}: {msg}");
            msg
        }
        Err(other) => panic!("expected corruption of {}, got {other}", file.display()),
        Ok(r) => panic!("expected corruption of {}, replay returned {} entries", file.display(), r.entries.len()),
    }
}

fn live_logs(e: &Env) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        e.fs.list(&e.dir)
            .expect("list")
            .into_iter()
            .filter(|n| store::wal::parse_log_file_name(n).is_some())
            .map(|n| e.dir.join(n))
            .collect();
    v.sort();
    v
}

/// Offsets at which each entry's record starts in the file holding it, in
/// order, read from the files' frames (sync marks between batches are
/// skipped; reading a file stops at its first unreadable frame).
fn record_offsets(e: &Env) -> Vec<(PathBuf, u64, WalEntry)> {
    let r = replay(e);
    let mut out = Vec::new();
    let mut it = r.entries.into_iter();
    for f in &r.files {
        let bytes = e.fs.read_all(&f.path).expect("read");
        let mut off = HEADER_LEN;
        let mut found = 0;
        while found < f.entries {
            let len = 8 + u32::from_be_bytes(bytes[off + 4..off + 8].try_into().expect("4 bytes")) as usize;
            let region = u64::from_be_bytes(bytes[off + 8..off + 16].try_into().expect("8 bytes"));
            if region != SYNC_MARK_REGION {
                let entry = it.next().expect("as many entries as the files count");
                assert_eq!(
                    len,
                    entry.record_len(),
                    "the record at {off} of {} is entry {}",
                    f.path.display(),
                    entry.seq
                );
                out.push((f.path.clone(), off as u64, entry));
                found += 1;
            }
            off += len;
        }
    }
    out
}

/// A file system whose fsync takes as long as a real disk's, so that group
/// commit has something to amortise whatever the test machine's disk.
fn slow_sync_fs(delay: Duration) -> FaultInjectingFs {
    let fs = FaultInjectingFs::new(Arc::new(LocalFs));
    fs.before(move |op, _| {
        if op == store::fs::FsOp::Sync {
            thread::sleep(delay);
        }
        Ok(())
    });
    fs
}

// ------------------------------------------------------------------ tests

#[test]
fn wal_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Wal>();
    check::<Arc<Wal>>();
}

#[test]
fn round_trip_across_rolls_then_recovery_continues_in_a_new_file() {
    let e = env();
    let wal = open(&e, WalOptions { roll_size: 4 << 10, ..options() });
    let mut appended = Vec::new();
    for seq in 1..=600u64 {
        let region = seq % 3;
        let en = entry(region, seq, 1 + (seq % 4) as usize);
        let durability = if seq.is_multiple_of(2) { Durability::SyncWal } else { Durability::AsyncWal };
        wal.append(&en, durability).expect("append");
        appended.push(en);
    }
    wal.append(&entry(9, 601, 1), Durability::SkipWal).expect("skip is a no-op");
    let stats = wal.stats();
    assert_eq!(stats.appends, 600, "SkipWal is not counted");
    assert!(stats.files_created >= 5, "several rolls at 4 KiB: {stats:?}");
    assert!(wal.live_files().len() as u64 == stats.files_created);
    wal.close().expect("close");
    let err = wal.append(&entry(1, 999, 1), Durability::SyncWal).expect_err("closed");
    assert!(matches!(err, StoreError::Closed), "{err}");
    drop(wal);

    let r = replay(&e);
    assert_eq!(r.entries, appended, "replay returns exactly what was appended, in order");
    assert_eq!(r.torn_tail, None);
    for (got, want) in r.entries.iter().zip(&appended) {
        for cell in got.cells().expect("valid cells") {
            assert_eq!(cell.seq(), want.seq, "each cell carries its entry's seq");
            assert_eq!(cell.family(), b"cf");
        }
    }
    let max_seq_region_1 = r.files.iter().filter_map(|f| f.region_max_seq.get(&1)).max().copied();
    assert_eq!(max_seq_region_1, Some(598));

    // Recovery replays everything, then starts a new, higher-numbered file.
    let highest = live_logs(&e).last().cloned().expect("files");
    let mut replayed = Vec::new();
    let (wal, summary) = Wal::open_with(e.fs.clone(), &e.dir, options(), |en| {
        replayed.push(en);
        Ok(())
    })
    .expect("recover");
    assert_eq!(replayed, appended);
    assert_eq!(summary.entries, 600);
    let newest = live_logs(&e).last().cloned().expect("files");
    assert!(newest > highest, "{} follows {}", newest.display(), highest.display());
    assert_eq!(e.fs.file_size(&highest).expect("size"), r.files.last().expect("files").len, "old files are untouched");
    let extra = entry(2, 700, 2);
    wal.append(&extra, Durability::SyncWal).expect("append after recovery");
    drop(wal);
    appended.push(extra);
    assert_eq!(replay(&e).entries, appended);
}

#[test]
fn group_commit_shares_fsyncs_between_concurrent_appenders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fs: Arc<dyn FileSystem> = Arc::new(slow_sync_fs(Duration::from_millis(1)));
    let dir = tmp.path().join("wal");
    let (wal, _) = Wal::open(fs.clone(), &dir, options()).expect("open");
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 200;
    thread::scope(|s| {
        for t in 0..THREADS {
            let wal = &wal;
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    wal.append(&entry(t, i + 1, 1), Durability::SyncWal).expect("sync append");
                }
            });
        }
    });
    let stats = wal.stats();
    assert_eq!(stats.appends, THREADS * PER_THREAD);
    assert!(
        stats.syncs <= stats.appends / 2,
        "group commit: {} fsyncs for {} appends should be far fewer",
        stats.syncs,
        stats.appends
    );
    assert_eq!(stats.synced_txid, stats.last_txid);
    drop(wal);
    let r = Wal::replay(&*fs, &dir).expect("replay");
    assert_eq!(r.entries.len() as u64, THREADS * PER_THREAD);
    for t in 0..THREADS {
        let seqs: Vec<u64> = r.entries.iter().filter(|en| en.region_id == t).map(|en| en.seq).collect();
        assert_eq!(seqs, (1..=PER_THREAD).collect::<Vec<_>>(), "one thread's appends replay in its order");
    }
}

#[test]
fn async_wal_is_synced_in_the_background_by_interval_and_by_size() {
    // By interval.
    let e = env();
    let wal = open(&e, WalOptions { sync_interval: Duration::from_millis(50), ..options() });
    let appended: Vec<WalEntry> = (1..=100).map(|s| entry(1, s, 2)).collect();
    for en in &appended {
        wal.append(en, Durability::AsyncWal).expect("async append");
    }
    thread::sleep(Duration::from_millis(200));
    // (Polled a little longer only so that a loaded machine cannot make the
    // test flaky; on an idle one the first check passes.)
    let deadline = Instant::now() + Duration::from_secs(5);
    while wal.stats().synced_txid < wal.stats().last_txid && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let stats = wal.stats();
    assert_eq!(stats.synced_txid, stats.last_txid, "the syncer covered everything: {stats:?}");
    assert!(stats.syncs >= 1);
    // Synced means durable: a power loss now keeps everything.
    e.fault.drop_unsynced().expect("power loss");
    assert_eq!(replay(&e).entries, appended);
    drop(wal);

    // By size: an hour-long interval, but 4 KiB of waiting bytes wake the
    // syncer.
    let e = env();
    let wal = open(&e, WalOptions { sync_bytes: 4 << 10, ..options() });
    let mut bytes = 0;
    let mut n = 0;
    while bytes < 8 << 10 {
        let en = entry(1, n + 1, 3);
        bytes += en.record_len();
        wal.append(&en, Durability::AsyncWal).expect("async append");
        n += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while wal.stats().syncs == 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    let stats = wal.stats();
    assert!(stats.syncs >= 1 && stats.synced_txid > 0, "sync_bytes triggered a sync: {stats:?}");
    drop(wal);
}

#[test]
fn torn_tail_at_every_offset_of_the_last_record_ends_replay_cleanly() {
    let e = env();
    let wal = open(&e, options());
    let appended: Vec<WalEntry> = (1..=60).map(|s| entry(s % 2, s, 1 + (s % 3) as usize)).collect();
    for en in &appended {
        wal.append(en, Durability::SyncWal).expect("append");
        if en.seq.is_multiple_of(20) && en.seq < 60 {
            wal.roll().expect("roll");
        }
    }
    drop(wal);
    let offsets = record_offsets(&e);
    let (last_path, last_start, last_entry) = offsets.last().cloned().expect("entries");
    assert_eq!(&last_path, live_logs(&e).last().expect("files"), "the last entry is in the last file");
    assert_eq!(live_logs(&e).len(), 3, "earlier, sealed files exist too");
    let mut original = e.fs.read_all(&last_path).expect("read");
    // A clean close ended the file with a sync mark; a crash leaves none.
    let end = last_start + last_entry.record_len() as u64;
    assert_eq!(end + SYNC_MARK_LEN as u64, original.len() as u64, "the closing sync mark follows the last record");
    original.truncate(end as usize);

    let write = |bytes: &[u8]| {
        let mut f = e.fs.create(&last_path).expect("rewrite");
        f.append(bytes).expect("append");
        f.sync().expect("sync");
        f.close().expect("close");
    };
    for cut in last_start..end {
        write(&original[..cut as usize]);
        let r = replay(&e);
        assert_eq!(r.entries, appended[..appended.len() - 1], "cut at {cut}");
        let expected_tail = (cut > last_start).then(|| (last_path.clone(), last_start));
        assert_eq!(r.torn_tail, expected_tail, "cut at {cut}");
    }
    // Garbage (not just a cut) in place of the last record is torn too.
    let mut garbage = original.clone();
    for b in &mut garbage[last_start as usize + 3..] {
        *b = 0;
    }
    write(&garbage);
    assert_eq!(replay(&e).torn_tail, Some((last_path.clone(), last_start)));

    // Recovery seals the torn file; after more appends and another restart
    // the old torn tail is ignored, not called corruption.
    write(&original[..end as usize - 5]);
    let (wal, summary) = Wal::open(e.fs.clone(), &e.dir, options()).expect("recover from the torn tail");
    assert_eq!(summary.torn_tail, Some((last_path.clone(), last_start)));
    let extra = entry(7, 1000, 2);
    wal.append(&extra, Durability::SyncWal).expect("append after recovery");
    drop(wal);
    let r = replay(&e);
    let mut want = appended[..appended.len() - 1].to_vec();
    want.push(extra);
    assert_eq!(r.entries, want);
    assert_eq!(r.torn_tail, None);
    let sealed = r.files.iter().find(|f| f.path == last_path).expect("the torn file is still live");
    assert_eq!(sealed.cut_at, Some(last_start), "its debris is reported as cut off");
}

#[test]
fn a_flipped_byte_in_durable_data_is_corruption_naming_the_file() {
    let e = env();
    let wal = open(&e, options());
    for s in 1..=60 {
        wal.append(&entry(1, s, 2), Durability::SyncWal).expect("append");
        if s.is_multiple_of(20) && s < 60 {
            wal.roll().expect("roll");
        }
    }
    drop(wal);
    let offsets = record_offsets(&e);
    let files = live_logs(&e);
    assert_eq!(files.len(), 3);
    let pristine: Vec<(PathBuf, Vec<u8>)> =
        files.iter().map(|p| (p.clone(), e.fs.read_all(p).expect("read"))).collect();
    let restore = || {
        for (p, bytes) in &pristine {
            let mut f = e.fs.create(p).expect("restore");
            f.append(bytes).expect("append");
            f.sync().expect("sync");
            f.close().expect("close");
        }
    };

    let in_file = |p: &PathBuf| offsets.iter().filter(|(q, ..)| q == p).cloned().collect::<Vec<_>>();
    let first = in_file(&files[0]);
    let last = in_file(files.last().expect("files"));
    let cases = [
        ("middle record of the last file", &last[last.len() / 2]),
        ("middle record of the first file", &first[first.len() / 2]),
        ("last record of a non-last file (sealed as durable)", first.last().expect("records")),
        ("first record of the last file", &last[0]),
    ];
    for (what, (path, start, en)) in cases {
        for delta in [0u64, 4, 8, 12, en.record_len() as u64 - 1] {
            e.fault.corrupt_byte(path, start + delta).expect("corrupt");
            let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), path);
            assert!(msg.contains(&format!("offset {start}")), "{what}, byte {delta}: {msg}");
            let opened = Wal::open(e.fs.clone(), &e.dir, options()).map(|_| ());
            assert!(matches!(opened, Err(StoreError::Corruption { .. })), "{what}: open refuses too");
            restore();
        }
    }
    // A damaged header is corruption as well (records follow it).
    e.fault.corrupt_byte(&files[1], 14).expect("corrupt");
    expect_corruption(Wal::replay(&*e.fs, &e.dir), &files[1]);
    restore();
    assert_eq!(replay(&e).entries.len(), 60, "restored");
}

#[test]
fn foreign_missing_and_shortened_files_are_reported() {
    let e = env();
    let wal = open(&e, WalOptions { roll_size: 1 << 9, ..options() });
    for s in 1..=40 {
        wal.append(&entry(1, s, 1), Durability::SyncWal).expect("append");
    }
    drop(wal);
    let files = live_logs(&e);
    assert!(files.len() >= 4);

    // A file of ours in name only.
    let foreign = e.dir.join(log_file_name(999));
    e.fs.write_atomic(&foreign, b"PK\x03\x04 certainly not a WAL file, but long enough to have a header")
        .expect("write");
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &foreign);
    assert!(msg.contains("magic"), "{msg}");
    e.fs.remove(&foreign).expect("remove");

    // A file shorter than what its successor sealed as durable.
    let len = e.fs.file_size(&files[1]).expect("size");
    e.fs.truncate(&files[1], len - 1).expect("truncate");
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &files[1]);
    assert!(msg.contains("lost"), "{msg}");

    // A missing file in the middle.
    e.fs.remove(&files[1]).expect("remove");
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &files[2]);
    assert!(msg.contains("missing"), "{msg}");
}

#[test]
fn an_abandoned_file_creation_is_ignored_and_removed_on_recovery() {
    let e = env();
    let wal = open(&e, options());
    let appended: Vec<WalEntry> = (1..=5).map(|s| entry(1, s, 1)).collect();
    for en in &appended {
        wal.append(en, Durability::SyncWal).expect("append");
    }
    drop(wal);
    // A crash while the next file's header was being written.
    let numbers: Vec<u64> = live_logs(&e)
        .iter()
        .filter_map(|p| store::wal::parse_log_file_name(&p.file_name().expect("name").to_string_lossy()))
        .collect();
    let next = numbers.iter().max().expect("files") + 1;
    let abandoned = e.dir.join(log_file_name(next));
    e.fs.write_atomic(&abandoned, b"ACCRDWAL\x00\x00").expect("write");
    let r = replay(&e);
    assert_eq!(r.entries, appended);
    assert_eq!(r.torn_tail, Some((abandoned.clone(), 0)));
    assert!(r.files.last().expect("files").abandoned);

    let (wal, _) = Wal::open(e.fs.clone(), &e.dir, options()).expect("recover");
    assert!(!e.fs.exists(&abandoned).expect("exists"), "removed on recovery");
    wal.append(&entry(1, 6, 1), Durability::SyncWal).expect("append");
    drop(wal);
    let r = replay(&e);
    assert_eq!(r.entries.len(), 6);
    assert_eq!(r.torn_tail, None);
}

#[test]
fn a_failed_fsync_fails_its_appenders_and_the_wal_continues_in_a_new_file() {
    let e = env();
    let wal = open(&e, options());
    let mut acked = Vec::new();
    for s in 1..=10 {
        let en = entry(1, s, 2);
        wal.append(&en, Durability::SyncWal).expect("append");
        acked.push(en);
    }
    let first_file = wal.live_files()[0].clone();
    e.fault.fail(FaultKind::Sync, "wal-", 0, 1);
    let failed = entry(1, 11, 2);
    let err = wal.append(&failed, Durability::SyncWal).expect_err("the fsync failure reaches the appender");
    assert!(err.to_string().contains("fsync"), "{err}");
    assert_eq!(wal.stats().sync_failures, 1);
    for s in 12..=20 {
        let en = entry(1, s, 2);
        wal.append(&en, Durability::SyncWal).expect("the next appends work");
        acked.push(en);
    }
    assert_eq!(wal.live_files().len(), 2, "the broken file was left behind: {:?}", wal.live_files());
    assert_eq!(wal.stats().files_created, 2);
    drop(wal);

    // Without a crash, the entry whose fsync failed may be there.
    let r = replay(&e);
    let without_failed: Vec<WalEntry> = r.entries.iter().filter(|en| en.seq != 11).cloned().collect();
    assert_eq!(without_failed, acked);

    // A byte flipped in the unacknowledged record past the seal is debris,
    // not corruption; one in the acknowledged part is corruption.
    let offsets = record_offsets(&e);
    if let Some((path, start, _)) = offsets.iter().find(|(_, _, en)| en.seq == 11) {
        e.fault.corrupt_byte(path, start + 10).expect("corrupt");
        let r = replay(&e);
        assert_eq!(r.entries, acked, "the damaged unacknowledged record is cut off");
        assert_eq!(r.files[0].cut_at, Some(*start));
        e.fault.corrupt_byte(path, start + 10).expect("restore");
    }
    let (path, start, _) = offsets.iter().find(|(_, _, en)| en.seq == 5).expect("entry 5");
    assert_eq!(path, &first_file);
    e.fault.corrupt_byte(path, start + 10).expect("corrupt");
    expect_corruption(Wal::replay(&*e.fs, &e.dir), path);
    e.fault.corrupt_byte(path, start + 10).expect("restore");

    // A power loss drops the unsynced record; every acknowledged one stays.
    e.fault.drop_unsynced().expect("power loss");
    assert_eq!(replay(&e).entries, acked);
}

#[test]
fn a_failed_write_and_a_failed_roll_fail_appends_until_the_fs_recovers() {
    let e = env();
    let wal = open(&e, options());
    let mut acked = Vec::new();
    let mut failed = 0;
    let mut append = |en: WalEntry, acked: &mut Vec<WalEntry>| match wal.append(&en, Durability::SyncWal) {
        Ok(()) => acked.push(en),
        Err(_) => failed += 1,
    };
    append(entry(1, 1, 1), &mut acked);
    // The write fails; then creating the next file fails twice.
    e.fault.fail(FaultKind::Write, "wal-", 0, 1);
    e.fault.fail(FaultKind::Create, "wal-", 0, 2);
    for s in 2..=6 {
        append(entry(1, s, 1), &mut acked);
    }
    assert_eq!(failed, 3, "the failed write and two failed rolls");
    assert_eq!(acked.iter().map(|en| en.seq).collect::<Vec<_>>(), [1, 5, 6]);
    let stats = wal.stats();
    assert_eq!(stats.sync_failures, 3);
    assert_eq!(stats.files_created, 2);
    drop(wal);
    e.fault.drop_unsynced().expect("power loss");
    assert_eq!(replay(&e).entries, acked);
}

#[test]
fn concurrent_appenders_of_a_failed_batch_all_get_the_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fault = slow_sync_fs(Duration::from_millis(1));
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    let dir = tmp.path().join("wal");
    let (wal, _) = Wal::open(fs.clone(), &dir, options()).expect("open");
    let next_seq = AtomicU64::new(1);
    let acked = parking_lot::Mutex::new(HashSet::new());
    let errors = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..6 {
            let (wal, next_seq, acked, errors, fault) = (&wal, &next_seq, &acked, &errors, &fault);
            s.spawn(move || {
                for i in 0..100 {
                    if t == 0 && i % 25 == 10 {
                        fault.fail(FaultKind::Sync, "wal-", 0, 1);
                    }
                    let seq = next_seq.fetch_add(1, Ordering::Relaxed);
                    match wal.append(&entry(t, seq, 1), Durability::SyncWal) {
                        Ok(()) => {
                            acked.lock().insert(seq);
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let stats = wal.stats();
    assert_eq!(stats.sync_failures, 4, "four injected fsync failures: {stats:?}");
    assert!(errors.load(Ordering::Relaxed) >= 4, "every failed batch failed at least its appender");
    assert_eq!(stats.files_created, 5, "one new file after each failure");
    drop(wal);
    fault.drop_unsynced().expect("power loss");
    let r = Wal::replay(&*fs, &dir).expect("replay after failures and a power loss");
    let replayed: HashSet<u64> = r.entries.iter().map(|en| en.seq).collect();
    let acked = acked.into_inner();
    assert!(
        acked.is_subset(&replayed),
        "lost acknowledged entries: {:?}",
        acked.difference(&replayed).collect::<Vec<_>>()
    );
    assert_eq!(replayed.len(), acked.len(), "after the power loss only acknowledged entries remain");
}

#[test]
fn a_full_disk_fails_appends_with_enospc_until_space_returns() {
    let e = env();
    let wal = open(&e, options());
    let mut acked = Vec::new();
    for s in 1..=5 {
        let en = entry(1, s, 3);
        wal.append(&en, Durability::SyncWal).expect("append");
        acked.push(en);
    }
    e.fault.set_space_left(100);
    let mut full = 0;
    for s in 6..=20 {
        let en = entry(1, s, 3);
        match wal.append(&en, Durability::SyncWal) {
            Ok(()) => acked.push(en),
            Err(err) => {
                assert!(err.is_disk_full(), "ENOSPC surfaces as a full disk: {err}");
                full += 1;
            }
        }
    }
    assert!(full >= 10, "the disk stays full: {full} failures");
    // AsyncWal appends are buffered; their loss is counted, and sync()
    // reports it.
    wal.append(&entry(1, 21, 1), Durability::AsyncWal).expect("buffered");
    assert!(wal.sync().expect_err("the disk is still full").is_disk_full());
    e.fault.heal();
    for s in 22..=30 {
        let en = entry(1, s, 3);
        wal.append(&en, Durability::SyncWal).expect("appends resume once space returns");
        acked.push(en);
    }
    drop(wal);
    e.fault.drop_unsynced().expect("power loss");
    assert_eq!(replay(&e).entries, acked);
}

#[test]
fn power_loss_keeps_every_acknowledged_entry_across_repeated_crashes() {
    let e = env();
    let mut acked: Vec<WalEntry> = Vec::new();
    let mut seq = 0;
    for round in 0..3u64 {
        let (wal, replayed) =
            Wal::open(e.fs.clone(), &e.dir, WalOptions { roll_size: 8 << 10, ..options() }).expect("recover");
        let replayed_seqs: HashSet<u64> = replayed.entries.iter().map(|en| en.seq).collect();
        for en in &acked {
            assert!(replayed_seqs.contains(&en.seq), "round {round}: acknowledged entry {} lost", en.seq);
        }
        let fresh = parking_lot::Mutex::new(Vec::new());
        let base = seq;
        thread::scope(|s| {
            for t in 0..4u64 {
                let (wal, fresh) = (&wal, &fresh);
                s.spawn(move || {
                    for i in 0..50u64 {
                        let en = entry(t, base + t * 1000 + i + 1, 2);
                        if i.is_multiple_of(3) {
                            // Not acknowledged as durable: may be lost.
                            wal.append(&en, Durability::AsyncWal).expect("async append");
                        } else {
                            wal.append(&en, Durability::SyncWal).expect("sync append");
                            fresh.lock().push(en);
                        }
                    }
                });
            }
        });
        seq += 10_000;
        acked.extend(fresh.into_inner());
        // Crash: unsynced bytes vanish while the WAL is still "running".
        e.fault.drop_unsynced().expect("power loss");
        let r = replay(&e);
        let replayed: HashSet<u64> = r.entries.iter().map(|en| en.seq).collect();
        for en in &acked {
            assert!(replayed.contains(&en.seq), "round {round}: acknowledged entry {} lost", en.seq);
        }
        // The process is gone: nothing more reaches the disk.
        e.fault.fail(FaultKind::Write, "wal-", 0, u32::MAX);
        e.fault.fail(FaultKind::Sync, "wal-", 0, u32::MAX);
        drop(wal);
        e.fault.heal();
        e.fault.drop_unsynced().expect("nothing was synced after the crash");
    }
}

#[test]
fn a_power_loss_after_recovery_may_take_the_unsynced_tail_it_replayed() {
    let e = env();
    // Run 1: A is synced; B's fsync fails and no new file can be created,
    // so B's bytes sit unsynced in the file when the process dies.
    let wal = open(&e, options());
    let a: Vec<WalEntry> = (1..=5).map(|s| entry(1, s, 2)).collect();
    for en in &a {
        wal.append(en, Durability::SyncWal).expect("append");
    }
    e.fault.fail(FaultKind::Sync, "wal-", 0, u32::MAX);
    e.fault.fail(FaultKind::Create, "wal-", 0, u32::MAX);
    wal.append(&entry(1, 6, 2), Durability::SyncWal).expect_err("fsync fails");
    wal.append(&entry(1, 7, 2), Durability::SyncWal).expect_err("no new file");
    drop(wal);
    e.fault.heal();
    let first = live_logs(&e)[0].clone();
    let offsets = record_offsets(&e);
    let (_, fifth, _) = offsets.iter().find(|(_, _, en)| en.seq == 5).expect("entry 5");
    let synced_len = fifth + a[4].record_len() as u64;
    assert!(e.fs.file_size(&first).expect("size") > synced_len, "the unsynced record reached the file");

    // Run 2 replays the unsynced record too, and seals the file at the
    // length it read (not known to be synced).
    let (wal, replayed) = Wal::open(e.fs.clone(), &e.dir, options()).expect("recover");
    assert_eq!(replayed.entries.iter().map(|en| en.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
    let d = entry(2, 8, 1);
    wal.append(&d, Durability::SyncWal).expect("append");

    // Power loss: the unsynced record of run 1 vanishes below the seal.
    e.fault.drop_unsynced().expect("power loss");
    drop(wal);
    let mut want = a.clone();
    want.push(d.clone());
    let r = replay(&e);
    assert_eq!(r.entries, want, "lost unsynced bytes below a recovery seal are a torn tail, not corruption");
    assert_eq!(r.files[0].cut_at, None, "the file simply ends early");

    // The same with the lost bytes read back as zeros (size kept, data not).
    let mut bytes = e.fs.read_all(&first).expect("read");
    let sealed_len = replayed.files[0].valid_len;
    bytes.resize(sealed_len as usize, 0);
    e.fs.write_atomic(&first, &bytes).expect("rewrite");
    let r = replay(&e);
    assert_eq!(r.entries, want);
    assert_eq!(r.files[0].cut_at, Some(synced_len));

    // But a damaged record below the seal that is followed by a valid one
    // is still corruption.
    let (_, third, _) = offsets.iter().find(|(_, _, en)| en.seq == 3).expect("entry 3");
    let third = *third;
    e.fault.corrupt_byte(&first, third + 9).expect("corrupt");
    expect_corruption(Wal::replay(&*e.fs, &e.dir), &first);
}

/// Point-in-time recovery: a power cut may lose unsynced pages of the last
/// file out of order, leaving a hole followed by intact records. Without a
/// sync mark after the hole nothing proves its bytes were durable: replay
/// ends there. With one after it (a later batch was written once the hole's
/// bytes were fsynced), the hole is damage to durable data: corruption.
#[test]
fn a_hole_in_the_unsynced_tail_ends_replay_but_a_hole_before_a_sync_mark_is_corruption() {
    // Entries 1..=10 synced one by one (a mark before each batch but the
    // first), 11..=20 buffered and written as one batch; with `later`, one
    // more synced batch (21) after it.
    let build = |later: bool| {
        let e = env();
        let wal = open(&e, options());
        let mut appended: Vec<WalEntry> = Vec::new();
        for s in 1..=20 {
            let en = entry(1 + s % 3, s, 1 + (s % 2) as usize);
            let durability = if s <= 10 { Durability::SyncWal } else { Durability::AsyncWal };
            wal.append(&en, durability).expect("append");
            appended.push(en);
        }
        wal.sync().expect("sync the buffered batch");
        if later {
            let en = entry(2, 21, 1);
            wal.append(&en, Durability::SyncWal).expect("append");
            appended.push(en);
        }
        // A crash: a closed WAL ends with a sync mark, which would prove
        // the whole file durable (checked below).
        std::mem::forget(wal);
        (e, appended)
    };
    let punch = |e: &Env, path: &Path, at: u64, len: usize| {
        let mut bytes = e.fs.read_all(path).expect("read");
        bytes[at as usize..at as usize + len].fill(0);
        e.fs.write_atomic(path, &bytes).expect("rewrite");
    };

    // The hole in the last batch: replay ends at it.
    let (e, appended) = build(false);
    let offsets = record_offsets(&e);
    let (path, hole, en) = offsets.iter().find(|(_, _, en)| en.seq == 14).cloned().expect("entry 14");
    let file_len = e.fs.file_size(&path).expect("size");
    punch(&e, &path, hole, en.record_len());
    assert_eq!(e.fs.file_size(&path).expect("size"), file_len, "the records after the hole are intact");
    let r = replay(&e);
    assert_eq!(r.entries, appended[..13], "everything before the hole, nothing after it");
    assert_eq!(r.torn_tail, Some((path.clone(), hole)));
    assert_eq!(r.files.last().expect("files").cut_at, Some(hole));
    // Recovery seals the file at the hole; later runs ignore what is past it.
    let (wal, summary) = Wal::open(e.fs.clone(), &e.dir, options()).expect("recover past the hole");
    assert_eq!(summary.torn_tail, Some((path.clone(), hole)));
    let extra = entry(3, 100, 2);
    wal.append(&extra, Durability::SyncWal).expect("append after recovery");
    drop(wal);
    let mut want = appended[..13].to_vec();
    want.push(extra);
    assert_eq!(replay(&e).entries, want);

    // After a clean close the same hole is corruption: the closing mark
    // says the whole file was fsynced.
    let e = env();
    let wal = open(&e, options());
    for s in 1..=20 {
        let durability = if s <= 10 { Durability::SyncWal } else { Durability::AsyncWal };
        wal.append(&entry(1 + s % 3, s, 1 + (s % 2) as usize), durability).expect("append");
    }
    drop(wal);
    let offsets = record_offsets(&e);
    let (path, at, en) = offsets.iter().find(|(_, _, en)| en.seq == 14).cloned().expect("entry 14");
    punch(&e, &path, at, en.record_len());
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &path);
    assert!(msg.contains("sync mark"), "{msg}");

    // A hole in an earlier, synced batch: marks after it prove it durable.
    let (e, _) = build(false);
    let offsets = record_offsets(&e);
    let (path, at, en) = offsets.iter().find(|(_, _, en)| en.seq == 5).cloned().expect("entry 5");
    punch(&e, &path, at, en.record_len());
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &path);
    assert!(msg.contains(&format!("offset {at}")) && msg.contains("sync mark"), "{msg}");

    // The same hole in the big batch, once a later batch was written: its
    // mark says the batch was fsynced first.
    let (e, appended) = build(true);
    let offsets = record_offsets(&e);
    let (path, hole, en) = offsets.iter().find(|(_, _, en)| en.seq == 14).cloned().expect("entry 14");
    let (_, last_start, _) = offsets.last().cloned().expect("entry 21");
    assert_eq!(offsets.last().expect("entries").2, appended[20]);
    punch(&e, &path, hole, en.record_len());
    let msg = expect_corruption(Wal::replay(&*e.fs, &e.dir), &path);
    assert!(msg.contains(&format!("sync mark at offset {}", last_start - SYNC_MARK_LEN as u64)), "{msg}");
    assert!(matches!(Wal::open(e.fs.clone(), &e.dir, options()), Err(StoreError::Corruption { .. })));
}

#[test]
fn obsolete_files_are_archived_oldest_first_and_maxlogs_names_the_regions_to_flush() {
    let e = env();
    let wal = open(&e, options());
    let put = |region: u64, seqs: std::ops::RangeInclusive<u64>| {
        for s in seqs {
            wal.append(&entry(region, s, 1), Durability::SyncWal).expect("append");
        }
    };
    put(1, 1..=10); // file A: region 1 up to 10, region 2 up to 5
    put(2, 1..=5);
    wal.roll().expect("roll");
    wal.start_flush(1); // a flush of region 1 covers 1..=10
    put(1, 11..=20); // file B: region 1 up to 20, appended while it runs
    assert_eq!(wal.lowest_unflushed(1), Some(1), "the flush has not committed");
    wal.complete_flush(1);
    assert_eq!(wal.lowest_unflushed(1), Some(11));
    wal.roll().expect("roll");
    put(2, 6..=8); // file C (current): region 2 up to 8
    let files = wal.live_files();
    assert_eq!(files.len(), 3);

    assert_eq!(wal.regions_to_flush(2), vec![1, 2], "more than 2 files: flush the regions pinning the oldest");
    assert_eq!(wal.regions_to_flush(3), Vec::<u64>::new());

    // Region 2 has seq 1 unflushed: A must stay, and nothing after it goes.
    assert_eq!(wal.archive_obsolete().expect("archive"), 0);
    // A failed flush of region 2 keeps it pinned.
    wal.start_flush(2);
    wal.abort_flush(2);
    assert_eq!(wal.archive_obsolete().expect("archive"), 0);
    // A needs region 1 past 10 and region 2 past 5; B needs region 1 past 20.
    wal.start_flush(2);
    wal.complete_flush(2);
    let n = wal.archive_obsolete().expect("archive");
    assert_eq!(n, 1, "A goes, B stays");
    let archive = archive_dir(&e.dir);
    assert_eq!(archive, e.dir.parent().expect("a parent").join("oldWALs"), "beside the WAL directory, as HBase's");
    assert!(e.fs.exists(&archive.join(files[0].file_name().expect("name"))).expect("exists"));
    assert!(!e.fs.exists(&files[0]).expect("exists"));
    assert_eq!(wal.regions_to_flush(1), vec![1]);
    // Everything flushed: B goes, C is current and stays.
    wal.start_flush(1);
    wal.complete_flush(1);
    assert_eq!(wal.archive_obsolete().expect("archive"), 1);
    assert_eq!(wal.live_files(), vec![files[2].clone()]);
    assert_eq!(wal.regions_to_flush(0), Vec::<u64>::new(), "the current file cannot be flushed away");
    assert_eq!(wal.stats().files_archived, 2);
    drop(wal);

    // Replay starts at the first live file (its predecessor is archived).
    let r = replay(&e);
    assert_eq!(r.entries.iter().map(|en| (en.region_id, en.seq)).collect::<Vec<_>>(), [(2, 6), (2, 7), (2, 8)]);

    // After recovery the old current file is archivable, and file numbers
    // continue past the archived ones even when no live file is left.
    let (wal, _) = Wal::open(e.fs.clone(), &e.dir, options()).expect("open");
    assert_eq!(wal.archive_obsolete().expect("archive"), 1, "nothing replayed into a region pins it");
    assert!(e.fs.exists(&archive.join(files[2].file_name().expect("name"))).expect("exists"));
    let current = wal.live_files();
    drop(wal);
    e.fs.remove(&current[0]).expect("remove the (empty) live file");
    let (wal, replayed) = Wal::open(e.fs.clone(), &e.dir, options()).expect("open");
    assert!(replayed.entries.is_empty());
    let newest = wal.live_files()[0].clone();
    assert!(newest.file_name() > files[2].file_name(), "{} is numbered after the archived files", newest.display());
    drop(wal);

    // keep_archived off: obsolete files are deleted.
    let (wal, _) = Wal::open(e.fs.clone(), &e.dir, WalOptions { keep_archived: false, ..options() }).expect("open");
    let before = e.fs.list(&archive).expect("list").len();
    wal.append(&entry(3, 1, 1), Durability::SyncWal).expect("append");
    wal.roll().expect("roll");
    let old = wal.live_files();
    let holding_region_3 = old[old.len() - 2].clone();
    wal.archive_obsolete().expect("archive");
    assert!(wal.live_files().contains(&holding_region_3), "region 3 has not flushed: its file stays");
    wal.start_flush(3);
    wal.complete_flush(3);
    wal.archive_obsolete().expect("archive");
    assert_eq!(wal.live_files().len(), 1);
    assert!(old[..old.len() - 1].iter().all(|p| !e.fs.exists(p).expect("exists")), "deleted");
    assert_eq!(e.fs.list(&archive).expect("list").len(), before, "not archived");
}

/// A store written before kept archived files in `<wal dir>/archive`: the
/// open moves them to `oldWALs` (and numbers new files after them), and the
/// old directory is gone; with archives not kept, they are deleted.
#[test]
fn archived_files_in_the_old_place_move_to_old_wals() {
    for keep in [true, false] {
        let e = env();
        let legacy = e.dir.join(LEGACY_ARCHIVE_DIR);
        e.fs.create_dir_all(&legacy).expect("mkdir");
        for number in [3, 7] {
            e.fs.write_atomic(&legacy.join(log_file_name(number)), b"an archived file").expect("write");
        }
        let wal = open(&e, WalOptions { keep_archived: keep, ..options() });
        assert!(!e.fs.exists(&legacy).expect("exists"), "keep {keep}: the old directory is gone");
        let moved = e.fs.exists(&archive_dir(&e.dir)).expect("exists")
            && e.fs.list(&archive_dir(&e.dir)).expect("list") == [log_file_name(3), log_file_name(7)];
        assert_eq!(moved, keep, "keep {keep}: the files are in oldWALs exactly when archives are kept");
        if keep {
            let current = wal.live_files();
            assert_eq!(current, [e.dir.join(log_file_name(8))], "new files are numbered after the archived ones");
        }
    }
}

/// Every successful sync round is timed; a failed one is not.
#[test]
fn sync_rounds_are_timed() {
    let e = env();
    let wal = open(&e, options());
    assert_eq!(wal.sync_latency().rounds, 0);
    for seq in 1..=20 {
        wal.append(&entry(1, seq, 2), Durability::SyncWal).expect("append");
    }
    e.fault.fail(FaultKind::Sync, "wal-", 0, 1);
    assert!(wal.append(&entry(1, 21, 2), Durability::SyncWal).is_err(), "the failed sync fails its append");
    wal.append(&entry(1, 22, 2), Durability::SyncWal).expect("append after a roll");
    let l = wal.sync_latency();
    assert_eq!(l.rounds, wal.stats().syncs, "one timing per successful round: {l:?}");
    assert_eq!(l.rounds, 21);
    assert!(0 < l.p50_us && l.p50_us <= l.p99_us && l.p99_us <= l.max_us, "{l:?}");
    let bounds = [Duration::from_micros(1), Duration::from_millis(1), Duration::from_secs(600)];
    let b = wal.sync_latency_buckets(&bounds);
    assert_eq!(b.count, l.rounds, "the same rounds as buckets: {b:?}");
    assert!(b.cumulative.windows(2).all(|w| w[0] <= w[1]), "cumulative: {b:?}");
    assert_eq!(b.cumulative[2], b.count, "every round took under 10 minutes: {b:?}");
    // The histogram's maximum is within 1 % (2 significant digits).
    let slowest = l.max_us as f64 / 1e6 / 1.01;
    assert!(b.sum.as_secs_f64() >= slowest, "the sum covers the slowest round: {b:?} {l:?}");
}

#[test]
fn malformed_cells_are_refused_before_anything_is_logged() {
    let e = env();
    let wal = open(&e, options());
    let mut bad = entry(1, 1, 2);
    bad.cells[0..4].copy_from_slice(&0xFFFF_FFFFu32.to_be_bytes());
    let err = wal.append(&bad, Durability::SyncWal).expect_err("refused");
    assert!(matches!(err, StoreError::MalformedCell { .. }), "{err}");
    assert!(bad.cells().is_err(), "the iterator refuses it too");
    let truncated = WalEntry::new(1, 1, entry(1, 1, 1).cells[..20].to_vec());
    assert!(wal.append(&truncated, Durability::AsyncWal).is_err());
    let empty = WalEntry::new(1, 2, Vec::new());
    wal.append(&empty, Durability::SyncWal).expect("an entry without cells is harmless");
    assert_eq!(wal.stats().appends, 1);
    drop(wal);
    assert_eq!(replay(&e).entries, vec![empty]);
}

#[test]
fn invalid_options_are_rejected() {
    let e = env();
    for bad in [
        WalOptions { roll_size: 10, ..options() },
        WalOptions { sync_interval: Duration::ZERO, ..options() },
        WalOptions { sync_bytes: 0, ..options() },
    ] {
        let r = Wal::open(e.fs.clone(), &e.dir, bad);
        assert!(matches!(r, Err(StoreError::InvalidOption { .. })));
    }
}
