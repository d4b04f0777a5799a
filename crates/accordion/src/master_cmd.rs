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
}

pub fn run(args: &MasterArgs) -> anyhow::Result<()> {
    let config = MasterConfig {
        cluster: match &args.cluster_secret_file {
            Some(path) => {
                args.cluster.parse::<cluster::zk::ZkUrl>()?.with_secret(cluster::zk::Secret::from_file(path)?)
            }
            None => args.cluster.parse()?,
        },
        http_addr: args.http_addr.parse().with_context(|| format!("--http-addr {}", args.http_addr))?,
        session_timeout: Duration::from_millis(args.session_timeout_ms),
        balancer_period: (args.balancer_period_ms > 0).then(|| Duration::from_millis(args.balancer_period_ms)),
    };
    if let Some(path) = &args.admin_token_file {
        cluster::server_load::set_admin_token(server::admin_auth::read_token_file(path).map_err(anyhow::Error::msg)?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let master = Master::start(config)?;
    // Tests and scripts wait for this line.
    println!("accordion master listening: http {}", master.http_addr());
    let mut last_role = None;
    while !stop.load(Ordering::Acquire) {
        let role = master.view().role;
        if last_role != Some(role) {
            println!("accordion master role: {}", format!("{role:?}").to_lowercase());
            last_role = Some(role);
        }
        if role == Role::Stopped {
            let mut master = master;
            master.wait()?;
            anyhow::bail!("the master stopped");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::info!("signal received");
    master.shutdown()?;
    Ok(())
}
