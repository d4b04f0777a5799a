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
//!
//! Splits and merges are fenced the same way: a split whose lease ran out
//! before it started, or just before its commit point (the parent's
//! `.split` marker, once both daughters are written), and a merge whose
//! lease ran out before it started or at its commit point (the merged
//! region's `.regioninfo`), are refused with `Fenced`; nothing on disk
//! names a new region or retires a parent, and a new owner opens the
//! original regions with every row.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use store::error::StoreError;
use store::hooks::{HookPoint, WriteHooks};
use store::layout::{Marker, REGION_INFO};
use store::options::CommitFence;
use store::testing::StoreBuilder;
use store::wal::Durability;
use store::{FamilyDescriptor, Get, RegionInfo, Store, TableDescriptor};

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
    member_fenced_by(root, name, pause.map(|p| p as Arc<dyn WriteHooks>), valid.map(lease_fence))
}

/// A fence that allows while `valid` holds.
fn lease_fence(valid: Arc<AtomicBool>) -> CommitFence {
    Arc::new(move || if valid.load(Ordering::SeqCst) { Ok(()) } else { Err("lease expired".into()) })
}

fn member_fenced_by(
    root: &Path,
    name: &str,
    hooks: Option<Arc<dyn WriteHooks>>,
    commit_fence: Option<CommitFence>,
) -> Store {
    StoreBuilder::new()
        .member(name)
        .flush_only_when_asked()
        .with(|o| {
            o.hooks = hooks;
            o.commit_fence = commit_fence;
        })
        .open(root)
        .unwrap_or_else(|e| panic!("open member {name}: {e}"))
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
    for region in std::fs::read_dir(root.join("data/default/t")).expect("table dir") {
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
    b.as_member().expect("a member").recover_server("host-a,16020,1").expect("recover A's WAL");
    for r in b.all_regions() {
        b.as_member().expect("a member").assign_region(&r.info().dir_name()).expect("assign on B");
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
        c.as_member().expect("a member").assign_region(&r.info().dir_name()).expect("assign on C");
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

/// When the lease of the server splitting or merging runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaseRunsOut {
    /// Before the call: its first commit is refused (the manifest commit
    /// of the flush it begins with, which commits even with nothing new).
    BeforeTheCall,
    /// With everything but the commit written: a split's daughters (each
    /// with its `.regioninfo`) before the parent's `.split` marker, a
    /// merge's references and manifests before the merged `.regioninfo`.
    AtTheCommitPoint,
}

const A: &str = "host-a,16020,1";

/// How many regions of table `t` on `root` are split daughters with their
/// `.regioninfo` in place (none exist before the split under test).
fn committed_daughters(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root.join("data/default/t")) else { return 0 };
    entries
        .filter_map(|e| std::fs::read(e.ok()?.path().join(REGION_INFO)).ok())
        .filter_map(|bytes| serde_json::from_slice::<RegionInfo>(&bytes).ok())
        .filter(|info| info.parent.is_some())
        .count()
}

/// Nothing of a refused split or merge is committed on disk: no region
/// directory but the `original` ones holds a `.regioninfo` (a reopen would
/// adopt it, or retire the parents it names), and no original region
/// carries a `.split` or `.merged` marker (a reopen would retire it).
fn assert_nothing_committed(root: &Path, original: &[RegionInfo], what: &str) {
    let table_dir = root.join("data/default/t");
    let original_dirs: Vec<String> = original.iter().map(|r| r.dir_name()).collect();
    for entry in std::fs::read_dir(&table_dir).expect("table dir") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if !original_dirs.contains(&name) {
            let info = table_dir.join(&name).join(REGION_INFO);
            assert!(!info.exists(), "{what}: {} was committed", info.display());
        }
    }
    for dir in &original_dirs {
        for marker in [Marker::Split.file_name(), Marker::Merged.file_name()] {
            let path = table_dir.join(dir).join(marker);
            assert!(!path.exists(), "{what}: {} retires an original region", path.display());
        }
    }
}

/// A new owner (with a valid lease) of A's regions after A is gone: it
/// recovers A's WAL and opens every region on the root. The table has
/// exactly its `original` regions, and every row.
fn assert_a_new_owner_finds_the_original_regions(root: &Path, original: &[RegionInfo], what: &str) {
    let b = member(root, "host-b,16020,2", None, Some(Arc::new(AtomicBool::new(true))));
    b.as_member().expect("a member").recover_server(A).expect("recover A's WAL");
    assert_eq!(b.table_regions("t").expect("regions"), original, "{what}: the regions on the root");
    for r in b.all_regions() {
        b.as_member().expect("a member").assign_region(&r.info().dir_name()).expect("assign on B");
    }
    assert_rows(&b, 300, &format!("{what}: on the new owner"));
    b.close().expect("close B");
}

/// Server A holds table `t` (split at `split_keys`) with 300 rows in
/// flushed files, so a split or merge has files to refer to.
fn a_with_flushed_rows(
    root: &Path,
    hooks: Option<Arc<dyn WriteHooks>>,
    fence: CommitFence,
    split_keys: &[Vec<u8>],
) -> Store {
    let a = member_fenced_by(root, A, hooks, Some(fence));
    a.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), split_keys).expect("create");
    write(&a, 0, 300);
    a.flush_table("t").expect("flush");
    a
}

fn a_split_after_the_lease_ran_out_commits_nothing(when: LeaseRunsOut) {
    let what = format!("split, lease runs out {when:?}");
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().to_path_buf();
    let valid = Arc::new(AtomicBool::new(true));
    // No hook point lies between the daughters' commits and the marker's,
    // but the fence itself is asked there: the first time it is asked with
    // both daughters committed is for the marker, so that is when it lets
    // the lease run out.
    let fence: CommitFence = {
        let (valid, root) = (valid.clone(), root.clone());
        Arc::new(move || {
            if when == LeaseRunsOut::AtTheCommitPoint && committed_daughters(&root) == 2 {
                valid.store(false, Ordering::SeqCst);
            }
            if valid.load(Ordering::SeqCst) { Ok(()) } else { Err("lease expired".into()) }
        })
    };
    let a = a_with_flushed_rows(&root, None, fence, &[]);
    let original = a.table_regions("t").expect("regions");
    if when == LeaseRunsOut::BeforeTheCall {
        valid.store(false, Ordering::SeqCst);
    }
    match a.split_region("t", b"row00000", Some(b"row00150")) {
        Err(StoreError::Fenced(why)) => assert!(why.contains("lease expired"), "{what}: {why}"),
        other => panic!("{what}: a split after the lease ran out must be refused, got {other:?}"),
    }
    if when == LeaseRunsOut::AtTheCommitPoint {
        // The fence was asked with both daughters committed: what it
        // refused was the marker.
        assert!(!valid.load(Ordering::SeqCst), "{what}: the split never had both daughters committed");
    }
    assert_eq!(a.table_regions("t").expect("regions"), original, "{what}: A's regions");
    assert_nothing_committed(&root, &original, &what);
    drop(a);
    assert_a_new_owner_finds_the_original_regions(&root, &original, &what);
}

#[test]
fn a_split_started_after_the_lease_ran_out_commits_nothing() {
    a_split_after_the_lease_ran_out_commits_nothing(LeaseRunsOut::BeforeTheCall);
}

/// The `.split` marker is the split's commit point: daughters complete
/// with their `.regioninfo` are still not a split without it.
#[test]
fn a_split_whose_lease_ran_out_before_its_marker_commits_nothing() {
    a_split_after_the_lease_ran_out_commits_nothing(LeaseRunsOut::AtTheCommitPoint);
}

/// Lets the lease run out when a merge reaches its commit point.
struct LeaseRunsOutBeforeTheMergeCommits {
    valid: Arc<AtomicBool>,
}

impl WriteHooks for LeaseRunsOutBeforeTheMergeCommits {
    fn at(&self, point: HookPoint, _region: u64) -> store::Result<()> {
        if point == HookPoint::MergeBeforeCommit {
            self.valid.store(false, Ordering::SeqCst);
        }
        Ok(())
    }
}

fn a_merge_after_the_lease_ran_out_commits_nothing(when: LeaseRunsOut) {
    let what = format!("merge, lease runs out {when:?}");
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let valid = Arc::new(AtomicBool::new(true));
    let hooks = (when == LeaseRunsOut::AtTheCommitPoint)
        .then(|| Arc::new(LeaseRunsOutBeforeTheMergeCommits { valid: valid.clone() }) as Arc<dyn WriteHooks>);
    let a = a_with_flushed_rows(root, hooks, lease_fence(valid.clone()), &[b"row00150".to_vec()]);
    let original = a.table_regions("t").expect("regions");
    assert_eq!(original.len(), 2, "{what}: two regions to merge");
    if when == LeaseRunsOut::BeforeTheCall {
        valid.store(false, Ordering::SeqCst);
    }
    match a.merge_regions(&original[0].dir_name(), &original[1].dir_name()) {
        Err(StoreError::Fenced(why)) => assert!(why.contains("lease expired"), "{what}: {why}"),
        other => panic!("{what}: a merge after the lease ran out must be refused, got {other:?}"),
    }
    if when == LeaseRunsOut::AtTheCommitPoint {
        assert!(!valid.load(Ordering::SeqCst), "{what}: the merge never reached its commit point");
    }
    assert_eq!(a.table_regions("t").expect("regions"), original, "{what}: A's regions");
    assert_nothing_committed(root, &original, &what);
    drop(a);
    assert_a_new_owner_finds_the_original_regions(root, &original, &what);
}

#[test]
fn a_merge_started_after_the_lease_ran_out_commits_nothing() {
    a_merge_after_the_lease_ran_out_commits_nothing(LeaseRunsOut::BeforeTheCall);
}

#[test]
fn a_merge_whose_lease_ran_out_at_its_commit_point_commits_nothing() {
    a_merge_after_the_lease_ran_out_commits_nothing(LeaseRunsOut::AtTheCommitPoint);
}

/// DDL commits too: a server whose lease ran out alters, enables and
/// deletes nothing on the root — the table's descriptor (`.tabledesc`) and
/// its directories stay as they were, and a new owner finds the table with
/// every row.
#[test]
fn ddl_after_the_lease_ran_out_commits_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().to_path_buf();
    let valid = Arc::new(AtomicBool::new(true));
    let a = a_with_flushed_rows(&root, None, lease_fence(valid.clone()), &[]);
    let descriptor = root.join("data/default/t/.tabledesc");
    let read = || std::fs::read(&descriptor).expect("the table's descriptor");
    let fenced = |what: &str, result: Result<(), StoreError>| match result {
        Err(StoreError::Fenced(why)) => assert!(why.contains("lease expired"), "{what}: {why}"),
        other => panic!("{what} after the lease ran out must be refused, got {other:?}"),
    };

    // In a cluster a table is altered disabled.
    a.disable_table("t").expect("disable with the lease");
    let disabled = read();
    valid.store(false, Ordering::SeqCst);
    let mut altered = a.describe_table("t").expect("describe");
    altered.families.push(FamilyDescriptor::new("g"));
    fenced("an alter", a.alter_table(altered));
    assert_eq!(read(), disabled, "the refused alter rewrote the descriptor");
    for region in a.table_regions("t").expect("regions") {
        assert!(!root.join("data/default/t").join(region.dir_name()).join("g").exists(), "the refused alter made g");
    }
    fenced("an enable", a.enable_table("t"));
    assert_eq!(read(), disabled, "the refused enable rewrote the descriptor");
    fenced("a delete", a.delete_table("t"));
    assert_eq!(read(), disabled, "the refused delete removed the table");
    drop(a);

    let b = member(&root, "host-b,16020,2", None, Some(Arc::new(AtomicBool::new(true))));
    b.as_member().expect("a member").recover_server(A).expect("recover A's WAL");
    assert!(!b.is_table_enabled("t").expect("t on the root"), "t is disabled, as A left it");
    let families: Vec<String> = b.describe_table("t").expect("describe").families.into_iter().map(|f| f.name).collect();
    assert_eq!(families, ["f"], "no family of the refused alter");
    b.enable_table("t").expect("enable on B");
    for r in b.all_regions() {
        b.as_member().expect("a member").assign_region(&r.info().dir_name()).expect("assign on B");
    }
    assert_rows(&b, 300, "on the new owner");
    b.close().expect("close B");
}
