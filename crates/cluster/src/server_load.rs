//! A region server's load as the master's page shows it (from the server's
//! reports: `reports.rs`), and how the master's calls reach the servers'
//! HTTP ports (plain, or through a TLS requester the binary sets).
//!
//! Thread safety: the token and requester are set once at start and read
//! by any thread.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;

/// A region server's load as the master last read it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerLoad {
    /// Regions the server reports open.
    pub regions: u64,
    /// Bytes of data in its memstores.
    pub memstore_bytes: u64,
    /// Puts, gets and scans per second between the last two reads (`None`
    /// after the first read).
    pub requests_per_sec: Option<f64>,
    /// Why the last read failed, if it did.
    pub error: Option<String>,
}

/// The token the region servers' admin calls need (`admin_token_file`), sent
/// with every request: set once by the master at start. Process-wide, as the
/// cluster's servers share one token.
static ADMIN_TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sends `token` with every request to the region servers from now on.
pub fn set_admin_token(token: String) {
    let _ = ADMIN_TOKEN.set(token);
}

/// How a request reaches a server when not in plain HTTP: `(http address,
/// method, path, timeout)` to the answer's body, or why not.
pub type Requester = Box<dyn Fn(&str, &str, &str, Duration) -> Result<String, String> + Send + Sync>;

/// A cluster serving TLS: the master's requests go through this (the
/// binary gives it one that speaks TLS with the master's certificate).
static REQUESTER: std::sync::OnceLock<Requester> = std::sync::OnceLock::new();

/// Sends every request to the region servers through `requester` from now on.
pub fn set_requester(requester: Requester) {
    let _ = REQUESTER.set(requester);
}

/// One request to a server's HTTP address: through the requester when one
/// is set, else [`plain_request`].
pub(crate) fn request(http: &str, method: &str, path: &str, timeout: Duration) -> Result<String, String> {
    match REQUESTER.get() {
        Some(requester) => requester(http, method, path, timeout),
        None => plain_request(http, method, path, timeout),
    }
}

/// One HTTP/1.0 request to a server's HTTP address; its body if the answer
/// is 200, else the status line and body as the error. (A handful of
/// requests a second to our own servers: no HTTP client crate needed.)
fn plain_request(http: &str, method: &str, path: &str, timeout: Duration) -> Result<String, String> {
    let addr = http
        .to_socket_addrs()
        .map_err(|e| format!("{http}: {e}"))?
        .next()
        .ok_or_else(|| format!("{http}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map_err(|e| format!("{http}: {e}"))?;
    s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let auth = ADMIN_TOKEN.get().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "{method} {path} HTTP/1.0\r\nHost: {http}\r\n{auth}Content-Length: 0\r\n\r\n")
        .map_err(|e| format!("{http}: {e}"))?;
    let mut response = String::new();
    s.read_to_string(&mut response).map_err(|e| format!("{http}: {e}"))?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or_else(|| format!("{http}: malformed HTTP response"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!("{http}: {}: {}", head.lines().next().unwrap_or("no status line"), body.trim()));
    }
    Ok(body.to_string())
}
