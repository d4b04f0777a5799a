//! `Flusher`: decides when memstores go to disk and does it in background
//! threads (HBase's MemStoreFlusher).
//!
//! - A region flushes when its memstore heap size passes the region flush
//!   size; writes to it block above `block_multiplier` × that.
//! - Above the lower mark of the global memstore limit the flusher flushes
//!   the largest region; above the limit every write blocks until flushes
//!   bring the total back under it.
//! - After a flush: old WAL files are archived; if more than `max_logs`
//!   remain, the regions pinning the oldest are flushed; stores with enough
//!   files are queued for compaction; big regions are split.
//! - A store with too many files (`blocking_store_files`) delays its flush
//!   (up to `blocking_wait_ms`) while a compaction runs.
//!
//! Thread safety: requests go through a channel; `pending` deduplicates
//! queued regions; blocked writers wait on `memory_cv`, which every finished
//! flush signals. Worker threads hold only a weak reference to the store.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    pressure_pending: AtomicBool,
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
}

impl Flusher {
    pub(crate) fn new(options: &StoreOptions) -> Flusher {
        let (sender, receiver) = unbounded();
        Flusher {
            sender,
            receiver,
            pending: Mutex::new(HashSet::new()),
            pressure_pending: AtomicBool::new(false),
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

    fn request_pressure(&self) {
        if !self.pressure_pending.swap(true, Ordering::AcqRel) {
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
    let mut counted = false;
    loop {
        let region_over = region.memstore_heap_size() >= region_limit;
        let global_over = inner.flusher.global_heap.load(Ordering::Relaxed) >= global_limit;
        if !region_over && !global_over {
            return Ok(());
        }
        if global_heap(inner) < global_limit && !region_over {
            return Ok(());
        }
        if inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        if !counted {
            inner.flusher.blocked_writes.fetch_add(1, Ordering::Relaxed);
            counted = true;
        }
        if !o.background {
            // No flusher threads: flush in the writer's thread.
            let target =
                if region_over { region.clone() } else { largest_region(inner).unwrap_or_else(|| region.clone()) };
            target.flush()?;
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

fn run(weak: Weak<StoreInner>, receiver: Receiver<FlushTask>) {
    while let Ok(task) = receiver.recv() {
        let Some(inner) = weak.upgrade() else { return };
        match task {
            FlushTask::Stop => return,
            FlushTask::Region(region) => {
                inner.flusher.pending.lock().remove(&region.info().id);
                if !region.is_closed() && region.memstore_heap_size() > 0 {
                    flush_region(&inner, &region);
                }
            }
            FlushTask::Pressure => {
                inner.flusher.pressure_pending.store(false, Ordering::Release);
                let low = inner.options.global_memstore_low_mark();
                while global_heap(&inner) >= low && !inner.flusher.stopped.load(Ordering::Acquire) {
                    let Some(r) = largest_region(&inner) else { break };
                    if r.memstore_heap_size() == 0 || !flush_region(&inner, &r) {
                        break;
                    }
                }
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
