//! The HTTP port over TLS: accepts TLS connections on the public address
//! and relays each, decrypted, to the HTTP listener on loopback
//! (`tls_relay.rs` says why a relay). A client certificate is asked for
//! when a client CA is configured and, when given and valid, authenticates
//! the client's admin calls (`admin_auth.rs`); without one, read-only pages
//! are served and admin calls need the token.
//!
//! Thread safety: one accepting thread; each connection gets a thread of
//! its own (at most `max_connections` at once; more are closed at once),
//! which ends with its connection.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
        let active = Arc::new(AtomicUsize::new(0));
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
                    if active.fetch_add(1, Ordering::AcqRel) >= setup.max_connections {
                        active.fetch_sub(1, Ordering::AcqRel);
                        tracing::warn!(%peer, "HTTPS connection refused: too many open");
                        continue;
                    }
                    let (setup, active) = (setup.clone(), active.clone());
                    let spawned = std::thread::Builder::new().name("https".into()).spawn(move || {
                        if let Err(e) = serve(stream, upstream, &setup) {
                            tracing::debug!(%peer, error = %e, "HTTPS connection ended");
                        }
                        active.fetch_sub(1, Ordering::AcqRel);
                    });
                    if let Err(e) = spawned {
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
