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
//! A region not OPEN on this server (being split, or in a cluster held by
//! another member) is a `DoNotRetryIOException` saying so: the store
//! merges only the regions it holds, as with the admin port's merge.
//!
//! Thread safety: no state; the store serialises merges with other changes
//! to the table.

use hbase_rpc::pb::hbase::pb::{MergeTableRegionsRequest, MergeTableRegionsResponse};
use hbase_rpc::{Call, Reply, RpcError};
use store::StoreError;

use super::RpcAdapter;
use super::errors::from_gateway;
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
        match self.gateway.merge_regions(&a.dir_name(), &b.dir_name()) {
            Ok(_) => Ok(Reply::new(&MergeTableRegionsResponse { proc_id: proc_id() })),
            Err(GatewayError::Store(e @ StoreError::MergeRefused { .. })) => Err(refused(e.to_string())),
            // Not a region for the client to look up again: the master
            // call would be retried to no end.
            Err(GatewayError::Store(e @ StoreError::NotServingRegion { .. })) => Err(RpcError::do_not_retry(format!(
                "{e}: a merge runs on the server holding both regions OPEN (in a cluster, that member)"
            ))),
            Err(e) => Err(from_gateway(e)),
        }
    }
}
