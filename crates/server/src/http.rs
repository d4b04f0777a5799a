//! The HTTP side of the server (HBase's region server info port):
//! - `/`, an HTML page that polls `/status`: request rates and latency
//!   percentiles over the last ten minutes as small charts, totals, tables
//!   and regions (key ranges as HBase prints keys, sizes and counts
//!   formatted), each store's memstore live — active segment, pipeline
//!   segments with their index layout, snapshot — and recent flushes and
//!   compactions with their dates;
//! - `/status`, the same as JSON; `/metrics` in Prometheus text format
//!   ([`crate::prometheus`]);
//! - `/conf`, the effective settings as TOML (what `--print-config` prints);
//! - `/logs`, the process's recent log lines ([`crate::recent_logs`]);
//! - `/schema?table=T`, a table's descriptor as JSON (`table_schema.rs`);
//! - `/namespaces[?name=NS]`, the namespaces and their tables as JSON
//!   (`namespaces.rs`);
//! - `/health`, 200 while the server may serve, 503 with the reason when
//!   its gate refuses calls (a cluster member that lost its lease);
//! - HBase's operator pages: `/jmx` (the figures as HBase's JMX servlet
//!   shapes them, [`crate::jmx`]), `/stacks` (the threads,
//!   [`crate::thread_dump`]), `/dump` (a debug dump, [`crate::dump`]) and
//!   `/logLevel` (the log filter; `POST` changes a module's level and is
//!   admitted as an admin call is, [`crate::log_level`]);
//! - under `POST /admin/`, the admin calls the Thrift v1 IDL lacks
//!   ([`crate::admin`]).
//!
//! `tiny_http` serves it: a few requests a second from a dashboard need no
//! async runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use http_api::{
    FamilyStatus, PipelineSegment, RegionStatus, SegmentCounts, ServerSection, ServerStatus, SnapshotSegment,
    SnapshotStatus, TableStatus,
};
use memstore::SegmentStats;
use serde_json::json;
use store::region::info::to_string_binary;

use crate::status_source::{StatusSource, scanner_pinned};

pub struct HttpServer {
    /// Where clients reach it (the TLS front's address when it serves TLS).
    addr: SocketAddr,
    /// Where tiny_http listens: `addr`, or loopback behind the TLS front.
    plain: SocketAddr,
    front: Option<crate::https::HttpsFront>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Serves the pages on `listener` (bound by the caller); with `tls`,
    /// over TLS (`https.rs`) there, the plain listener then being on
    /// loopback only.
    pub fn start(
        listener: std::net::TcpListener,
        source: StatusSource,
        tls: Option<crate::https::HttpsSetup>,
    ) -> std::io::Result<HttpServer> {
        let (server, front) = match tls {
            None => (tiny_http::Server::from_listener(listener, None).map_err(std::io::Error::other)?, None),
            Some(setup) => {
                let loopback = if listener.local_addr()?.is_ipv4() {
                    SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0))
                } else {
                    SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 0))
                };
                let server = tiny_http::Server::http(loopback).map_err(std::io::Error::other)?;
                let plain = server
                    .server_addr()
                    .to_ip()
                    .ok_or_else(|| std::io::Error::other("HTTP server has no IP address"))?;
                (server, Some(crate::https::HttpsFront::on(listener, plain, setup)?))
            }
        };
        let plain =
            server.server_addr().to_ip().ok_or_else(|| std::io::Error::other("HTTP server has no IP address"))?;
        let addr = front.as_ref().map_or(plain, crate::https::HttpsFront::local_addr);
        let shutdown = Arc::new(AtomicBool::new(false));
        let source = Arc::new(source);
        let thread = {
            let shutdown = shutdown.clone();
            std::thread::Builder::new().name("http".into()).spawn(move || {
                while !shutdown.load(Ordering::Acquire) {
                    match server.recv_timeout(Duration::from_millis(100)) {
                        // An admin call may take long (a split, an alter, a
                        // cluster-wide DDL waiting on other servers' own
                        // admin calls): on a thread of its own, so that
                        // /status keeps answering (the master and the other
                        // servers read it) and two servers' admin calls
                        // cannot wait on each other. Only an authenticated
                        // call gets a thread: a refusal is answered here.
                        Ok(Some(request))
                            if *request.method() == tiny_http::Method::Post
                                && request.url().starts_with("/admin/")
                                && admit(&source, &request).is_ok() =>
                        {
                            let source = source.clone();
                            let spawned = std::thread::Builder::new()
                                .name("http-admin".into())
                                .spawn(move || respond(&source, request));
                            if let Err(e) = spawned {
                                tracing::warn!(error = %e, "cannot start a thread for an admin call");
                            }
                        }
                        Ok(Some(request)) => respond(&source, request),
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "HTTP receive failed"),
                    }
                }
            })?
        };
        Ok(HttpServer { addr, plain, front, shutdown, thread: Some(thread) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the plain listener is (the Thrift port relays HTTP there).
    pub fn plain_addr(&self) -> SocketAddr {
        self.plain
    }

    pub fn shutdown(&mut self) {
        if let Some(front) = &mut self.front {
            front.shutdown();
        }
        self.shutdown.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether an admin call may run (`admin_auth.rs`): a verified client
/// certificate or the token.
fn admit(source: &StatusSource, request: &tiny_http::Request) -> Result<(), (u16, String)> {
    source.admin_auth.check(authorization(request), source.verified.contains(request.remote_addr().copied()))
}

/// The request's `Authorization` header, if any.
fn authorization(request: &tiny_http::Request) -> Option<&str> {
    request.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.as_str())
}

fn respond(source: &StatusSource, request: tiny_http::Request) {
    let (path, query) = match request.url().split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (request.url().to_string(), String::new()),
    };
    let (body, content_type, code) = match (request.method(), path.as_str()) {
        (tiny_http::Method::Post, admin)
            if admin.starts_with("/admin/")
                && let Err((code, why)) = admit(source, &request) =>
        {
            tracing::warn!(call = admin, code, peer = ?request.remote_addr(), "admin call refused");
            (why + "\n", "text/plain", code)
        }
        // A cluster member that cannot prove its membership changes
        // nothing for anyone (as its Thrift calls are refused).
        (tiny_http::Method::Post, admin)
            if admin.starts_with("/admin/")
                && let Some(why) = source.gate.refusal() =>
        {
            tracing::warn!(call = admin, reason = %why, "admin call refused: not serving");
            (format!("refused: {why}\n"), "text/plain", 503)
        }
        (tiny_http::Method::Post, admin) if admin.starts_with("/admin/") => crate::admin::respond(
            &source.store,
            &source.family_template,
            &source.router,
            source.authority.get().map(|a| a.as_ref()),
            &admin["/admin/".len()..],
            &query,
        ),
        (tiny_http::Method::Get, "/metrics") => (crate::prometheus::render(source), "text/plain; version=0.0.4", 200),
        (tiny_http::Method::Get, "/status") => {
            (serde_json::to_string_pretty(&status(source)).unwrap_or_default(), "application/json", 200)
        }
        (tiny_http::Method::Get, "/") => (STATUS_PAGE.to_string(), "text/html; charset=utf-8", 200),
        (tiny_http::Method::Get, "/conf") => (source.conf.clone(), "text/plain; charset=utf-8", 200),
        (tiny_http::Method::Get, "/logs") => (logs_text(), "text/plain; charset=utf-8", 200),
        (tiny_http::Method::Get, "/health") => health(source),
        (tiny_http::Method::Get, "/schema") => crate::table_schema::respond(&source.store, &query),
        (tiny_http::Method::Get, "/namespaces") => crate::namespaces::respond(&source.store, &query),
        (tiny_http::Method::Get, "/jmx") => jmx(source, &query),
        (tiny_http::Method::Get, "/stacks") => (crate::thread_dump::render(), "text/plain; charset=utf-8", 200),
        (tiny_http::Method::Get, "/dump") => (crate::dump::render(source), "text/plain; charset=utf-8", 200),
        (tiny_http::Method::Get, "/logLevel") => crate::log_level::get(log_levels(source), &query),
        // Changing the log level changes the process: admitted as an admin
        // call is (the token or an admin certificate).
        (tiny_http::Method::Post, "/logLevel") => match admit(source, &request) {
            Ok(()) => crate::log_level::post(log_levels(source), &query),
            Err((code, why)) => {
                tracing::warn!(call = "logLevel", code, peer = ?request.remote_addr(), "log level change refused");
                (why + "\n", "text/plain", code)
            }
        },
        (tiny_http::Method::Get, _) => ("not found\n".to_string(), "text/plain", 404),
        _ => ("method not allowed\n".to_string(), "text/plain", 405),
    };
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()).expect("valid header");
    let response = tiny_http::Response::from_string(body).with_status_code(code).with_header(header);
    if let Err(e) = request.respond(response) {
        tracing::debug!(error = %e, "HTTP client went away");
    }
}

/// `/jmx[?qry=PATTERN]`; a malformed pattern is a 400 with HBase's error
/// document.
fn jmx(source: &StatusSource, query: &str) -> (String, &'static str, u16) {
    let qry = crate::admin::param(query, "qry").map(|q| String::from_utf8_lossy(&q).into_owned());
    match crate::jmx::render(source, qry.as_deref()) {
        Ok(body) => (body, "application/json; charset=utf-8", 200),
        Err(e) => (json!({ "result": "ERROR", "message": e.to_string() }).to_string(), "application/json", 400),
    }
}

fn log_levels(source: &StatusSource) -> Option<&dyn crate::log_level::LogLevelControl> {
    source.log_levels.get().map(|c| c.as_ref())
}

/// The recent log lines, oldest first.
fn logs_text() -> String {
    let lines = crate::recent_logs::global().lines();
    if lines.is_empty() {
        return "no log lines kept: this process's logger does not write to the recent-lines ring\n".to_string();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn health(source: &StatusSource) -> (String, &'static str, u16) {
    let uptime = source.started.elapsed().as_secs();
    match source.gate.refusal() {
        None => (json!({ "status": "ok", "uptime_secs": uptime }).to_string(), "application/json", 200),
        Some(reason) => (
            json!({ "status": "refusing", "reason": reason, "uptime_secs": uptime }).to_string(),
            "application/json",
            503,
        ),
    }
}

fn counts(stats: &SegmentStats) -> SegmentCounts {
    SegmentCounts { cells: stats.cells, data_bytes: stats.data_size, index_bytes: stats.index_size }
}

/// The status document: server, totals, tables → regions → families with
/// their live memstore structure, and recent flushes and compactions.
pub fn status(source: &StatusSource) -> ServerStatus {
    let pinned = scanner_pinned(source);
    let wal_owners = match source.store.as_member() {
        Some(member) => member.wal_owners().map_err(|e| e.to_string()),
        None => Ok(Vec::new()),
    };
    let m = source.store.metrics();
    let mut tables = Vec::new();
    for name in source.store.list_tables() {
        let enabled = source.store.is_table_enabled(&name).unwrap_or(false);
        let mut regions = Vec::new();
        for region in source.store.all_regions().iter().filter(|r| r.info().table == name) {
            let info = region.info();
            let counters = m.regions.iter().find(|r| r.region == info.dir_name());
            let families = region
                .stores()
                .map(|s| {
                    let layout = s.memstore().layout_info();
                    FamilyStatus {
                        family: s.name().to_string(),
                        policy: s.descriptor().memstore_policy.clone(),
                        active: counts(&layout.active),
                        pipeline: layout
                            .pipeline
                            .iter()
                            .map(|seg| PipelineSegment {
                                id: seg.id,
                                layout: format!("{:?}", seg.layout),
                                stats: counts(&seg.stats),
                            })
                            .collect(),
                        snapshot: layout.snapshot.as_ref().map(|(id, segs)| SnapshotStatus {
                            id: *id,
                            segments: segs
                                .iter()
                                .map(|seg| SnapshotSegment {
                                    layout: format!("{:?}", seg.layout),
                                    stats: counts(&seg.stats),
                                })
                                .collect(),
                        }),
                        counters: counters.and_then(|c| c.families.iter().find(|f| f.family == s.name())).cloned(),
                    }
                })
                .collect();
            regions.push(RegionStatus {
                id: info.dir_name(),
                name: info.region_name(),
                state: region.state(),
                start_key: to_string_binary(&info.start_key),
                end_key: to_string_binary(&info.end_key),
                memstore_data_bytes: region.memstore_data_size(),
                memstore_heap_bytes: region.memstore_heap_size(),
                files_bytes: region.files_size(),
                read_requests: counters.map_or(0, |c| c.read_requests),
                write_requests: counters.map_or(0, |c| c.write_requests),
                families,
            });
        }
        tables.push(TableStatus { name, enabled, regions });
    }
    let (wal_owners, wal_owners_error) = match wal_owners {
        Ok(owners) => (Some(owners), None),
        Err(e) => (None, Some(e)),
    };
    ServerStatus {
        server: ServerSection {
            version: env!("CARGO_PKG_VERSION").to_string(),
            uptime_secs: source.started.elapsed().as_secs(),
            data_dir: source.store.dir().to_path_buf(),
            thrift_addr: source.thrift_addr.to_string(),
            rpc_addr: source.rpc_addr.map(|a| a.to_string()),
            thrift: serde_json::to_value(source.thrift.snapshot()).unwrap_or_default(),
            open_scanners: source.scanners.len() as u64,
            scanner_pinned_bytes: pinned.bytes,
            scanners_busy_uncounted: pinned.busy as u64,
            scanners_closed_on_disconnect: source.scanners.closed_on_disconnect(),
            global_memstore_limit: source.store.options().global_memstore_limit(),
            // Cluster mode: this server's name and the servers with a WAL
            // directory on the shared root (the master recovers the dead).
            member: source.store.as_member().map(|m| m.name().to_string()),
            cluster: source.cluster.get().map(|view| view()),
            wal_owners,
            wal_owners_error,
        },
        totals: m.totals,
        tables,
        recent_events: source
            .store
            .recent_events()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or_default())
            .collect(),
        requests: source.history.to_json(),
        tasks: m.tasks,
    }
}

const STATUS_PAGE: &str = include_str!("status.html");
