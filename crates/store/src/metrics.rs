//! `StoreMetrics`: the counters of DESIGN §6 per family store, region and
//! store instance, as one serialisable snapshot (the server's /metrics and
//! /status and the bench read it).
//!
//! Thread safety: built from relaxed atomic loads; each counter is exact,
//! the set is not one atomic instant.

use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::services::Services;

#[derive(Debug, Clone, Default, Serialize)]
pub struct FamilyMetrics {
    pub family: String,
    pub policy: String,
    pub store_files: u64,
    pub store_files_bytes: u64,
    pub flushes: u64,
    pub bytes_flushed: u64,
    pub cells_flushed: u64,
    pub compactions: u64,
    pub major_compactions: u64,
    pub bytes_compacted: u64,
    pub memstore_data_bytes: u64,
    pub memstore_heap_bytes: u64,
    pub memstore_cells: u64,
    pub inmemory_flushes: u64,
    pub flattens: u64,
    pub merges: u64,
    pub inmemory_compactions: u64,
    pub cells_dropped_in_memory: u64,
    pub pipeline_segments: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RegionMetrics {
    pub table: String,
    pub region: String,
    pub start_key: String,
    pub end_key: String,
    /// HBase's name of the region's state (OPEN, CLOSED, ...).
    pub state: &'static str,
    pub puts: u64,
    pub deletes: u64,
    pub gets: u64,
    pub scans: u64,
    pub flushes: u64,
    pub user_bytes: u64,
    pub families: Vec<FamilyMetrics>,
}

/// Totals over a store instance.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreTotals {
    pub regions: u64,
    pub puts: u64,
    pub gets: u64,
    pub scans: u64,
    pub disk_flushes: u64,
    pub disk_compactions: u64,
    pub inmemory_flushes: u64,
    pub merges: u64,
    pub inmemory_compactions: u64,
    pub store_files: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    pub user_bytes: u64,
    /// (bytes flushed + bytes compacted) / user bytes.
    pub write_amplification: f64,
    pub memstore_data_bytes: u64,
    pub memstore_heap_bytes: u64,
    pub wal_files_created: u64,
    pub wal_files_archived: u64,
    pub wal_bytes: u64,
    pub wal_syncs: u64,
    pub wal_appends: u64,
    pub flush_failures: u64,
    pub compaction_failures: u64,
    pub blocked_writes: u64,
    /// Seconds writes spent blocked on memory limits, summed over writers.
    pub blocked_write_seconds: f64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreMetrics {
    pub totals: StoreTotals,
    pub regions: Vec<RegionMetrics>,
}

fn printable(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// A snapshot of every counter of the store `services` serve.
pub(crate) fn collect(services: &Services) -> StoreMetrics {
    let mut t = StoreTotals::default();
    let mut regions = Vec::new();
    for region in services.catalog.all_regions() {
        let c = &region.counters;
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let mut rm = RegionMetrics {
            table: region.info().table.clone(),
            region: region.info().dir_name(),
            start_key: printable(&region.info().start_key),
            end_key: printable(&region.info().end_key),
            state: region.state().name(),
            puts: g(&c.puts),
            deletes: g(&c.deletes),
            gets: g(&c.gets),
            scans: g(&c.scans),
            flushes: g(&c.flushes),
            user_bytes: g(&c.user_bytes),
            families: Vec::new(),
        };
        for s in region.stores() {
            let sc = &s.counters;
            let ms = s.memstore();
            let size = ms.size();
            let mc = ms.counters();
            let files = s.files();
            let fm = FamilyMetrics {
                family: s.name().to_string(),
                policy: ms.config().policy.name(),
                store_files: files.len() as u64,
                store_files_bytes: files.iter().map(|f| f.info().file_size).sum(),
                flushes: g(&sc.flushes),
                bytes_flushed: g(&sc.bytes_flushed),
                cells_flushed: g(&sc.cells_flushed),
                compactions: g(&sc.compactions),
                major_compactions: g(&sc.major_compactions),
                bytes_compacted: g(&sc.bytes_compacted),
                memstore_data_bytes: size.data_size,
                memstore_heap_bytes: size.heap_size,
                memstore_cells: size.cells,
                inmemory_flushes: mc.inmemory_flushes,
                flattens: mc.flattens,
                merges: mc.merges,
                inmemory_compactions: mc.compactions,
                cells_dropped_in_memory: mc.cells_dropped,
                pipeline_segments: ms.layout_info().pipeline.len() as u64,
            };
            t.disk_compactions += fm.compactions;
            t.inmemory_flushes += fm.inmemory_flushes;
            t.merges += fm.merges;
            t.inmemory_compactions += fm.inmemory_compactions;
            t.store_files += fm.store_files;
            t.bytes_flushed += fm.bytes_flushed;
            t.bytes_compacted += fm.bytes_compacted;
            t.memstore_data_bytes += fm.memstore_data_bytes;
            t.memstore_heap_bytes += fm.memstore_heap_bytes;
            rm.families.push(fm);
        }
        t.regions += 1;
        t.puts += rm.puts;
        t.gets += rm.gets;
        t.scans += rm.scans;
        t.disk_flushes += rm.flushes;
        t.user_bytes += rm.user_bytes;
        regions.push(rm);
    }
    t.write_amplification =
        if t.user_bytes == 0 { 0.0 } else { (t.bytes_flushed + t.bytes_compacted) as f64 / t.user_bytes as f64 };
    let w = services.wal.stats();
    t.wal_files_created = w.files_created;
    t.wal_files_archived = w.files_archived;
    t.wal_bytes = w.bytes_written;
    t.wal_syncs = w.syncs;
    t.wal_appends = w.appends;
    t.flush_failures = services.flush_queue.flush_failures();
    t.compaction_failures = services.compaction_queue.failures();
    t.blocked_writes = services.flush_queue.blocked_writes();
    t.blocked_write_seconds = services.flush_queue.blocked_seconds();
    if let Some(cache) = services.ctx.block_cache.as_ref() {
        let s = cache.stats();
        t.block_cache_hits = s.hits;
        t.block_cache_misses = s.misses;
        t.block_cache_bytes = s.bytes;
    }
    StoreMetrics { totals: t, regions }
}
