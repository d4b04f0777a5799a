//! The `MasterService` calls only a cluster's master carries out — a
//! region's move, assign and unassign, the balancer's run and switch — and
//! the table calls that are not DDL proper (`TruncateTable`,
//! `ListTableNamesByNamespace`), plus a clear refusal for snapshots.
//!
//! Any member takes these from hbase-client (to the client, the member it
//! reached is the master) and hands the region and balancer calls to the
//! active master as the shell would send them
//! ([`crate::cluster_authority::ClusterAuthority::master_call`]); the
//! answer comes when the master has done the call. A standalone server
//! holds every region and has no balancer: a move, assign or unassign there
//! is refused (a `DoNotRetryIOException` saying so), the balancer is
//! reported off and a balancer run answers "did not run".
//!
//! Errors: the master's 400 and 404 (a bad call, no such region) are
//! `DoNotRetryIOException`s (404: `UnknownRegionException`); a master not
//! reached, busy, or a region in transition (409, 5xx) are plain
//! `IOException`s, which the client retries.
//!
//! Thread safety: no state of its own; the authority is called from the
//! RPC worker threads at once.

use hbase_rpc::pb::hbase::pb::{
    AssignRegionRequest, AssignRegionResponse, BalanceRequest, BalanceResponse, IsBalancerEnabledResponse,
    ListNamespacesResponse, ListTableNamesByNamespaceRequest, ListTableNamesByNamespaceResponse, MoveRegionRequest,
    MoveRegionResponse, ServerName, SetBalancerRunningRequest, SetBalancerRunningResponse, TruncateTableRequest,
    TruncateTableResponse, UnassignRegionRequest, UnassignRegionResponse,
};
use hbase_rpc::{Call, Reply, RpcError};
use http_api::{OperatorCall, RegionCall};

use super::errors::from_gateway;
use super::names::{table_name, wire_table_name};
use super::{RpcAdapter, UNKNOWN_REGION};
use crate::cluster_authority::MasterRefusal;

/// The snapshot calls (issue 58): refused by name until snapshots exist.
const SNAPSHOT_CALLS: &[&str] = &[
    "Snapshot",
    "GetCompletedSnapshots",
    "DeleteSnapshot",
    "IsSnapshotDone",
    "RestoreSnapshot",
    "ExecProcedure",
    "ExecProcedureWithRet",
    "IsProcedureDone",
    "SwitchSnapshotCleanup",
    "IsSnapshotCleanupEnabled",
];

/// The master's 409s that no retry changes (the others are a region or a
/// table in transition, which a retry outlasts).
const SETTLED_REFUSALS: &[&str] = &["no other serving region server"];

/// A master's refusal as the exception hbase-client acts on.
fn master_error(e: MasterRefusal) -> RpcError {
    match e.status {
        Some(404) => RpcError::new(UNKNOWN_REGION, e.message, true),
        _ if SETTLED_REFUSALS.iter().any(|m| e.message.contains(m)) => RpcError::do_not_retry(e.to_string()),
        _ if e.is_transient() => RpcError::io(e.to_string()),
        _ => RpcError::do_not_retry(e.to_string()),
    }
}

/// Whether a move's refusal says the region is already where it was to
/// go: HBase's master answers such a move as done (a client that retried a
/// move after its first call timed out meets it so).
fn already_there(e: &MasterRefusal, to: &str) -> bool {
    e.status == Some(409) && e.message.contains(&format!("already open on {to}"))
}

/// The refusal of a region call on a server in no cluster.
fn standalone(call: &str) -> RpcError {
    RpcError::do_not_retry(format!("{call}: this server is not in a cluster; it holds every region itself"))
}

/// The number a balancer answer starts with ("true: … moved N region(s)").
fn moved_count(answer: &str) -> Option<u32> {
    let after = answer.split("moved ").nth(1)?;
    after.split_whitespace().next()?.parse().ok()
}

impl RpcAdapter {
    /// Serves `method` if it is one of this file's; `None` otherwise.
    pub(super) fn master_op(&self, method: &str, call: &Call) -> Option<Result<Reply, RpcError>> {
        Some(match method {
            "ListNamespaces" => (|| {
                let mut namespace_name = self.gateway.list_namespaces().map_err(from_gateway)?;
                namespace_name.sort();
                Ok(Reply::new(&ListNamespacesResponse { namespace_name }))
            })(),
            "ListTableNamesByNamespace" => (|| {
                let r: ListTableNamesByNamespaceRequest = call.decode()?;
                let mut names = self.gateway.namespace_tables(&r.namespace_name).map_err(from_gateway)?;
                names.sort();
                let table_name = names.iter().map(|n| wire_table_name(n)).collect();
                Ok(Reply::new(&ListTableNamesByNamespaceResponse { table_name }))
            })(),
            // Master.proto spells it so (the client sends the proto's name).
            "truncateTable" => (|| {
                let r: TruncateTableRequest = call.decode()?;
                let name = table_name(&r.table_name)?;
                self.gateway.truncate_table(&name, r.preserve_splits.unwrap_or(false)).map_err(from_gateway)?;
                Ok(Reply::new(&TruncateTableResponse { proc_id: Some(self.procedures.finished()) }))
            })(),
            "MoveRegion" => (|| {
                let r: MoveRegionRequest = call.decode()?;
                let region = self.region(&r.region, "MoveRegion")?.dir_name();
                let to = r.dest_server_name.as_ref().map(|s| self.member_named(s)).transpose()?;
                let authority = self.cluster.authority().ok_or_else(|| standalone("move"))?;
                match authority.master_call(&OperatorCall::Region(RegionCall::Move { region, to: to.clone() })) {
                    Ok(_) => {}
                    Err(e) if to.as_deref().is_some_and(|to| already_there(&e, to)) => {}
                    Err(e) => return Err(master_error(e)),
                }
                Ok(Reply::new(&MoveRegionResponse {}))
            })(),
            "AssignRegion" => (|| {
                let r: AssignRegionRequest = call.decode()?;
                let region = self.region(&r.region, "AssignRegion")?.dir_name();
                self.region_call(RegionCall::Assign { region, to: None })?;
                Ok(Reply::new(&AssignRegionResponse {}))
            })(),
            "UnassignRegion" => (|| {
                let r: UnassignRegionRequest = call.decode()?;
                let region = self.region(&r.region, "UnassignRegion")?.dir_name();
                self.region_call(RegionCall::Unassign { region })?;
                Ok(Reply::new(&UnassignRegionResponse {}))
            })(),
            "Balance" => (|| {
                let r: BalanceRequest = call.decode()?;
                if r.dry_run.unwrap_or(false) {
                    return Err(RpcError::do_not_retry(
                        "a dry run of the balancer is not supported here: the master plans and moves in one step",
                    ));
                }
                let Some(authority) = self.cluster.authority() else {
                    return Ok(Reply::new(&BalanceResponse { balancer_ran: false, ..Default::default() }));
                };
                let answer = authority.master_call(&OperatorCall::Balance).map_err(master_error)?;
                let moved = moved_count(&answer);
                Ok(Reply::new(&BalanceResponse {
                    balancer_ran: answer.starts_with("true"),
                    moves_calculated: moved,
                    moves_executed: moved,
                }))
            })(),
            "SetBalancerRunning" => (|| {
                let r: SetBalancerRunningRequest = call.decode()?;
                let Some(authority) = self.cluster.authority() else {
                    return Err(RpcError::do_not_retry(
                        "this server is not in a cluster: it holds every region and has no balancer",
                    ));
                };
                let answer = authority.master_call(&OperatorCall::BalanceSwitch { on: r.on }).map_err(master_error)?;
                let prev_balance_value = Some(answer.trim_end().ends_with("true"));
                Ok(Reply::new(&SetBalancerRunningResponse { prev_balance_value }))
            })(),
            "IsBalancerEnabled" => (|| {
                let enabled = match self.cluster.authority() {
                    None => false,
                    Some(authority) => authority.balancer_on().map_err(RpcError::io)?,
                };
                Ok(Reply::new(&IsBalancerEnabledResponse { enabled }))
            })(),
            snapshot if SNAPSHOT_CALLS.contains(&snapshot) => Err(RpcError::do_not_retry(format!(
                "MasterService.{snapshot}: snapshots and procedures are not supported by this server yet"
            ))),
            _ => return None,
        })
    }

    /// A region's assign or unassign, through the active master.
    fn region_call(&self, call: RegionCall) -> Result<String, RpcError> {
        let authority = self.cluster.authority().ok_or_else(|| standalone(call.name()))?;
        authority.master_call(&OperatorCall::Region(call)).map_err(master_error)
    }

    /// The member name of the region server `server` names (host, RPC port
    /// and start code, as `hbase:meta` gave them to the client).
    fn member_named(&self, server: &ServerName) -> Result<String, RpcError> {
        let (port, code) = (server.port.unwrap_or(0), server.start_code.unwrap_or(0));
        let me = &self.identity;
        if u32::from(me.port) == port
            && me.start_code == code
            && let Some(name) = &self.cluster.member
        {
            return Ok(name.clone());
        }
        let peers = self.gateway.router().peers().map_err(RpcError::io)?;
        peers
            .into_iter()
            .find(|p| p.rpc.as_ref().is_some_and(|r| u32::from(r.port) == port && r.start_code == code))
            .map(|p| p.name)
            .ok_or_else(|| {
                RpcError::do_not_retry(format!(
                    "{},{port},{code} is not a live region server of this cluster",
                    server.host_name
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_refusal_is_retried_only_when_a_retry_can_succeed() {
        let refusal = |status: Option<u16>| MasterRefusal { status, message: "why".into() };
        for transient in [None, Some(409), Some(502), Some(503), Some(504)] {
            let e = master_error(refusal(transient));
            assert_eq!((e.class_name(), e.is_do_not_retry()), (hbase_rpc::error::class::IO, false), "{transient:?}");
        }
        let e = master_error(refusal(Some(404)));
        assert_eq!((e.class_name(), e.is_do_not_retry()), (UNKNOWN_REGION, true));
        let settled =
            MasterRefusal { status: Some(409), message: "no other serving region server to move it to".into() };
        assert!(master_error(settled).is_do_not_retry(), "no retry finds another server");
        let there = MasterRefusal { status: Some(409), message: "the region is already open on h,1,2".into() };
        assert!(already_there(&there, "h,1,2") && !already_there(&there, "h,1,3"));
        let e = master_error(refusal(Some(400)));
        assert_eq!((e.class_name(), e.is_do_not_retry()), (hbase_rpc::error::class::DO_NOT_RETRY, true));
    }

    #[test]
    fn a_balancer_run_s_answer_gives_its_moves() {
        assert_eq!(moved_count("true: the balancer ran and moved 3 region(s)"), Some(3));
        assert_eq!(moved_count("false: the balancer is switched off (balance_switch true)"), None);
    }
}
