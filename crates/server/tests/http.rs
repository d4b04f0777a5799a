//! The server's HTTP side, in process: Prometheus metrics with every store
//! counter per table, region and family; the JSON status with each store's
//! live memstore structure and recent flushes; the status page; the flush
//! admin call; and the Thrift front end's counters.

use std::collections::BTreeMap;

use server::thrift::client::{THbaseSyncClient, connect};
use server::thrift::hbase_thrift::{ColumnDescriptor, Mutation};
use server::{Server, ServerConfig};

fn start() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
        "hbase.hregion.compacting.memstore.type=EAGER".into(),
    ];
    let server = Server::start(ServerConfig::load(None, &sets).expect("config")).expect("start");
    (dir, server)
}

fn get(server: &Server, path: &str) -> String {
    ureq::get(&format!("http://{}{path}", server.http_addr()))
        .call()
        .expect("GET")
        .body_mut()
        .read_to_string()
        .expect("body")
}

#[test]
fn metrics_status_and_page_show_the_store() {
    let (_dir, server) = start();
    let mut c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"web".to_vec(), vec![cd]).expect("create");
    for i in 0..100u32 {
        let m = Mutation {
            is_delete: Some(false),
            column: Some(b"f:q".to_vec()),
            value: Some(vec![b'v'; 100]),
            write_to_w_a_l: Some(true),
        };
        c.mutate_row(b"web".to_vec(), format!("row{i:03}").into_bytes(), vec![m], BTreeMap::new()).expect("put");
    }

    let metrics = get(&server, "/metrics");
    assert!(metrics.contains("accordion_put_cells_total{table=\"web\"} 100"), "{metrics}");
    let family_line = metrics
        .lines()
        .find(|l| l.starts_with("accordion_family_memstore_cells{") && l.contains("table=\"web\""))
        .unwrap_or_else(|| panic!("no per-family memstore line:\n{metrics}"));
    assert!(family_line.contains("family=\"f\"") && family_line.contains("policy=\"eager\""), "{family_line}");
    assert!(family_line.ends_with(" 100"), "{family_line}");
    assert!(metrics.contains("accordion_thrift_connections_accepted_total 1"), "{metrics}");
    let states: Vec<&str> = metrics.lines().filter(|l| l.starts_with("accordion_region_state{")).collect();
    assert_eq!(states.len(), store::region::state::RegionState::all().len(), "one series per state: {states:?}");
    assert!(states.iter().any(|l| l.contains("state=\"OPEN\"") && l.ends_with(" 1")), "{states:?}");
    assert!(states.iter().filter(|l| l.ends_with(" 1")).count() == 1, "{states:?}");

    let status: serde_json::Value = serde_json::from_str(&get(&server, "/status")).expect("json");
    let fam = &status["tables"][0]["regions"][0]["families"][0];
    assert_eq!(status["tables"][0]["name"], "web");
    assert_eq!(status["tables"][0]["regions"][0]["state"], "OPEN");
    let in_memory = fam["active"]["cells"].as_u64().unwrap_or(0)
        + fam["pipeline"].as_array().map_or(0, |p| p.iter().map(|s| s["stats"]["cells"].as_u64().unwrap_or(0)).sum());
    assert_eq!(in_memory, 100, "every cell is in the active segment or the pipeline: {fam}");

    let flushed = ureq::post(&format!("http://{}/admin/flush?table=web", server.http_addr())).send_empty();
    assert!(flushed.is_ok(), "{flushed:?}");
    let status: serde_json::Value = serde_json::from_str(&get(&server, "/status")).expect("json");
    let event = &status["recent_events"][0];
    assert_eq!(event["kind"], "flush", "{status}");
    assert!(event["store"].as_str().unwrap_or_default().ends_with("/f"), "{event}");
    assert!(event["bytes"].as_u64().unwrap_or(0) > 0, "{event}");
    assert_eq!(status["totals"]["disk_flushes"], 1);

    let page = get(&server, "/");
    assert!(page.contains("<title>Accordion KV region server</title>") && page.contains("fetch('/status')"));
    let missing = ureq::get(&format!("http://{}/nope", server.http_addr())).call();
    assert!(matches!(missing, Err(ureq::Error::StatusCode(404))), "{missing:?}");
    let bad = ureq::post(&format!("http://{}/admin/flush?table=nope", server.http_addr())).send_empty();
    assert!(matches!(bad, Err(ureq::Error::StatusCode(404))), "{bad:?}");
}

/// `/status`'s `scanner_pinned_bytes` and the metric of the same name:
/// zero while the memstore holds what an open scanner reads; at least the
/// flushed segment's chunk once the memstore has flushed it and the
/// scanner still holds it; zero again when the scanner closes.
#[test]
fn open_scanners_pin_the_memstore_segments_a_flush_let_go_and_status_measures_it() {
    let (_dir, server) = start();
    let mut c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"pin".to_vec(), vec![cd]).expect("create");
    for i in 0..200u32 {
        let m = Mutation {
            is_delete: Some(false),
            column: Some(b"f:q".to_vec()),
            value: Some(vec![b'v'; 500]),
            write_to_w_a_l: Some(true),
        };
        c.mutate_row(b"pin".to_vec(), format!("r{i:04}").into_bytes(), vec![m], BTreeMap::new()).expect("put");
    }
    let pinned = |server: &Server| -> (u64, u64) {
        let status: serde_json::Value = serde_json::from_str(&get(server, "/status")).expect("json");
        let metrics = get(server, "/metrics");
        let metric = metrics
            .lines()
            .find_map(|l| l.strip_prefix("accordion_thrift_scanner_pinned_bytes "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .expect("the pinned-bytes metric");
        (status["server"]["scanner_pinned_bytes"].as_u64().expect("pinned bytes in /status"), metric)
    };
    let scan = server::thrift::hbase_thrift::TScan::new(None, None, None, None, 10, None, None, None, None);
    let id = c.scanner_open_with_scan(b"pin".to_vec(), scan, BTreeMap::new()).expect("open");
    assert_eq!(c.scanner_get_list(id, 10).expect("rows").len(), 10);
    assert_eq!(pinned(&server), (0, 0), "the memstore still holds everything the scanner reads");

    let flushed = ureq::post(&format!("http://{}/admin/flush?table=pin", server.http_addr())).send_empty();
    assert!(flushed.is_ok(), "{flushed:?}");
    let (status, metric) = pinned(&server);
    assert!(status >= memstore::CHUNK_SIZE as u64, "the flushed segment's chunk stays with the scanner: {status}");
    assert_eq!(metric, status, "the metric measures the same");
    // The scanner still reads the rows it pins.
    assert_eq!(c.scanner_get_list(id, 500).expect("rows").len(), 190);

    c.scanner_close(id).expect("close");
    assert_eq!(pinned(&server), (0, 0), "a closed scanner pins nothing");
}

/// A server whose gate refuses (a cluster member that lost its lease)
/// refuses admin calls too, not only Thrift calls: nothing is flushed, and
/// once the gate opens again the same call runs.
#[test]
fn admin_calls_are_refused_while_the_gate_refuses() {
    let (_dir, server) = start();
    let mut c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"g".to_vec(), vec![cd]).expect("create");
    let m = Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: Some(true),
    };
    c.mutate_row(b"g".to_vec(), b"r".to_vec(), vec![m], BTreeMap::new()).expect("put");
    let flushes = || -> u64 {
        let status: serde_json::Value = serde_json::from_str(&get(&server, "/status")).expect("JSON");
        status["totals"]["disk_flushes"].as_u64().expect("disk_flushes")
    };
    let refusing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let check = refusing.clone();
    server.gate().set(move || check.load(std::sync::atomic::Ordering::SeqCst).then(|| "lease expired".to_string()));
    let flush = || {
        let url = format!("http://{}/admin/flush?table=g", server.http_addr());
        let mut answer = ureq::post(&url).config().http_status_as_error(false).build().send_empty().expect("POST");
        (answer.status().as_u16(), answer.body_mut().read_to_string().unwrap_or_default())
    };
    let (code, body) = flush();
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("lease expired"), "{body}");
    assert_eq!(flushes(), 0, "nothing flushed while refusing");
    refusing.store(false, std::sync::atomic::Ordering::SeqCst);
    let (code, body) = flush();
    assert_eq!(code, 200, "{body}");
    assert_eq!(flushes(), 1, "flushed once the gate opened");
}

/// A port in use is reported before the store opens: nothing is created,
/// replayed or rolled in the data directory.
#[test]
fn a_port_in_use_is_found_before_the_store_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let data = dir.path().join("data");
    for (thrift, http) in [
        (taken.local_addr().expect("addr").to_string(), "127.0.0.1:0".to_string()),
        ("127.0.0.1:0".to_string(), taken.local_addr().expect("addr").to_string()),
    ] {
        let sets =
            [format!("data_dir={}", data.display()), format!("thrift_addr={thrift}"), format!("http_addr={http}")];
        let err = Server::start(ServerConfig::load(None, &sets).expect("config")).err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("in use")), "{err:?}");
        assert!(!data.exists(), "the store was opened before the port was found taken");
    }
}

/// `GET /schema?table=T`: the table's descriptor, every family setting;
/// a missing or non-UTF-8 name is 400 and an unknown table 404, each with
/// the reason.
#[test]
fn schema_gives_the_descriptor_and_refuses_bad_names() {
    let (_dir, server) = start();
    let mut c = connect(&server.thrift_addr().to_string(), false, false).expect("connect");
    let f = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(3), ..Default::default() };
    c.create_table(b"t".to_vec(), vec![f]).expect("create");
    let desc: store::TableDescriptor = serde_json::from_str(&get(&server, "/schema?table=t")).expect("a descriptor");
    assert_eq!((desc.name.as_str(), desc.families.len(), desc.families[0].max_versions), ("t", 1, 3));
    let status = |path: &str| -> (u16, String) {
        match ureq::get(&format!("http://{}{path}", server.http_addr())).call() {
            Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap_or_default()),
            Err(ureq::Error::StatusCode(code)) => (code, String::new()),
            Err(e) => panic!("GET {path}: {e}"),
        }
    };
    assert_eq!(status("/schema").0, 400, "no table");
    assert_eq!(status("/schema?table=%FF").0, 400, "not UTF-8");
    assert_eq!(status("/schema?table=nope").0, 404, "unknown table");
}
