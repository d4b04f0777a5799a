//! `/jmx`: the server's figures as JSON in the shape of HBase's JMX servlet
//! (`JMXJsonServlet`), `{"beans": [{"name": ..., "modelerType": ...,
//! attributes...}, ...]}`, for tools that read an HBase region server's
//! `/jmx`. `?qry=<object name pattern>` keeps only the beans it matches
//! ([`crate::object_name`]: an exact name, `Hadoop:*`, `sub=*`, ...); a
//! malformed one is a 400, one that matches nothing an empty list.
//!
//! The beans, under HBase's names where HBase has the bean, with HBase's
//! attribute names where HBase has the figure and names of ours in the
//! same style for figures HBase lacks:
//! - `Hadoop:service=HBase,name=RegionServer,sub=Server`: regions, stores,
//!   store files, memstore, requests, the flush and compaction queues,
//!   tasks in progress, blocked writes, the block cache;
//! - `...,sub=WAL`: appends, bytes written, sync rounds and their times;
//! - `...,sub=Regions`: per region, attributes named
//!   `Namespace_default_table_<t>_region_<encoded>_metric_<figure>`;
//! - `accordion:type=Process`: the process (RSS, CPU, file descriptors,
//!   threads) — in place of the JVM's `java.lang:*` beans, which have no
//!   counterpart here.
//!
//! Invariants: every figure is read from the same sources `/metrics` reads
//! (`Store::metrics`, the WAL's and the block cache's stats, the request
//! histograms, `/proc/self`), so a quantity has one value in both; what
//! cannot be measured is left out, never shown as 0 (no block cache: no
//! `blockCache*`; no sync round yet: no `SyncTime_*` times).
//!
//! Thread safety: reads snapshots; holds no lock while it renders.

use serde_json::{Map, Value, json};
use store::metrics::StoreMetrics;

use crate::object_name::{ObjectNamePattern, PatternError};
use crate::request_metrics::Op;
use crate::status_source::StatusSource;

pub const SERVER_BEAN: &str = "Hadoop:service=HBase,name=RegionServer,sub=Server";
pub const WAL_BEAN: &str = "Hadoop:service=HBase,name=RegionServer,sub=WAL";
pub const REGIONS_BEAN: &str = "Hadoop:service=HBase,name=RegionServer,sub=Regions";
pub const PROCESS_BEAN: &str = "accordion:type=Process";

/// What builds a bean's attributes.
type Attributes<'a> = dyn Fn() -> Map<String, Value> + 'a;

/// The `/jmx` document for `qry` (`None`: every bean).
pub fn render(source: &StatusSource, qry: Option<&str>) -> Result<String, PatternError> {
    let pattern = match qry {
        Some(q) => q.parse()?,
        None => ObjectNamePattern::all(),
    };
    let m = source.store.metrics();
    // Each bean is built only when asked for: a `qry` of one bean reads
    // nothing else (no walk of /proc for the Server bean alone).
    let builders: [(&str, &str, &Attributes); 4] = [
        (SERVER_BEAN, "RegionServer,sub=Server", &|| server_bean(source, &m)),
        (WAL_BEAN, "RegionServer,sub=WAL", &|| wal_bean(source)),
        (REGIONS_BEAN, "RegionServer,sub=Regions", &|| regions_bean(&m)),
        (PROCESS_BEAN, "accordion,type=Process", &process_bean),
    ];
    let beans: Vec<Value> = builders
        .iter()
        .filter(|(name, _, _)| pattern.matches(name))
        .map(|(name, modeler, build)| {
            let mut bean = Map::new();
            bean.insert("name".into(), json!(name));
            bean.insert("modelerType".into(), json!(modeler));
            bean.extend(build());
            Value::Object(bean)
        })
        .collect();
    Ok(serde_json::to_string_pretty(&json!({ "beans": beans })).unwrap_or_default())
}

/// `(name, value)` pairs into a bean's attributes.
fn attributes<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(name, value)| (name.to_string(), value)).collect()
}

fn server_bean(source: &StatusSource, m: &StoreMetrics) -> Map<String, Value> {
    let t = &m.totals;
    let families = || m.regions.iter().flat_map(|r| &r.families);
    let requests = crate::request_history::totals(&source.requests.snapshot());
    let total_requests: u64 = Op::ALL.iter().map(|&op| requests.get(op).count()).sum();
    let mut a = attributes([
        ("regionServerStartTime", json!(source.started_at_ms())),
        ("regionCount", json!(m.regions.iter().filter(|r| r.state == "OPEN").count())),
        ("storeCount", json!(families().count())),
        ("storeFileCount", json!(t.store_files)),
        ("storeFileSize", json!(families().map(|f| f.store_files_bytes).sum::<u64>())),
        ("memStoreSize", json!(t.memstore_data_bytes)),
        ("memStoreHeapSize", json!(t.memstore_heap_bytes)),
        ("memStoreLimit", json!(source.store.options().global_memstore_limit())),
        ("totalRequestCount", json!(total_requests)),
        ("readRequestCount", json!(t.gets + t.scans)),
        ("writeRequestCount", json!(t.write_requests)),
        ("flushQueueLength", json!(t.flush_queue_length)),
        ("compactionQueueLength", json!(t.compaction_queue_length)),
        ("flushesInProgress", json!(t.flushes_in_progress)),
        ("compactionsInProgress", json!(t.compactions_in_progress)),
        ("splitsInProgress", json!(t.splits_in_progress)),
        ("mergesInProgress", json!(t.merges_in_progress)),
        ("blockedRequestCount", json!(t.blocked_writes)),
        ("flushedCellsSize", json!(t.bytes_flushed)),
        ("flushFailureCount", json!(t.flush_failures)),
        ("compactionFailureCount", json!(t.compaction_failures)),
    ]);
    if let Some(member) = source.store.as_member() {
        a.insert("tag.serverName".into(), json!(member.name()));
    }
    if let Some(cache) = source.store.block_cache().map(|c| c.stats()) {
        a.extend(attributes([
            ("blockCacheHitCount", json!(cache.hits)),
            ("blockCacheMissCount", json!(cache.misses)),
            ("blockCacheEvictionCount", json!(cache.evictions)),
            ("blockCacheSize", json!(cache.bytes)),
            ("blockCacheFreeSize", json!(cache.capacity.saturating_sub(cache.bytes))),
            ("blockCacheCount", json!(cache.count)),
        ]));
    }
    a
}

fn wal_bean(source: &StatusSource) -> Map<String, Value> {
    let wal = source.store.wal();
    let w = wal.stats();
    let sync = wal.sync_latency_buckets(&[]);
    let mut a = attributes([
        ("appendCount", json!(w.appends)),
        ("writtenBytes", json!(w.bytes_written)),
        ("SyncTime_num_ops", json!(sync.count)),
        ("syncFailureCount", json!(w.sync_failures)),
        ("logFilesCreated", json!(w.files_created)),
        ("logFilesArchived", json!(w.files_archived)),
        ("currentLogFileSize", json!(w.current_file_size)),
    ]);
    // HBase's histogram attributes, in milliseconds, over every round since
    // the WAL opened; without a round there is no time to show.
    if sync.count > 0 {
        let l = wal.sync_latency();
        let ms = |us: u64| us as f64 / 1000.0;
        a.extend(attributes([
            ("SyncTime_mean", json!(sync.sum.as_secs_f64() * 1000.0 / sync.count as f64)),
            ("SyncTime_median", json!(ms(l.p50_us))),
            ("SyncTime_99th_percentile", json!(ms(l.p99_us))),
            ("SyncTime_max", json!(ms(l.max_us))),
        ]));
    }
    a
}

fn regions_bean(m: &StoreMetrics) -> Map<String, Value> {
    let mut a = Map::new();
    a.insert("numRegions".into(), json!(m.regions.len()));
    for r in &m.regions {
        // HBase's per-region names; every table here is in the default
        // namespace (others are refused, `store::names`).
        let prefix = format!("Namespace_default_table_{}_region_{}_metric_", r.table, r.region);
        let files = r.families.iter().map(|f| f.store_files).sum::<u64>();
        let file_bytes = r.families.iter().map(|f| f.store_files_bytes).sum::<u64>();
        let memstore = r.families.iter().map(|f| f.memstore_data_bytes).sum::<u64>();
        let compactions = r.families.iter().map(|f| f.compactions).sum::<u64>();
        for (metric, value) in [
            ("storeCount", r.families.len() as u64),
            ("storeFileCount", files),
            ("storeFileSize", file_bytes),
            ("memStoreSize", memstore),
            ("readRequestCount", r.read_requests),
            ("writeRequestCount", r.write_requests),
            ("compactionsCompletedCount", compactions),
        ] {
            a.insert(format!("{prefix}{metric}"), json!(value));
        }
    }
    a
}

fn process_bean() -> Map<String, Value> {
    let Some(p) = crate::process_metrics::read() else { return Map::new() };
    let mut a = attributes([
        ("cpuSeconds", json!(p.cpu.as_secs_f64())),
        ("residentMemoryBytes", json!(p.resident_bytes)),
        ("virtualMemoryBytes", json!(p.virtual_bytes)),
        ("openFileDescriptorCount", json!(p.open_fds)),
        ("threadCount", json!(p.threads)),
        ("startTime", json!((p.start_time_seconds * 1000.0) as u64)),
    ]);
    if let Some(max) = p.max_fds {
        a.insert("maxFileDescriptorCount".into(), json!(max));
    }
    a
}
