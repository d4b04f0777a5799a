//! Gateway errors as the HBase exceptions hbase-client expects: the class
//! from `crate::errors::exception` (the one table every protocol shares),
//! and whether the client may retry, which must agree with whether HBase's
//! class extends `DoNotRetryIOException`.
//!
//! Thread safety: pure functions.

use hbase_rpc::RpcError;
use hbase_rpc::pb::hbase::pb::NameBytesPair;

use crate::errors::{exception, message_after_class};
use crate::gateway::GatewayError;

/// HBase's exception classes that are `DoNotRetryIOException`s.
fn do_not_retry_class(class: &str) -> bool {
    [
        "TableExistsException",
        "TableNotFoundException",
        "NamespaceExistException",
        "NamespaceNotFoundException",
        "ConstraintException",
        "TableNotEnabledException",
        "TableNotDisabledException",
        "NoSuchColumnFamilyException",
        "UnknownRegionException",
        "RowTooBigException",
    ]
    .iter()
    .any(|c| class.ends_with(c))
}

/// `message` without a leading `class: ` (the gateway's messages of HBase
/// exceptions begin with their class; the exception carries it already).
fn bare<'a>(message: &'a str, class: &str) -> &'a str {
    message.strip_prefix(class).and_then(|m| m.strip_prefix(": ")).unwrap_or(message)
}

pub fn from_gateway(e: GatewayError) -> RpcError {
    const NOT_SERVING: &str = hbase_rpc::error::class::NOT_SERVING_REGION;
    match e {
        // Opening here: HBase's answer for it, which the client retries.
        GatewayError::Store(store::StoreError::NotServingRegion { region, state: store::RegionState::Opening }) => {
            RpcError::region_opening(&region)
        }
        GatewayError::Store(s) => {
            let ex = exception(&s);
            match ex.class {
                Some(class) => RpcError::new(class, message_after_class(&s), do_not_retry_class(class)),
                None if ex.thrift == crate::errors::ThriftKind::IllegalArgument => {
                    RpcError::do_not_retry(s.to_string())
                }
                None if matches!(s, store::StoreError::NotACounter { .. }) => RpcError::do_not_retry(s.to_string()),
                None => RpcError::io(s.to_string()),
            }
        }
        GatewayError::RowTooBig { .. } => {
            const CLASS: &str = "org.apache.hadoop.hbase.regionserver.RowTooBigException";
            RpcError::new(CLASS, bare(&e.to_string(), CLASS).to_string(), true)
        }
        GatewayError::UnknownScanner => RpcError::unknown_scanner(e.to_string()),
        GatewayError::NoRegion { .. } => RpcError::new(NOT_SERVING, e.to_string(), false),
        GatewayError::NotServing(m) => RpcError::new(NOT_SERVING, m, false),
        GatewayError::Unreachable { .. } => {
            RpcError::new(NOT_SERVING, bare(&e.to_string(), NOT_SERVING).to_string(), false)
        }
        GatewayError::ScannerLimit(_) | GatewayError::NotEverywhere { .. } | GatewayError::Remote { .. } => {
            RpcError::io(e.to_string())
        }
        GatewayError::IllegalArgument(_)
        | GatewayError::UnparsableFilter(_)
        | GatewayError::ResultTooBig { .. }
        | GatewayError::CannotForward(_) => {
            RpcError::do_not_retry(bare(&e.to_string(), hbase_rpc::error::class::DO_NOT_RETRY).to_string())
        }
    }
}

/// An exception as one action of a `Multi` carries it: the class and the
/// message, which the client passes to the class's `(String)` constructor.
pub fn name_bytes_pair(e: &RpcError) -> NameBytesPair {
    NameBytesPair { name: e.class_name().to_string(), value: Some(e.message().as_bytes().to_vec().into()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_hbase_s_class_and_retry_rule() {
        let e = from_gateway(GatewayError::Store(store::StoreError::TableNotFound("t".into())));
        assert_eq!(
            (e.class_name(), e.message(), e.is_do_not_retry()),
            ("org.apache.hadoop.hbase.TableNotFoundException", "t", true)
        );
        let e = from_gateway(GatewayError::NoRegion { table: "t".into(), row: "r".into() });
        assert_eq!((e.class_name(), e.is_do_not_retry()), (hbase_rpc::error::class::NOT_SERVING_REGION, false));
        let e = from_gateway(GatewayError::IllegalArgument("bad".into()));
        assert_eq!(
            (e.class_name(), e.message(), e.is_do_not_retry()),
            (hbase_rpc::error::class::DO_NOT_RETRY, "bad", true)
        );
        assert_eq!(name_bytes_pair(&e).value.as_deref(), Some(&b"bad"[..]));
    }

    /// The classes a region in a move is answered with, and how
    /// hbase-client 2.6 treats each: all retried (none extends
    /// `DoNotRetryIOException`).
    #[test]
    fn a_region_in_a_move_is_answered_with_a_class_the_client_retries() {
        let not_serving = |state| {
            from_gateway(GatewayError::Store(store::StoreError::NotServingRegion { region: "r1".into(), state }))
        };
        let e = not_serving(store::RegionState::Opening);
        assert_eq!(
            (e.class_name(), e.is_do_not_retry()),
            ("org.apache.hadoop.hbase.exceptions.RegionOpeningException", false)
        );
        for state in [
            store::RegionState::Closing,
            store::RegionState::Closed,
            store::RegionState::Offline,
            store::RegionState::Splitting,
            store::RegionState::Merging,
        ] {
            let e = not_serving(state);
            assert_eq!((e.class_name(), e.is_do_not_retry()), (hbase_rpc::error::class::NOT_SERVING_REGION, false));
        }
        let e = from_gateway(GatewayError::NotServing("moving".into()));
        assert_eq!((e.class_name(), e.is_do_not_retry()), (hbase_rpc::error::class::NOT_SERVING_REGION, false));
        let e = from_gateway(GatewayError::Store(store::StoreError::WritesStopped("flushing".into())));
        assert_eq!((e.class_name(), e.is_do_not_retry()), ("org.apache.hadoop.hbase.RegionTooBusyException", false));
    }
}
