//! `LocalZooKeeper`: a real, single-node ZooKeeper server (Debian's
//! `zookeeper` package, `zkServer.sh start-foreground`) on a loopback port
//! with its data in a directory of ours, for the cluster tests and for
//! `accordion cluster start`. It is ZooKeeper itself, not a stand-in.
//!
//! The server's session bounds are set so short sessions can be tested
//! (`minSessionTimeout` 1 s, `tickTime` 500 ms). Dropping it kills the
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

pub struct LocalZooKeeper {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl LocalZooKeeper {
    /// Starts a server with its data and log in `dir` on a free loopback
    /// port, and waits until it answers.
    pub fn start(dir: &Path) -> Result<LocalZooKeeper> {
        let script = std::env::var("ACCORDION_ZK_SERVER_SH").unwrap_or_else(|_| ZK_SERVER_SH.to_string());
        let fail = |reason: String| ClusterError::LocalZooKeeper { path: PathBuf::from(&script), reason };
        if !Path::new(&script).exists() {
            return Err(fail("not found; install Debian's zookeeper package (apt-get install zookeeper)".into()));
        }
        std::fs::create_dir_all(dir.join("data"))?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config = dir.join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=90000\ndataDir={}\nclientPort={port}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n",
                dir.join("data").display()
            ),
        )?;
        let log = std::fs::File::create(dir.join("zookeeper.out"))?;
        let child = Command::new(&script)
            .arg("start-foreground")
            .arg(&config)
            .env("ZOO_LOG_DIR", dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| fail(format!("cannot run it: {e}")))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut zk = LocalZooKeeper { child, addr, dir: dir.to_path_buf() };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !zk.answers() {
            if let Some(status) = zk.child.try_wait()? {
                return Err(fail(format!("exited with {status}; see {}", dir.join("zookeeper.out").display())));
            }
            if Instant::now() > deadline {
                return Err(fail(format!(
                    "no answer on {addr} after 60 s; see {}",
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

    /// Whether the server answers ZooKeeper's `ruok` with `imok`.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut reply = String::new();
        s.write_all(b"ruok").is_ok() && s.read_to_string(&mut reply).is_ok() && reply == "imok"
    }
}

impl Drop for LocalZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
