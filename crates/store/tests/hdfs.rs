//! The store on a real HDFS: a MiniDFSCluster with 3 DataNodes
//! (`hdfs/minicluster`, Hadoop 3.4.2, started by each test on loopback
//! ports chosen at run time). The file-system contract through
//! `hdfs-native`; a store whose WAL and files are on HDFS recovering after
//! a crash (which recovers the WAL's lease first); fencing of a writer whose
//! lease was recovered; a DataNode killed during sustained SYNC_WAL writes.
//!
//! The cluster takes ~20 s to start (more on a first run, which downloads
//! Hadoop through Maven), so these tests are ignored by default; `.ci/run`
//! runs them (`cargo test -p store --test hdfs -- --ignored`).

#[path = "common/mini_hdfs.rs"]
mod mini_hdfs;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mini_hdfs::MiniHdfs;
use store::fs::{FileSystem, HdfsFs};
use store::testing::sync_wal_table;
use store::{Get, Scan, Store, StoreOptions};

fn options(fs: &HdfsFs) -> StoreOptions {
    StoreOptions { fs: Arc::new(fs.clone()), background: false, ..StoreOptions::default() }
}

fn value(store: &Store, row: &str) -> Option<Vec<u8>> {
    store.get("t", &Get::new(row.as_bytes())).expect("get").first().map(|c| c.value.to_vec())
}

#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test hdfs -- --ignored"]
fn the_store_runs_on_hdfs_and_recovers_its_wal_after_a_crash() {
    let cluster = MiniHdfs::start();
    let fs = cluster.fs();

    // The file-system contract.
    let dir = Path::new("/contract");
    fs.create_dir_all(&dir.join("sub")).expect("mkdir");
    let mut f = fs.create(&dir.join("a.tmp")).expect("create");
    f.append(b"hello, ").expect("append");
    f.append(b"hdfs").expect("append");
    f.sync().expect("hsync");
    f.close().expect("close");
    fs.rename(&dir.join("a.tmp"), &dir.join("a")).expect("rename");
    assert!(fs.create(&dir.join("missing").join("x")).is_err(), "create never makes a missing parent");
    fs.write_atomic(&dir.join("b"), b"second").expect("write_atomic replaces nothing");
    fs.write_atomic(&dir.join("b"), b"replaced").expect("write_atomic replaces b");
    assert_eq!(fs.list(dir).expect("list"), ["a", "b", "sub"]);
    let r = fs.open(&dir.join("a")).expect("open");
    let mut buf = [0u8; 4];
    r.read_at(7, &mut buf).expect("positional read");
    assert_eq!(&buf, b"hdfs");
    assert!(r.read_at(9, &mut buf).is_err(), "a read past the end fails");
    assert_eq!(fs.read_all(&dir.join("b")).expect("read"), b"replaced");
    assert_eq!(fs.file_size(&dir.join("a")).expect("size"), 11);
    fs.remove(&dir.join("a")).expect("remove");
    assert!(!fs.exists(&dir.join("a")).expect("exists"));
    fs.remove_dir_all(dir).expect("rmdir");
    assert!(!fs.exists(dir).expect("exists"));

    // A store on HDFS: writes, a flush, a split by reference, more writes
    // only in the WAL, then a crash (dropped without close).
    let root = PathBuf::from("/accordion");
    let store = Store::open(&root, options(&fs)).expect("open on HDFS");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    for i in 0..300 {
        store.put("t", format!("r{i:03}").as_bytes(), &[(b"f", b"q", format!("v{i}").as_bytes())], None).expect("put");
        if i == 150 {
            store.flush_table("t").expect("flush");
            assert!(store.split_region("t", b"r000", Some(b"r100")).expect("split"));
        }
    }
    // A crash: the store is leaked, so its WAL file stays open under the
    // old client's lease, which that client goes on renewing.
    std::mem::forget(store);
    // Recovery, through another client, recovers the WAL's lease first,
    // replays it, and every row is there.
    let (fs2, dir2) = store::fs::resolve_root(&format!("{}{}", cluster.uri, root.display())).expect("root URI");
    let store = Store::open(&dir2, StoreOptions { fs: fs2, background: false, ..StoreOptions::default() })
        .expect("recover on HDFS");
    assert_eq!(store.table_regions("t").expect("regions").len(), 2);
    for i in 0..300 {
        assert_eq!(value(&store, &format!("r{i:03}")), Some(format!("v{i}").into_bytes()), "row {i}");
    }
    store.compact_table("t", true).expect("compact the references away");
    assert_eq!(store.scan("t", Scan::default()).expect("scan").count(), 300);
    store.close().expect("close");
}

/// Once a file's lease is recovered, the writer that held it acknowledges
/// nothing more: its next hsync (or write) fails.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test hdfs -- --ignored"]
fn a_writer_whose_lease_was_recovered_acknowledges_nothing_more() {
    let cluster = MiniHdfs::start();
    let old = cluster.fs();
    let path = Path::new("/fence/wal-1");
    old.create_dir_all(Path::new("/fence")).expect("mkdir");
    let mut w = old.create(path).expect("create");
    w.append(b"acknowledged").expect("append");
    w.sync().expect("hsync");

    // Another process takes over: a separate client recovers the lease.
    let new = cluster.fs();
    new.recover_lease(path).expect("recover the lease");
    assert_eq!(new.read_all(path).expect("read"), b"acknowledged", "every synced byte is there");

    let late = w.append(b"-late").and_then(|()| w.sync());
    assert!(late.is_err(), "the fenced writer's hsync must fail, not acknowledge");
    assert_eq!(new.read_all(path).expect("read"), b"acknowledged", "nothing of the fenced writer got in");
}

/// A DataNode dies during sustained SYNC_WAL writes: the pipeline recovers,
/// writes go on, and no acknowledged write is lost.
///
/// Every HDFS call is limited to 5 s here, so a pipeline that hangs fails
/// its WAL round and the WAL rolls; with `replace-datanode-on-failure`
/// best-effort the pipeline goes on with the two DataNodes left.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test hdfs -- --ignored"]
fn a_datanode_killed_during_writes_loses_no_acknowledged_write() {
    let mut cluster = MiniHdfs::start();
    // A pipeline that hangs fails its call after 5 s; the WAL rolls.
    let fs = HdfsFs::connect_with(&cluster.uri, Duration::from_secs(5)).expect("connect");
    let root = PathBuf::from("/dn-kill");
    let store = Arc::new(
        Store::open(&root, StoreOptions { background: true, region_flush_size: 1 << 20, ..options(&fs) })
            .expect("open"),
    );
    store.create_table(sync_wal_table("t", &["f"]), &[b"m".to_vec()]).expect("create");
    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, acked, failed, stop) = (store.clone(), acked.clone(), failed.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let row = format!("{}{w}-{i:06}", if i.is_multiple_of(2) { "a" } else { "z" });
                    match store.put("t", row.as_bytes(), &[(b"f", b"q", &[b'x'; 200])], None) {
                        Ok(()) => {
                            acked.fetch_add(1, Ordering::Relaxed);
                            mine.push(row);
                        }
                        Err(e) => {
                            if failed.fetch_add(1, Ordering::Relaxed) < 5 {
                                eprintln!("write {row} failed: {e}");
                            }
                        }
                    }
                    i += 1;
                }
                mine
            })
        })
        .collect();
    let wait_for = |n: u64| {
        let deadline = Instant::now() + Duration::from_secs(150);
        let start = acked.load(Ordering::Relaxed);
        while acked.load(Ordering::Relaxed) < start + n {
            assert!(
                Instant::now() < deadline,
                "writes stalled: {} acknowledged, {} failed",
                acked.load(Ordering::Relaxed),
                failed.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(500);
    cluster.command("stop-datanode 1");
    let after_kill = acked.load(Ordering::Relaxed);
    wait_for(1000);
    stop.store(true, Ordering::Release);
    let rows: Vec<String> = writers.into_iter().flat_map(|w| w.join().expect("writer")).collect();
    eprintln!(
        "{} acknowledged ({} after the kill), {} failed",
        rows.len(),
        acked.load(Ordering::Relaxed) - after_kill,
        failed.load(Ordering::Relaxed)
    );
    let store = Arc::into_inner(store).expect("writers are done");
    // Closed without a flush: everything since the last flush is in the
    // WAL only, which recovery must replay.
    drop(store);
    // Until the NameNode declares the DataNode dead (~12 s here), it still
    // places new blocks on it, and hdfs-native cannot exclude a DataNode
    // when it sets up a new block's pipeline: opening (a new WAL file, the
    // flush of what was replayed) fails with a clear error meanwhile.
    let started = Instant::now();
    let mut refused = 0;
    let store = loop {
        match Store::open(&root, options(&fs)) {
            Ok(store) => break store,
            Err(e) => {
                assert!(started.elapsed() < Duration::from_secs(90), "recovery still failing: {e}");
                refused += 1;
                if refused == 1 {
                    eprintln!("recovery refused while the dead DataNode is still listed: {e}");
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    };
    eprintln!("recovered after {:.1} s ({refused} refused attempts)", started.elapsed().as_secs_f64());
    for row in &rows {
        assert!(value(&store, row).is_some(), "acknowledged row {row} lost");
    }
    store.close().expect("close");
}

/// The NameNode goes away: writes fail with an error naming what failed
/// (within the call limit, never a hang), nothing they were not
/// acknowledged for counts as written, and once the NameNode is back the
/// WAL rolls to a new file and writes go on. Every acknowledged row
/// survives a crash and recovery afterwards.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test hdfs -- --ignored"]
fn writes_fail_clearly_while_the_namenode_is_down_and_resume_when_it_is_back() {
    let mut cluster = MiniHdfs::start();
    let fs = HdfsFs::connect_with(&cluster.uri, Duration::from_secs(5)).expect("connect");
    let root = PathBuf::from("/nn-down");
    let store = Store::open(&root, options(&fs)).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let put = |store: &Store, i: usize| store.put("t", format!("r{i:04}").as_bytes(), &[(b"f", b"q", b"v")], None);
    let mut acked = Vec::new();
    for i in 0..100 {
        put(&store, i).expect("put");
        acked.push(i);
    }

    cluster.command("stop-namenode");
    let mut errors = Vec::new();
    for i in 100..103 {
        let started = Instant::now();
        match put(&store, i) {
            Ok(()) => acked.push(i), // written before the NameNode was missed
            Err(e) => errors.push((e.to_string(), started.elapsed())),
        }
    }
    assert!(!errors.is_empty(), "writes without a NameNode must fail");
    for (e, took) in &errors {
        assert!(e.contains("HDFS") || e.contains("WAL"), "the error says what failed: {e}");
        assert!(*took < Duration::from_secs(30), "a failed write returns, it does not hang ({took:?})");
    }
    eprintln!("while the NameNode was down: {:?}", errors);

    cluster.command("restart-namenode");
    let started = Instant::now();
    let mut i = 103;
    loop {
        match put(&store, i) {
            Ok(()) => {
                acked.push(i);
                break;
            }
            Err(e) => assert!(started.elapsed() < Duration::from_secs(90), "writes did not resume: {e}"),
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("writes resumed {:.1} s after the NameNode restarted", started.elapsed().as_secs_f64());
    for i in i + 1..i + 101 {
        put(&store, i).expect("put after the NameNode is back");
        acked.push(i);
    }
    drop(store); // without a flush: the WAL holds the rows since the last one
    let store = Store::open(&root, options(&fs)).expect("recover");
    for i in &acked {
        assert_eq!(value(&store, &format!("r{i:04}")), Some(b"v".to_vec()), "acknowledged row {i}");
    }
    store.close().expect("close");
}

/// Pauses the store being opened once it has fenced the earlier instances'
/// WAL directories: it says so on `fenced` and waits for `go`.
struct PauseWhenFenced {
    fenced: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl store::hooks::WriteHooks for PauseWhenFenced {
    fn at(&self, point: store::hooks::HookPoint, _region: u64) -> store::Result<()> {
        if point == store::hooks::HookPoint::WalDirsFenced {
            let _ = self.fenced.lock().expect("lock").send(());
            let _ = self.go.lock().expect("lock").recv();
        }
        Ok(())
    }
}

/// A zombie: the store that wrote the WAL is still running when another
/// process opens the same root (a paused or partitioned server whose
/// regions are taken over). The new owner fences the zombie's WAL
/// directory (renamed to `-splitting`) and recovers its files' leases
/// before it reads them; the zombie writes while the owner is paused right
/// there. Its next write fails, and so does every later one: its WAL cannot
/// roll into a directory that no longer exists (with per-file fencing alone
/// it rolled to a new file in its directory and acknowledged writes the new
/// owner never read). The new owner has every row the zombie acknowledged.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test hdfs -- --ignored"]
fn a_zombie_whose_wal_directory_was_taken_over_acknowledges_nothing_more() {
    let cluster = MiniHdfs::start();
    let root = PathBuf::from("/zombie");
    let old_fs = HdfsFs::connect_with(&cluster.uri, Duration::from_secs(10)).expect("connect");
    let zombie = Store::open(&root, options(&old_fs)).expect("open");
    zombie.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let put = |store: &Store, i: usize| store.put("t", format!("r{i:04}").as_bytes(), &[(b"f", b"q", b"v")], None);
    let mut acked: Vec<usize> = Vec::new();
    for i in 0..100 {
        put(&zombie, i).expect("put");
        acked.push(i);
    }
    let zombie_dir = zombie.wal().dir().to_path_buf();

    // Another process opens the root while the zombie still runs, and
    // stops once it has fenced the zombie's directory.
    let (fenced_tx, fenced) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    let hooks =
        Arc::new(PauseWhenFenced { fenced: std::sync::Mutex::new(fenced_tx), go: std::sync::Mutex::new(go_rx) });
    let new_fs = cluster.fs();
    let opening = std::thread::spawn({
        let (root, new_fs) = (root.clone(), new_fs.clone());
        move || Store::open(&root, StoreOptions { hooks: Some(hooks), ..options(&new_fs) })
    });
    fenced.recv_timeout(Duration::from_secs(120)).expect("the new owner fenced the zombie's WAL directory");
    assert!(!new_fs.exists(&zombie_dir).expect("exists"), "the zombie's WAL directory was renamed away");
    let mut late_acks = Vec::new();
    for i in 100..120 {
        if put(&zombie, i).is_ok() {
            late_acks.push(i);
        }
    }
    go.send(()).expect("resume the open");
    let owner = opening.join().expect("the open did not panic").expect("take over");

    assert!(late_acks.is_empty(), "the fenced zombie acknowledged writes {late_acks:?}");
    for i in &acked {
        assert_eq!(value(&owner, &format!("r{i:04}")), Some(b"v".to_vec()), "acknowledged row {i}");
    }
    for i in 100..120 {
        assert_eq!(value(&owner, &format!("r{i:04}")), None, "row {i} was never acknowledged");
    }
    // The new owner writes on; its WAL is its own.
    put(&owner, 200).expect("the owner writes");
    assert_ne!(owner.wal().dir(), zombie_dir.as_path());
    old_fs.sever();
    drop(zombie);
    owner.close().expect("close");
}
