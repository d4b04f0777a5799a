//! HTTP on the Thrift port: a connection whose first bytes are an HTTP
//! request line is relayed, byte for byte, to this server's own HTTP port.
//!
//! Why: an HBase user gives a client one address, and the HBase shell's
//! `flush` and `status` need calls the Thrift v1 IDL lacks (our `/admin` and
//! `/status`). With the relay, `accordion shell --server HOST:PORT` reaches
//! them through the Thrift address it already has, whatever the HTTP port.
//! The two can be told apart by the first byte: every Thrift wire we serve
//! starts with 0x80, 0x82 or 0x00 (see `connection.rs`), an HTTP request with
//! an upper-case ASCII method name.
//!
//! Thread safety: a relay runs on the connection's own thread, plus one
//! thread for the answer's direction; they share only the two sockets and
//! end when either side closes or stays silent past the idle timeout.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

/// The request methods the HTTP port answers (and HEAD, which probes use).
const METHODS: [&[u8]; 3] = [b"GET ", b"POST ", b"HEAD "];

/// Whether a connection's first bytes start an HTTP request. `first` may
/// be shorter than a method name (a client that sent little so far): it is
/// HTTP only once the whole method and its space are there.
pub fn looks_like_http(first: &[u8]) -> bool {
    METHODS.iter().any(|m| first.starts_with(m))
}

/// Relays `client` (whose first bytes, already read, are `head`) to the
/// HTTP server at `http`, until either side ends. `idle` bounds how long
/// the client may stay silent; an answer may take up to
/// `tls_relay::ANSWER_TIMEOUT`.
pub fn relay(client: TcpStream, head: &[u8], http: SocketAddr, idle: Duration) -> io::Result<()> {
    let mut upstream = TcpStream::connect_timeout(&http, Duration::from_secs(5))?;
    let _ = upstream.set_nodelay(true);
    client.set_read_timeout(Some(idle))?;
    client.set_write_timeout(Some(idle))?;
    // A slow answer (an admin call) is not cut off at the client's idle
    // time: the client's side ends the relay, the answer still comes back.
    upstream.set_read_timeout(Some(crate::tls_relay::ANSWER_TIMEOUT))?;
    upstream.set_write_timeout(Some(idle))?;
    upstream.write_all(head)?;
    let (mut from_client, mut to_client) = (client.try_clone()?, client);
    let (mut to_upstream, mut from_upstream) = (upstream.try_clone()?, upstream);
    let answers = std::thread::Builder::new().name("thrift-http-relay".into()).spawn(move || {
        let copied = copy(&mut from_upstream, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
        copied
    })?;
    let requests = copy(&mut from_client, &mut to_upstream);
    let _ = to_upstream.shutdown(Shutdown::Write);
    let answered = answers.join().map_err(|_| io::Error::other("the relay's answer thread panicked"))?;
    requests.and(answered)
}

/// Copies until end of stream; a time-out counts as the end.
fn copy(from: &mut TcpStream, to: &mut TcpStream) -> io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => to.write_all(&buf[..n])?,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_methods_are_not_thrift() {
        assert!(looks_like_http(b"GET /status HTTP/1.1"));
        assert!(looks_like_http(b"POST /admin/flush"));
        assert!(!looks_like_http(b"GE"), "not yet a whole method");
        assert!(!looks_like_http(&[0x80, 0x01, 0x00, 0x01, 0x00]));
        assert!(!looks_like_http(&[0x00, 0x00, 0x00, 0x10, 0x82]));
        assert!(!looks_like_http(b"GETX /"));
    }
}
