//! `StoreMetrics`: the counters of DESIGN §6 per family store, region,
//! table and store instance, as one serialisable snapshot (the server's
//! /metrics and /status and the bench read it).
//!
//! Invariants: the per-table counters and the totals' counters (puts, gets,
//! flushes, bytes, ...) include what replaced regions and dropped tables had
//! counted (`table_counters.rs`), so they never go backwards while the
//! process lives; the per-region and per-family figures are those of the
//! live regions only. Levels (memstore bytes, store files, regions) are the
//! live regions'.
//!
//! Thread safety: built from relaxed atomic loads; each counter is exact,
//! the set is not one atomic instant (the per-table counters are one
//! instant of the catalog, the per-region ones are read after).

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::services::Services;
use crate::table_counters::TableCounters;
use crate::tasks::{TaskKind, TaskStatus};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Read requests the region served: gets and region scanners opened
    /// (HBase counts the rows a scan returns; the store counts the scan).
    pub read_requests: u64,
    /// Rows written ([`crate::region::RegionCounters::write_requests`]).
    pub write_requests: u64,
    pub families: Vec<FamilyMetrics>,
}

/// A live table's counters (its live regions' and those it replaced).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TableMetrics {
    pub table: String,
    pub regions: u64,
    #[serde(flatten)]
    pub counters: TableCounters,
}

/// Totals over a store instance: the counters include replaced regions and
/// dropped tables (they never go backwards), the levels are the live
/// regions'.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreTotals {
    pub regions: u64,
    pub puts: u64,
    pub deletes: u64,
    pub gets: u64,
    /// Gets answered from the memstores alone (no store file read).
    #[serde(default)]
    pub gets_from_memstore: u64,
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
    pub wal_sync_failures: u64,
    pub wal_appends: u64,
    pub flush_failures: u64,
    pub compaction_failures: u64,
    pub blocked_writes: u64,
    /// Seconds writes spent blocked on memory limits, summed over writers.
    pub blocked_write_seconds: f64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_bytes: u64,
    pub block_cache_evictions: u64,
    pub tables_dropped: u64,
    /// Rows written (every batch row; HBase's `writeRequestCount`).
    #[serde(default)]
    pub write_requests: u64,
    /// Regions queued for a flush, not yet taken by a flusher thread.
    #[serde(default)]
    pub flush_queue_length: u64,
    /// Family stores queued for a compaction check, not yet taken.
    #[serde(default)]
    pub compaction_queue_length: u64,
    /// Family store flushes running now.
    #[serde(default)]
    pub flushes_in_progress: u64,
    /// Disk compactions running now.
    #[serde(default)]
    pub compactions_in_progress: u64,
    /// Region splits running now.
    #[serde(default)]
    pub splits_in_progress: u64,
    /// Region merges running now.
    #[serde(default)]
    pub merges_in_progress: u64,
}

impl StoreTotals {
    /// How many tasks of `kind` were running.
    pub fn in_progress(&self, kind: TaskKind) -> u64 {
        match kind {
            TaskKind::Flush => self.flushes_in_progress,
            TaskKind::Compaction => self.compactions_in_progress,
            TaskKind::Split => self.splits_in_progress,
            TaskKind::Merge => self.merges_in_progress,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreMetrics {
    pub totals: StoreTotals,
    /// Live tables, by name.
    pub tables: Vec<TableMetrics>,
    /// What every dropped table had counted.
    pub dropped_tables: TableCounters,
    pub regions: Vec<RegionMetrics>,
    /// The flushes, compactions, splits and merges running now, oldest
    /// first (the totals' `..._in_progress` count them).
    pub tasks: Vec<TaskStatus>,
}

fn printable(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// A snapshot of every counter of the store `services` serve.
pub(crate) fn collect(services: &Services) -> StoreMetrics {
    let counted = services.catalog.counters();
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
            read_requests: g(&c.gets) + g(&c.scans),
            write_requests: g(&c.write_requests),
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
            t.store_files += fm.store_files;
            t.memstore_data_bytes += fm.memstore_data_bytes;
            t.memstore_heap_bytes += fm.memstore_heap_bytes;
            rm.families.push(fm);
        }
        t.regions += 1;
        regions.push(rm);
    }
    let mut per_table = std::collections::BTreeMap::<&str, u64>::new();
    for r in &regions {
        *per_table.entry(r.table.as_str()).or_default() += 1;
    }
    let mut all = counted.dropped;
    let tables = counted
        .tables
        .into_iter()
        .map(|(table, counters)| {
            all.add(&counters);
            let regions = per_table.get(table.as_str()).copied().unwrap_or(0);
            TableMetrics { table, regions, counters }
        })
        .collect();
    t.puts = all.puts;
    t.deletes = all.deletes;
    t.gets = all.gets;
    t.gets_from_memstore = all.gets_from_memstore;
    t.scans = all.scans;
    t.disk_flushes = all.flushes;
    t.user_bytes = all.user_bytes;
    t.write_requests = all.write_requests;
    t.disk_compactions = all.compactions;
    t.inmemory_flushes = all.inmemory_flushes;
    t.merges = all.merges;
    t.inmemory_compactions = all.inmemory_compactions;
    t.bytes_flushed = all.bytes_flushed;
    t.bytes_compacted = all.bytes_compacted;
    t.tables_dropped = counted.tables_dropped;
    t.write_amplification =
        if t.user_bytes == 0 { 0.0 } else { (t.bytes_flushed + t.bytes_compacted) as f64 / t.user_bytes as f64 };
    let w = services.wal.stats();
    t.wal_files_created = w.files_created;
    t.wal_files_archived = w.files_archived;
    t.wal_bytes = w.bytes_written;
    t.wal_syncs = w.syncs;
    t.wal_sync_failures = w.sync_failures;
    t.wal_appends = w.appends;
    t.flush_failures = services.flush_queue.flush_failures();
    t.compaction_failures = services.compaction_queue.failures();
    t.blocked_writes = services.flush_queue.blocked_writes();
    t.blocked_write_seconds = services.flush_queue.blocked_seconds();
    t.flush_queue_length = services.flush_queue.queued() as u64;
    t.compaction_queue_length = services.compaction_queue.queued() as u64;
    // One read of the running set, so the counts and the list agree.
    let tasks = services.ctx.tasks.list();
    let running = |kind: TaskKind| tasks.iter().filter(|task| task.kind == kind).count() as u64;
    t.flushes_in_progress = running(TaskKind::Flush);
    t.compactions_in_progress = running(TaskKind::Compaction);
    t.splits_in_progress = running(TaskKind::Split);
    t.merges_in_progress = running(TaskKind::Merge);
    if let Some(cache) = services.ctx.block_cache.as_ref() {
        let s = cache.stats();
        t.block_cache_hits = s.hits;
        t.block_cache_misses = s.misses;
        t.block_cache_bytes = s.bytes;
        t.block_cache_evictions = s.evictions;
    }
    StoreMetrics { totals: t, tables, dropped_tables: counted.dropped, regions, tasks }
}
