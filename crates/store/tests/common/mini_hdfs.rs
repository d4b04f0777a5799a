//! A real MiniDFSCluster for tests (`hdfs/minicluster`, Hadoop 3.4.2, 3
//! DataNodes on loopback ports chosen at run time), started per test and
//! shut down when dropped. Shared by the HDFS test binaries through
//! `#[path]`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use store::fs::HdfsFs;

/// A running MiniDFSCluster; shut down when dropped.
pub struct MiniHdfs {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub uri: String,
    _dir: tempfile::TempDir,
}

impl MiniHdfs {
    pub fn start() -> MiniHdfs {
        // RUST_LOG=hdfs_native=debug shows the client's pipeline recovery.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hdfs/minicluster/run.sh");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new("bash")
            .arg(&script)
            .arg("--dir")
            .arg(dir.path())
            .args(["--datanodes", "3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let started = Instant::now();
        let mut line = String::new();
        let uri = loop {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read the launcher's output");
            assert!(n > 0, "the mini cluster exited before it was ready ({:?})", started.elapsed());
            if let Some(uri) = line.trim().strip_prefix("READY ") {
                break uri.to_string();
            }
        };
        eprintln!("MiniDFSCluster at {uri}, ready in {:.1} s", started.elapsed().as_secs_f64());
        MiniHdfs { child, stdin, stdout, uri, _dir: dir }
    }

    /// Sends one command; its one-line answer.
    pub fn command(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").expect("send a command");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read the answer");
        assert!(line.starts_with("OK"), "{cmd}: {line}");
        line.trim().to_string()
    }

    pub fn fs(&self) -> HdfsFs {
        HdfsFs::connect(&self.uri).expect("connect to the name node")
    }
}

impl Drop for MiniHdfs {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "shutdown");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
