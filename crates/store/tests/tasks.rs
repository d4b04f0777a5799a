//! What `Store::metrics` says of the background work while it happens: a
//! flush held just before its commit is a task in progress (and leaves the
//! list when it ends), and a region whose flush request waits for the only
//! flusher thread counts in the flush queue's length — made deterministic
//! by a hook that holds every commit of a store file.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

#[path = "common/hold.rs"]
mod hold;

use hold::Hold;
use store::hooks::HookPoint;
use store::tasks::TaskKind;
use store::{FamilyDescriptor, Store, StoreOptions, TableDescriptor};

/// Bounds every wait: never reached when the store works.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A store with one flusher thread whose flushes and compactions `Hold`
/// holds when their file is written, before their commit, and table `t`
/// (family `f`) split at `b`.
fn open_held(tmp: &tempfile::TempDir, region_flush_size: u64) -> (Store, Arc<Hold>, Receiver<u64>) {
    let (hooks, arrivals) = Hold::at(HookPoint::BeforeManifestCommit);
    let options = StoreOptions {
        region_flush_size,
        memory_budget: 1 << 30,
        flusher_threads: 1,
        hooks: Some(hooks.clone()),
        ..StoreOptions::default()
    };
    let store = Store::open(tmp.path().join("store"), options).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[b"b".to_vec()]).expect("create");
    (store, hooks, arrivals)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_running_flush_is_a_task_in_progress_until_it_ends() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, hooks, arrivals) = open_held(&tmp, 64 << 20);
    store.put("t", b"a1", &[(b"f", b"q", b"v")], None).expect("put");
    let idle = store.metrics();
    assert_eq!((idle.totals.flushes_in_progress, idle.tasks.len()), (0, 0), "{:?}", idle.tasks);

    let flusher = std::thread::spawn({
        let store = store.clone();
        move || store.flush_region("t", b"a1")
    });
    arrivals.recv_timeout(TIMEOUT).expect("the flush reaches its commit");
    let running = store.metrics();
    assert_eq!(running.totals.flushes_in_progress, 1);
    assert_eq!(running.totals.in_progress(TaskKind::Flush), 1);
    assert_eq!(running.totals.compactions_in_progress + running.totals.splits_in_progress, 0);
    let [task] = running.tasks.as_slice() else { panic!("one task: {:?}", running.tasks) };
    assert_eq!(task.kind, TaskKind::Flush);
    assert!(task.target.starts_with("t/") && task.target.ends_with("/f"), "{task:?}");

    hooks.release_all();
    flusher.join().expect("flusher").expect("flush");
    let done = store.metrics();
    assert_eq!((done.totals.flushes_in_progress, done.tasks.len()), (0, 0), "{:?}", done.tasks);
    store.close().expect("close");
}

#[test]
fn a_flush_request_waiting_for_the_flusher_thread_counts_in_the_queue() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Regions flush at 1 MiB; one flusher thread.
    let (store, hooks, arrivals) = open_held(&tmp, 1 << 20);
    let value = vec![b'v'; 1024];
    let fill = |prefix: &str| {
        for i in 0..1100 {
            store.put("t", format!("{prefix}{i:05}").as_bytes(), &[(b"f", b"q", &value)], None).expect("put");
        }
    };
    fill("a");
    arrivals.recv_timeout(TIMEOUT).expect("region a's flush runs and is held at its commit");
    // A write to region a between the thread taking its request and the
    // snapshot may have queued region a again: count from here.
    let before = store.metrics().totals.flush_queue_length;
    assert!(before <= 1, "{before}");
    fill("c");
    let queued = store.metrics().totals;
    assert_eq!(queued.flush_queue_length, before + 1, "region c waits for the busy thread: {queued:?}");
    assert_eq!(queued.flushes_in_progress, 1);

    hooks.release_all();
    wait_until("both flushes ran", || {
        let t = store.metrics().totals;
        t.flush_queue_length == 0 && t.flushes_in_progress == 0 && t.disk_flushes >= 2
    });
    store.close().expect("close");
}
