//! TLS (rustls) for both ports and for the calls cluster members make to
//! each other.
//!
//! Two kinds of client certificate, from two CAs:
//! - `tls_client_ca`: the applications'. With it the Thrift port requires a
//!   certificate of it or of the admin CA from every client (mTLS). Such a
//!   certificate reads and writes data; it does not authenticate admin
//!   calls (an application's key should not be able to delete a table).
//! - `tls_admin_ca`: the operators' and, in a cluster, the cluster's own —
//!   every server and the master present a certificate of it to each other
//!   and check each other's server certificates against it
//!   ([`peer_client_config`]). A certificate of it authenticates admin calls
//!   ([`AdminVerifier`]) as the admin token does.
//!
//! The Thrift port speaks TLS itself; the HTTP port is served through a
//! relay (`https.rs`, `tls_relay.rs`) that asks for a certificate of either
//! CA but does not require one, so that read-only pages stay open.
//!
//! Why rustls: a memory-safe TLS stack with no system OpenSSL to match;
//! certificates and keys are PEM files (HBase's gateway takes a Java
//! keystore; `hbase.thrift.ssl.enabled` is honoured by name).
//!
//! A TLS connection is one `StreamOwned` shared by the connection's reader
//! and writer ([`TlsSocket`]): a connection is served by one thread that
//! reads a call and then writes its answer, never both at once, so the
//! mutex is never contended; it only lets the two halves be separate
//! values, as a plain socket's `try_clone` halves are.
//!
//! Thread safety: the configurations are immutable and shared; each
//! `TlsSocket` belongs to one connection.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection, StreamOwned};

/// The files TLS is configured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate chain (PEM), its own certificate first.
    pub cert: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// CA certificates (PEM) that applications' client certificates chain
    /// to; with it, a Thrift client without a valid certificate is refused.
    pub client_ca: Option<PathBuf>,
    /// CA certificates (PEM) whose client certificates authenticate admin
    /// calls: operators', and in a cluster the cluster's CA.
    pub admin_ca: Option<PathBuf>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("reading certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("reading the private key {}: {e}", path.display()))
}

fn roots(ca: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certs(ca)? {
        roots.add(cert).map_err(|e| format!("CA {}: {e}", ca.display()))?;
    }
    Ok(roots)
}

/// The Thrift port's TLS configuration: a client certificate (of either
/// CA) is required when a client CA is given; with only an admin CA, one
/// is accepted but not required.
pub fn thrift_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    server_config(files, files.client_ca.is_some())
}

/// The HTTP port's: a client certificate of either CA is asked for and
/// checked if sent, but not required (see the module doc).
pub fn http_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    server_config(files, false)
}

fn server_config(files: &TlsFiles, require_client_cert: bool) -> Result<Arc<ServerConfig>, String> {
    let chain = certs(&files.cert)?;
    let key = private_key(&files.key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut trusted = RootCertStore::empty();
    for ca in files.client_ca.iter().chain(&files.admin_ca) {
        trusted.roots.extend(roots(ca)?.roots);
    }
    let builder = if trusted.is_empty() {
        builder.with_no_client_auth()
    } else {
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(trusted), provider());
        let verifier = if require_client_cert { verifier } else { verifier.allow_unauthenticated() };
        builder.with_client_cert_verifier(verifier.build().map_err(|e| format!("client CAs: {e}"))?)
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate {} and key {}: {e}", files.cert.display(), files.key.display()))?;
    Ok(Arc::new(config))
}

/// Whether a client certificate chain (already verified by the handshake
/// against either CA) chains to the admin CA: it then authenticates admin
/// calls. Without an admin CA no certificate does.
pub struct AdminVerifier(Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>);

impl AdminVerifier {
    /// The verifier of `files.admin_ca`, if given.
    pub fn new(files: Option<&TlsFiles>) -> Result<AdminVerifier, String> {
        let Some(ca) = files.and_then(|f| f.admin_ca.as_ref()) else { return Ok(AdminVerifier(None)) };
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
            .build()
            .map_err(|e| format!("admin CA {}: {e}", ca.display()))?;
        Ok(AdminVerifier(Some(verifier)))
    }

    /// Whether `chain` (end entity first) chains to the admin CA now.
    pub fn admits(&self, chain: &[CertificateDer<'_>]) -> bool {
        let (Some(verifier), Some((end_entity, intermediates))) = (&self.0, chain.split_first()) else {
            return false;
        };
        let now = rustls::pki_types::UnixTime::now();
        verifier.verify_client_cert(end_entity, intermediates, now).is_ok()
    }
}

impl Default for AdminVerifier {
    /// No admin CA: no certificate authenticates admin calls.
    fn default() -> Self {
        AdminVerifier(None)
    }
}

impl std::fmt::Debug for AdminVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "AdminVerifier(admin CA)" } else { "AdminVerifier(none)" })
    }
}

/// How a cluster member calls the others: it trusts server certificates
/// that chain to the cluster's CA (`admin_ca`, required) and presents its
/// own certificate (`cert`, `key`) as a client.
pub fn peer_client_config(files: &TlsFiles) -> Result<Arc<ClientConfig>, String> {
    let ca = files.admin_ca.as_ref().ok_or_else(|| {
        "a cluster member serving TLS needs tls_admin_ca (the cluster's CA): members and the master \
         authenticate each other with certificates that chain to it"
            .to_string()
    })?;
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots(ca)?)
        .with_client_auth_cert(certs(&files.cert)?, private_key(&files.key)?)
        .map_err(|e| format!("the certificate {} and key {}: {e}", files.cert.display(), files.key.display()))?;
    Ok(Arc::new(config))
}

/// A client configuration that trusts the CAs in `ca` and presents no
/// certificate (the bench's `--server-tls-ca`).
pub fn client_config(ca: &Path) -> Result<Arc<ClientConfig>, String> {
    client_config_with(ca, None)
}

/// A client configuration that trusts the CAs in `ca` and presents the
/// certificate and key `identity` if given (the shell's `--tls-ca`,
/// `--tls-cert`, `--tls-key`).
pub fn client_config_with(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots(ca)?);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(certs(cert)?, private_key(key)?)
            .map_err(|e| format!("the certificate {} and key {}: {e}", cert.display(), key.display()))?,
    };
    Ok(Arc::new(config))
}

/// A TLS connection to `addr` ("host:port"), whose host the server's
/// certificate must name.
pub fn connect(
    config: &Arc<ClientConfig>,
    addr: &str,
    timeout: Duration,
) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string()).map_err(io::Error::other)?;
    let sock = std::net::ToSocketAddrs::to_socket_addrs(addr)?
        .next()
        .ok_or_else(|| io::Error::other(format!("{addr} resolves to no address")))?;
    let tcp = TcpStream::connect_timeout(&sock, timeout.min(Duration::from_secs(10)))?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let conn = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    Ok(StreamOwned::new(conn, tcp))
}

/// One TLS connection, shared by its reader and writer halves.
#[derive(Clone)]
pub struct TlsSocket(Arc<Mutex<StreamOwned<ServerConnection, TcpStream>>>);

impl TlsSocket {
    /// Starts serving TLS on `stream` (the handshake runs with the first
    /// read).
    pub fn accept(config: &Arc<ServerConfig>, stream: TcpStream) -> io::Result<TlsSocket> {
        let conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
        Ok(TlsSocket(Arc::new(Mutex::new(StreamOwned::new(conn, stream)))))
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.0.lock().sock.set_read_timeout(timeout)
    }

    /// The TLS state and its socket, once this is the connection's only
    /// handle (to relay it: `tls_relay.rs`).
    pub fn into_parts(self) -> Option<(ServerConnection, TcpStream)> {
        Arc::try_unwrap(self.0).ok().map(|m| {
            let s = m.into_inner();
            (s.conn, s.sock)
        })
    }
}

impl Read for TlsSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.lock().read(buf)
    }
}

impl Write for TlsSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().flush()
    }
}
