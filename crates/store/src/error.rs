//! Typed errors of the store. Every failure names what failed and where
//! (the file, the table, the region), so that an operator can act on it.

use std::path::PathBuf;

use memstore::MemStoreError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("corrupt file {path} at offset {offset}: {reason}")]
    Corruption { path: PathBuf, offset: u64, reason: String },
    /// A metadata file's value could not be encoded (`layout::write_json`).
    #[error("cannot encode {path}: {source}")]
    Encode { path: PathBuf, source: serde_json::Error },
    #[error(transparent)]
    MemStore(#[from] MemStoreError),
    #[error("table {0:?} already exists")]
    TableExists(String),
    #[error("table {0:?} not found")]
    TableNotFound(String),
    #[error("table {0:?} is disabled")]
    TableDisabled(String),
    #[error("table {0:?} is enabled; disable it first")]
    TableEnabled(String),
    #[error("column family {family:?} does not exist in table {table:?}")]
    NoSuchFamily { table: String, family: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A table, family or server name that breaks HBase's naming rules, or
    /// cannot be a path segment (`names.rs`; HBase's IllegalArgumentException).
    #[error("{0}")]
    IllegalName(String),
    /// An increment found a value that is not an 8-byte counter (HBase's
    /// DoNotRetryIOException "Field is not a long").
    #[error("field {column} is not a long, it's {len} bytes wide")]
    NotACounter { column: String, len: usize },
    /// No region has this encoded name here (HBase's
    /// `UnknownRegionException`).
    #[error("no region named {0:?} (regions are named by their encoded id)")]
    UnknownRegion(String),
    /// The region holding the row is not OPEN here (HBase's
    /// `NotServingRegionException`).
    #[error("region {region} is not serving requests (state {state})")]
    NotServingRegion { region: String, state: crate::region::state::RegionState },
    #[error("the store is closed")]
    Closed,
    #[error("writes are stopped: {0}")]
    WritesStopped(String),
    /// A call that cluster mode refuses or needs (a member-only operation on
    /// a standalone store, a root that belongs to a cluster, a name reused,
    /// a region assigned elsewhere, no source of cluster-unique ids).
    #[error("{0}")]
    ClusterRefused(String),
    /// The store found one of its own invariants broken (a bug, not the
    /// caller's doing): the operation is refused before it changes anything.
    #[error("internal error: {0}")]
    Internal(String),
    /// A commit refused because this server can no longer prove it owns
    /// the region (`StoreOptions::commit_fence`).
    #[error("commit refused, this server may no longer own its regions: {0}")]
    Fenced(String),
}

impl StoreError {
    /// An I/O error of `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io { op, path: path.into(), source }
    }

    /// A corruption found in `path` at `offset`.
    pub fn corruption(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> StoreError {
        StoreError::Corruption { path: path.into(), offset, reason: reason.into() }
    }

    /// Whether this refusal comes from a region being replaced by a split or
    /// merge, so that looking the row up again a moment later succeeds.
    pub fn is_region_moving(&self) -> bool {
        matches!(self, StoreError::NotServingRegion { state, .. } if state.is_being_replaced())
    }

    /// Whether this is a full-disk error.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.raw_os_error() == Some(28))
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
