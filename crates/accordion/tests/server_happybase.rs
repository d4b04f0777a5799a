//! The real `happybase` client (Python) against a real `accordion server`
//! process: every check of `happybase/client_suite.py` over all four wires
//! (buffered/framed × binary/compact) on one port, and restarts — after a
//! SIGTERM and after a SIGKILL every acknowledged row is there. The same
//! with the server's root on a real mini HDFS (ignored by default, run by
//! `.ci/run`).
//!
//! Python comes from `$ACCORDION_PYTHON` or the workspace's `.venv` (which
//! `.ci/run` creates with happybase installed).

mod common;
#[path = "../../store/tests/common/mini_hdfs.rs"]
#[expect(dead_code, reason = "this test starts the cluster and reads its URI only")]
mod mini_hdfs;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::ServerProcess;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p =
        std::env::var_os("ACCORDION_PYTHON").map(PathBuf::from).unwrap_or_else(|| workspace().join(".venv/bin/python"));
    let ok = Command::new(&p).args(["-c", "import happybase"]).status().is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} cannot import happybase: run .ci/run (it creates .venv with happybase) or set ACCORDION_PYTHON",
        p.display()
    );
    p
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
    let server = ServerProcess::start(&[]);
    for wire in [("buffered", "binary"), ("framed", "binary"), ("buffered", "compact"), ("framed", "compact")] {
        let (ok, out) = client(&py, server.thrift.port(), wire, &["suite"]);
        println!("{out}");
        assert!(ok, "happybase suite failed over {wire:?}:\n{out}");
        assert!(out.contains("6 passed, 0 failed"), "{out}");
    }
}

#[test]
fn restart_after_sigterm_and_sigkill_keeps_acknowledged_rows() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let wire = ("framed", "compact");
    let mut server = ServerProcess::start_in(dir.path(), &[]);
    let (ok, out) = client(&py, server.thrift.port(), wire, &["write", "3000", "restart"]);
    assert!(ok, "{out}");
    let status = server.terminate(Duration::from_secs(60)).expect("the server exits within 60 s of SIGTERM");
    assert!(status.success(), "graceful shutdown should exit 0, got {status}");
    drop(server);

    let mut server = ServerProcess::start_in(dir.path(), &[]);
    let port = server.thrift.port();
    let (ok, out) = client(&py, port, wire, &["verify", "3000", "restart"]);
    assert!(ok, "after SIGTERM: {out}");
    // Tables created over Thrift log with SYNC_WAL (HBase's default), so a
    // killed server loses nothing it acknowledged.
    let (ok, out) = client(&py, port, ("buffered", "binary"), &["write", "6000", "restart"]);
    assert!(ok, "{out}");
    server.kill();
    drop(server);

    let server = ServerProcess::start_in(dir.path(), &[]);
    let (ok, out) = client(&py, server.thrift.port(), wire, &["verify", "6000", "restart"]);
    assert!(ok, "after SIGKILL: {out}");
}

/// `accordion server --root hdfs://…`: the happybase suite, then a SIGKILL
/// after acknowledged writes; the restarted server (a new HDFS client, which
/// recovers the dead one's WAL lease) has every acknowledged row.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p accordion --test server_happybase -- --ignored"]
fn happybase_suite_and_a_sigkill_with_the_root_on_hdfs() {
    let py = python();
    let cluster = mini_hdfs::MiniHdfs::start();
    let root = format!("{}/accordion", cluster.uri);
    let mut server = ServerProcess::start_at_root(&root, &[]);
    for wire in [("framed", "compact"), ("buffered", "binary")] {
        let (ok, out) = client(&py, server.thrift.port(), wire, &["suite"]);
        println!("{out}");
        assert!(ok, "happybase suite on HDFS failed over {wire:?}:\n{out}");
        assert!(out.contains("6 passed, 0 failed"), "{out}");
    }
    let wire = ("framed", "compact");
    let (ok, out) = client(&py, server.thrift.port(), wire, &["write", "3000", "restart"]);
    assert!(ok, "{out}");
    server.kill();
    drop(server);

    let server = ServerProcess::start_at_root(&root, &[]);
    let (ok, out) = client(&py, server.thrift.port(), wire, &["verify", "3000", "restart"]);
    assert!(ok, "after SIGKILL on HDFS: {out}\nserver log:\n{}", server.log_text());
}
