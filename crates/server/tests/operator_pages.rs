//! HBase's operator pages on a real server, in process: `/jmx` with the
//! figures `/metrics` shows for the same quantities and `?qry=` filtering
//! as HBase's JMX servlet does; `/stacks` listing the server's threads;
//! `/logLevel` reading and changing the log filter, admitted as admin calls
//! are; `/dump` with the regions; and the queue, task and per-region
//! request gauges on `/metrics`, `/status` and `/jmx`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_parse::{Scrape, Value};
use server::log_level::LogLevelControl;
use server::thrift::client::{THbaseSyncClient, ThriftClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation};
use server::{Server, ServerConfig};

const TOKEN: &str = "operator-pages-token-0123456789";

fn start_with(extra: &[String]) -> (tempfile::TempDir, Server, ThriftClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sets = vec![
        format!("data_dir={}", dir.path().join("data").display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
    ];
    sets.extend_from_slice(extra);
    let server = Server::start(ServerConfig::load(None, &sets).expect("config")).expect("start");
    let c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    (dir, server, c)
}

/// `(status, body)` of a request, whatever the status.
fn call(server: &Server, post: bool, path: &str, token: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let url = format!("http://{}{path}", server.http_addr());
    let mut response = if post {
        let mut r = agent.post(&url);
        if let Some(t) = token {
            r = r.header("Authorization", &format!("Bearer {t}"));
        }
        r.send_empty()
    } else {
        agent.get(&url).call()
    }
    .expect(path);
    (response.status().as_u16(), response.body_mut().read_to_string().expect("body"))
}

fn get(server: &Server, path: &str) -> String {
    let (code, body) = call(server, false, path, None);
    assert_eq!(code, 200, "GET {path}: {body}");
    body
}

fn jmx(server: &Server, query: &str) -> Vec<serde_json::Value> {
    let doc: serde_json::Value = serde_json::from_str(&get(server, &format!("/jmx{query}"))).expect("JSON");
    doc["beans"].as_array().expect("a beans list").clone()
}

fn bean<'a>(beans: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    beans.iter().find(|b| b["name"] == name).unwrap_or_else(|| panic!("no bean {name} in {beans:?}"))
}

fn scrape(server: &Server) -> Scrape {
    let text = get(server, "/metrics");
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parse")
}

/// The sum of every sample of `name` whose labels include `labels`.
fn sum(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            _ => panic!("{name} is not a number: {s:?}"),
        })
        .sum()
}

fn has(scrape: &Scrape, name: &str) -> bool {
    scrape.samples.iter().any(|s| s.metric == name)
}

fn put_row(c: &mut ThriftClient, table: &str, row: &str) {
    let m = Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(b"value".to_vec()),
        write_to_w_a_l: Some(true),
    };
    c.mutate_row(table.as_bytes().to_vec(), row.as_bytes().to_vec(), vec![m], BTreeMap::new()).expect("put");
}

fn create(c: &mut ThriftClient, table: &str) {
    let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(table.as_bytes().to_vec(), vec![cd]).expect("create");
}

/// The encoded name of `table`'s only region, from `/status`.
fn only_region(server: &Server, table: &str) -> String {
    let status: http_api::ServerStatus = serde_json::from_str(&get(server, "/status")).expect("status");
    let t = status.table(table).expect("the table");
    assert_eq!(t.regions.len(), 1);
    t.regions[0].id.clone()
}

#[test]
fn jmx_shows_the_figures_metrics_shows_under_hbases_names_and_qry_filters_beans() {
    let (_dir, server, mut c) = start_with(&[]);
    create(&mut c, "ops");
    for i in 0..10 {
        put_row(&mut c, "ops", &format!("r{i:02}"));
    }
    let batch = (10..15)
        .map(|i| BatchMutation {
            row: Some(format!("r{i:02}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(b"w".to_vec()),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    c.mutate_rows(b"ops".to_vec(), batch, BTreeMap::new()).expect("batch");
    for i in 0..4 {
        c.get_row(b"ops".to_vec(), format!("r{i:02}").into_bytes(), BTreeMap::new()).expect("get");
    }
    assert_eq!(call(&server, true, "/admin/flush?table=ops", None).0, 200);
    put_row(&mut c, "ops", "r99");
    let region = only_region(&server, "ops");

    let (m, beans) = (scrape(&server), jmx(&server, ""));
    let s = bean(&beans, "Hadoop:service=HBase,name=RegionServer,sub=Server");
    assert_eq!(s["modelerType"], "RegionServer,sub=Server");
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    for (attribute, metric) in [
        ("memStoreSize", "accordion_family_memstore_data_bytes"),
        ("memStoreHeapSize", "accordion_family_memstore_heap_bytes"),
        ("storeFileCount", "accordion_family_store_files"),
        ("storeFileSize", "accordion_family_store_file_bytes"),
        ("writeRequestCount", "accordion_write_requests_total"),
        ("flushQueueLength", "accordion_flush_queue_length"),
        ("compactionQueueLength", "accordion_compaction_queue_length"),
        ("blockedRequestCount", "accordion_blocked_writes_total"),
        ("flushedCellsSize", "accordion_flushed_bytes_total"),
        ("totalRequestCount", "accordion_request_duration_seconds_count"),
        ("blockCacheHitCount", "accordion_block_cache_hits_total"),
        ("blockCacheMissCount", "accordion_block_cache_misses_total"),
        ("blockCacheCount", "accordion_block_cache_blocks"),
        ("memStoreLimit", "accordion_global_memstore_limit_bytes"),
    ] {
        assert_eq!(num(&s[attribute]), sum(&m, metric, &[]), "{attribute} vs {metric}");
    }
    assert_eq!(num(&s["writeRequestCount"]), 16.0, "ten puts, a batch of five rows, one more put");
    assert!(num(&s["storeFileCount"]) >= 1.0 && num(&s["memStoreSize"]) > 0.0, "{s}");
    assert_eq!(
        num(&s["readRequestCount"]),
        sum(&m, "accordion_gets_total", &[]) + sum(&m, "accordion_region_scans_total", &[])
    );
    assert_eq!(num(&s["readRequestCount"]), 4.0);
    assert_eq!(num(&s["totalRequestCount"]), 10.0 + 1.0 + 4.0 + 1.0, "every Thrift data call");
    assert_eq!(num(&s["regionCount"]), sum(&m, "accordion_region_state", &[("state", "OPEN")]));
    for kind in ["flush", "compaction", "split", "merge"] {
        let attribute = format!("{kind}{}InProgress", if kind == "flush" { "es" } else { "s" });
        assert_eq!(num(&s[&attribute]), sum(&m, "accordion_tasks_in_progress", &[("kind", kind)]), "{attribute}");
    }
    assert!(s.get("tag.serverName").is_none(), "a standalone server has no member name to show");

    let wal = bean(&beans, "Hadoop:service=HBase,name=RegionServer,sub=WAL");
    assert_eq!(num(&wal["appendCount"]), sum(&m, "accordion_wal_appends_total", &[]));
    assert_eq!(num(&wal["writtenBytes"]), sum(&m, "accordion_wal_written_bytes_total", &[]));
    assert_eq!(num(&wal["SyncTime_num_ops"]), sum(&m, "accordion_wal_syncs_total", &[]));
    assert!(num(&wal["SyncTime_mean"]) > 0.0 && num(&wal["SyncTime_max"]) >= num(&wal["SyncTime_median"]), "{wal}");

    let regions = bean(&beans, "Hadoop:service=HBase,name=RegionServer,sub=Regions");
    let per_region =
        |metric: &str| num(&regions[format!("Namespace_default_table_ops_region_{region}_metric_{metric}")]);
    let labels = [("table", "ops"), ("region", region.as_str())];
    assert_eq!(per_region("writeRequestCount"), sum(&m, "accordion_region_write_requests", &labels));
    assert_eq!(per_region("readRequestCount"), sum(&m, "accordion_region_read_requests", &labels));
    assert_eq!(per_region("writeRequestCount"), 16.0);
    assert_eq!(per_region("storeFileCount"), sum(&m, "accordion_family_store_files", &labels));
    assert_eq!(per_region("memStoreSize"), sum(&m, "accordion_family_memstore_data_bytes", &labels));
    assert_eq!(per_region("storeCount"), 1.0);
    assert_eq!(num(&regions["numRegions"]), 1.0);

    let process = bean(&beans, "accordion:type=Process");
    assert!(num(&process["residentMemoryBytes"]) > 1e6 && num(&process["threadCount"]) >= 3.0, "{process}");
    assert_eq!(beans.len(), 4, "{beans:?}");

    // `?qry=`: an exact name, a domain, a value pattern, nothing, malformed.
    let names = |query: &str| -> Vec<String> {
        jmx(&server, query).iter().map(|b| b["name"].as_str().expect("name").to_string()).collect()
    };
    assert_eq!(
        names("?qry=Hadoop:service=HBase,name=RegionServer,sub=Server"),
        ["Hadoop:service=HBase,name=RegionServer,sub=Server"]
    );
    assert_eq!(names("?qry=Hadoop:*").len(), 3);
    assert_eq!(names("?qry=Hadoop:service=HBase,name=RegionServer,sub=W*").len(), 1);
    assert_eq!(names("?qry=*:type=Process"), ["accordion:type=Process"]);
    assert!(names("?qry=Hadoop:service=HBase,name=RegionServer,sub=Nope").is_empty());
    assert!(names("?qry=java.lang:type=Memory").is_empty(), "no JVM here");
    let (code, body) = call(&server, false, "/jmx?qry=no-colon", None);
    assert_eq!(code, 400, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("an error document");
    assert_eq!(error["result"], "ERROR");
}

#[test]
fn per_region_request_counts_grow_with_gets_and_puts_and_queue_gauges_show_everywhere() {
    let (_dir, server, mut c) = start_with(&[]);
    create(&mut c, "counted");
    let region = only_region(&server, "counted");
    let labels = [("table", "counted"), ("region", region.as_str())];
    let counts = |server: &Server| -> (f64, f64) {
        let m = scrape(server);
        (sum(&m, "accordion_region_read_requests", &labels), sum(&m, "accordion_region_write_requests", &labels))
    };
    let (reads, writes) = counts(&server);
    for i in 0..3 {
        put_row(&mut c, "counted", &format!("r{i}"));
    }
    for i in 0..2 {
        c.get_row(b"counted".to_vec(), format!("r{i}").into_bytes(), BTreeMap::new()).expect("get");
    }
    assert_eq!(counts(&server), (reads + 2.0, writes + 3.0));
    let status: http_api::ServerStatus = serde_json::from_str(&get(&server, "/status")).expect("status");
    let r = &status.table("counted").expect("table").regions[0];
    assert_eq!((r.read_requests, r.write_requests), ((reads + 2.0) as u64, (writes + 3.0) as u64));

    let m = scrape(&server);
    for gauge in ["accordion_flush_queue_length", "accordion_compaction_queue_length"] {
        assert!(has(&m, gauge), "{gauge} missing");
        assert!(sum(&m, gauge, &[]) >= 0.0);
    }
    let kinds: Vec<&str> = m
        .samples
        .iter()
        .filter(|s| s.metric == "accordion_tasks_in_progress")
        .map(|s| s.labels.get("kind").expect("a kind"))
        .collect();
    assert_eq!(kinds, ["flush", "compaction", "split", "merge"]);
    let doc: serde_json::Value = serde_json::from_str(&get(&server, "/status")).expect("status");
    for field in [
        "flush_queue_length",
        "compaction_queue_length",
        "flushes_in_progress",
        "compactions_in_progress",
        "splits_in_progress",
        "merges_in_progress",
    ] {
        assert!(doc["totals"][field].is_u64(), "totals.{field} in /status: {}", doc["totals"]);
    }
    assert!(doc["tasks"].is_array(), "the running tasks in /status");
    let page = get(&server, "/");
    for shown in ["t.flush_queue_length", "t.compaction_queue_length", "r.read_requests", "r.write_requests"] {
        assert!(page.contains(shown), "the page shows {shown}");
    }
}

#[test]
fn stacks_lists_the_servers_threads_with_their_states() {
    let (_dir, server, _c) = start_with(&[]);
    let named = ["http", "scanner-reaper", "metrics-sampler"];
    // A new thread names itself once it first runs (std calls
    // pthread_setname_np from inside it), so on a loaded machine a
    // background thread the server just spawned may still carry its
    // parent's name: ask again until every one shows its own.
    let deadline = Instant::now() + Duration::from_secs(20);
    let stacks = loop {
        let stacks = get(&server, "/stacks");
        let all_named = named.iter().all(|t| stacks.contains(&format!(" ({t}):\n")));
        if all_named || Instant::now() > deadline {
            break stacks;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(stacks.starts_with("Process Thread Dump: "), "{stacks}");
    for thread in named {
        let at = stacks.find(&format!(" ({thread}):\n")).unwrap_or_else(|| panic!("no {thread} thread: {stacks}"));
        let state = stacks[at..].lines().nth(1).expect("a state line");
        assert!(state.starts_with("  State: ") && state.contains(" ("), "{state}");
    }
    // The http thread answers this very request: it is running.
    let at = stacks.find(" (http):\n").expect("http");
    assert!(stacks[at..].lines().nth(1).is_some_and(|l| l == "  State: R (running)"), "{}", &stacks[at..]);
}

/// A log filter in memory, as the binary's reload handle would hold it.
#[derive(Clone)]
struct Filter(Arc<Mutex<String>>);

impl LogLevelControl for Filter {
    fn current(&self) -> String {
        self.0.lock().clone()
    }

    fn set(&self, filter: &str) -> Result<(), String> {
        *self.0.lock() = filter.to_string();
        Ok(())
    }
}

#[test]
fn log_level_shows_and_changes_the_filter_only_for_admins_and_refuses_bad_levels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).expect("token");
    let (_dir, server, _c) = start_with(&[format!("admin_token_file={}", token_file.display())]);
    assert_eq!(call(&server, false, "/logLevel", None).0, 501, "no logger control installed yet");
    let filter = Filter(Arc::new(Mutex::new("info".into())));
    server.set_log_level_control(Box::new(filter.clone()));
    assert_eq!(get(&server, "/logLevel"), "info\n");

    let change = "/logLevel?log=store::jobs&level=debug";
    assert_eq!(call(&server, true, change, None).0, 401, "no token");
    assert_eq!(call(&server, true, change, Some("not-the-token-at-all")).0, 401);
    assert_eq!(filter.current(), "info", "refused calls change nothing");
    assert_eq!(call(&server, false, change, None).0, 405, "a change is a POST");

    assert_eq!(call(&server, true, change, Some(TOKEN)), (200, "info,store::jobs=debug\n".into()));
    assert_eq!(get(&server, "/logLevel"), "info,store::jobs=debug\n");
    assert_eq!(filter.current(), "info,store::jobs=debug");

    for (bad, why) in [
        ("/logLevel?log=store&level=loud", "is not a level"),
        ("/logLevel?log=store%3Ddebug&level=info", "is not a module path"),
        ("/logLevel?level=info", "missing ?log="),
    ] {
        let (code, body) = call(&server, true, bad, Some(TOKEN));
        assert_eq!(code, 400, "{bad}: {body}");
        assert!(body.contains(why), "{bad}: {body}");
    }
    assert_eq!(filter.current(), "info,store::jobs=debug", "the filter stayed");
}

#[test]
fn dump_names_the_server_its_regions_queues_tasks_logs_and_threads() {
    let (_dir, server, mut c) = start_with(&[]);
    create(&mut c, "dumped");
    put_row(&mut c, "dumped", "r1");
    let region = only_region(&server, "dumped");
    let dump = get(&server, "/dump");
    assert!(dump.starts_with("Accordion KV region server "), "{dump}");
    for section in [
        "Version Info:",
        "Configuration summary",
        "Regions:",
        "Flush and compaction queues:",
        "Tasks in progress:",
        "Recent log lines",
        "Threads",
    ] {
        assert!(dump.contains(section), "no {section} section: {dump}");
    }
    assert!(dump.contains(&format!("accordion {}", env!("CARGO_PKG_VERSION"))), "{dump}");
    let line = dump.lines().find(|l| l.contains(&format!("dumped/{region} OPEN"))).expect("the region's line");
    assert!(line.contains("1 write requests") && line.contains("memstore "), "{line}");
    assert!(dump.contains("Flush queue: ") && dump.contains("Compaction queue: "), "{dump}");
    assert!(dump.contains(" (http):\n  State: "), "the threads: {dump}");
    assert!(dump.contains("thrift_addr = "), "the configuration: {dump}");
}
