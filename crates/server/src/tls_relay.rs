//! HTTP over TLS, served by relaying the decrypted bytes to the server's
//! own HTTP listener (`tiny_http`, which then listens on loopback only).
//!
//! Why a relay: tiny_http's own TLS is rustls 0.20, which has a known
//! denial of service (RUSTSEC-2024-0336) and no fixed release, and it cannot
//! ask for client certificates. Here TLS is rustls 0.23, as on the Thrift
//! port, with client certificates verified against the configured CAs.
//!
//! Who presented an admin certificate: a relayed connection whose client
//! gave a certificate that chains to the admin CA (`tls.rs`) registers the
//! address of its connection to the HTTP listener in [`VerifiedPeers`] for
//! as long as it lasts; the HTTP side reads `remote_addr()` of a request and finds it
//! there. No other process can make a connection with that address while
//! ours holds it, so the mark cannot be forged by connecting to the loopback
//! listener directly.
//!
//! Thread safety: a relay runs on its connection's thread (the client's
//! direction) and one more thread (the answers' direction); they share the
//! TLS state under one mutex, held only to feed it bytes already read or to
//! take bytes to write — never across a blocking read.

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::ServerConnection;

/// The loopback addresses of relayed connections whose client presented an
/// admin certificate (see the module doc), and how to tell one.
#[derive(Debug, Default)]
pub struct VerifiedPeers {
    addrs: Mutex<HashSet<SocketAddr>>,
    admin: crate::tls::AdminVerifier,
}

impl VerifiedPeers {
    /// Connections presenting a certificate `admin` admits are registered.
    pub fn new(admin: crate::tls::AdminVerifier) -> VerifiedPeers {
        VerifiedPeers { addrs: Mutex::default(), admin }
    }

    /// Whether a request from `addr` came through a relay whose client
    /// presented an admin certificate.
    pub fn contains(&self, addr: Option<SocketAddr>) -> bool {
        addr.is_some_and(|a| self.addrs.lock().contains(&a))
    }

    fn register(self: &Arc<Self>, addr: SocketAddr) -> Registration {
        self.addrs.lock().insert(addr);
        Registration { peers: self.clone(), addr }
    }
}

/// Removes its address from [`VerifiedPeers`] when the relay ends.
struct Registration {
    peers: Arc<VerifiedPeers>,
    addr: SocketAddr,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.peers.addrs.lock().remove(&self.addr);
    }
}

/// Completes the TLS handshake on `tcp` (bounded by `timeout`).
pub fn handshake(conn: &mut ServerConnection, tcp: &mut TcpStream, timeout: Duration) -> io::Result<()> {
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    while conn.is_handshaking() {
        conn.complete_io(tcp)?;
    }
    Ok(())
}

/// Relays a TLS connection whose handshake is done to the plain HTTP
/// listener at `upstream`, until either side ends or stays silent for
/// `idle`. `head` is plaintext already read from the connection.
pub fn relay(
    conn: ServerConnection,
    tcp: TcpStream,
    head: &[u8],
    upstream: SocketAddr,
    idle: Duration,
    verified: &Arc<VerifiedPeers>,
) -> io::Result<()> {
    let mut up = TcpStream::connect_timeout(&upstream, Duration::from_secs(5))?;
    let _ = up.set_nodelay(true);
    let _registration = match conn.peer_certificates() {
        // Verified by the handshake against either CA; only the admin CA's
        // authenticate admin calls.
        Some(certs) if verified.admin.admits(certs) => Some(verified.register(up.local_addr()?)),
        _ => None,
    };
    for s in [&tcp, &up] {
        s.set_read_timeout(Some(idle))?;
        s.set_write_timeout(Some(idle))?;
    }
    up.write_all(head)?;
    let state = Arc::new(Mutex::new(Tls { conn, tcp: tcp.try_clone()? }));
    // What the TLS state already decrypted beyond `head`.
    let pending = state.lock().plaintext()?;
    up.write_all(&pending.0)?;
    let answers = {
        let (state, mut from_up) = (state.clone(), up.try_clone()?);
        std::thread::Builder::new().name("https-relay".into()).spawn(move || -> io::Result<()> {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match from_up.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                let mut tls = state.lock();
                tls.conn.writer().write_all(&buf[..n])?;
                tls.send()?;
            }
            let mut tls = state.lock();
            tls.conn.send_close_notify();
            let sent = tls.send();
            let _ = tls.tcp.shutdown(Shutdown::Write);
            sent
        })?
    };
    let requests = if pending.1 { Ok(()) } else { pump_requests(&state, tcp, &mut up) };
    let _ = up.shutdown(Shutdown::Write);
    let answered = answers.join().map_err(|_| io::Error::other("the relay's answer thread panicked"))?;
    requests.and(answered)
}

/// The client's direction: TLS records from `tcp`, decrypted, to `up`.
fn pump_requests(state: &Mutex<Tls>, mut tcp: TcpStream, up: &mut TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match tcp.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Decrypt under the lock; write to the HTTP listener after it.
        let (plain, closed) = {
            let mut tls = state.lock();
            let (mut plain, mut closed, mut records) = (Vec::new(), false, &buf[..n]);
            while !records.is_empty() && !closed {
                tls.conn.read_tls(&mut records)?;
                if let Err(e) = tls.conn.process_new_packets() {
                    let _ = tls.send();
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
                let (more, ended) = tls.plaintext()?;
                plain.extend_from_slice(&more);
                closed = ended;
            }
            tls.send()?;
            (plain, closed)
        };
        up.write_all(&plain)?;
        if closed {
            return Ok(());
        }
    }
}

/// A TLS connection's state and the socket its records are written to.
struct Tls {
    conn: ServerConnection,
    tcp: TcpStream,
}

impl Tls {
    /// Writes every TLS record waiting to go out.
    fn send(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.tcp)?;
        }
        Ok(())
    }

    /// The plaintext decrypted so far, and whether the client closed (its
    /// close_notify arrived).
    fn plaintext(&mut self) -> io::Result<(Vec<u8>, bool)> {
        let mut out = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.conn.reader().read(&mut buf) {
                Ok(0) => return Ok((out, true)),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((out, false)),
                Err(e) => return Err(e),
            }
        }
    }
}
