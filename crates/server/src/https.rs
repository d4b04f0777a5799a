//! The HTTP port over TLS: accepts TLS connections on the public address
//! and relays each, decrypted, to the HTTP listener on loopback
//! (`tls_relay.rs` says why a relay). A client certificate is asked for
//! when a client CA is configured and, when given and valid, authenticates
//! the client's admin calls (`admin_auth.rs`); without one, read-only pages
//! are served and admin calls need the token.
//!
//! Thread safety: one accepting thread; each connection gets a thread of
//! its own (at most `max_connections` at once, and `max_per_client` from
//! one client address; more are closed at once), which ends with its
//! connection. The counts sit behind one mutex, held to count.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::tls_relay::VerifiedPeers;

/// How long a client may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the TLS front needs.
pub struct HttpsSetup {
    pub config: Arc<rustls::ServerConfig>,
    /// Where relayed connections with a verified certificate are recorded.
    pub verified: Arc<VerifiedPeers>,
    /// How long either side of a connection may stay silent.
    pub idle: Duration,
    /// The most connections served at once.
    pub max_connections: usize,
    /// The most from one client address (`thrift_max_connections_per_client`).
    pub max_per_client: usize,
}

/// Connections open now, in all and per client address.
#[derive(Default)]
struct Open {
    total: usize,
    by_client: std::collections::HashMap<std::net::IpAddr, usize>,
}

impl Open {
    fn admit(&mut self, client: std::net::IpAddr, setup: &HttpsSetup) -> bool {
        let from_client = self.by_client.get(&client).copied().unwrap_or(0);
        if self.total >= setup.max_connections || from_client >= setup.max_per_client {
            return false;
        }
        self.total += 1;
        *self.by_client.entry(client).or_default() += 1;
        true
    }

    fn release(&mut self, client: std::net::IpAddr) {
        self.total -= 1;
        if let Some(n) = self.by_client.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.by_client.remove(&client);
            }
        }
    }
}

pub struct HttpsFront {
    addr: SocketAddr,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpsFront {
    /// Listens on `addr`, relaying to the plain listener at `upstream`.
    pub fn start(addr: SocketAddr, upstream: SocketAddr, setup: HttpsSetup) -> std::io::Result<HttpsFront> {
        HttpsFront::on(TcpListener::bind(addr)?, upstream, setup)
    }

    /// Serves on a listener bound already (its address may have to be
    /// known before the plain listener exists: the master advertises it).
    pub fn on(listener: TcpListener, upstream: SocketAddr, setup: HttpsSetup) -> std::io::Result<HttpsFront> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shutdown = Arc::new(AtomicBool::new(false));
        let open = Arc::new(parking_lot::Mutex::new(Open::default()));
        let setup = Arc::new(setup);
        let thread = {
            let shutdown = shutdown.clone();
            std::thread::Builder::new().name("https-accept".into()).spawn(move || {
                while !shutdown.load(Ordering::Acquire) {
                    let (stream, peer) = match listener.accept() {
                        Ok(s) => s,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "HTTPS accept failed");
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                    };
                    if !open.lock().admit(peer.ip(), &setup) {
                        tracing::warn!(%peer, "HTTPS connection refused: too many open");
                        continue;
                    }
                    let (thread_setup, thread_open) = (setup.clone(), open.clone());
                    let spawned = std::thread::Builder::new().name("https".into()).spawn(move || {
                        if let Err(e) = serve(stream, upstream, &thread_setup) {
                            tracing::debug!(%peer, error = %e, "HTTPS connection ended");
                        }
                        thread_open.lock().release(peer.ip());
                    });
                    if let Err(e) = spawned {
                        open.lock().release(peer.ip());
                        tracing::warn!(error = %e, "cannot start a thread for an HTTPS connection");
                    }
                }
            })?
        };
        Ok(HttpsFront { addr, shutdown, thread: Some(thread) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting; connections being served end with their clients
    /// or their idle time-out.
    pub fn shutdown(&mut self) {
        self.shutdown.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HttpsFront {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(mut stream: std::net::TcpStream, upstream: SocketAddr, setup: &HttpsSetup) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    let _ = stream.set_nodelay(true);
    let mut conn = rustls::ServerConnection::new(setup.config.clone()).map_err(std::io::Error::other)?;
    crate::tls_relay::handshake(&mut conn, &mut stream, HANDSHAKE_TIMEOUT)?;
    crate::tls_relay::relay(conn, stream, &[], upstream, setup.idle, &setup.verified)
}
