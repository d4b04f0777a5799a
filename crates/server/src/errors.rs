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

/// The Thrift exception HBase raises for this store error.
pub fn from_store(e: StoreError) -> thrift::Error {
    match &e {
        StoreError::TableExists(t) => thrift::Error::User(Box::new(AlreadyExists::new(format!(
            "org.apache.hadoop.hbase.TableExistsException: {t}"
        )))),
        StoreError::InvalidArgument(m) => illegal_argument(m.clone()),
        StoreError::IllegalName(m) => illegal_argument(m.clone()),
        // The memstore refuses malformed input (a cell over
        // hbase.server.keyvalue.maxsize, an empty row key, ...).
        StoreError::MemStore(m) => illegal_argument(m.to_string()),
        StoreError::TableNotFound(t) => io_error(format!("org.apache.hadoop.hbase.TableNotFoundException: {t}")),
        StoreError::TableDisabled(t) => io_error(format!("org.apache.hadoop.hbase.TableNotEnabledException: {t}")),
        StoreError::TableEnabled(t) => io_error(format!("org.apache.hadoop.hbase.TableNotDisabledException: {t}")),
        StoreError::NoSuchFamily { .. } => {
            io_error(format!("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: {e}"))
        }
        StoreError::NotServingRegion { .. } => {
            io_error(format!("org.apache.hadoop.hbase.NotServingRegionException: {e}"))
        }
        StoreError::UnknownRegion(_) => io_error(format!("org.apache.hadoop.hbase.UnknownRegionException: {e}")),
        StoreError::WritesStopped(_) => io_error(format!("org.apache.hadoop.hbase.RegionTooBusyException: {e}")),
        _ => io_error(e.to_string()),
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
    }
}
