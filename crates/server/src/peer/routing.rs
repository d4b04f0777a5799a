//! Calls for regions another region server holds (cluster mode): HBase's
//! Thrift gateway is itself a cluster client, so a client connected to any
//! server reaches every region; ours forwards such a call to the server
//! that holds the region, over that server's own Thrift port.
//!
//! Which regions exist is known here: every member of a cluster lists every
//! region of the shared root, and the ones it does not hold are OFFLINE
//! placeholders with their exact key ranges (`store::member`). Who holds an
//! OFFLINE one is looked up in the master's catalog ([`Locator`]: one read
//! of the region's entry and of its server's membership in the binary),
//! as HBase's client looks a region up in `hbase:meta`; the answer is kept
//! until a forwarded call fails with NotServingRegion or cannot connect
//! ([`Router::forget`]), then looked up again. Callers that need every
//! region's owner at once (`getTableRegions`, the registry, the cluster
//! status) and a lookup the catalog cannot answer ask the other live
//! servers instead ([`Peers`]): each one's `/status` lists the regions it
//! has OPEN, by encoded name (at most every [`REFRESH_INTERVAL`]).
//!
//! A forwarded call goes over a connection that announces itself as a
//! peer's ([`serve_as_peer`]): the server that gets it answers or refuses,
//! never forwards it again, so owner maps gone stale on two servers cannot
//! bounce a call between them. If the region has moved since it was looked
//! up, the answer is NotServingRegion, the owner is forgotten, and the
//! client sees that error as an HBase client would, and retries. The lease
//! gate of the owner still decides whether it may serve at all. A forwarded
//! call may take at most [`CALL_TIMEOUT`].
//!
//! Thread safety: the owner map and the connection pool each sit behind a
//! mutex held for a lookup or an insert, never across a network call; a
//! pooled connection is used by one call at a time (taken out, put back).
//! One refresh of the owner map runs at a time (`refreshing`, held across
//! its requests and taken before the map's mutex): a caller that arrives
//! meanwhile waits for it and reads its answer, not the map it replaces.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::thrift::client::{ThriftClient, connect_as_peer};

thread_local! {
    /// Whether the connection this thread serves is another region server
    /// forwarding calls (it sent `client::PEER_PREAMBLE`).
    static FROM_PEER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the current connection thread as serving another region server's
/// forwarded calls: they are answered here or refused, never forwarded
/// again, so a stale owner map on two servers cannot bounce a call between
/// them.
pub fn serve_as_peer() {
    FROM_PEER.with(|p| p.set(true));
}

/// Whether the current thread serves forwarded calls (see [`serve_as_peer`]).
pub fn serving_peer() -> bool {
    FROM_PEER.with(std::cell::Cell::get)
}

/// How long a forwarded call may take (HBase's `hbase.rpc.timeout`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A pooled connection idle longer than this is not reused: the other
/// server closes idle connections after its idle timeout (60 s).
const POOL_IDLE: Duration = Duration::from_secs(20);

/// How often the owner map may be asked for again.
pub const REFRESH_INTERVAL: Duration = Duration::from_millis(200);

/// How long asking one server for its regions may take.
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// How long another server may take to take a table's DDL from the root
/// (a disable flushes the table's regions there).
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Connections kept open to each other server.
const POOLED_PER_SERVER: usize = 8;

/// Another live region server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its member name (`host,pid,startcode`), as the master names it.
    pub name: String,
    /// Its Thrift address (`host:port`).
    pub thrift: String,
    /// Its HTTP address (`host:port`), for `/status`.
    pub http: String,
    /// Where it serves HBase's native RPC, as its membership says.
    pub rpc: Option<RpcLocation>,
}

/// The other live region servers, asked each time the owner map refreshes.
pub type Peers = Box<dyn Fn() -> Result<Vec<Peer>, String> + Send + Sync>;

/// Where the live servers the master's catalog records each of `regions`
/// OPEN on serve (a region left out: no such server, or the catalog has no
/// entry), in one question, or why it could not be read.
pub type Locator = Box<dyn Fn(&[String]) -> Result<std::collections::HashMap<String, Located>, String> + Send + Sync>;

/// A region's server as the catalog and the membership name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Its Thrift address.
    pub thrift: String,
    /// Where it serves HBase's native RPC, if it does.
    pub rpc: Option<RpcLocation>,
}

/// Where regions held elsewhere are served; see the module doc.
#[derive(Default)]
pub struct Router {
    peers: OnceLock<Peers>,
    locator: OnceLock<Locator>,
    /// The token other servers' admin calls need (`admin_auth.rs`).
    admin_token: OnceLock<String>,
    /// A cluster serving TLS: how this server calls the others (`tls.rs`).
    peer_tls: OnceLock<std::sync::Arc<rustls::ClientConfig>>,
    owners: Mutex<Owners>,
    refreshing: Mutex<()>,
    pool: Mutex<HashMap<String, Vec<(ThriftClient, Instant)>>>,
}

#[derive(Default)]
struct Owners {
    /// Encoded region name → Thrift address of the server holding it OPEN.
    by_region: HashMap<String, String>,
    /// Thrift address → where that server serves HBase's native RPC, as
    /// its last `/status` said.
    rpc: HashMap<String, RpcLocation>,
    refreshed: Option<Instant>,
}

/// Where a server serves HBase's native RPC: the host other servers reach
/// it at (its Thrift address's), its RPC port, and its start code (from
/// its member name `host,port,startcode`), as `hbase:meta` names servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcLocation {
    pub host: String,
    pub port: u16,
    pub start_code: u64,
}

impl RpcLocation {
    /// The location of member `name` (`host,port,startcode`) reached at
    /// Thrift address `thrift`, serving RPC at `rpc` (`host:port`).
    pub fn of(name: &str, thrift: &str, rpc: &str) -> Option<RpcLocation> {
        let host = thrift.rsplit_once(':')?.0.to_string();
        let port = rpc.rsplit_once(':')?.1.parse().ok()?;
        Some(RpcLocation { host, port, start_code: member_start_code(name)? })
    }
}

impl Router {
    /// Cluster mode: regions this server does not hold are looked for on
    /// `peers`. Without it (one server) nothing is forwarded.
    pub fn set_peers(&self, peers: Peers) {
        let _ = self.peers.set(peers);
    }

    /// Cluster mode: a region's owner is looked up in the master's catalog
    /// before any peer is asked (see the module doc).
    pub fn set_locator(&self, locator: Locator) {
        let _ = self.locator.set(locator);
    }

    /// The token this server sends with its admin calls to other servers
    /// (the cluster's servers share one).
    pub fn set_admin_token(&self, token: String) {
        let _ = self.admin_token.set(token);
    }

    /// A cluster serving TLS: this server calls the others over TLS with
    /// this configuration (its own certificate, the cluster's CA).
    pub fn set_peer_tls(&self, config: std::sync::Arc<rustls::ClientConfig>) {
        let _ = self.peer_tls.set(config);
    }

    /// How this server reaches the others' HTTP ports.
    pub fn peer_access(&self) -> crate::peer::http::PeerAccess {
        crate::peer::http::PeerAccess { token: self.admin_token.get().cloned(), tls: self.peer_tls.get().cloned() }
    }

    /// A new connection to another server's Thrift port, as a peer.
    pub fn connect(&self, addr: &str) -> thrift::Result<ThriftClient> {
        connect_as_peer(addr, CALL_TIMEOUT, self.peer_tls.get())
    }

    /// The other live servers now (one read of the membership).
    pub fn peers(&self) -> Result<Vec<Peer>, String> {
        match self.peers.get() {
            Some(peers) => peers(),
            None => Ok(Vec::new()),
        }
    }

    /// The HTTP address of the live server at Thrift address `thrift`.
    pub fn peer_http(&self, thrift: &str) -> Option<String> {
        self.peers().ok()?.into_iter().find(|p| p.thrift == thrift).map(|p| p.http)
    }

    pub fn is_cluster(&self) -> bool {
        self.peers.get().is_some()
    }

    /// The Thrift address of the server holding region `encoded` OPEN, if
    /// any live server does.
    pub fn owner(&self, encoded: &str) -> Option<String> {
        if let Some(addr) = self.owners.lock().by_region.get(encoded) {
            return Some(addr.clone());
        }
        if let Some(addr) = self.locate(encoded) {
            return Some(addr);
        }
        self.refresh();
        self.owners.lock().by_region.get(encoded).cloned()
    }

    /// The owner of region `encoded` as the master's catalog records it
    /// now (not as kept from an earlier lookup), and kept from now on;
    /// `None` without a catalog to read, or when it names no live owner.
    /// A client told where a region is (`hbase:meta`) is told this, so a
    /// region that moved is found at once.
    pub fn locate(&self, encoded: &str) -> Option<String> {
        self.locate_many(&[encoded.to_string()]).remove(encoded)
    }

    /// [`locate`](Self::locate) for each of `regions`, in one question to
    /// the catalog: the Thrift address of each region's live owner (a
    /// region left out has none, or the catalog could not be read).
    pub fn locate_many(&self, regions: &[String]) -> std::collections::HashMap<String, String> {
        let Some(locate) = self.locator.get() else { return Default::default() };
        if regions.is_empty() {
            return Default::default();
        }
        match locate(regions) {
            Ok(found) => {
                let mut owners = self.owners.lock();
                found
                    .into_iter()
                    .map(|(encoded, Located { thrift, rpc })| {
                        owners.by_region.insert(encoded.clone(), thrift.clone());
                        if let Some(rpc) = rpc {
                            owners.rpc.insert(thrift.clone(), rpc);
                        }
                        (encoded, thrift)
                    })
                    .collect()
            }
            Err(e) => {
                tracing::debug!(regions = regions.len(), error = %e, "cannot read the catalog to route a call");
                Default::default()
            }
        }
    }

    /// The owner of region `encoded` as last looked up, if it was.
    pub fn cached(&self, encoded: &str) -> Option<String> {
        self.owners.lock().by_region.get(encoded).cloned()
    }

    /// Whether owners are looked up in the master's catalog.
    pub fn has_locator(&self) -> bool {
        self.locator.get().is_some()
    }

    /// Where the server at Thrift address `thrift` serves HBase's native
    /// RPC, as its `/status` said at the last refresh; `None`: unknown, or
    /// it has no RPC port.
    pub fn rpc_location(&self, thrift: &str) -> Option<RpcLocation> {
        self.owners.lock().rpc.get(thrift).cloned()
    }

    /// Every other live server's RPC location known at the last refresh.
    pub fn rpc_locations(&self) -> Vec<RpcLocation> {
        self.owners.lock().rpc.values().cloned().collect()
    }

    /// Every other live server's RPC location as the membership says now
    /// (no server is asked).
    pub fn member_rpc_locations(&self) -> Vec<RpcLocation> {
        let Some(peers) = self.peers.get() else { return Vec::new() };
        match peers() {
            Ok(peers) => peers.into_iter().filter_map(|p| p.rpc).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the other region servers");
                Vec::new()
            }
        }
    }

    /// Forgets where region `encoded` was (its owner could not be reached
    /// or no longer serves it); the next lookup asks the servers again.
    pub fn forget(&self, encoded: &str) {
        let mut owners = self.owners.lock();
        owners.by_region.remove(encoded);
        owners.refreshed = None;
    }

    /// Whether a forwarded call's failure says the region is not where it
    /// was looked for: the connection failed, or the server answered that
    /// it does not serve the region. Any other answer (a disabled table, a
    /// bad argument) is the owner's own, and it stays the owner.
    pub fn moved(result: &thrift::Error) -> bool {
        match result {
            thrift::Error::User(_) => {
                crate::thrift::client::error_message(result).contains("NotServingRegionException")
            }
            _ => true,
        }
    }

    /// Asks every other live server which regions it has OPEN, so that
    /// the map is newer than this call: a refresh that began after it was
    /// made is enough (it waits for that one); otherwise it refreshes, at
    /// most once per [`REFRESH_INTERVAL`] (waiting out the rest of it). A
    /// lookup trusts what it learned until a call fails or it misses (a
    /// region split or moved a moment ago must be found, not refused); a
    /// caller that tells clients where regions are (`getTableRegions`)
    /// refreshes first, or a client would be sent on to a dead server's
    /// address that no call here ever tried.
    pub fn refresh(&self) {
        let Some(peers) = self.peers.get() else { return };
        let asked = Instant::now();
        let _one = self.refreshing.lock();
        let last = self.owners.lock().refreshed;
        if last.is_some_and(|began| began >= asked) {
            return;
        }
        if let Some(wait) = last.and_then(|began| REFRESH_INTERVAL.checked_sub(began.elapsed())) {
            std::thread::sleep(wait);
        }
        self.owners.lock().refreshed = Some(Instant::now());
        let peers = match peers() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the other region servers to route a call");
                return;
            }
        };
        let mut by_region = HashMap::new();
        let mut rpc = HashMap::new();
        let mut unread = Vec::new();
        let access = self.peer_access();
        for peer in peers {
            match peer_status(&access, &peer) {
                Ok(status) => {
                    by_region.extend(status.open_region_ids().into_iter().map(|r| (r, peer.thrift.clone())));
                    if let Some(location) = rpc_location(&peer, &status) {
                        rpc.insert(peer.thrift.clone(), location);
                    }
                }
                Err(e) => {
                    tracing::debug!(server = %peer.thrift, error = %e, "cannot read a region server's regions");
                    unread.push(peer.thrift);
                }
            }
        }
        let mut owners = self.owners.lock();
        // A live server that did not answer this time (busy) keeps the
        // regions it was known to hold.
        for (region, owner) in owners.by_region.drain() {
            if unread.contains(&owner) {
                by_region.entry(region).or_insert(owner);
            }
        }
        owners.by_region = by_region;
        for (server, location) in owners.rpc.drain() {
            if unread.contains(&server) {
                rpc.entry(server).or_insert(location);
            }
        }
        owners.rpc = rpc;
    }

    /// Has every other live server take table `table`'s state from the
    /// root (`POST /admin/sync_table`) after this server's DDL changed it,
    /// and waits for each; returns the servers that did not confirm, with
    /// why. Nothing to do outside a cluster.
    pub fn sync_table_everywhere(&self, table: &str) -> Vec<String> {
        let Some(peers) = self.peers.get() else { return Vec::new() };
        let peers = match peers() {
            Ok(p) => p,
            Err(e) => return vec![format!("the other servers could not be listed: {e}")],
        };
        let query: String = table
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let access = self.peer_access();
        let mut failed = Vec::new();
        for peer in peers {
            let path = format!("/admin/sync_table?table={query}");
            if let Err(e) = access.request(&peer.http, "POST", &path, SYNC_TIMEOUT) {
                failed.push(format!("{}: {e}", peer.thrift));
            }
        }
        failed
    }

    /// Runs `call` on a connection to the server at `addr` (pooled). A
    /// connection whose call failed below the Thrift layer is dropped; if it
    /// came from the pool (the other server may have closed it meanwhile),
    /// the call is made once more on a new connection.
    pub fn call<T>(
        &self,
        addr: &str,
        mut call: impl FnMut(&mut ThriftClient) -> thrift::Result<T>,
    ) -> thrift::Result<T> {
        let pooled = {
            let mut pool = self.pool.lock();
            let idle = pool.entry(addr.to_string()).or_default();
            idle.retain(|(_, since)| since.elapsed() < POOL_IDLE);
            idle.pop()
        };
        let (mut client, reused) = match pooled {
            Some((c, _)) => (c, true),
            None => (self.connect(addr)?, false),
        };
        let stale = |r: &thrift::Result<T>| matches!(r, Err(e) if !matches!(e, thrift::Error::User(_)));
        let mut result = call(&mut client);
        if reused && stale(&result) {
            tracing::debug!(server = %addr, "a pooled connection to another server failed; calling again on a new one");
            client = self.connect(addr)?;
            result = call(&mut client);
        }
        let broken = stale(&result);
        if !broken {
            let mut pool = self.pool.lock();
            let idle = pool.entry(addr.to_string()).or_default();
            if idle.len() < POOLED_PER_SERVER {
                idle.push((client, Instant::now()));
            }
        }
        result
    }
}

/// `peer`'s `/status`.
fn peer_status(access: &crate::peer::http::PeerAccess, peer: &Peer) -> Result<http_api::ServerStatus, String> {
    let body = access.request(&peer.http, "GET", "/status", STATUS_TIMEOUT)?;
    serde_json::from_str(&body).map_err(|e| e.to_string())
}

/// Where `peer` serves HBase's native RPC, from its `/status`: the host of
/// its Thrift address (how the cluster reaches it, even when its RPC port
/// is bound to every address), its RPC port, its member start code.
fn rpc_location(peer: &Peer, status: &http_api::ServerStatus) -> Option<RpcLocation> {
    let port = status.server.rpc_addr.as_deref()?.parse::<std::net::SocketAddr>().ok()?.port();
    let host = peer.thrift.rsplit_once(':').map_or(peer.thrift.as_str(), |(h, _)| h).to_string();
    let start_code = status.server.member.as_deref().and_then(member_start_code).unwrap_or(0);
    Some(RpcLocation { host, port, start_code })
}

/// The start code of a member name `host,port,startcode`.
pub fn member_start_code(member: &str) -> Option<u64> {
    member.rsplit(',').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_peers_nothing_is_owned_elsewhere() {
        let router = Router::default();
        assert!(!router.is_cluster());
        assert_eq!(router.owner("a"), None);
    }

    #[test]
    fn the_catalog_answers_a_lookup_and_no_peer_is_asked_until_it_cannot() {
        let router = Router::default();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        router.set_peers(Box::new(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Vec::new())
        }));
        let located = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let lookups = located.clone();
        router.set_locator(Box::new(move |regions| {
            lookups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(regions
                .iter()
                .filter(|r| *r == "a" || *r == "c")
                .map(|r| (r.clone(), Located { thrift: format!("127.0.0.1:{}", r.len() + 6), rpc: None }))
                .collect())
        }));
        assert_eq!(router.owner("a").as_deref(), Some("127.0.0.1:7"));
        assert_eq!(router.owner("a").as_deref(), Some("127.0.0.1:7"), "kept");
        assert_eq!(located.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0, "no peer's status read");
        // A forwarded call found it gone: looked up again.
        router.forget("a");
        assert_eq!(router.owner("a").as_deref(), Some("127.0.0.1:7"));
        assert_eq!(located.load(std::sync::atomic::Ordering::SeqCst), 2);
        // The catalog has no owner for "b": the peers are asked.
        assert_eq!(router.owner("b"), None);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Several regions, one question; each found one is kept.
        let found = router.locate_many(&["a".to_string(), "b".to_string(), "c".to_string()]);
        assert_eq!(found.len(), 2);
        assert_eq!(located.load(std::sync::atomic::Ordering::SeqCst), 4);
        assert_eq!(router.cached("c").as_deref(), Some("127.0.0.1:7"));
    }

    #[test]
    fn a_miss_right_after_a_refresh_asks_again_once_the_interval_is_over() {
        // One peer whose status lists region "a" at first, then "a" and
        // "b" (a split there, say).
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind");
        let http = server.server_addr().to_ip().expect("ip").to_string();
        let regions = std::sync::Arc::new(parking_lot::Mutex::new(vec!["a"]));
        let listed = regions.clone();
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let open = listed
                    .lock()
                    .iter()
                    .map(|id| http_api::RegionStatus::listed(id, store::RegionState::Open))
                    .collect();
                let doc = http_api::ServerStatus {
                    tables: vec![http_api::TableStatus { name: "t".into(), enabled: true, regions: open }],
                    ..http_api::ServerStatus::default()
                };
                let json = serde_json::to_string(&doc).expect("json");
                let _ = request.respond(tiny_http::Response::from_string(json));
            }
        });
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let router = Router::default();
        let counter = asked.clone();
        let peer = Peer { name: "h,1,1".into(), thrift: "127.0.0.1:1".into(), http, rpc: None };
        router.set_peers(Box::new(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(vec![peer.clone()])
        }));
        let first = Instant::now();
        assert_eq!(router.owner("a").as_deref(), Some("127.0.0.1:1"));
        regions.lock().push("b");
        // Asked again (not refused from the map of a moment ago), once the
        // interval since the last asking is over.
        assert_eq!(router.owner("b").as_deref(), Some("127.0.0.1:1"), "a region new since the last refresh");
        assert!(first.elapsed() >= REFRESH_INTERVAL, "not asked again within the interval");
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
        // A hit asks nobody.
        assert_eq!(router.owner("a").as_deref(), Some("127.0.0.1:1"));
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
