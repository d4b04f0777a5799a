//! What the master knows of each region server's load: it reads the
//! server's own `GET /status` (the JSON every `accordion server` serves on
//! its HTTP port) and keeps regions, memstore bytes and a request rate
//! computed between two reads.
//!
//! Thread safety: `LoadTracker` is owned by the master's poller thread; the
//! loads it produces are copied into the master's view.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use http_api::ServerStatus;
use serde::Serialize;

use crate::membership::ServerInfo;

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

/// Requests counted by a server at an instant.
struct Sample {
    at: Instant,
    requests: u64,
}

#[derive(Default)]
pub struct LoadTracker {
    last: HashMap<String, Sample>,
}

impl LoadTracker {
    /// Reads every serving server's status; forgets servers no longer
    /// listed. Returns each one's load and the status documents read.
    pub fn poll(&mut self, servers: &[ServerInfo]) -> (HashMap<String, ServerLoad>, HashMap<String, ServerStatus>) {
        self.last.retain(|name, _| servers.iter().any(|s| &s.name == name));
        let mut out = HashMap::new();
        let mut docs = HashMap::new();
        for s in servers.iter().filter(|s| s.is_serving()) {
            let load = match read_status(&s.http, STATUS_TIMEOUT) {
                Ok(status) => {
                    let (regions, memstore_bytes, requests) = summarise(&status);
                    let now = Instant::now();
                    let rate = self.last.get(&s.name).and_then(|prev| {
                        let secs = now.duration_since(prev.at).as_secs_f64();
                        (secs > 0.0).then(|| requests.saturating_sub(prev.requests) as f64 / secs)
                    });
                    self.last.insert(s.name.clone(), Sample { at: now, requests });
                    docs.insert(s.name.clone(), status);
                    ServerLoad { regions, memstore_bytes, requests_per_sec: rate, error: None }
                }
                Err(e) => ServerLoad { regions: 0, memstore_bytes: 0, requests_per_sec: None, error: Some(e) },
            };
            out.insert(s.name.clone(), load);
        }
        (out, docs)
    }
}

/// Regions, memstore bytes and requests (puts + gets + scans) of a
/// server's status.
fn summarise(status: &ServerStatus) -> (u64, u64, u64) {
    // Regions the server serves (in a cluster every server lists every
    // region; those held elsewhere are OFFLINE).
    let open: Vec<_> = status.open_regions().collect();
    let memstore = open.iter().map(|r| r.memstore_data_bytes).sum();
    let t = &status.totals;
    (open.len() as u64, memstore, t.puts + t.gets + t.scans)
}

/// How long the master waits for a server's status when it polls.
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /status` of a server's HTTP address, parsed.
pub(crate) fn read_status(http: &str, timeout: Duration) -> Result<ServerStatus, String> {
    let body = request(http, "GET", "/status", timeout)?;
    serde_json::from_str(&body).map_err(|e| format!("{http}: not a status document: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_document_is_summarised() {
        use http_api::{RegionState, RegionStatus, TableStatus};
        let region = |state, bytes| RegionStatus { memstore_data_bytes: bytes, ..RegionStatus::listed("r", state) };
        let mut status = ServerStatus {
            tables: vec![
                TableStatus {
                    name: "a".into(),
                    enabled: true,
                    regions: vec![region(RegionState::Open, 100), region(RegionState::Open, 50)],
                },
                TableStatus {
                    name: "b".into(),
                    enabled: true,
                    regions: vec![region(RegionState::Open, 7), region(RegionState::Offline, 9)],
                },
            ],
            ..ServerStatus::default()
        };
        (status.totals.puts, status.totals.gets, status.totals.scans) = (10, 5, 1);
        assert_eq!(summarise(&status), (3, 157, 16));
    }
}
