//! `StatusSource`: what the server's pages and metrics read (the store,
//! the Thrift side's counters and scanners, the gate, the cluster view),
//! shared by the status document (`http.rs`) and the Prometheus text
//! (`prometheus.rs`), and what open scanners pin, measured from it.
//!
//! Thread safety: every field is shared (`Arc`) or immutable; the pages
//! read it from the HTTP server's threads.

use std::net::SocketAddr;
use std::sync::Arc;

use store::Store;

use crate::gate::ServingGate;
use crate::request_history::RequestHistory;
use crate::request_metrics::RequestMetrics;
use crate::scanners::ScannerRegistry;
use crate::thrift::listener::ThriftCounters;

/// What the pages read.
pub struct StatusSource {
    pub store: Arc<Store>,
    pub scanners: Arc<ScannerRegistry>,
    pub thrift: Arc<ThriftCounters>,
    /// The Thrift handler's request latencies.
    pub requests: Arc<RequestMetrics>,
    /// The last minutes of [`Self::requests`], sampled.
    pub history: Arc<RequestHistory>,
    pub gate: Arc<ServingGate>,
    /// The effective configuration as TOML, for `/conf`.
    pub conf: String,
    pub started: std::time::Instant,
    pub thrift_addr: SocketAddr,
    /// Where HBase's native RPC listens, when it is on.
    pub rpc_addr: Option<SocketAddr>,
    /// The settings of a family created without them (the server's
    /// configured defaults), for families an alter adds.
    pub family_template: store::FamilyDescriptor,
    /// Cluster mode: the cluster as ZooKeeper shows it (masters, live
    /// servers), set once the server has joined; `/status`'s `cluster`.
    pub cluster: Arc<std::sync::OnceLock<ClusterView>>,
    /// Cluster mode: the other servers, told of a split or merge here.
    pub router: Arc<crate::peer::routing::Router>,
    /// Cluster mode: ZooKeeper's membership and the master's catalog, which
    /// admin calls check (set once the server has joined).
    pub authority: Arc<std::sync::OnceLock<Box<dyn crate::cluster_authority::ClusterAuthority>>>,
    /// Who may make admin calls.
    pub admin_auth: crate::admin_auth::AdminAuth,
    /// Requests relayed from TLS connections whose client presented a
    /// verified certificate (which authenticates admin calls).
    pub verified: Arc<crate::tls_relay::VerifiedPeers>,
    /// The process's log filter, which `/logLevel` reads and changes (the
    /// binary gives it: the logger is the binary's; unset in a server
    /// embedded without one).
    pub log_levels: Arc<std::sync::OnceLock<Box<dyn crate::log_level::LogLevelControl>>>,
}

impl StatusSource {
    /// When the server started, in milliseconds since the Unix epoch (the
    /// wall clock now less the monotonic time since the start).
    pub fn started_at_ms(&self) -> u64 {
        now_ms().saturating_sub(self.started.elapsed().as_millis() as u64)
    }
}

/// Wall-clock milliseconds since the Unix epoch (0 for a clock before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The cluster as this server reads it from ZooKeeper (the binary gives
/// one: the server crate does not know ZooKeeper).
pub type ClusterView = Box<dyn Fn() -> http_api::ClusterSeen + Send + Sync>;

/// What open Thrift scanners pin, measured.
pub struct ScannerPinned {
    /// Bytes of memstore memory (whole chunks, index bytes held) that only
    /// open scanners keep alive: the memstores let it go.
    pub bytes: u64,
    /// Scanners a call was using, not looked at.
    pub busy: usize,
}

/// The scanners' footprint first, then the memstores': a segment let go in
/// between counts as pinned, which it then is.
pub fn scanner_pinned(source: &StatusSource) -> ScannerPinned {
    let (held, busy) = source.scanners.memstore_footprint();
    ScannerPinned { bytes: held.bytes_not_in(&source.store.memstore_footprint()), busy }
}
