//! The server's HTTP port, for what the Thrift v1 IDL lacks: `/status`
//! (`status`, `list_regions`) and `POST /admin/<call>` (flush, split,
//! merge, assign, unassign).
//!
//! Finding it: our server answers HTTP on its Thrift port too (it relays
//! such connections to its HTTP port, `server::http_relay`), so when
//! `--http` is not given the shell first asks the Thrift address itself.
//! A server that does not (one whose HTTP port listens more narrowly than
//! its Thrift port, or another implementation) is then looked for on the
//! Thrift host's default HTTP port (16030, HBase's region server info
//! port). Either answer is used only if the server that gives it serves
//! Thrift on the port the shell is connected to — never another server's
//! port by accident. Otherwise it is an error asking for `--http`. The
//! answer is looked for at the first HTTP call and kept.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};

/// HBase's region server info port, which the server also defaults to.
const DEFAULT_HTTP_PORT: u16 = 16030;

/// How long to wait for the server's HTTP port to answer while looking
/// for it (a firewalled port would otherwise hang the shell).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an admin call may take (a split or an alter of a big table).
const ADMIN_TIMEOUT: Duration = Duration::from_secs(600);

/// How long reading a status may take once the port is known.
const STATUS_TIMEOUT: Duration = Duration::from_secs(60);

pub struct HttpPort {
    /// The `--server` address ("host:port"), to derive from.
    thrift: String,
    /// Given with `--http`, or found.
    addr: Option<String>,
    /// The admin token (`--admin-token-file`) and TLS (`--tls-ca`).
    access: server::peer::http::PeerAccess,
}

impl HttpPort {
    pub fn new(thrift: &str, http: Option<&str>, tls: Option<std::sync::Arc<rustls::ClientConfig>>) -> HttpPort {
        let access = server::peer::http::PeerAccess { token: None, tls };
        HttpPort { thrift: thrift.to_string(), addr: http.map(str::to_string), access }
    }

    pub fn set_admin_token(&mut self, token: String) {
        self.access.token = Some(token);
    }

    /// What this shell's admin calls carry, for `whoami`.
    pub fn credentials(&self) -> &'static str {
        match (&self.access.token, &self.access.tls) {
            (Some(_), Some(_)) => "the admin token (--admin-token-file), over TLS",
            (Some(_), None) => "the admin token (--admin-token-file)",
            (None, Some(_)) => "this shell's TLS client certificate, if it gave one (--tls-cert)",
            (None, None) => "nothing (admitted only by a server listening on loopback without a token)",
        }
    }

    /// The HTTP address: `--http`'s, or found from the Thrift address.
    fn addr(&mut self) -> anyhow::Result<String> {
        if let Some(a) = &self.addr {
            return Ok(a.clone());
        }
        let found = find_from_thrift(&self.access, &self.thrift)?;
        self.addr = Some(found.clone());
        Ok(found)
    }

    /// `POST /admin/<call>`; returns its answer.
    pub fn admin(&mut self, call: &str, params: &[(&str, &[u8])]) -> anyhow::Result<String> {
        let addr = self.addr()?;
        self.admin_at(&addr, call, params)
    }

    /// `POST /admin/<call>` to the HTTP port at `addr` (a cluster's active
    /// master, say), with the same token.
    pub fn admin_at(&self, addr: &str, call: &str, params: &[(&str, &[u8])]) -> anyhow::Result<String> {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", urlencode(v))).collect();
        let path = format!("/admin/{call}?{}", query.join("&"));
        match self.access.exchange(addr, "POST", &path, ADMIN_TIMEOUT) {
            Ok((code, body)) if (200..300).contains(&code) => Ok(body),
            Ok((_, body)) => bail!("{call}: {}", body.trim_end()),
            Err(e) => bail!("{call}: cannot reach the server's HTTP port {addr}: {e}"),
        }
    }

    /// The server's `/status` document.
    pub fn status(&mut self) -> anyhow::Result<http_api::ServerStatus> {
        let addr = self.addr()?;
        get_status(&self.access, &addr, STATUS_TIMEOUT)
    }

    /// Table `table`'s descriptor, every family setting included
    /// (`GET /schema`; Thrift's column descriptors carry only some).
    pub fn schema(&mut self, table: &[u8]) -> anyhow::Result<store::TableDescriptor> {
        let addr = self.addr()?;
        let path = format!("/schema?table={}", urlencode(table));
        let body = self.access.request(&addr, "GET", &path, STATUS_TIMEOUT).map_err(|e| anyhow!("{e}"))?;
        serde_json::from_str(&body).with_context(|| format!("{addr} did not answer with a table descriptor"))
    }

    /// The namespaces with their tables (`GET /namespaces`), or namespace
    /// `name` alone.
    pub fn namespaces(&mut self, name: Option<&[u8]>) -> anyhow::Result<Vec<server::namespaces::NamespaceEntry>> {
        let addr = self.addr()?;
        let path = match name {
            Some(n) => format!("/namespaces?name={}", urlencode(n)),
            None => "/namespaces".to_string(),
        };
        let body = self.access.request(&addr, "GET", &path, STATUS_TIMEOUT).map_err(|e| anyhow!("{e}"))?;
        serde_json::from_str(&body).with_context(|| format!("{addr} did not answer with namespaces"))
    }

    /// Another server's `/status`, at its HTTP address (a cluster's
    /// members, listed in this server's status).
    pub fn status_of(&self, http: &str) -> anyhow::Result<http_api::ServerStatus> {
        get_status(&self.access, http, PROBE_TIMEOUT)
    }
}

fn get_status(
    access: &server::peer::http::PeerAccess,
    addr: &str,
    timeout: Duration,
) -> anyhow::Result<http_api::ServerStatus> {
    let body = access.request(addr, "GET", "/status", timeout).map_err(|e| anyhow!("cannot read the status: {e}"))?;
    serde_json::from_str(&body).with_context(|| format!("{addr} did not answer with a status document"))
}

/// `host:port` split at its last colon (an IPv6 host keeps its brackets).
fn host_and_port(addr: &str) -> Option<(&str, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

/// The HTTP address of the server whose Thrift address is `thrift`: the
/// Thrift address itself if the server answers HTTP there, else the same
/// host's default port, if the server there says it serves that Thrift port.
fn find_from_thrift(access: &server::peer::http::PeerAccess, thrift: &str) -> anyhow::Result<String> {
    let (host, thrift_port) =
        host_and_port(thrift).ok_or_else(|| anyhow!("--server {thrift:?} is not HOST:PORT; pass --http HOST:PORT"))?;
    let serves_this = |status: &http_api::ServerStatus| {
        let serves = status.server.thrift_addr.clone();
        (host_and_port(&serves).is_some_and(|(_, port)| port == thrift_port), serves)
    };
    let relayed = get_status(access, thrift, PROBE_TIMEOUT);
    if let Ok(status) = &relayed
        && serves_this(status).0
    {
        return Ok(thrift.to_string());
    }
    let candidate = format!("{host}:{DEFAULT_HTTP_PORT}");
    let status = get_status(access, &candidate, PROBE_TIMEOUT).map_err(|e| {
        let why = relayed.err().map_or_else(|| "answers HTTP for another server".to_string(), |e| format!("{e}"));
        anyhow!(
            "cannot find the server's HTTP port: the Thrift port {thrift} does not answer HTTP ({why}), and \
             {candidate} (the default HTTP port) does not answer ({e}); pass --http HOST:PORT"
        )
    })?;
    match serves_this(&status) {
        (true, _) => Ok(candidate),
        (false, serves) => bail!(
            "cannot find the server's HTTP port: the server answering at {candidate} (the default) serves Thrift at \
             {serves:?}, not {thrift}; pass --http HOST:PORT"
        ),
    }
}

fn urlencode(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if c.is_ascii_alphanumeric() || b"-_.~".contains(&c) {
                (c as char).to_string()
            } else {
                format!("%{c:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_at_the_last_colon() {
        assert_eq!(host_and_port("127.0.0.1:9090"), Some(("127.0.0.1", 9090)));
        assert_eq!(host_and_port("[::1]:9091"), Some(("[::1]", 9091)));
        assert_eq!(host_and_port("localhost"), None);
        assert_eq!(urlencode(b"a b\x00/"), "a%20b%00%2F");
    }

    #[test]
    fn a_given_address_is_used_as_is() {
        let mut port = HttpPort::new("127.0.0.1:9", Some("example:1"), None);
        assert_eq!(port.addr().expect("given"), "example:1");
    }
}
