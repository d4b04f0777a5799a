//! `MasterService.MergeTableRegions` (`Admin.mergeRegionsAsync`): two
//! adjacent regions of a table become one, through the store's merge
//! (`Gateway::merge_regions`: in a cluster, every member takes the merged
//! region before the call answers). The client names the regions by their
//! encoded names; the merge is done when the call answers, so the
//! procedure id it hands back is already finished (see [`super::master`]).
//!
//! Refused with HBase's `MergeRegionException` (a `DoNotRetryIOException`):
//! regions that are not adjacent (HBase merges those only when forced, into
//! overlapping regions; the store never lets regions overlap, so `forcible`
//! changes nothing here), the same region twice, regions of different
//! tables, a region that still reads through a split's references (it can
//! merge once compacted), and more than two regions at once (HBase 2.6
//! merges several adjacent regions in one call; the store merges pairs).
//! The merge runs on the member holding the first region (any member takes
//! the call). In a cluster, regions OPEN on two members are first brought
//! together, as HBase's master does: the second is moved (through the
//! active master) to the first one's member, and the merge runs once it is
//! open there (the holder's merge waits for it, up to 60 s). A region in
//! transition is `NotServingRegionException` (the client retries the
//! call); a standalone server's region that is not OPEN (being split) is a
//! `DoNotRetryIOException` saying so.
//!
//! Thread safety: no state; the store serialises merges with other changes
//! to the table.

use hbase_rpc::pb::hbase::pb::{MergeTableRegionsRequest, MergeTableRegionsResponse};
use hbase_rpc::{Call, Reply, RpcError};
use store::StoreError;

use super::RpcAdapter;
use super::errors::from_gateway;
use crate::cluster_authority::ClusterAuthority;
use crate::gateway::GatewayError;

/// HBase's exception for a merge it will not do.
const MERGE_REGION: &str = "org.apache.hadoop.hbase.exceptions.MergeRegionException";

fn refused(message: impl Into<String>) -> RpcError {
    RpcError::new(MERGE_REGION, message, true)
}

impl RpcAdapter {
    pub(super) fn merge(&self, call: &Call, proc_id: impl FnOnce() -> Option<u64>) -> Result<Reply, RpcError> {
        let r: MergeTableRegionsRequest = call.decode()?;
        let [a, b] = &r.region[..] else {
            return Err(refused(format!(
                "merging {} regions in one call is not supported here: merge two adjacent regions at a time",
                r.region.len()
            )));
        };
        let (a, b) = (self.region(a, "MergeTableRegions")?, self.region(b, "MergeTableRegions")?);
        if a.id == b.id {
            return Err(refused(format!("unable to merge region {} with itself", a.region_name())));
        }
        let (a, b) = (a.dir_name(), b.dir_name());
        if let Some(authority) = self.cluster.authority() {
            // The merge waits (on the member holding `a`) for `b` to open
            // there; see `peer::region_ops::at_holder`.
            bring_together(authority, &a, &b)?;
        }
        match self.gateway.merge_regions(&a, &b) {
            Ok(_) => Ok(Reply::new(&MergeTableRegionsResponse { proc_id: proc_id() })),
            Err(GatewayError::Store(e @ StoreError::MergeRefused { .. })) => Err(refused(e.to_string())),
            Err(GatewayError::Store(e @ StoreError::NotServingRegion { .. })) if self.cluster.authority().is_none() => {
                Err(RpcError::do_not_retry(format!("{e}: a merge runs on regions OPEN here")))
            }
            // In a cluster: a region in transition; the client retries.
            Err(e) => Err(from_gateway(e)),
        }
    }
}

/// Moves region `b` to the member holding `a` OPEN when both are OPEN on
/// different members (whether it asked for a move). A region not OPEN
/// anywhere is in transition: the caller waits and tries again.
fn bring_together(authority: &dyn ClusterAuthority, a: &str, b: &str) -> Result<bool, RpcError> {
    let entries = authority.catalog_entries(&[a.to_string(), b.to_string()]).map_err(RpcError::io)?;
    let open_on =
        |id: &str| entries.get(id).filter(|e| e.state == http_api::RegionState::Open).and_then(|e| e.server.clone());
    let (Some(on_a), Some(on_b)) = (open_on(a), open_on(b)) else { return Ok(false) };
    if on_a == on_b {
        return Ok(false);
    }
    tracing::info!(region = b, to = %on_a, "moving a region to its merge partner's server");
    let call = http_api::OperatorCall::Region(http_api::RegionCall::Move { region: b.to_string(), to: Some(on_a) });
    match authority.master_call(&call) {
        Ok(_) => Ok(true),
        Err(e) if e.is_transient() => Ok(false),
        Err(e) => Err(RpcError::do_not_retry(format!("moving region {b} to merge it: {e}"))),
    }
}
