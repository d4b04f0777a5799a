//! `Flusher`: decides when memstores go to disk and does it in background
//! threads (HBase's MemStoreFlusher).
//!
//! - A region flushes when its memstore heap size passes the region flush
//!   size; writes to it block above `block_multiplier` × that.
//! - Above the lower mark of the global memstore limit the flusher flushes
//!   the largest region; above the limit every write blocks until flushes
//!   bring the total back under it. As in HBase (every `FlushHandler` runs
//!   `flushOneForGlobalPressure`), every flusher thread serves global
//!   pressure, each taking the largest region that no other thread is
//!   flushing: with one thread, writers stall for whole flushes (file write
//!   plus fsyncs) while the second thread sits idle.
//! - After a flush: old WAL files are archived; if more than `max_logs`
//!   remain, the regions pinning the oldest are flushed; stores with enough
//!   files are queued for compaction; big regions are split.
//! - A store with too many files (`blocking_store_files`) delays its flush
//!   (up to `blocking_wait_ms`) while a compaction runs.
//!
//! Thread safety: requests go through a channel; `pending` deduplicates
//! queued regions; `in_flight` holds the regions a flusher thread is flushing
//! (a pressure flush never picks one of them), each with whether a request
//! for it arrived meanwhile — such a request is queued again when the flush
//! ends (it may be the retry of that very flush, which must not be lost);
//! `pressure_workers` counts the pressure tasks queued or running, at most
//! one per thread; blocked writers wait on `memory_cv`, which every finished
//! flush signals. Worker threads hold only a weak reference to the store.
//! Lock order: `in_flight` before the store's table map; `in_flight` is
//! released before a request takes `pending`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StoreError};
use crate::options::StoreOptions;
use crate::region::Region;
use crate::store::{Store, StoreInner};

enum FlushTask {
    Region(Arc<Region>),
    Pressure,
    Stop,
}

pub(crate) struct Flusher {
    sender: Sender<FlushTask>,
    receiver: Receiver<FlushTask>,
    pending: Mutex<HashSet<u64>>,
    /// Regions being flushed → whether they were requested meanwhile.
    in_flight: Mutex<HashMap<u64, bool>>,
    pressure_workers: AtomicUsize,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopped: AtomicBool,
    memory_lock: Mutex<()>,
    memory_cv: Condvar,
    /// Global memstore heap, recomputed every few writes and after flushes.
    global_heap: AtomicU64,
    writes: AtomicU64,
    thread_count: usize,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_failures: AtomicU64,
    pub(crate) blocked_writes: AtomicU64,
    /// Nanoseconds writers spent blocked on memory, summed over writers.
    pub(crate) blocked_nanos: AtomicU64,
}

impl Flusher {
    pub(crate) fn new(options: &StoreOptions) -> Flusher {
        let (sender, receiver) = unbounded();
        Flusher {
            sender,
            receiver,
            pending: Mutex::new(HashSet::new()),
            in_flight: Mutex::new(HashMap::new()),
            pressure_workers: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            memory_lock: Mutex::new(()),
            memory_cv: Condvar::new(),
            global_heap: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            thread_count: options.flusher_threads.max(1),
            flushes: AtomicU64::new(0),
            flush_failures: AtomicU64::new(0),
            blocked_writes: AtomicU64::new(0),
            blocked_nanos: AtomicU64::new(0),
        }
    }

    pub(crate) fn start(inner: &Arc<StoreInner>) {
        let mut threads = inner.flusher.threads.lock();
        for i in 0..inner.flusher.thread_count {
            let weak = Arc::downgrade(inner);
            let receiver = inner.flusher.receiver.clone();
            let handle = std::thread::Builder::new()
                .name(format!("flusher-{i}"))
                .spawn(move || run(weak, receiver))
                .expect("spawn flusher thread");
            threads.push(handle);
        }
    }

    pub(crate) fn stop(&self) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for _ in &threads {
            let _ = self.sender.send(FlushTask::Stop);
        }
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        self.memory_cv.notify_all();
    }

    fn request(&self, region: &Arc<Region>) {
        if self.pending.lock().insert(region.info().id) {
            let _ = self.sender.send(FlushTask::Region(region.clone()));
        }
    }

    /// Puts one more flusher thread on global pressure, unless every thread
    /// already is.
    fn request_pressure(&self) {
        let more = self
            .pressure_workers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.thread_count).then_some(n + 1))
            .is_ok();
        if more {
            let _ = self.sender.send(FlushTask::Pressure);
        }
    }

    fn signal(&self) {
        let _g = self.memory_lock.lock();
        self.memory_cv.notify_all();
    }
}

fn global_heap(inner: &StoreInner) -> u64 {
    let total = inner.tables.read().values().map(|t| t.memstore_heap_size()).sum();
    inner.flusher.global_heap.store(total, Ordering::Relaxed);
    total
}

/// Blocks the caller while the region or the store is over its memory limit.
pub(crate) fn reclaim_memory(inner: &Arc<StoreInner>, region: &Arc<Region>) -> Result<()> {
    let o = &inner.options;
    let region_limit = o.block_multiplier.saturating_mul(region.flush_size());
    let global_limit = o.global_memstore_limit();
    let mut blocked_since: Option<Instant> = None;
    let unblocked = |since: Option<Instant>| {
        if let Some(t) = since {
            inner.flusher.blocked_nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    };
    loop {
        let region_over = region.memstore_heap_size() >= region_limit;
        let global_over = inner.flusher.global_heap.load(Ordering::Relaxed) >= global_limit;
        // The cached global figure may be stale: recount before blocking.
        if !region_over && (!global_over || global_heap(inner) < global_limit) {
            unblocked(blocked_since);
            return Ok(());
        }
        if inner.closed.load(Ordering::Acquire) {
            unblocked(blocked_since);
            return Err(StoreError::Closed);
        }
        if blocked_since.is_none() {
            inner.flusher.blocked_writes.fetch_add(1, Ordering::Relaxed);
            blocked_since = Some(Instant::now());
        }
        if !o.background {
            // No flusher threads: flush in the writer's thread.
            let target =
                if region_over { region.clone() } else { largest_region(inner).unwrap_or_else(|| region.clone()) };
            if let Err(e) = target.flush() {
                unblocked(blocked_since);
                return Err(e);
            }
            continue;
        }
        if region_over {
            inner.flusher.request(region);
        } else {
            inner.flusher.request_pressure();
        }
        let mut g = inner.flusher.memory_lock.lock();
        inner.flusher.memory_cv.wait_for(&mut g, Duration::from_millis(50));
    }
}

/// Bookkeeping after a write: queue a flush when the region is full, and
/// relieve global pressure.
pub(crate) fn after_write(inner: &Arc<StoreInner>, region: &Arc<Region>) {
    let f = &inner.flusher;
    if region.memstore_heap_size() >= region.flush_size() {
        if inner.options.background {
            f.request(region);
        } else if let Err(e) = region.flush() {
            tracing::warn!(error = %e, "inline flush failed; it will be retried");
        }
    }
    if f.writes.fetch_add(1, Ordering::Relaxed).is_multiple_of(256)
        && global_heap(inner) >= inner.options.global_memstore_low_mark()
    {
        if inner.options.background {
            f.request_pressure();
        } else if let Some(r) = largest_region(inner) {
            let _ = r.flush();
        }
    }
}

fn largest_region(inner: &StoreInner) -> Option<Arc<Region>> {
    inner.tables.read().values().flat_map(|t| t.regions()).max_by_key(|r| r.memstore_heap_size())
}

/// The largest region with something to flush that no flusher thread is
/// flushing, marked in flight; `None` if there is none.
fn claim_largest_idle_region(inner: &StoreInner) -> Option<InFlight<'_>> {
    let mut in_flight = inner.flusher.in_flight.lock();
    let region = inner
        .tables
        .read()
        .values()
        .flat_map(|t| t.regions())
        .filter(|r| !in_flight.contains_key(&r.info().id))
        .map(|r| (r.memstore_heap_size(), r))
        .filter(|(size, _)| *size > 0)
        .max_by_key(|(size, _)| *size)?
        .1;
    in_flight.insert(region.info().id, false);
    Some(InFlight { flusher: &inner.flusher, region })
}

/// A region a flusher thread is flushing; dropping it clears the mark.
struct InFlight<'a> {
    flusher: &'a Flusher,
    region: Arc<Region>,
}

impl<'a> InFlight<'a> {
    /// Marks `region` in flight, or — if another thread is flushing it —
    /// notes that it was requested meanwhile (so that the request is queued
    /// again when that flush ends) and returns `None`.
    fn claim(flusher: &'a Flusher, region: Arc<Region>) -> Option<InFlight<'a>> {
        let mut in_flight = flusher.in_flight.lock();
        match in_flight.get_mut(&region.info().id) {
            Some(requested) => {
                *requested = true;
                None
            }
            None => {
                in_flight.insert(region.info().id, false);
                drop(in_flight);
                Some(InFlight { flusher, region })
            }
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let requested = self.flusher.in_flight.lock().remove(&self.region.info().id) == Some(true);
        if requested {
            self.flusher.request(&self.region);
        }
    }
}

fn run(weak: Weak<StoreInner>, receiver: Receiver<FlushTask>) {
    while let Ok(task) = receiver.recv() {
        let Some(inner) = weak.upgrade() else { return };
        match task {
            FlushTask::Stop => return,
            FlushTask::Region(region) => {
                inner.flusher.pending.lock().remove(&region.info().id);
                if !region.is_closed() && region.memstore_heap_size() > 0 {
                    // If another thread is flushing this region, the request
                    // is queued again when that flush ends (`InFlight`).
                    if let Some(claim) = InFlight::claim(&inner.flusher, region) {
                        flush_region(&inner, &claim.region);
                    }
                }
            }
            FlushTask::Pressure => {
                let low = inner.options.global_memstore_low_mark();
                while global_heap(&inner) >= low && !inner.flusher.stopped.load(Ordering::Acquire) {
                    let Some(claim) = claim_largest_idle_region(&inner) else { break };
                    if !flush_region(&inner, &claim.region) {
                        break;
                    }
                }
                inner.flusher.pressure_workers.fetch_sub(1, Ordering::AcqRel);
            }
        }
        inner.flusher.signal();
    }
}

/// Flushes one region and does the follow-up work; false if the flush failed
/// (it is retried later).
pub(crate) fn flush_region(inner: &Arc<StoreInner>, region: &Arc<Region>) -> bool {
    wait_for_blocking_files(inner, region);
    let store = Store { inner: inner.clone() };
    match region.flush() {
        Ok(_) => {
            inner.flusher.flushes.fetch_add(1, Ordering::Relaxed);
            global_heap(inner);
            if let Err(e) = store.archive_wal() {
                tracing::warn!(error = %e, "WAL archiving failed");
            }
            for id in inner.wal.regions_to_flush(inner.options.max_logs) {
                if let Some(r) = inner.tables.read().values().flat_map(|t| t.regions()).find(|r| r.info().id == id) {
                    inner.flusher.request(&r);
                }
            }
            for s in region.stores() {
                if s.files().len() >= inner.options.compaction.min_files {
                    inner.compactor.request(region, s);
                }
            }
            if let Ok(t) = store.table_state(&region.info().table)
                && let Err(e) = crate::split::maybe_split(inner, &t, region)
            {
                tracing::warn!(error = %e, "region split failed");
            }
            true
        }
        Err(e) => {
            inner.flusher.flush_failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(region = region.info().id, error = %e, "flush failed; the snapshot stays in memory and is retried");
            if !inner.closed.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                inner.flusher.pending.lock().remove(&region.info().id);
                inner.flusher.request(region);
            }
            false
        }
    }
}

fn wait_for_blocking_files(inner: &Arc<StoreInner>, region: &Arc<Region>) {
    let cfg = &inner.options.compaction;
    let deadline = Instant::now() + Duration::from_millis(cfg.blocking_wait_ms);
    loop {
        let blocked: Vec<_> =
            region.stores().filter(|s| s.files().len() >= cfg.blocking_store_files).cloned().collect();
        if blocked.is_empty() || Instant::now() >= deadline || inner.closed.load(Ordering::Acquire) {
            return;
        }
        for s in &blocked {
            inner.compactor.request(region, s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
