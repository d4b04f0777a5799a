//! `AdminService`: the calls hbase-client's `Admin` makes of a region
//! server for one region — `CompactRegion` (`Admin.compact`,
//! `majorCompact`: one call per region) and `FlushRegion` (the per-region
//! flush older clients fall back to). Both change the store, so they pass
//! the same admission as the master's schema changes
//! ([`super::admission`]). Other `AdminService` calls are refused by name.
//!
//! Thread safety: no state; see the module `rpc`.

use hbase_rpc::pb::hbase::pb::{CompactRegionRequest, CompactRegionResponse, FlushRegionRequest, FlushRegionResponse};
use hbase_rpc::{Call, Reply, RpcError};

use super::RpcAdapter;
use super::errors::from_gateway;

impl RpcAdapter {
    pub(super) fn region_admin(&self, method: &str, call: &Call) -> Result<Reply, RpcError> {
        if !matches!(method, "CompactRegion" | "FlushRegion") {
            return Err(RpcError::not_implemented(&call.service, method));
        }
        self.ddl.check(method, call.peer)?;
        Ok(match method {
            "CompactRegion" => {
                let r: CompactRegionRequest = call.decode()?;
                let region = self.region(&r.region, "CompactRegion")?;
                let family = r.family.as_deref().filter(|f| !f.is_empty());
                self.gateway.compact_region(&region, family, r.major.unwrap_or(false)).map_err(from_gateway)?;
                Reply::new(&CompactRegionResponse {})
            }
            _ => {
                let r: FlushRegionRequest = call.decode()?;
                let region = self.region(&r.region, "FlushRegion")?;
                if r.family.as_deref().is_some_and(|f| !f.is_empty()) {
                    return Err(RpcError::do_not_retry("flushing one family of a region is not supported here"));
                }
                self.gateway.flush_region(&region).map_err(from_gateway)?;
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
