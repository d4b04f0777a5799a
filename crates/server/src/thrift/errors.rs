//! How errors reach a Thrift client: as the exceptions HBase's Thrift
//! server raises (IOError, IllegalArgument, AlreadyExists, and a
//! TApplicationException for a filter that does not parse), from the one
//! table of `crate::errors` for store errors and from the gateway's own.

use store::StoreError;

use crate::errors::{ThriftKind, client_message, exception};
use crate::gateway::{GatewayError, RemoteKind};
use crate::thrift::hbase_thrift::{AlreadyExists, IOError, IllegalArgument};

/// An `IOError` carrying `message` (logged: a client's call failed).
pub fn io_error(message: impl Into<String>) -> thrift::Error {
    let message = message.into();
    tracing::info!(exception = "IOError", error = %message, "client call failed");
    thrift::Error::User(Box::new(IOError::new(message)))
}

/// An `IllegalArgument` carrying `message` (logged: a client's call failed).
pub fn illegal_argument(message: impl Into<String>) -> thrift::Error {
    let message = message.into();
    tracing::info!(exception = "IllegalArgument", error = %message, "client call failed");
    thrift::Error::User(Box::new(IllegalArgument::new(message)))
}

/// A filter string that does not parse. HBase's gateway answers it with a
/// TApplicationException (INTERNAL_ERROR, "Internal error processing
/// scannerOpenWithScan"): its ParseFilter throws an unchecked
/// IllegalArgumentException that the handler does not catch. Clients
/// written against HBase catch that exception (happybase raises it as
/// thriftpy2's `TApplicationException`; an IOError would escape their
/// handler), so ours is the same exception, with HBase's text followed by
/// the cause, which HBase's omits (logged: a client's call failed).
pub fn unparsable_filter(call: &str, cause: impl std::fmt::Display) -> thrift::Error {
    let message = format!("Internal error processing {call}: {cause}");
    tracing::info!(exception = "TApplicationException", error = %message, "client call failed");
    thrift::Error::Application(thrift::ApplicationError::new(thrift::ApplicationErrorKind::InternalError, message))
}

/// For calls whose IDL declares only IOError: an IllegalArgument becomes
/// an IOError naming Java's IllegalArgumentException, as HBase's server
/// wraps it, instead of an undeclared exception the client cannot decode.
pub fn io_only<T>(r: thrift::Result<T>) -> thrift::Result<T> {
    r.map_err(|e| match e {
        // Logged once already, when the IllegalArgument was made.
        thrift::Error::User(u) => match u.downcast::<IllegalArgument>() {
            Ok(ia) => thrift::Error::User(Box::new(IOError::new(format!(
                "java.lang.IllegalArgumentException: {}",
                ia.message.unwrap_or_default()
            )))),
            Err(u) => thrift::Error::User(u),
        },
        other => other,
    })
}

/// The Thrift exception HBase raises for this store error ([`exception`]).
pub fn from_store(e: StoreError) -> thrift::Error {
    let message = client_message(&e);
    match exception(&e).thrift {
        ThriftKind::AlreadyExists => thrift::Error::User(Box::new(AlreadyExists::new(message))),
        ThriftKind::IllegalArgument => illegal_argument(message),
        ThriftKind::IoError => io_error(message),
    }
}

/// The Thrift exception for a call through the gateway that failed; `call`
/// names the Thrift call (a TApplicationException says which failed).
pub fn from_gateway(call: &str, e: GatewayError) -> thrift::Error {
    match e {
        GatewayError::Store(e) => from_store(e),
        GatewayError::IllegalArgument(m) => illegal_argument(m),
        GatewayError::UnparsableFilter(cause) => unparsable_filter(call, cause),
        GatewayError::UnknownScanner => illegal_argument(e.to_string()),
        // The owner's own answer, as it gave it.
        GatewayError::Remote { kind, message } => {
            tracing::info!(?kind, error = %message, "a call another server answered failed");
            match kind {
                RemoteKind::IoError => thrift::Error::User(Box::new(IOError::new(message))),
                RemoteKind::IllegalArgument => thrift::Error::User(Box::new(IllegalArgument::new(message))),
                RemoteKind::AlreadyExists => thrift::Error::User(Box::new(AlreadyExists::new(message))),
            }
        }
        other => io_error(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Exception;

    fn kind(e: thrift::Error) -> &'static str {
        let thrift::Error::User(u) = e else { return "other" };
        if u.downcast_ref::<IOError>().is_some() {
            "IOError"
        } else if u.downcast_ref::<IllegalArgument>().is_some() {
            "IllegalArgument"
        } else if u.downcast_ref::<AlreadyExists>().is_some() {
            "AlreadyExists"
        } else {
            "other"
        }
    }

    #[test]
    fn store_errors_map_to_hbase_exceptions() {
        assert_eq!(kind(from_store(StoreError::TableExists("t".into()))), "AlreadyExists");
        assert_eq!(kind(from_store(StoreError::TableNotFound("t".into()))), "IOError");
        assert_eq!(kind(from_store(StoreError::InvalidArgument("x".into()))), "IllegalArgument");
        assert_eq!(kind(from_store(StoreError::IllegalName("x".into()))), "IllegalArgument");
        assert_eq!(kind(from_store(StoreError::NoSuchFamily { table: "t".into(), family: "f".into() })), "IOError");
        assert_eq!(kind(from_store(StoreError::ClusterRefused("x".into()))), "IOError");
    }

    #[test]
    fn refused_requests_and_settings_are_illegal_arguments() {
        let refused = [
            StoreError::InvalidOption { name: "block size", reason: "0 is outside 1..=16".into() },
            StoreError::InvalidDescriptor { what: "table \"t\"".into(), reason: "no family".into() },
            StoreError::WrongRegion { row: "r".into(), region: "0000000000000001".into(), table: "t".into() },
            StoreError::EmptyMutation,
            StoreError::EmptySplitKey,
            StoreError::MalformedCell { place: "store file /x".into(), reason: "short".into() },
            StoreError::TooLarge { what: "WAL entry", len: 2, limit: 1 },
            StoreError::MergeRefused { a: "a".into(), b: "b".into(), reason: "not adjacent".into() },
            StoreError::RegionNotClosed { region: "r".into(), state: store::RegionState::Open },
            StoreError::AlterRefused { table: "t".into(), reason: "it is enabled".into() },
        ];
        for e in refused {
            let message = e.to_string();
            assert_eq!(exception(&e), Exception { class: None, thrift: ThriftKind::IllegalArgument, http: 400 });
            let thrift::Error::User(u) = from_store(e) else { panic!("a user exception") };
            let ia = u.downcast_ref::<IllegalArgument>().expect("IllegalArgument");
            assert_eq!(ia.message.as_deref(), Some(message.as_str()), "the message as it is");
        }
    }

    #[test]
    fn messages_keep_hbases_wording() {
        let text = |e: thrift::Error| match e {
            thrift::Error::User(u) => u
                .downcast_ref::<IOError>()
                .and_then(|x| x.message.clone())
                .or_else(|| u.downcast_ref::<IllegalArgument>().and_then(|x| x.message.clone()))
                .or_else(|| u.downcast_ref::<AlreadyExists>().and_then(|x| x.message.clone()))
                .unwrap_or_default(),
            _ => String::new(),
        };
        assert_eq!(
            text(from_store(StoreError::TableNotFound("t".into()))),
            "org.apache.hadoop.hbase.TableNotFoundException: t"
        );
        assert_eq!(
            text(from_store(StoreError::TableExists("t".into()))),
            "org.apache.hadoop.hbase.TableExistsException: t"
        );
        assert_eq!(text(from_store(StoreError::InvalidArgument("bad".into()))), "bad");
    }
}
