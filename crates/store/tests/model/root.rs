//! Where a harness's store lives: a local directory through the
//! fault-injecting file system, the mini HDFS, or a file system in memory
//! (`MemFs`), and what a crash of the store loses on each.

use std::path::PathBuf;
use std::sync::Arc;

use store::Store;
use store::fs::{FaultInjectingFs, FileSystem, HdfsFs, LocalFs};
use store::testing::MemFs;

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
    /// A file system in memory: a crash is a power cut at the instant the
    /// store still runs (`MemFs::crash_clone`), and the store reopens on
    /// what the cut kept.
    Mem { fs: MemFs },
}

impl Root {
    pub(crate) fn local() -> (Root, PathBuf) {
        let dir = temp_dir();
        let path = dir.path().to_path_buf();
        (Root::Local { _dir: dir, fs: Arc::new(FaultInjectingFs::new(Arc::new(LocalFs))) }, path)
    }

    /// An empty `MemFs`, the store in `/model` on it.
    pub(crate) fn mem() -> (Root, PathBuf) {
        (Root::Mem { fs: MemFs::new() }, PathBuf::from("/model"))
    }

    pub(crate) fn fs(&self) -> Arc<dyn FileSystem> {
        match self {
            Root::Local { fs, .. } => fs.clone(),
            Root::Hdfs { fs, .. } => Arc::new(fs.clone()),
            Root::Mem { fs } => Arc::new(fs.clone()),
        }
    }

    /// A power cut now, if this root can take one without stopping the
    /// store: what a `MemFs` keeps of it.
    pub(crate) fn crash_clone(&self) -> Option<MemFs> {
        match self {
            Root::Mem { fs } => Some(fs.crash_clone()),
            Root::Local { .. } | Root::Hdfs { .. } => None,
        }
    }

    /// Crashes `store` (its last handle: it is dropped without `close`) and
    /// loses what the crash loses.
    pub(crate) fn crash(&mut self, store: Store) -> store::Result<()> {
        match self {
            Root::Local { fs, .. } => {
                drop(store);
                fs.drop_unsynced().map(|_| ())
            }
            Root::Hdfs { uri, fs } => {
                fs.sever();
                drop(store);
                *fs = HdfsFs::connect(uri)?;
                Ok(())
            }
            Root::Mem { fs } => {
                // The cut comes while the store still runs: dropping it
                // writes nothing the clone could keep.
                let kept = fs.crash_clone();
                drop(store);
                *fs = kept;
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
