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
    /// A setting by HBase property name, e.g.
    /// --set hbase.hregion.compacting.memstore.type=EAGER (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
}

pub fn run(args: &ServerArgs) -> anyhow::Result<()> {
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
    let config = ServerConfig::load(args.config.as_deref(), &sets)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let mut server = Server::start(config)?;
    // Tests and scripts wait for this line to know the ports are open.
    println!("accordion server listening: thrift {} http {}", server.thrift_addr(), server.http_addr());
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::info!("signal received");
    server.shutdown()?;
    Ok(())
}
