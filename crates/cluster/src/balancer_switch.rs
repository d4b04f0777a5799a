//! Whether the periodic balancer runs (HBase's `balance_switch`), durable in
//! ZooKeeper (znode `balancer`, the text `true` or `false`; absent: on, as
//! HBase's balancer is on by default), so that a standby master that takes
//! over keeps the operator's choice, as HBase keeps it in its `balancer`
//! znode.
//!
//! Thread safety: stateless functions over a shared [`Zk`]. Only the active
//! master writes the node (from its poller thread), so a read-then-write
//! cannot interleave with another writer's.

use crate::error::{ClusterError, Result};
use crate::zk::Zk;

/// The znode (under the cluster root) holding the switch.
pub const BALANCER: &str = "balancer";

/// Whether the balancer is switched on.
pub fn is_on(zk: &Zk) -> Result<bool> {
    match zk.get(BALANCER)? {
        None => Ok(true),
        Some(data) => parse(&data).ok_or_else(|| ClusterError::Malformed {
            what: "balancer switch",
            path: zk.path(BALANCER),
            reason: format!("{:?} is neither true nor false", String::from_utf8_lossy(&data)),
        }),
    }
}

/// Switches the balancer on or off; the previous state.
pub fn set(zk: &Zk, on: bool) -> Result<bool> {
    let was = is_on(zk)?;
    zk.put(BALANCER, if on { b"true" } else { b"false" })?;
    Ok(was)
}

fn parse(data: &[u8]) -> Option<bool> {
    match data {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn only_true_and_false_are_states() {
        assert_eq!(parse(b"true"), Some(true));
        assert_eq!(parse(b"false"), Some(false));
        assert_eq!(parse(b"TRUE "), None);
    }
}
