//! Flush jobs: when memstores go to disk and what follows a flush, run by
//! the flusher threads of `flush_queue.rs` (HBase's MemStoreFlusher).
//!
//! - A region flushes when its memstore heap size passes the region flush
//!   size; writes to it block above `block_multiplier` × that.
//! - Above the lower mark of the global memstore limit the flusher flushes
//!   the largest region; the global figures count what the memstores hold
//!   (whole chunks, index memory, snapshots being flushed:
//!   `Region::memstore_held_size`), so the limit bounds the process's
//!   memstore memory. The region flush size stays a heap-size trigger (it
//!   sizes flush files, as in HBase; a non-empty memstore holds at least a
//!   chunk, far above the flush sizes small tables and tests use); above the limit every write blocks until flushes
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
//! The queue, its deduplication and in-flight bookkeeping are
//! `flush_queue.rs`; this module is the jobs: what a flush does after it
//! ran, when writers block, and which region a pressure flush takes.
//! Worker threads hold only a weak reference to the store's services.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::error::{Result, StoreError};
use crate::jobs::flush::queue::FlushTask;
use crate::region::Region;
use crate::services::Services;

/// Starts the flusher threads.
pub(crate) fn start(services: &Arc<Services>) {
    let weak = Arc::downgrade(services);
    services.flush_queue.start(move |task| run(&weak, task));
}

/// What every memstore holds (`Region::memstore_held_size`): the figure the
/// global limit and its lower mark act on. Held, not heap: a memstore keeps
/// whole chunks, and counting cells let a pipeline policy's process grow to
/// 3–4× the limit. The memstores' gauge learns it too (their in-memory
/// compactions start only if their copy fits under the limit).
fn global_held(services: &Services) -> u64 {
    let total = services.catalog.memstore_held_size();
    services.flush_queue.set_global_heap(total);
    services.ctx.memory_gauge.set_held(total);
    total
}

/// Blocks the caller while the region or the store is over its memory limit.
pub(crate) fn reclaim_memory(services: &Services, region: &Arc<Region>) -> Result<()> {
    let o = &services.options;
    let region_limit = o.block_multiplier.saturating_mul(region.flush_size());
    let global_limit = o.global_memstore_limit();
    let mut blocked_since: Option<Instant> = None;
    let unblocked = |since: Option<Instant>| {
        if let Some(t) = since {
            services.flush_queue.add_blocked_time(t.elapsed());
        }
    };
    // The cached global figure is recounted every 256 writes, megabytes of
    // batches apart: from the lower mark on it is recounted on every write,
    // so that writers stop at the limit and not some batches past it.
    let near_limit = o.global_memstore_low_mark();
    loop {
        let region_over = region.memstore_heap_size() >= region_limit;
        let global_over = services.flush_queue.cached_global_heap() >= near_limit;
        if !region_over && (!global_over || global_held(services) < global_limit) {
            unblocked(blocked_since);
            return Ok(());
        }
        if services.is_closed() {
            unblocked(blocked_since);
            return Err(StoreError::Closed);
        }
        if blocked_since.is_none() {
            services.flush_queue.note_blocked_write();
            blocked_since = Some(Instant::now());
        }
        if !o.background {
            // No flusher threads: flush in the writer's thread.
            let target =
                if region_over { region.clone() } else { largest_region(services).unwrap_or_else(|| region.clone()) };
            if let Err(e) = target.flush() {
                unblocked(blocked_since);
                return Err(e);
            }
            continue;
        }
        if region_over {
            services.flush_queue.request(region);
        } else {
            services.flush_queue.request_pressure();
        }
        services.flush_queue.wait_for_memory(Duration::from_millis(50));
    }
}

/// Bookkeeping after a write: queue a flush when the region is full, and
/// relieve global pressure.
///
/// "Full" counts what a new flush would take — active segments and
/// pipelines — not a snapshot a running flush is writing: counting it made
/// every write during a flush queue another one, and each region flush was
/// followed at once by a flush of the few KB written meanwhile (a file per
/// flush, so twice the files for compactions to merge). The memory limit
/// ([`reclaim_memory`]) still counts snapshots: they hold memory until
/// written.
pub(crate) fn after_write(services: &Services, region: &Arc<Region>) {
    let f = &services.flush_queue;
    if region.flushable_heap_size() >= region.flush_size() {
        if services.options.background {
            f.request(region);
        } else if let Err(e) = region.flush() {
            tracing::warn!(error = %e, "inline flush failed; it will be retried");
        }
    }
    if f.count_write().is_multiple_of(256) && global_held(services) >= services.options.global_memstore_low_mark() {
        if services.options.background {
            f.request_pressure();
        } else if let Some(r) = largest_region(services) {
            let _ = r.flush();
        }
    }
}

fn largest_region(services: &Services) -> Option<Arc<Region>> {
    services.catalog.largest_memstore(|_| true)
}

/// One task of a flusher thread; false once the store is gone.
fn run(weak: &Weak<Services>, task: FlushTask) -> bool {
    let Some(services) = weak.upgrade() else { return false };
    match task {
        FlushTask::Region(region) => {
            services.flush_queue.take_pending(&region);
            if !region.is_closed() && region.memstore_heap_size() > 0 {
                // If another thread is flushing this region, the request
                // is queued again when that flush ends (`InFlight`).
                if let Some(claim) = services.flush_queue.claim(region) {
                    flush_region(&services, claim.region());
                }
            }
        }
        FlushTask::Pressure => {
            let low = services.options.global_memstore_low_mark();
            while global_held(&services) >= low && !services.flush_queue.is_stopped() {
                let Some(claim) = services.flush_queue.claim_largest(&services.catalog) else { break };
                if !flush_region(&services, claim.region()) {
                    break;
                }
            }
            services.flush_queue.pressure_done();
        }
    }
    services.flush_queue.signal();
    true
}

/// Flushes one region and does the follow-up work; false if the flush failed
/// (it is retried later).
pub(crate) fn flush_region(services: &Services, region: &Arc<Region>) -> bool {
    wait_for_blocking_files(services, region);
    match region.flush() {
        Ok(_) => {
            global_held(services);
            if let Err(e) = services.archive_wal() {
                tracing::warn!(error = %e, "WAL archiving failed");
            }
            for id in services.wal.regions_to_flush(services.options.max_logs) {
                if let Some(r) = services.catalog.region_by_id(id) {
                    services.flush_queue.request(&r);
                }
            }
            for s in region.stores() {
                if s.files().len() >= services.options.compaction.min_files {
                    services.compaction_queue.request(region, s);
                }
            }
            if let Ok(t) = services.catalog.table(&region.info().table)
                && let Err(e) = crate::region::split::maybe_split(services, &t, region)
            {
                tracing::warn!(error = %e, "region split failed");
            }
            true
        }
        Err(e) => {
            services.flush_queue.note_flush_failure();
            tracing::error!(region = region.info().id, error = %e, "flush failed; the snapshot stays in memory and is retried");
            if !services.is_closed() {
                // Queued when the caller's claim on the region ends.
                std::thread::sleep(Duration::from_millis(100));
                services.flush_queue.retry_when_done(region);
            }
            false
        }
    }
}

fn wait_for_blocking_files(services: &Services, region: &Arc<Region>) {
    let cfg = &services.options.compaction;
    let deadline = Instant::now() + Duration::from_millis(cfg.blocking_wait_ms);
    loop {
        let blocked: Vec<_> =
            region.stores().filter(|s| s.files().len() >= cfg.blocking_store_files).cloned().collect();
        if blocked.is_empty() || Instant::now() >= deadline || services.is_closed() {
            return;
        }
        for s in &blocked {
            services.compaction_queue.request(region, s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::StoreBuilder;
    use crate::{FamilyDescriptor, TableDescriptor};

    /// Three regions of small rows hold a data chunk and a node chunk
    /// apiece — 12 MiB — while their cells come to a few KB. With a 10 MiB
    /// global limit the writes must flush (the writer checks the global
    /// figure every 256 writes): the limit charges what the memstores hold.
    /// Charging heap size (cells and nodes), none of these writes flushed.
    #[test]
    fn the_global_limit_flushes_when_held_bytes_not_cell_bytes_reach_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let limit = 10u64 << 20;
        let store = StoreBuilder::new()
            .background(false)
            .region_flush_size(1 << 30)
            .memory_budget((limit as f64 / 0.4) as u64)
            .open(tmp.path())
            .expect("open");
        assert_eq!(store.options().global_memstore_limit(), limit);
        let mut family = FamilyDescriptor::new("f");
        family.memstore_policy = "none".into();
        store.create_table(TableDescriptor::new("t", vec![family]), &[b"b".to_vec(), b"c".to_vec()]).expect("create");
        let rows: Vec<String> = (0..300).map(|i| format!("{}{i:03}", ["a", "b", "c"][i % 3])).collect();
        let mut most_heap = 0;
        for row in &rows {
            store.put("t", row.as_bytes(), &[(b"f", b"q", b"v")], None).expect("put");
            most_heap = most_heap.max(store.all_regions().iter().map(|r| r.memstore_heap_size()).sum::<u64>());
        }
        assert!(most_heap < 64 << 10, "a few KB of cells: {most_heap} heap bytes at most");
        assert!(store.metrics().totals.disk_flushes >= 1, "the held bytes passed the limit: a flush");
        for row in &rows {
            assert_eq!(store.get("t", &crate::Get::new(row.as_bytes().to_vec())).expect("get").len(), 1, "{row}");
        }
    }
}
