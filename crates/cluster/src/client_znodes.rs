//! The znodes HBase's own client reads to find a cluster
//! (`ZKConnectionRegistry`, given `hbase.zookeeper.quorum` and
//! `zookeeper.znode.parent`), under `<root>/hbase`:
//!
//! * `hbaseid` — the cluster id (persistent; every member writes the same);
//! * `master` — the server that answers `MasterService`;
//! * `meta-region-server` — the server that serves `hbase:meta`.
//!
//! Every member with an RPC port answers both (DDL holds cluster-wide
//! through any member; each synthesises `hbase:meta`), so one live member
//! is named: whichever creates the two ephemeral nodes first. When its
//! session ends they vanish, and the others, watching, race to name
//! themselves. The nodes' contents are HBase's (`PBUF` and the protobuf),
//! made by the caller; they are readable by anyone, as HBase keeps them
//! under its ACLs, and writable only by the cluster ([`Readers::Anyone`]).
//!
//! Thread safety: [`advertise`] runs on a thread of its own over the shared
//! session, until the session ends.

use std::sync::Arc;
use std::time::Duration;

use crate::error::ClusterError;
use crate::zk::{Readers, Watch, Zk};

/// The parent of HBase's client znodes, under the cluster's root: clients
/// set `zookeeper.znode.parent` to `<root>/hbase`.
pub const PARENT: &str = "hbase";
const HBASEID: &str = "hbase/hbaseid";
const MASTER: &str = "hbase/master";
const META_REGION_SERVER: &str = "hbase/meta-region-server";

/// How long a member waits on a watch before it looks again anyway.
const RECHECK: Duration = Duration::from_secs(10);

/// What a member writes in each znode, encoded as HBase encodes it.
#[derive(Debug, Clone)]
pub struct ClientZnodes {
    pub hbaseid: Vec<u8>,
    pub master: Vec<u8>,
    pub meta_region_server: Vec<u8>,
}

fn exists(e: &ClusterError) -> bool {
    matches!(e, ClusterError::Zk { source: zookeeper_client::Error::NodeExists, .. })
}

/// Writes `hbaseid`, then keeps this member named in `master` and
/// `meta-region-server` whenever no other live member is; the thread ends
/// with the session, or when the session's last handle is dropped (it holds
/// none while it waits, so dropping the process's `Zk` closes the session
/// and frees the names at once).
pub fn advertise(zk: &Arc<Zk>, znodes: ClientZnodes) -> std::thread::JoinHandle<()> {
    let zk = Arc::downgrade(zk);
    std::thread::spawn(move || {
        loop {
            let watches = match zk.upgrade() {
                None => return,
                Some(zk) if zk.has_ended() => return,
                Some(zk) => match advertise_once(&zk, &znodes) {
                    Ok(watches) => watches,
                    Err(e) => {
                        if !zk.has_ended() {
                            tracing::warn!(error = %e, "cannot keep HBase's client znodes; trying again");
                        }
                        drop(zk);
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                },
            };
            // Wake when a named member goes (it is then this member's turn
            // to try), when this session goes, or after RECHECK anyway.
            let Some((master_gone, meta_gone)) = watches else { continue };
            let deadline = std::time::Instant::now() + RECHECK;
            while std::time::Instant::now() < deadline && zk.upgrade().is_some_and(|z| !z.has_ended()) {
                if master_gone.wait(Duration::from_millis(100)) || meta_gone.wait(Duration::from_millis(100)) {
                    break;
                }
            }
        }
    })
}

/// One round: names this member where no one is named; the watches on both
/// names when both are taken (`None`: look again at once).
fn advertise_once(zk: &Zk, znodes: &ClientZnodes) -> Result<Option<(Watch, Watch)>, ClusterError> {
    zk.ensure_for(PARENT, Readers::Anyone)?;
    if zk.get(HBASEID)?.as_deref() != Some(&znodes.hbaseid[..]) {
        zk.put_for(HBASEID, &znodes.hbaseid, Readers::Anyone)?;
    }
    for (rel, data) in [(MASTER, &znodes.master), (META_REGION_SERVER, &znodes.meta_region_server)] {
        match zk.create_ephemeral_for(rel, data, Readers::Anyone) {
            Ok(()) => tracing::info!(znode = %zk.path(rel), "named this server for HBase's clients"),
            Err(e) if exists(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let (master_there, master_gone) = zk.watch_exists(MASTER)?;
    let (meta_there, meta_gone) = zk.watch_exists(META_REGION_SERVER)?;
    Ok((master_there && meta_there).then_some((master_gone, meta_gone)))
}
