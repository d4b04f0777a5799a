//! HBase's Java client (hbase-client 2.6.4, its default retry settings)
//! against a cluster of real `accordion server --cluster` processes whose
//! regions move while it works (issue 56): the `tests/hbase_java` program
//! `MovingCluster`.
//!
//! * A new user's program — namespace, pre-split table, list by namespace,
//!   write, scan, flush, split, move, merge, alter, balancer, truncate,
//!   drop — passes every step through ZooKeeper and through each member's
//!   RPC address while the balancer runs every 2 s. Before this issue a
//!   split taken by a member that did not hold the region was refused, a
//!   region on another member could not be merged, and the namespace
//!   listing, move, balancer and truncate calls were "not implemented".
//! * Eight threads writing and reading back their own rows while regions
//!   split, move and merge every 2 s, the balancer runs and a server is
//!   SIGKILLed: no call fails, no read misses the thread's own earlier
//!   write, every acknowledged row reads back. The latencies inside and
//!   outside the moves are printed (measured, not asserted).
//!
//! Needs `java` and `mvn` (skips, saying so, without them) and ZooKeeper.

mod common;

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cluster::local_zk::LocalZooKeeper;
use common::maven::{build, classpath, have_java_and_maven, run, tail};
use common::{MasterProcess, ServerProcess};

const SESSION_MS: u64 = 2000;

/// A ZooKeeper, a master balancing every 2 s and three servers on one
/// shared root; the client registry naming ZooKeeper.
struct Cluster {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    _zk: LocalZooKeeper,
    master: MasterProcess,
    servers: Vec<ServerProcess>,
    zk_registry: String,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = tempfile::tempdir().expect("shared root");
        let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
        let url = zk.url("/accordion");
        let master = MasterProcess::launch(&url, SESSION_MS, &["--balancer-period-ms", "2000"]);
        let servers = (0..3).map(|_| ServerProcess::start_in_cluster_at(root.path(), &url, SESSION_MS)).collect();
        let quorum = url.strip_prefix("zk://").and_then(|u| u.split('/').next()).expect("a zk:// URL").to_string();
        Cluster { _dirs: (dir, root), _zk: zk, master, servers, zk_registry: format!("zk:{quorum}/accordion/hbase") }
    }

    fn rpc(&self, i: usize) -> String {
        self.servers[i].rpc.expect("a cluster member serves HBase's RPC").to_string()
    }

    /// The logs' tails, and where the whole logs were written.
    fn logs(&self) -> String {
        let dir = std::env::temp_dir().join(format!("cluster_moving_clients-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("master.log"), self.master.log_text());
        let mut out =
            format!("whole logs in {}\nmaster log (tail):\n{}\n", dir.display(), tail(&self.master.log_text(), 3000));
        for (i, s) in self.servers.iter().enumerate() {
            let _ = std::fs::write(dir.join(format!("server-{i}.log")), s.log_text());
            out.push_str(&format!("server {i} log (tail):\n{}\n", tail(&s.log_text(), 3000)));
        }
        out
    }
}

fn java_ready() -> Option<String> {
    if !have_java_and_maven() {
        eprintln!("SKIPPED: java and mvn are needed to run HBase's Java client against the cluster");
        return None;
    }
    let project = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hbase_java");
    build(&project);
    Some(classpath(&project))
}

#[test]
fn a_new_user_s_admin_program_passes_through_zookeeper_and_every_member_while_the_balancer_runs() {
    let Some(classpath) = java_ready() else { return };
    let cluster = Cluster::start();
    let registries = [cluster.zk_registry.clone(), cluster.rpc(0), cluster.rpc(1), cluster.rpc(2)];
    let mut table = Vec::new();
    for (run_id, registry) in registries.iter().enumerate() {
        let (out, err, _) = run(
            Command::new("java").args(["-cp", &classpath, "MovingCluster", "program", registry, &run_id.to_string()]),
            Duration::from_secs(600),
        );
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
        table.push(format!("{registry}: {}", out.lines().find(|l| l.starts_with("DONE ")).unwrap_or("no DONE")));
        assert!(
            failed.is_empty() && out.lines().any(|l| l == "DONE 13 0"),
            "run {run_id} through {registry} failed: {failed:?}\nstdout:\n{out}\nstderr (tail):\n{}\n{}",
            tail(&err, 4000),
            cluster.logs()
        );
    }
    eprintln!("the program's runs (steps passed, failed):\n{}", table.join("\n"));
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() as u64
}

/// The 99th percentile of `v` (sorted here); 0 when empty.
fn p99(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get((v.len() * 99 / 100).min(v.len().saturating_sub(1))).copied().unwrap_or(0)
}

#[test]
fn eight_java_threads_lose_no_call_and_no_write_while_regions_split_move_merge_and_a_server_dies() {
    let Some(classpath) = java_ready() else { return };
    let mut cluster = Cluster::start();
    let registry = cluster.zk_registry.clone();
    let load_ms = 45_000;
    let mut child = Command::new("java")
        .args(["-cp", &classpath, "MovingCluster", "load", &registry, "moving", &load_ms.to_string(), "8"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the Java load");
    let (mut stdout, mut stderr) = (child.stdout.take().expect("stdout"), child.stderr.take().expect("stderr"));
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    // The kill comes a third of the way in, with the table made and the
    // moves begun.
    std::thread::sleep(Duration::from_millis(load_ms / 3 + 5_000));
    let killed = now_ms();
    cluster.servers[0].kill();
    let status = child.wait().expect("the Java load ends");
    let (out, err) = (out.join().expect("stdout"), err.join().expect("stderr"));
    let context =
        || format!("stdout (tail):\n{}\nstderr (tail):\n{}\n{}", tail(&out, 6000), tail(&err, 4000), cluster.logs());
    assert!(status.success(), "the Java load failed\n{}", context());

    // Windows of moves: each admin call from its start to a second after
    // its end, and the kill to the session's end plus 5 s.
    let mut windows: Vec<(u64, u64)> = vec![(killed, killed + SESSION_MS + 5_000)];
    let mut admin = Vec::new();
    for l in out.lines().filter_map(|l| l.strip_prefix("ADMIN ")) {
        let w: Vec<&str> = l.splitn(4, ' ').collect();
        if let [op, start, end, outcome] = w[..]
            && let (Ok(start), Ok(end)) = (start.parse::<u64>(), end.parse::<u64>())
        {
            windows.push((start, end + 1_000));
            admin.push(format!("{op} {} ms {outcome}", end - start));
        }
    }
    let (mut inside, mut outside, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for l in out.lines().filter_map(|l| l.strip_prefix("LAT ")) {
        let w: Vec<&str> = l.splitn(3, ' ').collect();
        let [start, micros, outcome] = w[..] else { continue };
        let (Ok(start), Ok(micros)) = (start.parse::<u64>(), micros.parse::<u64>()) else { continue };
        if outcome != "ok" {
            failures.push(outcome.to_string());
        }
        if windows.iter().any(|&(a, b)| start >= a && start <= b) {
            inside.push(micros);
        } else {
            outside.push(micros);
        }
    }
    let (max_inside, max_outside) = (inside.iter().max().copied(), outside.iter().max().copied());
    let stale: Vec<&str> = out.lines().filter(|l| l.starts_with("STALE ")).collect();
    let done = out.lines().find(|l| l.starts_with("DONE ")).unwrap_or("no DONE line");
    let read = out.lines().find(|l| l.starts_with("READ ")).unwrap_or("no READ line");
    eprintln!(
        "Java load through moves: {done} (calls, failed); {read} (found, missing); {} stale reads; \
         {} calls inside moves p99 {} us (longest {:?} us), {} outside p99 {} us (longest {:?} us); admin calls:\n{}",
        stale.len(),
        inside.len(),
        p99(&mut inside),
        max_inside,
        outside.len(),
        p99(&mut outside),
        max_outside,
        admin.join("\n")
    );
    let stopped: Vec<&str> = out.lines().filter(|l| l.starts_with("WORKER ") || l.starts_with("ADMIN loop ")).collect();
    assert!(stopped.is_empty(), "a thread of the load stopped early: {stopped:?}\n{}", context());
    assert!(failures.is_empty(), "{} calls failed, e.g. {:?}\n{}", failures.len(), failures.first(), context());
    assert!(stale.is_empty(), "reads missed the thread's own earlier writes: {stale:?}\n{}", context());
    assert!(read.ends_with(" 0") && read != "READ 0 0", "an acknowledged row is lost: {read}\n{}", context());
}
