//! The status page as a real browser renders it: a live server with a
//! table split at a binary key, writes, reads, a scan and a flush, then
//! Debian's Chromium, headless, loads `/` (its script fetches `/status` and
//! draws) and the test reads the DOM it rendered: request charts with a
//! line per operation, formatted counts and sizes, the region key ranges as
//! HBase prints keys, dated events, the memstore view and the links to
//! `/metrics`, `/status`, `/conf`, `/logs` and `/health`, each of which
//! answers.
//!
//! Needs `chromium` (`.ci/run` installs it); `ACCORDION_CHROMIUM` names
//! another binary. With `ACCORDION_STATUS_SCREENSHOT=FILE` the test also
//! saves a screenshot of the page (docs/status-page.png is one).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::ServerProcess;
use server::thrift::client::{THbaseSyncClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation, TScan};

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("ACCORDION_CHROMIUM") {
        return p.into();
    }
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().map(PathBuf::from).find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!("no Chromium: install Debian's chromium (.ci/run does) or set ACCORDION_CHROMIUM to a Chromium binary")
    })
}

/// Runs headless Chromium on `url` with `what` (e.g. `--dump-dom`) and
/// returns its standard output. Virtual time lets the page's script run
/// its fetches and timers before the DOM is taken.
fn chromium_run(url: &str, what: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
            "--window-size=1400,1100",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(what)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().expect("wait for chromium").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish rendering {url} in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("chromium output");
    assert!(out.status.success(), "chromium failed on {url}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 DOM")
}

/// The DOM's part from the element with `id` to the next `<h2>` (each
/// section of the page is one).
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} in the DOM:\n{dom}"));
    let rest = &dom[at..];
    &rest[..rest[1..].find("<h2").map_or(rest.len(), |i| i + 1)]
}

fn http_get(server: &ServerProcess, path: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut r = agent.get(&format!("http://{}{path}", server.http)).call().expect("GET");
    (r.status().as_u16(), r.body_mut().read_to_string().expect("body"))
}

fn admin(server: &ServerProcess, call: &str) {
    ureq::post(&format!("http://{}/admin/{call}", server.http)).send_empty().expect(call);
}

#[test]
fn chromium_renders_request_charts_regions_with_binary_keys_dated_events_and_links() {
    let server = ServerProcess::start(&["metrics_period_ms=200"]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(3), ..Default::default() };
    c.create_table(b"browser".to_vec(), vec![cd]).expect("create");
    // 1,200 rows on both sides of the split point, in client batches of 100.
    let rows: Vec<Vec<u8>> =
        (0..600).flat_map(|i| [format!("a{i:05}"), format!("z{i:05}")]).map(String::into_bytes).collect();
    for batch in rows.chunks(100) {
        let batch = batch
            .iter()
            .map(|row| BatchMutation {
                row: Some(row.clone()),
                mutations: Some(vec![Mutation {
                    is_delete: Some(false),
                    column: Some(b"f:q".to_vec()),
                    value: Some(vec![b'v'; 1000]),
                    write_to_w_a_l: Some(true),
                }]),
            })
            .collect();
        c.mutate_rows(b"browser".to_vec(), batch, BTreeMap::new()).expect("put");
    }
    for row in rows.iter().take(40) {
        assert_eq!(c.get_row(b"browser".to_vec(), row.clone(), BTreeMap::new()).expect("get").len(), 1);
    }
    // (TScan's generated Default reads at timestamp 0: build it field by field.)
    let scan = TScan::new(None, None, None, None, 50, None, None, None, None);
    let id = c.scanner_open_with_scan(b"browser".to_vec(), scan, BTreeMap::new()).expect("scan");
    assert_eq!(c.scanner_get_list(id, 50).expect("scan").len(), 50);
    c.scanner_close(id).expect("close");
    admin(&server, "flush?table=browser");
    admin(&server, "split?table=browser&at=m%00%FF");
    // The daughters count from their opening: three reads of the low one,
    // one write to the high one.
    for row in rows.iter().filter(|r| r.starts_with(b"a")).take(3) {
        assert_eq!(c.get_row(b"browser".to_vec(), row.clone(), BTreeMap::new()).expect("get").len(), 1);
    }
    let one = BatchMutation {
        row: Some(b"z-late".to_vec()),
        mutations: Some(vec![Mutation {
            is_delete: Some(false),
            column: Some(b"f:q".to_vec()),
            value: Some(b"v".to_vec()),
            write_to_w_a_l: Some(true),
        }]),
    };
    c.mutate_rows(b"browser".to_vec(), vec![one], BTreeMap::new()).expect("put");
    // Let a sampling period close after the calls.
    std::thread::sleep(Duration::from_millis(600));

    let dom = chromium_run(&format!("http://{}/", server.http), &["--dump-dom"]);
    // The header: version, uptime and the links, each of which answers.
    let header = &dom[dom.find("<header").expect("header")..dom.find("</header>").expect("header end")];
    assert!(!header.contains("unreachable"), "the page could not read /status: {header}");
    assert!(header.contains("v0.") && header.contains(" · up ") && header.contains("scanners pinning 0 B"), "{header}");
    for link in ["/metrics", "/status", "/conf", "/logs", "/health", "/jmx", "/dump", "/stacks", "/logLevel"] {
        assert!(header.contains(&format!("href=\"{link}\"")), "no link to {link}: {header}");
    }

    // Charts: a line (or a point) per operation that had calls, and legends
    // with the last period's figures.
    let rate = section(&dom, "chart-rate");
    for op in ["put", "get", "scan"] {
        assert!(
            rate.contains(&format!("<polyline data-op=\"{op}\""))
                || rate.contains(&format!("<circle data-op=\"{op}\"")),
            "no {op} line in the rate chart: {rate}"
        );
    }
    assert!(rate.contains("/s</span>"), "{rate}");
    let p99 = section(&dom, "chart-p99");
    assert!(p99.contains("data-op=\"put\""), "no put latency in the p99 chart: {p99}");
    let unit = regex::Regex::new(r"\d (µs|ms|s)</text>").expect("regex");
    assert!(unit.is_match(p99), "the p99 axis has no latency with a unit: {p99}");

    // Totals: counts with separators.
    let totals = section(&dom, "totals");
    assert!(totals.contains("<td>1,201</td>"), "1,200 puts and the late one, formatted: {totals}");
    // The queues and the tasks running: gauges, whatever they read now.
    for class in ["flush-queue", "compaction-queue", "tasks"] {
        let gauge = regex::Regex::new(&format!(r#"<td class="{class}"( title="[^"]*")?>\d+</td>"#)).expect("regex");
        assert!(gauge.is_match(totals), "no {class} figure: {totals}");
    }

    // Tables and regions: two daughters split at a binary key, printed as
    // HBase's toStringBinary prints it; sizes with units; the memstore view.
    let tables = section(&dom, "tables");
    assert!(tables.contains("browser") && tables.contains("2 regions"), "{tables}");
    assert_eq!(
        tables.matches("<code>m\\x00\\xFF</code>").count(),
        2,
        "the split key ends one region and starts the other: {tables}"
    );
    assert!(tables.contains("(table start)") && tables.contains("(table end)"), "{tables}");
    let size = regex::Regex::new(r#"<td rowspan="1">\d+(\.\d+)? (KiB|MiB)</td>"#).expect("regex");
    assert!(size.is_match(tables), "no file size with a unit: {tables}");
    assert!(tables.contains("class=\"seg active\""), "the live memstore view: {tables}");
    // Each daughter's requests since it opened (in either order).
    let requests =
        regex::Regex::new(r#"class="reads">(\d+)</td><td rowspan="\d+" class="writes">(\d+)</td>"#).expect("regex");
    let mut counted: Vec<(String, String)> =
        requests.captures_iter(tables).map(|c| (c[1].to_string(), c[2].to_string())).collect();
    counted.sort();
    assert_eq!(counted, [("0".to_string(), "1".to_string()), ("3".to_string(), "0".to_string())], "{tables}");

    // Events: the flush, dated.
    let events = section(&dom, "events");
    let dated = regex::Regex::new(r#"class="l event-date">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td><td class="l">flush<"#)
        .expect("regex");
    assert!(dated.is_match(events), "no dated flush: {events}");

    // The linked pages.
    let (code, conf) = http_get(&server, "/conf");
    assert_eq!(code, 200);
    assert!(conf.contains("metrics_period_ms = 200"), "the effective settings: {conf}");
    let (code, logs) = http_get(&server, "/logs");
    assert_eq!(code, 200);
    assert!(logs.contains("created table") && logs.contains("table=browser"), "recent log lines: {logs}");
    assert!(!logs.contains('\u{1b}'), "no ANSI codes");
    let (code, health) = http_get(&server, "/health");
    assert_eq!((code, health.contains("\"status\":\"ok\"")), (200, true), "{health}");
    let (code, status) = http_get(&server, "/status");
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&status).expect("JSON");
    assert!(status["requests"]["periods"].as_array().is_some_and(|p| !p.is_empty()), "{status}");

    if let Some(path) = std::env::var_os("ACCORDION_STATUS_SCREENSHOT") {
        let path = std::path::absolute(PathBuf::from(path)).expect("path");
        chromium_run(&format!("http://{}/", server.http), &[&format!("--screenshot={}", path.display())]);
        assert!(path.exists(), "no screenshot at {}", path.display());
    }
}
