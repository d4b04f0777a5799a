//! A real MiniDFSCluster for tests (`hdfs/minicluster`, Hadoop 3.4.2, 3
//! DataNodes on loopback ports chosen at run time), started per test and
//! shut down when dropped. Shared by the HDFS test binaries through
//! `#[path]`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use store::fs::HdfsFs;

/// A running MiniDFSCluster; shut down when dropped.
pub struct MiniHdfs {
    child: Child,
    stdin: ChildStdin,
    /// The launcher's stdout, line by line (read by a thread, so that a
    /// hung launcher fails the test instead of hanging it).
    lines: Receiver<String>,
    /// Where the launcher's stderr (Maven, Hadoop) goes.
    log: PathBuf,
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
        let log = dir.path().join("launcher.log");
        let log_file = std::fs::File::create(&log).expect("launcher log");
        let cluster_dir = dir.path().join("cluster");
        let mut child = Command::new("bash")
            .arg(&script)
            .arg("--dir")
            .arg(&cluster_dir)
            .args(["--datanodes", "3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let started = Instant::now();
        let uri = loop {
            // A first run builds the launcher (Maven downloads Hadoop).
            match lines.recv_timeout(Duration::from_secs(600)) {
                Ok(line) => {
                    if let Some(uri) = line.trim().strip_prefix("READY ") {
                        break uri.to_string();
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let tail = std::fs::read_to_string(&log).unwrap_or_default();
                    let tail: String = tail
                        .lines()
                        .rev()
                        .take(40)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n");
                    panic!("the mini cluster did not get ready ({:?}); its log ends:\n{tail}", started.elapsed());
                }
            }
        };
        eprintln!("MiniDFSCluster at {uri}, ready in {:.1} s", started.elapsed().as_secs_f64());
        MiniHdfs { child, stdin, lines, log, uri, _dir: dir }
    }

    /// Sends one command; its one-line answer.
    pub fn command(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").expect("send a command");
        self.stdin.flush().expect("flush");
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(180))
            .unwrap_or_else(|_| panic!("{cmd}: no answer from the mini cluster (its log: {})", self.log.display()));
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
