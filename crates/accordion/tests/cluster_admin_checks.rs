//! In a cluster, the admin calls that could make two writers of one
//! region's files check ZooKeeper first (issue 25): `recover` of a server
//! ZooKeeper still lists is refused (it would fence and retire a live
//! server's WAL), and so is `assign` of a region another live server holds
//! open; malformed server names are refused before any path is built. Once
//! the server is dead (SIGKILL, its session expired), `recover` is
//! accepted; `assign` still is not, since a region server opens a region
//! for an admin call only when the master's catalog records it OPENING
//! there. A master then started reopens the region with every acknowledged
//! row. Until then no master runs, so nothing else moves the region.
//!
//! Then operators move regions through the master (`operator.rs`): a move
//! to a server that joined, an unassign that stays closed across the
//! master's passes and the servers' reports, an assign that reopens it — every row read back after
//! each — with the master's admin token required, and the same calls made
//! to a region server directly refused. Last, the shell's `balance_switch`
//! and `balancer` through the master.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use cluster::local_zk::LocalZooKeeper;
use common::{MasterProcess, ServerProcess};
use server::thrift::client::{THbaseSyncClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation};

const SESSION_MS: u64 = 2000;

fn post(server: &ServerProcess, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(server.http).expect("connect");
    write!(s, "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, out)
}

fn status(server: &ServerProcess) -> serde_json::Value {
    let mut s = std::net::TcpStream::connect(server.http).expect("connect");
    write!(s, "GET /status HTTP/1.0\r\nHost: x\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    serde_json::from_str(out.split_once("\r\n\r\n").map_or("", |(_, b)| b)).unwrap_or_default()
}

/// The cluster's server names `server` sees, by Thrift address.
fn members(server: &ServerProcess) -> BTreeMap<String, String> {
    status(server)["server"]["cluster"]["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["thrift"].as_str()?.to_string(), s["name"].as_str()?.to_string())))
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "{what}: not within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pct(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn rows(server: &ServerProcess) -> usize {
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("row{i:03}").into_bytes()).collect();
    c.get_rows(b"t".to_vec(), keys, BTreeMap::new()).map(|r| r.len()).unwrap_or(0)
}

#[test]
fn recover_of_a_live_server_and_assign_of_a_region_held_elsewhere_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    let url = zk.url("/accordion");
    let root = tempfile::tempdir().expect("shared root");
    let mut a = ServerProcess::start_in_cluster_at(root.path(), &url, SESSION_MS);
    let b = ServerProcess::start_in_cluster_at(root.path(), &url, SESSION_MS);
    let mut c = connect(&a.thrift.to_string(), false, false).expect("connect");
    let f = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"t".to_vec(), vec![f]).expect("create t on a");
    let batch: Vec<BatchMutation> = (0..100)
        .map(|i| BatchMutation {
            row: Some(format!("row{i:03}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(b"v".to_vec()),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    c.mutate_rows(b"t".to_vec(), batch, BTreeMap::new()).expect("acknowledged rows on a");
    wait_for("b sees both servers", || members(&b).len() == 2);
    let a_name = members(&b)[&a.thrift.to_string()].clone();
    let region = status(&a)["tables"][0]["regions"][0]["id"].as_str().expect("a's region").to_string();
    wait_for("b lists t", || status(&b)["tables"].as_array().is_some_and(|t| !t.is_empty()));

    let (code, answer) = post(&b, &format!("/admin/recover?server={}", pct(&a_name)));
    assert_eq!(code, 409, "recovering a live server's WAL: {answer}");
    assert!(answer.contains("is live"), "{answer}");
    assert!(root.path().join("WALs").join(&a_name).exists(), "a's WAL directory is untouched");
    // No master runs yet: no catalog says OPENING on b, and b says so.
    let (code, answer) = post(&b, &format!("/admin/assign?region={region}"));
    assert_eq!(code, 503, "opening a region a live server holds: {answer}");
    assert!(answer.contains("no active master"), "{answer}");
    for bad in ["..%2Fdata%2Ft", "a%2C1", "%2E%2E", "h%2C1%2C2%2F..", ""] {
        let (code, answer) = post(&b, &format!("/admin/recover?server={bad}"));
        assert_eq!(code, 400, "recover?server={bad}: {answer}");
    }
    assert_eq!(rows(&a), 100, "a still serves every row");

    // a dies; once ZooKeeper no longer lists it, b recovers its WAL; b
    // still opens nothing the master's catalog does not send it.
    a.kill();
    wait_for("a's session expires", || !members(&b).values().any(|n| *n == a_name));
    let (code, answer) = post(&b, &format!("/admin/recover?server={}", pct(&a_name)));
    assert_eq!(code, 200, "recovering a dead server's WAL: {answer}");
    let (code, answer) = post(&b, &format!("/admin/assign?region={region}"));
    assert_eq!(code, 503, "an assign no master's catalog records: {answer}");
    assert!(answer.contains("no active master"), "{answer}");

    // A master reopens it on b, the one live server.
    let token = dir.path().join("master.token");
    std::fs::write(&token, "master-operator-token-0123\n").expect("write");
    let token_flag = token.to_str().expect("UTF-8");
    let master =
        MasterProcess::launch(&url, SESSION_MS, &["--balancer-period-ms", "0", "--admin-token-file", token_flag]);
    wait_for("the master opens t's region on b", || open_on(&b).contains(&region));
    assert_eq!(rows(&b), 100, "every acknowledged row, on b");

    // Operators move regions through the master, with its token.
    let c = ServerProcess::start_in_cluster_at(root.path(), &url, SESSION_MS);
    wait_for("c joins", || members(&b).len() == 2);
    let c_name = members(&b)[&c.thrift.to_string()].clone();
    wait_for("the master sees c serving", || {
        let doc = master_doc(&master);
        doc["servers"].as_array().into_iter().flatten().any(|s| s["name"] == c_name.as_str() && s["thrift"] != "")
    });
    let move_to_c = format!("/admin/move?region={region}&server={}", pct(&c_name));
    let (code, answer) = master_post(&master, &move_to_c, None);
    assert_eq!(code, 401, "an operator call without the master's token: {answer}");
    let (code, answer) =
        master_post(&master, "/admin/move?region=00ff00ff&server=", Some("master-operator-token-0123"));
    assert_eq!(code, 404, "an unknown region: {answer}");
    let (code, answer) = master_post(
        &master,
        &format!("/admin/move?region={region}&server=nobody%2C1%2C2"),
        Some("master-operator-token-0123"),
    );
    assert_eq!(code, 400, "a server that is not a member: {answer}");
    let (code, answer) = master_post(&master, &move_to_c, Some("master-operator-token-0123"));
    assert_eq!(code, 200, "move: {answer}");
    assert!(open_on(&c).contains(&region) && !open_on(&b).contains(&region), "the region moved to c");
    assert_eq!(rows(&c), 100, "every row, on c");

    // A region server refuses to close or open on a direct call.
    let (code, answer) = post(&c, &format!("/admin/unassign?region={region}"));
    assert_eq!(code, 409, "a direct unassign: {answer}");
    let (code, answer) = post(&b, &format!("/admin/assign?region={region}"));
    assert_eq!(code, 409, "a direct assign of a region open on c: {answer}");
    assert!(open_on(&c).contains(&region));

    // An unassign stays closed across the master's passes until an assign.
    // The master runs a pass when its view changes (after the call, and
    // after the servers' reports of the close); every server reports at
    // least twice more (a heartbeat every 3 s) before the check.
    let passes = |m: &MasterProcess| master_doc(m)["passes"].as_u64().unwrap_or(0);
    let applied = |m: &MasterProcess| master_doc(m)["reports"]["applied"].as_u64().unwrap_or(0);
    let (before, reports_before) = (passes(&master), applied(&master));
    let (code, answer) =
        master_post(&master, &format!("/admin/unassign?region={region}"), Some("master-operator-token-0123"));
    assert_eq!(code, 200, "unassign: {answer}");
    wait_for("a pass, and two reports from each server", || {
        passes(&master) > before && applied(&master) >= reports_before + 4
    });
    assert!(!open_on(&b).contains(&region) && !open_on(&c).contains(&region), "an unassigned region was reopened");
    assert_eq!(master_doc(&master)["catalog"][&region]["state"], "CLOSED", "the catalog keeps it CLOSED");
    let (code, answer) =
        master_post(&master, &format!("/admin/assign?region={region}"), Some("master-operator-token-0123"));
    assert_eq!(code, 200, "assign: {answer}");
    let holder = if open_on(&b).contains(&region) { &b } else { &c };
    assert_eq!(rows(holder), 100, "every row after the unassign and assign");

    // Two identical moves at once: the second sees what the first did
    // (calls run one per poll, on fresh statuses) and is refused.
    let (from, to) = if std::ptr::eq(holder, &b) { (&b, &c) } else { (&c, &b) };
    let to_name = members(from)[&to.thrift.to_string()].clone();
    let twice = format!("/admin/move?region={region}&server={}", pct(&to_name));
    let answers: Vec<u16> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| master_post(&master, &twice, Some("master-operator-token-0123")).0))
            .collect();
        calls.into_iter().map(|c| c.join().expect("move")).collect()
    });
    let mut sorted = answers.clone();
    sorted.sort();
    assert_eq!(sorted, [200, 409], "two identical moves: {answers:?}");
    assert!(open_on(to).contains(&region) && !open_on(from).contains(&region), "open on exactly one server");
    let holder = to;

    // The shell's `move` goes through the master too (found from the
    // server's status), with the token it is given.
    let (from, to) = if std::ptr::eq(holder, &b) { (&b, &c) } else { (&c, &b) };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["shell", "--server", &from.thrift.to_string(), "--admin-token-file", token_flag])
        .args(["-e", &format!("move '{region}'")])
        .output()
        .expect("run the shell");
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("moved region"), "{said}");
    assert!(open_on(to).contains(&region), "the shell's move put the region on the other server");
    assert_eq!(rows(to), 100, "every row after the shell's move");
    let (holder, other) = (to, from);

    // Thrift writers through both servers while the master moves the
    // region back and forth (issue 56): HBase's Thrift server is a client
    // that retries a call meeting a region in a move, so every put is
    // answered OK (happybase does not retry) and every row is read back.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (acked, failed) = std::thread::scope(|scope| {
        let writers: Vec<_> = [holder, other]
            .into_iter()
            .enumerate()
            .map(|(w, server)| {
                let stop = &stop;
                scope.spawn(move || {
                    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
                    let (mut acked, mut failed) = (Vec::new(), Vec::new());
                    for i in 0.. {
                        if stop.load(std::sync::atomic::Ordering::Acquire) {
                            break;
                        }
                        let row = format!("moving{w}-{i:05}");
                        let put = Mutation {
                            is_delete: Some(false),
                            column: Some(b"f:q".to_vec()),
                            value: Some(row.clone().into_bytes()),
                            write_to_w_a_l: Some(true),
                        };
                        match c.mutate_row(b"t".to_vec(), row.clone().into_bytes(), vec![put], BTreeMap::new()) {
                            Ok(()) => acked.push(row),
                            Err(e) => failed.push(format!("{row}: {e}")),
                        }
                    }
                    (acked, failed)
                })
            })
            .collect();
        // Scans through both servers meanwhile, a few rows per call: a scan
        // whose region moves under it reads on from its last row where the
        // region is now (HBase's client scanner does), never failing.
        let scanner = {
            let stop = &stop;
            scope.spawn(move || {
                let (mut scans, mut failed) = (0, Vec::new());
                for s in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Acquire) {
                        break;
                    }
                    let server = if s % 2 == 0 { other } else { holder };
                    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
                    let read = c.scanner_open(b"t".to_vec(), Vec::new(), Vec::new(), BTreeMap::new()).and_then(|id| {
                        let mut rows = 0;
                        loop {
                            let got = c.scanner_get_list(id, 20)?;
                            if got.is_empty() {
                                return Ok(rows);
                            }
                            rows += got.len();
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    });
                    match read {
                        Ok(rows) if rows >= 100 => scans += 1,
                        Ok(rows) => failed.push(format!("a scan through {} read {rows} rows", server.thrift)),
                        Err(e) => failed.push(format!("a scan through {}: {e}", server.thrift)),
                    }
                }
                (scans, failed)
            })
        };
        let mut at = holder;
        for _ in 0..4 {
            let to = if std::ptr::eq(at, holder) { other } else { holder };
            let name = members(at)[&to.thrift.to_string()].clone();
            let path = format!("/admin/move?region={region}&server={}", pct(&name));
            let (code, answer) = master_post(&master, &path, Some("master-operator-token-0123"));
            assert_eq!(code, 200, "move: {answer}");
            at = to;
            std::thread::sleep(Duration::from_millis(300));
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
        let (scans, scans_failed) = scanner.join().expect("the scanner");
        assert!(
            scans_failed.is_empty() && scans > 0,
            "{} of {} scans failed while the region moved: {:?}",
            scans_failed.len(),
            scans + scans_failed.len(),
            &scans_failed[..scans_failed.len().min(3)]
        );
        writers.into_iter().map(|w| w.join().expect("a writer")).fold((Vec::new(), Vec::new()), |mut all, (a, f)| {
            all.0.extend(a);
            all.1.extend(f);
            all
        })
    });
    assert!(
        failed.is_empty(),
        "{} of {} puts failed while the region moved: {:?}",
        failed.len(),
        acked.len() + failed.len(),
        &failed[..failed.len().min(3)]
    );
    assert!(acked.len() > 20, "the writers wrote through the moves: {}", acked.len());
    assert!(open_on(holder).contains(&region), "four moves bring the region back");
    for server in [holder, other] {
        let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
        for chunk in acked.chunks(500) {
            let keys: Vec<Vec<u8>> = chunk.iter().map(|r| r.clone().into_bytes()).collect();
            let found = c.get_rows(b"t".to_vec(), keys, BTreeMap::new()).expect("read back");
            assert_eq!(found.len(), chunk.len(), "every acknowledged row, through {}", server.thrift);
        }
    }

    // The shell's `balance_switch` and `balancer`, through the master: off,
    // the balancer does not run; on, it spreads the regions of a table
    // split into four on one server (this master has no periodic run).
    let shell = |server: &ServerProcess, commands: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["shell", "--server", &server.thrift.to_string(), "--admin-token-file", token_flag])
            .args(["-e", commands])
            .output()
            .expect("run the shell");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    // Each split after the first splits a daughter, which refuses (as
    // HBase's `checkSplittable` does) until its compaction has rewritten
    // the references it reads through: ask again until it takes.
    for point in ["row025", "row050", "row075"] {
        wait_for(&format!("a split at {point}"), || {
            let said = shell(holder, &format!("split 't', '{point}'"));
            assert!(!said.contains("ERROR") || said.contains("still reads through references"), "{said}");
            !said.contains("ERROR")
        });
    }
    wait_for("four regions open on one server", || open_on(holder).len() == 4 && open_on(other).is_empty());
    // Daughters that still read through references do not move.
    let said = shell(holder, "major_compact 't'");
    assert!(!said.contains("ERROR"), "{said}");
    assert!(shell(holder, "balance_switch false").contains("previous balancer state: true"));
    let said = shell(holder, "balancer");
    assert!(said.contains("false: the balancer is switched off"), "{said}");
    assert_eq!(open_on(other).len(), 0, "a switched-off balancer moved nothing");
    assert!(shell(other, "balance_switch true").contains("previous balancer state: false"));
    wait_for("the balancer runs once nothing is in transition", || {
        let said = shell(holder, "balancer");
        assert!(!said.contains("ERROR"), "{said}");
        said.contains("true: the balancer ran and moved")
    });
    assert_eq!((open_on(holder).len(), open_on(other).len()), (2, 2), "the balancer spread t's regions");
    assert_eq!((rows(holder), rows(other)), (100, 100), "every row, read through either server");
    let said = shell(holder, "balance_switch 'maybe'");
    assert!(said.contains("ERROR: balance_switch: argument 1 (on) must be true or false"), "{said}");

    // A Thrift scan through `other` that reaches a region closed after the
    // scan began (an operator's unassign; assigned again a second later)
    // waits for it and reads on from its last row, as HBase's client
    // scanner does: every row once, no failure. (Before, the scanner's
    // next call failed with IOError the moment it reached the region.)
    let total = {
        let mut c = connect(&other.thrift.to_string(), false, false).expect("connect");
        let id = c.scanner_open(b"t".to_vec(), Vec::new(), Vec::new(), BTreeMap::new()).expect("open a scanner");
        let mut n = 0;
        loop {
            let got = c.scanner_get_list(id, 1000).expect("a scan with nothing moving");
            if got.is_empty() {
                break;
            }
            n += got.len();
        }
        n
    };
    let last = {
        let doc: http_api::ServerStatus = serde_json::from_value(status(holder)).expect("a status");
        let mut held: Vec<(String, String)> = doc
            .regions()
            .filter(|(t, r)| t.name == "t" && r.state == http_api::RegionState::Open)
            .map(|(_, r)| (r.start_key.clone(), r.id.clone()))
            .collect();
        held.sort();
        held.pop().expect("the holder holds a region of t").1
    };
    let mut c = connect(&other.thrift.to_string(), false, false).expect("connect");
    let id = c.scanner_open(b"t".to_vec(), Vec::new(), Vec::new(), BTreeMap::new()).expect("open a scanner");
    let mut seen: Vec<Vec<u8>> =
        c.scanner_get_list(id, 1).expect("the first row").into_iter().filter_map(|r| r.row).collect();
    let (code, answer) =
        master_post(&master, &format!("/admin/unassign?region={last}"), Some("master-operator-token-0123"));
    assert_eq!(code, 200, "unassign: {answer}");
    let reassign = std::thread::spawn({
        let (master_http, last) = (master.http, last.clone());
        move || {
            std::thread::sleep(Duration::from_millis(1500));
            post_to(master_http, &format!("/admin/assign?region={last}"), Some("master-operator-token-0123"))
        }
    });
    loop {
        let got = c.scanner_get_list(id, 10).expect("a scan reaching a closed region waits for it");
        if got.is_empty() {
            break;
        }
        seen.extend(got.into_iter().filter_map(|r| r.row));
    }
    let (code, answer) = reassign.join().expect("the assign");
    assert_eq!(code, 200, "assign: {answer}");
    let distinct: std::collections::BTreeSet<&Vec<u8>> = seen.iter().collect();
    assert_eq!((seen.len(), distinct.len()), (total, total), "every row once, through the region's closing");
}

/// The regions `server` has OPEN.
fn open_on(server: &ServerProcess) -> Vec<String> {
    serde_json::from_value::<http_api::ServerStatus>(status(server)).map(|s| s.open_region_ids()).unwrap_or_default()
}

/// The master's `/status` document.
fn master_doc(master: &MasterProcess) -> serde_json::Value {
    let mut s = std::net::TcpStream::connect(master.http).expect("connect");
    write!(s, "GET /status HTTP/1.0\r\nHost: x\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    serde_json::from_str(out.split_once("\r\n\r\n").map_or("", |(_, b)| b)).unwrap_or_default()
}

fn master_post(master: &MasterProcess, path: &str, token: Option<&str>) -> (u16, String) {
    post_to(master.http, path, token)
}

/// `POST path` on the HTTP port at `addr`, with `token`.
fn post_to(addr: std::net::SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "POST {path} HTTP/1.0\r\nHost: x\r\n{auth}Content-Length: 0\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, out)
}
