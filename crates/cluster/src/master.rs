//! `Master`: the cluster's master process. It joins the master election
//! (`election.rs`), waits as a standby until it is the active master, and
//! then follows the region servers' membership (`membership.rs`, by a
//! ZooKeeper watch: only servers that join are read): every server that
//! joins or leaves is logged and shown on its status page (`GET /status`,
//! JSON; `GET /`, a page for people; `GET /metrics`, Prometheus text,
//! `master_metrics.rs`).
//!
//! The servers tell the active master what they hold (`POST /report`,
//! HBase's `RegionServerReport`): a whole report, then deltas at each
//! change and a heartbeat every [`REPORT_PERIOD`] (`server::master_report`).
//! The master keeps the view they build (`reports.rs`) and never reads a
//! server's status. When the view changed, the membership changed, the
//! balancer is due or a pass left work in transition, it runs an
//! assignment pass (`assignment/`): a dead server's WAL is recovered and
//! every region no live server holds is opened, in batches, on several
//! servers at once, with the master's region map kept in a log on the
//! shared root (`catalog.rs`, `catalog_log.rs`). Region servers ask it
//! where a region is (`GET /catalog?regions=ID,…`: each entry, with the
//! addresses of the live server holding it). An idle cluster costs the master its servers'
//! heartbeats and nothing else: no pass, no ZooKeeper or file-system call.
//!
//! Operators move, close and open regions through the active master
//! (`POST /admin/move|unassign|assign`, `operator.rs`), admitted by the
//! binary's rules ([`Admit`]: the admin token or a client certificate).
//!
//! A master whose ZooKeeper session ends stops: it can no longer know it is
//! the only active master (HBase's master aborts likewise). [`Master::wait`]
//! then returns the reason.
//!
//! Thread safety: the master's work runs on one thread ("master") and its
//! assignment on the poller ("master-load"), which also runs operator
//! calls, sent to it over a channel by the HTTP thread's admin threads; the
//! view and the report book are each behind a mutex (never held together,
//! never across a call to a server): the HTTP thread applies reports to the
//! book and wakes the poller, which renders the book for a pass.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::assignment::{RegionServers, SLOW_CALL};
use crate::election::{self, Candidate, MasterInfo};
use crate::error::{ClusterError, Result};
use crate::master_http::{HttpReply, HttpRequest};
use crate::membership::{self, ServerInfo};
use crate::server_load::ServerLoad;
use crate::zk::{Zk, ZkUrl};

/// How a master is started.
#[derive(Debug, Clone)]
pub struct MasterConfig {
    pub cluster: ZkUrl,
    /// Where the status page listens (port 0: any free port).
    pub http_addr: SocketAddr,
    pub session_timeout: Duration,
    /// How often the balancer runs (HBase's `hbase.balancer.period`, 5
    /// minutes); `None`: never.
    pub balancer_period: Option<Duration>,
    /// The address the cluster is told for the page when it is not
    /// `http_addr`'s: a TLS front's, the page itself then being on loopback.
    pub advertised_http: Option<SocketAddr>,
    /// Who may make operator calls (`None`: nobody; they are refused).
    pub admit: Option<Admit>,
    /// The shared root the master keeps its catalog under (`hdfs://…` or
    /// `file:///…`). `None`: the one the cluster recorded when its first
    /// region server joined (`cluster_config.rs`); given, it must be that
    /// one, or is recorded if none is yet.
    pub root: Option<String>,
}

/// Whether an admin call from `peer` with the `Authorization` header
/// `authorization` may run; else the status and why. The binary builds it
/// from the admin token and the TLS front's verified clients.
#[derive(Clone)]
pub struct Admit(pub Arc<AdmitFn>);

pub type AdmitFn = dyn Fn(Option<SocketAddr>, Option<&str>) -> std::result::Result<(), (u16, String)> + Send + Sync;

impl std::fmt::Debug for Admit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admit(..)")
    }
}

/// An operator call on its way to the poller, with where its answer goes
/// and when its caller stops waiting (a call past that is not run: its
/// caller was told it timed out and may have asked again).
struct Queued {
    call: http_api::OperatorCall,
    reply: std::sync::mpsc::Sender<crate::operator::Answer>,
    deadline: Instant,
}

/// This master's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Standby,
    Active,
    /// Its session ended; it no longer acts.
    Stopped,
}

/// One line of the master's event list.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub at_ms: u64,
    pub what: String,
}

/// What the master knows, as its status page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct MasterView {
    pub name: String,
    pub role: Role,
    pub session: String,
    pub active_master: Option<MasterInfo>,
    pub servers: Vec<ServerInfo>,
    /// Each live server's load, by server name (active master only).
    pub loads: std::collections::BTreeMap<String, ServerLoad>,
    /// Regions in transition as the last assignment pass saw them
    /// (before it acted): opening, closing, or held by no live server.
    pub in_transition: Vec<crate::assignment::InTransition>,
    /// The latest events, oldest first (at most `MAX_EVENTS`).
    pub events: Vec<Event>,
    /// The catalog, by region id (active master only): where the master
    /// put each region (`catalog.rs`), as it is when read (a copy of the
    /// view shares it).
    pub catalog: crate::catalog::CatalogReader,
    /// Whether this master (active) has read its catalog: until then it
    /// answers no lookup.
    pub catalog_loaded: bool,
    /// How long reading the catalog took when this master took over.
    pub catalog_load_secs: Option<f64>,
    /// What the cluster's members share (`cluster_config.rs`; active
    /// master only).
    pub config: Option<crate::cluster_config::ClusterConfig>,
    /// Assignment passes run since this master became active.
    pub passes: u64,
    /// What the servers' reports brought (`reports.rs`).
    pub reports: crate::reports::ReportCounters,
    /// Regions known to exist (held or not).
    pub known_regions: usize,
    /// The last pass: how long its phases took.
    pub last_pass: Option<PassTiming>,
}

impl MasterView {
    /// A standby's view before it knows anything of the cluster.
    fn standby(name: String, session: String, active_master: Option<MasterInfo>) -> MasterView {
        MasterView {
            name,
            role: Role::Standby,
            session,
            active_master,
            servers: Vec::new(),
            loads: Default::default(),
            in_transition: Vec::new(),
            events: Vec::new(),
            catalog: Default::default(),
            catalog_loaded: false,
            catalog_load_secs: None,
            config: None,
            passes: 0,
            reports: Default::default(),
            known_regions: 0,
            last_pass: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn standby_for_test() -> MasterView {
        MasterView::standby("m,1,1".into(), String::new(), None)
    }
}

/// How long the phases of a pass took, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PassTiming {
    /// Rendering the reports as the plan's view.
    pub view_secs: f64,
    /// Planning and carrying the plan out (calls and catalog writes).
    pub plan_and_execute_secs: f64,
    /// Regions the pass saw in transition.
    pub in_transition: usize,
    /// Regions it read: those that changed or were unsettled (a scoped
    /// pass), or every region known.
    pub regions_read: usize,
    /// It read only what changed or was unsettled.
    pub scoped: bool,
}

/// How often a region server reports when nothing changes (HBase's
/// `hbase.regionserver.msginterval`, 3 s); a change is reported at once.
pub const REPORT_PERIOD: Duration = Duration::from_secs(3);

/// A server whose last report is older than this counts as unread.
pub const REPORT_STALE: Duration = Duration::from_secs(10);

/// The largest report body the master reads (a whole report of a server
/// holding 100,000 regions is about 8 MB).
const MAX_REPORT_BYTES: u64 = 64 << 20;

const MAX_EVENTS: usize = 200;

pub struct Master {
    view: Arc<Mutex<MasterView>>,
    http_addr: SocketAddr,
    page_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<()>>>,
    http: Option<JoinHandle<()>>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn record(view: &Mutex<MasterView>, what: String) {
    tracing::info!("{what}");
    let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
    v.events.push(Event { at_ms: now_ms(), what });
    if v.events.len() > MAX_EVENTS {
        v.events.remove(0);
    }
}

impl Master {
    /// Connects to ZooKeeper, joins the election and starts the status page;
    /// the rest happens on the master's thread.
    pub fn start(config: MasterConfig) -> Result<Master> {
        let listener = std::net::TcpListener::bind(config.http_addr).map_err(|e| {
            ClusterError::Io(std::io::Error::other(format!("master HTTP on {}: {e}", config.http_addr)))
        })?;
        let http_addr = listener.local_addr()?;
        let zk = Arc::new(Zk::connect(&config.cluster, config.session_timeout)?);
        // Behind a TLS front the page listens on loopback; the front's
        // address is the one the cluster sees.
        let page_addr = http_addr;
        let http_addr = config.advertised_http.unwrap_or(http_addr);
        let host = http_addr.ip().to_string();
        let info =
            MasterInfo { name: format!("{host},{},{}", http_addr.port(), now_ms()), http: http_addr.to_string() };
        let candidate = Candidate::join(zk.clone(), &info)?;
        let election_seq = election::sequence_of(candidate.node()).ok_or_else(|| ClusterError::Malformed {
            what: "election node",
            path: candidate.node().to_string(),
            reason: "no sequence number".into(),
        })?;
        let view = Arc::new(Mutex::new(MasterView::standby(
            info.name.clone(),
            zk.session_id(),
            election::active_master(&zk)?,
        )));
        let book = Arc::new(Mutex::new(crate::reports::ReportBook::new(REPORT_STALE)));
        // The live members by name, for the HTTP thread's check of a report.
        let members: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let changed = Arc::new(AtomicBool::new(false));
        let thread = {
            let (zk, view, stop, changed) = (zk.clone(), view.clone(), stop.clone(), changed.clone());
            let members = members.clone();
            std::thread::Builder::new().name("master".into()).spawn(move || {
                let result = run(&zk, &candidate, &view, &members, &stop, &changed);
                let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
                v.role = Role::Stopped;
                drop(v);
                if let Err(e) = &result {
                    record(&view, format!("master stopped: {e}"));
                }
                result
            })?
        };
        let (calls_tx, calls) = std::sync::mpsc::channel::<Queued>();
        {
            let (view, stop, period, changed) = (view.clone(), stop.clone(), config.balancer_period, changed.clone());
            let book = book.clone();
            let catalog_at = CatalogAt { root: config.root.clone(), election_seq };
            std::thread::Builder::new()
                .name("master-load".into())
                .spawn(move || assign_loop(&zk, &view, &book, &stop, &changed, period, &calls, &catalog_at))?;
        }
        let http_thread = {
            let (view, admit) = (view.clone(), config.admit.clone());
            let calls_tx = Mutex::new(calls_tx);
            let handle = move |request: HttpRequest| -> HttpReply {
                use hyper::Method;
                match (&request.method, request.path()) {
                    (&Method::POST, "/report") => report(&request, admit.as_ref(), &view, &book, &members, &changed),
                    (&Method::POST, path) if path.starts_with("/admin/") => {
                        let calls = calls_tx.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        operator_call(&request, admit.as_ref(), &calls, &changed)
                    }
                    (&Method::GET, "/catalog") => catalog_lookup(&request, &view),
                    (&Method::GET, "/metrics") => HttpReply {
                        status: 200,
                        content_type: "text/plain; version=0.0.4",
                        body: crate::master_metrics::render(&view, &book),
                    },
                    _ => respond(&view, &request),
                }
            };
            let handler = crate::master_http::Handler {
                handle: Box::new(handle),
                // A report and a catalog lookup are quick; an operator
                // call waits for a pass, and a page renders the view.
                may_block: Box::new(|r: &HttpRequest| !matches!(r.path(), "/report" | "/catalog")),
                max_body: MAX_REPORT_BYTES as usize,
            };
            crate::master_http::spawn(listener, handler, stop.clone())?
        };
        Ok(Master { view, http_addr, page_addr, stop, thread: Some(thread), http: Some(http_thread) })
    }

    /// Where the cluster reaches the page (see `MasterConfig::advertised_http`).
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where the page's own listener is.
    pub fn page_addr(&self) -> SocketAddr {
        self.page_addr
    }

    /// Its role now, without copying the view.
    pub fn role(&self) -> Role {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).role
    }

    /// A snapshot of what the master knows (its catalog read through, not
    /// copied).
    pub fn view(&self) -> MasterView {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until the master stops (its session ended, or [`shutdown`](Self::shutdown)).
    pub fn wait(&mut self) -> Result<()> {
        let result = match self.thread.take() {
            Some(t) => {
                t.join().unwrap_or_else(|_| Err(ClusterError::SessionEnded("the master thread panicked".into())))
            }
            None => Ok(()),
        };
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.http.take() {
            let _ = h.join();
        }
        result
    }

    /// Stops the master; its session closes, so a standby takes over at once.
    pub fn shutdown(mut self) -> Result<()> {
        self.stop.store(true, Ordering::Release);
        self.wait()
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.wait();
    }
}

/// The master's thread: standby until active, then follow membership.
/// `changed` is set when servers join or leave, so that the poller runs an
/// assignment pass at once; `members` is kept equal to the live names.
///
/// What it costs: one children read per membership change, and one read
/// of each server that joined (or that still starts: its addresses come a
/// moment later), never a read of every member; with nothing changing it
/// only waits on its watch.
fn run(
    zk: &Zk,
    candidate: &Candidate,
    view: &Mutex<MasterView>,
    members: &Mutex<std::collections::HashSet<String>>,
    stop: &AtomicBool,
    changed: &AtomicBool,
) -> Result<()> {
    let mut standby_noted = false;
    let promoted = candidate.wait_until_active(stop, || {
        if let Ok(active) = election::active_master(zk) {
            let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
            let ours = active.as_ref().is_some_and(|m| m.name == v.name);
            v.active_master = active;
            if !ours && !standby_noted {
                standby_noted = true;
                let active = v.active_master.as_ref().map_or("none".into(), |m| m.name.clone());
                drop(v);
                record(view, format!("standby master (active: {active})"));
            }
        }
    })?;
    if !promoted {
        return Ok(());
    }
    {
        let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
        v.role = Role::Active;
        v.active_master = election::active_master(zk)?;
    }
    record(view, format!("active master (election node {}, session {})", candidate.node(), zk.session_id()));
    zk.ensure(membership::SERVERS)?;
    let mut known: std::collections::BTreeMap<String, ServerInfo> = Default::default();
    let mut watch: Option<crate::zk::Watch> = None;
    while !stop.load(Ordering::Acquire) {
        if zk.has_ended() {
            return Err(ClusterError::SessionEnded("while the active master".into()));
        }
        let starting = known.values().any(|s| !s.is_serving());
        if watch.is_none() || starting {
            let (names, w) = zk.watch_children(membership::SERVERS)?;
            watch = Some(w);
            let before = known.clone();
            known.retain(|name, _| names.contains(name));
            for name in &names {
                if known.get(name).is_some_and(ServerInfo::is_serving) {
                    continue;
                }
                match membership::read_server(zk, name)? {
                    Some(info) => {
                        known.insert(name.clone(), info);
                    }
                    None => {
                        known.remove(name);
                    }
                }
            }
            for s in known.values() {
                match before.get(&s.name) {
                    None if s.is_serving() => {
                        record(view, format!("region server {} joined (thrift {}, http {})", s.name, s.thrift, s.http))
                    }
                    None => record(view, format!("region server {} joined (starting)", s.name)),
                    Some(k) if !k.is_serving() && s.is_serving() => {
                        record(view, format!("region server {} serves (thrift {}, http {})", s.name, s.thrift, s.http))
                    }
                    Some(_) => {}
                }
            }
            for name in before.keys().filter(|k| !known.contains_key(*k)) {
                record(view, format!("region server {name} left (its ZooKeeper session ended)"));
            }
            if known != before {
                *members.lock().unwrap_or_else(|p| p.into_inner()) = known.keys().cloned().collect();
                view.lock().unwrap_or_else(|p| p.into_inner()).servers = known.values().cloned().collect();
                changed.store(true, Ordering::Release);
            }
        }
        // Short waits, so that `stop` and the session's end are seen; the
        // membership is read again only when the watch fired (or a server
        // is still starting).
        if watch.as_ref().is_some_and(|w| w.wait(Duration::from_millis(250))) {
            watch = None;
        }
    }
    Ok(())
}

/// What the active master's poller remembers between iterations.
struct Assigner {
    memory: crate::assignment::PassMemory,
    catalog: Option<crate::catalog::MasterCatalog>,
    /// When the last balancer run was (the first is a period after this
    /// master became active).
    balanced_at: Option<Instant>,
    /// A pass must run by then even if nothing is reported (work was left
    /// in transition).
    retry_at: Option<Instant>,
    /// The live servers at the last iteration, by name.
    members: std::collections::BTreeSet<String>,
    /// The WAL directories must be listed again (activation, a server left,
    /// a recovery failed).
    wal_owners_wanted: bool,
    /// One server must take from the root the tables a server that left
    /// may have created without telling anyone.
    refresh_wanted: bool,
    /// Why the catalog could not be read, as last recorded (said once).
    catalog_error: Option<String>,
    /// The regions a scoped pass reads besides the ones that changed:
    /// those the last pass left unsettled (`ReportBook::is_settled`).
    /// `None`: the next pass reads every region.
    watch: Option<std::collections::BTreeSet<String>>,
}

/// Where the active master's catalog is: the shared root (given, or the
/// cluster's), written by the master of election sequence `election_seq`.
struct CatalogAt {
    root: Option<String>,
    election_seq: u64,
}

/// The catalog log's epoch of the master of election sequence `seq` in a
/// cluster whose configuration was recorded at `recorded_ms`: masters of
/// one ZooKeeper take turns in election order, and a ZooKeeper whose data
/// was reset since (its sequences start again at 0, its configuration is
/// recorded anew, later) comes after all of them. A sequence past a
/// million wraps (a million masters of one ZooKeeper are not expected).
pub(crate) fn catalog_epoch(recorded_ms: u64, seq: u64) -> u64 {
    recorded_ms.saturating_mul(1_000_000).saturating_add(seq % 1_000_000)
}

impl CatalogAt {
    /// Takes the catalog over: the root agreed with the cluster's, its log
    /// read and a file of this master's epoch started.
    fn load(&self, zk: &Arc<Zk>, master: &str) -> Result<(crate::catalog::MasterCatalog, String)> {
        let config = match &self.root {
            Some(root) => {
                crate::cluster_config::agree(zk, master, &crate::cluster_config::Proposed::Given(root.clone()))?
            }
            None => match crate::cluster_config::read(zk)? {
                Some(config) => config,
                None => {
                    return Err(ClusterError::Mismatch(
                        "no region server has recorded the cluster's root yet (or start the master with --root)".into(),
                    ));
                }
            },
        };
        let root = config.root;
        let session = zk.clone();
        let log = crate::catalog_log::CatalogLog::on_root(&root, Arc::new(move || !session.has_ended()))?;
        let epoch = catalog_epoch(config.recorded_ms, self.election_seq);
        let mut catalog = crate::catalog::MasterCatalog::load(Arc::new(log), epoch)?;
        let moved = crate::catalog::take_legacy_znodes(zk, &mut catalog)?;
        if moved > 0 {
            tracing::info!(moved, "moved the catalog an earlier master kept in ZooKeeper into the log");
        }
        Ok((catalog, root))
    }
}

/// How soon a pass that left work in transition is followed by another.
const RETRY_PASS: Duration = Duration::from_secs(1);

/// The active master's assignment, on the poller thread: passes on the
/// reports' view when something changed (`assignment.rs`), operator calls,
/// the balancer's period. Nothing here polls a server or ZooKeeper while
/// the cluster is idle.
#[expect(clippy::too_many_arguments, reason = "the poller's shared state, each owned elsewhere")]
fn assign_loop(
    zk: &Arc<Zk>,
    view: &Mutex<MasterView>,
    book: &Mutex<crate::reports::ReportBook>,
    stop: &AtomicBool,
    changed: &AtomicBool,
    balancer_period: Option<Duration>,
    calls: &std::sync::mpsc::Receiver<Queued>,
    catalog_at: &CatalogAt,
) {
    let mut a = Assigner {
        memory: Default::default(),
        catalog: None,
        balanced_at: None,
        retry_at: None,
        members: Default::default(),
        wal_owners_wanted: true,
        refresh_wanted: false,
        catalog_error: None,
        watch: None,
    };
    let lock_book = || book.lock().unwrap_or_else(|p| p.into_inner());
    while !stop.load(Ordering::Acquire) {
        let (role, servers) = {
            let v = view.lock().unwrap_or_else(|p| p.into_inner());
            (v.role, v.servers.clone())
        };
        match role {
            Role::Active => {
                if a.catalog.is_none() {
                    let started = Instant::now();
                    let name = view.lock().unwrap_or_else(|p| p.into_inner()).name.clone();
                    match catalog_at.load(zk, &name) {
                        Ok((c, root)) => {
                            let on: std::collections::BTreeSet<_> =
                                c.entries().values().filter_map(|l| l.server.clone()).collect();
                            record(
                                view,
                                format!(
                                    "loaded the catalog from {root}: {} regions of {} tables on {} servers ({:.2} s)",
                                    c.entries().len(),
                                    c.tables().len(),
                                    on.len(),
                                    started.elapsed().as_secs_f64()
                                ),
                            );
                            lock_book().seed(&c.entries());
                            {
                                let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
                                v.catalog = c.reader();
                                v.catalog_loaded = true;
                                v.catalog_load_secs = Some(started.elapsed().as_secs_f64());
                            }
                            a.catalog = Some(c);
                        }
                        Err(e) => {
                            let what = format!("cannot read the catalog: {e}; assignment waits");
                            if a.catalog_error.as_ref() != Some(&what) {
                                record(view, what.clone());
                                a.catalog_error = Some(what);
                            }
                            continue_after_sleep(stop, changed);
                            continue;
                        }
                    }
                    if let Ok(config) = crate::cluster_config::read(zk) {
                        view.lock().unwrap_or_else(|p| p.into_inner()).config = config;
                    }
                }
                active_iteration(zk, view, book, &mut a, &servers, balancer_period, calls, changed);
            }
            Role::Stopped => return,
            Role::Standby => {
                a.balanced_at = None;
                refuse_calls(calls, "this master is a standby; make the call on the active master");
            }
        }
        continue_after_sleep(stop, changed);
    }
}

/// One iteration of the active master's poller; see [`assign_loop`].
#[expect(clippy::too_many_arguments, reason = "the poller's state, passed rather than held in a struct of references")]
fn active_iteration(
    zk: &Arc<Zk>,
    view: &Mutex<MasterView>,
    book: &Mutex<crate::reports::ReportBook>,
    a: &mut Assigner,
    servers: &[ServerInfo],
    balancer_period: Option<Duration>,
    calls: &std::sync::mpsc::Receiver<Queued>,
    changed: &AtomicBool,
) {
    let lock_book = || book.lock().unwrap_or_else(|p| p.into_inner());
    let names: std::collections::BTreeSet<String> = servers.iter().map(|s| s.name.clone()).collect();
    let membership_changed = names != a.members;
    if a.members.iter().any(|m| !names.contains(m)) {
        // A server left: its WAL directory is to recover, and a table it
        // created without telling the others is to be found on the root.
        a.wal_owners_wanted = true;
        a.refresh_wanted = true;
    }
    if membership_changed {
        lock_book().retain_members(|n| names.contains(n));
        a.members = names;
    }
    let serving: Vec<&ServerInfo> = servers.iter().filter(|s| s.is_serving()).collect();
    if a.refresh_wanted
        && let Some(s) = serving.first()
    {
        match crate::assignment::HttpRegionServers.call(s, &http_api::RegionServerCall::Refresh, SLOW_CALL) {
            Ok(_) => a.refresh_wanted = false,
            Err(e) => record(view, format!("{} could not take new tables from the root: {e}", s.name)),
        }
    }
    if a.wal_owners_wanted
        && let Some(s) = serving.first()
    {
        let listed = crate::assignment::HttpRegionServers
            .call(s, &http_api::RegionServerCall::WalOwners, SLOW_CALL)
            .and_then(|body| serde_json::from_str::<Vec<String>>(&body).map_err(|e| e.to_string()));
        match listed {
            Ok(owners) => {
                lock_book().set_wal_owners(owners);
                a.wal_owners_wanted = false;
            }
            Err(e) => record(view, format!("{} could not list the WAL directories: {e}; recovery waits", s.name)),
        }
    }
    let now = Instant::now();
    {
        let b = lock_book();
        let loads = b
            .loads(now)
            .into_iter()
            .map(|(name, l)| {
                let error = (l.reported_secs_ago > b.stale_after().as_secs_f64())
                    .then(|| format!("no report for {:.0} s", l.reported_secs_ago));
                let load = ServerLoad {
                    regions: l.regions,
                    memstore_bytes: l.memstore_bytes,
                    requests_per_sec: l.requests_per_sec,
                    error,
                };
                (name, load)
            })
            .collect();
        let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
        v.loads = loads;
        v.reports = b.counters();
        v.known_regions = b.known_regions();
    }
    let Some(catalog) = a.catalog.as_mut() else {
        refuse_calls(calls, "the active master has not read its catalog yet; try again");
        return;
    };
    let registered = |name: &str| -> Option<bool> {
        zk.get(&format!("{}/{name}", membership::SERVERS)).ok().map(|node| node.is_some())
    };
    let since = *a.balanced_at.get_or_insert_with(Instant::now);
    // The switch is read only when a run is due (switched off, or
    // unreadable: no periodic run).
    let due =
        balancer_period.is_some_and(|p| since.elapsed() >= p) && crate::balancer_switch::is_on(zk).unwrap_or(false);
    if balancer_period.is_some_and(|p| since.elapsed() >= p) && !due {
        a.balanced_at = Some(Instant::now());
    }
    // One operator call per iteration, on the view as it is now, before
    // the pass changes anything; the next iteration renders it again (a
    // second call sees what the first did).
    while let Ok(Queued { call, reply, deadline }) = calls.try_recv() {
        if Instant::now() > deadline {
            record(view, format!("operator {call:?}: not run, its caller stopped waiting"));
            continue;
        }
        let docs = lock_book().statuses(Instant::now(), |id| catalog.get(id).is_some());
        let answer = match &call {
            http_api::OperatorCall::Region(region_call) => {
                let mut noted = Vec::new();
                let answer = crate::operator::run(
                    region_call,
                    servers,
                    &docs,
                    &crate::assignment::HttpRegionServers,
                    catalog,
                    &mut noted,
                );
                let mut b = lock_book();
                for n in &noted {
                    b.note(&n.server, &n.region, &n.table, n.open, n.changes);
                }
                answer
            }
            http_api::OperatorCall::BalanceSwitch { on } => crate::balancer_switch::set(zk, *on)
                .map(|was| format!("previous balancer state: {was}"))
                .map_err(|e| (503, format!("cannot write the balancer switch: {e}"))),
            http_api::OperatorCall::Balance => {
                let outcome = balance_now(zk, servers, &docs, &mut a.memory, catalog, &registered);
                if outcome.as_ref().is_ok_and(|o| o.balanced) {
                    a.balanced_at = Some(Instant::now());
                }
                outcome.map(|o| {
                    let mut b = lock_book();
                    for n in &o.noted {
                        b.note(&n.server, &n.region, &n.table, n.open, n.changes);
                    }
                    drop(b);
                    for event in &o.events {
                        record(view, event.clone());
                    }
                    o.answer
                })
            }
        };
        record(view, format!("operator {call:?}: {}", answer.as_ref().unwrap_or_else(|(_, e)| e)));
        let _ = reply.send(answer);
        // The view changed under the call: a pass follows at once.
        lock_book().touch();
        // An operator's call writes the catalog before its server call,
        // which may fail and leave the region as no report will name it:
        // the next pass reads every region.
        a.watch = None;
        changed.store(true, Ordering::Release);
        return;
    }
    let dirty = lock_book().take_dirty();
    let retry = a.retry_at.is_some_and(|at| Instant::now() >= at);
    let (full_wanted, changes) = lock_book().take_changes();
    match a.watch.as_mut() {
        _ if full_wanted => a.watch = None,
        Some(watch) => watch.extend(changes),
        None => {}
    }
    if !(dirty || membership_changed || due || retry) {
        return;
    }
    let started = Instant::now();
    // A pass reads only the regions that changed or are unsettled, unless
    // it must read them all: the first one, after a table's DDL or a
    // membership change, with a server's report missing (the rules then
    // read the catalog for a dead server's regions), or for the balancer.
    let all_fresh = lock_book().all_fresh(servers.iter().filter(|s| s.is_serving()).map(|s| s.name.as_str()), started);
    let scope = a.watch.take().filter(|_| !(membership_changed || due || !all_fresh));
    let (docs, open_counts) = {
        let b = lock_book();
        match &scope {
            Some(ids) => {
                (b.statuses_of(ids, Instant::now(), |id| catalog.get(id).is_some()), b.open_counts(Instant::now()))
            }
            None => (b.statuses(Instant::now(), |id| catalog.get(id).is_some()), Default::default()),
        }
    };
    let view_secs = started.elapsed().as_secs_f64();
    let (scoped, regions_read) = match &scope {
        Some(ids) => (true, ids.len()),
        None => (false, lock_book().known_regions()),
    };
    let outcome = match &scope {
        Some(ids) => {
            let table_exists = |t: &str| lock_book().has_table(t);
            let scope =
                crate::assignment::Scope { regions: ids, open_counts: &open_counts, table_exists: &table_exists };
            crate::assignment::scoped_pass(
                &crate::assignment::HttpRegionServers,
                servers,
                &docs,
                &mut a.memory,
                catalog,
                &registered,
                &scope,
            )
        }
        None => crate::assignment::pass(
            &crate::assignment::HttpRegionServers,
            servers,
            &docs,
            &mut a.memory,
            catalog,
            &registered,
            due,
        ),
    };
    {
        let mut b = lock_book();
        for dead in &outcome.recovered {
            b.recovered(dead);
        }
        for n in &outcome.noted {
            b.note(&n.server, &n.region, &n.table, n.open, n.changes);
        }
        // What the next passes watch: what this one left unsettled (the
        // regions it acted on are among the changes its notes recorded).
        a.watch = Some(match scope {
            Some(mut ids) => {
                b.retain_unsettled(&mut ids, |id| catalog.get(id));
                ids
            }
            None => b.unsettled(&catalog.entries()),
        });
    }
    if outcome.events.iter().any(|e| e.contains("assignment waits")) {
        a.wal_owners_wanted = true;
    }
    // Again soon when work is in transition, and when a daughter's grace
    // ends (it may then be assigned; nothing else would wake a pass).
    let grace_end = {
        let b = lock_book();
        match &a.watch {
            Some(ids) => b.next_grace_end_of(ids),
            None => b.next_grace_end(),
        }
    }
    .filter(|at| *at > Instant::now());
    a.retry_at = [outcome.busy.then(|| Instant::now() + RETRY_PASS), grace_end].into_iter().flatten().min();
    {
        let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
        v.passes += 1;
        v.last_pass = Some(PassTiming {
            view_secs,
            plan_and_execute_secs: started.elapsed().as_secs_f64() - view_secs,
            in_transition: outcome.in_transition.as_ref().map_or(0, Vec::len),
            regions_read,
            scoped,
        });
    }
    if outcome.balanced || due {
        a.balanced_at = Some(Instant::now());
    }
    for event in outcome.events {
        record(view, event);
    }
    if let Some(rit) = outcome.in_transition {
        view.lock().unwrap_or_else(|p| p.into_inner()).in_transition = rit;
    }
}

/// `POST /report`: a region server's report (`reports.rs`), admitted as an
/// operator call is (the cluster's token or a verified certificate; with
/// no admission rules, only from loopback), applied when this master is
/// active and the server a live member.
fn report(
    request: &HttpRequest,
    admit: Option<&Admit>,
    view: &Mutex<MasterView>,
    book: &Mutex<crate::reports::ReportBook>,
    members: &Mutex<std::collections::HashSet<String>>,
    changed: &AtomicBool,
) -> HttpReply {
    let peer = request.peer;
    if view.lock().unwrap_or_else(|p| p.into_inner()).role != Role::Active {
        return HttpReply::text(503, "this master is not the active master".into());
    }
    // The listener read at most MAX_REPORT_BYTES (413 beyond).
    let body = &request.body;
    let report: http_api::ServerReport = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return HttpReply::text(400, format!("not a report: {e}")),
    };
    let is_member = members.lock().unwrap_or_else(|p| p.into_inner()).contains(&report.server);
    // Admitted by the admin rules (the token, or a verified certificate
    // on the TLS front), or — as HBase's simple authentication takes a
    // region server's report — coming from the address of the live member
    // it names.
    let from_member = is_member && peer.is_some_and(|p| report_comes_from(&report.server, p.ip()));
    let admitted = match admit {
        _ if from_member => Ok(()),
        None => Err((403, "this master takes reports only from its live members' addresses".to_string())),
        Some(Admit(admit)) => admit(peer, request.authorization.as_deref()),
    };
    if let Err((code, why)) = admitted {
        tracing::warn!(?peer, server = %report.server, code, "report refused");
        return HttpReply::text(code, why);
    }
    let (reply, dirty) = {
        let mut b = book.lock().unwrap_or_else(|p| p.into_inner());
        let reply = b.apply(&report, is_member, body.len(), Instant::now());
        // Not taken: the poller takes it; this only wakes it.
        let dirty = !report.is_heartbeat() && reply.applied;
        (reply, dirty)
    };
    if dirty {
        changed.store(true, Ordering::Release);
    }
    HttpReply::text(200, serde_json::to_string(&reply).expect("an answer serialises"))
}

/// `GET /catalog?regions=ID,…`: the catalog's entries of those regions,
/// each with its server's addresses when that server is a live member
/// (`http_api::CatalogLookup`). Only the active master answers, once it
/// has read its catalog; a region server asks the master ZooKeeper names
/// before it obeys an assign or unassign call, and to route a call for a
/// region it does not hold.
fn catalog_lookup(request: &HttpRequest, view: &Mutex<MasterView>) -> HttpReply {
    let query = request.query();
    let ids: Vec<&str> = query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("regions="))
        .flat_map(|list| list.split(','))
        .filter(|id| !id.is_empty())
        .collect();
    if ids.is_empty() || ids.len() > http_api::MAX_LOOKUP {
        let why = format!("name 1 to {} regions: /catalog?regions=ID,ID", http_api::MAX_LOOKUP);
        return HttpReply::text(400, why);
    }
    if let Some(bad) = ids.iter().find(|id| !http_api::is_lookup_id(id)) {
        return HttpReply::text(400, format!("not a region id: {:?}", bad.chars().take(80).collect::<String>()));
    }
    let (role, loaded, reader) = {
        let v = view.lock().unwrap_or_else(|p| p.into_inner());
        (v.role, v.catalog_loaded, v.catalog.clone())
    };
    if role != Role::Active || !loaded {
        return HttpReply::text(503, "this master is not the active master, or has not read its catalog yet".into());
    }
    let entries: Vec<(String, http_api::CatalogEntry)> = {
        let catalog = reader.read();
        ids.iter().filter_map(|id| catalog.get(*id).map(|e| (id.to_string(), e.clone()))).collect()
    };
    let mut lookup = http_api::CatalogLookup::default();
    {
        let v = view.lock().unwrap_or_else(|p| p.into_inner());
        // One pass over the members for the servers the entries name, not
        // a scan of every member per entry.
        let named: std::collections::HashSet<&str> = entries.iter().filter_map(|(_, e)| e.server.as_deref()).collect();
        let live: std::collections::HashMap<&str, &ServerInfo> = v
            .servers
            .iter()
            .filter(|s| s.is_serving() && named.contains(s.name.as_str()))
            .map(|s| (s.name.as_str(), s))
            .collect();
        for (id, entry) in entries.iter().cloned() {
            let owner = entry.server.as_deref().and_then(|name| live.get(name));
            let (thrift, rpc) = match owner {
                Some(s) => (Some(s.thrift.clone()), s.rpc.clone()),
                None => (None, None),
            };
            lookup.regions.insert(id, http_api::LocatedEntry { entry, thrift, rpc });
        }
    }
    HttpReply::json(serde_json::to_string(&lookup).expect("a lookup serialises"))
}

/// Whether a report naming member `server` (`host,port,start`) comes from
/// its host: the same address, or loopback for a member on loopback.
fn report_comes_from(server: &str, ip: std::net::IpAddr) -> bool {
    let host = server.split(',').next().unwrap_or_default();
    match host.parse::<std::net::IpAddr>() {
        Ok(h) => h == ip || (h.is_loopback() && ip.is_loopback()),
        Err(_) => host == "localhost" && ip.is_loopback(),
    }
}

/// What the `balancer` call did.
struct BalanceNow {
    balanced: bool,
    events: Vec<String>,
    /// What it opened and closed, for the view.
    noted: Vec<crate::assignment::executor::Noted>,
    /// HBase's shell prints `true` when the balancer ran, `false` when it
    /// could not; ours says why and what moved.
    answer: String,
}

/// Runs an assignment pass with the balancer due (the `balancer` call),
/// unless the balancer is switched off.
fn balance_now(
    zk: &Zk,
    servers: &[ServerInfo],
    docs: &std::collections::HashMap<String, http_api::ServerStatus>,
    memory: &mut crate::assignment::PassMemory,
    catalog: &mut crate::catalog::MasterCatalog,
    registered: &dyn Fn(&str) -> Option<bool>,
) -> Result<BalanceNow, (u16, String)> {
    let on = crate::balancer_switch::is_on(zk).map_err(|e| (503, format!("cannot read the balancer switch: {e}")))?;
    if !on {
        let answer = "false: the balancer is switched off (balance_switch true)".to_string();
        return Ok(BalanceNow { balanced: false, events: Vec::new(), answer, noted: Vec::new() });
    }
    let outcome = crate::assignment::pass(
        &crate::assignment::HttpRegionServers,
        servers,
        docs,
        memory,
        catalog,
        registered,
        true,
    );
    let moved = outcome.events.iter().filter(|e| e.starts_with("balancer moved")).count();
    let answer = if outcome.balanced {
        format!("true: the balancer ran and moved {moved} region(s)")
    } else {
        "false: regions are in transition or other assignment work ran first; try again".to_string()
    };
    Ok(BalanceNow { balanced: outcome.balanced, events: outcome.events, answer, noted: outcome.noted })
}

/// The poller's wait between passes: two seconds, cut short when the
/// membership changes or the master stops.
fn continue_after_sleep(stop: &AtomicBool, changed: &AtomicBool) {
    for _ in 0..20 {
        if stop.load(Ordering::Acquire) || changed.swap(false, Ordering::AcqRel) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Answers every queued operator call with 503 and `why`.
fn refuse_calls(calls: &std::sync::mpsc::Receiver<Queued>, why: &str) {
    while let Ok(queued) = calls.try_recv() {
        let _ = queued.reply.send(Err((503, why.to_string())));
    }
}

/// How long an operator call may wait for its answer (a move closes and
/// opens a region, each up to `assignment::SLOW_CALL`).
const OPERATOR_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Admits an operator call, hands it to the poller and answers with its
/// result (on the listener's blocking pool: a move takes as long as a
/// region's close and open; reports and the page keep being answered).
fn operator_call(
    request: &HttpRequest,
    admit: Option<&Admit>,
    calls: &std::sync::mpsc::Sender<Queued>,
    changed: &AtomicBool,
) -> HttpReply {
    let admitted = match admit {
        None => Err((403, "this master takes no operator calls (it was started without admission rules)".into())),
        Some(Admit(admit)) => admit(request.peer, request.authorization.as_deref()),
    };
    if let Err((code, why)) = admitted {
        tracing::warn!(peer = ?request.peer, code, "operator call refused");
        return HttpReply::text(code, why);
    }
    let call = match http_api::OperatorCall::parse(&request.path()["/admin/".len()..], request.query()) {
        Ok(call) => call,
        Err(e) => return HttpReply::text(e.status, e.message),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let queued = Queued { call, reply: tx, deadline: Instant::now() + OPERATOR_CALL_TIMEOUT };
    if calls.send(queued).is_err() {
        return HttpReply::text(503, "the master is stopping".into());
    }
    // Wakes the poller from its wait between passes.
    changed.store(true, Ordering::Release);
    match rx.recv_timeout(OPERATOR_CALL_TIMEOUT) {
        Ok(Ok(text)) => HttpReply::text(200, text),
        Ok(Err((code, why))) => HttpReply::text(code, why),
        Err(_) => HttpReply::text(504, "no answer from the master's poller in time".into()),
    }
}

fn respond(view: &Mutex<MasterView>, request: &HttpRequest) -> HttpReply {
    let v = view.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (body, content_type, status) = match (&request.method, request.path()) {
        (&hyper::Method::GET, "/status") => {
            (serde_json::to_string_pretty(&v).unwrap_or_default(), "application/json", 200)
        }
        (&hyper::Method::GET, "/") => (page(&v), "text/html; charset=utf-8", 200),
        (&hyper::Method::GET, _) => ("not found\n".to_string(), "text/plain", 404),
        _ => ("method not allowed\n".to_string(), "text/plain", 405),
    };
    HttpReply { status, content_type, body }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Catalog rows the page lists.
const PAGE_CATALOG_ROWS: usize = 1_000;

/// The master's page: role, active master, live servers, recent events.
fn page(v: &MasterView) -> String {
    let mut rows = String::new();
    for s in &v.servers {
        let load = match v.loads.get(&s.name) {
            Some(ServerLoad { error: Some(e), .. }) => format!("<td colspan=3>unreachable: {}</td>", escape(e)),
            Some(l) => format!(
                "<td>{}</td><td>{}</td><td>{:.1} MB</td>",
                l.regions,
                l.requests_per_sec.map_or("–".to_string(), |r| format!("{r:.0}")),
                l.memstore_bytes as f64 / 1e6
            ),
            None => "<td colspan=3>not read yet</td>".to_string(),
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><a href=\"//{}/\">{}</a></td>{load}</tr>",
            escape(&s.name),
            escape(&s.thrift),
            escape(&s.http),
            escape(&s.http)
        ));
    }
    let mut rit = String::new();
    for r in &v.in_transition {
        rit.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.region),
            escape(&r.table),
            r.state.name(),
            escape(r.server.as_deref().unwrap_or("–"))
        ));
    }
    if rit.is_empty() {
        rit.push_str("<tr><td colspan=4>none</td></tr>");
    }
    let mut catalog = String::new();
    // The first regions only: a page for people (`/status` has them all).
    let entries = v.catalog.read();
    for (id, l) in entries.iter().take(PAGE_CATALOG_ROWS) {
        catalog.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(id),
            escape(&l.table),
            escape(l.server.as_deref().unwrap_or("–")),
            l.state.name()
        ));
    }
    if entries.len() > PAGE_CATALOG_ROWS {
        catalog.push_str(&format!("<tr><td colspan=4>… and {} more</td></tr>", entries.len() - PAGE_CATALOG_ROWS));
    }
    drop(entries);
    let mut events = String::new();
    for e in v.events.iter().rev() {
        events.push_str(&format!("<li>{} ms: {}</li>", e.at_ms, escape(&e.what)));
    }
    let active = v.active_master.as_ref().map_or("none".to_string(), |m| escape(&m.name));
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Accordion master</title></head><body>\
         <h1>Accordion master {}</h1><p>Role: <b>{:?}</b>. Active master: {active}. Session {}. Root: {}.</p>\
         <h2>Region servers ({})</h2><table><tr><th>name</th><th>Thrift</th><th>status</th><th>regions</th>\
         <th>requests/s</th><th>memstore</th></tr>{rows}</table>\
         <h2>Regions in transition ({})</h2><table><tr><th>region</th><th>table</th><th>state</th><th>server</th></tr>{rit}</table>\
         <h2>Catalog ({})</h2><table><tr><th>region</th><th>table</th><th>server</th><th>state</th></tr>{catalog}</table>\
         <h2>Events</h2><ul>{events}</ul><p><a href=\"/status\">/status</a></p></body></html>",
        escape(&v.name),
        v.role,
        escape(&v.session),
        v.config.as_ref().map_or("not recorded yet".to_string(), |c| escape(&c.root)),
        v.servers.len(),
        v.in_transition.len(),
        v.catalog.len()
    )
}

#[cfg(test)]
mod tests {
    use super::{catalog_epoch, report_comes_from};

    #[test]
    fn masters_take_turns_by_election_and_a_reset_zookeeper_comes_after() {
        let recorded = 1_765_000_000_000;
        assert!(catalog_epoch(recorded, 4) < catalog_epoch(recorded, 5));
        // ZooKeeper's data reset: sequences start at 0 again, the
        // configuration is recorded later.
        assert!(catalog_epoch(recorded + 60_000, 0) > catalog_epoch(recorded, 999_999));
    }

    #[test]
    fn a_report_is_taken_only_from_the_host_of_the_member_it_names() {
        let ip = |s: &str| s.parse().expect("ip");
        assert!(report_comes_from("10.0.0.5,16020,1", ip("10.0.0.5")));
        assert!(!report_comes_from("10.0.0.5,16020,1", ip("10.0.0.6")));
        assert!(report_comes_from("127.0.0.1,16020,1", ip("127.0.0.2")));
        assert!(report_comes_from("localhost,16020,1", ip("127.0.0.1")));
        assert!(
            !report_comes_from("somehost,16020,1", ip("10.0.0.5")),
            "a name is not resolved: the admin rules apply"
        );
    }
}
