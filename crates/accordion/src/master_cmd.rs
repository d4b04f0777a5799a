//! `accordion master`: the cluster's master (see `cluster::master`). It runs
//! until SIGTERM or SIGINT (then closes its ZooKeeper session, so a standby
//! takes over at once) or until its session ends (then it exits with an
//! error: it can no longer know that it is the only active master).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use cluster::master::{Master, MasterConfig, Role};

#[derive(clap::Args, Debug)]
pub struct MasterArgs {
    /// The cluster: zk://HOST:PORT[,HOST:PORT]/ROOT (ZooKeeper servers and
    /// the cluster's root znode).
    #[arg(long)]
    pub cluster: String,
    /// The cluster's shared root (hdfs://HOST:PORT/PATH or file:///PATH),
    /// where the master keeps its catalog (HBase's hbase.rootdir). Without
    /// it, the root the cluster's first region server recorded.
    #[arg(long)]
    pub root: Option<String>,
    /// Address of the master's status page (HBase's master UI is on 16010).
    #[arg(long, default_value = "127.0.0.1:16010")]
    pub http_addr: String,
    /// ZooKeeper session timeout in milliseconds (HBase's
    /// zookeeper.session.timeout, 90000): how long a dead master goes
    /// unnoticed.
    #[arg(long, default_value_t = 90_000)]
    pub session_timeout_ms: u64,
    /// How often the balancer evens out regions per server, in milliseconds
    /// (HBase's hbase.balancer.period, 300000); 0 turns it off.
    #[arg(long, default_value_t = 300_000)]
    pub balancer_period_ms: u64,
    /// The region servers' admin token file (their admin_token_file): the
    /// master's admin calls to them carry it.
    #[arg(long)]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// The cluster's secret file (the region servers' --cluster-secret-file):
    /// ZooKeeper digest authentication, nodes open only to its holders.
    #[arg(long)]
    pub cluster_secret_file: Option<std::path::PathBuf>,
    /// A cluster serving TLS: the master's certificate chain (PEM), signed
    /// by the cluster's CA. Its page is served over TLS and its calls to the
    /// region servers present this certificate (needs --tls-key, --tls-ca).
    #[arg(long)]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long)]
    pub tls_key: Option<std::path::PathBuf>,
    /// The cluster's CA (the region servers' tls_admin_ca): the servers'
    /// certificates are checked against it, and operators' certificates of
    /// it authenticate their calls.
    #[arg(long)]
    pub tls_ca: Option<std::path::PathBuf>,
}

/// The master's TLS files, if it serves TLS: all three flags or none.
fn tls_files(args: &MasterArgs) -> anyhow::Result<Option<server::tls::TlsFiles>> {
    match (&args.tls_cert, &args.tls_key, &args.tls_ca) {
        (None, None, None) => Ok(None),
        (Some(cert), Some(key), Some(ca)) => Ok(Some(server::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: None,
            admin_ca: Some(ca.clone()),
        })),
        _ => anyhow::bail!("a master serving TLS needs --tls-cert, --tls-key and --tls-ca (the cluster's CA)"),
    }
}

pub fn run(args: &MasterArgs) -> anyhow::Result<()> {
    let http_addr: std::net::SocketAddr =
        args.http_addr.parse().with_context(|| format!("--http-addr {}", args.http_addr))?;
    let token = match &args.admin_token_file {
        Some(path) => Some(server::admin_auth::read_token_file(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    if let Some(token) = &token {
        cluster::server_load::set_admin_token(token.clone());
    }
    let tls = tls_files(args)?;
    // Operator calls (`POST /admin/move|unassign|assign`) are admitted as a
    // region server's admin calls are: the token, or a verified client
    // certificate on the TLS front, or — with neither configured — only
    // while the page listens on loopback.
    let verified = Arc::new(server::tls_relay::VerifiedPeers::new(
        server::tls::AdminVerifier::new(tls.as_ref()).map_err(anyhow::Error::msg)?,
    ));
    let admission = server::admin_auth::AdminAuth::new(token.clone(), &[http_addr]);
    let admit = {
        let verified = verified.clone();
        cluster::master::Admit(Arc::new(move |peer, authorization| {
            admission.check(authorization, verified.contains(peer))
        }))
    };
    // With TLS the page is served by a TLS front on --http-addr (bound
    // first: its address is the one the cluster is told), relaying to the
    // page on loopback; the master's calls to the servers go over TLS with
    // its certificate.
    let front = match &tls {
        Some(files) => {
            let access = server::peer::http::PeerAccess {
                token,
                tls: Some(server::tls::peer_client_config(files).map_err(anyhow::Error::msg)?),
            };
            cluster::server_load::set_requester(Box::new(move |http, method, path, timeout| {
                access.request(http, method, path, timeout)
            }));
            let listener =
                std::net::TcpListener::bind(http_addr).with_context(|| format!("--http-addr {http_addr}"))?;
            let setup = server::https::HttpsSetup {
                config: server::tls::http_config(files).map_err(anyhow::Error::msg)?,
                verified: verified.clone(),
                idle: Duration::from_secs(60),
                max_connections: 64,
                max_per_client: 16,
            };
            Some((listener, setup))
        }
        None => None,
    };
    let config = MasterConfig {
        cluster: match &args.cluster_secret_file {
            Some(path) => {
                args.cluster.parse::<cluster::zk::ZkUrl>()?.with_secret(cluster::zk::Secret::from_file(path)?)
            }
            None => args.cluster.parse()?,
        },
        http_addr: match &front {
            Some(_) => std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), 0),
            None => http_addr,
        },
        session_timeout: Duration::from_millis(args.session_timeout_ms),
        balancer_period: (args.balancer_period_ms > 0).then(|| Duration::from_millis(args.balancer_period_ms)),
        advertised_http: front.as_ref().map(|(l, _)| l.local_addr()).transpose()?,
        admit: Some(admit),
        root: args.root.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let master = Master::start(config)?;
    let _front = match front {
        Some((listener, setup)) => {
            // The page's own (loopback) address, bound now.
            Some(server::https::HttpsFront::on(listener, master.page_addr(), setup)?)
        }
        None => None,
    };
    // Tests and scripts wait for this line.
    println!("accordion master listening: http {}", master.http_addr());
    let mut last_role = None;
    while !stop.load(Ordering::Acquire) {
        let role = master.role();
        if last_role != Some(role) {
            println!("accordion master role: {}", format!("{role:?}").to_lowercase());
            last_role = Some(role);
        }
        if role == Role::Stopped {
            let mut master = master;
            master.wait()?;
            anyhow::bail!("the master stopped");
        }
        // Role changes are printed within this; a signal is seen as soon.
        std::thread::sleep(Duration::from_millis(200));
    }
    tracing::info!("signal received");
    master.shutdown()?;
    Ok(())
}
