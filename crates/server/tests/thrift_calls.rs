//! The Thrift calls happybase does not make, through the generated Rust
//! client against an in-process server: append, checkAndPut, increment and
//! incrementRows, getRowOrBefore, getRegionInfo, the scanner variants, and
//! the exceptions of calls whose IDL declares only IOError.

use std::collections::BTreeMap;

use server::thrift::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::thrift::hbase_thrift::{ColumnDescriptor, Mutation, TAppend, TIncrement, TScan};
use server::{Server, ServerConfig};

fn start() -> (tempfile::TempDir, Server, ThriftClient) {
    start_with(&[])
}

fn start_with(extra: &[&str]) -> (tempfile::TempDir, Server, ThriftClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sets = vec![
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let server = Server::start(ServerConfig::load(None, &sets).expect("config")).expect("start");
    let mut c = connect(&server.thrift_addr().to_string(), true, false).expect("connect");
    let cd = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(3), ..Default::default() };
    c.create_table(b"t".to_vec(), vec![cd]).expect("create");
    (dir, server, c)
}

fn put(c: &mut ThriftClient, row: &str, col: &str, value: &str) {
    let m = Mutation {
        is_delete: Some(false),
        column: Some(col.as_bytes().to_vec()),
        value: Some(value.as_bytes().to_vec()),
        write_to_w_a_l: Some(true),
    };
    c.mutate_row(b"t".to_vec(), row.as_bytes().to_vec(), vec![m], BTreeMap::new()).expect("put");
}

fn value(c: &mut ThriftClient, row: &str, col: &str) -> Option<Vec<u8>> {
    let cells = c.get(b"t".to_vec(), row.as_bytes().to_vec(), col.as_bytes().to_vec(), BTreeMap::new()).expect("get");
    cells.first().and_then(|c| c.value.clone())
}

#[test]
fn append_check_and_put_and_increments() {
    let (_dir, _server, mut c) = start();
    let append = |c: &mut ThriftClient, v: &str| {
        let a = TAppend::new(b"t".to_vec(), b"r".to_vec(), vec![b"f:log".to_vec()], vec![v.as_bytes().to_vec()]);
        c.append(a).expect("append")
    };
    append(&mut c, "a");
    let cells = append(&mut c, "bc");
    assert_eq!(cells[0].value.as_deref(), Some(&b"abc"[..]));
    assert_eq!(value(&mut c, "r", "f:log").as_deref(), Some(&b"abc"[..]));

    let m = |v: &str| Mutation {
        is_delete: Some(false),
        column: Some(b"f:state".to_vec()),
        value: Some(v.as_bytes().to_vec()),
        write_to_w_a_l: Some(true),
    };
    put(&mut c, "r", "f:state", "old");
    let wrong =
        c.check_and_put(b"t".to_vec(), b"r".to_vec(), b"f:state".to_vec(), b"nope".to_vec(), m("x"), BTreeMap::new());
    assert!(!wrong.expect("call"), "the check fails on a different value");
    let right =
        c.check_and_put(b"t".to_vec(), b"r".to_vec(), b"f:state".to_vec(), b"old".to_vec(), m("new"), BTreeMap::new());
    assert!(right.expect("call"), "the check passes on the current value");
    assert_eq!(value(&mut c, "r", "f:state").as_deref(), Some(&b"new"[..]));

    c.increment(TIncrement::new(b"t".to_vec(), b"r".to_vec(), b"f:n".to_vec(), 5)).expect("increment");
    let incs = (0..3).map(|_| TIncrement::new(b"t".to_vec(), b"r".to_vec(), b"f:n".to_vec(), 2)).collect();
    c.increment_rows(incs).expect("increment rows");
    assert_eq!(c.atomic_increment(b"t".to_vec(), b"r".to_vec(), b"f:n".to_vec(), 0).expect("read"), 11);
}

#[test]
fn row_or_before_region_info_and_scanner_variants() {
    let (_dir, _server, mut c) = start();
    for r in ["a", "c", "e", "g"] {
        put(&mut c, r, "f:q", r);
    }
    let before = c.get_row_or_before(b"t".to_vec(), b"d".to_vec(), b"f".to_vec()).expect("row or before");
    assert_eq!(before[0].value.as_deref(), Some(&b"c"[..]));
    let info = c.get_region_info(b"t,d,99".to_vec()).expect("region info");
    assert_eq!(info.start_key.as_deref(), Some(&b""[..]));

    let rows = |c: &mut ThriftClient, id: i32| -> Vec<Vec<u8>> {
        let got = c.scanner_get_list(id, 100).expect("get list").into_iter().filter_map(|r| r.row).collect();
        c.scanner_close(id).expect("close");
        got
    };
    let none = BTreeMap::new;
    let id = c.scanner_open(b"t".to_vec(), b"c".to_vec(), vec![], none()).expect("open");
    assert_eq!(rows(&mut c, id), [b"c", b"e", b"g"]);
    let id = c
        .scanner_open_with_stop(b"t".to_vec(), b"b".to_vec(), b"f".to_vec(), vec![b"f:q".to_vec()], none())
        .expect("open");
    assert_eq!(rows(&mut c, id), [b"c", b"e"]);
    let id = c.scanner_open_with_prefix(b"t".to_vec(), b"e".to_vec(), vec![], none()).expect("open");
    assert_eq!(rows(&mut c, id), [b"e"]);
    // Timestamps: everything was written "now", so a scan before ts 1 sees nothing.
    let id = c.scanner_open_ts(b"t".to_vec(), b"".to_vec(), vec![], 1, none()).expect("open");
    assert!(rows(&mut c, id).is_empty());
    let id = c
        .scanner_open_with_stop_ts(b"t".to_vec(), b"".to_vec(), b"z".to_vec(), vec![], i64::MAX, none())
        .expect("open");
    assert_eq!(rows(&mut c, id).len(), 4);
    let gone = c.scanner_get(id).expect_err("closed scanner");
    assert!(error_message(&gone).contains("IllegalArgument: scanner ID is invalid"), "{}", error_message(&gone));
}

#[test]
fn illegal_arguments_reach_io_error_only_calls_as_io_errors() {
    let (_dir, _server, mut c) = start();
    // getVer declares only IOError: an illegal version count arrives as one.
    let e = c.get_ver(b"t".to_vec(), b"r".to_vec(), b"f:q".to_vec(), 0, BTreeMap::new()).expect_err("bad versions");
    let msg = error_message(&e);
    assert!(msg.starts_with("IOError: java.lang.IllegalArgumentException"), "{msg}");
    // mutateRow declares IllegalArgument: a put without a qualifier is one.
    let m = Mutation {
        is_delete: Some(false),
        column: Some(b"f".to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: None,
    };
    let e = c.mutate_row(b"t".to_vec(), b"r".to_vec(), vec![m], BTreeMap::new()).expect_err("no qualifier");
    assert!(error_message(&e).starts_with("IllegalArgument:"), "{}", error_message(&e));
    // The connection is still in step after both.
    put(&mut c, "r", "f:q", "v");
    assert_eq!(value(&mut c, "r", "f:q").as_deref(), Some(&b"v"[..]));
}

#[test]
fn batched_scans_filter_whole_rows_before_cutting_them() {
    let (_dir, _server, mut c) = start();
    for r in ["a", "b"] {
        for q in ["f:1", "f:2", "f:3"] {
            put(&mut c, r, q, "v");
        }
    }
    // PageFilter(1) passes one row; with batchSize 1 that row comes as three
    // pieces (a filter that saw pieces would pass only the first piece).
    // (TScan's generated Default fills zeros, timestamp 0 included: build it field by field.)
    let scan = TScan::new(None, None, None, None, None, b"PageFilter(1)".to_vec(), 1, None, None);
    let id = c.scanner_open_with_scan(b"t".to_vec(), scan, BTreeMap::new()).expect("open");
    let results = c.scanner_get_list(id, 100).expect("get");
    let rows: Vec<Vec<u8>> = results.iter().filter_map(|r| r.row.clone()).collect();
    assert_eq!(rows, [b"a", b"a", b"a"], "three one-cell pieces of the first row");
    assert!(results.iter().all(|r| r.columns.as_ref().is_some_and(|c| c.len() == 1)));
}

#[test]
fn a_mutation_without_write_to_wal_is_logged() {
    let (_dir, server, mut c) = start();
    let before = server.store().metrics().totals.wal_bytes;
    let m = Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: None,
    };
    c.mutate_row(b"t".to_vec(), b"r".to_vec(), vec![m], BTreeMap::new()).expect("put");
    assert!(Mutation::default().write_to_w_a_l == Some(true), "the IDL's default is true");
    assert!(server.store().metrics().totals.wal_bytes > before, "the put went to the WAL");
    let skip = Mutation { write_to_w_a_l: Some(false), column: Some(b"f:q".to_vec()), ..Default::default() };
    let logged = server.store().metrics().totals.wal_bytes;
    c.mutate_row(b"t".to_vec(), b"r2".to_vec(), vec![skip], BTreeMap::new()).expect("put");
    assert_eq!(server.store().metrics().totals.wal_bytes, logged, "writeToWAL=false skips the WAL");
}

#[test]
fn append_to_a_family_only_column_uses_the_empty_qualifier() {
    let (_dir, _server, mut c) = start();
    for v in ["x", "y"] {
        let a = TAppend::new(b"t".to_vec(), b"r".to_vec(), vec![b"f".to_vec()], vec![v.as_bytes().to_vec()]);
        c.append(a).expect("append");
    }
    assert_eq!(value(&mut c, "r", "f:").as_deref(), Some(&b"xy"[..]));
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout() {
    use std::io::Read;
    use std::time::{Duration, Instant};
    const IDLE_MS: u64 = 1500;
    let (_dir, server, mut c) = start_with(&[&format!("hbase.thrift.server.socket.read.timeout={IDLE_MS}")]);
    // A connection in use stays open past the timeout: the timeout counts
    // idle time, not the connection's age.
    let busy = Instant::now();
    while busy.elapsed() < Duration::from_millis(IDLE_MS * 3) {
        c.get_table_names().expect("a call on a connection in use");
        std::thread::sleep(Duration::from_millis(100));
    }
    // An idle one is closed, and not before the timeout: a loaded machine
    // can only make the close later, never earlier.
    let connected = Instant::now();
    let mut s = std::net::TcpStream::connect(server.thrift_addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut buf = [0u8; 1];
    assert_eq!(s.read(&mut buf).expect("closed, not timed out"), 0, "the server closed the idle connection");
    let idle = connected.elapsed();
    assert!(idle >= Duration::from_millis(IDLE_MS), "closed after {idle:?} idle, before the {IDLE_MS} ms timeout");
}

#[test]
fn a_malformed_row_refuses_the_whole_batch_before_anything_is_written() {
    use server::thrift::hbase_thrift::BatchMutation;
    let (_dir, _server, mut c) = start();
    let good = Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: None,
    };
    let bad = Mutation { column: Some(b"f".to_vec()), ..good.clone() };
    let batches = vec![
        BatchMutation::new(b"ok1".to_vec(), vec![good.clone()]),
        BatchMutation::new(b"bad".to_vec(), vec![bad]),
        BatchMutation::new(b"ok2".to_vec(), vec![good]),
    ];
    let e = c.mutate_rows(b"t".to_vec(), batches, BTreeMap::new()).expect_err("a put without a qualifier");
    assert!(error_message(&e).starts_with("IllegalArgument:"), "{}", error_message(&e));
    assert_eq!(value(&mut c, "ok1", "f:q"), None, "nothing of the batch was written");
    assert_eq!(value(&mut c, "ok2", "f:q"), None);
}

/// HBase's batch: a row the store refuses (a put to a family the table
/// lacks) makes mutateRows raise IOError naming the exception, but the
/// other rows of the batch — before and after it — are applied.
#[test]
fn a_row_the_store_refuses_fails_the_call_but_the_other_rows_are_applied() {
    use server::thrift::hbase_thrift::BatchMutation;
    let (_dir, _server, mut c) = start();
    let put = |col: &str| Mutation {
        is_delete: Some(false),
        column: Some(col.as_bytes().to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: None,
    };
    let batches = vec![
        BatchMutation::new(b"ok1".to_vec(), vec![put("f:q")]),
        BatchMutation::new(b"bad".to_vec(), vec![put("f:q"), put("nosuch:q")]),
        BatchMutation::new(b"ok2".to_vec(), vec![put("f:q")]),
    ];
    let e = c.mutate_rows(b"t".to_vec(), batches, BTreeMap::new()).expect_err("a missing family");
    let msg = error_message(&e);
    assert!(msg.starts_with("IOError:") && msg.contains("NoSuchColumnFamilyException"), "{msg}");
    assert_eq!(value(&mut c, "ok1", "f:q").as_deref(), Some(&b"v"[..]), "the row before it is applied");
    assert_eq!(value(&mut c, "ok2", "f:q").as_deref(), Some(&b"v"[..]), "the row after it is applied");
    assert_eq!(value(&mut c, "bad", "f:q"), None, "the refused row is atomic: none of it is applied");
}

#[test]
fn a_taken_port_is_a_clear_error() {
    let (_dir, server, _c) = start();
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        format!("thrift_addr={}", server.thrift_addr()),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
    ];
    let Err(e) = Server::start(ServerConfig::load(None, &sets).expect("config")) else {
        panic!("a second server bound the same Thrift port");
    };
    let msg = e.to_string();
    assert!(msg.contains(&server.thrift_addr().to_string()) && msg.contains("thrift"), "{msg}");
}

/// Issue 15's reproductions, each asserting the answer real HBase 2.6.4's
/// Thrift gateway gives (recorded through happybase in the issue).
mod hbase_answers {
    use super::*;

    pub(super) fn create_family(c: &mut ThriftClient, table: &str, versions: i32) {
        let cd = ColumnDescriptor { name: Some(b"fh:".to_vec()), max_versions: Some(versions), ..Default::default() };
        c.create_table(table.as_bytes().to_vec(), vec![cd]).expect("create");
    }

    pub(super) fn put_ts(c: &mut ThriftClient, table: &str, row: &str, col: &str, value: Vec<u8>, ts: i64) {
        let m = Mutation {
            is_delete: Some(false),
            column: Some(col.as_bytes().to_vec()),
            value: Some(value),
            write_to_w_a_l: Some(true),
        };
        c.mutate_row_ts(table.as_bytes().to_vec(), row.as_bytes().to_vec(), vec![m], ts, BTreeMap::new()).expect("put");
    }

    fn inc(c: &mut ThriftClient, table: &str, row: &str, col: &str, by: i64) -> i64 {
        c.atomic_increment(table.as_bytes().to_vec(), row.as_bytes().to_vec(), col.as_bytes().to_vec(), by)
            .expect("increment")
    }

    /// Item 1: after `put(r, {fh:n: pack(10)}, timestamp=2**62)` two
    /// increments return 11 and 12 and the counter reads 12 (ours gave 11,
    /// 11, 10: the increment wrote at now, below the future version); 20
    /// quick increments leave 20 versions (same-millisecond ones collapsed).
    #[test]
    fn increments_supersede_the_version_they_read() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "inc", 100);
        put_ts(&mut c, "inc", "r", "fh:n", 10i64.to_be_bytes().to_vec(), 1 << 62);
        assert_eq!(inc(&mut c, "inc", "r", "fh:n", 1), 11);
        assert_eq!(inc(&mut c, "inc", "r", "fh:n", 1), 12);
        assert_eq!(inc(&mut c, "inc", "r", "fh:n", 0), 12, "counter_get");

        for _ in 0..20 {
            inc(&mut c, "inc", "q", "fh:n", 1);
        }
        let versions =
            c.get_ver(b"inc".to_vec(), b"q".to_vec(), b"fh:n".to_vec(), 100, BTreeMap::new()).expect("versions");
        assert_eq!(versions.len(), 20, "one version per increment");
        assert_eq!(versions[0].value.as_deref(), Some(&20i64.to_be_bytes()[..]));

        // Append likewise reads the newest version and supersedes it.
        put_ts(&mut c, "inc", "a", "fh:s", b"x".to_vec(), 1 << 62);
        let a = TAppend::new(b"inc".to_vec(), b"a".to_vec(), vec![b"fh:s".to_vec()], vec![b"y".to_vec()]);
        assert_eq!(c.append(a).expect("append")[0].value.as_deref(), Some(&b"xy"[..]));
        let cells = c.get(b"inc".to_vec(), b"a".to_vec(), b"fh:s".to_vec(), BTreeMap::new()).expect("get");
        assert_eq!(cells[0].value.as_deref(), Some(&b"xy"[..]));
    }

    /// Item 2: a put at `LATEST_TIMESTAMP` (2**63-1) is stamped with the
    /// server's time, so `row(timestamp=2**63-1)` sees it (ours stored it at
    /// 2**63-1, above every read's time range).
    #[test]
    fn latest_timestamp_means_now() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "ts", 3);
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis();
        put_ts(&mut c, "ts", "r", "fh:a", b"v".to_vec(), i64::MAX);
        let rows = c
            .get_row_with_columns_ts(b"ts".to_vec(), b"r".to_vec(), vec![], i64::MAX, BTreeMap::new())
            .expect("row at LATEST_TIMESTAMP");
        let cell = &rows[0].columns.as_ref().expect("columns")[&b"fh:a".to_vec()];
        assert_eq!(cell.value.as_deref(), Some(&b"v"[..]));
        let ts = cell.timestamp.expect("a timestamp") as u128;
        assert!(ts >= before && ts < before + 60_000, "stamped with the server's time: {ts}");
    }

    /// Item 4: `scan(row_start=b'q', row_stop=b'q')` returns row q (HBase's
    /// Scan(start, stop) with start == stop is a get); `row(r,
    /// columns=[b'fh', b'fh:a'])` returns only fh:a (the later, narrower
    /// mention wins) and `[b'fh:a', b'fh']` the whole family.
    #[test]
    fn a_scan_from_a_row_to_itself_and_narrowed_columns() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "sc", 3);
        for r in ["p", "q", "qa", "r"] {
            put_ts(&mut c, "sc", r, "fh:a", b"1".to_vec(), 5);
            put_ts(&mut c, "sc", r, "fh:b", b"2".to_vec(), 5);
        }
        let id = c
            .scanner_open_with_stop(b"sc".to_vec(), b"q".to_vec(), b"q".to_vec(), vec![], BTreeMap::new())
            .expect("open");
        let rows: Vec<Vec<u8>> = c.scanner_get_list(id, 10).expect("list").into_iter().filter_map(|r| r.row).collect();
        assert_eq!(rows, [b"q".to_vec()]);

        let columns_of = |c: &mut ThriftClient, cols: &[&str]| -> Vec<Vec<u8>> {
            let cols = cols.iter().map(|s| s.as_bytes().to_vec()).collect();
            let rows = c.get_row_with_columns(b"sc".to_vec(), b"q".to_vec(), cols, BTreeMap::new()).expect("row");
            rows[0].columns.as_ref().expect("columns").keys().cloned().collect()
        };
        assert_eq!(columns_of(&mut c, &["fh", "fh:a"]), [b"fh:a".to_vec()]);
        assert_eq!(columns_of(&mut c, &["fh:a", "fh"]), [b"fh:a".to_vec(), b"fh:b".to_vec()]);
    }

    /// A scanned row: its key and its (column, value) pairs.
    pub(super) type Row = (String, Vec<(String, Vec<u8>)>);

    pub(super) fn scan_with(c: &mut ThriftClient, table: &str, filter: &str) -> Vec<Row> {
        let scan = TScan::new(None, None, None, None, None, filter.as_bytes().to_vec(), None, None, None);
        let id = c.scanner_open_with_scan(table.as_bytes().to_vec(), scan, BTreeMap::new()).expect("open");
        let rows = c.scanner_get_list(id, 100).expect("get");
        c.scanner_close(id).expect("close");
        rows.into_iter()
            .map(|r| {
                let cols = r.columns.unwrap_or_default();
                let cells = cols
                    .into_iter()
                    .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v.value.unwrap_or_default()))
                    .collect();
                (String::from_utf8_lossy(&r.row.unwrap_or_default()).into_owned(), cells)
            })
            .collect()
    }

    pub(super) fn rows_of(found: &[Row]) -> Vec<&str> {
        found.iter().map(|(r, _)| r.as_str()).collect()
    }

    /// Item 5 and issue 14: filters see every version. On a family keeping
    /// 3 versions, `ValueFilter(=,'binary:old')` returns the older version
    /// that matches (ours returned nothing: it saw only the newest), and
    /// `SingleColumnValueFilter` with latestVersionOnly false passes a row
    /// whose older version matches (ours refused it).
    #[test]
    fn filters_see_every_version() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "mv", 3);
        put_ts(&mut c, "mv", "r", "fh:a", b"old".to_vec(), 1);
        put_ts(&mut c, "mv", "r", "fh:a", b"new".to_vec(), 2);
        put_ts(&mut c, "mv", "s", "fh:a", b"new".to_vec(), 2);
        let found = scan_with(&mut c, "mv", "ValueFilter(=, 'binary:old')");
        assert_eq!(found, [("r".to_string(), vec![("fh:a".to_string(), b"old".to_vec())])]);
        let latest = scan_with(&mut c, "mv", "SingleColumnValueFilter('fh', 'a', =, 'binary:old')");
        assert!(latest.is_empty(), "the newest version decides by default: {latest:?}");
        let any = scan_with(&mut c, "mv", "SingleColumnValueFilter('fh', 'a', =, 'binary:old', true, false)");
        assert_eq!(any, [("r".to_string(), vec![("fh:a".to_string(), b"new".to_vec())])], "the row, newest version");
    }

    /// Item 5: KeyOnlyFilter inside OR strips every value it included (ours
    /// kept the values when the other branch also kept the cell).
    #[test]
    fn key_only_inside_or_strips_values() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "ko", 1);
        put_ts(&mut c, "ko", "r", "fh:a", b"1".to_vec(), 5);
        put_ts(&mut c, "ko", "r", "fh:b", b"2".to_vec(), 5);
        let found = scan_with(&mut c, "ko", "KeyOnlyFilter() OR QualifierFilter(=, 'binary:a')");
        assert_eq!(found, [("r".to_string(), vec![("fh:a".to_string(), vec![]), ("fh:b".to_string(), vec![])])]);
        let lengths = scan_with(&mut c, "ko", "KeyOnlyFilter(true)");
        assert_eq!(lengths[0].1[0].1, 1u32.to_be_bytes().to_vec(), "the value's length, as HBase's lenAsVal");
    }

    /// Item 5: `WHILE FamilyFilter(=,'binary:f1')` returns the first row up
    /// to its first f2 cell and ends the scan (ours dropped the row and
    /// ended); `PageFilter(1) AND RowFilter(>=,'binary:fb')` returns fb
    /// (ours counted fa, which the row filter dropped, and returned nothing).
    #[test]
    fn while_and_page_stop_where_hbase_stops() {
        let (_dir, _server, mut c) = start();
        let cd = |n: &str| ColumnDescriptor {
            name: Some(n.as_bytes().to_vec()),
            max_versions: Some(1),
            ..Default::default()
        };
        c.create_table(b"wp".to_vec(), vec![cd("f1:"), cd("f2:")]).expect("create");
        for r in ["fa", "fb", "fc"] {
            put_ts(&mut c, "wp", r, "f1:a", b"1".to_vec(), 5);
            put_ts(&mut c, "wp", r, "f2:a", b"2".to_vec(), 5);
        }
        let found = scan_with(&mut c, "wp", "WHILE FamilyFilter(=, 'binary:f1')");
        assert_eq!(found, [("fa".to_string(), vec![("f1:a".to_string(), b"1".to_vec())])]);
        let found = scan_with(&mut c, "wp", "PageFilter(1) AND RowFilter(>=, 'binary:fb')");
        assert_eq!(rows_of(&found), ["fb"]);
    }

    /// Item 5: regexstring runs Java's regex with DOTALL over the value
    /// decoded as UTF-8, as HBase 2.6.4 does (`.` matches a newline, `$` a
    /// final newline); substring folds case as Java's toLowerCase does (É
    /// finds é).
    #[test]
    fn comparators_match_as_java_does() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "cmp", 1);
        put_ts(&mut c, "cmp", "nl", "fh:v", b"a\nb\n".to_vec(), 5);
        put_ts(&mut c, "cmp", "latin1", "fh:v", b"caf\xe9".to_vec(), 5);
        put_ts(&mut c, "cmp", "utf8", "fh:v", "un caf\u{e9}".as_bytes().to_vec(), 5);
        assert_eq!(rows_of(&scan_with(&mut c, "cmp", "ValueFilter(=, 'regexstring:a.b$')")), ["nl"]);
        // HBase 2.6.4 decodes the value as UTF-8 (recorded in
        // crates/store/tests/data/filters): the Latin-1 byte 0xE9 is not é.
        assert_eq!(rows_of(&scan_with(&mut c, "cmp", "ValueFilter(=, 'regexstring:caf\u{e9}$')")), ["utf8"]);
        assert_eq!(rows_of(&scan_with(&mut c, "cmp", "ValueFilter(=, 'substring:CAF\u{c9}')")), ["utf8"]);
    }

    /// Issue 29 item 8 (recorded from HBase 2.6.4's gateway in the
    /// differential run, happybase on both): a reverse scan with row_start
    /// == row_stop returns that row, as the forward one does (HBase's
    /// setStopRow includes a stop row equal to the start row); ours
    /// returned nothing.
    #[test]
    fn a_reverse_scan_from_a_row_to_itself_returns_the_row() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "rv", 1);
        for r in ["p", "q", "qa", "r"] {
            put_ts(&mut c, "rv", r, "fh:a", b"1".to_vec(), 5);
        }
        for reversed in [false, true] {
            let scan = TScan::new(b"q".to_vec(), b"q".to_vec(), None, None, None, None, None, None, reversed);
            let id = c.scanner_open_with_scan(b"rv".to_vec(), scan, BTreeMap::new()).expect("open");
            let rows: Vec<Vec<u8>> =
                c.scanner_get_list(id, 10).expect("list").into_iter().filter_map(|r| r.row).collect();
            assert_eq!(rows, [b"q".to_vec()], "reversed: {reversed}");
        }
    }

    /// Issue 29 item 8 (recorded from HBase 2.6.4's gateway in the
    /// differential run): happybase's batch `put pb1, put pb2 nofam:a, put
    /// pb3, delete pb1 fh:a` fails, and HBase keeps pb1 and pb3 (ours kept
    /// only pb3). HBase's mutateRowsTs sends the puts of every row first
    /// (pb2's is refused, the others applied) and the deletes only after
    /// all puts succeeded, so pb1's delete is never applied.
    #[test]
    fn a_batch_applies_every_put_before_any_delete_as_hbase_does() {
        use server::thrift::hbase_thrift::BatchMutation;
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "mb", 1);
        let put = |col: &str| Mutation {
            is_delete: Some(false),
            column: Some(col.as_bytes().to_vec()),
            value: Some(b"v".to_vec()),
            write_to_w_a_l: Some(true),
        };
        let delete = |col: &str| Mutation { is_delete: Some(true), value: None, ..put(col) };
        // happybase's Batch groups a row's mutations in one BatchMutation.
        let batches = vec![
            BatchMutation::new(b"pb1".to_vec(), vec![put("fh:a"), delete("fh:a")]),
            BatchMutation::new(b"pb2".to_vec(), vec![put("nofam:a")]),
            BatchMutation::new(b"pb3".to_vec(), vec![put("fh:a")]),
        ];
        let e = c.mutate_rows(b"mb".to_vec(), batches, BTreeMap::new()).expect_err("a missing family");
        assert!(error_message(&e).contains("NoSuchColumnFamilyException"), "{}", error_message(&e));
        let rows = |c: &mut ThriftClient| -> Vec<String> {
            let id = c.scanner_open(b"mb".to_vec(), vec![], vec![], BTreeMap::new()).expect("open");
            let rows = c.scanner_get_list(id, 10).expect("list");
            rows.into_iter().filter_map(|r| r.row).map(|r| String::from_utf8_lossy(&r).into_owned()).collect()
        };
        assert_eq!(rows(&mut c), ["pb1", "pb3"]);

        // Without a refused put the deletes follow the puts: a row's delete
        // removes the column the same batch puts.
        let batches = vec![BatchMutation::new(b"pc1".to_vec(), vec![put("fh:a"), delete("fh:a")])];
        c.mutate_rows(b"mb".to_vec(), batches, BTreeMap::new()).expect("batch");
        assert_eq!(rows(&mut c), ["pb1", "pb3"], "pc1's put was deleted after it was applied");
    }

    /// Issue 29 item 8: a filter string that does not parse. HBase's
    /// gateway answers with a TApplicationException ("Internal error
    /// processing scannerOpenWithScan": its ParseFilter throws an unchecked
    /// IllegalArgumentException), and clients written against HBase catch
    /// that (happybase raises thriftpy2's TApplicationException): ours is
    /// the same exception, its message followed by the cause, which HBase's
    /// omits. The connection stays usable.
    #[test]
    fn an_unparsable_filter_is_the_application_exception_hbase_raises_naming_the_cause() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "bad", 1);
        put_ts(&mut c, "bad", "r", "fh:a", b"v".to_vec(), 5);
        for (filter, cause) in [
            ("NoSuchFilter('x')", "NoSuchFilter"),
            ("ValueFilter(=, 'binary:v'", "missing ')'"),
            ("RandomRowFilter(0.5)", "RandomRowFilter"),
        ] {
            let scan = TScan::new(None, None, None, None, None, filter.as_bytes().to_vec(), None, None, None);
            let e = c.scanner_open_with_scan(b"bad".to_vec(), scan, BTreeMap::new()).expect_err(filter);
            let thrift::Error::Application(a) = &e else { panic!("{filter}: not a TApplicationException: {e:?}") };
            assert_eq!(a.kind, thrift::ApplicationErrorKind::InternalError, "{filter}");
            assert!(a.message.starts_with("Internal error processing scannerOpenWithScan"), "{filter}: {}", a.message);
            assert!(a.message.contains(cause), "{filter}: {}", a.message);
        }
        assert_eq!(rows_of(&scan_with(&mut c, "bad", "ValueFilter(=, 'binary:v')")), ["r"]);
    }

    /// Item 6: table metadata as HBase reports and refuses it.
    #[test]
    fn metadata_as_hbase_reports_it() {
        let (_dir, server, mut c) = start();
        let cd = |n: &str, in_memory: bool, cache: bool| ColumnDescriptor {
            name: Some(n.as_bytes().to_vec()),
            max_versions: Some(2),
            in_memory: Some(in_memory),
            block_cache_enabled: Some(cache),
            ..Default::default()
        };
        c.create_table(b"md".to_vec(), vec![cd("a:", true, false), cd("b:", false, true)]).expect("create");
        let d = c.get_column_descriptors(b"md".to_vec()).expect("descriptors");
        let a = &d[&b"a:".to_vec()];
        let b = &d[&b"b:".to_vec()];
        assert_eq!((a.in_memory, a.block_cache_enabled), (Some(true), Some(false)));
        assert_eq!((b.in_memory, b.block_cache_enabled), (Some(false), Some(true)));
        // Without a bloom filter type, none: HBase's Thrift gateway (the
        // shell's `create` asks for ROW, as HBase's shell does).
        assert_eq!(a.bloom_filter_type.as_deref(), Some("NONE"));

        let zero = ColumnDescriptor { name: Some(b"z:".to_vec()), max_versions: Some(0), ..Default::default() };
        let e = c.create_table(b"zero".to_vec(), vec![zero]).expect_err("maxVersions 0");
        assert!(error_message(&e).starts_with("IllegalArgument:"), "{}", error_message(&e));

        assert!(c.get_table_regions(b"missing".to_vec()).expect("no error").is_empty());
        // Each region names the server that holds it: this one's Thrift
        // host and port (it was "localhost", 0).
        let regions = c.get_table_regions(b"md".to_vec()).expect("regions");
        let addr = server.thrift_addr();
        assert_eq!(regions[0].server_name.as_deref(), Some(addr.ip().to_string().as_bytes()));
        assert_eq!(regions[0].port, Some(i32::from(addr.port())));

        put_ts(&mut c, "md", "r", "a:s", b"abc".to_vec(), 5);
        let e = c.atomic_increment(b"md".to_vec(), b"r".to_vec(), b"a:s".to_vec(), 1).expect_err("3 bytes");
        assert!(error_message(&e).starts_with("IOError:"), "{}", error_message(&e));
    }
}

/// Issue 15's "not to copy" list: where real HBase 2.6.4 answers wrongly
/// because of a known HBase bug, ours gives the right answer, and each test
/// says what HBase does instead.
mod hbase_bugs_not_copied {
    use super::hbase_answers::{create_family, put_ts, rows_of, scan_with};
    use super::*;

    /// HBASE-28621: HBase 2.6.4's PrefixFilter compares prefix-length bytes
    /// from the row's offset in the cell's key, so for a row shorter than the
    /// prefix it reads past the row into the key's next bytes (the family's
    /// length and name) and can match them. A row shorter than the prefix
    /// never starts with it: ours never matches one.
    #[test]
    fn prefix_filter_never_matches_a_row_shorter_than_the_prefix() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "pf", 1);
        for r in ["r1", "r1x", "r1xy", "r2"] {
            put_ts(&mut c, "pf", r, "fh:a", b"v".to_vec(), 5);
        }
        assert_eq!(rows_of(&scan_with(&mut c, "pf", "PrefixFilter('r1x')")), ["r1x", "r1xy"]);
        // "r1", then the bytes that follow the row in HBase's KeyValue key:
        // the family's length (2) and its name.
        let past_the_row = b"PrefixFilter('r1\x02fh')".to_vec();
        let scan = TScan::new(None, None, None, None, None, past_the_row, None, None, None);
        let id = c.scanner_open_with_scan(b"pf".to_vec(), scan, BTreeMap::new()).expect("open");
        assert!(c.scanner_get_list(id, 10).expect("rows").is_empty());
        c.scanner_close(id).expect("close");
    }

    /// HBase's SkipFilter forwards only the cell-level check to the filter it
    /// wraps, never `filterRowKey`, so `SKIP RowFilter(...)` passes every row
    /// there. SKIP means "drop a row when the wrapped filter rejects any of
    /// its cells", and a row filter rejecting the row rejects all of them:
    /// ours keeps only the rows the row filter keeps.
    #[test]
    fn skip_over_a_row_filter_drops_the_rows_it_rejects() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "sk", 1);
        for r in ["p", "r", "s"] {
            put_ts(&mut c, "sk", r, "fh:a", b"v".to_vec(), 5);
            put_ts(&mut c, "sk", r, "fh:b", b"w".to_vec(), 5);
        }
        assert_eq!(rows_of(&scan_with(&mut c, "sk", "SKIP RowFilter(=, 'binary:r')")), ["r"]);
        assert_eq!(rows_of(&scan_with(&mut c, "sk", "SKIP ValueFilter(=, 'binary:v')")), Vec::<&str>::new());
    }

    /// Issue 29 item 8, the same SkipFilter behaviour: HBase 2.6.4's
    /// `SKIP PrefixFilter('fb')` returns no row, as the PrefixFilter never
    /// sees a row key and so rejects every cell (recorded by the filter
    /// oracle, case skip-prefix-fb in crates/store/tests/data/filters). Ours
    /// keeps the rows with the prefix, as it keeps the rows a RowFilter
    /// keeps under SKIP.
    #[test]
    fn skip_over_a_prefix_filter_keeps_the_rows_with_the_prefix() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "sp", 1);
        for r in ["fa", "fb", "fb1", "fc"] {
            put_ts(&mut c, "sp", r, "fh:a", b"v".to_vec(), 5);
        }
        assert_eq!(rows_of(&scan_with(&mut c, "sp", "SKIP PrefixFilter('fb')")), ["fb", "fb1"]);
    }

    /// HBASE-29460: with VERSIONS => 3 and four versions written, HBase
    /// 2.6.4 still returns the oldest (fourth) version to a read whose time
    /// range holds only it, until a flush or compaction drops it. A version
    /// beyond the family's limit is gone for every read in ours.
    #[test]
    fn a_version_beyond_the_familys_limit_is_invisible_to_time_range_reads() {
        let (_dir, _server, mut c) = start();
        create_family(&mut c, "tr", 3);
        for ts in 1..=4 {
            put_ts(&mut c, "tr", "r", "fh:a", format!("v{ts}").into_bytes(), ts);
        }
        // getRowTs reads the time range [0, ts): only version 1 is in [0, 2).
        let oldest = c.get_row_ts(b"tr".to_vec(), b"r".to_vec(), 2, BTreeMap::new()).expect("row");
        assert!(oldest.is_empty(), "the fourth version is beyond VERSIONS => 3: {oldest:?}");
        let below_three = c.get_row_ts(b"tr".to_vec(), b"r".to_vec(), 3, BTreeMap::new()).expect("row");
        let cell = &below_three[0].columns.as_ref().expect("columns")[&b"fh:a".to_vec()];
        assert_eq!(cell.value.as_deref(), Some(&b"v2"[..]), "version 2 is the newest of the three kept below 3");
        let all = c.get_ver(b"tr".to_vec(), b"r".to_vec(), b"fh:a".to_vec(), 10, BTreeMap::new()).expect("versions");
        let values: Vec<_> = all.iter().filter_map(|c| c.value.clone()).collect();
        assert_eq!(values, [b"v4".to_vec(), b"v3".to_vec(), b"v2".to_vec()]);
    }
}

/// A connection may hold at most max_scanners_per_connection scanners, and
/// the ones it leaves open are closed when it ends (issue 14 item 6).
#[test]
fn a_connections_scanners_are_capped_and_closed_when_it_ends() {
    let (_dir, server, mut c) = start_with(&["max_scanners_per_connection=2"]);
    let open = |c: &mut ThriftClient| {
        let scan = TScan::new(None, None, None, None, None, None, None, None, None);
        c.scanner_open_with_scan(b"t".to_vec(), scan, BTreeMap::new())
    };
    open(&mut c).expect("first");
    open(&mut c).expect("second");
    let e = open(&mut c).expect_err("third on one connection");
    assert!(error_message(&e).starts_with("IOError:") && error_message(&e).contains("max_scanners_per_connection"));
    let mut other = connect(&server.thrift_addr().to_string(), true, false).expect("connect");
    open(&mut other).expect("another connection has its own allowance");
    drop(c);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while server.scanners_open() != 1 {
        assert!(std::time::Instant::now() < deadline, "{} scanners open", server.scanners_open());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One client address may hold at most thrift_max_connections_per_client
/// connections and max_scanners_per_client scanners over all of them, so
/// that no one client can take every thread or scanner (issue 25 item 5);
/// what it holds within the caps keeps working, and a slot freed is
/// taken again.
#[test]
fn one_client_address_cannot_take_every_connection_or_scanner() {
    let (_dir, server, mut c) = start_with(&[
        "thrift_max_connections_per_client=3",
        "max_scanners_per_client=3",
        "max_scanners_per_connection=2",
    ]);
    let addr = server.thrift_addr().to_string();
    let open = |c: &mut ThriftClient| {
        let scan = TScan::new(None, None, None, None, None, None, None, None, None);
        c.scanner_open_with_scan(b"t".to_vec(), scan, BTreeMap::new())
    };
    open(&mut c).expect("first scanner");
    open(&mut c).expect("second scanner");
    let mut second = connect(&addr, true, false).expect("a second connection");
    open(&mut second).expect("third scanner, on another connection");
    let e = open(&mut second).expect_err("a fourth from the same address");
    assert!(error_message(&e).contains("max_scanners_per_client"), "{}", error_message(&e));
    let mut third = connect(&addr, true, false).expect("a third connection");
    third.get_table_names().expect("the third connection is served");
    // A fourth connection from this address is closed at once.
    let refused = connect(&addr, true, false).and_then(|mut c| c.get_table_names());
    assert!(refused.is_err(), "a fourth connection from one address was served");
    assert_eq!(server.scanners_open(), 3);
    // The first connection goes: its slot and its scanners are free again.
    drop(c);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut fourth = loop {
        if let Ok(mut c) = connect(&addr, true, false)
            && c.get_table_names().is_ok()
        {
            break c;
        }
        assert!(std::time::Instant::now() < deadline, "the freed slot was not taken again");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    open(&mut fourth).expect("a scanner again once the first connection's were closed");
}
