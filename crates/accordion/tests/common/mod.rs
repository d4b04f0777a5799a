//! Shared by the server's integration tests: a real `accordion server`
//! process on ports the OS picks (read back from its "listening" line, so
//! there is no race for a free port), killed when dropped — also when a test
//! fails, and then its log is printed.

#![allow(dead_code, reason = "each test file uses a different part")]

pub mod maven;
pub mod standalone_hbase;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct ServerProcess {
    pub child: Child,
    pub thrift: SocketAddr,
    pub http: SocketAddr,
    /// HBase's native RPC port (any free one unless a test sets `rpc_addr`;
    /// `None` when it is off).
    pub rpc: Option<SocketAddr>,
    log: Arc<Mutex<String>>,
    // A data directory of its own, removed after the process is killed.
    _dir: Option<TempDir>,
}

/// Keeps the last part of a child's stream in `log`.
fn drain_into(r: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    bench::ycsb::server::keep_tail(r, log, 128 * 1024);
}

impl ServerProcess {
    /// A server on a fresh data directory, with `--set` settings.
    pub fn start(sets: &[&str]) -> ServerProcess {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        Self::launch(&path, sets, Some(dir))
    }

    /// A server on `dir` (for restarts over the same data).
    pub fn start_in(dir: &Path, sets: &[&str]) -> ServerProcess {
        Self::launch(dir, sets, None)
    }

    /// A server whose store lives at a root URI (`--root hdfs://…`).
    pub fn start_at_root(root: &str, sets: &[&str]) -> ServerProcess {
        Self::launch_with(&["--root", root], sets, None)
    }

    /// A server that joins the cluster at `url` as one of several sharing
    /// the root `dir`.
    pub fn start_in_cluster_at(dir: &Path, url: &str, session_timeout_ms: u64) -> ServerProcess {
        let path = dir.to_str().expect("a UTF-8 data directory").to_string();
        let timeout = session_timeout_ms.to_string();
        let place = ["--data-dir", &path, "--cluster", url, "--session-timeout-ms", &timeout];
        Self::launch_with(&place, &[], None)
    }

    /// A server that joins the cluster at `url` with its store at the root
    /// URI `root` (`hdfs://…` or `file://…`), shared with the others.
    pub fn start_in_cluster_at_root(root: &str, url: &str, session_timeout_ms: u64) -> ServerProcess {
        let timeout = session_timeout_ms.to_string();
        let place = ["--root", root, "--cluster", url, "--session-timeout-ms", &timeout];
        Self::launch_with(&place, &[], None)
    }

    /// A server on `dir` with extra command-line flags (e.g. logging).
    pub fn start_with_flags(dir: &Path, flags: &[&str], sets: &[&str]) -> ServerProcess {
        let dir = dir.to_str().expect("a UTF-8 data directory").to_string();
        let mut place = vec!["--data-dir", &dir];
        place.extend_from_slice(flags);
        Self::launch_with(&place, sets, None)
    }

    /// Like [`Self::start_with_flags`], with `RUST_LOG` set to `rust_log`
    /// (or removed, for `None`) in the server's environment.
    pub fn start_with_rust_log(dir: &Path, flags: &[&str], sets: &[&str], rust_log: Option<&str>) -> ServerProcess {
        let dir = dir.to_str().expect("a UTF-8 data directory").to_string();
        let mut place = vec!["--data-dir", &dir];
        place.extend_from_slice(flags);
        Self::launch_in_env(&place, sets, None, Some(rust_log))
    }

    fn launch(dir: &Path, sets: &[&str], own_dir: Option<TempDir>) -> ServerProcess {
        let dir = dir.to_str().expect("a UTF-8 data directory");
        Self::launch_with(&["--data-dir", dir], sets, own_dir)
    }

    fn launch_with(place: &[&str], sets: &[&str], own_dir: Option<TempDir>) -> ServerProcess {
        Self::launch_in_env(place, sets, own_dir, None)
    }

    /// `rust_log`: `None` leaves the environment as it is, `Some(None)`
    /// removes `RUST_LOG`, `Some(Some(v))` sets it.
    fn launch_in_env(
        place: &[&str],
        sets: &[&str],
        own_dir: Option<TempDir>,
        rust_log: Option<Option<&str>>,
    ) -> ServerProcess {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_accordion"));
        cmd.arg("server").args(place).args(["--thrift-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"]);
        // Never HBase's fixed 16020: tests run side by side.
        cmd.args(["--set", "rpc_addr=127.0.0.1:0"]);
        match rust_log {
            Some(Some(v)) => {
                cmd.env("RUST_LOG", v);
            }
            Some(None) => {
                cmd.env_remove("RUST_LOG");
            }
            None => {}
        }
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn accordion server");
        let log = Arc::new(Mutex::new(String::new()));
        drain_into(child.stderr.take().expect("stderr"), log.clone());
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // Keep draining stdout after the test stopped listening.
                let _ = tx.send(line);
            }
        });
        let unbound: SocketAddr = ([127, 0, 0, 1], 0).into();
        let mut server = ServerProcess { child, thrift: unbound, http: unbound, rpc: None, log, _dir: own_dir };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(200))) {
                // "accordion server listening: thrift ADDR http ADDR"
                Ok(line) if line.starts_with("accordion server listening:") => {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let addr = |key: &str| -> SocketAddr {
                        let i = words.iter().position(|w| *w == key).unwrap_or_else(|| panic!("no {key} in {line:?}"));
                        words[i + 1].parse().unwrap_or_else(|e| panic!("bad {key} address in {line:?}: {e}"))
                    };
                    (server.thrift, server.http) = (addr("thrift"), addr("http"));
                    server.rpc = words.contains(&"rpc").then(|| addr("rpc"));
                    return server;
                }
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) if left > Duration::ZERO => {}
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(100));
                    panic!("the server did not start within {START_TIMEOUT:?}; log:\n{}", server.log_text())
                }
            }
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The process has neither crashed nor exited.
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().expect("try_wait") {
            panic!("the server exited ({status}); log:\n{}", self.log_text());
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit.
    pub fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }

    /// The process's peak resident memory.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("proc status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
        line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM value")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("---- accordion server log ----\n{}\n---- end of log ----", self.log_text());
        }
    }
}

/// A real `accordion master` process on a port the OS picks, killed when
/// dropped.
pub struct MasterProcess {
    pub child: Child,
    pub http: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl MasterProcess {
    /// `accordion master --cluster url` with a session of `session_ms` and
    /// `extra` flags; returns once it prints its address.
    pub fn launch(url: &str, session_ms: u64, extra: &[&str]) -> MasterProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["master", "--cluster", url, "--http-addr", "127.0.0.1:0"])
            .args(extra)
            .args(["--session-timeout-ms", &session_ms.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn accordion master");
        let log = Arc::new(Mutex::new(String::new()));
        drain_into(child.stderr.take().expect("stderr"), log.clone());
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // Owned from here, so that it is killed (Drop) if it never starts.
        let mut master = MasterProcess { child, http: ([127, 0, 0, 1], 0).into(), log };
        loop {
            let line = rx.recv_timeout(START_TIMEOUT).expect("the master prints its address");
            if let Some(addr) = line.strip_prefix("accordion master listening: http ") {
                master.http = addr.parse().expect("address");
                return master;
            }
        }
    }
}

impl MasterProcess {
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for MasterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("---- accordion master log ----\n{}\n---- end of log ----", self.log_text());
        }
    }
}

/// A self-signed CA for the TLS tests, and its key.
pub fn test_ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let mut params = CertificateParams::new(Vec::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("key");
    (params.self_signed(&key).expect("CA"), key)
}

/// A certificate of `ca` for `names`, and its key, as PEM.
pub fn test_leaf(ca: &(rcgen::Certificate, rcgen::KeyPair), names: &[&str]) -> (String, String) {
    let params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
    let key = rcgen::KeyPair::generate().expect("key");
    (params.signed_by(&key, &ca.0, &ca.1).expect("signed").pem(), key.serialize_pem())
}
