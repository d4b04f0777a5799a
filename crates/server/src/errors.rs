//! How store errors reach a Thrift client: as the exceptions HBase's Thrift
//! server raises (IOError, IllegalArgument, AlreadyExists), with HBase's
//! exception class name in front of the message so that clients that match
//! on it (as HBase users' scripts do) keep working.

use store::StoreError;

use crate::hbase_thrift::{AlreadyExists, IOError, IllegalArgument};

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

/// Which Thrift exception carries an error to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThriftKind {
    IoError,
    IllegalArgument,
    AlreadyExists,
}

/// How a store error reaches a client: HBase's exception class (`None`:
/// the message goes as it is, a plain `IOException`), the Thrift exception
/// that carries it, and the status code of an admin call that fails with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exception {
    pub class: Option<&'static str>,
    pub thrift: ThriftKind,
    pub http: u16,
}

/// The one table from store error to what HBase's clients see; the Thrift
/// handler and the admin calls both answer from it.
pub fn exception(e: &StoreError) -> Exception {
    use ThriftKind::{AlreadyExists, IllegalArgument, IoError};
    let (class, thrift, http) = match e {
        StoreError::TableExists(_) => (Some("org.apache.hadoop.hbase.TableExistsException"), AlreadyExists, 409),
        // A request or a setting the store refuses as malformed (the
        // memstore's: a cell over hbase.server.keyvalue.maxsize, an empty row
        // key, ...), or a call its state refuses: HBase's
        // IllegalArgumentException, the message as it is.
        StoreError::InvalidArgument(_)
        | StoreError::InvalidOption { .. }
        | StoreError::InvalidDescriptor { .. }
        | StoreError::IllegalName(_)
        | StoreError::MemStore(_)
        | StoreError::WrongRegion { .. }
        | StoreError::EmptyMutation
        | StoreError::EmptySplitKey
        | StoreError::MalformedCell { .. }
        | StoreError::TooLarge { .. }
        | StoreError::MergeRefused { .. }
        | StoreError::RegionNotClosed { .. }
        | StoreError::AlterRefused { .. } => (None, IllegalArgument, 400),
        StoreError::TableNotFound(_) => (Some("org.apache.hadoop.hbase.TableNotFoundException"), IoError, 404),
        StoreError::TableDisabled(_) => (Some("org.apache.hadoop.hbase.TableNotEnabledException"), IoError, 400),
        StoreError::TableEnabled(_) => (Some("org.apache.hadoop.hbase.TableNotDisabledException"), IoError, 409),
        StoreError::NoSuchFamily { .. } => {
            (Some("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"), IoError, 400)
        }
        StoreError::NotServingRegion { .. } => {
            (Some("org.apache.hadoop.hbase.NotServingRegionException"), IoError, 409)
        }
        StoreError::UnknownRegion(_) => (Some("org.apache.hadoop.hbase.UnknownRegionException"), IoError, 404),
        StoreError::WritesStopped(_) => (Some("org.apache.hadoop.hbase.RegionTooBusyException"), IoError, 503),
        StoreError::ClusterRefused(_) => (None, IoError, 409),
        StoreError::Fenced(_) | StoreError::Closed => (None, IoError, 503),
        StoreError::NotACounter { .. }
        | StoreError::Io { .. }
        | StoreError::Corruption { .. }
        | StoreError::Encode { .. }
        | StoreError::Internal(_) => (None, IoError, 500),
    };
    Exception { class, thrift, http }
}

/// The Thrift exception HBase raises for this store error ([`exception`]).
pub fn from_store(e: StoreError) -> thrift::Error {
    let x = exception(&e);
    let message = match x.class {
        Some(class) => format!("{class}: {}", message_after_class(&e)),
        // The message alone, as the IllegalArgument HBase raises carries it.
        None => match &e {
            StoreError::InvalidArgument(m) => m.clone(),
            other => other.to_string(),
        },
    };
    match x.thrift {
        ThriftKind::AlreadyExists => thrift::Error::User(Box::new(AlreadyExists::new(message))),
        ThriftKind::IllegalArgument => illegal_argument(message),
        ThriftKind::IoError => io_error(message),
    }
}

/// What follows the class name: for a missing, existing, disabled or
/// enabled table, the table's name alone, as HBase says it; else the
/// error's own message.
fn message_after_class(e: &StoreError) -> String {
    match e {
        StoreError::TableExists(t)
        | StoreError::TableNotFound(t)
        | StoreError::TableDisabled(t)
        | StoreError::TableEnabled(t) => t.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn admin_calls_answer_with_the_status_of_the_same_table() {
        let http = |e: StoreError| exception(&e).http;
        assert_eq!(http(StoreError::TableNotFound("t".into())), 404);
        assert_eq!(http(StoreError::UnknownRegion("r".into())), 404);
        assert_eq!(http(StoreError::InvalidArgument("x".into())), 400);
        assert_eq!(http(StoreError::IllegalName("x".into())), 400);
        assert_eq!(http(StoreError::TableExists("t".into())), 409);
        assert_eq!(http(StoreError::ClusterRefused("x".into())), 409);
        assert_eq!(http(StoreError::Fenced("x".into())), 503);
        assert_eq!(http(StoreError::Internal("x".into())), 500);
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
