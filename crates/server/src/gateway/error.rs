//! `GatewayError`: why a call through the [`super::Gateway`] failed,
//! whatever protocol it came in by. Each protocol adapter turns it into its
//! own exception (Thrift: `thrift::errors::from_gateway`); the messages of
//! the variants that are HBase exceptions start with HBase's class name, as
//! HBase's own messages do.

use store::StoreError;

/// Which exception the server holding a region answered a forwarded call
/// with (the peer protocol is Thrift v1: one of its three exceptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    IoError,
    IllegalArgument,
    AlreadyExists,
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The store refused or failed the call (`crate::errors::exception`
    /// says which HBase exception that is).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A malformed request: HBase's IllegalArgumentException.
    #[error("{0}")]
    IllegalArgument(String),
    /// A filter string that does not parse (the cause).
    #[error("{0}")]
    UnparsableFilter(String),
    /// A row read is over `hbase.table.max.rowsize`.
    #[error(
        "org.apache.hadoop.hbase.regionserver.RowTooBigException: row of {bytes} bytes is over \
         hbase.table.max.rowsize ({limit})"
    )]
    RowTooBig { bytes: usize, limit: usize },
    /// The rows one multi-row get asked for are over the result size limit.
    #[error(
        "org.apache.hadoop.hbase.DoNotRetryIOException: the rows asked for hold more than \
         hbase.server.scanner.max.result.size ({limit} bytes); ask for fewer rows at a time"
    )]
    ResultTooBig { limit: usize },
    /// No more scanners may be opened (the limit says which).
    #[error("{0}")]
    ScannerLimit(String),
    /// No region of the table holds the row (a table being split or
    /// merged right now, or a row key from another table's meta row).
    #[error("no region of {table} holds {row:?}")]
    NoRegion { table: String, row: String },
    /// No open scanner has this id (never opened, closed, or its lease ran out).
    #[error("scanner ID is invalid")]
    UnknownScanner,
    /// The server holding the region answered with an error.
    #[error("{message}")]
    Remote { kind: RemoteKind, message: String },
    /// The server holding the region could not be reached.
    #[error(
        "org.apache.hadoop.hbase.NotServingRegionException: the server holding region {region} ({owner}) could \
         not be reached: {cause}"
    )]
    Unreachable { region: String, owner: String, cause: String },
    /// A region a scan reaches is not served by the server it was sent to,
    /// or by any live server now (in transition): the client retries.
    #[error("org.apache.hadoop.hbase.NotServingRegionException: {0}")]
    NotServing(String),
    /// A table's DDL was done here but not every other server of the
    /// cluster confirmed it.
    #[error(
        "table {table} is {done} on this server, but not every other server confirmed it (it retries at the \
         master's next pass): {failed}"
    )]
    NotEverywhere { table: String, done: &'static str, failed: String },
    /// A request the peer protocol cannot carry to the server holding the
    /// region (see `peer::forward`).
    #[error("org.apache.hadoop.hbase.DoNotRetryIOException: {0}")]
    CannotForward(String),
}

pub type GatewayResult<T> = Result<T, GatewayError>;
