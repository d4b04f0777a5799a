//! The cluster's errors.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("bad cluster URL {0}")]
    BadUrl(String),
    #[error("cannot {op} {path} in ZooKeeper: {source}")]
    Zk { op: &'static str, path: String, source: zookeeper_client::Error },
    #[error("cannot start the ZooKeeper client's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the ZooKeeper session ended: {0}")]
    SessionEnded(String),
    #[error("malformed {what} in ZooKeeper at {path}: {reason}")]
    Malformed { what: &'static str, path: String, reason: String },
    #[error("cannot start ZooKeeper ({path}): {reason}")]
    LocalZooKeeper { path: PathBuf, reason: String },
    #[error("{0}")]
    Mismatch(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the master's files on the shared root: {0}")]
    Store(#[from] store::StoreError),
}

pub type Result<T, E = ClusterError> = std::result::Result<T, E>;
