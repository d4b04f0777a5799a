//! Region server membership: each live region server holds an ephemeral
//! znode `<root>/rs/<host>,<port>,<start ms>` (HBase's `/hbase/rs`, the same
//! name HBase gives a server) whose data is its [`ServerInfo`] as JSON. The
//! node lives exactly as long as the server's ZooKeeper session, so the
//! children of `rs` are the live servers.
//!
//! A server registers before its store opens its WAL directory on the
//! shared root (`WALs/<name>`), with empty addresses ([`ServerInfo::starting`]),
//! and publishes them once it listens ([`publish`]). So every WAL directory
//! of a live server has its node, and a directory without one is a dead
//! server's, to recover (`assignment.rs`).
//!
//! Thread safety: stateless functions over a shared [`Zk`].

use serde::{Deserialize, Serialize};

use crate::error::{ClusterError, Result};
use crate::zk::Zk;

/// The znode (under the root) whose children are the live region servers.
pub const SERVERS: &str = "rs";

/// What a region server publishes about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `host,port,start ms`: unique for each start of a server.
    pub name: String,
    /// Where clients reach its Thrift service.
    pub thrift: String,
    /// Its HTTP status and metrics.
    pub http: String,
    /// When it started (ms since the epoch).
    pub start_ms: u64,
    /// Where it serves HBase's native RPC, if it does (`host:port`): the
    /// address `hbase:meta` names for its regions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<String>,
}

impl ServerInfo {
    pub fn new(host: &str, thrift_port: u16, http: String, start_ms: u64) -> ServerInfo {
        ServerInfo {
            name: format!("{host},{thrift_port},{start_ms}"),
            thrift: format!("{host}:{thrift_port}"),
            http,
            start_ms,
            rpc: None,
        }
    }
}

impl ServerInfo {
    /// A server that has registered and does not listen yet.
    pub fn starting(name: String, start_ms: u64) -> ServerInfo {
        ServerInfo { name, thrift: String::new(), http: String::new(), start_ms, rpc: None }
    }

    /// Whether it listens (its addresses are published).
    pub fn is_serving(&self) -> bool {
        !self.thrift.is_empty() && !self.http.is_empty()
    }
}

/// Publishes a registered server's addresses (it listens now).
pub fn publish(zk: &Zk, info: &ServerInfo) -> Result<()> {
    let data = serde_json::to_vec(info).expect("ServerInfo serialises");
    zk.set(&format!("{SERVERS}/{}", info.name), &data)
}

/// Registers a region server: from now until its session ends it is live.
pub fn register(zk: &Zk, info: &ServerInfo) -> Result<()> {
    zk.ensure(SERVERS)?;
    let data = serde_json::to_vec(info).expect("ServerInfo serialises");
    zk.create_ephemeral(&format!("{SERVERS}/{}", info.name), &data)?;
    tracing::info!(server = %info.name, session = %zk.session_id(), "registered as a region server");
    Ok(())
}

/// The live region servers, by name. A server that goes between listing
/// and reading is left out.
pub fn live_servers(zk: &Zk) -> Result<Vec<ServerInfo>> {
    zk.ensure(SERVERS)?;
    let mut out = Vec::new();
    for name in zk.children(SERVERS)? {
        if let Some(data) = zk.get(&format!("{SERVERS}/{name}"))? {
            out.push(parse(zk, &name, &data)?);
        }
    }
    Ok(out)
}

/// Region server `name`'s record; `None` if it is not (or no longer) a
/// member.
pub fn read_server(zk: &Zk, name: &str) -> Result<Option<ServerInfo>> {
    match zk.get(&format!("{SERVERS}/{name}"))? {
        Some(data) => parse(zk, name, &data).map(Some),
        None => Ok(None),
    }
}

fn parse(zk: &Zk, name: &str, data: &[u8]) -> Result<ServerInfo> {
    serde_json::from_slice(data).map_err(|e| ClusterError::Malformed {
        what: "region server entry",
        path: zk.path(&format!("{SERVERS}/{name}")),
        reason: e.to_string(),
    })
}
