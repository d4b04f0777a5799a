//! Who may make state-changing HTTP calls (`POST /admin/*`: split, merge,
//! alter, assign, recover, ...): HBase's region server checks its admin
//! calls against ACLs; ours takes a bearer token from a file.
//!
//! The rules:
//! - a client that presented a certificate chaining to `tls_admin_ca` (on
//!   the HTTPS port or the Thrift port's relay) is admitted; an
//!   application's certificate (`tls_client_ca`) is not;
//! - with a token (`admin_token_file`), every admin call must carry
//!   `Authorization: Bearer <token>`, however it arrives (the HTTP port, or
//!   the Thrift port's HTTP relay, which forwards the header unchanged);
//! - without one, admin calls are served only while both ports listen on
//!   loopback: then every caller is a process of this machine. A server
//!   that listens beyond loopback without a token refuses every admin call
//!   and says why.
//!
//! Read-only pages (`/status`, `/metrics`, the status page) stay open. The
//! token is compared in constant time. Other region servers and the master
//! send the same token (`peer/routing.rs`, `cluster::server_load`).
//!
//! Thread safety: immutable once built; shared by the HTTP threads.

use std::net::SocketAddr;
use std::path::Path;

/// The admin calls' gate; see the module doc.
#[derive(Debug, Clone, Default)]
pub struct AdminAuth {
    token: Option<String>,
    /// No token, and a port listens beyond loopback: refuse every call.
    exposed: bool,
}

/// Reads a token file: its content, trimmed, at least 16 bytes.
pub fn read_token_file(path: &Path) -> Result<String, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading the admin token file {}: {e}", path.display()))?;
    let token = text.trim().to_string();
    if token.len() < 16 || token.chars().any(char::is_whitespace) {
        return Err(format!(
            "the admin token file {} must hold one token of at least 16 characters without spaces",
            path.display()
        ));
    }
    Ok(token)
}

/// The `Authorization` header value that carries `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

impl AdminAuth {
    /// The gate of a server whose ports are `listening` on, with `token`.
    pub fn new(token: Option<String>, listening: &[SocketAddr]) -> AdminAuth {
        let exposed = token.is_none() && listening.iter().any(|a| !a.ip().is_loopback());
        if exposed {
            tracing::warn!(
                "the server listens beyond loopback without admin_token_file: every POST /admin/ call is refused"
            );
        }
        AdminAuth { token, exposed }
    }

    /// Whether a call with `authorization` (the header's value) may run,
    /// `certified` saying whether it came with a verified client
    /// certificate; else the answer's status and text.
    pub fn check(&self, authorization: Option<&str>, certified: bool) -> Result<(), (u16, String)> {
        if certified {
            return Ok(());
        }
        if self.exposed {
            return Err((
                403,
                "admin calls are refused: this server listens beyond loopback and has no admin_token_file \
                 (set one to allow them, with Authorization: Bearer <token>)"
                    .into(),
            ));
        }
        let Some(token) = &self.token else { return Ok(()) };
        let given = authorization.and_then(|a| a.strip_prefix("Bearer ")).unwrap_or("");
        if constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
            Ok(())
        } else {
            Err((401, "admin calls need Authorization: Bearer <the server's admin token>".into()))
        }
    }
}

/// Compares without returning early at the first difference, so the time
/// taken says nothing of how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Vec<SocketAddr> {
        vec!["127.0.0.1:9090".parse().expect("addr"), "[::1]:16030".parse().expect("addr")]
    }

    #[test]
    fn a_token_is_required_once_set() {
        let auth = AdminAuth::new(Some("0123456789abcdef".into()), &loopback());
        assert_eq!(auth.check(Some("Bearer 0123456789abcdef"), false), Ok(()));
        for bad in [None, Some(""), Some("Bearer "), Some("Bearer 0123456789abcdeF"), Some("0123456789abcdef")] {
            assert_eq!(auth.check(bad, false).expect_err("refused").0, 401, "{bad:?}");
        }
    }

    #[test]
    fn without_a_token_only_a_loopback_server_serves_admin_calls() {
        assert_eq!(AdminAuth::new(None, &loopback()).check(None, false), Ok(()));
        let exposed = AdminAuth::new(None, &["0.0.0.0:16030".parse().expect("addr")]);
        let (code, why) = exposed.check(Some("Bearer anything-at-all-here"), false).expect_err("refused");
        assert_eq!(code, 403);
        assert_eq!(exposed.check(None, true), Ok(()), "a verified client certificate is enough");
        assert!(why.contains("admin_token_file"), "{why}");
    }

    #[test]
    fn token_files_hold_one_long_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "  0123456789abcdef\n").expect("write");
        assert_eq!(read_token_file(&path).expect("read"), "0123456789abcdef");
        for bad in ["short", "0123456789 abcdef", ""] {
            std::fs::write(&path, bad).expect("write");
            assert!(read_token_file(&path).is_err(), "{bad:?}");
        }
        assert!(read_token_file(&dir.path().join("missing")).is_err());
    }
}
