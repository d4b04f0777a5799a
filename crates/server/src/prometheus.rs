//! `/metrics`: the server's figures in Prometheus' text format (0.0.4),
//! after Prometheus' conventions: every family has `# HELP` and `# TYPE`;
//! what only grows is a `counter` named `..._total` (`..._bytes_total`,
//! `..._seconds_total`); levels are `gauge`s with their unit in the name
//! (`_bytes`, `_seconds`); latencies are `histogram`s in seconds.
//!
//! The families, by what they describe:
//! - per table (label `table`): the store's counters (cells put, delete
//!   markers, gets, region scans, user bytes, flushes, compactions and
//!   their bytes, Accordion's in-memory flushes, flattens, merges and
//!   compactions), the regions held, and the request latency histogram
//!   `accordion_request_duration_seconds` (labels `table`, `op`: put,
//!   delete, get, scan), timed by the Thrift handler;
//! - per region (`table`, `region`): its state and its read and write
//!   request counts (as gauges, see below); per family store (`table`,
//!   `region`, `family`, `policy`): memstore and store-file levels;
//! - store-wide: the WAL (counters, and `accordion_wal_sync_duration_seconds`
//!   from the WAL's own HdrHistogram), flush and compaction failures,
//!   blocked writes, the flush and compaction queues' lengths, the tasks in
//!   progress by kind, the block cache, the memstore limit and chunk pool,
//!   write amplification; the Thrift front end; `accordion_build_info`;
//! - the process: `process_cpu_seconds_total`,
//!   `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//!   `process_open_fds`, `process_max_fds`, `process_threads`,
//!   `process_start_time_seconds`, the names client libraries use.
//!
//! Invariants:
//! - No counter goes backwards while the process lives, summed over its
//!   series: when a table is dropped its per-table counters and latency
//!   histograms are folded into one store-wide series with the label
//!   `table="(dropped)"` (no table can have that name: table names are
//!   `[A-Za-z0-9_.-]`), so `sum(accordion_..._total)` never decreases;
//!   regions a split, merge or reopen replaced stay counted in their
//!   table's series (the store keeps them, `store::table_counters`). Per
//!   region and per family only gauges are exported, never counters (a
//!   region's series end with the region): a region's request counts are
//!   gauges of what that region instance served.
//! - Each family's samples follow its HELP and TYPE lines, together; a
//!   family without samples is left out.
//!
//! Thread safety: reads snapshots (store metrics, counters, histograms);
//! holds no lock while it renders.

use std::fmt::{Display, Write as _};
use std::time::Duration;

use store::TableCounters;

use crate::request_metrics::{HistogramSnapshot, LATENCY_BOUNDS, Op};
use crate::status_source::{StatusSource, scanner_pinned};

/// The `table` label of what dropped tables counted.
pub const DROPPED_TABLES: &str = "(dropped)";

/// The WAL sync histogram's buckets: the request latencies' ones.
pub const WAL_SYNC_BOUNDS: [Duration; 16] = LATENCY_BOUNDS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A store counter per table: name, help, the field.
type TableCounter = (&'static str, &'static str, fn(&TableCounters) -> u64);

const TABLE_COUNTERS: [TableCounter; 20] = [
    ("accordion_put_cells_total", "Cells written by puts (a row of four columns counts four).", |c| c.puts),
    ("accordion_delete_markers_total", "Delete markers written.", |c| c.deletes),
    ("accordion_gets_total", "Gets the store served (a Thrift getRows of n rows counts n).", |c| c.gets),
    (
        "accordion_gets_from_memstore_total",
        "Gets answered from the memstores alone: every column asked for was newer there than in any store file.",
        |c| c.gets_from_memstore,
    ),
    ("accordion_region_scans_total", "Region scanners opened (a scan over n regions counts n).", |c| c.scans),
    ("accordion_user_written_bytes_total", "Bytes of user data (keys and values) written.", |c| c.user_bytes),
    ("accordion_write_requests_total", "Rows written (a batch of n rows counts n), HBase's write requests.", |c| {
        c.write_requests
    }),
    ("accordion_flushes_total", "Region flushes of the memstore to disk.", |c| c.flushes),
    ("accordion_family_flushes_total", "Family store flushes (a region flush flushes each family).", |c| {
        c.family_flushes
    }),
    ("accordion_flushed_bytes_total", "Bytes of store files written by flushes.", |c| c.bytes_flushed),
    ("accordion_flushed_cells_total", "Cells written to store files by flushes.", |c| c.cells_flushed),
    ("accordion_compactions_total", "Disk compactions, major ones included.", |c| c.compactions),
    ("accordion_major_compactions_total", "Major disk compactions.", |c| c.major_compactions),
    ("accordion_compacted_bytes_total", "Bytes of store files written by disk compactions.", |c| c.bytes_compacted),
    ("accordion_compacted_files_total", "Store files read by disk compactions.", |c| c.files_compacted),
    ("accordion_inmemory_flushes_total", "In-memory flushes: active segments pushed into the pipeline.", |c| {
        c.inmemory_flushes
    }),
    ("accordion_inmemory_flattens_total", "Pipeline segments whose index was flattened.", |c| c.flattens),
    ("accordion_inmemory_merges_total", "In-memory merges of pipeline segments (no cells dropped).", |c| c.merges),
    ("accordion_inmemory_compactions_total", "In-memory compactions (redundant cells dropped).", |c| {
        c.inmemory_compactions
    }),
    ("accordion_inmemory_dropped_cells_total", "Cells that in-memory compactions dropped.", |c| {
        c.cells_dropped_in_memory
    }),
];

/// The exposition being written.
#[derive(Default)]
struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {}", kind.name());
    }

    fn sample(&mut self, name: &str, labels: &str, value: impl Display) {
        let _ = if labels.is_empty() {
            writeln!(self.0, "{name} {value}")
        } else {
            writeln!(self.0, "{name}{{{labels}}} {value}")
        };
    }

    /// A family of one unlabelled sample.
    fn single(&mut self, name: &str, kind: Kind, help: &str, value: impl Display) {
        self.family(name, kind, help);
        self.sample(name, "", value);
    }

    /// One histogram's samples: `cumulative[i]` at `bounds[i]`, then `+Inf`
    /// (`count`), `_sum` and `_count`.
    fn histogram(&mut self, name: &str, labels: &str, bounds: &[Duration], cumulative: &[u64], count: u64, sum: f64) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (b, c) in bounds.iter().zip(cumulative) {
            let _ = writeln!(self.0, "{name}_bucket{{{labels}{sep}le=\"{}\"}} {c}", b.as_secs_f64());
        }
        let _ = writeln!(self.0, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample(&format!("{name}_count"), labels, count);
    }

    fn request_histogram(&mut self, labels: &str, h: &HistogramSnapshot) {
        let n = LATENCY_BOUNDS.len();
        self.histogram(
            "accordion_request_duration_seconds",
            labels,
            &LATENCY_BOUNDS,
            &h.cumulative[..n],
            h.count(),
            h.sum_seconds(),
        );
    }
}

/// A label value, escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `k="v",...`, values escaped.
fn labels(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect::<Vec<_>>().join(",")
}

/// Every family (see the module doc).
pub fn render(source: &StatusSource) -> String {
    let mut out = Out::default();
    store_families(&mut out, source);
    thrift_families(&mut out, source);
    process_families(&mut out);
    out.0
}

fn store_families(out: &mut Out, source: &StatusSource) {
    let store = &source.store;
    let m = store.metrics();
    let t = &m.totals;
    out.family("accordion_build_info", Kind::Gauge, "Always 1; the version of Accordion KV serving.");
    out.sample("accordion_build_info", &labels(&[("version", env!("CARGO_PKG_VERSION"))]), 1);

    // Per table, with what dropped tables counted as one more series.
    let dropped = (t.tables_dropped > 0).then_some(m.dropped_tables);
    let per_table = if m.tables.is_empty() && dropped.is_none() { &[][..] } else { &TABLE_COUNTERS[..] };
    for &(name, help, field) in per_table {
        out.family(name, Kind::Counter, help);
        for table in &m.tables {
            out.sample(name, &labels(&[("table", &table.table)]), field(&table.counters));
        }
        if let Some(d) = &dropped {
            out.sample(name, &labels(&[("table", DROPPED_TABLES)]), field(d));
        }
    }
    if !m.tables.is_empty() {
        out.family("accordion_regions", Kind::Gauge, "Regions of the table on this server, in any state.");
        for table in &m.tables {
            out.sample("accordion_regions", &labels(&[("table", &table.table)]), table.regions);
        }
    }
    if !m.regions.is_empty() {
        out.family(
            "accordion_region_state",
            Kind::Gauge,
            "1 for the region's current state (OPEN, CLOSED, SPLITTING, ...), 0 for the others.",
        );
        for r in &m.regions {
            for s in store::RegionState::all() {
                let l = labels(&[("table", &r.table), ("region", &r.region), ("state", s.name())]);
                out.sample("accordion_region_state", &l, u8::from(s.name() == r.state));
            }
        }
    }
    // Request counts per region: gauges, not counters, because a region's
    // series ends with the region (a split or merge replaces it), so their
    // sum over a table goes down; the per-table `_total` families keep
    // what replaced regions counted. They are what HBase shows per region.
    type RegionGauge = (&'static str, &'static str, fn(&store::metrics::RegionMetrics) -> u64);
    let region_gauges: [RegionGauge; 2] = [
        (
            "accordion_region_read_requests",
            "Gets and region scanners the region served since it opened on this server.",
            |r| r.read_requests,
        ),
        ("accordion_region_write_requests", "Rows written to the region since it opened on this server.", |r| {
            r.write_requests
        }),
    ];
    if !m.regions.is_empty() {
        for (name, help, field) in region_gauges {
            out.family(name, Kind::Gauge, help);
            for r in &m.regions {
                out.sample(name, &labels(&[("table", &r.table), ("region", &r.region)]), field(r));
            }
        }
    }
    type FamilyGauge = (&'static str, &'static str, fn(&store::metrics::FamilyMetrics) -> u64);
    let family_gauges: [FamilyGauge; 6] = [
        ("accordion_family_memstore_data_bytes", "Bytes of cells in the family's memstore.", |f| f.memstore_data_bytes),
        ("accordion_family_memstore_heap_bytes", "Heap the family's memstore takes (cells, indexes, chunks).", |f| {
            f.memstore_heap_bytes
        }),
        ("accordion_family_memstore_cells", "Cells in the family's memstore.", |f| f.memstore_cells),
        ("accordion_family_pipeline_segments", "Segments in the family's in-memory compaction pipeline.", |f| {
            f.pipeline_segments
        }),
        ("accordion_family_store_files", "Store files of the family.", |f| f.store_files),
        ("accordion_family_store_file_bytes", "Bytes of the family's store files.", |f| f.store_files_bytes),
    ];
    if m.regions.iter().any(|r| !r.families.is_empty()) {
        for (name, help, field) in family_gauges {
            out.family(name, Kind::Gauge, help);
            for r in &m.regions {
                for f in &r.families {
                    let l = labels(&[
                        ("table", &r.table),
                        ("region", &r.region),
                        ("family", &f.family),
                        ("policy", &f.policy),
                    ]);
                    out.sample(name, &l, field(f));
                }
            }
        }
    }

    let requests = source.requests.snapshot();
    if !requests.tables.is_empty() || requests.dropped.is_some() {
        out.family(
            "accordion_request_duration_seconds",
            Kind::Histogram,
            "Thrift calls that succeeded, by table and operation, timed around the store's work.",
        );
        let dropped = requests.dropped.map(|d| (DROPPED_TABLES.to_string(), d));
        for (table, ops) in requests.tables.iter().chain(dropped.iter()) {
            for op in Op::ALL {
                out.request_histogram(&labels(&[("table", table), ("op", op.name())]), ops.get(op));
            }
        }
    }

    out.single(
        "accordion_global_memstore_limit_bytes",
        Kind::Gauge,
        "The memstores' limit over all regions; writes block above it.",
        store.options().global_memstore_limit(),
    );
    chunk_pool_families(out, &store.chunk_pool().stats());
    out.single(
        "accordion_write_amplification_ratio",
        Kind::Gauge,
        "Bytes flushed and compacted over user bytes written, since the store opened.",
        t.write_amplification,
    );
    out.single(
        "accordion_flush_queue_length",
        Kind::Gauge,
        "Regions queued for a flush that no flusher thread has taken yet.",
        t.flush_queue_length,
    );
    out.single(
        "accordion_compaction_queue_length",
        Kind::Gauge,
        "Family stores queued for a compaction check that no compaction thread has taken yet.",
        t.compaction_queue_length,
    );
    out.family(
        "accordion_tasks_in_progress",
        Kind::Gauge,
        "Background work running now, by kind: family store flushes, disk compactions, splits, merges.",
    );
    for kind in store::tasks::TaskKind::ALL {
        out.sample("accordion_tasks_in_progress", &labels(&[("kind", kind.name())]), t.in_progress(kind));
    }
    out.single(
        "accordion_flush_failures_total",
        Kind::Counter,
        "Flushes that failed (and were retried).",
        t.flush_failures,
    );
    out.single(
        "accordion_compaction_failures_total",
        Kind::Counter,
        "Disk compactions that failed.",
        t.compaction_failures,
    );
    out.single(
        "accordion_blocked_writes_total",
        Kind::Counter,
        "Writes that waited for memory (a region at its blocking size, or the global limit).",
        t.blocked_writes,
    );
    out.single(
        "accordion_blocked_write_seconds_total",
        Kind::Counter,
        "Seconds writes spent waiting for memory, summed over writers.",
        t.blocked_write_seconds,
    );

    let w = store.wal().stats();
    out.single(
        "accordion_wal_appends_total",
        Kind::Counter,
        "Entries appended to the WAL (SKIP_WAL writes are not).",
        w.appends,
    );
    out.single(
        "accordion_wal_syncs_total",
        Kind::Counter,
        "WAL sync rounds that succeeded (group commit: a round syncs many appends).",
        w.syncs,
    );
    out.single("accordion_wal_sync_failures_total", Kind::Counter, "WAL writes or syncs that failed.", w.sync_failures);
    out.single(
        "accordion_wal_written_bytes_total",
        Kind::Counter,
        "Bytes written to WAL files (records and headers).",
        w.bytes_written,
    );
    out.single("accordion_wal_files_created_total", Kind::Counter, "WAL files created (rolls).", w.files_created);
    out.single("accordion_wal_files_archived_total", Kind::Counter, "WAL files archived.", w.files_archived);
    out.single(
        "accordion_wal_current_file_bytes",
        Kind::Gauge,
        "Bytes in the WAL file being written.",
        w.current_file_size,
    );
    // A histogram, not a summary: buckets can be summed over servers and
    // turned into any quantile over any window (`histogram_quantile` of
    // their rates), while a summary's quantiles are fixed per process and
    // cannot be aggregated. The WAL keeps the rounds in an HdrHistogram (2
    // significant digits), from which the buckets are read at each scrape:
    // a round is counted at a bound when its whole HdrHistogram bucket is
    // at or below it (so within 1 % of a bound it may fall in the next);
    // the sum is kept exactly beside it.
    let sync = store.wal().sync_latency_buckets(&WAL_SYNC_BOUNDS);
    out.family(
        "accordion_wal_sync_duration_seconds",
        Kind::Histogram,
        "WAL sync rounds that succeeded: writing a group of records and syncing them once (fsync, or hsync on HDFS).",
    );
    out.histogram(
        "accordion_wal_sync_duration_seconds",
        "",
        &WAL_SYNC_BOUNDS,
        &sync.cumulative,
        sync.count,
        sync.sum.as_secs_f64(),
    );

    let cache = store.block_cache().map(|c| c.stats()).unwrap_or_default();
    out.single("accordion_block_cache_hits_total", Kind::Counter, "Block cache lookups that hit.", cache.hits);
    out.single("accordion_block_cache_misses_total", Kind::Counter, "Block cache lookups that missed.", cache.misses);
    out.single(
        "accordion_block_cache_evictions_total",
        Kind::Counter,
        "Blocks evicted from the block cache to make room.",
        cache.evictions,
    );
    out.single("accordion_block_cache_inserts_total", Kind::Counter, "Blocks added to the block cache.", cache.inserts);
    out.single("accordion_block_cache_bytes", Kind::Gauge, "Bytes the cached blocks take.", cache.bytes);
    out.single("accordion_block_cache_capacity_bytes", Kind::Gauge, "The block cache's capacity.", cache.capacity);
    out.single("accordion_block_cache_blocks", Kind::Gauge, "Blocks in the block cache.", cache.count);
}

/// The memstores' chunk pool (HBase's `ChunkCreator` logs the like): how
/// often a chunk came fresh from the system rather than from the pool says
/// whether the pool keeps what the memstores cycle through.
fn chunk_pool_families(out: &mut Out, pool: &memstore::ChunkPoolStats) {
    let counters: [(&str, &str, u64); 4] = [
        ("accordion_chunk_pool_created_total", "Memstore chunks allocated fresh from the system.", pool.created),
        (
            "accordion_chunk_pool_reused_total",
            "Memstore chunks handed out again from the pool's idle ones.",
            pool.reused,
        ),
        ("accordion_chunk_pool_recycled_total", "Memstore chunks given back to the pool and kept idle.", pool.recycled),
        ("accordion_chunk_pool_freed_total", "Memstore chunks given back to the system.", pool.freed),
    ];
    for (name, help, value) in counters {
        out.single(name, Kind::Counter, help, value);
    }
    out.single(
        "accordion_chunk_pool_in_use_bytes",
        Kind::Gauge,
        "Bytes of the memstore chunks in use (whole chunks).",
        pool.in_use_bytes,
    );
    out.single(
        "accordion_chunk_pool_idle_bytes",
        Kind::Gauge,
        "Bytes of the chunks idle in the pool.",
        pool.idle_bytes,
    );
}

fn thrift_families(out: &mut Out, source: &StatusSource) {
    let t = source.thrift.snapshot();
    out.single(
        "accordion_thrift_connections_accepted_total",
        Kind::Counter,
        "Thrift connections accepted.",
        t.accepted,
    );
    out.single(
        "accordion_thrift_connections_refused_total",
        Kind::Counter,
        "Thrift connections refused (over hbase.thrift.maxWorkerThreads).",
        t.refused,
    );
    out.single("accordion_thrift_open_connections", Kind::Gauge, "Thrift connections open.", t.open);
    out.single(
        "accordion_thrift_protocol_errors_total",
        Kind::Counter,
        "Thrift connections closed for breaking the protocol or its limits.",
        t.protocol_errors,
    );
    out.single(
        "accordion_thrift_unknown_wire_connections_total",
        Kind::Counter,
        "Thrift connections whose first bytes were no known transport and protocol.",
        t.unknown_wire,
    );
    out.single("accordion_thrift_open_scanners", Kind::Gauge, "Thrift scanners open.", source.scanners.len());
    out.single(
        "accordion_thrift_scanner_pinned_bytes",
        Kind::Gauge,
        "Memstore memory (whole chunks and index bytes) that only open Thrift scanners keep alive: \
         segments the memstores have flushed, merged or compacted away and a scanner still reads.",
        scanner_pinned(source).bytes,
    );
    out.single(
        "accordion_thrift_expired_scanners_total",
        Kind::Counter,
        "Thrift scanners closed because their lease expired.",
        source.scanners.expired(),
    );
    out.single(
        "accordion_thrift_disconnect_closed_scanners_total",
        Kind::Counter,
        "Thrift scanners closed because the connection that opened them ended.",
        source.scanners.closed_on_disconnect(),
    );
}

fn process_families(out: &mut Out) {
    let Some(p) = crate::process_metrics::read() else { return };
    out.single(
        "process_cpu_seconds_total",
        Kind::Counter,
        "Total user and system CPU time spent in seconds.",
        p.cpu.as_secs_f64(),
    );
    out.single("process_resident_memory_bytes", Kind::Gauge, "Resident memory size in bytes.", p.resident_bytes);
    out.single("process_virtual_memory_bytes", Kind::Gauge, "Virtual memory size in bytes.", p.virtual_bytes);
    out.single("process_open_fds", Kind::Gauge, "Number of open file descriptors.", p.open_fds);
    if let Some(max) = p.max_fds {
        out.single("process_max_fds", Kind::Gauge, "Maximum number of open file descriptors.", max);
    }
    out.single("process_threads", Kind::Gauge, "Number of OS threads in the process.", p.threads);
    out.single(
        "process_start_time_seconds",
        Kind::Gauge,
        "Start time of the process since unix epoch in seconds.",
        p.start_time_seconds,
    );
}
