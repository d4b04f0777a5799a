//! `Server`: a store, its Thrift front end and its HTTP pages, started and
//! shut down together. Shutdown order matters: stop accepting and let
//! in-flight calls finish (Thrift), then stop the pages, then close the
//! store, which syncs the WAL; after that nothing acknowledged can be lost
//! even by a killed process.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hbase_rpc::RpcServer;
use store::Store;

use crate::config::ServerConfig;
use crate::gate::{GatedProcessor, ServingGate};
use crate::gateway::Gateway;
use crate::http::HttpServer;
use crate::request_history::{self, RequestHistory};
use crate::scanners::ScannerRegistry;
use crate::status_source::StatusSource;
use crate::thrift::handler::ThriftHandler;
use crate::thrift::hbase_thrift::HbaseSyncProcessor;
use crate::thrift::listener::ThriftServer;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("opening the store in {dir}: {source}")]
    Store { dir: String, source: store::StoreError },
    #[error("listening on {addr} ({what}): {source}")]
    Bind { addr: SocketAddr, what: &'static str, source: std::io::Error },
    #[error("starting the server's background threads: {0}")]
    Thread(std::io::Error),
    #[error("closing the store: {0}")]
    Close(store::StoreError),
    #[error("{0}")]
    AdminToken(String),
    #[error("TLS: {0}")]
    Tls(String),
}

pub struct Server {
    store: Arc<Store>,
    gate: Arc<ServingGate>,
    router: Arc<crate::peer::routing::Router>,
    cluster: Arc<OnceLock<crate::status_source::ClusterView>>,
    authority: Arc<OnceLock<Box<dyn crate::cluster_authority::ClusterAuthority>>>,
    log_levels: Arc<OnceLock<Box<dyn crate::log_level::LogLevelControl>>>,
    thrift: ThriftServer,
    http: HttpServer,
    /// HBase's native RPC (`crate::rpc`), when on, and who this server
    /// is to HBase's client.
    rpc: Option<(RpcServer, crate::rpc::Identity)>,
    scanners: Arc<ScannerRegistry>,
    /// Stops the scanner reaper and the metrics sampler.
    background_stop: Arc<AtomicBool>,
    background: Vec<JoinHandle<()>>,
    closed: bool,
}

impl Server {
    pub fn start(config: ServerConfig) -> Result<Server, ServerError> {
        let admin_token = match &config.admin_token_file {
            Some(path) => Some(crate::admin_auth::read_token_file(path).map_err(ServerError::AdminToken)?),
            None => None,
        };
        let tls = tls_files(&config)?;
        // Both ports are bound before the store opens: a port in use is
        // reported at once, before a WAL is replayed or rolled.
        let bind = |addr: SocketAddr, what: &'static str| {
            std::net::TcpListener::bind(addr).map_err(|source| ServerError::Bind { addr, what, source })
        };
        let thrift_listener = bind(config.thrift_addr, "thrift")?;
        let http_listener = bind(config.http_addr, "http")?;
        let rpc_listener = config.rpc_addr.map(|addr| bind(addr, "rpc")).transpose()?;
        for ignored in &config.ignored {
            tracing::warn!(property = %ignored, "ignored a property of the configuration file");
        }
        let where_ = config.root.clone().unwrap_or_else(|| config.data_dir.display().to_string());
        let store = match &config.root {
            Some(root) => store::fs::resolve_root(root)
                .and_then(|(fs, dir)| Store::open(dir, store::StoreOptions { fs, ..config.store.clone() })),
            None => Store::open(&config.data_dir, config.store.clone()),
        }
        .map_err(|source| ServerError::Store { dir: where_, source })?;
        let store = Arc::new(store);
        let scanners = Arc::new(ScannerRegistry::new(
            config.scanner_lease,
            config.max_open_scanners,
            config.max_scanners_per_connection,
            config.max_scanners_per_client,
        ));
        let gateway = Arc::new(Gateway::new(
            store.clone(),
            scanners.clone(),
            config.family_template.clone(),
            config.table_durability,
            config.requests.clone(),
        ));
        let requests = gateway.request_metrics().clone();
        let router = gateway.router().clone();
        if let Some(token) = &admin_token {
            router.set_admin_token(token.clone());
        }
        // A cluster member serving TLS calls the others over TLS with its
        // own certificate (`tls.rs`).
        if let Some(files) = tls.as_ref().filter(|_| config.store.member.is_some()) {
            router.set_peer_tls(crate::tls::peer_client_config(files).map_err(ServerError::Tls)?);
        }
        // In a cluster, every split or merge here (a call's, or one the
        // region's size started) reaches the other servers at once, as a
        // split call's does: they take the new regions from the root. On a
        // thread of its own: the store calls this holding the table's lock.
        let told = Arc::downgrade(&router);
        store.on_regions_changed(move |table| {
            if told.upgrade().is_none_or(|r| !r.is_cluster()) {
                return;
            }
            let (told, table) = (told.clone(), table.to_string());
            let _ = std::thread::Builder::new().name("tell-peers".into()).spawn(move || {
                if let Some(router) = told.upgrade() {
                    for failure in router.sync_table_everywhere(&table) {
                        tracing::warn!(table = %table, %failure, "another server did not take a split or merge; the master's next pass tells it");
                    }
                }
            });
        });
        let served_at = gateway.served_at().clone();
        let authority = Arc::new(OnceLock::new());
        let rpc = match rpc_listener {
            Some(listener) => Some(start_rpc(listener, gateway.clone(), store.dir(), &config, authority.clone())?),
            None => None,
        };
        let handler = ThriftHandler::new(gateway);
        let gate = Arc::new(ServingGate::default());
        let processor = Arc::new(GatedProcessor { inner: HbaseSyncProcessor::new(handler), gate: gate.clone() });
        // Set once the HTTP port is bound (see `relay_target`).
        let http_relay = Arc::new(OnceLock::new());
        let verified = Arc::new(crate::tls_relay::VerifiedPeers::new(
            crate::tls::AdminVerifier::new(tls.as_ref()).map_err(ServerError::Tls)?,
        ));
        let security = crate::thrift::listener::Security {
            tls: tls.as_ref().map(crate::tls::thrift_config).transpose().map_err(ServerError::Tls)?,
            http_relay: http_relay.clone(),
            verified: verified.clone(),
        };
        let https = match &tls {
            None => None,
            Some(files) => Some(crate::https::HttpsSetup {
                config: crate::tls::http_config(files).map_err(ServerError::Tls)?,
                verified: verified.clone(),
                idle: config.connection.idle_timeout,
                max_connections: config.max_connections,
                max_per_client: config.max_connections_per_client,
            }),
        };
        let thrift = ThriftServer::start(
            thrift_listener,
            processor,
            config.connection.clone(),
            crate::thrift::listener::ConnectionCaps {
                total: config.max_connections,
                per_client: config.max_connections_per_client,
            },
            config.shutdown_grace,
            scanners.clone(),
            security,
        )
        .map_err(|source| ServerError::Bind { addr: config.thrift_addr, what: "thrift", source })?;
        let _ = served_at.set(thrift.local_addr());
        let history = Arc::new(RequestHistory::new(config.metrics_period));
        let cluster = Arc::new(OnceLock::new());
        let log_levels = Arc::new(OnceLock::new());
        let source = StatusSource {
            store: store.clone(),
            scanners: scanners.clone(),
            thrift: thrift.counters.clone(),
            requests: requests.clone(),
            history: history.clone(),
            gate: gate.clone(),
            conf: config.to_toml(),
            started: Instant::now(),
            thrift_addr: thrift.local_addr(),
            rpc_addr: rpc.as_ref().map(|(r, _)| r.local_addr()),
            family_template: config.family_template.clone(),
            cluster: cluster.clone(),
            router: router.clone(),
            authority: authority.clone(),
            admin_auth: crate::admin_auth::AdminAuth::new(
                admin_token.clone(),
                &[thrift.local_addr(), config.http_addr],
            ),
            verified,
            log_levels: log_levels.clone(),
        };
        let http = HttpServer::start(http_listener, source, https).map_err(|source| ServerError::Bind {
            addr: config.http_addr,
            what: "http",
            source,
        })?;
        if let Some(target) = relay_target(thrift.local_addr(), http.local_addr()) {
            // Behind a TLS front the pages are served on loopback.
            let _ = http_relay.set(if tls.is_some() { http.plain_addr() } else { target });
        }
        let background_stop = Arc::new(AtomicBool::new(false));
        let reaper = {
            let (stop, scanners) = (background_stop.clone(), scanners.clone());
            let every = (config.scanner_lease / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
            std::thread::Builder::new().name("scanner-reaper".into()).spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(every);
                    let n = scanners.reap();
                    if n > 0 {
                        tracing::info!(expired = n, "closed scanners whose lease expired");
                    }
                }
            })
        };
        let sampler = {
            let stop = background_stop.clone();
            std::thread::Builder::new().name("metrics-sampler".into()).spawn(move || {
                let mut next = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    if Instant::now() >= next {
                        history.record(crate::status_source::now_ms(), request_history::totals(&requests.snapshot()));
                        next += history.period();
                    }
                    // Short sleeps so shutdown never waits a whole period.
                    std::thread::sleep(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
                }
            })
        };
        let background = [reaper, sampler].into_iter().collect::<Result<Vec<_>, _>>().map_err(ServerError::Thread)?;
        tracing::info!(
            root = %config.root.clone().unwrap_or_else(|| config.data_dir.display().to_string()),
            thrift = %thrift.local_addr(),
            http = %http.local_addr(),
            rpc = %rpc.as_ref().map_or_else(|| "off".to_string(), |(r, _)| r.local_addr().to_string()),
            "accordion server started"
        );
        Ok(Server {
            store,
            gate,
            router,
            cluster,
            authority,
            log_levels,
            thrift,
            http,
            rpc,
            scanners,
            background_stop,
            background,
            closed: false,
        })
    }

    pub fn thrift_addr(&self) -> SocketAddr {
        self.thrift.local_addr()
    }

    pub fn http_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// Where HBase's native RPC listens, when it is on.
    pub fn rpc_addr(&self) -> Option<SocketAddr> {
        self.rpc.as_ref().map(|(r, _)| r.local_addr())
    }

    /// What HBase's client znodes hold to name this server (a cluster
    /// member keeps them, `cluster::client_znodes`); `None` without an
    /// RPC port.
    pub fn hbase_client_znodes(&self) -> Option<crate::rpc::ClientZnodeData> {
        self.rpc.as_ref().map(|(_, identity)| crate::rpc::client_znode_data(identity, self.http_addr().port()))
    }

    /// Whether calls may be served (cluster membership sets its check).
    pub fn gate(&self) -> &Arc<ServingGate> {
        &self.gate
    }

    /// Where calls for regions other servers hold go (cluster membership
    /// gives it the other live servers).
    pub fn router(&self) -> &Arc<crate::peer::routing::Router> {
        &self.router
    }

    /// Cluster mode: what `/status` shows of the cluster (once joined).
    pub fn set_cluster_view(&self, view: crate::status_source::ClusterView) {
        let _ = self.cluster.set(view);
    }

    /// Cluster mode: what admin calls check before they fence a WAL or open
    /// a region (once joined; until then they are refused).
    pub fn set_cluster_authority(&self, authority: Box<dyn crate::cluster_authority::ClusterAuthority>) {
        let _ = self.authority.set(authority);
    }

    /// What `/logLevel` reads and changes: the process's log filter (the
    /// binary that installed the logger gives it; once).
    pub fn set_log_level_control(&self, control: Box<dyn crate::log_level::LogLevelControl>) {
        let _ = self.log_levels.set(control);
    }

    /// Thrift scanners open now.
    pub fn scanners_open(&self) -> usize {
        self.scanners.len()
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Stops accepting, finishes in-flight calls, syncs the WAL and closes
    /// the store.
    pub fn shutdown(&mut self) -> Result<(), ServerError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        tracing::info!("shutting down: finishing in-flight calls");
        self.thrift.shutdown();
        if let Some((rpc, _)) = self.rpc.take() {
            rpc.shutdown();
        }
        self.http.shutdown();
        self.background_stop.store(true, Ordering::Release);
        for t in self.background.drain(..) {
            let _ = t.join();
        }
        self.scanners.clear();
        self.store.close().map_err(ServerError::Close)?;
        tracing::info!("store closed; bye");
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(error = %e, "shutdown failed");
        }
    }
}

/// Where the Thrift port relays HTTP requests (`http_relay.rs`): the HTTP
/// port, but only when it listens wherever the Thrift port does. An HTTP
/// port bound more narrowly (loopback only, say, beside a public Thrift
/// port) was kept from those clients on purpose, so its `/admin` calls are
/// not offered to them through the Thrift port.
fn relay_target(thrift: SocketAddr, http: SocketAddr) -> Option<SocketAddr> {
    let reachable = http.ip().is_unspecified() || http.ip() == thrift.ip();
    if !reachable {
        tracing::info!(%thrift, %http, "HTTP calls on the Thrift port are off: the HTTP port listens more narrowly");
        return None;
    }
    let ip = if http.ip().is_unspecified() {
        if http.is_ipv4() { std::net::Ipv4Addr::LOCALHOST.into() } else { std::net::Ipv6Addr::LOCALHOST.into() }
    } else {
        http.ip()
    };
    Some(SocketAddr::new(ip, http.port()))
}

/// The TLS files when `tls_enabled`, checked: both a certificate and a key,
/// and for a cluster member the cluster's CA (`tls_admin_ca`), by which
/// members and the master authenticate each other.
fn tls_files(config: &ServerConfig) -> Result<Option<crate::tls::TlsFiles>, ServerError> {
    if !config.tls_enabled {
        if config.tls_cert.is_some()
            || config.tls_key.is_some()
            || config.tls_client_ca.is_some()
            || config.tls_admin_ca.is_some()
        {
            // Serving plain Thrift to clients that were meant to use TLS
            // would be a silent downgrade.
            return Err(ServerError::Tls(
                "tls_cert, tls_key, tls_client_ca or tls_admin_ca is set but tls_enabled (hbase.thrift.ssl.enabled) \
                 is false"
                    .into(),
            ));
        }
        return Ok(None);
    }
    let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) else {
        return Err(ServerError::Tls("tls_enabled (hbase.thrift.ssl.enabled) needs tls_cert and tls_key".into()));
    };
    if config.store.member.is_some() && config.tls_admin_ca.is_none() {
        return Err(ServerError::Tls(
            "a cluster member serving TLS needs tls_admin_ca (the cluster's CA): the servers and the master \
             present certificates it signed to each other"
                .into(),
        ));
    }
    Ok(Some(crate::tls::TlsFiles {
        cert: cert.clone(),
        key: key.clone(),
        client_ca: config.tls_client_ca.clone(),
        admin_ca: config.tls_admin_ca.clone(),
    }))
}

/// Starts HBase's native RPC on `listener` over `gateway`; the client is
/// told this server's address (the host's name when bound to every
/// address) and the cluster id of the store at `root`.
fn start_rpc(
    listener: std::net::TcpListener,
    gateway: Arc<Gateway>,
    root: &std::path::Path,
    config: &ServerConfig,
    authority: crate::rpc::Authority,
) -> Result<(RpcServer, crate::rpc::Identity), ServerError> {
    let remote_ddl = config.rpc_remote_ddl;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: listener_addr(&listener),
        what: "rpc",
        source,
    })?;
    let host = if addr.ip().is_unspecified() {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into())
    } else {
        addr.ip().to_string()
    };
    // In a cluster, the member's start code: the others name this server
    // in `hbase:meta` by it (`peer::routing::rpc_location`).
    let member_code = config.store.member.as_deref().and_then(crate::peer::routing::member_start_code);
    let start_code = member_code.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    });
    let identity =
        crate::rpc::Identity { cluster_id: crate::rpc::cluster_id_for(root), host, port: addr.port(), start_code };
    if remote_ddl && !addr.ip().is_loopback() {
        tracing::warn!("rpc_remote_ddl: the RPC port at {addr} serves schema changes to every caller, unauthenticated");
    }
    let ddl = crate::rpc::DdlAdmission { remote_allowed: remote_ddl };
    let cluster = crate::rpc::ClusterLink { authority, member: config.store.member.clone() };
    let adapter = Arc::new(crate::rpc::RpcAdapter::new(gateway, identity.clone(), ddl, cluster));
    RpcServer::start_with(listener, adapter, rpc_server_config(config))
        .map(|server| (server, identity))
        .map_err(|source| ServerError::Bind { addr, what: "rpc", source })
}

/// What the RPC server takes from our settings; its other limits are
/// `hbase_rpc`'s defaults.
fn rpc_server_config(config: &ServerConfig) -> hbase_rpc::RpcServerConfig {
    hbase_rpc::RpcServerConfig { workers: config.rpc_handlers, ..Default::default() }
}

fn listener_addr(listener: &std::net::TcpListener) -> SocketAddr {
    listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
}

#[cfg(test)]
mod tests {
    use super::{relay_target, rpc_server_config};
    use crate::ServerConfig;

    #[test]
    fn the_rpc_port_runs_as_many_handlers_as_rpc_handlers_says() {
        assert_eq!(rpc_server_config(&ServerConfig::default()).workers, 16, "the default");
        let set = ServerConfig::load(None, &["rpc_handlers=3".to_string()]).expect("a valid setting");
        assert_eq!(rpc_server_config(&set).workers, 3);
        let hbase =
            ServerConfig::load(None, &["hbase.regionserver.handler.count=30".to_string()]).expect("HBase's name");
        assert_eq!(rpc_server_config(&hbase).workers, 30);
        assert!(ServerConfig::load(None, &["rpc_handlers=many".to_string()]).is_err());
    }

    #[test]
    fn http_is_relayed_only_to_a_port_that_listens_where_thrift_does() {
        let at = |s: &str| s.parse().expect("address");
        assert_eq!(relay_target(at("127.0.0.1:9090"), at("127.0.0.1:16030")), Some(at("127.0.0.1:16030")));
        assert_eq!(relay_target(at("10.0.0.5:9090"), at("0.0.0.0:16030")), Some(at("127.0.0.1:16030")));
        assert_eq!(relay_target(at("0.0.0.0:9090"), at("0.0.0.0:16030")), Some(at("127.0.0.1:16030")));
        assert_eq!(relay_target(at("[::]:9090"), at("[::]:16030")), Some(at("[::1]:16030")));
        assert_eq!(relay_target(at("0.0.0.0:9090"), at("127.0.0.1:16030")), None, "loopback-only HTTP stays so");
        assert_eq!(relay_target(at("10.0.0.5:9090"), at("10.0.0.6:16030")), None);
    }
}
