//! Where a harness's store lives: a local directory through the
//! fault-injecting file system, or the mini HDFS.

use std::path::PathBuf;
use std::sync::Arc;

use store::fs::{FaultInjectingFs, FileSystem, HdfsFs, LocalFs};

/// Where stores live when the machine has a tmpfs.
pub(crate) const TMPFS: &str = "/dev/shm";

/// Where a harness's store lives.
pub(crate) enum Root {
    /// A local directory (on `/dev/shm` when there is one) through the
    /// fault-injecting file system: a crash cuts every file to its synced
    /// bytes and undoes unsynced directory entries (a power loss).
    Local { _dir: tempfile::TempDir, fs: Arc<FaultInjectingFs> },
    /// A directory on the mini HDFS: a crash severs the client without
    /// closing anything (a process death: unsynced bytes may be lost, the
    /// WAL's lease stays with the dead client), and the store reopens
    /// through a new client, which recovers the lease first.
    Hdfs { uri: String, fs: HdfsFs },
}

impl Root {
    pub(crate) fn local() -> (Root, PathBuf) {
        let dir = temp_dir();
        let path = dir.path().to_path_buf();
        (Root::Local { _dir: dir, fs: Arc::new(FaultInjectingFs::new(Arc::new(LocalFs))) }, path)
    }

    pub(crate) fn fs(&self) -> Arc<dyn FileSystem> {
        match self {
            Root::Local { fs, .. } => fs.clone(),
            Root::Hdfs { fs, .. } => Arc::new(fs.clone()),
        }
    }

    /// After the store was dropped without `close`: loses what a crash
    /// loses.
    pub(crate) fn crash(&mut self) -> store::Result<()> {
        match self {
            Root::Local { fs, .. } => fs.drop_unsynced().map(|_| ()),
            Root::Hdfs { uri, fs } => {
                *fs = HdfsFs::connect(uri)?;
                Ok(())
            }
        }
    }
}

/// A temporary directory, in memory when the machine has a tmpfs (fsyncs of
/// `SyncWal` writes are then cheap).
pub(crate) fn temp_dir() -> tempfile::TempDir {
    if std::path::Path::new(TMPFS).is_dir()
        && let Ok(dir) = tempfile::tempdir_in(TMPFS)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}
