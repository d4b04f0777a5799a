//! Commits are fenced (`StoreOptions::commit_fence`): a region server that
//! can no longer prove its membership commits nothing over the files of
//! the server that took its regions over.
//!
//! The race, made deterministic with a pause point: server A's flush or
//! compaction has written its new store file and is held just before its
//! MANIFEST commit (`HookPoint::BeforeManifestCommit`); meanwhile A's lease
//! runs out, B recovers A's WAL, opens the region (removing A's new file,
//! which no manifest names) and writes; then A goes on. Without the fence A's
//! manifest was committed naming the file B removed: the region no longer
//! opened anywhere (and a compaction's manifest dropped the files it
//! replaced). With it, A's commit is refused with `Fenced`, every manifest
//! names only files that exist, and every row is there, on B and on a
//! third server opened after B closed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use store::error::StoreError;
use store::fs::{FileSystem, LocalFs};
use store::hooks::{HookPoint, WriteHooks};
use store::wal::Durability;
use store::{FamilyDescriptor, Get, Store, StoreOptions, TableDescriptor};

fn ids() -> store::RegionIdSource {
    static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
    Arc::new(|| Ok(NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Holds the first manifest commit after [`Pause::arm`] until
/// [`Pause::release`].
#[derive(Default)]
struct Pause {
    state: Mutex<(bool, bool, bool)>, // armed, held, released
    cv: Condvar,
}

impl Pause {
    fn arm(&self) {
        self.state.lock().0 = true;
    }

    fn wait_held(&self) -> bool {
        let mut s = self.state.lock();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !s.1 {
            if self.cv.wait_until(&mut s, deadline).timed_out() {
                return false;
            }
        }
        true
    }

    fn release(&self) {
        self.state.lock().2 = true;
        self.cv.notify_all();
    }
}

impl WriteHooks for Pause {
    fn at(&self, point: HookPoint, _region: u64) -> store::Result<()> {
        if point != HookPoint::BeforeManifestCommit {
            return Ok(());
        }
        let mut s = self.state.lock();
        if !s.0 {
            return Ok(());
        }
        s.0 = false;
        s.1 = true;
        self.cv.notify_all();
        while !s.2 {
            self.cv.wait(&mut s);
        }
        Ok(())
    }
}

fn member(root: &Path, name: &str, pause: Option<Arc<Pause>>, valid: Option<Arc<AtomicBool>>) -> Store {
    let options = StoreOptions {
        fs: Arc::new(LocalFs) as Arc<dyn FileSystem>,
        hooks: pause.map(|p| p as Arc<dyn WriteHooks>),
        background: false,
        region_flush_size: 1 << 30,
        memory_budget: 1 << 30,
        member: Some(name.to_string()),
        region_ids: Some(ids()),
        commit_fence: valid.map(|v| -> store::options::CommitFence {
            Arc::new(move || if v.load(Ordering::SeqCst) { Ok(()) } else { Err("lease expired".into()) })
        }),
        ..StoreOptions::default()
    };
    Store::open(root, options).unwrap_or_else(|e| panic!("open member {name}: {e}"))
}

fn write(store: &Store, from: usize, to: usize) {
    for i in from..to {
        let k = format!("row{i:05}");
        store.put("t", k.as_bytes(), &[(b"f", b"q", k.as_bytes())], None).expect("acknowledged put");
    }
}

fn assert_rows(store: &Store, n: usize, when: &str) {
    for i in 0..n {
        let k = format!("row{i:05}");
        let cells = store.get("t", &Get::new(k.as_bytes())).expect("get");
        assert_eq!(cells.len(), 1, "{when}: row {k} is missing");
        assert_eq!(cells[0].value, k.as_bytes(), "{when}: row {k}");
    }
}

/// Every family manifest under the root names only files that exist.
fn assert_manifests_name_existing_files(root: &Path, held: Held) {
    for region in std::fs::read_dir(root.join("data/t")).expect("table dir") {
        let family = region.expect("entry").path().join("f");
        let Ok(text) = std::fs::read_to_string(family.join("MANIFEST")) else { continue };
        let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest");
        for file in manifest["files"].as_array().expect("files") {
            let name = file.as_str().expect("name");
            assert!(family.join(name).exists(), "{held:?}: {} names {name}, which is gone", family.display());
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Held {
    Flush,
    Compaction,
}

fn a_held_commit_after_the_lease_ran_out_commits_nothing(held: Held) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let valid = Arc::new(AtomicBool::new(true));
    let pause = Arc::new(Pause::default());
    let a = Arc::new(member(root, "host-a,16020,1", Some(pause.clone()), Some(valid.clone())));
    let desc = TableDescriptor {
        durability: Durability::SyncWal,
        ..TableDescriptor::new("t", vec![FamilyDescriptor::new("f")])
    };
    a.create_table(desc, &[]).expect("create");
    write(&a, 0, 100);
    a.flush_table("t").expect("flush");
    write(&a, 100, 200);
    if matches!(held, Held::Compaction) {
        a.flush_table("t").expect("flush");
    }
    pause.arm();
    let running = {
        let a = a.clone();
        std::thread::spawn(move || match held {
            Held::Flush => a.flush_table("t"),
            Held::Compaction => a.compact_table("t", true),
        })
    };
    assert!(pause.wait_held(), "{held:?}: A reaches its MANIFEST commit");

    // A's session expires: its lease runs out, and B takes its regions over.
    valid.store(false, Ordering::SeqCst);
    let b = member(root, "host-b,16020,2", None, None);
    b.recover_server("host-a,16020,1").expect("recover A's WAL");
    for r in b.all_regions() {
        b.assign_region(&r.info().dir_name()).expect("assign on B");
    }
    write(&b, 200, 300);

    // A's held commit goes on, and is refused.
    pause.release();
    match running.join().expect("A's thread") {
        Err(StoreError::Fenced(why)) => assert!(why.contains("lease expired"), "{why}"),
        other => panic!("{held:?}: A's commit after its lease ran out must be refused, got {other:?}"),
    }
    assert_manifests_name_existing_files(root, held);
    b.flush_table("t").expect("B flushes");
    assert_manifests_name_existing_files(root, held);
    assert_rows(&b, 300, &format!("{held:?}: on B"));
    drop(a);
    b.close().expect("close B");
    let c = member(root, "host-c,16020,3", None, None);
    for r in c.all_regions() {
        c.assign_region(&r.info().dir_name()).expect("assign on C");
    }
    assert_rows(&c, 300, &format!("{held:?}: on C after B closed"));
}

#[test]
fn a_flush_held_past_the_lease_commits_nothing_over_the_new_owner() {
    a_held_commit_after_the_lease_ran_out_commits_nothing(Held::Flush);
}

#[test]
fn a_compaction_held_past_the_lease_commits_nothing_over_the_new_owner() {
    a_held_commit_after_the_lease_ran_out_commits_nothing(Held::Compaction);
}

/// The fence is asked at the commit, not at the start: with a valid lease
/// the same flush commits.
#[test]
fn a_member_with_its_lease_commits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let valid = Arc::new(AtomicBool::new(true));
    let a = member(tmp.path(), "host-a,16020,1", None, Some(valid));
    a.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    write(&a, 0, 50);
    a.flush_table("t").expect("a flush with a valid lease commits");
    a.compact_table("t", true).expect("so does a compaction");
    assert_rows(&a, 50, "after the flush");
}
