//! `Compactor`: runs disk compactions in background threads — minor ones
//! chosen by the exploring policy after flushes, and major ones on request.
//!
//! Thread safety: requests go through a channel, deduplicated per store;
//! each family store allows one compaction at a time itself. Worker threads
//! hold only a weak reference to the store.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;

use crate::compaction_policy::select_exploring;
use crate::error::Result;
use crate::family_store::FamilyStore;
use crate::options::StoreOptions;
use crate::region::Region;
use crate::store::StoreInner;

enum CompactionTask {
    Store(Arc<Region>, Arc<FamilyStore>),
    Stop,
}

pub(crate) struct Compactor {
    sender: Sender<CompactionTask>,
    receiver: Receiver<CompactionTask>,
    pending: Mutex<HashSet<(u64, String)>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopped: AtomicBool,
    thread_count: usize,
    pub(crate) failures: AtomicU64,
}

impl Compactor {
    pub(crate) fn new(options: &StoreOptions) -> Compactor {
        let (sender, receiver) = unbounded();
        Compactor {
            sender,
            receiver,
            pending: Mutex::new(HashSet::new()),
            threads: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            thread_count: options.compaction_threads.max(1),
            failures: AtomicU64::new(0),
        }
    }

    pub(crate) fn start(inner: &Arc<StoreInner>) {
        let mut threads = inner.compactor.threads.lock();
        for i in 0..inner.compactor.thread_count {
            let weak = Arc::downgrade(inner);
            let receiver = inner.compactor.receiver.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("compactor-{i}"))
                    .spawn(move || run(weak, receiver))
                    .expect("spawn compaction thread"),
            );
        }
    }

    pub(crate) fn stop(&self) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for _ in &threads {
            let _ = self.sender.send(CompactionTask::Stop);
        }
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }

    /// Queues a minor compaction check of `store`.
    pub(crate) fn request(&self, region: &Arc<Region>, store: &Arc<FamilyStore>) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        if self.pending.lock().insert((region.info().id, store.name().to_string())) {
            let _ = self.sender.send(CompactionTask::Store(region.clone(), store.clone()));
        }
    }
}

/// Compacts `store` of `region` now: every file when `major`, else the
/// exploring policy's choice — or every file when the store still reads
/// through references to a split parent (HBase compacts a daughter's
/// references away first). Once a daughter no longer refers to its parent,
/// the parent's directory goes if its other daughter does not either.
/// Returns whether a compaction ran.
pub(crate) fn compact_store(
    inner: &StoreInner,
    region: &Region,
    store: &Arc<FamilyStore>,
    major: bool,
) -> Result<bool> {
    let cfg = &inner.options.compaction;
    let had_references = store.has_references();
    let done = store.compact_selected(major, |files| {
        if had_references {
            return Some(files.to_vec());
        }
        let sizes: Vec<u64> = files.iter().map(|f| f.info().file_size).collect();
        select_exploring(&sizes, cfg).map(|range| files[range].to_vec())
    })?;
    if had_references {
        for parent in region.info().parents() {
            crate::retired_parents::remove_parent_if_unreferenced(inner, &region.info().table, parent)?;
        }
    }
    Ok(done.is_some())
}

fn run(weak: Weak<StoreInner>, receiver: Receiver<CompactionTask>) {
    while let Ok(task) = receiver.recv() {
        let Some(inner) = weak.upgrade() else { return };
        let CompactionTask::Store(region, store) = task else { return };
        inner.compactor.pending.lock().remove(&(region.info().id, store.name().to_string()));
        if region.is_closed() || inner.compactor.stopped.load(Ordering::Acquire) {
            continue;
        }
        match compact_store(&inner, &region, &store, false) {
            Ok(true) => {
                // More may be worth doing (the store may still have many files).
                if store.files().len() >= inner.options.compaction.min_files {
                    inner.compactor.request(&region, &store);
                }
            }
            Ok(false) => {}
            Err(e) => {
                inner.compactor.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(region = region.info().id, family = store.name(), error = %e, "compaction failed; inputs are untouched");
            }
        }
    }
}
