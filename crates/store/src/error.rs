//! Typed errors of the store. Every failure names what failed and where
//! (the file, the table, the region), so that an operator can act on it.
//!
//! One kind per cause. Each variant's documentation names the HBase
//! exception a client sees for it; the one table from kind to exception
//! class, Thrift exception and HTTP status is `exception()` in the server's
//! `errors.rs`.

use std::path::PathBuf;

use memstore::MemStoreError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    /// A file system call failed (`op` on `path`). HBase's IOException
    /// (Thrift `IOError`, HTTP 500).
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    /// Durable data that does not read back as written: a bad checksum, a
    /// truncated record, a file numbering that cannot be. HBase's
    /// IOException (its CorruptHFileException is one; Thrift `IOError`,
    /// HTTP 500).
    #[error("corrupt file {path} at offset {offset}: {reason}")]
    Corruption { path: PathBuf, offset: u64, reason: String },
    /// A metadata file's value could not be encoded (`layout::write_json`).
    /// HBase's IOException (Thrift `IOError`, HTTP 500).
    #[error("cannot encode {path}: {source}")]
    Encode { path: PathBuf, source: serde_json::Error },
    /// The memstore refused the input (a cell over
    /// `hbase.server.keyvalue.maxsize`, an empty row key, a bad policy
    /// name). HBase's IllegalArgumentException (Thrift `IllegalArgument`,
    /// HTTP 400).
    #[error(transparent)]
    MemStore(#[from] MemStoreError),
    /// HBase's TableExistsException (Thrift `AlreadyExists`, HTTP 409).
    #[error("table {0:?} already exists")]
    TableExists(String),
    /// HBase's NamespaceExistException (Thrift `AlreadyExists`, HTTP 409).
    #[error("namespace {0:?} already exists")]
    NamespaceExists(String),
    /// HBase's NamespaceNotFoundException (Thrift `IOError`, HTTP 404).
    #[error("namespace {0:?} not found")]
    NamespaceNotFound(String),
    /// A namespace that cannot be dropped: `default` and `hbase` always
    /// exist, and only an empty namespace can go (HBase's
    /// ConstraintException; Thrift `IOError`, HTTP 409).
    #[error("{0}")]
    NamespaceConstraint(String),
    /// HBase's TableNotFoundException (Thrift `IOError`, HTTP 404).
    #[error("table {0:?} not found")]
    TableNotFound(String),
    /// HBase's TableNotEnabledException (Thrift `IOError`, HTTP 400).
    #[error("table {0:?} is disabled")]
    TableDisabled(String),
    /// HBase's TableNotDisabledException (Thrift `IOError`, HTTP 409).
    #[error("table {0:?} is enabled; disable it first")]
    TableEnabled(String),
    /// HBase's NoSuchColumnFamilyException (Thrift `IOError`, HTTP 400).
    #[error("column family {family:?} does not exist in table {table:?}")]
    NoSuchFamily { table: String, family: String },
    /// A call that breaks the contract of one of the store's own APIs — a
    /// store-file writer used after it failed or given cells out of order,
    /// a WAL entry on the region id reserved for sync marks, a relative or
    /// non-UTF-8 HDFS path — refused before anything changes: the caller's
    /// bug, not a client's input. Maps to HBase's IllegalArgumentException
    /// (Thrift `IllegalArgument`, HTTP 400).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A setting the store cannot work with: a WAL or store-file option out
    /// of range, an unknown compression or bloom filter name, a malformed
    /// root URI. `name` is the setting's. Maps to HBase's
    /// IllegalArgumentException (Thrift `IllegalArgument`, HTTP 400).
    #[error("{name}: {reason}")]
    InvalidOption { name: &'static str, reason: String },
    /// A table or column-family descriptor that breaks a rule (no family,
    /// a family declared twice, zero versions, a block size out of range,
    /// an unknown flat layout). `what` names the table or family. Maps to
    /// HBase's IllegalArgumentException, as its descriptor builders raise it
    /// (Thrift `IllegalArgument`, HTTP 400).
    #[error("{what}: {reason}")]
    InvalidDescriptor { what: String, reason: String },
    /// A row sent to a region whose key range does not hold it (HBase's
    /// WrongRegionException; reaches clients as IllegalArgumentException:
    /// Thrift `IllegalArgument`, HTTP 400).
    #[error("row {row:?} is outside region {region} of table {table:?}")]
    WrongRegion { row: String, region: String, table: String },
    /// A row mutation with no change in it (HBase's IllegalArgumentException,
    /// "No columns to insert"; Thrift `IllegalArgument`, HTTP 400).
    #[error("a row mutation needs at least one change")]
    EmptyMutation,
    /// An empty key among a new table's split keys (HBase's
    /// IllegalArgumentException, "Empty split key must not be passed in the
    /// split keys."; Thrift `IllegalArgument`, HTTP 400).
    #[error("split keys must not be empty")]
    EmptySplitKey,
    /// Encoded cells that do not parse, handed to the WAL or a store-file
    /// writer: refused before anything is written, since replay or a read
    /// would have to call them corruption. `place` says where (the WAL entry
    /// and byte offset, or the store file). Maps to HBase's
    /// IllegalArgumentException (Thrift `IllegalArgument`, HTTP 400).
    #[error("malformed cell in {place}: {reason}")]
    MalformedCell { place: String, reason: String },
    /// A WAL entry, a store-file cell or a data block larger than its
    /// format can hold (HBase refuses an oversized cell with a
    /// DoNotRetryIOException; here, as before, IllegalArgumentException:
    /// Thrift `IllegalArgument`, HTTP 400).
    #[error("{what} of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge { what: &'static str, len: u64, limit: u64 },
    /// A merge the two regions cannot make: different tables, not adjacent,
    /// or one still reading through references (HBase's
    /// MergeRegionException; reaches clients as IllegalArgumentException:
    /// Thrift `IllegalArgument`, HTTP 400).
    #[error("cannot merge regions {a} and {b}: {reason}")]
    MergeRefused { a: String, b: String, reason: String },
    /// An open of a region that is not CLOSED (HBase's master refuses to
    /// assign a region in another state; reaches clients as
    /// IllegalArgumentException: Thrift `IllegalArgument`, HTTP 400).
    #[error("region {region} is {state}, not CLOSED; only a closed region can be opened")]
    RegionNotClosed { region: String, state: crate::region::state::RegionState },
    /// An alter the table's state refuses: enabled while in a cluster, or a
    /// region splitting, merging, opening or closing (HBase's
    /// TableNotDisabledException / region in transition; reaches clients as
    /// IllegalArgumentException: Thrift `IllegalArgument`, HTTP 400).
    #[error("cannot alter table {table}: {reason}")]
    AlterRefused { table: String, reason: String },
    /// A table, family or server name that breaks HBase's naming rules, or
    /// cannot be a path segment (`names.rs`). HBase's
    /// IllegalArgumentException (Thrift `IllegalArgument`, HTTP 400).
    #[error("{0}")]
    IllegalName(String),
    /// An increment found a value that is not an 8-byte counter (HBase's
    /// DoNotRetryIOException "Field is not a long"; Thrift `IOError`, HTTP
    /// 500).
    #[error("field {column} is not a long, it's {len} bytes wide")]
    NotACounter { column: String, len: usize },
    /// No region has this encoded name here (HBase's
    /// `UnknownRegionException`; Thrift `IOError`, HTTP 404).
    #[error("no region named {0:?} (regions are named by their encoded id)")]
    UnknownRegion(String),
    /// The region holding the row is not OPEN here (HBase's
    /// `NotServingRegionException`; Thrift `IOError`, HTTP 409).
    #[error("region {region} is not serving requests (state {state})")]
    NotServingRegion { region: String, state: crate::region::state::RegionState },
    /// The store is closed (HBase's IOException, as a stopping region
    /// server raises it; Thrift `IOError`, HTTP 503).
    #[error("the store is closed")]
    Closed,
    /// Writes are held back (memstore over its blocking limit, the WAL
    /// unable to write). HBase's RegionTooBusyException (Thrift `IOError`,
    /// HTTP 503).
    #[error("writes are stopped: {0}")]
    WritesStopped(String),
    /// A call that cluster mode refuses or needs (a member-only request that
    /// reached a standalone store, `Store::require_member`; a root that
    /// belongs to a cluster, a name reused, a region assigned elsewhere, no
    /// source of cluster-unique ids). HBase's IOException (Thrift
    /// `IOError`, HTTP 409).
    #[error("{0}")]
    ClusterRefused(String),
    /// The store found one of its own invariants broken (a bug, not the
    /// caller's doing): the operation is refused before it changes anything.
    /// HBase's IOException (Thrift `IOError`, HTTP 500).
    #[error("internal error: {0}")]
    Internal(String),
    /// A read limited to the block cache ([`crate::storefile::BlockReads::CacheOnly`])
    /// needed a block the cache does not hold; nothing is wrong, the read
    /// must be done by a caller that may wait on the file. Never returned
    /// by reads that may read files.
    #[error("block at {offset} of {path} is not in the block cache")]
    NotInCache { path: PathBuf, offset: u64 },
    /// A commit refused because this server can no longer prove it owns
    /// the region (`StoreOptions::commit_fence`). HBase's IOException, as a
    /// region server that lost its ZooKeeper session raises it (Thrift
    /// `IOError`, HTTP 503).
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
