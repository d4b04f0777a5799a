//! A real MiniDFSCluster for tests (the `mini-hdfs` crate over
//! `hdfs/minicluster`, Hadoop 3.4.2, 3 DataNodes on loopback ports chosen at
//! run time), started per test and shut down when dropped; failures panic
//! with the launcher's log. Shared by the HDFS test binaries through
//! `#[path]`.

use store::fs::HdfsFs;

/// A running MiniDFSCluster; shut down when dropped.
pub struct MiniHdfs {
    cluster: mini_hdfs::MiniHdfs,
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
        let dir = tempfile::tempdir().expect("tempdir");
        let options = mini_hdfs::MiniHdfsOptions::default();
        let cluster = mini_hdfs::MiniHdfs::start(&dir.path().join("cluster"), &options)
            .unwrap_or_else(|e| panic!("the mini cluster did not start: {e}"));
        eprintln!("MiniDFSCluster at {}, ready in {:.1} s", cluster.uri, cluster.started_in.as_secs_f64());
        MiniHdfs { uri: cluster.uri.clone(), cluster, _dir: dir }
    }

    /// Sends one command; its answer after `OK`.
    pub fn command(&mut self, cmd: &str) -> String {
        self.cluster.command(cmd).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn fs(&self) -> HdfsFs {
        HdfsFs::connect(&self.uri).expect("connect to the name node")
    }
}
