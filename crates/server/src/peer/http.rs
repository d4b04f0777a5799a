//! One HTTP/1.0 request from a cluster member (or the master) to another
//! server's HTTP port, plain or over TLS with this member's certificate.
//!
//! Why by hand: these are a handful of requests a second to our own
//! servers (`/status`, `/admin/sync_table`, the master's admin calls), and
//! the TLS one must present a client certificate from the cluster's files;
//! a request line, two headers and reading to the end is all it takes.
//!
//! Thread safety: stateless; each call has its own connection.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// How a member reaches the others: the admin token it sends and, in a
/// cluster serving TLS, its client configuration.
#[derive(Clone, Default)]
pub struct PeerAccess {
    pub token: Option<String>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl PeerAccess {
    /// `method path` on the server whose HTTP port is `http` ("host:port"):
    /// the answer's body if its status is 200, else the status line and body.
    pub fn request(&self, http: &str, method: &str, path: &str, timeout: Duration) -> Result<String, String> {
        let (code, status_line, body) = self.call(http, method, path, timeout)?;
        if code != 200 {
            return Err(format!("{http}: {status_line}: {}", body.trim()));
        }
        Ok(body)
    }

    /// `method path` on `http`: the answer's status code and body, whatever
    /// the status (the shell shows a refusal's text as it is).
    pub fn exchange(&self, http: &str, method: &str, path: &str, timeout: Duration) -> Result<(u16, String), String> {
        self.call(http, method, path, timeout).map(|(code, _, body)| (code, body))
    }

    /// `POST path` on `http` with a JSON `body` (a region server's report
    /// to the master): the answer's status code and body.
    pub fn post_json(&self, http: &str, path: &str, body: &[u8], timeout: Duration) -> Result<(u16, String), String> {
        self.call_with(http, "POST", path, Some(body), timeout).map(|(code, _, body)| (code, body))
    }

    fn call(&self, http: &str, method: &str, path: &str, timeout: Duration) -> Result<(u16, String, String), String> {
        self.call_with(http, method, path, None, timeout)
    }

    fn call_with(
        &self,
        http: &str,
        method: &str,
        path: &str,
        json: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<(u16, String, String), String> {
        let auth = self.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let (length, kind) = match json {
            Some(b) => (b.len(), "Content-Type: application/json\r\n"),
            None => (0, ""),
        };
        let mut head =
            format!("{method} {path} HTTP/1.0\r\nHost: {http}\r\n{auth}{kind}Content-Length: {length}\r\n\r\n")
                .into_bytes();
        head.extend_from_slice(json.unwrap_or_default());
        let response = match &self.tls {
            None => {
                let addr = http
                    .to_socket_addrs()
                    .map_err(|e| format!("{http}: {e}"))?
                    .next()
                    .ok_or_else(|| format!("{http}: no address"))?;
                let mut s = TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(2)))
                    .map_err(|e| format!("{http}: {e}"))?;
                s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
                s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
                exchange(&mut s, &head)
            }
            Some(config) => {
                // Our TLS relays end an answer with close_notify: a stream
                // cut without one is a truncated answer (rustls reports it
                // as UnexpectedEof), not a short one.
                let mut s = crate::tls::connect(config, http, timeout).map_err(|e| format!("{http}: {e}"))?;
                exchange(&mut s, &head)
            }
        }
        .map_err(|e| format!("{http}: {e}"))?;
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("{http}: malformed HTTP response"))?;
        let (head, body) = (String::from_utf8_lossy(&response[..split]), &response[split + 4..]);
        let declared = head.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
        });
        if let Some(len) = declared
            && body.len() < len
        {
            return Err(format!("{http}: the answer was cut short ({} of {len} bytes)", body.len()));
        }
        let body = String::from_utf8_lossy(declared.map_or(body, |len| &body[..len])).into_owned();
        let status_line = head.lines().next().unwrap_or_default().to_string();
        let code = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("{http}: no HTTP status in {status_line:?}"))?;
        Ok((code, status_line, body))
    }
}

/// Writes the request and reads the answer to its end.
fn exchange(stream: &mut (impl Read + Write), head: &[u8]) -> std::io::Result<Vec<u8>> {
    stream.write_all(head)?;
    stream.flush()?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out)?;
    Ok(out)
}
