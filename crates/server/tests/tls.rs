//! The server over TLS, in process, with certificates made here (rcgen): a
//! Thrift client that trusts the server's CA and presents a certificate of
//! the client CA is served; one without a certificate, with a certificate
//! of another CA, or speaking plain Thrift to the TLS port is refused. The
//! HTTP port serves TLS too (`https.rs`): its pages are open to a client
//! without a certificate, and its admin calls need a certificate of the
//! admin CA or the admin token — an application's certificate (the client
//! CA's) is not enough — there and through the Thrift port's relay; plain
//! HTTP is not served on either.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use server::thrift::hbase_thrift::{ColumnDescriptor, HbaseSyncClient, THbaseSyncClient};
use server::{Server, ServerConfig};
use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport};

struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("key");
    Ca { cert: params.self_signed(&key).expect("CA certificate"), key }
}

/// A certificate for `names` signed by `ca`, and its key, as PEM.
fn leaf(ca: &Ca, names: &[&str]) -> (String, String) {
    let params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &ca.cert, &ca.key).expect("signed");
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// A TLS stream shared by a Thrift client's two halves.
#[derive(Clone)]
struct Shared(Arc<Mutex<StreamOwned<ClientConnection, TcpStream>>>);

impl Read for Shared {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.0.lock().expect("stream").read(b)
    }
}

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("stream").write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().expect("stream").flush()
    }
}

fn client_config(server_ca: &str, client: Option<(&str, &str)>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(server_ca.as_bytes()).expect("CA pem")).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().expect("versions");
    let builder = builder.with_root_certificates(roots);
    Arc::new(match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).expect("cert")],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key"),
            )
            .expect("client auth"),
    })
}

fn tls_stream(addr: std::net::SocketAddr, config: Arc<ClientConfig>) -> Shared {
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
    let conn = ClientConnection::new(config, ServerName::try_from("localhost").expect("name")).expect("client");
    Shared(Arc::new(Mutex::new(StreamOwned::new(conn, tcp))))
}

/// `getTableNames` over TLS with `config`.
fn table_names(addr: std::net::SocketAddr, config: Arc<ClientConfig>) -> thrift::Result<Vec<Vec<u8>>> {
    let s = tls_stream(addr, config);
    let mut c = HbaseSyncClient::new(
        TBinaryInputProtocol::new(TBufferedReadTransport::new(s.clone()), true),
        TBinaryOutputProtocol::new(TBufferedWriteTransport::new(s), true),
    );
    c.get_table_names()
}

/// One plain HTTP/1.0 request; the status line and body.
fn http(addr: std::net::SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// One HTTP/1.1 answer from a keep-alive connection: its head, then as
/// many body bytes as its Content-Length says (records may split it).
fn read_answer(s: &mut Shared) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).expect("answer"), 1, "the connection ended mid-answer");
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().expect("length")))
        .expect("a Content-Length");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("the body");
    head + &String::from_utf8_lossy(&body)
}

/// One HTTP/1.0 request over TLS with `config`; the status line and body
/// (empty if the handshake was refused).
fn https(addr: std::net::SocketAddr, config: Arc<ClientConfig>, request: &str) -> String {
    let mut s = tls_stream(addr, config);
    if s.write_all(request.as_bytes()).and_then(|()| s.flush()).is_err() {
        return String::new();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn thrift_and_http_over_tls_with_client_certificates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server_ca, client_ca, rogue_ca) = (ca("server CA"), ca("client CA"), ca("rogue CA"));
    let admin_ca = ca("admin CA");
    let (cert, key) = leaf(&server_ca, &["localhost", "127.0.0.1"]);
    let (client_cert, client_key) = leaf(&client_ca, &["a client"]);
    let (admin_cert, admin_key) = leaf(&admin_ca, &["an operator"]);
    let (rogue_cert, rogue_key) = leaf(&rogue_ca, &["a rogue"]);
    let token = write(dir.path(), "admin.token", "tls-test-admin-token-0123\n");
    let sets = [
        format!("data_dir={}", dir.path().join("data").display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
        "hbase.thrift.ssl.enabled=true".into(),
        format!("tls_cert={}", write(dir.path(), "server.pem", &cert).display()),
        format!("tls_key={}", write(dir.path(), "server.key", &key).display()),
        format!("tls_client_ca={}", write(dir.path(), "clients.pem", &client_ca.cert.pem()).display()),
        format!("tls_admin_ca={}", write(dir.path(), "admins.pem", &admin_ca.cert.pem()).display()),
        format!("admin_token_file={}", token.display()),
    ];
    let server = Server::start(ServerConfig::load(None, &sets).expect("config")).expect("start");
    let thrift = server.thrift_addr();
    let ca_pem = server_ca.cert.pem();
    let trusted = client_config(&ca_pem, Some((&client_cert, &client_key)));
    let operator = client_config(&ca_pem, Some((&admin_cert, &admin_key)));

    // A client with a certificate of the client CA is served, calls and all.
    let s = tls_stream(thrift, trusted.clone());
    let mut c = HbaseSyncClient::new(
        TBinaryInputProtocol::new(TBufferedReadTransport::new(s.clone()), true),
        TBinaryOutputProtocol::new(TBufferedWriteTransport::new(s), true),
    );
    let f = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(b"t".to_vec(), vec![f]).expect("create over TLS");
    let m = server::thrift::hbase_thrift::Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(b"v".to_vec()),
        write_to_w_a_l: Some(true),
    };
    c.mutate_row(b"t".to_vec(), b"r".to_vec(), vec![m], BTreeMap::new()).expect("put over TLS");
    assert_eq!(c.get_row(b"t".to_vec(), b"r".to_vec(), BTreeMap::new()).expect("get over TLS").len(), 1);
    assert_eq!(table_names(thrift, trusted.clone()).expect("a second connection"), vec![b"t".to_vec()]);

    // Without a certificate, or with another CA's, or in plain Thrift: refused.
    assert!(table_names(thrift, client_config(&ca_pem, None)).is_err(), "served a client without a certificate");
    let rogue = client_config(&ca_pem, Some((&rogue_cert, &rogue_key)));
    assert!(table_names(thrift, rogue).is_err(), "served a client whose certificate another CA signed");
    let mut plain = server::thrift::client::connect(&thrift.to_string(), false, false).expect("tcp connect");
    assert!(plain.get_table_names().is_err(), "served plain Thrift on the TLS port");

    // The HTTP port speaks TLS: pages are open without a client
    // certificate; admin calls need an admin CA's or the token.
    let addr = server.http_addr();
    let anonymous = client_config(&ca_pem, None);
    let status = https(addr, anonymous.clone(), "GET /health HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(status.starts_with("HTTP/1.1 200") || status.starts_with("HTTP/1.0 200"), "{status}");
    let flush = "POST /admin/flush?table=t HTTP/1.0\r\nHost: x\r\n\r\n";
    let refused = https(addr, anonymous.clone(), flush);
    assert!(refused.contains(" 401 "), "{refused}");
    let with_token =
        "POST /admin/flush?table=t HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer tls-test-admin-token-0123\r\n\r\n";
    let flushed = https(addr, anonymous.clone(), with_token);
    assert!(flushed.contains(" 200 ") && flushed.contains("flushed t"), "{flushed}");
    let refused = https(addr, trusted.clone(), flush);
    assert!(refused.contains(" 401 "), "an application's certificate made an admin call: {refused}");
    let flushed = https(addr, operator.clone(), flush);
    assert!(
        flushed.contains(" 200 ") && flushed.contains("flushed t"),
        "an admin CA's certificate authenticates: {flushed}"
    );
    let rogue = client_config(&ca_pem, Some((&rogue_cert, &rogue_key)));
    assert!(!https(addr, rogue, flush).contains(" 200 "), "served a certificate another CA signed");
    // A keep-alive connection carries its certificate's mark to every request.
    let mut s = tls_stream(addr, operator.clone());
    for _ in 0..3 {
        s.write_all(b"POST /admin/flush?table=t HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").expect("send");
        let answer = read_answer(&mut s);
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("flushed t\n"), "{answer}");
    }
    // Plain HTTP is not served on the TLS port.
    let plain = http(addr, "GET /health HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(!plain.contains("200"), "plain HTTP served on the HTTPS port: {plain}");

    // HTTP through the Thrift port's relay: TLS with a client certificate
    // (the port requires one); an admin CA's admits admin calls there too,
    // an application's does not.
    let flushed = https(thrift, operator.clone(), flush);
    assert!(flushed.contains(" 200 ") && flushed.contains("flushed t"), "through the Thrift port: {flushed}");
    assert!(https(thrift, trusted.clone(), flush).contains(" 401 "), "an application's certificate, relayed");
    assert_eq!(table_names(thrift, operator).expect("an operator's Thrift call"), vec![b"t".to_vec()]);
    let status = https(thrift, trusted, "GET /health HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(status.contains(" 200 "), "{status}");
    assert!(https(thrift, anonymous, "GET /health HTTP/1.0\r\nHost: x\r\n\r\n").is_empty());
}

#[test]
fn a_certificate_without_tls_enabled_is_refused_not_served_plain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
        format!("tls_cert={}", dir.path().join("server.pem").display()),
    ];
    let err = Server::start(ServerConfig::load(None, &sets).expect("config")).err().map(|e| e.to_string());
    assert!(err.as_deref().is_some_and(|e| e.contains("tls_enabled")), "{err:?}");
}

#[test]
fn tls_needs_a_certificate_and_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("data_dir={}", dir.path().display()),
        "thrift_addr=127.0.0.1:0".into(),
        "http_addr=127.0.0.1:0".into(),
        "rpc_addr=127.0.0.1:0".into(),
        "hbase.thrift.ssl.enabled=true".into(),
    ];
    let err = Server::start(ServerConfig::load(None, &sets).expect("config")).err().map(|e| e.to_string());
    assert!(err.as_deref().is_some_and(|e| e.contains("needs tls_cert and tls_key")), "{err:?}");
}
