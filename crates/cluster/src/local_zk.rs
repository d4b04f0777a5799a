//! `LocalZooKeeper`: a real, single-node ZooKeeper server on a loopback
//! port with its data in a directory of ours, for the cluster tests, the
//! scale emulator and `accordion cluster start`. It is ZooKeeper itself,
//! not a stand-in: Debian's `zookeeper` package (`zkServer.sh
//! start-foreground`) where it is installed, else Apache ZooKeeper 3.9.5
//! from Maven Central (`zookeeper/run.sh` in this repository, with the
//! Java and Maven the HDFS mini cluster uses), so a fresh machine needs no
//! system package.
//!
//! The server's session bounds are set so short sessions can be tested
//! (`minSessionTimeout` 1 s, `tickTime` 500 ms); it takes any number of
//! connections from one address (`maxClientCnxns=0`: the emulator opens a
//! session per emulated server from 127.0.0.1) and answers the `mntr`
//! four-letter word ([`LocalZooKeeper::mntr`]). Dropping it kills the
//! server.
//!
//! Thread safety: owned by one test or command.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{ClusterError, Result};

/// Where Debian's package puts the server script (override with
/// `ACCORDION_ZK_SERVER_SH`).
const ZK_SERVER_SH: &str = "/usr/share/zookeeper/bin/zkServer.sh";

/// This repository's script that runs ZooKeeper from Maven.
const MAVEN_RUN_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../zookeeper/run.sh");

/// How long a server may take to answer (the first Maven run downloads
/// ZooKeeper's jars).
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// The server script to run and whether it is Debian's
/// (`start-foreground CFG`) or ours (`CFG`).
fn server_script() -> (String, bool) {
    if let Ok(path) = std::env::var("ACCORDION_ZK_SERVER_SH") {
        let debian = !path.ends_with("run.sh");
        return (path, debian);
    }
    if Path::new(ZK_SERVER_SH).exists() { (ZK_SERVER_SH.to_string(), true) } else { (MAVEN_RUN_SH.to_string(), false) }
}

pub struct LocalZooKeeper {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl LocalZooKeeper {
    /// Starts a server with its data and log in `dir` on a free loopback
    /// port, and waits until it answers.
    pub fn start(dir: &Path) -> Result<LocalZooKeeper> {
        let (script, debian) = server_script();
        let fail = |reason: String| ClusterError::LocalZooKeeper { path: PathBuf::from(&script), reason };
        if !Path::new(&script).exists() {
            return Err(fail("not found (neither Debian's zookeeper package nor this repository's script)".into()));
        }
        std::fs::create_dir_all(dir.join("data"))?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config = dir.join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=90000\ndataDir={}\nclientPort={port}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n\
                 4lw.commands.whitelist=ruok,srvr,mntr\n",
                dir.join("data").display()
            ),
        )?;
        let log = std::fs::File::create(dir.join("zookeeper.out"))?;
        let mut command = Command::new(&script);
        if debian {
            command.arg("start-foreground");
        }
        let child = command
            .arg(&config)
            .env("ZOO_LOG_DIR", dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| fail(format!("cannot run it: {e}")))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut zk = LocalZooKeeper { child, addr, dir: dir.to_path_buf() };
        let deadline = Instant::now() + START_TIMEOUT;
        while !zk.answers() {
            if let Some(status) = zk.child.try_wait()? {
                return Err(fail(format!("exited with {status}; see {}", dir.join("zookeeper.out").display())));
            }
            if Instant::now() > deadline {
                return Err(fail(format!(
                    "no answer on {addr} after {START_TIMEOUT:?}; see {}",
                    dir.join("zookeeper.out").display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        tracing::info!(%addr, "local ZooKeeper is up");
        Ok(zk)
    }

    /// `host:port` of the server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A cluster URL on this server with root `root` (e.g. `/accordion`).
    pub fn url(&self, root: &str) -> String {
        format!("zk://{}{root}", self.addr)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the server answers ZooKeeper's `ruok` with `imok` and
    /// serves (`mntr` answers only once it does).
    fn answers(&self) -> bool {
        self.four_letters(b"ruok").is_ok_and(|r| r == "imok") && self.mntr().is_ok_and(|m| !m.is_empty())
    }

    /// The server's `mntr` figures (`zk_packets_received`,
    /// `zk_znode_count`, ...), by name.
    pub fn mntr(&self) -> std::io::Result<std::collections::BTreeMap<String, String>> {
        let text = self.four_letters(b"mntr")?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect())
    }

    /// The last transaction id the server committed (`srvr`'s `Zxid`):
    /// how many writes it took between two readings (sessions' creations
    /// and closes count too).
    pub fn zxid(&self) -> std::io::Result<u64> {
        let text = self.four_letters(b"srvr")?;
        text.lines()
            .find_map(|l| l.strip_prefix("Zxid:"))
            .and_then(|v| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| std::io::Error::other(format!("no Zxid in the srvr answer: {text}")))
    }

    fn four_letters(&self, word: &[u8]) -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(word)?;
        let mut reply = String::new();
        s.read_to_string(&mut reply)?;
        Ok(reply)
    }
}

impl Drop for LocalZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
