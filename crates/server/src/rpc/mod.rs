//! HBase's native RPC (what hbase-client 2.6 speaks) as a protocol adapter
//! over the [`Gateway`], as `crate::thrift::handler` is for Thrift v1.
//! `RpcAdapter` implements `hbase_rpc::RpcServices`; `hbase_rpc::RpcServer`
//! runs the wire.
//!
//! This server is, to the client, the whole cluster: the master
//! (`MasterService`), the holder of `hbase:meta` (synthesised from the
//! store's regions on every read: [`meta`]) and the region server of every
//! region (`ClientService`: [`client`], [`scan`]). The client finds it
//! through `RpcConnectionRegistry` (`ConnectionRegistryService`,
//! `ClientMetaService`: [`registry`]).
//!
//! Invariants:
//! * A region is named as the client computes it from `hbase:meta`
//!   ([`names`]); a name that maps to no region of its table here is
//!   answered `NotServingRegionException`, so the client relocates. An
//!   encoded name (what a merge sends) is looked for in every table; one
//!   that names no region is `UnknownRegionException`.
//! * Every call that changes a table goes through the gateway, so metrics
//!   and limits are the gateway's. In a cluster, data calls are never
//!   forwarded: `hbase:meta` names each region's owner, and a region not
//!   open here is answered as HBase's region servers answer it
//!   (`RegionMovedException` with its server when the master's catalog
//!   records it open on another live member, `RegionOpeningException`
//!   while it opens here, `NotServingRegionException` otherwise: the
//!   client relocates and retries). The master's region calls (move,
//!   assign, unassign, the balancer) go to the active master
//!   ([`master_ops`]).
//! * A schema change (a master call not known to be read-only) runs only
//!   for a caller [`admission`] admits: from loopback, unless
//!   `rpc_remote_ddl`.
//! * Anything not implemented is refused at once by name
//!   (`DoNotRetryIOException`), never left to time out.
//!
//! Thread safety: one adapter serves all of the RPC server's worker
//! threads. Its own state is the open scans' read-ahead ([`scan::Scans`],
//! one mutex held for a map lookup or update, never across a gateway call)
//! and the finished procedure ids ([`master::Procedures`], one mutex).

mod admission;
mod cells;
mod client;
mod cluster_status;
mod errors;
mod filters;
mod load;
mod master;
mod master_ops;
mod merge;
mod meta;
mod names;
mod region_admin;
mod registry;
mod scan;

use std::sync::Arc;

use hbase_rpc::pb::hbase::pb::{RegionSpecifier, region_specifier::RegionSpecifierType};
use hbase_rpc::service::{CONNECTION_REGISTRY_SERVICE, GET_CONNECTION_REGISTRY};
use hbase_rpc::{Call, Immediate, Reply, RpcError, RpcServices};
use store::RegionInfo;

use crate::gateway::Gateway;
pub use admission::DdlAdmission;
pub use registry::{ClientZnodeData, Identity, client_znode_data, cluster_id_for};

/// The region a call names.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// `hbase:meta`'s one region.
    Meta,
    /// A region of a user table.
    Region(RegionInfo),
}

/// HBase's exception for a region name that names no region
/// (a `DoNotRetryIOException`).
const UNKNOWN_REGION: &str = "org.apache.hadoop.hbase.UnknownRegionException";

/// A cluster member's authority (set once it joins; never on a standalone
/// server): what the master's calls are handed on through.
pub type Authority = Arc<std::sync::OnceLock<Box<dyn crate::cluster_authority::ClusterAuthority>>>;

/// This server's place in a cluster, for the master calls it hands on.
pub struct ClusterLink {
    pub authority: Authority,
    /// Its member name (`host,pid,startcode`); `None`: standalone.
    pub member: Option<String>,
}

impl ClusterLink {
    /// A server in no cluster.
    pub fn standalone() -> ClusterLink {
        ClusterLink { authority: Arc::default(), member: None }
    }

    /// The authority, once this member joined a cluster.
    fn authority(&self) -> Option<&dyn crate::cluster_authority::ClusterAuthority> {
        self.authority.get().map(|a| &**a)
    }
}

pub struct RpcAdapter {
    gateway: Arc<Gateway>,
    identity: Identity,
    scans: scan::Scans,
    procedures: master::Procedures,
    ddl: DdlAdmission,
    cluster: ClusterLink,
}

impl RpcAdapter {
    pub fn new(gateway: Arc<Gateway>, identity: Identity, ddl: DdlAdmission, cluster: ClusterLink) -> RpcAdapter {
        RpcAdapter {
            gateway,
            identity,
            scans: scan::Scans::default(),
            procedures: master::Procedures::default(),
            ddl,
            cluster,
        }
    }

    /// The region `spec` names (see the module's invariants).
    fn target(&self, spec: &RegionSpecifier) -> Result<Target, RpcError> {
        let name = &spec.value[..];
        let shown = || String::from_utf8_lossy(name).into_owned();
        if spec.r#type == RegionSpecifierType::EncodedRegionName as i32 {
            if name == meta::META_ENCODED_NAME.as_bytes() {
                return Ok(Target::Meta);
            }
            // The encoded name names no table: look through every table's
            // regions (a merge names its regions so; tables are few).
            return self
                .gateway
                .list_tables()
                .iter()
                .filter_map(|t| self.gateway.region_infos(t).ok())
                .flatten()
                .find(|r| names::encoded_region_name(&r.table, &r.start_key, r.id).as_bytes() == name)
                .map(Target::Region)
                .ok_or_else(|| RpcError::new(UNKNOWN_REGION, shown(), true));
        }
        if name.starts_with(names::META_TABLE.as_bytes()) && name.get(names::META_TABLE.len()) == Some(&b',') {
            return Ok(Target::Meta);
        }
        let (table, id) = names::parse_region_name(name).ok_or_else(|| RpcError::not_serving_region(&shown()))?;
        // Not `table_regions`: a call must not wait for the owner map. One
        // region's info, not the table's list: every call comes here.
        let region = self.gateway.region_info(&table, id).map_err(errors::from_gateway)?;
        region.map(Target::Region).ok_or_else(|| RpcError::not_serving_region(&shown()))
    }

    /// `e`, or when it says region `region` is not served here and the
    /// master's catalog records the region OPEN on another live member,
    /// `RegionMovedException` naming that member's RPC address: the client
    /// puts the new location in its cache and calls there, without a
    /// lookup of `hbase:meta` (HBase's region server answers so for a region
    /// it closed for a move). The catalog is asked now, not as remembered:
    /// a remembered owner could send the client back and forth.
    pub(crate) fn redirected(&self, region: &RegionInfo, e: RpcError) -> RpcError {
        if e.class_name() != hbase_rpc::error::class::NOT_SERVING_REGION {
            return e;
        }
        match self.gateway.region_rpc_location(&region.dir_name(), true) {
            Some(at) => RpcError::region_moved(&at.host, u32::from(at.port), at.start_code as i64, location_seq_num()),
            None => e,
        }
    }

    /// The user-table region `spec` names; `hbase:meta` is read-only.
    fn region(&self, spec: &RegionSpecifier, what: &str) -> Result<RegionInfo, RpcError> {
        match self.target(spec)? {
            Target::Region(r) => Ok(r),
            Target::Meta => Err(RpcError::do_not_retry(format!(
                "hbase:meta is synthesised from the store's regions here: {what} is refused on it"
            ))),
        }
    }
}

/// The `locationSeqNum` a `RegionMovedException` carries: the client takes
/// a location over the one it cached only when this number is greater (a
/// location read from `hbase:meta` carries 1 here, see [`meta`]). The time
/// of the answer in ms grows with every move, which is all the client
/// compares it for.
fn location_seq_num() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(2, |d| d.as_millis() as i64)
}

impl RpcServices for RpcAdapter {
    fn call(&self, call: Call) -> Result<Reply, RpcError> {
        // The client finds each region's server through `hbase:meta` and
        // goes there: a call is answered here or refused (a region held
        // elsewhere: NotServingRegionException, and the client looks
        // again), never forwarded.
        crate::peer::routing::serve_as_peer();
        match (&*call.service, call.method.as_str()) {
            (CONNECTION_REGISTRY_SERVICE, GET_CONNECTION_REGISTRY) => self.connection_registry(),
            ("ClientMetaService", method) => self.client_meta(method, &call),
            ("ClientService", "Get") => self.get(&call),
            ("ClientService", "Mutate") => self.mutate(call),
            ("ClientService", "Multi") => self.multi(call),
            ("ClientService", "Scan") => self.scan(&call),
            ("MasterService", method) => self.master(method, &call),
            ("AdminService", method) => self.region_admin(method, &call),
            (service, method) => Err(RpcError::not_implemented(service, method)),
        }
    }

    /// Gets whose cells are in memory: YCSB C through the Java client spent
    /// a third of our server's CPU per get handing each call from the
    /// reader thread to a worker and waking the worker
    /// (`bench-results/issue27-reader-answers-gets/`).
    fn answer_now(&self, call: Call) -> Immediate {
        crate::peer::routing::serve_as_peer();
        match (&*call.service, call.method.as_str()) {
            ("ClientService", "Get") => self.get_now(call),
            _ => Immediate::Later(call),
        }
    }
}
