//! The gauges operators read on a real server, in process: the flush and
//! compaction queues' lengths and the tasks in progress on `/metrics`,
//! `/status` and the page, and each region's read and write request counts,
//! which grow with gets and puts.

use std::collections::BTreeMap;

use prometheus_parse::{Scrape, Value};
use server::client::{THbaseSyncClient, ThriftClient, connect};
use server::hbase_thrift::{ColumnDescriptor, Mutation};
use server::{Server, ServerConfig};

fn start_with(extra: &[String]) -> (tempfile::TempDir, Server, ThriftClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sets = vec![
        format!("data_dir={}", dir.path().join("data").display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
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
