//! YCSB 0.17 against a real `accordion server` through HBase's own Java
//! client (hbase-client 2.6.4, `RpcConnectionRegistry`) and our YCSB binding
//! (`bench/ycsb`, `accordion.ycsb.HBaseClient`): workloads A–F as YCSB ships
//! them, each loading 1,000 records into a table of its own (pre-split into
//! three regions) and running 2,000 operations on four client threads. With
//! `dataintegrity=true` YCSB writes values derived from each key and field
//! and checks every read against them (its `VERIFY` class), so a read that
//! returns a wrong or missing value fails the test, not only an error.
//! Checked from YCSB's report: every operation class answered `Return=OK` for
//! each of its operations and nothing else; and, through another protocol
//! (the shell over Thrift), the rows YCSB loaded are there.
//!
//! The same binding and workloads against real HBase 2.6.4 (a standalone
//! master with an in-process region server and ZooKeeper,
//! `bench/hbase/standalone.sh`, through the ZooKeeper registry) are the
//! ignored test here, which `.ci/run` runs.
//!
//! Needs `java` (17) and `mvn`; skips, saying so, only when either is
//! missing. The Maven build is offline first, online after (YCSB's core
//! from Maven Central on a fresh machine).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::ServerProcess;
use common::maven::{build, have_java_and_maven, run, tail};
use common::standalone_hbase::StandaloneHBase;

const RECORDS: u64 = 1_000;
const OPERATIONS: u64 = 2_000;

/// YCSB's report: `[CLASS], Name, Value` lines, by class then name.
type Report = BTreeMap<String, BTreeMap<String, String>>;

fn parse(out: &str) -> Report {
    let mut report = Report::new();
    for line in out.lines() {
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((class, rest)) = rest.split_once("], ") else { continue };
        let Some((name, value)) = rest.split_once(", ") else { continue };
        report.entry(class.to_string()).or_default().insert(name.to_string(), value.trim().to_string());
    }
    report
}

fn count(report: &Report, class: &str, name: &str) -> u64 {
    report.get(class).and_then(|c| c.get(name)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Every class with `Return=` lines answered OK for each of its operations
/// and nothing else; `expected` classes are all there.
fn assert_all_ok(report: &Report, expected: &[&str], context: &str) {
    for class in expected {
        assert!(count(report, class, "Operations") > 0, "no {class} operations\n{context}");
    }
    for (class, fields) in report {
        for (name, value) in fields {
            if name.starts_with("Return=") && name != "Return=OK" {
                panic!("[{class}] {name} {value}\n{context}");
            }
        }
        if fields.contains_key("Return=OK") || class.ends_with("-FAILED") {
            let ops = count(report, class, "Operations");
            assert_eq!(count(report, class, "Return=OK"), ops, "[{class}] not every operation OK\n{context}");
        }
    }
}

struct Ycsb<'a> {
    run_sh: PathBuf,
    /// How the client finds the cluster: `--rpc ADDR` or `--zookeeper ADDR`.
    registry: [String; 2],
    /// The server's log, for failure messages.
    server_log: &'a dyn Fn() -> String,
}

impl Ycsb<'_> {
    fn new(registry: [String; 2], server_log: &dyn Fn() -> String) -> Ycsb<'_> {
        Ycsb { run_sh: project().join("run.sh"), registry, server_log }
    }

    /// Loads and runs workloads A–F, each in a table of its own: how many
    /// records each table's run inserted.
    fn all_workloads(&self) -> BTreeMap<String, u64> {
        let mut inserted = BTreeMap::new();
        for workload in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let table = format!("usertable_{workload}");
            self.phase("-load", workload, &table);
            let report = self.phase("-t", workload, &table);
            inserted.insert(table, count(&report, "INSERT", "Operations"));
        }
        inserted
    }

    /// Runs YCSB's client (`-load` or `-t`) on `workload` against `table`.
    fn phase(&self, phase: &str, workload: char, table: &str) -> Report {
        let file = format!("workloads/workload{workload}");
        let args = [
            &self.registry[0],
            &self.registry[1],
            phase,
            "-P",
            &file,
            "-threads",
            "4",
            "-p",
            &format!("table={table}"),
            "-p",
            "createtable=true",
            "-p",
            "presplits=3",
            "-p",
            &format!("recordcount={RECORDS}"),
            "-p",
            &format!("operationcount={OPERATIONS}"),
            "-p",
            "dataintegrity=true",
            "-p",
            "measurementtype=hdrhistogram",
            "-p",
            "hdrhistogram.percentiles=50,95,99",
        ];
        let started = Instant::now();
        let (out, err, ok) = run(Command::new(&self.run_sh).args(args), Duration::from_secs(180));
        eprintln!("workload {workload} {phase}: {:?}", started.elapsed());
        let context = format!(
            "workload {workload} {phase}\nstdout:\n{out}\nstderr (tail):\n{}\nserver log (tail):\n{}",
            tail(&err, 6000),
            tail(&(self.server_log)(), 4000)
        );
        assert!(ok, "YCSB failed\n{context}");
        let report = parse(&out);
        let expected: &[&str] = match (phase, workload) {
            ("-load", _) => &["INSERT"],
            (_, 'a' | 'b') => &["READ", "UPDATE", "VERIFY"],
            (_, 'c') => &["READ", "VERIFY"],
            (_, 'd') => &["READ", "INSERT", "VERIFY"],
            (_, 'e') => &["SCAN", "INSERT"],
            _ => &["READ", "READ-MODIFY-WRITE", "UPDATE", "VERIFY"],
        };
        assert_all_ok(&report, expected, &context);
        // The workload's own operations add up to what was asked (in F a
        // read-modify-write's read is counted as a READ too).
        let done: u64 = match (phase, workload) {
            ("-load", _) => count(&report, "INSERT", "Operations"),
            (_, 'a' | 'b') => count(&report, "READ", "Operations") + count(&report, "UPDATE", "Operations"),
            (_, 'c' | 'f') => count(&report, "READ", "Operations"),
            (_, 'd') => count(&report, "READ", "Operations") + count(&report, "INSERT", "Operations"),
            _ => count(&report, "SCAN", "Operations") + count(&report, "INSERT", "Operations"),
        };
        let asked = if phase == "-load" { RECORDS } else { OPERATIONS };
        assert_eq!(done, asked, "{context}");
        assert_eq!(count(&report, "VERIFY", "Operations"), count(&report, "READ", "Operations"), "{context}");
        report
    }
}

/// The number of rows the shell counts in `table`, over Thrift.
fn shell_count(server: &ServerProcess, table: &str) -> u64 {
    let script = format!("count '{table}'");
    let (out, err, ok) = run(
        Command::new(env!("CARGO_BIN_EXE_accordion")).args([
            "shell",
            "--server",
            &server.thrift.to_string(),
            "--http",
            &server.http.to_string(),
            "-e",
            &script,
        ]),
        Duration::from_secs(60),
    );
    assert!(ok, "shell failed: {out}{err}");
    // The last line: "N row(s)".
    let last = out.lines().rev().find(|l| l.contains("row(s)")).unwrap_or_else(|| panic!("no count in {out:?}"));
    last.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("bad count line {last:?}"))
}

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/ycsb")
}

/// Builds the binding; false (having said SKIPPED) without java or mvn.
fn ready_to_run() -> bool {
    if !have_java_and_maven() {
        eprintln!("SKIPPED: java and mvn are needed to run YCSB through HBase's Java client");
        return false;
    }
    build(&project());
    true
}

#[test]
fn ycsb_workloads_a_to_f_load_and_run_against_the_server_through_hbase_s_java_client() {
    if !ready_to_run() {
        return;
    }
    let server = ServerProcess::start(&[]);
    let rpc = server.rpc.expect("the server's startup line names its RPC port").to_string();
    let log = || server.log_text();
    let inserted = Ycsb::new(["--rpc".into(), rpc], &log).all_workloads();
    // Read back through Thrift: every table holds the records loaded plus
    // those its run inserted (D and E insert new keys; the others none).
    for (table, inserted) in inserted {
        assert_eq!(shell_count(&server, &table), RECORDS + inserted, "{table}");
    }
}

#[test]
#[ignore = "starts real HBase 2.6.4 (about half a minute, and hbase-server's jars from Maven Central once); .ci/run runs it"]
fn ycsb_workloads_a_to_f_load_and_run_against_real_hbase_through_the_same_binding() {
    if !ready_to_run() {
        return;
    }
    let hbase = StandaloneHBase::start();
    let log = || hbase.log_text();
    let inserted = Ycsb::new(["--zookeeper".into(), hbase.zookeeper.clone()], &log).all_workloads();
    assert_eq!(inserted.len(), 6);
}

/// `accordion bench ycsb` end to end on our server: it starts the server,
/// loads, runs two workloads through the binding, keeps YCSB's raw output and
/// reports throughput and percentiles per operation, and the server's RSS.
#[test]
fn bench_ycsb_starts_the_server_runs_the_workloads_and_reports_their_figures() {
    if !ready_to_run() {
        return;
    }
    let out_dir = tempfile::tempdir().expect("tempdir");
    let json = out_dir.path().join("ycsb.json");
    let raw = out_dir.path().join("raw");
    let (out, err, ok) = run(
        Command::new(env!("CARGO_BIN_EXE_accordion")).args([
            "bench",
            "ycsb",
            "--engines",
            "accordion",
            "--workloads",
            "b,write",
            "--records",
            "500",
            "--operations",
            "600",
            "--threads",
            "2",
            "--presplits",
            "2",
            "--dir",
            out_dir.path().to_str().expect("UTF-8 path"),
            "--raw-dir",
            raw.to_str().expect("UTF-8 path"),
            "--json",
            json.to_str().expect("UTF-8 path"),
        ]),
        Duration::from_secs(300),
    );
    let context = format!("stdout:\n{out}\nstderr (tail):\n{}", tail(&err, 6000));
    assert!(ok, "accordion bench ycsb failed\n{context}");
    assert!(!out.contains("FAILED"), "{context}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON file")).expect("JSON");
    let run = &doc["runs"][0];
    assert_eq!(run["engine"], "accordion", "{doc}");
    assert!(run["server_peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20), "{doc}");
    let phases = run["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().map(|p| p["workload"].as_str().unwrap_or("")).collect();
    assert_eq!(names, ["load", "b", "write"], "{doc}");
    let ops = |phase: usize, class: &str| phases[phase]["result"]["ops"][class].clone();
    assert_eq!(ops(0, "INSERT")["operations"], 500, "{doc}");
    assert_eq!(ops(2, "UPDATE")["operations"], 600, "{doc}");
    assert_eq!(ops(2, "UPDATE")["returns"]["OK"], 600, "{doc}");
    assert_eq!(
        ops(1, "READ")["operations"].as_u64().unwrap_or(0) + ops(1, "UPDATE")["operations"].as_u64().unwrap_or(0),
        600,
        "{doc}"
    );
    for p in phases {
        assert!(p["result"]["throughput_ops_per_sec"].as_f64().is_some_and(|t| t > 0.0), "{doc}");
        assert_eq!(p["failures"].as_array().map(Vec::len), Some(0), "{doc}");
        for (class, s) in p["result"]["ops"].as_object().expect("ops") {
            if class != "VERIFY" {
                let (p50, p99) = (s["p50_us"].as_u64(), s["p99_us"].as_u64());
                assert!(p50.is_some_and(|a| p99.is_some_and(|b| 0 < a && a <= b)), "{class}: {doc}");
            }
        }
    }
    // YCSB's own output of every phase, as it printed it.
    for phase in ["load", "b", "write"] {
        let raw = std::fs::read_to_string(raw.join(format!("accordion-{phase}.out"))).expect("raw output");
        assert!(raw.contains("[OVERALL], Throughput(ops/sec)"), "{phase}: {raw}");
    }
}
