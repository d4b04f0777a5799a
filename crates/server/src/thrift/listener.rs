//! The Thrift listener: accepts connections and serves each on its own
//! thread (HBase's TThreadPoolServer model) up to `max_connections`; over
//! that, a new connection is closed at once. Shutdown stops accepting,
//! lets every connection finish the call it is in (for at most the grace
//! period, then cuts its socket), and joins them.
//!
//! Thread safety: the acceptor thread alone adds to the connection list;
//! shutdown takes the list once the acceptor has stopped. Connection
//! threads share only the processor (the handler, `Sync`), the shutdown
//! flag and relaxed counters.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use thrift::server::TProcessor;

use crate::scanners::{ScannerRegistry, on_connection};
use crate::thrift::connection::{ConnectionLimits, Ended, refuse, serve};

/// Counters of the Thrift front end.
#[derive(Debug, Default)]
pub struct ThriftCounters {
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
    pub open: AtomicUsize,
    pub protocol_errors: AtomicU64,
    pub unknown_wire: AtomicU64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThriftCountersSnapshot {
    pub accepted: u64,
    pub refused: u64,
    pub open: usize,
    pub protocol_errors: u64,
    pub unknown_wire: u64,
}

impl ThriftCounters {
    pub fn snapshot(&self) -> ThriftCountersSnapshot {
        ThriftCountersSnapshot {
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            open: self.open.load(Ordering::Relaxed),
            protocol_errors: self.protocol_errors.load(Ordering::Relaxed),
            unknown_wire: self.unknown_wire.load(Ordering::Relaxed),
        }
    }
}

pub struct ThriftServer {
    addr: SocketAddr,
    shutdown: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<Connection>>>,
    shutdown_grace: Duration,
    pub counters: Arc<ThriftCounters>,
}

/// Plain Thrift or TLS; either way the port relays HTTP to the HTTP
/// listener once `http_relay` is set (over TLS, decrypted, to the loopback
/// listener behind the HTTPS port: `tls_relay.rs`).
pub struct Security {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub http_relay: Arc<OnceLock<SocketAddr>>,
    /// Where relayed TLS connections with a verified client certificate
    /// are recorded (`admin_auth.rs` reads it).
    pub verified: Arc<crate::tls_relay::VerifiedPeers>,
}

/// How many connections are served at once: in all, and from one client
/// address (so that no one client can take every thread).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionCaps {
    pub total: usize,
    pub per_client: usize,
}

/// A connection's thread, and its socket so that shutdown can cut it.
struct Connection {
    thread: JoinHandle<()>,
    socket: Option<std::net::TcpStream>,
    /// Its client's address, for the per-client cap.
    client: std::net::IpAddr,
}

impl ThriftServer {
    /// Starts accepting on `listener` (bound by the caller, so that a port
    /// in use is found before anything else starts).
    pub fn start(
        listener: TcpListener,
        processor: Arc<dyn TProcessor + Send + Sync>,
        limits: ConnectionLimits,
        caps: ConnectionCaps,
        shutdown_grace: Duration,
        scanners: Arc<ScannerRegistry>,
        security: Security,
    ) -> std::io::Result<ThriftServer> {
        let Security { tls, http_relay, verified } = security;
        let ConnectionCaps { total: max_connections, per_client: max_connections_per_client } = caps;
        let addr = listener.local_addr()?;
        // Polled, so that shutdown is noticed without a wake-up connection.
        listener.set_nonblocking(true)?;
        let shutdown = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<Connection>>> = Arc::new(Mutex::new(Vec::new()));
        let counters = Arc::new(ThriftCounters::default());
        // Connection ids start at 1 (0: no connection, see `scanners`).
        let next_connection = Arc::new(AtomicU64::new(1));
        let acceptor = {
            let (shutdown, connections, counters) = (shutdown.clone(), connections.clone(), counters.clone());
            let next_connection = next_connection.clone();
            std::thread::Builder::new().name("thrift-accept".into()).spawn(move || {
                while !shutdown.load(Ordering::Acquire) {
                    let (stream, peer) = match listener.accept() {
                        Ok(s) => s,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "accept failed");
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                    };
                    let mut conns = connections.lock();
                    conns.retain(|c| !c.thread.is_finished());
                    let from_client = conns.iter().filter(|c| c.client == peer.ip()).count();
                    if conns.len() >= max_connections
                        || from_client >= max_connections_per_client
                        || stream.set_nonblocking(false).is_err()
                    {
                        counters.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            %peer,
                            open = conns.len(),
                            from_client,
                            max_connections,
                            max_connections_per_client,
                            "refusing connection: too many open"
                        );
                        refuse(stream);
                        continue;
                    }
                    counters.accepted.fetch_add(1, Ordering::Relaxed);
                    // Two handles on the socket: one for shutdown to cut a
                    // connection stuck past the grace period, one for the
                    // thread to close it when done (the first keeps the
                    // descriptor open, so dropping the stream is not enough).
                    let socket = stream.try_clone().ok();
                    let closer = stream.try_clone().ok();
                    let (processor, limits, shutdown, counters, scanners) =
                        (processor.clone(), limits.clone(), shutdown.clone(), counters.clone(), scanners.clone());
                    let http = http_relay.get().copied();
                    let (tls, verified) = (tls.clone(), verified.clone());
                    let id = next_connection.fetch_add(1, Ordering::Relaxed);
                    let spawned = std::thread::Builder::new().name(format!("thrift-{peer}")).spawn(move || {
                        // Every line logged for this connection's calls
                        // (a client's failed call, say) names its client.
                        let _client = tracing::info_span!("client", peer = %peer).entered();
                        counters.open.fetch_add(1, Ordering::Relaxed);
                        let (ended, wire) = on_connection(id, peer.ip(), || {
                            serve(stream, processor.as_ref(), &limits, &shutdown, http, tls.as_ref(), &verified)
                        });
                        // Its scanners would pin memory until their leases ran out.
                        let closed = scanners.close_connection(id);
                        if closed > 0 {
                            tracing::debug!(%peer, scanners = closed, "closed the scanners of an ended connection");
                        }
                        if let Some(c) = closer {
                            let _ = c.shutdown(std::net::Shutdown::Both);
                        }
                        counters.open.fetch_sub(1, Ordering::Relaxed);
                        match ended {
                            Ended::ClientClosed | Ended::Shutdown => tracing::debug!(%peer, ?wire, "connection closed"),
                            Ended::RelayedHttp => tracing::debug!(%peer, "relayed an HTTP connection to the HTTP port"),
                            Ended::UnknownWire(first) => {
                                counters.unknown_wire.fetch_add(1, Ordering::Relaxed);
                                tracing::warn!(%peer, ?first, "closed a connection that speaks no Thrift we know");
                            }
                            Ended::Error(e) => {
                                counters.protocol_errors.fetch_add(1, Ordering::Relaxed);
                                tracing::info!(%peer, ?wire, error = %e, "connection closed on error");
                            }
                        }
                    });
                    match spawned {
                        Ok(thread) => conns.push(Connection { thread, socket, client: peer.ip() }),
                        Err(e) => tracing::error!(error = %e, "cannot start a connection thread"),
                    }
                }
            })?
        };
        Ok(ThriftServer { addr, shutdown, acceptor: Some(acceptor), connections, shutdown_grace, counters })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and lets every connection finish the call it is in;
    /// a connection still busy after the grace period (a client that stopped
    /// reading its reply, or stalled mid-call) has its socket shut down.
    pub fn shutdown(&mut self) {
        self.shutdown.store(true, Ordering::Release);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let conns: Vec<Connection> = std::mem::take(&mut *self.connections.lock());
        let deadline = std::time::Instant::now() + self.shutdown_grace;
        while conns.iter().any(|c| !c.thread.is_finished()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for c in conns {
            if !c.thread.is_finished()
                && let Some(socket) = &c.socket
            {
                tracing::warn!(peer = ?socket.peer_addr().ok(), "cutting a connection still busy after the shutdown grace period");
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
            let _ = c.thread.join();
        }
    }
}

impl Drop for ThriftServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
