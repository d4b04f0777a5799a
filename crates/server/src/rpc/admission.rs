//! Who may change the schema over the RPC port. hbase-client authenticates
//! with SIMPLE here (the user it claims, unverified, as HBase without
//! Kerberos), so the RPC port cannot tell one caller from another by who
//! they are; it can tell where they connect from.
//!
//! The rule (`rpc_remote_ddl`, false by default): the state-changing master
//! calls (create, delete, enable, disable table; create, delete namespace;
//! any other master call not known to be read-only) are served only to a
//! caller that connects from loopback, a process of this machine, the same
//! trust the admin calls give a server without a token (`admin_auth.rs`).
//! Any other caller gets `AccessDeniedException`, which hbase-client does
//! not retry. An operator who trusts the network sets `rpc_remote_ddl`.
//! Reads and writes of rows are the data port's, as on the Thrift port.
//!
//! Thread safety: immutable once built.

use std::net::SocketAddr;

use hbase_rpc::RpcError;

/// HBase's exception for a refused permission (a `DoNotRetryIOException`).
const ACCESS_DENIED: &str = "org.apache.hadoop.hbase.security.AccessDeniedException";

/// The master and region server calls that change nothing: served to
/// every caller.
const READ_ONLY_CALLS: &[&str] = &[
    "IsMasterRunning",
    "GetClusterStatus",
    "GetRegionInfo",
    "GetOnlineRegion",
    "GetRegionLoad",
    "GetServerInfo",
    "getProcedureResult",
    "GetSchemaAlterStatus",
    "GetTableDescriptors",
    "GetTableNames",
    "GetTableState",
    "GetNamespaceDescriptor",
    "ListNamespaceDescriptors",
    "ListTableDescriptorsByNamespace",
    "ListTableNamesByNamespace",
    "ListNamespaces",
    "IsBalancerEnabled",
];

/// The RPC port's schema-change gate; see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct DdlAdmission {
    /// `rpc_remote_ddl`: serve schema changes to callers beyond loopback.
    pub remote_allowed: bool,
}

impl DdlAdmission {
    /// Whether master call `method` from `peer` may run.
    pub fn check(&self, method: &str, peer: SocketAddr) -> Result<(), RpcError> {
        if self.remote_allowed || READ_ONLY_CALLS.contains(&method) || peer.ip().to_canonical().is_loopback() {
            return Ok(());
        }
        Err(RpcError::new(
            ACCESS_DENIED,
            format!(
                "{method} from {peer} is refused: the RPC port authenticates no one, so it serves schema changes \
                 only to callers on this machine (set rpc_remote_ddl = true to serve them to every caller)"
            ),
            true,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 40000)
    }

    #[test]
    fn schema_changes_are_served_only_from_loopback_by_default() {
        let gate = DdlAdmission::default();
        for local in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            assert!(gate.check("CreateTable", peer(local)).is_ok(), "{local}");
        }
        for remote in ["10.0.0.7", "192.168.1.2", "::ffff:10.0.0.7", "fe80::1"] {
            let e = gate.check("DeleteTable", peer(remote)).expect_err(remote);
            assert_eq!(e.class_name(), ACCESS_DENIED);
            assert!(e.is_do_not_retry());
            assert!(e.message().contains("rpc_remote_ddl"), "{}", e.message());
        }
        // A call nobody listed is a change until proven otherwise.
        assert!(gate.check("ModifyTable", peer("10.0.0.7")).is_err());
    }

    #[test]
    fn reads_are_served_to_everyone_and_the_setting_opens_changes() {
        let gate = DdlAdmission::default();
        for read in READ_ONLY_CALLS {
            assert!(gate.check(read, peer("10.0.0.7")).is_ok(), "{read}");
        }
        let open = DdlAdmission { remote_allowed: true };
        assert!(open.check("CreateNamespace", peer("10.0.0.7")).is_ok());
    }
}
