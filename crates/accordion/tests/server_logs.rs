//! What the server logs, checked in its JSON log file (`--log-format json
//! --log-file`): every flush, disk compaction, WAL roll and archive, split,
//! merge, region close and open, table DDL, client error, in-memory flush
//! and compaction (debug), and recovery after a crash (entries replayed,
//! seconds) — each an event with its structured fields.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::ServerProcess;
use server::thrift::client::{THbaseSyncClient, ThriftClient, connect};
use server::thrift::hbase_thrift::{ColumnDescriptor, Mutation};

fn events(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}")))
        .collect()
}

fn find<'a>(events: &'a [serde_json::Value], message: &str) -> Option<&'a serde_json::Value> {
    events.iter().find(|e| e["fields"]["message"].as_str().is_some_and(|m| m.starts_with(message)))
}

fn wait_for_event(log: &Path, message: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(e) = find(&events(log), message) {
            return e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {message:?} event in the log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn put(c: &mut ThriftClient, table: &str, row: &str, value: &[u8]) {
    let m = Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(value.to_vec()),
        write_to_w_a_l: Some(true),
    };
    c.mutate_row(table.as_bytes().to_vec(), row.as_bytes().to_vec(), vec![m], BTreeMap::new()).expect("put");
}

fn admin(server: &ServerProcess, call: &str) -> String {
    ureq::post(&format!("http://{}/admin/{call}", server.http))
        .send_empty()
        .map(|mut r| r.body_mut().read_to_string().unwrap_or_default())
        .unwrap_or_else(|e| format!("{e}"))
}

#[test]
fn every_store_event_is_a_structured_log_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let log_s = log.to_str().expect("utf8").to_string();
    let flags = ["--log-format", "json", "--log-file", &log_s, "--log-level", "info,memstore=debug"];
    let sets =
        ["memstore_flush_size=262144", "inmemory_flush_threshold_factor=0.1", "wal_roll_size=65536", "max_logs=2"];
    let mut server = ServerProcess::start_with_flags(&data, &flags, &sets);
    let mut c = connect(&server.thrift.to_string(), true, false).expect("connect");
    let cd = ColumnDescriptor {
        name: Some(b"f:".to_vec()),
        max_versions: Some(1),
        in_memory: Some(false),
        block_cache_enabled: Some(true),
        ..Default::default()
    };
    c.create_table(b"t".to_vec(), vec![cd.clone()]).expect("create");
    let created = wait_for_event(&log, "created table");
    assert_eq!(created["fields"]["table"], "t");
    assert_eq!(created["level"], "INFO");

    // Enough rows for several flushes, WAL rolls and archives, and a compaction.
    let value = vec![b'v'; 1000];
    for round in 0..6 {
        for i in 0..300 {
            put(&mut c, "t", &format!("row-{i:04}"), &value);
        }
        admin(&server, "flush?table=t");
        let _ = round;
    }
    let flushed = wait_for_event(&log, "flushed the memstore snapshot");
    assert!(flushed["fields"]["bytes"].as_u64() > Some(0) && flushed["fields"]["seconds"].is_number(), "{flushed}");
    assert!(flushed["fields"]["store"].as_str().is_some_and(|s| s.ends_with("/f")), "{flushed}");
    let compacted = wait_for_event(&log, "compacted store files");
    assert!(compacted["fields"]["files"].as_u64() >= Some(2), "{compacted}");
    let rolled = wait_for_event(&log, "WAL rolled");
    assert!(rolled["fields"]["file"].is_string(), "{rolled}");
    wait_for_event(&log, "WAL files archived");
    let inmemory = wait_for_event(&log, "in-memory flush");
    assert_eq!(inmemory["level"], "DEBUG");

    // Split, merge, close and open of a region.
    assert!(admin(&server, "split?table=t&row=row-0000&at=row-0150").contains("split"), "split refused");
    let split = wait_for_event(&log, "split by reference");
    assert_eq!(split["level"], "INFO");
    let regions = c.get_table_regions(b"t".to_vec()).expect("regions");
    assert_eq!(regions.len(), 2);
    let encoded: Vec<String> = regions
        .iter()
        .map(|r| {
            String::from_utf8_lossy(r.name.as_deref().unwrap_or_default()).rsplit(',').next().unwrap_or("").to_string()
        })
        .collect();
    let status: serde_json::Value = serde_json::from_str(
        &ureq::get(&format!("http://{}/status", server.http))
            .call()
            .expect("status")
            .body_mut()
            .read_to_string()
            .expect("body"),
    )
    .expect("json");
    let ids: Vec<String> = status["tables"][0]["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{encoded:?}");
    admin(&server, &format!("unassign?region={}", ids[0]));
    wait_for_event(&log, "region closed");
    admin(&server, &format!("assign?region={}", ids[0]));
    wait_for_event(&log, "region opened");
    // A merge waits until the daughters no longer read through references
    // (their compaction after the split).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = admin(&server, &format!("merge?a={}&b={}", ids[0], ids[1]));
        if find(&events(&log), "regions merged").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "merge refused: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // A client error, then DDL.
    let missing = Mutation { column: Some(b"nope:q".to_vec()), ..Mutation::default() };
    let refused = c.mutate_row(b"t".to_vec(), b"r".to_vec(), vec![missing], BTreeMap::new());
    assert!(refused.is_err(), "a put to a missing family is refused");
    let failed = wait_for_event(&log, "client call failed");
    assert!(failed["fields"]["exception"].is_string() && failed["fields"]["error"].is_string(), "{failed}");
    assert!(failed["span"]["peer"].as_str().is_some_and(|p| p.starts_with("127.0.0.1:")), "names its client: {failed}");
    // A bad filter string is logged once (it was twice: as IllegalArgument,
    // then again as the IOError the IDL declares).
    let failures =
        |events: &[serde_json::Value]| events.iter().filter(|e| e["fields"]["message"] == "client call failed").count();
    let before = failures(&events(&log));
    let scan =
        server::thrift::hbase_thrift::TScan { filter_string: Some(b"PrefixFilter(".to_vec()), ..Default::default() };
    assert!(c.scanner_open_with_scan(b"t".to_vec(), scan, BTreeMap::new()).is_err(), "a bad filter is refused");
    let deadline = Instant::now() + Duration::from_secs(10);
    while failures(&events(&log)) == before {
        assert!(Instant::now() < deadline, "the bad filter was not logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(failures(&events(&log)), before + 1, "a bad filter logged more than once");
    c.create_table(b"gone".to_vec(), vec![cd.clone()]).expect("create");
    c.disable_table(b"gone".to_vec()).expect("disable");
    c.delete_table(b"gone".to_vec()).expect("delete");
    wait_for_event(&log, "disabled table");
    wait_for_event(&log, "deleted table");

    // A crash with unflushed edits: the restart logs the recovery.
    for i in 0..50 {
        put(&mut c, "t", &format!("late-{i}"), b"x");
    }
    server.kill();
    let server = ServerProcess::start_with_flags(&data, &flags, &sets);
    let replayed = wait_for_event(&log, "WAL replayed");
    assert!(replayed["fields"]["entries"].as_u64() >= Some(50), "{replayed}");
    assert!(replayed["fields"]["seconds"].is_number(), "{replayed}");
    assert!(replayed["fields"]["files"].as_u64() >= Some(1), "{replayed}");
    assert!(replayed["fields"]["bytes"].as_u64() > Some(0), "{replayed}");
    drop(server);
}

/// Plain text on stderr that is not a terminal (a pipe here) has no ANSI
/// escapes, and the level comes from `--log-level`, else `RUST_LOG`, else the
/// configuration's `log_level`, else info.
/// Flags, settings, `RUST_LOG`, and whether the INFO start-up line shows.
type LevelCase<'a> = (&'a [&'a str], &'a [&'a str], Option<&'a str>, bool);

#[test]
fn text_logs_have_no_ansi_escapes_and_the_level_comes_from_flag_env_then_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [LevelCase; 5] = [
        (&[], &[], None, true),
        (&[], &["log_level=warn"], None, false),
        (&[], &["log_level=info"], Some("warn"), false),
        (&["--log-level", "info"], &["log_level=warn"], Some("warn"), true),
        (&["--log-level", "warn"], &[], Some("info"), false),
    ];
    for (i, (flags, sets, rust_log, shows_info)) in cases.into_iter().enumerate() {
        let data = dir.path().join(format!("data{i}"));
        let mut server = ServerProcess::start_with_rust_log(&data, flags, sets, rust_log);
        // The start-up line is written before the "listening" line the
        // start waited for; the stop lets the pipe drain to its end.
        server.terminate(Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(300));
        let text = server.log_text();
        assert!(!text.contains('\u{1b}'), "case {i}: ANSI escape on a pipe:\n{text}");
        if shows_info {
            assert!(text.contains(" INFO "), "case {i}: plain-text level names:\n{text}");
        }
        assert_eq!(
            text.contains("accordion server started"),
            shows_info,
            "case {i}: {flags:?} {sets:?} {rust_log:?}:\n{text}"
        );
    }
}

fn http(server: &ServerProcess, post: bool, path: &str) -> (u16, String) {
    let url = format!("http://{}{path}", server.http);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut r = if post { agent.post(&url).send_empty() } else { agent.get(&url).call() }.expect(path);
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap_or_default())
}

/// `/logLevel` changes a module's level in the running binary, through
/// the logger's reload handle: the store's debug events appear in `/logs`
/// once `store` is at debug, not before; a bad level changes nothing.
#[test]
fn a_modules_level_changes_at_run_time_through_log_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = ServerProcess::start_with_rust_log(&dir.path().join("data"), &[], &[], None);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"lv".to_vec(), vec![cd]).expect("create");
    put(&mut c, "lv", "r1", b"v");
    // A flush of an empty memstore says "nothing to flush", at debug.
    let flush_twice = |server: &ServerProcess| {
        assert_eq!(http(server, true, "/admin/flush?table=lv").0, 200);
        assert_eq!(http(server, true, "/admin/flush?table=lv").0, 200);
    };
    flush_twice(&server);
    let (code, logs) = http(&server, false, "/logs");
    assert!(code == 200 && logs.contains("flushed the memstore snapshot"), "{logs}");
    assert!(!logs.contains("nothing to flush"), "debug is off at info: {logs}");
    assert_eq!(http(&server, false, "/logLevel"), (200, "info\n".to_string()));

    let (code, filter) = http(&server, true, "/logLevel?log=store&level=debug");
    assert_eq!((code, filter.trim()), (200, "info,store=debug"));
    assert!(http(&server, false, "/logLevel").1.contains("store=debug"));
    flush_twice(&server);
    let (_, logs) = http(&server, false, "/logs");
    let line = logs.lines().find(|l| l.contains("nothing to flush")).unwrap_or_else(|| panic!("no debug line: {logs}"));
    assert!(line.contains("DEBUG"), "{line}");

    let (code, why) = http(&server, true, "/logLevel?log=store&level=loud");
    assert_eq!(code, 400, "{why}");
    assert!(why.contains("\"loud\" is not a level"), "{why}");
    assert!(http(&server, false, "/logLevel").1.contains("store=debug"), "the filter stayed");
    server.assert_alive();
}
