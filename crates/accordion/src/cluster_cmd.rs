//! `accordion cluster start`: a whole cluster on this machine, to try it —
//! a real ZooKeeper (Debian's `zookeeper`, `cluster::local_zk`), a master
//! (in this process) and N region server processes sharing one root under
//! `--dir`, or with `--hdfs` on a real mini HDFS (`mini_hdfs`: Hadoop's
//! MiniDFSCluster, 3 DataNodes) started here too, on loopback. It prints where to connect and runs until Ctrl-C
//! (or SIGTERM), then stops the servers (each flushes and closes), the
//! master and ZooKeeper. A server that dies meanwhile is reported and
//! left dead: its regions move to the others, which is the point of trying.
//!
//! Thread safety: one thread runs the command; the master runs its own
//! threads (`cluster::master`); each server child's later output is drained
//! by a thread of its own.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use cluster::local_zk::LocalZooKeeper;
use cluster::master::{Master, MasterConfig};

#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// Start ZooKeeper, a master and region servers on loopback; Ctrl-C stops them all.
    Start(StartArgs),
}

#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// Region servers to start.
    #[arg(long, default_value_t = 3)]
    pub servers: usize,
    /// Where ZooKeeper's data and the servers' shared root go.
    #[arg(long, default_value = "cluster")]
    pub dir: PathBuf,
    /// The first server's Thrift port; the others take the next ones (0: any free port).
    #[arg(long, default_value_t = 9090)]
    pub thrift_port: u16,
    /// The first server's HTTP port; the others take the next ones (0: any free port).
    #[arg(long, default_value_t = 16030)]
    pub http_port: u16,
    /// The first server's HBase RPC port (hbase-client); the others take the next ones (0: any free port).
    #[arg(long, default_value_t = 16020)]
    pub rpc_port: u16,
    /// The master's status page port (0: any free port).
    #[arg(long, default_value_t = 16010)]
    pub master_http_port: u16,
    /// ZooKeeper session timeout: how long a dead server goes unnoticed
    /// (HBase's default is 90 s; short here, to watch failover).
    #[arg(long, default_value_t = 5000)]
    pub session_timeout_ms: u64,
    /// How often the master's balancer evens out regions per server, in
    /// milliseconds (HBase's default is 5 minutes; short here, to watch a
    /// table's regions spread); 0 turns it off.
    #[arg(long, default_value_t = 10_000)]
    pub balancer_period_ms: u64,
    /// Put the shared root on a mini HDFS started here (Hadoop 3.4.2's
    /// MiniDFSCluster with 3 DataNodes; Java 17 and Maven, the first start
    /// downloads Hadoop) instead of under --dir.
    #[arg(long)]
    pub hdfs: bool,
}

pub fn run(command: &ClusterCommand) -> anyhow::Result<()> {
    match command {
        ClusterCommand::Start(args) => start(args),
    }
}

/// A region server child and what it printed when it started listening.
pub(crate) struct ServerChild {
    pub(crate) child: Child,
    pub(crate) thrift: String,
    pub(crate) http: String,
    /// Its HBase RPC address, when it serves one.
    pub(crate) rpc: Option<String>,
}

/// `port + i`, or 0 (any) when `port` is 0.
fn nth_port(port: u16, i: usize) -> anyhow::Result<u16> {
    if port == 0 {
        return Ok(0);
    }
    u16::try_from(usize::from(port) + i).context("port out of range")
}

fn start_server(
    url: &str,
    root: &str,
    secret: &std::path::Path,
    args: &StartArgs,
    i: usize,
) -> anyhow::Result<ServerChild> {
    let thrift = format!("127.0.0.1:{}", nth_port(args.thrift_port, i)?);
    let http = format!("127.0.0.1:{}", nth_port(args.http_port, i)?);
    let rpc = format!("127.0.0.1:{}", nth_port(args.rpc_port, i)?);
    let log = args.dir.join(format!("server-{}.log", i + 1));
    let extra = ["--cluster-secret-file".to_string(), secret.display().to_string()];
    spawn_server(url, root, [&thrift, &http, &rpc], args.session_timeout_ms, &extra, &log)
}

/// The cluster's secret file in `dir` (made once, readable by its owner
/// only): its ZooKeeper nodes are open only to sessions that know it.
fn cluster_secret(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("cluster.secret");
    if !path.exists() {
        let mut bytes = [0u8; 24];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .context("reading /dev/urandom")?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        std::io::Write::write_all(&mut f, format!("{secret}\n").as_bytes())?;
    }
    Ok(path)
}

/// Starts `accordion server --cluster url --root root` listening on the
/// given Thrift, HTTP and HBase RPC addresses (several servers on one host
/// each need their own: port 0 takes any free one), its log in `log`, and
/// waits for its listening line.
pub(crate) fn spawn_server(
    url: &str,
    root: &str,
    [thrift, http, rpc]: [&str; 3],
    session_timeout_ms: u64,
    extra: &[String],
    log: &std::path::Path,
) -> anyhow::Result<ServerChild> {
    let exe = std::env::current_exe().context("finding the accordion binary")?;
    let log_file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = Command::new(exe)
        .arg("server")
        .args(["--cluster", url, "--root", root])
        .args(["--thrift-addr", thrift, "--http-addr", http])
        .args(["--set", &format!("rpc_addr={rpc}")])
        .args(["--session-timeout-ms", &session_timeout_ms.to_string()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .context("starting a region server")?;
    let stdout = child.stdout.take().context("the server's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    // "accordion server listening: thrift ADDR http ADDR[ rpc ADDR]"
    while let Some(line) = lines.next().transpose()? {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["accordion", "server", "listening:", "thrift", thrift, "http", http, rest @ ..] = words.as_slice() {
            let (thrift, http) = (thrift.to_string(), http.to_string());
            let rpc = match rest {
                ["rpc", rpc, ..] => Some(rpc.to_string()),
                _ => None,
            };
            // Keep draining what it prints later.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok(ServerChild { child, thrift, http, rpc });
        }
    }
    let _ = child.kill();
    bail!("a region server exited before listening; see {}", log.display())
}

/// SIGTERM to every server, then waits (30 s at most, then SIGKILL).
pub(crate) fn stop_servers(servers: &mut [ServerChild]) {
    for s in servers.iter() {
        // SIGTERM: each server finishes its calls, flushes and closes.
        let _ = Command::new("kill").args(["-TERM", &s.child.id().to_string()]).status();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for (i, s) in servers.iter_mut().enumerate() {
        while matches!(s.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(s.child.try_wait(), Ok(None)) {
            eprintln!("accordion cluster: server {} did not stop in 30 s; killing it", i + 1);
            let _ = s.child.kill();
        }
        let _ = s.child.wait();
    }
}

fn start(args: &StartArgs) -> anyhow::Result<()> {
    if args.servers == 0 {
        bail!("--servers must be at least 1");
    }
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let dir = std::path::absolute(&args.dir)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let zk = LocalZooKeeper::start(&dir.join("zookeeper"))?;
    let url = zk.url("/accordion");
    let secret = cluster_secret(&dir)?;
    // The mini HDFS lives until this function returns (Drop stops it).
    let (root, _hdfs) = if args.hdfs {
        println!("accordion cluster: starting a mini HDFS (3 DataNodes; the first start downloads Hadoop)");
        let hdfs = mini_hdfs::MiniHdfs::start(&dir.join("hdfs"), &mini_hdfs::MiniHdfsOptions::default())
            .context("starting the mini HDFS")?;
        (format!("{}/accordion", hdfs.uri), Some(hdfs))
    } else {
        (format!("file://{}", dir.join("root").display()), None)
    };
    let http_addr: std::net::SocketAddr = format!("127.0.0.1:{}", args.master_http_port).parse()?;
    // Operator calls (move, assign, unassign, the balancer: the shell's and
    // those HBase's Admin sends through a member) are admitted as
    // `accordion master` admits them without a token: its page listens on
    // loopback, so only this machine's processes reach it.
    let admission = server::admin_auth::AdminAuth::new(None, &[http_addr]);
    let admit = cluster::master::Admit(Arc::new(move |_peer, authorization| admission.check(authorization, false)));
    let master = Master::start(MasterConfig {
        cluster: url.parse::<cluster::zk::ZkUrl>()?.with_secret(cluster::zk::Secret::from_file(&secret)?),
        http_addr,
        session_timeout: Duration::from_millis(args.session_timeout_ms),
        balancer_period: (args.balancer_period_ms > 0).then(|| Duration::from_millis(args.balancer_period_ms)),
        advertised_http: None,
        admit: Some(admit),
        root: Some(root.clone()),
    })?;
    let mut servers = Vec::with_capacity(args.servers);
    for i in 0..args.servers {
        match start_server(&url, &root, &secret, args, i) {
            Ok(s) => servers.push(s),
            Err(e) => {
                stop_servers(&mut servers);
                return Err(e);
            }
        }
    }
    println!("accordion cluster: ZooKeeper {url}; shared root {root}");
    println!("  master    http://{}/", master.http_addr());
    for (i, s) in servers.iter().enumerate() {
        let rpc = s.rpc.as_deref().map(|a| format!("  rpc {a}")).unwrap_or_default();
        // The RPC address last: scripts read the fields before it by position.
        println!("  server {}  thrift {}  http http://{}/  pid {}{rpc}", i + 1, s.thrift, s.http, s.child.id());
    }
    println!(
        "Connect a client (happybase) to any server's Thrift address: calls for regions another server holds \
         are forwarded to it; HBase's Java client to the servers' RPC addresses \
         (hbase.client.bootstrap.servers): it goes to each region's server itself. A table's regions open on the server that created it, spread by the balancer, and \
         move to the others when a server dies. Ctrl-C stops the cluster."
    );
    // Scripts and tests wait for this line.
    println!("accordion cluster ready");
    let mut reported = vec![false; servers.len()];
    while !stop.load(Ordering::Acquire) {
        for (i, s) in servers.iter_mut().enumerate() {
            if !reported[i]
                && let Ok(Some(status)) = s.child.try_wait()
            {
                reported[i] = true;
                println!(
                    "accordion cluster: server {} ({}) exited: {status}; its regions move to the others",
                    i + 1,
                    s.thrift
                );
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("accordion cluster: stopping");
    stop_servers(&mut servers);
    master.shutdown()?;
    drop(zk);
    println!("accordion cluster: stopped");
    Ok(())
}
