//! The Thrift calls happybase does not make, through the generated Rust
//! client against an in-process server: append, checkAndPut, increment and
//! incrementRows, getRowOrBefore, getRegionInfo, the scanner variants, and
//! the exceptions of calls whose IDL declares only IOError.

use std::collections::BTreeMap;

use server::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::hbase_thrift::{ColumnDescriptor, Mutation, TAppend, TIncrement};
use server::{Server, ServerConfig};

fn start() -> (tempfile::TempDir, Server, ThriftClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
    ];
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
