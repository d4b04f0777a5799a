//! `MiniHdfs`: the repository's real HDFS mini cluster (`hdfs/minicluster/run.sh`:
//! Hadoop 3.4.2's `MiniDFSCluster`, a NameNode and N DataNodes on loopback ports
//! chosen at run time) as a child process, driven through its stdin/stdout
//! protocol (`READY hdfs://…`, then one `OK …`/`ERR …` line per command; see
//! `hdfs/minicluster/README.md`). The store's HDFS tests and `accordion bench
//! run --hdfs mini` both start it through here.
//!
//! Stopping: `Drop` sends `shutdown` and waits for the launcher, which removes
//! the cluster's directory; if the process that owns it dies instead, the
//! launcher sees the end of its stdin and shuts down too.
//!
//! Thread safety: one owner; commands are sent and answered one at a time
//! through `&mut self`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// What went wrong starting or driving the mini cluster.
#[derive(Debug, thiserror::Error)]
pub enum MiniHdfsError {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// The launcher gave no answer in time (the end of its log attached).
    #[error("{what}: no answer from the mini HDFS within {waited:?}; {log} ends:\n{tail}")]
    NoAnswer { what: String, waited: Duration, log: String, tail: String },
    /// The launcher answered `ERR …`, or something it should not have.
    #[error("{command}: the mini HDFS answered {answer:?}")]
    Refused { command: String, answer: String },
}

type Result<T> = std::result::Result<T, MiniHdfsError>;

/// How to start the cluster.
#[derive(Debug, Clone)]
pub struct MiniHdfsOptions {
    /// `hdfs/minicluster/run.sh`.
    pub script: PathBuf,
    pub datanodes: usize,
    /// DataNodes really fsync on `hsync` (MiniDFSCluster skips it by
    /// default); what a benchmark wants.
    pub fsync: bool,
    /// How long the start may take: a first run builds the launcher, which
    /// downloads Hadoop through Maven.
    pub start_timeout: Duration,
    pub command_timeout: Duration,
}

impl Default for MiniHdfsOptions {
    fn default() -> MiniHdfsOptions {
        MiniHdfsOptions {
            script: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hdfs/minicluster/run.sh"),
            datanodes: 3,
            fsync: false,
            start_timeout: Duration::from_secs(600),
            command_timeout: Duration::from_secs(180),
        }
    }
}

/// A running mini cluster; shut down when dropped.
pub struct MiniHdfs {
    child: Child,
    stdin: ChildStdin,
    /// The launcher's stdout, line by line (read by a thread, so that a hung
    /// launcher fails its caller after a timeout instead of hanging it).
    lines: Receiver<String>,
    /// Where the launcher's stderr (Maven, Hadoop) goes.
    log: PathBuf,
    command_timeout: Duration,
    /// `hdfs://127.0.0.1:PORT`.
    pub uri: String,
    /// How long the start took.
    pub started_in: Duration,
}

impl MiniHdfs {
    /// Starts a cluster in `dir` (new or empty; the launcher removes it at
    /// shutdown), its log in `<dir>.log`.
    pub fn start(dir: &Path, options: &MiniHdfsOptions) -> Result<MiniHdfs> {
        let started = Instant::now();
        let log = dir.with_extension("log");
        let log_file = std::fs::File::create(&log)
            .map_err(|source| MiniHdfsError::Io { what: format!("create {}", log.display()), source })?;
        let mut cmd = Command::new("bash");
        cmd.arg(&options.script).arg("--dir").arg(dir).args(["--datanodes", &options.datanodes.to_string()]);
        if options.fsync {
            cmd.arg("--fsync");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|source| MiniHdfsError::Io { what: format!("start {}", options.script.display()), source })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut cluster = MiniHdfs {
            child,
            stdin,
            lines,
            log,
            command_timeout: options.command_timeout,
            uri: String::new(),
            started_in: Duration::ZERO,
        };
        loop {
            let line = cluster.next_line(options.start_timeout, "start")?;
            if let Some(uri) = line.trim().strip_prefix("READY ") {
                cluster.uri = uri.to_string();
                cluster.started_in = started.elapsed();
                return Ok(cluster);
            }
        }
    }

    /// Where the launcher's log is.
    pub fn log(&self) -> &Path {
        &self.log
    }

    fn next_line(&mut self, waited: Duration, what: &str) -> Result<String> {
        self.lines.recv_timeout(waited).map_err(|_| {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let mut tail: Vec<&str> = log.lines().rev().take(40).collect();
            tail.reverse();
            MiniHdfsError::NoAnswer {
                what: what.to_string(),
                waited,
                log: self.log.display().to_string(),
                tail: tail.join("\n"),
            }
        })
    }

    /// Sends one command (`stop-datanode 1`, `restart-namenode`, …) and
    /// returns its answer after `OK `.
    pub fn command(&mut self, command: &str) -> Result<String> {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .map_err(|source| MiniHdfsError::Io { what: format!("send {command:?}"), source })?;
        let line = self.next_line(self.command_timeout, command)?;
        match line.trim().strip_prefix("OK") {
            Some(rest) => Ok(rest.trim().to_string()),
            None => Err(MiniHdfsError::Refused { command: command.to_string(), answer: line }),
        }
    }

    /// Bytes the running DataNodes have written to block files since they
    /// started, every replica counted (their `BytesWritten` metric).
    pub fn bytes_written(&mut self) -> Result<u64> {
        let answer = self.command("bytes-written")?;
        answer.parse().map_err(|_| MiniHdfsError::Refused { command: "bytes-written".into(), answer })
    }
}

impl Drop for MiniHdfs {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "shutdown").and_then(|()| self.stdin.flush());
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
