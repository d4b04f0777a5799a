//! TLS for the Thrift port (rustls), with client certificates required when
//! a client CA is given (mTLS).
//!
//! The HTTP port stays plain: tiny_http's TLS is built on rustls 0.20, which
//! has a known denial of service (RUSTSEC-2024-0336, a connection that
//! closes after its ClientHello spins a thread for ever) and no fixed
//! release; keep the HTTP port on loopback or behind a TLS proxy (its admin
//! calls need the admin token either way).
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
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection, StreamOwned};

/// The files TLS is configured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate chain (PEM), its own certificate first.
    pub cert: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// CA certificates (PEM) that client certificates must chain to; with
    /// it, a Thrift client without a valid certificate is refused.
    pub client_ca: Option<PathBuf>,
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

/// The Thrift port's TLS configuration.
pub fn thrift_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    let chain = certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("reading the private key {}: {e}", files.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certs(ca)? {
                roots.add(cert).map_err(|e| format!("client CA {}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| format!("client CA {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate {} and key {}: {e}", files.cert.display(), files.key.display()))?;
    Ok(Arc::new(config))
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
