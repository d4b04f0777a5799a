//! `KeptConnection`: one HTTP/1.1 connection kept open to one address, for
//! a region server's reports to its master (`master_report`): a heartbeat
//! every 3 s from each of 1,000 servers was, one connection each, a TCP
//! handshake, an accept and a teardown per report — most of an idle
//! master's CPU (perf, issue 55). Kept open, a report is one write and one
//! read on each side.
//!
//! Over TLS (where the master's page sits behind a relay that answers one
//! request per connection) it makes one connection per request, as
//! [`PeerAccess`] does.
//!
//! Why by hand: as `http.rs` — a request line, four headers, and an answer
//! read by its `Content-Length` (asked for with `TE: identity`, so that
//! tiny_http does not chunk it).
//!
//! Thread safety: one owner (`&mut self`); not shared.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::http::PeerAccess;

/// The largest answer read (the master's answers to reports are a line).
const MAX_ANSWER: usize = 16 << 20;

pub struct KeptConnection {
    access: PeerAccess,
    /// The open connection and the address it goes to.
    open: Option<(String, BufReader<TcpStream>)>,
    /// Connections made (a test and the emulator's figures read it).
    connects: u64,
}

impl KeptConnection {
    pub fn new(access: PeerAccess) -> KeptConnection {
        KeptConnection { access, open: None, connects: 0 }
    }

    /// Connections made so far.
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// `POST path` with a JSON `body` on `http` ("host:port"): the answer's
    /// status code and body. A kept connection that fails before its
    /// answer began is replaced once (the server may have closed it while
    /// idle); the request is then sent again, which a report tolerates
    /// (the master refuses a delta on a base it moved past).
    pub fn post_json(
        &mut self,
        http: &str,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<(u16, String), String> {
        if self.access.tls.is_some() {
            return self.access.post_json(http, path, body, timeout);
        }
        let reused = self.open.as_ref().is_some_and(|(to, _)| to == http);
        match self.exchange(http, path, body, timeout) {
            Err(_) if reused => {
                self.open = None;
                self.exchange(http, path, body, timeout)
            }
            other => other,
        }
        .inspect_err(|_| self.open = None)
    }

    fn exchange(&mut self, http: &str, path: &str, body: &[u8], timeout: Duration) -> Result<(u16, String), String> {
        if self.open.as_ref().is_none_or(|(to, _)| to != http) {
            let addr = http
                .to_socket_addrs()
                .map_err(|e| format!("{http}: {e}"))?
                .next()
                .ok_or_else(|| format!("{http}: no address"))?;
            let s = TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(2)))
                .map_err(|e| format!("{http}: {e}"))?;
            let _ = s.set_nodelay(true);
            self.connects += 1;
            self.open = Some((http.to_string(), BufReader::new(s)));
        }
        let (_, conn) = self.open.as_mut().expect("opened above");
        let s = conn.get_mut();
        s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        let auth = self.access.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {http}\r\n{auth}Content-Type: application/json\r\nTE: identity\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        s.write_all(&request).map_err(|e| format!("{http}: {e}"))?;
        let (code, close, text) = read_answer(conn).map_err(|e| format!("{http}: {e}"))?;
        if close {
            self.open = None;
        }
        Ok((code, text))
    }
}

/// Reads one answer: its status code, whether the server closes the
/// connection after it, and its body.
fn read_answer(conn: &mut BufReader<TcpStream>) -> Result<(u16, bool, String), String> {
    let mut status = String::new();
    if conn.read_line(&mut status).map_err(|e| e.to_string())? == 0 {
        return Err("the connection closed before an answer".into());
    }
    let code: u16 = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {:?}", status.trim()))?;
    let mut length = None;
    let mut close = status.starts_with("HTTP/1.0");
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the answer's head was cut short".into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| format!("Content-Length {value:?}"))?);
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("transfer-encoding") && !value.eq_ignore_ascii_case("identity") {
            return Err(format!("an answer in Transfer-Encoding {value}, not asked for"));
        }
    }
    let body = match length {
        Some(len) if len > MAX_ANSWER => return Err(format!("an answer of {len} bytes")),
        Some(len) => {
            let mut body = vec![0; len];
            conn.read_exact(&mut body).map_err(|e| format!("the answer was cut short: {e}"))?;
            body
        }
        None => {
            // No length: the answer ends with the connection.
            close = true;
            let mut body = Vec::new();
            conn.take(MAX_ANSWER as u64).read_to_end(&mut body).map_err(|e| e.to_string())?;
            body
        }
    };
    Ok((code, close, String::from_utf8_lossy(&body).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers every request on a connection with its
    /// number, keeping the connection open, and closes it after `per_conn`.
    fn server(per_conn: usize) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut r = BufReader::new(s);
                for n in 0..per_conn {
                    let mut len = 0;
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().expect("length");
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; len];
                    r.read_exact(&mut body).expect("body");
                    let text = format!("{n}:{}", String::from_utf8_lossy(&body));
                    let _ = write!(r.get_mut(), "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len());
                }
            }
        });
        (addr, accepted)
    }

    #[test]
    fn requests_share_one_connection_and_a_closed_one_is_replaced() {
        let (addr, accepted) = server(3);
        let mut c = KeptConnection::new(PeerAccess::default());
        let t = Duration::from_secs(5);
        for (i, body) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(c.post_json(&addr, "/report", body.as_bytes(), t), Ok((200, format!("{i}:{body}"))));
        }
        assert_eq!(c.connects(), 1);
        // The server closed it after three: the fourth goes on a new one.
        assert_eq!(c.post_json(&addr, "/report", b"d", t), Ok((200, "0:d".to_string())));
        assert_eq!(c.connects(), 2);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn nothing_listening_is_an_error_and_no_connection_is_kept() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").to_string();
        let mut c = KeptConnection::new(PeerAccess::default());
        assert!(c.post_json(&addr, "/report", b"x", Duration::from_secs(1)).is_err());
        assert!(c.open.is_none());
    }
}
