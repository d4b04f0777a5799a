//! The two kinds of failure on this wire.
//!
//! * [`RpcError`]: an exception the server answers a call with. HBase's client
//!   decides whether to retry, relocate a region or give up from the Java
//!   class name it carries, so the constructors name HBase's own classes.
//! * [`WireError`]: bytes that cannot be HBase RPC (a bad preamble, a frame
//!   over the size limit, a truncated header, a malformed cell block) or a
//!   socket failure. Decoding returns it; it never panics.
//!
//! Thread safety: both are plain values (`Send + Sync`), built and read by one
//! thread at a time.

use std::borrow::Cow;

use crate::pb::hbase::pb::ExceptionResponse;

/// An exception sent to the client in `ResponseHeader.exception`: HBase's
/// class name, the message, whether the client may retry, and for
/// `RegionMovedException` where the region went.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class_name}: {message}")]
pub struct RpcError {
    class_name: Cow<'static, str>,
    message: String,
    do_not_retry: bool,
    moved_to: Option<(String, u32)>,
    /// Raised by the RPC layer itself rather than by a service: sent with
    /// the bare message (see `to_exception_response`).
    from_rpc_layer: bool,
}

/// HBase's exception classes this crate names (all in the client's jar, so
/// the client can instantiate them when it unwraps the remote exception).
pub mod class {
    pub const IO: &str = "java.io.IOException";
    pub const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";
    pub const NOT_SERVING_REGION: &str = "org.apache.hadoop.hbase.NotServingRegionException";
    pub const REGION_MOVED: &str = "org.apache.hadoop.hbase.exceptions.RegionMovedException";
    pub const REGION_OPENING: &str = "org.apache.hadoop.hbase.exceptions.RegionOpeningException";
    pub const TABLE_NOT_FOUND: &str = "org.apache.hadoop.hbase.TableNotFoundException";
    pub const UNKNOWN_SCANNER: &str = "org.apache.hadoop.hbase.UnknownScannerException";
    pub const CALL_QUEUE_TOO_BIG: &str = "org.apache.hadoop.hbase.CallQueueTooBigException";
    pub const REQUEST_TOO_BIG: &str = "org.apache.hadoop.hbase.exceptions.RequestTooBigException";
    pub const SERVER_NOT_RUNNING_YET: &str = "org.apache.hadoop.hbase.ipc.ServerNotRunningYetException";
    pub const FATAL_CONNECTION: &str = "org.apache.hadoop.hbase.ipc.FatalConnectionException";
    pub const WRONG_VERSION: &str = "org.apache.hadoop.hbase.ipc.WrongVersionException";
    pub const BAD_AUTH: &str = "org.apache.hadoop.hbase.ipc.BadAuthException";
    pub const UNSUPPORTED_CELL_CODEC: &str = "org.apache.hadoop.hbase.ipc.UnsupportedCellCodecException";
    pub const UNSUPPORTED_COMPRESSION: &str = "org.apache.hadoop.hbase.ipc.UnsupportedCompressionCodecException";
    pub const SECURITY_NOT_ENABLED: &str = "org.apache.hadoop.hbase.ipc.SecurityNotEnabledException";
}

impl RpcError {
    /// Any HBase (or Java) exception class; `do_not_retry` must agree with
    /// whether that class extends `DoNotRetryIOException`.
    pub fn new(class_name: impl Into<Cow<'static, str>>, message: impl Into<String>, do_not_retry: bool) -> Self {
        Self {
            class_name: class_name.into(),
            message: message.into(),
            do_not_retry,
            moved_to: None,
            from_rpc_layer: false,
        }
    }

    /// An exception the RPC layer raises itself (a refused preamble or
    /// connection header, a request too big, a full queue, an unreadable
    /// call).
    pub(crate) fn rpc_layer(class_name: &'static str, message: impl Into<String>, do_not_retry: bool) -> Self {
        Self { from_rpc_layer: true, ..Self::new(class_name, message, do_not_retry) }
    }

    /// A plain `java.io.IOException`: the client retries.
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(class::IO, message, false)
    }

    /// `DoNotRetryIOException`: the client fails the operation at once.
    pub fn do_not_retry(message: impl Into<String>) -> Self {
        Self::new(class::DO_NOT_RETRY, message, true)
    }

    /// The answer to a service or method this server does not implement. A
    /// `DoNotRetryIOException` (HBase itself answers an unknown method so),
    /// so the client fails fast instead of retrying until its timeout.
    pub fn not_implemented(service: &str, method: &str) -> Self {
        Self::do_not_retry(format!("{service}.{method} is not implemented"))
    }

    /// `NotServingRegionException`: the client drops its cached location of
    /// the region and looks it up again in `hbase:meta`.
    pub fn not_serving_region(region_name: &str) -> Self {
        Self::new(class::NOT_SERVING_REGION, format!("Region {region_name} is not online"), false)
    }

    /// `RegionMovedException`: the region is now on `hostname:port`. The
    /// client rebuilds the exception from its message (the constructor from
    /// a string parses `hostname=`, `port=`, `startCode=` and
    /// `locationSeqNum=`), so the message has exactly HBase's layout; the
    /// host and port also travel in `ExceptionResponse`, as HBase sends them.
    pub fn region_moved(hostname: &str, port: u32, start_code: i64, location_seq_num: i64) -> Self {
        let message = format!(
            "Region moved to: hostname={hostname} port={port} startCode={start_code}. As of locationSeqNum={location_seq_num}."
        );
        Self { moved_to: Some((hostname.to_owned(), port)), ..Self::new(class::REGION_MOVED, message, false) }
    }

    /// `RegionOpeningException` (a `NotServingRegionException`): the region
    /// is opening on this server; hbase-client retries after its pause (as
    /// HBase's region server answers a region it is opening).
    pub fn region_opening(region_name: &str) -> Self {
        Self::new(class::REGION_OPENING, format!("Region {region_name} is opening on this server"), false)
    }

    /// `TableNotFoundException` (a `DoNotRetryIOException`).
    pub fn table_not_found(table: &str) -> Self {
        Self::new(class::TABLE_NOT_FOUND, table, true)
    }

    /// `UnknownScannerException` (a `DoNotRetryIOException`): the scanner id
    /// is unknown or expired; the client reopens the scan.
    pub fn unknown_scanner(message: impl Into<String>) -> Self {
        Self::new(class::UNKNOWN_SCANNER, message, true)
    }

    /// `ServerNotRunningYetException`: the client waits and retries.
    pub fn server_not_running_yet(message: impl Into<String>) -> Self {
        Self::new(class::SERVER_NOT_RUNNING_YET, message, false)
    }

    pub fn class_name(&self) -> &str {
        &self.class_name
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn is_do_not_retry(&self) -> bool {
        self.do_not_retry
    }

    /// The wire form. A service's exception carries `"<class>: <message>"`
    /// in `stack_trace`, as HBase's handlers send the stringified exception,
    /// which begins so (the client makes it the message of the exception it
    /// rebuilds). One the RPC layer raises carries the bare message, as
    /// HBase's RPC layer sends it: the client matches e.g. an old server's
    /// `Expected HEADER=` by prefix.
    pub(crate) fn to_exception_response(&self) -> ExceptionResponse {
        let stack_trace = if self.from_rpc_layer { self.message.clone() } else { self.to_string() };
        ExceptionResponse {
            exception_class_name: Some(self.class_name.to_string()),
            stack_trace: Some(stack_trace),
            hostname: self.moved_to.as_ref().map(|(h, _)| h.clone()),
            port: self.moved_to.as_ref().map(|&(_, p)| p as i32),
            do_not_retry: Some(self.do_not_retry),
            server_overloaded: None,
        }
    }
}

/// Bytes that are not (acceptable) HBase RPC, or a failed socket.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("the connection preamble is not HBase RPC: expected HBas, got {0:?}")]
    BadMagic([u8; 4]),
    #[error("RPC version {0} is not supported (the server speaks 0)")]
    WrongVersion(u8),
    #[error("authentication method {0} is not supported (the server accepts SIMPLE, 80)")]
    BadAuth(u8),
    #[error("a frame of {length} bytes is over the limit of {max} (hbase.ipc.max.request.size)")]
    FrameTooLarge { length: u64, max: usize },
    #[error("truncated {what}: {need} bytes needed, {have} left")]
    Truncated { what: &'static str, need: usize, have: usize },
    #[error("malformed {what}: {source}")]
    Protobuf {
        what: &'static str,
        #[source]
        source: prost::DecodeError,
    },
    #[error("malformed cell at byte {offset} of the cell block: {reason}")]
    MalformedCell { offset: usize, reason: String },
    #[error("cell block codec {0:?} is not supported (KeyValueCodec and KeyValueCodecWithTags are)")]
    UnsupportedCodec(String),
    #[error("cell block compressor {0:?} is not supported (send cell blocks uncompressed)")]
    UnsupportedCompressor(String),
    #[error("the connection header names no service")]
    NoService,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_error_carries_the_class_and_message_as_the_stack_trace() {
        let e = RpcError::not_implemented("ClientService", "Frobnicate");
        let wire = e.to_exception_response();
        assert_eq!(wire.exception_class_name(), class::DO_NOT_RETRY);
        assert_eq!(
            wire.stack_trace(),
            "org.apache.hadoop.hbase.DoNotRetryIOException: ClientService.Frobnicate is not implemented"
        );
        assert!(wire.do_not_retry());
        assert!(wire.hostname.is_none());
    }

    #[test]
    fn region_moved_has_the_layout_hbase_parses_and_the_destination_fields() {
        let e = RpcError::region_moved("rs2.example", 16020, 1700, 42);
        let wire = e.to_exception_response();
        assert_eq!(wire.hostname(), "rs2.example");
        assert_eq!(wire.port(), 16020);
        assert!(!wire.do_not_retry());
        // RegionMovedException(String) takes hostname= and port= up to the
        // next space, startCode= and locationSeqNum= up to the next dot.
        let m = wire.stack_trace();
        assert!(m.contains("hostname=rs2.example port=16020 startCode=1700."), "{m}");
        assert!(m.contains("locationSeqNum=42."), "{m}");
    }

    #[test]
    fn an_rpc_layer_error_carries_the_bare_message() {
        let e = RpcError::rpc_layer(class::FATAL_CONNECTION, "Expected HEADER=HBas but received HEADER=GET ", true);
        assert_eq!(e.to_exception_response().stack_trace(), "Expected HEADER=HBas but received HEADER=GET ");
    }
}
