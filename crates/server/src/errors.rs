//! How store errors reach a client, whatever its protocol: one table from
//! each store error to HBase's exception class, the Thrift exception that
//! carries it and the HTTP status of an admin call that fails with it. The
//! class name goes in front of the message so that clients that match on
//! it (as HBase users' scripts do) keep working.

use store::StoreError;

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

/// The one table from store error to what HBase's clients see; every
/// protocol adapter and the admin calls answer from it.
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
        StoreError::NamespaceExists(_) => (Some("org.apache.hadoop.hbase.NamespaceExistException"), AlreadyExists, 409),
        StoreError::NamespaceNotFound(_) => (Some("org.apache.hadoop.hbase.NamespaceNotFoundException"), IoError, 404),
        StoreError::NamespaceConstraint(_) => {
            (Some("org.apache.hadoop.hbase.constraint.ConstraintException"), IoError, 409)
        }
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
        // Only a read limited to the cache sees it, and its caller reads
        // again from the file: one reaching a client is a bug of ours.
        StoreError::NotInCache { .. } => (None, IoError, 500),
        StoreError::NotACounter { .. }
        | StoreError::Io { .. }
        | StoreError::Corruption { .. }
        | StoreError::Encode { .. }
        | StoreError::Internal(_) => (None, IoError, 500),
    };
    Exception { class, thrift, http }
}

/// What follows the class name: for a missing, existing, disabled or
/// enabled table, the table's name alone, as HBase says it; else the
/// error's own message.
pub fn message_after_class(e: &StoreError) -> String {
    match e {
        StoreError::TableExists(t)
        | StoreError::NamespaceExists(t)
        | StoreError::NamespaceNotFound(t)
        | StoreError::TableNotFound(t)
        | StoreError::TableDisabled(t)
        | StoreError::TableEnabled(t) => t.clone(),
        other => other.to_string(),
    }
}

/// The message a client gets for `e`: HBase's class name and what follows
/// it, or the message alone when HBase raises a plain exception.
pub fn client_message(e: &StoreError) -> String {
    match exception(e).class {
        Some(class) => format!("{class}: {}", message_after_class(e)),
        // The message alone, as the IllegalArgument HBase raises carries it.
        None => match e {
            StoreError::InvalidArgument(m) => m.clone(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            client_message(&StoreError::TableNotFound("t".into())),
            "org.apache.hadoop.hbase.TableNotFoundException: t"
        );
        assert_eq!(
            client_message(&StoreError::TableExists("t".into())),
            "org.apache.hadoop.hbase.TableExistsException: t"
        );
        assert_eq!(client_message(&StoreError::InvalidArgument("bad".into())), "bad");
    }
}
