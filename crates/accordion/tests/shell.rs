//! `accordion shell` against a real server: a scripted session (a script
//! file and `-e`) whose output is checked line by line, with the times that
//! change from run to run masked; HBase's syntax forms (brace-less options,
//! create with split keys, truncate, list with a regex, count's progress,
//! counters, help); errors, each an `ERROR:` line naming what is wrong and a
//! failed exit status; the interactive shell over a pipe with its history;
//! and finding the server's HTTP port without `--http`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::ServerProcess;

/// What a shell run left.
struct Run {
    ok: bool,
    out: String,
    err: String,
}

/// Runs `accordion shell` with `args` (after `--server` and, if given,
/// `--http`), with `home` as `$HOME` and `stdin` piped in if given.
fn run_shell(thrift: &str, http: Option<&str>, args: &[&str], home: Option<&Path>, stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_accordion"));
    cmd.args(["shell", "--server", thrift]);
    if let Some(http) = http {
        cmd.args(["--http", http]);
    }
    // A backtrace, if anything printed one, would show in the output.
    cmd.args(args).env("RUST_BACKTRACE", "1").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(home) = home {
        cmd.env("HOME", home);
    }
    let mut child = cmd.spawn().expect("run shell");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or_default().as_bytes()).expect("write stdin");
    drop(input);
    let out = child.wait_with_output().expect("shell output");
    let run = Run {
        ok: out.status.success(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    // No backtrace, panic, or `main`'s `Error: ...` (Debug) report.
    let noise = |l: &str| l.contains("backtrace") || l.contains("panicked") || l.starts_with("Error");
    assert!(!run.out.lines().chain(run.err.lines()).any(noise), "noise in\n{}\n{}", run.out, run.err);
    run
}

fn shell(server: &ServerProcess, args: &[&str]) -> (bool, String) {
    let run = run_shell(&server.thrift.to_string(), Some(&server.http.to_string()), args, None, None);
    (run.ok, run.out)
}

/// `-e commands` against `server`; its success and normalised output.
fn session(server: &ServerProcess, commands: &str) -> (bool, String) {
    let (ok, out) = shell(server, &["-e", commands]);
    (ok, normalise(&out))
}

/// Asserts `got` is `expected`, line by line.
fn assert_lines(got: &str, expected: &str) {
    for (i, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
        assert_eq!(g, e, "line {} differs; whole output:\n{got}", i + 1);
    }
    assert_eq!(got.lines().count(), expected.lines().count(), "whole output:\n{got}");
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
{NAME => 'hist', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '3', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
{NAME => 'info', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
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
    assert_lines(&normalise(&out), EXPECTED);
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

/// The everyday commands HBase users type that the shell lacked (issue 29):
/// `get_splits`, `locate_region`, `version`, `whoami`, `status 'simple'`
/// and `scan ... ENDROW`.
#[test]
fn get_splits_locate_region_version_whoami_and_endrow() {
    let server = ServerProcess::start(&[]);
    let session = "create 'sp', 'f', SPLITS => ['g', 'p']; put 'sp', 'a', 'f:q', '1'; put 'sp', 'h', 'f:q', '2'; \
                   put 'sp', 'q', 'f:q', '3'; get_splits 'sp'; scan 'sp', {STARTROW => 'a', ENDROW => 'q'}";
    let (ok, out) = session_of(&server, session);
    assert!(ok, "{out}");
    assert!(out.contains("Total number of splits = 2\ng\np\n"), "{out}");
    assert!(out.contains(" a ") && out.contains(" h ") && !out.contains(" q "), "ENDROW is exclusive: {out}");
    let (ok, out) = session_of(&server, "locate_region 'sp', 'h'");
    assert!(ok, "{out}");
    assert!(out.contains("STARTKEY => 'g', ENDKEY => 'p'") && out.contains("1 row(s)"), "{out}");
    let (ok, out) = session_of(&server, "version; whoami; status 'simple'");
    assert!(ok, "{out}");
    assert!(out.contains(&format!("accordion {}", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.contains("(auth:SIMPLE)") && out.contains("admin calls:"), "{out}");
    assert!(out.contains("1 active server"), "{out}");
    // HBase's pre-split by algorithm: HexStringSplit's keys.
    let (ok, out) =
        session_of(&server, "create 'hx', 'f', {NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}; get_splits 'hx'");
    assert!(ok, "{out}");
    assert!(out.contains("Total number of splits = 3\n40000000\n80000000\nc0000000\n"), "{out}");
    let (ok, out) = session_of(&server, "status 'bogus'");
    assert!(!ok && out.contains("status: format must be"), "{out}");
    let (ok, out) = session_of(&server, "scan 'sp', {STOPROW => 'b', ENDROW => 'c'}");
    assert!(!ok && out.contains("STOPROW and ENDROW are one option"), "{out}");
}

fn session_of(server: &ServerProcess, commands: &str) -> (bool, String) {
    shell(server, &["-e", commands])
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    // The listener is dropped: nothing listens there now.
    let run = run_shell(&format!("127.0.0.1:{port}"), None, &["-e", "list"], None, None);
    assert!(!run.ok);
    assert!(run.out.starts_with(&format!("ERROR: cannot connect to 127.0.0.1:{port}: ")), "{}", run.out);
    assert!(run.out.contains("refused"), "the I/O error, not just the transport's kind: {}", run.out);
    // help needs no server, as in HBase's shell.
    let run = run_shell(&format!("127.0.0.1:{port}"), None, &["-e", "help 'get'; help"], None, None);
    assert!(run.ok, "{}{}", run.out, run.err);
    assert!(run.out.contains("accordion> get 't1', 'r1'"), "get's usage: {}", run.out);
    assert!(run.out.contains("dml"), "the overview's groups: {}", run.out);
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
    assert!(out.contains("ERROR: merge: cannot merge regions"), "{out}");
    assert!(out.contains("ERROR: unassign: no region named \"nope\""), "{out}");
}

fn line_of(out: &str, prefix: &str) -> String {
    out.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_string()
}

const GET_AND_SCAN_DATA: &str = "create 'g', {NAME => 'f', VERSIONS => 3}, 'h'; \
    put 'g', 'r1', 'f:a', 'a1', 10; put 'g', 'r1', 'f:a', 'a2', 20; put 'g', 'r1', 'f:b', 'b1', 10; \
    put 'g', 'r1', 'h:c', 'c1', 10; put 'g', 'r2', 'f:a', 'x', 10; put 'g', 'r3', 'h:c', 'y', 10";

#[test]
fn options_without_braces_are_the_trailing_dictionary() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(&server, GET_AND_SCAN_DATA);
    assert!(ok, "{out}");
    let brace_less = "get 'g', 'r1', COLUMN => 'f:a'; \
                      get 'g', 'r1', COLUMN => ['f:a', 'f:b'], VERSIONS => 3; \
                      scan 'g', LIMIT => 1; \
                      scan 'g', STARTROW => 'r1', STOPROW => 'r3', COLUMNS => ['f']; \
                      count 'g', INTERVAL => 2";
    let (ok, out) = session(&server, brace_less);
    assert!(ok, "{out}");
    assert_lines(
        &out,
        "COLUMN                          CELL
 f:a                            timestamp=20, value=a2
1 row(s)
COLUMN                          CELL
 f:a                            timestamp=20, value=a2
 f:a                            timestamp=10, value=a1
 f:b                            timestamp=10, value=b1
3 row(s)
ROW                             COLUMN+CELL
 r1                             column=f:a, timestamp=20, value=a2
 r1                             column=f:b, timestamp=10, value=b1
 r1                             column=h:c, timestamp=10, value=c1
1 row(s)
ROW                             COLUMN+CELL
 r1                             column=f:a, timestamp=20, value=a2
 r1                             column=f:b, timestamp=10, value=b1
 r2                             column=f:a, timestamp=10, value=x
2 row(s)
Current count: 2, row: r2
3 row(s)",
    );
    // The same with braces prints the same.
    let braced = "get 'g', 'r1', {COLUMN => 'f:a'}; \
                  get 'g', 'r1', {COLUMN => ['f:a', 'f:b'], VERSIONS => 3}; \
                  scan 'g', {LIMIT => 1}; \
                  scan 'g', {STARTROW => 'r1', STOPROW => 'r3', COLUMNS => ['f']}; \
                  count 'g', {INTERVAL => 2}";
    assert_eq!(session(&server, braced), (true, out));
}

/// VERSIONS, TIMERANGE and TIMESTAMP on scan, and those and FILTER on get,
/// read what HBase's shell reads (`setTimestamp(ts)` is exactly ts; a time
/// range's end is exclusive; a family keeps its own version limit); RAW is
/// refused with the reason.
#[test]
fn scan_and_get_take_versions_time_ranges_and_filters() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(&server, GET_AND_SCAN_DATA);
    assert!(ok, "{out}");
    let (ok, out) = session(
        &server,
        "put 'g', 'r1', 'h:c', 'c2', 20; \
         scan 'g', {VERSIONS => 3}; \
         scan 'g', {TIMERANGE => [0, 15], COLUMNS => ['f']}; \
         scan 'g', TIMESTAMP => 20; \
         get 'g', 'r1', {TIMERANGE => [0, 15], COLUMN => ['f:a', 'f:b']}; \
         get 'g', 'r1', {FILTER => \"ValueFilter(=, 'binary:b1')\"}; \
         get 'g', 'r1', COLUMN => 'f:a', TIMESTAMP => 10, VERSIONS => 3; \
         get 'g', 'r1', VERSIONS => 2, TIMERANGE => [10, 21]",
    );
    assert!(ok, "{out}");
    assert_lines(
        &out,
        "ROW                             COLUMN+CELL
 r1                             column=f:a, timestamp=20, value=a2
 r1                             column=f:a, timestamp=10, value=a1
 r1                             column=f:b, timestamp=10, value=b1
 r1                             column=h:c, timestamp=20, value=c2
 r2                             column=f:a, timestamp=10, value=x
 r3                             column=h:c, timestamp=10, value=y
3 row(s)
ROW                             COLUMN+CELL
 r1                             column=f:a, timestamp=10, value=a1
 r1                             column=f:b, timestamp=10, value=b1
 r2                             column=f:a, timestamp=10, value=x
2 row(s)
ROW                             COLUMN+CELL
 r1                             column=f:a, timestamp=20, value=a2
 r1                             column=h:c, timestamp=20, value=c2
1 row(s)
COLUMN                          CELL
 f:a                            timestamp=10, value=a1
 f:b                            timestamp=10, value=b1
2 row(s)
COLUMN                          CELL
 f:b                            timestamp=10, value=b1
1 row(s)
COLUMN                          CELL
 f:a                            timestamp=10, value=a1
1 row(s)
COLUMN                          CELL
 f:a                            timestamp=20, value=a2
 f:a                            timestamp=10, value=a1
 f:b                            timestamp=10, value=b1
 h:c                            timestamp=20, value=c2
4 row(s)",
    );
    let (ok, out) = session(&server, "scan 'g', {RAW => true, VERSIONS => 10}");
    assert!(!ok, "{out}");
    assert!(out.contains("raw scans are not supported"), "{out}");
    let (ok, out) = session(&server, "get 'g', 'r1', {TIMERANGE => [20, 10]}");
    assert!(!ok, "{out}");
    assert!(out.contains("ERROR: get: TIMERANGE must be [from, to] with 0 <= from <= to, got [20, 10]"), "{out}");
    let (ok, out) = session(&server, "scan 'g', {TIMERANGE => [0, 5], TIMESTAMP => 3}");
    assert!(!ok, "{out}");
    assert!(out.contains("ERROR: scan: give TIMERANGE or TIMESTAMP, not both"), "{out}");
}

#[test]
fn create_takes_families_and_split_keys() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(
        &server,
        "create 'plain', 'f1', 'f2'; describe 'plain'; \
         create 'one', NAME => 'f', VERSIONS => 2; describe 'one'; \
         create 'split', {NAME => 'f', VERSIONS => 3}, SPLITS => ['m', 'b']; describe 'split'; \
         create 'nobloom', {NAME => 'f', BLOOMFILTER => 'NONE'}; describe 'nobloom'",
    );
    assert!(ok, "{out}");
    assert_lines(
        &out,
        "Created table plain
Table plain is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'f1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
{NAME => 'f2', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
2 row(s)
Created table one
Table one is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '2', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
1 row(s)
Created table split
Table split is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '3', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
1 row(s)
Created table nobloom
Table nobloom is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'NONE', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
1 row(s)",
    );
    // Three regions, split at b and m, each serving its rows.
    let (ok, out) = session(
        &server,
        "put 'split', 'a', 'f:q', '1'; put 'split', 'c', 'f:q', '2'; put 'split', 'z', 'f:q', '3'; \
         list_regions 'split'; count 'split'",
    );
    assert!(ok, "{out}");
    let regions: Vec<Vec<&str>> =
        out.lines().skip(1).take_while(|l| l.contains("OPEN")).map(|l| l.split_whitespace().collect()).collect();
    let keys: Vec<&[&str]> = regions.iter().map(|r| &r[2..r.len() - 1]).collect();
    assert_eq!(keys, [&["b"][..], &["b", "m"], &["m"]], "{out}");
    assert!(out.ends_with("3 row(s)"), "{out}");
    let (ok, out) = session(&server, "create 'bad', 'f', SPLITS => ['']");
    assert!(!ok && out.contains("ERROR: create: a split key must not be empty"), "{out}");
}

/// `alter` changes a family, adds one, and removes one with its data, on
/// an enabled table whose rows stay readable; its mistakes are errors that
/// change nothing.
#[test]
fn alter_changes_adds_and_removes_families() {
    let server = ServerProcess::start(&[]);
    assert!(session(&server, "create 't', 'f', 'g'; put 't', 'r', 'f:q', 'v1'; put 't', 'r', 'g:q', 'gone'").0);
    let (ok, out) = session(
        &server,
        "alter 't', NAME => 'f', VERSIONS => 5, TTL => 86400; alter 't', {NAME => 'h', BLOOMFILTER => 'ROW'}; \
         alter 't', 'delete' => 'g'; describe 't'",
    );
    assert!(ok, "{out}");
    assert!(out.starts_with("Updating all regions with the new schema...\nDone."), "{out}");
    assert!(
        out.contains("{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '5', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => '86400 SECONDS (1 DAY)', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}"),
        "{out}"
    );
    assert!(out.contains("{NAME => 'h', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1',"), "{out}");
    assert!(!out.contains("NAME => 'g'") && out.ends_with("2 row(s)"), "{out}");
    // The old row is there, the new family takes writes, f keeps 5 versions.
    let (ok, out) = session(
        &server,
        "put 't', 'r', 'f:q', 'v2'; put 't', 'r', 'h:q', 'new'; get 't', 'r', COLUMN => 'f:q', VERSIONS => 5; \
         get 't', 'r', 'h:q'",
    );
    assert!(ok, "{out}");
    assert!(out.contains("value=v2") && out.contains("value=v1") && out.contains("value=new"), "{out}");
    assert!(session(&server, "put 't', 'r', 'g:q', 'x'").1.starts_with("ERROR: "), "g is gone");
    // A family of a removed one's name comes back empty.
    let (ok, out) = session(&server, "alter 't', NAME => 'g'; get 't', 'r', 'g:q'");
    assert!(ok && out.ends_with("0 row(s)") && !out.contains("gone"), "{out}");
    for (form, error) in [
        ("alter 't', NAME => 'f', VERSIONS => 0", "family \"f\": max versions must be at least 1"),
        ("alter 't', NAME => 'f', VERSION => 3", "unknown option VERSION (known: NAME, METHOD, "),
        ("alter 't', 'delete' => 'nope'", "table t has no family nope"),
        ("alter 't', NAME => 'f', METHOD => 'table_att'", "METHOD => 'table_att' is not supported"),
        ("alter 't'", "nothing to change"),
        ("alter 'missing', NAME => 'f'", "missing"),
    ] {
        let (ok, out) = session(&server, form);
        assert!(!ok, "{form}: {out}");
        assert!(out.starts_with("ERROR: alter: ") && out.contains(error), "{form}: {out}");
        assert_eq!(out.lines().count(), 1, "{form}: one ERROR line: {out}");
    }
    let (_, out) = session(&server, "describe 't'");
    assert!(
        out.contains("{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '5',") && out.ends_with("3 row(s)"),
        "unchanged: {out}"
    );
}

/// `describe` shows every family setting HBase 2.6's shell shows; create
/// takes them all (BLOCKSIZE and IN_MEMORY_COMPACTION through an alter
/// after Thrift's createTable), the server honours them (the family's
/// memstore runs the policy), and a value the store does not have is
/// refused with the reason.
#[test]
fn describe_shows_and_create_sets_every_family_setting() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(
        &server,
        "create 'full', {NAME => 'f', BLOCKSIZE => 16384, IN_MEMORY_COMPACTION => 'EAGER', \
         KEEP_DELETED_CELLS => false, DATA_BLOCK_ENCODING => 'NONE', INDEX_BLOCK_ENCODING => 'NONE', \
         MIN_VERSIONS => 0, REPLICATION_SCOPE => 0, TTL => 90061, IN_MEMORY => true, BLOCKCACHE => false, \
         COMPRESSION => 'ZSTD', BLOOMFILTER => 'ROWCOL'}; describe 'full'",
    );
    assert!(ok, "{out}");
    assert_lines(
        &out,
        "Created table full
Table full is ENABLED
COLUMN FAMILIES DESCRIPTION
{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', \
DATA_BLOCK_ENCODING => 'NONE', TTL => '90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)', MIN_VERSIONS => '0', \
REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', IN_MEMORY_COMPACTION => 'EAGER', \
COMPRESSION => 'ZSTD', BLOCKCACHE => 'false', BLOCKSIZE => '16384 B (16KB)'}
1 row(s)",
    );
    let status = http_get(&server, "/status");
    assert!(status.contains("\"policy\": \"eager\""), "the family's memstore runs EAGER: {status}");
    for (form, error) in [
        (
            "create 'bad', {NAME => 'f', KEEP_DELETED_CELLS => true}",
            "ERROR: create: KEEP_DELETED_CELLS => 'true' is not supported: reads drop delete markers",
        ),
        (
            "create 'bad', {NAME => 'f', MIN_VERSIONS => 2}",
            "ERROR: create: MIN_VERSIONS => '2' is not supported: a TTL expires every version of a cell",
        ),
        (
            "alter 'full', NAME => 'f', DATA_BLOCK_ENCODING => 'FAST_DIFF'",
            "ERROR: alter: DATA_BLOCK_ENCODING => 'FAST_DIFF' is not supported: data blocks are stored unencoded",
        ),
        (
            "alter 'full', NAME => 'f', REPLICATION_SCOPE => 1",
            "ERROR: alter: REPLICATION_SCOPE => '1' is not supported: there is no replication between clusters",
        ),
    ] {
        let (ok, out) = session(&server, form);
        assert!(!ok && out.starts_with(error), "{form}: {out}");
    }
    let (ok, out) = session(&server, "list");
    assert!(ok && !out.contains("bad"), "a refused create creates nothing: {out}");
    // An alter that names the default values changes nothing else.
    let (ok, out) = session(&server, "alter 'full', NAME => 'f', KEEP_DELETED_CELLS => false, VERSIONS => 2");
    assert!(ok, "{out}");
    let (_, out) = session(&server, "describe 'full'");
    assert!(out.contains("VERSIONS => '2'") && out.contains("BLOCKSIZE => '16384 B (16KB)'"), "{out}");
}

/// `compact` and `major_compact` take a table or a region (in any of its
/// name forms), and optionally one family: only that family's files are
/// rewritten. `table_help` explains table references without a server call.
#[test]
fn compact_takes_a_table_or_region_and_a_family() {
    let server = ServerProcess::start(&[]);
    let mut script = String::from("create 'c', 'f', 'g'; ");
    // Two flushes: a third would start the store's own minor compaction.
    for round in 0..2 {
        script.push_str(&format!("put 'c', 'r{round}', 'f:q', 'v'; put 'c', 'r{round}', 'g:q', 'v'; flush 'c'; "));
    }
    let (ok, out) = session(&server, &script);
    assert!(ok, "{out}");
    let files = |family: &str| -> u64 {
        let status: serde_json::Value = serde_json::from_str(&http_get(&server, "/status")).expect("status JSON");
        let region = &status["tables"][0]["regions"][0];
        let f = region["families"].as_array().expect("families").iter().find(|f| f["family"] == family).cloned();
        f.and_then(|f| f["counters"]["store_files"].as_u64()).expect("store_files")
    };
    assert_eq!((files("f"), files("g")), (2, 2), "two flushes, two files each");
    let (ok, out) = session(&server, "major_compact 'c', 'f'");
    assert!(ok, "{out}");
    assert_eq!((files("f"), files("g")), (1, 2), "only f was compacted");
    let status: serde_json::Value = serde_json::from_str(&http_get(&server, "/status")).expect("status JSON");
    let region = status["tables"][0]["regions"][0]["name"].as_str().expect("region name").to_string();
    let (ok, out) = session(&server, &format!("major_compact '{region}'"));
    assert!(ok, "{out}");
    assert_eq!((files("f"), files("g")), (1, 1), "the region's every family");
    let (ok, out) = session(&server, "compact 'c', 'nope'");
    assert!(!ok && out.contains("nope"), "{out}");
    let (ok, out) = session(&server, "table_help");
    assert!(ok && out.contains("t = get_table 't1'"), "{out}");
}

fn http_get(server: &ServerProcess, path: &str) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(server.http).expect("connect");
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out.split_once("\r\n\r\n").map_or(String::new(), |(_, body)| body.to_string())
}

#[test]
fn truncate_empties_the_table_and_keeps_its_families() {
    let server = ServerProcess::start(&[]);
    let (ok, before) = session(
        &server,
        "create 'tr', {NAME => 'f', VERSIONS => 3, TTL => 86400}, 'g'; put 'tr', 'r', 'f:q', 'v'; describe 'tr'",
    );
    assert!(ok, "{before}");
    let (ok, out) = session(&server, "truncate 'tr'; count 'tr'; describe 'tr'");
    assert!(ok, "{out}");
    let description = before.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_lines(
        &out,
        &format!(
            "Truncating 'tr' table (it may take a while):
Disabling table...
Truncating table...
0 row(s)
{description}"
        ),
    );
    assert!(
        description
            .contains("{NAME => 'f', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '3', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => '86400 SECONDS (1 DAY)', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IN_MEMORY_COMPACTION => 'BASIC', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}")
    );
    // A disabled table is not disabled again, and comes back enabled.
    let (ok, out) = session(&server, "disable 'tr'; truncate 'tr'; is_enabled 'tr'");
    assert!(ok, "{out}");
    assert_lines(&out, "Truncating 'tr' table (it may take a while):\nTruncating table...\ntrue");
}

#[test]
fn list_takes_a_regex_of_the_whole_name() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(
        &server,
        "create 'abc1', 'f'; create 'abc2', 'f'; create 'xyz', 'f'; list 'abc.*'; list 'ab'; list 'x.z|abc2'",
    );
    assert!(ok, "{out}");
    let lists = out.lines().skip(3).collect::<Vec<_>>().join("\n");
    assert_lines(&lists, "TABLE\nabc1\nabc2\n2 row(s)\nTABLE\n0 row(s)\nTABLE\nabc2\nxyz\n2 row(s)");
    let (ok, out) = session(&server, "list '('");
    assert!(!ok && out == "ERROR: list: bad regex \"(\": unclosed group", "{out}");
}

#[test]
fn count_shows_its_progress_every_interval() {
    let server = ServerProcess::start(&[]);
    let puts: Vec<String> = (1..=5).map(|i| format!("put 'c', 'r{i}', 'f:q', '{i}'")).collect();
    assert!(session(&server, &format!("create 'c', 'f'; {}", puts.join("; "))).0);
    let (ok, out) = session(&server, "count 'c', INTERVAL => 2, CACHE => 1; count 'c'");
    assert!(ok, "{out}");
    assert_lines(&out, "Current count: 2, row: r2\nCurrent count: 4, row: r4\n5 row(s)\n5 row(s)");
    let (ok, out) = session(&server, "count 'c', INTERVAL => 0");
    assert!(!ok && out.contains("ERROR: count: INTERVAL must be at least 1, got 0"), "{out}");
}

#[test]
fn counters_increment_and_read_back() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(
        &server,
        "create 'k', 'f'; incr 'k', 'r', 'f:hits', 5; incr 'k', 'r', 'f:hits'; incr 'k', 'r', 'f:hits', -2; \
         get_counter 'k', 'r', 'f:hits'; get_counter 'k', 'nobody', 'f:hits'",
    );
    assert!(ok, "{out}");
    assert_lines(
        &out,
        "Created table k
COUNTER VALUE = 5
COUNTER VALUE = 6
COUNTER VALUE = 4
COUNTER VALUE = 4
No counter found at specified coordinates",
    );
    let (ok, out) = session(&server, "put 'k', 'r', 'f:name', 'text'; get_counter 'k', 'r', 'f:name'");
    assert!(!ok, "{out}");
    assert!(
        out.contains("ERROR: get_counter: the value of f:name in row r is 4 bytes, not an 8-byte counter"),
        "{out}"
    );
}

/// Each mistake alone: its ERROR line names it, and the run fails.
#[test]
fn mistakes_are_errors_that_name_them() {
    let server = ServerProcess::start(&[]);
    assert!(session(&server, "create 't', 'f'").0);
    for (command, message) in [
        (
            "scan 't', LIMT => 5",
            "ERROR: scan: unknown option LIMT (known: COLUMNS, COLUMN, STARTROW, STOPROW, ENDROW, LIMIT, ",
        ),
        ("scan 't', LIMIT => 'x'", "ERROR: scan: LIMIT must be an integer, got 'x'"),
        ("get 't', 'r', COLUMN => 'f:q', VERSION => 3", "ERROR: get: unknown option VERSION (known: "),
        ("get 't', 'r', VERSIONS => true", "ERROR: get: VERSIONS must be an integer, got true"),
        ("count 't', LIMIT => 5", "ERROR: count: unknown option LIMIT (known: INTERVAL, CACHE, "),
        ("create 'u', {NAME => 'f', VERSION => 3}", "ERROR: create: unknown option VERSION (known: NAME, VERSIONS, "),
        (
            "create 'u', 'f', SPLIT => ['a']",
            "ERROR: create: unknown option SPLIT (known: SPLITS, SPLITS_FILE, NUMREGIONS, SPLITALGO)",
        ),
        ("create 'u', 'f', NUMREGIONS => 4", "ERROR: create: NUMREGIONS needs SPLITALGO"),
        ("incr 't', 'r', 'f:q', 'x'", "ERROR: incr: argument 4 (increment) must be an integer, got 'x'"),
        ("incr 't', 'r', 'f:q', '5'", "ERROR: incr: argument 4 (increment) must be an integer, got '5'"),
        ("put 't', 'r', 'f:q', 'v', 'now'", "ERROR: put: argument 5 (timestamp) must be an integer, got 'now'"),
        ("flush 't', 'extra'", "ERROR: flush: takes at most 1 argument before its options, got 2"),
        ("frobnicate 't'", "ERROR: unknown command \"frobnicate\" (try help)"),
        ("scan 't', LIMIT => 1, 'x'", "ERROR: syntax: expected KEY => value at column 23"),
        ("alter 't', NAME => 'f', VERSION => 5", "ERROR: alter: unknown option VERSION (known: NAME, METHOD, "),
    ] {
        let (ok, out) = session(&server, command);
        assert!(!ok, "{command} must fail the run: {out}");
        assert!(out.starts_with(message), "{command}: {out}");
        assert_eq!(out.lines().count(), 1, "{command}: one ERROR line: {out}");
    }
    // Nothing was created by the refused creates.
    assert_eq!(session(&server, "exists 'u'"), (true, "Table u does not exist".to_string()));
}

#[test]
fn help_lists_the_groups_and_explains_a_command() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = session(&server, "help");
    assert!(ok, "{out}");
    assert!(out.contains("  Group name: ddl\n  Commands: alter, create, describe,"), "{out}");
    assert!(
        out.contains(
            "  Group name: dml\n  Commands: count, delete, deleteall, get, get_counter, incr, put, scan, truncate\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "  Group name: tools\n  Commands: assign, balance_switch, balancer, close_region, compact, flush,"
        ),
        "{out}"
    );
    let (ok, out) = session(&server, "help 'get'");
    assert!(ok, "{out}");
    assert!(out.starts_with("Get a row's cells;"), "{out}");
    for example in ["accordion> get 't1', 'r1'\n", "accordion> get 't1', 'r1', COLUMN => 'c1', VERSIONS => 4\n"] {
        assert!(out.contains(example), "{example:?} in {out}");
    }
    let (ok, out) = session(&server, "help 'dml'");
    assert!(ok && out.contains("Command: get_counter\n") && out.contains("Command: truncate\n"), "{out}");
    let (ok, out) = session(&server, "help 'nope'");
    assert!(!ok && out == "ERROR: help: no command or group named \"nope\"", "{out}");
}

#[test]
fn the_interactive_shell_reads_a_pipe_and_keeps_a_history() {
    let server = ServerProcess::start(&[]);
    let home = tempfile::tempdir().expect("home");
    // The put goes on over two lines (a trailing comma), as in HBase's shell.
    let lines = "create 'i', 'f'\nput 'i', 'r',\n'f:q', 'v', 5\nscan 'i', LIMT => 1\nget 'i', 'r'\nexit\nlist\n";
    let run =
        run_shell(&server.thrift.to_string(), Some(&server.http.to_string()), &[], Some(home.path()), Some(lines));
    // Interactive: a failed command does not fail the shell.
    assert!(run.ok, "{}{}", run.out, run.err);
    assert_lines(
        &normalise(&run.out),
        "Created table i
ERROR: scan: unknown option LIMT (known: COLUMNS, COLUMN, STARTROW, STOPROW, ENDROW, LIMIT, FILTER, ROWPREFIXFILTER, REVERSED, CACHE, VERSIONS, TIMERANGE, TIMESTAMP, RAW)
COLUMN                          CELL
 f:q                            timestamp=5, value=v
1 row(s)",
    );
    let history = std::fs::read_to_string(home.path().join(".accordion_shell_history")).expect("history file");
    let typed = ["create 'i', 'f'", "put 'i', 'r', 'f:q', 'v', 5", "scan 'i', LIMT => 1", "get 'i', 'r'", "exit"];
    assert!(history.lines().rev().take(5).eq(typed.iter().rev().copied()), "{history}");
}

/// Without `--http` the shell sends its HTTP calls (flush, status) to the
/// Thrift address, which relays them to the server's HTTP port, wherever
/// that is (here a port the OS picked, not 16030).
#[test]
fn without_http_the_shell_reaches_http_calls_through_the_thrift_port() {
    let server = ServerProcess::start(&[]);
    assert_ne!(server.http.port(), 16030);
    let run = run_shell(
        &server.thrift.to_string(),
        None,
        &["-e", "create 't', 'f'; put 't', 'r', 'f:q', 'v'; flush 't'; status; list"],
        None,
        None,
    );
    assert!(run.ok, "{}{}", run.out, run.err);
    let out = normalise(&run.out);
    assert!(out.contains("1 active server, 1 tables, 1 regions, memstore 0.0 MB, 1 disk flushes"), "{}", run.out);
    assert!(out.contains("Created table t") && out.contains("1 row(s)"), "{}", run.out);
}

/// A server whose HTTP port is the default one, 16030, killed when dropped.
struct DefaultPortServer {
    child: Child,
    thrift: String,
    /// Its admin token file: listening beyond loopback, it serves admin
    /// calls only with the token.
    token: String,
    _dir: tempfile::TempDir,
}

impl DefaultPortServer {
    /// None if something else has port 16030.
    fn start() -> Option<DefaultPortServer> {
        drop(std::net::TcpListener::bind("127.0.0.1:16030").ok()?);
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("admin.token");
        std::fs::write(&token, "shell-test-admin-token\n").expect("write the token file");
        let token = token.to_str().expect("UTF-8 path").to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["server", "--data-dir", dir.path().to_str().expect("UTF-8 path")])
            .args(["--set", &format!("admin_token_file={token}"), "--set", "rpc_addr=127.0.0.1:0"])
            // HTTP narrower than Thrift: the Thrift port does not relay
            // HTTP, so the shell must find the default port.
            .args(["--thrift-addr", "0.0.0.0:0", "--http-addr", "127.0.0.1:16030"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        // "accordion server listening: thrift ADDR http ADDR", or the end of
        // output if it could not bind (another test run took the port).
        let line = stdout.lines().map_while(Result::ok).find(|l| l.starts_with("accordion server listening:"));
        let mut server = DefaultPortServer { child, thrift: String::new(), token, _dir: dir };
        // Bound on every address; the shell is given the loopback one.
        server.thrift = line?.split_whitespace().nth(4)?.replace("0.0.0.0", "127.0.0.1");
        Some(server)
    }
}

impl Drop for DefaultPortServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn without_http_the_shell_finds_the_default_port() {
    let Some(server) = DefaultPortServer::start() else {
        eprintln!("port 16030 is taken; skipping");
        return;
    };
    // Without the token the server, which listens beyond loopback, refuses
    // the admin call; with it, the shell's flush goes through.
    let refused = run_shell(&server.thrift, None, &["-e", "create 't', 'f'; flush 't'"], None, None);
    let said = format!("{}{}", refused.out, refused.err);
    assert!(!refused.ok && said.contains("Authorization: Bearer"), "{said}");
    let run = run_shell(
        &server.thrift,
        None,
        &["--admin-token-file", &server.token, "-e", "put 't', 'r', 'f:q', 'v'; flush 't'; status"],
        None,
        None,
    );
    assert!(run.ok, "{}{}", run.out, run.err);
    assert!(
        normalise(&run.out).ends_with(
            "1 active server, 1 tables, 1 regions, memstore 0.0 MB, 1 disk flushes, 0 in-memory flushes, 0 compactions"
        ),
        "{}",
        run.out
    );
}

/// Region commands take a region by its full name too, in each form a user
/// meets it: getTableRegions' (and happybase's `regions()`) `t,start,ID`
/// with the id in decimal, and the status page's with the encoded name.
#[test]
fn region_commands_take_full_region_names_as_hbases_shell_does() {
    let server = ServerProcess::start(&[]);
    let session = "create 't', 'f'; put 't', 'a', 'f:q', '1'; put 't', 'z', 'f:q', '2'; split 't', 'm'";
    let (ok, out) = shell(&server, &["-e", session]);
    assert!(ok, "{out}");
    // The daughters are regions 2 ([, m)) and 3 ([m, )).
    let (ok, out) = shell(&server, &["-e", "unassign 't,,2'; list_regions 't'"]);
    assert!(ok, "{out}");
    assert!(line_of(&out, "0000000000000002").contains("CLOSED"), "closed by its getTableRegions name: {out}");
    let session =
        "assign 't,,0000000000000002'; major_compact 't'; merge_region 't,,2', 't,m,0000000000000003'; get 't', 'a'";
    let (ok, out) = shell(&server, &["-e", session]);
    assert!(ok, "{out}");
    assert!(out.contains("merged 0000000000000002 and 0000000000000003 into 0000000000000004"), "{out}");
    assert!(out.contains("value=1"), "{out}");
    let (ok, out) = shell(&server, &["-e", "unassign 't,,x'"]);
    assert!(!ok && out.contains("is not a region name"), "{out}");
}

/// On a terminal, Tab completes command names and, in a command's first
/// quoted argument, the server's table names. Typed through a
/// pseudo-terminal (Python's `pty`): `sc<TAB> 'us<TAB>'` runs `scan 'users'`.
#[test]
fn tab_completes_commands_and_table_names_on_a_terminal() {
    let server = ServerProcess::start(&[]);
    let (ok, out) = shell(&server, &["-e", "create 'users', 'f'; put 'users', 'r1', 'f:q', 'v1'"]);
    assert!(ok, "{out}");
    let home = tempfile::tempdir().expect("home");
    let driver = r#"
import os, pty, sys, time, select
bin, thrift, http = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(bin, [bin, "shell", "--server", thrift, "--http", http])
out = b""
def read_for(secs):
    global out
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return
read_for(2)
for keys in [b"sc", b"\t", b" 'us", b"\t", b"'\r"]:
    os.write(fd, keys)
    read_for(0.5)
read_for(2)
os.write(fd, b"exit\r")
read_for(2)
sys.stdout.write(out.decode("utf-8", "replace"))
"#;
    let out = Command::new("python3")
        .args(["-c", driver, env!("CARGO_BIN_EXE_accordion"), &server.thrift.to_string(), &server.http.to_string()])
        .env("HOME", home.path())
        .output()
        .expect("python3 with pty");
    let screen = String::from_utf8_lossy(&out.stdout);
    // The editor redraws the line as it completes (terminal escapes around).
    assert!(screen.contains("accordion> scan 'users"), "the line was completed to scan 'users: {screen}");
    assert!(screen.contains("value=v1") && screen.contains("1 row(s)"), "and the scan ran: {screen}");
}

#[test]
fn namespaces_are_created_listed_used_and_dropped_only_when_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start_in(dir.path(), &[]);
    let (ok, out) = session(
        &server,
        "create_namespace 'ns1'; create 'ns1:t', 'f'; create 't', 'f'; put 'ns1:t', 'r1', 'f:q', 'v1'; \
         get 'ns1:t', 'r1'; list_namespace; list_namespace_tables 'ns1'; describe_namespace 'ns1'; list",
    );
    assert!(ok, "{out}");
    assert!(out.contains("value=v1"), "{out}");
    assert!(out.contains("NAMESPACE\ndefault\nhbase\nns1\n3 row(s)"), "{out}");
    assert!(out.contains("TABLE\nt\n1 row(s)\nDESCRIPTION\n{NAME => 'ns1'}"), "{out}");
    assert!(out.contains("TABLE\nns1:t\nt\n2 row(s)"), "{out}");
    // The table is where HBase lays it out, `default:t` is `t`.
    assert!(dir.path().join("data/ns1/t/.tabledesc").exists());
    let (ok, out) = session(&server, "count 'default:t'");
    assert!(ok && out.contains("0 row(s)"), "{out}");
    let (ok, out) = session(&server, "drop_namespace 'ns1'");
    assert!(!ok && out.contains("ConstraintException: Only empty namespaces can be removed"), "{out}");
    let (ok, out) = session(&server, "drop_namespace 'default'");
    assert!(!ok && out.contains("Reserved namespace default cannot be removed"), "{out}");
    let (ok, out) = session(&server, "create 'nope:t', 'f'");
    assert!(!ok && out.contains("NamespaceNotFoundException: nope"), "{out}");
    let (ok, out) = session(&server, "create_namespace 'ns1'");
    assert!(!ok && out.contains("NamespaceExistException: ns1"), "{out}");
    let (ok, out) = session(&server, "disable 'ns1:t'; drop 'ns1:t'; drop_namespace 'ns1'; list_namespace");
    assert!(ok, "{out}");
    assert!(out.ends_with("NAMESPACE\ndefault\nhbase\n2 row(s)"), "{out}");
}
