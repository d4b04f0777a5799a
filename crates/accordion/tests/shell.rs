//! `accordion shell` against a real server: a scripted session (a script
//! file and `-e`) whose output is checked line by line, with the times that
//! change from run to run masked.

mod common;

use std::process::Command;

use common::ServerProcess;

fn shell(server: &ServerProcess, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["shell", "--server", &server.thrift.to_string()])
        .args(["--http", &server.http.to_string()])
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run shell");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Drops "Took" lines and masks server-assigned timestamps.
fn normalise(out: &str) -> String {
    let ts = regex_lite_timestamp();
    out.lines().filter(|l| !l.starts_with("Took ")).map(ts).collect::<Vec<_>>().join("\n")
}

fn regex_lite_timestamp() -> impl Fn(&str) -> String {
    |line: &str| {
        // timestamp=<13+ digits> is the server's clock; short ones are ours.
        let mut out = String::new();
        let mut rest = line;
        while let Some(i) = rest.find("timestamp=") {
            out.push_str(&rest[..i + 10]);
            rest = &rest[i + 10..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            if digits >= 12 {
                out.push('T');
            } else {
                out.push_str(&rest[..digits]);
            }
            rest = &rest[digits..];
        }
        out.push_str(rest);
        out
    }
}

const SCRIPT: &str = r#"
# a session as an HBase user would type it
create 'people', 'info', {NAME => 'hist', VERSIONS => 3}
list
put 'people', 'alice', 'info:city', 'Haifa'
put 'people', 'bob', 'info:city', 'Oslo', 1000
put 'people', 'bob', 'hist:city', 'Bergen', 10
put 'people', 'bob', 'hist:city', 'Oslo', 20
get 'people', 'bob'
get 'people', 'bob', {COLUMN => 'hist:city', VERSIONS => 3}
scan 'people'
scan 'people', {STARTROW => 'b', LIMIT => 1, COLUMNS => ['info']}
count 'people'
incr 'people', 'counter', 'info:hits', 3
incr 'people', 'counter', 'info:hits'
flush 'people'
delete 'people', 'bob', 'hist:city'
deleteall 'people', 'alice'
scan 'people', {FILTER => "QualifierFilter(=, 'binary:city')"}
describe 'people'
compact 'people'
major_compact 'people'
count 'people'
disable 'people'
is_enabled 'people'
drop 'people'
exists 'people'
"#;

const EXPECTED: &str = r#"Created table people
TABLE
people
1 row(s)
COLUMN                          CELL
 hist:city                      timestamp=20, value=Oslo
 info:city                      timestamp=1000, value=Oslo
2 row(s)
COLUMN                          CELL
 hist:city                      timestamp=20, value=Oslo
 hist:city                      timestamp=10, value=Bergen
2 row(s)
ROW                             COLUMN+CELL
 alice                          column=info:city, timestamp=T, value=Haifa
 bob                            column=hist:city, timestamp=20, value=Oslo
 bob                            column=info:city, timestamp=1000, value=Oslo
2 row(s)
ROW                             COLUMN+CELL
 bob                            column=info:city, timestamp=1000, value=Oslo
1 row(s)
2 row(s)
COUNTER VALUE = 3
COUNTER VALUE = 4
ROW                             COLUMN+CELL
 bob                            column=info:city, timestamp=1000, value=Oslo
1 row(s)
Table people is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'hist', VERSIONS => '3', BLOOMFILTER => 'NONE', COMPRESSION => 'NONE', TTL => 'FOREVER'}
{NAME => 'info', VERSIONS => '1', BLOOMFILTER => 'NONE', COMPRESSION => 'NONE', TTL => 'FOREVER'}
2 row(s)
2 row(s)
false
Table people does not exist"#;

#[test]
fn scripted_session_prints_what_hbase_shell_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start(&[]);
    let script = dir.path().join("session.hbase");
    std::fs::write(&script, SCRIPT).expect("write script");
    let (ok, out) = shell(&server, &[script.to_str().expect("utf-8 path")]);
    assert!(ok, "shell failed:\n{out}");
    let got = normalise(&out);
    for (i, (g, e)) in got.lines().zip(EXPECTED.lines()).enumerate() {
        assert_eq!(g, e, "line {} differs; whole output:\n{got}", i + 1);
    }
    assert_eq!(got.lines().count(), EXPECTED.lines().count(), "whole output:\n{got}");
}

#[test]
fn errors_are_reported_and_the_exit_status_says_so() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = shell(&server, &["-e", "get 'nope', 'r'; create 't', 'f'; create 't', 'f'; frobnicate; put 't'"]);
    assert!(!ok, "a failed command must fail the run");
    assert!(out.contains("ERROR: IOError: org.apache.hadoop.hbase.TableNotFoundException: nope"), "{out}");
    assert!(out.contains("Created table t"), "{out}");
    assert!(out.contains("ERROR: AlreadyExists"), "{out}");
    assert!(out.contains("ERROR: unknown command \"frobnicate\""), "{out}");
    assert!(out.contains("ERROR: put: argument 2 (row) is missing"), "{out}");
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    // The listener is dropped: nothing listens there now.
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["shell", "--server", &format!("127.0.0.1:{port}"), "-e", "list"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run shell");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot connect to 127.0.0.1:{port}")), "{err}");
}

#[test]
fn regions_split_close_open_and_merge_from_the_shell() {
    let server = ServerProcess::start(&[]);
    let session = "create 't', 'f'; put 't', 'a', 'f:q', '1'; put 't', 'z', 'f:q', '2'; flush 't'; \
                   split 't', 'm'; list_regions 't'";
    let (ok, out) = shell(&server, &["-e", session]);
    assert!(ok, "{out}");
    // A fresh server numbers regions from 1: the table's first, then the
    // split's daughters.
    let line = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
    let (low, high) = ("0000000000000002", "0000000000000003");
    assert!(line(low).contains("OPEN") && line(low).contains(" m "), "{out}");
    assert!(line(high).contains("OPEN"), "{out}");

    let (ok, out) = shell(&server, &["-e", &format!("unassign '{low}'; get 't', 'a'")]);
    assert!(!ok, "a get from a closed region must fail: {out}");
    assert!(out.contains("NotServingRegionException") && out.contains("CLOSED"), "{out}");
    let (ok, out) = shell(&server, &["-e", "get 't', 'z'; list_regions 't'"]);
    assert!(ok && out.contains("value=2"), "the other region serves: {out}");
    assert!(line_of(&out, low).contains("CLOSED"), "{out}");

    let session =
        format!("assign '{low}'; get 't', 'a'; major_compact 't'; merge_region '{low}', '{high}'; list_regions 't'");
    let (ok, out) = shell(&server, &["-e", &session]);
    assert!(ok, "{out}");
    assert!(out.contains("value=1"), "{out}");
    assert!(out.contains(&format!("merged {low} and {high} into 0000000000000004")), "{out}");
    assert!(line_of(&out, "0000000000000004").contains("OPEN"), "{out}");
    let (ok, out) = shell(&server, &["-e", "merge_region '0000000000000004', '0000000000000004'; unassign 'nope'"]);
    assert!(!ok, "{out}");
    assert!(out.contains("ERROR: merge: invalid argument"), "{out}");
    assert!(out.contains("ERROR: unassign: no region named \"nope\""), "{out}");
}

fn line_of(out: &str, prefix: &str) -> String {
    out.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_string()
}
