//! What a client or an operator sends cannot lose data: the real
//! `accordion server`, given the names and admin calls that once destroyed
//! tables, refuses them at every entry, keeps serving, and after a clean
//! restart and after a SIGKILL every acknowledged row is read back.
//!
//! Entries covered: Thrift `createTable` (table names and family names) on
//! all four wires; the admin calls on the HTTP port (alter by family and by
//! delete, flush, split, assign, unassign, merge, recover, sync_table,
//! refresh) and the same calls through the Thrift port's HTTP relay; a
//! seeded fuzz of admin query strings. The names are the regression corpus
//! of the store's tests (`crates/store/tests/data/hostile_names.txt`).
//!
//! Also: the buffered transport's message cap (a message announced small
//! but sent without end is cut at the cap, and the connection only is
//! closed), and the scanner's byte cap per answer.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::ServerProcess;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use server::thrift::client::{ThriftClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, IllegalArgument, Mutation, THbaseSyncClient};

const ROWS: usize = 300;

fn corpus() -> Vec<Vec<u8>> {
    let text = include_str!("../../store/tests/data/hostile_names.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| if l == "<empty>" { Vec::new() } else { unescape(l) })
        .collect()
}

fn unescape(s: &str) -> Vec<u8> {
    let (b, mut out, mut i) = (s.as_bytes(), Vec::new(), 0);
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).expect("hex escape"));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn pct(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// `POST path` (query included, sent byte for byte) to `addr`; the status
/// code and body.
fn post(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
    write!(s, "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n").expect("send");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read the answer");
    let code = answer.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, answer.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string()))
}

fn put_rows(c: &mut ThriftClient, from: usize, to: usize) {
    let batch: Vec<BatchMutation> = (from..to)
        .map(|i| BatchMutation {
            row: Some(format!("row{i:05}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(format!("v{i}").into_bytes()),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    c.mutate_rows(b"t".to_vec(), batch, BTreeMap::new()).expect("acknowledged puts");
}

/// Every row of `t`, checked against what was written.
fn assert_all_rows(c: &mut ThriftClient) {
    let id = c.scanner_open(b"t".to_vec(), Vec::new(), Vec::new(), BTreeMap::new()).expect("open a scanner");
    let mut seen = 0;
    loop {
        let rows = c.scanner_get_list(id, 1000).expect("scan");
        if rows.is_empty() {
            break;
        }
        for r in rows {
            let row = String::from_utf8(r.row.clone().expect("row")).expect("utf8");
            let value = r.columns.as_ref().and_then(|m| m.get(b"f:q".as_slice())).and_then(|c| c.value.clone());
            assert_eq!(row, format!("row{seen:05}"), "rows in order, none missing");
            assert_eq!(value, Some(format!("v{seen}").into_bytes()), "{row}");
            seen += 1;
        }
    }
    c.scanner_close(id).expect("close");
    assert_eq!(seen, ROWS, "every acknowledged row");
}

/// Family `f` as happybase declares one (max versions 1; the generated
/// default would send 0).
fn family() -> ColumnDescriptor {
    ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() }
}

fn is_illegal_argument(e: &thrift::Error) -> bool {
    matches!(e, thrift::Error::User(u) if u.downcast_ref::<IllegalArgument>().is_some())
}

#[test]
fn illegal_names_and_admin_calls_are_refused_at_every_entry_and_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start_in(dir.path(), &[]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let f = family();
    c.create_table(b"t".to_vec(), vec![f.clone()]).expect("create t");
    put_rows(&mut c, 0, 200);
    assert_eq!(post(server.http, "/admin/flush?table=t").0, 200);
    put_rows(&mut c, 200, ROWS);
    let names = corpus();
    let mut cases = 0;
    for (framed, compact) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut w = connect(&server.thrift.to_string(), framed, compact).expect("connect");
        for name in &names {
            let as_table = w.create_table(name.clone(), vec![f.clone()]).expect_err("an illegal table name");
            assert!(is_illegal_argument(&as_table), "table {name:?}: {as_table:?}");
            let mut family = name.clone();
            family.push(b':');
            let fam = ColumnDescriptor { name: Some(family), max_versions: Some(1), ..Default::default() };
            let as_family = w.create_table(b"u".to_vec(), vec![f.clone(), fam]).expect_err("an illegal family");
            assert!(is_illegal_argument(&as_family), "family {name:?}: {as_family:?}");
            cases += 2;
        }
    }
    let region = {
        let regions = c.get_table_regions(b"t".to_vec()).expect("regions");
        String::from_utf8(regions[0].name.clone().expect("name")).expect("utf8")
    };
    // Every admin call with each name, on the HTTP port and through the
    // Thrift port's relay: refused (4xx), never done (200) nor failed
    // inside (500).
    for addr in [server.http, server.thrift] {
        for name in &names {
            let n = pct(name);
            for path in [
                format!("/admin/alter?table=t&family={n}"),
                format!("/admin/alter?table=t&family={n}&VERSIONS=3"),
                format!("/admin/alter?table=t&delete={n}"),
                format!("/admin/alter?table={n}&family=g"),
                format!("/admin/flush?table={n}"),
                format!("/admin/split?table={n}&row=row00100"),
                format!("/admin/assign?region={n}"),
                format!("/admin/unassign?region={n}"),
                format!("/admin/merge?a={n}&b={n}"),
                format!("/admin/merge?a={}&b={n}", pct(region.as_bytes())),
                format!("/admin/recover?server={n}"),
                format!("/admin/recover?server={n}%2C1%2C2"),
                format!("/admin/sync_table?table={n}"),
            ] {
                let (code, body) = post(addr, &path);
                assert!((400..500).contains(&code), "{path} via {addr}: {code} {body}");
                cases += 1;
            }
        }
        for path in ["/admin/refresh", "/admin/recover?server=localhost%2C1%2C2", "/admin/nothing"] {
            let (code, body) = post(addr, path);
            assert!((400..500).contains(&code), "{path}: {code} {body}");
        }
    }
    assert!(cases > 1000, "{cases} cases");
    eprintln!("{cases} hostile names and admin calls refused, {ROWS} rows checked after each restart");
    assert_all_rows(&mut c);
    assert_eq!(c.get_table_names().expect("tables"), vec![b"t".to_vec()]);
    let descriptors = c.get_column_descriptors(b"t".to_vec()).expect("families");
    assert_eq!(descriptors.keys().cloned().collect::<Vec<_>>(), vec![b"f:".to_vec()]);

    // A clean restart, then a SIGKILL and a restart: every row each time.
    let mut server = server;
    server.terminate(Duration::from_secs(30)).expect("stops on SIGTERM");
    let mut server = ServerProcess::start_in(dir.path(), &[]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    assert_all_rows(&mut c);
    assert_eq!(c.get_table_names().expect("tables"), vec![b"t".to_vec()]);
    server.kill();
    let server = ServerProcess::start_in(dir.path(), &[]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    assert_all_rows(&mut c);
}

#[test]
fn a_seeded_fuzz_of_admin_query_strings_loses_nothing() {
    const CASES: usize = 3000;
    const CALLS: &[&str] =
        &["alter", "flush", "split", "assign", "unassign", "merge", "recover", "sync_table", "refresh", "nope"];
    const KEYS: &[&str] =
        &["table", "family", "delete", "region", "a", "b", "server", "row", "at", "VERSIONS", "TTL", "BLOCKSIZE", "x"];
    const PIECES: &[&str] = &[
        "t",
        "t",
        "g",
        "h",
        ".",
        "..",
        "/",
        "%2F",
        "%2E",
        "%00",
        "%0A",
        ":",
        ",",
        "1",
        "0",
        "-",
        "_",
        "%",
        "%ZZ",
        "+",
        "=",
        "&",
        "\\",
        "%5C",
        "localhost",
        "data",
        "WALs",
        "%C3%A9",
    ];
    let mut rng = SmallRng::seed_from_u64(0xad41_7e55);
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start_in(dir.path(), &[]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    c.create_table(b"t".to_vec(), vec![family()]).expect("create t");
    put_rows(&mut c, 0, ROWS);
    let mut answers = BTreeMap::new();
    for case in 0..CASES {
        let call = CALLS[rng.random_range(0..CALLS.len())];
        let params: Vec<String> = (0..rng.random_range(0..4))
            .map(|_| {
                let key = KEYS[rng.random_range(0..KEYS.len())];
                let value: String =
                    (0..rng.random_range(0..4)).map(|_| PIECES[rng.random_range(0..PIECES.len())]).collect();
                format!("{key}={value}")
            })
            .collect();
        let path = format!("/admin/{call}?{}", params.join("&"));
        let addr = if case % 2 == 0 { server.http } else { server.thrift };
        let (code, body) = post(addr, &path);
        assert!(code != 500 && code != 0, "case {case}: {path}: {code} {body}");
        *answers.entry(code).or_insert(0) += 1;
    }
    eprintln!("{CASES} admin calls, answers by status: {answers:?}");
    assert_all_rows(&mut c);
    let mut server = server;
    server.terminate(Duration::from_secs(30)).expect("stops on SIGTERM");
    let server = ServerProcess::start_in(dir.path(), &[]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    assert_all_rows(&mut c);
}

#[test]
fn a_buffered_message_over_the_cap_closes_only_its_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start_in(dir.path(), &["thrift_max_message_size_mb=1"]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    c.create_table(b"t".to_vec(), vec![family()]).expect("create t");
    put_rows(&mut c, 0, ROWS);
    // mutateRows with rows of 64 KiB each, 40 of them: 2.5 MiB in one
    // buffered message, each string under the string limit.
    let big: Vec<BatchMutation> = (0..40)
        .map(|i| BatchMutation {
            row: Some(format!("big{i:03}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(vec![b'x'; 64 << 10]),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    let mut hostile = connect(&server.thrift.to_string(), false, false).expect("connect");
    let refused = hostile.mutate_rows(b"t".to_vec(), big.clone(), BTreeMap::new());
    assert!(refused.is_err(), "a 2.5 MiB message over a 1 MiB cap is refused");
    // Nothing of it was written, and other connections go on.
    let got = c.get_row(b"t".to_vec(), b"big000".to_vec(), BTreeMap::new()).expect("get");
    assert!(got.is_empty(), "no row of the refused message was written");
    assert_all_rows(&mut c);
    // Under the cap, the same rows go through in pieces.
    for piece in big.chunks(8) {
        c.mutate_rows(b"t".to_vec(), piece.to_vec(), BTreeMap::new()).expect("a message under the cap");
    }
}

#[test]
fn a_scanner_answer_stops_at_the_byte_cap_and_the_rest_follows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start_in(dir.path(), &["max_result_size=1000"]);
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    c.create_table(b"t".to_vec(), vec![family()]).expect("create t");
    put_rows(&mut c, 0, ROWS);
    let id = c.scanner_open(b"t".to_vec(), Vec::new(), Vec::new(), BTreeMap::new()).expect("scanner");
    let first = c.scanner_get_list(id, 1000).expect("scan");
    assert!(!first.is_empty() && first.len() < ROWS, "{} rows in the first answer", first.len());
    c.scanner_close(id).expect("close");
    assert_all_rows(&mut c);
    // getRows over the cap is refused whole, with a clear error.
    let rows: Vec<Vec<u8>> = (0..ROWS).map(|i| format!("row{i:05}").into_bytes()).collect();
    let err = c.get_rows(b"t".to_vec(), rows, BTreeMap::new()).expect_err("over the cap");
    assert!(format!("{err:?}").contains("hbase.server.scanner.max.result.size"), "{err:?}");
}
