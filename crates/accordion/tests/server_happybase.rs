//! The real `happybase` client (Python) against a real `accordion server`
//! process: every check of `happybase/client_suite.py` over all four wires
//! (buffered/framed × binary/compact) on one port, and restarts — after a
//! SIGTERM and after a SIGKILL every acknowledged row is there.
//!
//! Python comes from `$ACCORDION_PYTHON` or the workspace's `.venv` (which
//! `.ci/run` creates with happybase installed).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p = std::env::var_os("ACCORDION_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".venv/bin/python"));
    let ok = Command::new(&p).args(["-c", "import happybase"]).status().is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} cannot import happybase: run .ci/run (it creates .venv with happybase) or set ACCORDION_PYTHON",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A running server; killed on drop if still running.
struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    fn start(dir: &Path, port: u16) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["server", "--data-dir"])
            .arg(dir)
            .args(["--thrift-addr", &format!("127.0.0.1:{port}"), "--http-addr", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start accordion server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) if line.contains("listening") => break,
                Ok(_) => {}
                Err(_) if Instant::now() > deadline => {
                    let _ = child.kill();
                    panic!("server did not start within 60 s");
                }
                Err(_) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("server exited at start: {status}");
                    }
                }
            }
        }
        ServerProcess { child, port }
    }

    fn signal(&mut self, signal: &str) -> std::process::ExitStatus {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success(), "kill {signal} failed");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit within 60 s of {signal}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(py: &Path, port: u16, wire: (&str, &str), args: &[&str]) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/happybase/client_suite.py");
    let out = Command::new(py)
        .arg(script)
        .args(["127.0.0.1", &port.to_string(), wire.0, wire.1])
        .args(args)
        .output()
        .expect("run python");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn happybase_suite_over_every_wire() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::start(dir.path(), free_port());
    for wire in [("buffered", "binary"), ("framed", "binary"), ("buffered", "compact"), ("framed", "compact")] {
        let (ok, out) = client(&py, server.port, wire, &["suite"]);
        println!("{out}");
        assert!(ok, "happybase suite failed over {wire:?}:\n{out}");
        assert!(out.contains("6 passed, 0 failed"), "{out}");
    }
}

#[test]
fn restart_after_sigterm_and_sigkill_keeps_acknowledged_rows() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let wire = ("framed", "compact");
    let mut server = ServerProcess::start(dir.path(), port);
    let (ok, out) = client(&py, port, wire, &["write", "3000", "restart"]);
    assert!(ok, "{out}");
    let status = server.signal("-TERM");
    assert!(status.success(), "graceful shutdown should exit 0, got {status}");
    drop(server);

    let mut server = ServerProcess::start(dir.path(), port);
    let (ok, out) = client(&py, port, wire, &["verify", "3000", "restart"]);
    assert!(ok, "after SIGTERM: {out}");
    // Tables created over Thrift log with SYNC_WAL (HBase's default), so a
    // killed server loses nothing it acknowledged.
    let (ok, out) = client(&py, port, ("buffered", "binary"), &["write", "6000", "restart"]);
    assert!(ok, "{out}");
    server.signal("-KILL");
    drop(server);

    let server = ServerProcess::start(dir.path(), port);
    let (ok, out) = client(&py, server.port, wire, &["verify", "6000", "restart"]);
    assert!(ok, "after SIGKILL: {out}");
}
