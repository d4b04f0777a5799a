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
//! take records to write — never across a blocking read or a socket write
//! (the socket's writing half has a lock of its own: see `Tls`).

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

/// How long an answer may take once its request is relayed (an admin call:
/// a WAL split, a move through the master, an alter of a big table). Only
/// the client's side times out at `idle`; the answers' side waits this long,
/// so a slow answer is not cut off.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Completes the TLS handshake on `tcp` within `timeout` in all (a client
/// that trickles its handshake a byte at a time is cut off at the deadline).
pub fn handshake(conn: &mut ServerConnection, tcp: &mut TcpStream, timeout: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    while conn.is_handshaking() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the TLS handshake took too long"));
        }
        tcp.set_read_timeout(Some(left))?;
        tcp.set_write_timeout(Some(left))?;
        conn.complete_io(tcp)?;
    }
    Ok(())
}

/// Relays a TLS connection whose handshake is done to the plain HTTP
/// listener at `upstream`, until either side ends, or the client stays
/// silent for `idle` (then the answer to a request already relayed still
/// goes back, within [`ANSWER_TIMEOUT`]). `head` is plaintext already read
/// from the connection.
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
    tcp.set_read_timeout(Some(idle))?;
    tcp.set_write_timeout(Some(idle))?;
    up.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    up.set_write_timeout(Some(idle))?;
    up.write_all(head)?;
    let tls = Arc::new(Tls { conn: Mutex::new(conn), out: Mutex::new(tcp.try_clone()?) });
    // What the TLS state already decrypted beyond `head`.
    let (pending, closed) = plaintext(&mut tls.conn.lock())?;
    up.write_all(&pending)?;
    let answers = {
        let (tls, mut from_up) = (tls.clone(), up.try_clone()?);
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
                let mut conn = tls.conn.lock();
                conn.writer().write_all(&buf[..n])?;
                tls.send(conn)?;
            }
            let mut conn = tls.conn.lock();
            conn.send_close_notify();
            let sent = tls.send(conn);
            let _ = tls.out.lock().shutdown(Shutdown::Write);
            sent
        })?
    };
    let requests = if closed { Ok(()) } else { pump_requests(&tls, tcp, &mut up) };
    let _ = up.shutdown(Shutdown::Write);
    let answered = answers.join().map_err(|_| io::Error::other("the relay's answer thread panicked"))?;
    requests.and(answered)
}

/// The client's direction: TLS records from `tcp`, decrypted, to `up`.
fn pump_requests(tls: &Tls, mut tcp: TcpStream, up: &mut TcpStream) -> io::Result<()> {
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
            let mut conn = tls.conn.lock();
            let (mut plain, mut closed, mut records) = (Vec::new(), false, &buf[..n]);
            while !records.is_empty() && !closed {
                conn.read_tls(&mut records)?;
                if let Err(e) = conn.process_new_packets() {
                    let _ = tls.send(conn);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
                let (more, ended) = plaintext(&mut conn)?;
                plain.extend_from_slice(&more);
                closed = ended;
            }
            tls.send(conn)?;
            (plain, closed)
        };
        up.write_all(&plain)?;
        if closed {
            return Ok(());
        }
    }
}

/// A TLS connection's state, and the socket its records go out on.
///
/// Lock order: `conn`, then `out`. Records are taken from `conn` into a
/// buffer and `out` is locked before `conn` is let go, so records leave in
/// the order they were made; the socket write itself happens without `conn`
/// held, so a client that is slow to read its answers does not stop the
/// other direction from decrypting what it sends.
struct Tls {
    conn: Mutex<ServerConnection>,
    out: Mutex<TcpStream>,
}

impl Tls {
    /// Writes every TLS record waiting to go out.
    fn send(&self, mut conn: parking_lot::MutexGuard<'_, ServerConnection>) -> io::Result<()> {
        let mut records = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut records)?;
        }
        if records.is_empty() {
            return Ok(());
        }
        let mut out = self.out.lock();
        drop(conn);
        out.write_all(&records)
    }
}

/// The plaintext decrypted so far, and whether the client closed (its
/// close_notify arrived).
fn plaintext(conn: &mut ServerConnection) -> io::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match conn.reader().read(&mut buf) {
            Ok(0) => return Ok((out, true)),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((out, false)),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use rustls::pki_types::pem::PemObject;

    use super::*;

    /// An HTTP listener that answers one request `after` a while.
    fn slow_upstream(after: Duration) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while !got.ends_with(b"\r\n\r\n") && s.read(&mut byte).is_ok_and(|n| n == 1) {
                got.push(byte[0]);
            }
            std::thread::sleep(after);
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nslow");
        });
        addr
    }

    /// An answer slower than the client's idle time still reaches the
    /// client, through the TLS relay and the plain one (it was cut off at
    /// `idle` before: a master's recover call lost its answer).
    #[test]
    fn a_slow_answer_outlives_the_idle_time() {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key"),
            )
            .expect("config");
        let server = Arc::new(server);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).expect("root");
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (idle, slow) = (Duration::from_millis(200), Duration::from_millis(1200));

        let front = TcpListener::bind("127.0.0.1:0").expect("bind");
        let front_addr = front.local_addr().expect("addr");
        let upstream = slow_upstream(slow);
        let relaying = std::thread::spawn(move || {
            let (mut tcp, _) = front.accept().expect("accept");
            let mut conn = ServerConnection::new(server).expect("conn");
            handshake(&mut conn, &mut tcp, Duration::from_secs(5)).expect("handshake");
            relay(conn, tcp, &[], upstream, idle, &Arc::new(VerifiedPeers::default()))
        });
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let conn = rustls::ClientConnection::new(Arc::new(client), name).expect("client");
        let mut s = rustls::StreamOwned::new(conn, TcpStream::connect(front_addr).expect("connect"));
        s.write_all(b"POST /admin/recover HTTP/1.0\r\nHost: x\r\n\r\n").expect("send");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).expect("the whole answer, with close_notify");
        assert!(answer.ends_with(b"slow"), "{}", String::from_utf8_lossy(&answer));
        relaying.join().expect("relay thread").expect("relay");

        // The plain relay (HTTP on a plain Thrift port) likewise.
        let front = TcpListener::bind("127.0.0.1:0").expect("bind");
        let front_addr = front.local_addr().expect("addr");
        let upstream = slow_upstream(slow);
        let relaying = std::thread::spawn(move || {
            let (tcp, _) = front.accept().expect("accept");
            crate::http_relay::relay(tcp, b"", upstream, idle)
        });
        let mut s = TcpStream::connect(front_addr).expect("connect");
        s.write_all(b"POST /admin/recover HTTP/1.0\r\nHost: x\r\n\r\n").expect("send");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).expect("answer");
        assert!(answer.ends_with(b"slow"), "{}", String::from_utf8_lossy(&answer));
        relaying.join().expect("relay thread").expect("relay");
    }
}
