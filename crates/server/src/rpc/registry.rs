//! How hbase-client finds the cluster with `RpcConnectionRegistry`: the
//! registry probe (`ConnectionRegistryService.GetConnectionRegistry`) and
//! `ClientMetaService` (cluster id, active master, `hbase:meta`'s location,
//! bootstrap nodes: this server and, in a cluster, every other live one's
//! RPC port). This server is the master and `hbase:meta`'s holder to the
//! client: in a cluster, any member answers DDL cluster-wide and names each
//! region's owner in `hbase:meta`.
//!
//! The cluster id is derived from the store's root, not stored: the MD5 of
//! the root directory's canonical path, shaped as a UUID. It is stable for
//! as long as the data stays where it is, which is what the client needs
//! (it keys its connection caches by it); moving the data directory gives
//! it a new id, as a fresh `hbase.id` would.
//!
//! Thread safety: `Identity` is immutable once built.

use std::path::Path;

use hbase_rpc::pb::hbase::pb::{
    GetActiveMasterResponse, GetBootstrapNodesResponse, GetClusterIdResponse, GetConnectionRegistryResponse,
    GetMetaRegionLocationsResponse, RegionLocation, ServerName,
};
use hbase_rpc::{Call, Reply, RpcError};

use super::{RpcAdapter, meta};

/// Who this server is to the client.
#[derive(Debug, Clone)]
pub struct Identity {
    pub cluster_id: String,
    /// The host and port the client reaches this server's RPC port at.
    pub host: String,
    pub port: u16,
    /// When this server started (ms since the epoch): HBase's start code,
    /// which tells one incarnation of a server from the next.
    pub start_code: u64,
}

impl Identity {
    pub fn server_name(&self) -> ServerName {
        ServerName { host_name: self.host.clone(), port: Some(u32::from(self.port)), start_code: Some(self.start_code) }
    }
}

/// The cluster id of the store at `root` (see the module doc).
pub fn cluster_id_for(root: &Path) -> String {
    let path = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let hex = super::names::encoded_name(path.to_string_lossy().as_bytes());
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// HBase's client znodes' contents naming one server (what
/// `ZKConnectionRegistry` reads; `cluster::client_znodes` keeps them), each
/// `PBUF` and the protobuf, as HBase writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientZnodeData {
    /// `hbaseid`: the cluster id.
    pub hbaseid: Vec<u8>,
    /// `master`: the server answering `MasterService`.
    pub master: Vec<u8>,
    /// `meta-region-server`: the server holding `hbase:meta`, OPEN.
    pub meta_region_server: Vec<u8>,
}

fn pbuf(message: &impl prost::Message) -> Vec<u8> {
    let mut out = b"PBUF".to_vec();
    out.extend(message.encode_to_vec());
    out
}

/// The client znodes naming the server `identity` (its status page on
/// `info_port`).
pub fn client_znode_data(identity: &Identity, info_port: u16) -> ClientZnodeData {
    use hbase_rpc::pb::hbase::pb::{ClusterId, Master, MetaRegionServer, region_state};
    ClientZnodeData {
        hbaseid: pbuf(&ClusterId { cluster_id: identity.cluster_id.clone() }),
        master: pbuf(&Master {
            master: identity.server_name(),
            rpc_version: Some(0),
            info_port: Some(u32::from(info_port)),
        }),
        meta_region_server: pbuf(&MetaRegionServer {
            server: identity.server_name(),
            rpc_version: Some(0),
            state: Some(region_state::State::Open as i32),
        }),
    }
}

impl RpcAdapter {
    pub(super) fn connection_registry(&self) -> Result<Reply, RpcError> {
        Ok(Reply::new(&GetConnectionRegistryResponse { cluster_id: self.identity.cluster_id.clone() }))
    }

    pub(super) fn client_meta(&self, method: &str, call: &Call) -> Result<Reply, RpcError> {
        let me = self.identity.server_name();
        Ok(match method {
            "GetClusterId" => Reply::new(&GetClusterIdResponse { cluster_id: Some(self.identity.cluster_id.clone()) }),
            "GetActiveMaster" => Reply::new(&GetActiveMasterResponse { server_name: Some(me) }),
            "GetMetaRegionLocations" => Reply::new(&GetMetaRegionLocationsResponse {
                meta_locations: vec![RegionLocation {
                    region_info: meta::meta_region_info(),
                    server_name: Some(me),
                    seq_num: 1,
                }],
            }),
            "GetBootstrapNodes" => {
                // In a cluster, every live member's RPC port, as the
                // membership lists it: the client asks any of them again
                // if this one goes away.
                let others = self.gateway.router().member_rpc_locations().into_iter().map(|l| ServerName {
                    host_name: l.host,
                    port: Some(u32::from(l.port)),
                    start_code: Some(l.start_code),
                });
                Reply::new(&GetBootstrapNodesResponse { server_name: std::iter::once(me).chain(others).collect() })
            }
            other => return Err(RpcError::not_implemented(&call.service, other)),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cluster_id_is_stable_and_uuid_shaped() {
        let dir = tempfile::tempdir().unwrap();
        let a = super::cluster_id_for(dir.path());
        assert_eq!(a, super::cluster_id_for(dir.path()));
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_ne!(a, super::cluster_id_for(&dir.path().join("other")));
    }
}
