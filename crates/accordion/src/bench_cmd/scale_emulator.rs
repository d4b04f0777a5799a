//! `accordion bench scale`: the real master and a real ZooKeeper against N
//! emulated region servers in this process, to show how the cluster's
//! machinery grows with servers and regions without N machines (as the
//! source study did by emulation).
//!
//! What is real: ZooKeeper (`LocalZooKeeper`), the master (the `accordion
//! master` binary, a process of its own, so its CPU and memory are its
//! own), the protocol (each emulated server has a ZooKeeper session with
//! its membership znode, an HTTP port answering the master's admin calls,
//! and reports made by the region server's own `master_report::ReportState`
//! over HTTP). What is emulated: a region opens at once (or after
//! `--open-delay-ms`) and holds no data; a WAL is a name in a list.
//!
//! Each case (N servers × R regions, on a fresh root) measures:
//! - joining: N servers join and report;
//! - a table of R regions created on one server: seconds until every region
//!   is open somewhere;
//! - idle, `--idle-secs`: the master's CPU and RSS, the passes it ran, the
//!   calls the servers got and the report bytes they sent, ZooKeeper's
//!   packets and write transactions (zxid) — nothing should grow but the
//!   heartbeats;
//! - failover: the server holding the most regions dies (its session is
//!   closed, its port and reports stop): seconds from its znode's removal
//!   until all its regions are open on others (a crash adds the session
//!   timeout before that);
//! - takeover: a standby master waits; the active one is SIGKILLed: seconds
//!   until the standby holds the whole view (every region reported held),
//!   from the kill and from the standby's activation.
//!
//! Thread safety: each emulated server's state is behind its own mutex,
//! touched by its HTTP tasks (on one tokio runtime shared with every
//! ZooKeeper session) and by the reporter threads, never across a call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use cluster::local_zk::LocalZooKeeper;
use cluster::membership::ServerInfo;
use cluster::zk::{Secret, Zk, ZkUrl};
use http_api::RegionServerCall;
use serde::Serialize;
use server::master_report::{ReportPeriod, ReportState, Snapshot};
use server::peer::http::PeerAccess;
use server::peer::kept_http::KeptConnection;
use store::RegionState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(clap::Args, Debug, Clone)]
pub struct ScaleArgs {
    /// Emulated region servers; one case per size (with every --regions).
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    pub servers: Vec<usize>,
    /// Regions of the table each case creates.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub regions: Vec<usize>,
    /// How long the idle cluster is watched.
    #[arg(long, default_value_t = 30)]
    pub idle_secs: u64,
    /// How long an emulated region takes to open.
    #[arg(long, default_value_t = 0)]
    pub open_delay_ms: u64,
    /// ZooKeeper session timeout of the master and the servers.
    #[arg(long, default_value_t = 5000)]
    pub session_timeout_ms: u64,
    /// Leave out the failover of a server.
    #[arg(long)]
    pub no_failover: bool,
    /// Leave out the master takeover.
    #[arg(long)]
    pub no_takeover: bool,
    /// A phase that takes longer fails the case.
    #[arg(long, default_value_t = 900)]
    pub phase_timeout_secs: u64,
    /// Also write every figure here as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// The figures of one case.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaseFigures {
    pub servers: usize,
    pub regions: usize,
    pub join_secs: f64,
    pub create_secs: f64,
    /// Until the master's last catalog write of the creation.
    pub settle_secs: f64,
    pub idle_secs: f64,
    pub idle_master_cpu_secs: f64,
    pub idle_master_cpu_percent: f64,
    pub master_rss_mib: f64,
    pub master_peak_rss_mib: f64,
    pub idle_passes: u64,
    pub idle_calls_to_servers: u64,
    pub idle_status_reads: u64,
    pub idle_reports: u64,
    pub idle_report_bytes: u64,
    pub idle_zk_packets: u64,
    pub idle_zk_writes: u64,
    /// Writes to the master's catalog log while idle.
    pub idle_catalog_writes: u64,
    /// One region lost (its server stopped holding it): until it is open
    /// again, the passes that took, and the last one's view and
    /// plan-and-execute seconds — what one change costs at this size.
    pub one_change_secs: f64,
    pub one_change_passes: u64,
    pub one_change_last_pass_secs: (f64, f64),
    /// The regions that last pass read (the changed and unsettled ones in
    /// a scoped pass, every region in a full one).
    pub one_change_last_pass_regions: f64,
    pub failover_regions: usize,
    pub failover_secs: Option<f64>,
    pub takeover_from_kill_secs: Option<f64>,
    pub takeover_from_active_secs: Option<f64>,
    /// The new master's read of the catalog log, as it measured it.
    pub takeover_catalog_load_secs: Option<f64>,
}

/// Counters shared by every emulated server.
#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    status_reads: AtomicU64,
    call_bytes: AtomicU64,
    reports: AtomicU64,
    report_bytes: AtomicU64,
}

/// What every emulated server shares: the table's regions, the WAL
/// directories "on the root", the counters, the open delay.
struct Shared {
    region_tables: Mutex<BTreeMap<String, String>>,
    wal_owners: Mutex<BTreeSet<String>>,
    counters: Counters,
    open_delay: Duration,
    /// Opens and closes made for the master (`ServerReport::changes_seen`).
    changes: AtomicU64,
}

/// One emulated region server.
struct EmuServer {
    info: ServerInfo,
    zk: Mutex<Option<Zk>>,
    state: Mutex<EmuState>,
    alive: AtomicBool,
}

#[derive(Default)]
struct EmuState {
    snap: Snapshot,
    /// Grows on every change of `snap`.
    version: u64,
}

impl EmuServer {
    fn held(&self) -> Vec<String> {
        self.state.lock().expect("state").snap.held.keys().cloned().collect()
    }

    fn open(&self, id: &str, shared: &Shared) -> bool {
        let Some(table) = shared.region_tables.lock().expect("tables").get(id).cloned() else { return false };
        let mut st = self.state.lock().expect("state");
        st.snap.known.remove(id);
        st.snap.held.insert(id.to_string(), (table, RegionState::Open));
        st.version += 1;
        true
    }

    fn close(&self, id: &str) -> bool {
        let mut st = self.state.lock().expect("state");
        let Some((table, _)) = st.snap.held.remove(id) else { return false };
        st.snap.known.insert(id.to_string(), (table, false));
        st.version += 1;
        true
    }
}

/// The emulated cluster of one case.
struct Emulation {
    runtime: tokio::runtime::Runtime,
    servers: Vec<Arc<EmuServer>>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    reporters: Vec<std::thread::JoinHandle<()>>,
}

/// Reporter threads (each serves every k-th server).
const REPORTERS: usize = 4;

impl Emulation {
    fn start(url: &ZkUrl, n: usize, session: Duration, open_delay: Duration) -> anyhow::Result<Emulation> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("emulated-servers")
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            region_tables: Mutex::new(BTreeMap::new()),
            wal_owners: Mutex::new(BTreeSet::new()),
            counters: Counters::default(),
            open_delay,
            changes: AtomicU64::new(0),
        });
        let start_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as u64;
        let mut servers = Vec::with_capacity(n);
        for _ in 0..n {
            let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
            let addr = listener.local_addr()?;
            let info = ServerInfo::new("127.0.0.1", addr.port(), addr.to_string(), start_ms);
            let zk = Zk::connect_on(url, session, runtime.handle().clone())?;
            cluster::membership::register(&zk, &info)?;
            shared.wal_owners.lock().expect("wal").insert(info.name.clone());
            let server = Arc::new(EmuServer {
                info,
                zk: Mutex::new(Some(zk)),
                state: Mutex::new(EmuState::default()),
                alive: AtomicBool::new(true),
            });
            runtime.spawn(serve(listener, server.clone(), shared.clone()));
            servers.push(server);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let master = Arc::new(Mutex::new(None::<String>));
        let reporters = (0..REPORTERS)
            .map(|k| {
                let mine: Vec<Arc<EmuServer>> = servers.iter().skip(k).step_by(REPORTERS).cloned().collect();
                let (stop, shared, master, zk_url) = (stop.clone(), shared.clone(), master.clone(), url.clone());
                std::thread::Builder::new()
                    .name(format!("emulated-reports-{k}"))
                    .spawn(move || report_loop(&mine, &shared, &stop, &master, &zk_url, session))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Emulation { runtime, servers, shared, stop, reporters })
    }

    /// Creates a table of `regions` regions on server 0 (known to it, held
    /// by nobody: the master assigns them).
    fn create_table(&self, regions: usize) {
        let mut tables = self.shared.region_tables.lock().expect("tables");
        let mut st = self.servers[0].state.lock().expect("state");
        st.snap.tables.insert("t".into(), true);
        for i in 0..regions {
            let id = store::layout::region_dir_name((1 << 40) + i as u64);
            tables.insert(id.clone(), "t".into());
            st.snap.known.insert(id, ("t".into(), false));
        }
        st.version += 1;
    }

    /// Regions open on live servers.
    fn open_regions(&self) -> usize {
        self.servers.iter().filter(|s| s.alive.load(Ordering::Acquire)).map(|s| s.held().len()).sum()
    }

    /// Kills server `i`: its port and reports stop, its session is closed.
    fn kill(&self, i: usize) {
        let server = &self.servers[i];
        server.alive.store(false, Ordering::Release);
        // Wake its accept loop, which then drops the listener.
        let _ = std::net::TcpStream::connect(&server.info.http);
        drop(server.zk.lock().expect("zk").take());
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for r in self.reporters.drain(..) {
            let _ = r.join();
        }
        for s in &self.servers {
            s.alive.store(false, Ordering::Release);
            drop(s.zk.lock().expect("zk").take());
        }
        let _ = &self.runtime;
    }
}

/// Answers the master's admin calls on one emulated server's port.
async fn serve(listener: tokio::net::TcpListener, server: Arc<EmuServer>, shared: Arc<Shared>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else { continue };
        if !server.alive.load(Ordering::Acquire) {
            return; // drops the listener: connections are refused, as a dead server's are
        }
        let (server, shared) = (server.clone(), shared.clone());
        tokio::spawn(async move {
            let _ = handle(socket, &server, &shared).await;
        });
    }
}

async fn handle(mut socket: tokio::net::TcpStream, server: &EmuServer, shared: &Shared) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 1 << 20 {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&request).into_owned();
    let target = head.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or("").to_string();
    let (code, body) = answer(&target, server, shared).await;
    let response =
        format!("HTTP/1.0 {code} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    shared.counters.calls.fetch_add(1, Ordering::Relaxed);
    shared.counters.call_bytes.fetch_add((request.len() + response.len()) as u64, Ordering::Relaxed);
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

async fn answer(target: &str, server: &EmuServer, shared: &Shared) -> (u16, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let Some(name) = path.strip_prefix("/admin/") else {
        shared.counters.status_reads.fetch_add(1, Ordering::Relaxed);
        return (404, format!("{path}: not emulated"));
    };
    let call = match RegionServerCall::parse(name, query) {
        Some(Ok(call)) => call,
        Some(Err(e)) => return (e.status, e.message),
        None => return (404, format!("{name}: not emulated")),
    };
    match call {
        RegionServerCall::AssignBatch { regions } => {
            let mut lines = Vec::with_capacity(regions.len());
            for id in &regions {
                if !shared.open_delay.is_zero() {
                    tokio::time::sleep(shared.open_delay).await;
                }
                lines.push(if server.open(id, shared) {
                    format!("opened {id}")
                } else {
                    format!("failed {id}: unknown")
                });
            }
            (200, lines.join("\n"))
        }
        RegionServerCall::Assign { region } => {
            tokio::time::sleep(shared.open_delay).await;
            if server.open(&region, shared) {
                (200, format!("opened region {region}"))
            } else {
                (409, "unknown".into())
            }
        }
        RegionServerCall::Unassign { region } => {
            server.close(&region);
            (200, format!("closed region {region}\n{}", changed(shared)))
        }
        RegionServerCall::WalOwners => {
            let owners: Vec<String> = shared.wal_owners.lock().expect("wal").iter().cloned().collect();
            (200, serde_json::to_string(&owners).unwrap_or_default())
        }
        RegionServerCall::Recover { server: dead } => {
            shared.wal_owners.lock().expect("wal").remove(&dead);
            (200, format!("recovered the WAL of {dead}: 0 entries for 0 regions"))
        }
        RegionServerCall::Refresh => (200, "0 new tables".into()),
        RegionServerCall::SyncTable { table } => (200, format!("{table}: Unchanged")),
    }
}

/// Counts an open or close; the answer's last line.
fn changed(shared: &Shared) -> String {
    http_api::changes_line(shared.changes.fetch_add(1, Ordering::AcqRel) + 1)
}

/// Sends `servers`' reports as a region server's reporter does, each
/// server with its own `ReportState`.
fn report_loop(
    servers: &[Arc<EmuServer>],
    shared: &Shared,
    stop: &AtomicBool,
    master: &Mutex<Option<String>>,
    url: &ZkUrl,
    session: Duration,
) {
    let period = cluster::master::REPORT_PERIOD;
    // Each emulated server keeps its own connection to the master, as a
    // region server's reporter does.
    let mut states: Vec<(ReportState, u64, Option<Instant>, bool, KeptConnection)> = servers
        .iter()
        .map(|s| {
            let state = ReportState::new(s.info.name.clone(), None, ReportPeriod(period));
            (state, u64::MAX, None, false, KeptConnection::new(PeerAccess::default()))
        })
        .collect();
    let mut lookup: Option<Zk> = None;
    while !stop.load(Ordering::Acquire) {
        for (server, (state, sent_version, last, settled, connection)) in servers.iter().zip(states.iter_mut()) {
            if !server.alive.load(Ordering::Acquire) {
                continue;
            }
            let now = Instant::now();
            let seen = shared.changes.load(Ordering::Acquire);
            let (version, snap) = {
                let st = server.state.lock().expect("state");
                let quiet = last.is_some_and(|at| now.duration_since(at) < period);
                if *settled && st.version == *sent_version && quiet {
                    continue;
                }
                (st.version, std::sync::Arc::new(st.snap.clone()))
            };
            let open = snap.held.len() as u64;
            let load = || http_api::ReportedLoad { open_regions: open, ..Default::default() };
            let Some(mut report) = state.due(&snap, load, now) else { continue };
            report.changes_seen = seen;
            let outcome = send(connection, master, &mut lookup, url, session, &report, shared);
            *settled = matches!(&outcome, Ok(a) if a.applied && !a.need_full);
            if *settled {
                *sent_version = version;
            }
            *last = Some(now);
            state.sent(&report, snap, &outcome, Instant::now());
        }
        std::thread::sleep(server::master_report::TICK);
    }
}

fn send(
    connection: &mut KeptConnection,
    master: &Mutex<Option<String>>,
    lookup: &mut Option<Zk>,
    url: &ZkUrl,
    session: Duration,
    report: &http_api::ServerReport,
    shared: &Shared,
) -> Result<http_api::ReportAnswer, String> {
    let body = serde_json::to_vec(report).map_err(|e| e.to_string())?;
    let known = master.lock().expect("master").clone();
    let http = match known {
        Some(h) => h,
        None => {
            if lookup.is_none() {
                *lookup = Some(Zk::connect(url, session).map_err(|e| e.to_string())?);
            }
            let zk = lookup.as_ref().expect("just set");
            let found = cluster::election::active_master(zk).map_err(|e| e.to_string())?.ok_or("no active master")?;
            *master.lock().expect("master") = Some(found.http.clone());
            found.http
        }
    };
    shared.counters.reports.fetch_add(1, Ordering::Relaxed);
    shared.counters.report_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    match connection.post_json(&http, "/report", &body, Duration::from_secs(30)) {
        Ok((200, text)) => serde_json::from_str(&text).map_err(|e| e.to_string()),
        Ok((code, why)) => {
            *master.lock().expect("master") = None;
            Err(format!("{code}: {why}"))
        }
        Err(e) => {
            *master.lock().expect("master") = None;
            Err(e)
        }
    }
}

/// A master process.
struct MasterProcess {
    child: Child,
}

impl MasterProcess {
    fn spawn(
        url: &str,
        root: &str,
        secret: &std::path::Path,
        session: Duration,
        log: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("this binary's path")?;
        let child = Command::new(exe)
            .args(["master", "--cluster", url, "--root", root, "--http-addr", "127.0.0.1:0"])
            .arg("--session-timeout-ms")
            .arg(session.as_millis().to_string())
            .arg("--cluster-secret-file")
            .arg(secret)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .context("starting the master")?;
        Ok(MasterProcess { child })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds and (RSS, peak RSS) in MiB, from `/proc`.
    fn cpu_and_rss(&self) -> anyhow::Result<(f64, f64, f64)> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        let rest = stat.rsplit_once(')').context("malformed stat")?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        let kib = |key: &str| -> f64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        Ok((ticks as f64 / 100.0, kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for MasterProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The master's `/metrics`, by name.
fn master_metrics(http: &str) -> Option<BTreeMap<String, f64>> {
    let text = PeerAccess::default().request(http, "GET", "/metrics", Duration::from_secs(10)).ok()?;
    Some(
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
            .collect(),
    )
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> anyhow::Result<f64> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > timeout {
            bail!("{what}: not done after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The active master's HTTP address, from the election.
fn active_master_other_than(zk: &Zk, not: Option<&str>) -> Option<String> {
    cluster::election::active_master(zk).ok().flatten().map(|m| m.http).filter(|h| Some(h.as_str()) != not)
}

fn zk_figures(zk: &LocalZooKeeper) -> anyhow::Result<(u64, u64)> {
    let m = zk.mntr()?;
    let packets = m.get("zk_packets_received").and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok((packets, zk.zxid()?))
}

fn run_case(
    zk_server: &LocalZooKeeper,
    dir: &std::path::Path,
    n: usize,
    r: usize,
    args: &ScaleArgs,
) -> anyhow::Result<CaseFigures> {
    let session = Duration::from_millis(args.session_timeout_ms);
    let timeout = Duration::from_secs(args.phase_timeout_secs);
    let secret_file = dir.join("secret");
    std::fs::write(&secret_file, "scale-emulator-secret\n")?;
    let root = format!("/scale-{n}x{r}");
    let url = format!("zk://{}{root}", zk_server.addr());
    let zk_url: ZkUrl = url.parse::<ZkUrl>()?.with_secret(Secret::from_file(&secret_file)?);
    let watcher = Zk::connect(&zk_url, session)?;
    let mut figures = CaseFigures { servers: n, regions: r, ..CaseFigures::default() };

    // The master's catalog lives on this root (the emulated servers keep
    // nothing there).
    let shared_root = format!("file://{}", dir.join(format!("root-{n}x{r}")).display());
    let mut master =
        MasterProcess::spawn(&url, &shared_root, &secret_file, session, &dir.join(format!("master-a-{n}x{r}.log")))?;
    let mut http = String::new();
    wait_until("the master becomes active", timeout, || {
        active_master_other_than(&watcher, None).map(|h| http = h).is_some()
    })?;

    let t = Instant::now();
    let emulation = Emulation::start(&zk_url, n, session, Duration::from_millis(args.open_delay_ms))?;
    wait_until("every server reports", timeout, || {
        master_metrics(&http).is_some_and(|m| m.get("accordion_master_reporting_servers") == Some(&(n as f64)))
    })?;
    figures.join_secs = t.elapsed().as_secs_f64();
    eprintln!("scale: {n} servers × {r} regions: {n} servers joined and reported in {:.1} s", figures.join_secs);

    let t = Instant::now();
    emulation.create_table(r);
    wait_until("every region of the table opens", timeout, || emulation.open_regions() == r)?;
    figures.create_secs = t.elapsed().as_secs_f64();
    eprintln!("scale: a table of {r} regions open in {:.1} s", figures.create_secs);

    // Let the passes that follow the creation finish, then watch.
    wait_until("the master sees every region open", timeout, || {
        master_metrics(&http).is_some_and(|m| m.get("accordion_master_open_regions") == Some(&(r as f64)))
    })?;
    // The master records each open in its catalog after the servers
    // answered: the idle window starts once neither its catalog log nor
    // ZooKeeper took a write for two report periods.
    let t = Instant::now();
    let writes = |http: &str| {
        let catalog = master_metrics(http).and_then(|m| m.get("accordion_master_catalog_writes_total").copied());
        (zk_server.zxid().unwrap_or(0), catalog.unwrap_or(-1.0) as i64)
    };
    let mut last = (writes(&http), Instant::now());
    wait_until("the master's catalog writes end", timeout, || {
        let now = writes(&http);
        if now != last.0 {
            last = (now, Instant::now());
        }
        last.1.elapsed() >= cluster::master::REPORT_PERIOD * 2
    })?;
    figures.settle_secs =
        figures.create_secs + t.elapsed().as_secs_f64() - (cluster::master::REPORT_PERIOD * 2).as_secs_f64();
    let before = (
        master.cpu_and_rss()?,
        master_metrics(&http).unwrap_or_default(),
        zk_figures(zk_server)?,
        snapshot(&emulation.shared.counters),
    );
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(args.idle_secs));
    let after = (
        master.cpu_and_rss()?,
        master_metrics(&http).unwrap_or_default(),
        zk_figures(zk_server)?,
        snapshot(&emulation.shared.counters),
    );
    figures.idle_secs = t.elapsed().as_secs_f64();
    figures.idle_master_cpu_secs = after.0.0 - before.0.0;
    figures.idle_master_cpu_percent = 100.0 * figures.idle_master_cpu_secs / figures.idle_secs;
    figures.master_rss_mib = after.0.1;
    figures.master_peak_rss_mib = after.0.2;
    let passes = |m: &BTreeMap<String, f64>| m.get("accordion_master_passes_total").copied().unwrap_or(0.0) as u64;
    figures.idle_passes = passes(&after.1).saturating_sub(passes(&before.1));
    figures.idle_zk_packets = after.2.0 - before.2.0;
    figures.idle_zk_writes = after.2.1 - before.2.1;
    let catalog_writes =
        |m: &BTreeMap<String, f64>| m.get("accordion_master_catalog_writes_total").copied().unwrap_or(0.0) as u64;
    figures.idle_catalog_writes = catalog_writes(&after.1).saturating_sub(catalog_writes(&before.1));
    figures.idle_calls_to_servers = after.3[0] - before.3[0];
    figures.idle_status_reads = after.3[1] - before.3[1];
    figures.idle_reports = after.3[2] - before.3[2];
    figures.idle_report_bytes = after.3[3] - before.3[3];
    eprintln!("scale: idle {figures:?}");

    {
        let lost = emulation.servers[0].held().into_iter().next().context("server 0 holds no region")?;
        let passes_before = master_metrics(&http).map_or(0, |m| passes(&m));
        let t = Instant::now();
        emulation.servers[0].close(&lost);
        wait_until("the master sees the region lost", timeout, || {
            master_metrics(&http).is_some_and(|m| m.get("accordion_master_open_regions") != Some(&(r as f64)))
        })?;
        wait_until("the lost region opens again", timeout, || {
            emulation.open_regions() == r
                && master_metrics(&http).is_some_and(|m| m.get("accordion_master_open_regions") == Some(&(r as f64)))
        })?;
        figures.one_change_secs = t.elapsed().as_secs_f64();
        let m = master_metrics(&http).unwrap_or_default();
        figures.one_change_passes = passes(&m).saturating_sub(passes_before);
        let secs = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        figures.one_change_last_pass_secs =
            (secs("accordion_master_last_pass_view_seconds"), secs("accordion_master_last_pass_execute_seconds"));
        figures.one_change_last_pass_regions = secs("accordion_master_last_pass_regions_read");
        eprintln!("scale: one lost region open again in {:.2} s", figures.one_change_secs);
    }

    if !args.no_failover && n > 1 {
        let victim = (0..n).max_by_key(|&i| emulation.servers[i].held().len()).expect("servers");
        let held: Vec<String> = emulation.servers[victim].held();
        figures.failover_regions = held.len();
        emulation.kill(victim);
        let t = Instant::now();
        let others = |id: &String| {
            emulation
                .servers
                .iter()
                .enumerate()
                .any(|(i, s)| i != victim && s.state.lock().expect("state").snap.held.contains_key(id))
        };
        wait_until("the dead server's regions reopen", timeout, || held.iter().all(others))?;
        figures.failover_secs = Some(t.elapsed().as_secs_f64());
        eprintln!(
            "scale: {} regions of a dead server open elsewhere in {:.1} s",
            held.len(),
            t.elapsed().as_secs_f64()
        );
    }

    if !args.no_takeover {
        let standby = MasterProcess::spawn(
            &url,
            &shared_root,
            &secret_file,
            session,
            &dir.join(format!("master-b-{n}x{r}.log")),
        )?;
        wait_until("the standby joins the election", timeout, || {
            watcher.children(cluster::election::ELECTION).is_ok_and(|c| c.len() >= 2)
        })?;
        let open_now = emulation.open_regions() as f64;
        master.kill();
        let killed = Instant::now();
        let mut new_http = String::new();
        wait_until("the standby becomes active", timeout, || {
            active_master_other_than(&watcher, Some(&http)).map(|h| new_http = h).is_some()
        })?;
        let active = Instant::now();
        wait_until("the new master holds the whole view", timeout, || {
            master_metrics(&new_http).is_some_and(|m| {
                figures.takeover_catalog_load_secs = m.get("accordion_master_catalog_load_seconds").copied();
                m.get("accordion_master_active") == Some(&1.0)
                    && m.get("accordion_master_open_regions") == Some(&open_now)
                    && m.get("accordion_master_known_regions") == Some(&(r as f64))
                    && m.get("accordion_master_catalog_regions") == Some(&(r as f64))
            })
        })?;
        figures.takeover_from_kill_secs = Some(killed.elapsed().as_secs_f64());
        figures.takeover_from_active_secs = Some(active.elapsed().as_secs_f64());
        eprintln!(
            "scale: a new master holds the view of {r} regions {:.1} s after the kill ({:.1} s after it became active)",
            killed.elapsed().as_secs_f64(),
            active.elapsed().as_secs_f64()
        );
        master = standby;
    }
    drop(emulation);
    master.kill();
    Ok(figures)
}

fn snapshot(c: &Counters) -> [u64; 4] {
    [
        c.calls.load(Ordering::Relaxed),
        c.status_reads.load(Ordering::Relaxed),
        c.reports.load(Ordering::Relaxed),
        c.report_bytes.load(Ordering::Relaxed),
    ]
}

/// Runs every case and prints the table.
pub fn run(args: &ScaleArgs) -> anyhow::Result<Vec<CaseFigures>> {
    let dir = tempfile::tempdir()?;
    let zk_server = LocalZooKeeper::start(&dir.path().join("zookeeper"))?;
    let mut all = Vec::new();
    for &r in &args.regions {
        for &n in &args.servers {
            let figures = run_case(&zk_server, dir.path(), n, r, args)
                .with_context(|| format!("the case of {n} servers and {r} regions"))?;
            all.push(figures);
        }
    }
    println!("{}", table(&all, args));
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&all)?)?;
    }
    Ok(all)
}

fn table(all: &[CaseFigures], args: &ScaleArgs) -> String {
    let mut out = format!(
        "accordion bench scale: the master and ZooKeeper against emulated region servers \
         (idle {} s, open delay {} ms, sessions {} ms)\n",
        args.idle_secs, args.open_delay_ms, args.session_timeout_ms
    );
    out.push_str(
        "| servers | regions | join s | create s (catalog settled) | idle master CPU | master RSS (peak) MiB | passes | calls to servers \
         | /status reads | reports (bytes) | ZK packets | ZK writes | catalog writes \
         | one region lost: open again s (passes; last pass view + execute ms, regions read) | failover (regions) s \
         | takeover s (from active; catalog read) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    for f in all {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} ({:.1}) | {:.2} s ({:.2} %) | {:.0} ({:.0}) | {} | {} | {} | {} ({}) | {} | {} | {} | {:.2} ({}; {:.0} + {:.0}, {}) | {} ({}) | {} ({}; {}) |\n",
            f.servers,
            f.regions,
            f.join_secs,
            f.create_secs,
            f.settle_secs,
            f.idle_master_cpu_secs,
            f.idle_master_cpu_percent,
            f.master_rss_mib,
            f.master_peak_rss_mib,
            f.idle_passes,
            f.idle_calls_to_servers,
            f.idle_status_reads,
            f.idle_reports,
            f.idle_report_bytes,
            f.idle_zk_packets,
            f.idle_zk_writes,
            f.idle_catalog_writes,
            f.one_change_secs,
            f.one_change_passes,
            f.one_change_last_pass_secs.0 * 1000.0,
            f.one_change_last_pass_secs.1 * 1000.0,
            f.one_change_last_pass_regions,
            opt(f.failover_secs),
            f.failover_regions,
            opt(f.takeover_from_kill_secs),
            opt(f.takeover_from_active_secs),
            f.takeover_catalog_load_secs.map_or("–".to_string(), |v| format!("{v:.2} s")),
        ));
    }
    out
}
