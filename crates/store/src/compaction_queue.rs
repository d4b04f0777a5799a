//! `CompactionQueue`: the compaction threads' queue — requests, their
//! deduplication and the failure counter. What a compaction job does is
//! `compactor.rs`; this module knows nothing of the store around it.
//!
//! Thread safety: requests go through a channel, deduplicated per store of
//! one region *instance*: a region reopened under the same id is a new
//! instance whose request (for example the compaction of its references)
//! is not swallowed by a request still queued for the old one. Each family
//! store allows one compaction at a time itself.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;

use crate::family_store::FamilyStore;
use crate::region::Region;

/// What a compaction thread is asked to do.
pub(crate) enum CompactionTask {
    Store(Arc<Region>, Arc<FamilyStore>),
    Stop,
}

/// A queued request's identity: the region instance and the family.
type PendingKey = (usize, String);

fn key(region: &Arc<Region>, store: &FamilyStore) -> PendingKey {
    (Arc::as_ptr(region) as usize, store.name().to_string())
}

pub(crate) struct CompactionQueue {
    sender: Sender<CompactionTask>,
    receiver: Receiver<CompactionTask>,
    pending: Mutex<HashSet<PendingKey>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopped: AtomicBool,
    thread_count: usize,
    failures: AtomicU64,
}

impl CompactionQueue {
    pub(crate) fn new(thread_count: usize) -> CompactionQueue {
        let (sender, receiver) = unbounded();
        CompactionQueue {
            sender,
            receiver,
            pending: Mutex::new(HashSet::new()),
            threads: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            thread_count: thread_count.max(1),
            failures: AtomicU64::new(0),
        }
    }

    /// Starts the threads; each runs `work` on every request until a
    /// `Stop`, or until `work` returns false. `work` clears the request's
    /// pending mark first (`take_pending`), so that it may queue the store
    /// again.
    pub(crate) fn start(&self, work: impl Fn(Arc<Region>, Arc<FamilyStore>) -> bool + Clone + Send + 'static) {
        let mut threads = self.threads.lock();
        for i in 0..self.thread_count {
            let receiver: Receiver<CompactionTask> = self.receiver.clone();
            let work = work.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("compactor-{i}"))
                    .spawn(move || {
                        while let Ok(CompactionTask::Store(region, store)) = receiver.recv() {
                            if !work(region, store) {
                                return;
                            }
                        }
                    })
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

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Queues a minor compaction check of `store` of `region`.
    pub(crate) fn request(&self, region: &Arc<Region>, store: &Arc<FamilyStore>) {
        if self.is_stopped() {
            return;
        }
        if self.pending.lock().insert(key(region, store)) {
            let _ = self.sender.send(CompactionTask::Store(region.clone(), store.clone()));
        }
    }

    /// Queues a compaction check of every store of `region`.
    pub(crate) fn request_all(&self, region: &Arc<Region>) {
        for s in region.stores() {
            self.request(region, s);
        }
    }

    /// A queued request is being served: a new one may queue.
    pub(crate) fn take_pending(&self, region: &Arc<Region>, store: &FamilyStore) {
        self.pending.lock().remove(&key(region, store));
    }

    pub(crate) fn note_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::one_region_twice;

    #[test]
    fn a_reopened_region_is_queued_beside_its_old_instance() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (old, reopened) = one_region_twice(tmp.path());
        let q = CompactionQueue::new(1);
        let store = |r: &Arc<Region>| r.stores().next().expect("a family").clone();
        q.request(&old, &store(&old));
        q.request(&old, &store(&old));
        q.request(&reopened, &store(&reopened));
        let queued: Vec<usize> = std::iter::from_fn(|| match q.receiver.try_recv() {
            Ok(CompactionTask::Store(r, _)) => Some(Arc::as_ptr(&r) as usize),
            _ => None,
        })
        .collect();
        assert_eq!(queued, [Arc::as_ptr(&old) as usize, Arc::as_ptr(&reopened) as usize], "one each, none swallowed");
        q.take_pending(&old, &store(&old));
        q.request(&old, &store(&old));
        assert!(q.receiver.try_recv().is_ok(), "served, so queued again");
    }
}
