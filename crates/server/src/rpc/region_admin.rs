//! `AdminService`: the calls hbase-client's `Admin` makes of a region
//! server.
//!
//! * Changes, which pass the same admission as the master's schema changes
//!   ([`super::admission`]): `CompactRegion` (`Admin.compact`,
//!   `majorCompact`: one call per region) and `FlushRegion` (the
//!   per-region flush older clients fall back to).
//! * Reads, served to every caller: `GetRegionInfo` (`getCompactionState`,
//!   `getCompactionStateForRegion`: a region's descriptor and, when asked,
//!   its compaction state from the compactions running now),
//!   `GetOnlineRegion` (`getRegions(ServerName)`: the regions OPEN here),
//!   `GetRegionLoad` (`getRegionMetrics(server)`: their load, see
//!   [`super::load`]) and `GetServerInfo` (this server's name). A region
//!   not OPEN here is `NotServingRegionException`, so the client looks it
//!   up again. `hbase:meta` is synthesised, not a region of the store: it
//!   has a descriptor and no load, and is not listed among the regions.
//!
//! Other `AdminService` calls are refused by name.
//!
//! Thread safety: no state; see the module `rpc`.

use hbase_rpc::pb::hbase::pb::{
    CompactRegionRequest, CompactRegionResponse, FlushRegionRequest, FlushRegionResponse, GetOnlineRegionResponse,
    GetRegionInfoRequest, GetRegionInfoResponse, GetRegionLoadRequest, GetRegionLoadResponse, GetServerInfoResponse,
    ServerInfo, get_region_info_response,
};
use hbase_rpc::{Call, Reply, RpcError};

use super::errors::from_gateway;
use super::load::{compaction_state, open_regions, region_load};
use super::meta::{meta_region_info, pb_region_info};
use super::names::{region_name, table_name};
use super::{RpcAdapter, Target};

impl RpcAdapter {
    pub(super) fn region_admin(&self, method: &str, call: &Call) -> Result<Reply, RpcError> {
        const SERVED: &[&str] =
            &["CompactRegion", "FlushRegion", "GetRegionInfo", "GetOnlineRegion", "GetRegionLoad", "GetServerInfo"];
        if !SERVED.contains(&method) {
            return Err(RpcError::not_implemented(&call.service, method));
        }
        // The reads are on the admission's read-only list.
        self.ddl.check(method, call.peer)?;
        Ok(match method {
            "GetRegionInfo" => self.region_info(call)?,
            "GetOnlineRegion" => {
                let metrics = self.gateway.store_metrics();
                let region_info = self.regions_here(&metrics, None).iter().map(pb_region_info).collect();
                Reply::new(&GetOnlineRegionResponse { region_info })
            }
            "GetRegionLoad" => {
                let r: GetRegionLoadRequest = call.decode()?;
                let table = r.table_name.as_ref().map(table_name).transpose()?;
                let metrics = self.gateway.store_metrics();
                let open = open_regions(&metrics);
                let region_loads = self
                    .regions_here(&metrics, table.as_deref())
                    .iter()
                    .map(|r| region_load(r, open.get(r.dir_name().as_str()).copied(), &metrics.tasks))
                    .collect();
                Reply::new(&GetRegionLoadResponse { region_loads })
            }
            "GetServerInfo" => {
                let server_info = ServerInfo { server_name: self.identity.server_name(), webui_port: None };
                Reply::new(&GetServerInfoResponse { server_info })
            }
            "CompactRegion" => {
                let r: CompactRegionRequest = call.decode()?;
                let region = self.region(&r.region, "CompactRegion")?;
                let family = r.family.as_deref().filter(|f| !f.is_empty());
                self.gateway
                    .compact_region(&region, family, r.major.unwrap_or(false))
                    .map_err(|e| self.redirected(&region, from_gateway(e)))?;
                Reply::new(&CompactRegionResponse {})
            }
            _ => {
                let r: FlushRegionRequest = call.decode()?;
                let region = self.region(&r.region, "FlushRegion")?;
                if r.family.as_deref().is_some_and(|f| !f.is_empty()) {
                    return Err(RpcError::do_not_retry("flushing one family of a region is not supported here"));
                }
                self.gateway.flush_region(&region).map_err(|e| self.redirected(&region, from_gateway(e)))?;
                let now =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
                Reply::new(&FlushRegionResponse {
                    last_flush_time: now as u64,
                    flushed: Some(true),
                    wrote_flush_wal_marker: Some(false),
                })
            }
        })
    }
}

impl RpcAdapter {
    /// `GetRegionInfo`: the region's descriptor, and its compaction state
    /// when asked (see the module doc).
    fn region_info(&self, call: &Call) -> Result<Reply, RpcError> {
        use get_region_info_response::CompactionState;
        let r: GetRegionInfoRequest = call.decode()?;
        let asked = r.compaction_state.unwrap_or(false);
        let (region_info, state) = match self.target(&r.region)? {
            // Synthesised on every read: never compacting.
            Target::Meta => (meta_region_info(), CompactionState::None as i32),
            Target::Region(region) => {
                let metrics = self.gateway.store_metrics();
                let dir = region.dir_name();
                if !open_regions(&metrics).contains_key(dir.as_str()) {
                    let name = region_name(&region.table, &region.start_key, region.id);
                    let e = RpcError::not_serving_region(&String::from_utf8_lossy(&name));
                    return Err(self.redirected(&region, e));
                }
                // The two enums are HBase's one CompactionState.
                (pb_region_info(&region), compaction_state(&metrics.tasks, &dir) as i32)
            }
        };
        Ok(Reply::new(&GetRegionInfoResponse {
            region_info,
            compaction_state: asked.then_some(state),
            ..Default::default()
        }))
    }
}
