//! Real HBase 2.6.4 as a server in one JVM (`bench/hbase/standalone.sh`:
//! ZooKeeper, HMaster and one region server), for the tests that run the
//! same Java client program against it and against `accordion server`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::maven::tail;

/// Real HBase 2.6.4 in one JVM (`bench/hbase/standalone.sh`) on a fresh
/// data directory, stopped (SIGKILL: its data is thrown away) when dropped.
pub struct StandaloneHBase {
    child: Child,
    /// Its ZooKeeper's `host:port`.
    pub zookeeper: String,
    /// Its master's RPC `host:port`.
    pub master: String,
    log: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl StandaloneHBase {
    pub fn start() -> StandaloneHBase {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/hbase/standalone.sh");
        let mut child = Command::new(script)
            .arg(dir.path())
            // A small heap: the test's data is a few MB.
            .env("HBASE_BENCH_HEAP", "1g")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bench/hbase/standalone.sh");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // The first start may build bench/hbase (Maven) before HBase starts.
        let deadline = Instant::now() + Duration::from_secs(900);
        let mut hbase = StandaloneHBase { child, zookeeper: String::new(), master: String::new(), log, _dir: dir };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                // "standalone hbase ready: zookeeper ADDR master ADDR regionserver ADDR"
                Ok(line) if line.starts_with("standalone hbase ready:") => {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let at = words.iter().position(|w| *w == "zookeeper").expect("zookeeper address");
                    hbase.zookeeper = words[at + 1].to_string();
                    let at = words.iter().position(|w| *w == "master").expect("master address");
                    hbase.master = words[at + 1].to_string();
                    return hbase;
                }
                Ok(_) => {}
                Err(_) => panic!("HBase did not start; log:\n{}", tail(&hbase.log_text(), 8000)),
            }
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for StandaloneHBase {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
