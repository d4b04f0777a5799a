//! `FlushQueue`: the flusher threads' queue and bookkeeping — requests,
//! which regions are queued and in flight, how many threads serve global
//! pressure, the condition blocked writers wait on, and the counters. What a
//! flush job does (and when one is asked for) is `flusher.rs`; this module
//! knows nothing of the store around it.
//!
//! Thread safety: requests go through a channel; `pending` deduplicates
//! queued regions; `in_flight` holds the regions a flusher thread is
//! flushing (a pressure flush never picks one of them), each with its
//! [`Marks`]: whether a request for it arrived meanwhile — queued again when
//! the flush ends if the region is full again — and whether the flush failed
//! and is to be retried, which is queued again whatever the region's size
//! (a failed flush's snapshot is not "flushable" memory, and its retry must
//! not be lost to another flusher thread that took the retry's request while
//! this one still held the claim); `pressure_workers` counts the pressure tasks queued or running,
//! at most one per thread; blocked writers wait on `memory_cv`, which every
//! finished flush signals. Lock order: `in_flight` before the catalog's
//! locks (`claim_largest` scans the catalog under it); `in_flight` is
//! released before a request takes `pending`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::catalog::Catalog;
use crate::jobs::worker_pool::WorkerPool;
use crate::region::Region;

/// What a flusher thread is asked to do.
pub(crate) enum FlushTask {
    Region(Arc<Region>),
    Pressure,
}

/// What happened to a region while a flusher thread held it in flight.
#[derive(Debug, Default, Clone, Copy)]
struct Marks {
    /// Another request for it arrived (another thread could not claim it).
    requested: bool,
    /// Its flush failed: the snapshot waits in memory for a retry.
    retry: bool,
}

pub(crate) struct FlushQueue {
    workers: WorkerPool<FlushTask>,
    /// Queued requests, per region instance (a region reopened under the
    /// same id is a new instance, whose request must not be swallowed).
    pending: Mutex<HashSet<usize>>,
    /// Regions being flushed → what happened meanwhile.
    in_flight: Mutex<HashMap<u64, Marks>>,
    pressure_workers: AtomicUsize,
    memory_lock: Mutex<()>,
    memory_cv: Condvar,
    /// Global memstore heap, recomputed every few writes and after flushes.
    global_heap: AtomicU64,
    writes: AtomicU64,
    flush_failures: AtomicU64,
    blocked_writes: AtomicU64,
    /// Nanoseconds writers spent blocked on memory, summed over writers.
    blocked_nanos: AtomicU64,
}

impl FlushQueue {
    pub(crate) fn new(thread_count: usize) -> FlushQueue {
        FlushQueue {
            workers: WorkerPool::new("flusher", thread_count),
            pending: Mutex::new(HashSet::new()),
            in_flight: Mutex::new(HashMap::new()),
            pressure_workers: AtomicUsize::new(0),
            memory_lock: Mutex::new(()),
            memory_cv: Condvar::new(),
            global_heap: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            flush_failures: AtomicU64::new(0),
            blocked_writes: AtomicU64::new(0),
            blocked_nanos: AtomicU64::new(0),
        }
    }

    /// Starts the threads; each runs `work` on every task until the queue
    /// is stopped, or until `work` returns false.
    pub(crate) fn start(&self, work: impl Fn(FlushTask) -> bool + Clone + Send + 'static) {
        self.workers.start(work);
    }

    pub(crate) fn stop(&self) {
        self.workers.stop();
        self.memory_cv.notify_all();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.workers.is_stopped()
    }

    /// Queues a flush of `region` unless one is queued.
    pub(crate) fn request(&self, region: &Arc<Region>) {
        if self.pending.lock().insert(Arc::as_ptr(region) as usize) {
            self.workers.send(FlushTask::Region(region.clone()));
        }
    }

    /// Regions queued for a flush that no flusher thread has taken yet
    /// (HBase's `flushQueueLength`; global-pressure work is not a region
    /// request and is not counted).
    pub(crate) fn queued(&self) -> usize {
        self.pending.lock().len()
    }

    /// A queued request of `region` is being served: a new one may queue.
    pub(crate) fn take_pending(&self, region: &Arc<Region>) {
        self.pending.lock().remove(&(Arc::as_ptr(region) as usize));
    }

    /// Puts one more flusher thread on global pressure, unless every thread
    /// already is.
    pub(crate) fn request_pressure(&self) {
        let more = self
            .pressure_workers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.workers.size()).then_some(n + 1))
            .is_ok();
        if more {
            self.workers.send(FlushTask::Pressure);
        }
    }

    /// A pressure task ended.
    pub(crate) fn pressure_done(&self) {
        self.pressure_workers.fetch_sub(1, Ordering::AcqRel);
    }

    /// Wakes the writers blocked on memory.
    pub(crate) fn signal(&self) {
        let _g = self.memory_lock.lock();
        self.memory_cv.notify_all();
    }

    /// Blocks a writer until a flush ends or `timeout` passes.
    pub(crate) fn wait_for_memory(&self, timeout: Duration) {
        let mut g = self.memory_lock.lock();
        self.memory_cv.wait_for(&mut g, timeout);
    }

    pub(crate) fn cached_global_heap(&self) -> u64 {
        self.global_heap.load(Ordering::Relaxed)
    }

    pub(crate) fn set_global_heap(&self, bytes: u64) {
        self.global_heap.store(bytes, Ordering::Relaxed);
    }

    /// Counts a write; the count before it.
    pub(crate) fn count_write(&self) -> u64 {
        self.writes.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn note_flush_failure(&self) {
        self.flush_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn note_blocked_write(&self) {
        self.blocked_writes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_blocked_time(&self, blocked: Duration) {
        self.blocked_nanos.fetch_add(blocked.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn flush_failures(&self) -> u64 {
        self.flush_failures.load(Ordering::Relaxed)
    }

    pub(crate) fn blocked_writes(&self) -> u64 {
        self.blocked_writes.load(Ordering::Relaxed)
    }

    pub(crate) fn blocked_seconds(&self) -> f64 {
        self.blocked_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Marks `region` in flight, or — if another thread is flushing it —
    /// notes that it was requested meanwhile (so that the request is queued
    /// again when that flush ends) and returns `None`.
    pub(crate) fn claim(&self, region: Arc<Region>) -> Option<InFlight<'_>> {
        let mut in_flight = self.in_flight.lock();
        match in_flight.get_mut(&region.info().id) {
            Some(marks) => {
                marks.requested = true;
                None
            }
            None => {
                in_flight.insert(region.info().id, Marks::default());
                drop(in_flight);
                Some(InFlight { queue: self, region })
            }
        }
    }

    /// `region`'s flush failed: its retry is queued when the caller's claim
    /// on it ends (at once if nothing holds it in flight).
    pub(crate) fn retry_when_done(&self, region: &Arc<Region>) {
        if let Some(marks) = self.in_flight.lock().get_mut(&region.info().id) {
            marks.retry = true;
            return;
        }
        // `in_flight` is released before `request` takes `pending`.
        self.request(region);
    }

    /// The largest region of `catalog` with something to flush that no
    /// flusher thread is flushing, marked in flight; `None` if there is none.
    pub(crate) fn claim_largest(&self, catalog: &Catalog) -> Option<InFlight<'_>> {
        let mut in_flight = self.in_flight.lock();
        let region = catalog.largest_memstore(|r| !in_flight.contains_key(&r.info().id))?;
        in_flight.insert(region.info().id, Marks::default());
        Some(InFlight { queue: self, region })
    }
}

/// A region a flusher thread is flushing; dropping it clears the mark.
pub(crate) struct InFlight<'a> {
    queue: &'a FlushQueue,
    region: Arc<Region>,
}

impl InFlight<'_> {
    pub(crate) fn region(&self) -> &Arc<Region> {
        &self.region
    }
}

impl Drop for InFlight<'_> {
    /// A failed flush is queued again. A request that arrived while this
    /// flush ran is queued again only if the region is full again: the
    /// writes it was about, made before the flush took its snapshot, went
    /// out with that flush (queuing it anyway flushed the few KB written
    /// meanwhile as a file of their own).
    fn drop(&mut self) {
        let marks = self.queue.in_flight.lock().remove(&self.region.info().id).unwrap_or_default();
        if marks.retry || (marks.requested && self.region.flushable_heap_size() >= self.region.flush_size()) {
            self.queue.request(&self.region);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::one_region_twice;

    /// A flush fails while its thread holds the region; another flusher
    /// thread takes the retry's request first and cannot claim the region.
    /// The retry is queued when the first claim ends, though the region's
    /// flushable memory (its snapshot aside) is below the flush size. It
    /// was lost before: the second request counted as "requested
    /// meanwhile", which is dropped for a region that is not full.
    #[test]
    fn a_failed_flush_is_retried_when_another_thread_took_its_request() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (region, _) = one_region_twice(tmp.path());
        let q = FlushQueue::new(1);
        let claim = q.claim(region.clone()).expect("the first thread flushes it");
        q.retry_when_done(&region);
        // The other thread, with a request of the region, finds it claimed.
        q.request(&region);
        assert!(matches!(q.workers.try_take(), Some(FlushTask::Region(_))), "the other thread's request");
        q.take_pending(&region);
        assert!(q.claim(region.clone()).is_none(), "claimed by the first thread");
        assert!(region.flushable_heap_size() < region.flush_size(), "nothing flushable: an empty region");
        drop(claim);
        let retried = matches!(q.workers.try_take(), Some(FlushTask::Region(r)) if Arc::ptr_eq(&r, &region));
        assert!(retried, "the failed flush's retry is queued when the first claim ends");
        assert!(q.workers.try_take().is_none(), "once");
    }

    #[test]
    fn a_reopened_region_is_queued_beside_its_old_instance() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (old, reopened) = one_region_twice(tmp.path());
        let q = FlushQueue::new(1);
        q.request(&old);
        q.request(&old);
        q.request(&reopened);
        let queued: Vec<usize> = std::iter::from_fn(|| match q.workers.try_take() {
            Some(FlushTask::Region(r)) => Some(Arc::as_ptr(&r) as usize),
            _ => None,
        })
        .collect();
        assert_eq!(queued, [Arc::as_ptr(&old) as usize, Arc::as_ptr(&reopened) as usize], "one each, none swallowed");
        q.take_pending(&old);
        q.request(&old);
        assert!(q.workers.try_take().is_some(), "served, so queued again");
    }
}
