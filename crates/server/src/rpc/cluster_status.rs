//! `MasterService.GetClusterStatus` (`Admin.getClusterMetrics`,
//! `getRegionServers`): the cluster as this server knows it.
//!
//! * Live servers: this one (its `ServerName`: RPC host, port, start code)
//!   and, in a cluster, every other live member whose RPC port the last
//!   membership read found (as `GetBootstrapNodes` lists them). Each
//!   carries the regions it serves: this server's with their load from the
//!   store's counters ([`super::load`]); another member's by name only (its
//!   counters are in its own store; ask it: `getRegionMetrics(server)`).
//! * The master is this server (every member answers `MasterService`);
//!   no backup masters; the cluster id is the one the registry hands out.
//! * HBase version: the release whose protocol this port speaks
//!   ([`hbase_rpc::HBASE_VERSION`]).
//! * Dead servers, regions in transition, unknown servers, tasks: none
//!   listed (the membership tells live servers only). The balancer is off:
//!   regions move only when a server fails or an operator moves them.
//! * Left unset: the master's info port, per-table region state counts,
//!   a server's heap and request rate (the store does not measure them).
//!
//! Only the parts the request asks for are filled (all when it names
//! none, as HBase's master answers).
//!
//! Thread safety: each call reads one metrics snapshot and the router's
//! current view; nothing is kept.

use std::collections::HashMap;

use hbase_rpc::pb::hbase::pb::{
    self as pb, ClusterId, ClusterStatus, GetClusterStatusRequest, GetClusterStatusResponse, HBaseVersionFileContent,
    LiveServerInfo, RegionLoad, ServerLoad, ServerName,
};
use hbase_rpc::{Call, Reply, RpcError};
use store::RegionInfo;
use store::metrics::StoreMetrics;

use super::RpcAdapter;
use super::load::{open_regions, region_load};

impl RpcAdapter {
    pub(super) fn cluster_status(&self, call: &Call) -> Result<Reply, RpcError> {
        let r: GetClusterStatusRequest = call.decode()?;
        let wants = |o: pb::Option| r.options.is_empty() || r.options.contains(&(o as i32));
        let me = self.identity.server_name();
        let mut status = ClusterStatus::default();
        if wants(pb::Option::HbaseVersion) {
            status.hbase_version = Some(HBaseVersionFileContent { version: hbase_rpc::HBASE_VERSION.to_string() });
        }
        if wants(pb::Option::ClusterId) {
            status.cluster_id = Some(ClusterId { cluster_id: self.identity.cluster_id.clone() });
        }
        if wants(pb::Option::Master) {
            status.master = Some(me);
        }
        if wants(pb::Option::BalancerOn) {
            // A standalone server has no balancer; a member asks the
            // cluster's switch (unknown when ZooKeeper cannot be read).
            status.balancer_on = match self.cluster.authority() {
                None => Some(false),
                Some(authority) => authority.balancer_on().ok(),
            };
        }
        if wants(pb::Option::LiveServers) || wants(pb::Option::ServersName) {
            let live = self.live_servers();
            if wants(pb::Option::ServersName) {
                status.servers_name = live.iter().map(|s| s.server.clone()).collect();
            }
            if wants(pb::Option::LiveServers) {
                status.live_servers = live;
            }
        }
        Ok(Reply::new(&GetClusterStatusResponse { cluster_status: status }))
    }

    /// Every live server with the regions it serves, this one first (see
    /// the module doc).
    fn live_servers(&self) -> Vec<LiveServerInfo> {
        let router = self.gateway.router();
        // Outside a cluster, nothing to read.
        router.refresh();
        let metrics = self.gateway.store_metrics();
        let open = open_regions(&metrics);
        let totals = &metrics.totals;
        let mine = ServerLoad {
            region_loads: self
                .regions_here(&metrics, None)
                .iter()
                .map(|r| region_load(r, open.get(r.dir_name().as_str()).copied(), &metrics.tasks))
                .collect(),
            // Every read and write request the store served, replaced
            // regions' and dropped tables' included (never goes back).
            total_number_of_requests: Some(totals.gets + totals.scans + totals.write_requests),
            ..Default::default()
        };
        let mut others: HashMap<(String, u16), (ServerName, Vec<RegionLoad>)> = router
            .rpc_locations()
            .into_iter()
            .map(|l| {
                let name = ServerName {
                    host_name: l.host.clone(),
                    port: Some(u32::from(l.port)),
                    start_code: Some(l.start_code),
                };
                ((l.host, l.port), (name, Vec::new()))
            })
            .collect();
        for table in self.gateway.list_tables() {
            // A table dropped since it was listed has no regions.
            let Ok(locations) = self.gateway.table_regions(&table) else { continue };
            for l in locations.into_iter().filter(|l| l.elsewhere) {
                let Some(owner) = router.rpc_location(&format!("{}:{}", l.host, l.port)) else { continue };
                if let Some((_, regions)) = others.get_mut(&(owner.host, owner.port)) {
                    regions.push(region_load(&l.info, None, &[]));
                }
            }
        }
        let mut others: Vec<_> = others.into_values().collect();
        others.sort_by(|a, b| (&a.0.host_name, a.0.port).cmp(&(&b.0.host_name, b.0.port)));
        std::iter::once(LiveServerInfo { server: self.identity.server_name(), server_load: mine })
            .chain(others.into_iter().map(|(server, region_loads)| LiveServerInfo {
                server,
                server_load: ServerLoad { region_loads, ..Default::default() },
            }))
            .collect()
    }

    /// The regions this server serves now (OPEN here), of `table` or of
    /// every table, in table then key order.
    pub(super) fn regions_here(&self, metrics: &StoreMetrics, table: Option<&str>) -> Vec<RegionInfo> {
        let open = open_regions(metrics);
        let mut tables = match table {
            Some(t) => vec![t.to_string()],
            None => self.gateway.list_tables(),
        };
        tables.sort();
        tables
            .iter()
            // A table dropped since it was listed has none.
            .filter_map(|t| self.gateway.region_infos(t).ok())
            .flatten()
            .filter(|r| open.contains_key(r.dir_name().as_str()))
            .collect()
    }
}
