//! The cluster's configuration, durable in ZooKeeper (znode `config`, JSON):
//! what every member must agree on. Today that is the shared root every
//! region server keeps its files and WAL under; two servers of one cluster
//! on different roots would each think the other's regions unassigned and
//! split each other's WAL directories into nothing.
//!
//! The first region server to join records its root ([`agree`]); every later
//! one either was given the same root, or was given none and takes the
//! cluster's, or is refused before its store opens. The master shows it.
//!
//! Thread safety: stateless functions over a shared [`Zk`]; the record is
//! created once (ZooKeeper's create decides a race) and never changed.

use serde::{Deserialize, Serialize};

use crate::error::{ClusterError, Result};
use crate::zk::Zk;

/// The znode (under the cluster root) holding the configuration.
pub const CONFIG: &str = "config";

/// What the cluster's members share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterConfig {
    /// The root URI of every region server's store (`hdfs://…` or
    /// `file:///…`).
    pub root: String,
    /// The server that recorded it, and when (ms since the epoch).
    pub recorded_by: String,
    pub recorded_ms: u64,
}

/// How a joining server names its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposed {
    /// Given by the operator (`--root`, `--data-dir`, a config file): it
    /// must be the cluster's.
    Given(String),
    /// Only the default: the cluster's root is taken if it has one.
    Default(String),
}

fn same_root(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The cluster's configuration, or `None` before the first server joined.
pub fn read(zk: &Zk) -> Result<Option<ClusterConfig>> {
    let Some(data) = zk.get(CONFIG)? else { return Ok(None) };
    serde_json::from_slice(&data).map(Some).map_err(|e| ClusterError::Malformed {
        what: "cluster configuration",
        path: zk.path(CONFIG),
        reason: e.to_string(),
    })
}

/// The root server `server` is to use: the cluster's, which it records if
/// it is the first. Refused when the operator gave a different one.
pub fn agree(zk: &Zk, server: &str, proposed: &Proposed) -> Result<ClusterConfig> {
    let (Proposed::Given(root) | Proposed::Default(root)) = proposed;
    let existing = match read(zk)? {
        Some(c) => c,
        None => {
            let mine = ClusterConfig {
                root: root.clone(),
                recorded_by: server.to_string(),
                recorded_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
            };
            if zk.create_persistent(CONFIG, &serde_json::to_vec(&mine).expect("a config serialises"))? {
                tracing::info!(root = %mine.root, "recorded the cluster's root");
                return Ok(mine);
            }
            // Another server recorded one first.
            read(zk)?.ok_or_else(|| ClusterError::Malformed {
                what: "cluster configuration",
                path: zk.path(CONFIG),
                reason: "created and gone again".into(),
            })?
        }
    };
    match proposed {
        Proposed::Given(root) if !same_root(root, &existing.root) => Err(ClusterError::Mismatch(format!(
            "this server's root is {root}, but cluster {} keeps its files under {} (recorded by {}): \
             start it with --root {} or none",
            zk.url(),
            existing.root,
            existing.recorded_by,
            existing.root
        ))),
        _ => Ok(existing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_compare_without_a_trailing_slash() {
        assert!(same_root("file:///a/b/", "file:///a/b"));
        assert!(!same_root("file:///a/b", "file:///a/c"));
    }
}
