//! `/metrics` of a real server, parsed with `prometheus-parse`, after puts,
//! deletes, gets, scans and a flush over Thrift: Prometheus' conventions
//! (HELP and TYPE for every family, `_total` names for counters and only
//! for them, histograms with buckets, `_sum` and `_count`), latency
//! histograms counting exactly the calls made, the process's figures, sane
//! values; totals that never go backwards when a table is dropped; and the
//! Grafana dashboard (`docs/grafana/accordion-dashboard.json`) using only
//! metric names a live server exports.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use prometheus_parse::{Sample, Scrape, Value};
use server::thrift::client::{THbaseSyncClient, ThriftClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation, TScan};
use server::{Server, ServerConfig};

fn start() -> (tempfile::TempDir, Server, ThriftClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
    ];
    let server = Server::start(ServerConfig::load(None, &sets).expect("config")).expect("start");
    let c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    (dir, server, c)
}

fn scrape(server: &Server) -> (String, Scrape) {
    let text = ureq::get(&format!("http://{}/metrics", server.http_addr()))
        .call()
        .expect("GET /metrics")
        .body_mut()
        .read_to_string()
        .expect("body");
    let parsed = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parse");
    (text, parsed)
}

/// Thrift calls made, per operation of `accordion_request_duration_seconds`.
#[derive(Debug, Default)]
struct Calls {
    put: u64,
    delete: u64,
    get: u64,
    scan: u64,
}

fn put_mutation(value: &str) -> Mutation {
    Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(value.as_bytes().to_vec()),
        write_to_w_a_l: Some(true),
    }
}

/// Creates `table` and makes calls of every kind on it, then flushes it.
fn traffic(server: &Server, c: &mut ThriftClient, table: &str, rows: usize) -> Calls {
    let t = table.as_bytes().to_vec();
    let mut calls = Calls::default();
    let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(t.clone(), vec![cd]).expect("create");
    let row = |i: usize| format!("row{i:04}").into_bytes();
    for i in 0..rows {
        c.mutate_row(t.clone(), row(i), vec![put_mutation("v")], BTreeMap::new()).expect("put");
        calls.put += 1;
    }
    let batch: Vec<BatchMutation> = (rows..rows + 5)
        .map(|i| BatchMutation { row: Some(row(i)), mutations: Some(vec![put_mutation("w")]) })
        .collect();
    c.mutate_rows(t.clone(), batch, BTreeMap::new()).expect("put rows");
    calls.put += 1;
    for i in 0..2 {
        c.delete_all_row(t.clone(), row(i), BTreeMap::new()).expect("delete");
        calls.delete += 1;
    }
    for i in 0..rows / 2 {
        c.get_row(t.clone(), row(i), BTreeMap::new()).expect("get");
        calls.get += 1;
    }
    c.get_rows(t.clone(), vec![row(3), row(4), row(5)], BTreeMap::new()).expect("get rows");
    calls.get += 1;
    // (TScan's generated Default reads at timestamp 0: build it field by field.)
    let scan = TScan::new(None, None, None, None, None, None, None, None, None);
    let id = c.scanner_open_with_scan(t.clone(), scan, BTreeMap::new()).expect("open");
    calls.scan += 1;
    let mut scanned = 0;
    loop {
        let got = c.scanner_get_list(id, 7).expect("scan");
        calls.scan += 1;
        if got.is_empty() {
            break;
        }
        scanned += got.len();
    }
    assert_eq!(scanned, rows + 5 - 2, "every row but the two deleted");
    c.scanner_close(id).expect("close");
    let flushed = ureq::post(&format!("http://{}/admin/flush?table={table}", server.http_addr())).send_empty();
    assert!(flushed.is_ok(), "{flushed:?}");
    calls
}

fn labels_are(s: &Sample, want: &[(&str, &str)]) -> bool {
    s.labels.len() == want.len() && want.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
}

/// The value of the counter, gauge (or a histogram's `_sum`/`_count`) with
/// exactly `labels`.
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape.samples.iter().filter(|s| s.metric == name && labels_are(s, labels)).find_map(|s| match s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
        _ => None,
    })
}

fn must(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    value(scrape, name, labels).unwrap_or_else(|| panic!("no {name}{labels:?}"))
}

/// The count of the histogram `name` with `labels`: its `+Inf` bucket,
/// checked against its `_count`.
fn histogram_count(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let h = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels_are(s, labels))
        .unwrap_or_else(|| panic!("no histogram {name}{labels:?}"));
    let Value::Histogram(buckets) = &h.value else { panic!("{name} is not a histogram: {h:?}") };
    let inf = buckets.iter().find(|b| b.less_than.is_infinite()).expect("+Inf bucket").count;
    assert_eq!(inf, must(scrape, &format!("{name}_count"), labels), "{name}{labels:?}: +Inf bucket and _count");
    inf
}

/// Prometheus' conventions, on the text and on the parse.
fn check_conventions(text: &str, scrape: &Scrape) {
    let mut helped = BTreeSet::new();
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut current = String::new();
    let mut finished = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            assert!(!help.trim().is_empty(), "{line}");
            assert!(helped.insert(name.to_string()), "two HELP lines for {name}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(helped.contains(name), "TYPE {name} without a HELP before it");
            assert!(typed.insert(name.to_string(), kind.to_string()).is_none(), "two TYPE lines for {name}");
            if !current.is_empty() {
                finished.insert(std::mem::take(&mut current));
            }
            current = name.to_string();
        } else if !line.is_empty() {
            assert!(!line.starts_with('#'), "a comment that is neither HELP nor TYPE: {line}");
            let name = line.split(['{', ' ']).next().expect("a name");
            let family = if typed.contains_key(name) {
                name.to_string()
            } else {
                let base = ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s));
                let base = base.unwrap_or_else(|| panic!("{name} has no TYPE"));
                assert_eq!(typed.get(base).map(String::as_str), Some("histogram"), "{name} has no TYPE");
                base.to_string()
            };
            assert_eq!(family, current, "{name}'s sample is not with its family's other samples");
            assert!(!finished.contains(&family), "{family}'s samples are split");
        }
    }
    assert_eq!(helped.len(), typed.len(), "a HELP without a TYPE");
    for (name, kind) in &typed {
        assert!(["counter", "gauge", "histogram"].contains(&kind.as_str()), "{name}: {kind}");
        assert_eq!(name.ends_with("_total"), kind == "counter", "{name} is a {kind}: only counters end in _total");
        if kind == "histogram" {
            assert!(name.ends_with("_seconds"), "{name}: a latency histogram in seconds");
        }
        assert!(name.starts_with("accordion_") || name.starts_with("process_"), "{name}: our namespace");
    }
    for s in &scrape.samples {
        match &s.value {
            Value::Counter(v) => {
                assert!(s.metric.ends_with("_total") && v.is_finite() && *v >= 0.0, "{s:?}");
                assert!(scrape.docs.contains_key(&s.metric), "{} has no HELP", s.metric);
            }
            Value::Gauge(v) => {
                assert!(v.is_finite(), "{s:?}");
                assert!(scrape.docs.contains_key(&s.metric), "{} has no HELP", s.metric);
            }
            Value::Histogram(buckets) => {
                assert!(scrape.docs.contains_key(&s.metric), "{} has no HELP", s.metric);
                let mut b = buckets.clone();
                b.sort_by(|x, y| x.less_than.total_cmp(&y.less_than));
                assert!(b.len() > 10 && b.last().is_some_and(|l| l.less_than.is_infinite()), "{s:?}");
                assert!(b.windows(2).all(|w| w[0].count <= w[1].count), "cumulative buckets: {s:?}");
                let labels: Vec<(&str, &str)> = s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let count = histogram_count(scrape, &s.metric, &labels);
                let sum = must(scrape, &format!("{}_sum", s.metric), &labels);
                assert!(sum >= 0.0 && (count > 0.0 || sum == 0.0), "{}: sum {sum} count {count}", s.metric);
            }
            Value::Untyped(_) => {
                let base = s.metric.strip_suffix("_sum").or_else(|| s.metric.strip_suffix("_count"));
                assert!(
                    base.is_some_and(|b| typed.get(b).is_some_and(|k| k == "histogram")),
                    "{} has no TYPE",
                    s.metric
                );
            }
            Value::Summary(_) => panic!("no summaries: {s:?}"),
        }
    }
}

#[test]
fn metrics_follow_prometheus_conventions_and_count_the_calls_made() {
    let (_dir, server, mut c) = start();
    let calls = traffic(&server, &mut c, "web", 40);
    let (text, scrape) = scrape(&server);
    check_conventions(&text, &scrape);

    // The request histograms count exactly the calls made.
    for (op, n) in [("put", calls.put), ("delete", calls.delete), ("get", calls.get), ("scan", calls.scan)] {
        let count = histogram_count(&scrape, "accordion_request_duration_seconds", &[("table", "web"), ("op", op)]);
        assert_eq!(count, n as f64, "{op} calls: {calls:?}");
        let sum = must(&scrape, "accordion_request_duration_seconds_sum", &[("table", "web"), ("op", op)]);
        assert!(sum > 0.0 && sum < 10.0 * n as f64, "{op}: {sum} s over {n} calls");
    }
    // Every sync round of the WAL is in its histogram.
    let syncs = must(&scrape, "accordion_wal_syncs_total", &[]);
    assert!(syncs >= 1.0, "SYNC_WAL writes synced");
    assert_eq!(histogram_count(&scrape, "accordion_wal_sync_duration_seconds", &[]), syncs);

    // The store's counters.
    let web = [("table", "web")];
    assert_eq!(must(&scrape, "accordion_put_cells_total", &web), 45.0);
    assert!(must(&scrape, "accordion_delete_markers_total", &web) >= 2.0);
    assert_eq!(must(&scrape, "accordion_gets_total", &web), 20.0 + 3.0, "a getRows of three rows is three gets");
    assert_eq!(must(&scrape, "accordion_region_scans_total", &web), 1.0);
    assert!(must(&scrape, "accordion_user_written_bytes_total", &web) > 45.0);
    assert_eq!(must(&scrape, "accordion_flushes_total", &web), 1.0);
    assert!(must(&scrape, "accordion_flushed_bytes_total", &web) > 0.0);
    assert_eq!(must(&scrape, "accordion_regions", &web), 1.0);
    assert!(must(&scrape, "accordion_wal_appends_total", &[]) >= (calls.put + calls.delete) as f64);
    assert!(must(&scrape, "accordion_wal_written_bytes_total", &[]) > 0.0);
    assert!(must(&scrape, "accordion_global_memstore_limit_bytes", &[]) > 0.0);
    // The puts took memstore chunks; every chunk handed out came fresh or
    // from the pool, and a chunk given back was kept or freed.
    let chunk = |name: &str| must(&scrape, &format!("accordion_chunk_pool_{name}"), &[]);
    assert!(chunk("created_total") >= 1.0, "the first put allocates a chunk");
    assert!(chunk("recycled_total") + chunk("freed_total") <= chunk("created_total") + chunk("reused_total"));
    let in_pool = chunk("in_use_bytes") + chunk("idle_bytes");
    assert!(in_pool >= 1.0 && in_pool % (128.0 * 1024.0) == 0.0, "whole chunks: {in_pool}");
    assert_eq!(must(&scrape, "accordion_thrift_connections_accepted_total", &[]), 1.0);
    assert_eq!(must(&scrape, "accordion_thrift_open_connections", &[]), 1.0);
    assert_eq!(must(&scrape, "accordion_thrift_open_scanners", &[]), 0.0);
    assert_eq!(must(&scrape, "accordion_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    let region_states = scrape.samples.iter().filter(|s| s.metric == "accordion_region_state");
    assert_eq!(region_states.filter(|s| matches!(s.value, Value::Gauge(v) if v == 1.0)).count(), 1);

    // The process.
    assert!(must(&scrape, "process_resident_memory_bytes", &[]) > 1e6);
    assert!(must(&scrape, "process_virtual_memory_bytes", &[]) >= must(&scrape, "process_resident_memory_bytes", &[]));
    assert!(must(&scrape, "process_open_fds", &[]) >= 3.0);
    assert!(must(&scrape, "process_max_fds", &[]) >= must(&scrape, "process_open_fds", &[]));
    assert!(must(&scrape, "process_threads", &[]) >= 3.0, "Thrift, HTTP, the WAL's syncer at least");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
    let started = must(&scrape, "process_start_time_seconds", &[]);
    assert!(started <= now + 1.0 && started > now - 86_400.0, "started {started}, now {now}");
    let cpu = must(&scrape, "process_cpu_seconds_total", &[]);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert!(cpu >= 0.0 && cpu <= (now - started + 1.0) * cores, "{cpu} s of CPU in {} s", now - started);
}

/// Per family: the sum of every counter's series, and of every histogram
/// bucket's and count's.
fn sums(scrape: &Scrape) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in &scrape.samples {
        match &s.value {
            Value::Counter(v) => *out.entry(s.metric.clone()).or_default() += v,
            Value::Histogram(buckets) => {
                for b in buckets {
                    *out.entry(format!("{}_bucket{{le={}}}", s.metric, b.less_than)).or_default() += b.count;
                }
            }
            Value::Untyped(v) if s.metric.ends_with("_count") => *out.entry(s.metric.clone()).or_default() += v,
            _ => {}
        }
    }
    out
}

#[test]
fn totals_never_go_backwards_when_a_table_is_dropped() {
    let (_dir, server, mut c) = start();
    traffic(&server, &mut c, "keep", 10);
    let gone = traffic(&server, &mut c, "gone", 30);
    let (_, before) = scrape(&server);
    c.disable_table(b"gone".to_vec()).expect("disable");
    c.delete_table(b"gone".to_vec()).expect("delete");
    let (text, after) = scrape(&server);
    check_conventions(&text, &after);

    let (b, a) = (sums(&before), sums(&after));
    for (name, was) in &b {
        let now = a.get(name).copied().unwrap_or(0.0);
        assert!(now >= *was, "sum of {name} went from {was} to {now}");
    }
    assert!(!text.contains("table=\"gone\""), "the dropped table's own series are gone");
    // What the dropped table counted is kept whole under table="(dropped)".
    let dropped = [("table", "(dropped)")];
    for name in ["accordion_put_cells_total", "accordion_gets_total", "accordion_region_scans_total"] {
        assert_eq!(must(&after, name, &dropped), must(&before, name, &[("table", "gone")]), "{name}");
        assert_eq!(a[name], b[name], "{name}: nothing ran in between, so nothing changed");
    }
    assert!(must(&after, "accordion_flushes_total", &dropped) >= 1.0);
    for (op, n) in [("put", gone.put), ("delete", gone.delete), ("get", gone.get), ("scan", gone.scan)] {
        let labels = [("table", "(dropped)"), ("op", op)];
        assert_eq!(histogram_count(&after, "accordion_request_duration_seconds", &labels), n as f64, "{op}");
    }
    assert_eq!(must(&after, "accordion_put_cells_total", &[("table", "keep")]), 15.0, "the other table is untouched");

    // A table created again under the dropped one's name starts afresh.
    traffic(&server, &mut c, "gone", 4);
    let (_, again) = scrape(&server);
    assert_eq!(must(&again, "accordion_put_cells_total", &[("table", "gone")]), 9.0);
    assert_eq!(
        must(&again, "accordion_put_cells_total", &dropped),
        must(&after, "accordion_put_cells_total", &dropped)
    );
    for (name, was) in &a {
        let now = sums(&again).get(name).copied().unwrap_or(0.0);
        assert!(now >= *was, "sum of {name} went from {was} to {now}");
    }
}

/// The metric names in a PromQL expression (ours start with `accordion_` or
/// `process_`); label matchers, strings and range selectors skipped.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut chars = expr.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, names: &mut Vec<String>| {
        if word.starts_with("accordion_") || word.starts_with("process_") {
            names.push(word.clone());
        }
        word.clear();
    };
    while let Some(ch) = chars.next() {
        match ch {
            '{' | '[' | '"' => {
                flush(&mut word, &mut names);
                let close = match ch {
                    '{' => '}',
                    '[' => ']',
                    _ => '"',
                };
                for c in chars.by_ref() {
                    if c == close {
                        break;
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '_' || c == ':' => word.push(c),
            _ => flush(&mut word, &mut names),
        }
    }
    flush(&mut word, &mut names);
    names
}

/// Every string under a key `expr` (panels' targets) or `query` /
/// `definition` (template variables) in `v`.
fn queries(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr" | "query" | "definition", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => queries(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| queries(i, out)),
        _ => {}
    }
}

#[test]
fn the_grafana_dashboard_uses_only_exported_metrics() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/accordion-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("dashboard JSON");
    assert!(dashboard["schemaVersion"].as_u64().is_some_and(|v| (36..=39).contains(&v)), "Grafana 10's schema");
    assert!(
        dashboard["__inputs"].as_array().is_some_and(|i| i.iter().any(|i| i["name"] == "DS_PROMETHEUS")),
        "the datasource is an input: ${{DS_PROMETHEUS}}"
    );
    let panels = dashboard["panels"].as_array().expect("panels");
    for p in panels.iter().filter(|p| p["type"] != "row") {
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "panel {}", p["title"]);
        assert!(p["targets"].as_array().is_some_and(|t| !t.is_empty()), "panel {} has queries", p["title"]);
    }

    // A live server with traffic of every kind exports every name used.
    let (_dir, server, mut c) = start();
    traffic(&server, &mut c, "web", 10);
    let (exposition, _) = scrape(&server);
    let exported: BTreeSet<&str> =
        exposition.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split(['{', ' ']).next()).collect();
    let mut exprs = Vec::new();
    queries(&dashboard, &mut exprs);
    let used: BTreeSet<String> = exprs.iter().flat_map(|e| metric_names(e)).collect();
    let missing: Vec<&String> = used.iter().filter(|n| !exported.contains(n.as_str())).collect();
    assert!(missing.is_empty(), "the dashboard uses metrics the server does not export: {missing:?}");
    // And it shows what it is for.
    for name in [
        "accordion_request_duration_seconds_bucket",
        "accordion_request_duration_seconds_count",
        "accordion_family_memstore_heap_bytes",
        "accordion_flushes_total",
        "accordion_compactions_total",
        "accordion_inmemory_compactions_total",
        "accordion_wal_sync_duration_seconds_bucket",
        "accordion_block_cache_hits_total",
        "accordion_block_cache_misses_total",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
    ] {
        assert!(used.contains(name), "the dashboard does not show {name}");
    }
    assert!(exprs.iter().any(|e| e.contains("histogram_quantile(0.99")), "p99 latencies");
    assert!(exprs.iter().any(|e| e.contains("histogram_quantile(0.5")), "p50 latencies");
    let mut seen = HashMap::new();
    for p in panels {
        assert!(seen.insert(p["id"].as_u64().expect("panel id"), ()).is_none(), "panel ids are unique");
    }
}
