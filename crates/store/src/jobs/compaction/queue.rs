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
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::family_store::FamilyStore;
use crate::jobs::worker_pool::WorkerPool;
use crate::region::Region;

/// What a compaction thread is asked to do: check a store of a region.
type CompactionTask = (Arc<Region>, Arc<FamilyStore>);

/// A queued request's identity: the region instance and the family.
type PendingKey = (usize, String);

fn key(region: &Arc<Region>, store: &FamilyStore) -> PendingKey {
    (Arc::as_ptr(region) as usize, store.name().to_string())
}

pub(crate) struct CompactionQueue {
    workers: WorkerPool<CompactionTask>,
    pending: Mutex<HashSet<PendingKey>>,
    failures: AtomicU64,
}

impl CompactionQueue {
    pub(crate) fn new(thread_count: usize) -> CompactionQueue {
        CompactionQueue {
            workers: WorkerPool::new("compactor", thread_count),
            pending: Mutex::new(HashSet::new()),
            failures: AtomicU64::new(0),
        }
    }

    /// Starts the threads; each runs `work` on every request until the
    /// queue is stopped, or until `work` returns false. `work` clears the
    /// request's pending mark first (`take_pending`), so that it may queue
    /// the store again.
    pub(crate) fn start(&self, work: impl Fn(Arc<Region>, Arc<FamilyStore>) -> bool + Clone + Send + 'static) {
        self.workers.start(move |(region, store)| work(region, store));
    }

    pub(crate) fn stop(&self) {
        self.workers.stop();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.workers.is_stopped()
    }

    /// Queues a minor compaction check of `store` of `region`.
    pub(crate) fn request(&self, region: &Arc<Region>, store: &Arc<FamilyStore>) {
        if self.is_stopped() {
            return;
        }
        if self.pending.lock().insert(key(region, store)) {
            self.workers.send((region.clone(), store.clone()));
        }
    }

    /// Queues a compaction check of every store of `region`.
    pub(crate) fn request_all(&self, region: &Arc<Region>) {
        for s in region.stores() {
            self.request(region, s);
        }
    }

    /// Family stores queued for a compaction check that no compaction
    /// thread has taken yet (HBase's `compactionQueueLength`).
    pub(crate) fn queued(&self) -> usize {
        self.pending.lock().len()
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
        let queued: Vec<usize> =
            std::iter::from_fn(|| q.workers.try_take().map(|(r, _)| Arc::as_ptr(&r) as usize)).collect();
        assert_eq!(queued, [Arc::as_ptr(&old) as usize, Arc::as_ptr(&reopened) as usize], "one each, none swallowed");
        q.take_pending(&old, &store(&old));
        q.request(&old, &store(&old));
        assert!(q.workers.try_take().is_some(), "served, so queued again");
    }
}
