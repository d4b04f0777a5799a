//! The servers YCSB drives: `accordion server` (a child on a fresh data
//! directory, HBase's native RPC on a port the OS picks) and real HBase
//! 2.6.4 (`bench/hbase/standalone.sh`: master, region server and ZooKeeper
//! in one JVM). Each is ready when it prints its addresses; each is killed
//! when dropped (its data is the bench's, thrown away after). Peak RSS is the
//! kernel's VmHWM of the server process, read before it is stopped; its CPU
//! time is read from `/proc` around each phase. Both scripts `exec` the
//! JVM, so the child is the server itself.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::BenchError;

/// A running server under test.
pub struct Server {
    child: Child,
    /// How YCSB's run.sh finds it: `["--rpc", ADDR]` or `["--zookeeper", ADDR]`.
    pub registry: [String; 2],
    /// Seconds from spawn to ready.
    pub startup_secs: f64,
    log: Arc<Mutex<String>>,
}

fn engine_err(engine: &str, message: String) -> BenchError {
    BenchError::Engine { engine: engine.into(), message }
}

/// Keeps the last `keep` to 2 × `keep` bytes of a child's stream in `log`
/// (a thread reads it to its end). Also the server tests' log keeper.
pub fn keep_tail(mut r: impl Read + Send + 'static, log: Arc<Mutex<String>>, keep: usize) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            log.push_str(&String::from_utf8_lossy(&buf[..n]));
            if log.len() > 2 * keep {
                let cut = log.len() - keep;
                let cut = (cut..log.len()).find(|&i| log.is_char_boundary(i)).unwrap_or(0);
                log.drain(..cut);
            }
        }
    });
}

impl Server {
    /// `accordion server` (the binary at `binary`) on `dir`, with `--set`
    /// settings; YCSB reaches it through `RpcConnectionRegistry`.
    pub fn accordion(binary: &Path, dir: &Path, sets: &[String]) -> Result<Server, BenchError> {
        let mut cmd = Command::new(binary);
        cmd.arg("server").arg("--data-dir").arg(dir);
        cmd.args(["--thrift-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--set", "rpc_addr=127.0.0.1:0"]);
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        // "accordion server listening: thrift ADDR http ADDR rpc ADDR"
        Self::launch("ycsb-accordion", cmd, "accordion server listening:", "rpc", "--rpc", Duration::from_secs(120))
    }

    /// Real HBase through `script` (bench/hbase/standalone.sh) on `dir`, the
    /// JVM's heap `heap` (`-Xmx`); YCSB reaches it through ZooKeeper.
    pub fn hbase(script: &Path, dir: &Path, heap: &str) -> Result<Server, BenchError> {
        let mut cmd = Command::new(script);
        cmd.arg(dir).env("HBASE_BENCH_HEAP", heap);
        // "standalone hbase ready: zookeeper ADDR master ADDR regionserver ADDR";
        // the first start may build bench/hbase.
        Self::launch("ycsb-hbase", cmd, "standalone hbase ready:", "zookeeper", "--zookeeper", Duration::from_secs(900))
    }

    fn launch(
        engine: &str,
        mut cmd: Command,
        ready: &str,
        key: &str,
        flag: &str,
        limit: Duration,
    ) -> Result<Server, BenchError> {
        let started = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| engine_err(engine, format!("spawn {cmd:?}: {e}")))?;
        let log = Arc::new(Mutex::new(String::new()));
        keep_tail(child.stderr.take().expect("piped"), log.clone(), 64 * 1024);
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut server = Server { child, registry: [flag.to_string(), String::new()], startup_secs: 0.0, log };
        let deadline = started + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with(ready) => {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let at = words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1));
                    let Some(addr) = at else {
                        return Err(engine_err(engine, format!("no {key} address in {line:?}")));
                    };
                    server.registry[1] = addr.to_string();
                    server.startup_secs = started.elapsed().as_secs_f64();
                    return Ok(server);
                }
                Ok(_) => {}
                Err(_) => {
                    let why = if left.is_zero() { format!("not ready within {limit:?}") } else { "exited".into() };
                    return Err(engine_err(engine, format!("{why}; log tail:\n{}", server.log_tail(4000))));
                }
            }
        }
    }

    /// The last `n` bytes of the server's stderr.
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let start = log.len().saturating_sub(n);
        let start = (start..=log.len()).find(|&i| log.is_char_boundary(i)).unwrap_or(log.len());
        log[start..].to_string()
    }

    /// The server process's CPU seconds so far (all its threads), while it
    /// runs.
    pub fn cpu_seconds(&self) -> Option<f64> {
        crate::sysinfo::process_cpu_seconds(self.child.id())
    }

    /// Bytes the server process has written to disk so far.
    pub fn disk_write_bytes(&self) -> Option<u64> {
        crate::sysinfo::process_disk_write_bytes(self.child.id())
    }

    /// The server process's peak resident set (VmHWM), while it runs.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        let pid = i32::try_from(self.child.id()).ok()?;
        procfs::process::Process::new(pid).ok()?.status().ok()?.vmhwm.map(|kb| kb * 1024)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh directory for a server's data under `base`, removed by the caller.
pub fn data_dir(base: &Path, engine: &str) -> Result<PathBuf, BenchError> {
    let dir = base.join(format!("ycsb-{engine}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|source| BenchError::Io { what: format!("create {}", dir.display()), source })?;
    Ok(dir)
}
