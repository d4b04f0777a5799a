//! Master election (ZooKeeper's leader-election recipe): every master joins
//! with an ephemeral sequential znode `<root>/master-election/m-<seq>`
//! holding its [`MasterInfo`]; the one with the lowest sequence is the
//! active master, the others are standbys. A standby watches only the node
//! just before its own (no herd when the active goes), and becomes active
//! when every node before its own is gone. A master's nodes go with its
//! session, so a dead or partitioned active master is replaced after its
//! session timeout.
//!
//! Thread safety: a `Candidate` is used by the master's own thread; the
//! free functions only read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ClusterError, Result};
use crate::zk::Zk;

/// The znode (under the root) whose children are the masters.
pub const ELECTION: &str = "master-election";
const PREFIX: &str = "m-";

/// What a master publishes about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MasterInfo {
    /// A name unique for each start of a master (`host,port,start ms`).
    pub name: String,
    /// Its HTTP status page.
    pub http: String,
}

/// This master's place in the election.
pub struct Candidate {
    zk: Arc<Zk>,
    /// Our node's name under `ELECTION`.
    node: String,
}

impl Candidate {
    /// Joins the election.
    pub fn join(zk: Arc<Zk>, info: &MasterInfo) -> Result<Candidate> {
        zk.ensure(ELECTION)?;
        let data = serde_json::to_vec(info).expect("MasterInfo serialises");
        let node = zk.create_ephemeral_sequential(&format!("{ELECTION}/{PREFIX}"), &data)?;
        tracing::info!(master = %info.name, node = %node, "joined the master election");
        Ok(Candidate { zk, node })
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// Waits until this master is the active one (true: every node before
    /// ours is gone) or `stop` is set (false). `each_round` runs whenever
    /// the election may have changed. An error if our session ends first.
    pub fn wait_until_active(&self, stop: &AtomicBool, mut each_round: impl FnMut()) -> Result<bool> {
        loop {
            each_round();
            if stop.load(Ordering::Acquire) {
                return Ok(false);
            }
            if self.zk.has_ended() {
                return Err(ClusterError::SessionEnded("while waiting to become the active master".into()));
            }
            let nodes = self.zk.children(ELECTION)?;
            if !nodes.contains(&self.node) {
                return Err(ClusterError::SessionEnded("our election node is gone".into()));
            }
            let Some(before) = nodes.iter().filter(|n| **n < self.node).max() else { return Ok(true) };
            let (exists, watch) = self.zk.watch_exists(&format!("{ELECTION}/{before}"))?;
            if exists {
                tracing::debug!(waiting_on = %before, "standby master: waiting for the master before us to go");
                // Short waits, so that `stop` is seen; the watch itself
                // fires when the node before ours goes.
                watch.wait(Duration::from_millis(250));
            }
        }
    }
}

/// The sequence number of election node `node` (`m-0000000012`: 12): the
/// order masters became candidates in, which is the order they can become
/// active in (the catalog log's epoch, `catalog_log.rs`).
pub fn sequence_of(node: &str) -> Option<u64> {
    node.rsplit('/').next()?.strip_prefix(PREFIX)?.parse().ok()
}

/// The active master, if any.
pub fn active_master(zk: &Zk) -> Result<Option<MasterInfo>> {
    zk.ensure(ELECTION)?;
    for node in zk.children(ELECTION)? {
        if let Some(data) = zk.get(&format!("{ELECTION}/{node}"))? {
            let info = serde_json::from_slice(&data).map_err(|e| ClusterError::Malformed {
                what: "master entry",
                path: zk.path(&format!("{ELECTION}/{node}")),
                reason: e.to_string(),
            })?;
            return Ok(Some(info));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_election_node_names_its_sequence() {
        assert_eq!(sequence_of("m-0000000012"), Some(12));
        assert_eq!(sequence_of("master-election/m-0000000007"), Some(7));
        assert_eq!(sequence_of("x-1"), None);
        assert_eq!(sequence_of("m-"), None);
    }
}
