//! `accordion server`: runs the store behind HBase's Thrift API and the
//! HTTP pages until SIGTERM or SIGINT, then shuts down gracefully (stop
//! accepting, finish in-flight calls, sync the WAL, close).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use server::{Server, ServerConfig};

#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// A TOML file: data_dir, thrift_addr, http_addr and a [properties]
    /// table of HBase property names.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Data directory on local disk (default ./data).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Where the store lives, as a URI: hdfs://HOST:PORT/PATH (files and
    /// WAL on HDFS) or file:///PATH; wins over --data-dir.
    #[arg(long)]
    pub root: Option<String>,
    /// Thrift address (default 127.0.0.1:9090).
    #[arg(long)]
    pub thrift_addr: Option<String>,
    /// HTTP address for /metrics, /status and the status page (default
    /// 127.0.0.1:16030).
    #[arg(long)]
    pub http_addr: Option<String>,
    /// Serve the Thrift and HTTP ports over TLS with this certificate chain
    /// (PEM); needs --tls-key (the setting tls_cert; with tls_enabled).
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
    /// Require Thrift clients to present a certificate signed by one of
    /// these CAs (PEM): mutual TLS.
    #[arg(long)]
    pub tls_client_ca: Option<PathBuf>,
    /// With --tls-cert: client certificates these CAs (PEM) signed
    /// authenticate admin calls (operators'; in a cluster, the cluster's
    /// CA, which the servers and the master present to each other).
    #[arg(long)]
    pub tls_admin_ca: Option<PathBuf>,
    /// Join a cluster: zk://HOST:PORT[,HOST:PORT]/ROOT. The server registers
    /// with ZooKeeper, shares its root with the cluster's other servers and
    /// serves the regions the master assigns it, only while its membership
    /// lease holds; it exits when its session ends (HBase's region server
    /// aborts likewise).
    #[arg(long)]
    pub cluster: Option<String>,
    /// ZooKeeper session timeout in milliseconds with --cluster (HBase's
    /// zookeeper.session.timeout, 90000).
    #[arg(long, default_value_t = 90_000)]
    pub session_timeout_ms: u64,
    /// The cluster's secret file with --cluster: ZooKeeper digest
    /// authentication, and every node made readable and writable only by
    /// sessions that know it (the master and every server use the same).
    #[arg(long)]
    pub cluster_secret_file: Option<PathBuf>,
    /// A setting by HBase property name, e.g.
    /// --set hbase.hregion.compacting.memstore.type=EAGER (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration (defaults, then --config, then the
    /// flags) as TOML, every setting with its meaning, HBase property name
    /// and default, and exit (docs/accordion.toml is this for the defaults).
    #[arg(long)]
    pub print_config: bool,
}

/// The znode whose sequence numbers new region ids (under the cluster root).
const REGION_IDS: &str = "region-ids";

/// A cluster member before its store opens: connected to ZooKeeper and
/// registered under its name, which also names its WAL directory on the
/// shared root (see `cluster::membership`).
struct Joining {
    zk: Arc<cluster::zk::Zk>,
    info: cluster::membership::ServerInfo,
    /// Proves the membership: the gate and every commit ask it.
    lease: Arc<cluster::lease::Lease>,
}

/// Connects to the cluster's ZooKeeper, agrees on the cluster's root (see
/// `cluster::cluster_config`; the root to use is returned) and registers as
/// a starting server named `host,pid,start ms` (unique for each start, as
/// HBase's `host,port,startcode`: the Thrift port may not be known before it
/// binds).
fn join_cluster(
    url: &str,
    host: &str,
    session_timeout: Duration,
    root: &cluster::cluster_config::Proposed,
    secret: Option<&std::path::Path>,
) -> anyhow::Result<(Joining, String)> {
    let mut url: cluster::zk::ZkUrl = url.parse()?;
    if let Some(path) = secret {
        url = url.with_secret(cluster::zk::Secret::from_file(path)?);
    }
    let zk = Arc::new(cluster::zk::Zk::connect(&url, session_timeout)?);
    let start_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let info = cluster::membership::ServerInfo::starting(format!("{host},{},{start_ms}", std::process::id()), start_ms);
    let agreed = cluster::cluster_config::agree(&zk, &info.name, root)?;
    cluster::membership::register(&zk, &info)?;
    let lease =
        cluster::lease::Lease::keep_member(zk.clone(), format!("{}/{}", cluster::membership::SERVERS, info.name));
    Ok((Joining { zk, info, lease }, agreed.root))
}

/// This server's root as the cluster records it: the `--root` URI, or the
/// data directory as an absolute `file://` URI; `Given` when the operator
/// chose it (a flag, a setting, or a config file that names a root or a
/// data directory other than the default), `Default` otherwise.
fn proposed_root(args: &ServerArgs, config: &ServerConfig) -> anyhow::Result<cluster::cluster_config::Proposed> {
    let root = match &config.root {
        Some(r) => r.clone(),
        None => format!(
            "file://{}",
            std::path::absolute(&config.data_dir)
                .with_context(|| format!("the data directory {}", config.data_dir.display()))?
                .display()
        ),
    };
    let defaults = ServerConfig::load(None, &[])?;
    let given = args.root.is_some()
        || args.data_dir.is_some()
        || args.sets.iter().any(|s| s.starts_with("root=") || s.starts_with("data_dir="))
        || config.root != defaults.root
        || config.data_dir != defaults.data_dir;
    Ok(if given {
        cluster::cluster_config::Proposed::Given(root)
    } else {
        cluster::cluster_config::Proposed::Default(root)
    })
}

/// Once the server listens: its gate closes whenever its membership lease
/// has run out, and its addresses are published.
/// A member's ZooKeeper session and the thread reporting its regions to
/// the active master (kept for as long as the server runs).
struct Membership {
    zk: Arc<cluster::zk::Zk>,
    _reporter: server::master_report::Reporter,
}

fn serve_in_cluster(server: &Server, joining: Joining) -> anyhow::Result<Membership> {
    let Joining { zk, mut info, lease } = joining;
    server.gate().set(move || {
        (!lease.valid())
            .then(|| "this region server cannot prove its cluster membership (ZooKeeper lease expired)".to_string())
    });
    info.thrift = server.thrift_addr().to_string();
    info.http = server.http_addr().to_string();
    info.rpc = server.rpc_addr().map(|a| a.to_string());
    cluster::membership::publish(&zk, &info)?;
    // Admin calls that fence a WAL or open a region check first: the
    // membership in ZooKeeper, the catalog with the active master.
    let catalog = Arc::new(MasterCatalogClient::new(zk.clone(), server.router().peer_access()));
    server.set_cluster_authority(Box::new(ClusterChecks { zk: zk.clone(), catalog: catalog.clone() }));
    // The shell's `status` and the page show the cluster.
    let view_zk = zk.clone();
    server.set_cluster_view(Box::new(move || cluster_view(&view_zk)));
    // Calls for regions other servers hold are forwarded to them.
    let (peers_zk, me) = (zk.clone(), info.name.clone());
    server.router().set_peers(Box::new(move || {
        let live = cluster::membership::live_servers(&peers_zk).map_err(|e| e.to_string())?;
        Ok(live
            .into_iter()
            .filter(|s| s.name != me && s.is_serving())
            .map(|s| server::peer::routing::Peer {
                rpc: s.rpc.as_deref().and_then(|rpc| server::peer::routing::RpcLocation::of(&s.name, &s.thrift, rpc)),
                thrift: s.thrift,
                http: s.http,
                name: s.name,
            })
            .collect())
    }));
    // A region held elsewhere is looked up in the master's catalog: one
    // question to the active master, which answers with the addresses of
    // the live server holding it (none while that server is dead: the
    // region is not served yet).
    let me = info.name.clone();
    server.router().set_locator(Box::new(move |regions| {
        let lookup = catalog.lookup(regions, false)?;
        Ok(lookup
            .regions
            .into_iter()
            .filter_map(|(encoded, found)| {
                let name = found.entry.server.as_deref()?;
                if found.entry.state != http_api::RegionState::Open || name == me {
                    return None;
                }
                let thrift = found.thrift.clone()?;
                let rpc =
                    found.rpc.as_deref().and_then(|rpc| server::peer::routing::RpcLocation::of(name, &thrift, rpc));
                Some((encoded, server::peer::routing::Located { thrift, rpc }))
            })
            .collect())
    }));
    // HBase's client given only ZooKeeper finds the cluster through its
    // znodes: one live member is named in them at any time.
    if let Some(data) = server.hbase_client_znodes() {
        let znodes = cluster::client_znodes::ClientZnodes {
            hbaseid: data.hbaseid,
            master: data.master,
            meta_region_server: data.meta_region_server,
        };
        cluster::client_znodes::advertise(&zk, znodes);
    }
    // The active master learns what this server holds from its reports
    // (HBase's RegionServerReport), never by reading its status.
    let reporter = server::master_report::Reporter::start(
        server.store().clone(),
        info.name.clone(),
        server.rpc_addr().map(|a| a.to_string()),
        server::master_report::ReportPeriod(cluster::master::REPORT_PERIOD),
        report_to_master(zk.clone(), server.router().peer_access()),
    )?;
    tracing::info!(cluster = %zk.url(), server = %info.name, "joined the cluster");
    Ok(Membership { zk, _reporter: reporter })
}

/// How long one report may take to be answered.
const REPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends a report to the active master, found in ZooKeeper's election and
/// kept until a send fails or it refuses (another master took over), over
/// one connection kept open.
fn report_to_master(
    zk: Arc<cluster::zk::Zk>,
    access: server::peer::http::PeerAccess,
) -> server::master_report::SendReport {
    let mut master: Option<String> = None;
    let mut connection = server::peer::kept_http::KeptConnection::new(access);
    Box::new(move |report| {
        let body = serde_json::to_vec(report).map_err(|e| e.to_string())?;
        if master.is_none() {
            master = cluster::election::active_master(&zk).map_err(|e| e.to_string())?.map(|m| m.http);
        }
        let http = master.clone().ok_or("no active master")?;
        let answer = connection.post_json(&http, "/report", &body, REPORT_TIMEOUT);
        match answer {
            Ok((200, text)) => serde_json::from_str(&text).map_err(|e| format!("{http}: not a report answer: {e}")),
            Ok((code, why)) => {
                master = None;
                Err(format!("master {http} answered {code}: {}", why.trim()))
            }
            Err(e) => {
                master = None;
                Err(e)
            }
        }
    })
}

/// How long the active master may take to answer a catalog lookup.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Asks the active master for catalog entries (`GET /catalog?regions=…`).
struct MasterCatalogClient {
    zk: Arc<cluster::zk::Zk>,
    access: server::peer::http::PeerAccess,
    /// The active master's HTTP address, as last found in ZooKeeper.
    master: std::sync::Mutex<Option<String>>,
}

impl MasterCatalogClient {
    fn new(zk: Arc<cluster::zk::Zk>, access: server::peer::http::PeerAccess) -> MasterCatalogClient {
        MasterCatalogClient { zk, access, master: std::sync::Mutex::new(None) }
    }

    /// The entries of `regions`. `fresh`: ask the master ZooKeeper names
    /// now, after a sync (an admin call's check: a master that lost its
    /// place must not be the one asked); else the one found last time,
    /// found again if it no longer answers.
    fn lookup(&self, regions: &[String], fresh: bool) -> Result<http_api::CatalogLookup, String> {
        if let Some(bad) = regions.iter().find(|id| !http_api::is_lookup_id(id)) {
            return Err(format!("not a region id: {bad:?}"));
        }
        let mut out = http_api::CatalogLookup::default();
        for chunk in regions.chunks(http_api::MAX_LOOKUP) {
            let path = format!("/catalog?regions={}", chunk.join(","));
            let known = if fresh { None } else { self.master.lock().unwrap_or_else(|p| p.into_inner()).clone() };
            let answer = match known {
                Some(http) => match self.access.request(&http, "GET", &path, LOOKUP_TIMEOUT) {
                    Ok(body) => Ok(body),
                    Err(_) => self.ask_found(&path),
                },
                None => self.ask_found(&path),
            }?;
            let part: http_api::CatalogLookup =
                serde_json::from_str(&answer).map_err(|e| format!("the master's catalog answer: {e}"))?;
            out.regions.extend(part.regions);
        }
        Ok(out)
    }

    /// Asks the master ZooKeeper names now (after a sync).
    fn ask_found(&self, path: &str) -> Result<String, String> {
        self.zk.ping().map_err(|e| e.to_string())?;
        let master = cluster::election::active_master(&self.zk).map_err(|e| e.to_string())?;
        let http = master.map(|m| m.http).ok_or("no active master")?;
        *self.master.lock().unwrap_or_else(|p| p.into_inner()) = Some(http.clone());
        self.access.request(&http, "GET", path, LOOKUP_TIMEOUT)
    }
}

/// What admin calls are checked against: the membership in ZooKeeper, the
/// catalog with the active master (`server::cluster_authority`).
struct ClusterChecks {
    zk: Arc<cluster::zk::Zk>,
    catalog: Arc<MasterCatalogClient>,
}

impl server::cluster_authority::ClusterAuthority for ClusterChecks {
    fn is_member(&self, name: &str) -> Result<bool, String> {
        let live = cluster::membership::live_servers(&self.zk).map_err(|e| e.to_string())?;
        Ok(live.iter().any(|s| s.name == name))
    }

    fn catalog_entries(
        &self,
        regions: &[String],
    ) -> Result<std::collections::BTreeMap<String, http_api::CatalogEntry>, String> {
        let lookup = self.catalog.lookup(regions, true)?;
        Ok(lookup.regions.into_iter().map(|(id, found)| (id, found.entry)).collect())
    }

    fn master_call(&self, call: &http_api::OperatorCall) -> Result<String, server::cluster_authority::MasterRefusal> {
        use server::cluster_authority::MasterRefusal;
        let unreachable = |message: String| MasterRefusal { status: None, message };
        self.zk.ping().map_err(|e| unreachable(e.to_string()))?;
        let master = cluster::election::active_master(&self.zk).map_err(|e| unreachable(e.to_string()))?;
        let http = master.map(|m| m.http).ok_or_else(|| unreachable("the cluster has no active master".into()))?;
        match self.catalog.access.exchange(&http, "POST", &call.path(), MASTER_CALL_TIMEOUT) {
            Ok((200, body)) => Ok(body.trim().to_string()),
            Ok((code, body)) => Err(MasterRefusal { status: Some(code), message: body.trim().to_string() }),
            Err(e) => Err(unreachable(e)),
        }
    }

    fn balancer_on(&self) -> Result<bool, String> {
        cluster::balancer_switch::is_on(&self.zk).map_err(|e| e.to_string())
    }
}

/// How long an operator's call sent on to the master may take: longer than
/// the master's own limit (300 s, its answer then 504), so that a member
/// never gives up on a move the master is still making.
const MASTER_CALL_TIMEOUT: Duration = Duration::from_secs(310);

/// The cluster as ZooKeeper shows it, for `/status`'s `cluster`.
fn cluster_view(zk: &cluster::zk::Zk) -> http_api::ClusterSeen {
    let read = || -> Result<http_api::ClusterSeen, cluster::ClusterError> {
        let master = cluster::election::active_master(zk)?;
        let masters = zk.children(cluster::election::ELECTION)?.len();
        let servers = cluster::membership::live_servers(zk)?;
        Ok(http_api::ClusterSeen {
            active_master: master.map(|m| http_api::MemberAddress {
                name: m.name,
                thrift: String::new(),
                http: m.http,
            }),
            masters,
            servers: servers
                .into_iter()
                .map(|s| http_api::MemberAddress { name: s.name, thrift: s.thrift, http: s.http })
                .collect(),
            error: None,
        })
    };
    read().unwrap_or_else(|e| http_api::ClusterSeen { error: Some(e.to_string()), ..http_api::ClusterSeen::default() })
}

pub fn run(args: &ServerArgs, log: &crate::logging::LogHandle) -> anyhow::Result<()> {
    let mut sets = args.sets.clone();
    if let Some(d) = &args.data_dir {
        sets.push(format!("data_dir={}", d.display()));
    }
    if let Some(r) = &args.root {
        sets.push(format!("root={r}"));
    }
    if let Some(a) = &args.thrift_addr {
        sets.push(format!("thrift_addr={a}"));
    }
    if let Some(a) = &args.http_addr {
        sets.push(format!("http_addr={a}"));
    }
    for (name, path) in [
        ("tls_cert", &args.tls_cert),
        ("tls_key", &args.tls_key),
        ("tls_client_ca", &args.tls_client_ca),
        ("tls_admin_ca", &args.tls_admin_ca),
    ] {
        if let Some(p) = path {
            sets.push(format!("{name}={}", p.display()));
        }
    }
    if args.tls_cert.is_some() || args.tls_key.is_some() {
        sets.push("tls_enabled=true".into());
    }
    let config = ServerConfig::load(args.config.as_deref(), &sets)?;
    if args.print_config {
        print!("{}", config.to_toml());
        return Ok(());
    }
    log.apply_configured(config.log_level.as_deref())?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let mut config = config;
    let joining = match &args.cluster {
        Some(url) => {
            let host = config.thrift_addr.ip().to_string();
            let proposed = proposed_root(args, &config)?;
            let (joining, root) = join_cluster(
                url,
                &host,
                Duration::from_millis(args.session_timeout_ms),
                &proposed,
                args.cluster_secret_file.as_deref(),
            )?;
            if let cluster::cluster_config::Proposed::Default(mine) = &proposed
                && *mine != root
            {
                // A local root is shared only by servers on one machine;
                // this one may be on another, where that path is another disk.
                if root.starts_with("file:") {
                    anyhow::bail!(
                        "cluster {url} keeps its files under the local root {root}; a server joins a local root \
                         only when told so: start it with --root {root} on the machine that has it"
                    );
                }
                tracing::info!(root = %root, "using the cluster's root");
                config.root = Some(root);
            }
            // The store is one member of those sharing the root; its new
            // regions take ids from ZooKeeper's sequence, unique across
            // the cluster (above 2^40, clear of a single store's counter).
            config.store.member = Some(joining.info.name.clone());
            // Nothing commits over a new owner's files once the membership
            // can no longer be proven (flushes, compactions, splits, merges).
            let lease = joining.lease.clone();
            config.store.commit_fence = Some(Arc::new(move || {
                if lease.valid() { Ok(()) } else { Err("the ZooKeeper membership lease has expired".to_string()) }
            }));
            let zk = joining.zk.clone();
            config.store.region_ids =
                Some(Arc::new(move || zk.next_sequence(REGION_IDS).map(|n| (1 << 40) + n).map_err(|e| e.to_string())));
            Some(joining)
        }
        None => None,
    };
    let mut server = Server::start(config)?;
    server.set_log_level_control(log.control());
    let member = match joining {
        Some(joining) => Some(serve_in_cluster(&server, joining)?),
        None => None,
    };
    // Tests and scripts wait for this line to know the ports are open.
    // " rpc ADDR" follows only when HBase's RPC port is on (never in a
    // cluster, whose members' lines cluster_cmd matches word for word).
    let rpc = server.rpc_addr().map(|a| format!(" rpc {a}")).unwrap_or_default();
    println!("accordion server listening: thrift {} http {}{rpc}", server.thrift_addr(), server.http_addr());
    while !stop.load(Ordering::Acquire) {
        if let Some(Membership { zk, .. }) = &member
            && zk.has_ended()
        {
            // The master may already have given our regions to others: stop
            // at once, acknowledging nothing more (no flush: the WAL holds
            // every acknowledged write for whoever replays it).
            tracing::error!(
                session = %zk.session_id(),
                "ZooKeeper session ended: this region server is no longer a member of the cluster; aborting"
            );
            eprintln!("accordion server: ZooKeeper session ended; aborting");
            std::process::exit(2);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::info!("signal received");
    server.shutdown()?;
    Ok(())
}
