//! A cluster that serves TLS (issue 25): two region servers and a master,
//! each with a certificate of the cluster's CA, on real ZooKeeper.
//!
//! What it proves:
//! - server to server: a write sent to the server that does not hold the
//!   region is forwarded over TLS (the Thrift port requires a client
//!   certificate of the cluster's CA, so the forwarding server presents its
//!   own) and read back through either server;
//! - master to server: the servers require the admin token, which the
//!   master is not given; after SIGKILL of the region's server the master
//!   still recovers its WAL and assigns its region to the survivor — its
//!   admin calls are authenticated by its certificate alone — and every
//!   acknowledged row is read back;
//! - nothing is served in plain text or to another CA's certificate: plain
//!   Thrift, plain HTTP (servers and master), a Thrift client without a
//!   certificate or with a rogue one, and an HTTPS admin call without a
//!   certificate or token, or with an application's certificate (the
//!   servers' `tls_client_ca`, which reads and writes data), are all
//!   refused; an operator's certificate of the cluster CA is admitted.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster::local_zk::LocalZooKeeper;
use common::{MasterProcess, ServerProcess, test_ca as ca, test_leaf};
use rcgen::{Certificate, KeyPair};
use server::peer::http::PeerAccess;
use server::thrift::client::{THbaseSyncClient, ThriftClient};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation};
use server::tls::TlsFiles;

const SESSION_MS: u64 = 2000;
const ROWS: usize = 200;

/// A certificate of `ca` for this machine's loopback names, written with
/// its key and the CA as `<name>.pem`, `<name>.key`, `ca.pem`.
fn files(dir: &Path, ca: &(Certificate, KeyPair), name: &str) -> TlsFiles {
    let (cert, key) = test_leaf(ca, &["127.0.0.1", "localhost"]);
    let files = TlsFiles {
        cert: dir.join(format!("{name}.pem")),
        key: dir.join(format!("{name}.key")),
        client_ca: None,
        admin_ca: Some(dir.join(format!("{name}-ca.pem"))),
    };
    std::fs::write(&files.cert, cert).expect("write");
    std::fs::write(&files.key, key).expect("write");
    std::fs::write(files.admin_ca.as_ref().expect("ca"), ca.0.pem()).expect("write");
    files
}

fn arg(p: &Path) -> String {
    p.to_str().expect("UTF-8").to_string()
}

fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn json(access: &PeerAccess, http: SocketAddr, path: &str) -> serde_json::Value {
    access
        .request(&http.to_string(), "GET", path, Duration::from_secs(5))
        .ok()
        .and_then(|b| serde_json::from_str(&b).ok())
        .unwrap_or_default()
}

fn open_regions(access: &PeerAccess, server: &ServerProcess) -> usize {
    let status = json(access, server.http, "/status");
    serde_json::from_value::<http_api::ServerStatus>(status).map_or(0, |s| s.open_regions().count())
}

fn client(addr: SocketAddr, config: &Arc<rustls::ClientConfig>) -> ThriftClient {
    server::thrift::client::connect_tls_with(&addr.to_string(), config, false, false).expect("TLS connect")
}

fn rows_read(addr: SocketAddr, config: &Arc<rustls::ClientConfig>) -> usize {
    let Ok(mut c) = server::thrift::client::connect_tls_with(&addr.to_string(), config, false, false) else { return 0 };
    let keys: Vec<Vec<u8>> = (0..ROWS).map(|i| format!("row{i:04}").into_bytes()).collect();
    c.get_rows(b"t".to_vec(), keys, BTreeMap::new()).map(|r| r.len()).unwrap_or(0)
}

/// A plain HTTP/1.0 GET: the answer, empty if none came.
fn plain_get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return String::new() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_cluster_serving_tls_forwards_recovers_and_assigns_with_certificates_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    let url = zk.url("/accordion");
    let root = tempfile::tempdir().expect("shared root");
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).expect("mkdir");
    let (cluster_ca, rogue_ca, apps_ca) = (ca("cluster CA"), ca("rogue CA"), ca("applications CA"));
    // Applications' certificates: data calls, no admin calls.
    let apps = files(&certs, &apps_ca, "application");
    let token = certs.join("admin.token");
    std::fs::write(&token, "cluster-tls-admin-token-0123\n").expect("write");
    let start = |name: &str| {
        let tls = files(&certs, &cluster_ca, name);
        let flags = [
            "--cluster".to_string(),
            url.clone(),
            "--session-timeout-ms".into(),
            SESSION_MS.to_string(),
            "--tls-cert".into(),
            arg(&tls.cert),
            "--tls-key".into(),
            arg(&tls.key),
            "--tls-admin-ca".into(),
            arg(tls.admin_ca.as_ref().expect("ca")),
            "--tls-client-ca".into(),
            arg(apps.admin_ca.as_ref().expect("the applications' CA")),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        // The servers need the admin token; the master is not given it.
        ServerProcess::start_with_flags(root.path(), &flags, &[&format!("admin_token_file={}", arg(&token))])
    };
    let mut a = start("a");
    let b = start("b");
    let master_tls = files(&certs, &cluster_ca, "master");
    let tls_flags = [
        "--tls-cert".to_string(),
        arg(&master_tls.cert),
        "--tls-key".into(),
        arg(&master_tls.key),
        "--tls-ca".into(),
        arg(master_tls.admin_ca.as_ref().expect("ca")),
        "--balancer-period-ms".into(),
        "0".into(),
    ];
    let master = MasterProcess::launch(&url, SESSION_MS, &tls_flags.iter().map(String::as_str).collect::<Vec<_>>());
    let operator = files(&certs, &cluster_ca, "operator");
    let cluster_ca_file = operator.admin_ca.clone().expect("ca");
    let access = PeerAccess { token: None, tls: Some(server::tls::peer_client_config(&operator).expect("config")) };
    // An application trusts the servers' certificates (the cluster CA's)
    // and presents its own.
    let trusted =
        server::tls::client_config_with(&cluster_ca_file, Some((&apps.cert, &apps.key))).expect("client config");

    // The master reads both servers over TLS.
    wait_for("the master lists both servers", Duration::from_secs(30), || {
        json(&access, master.http, "/status")["servers"].as_array().is_some_and(|s| s.len() == 2)
    });

    // t is made on a; its region is a's. Writes go through b, which
    // forwards them to a over TLS.
    let mut on_a = client(a.thrift, &trusted);
    let f = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() };
    on_a.create_table(b"t".to_vec(), vec![f]).expect("create t on a");
    wait_for("b lists t", Duration::from_secs(30), || {
        json(&access, b.http, "/status")["tables"].as_array().is_some_and(|t| !t.is_empty())
    });
    assert_eq!(open_regions(&access, &a), 1, "a holds t's region");
    let batch: Vec<BatchMutation> = (0..ROWS)
        .map(|i| BatchMutation {
            row: Some(format!("row{i:04}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(format!("v{i}").into_bytes()),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    let mut on_b = client(b.thrift, &trusted);
    on_b.mutate_rows(b"t".to_vec(), batch, BTreeMap::new()).expect("rows written through b, forwarded to a");
    assert_eq!(rows_read(a.thrift, &trusted), ROWS, "a holds every row written through b");
    assert_eq!(rows_read(b.thrift, &trusted), ROWS, "b reads them from a over TLS");

    // Nothing is served in plain text or to another CA's certificate.
    let mut plain = server::thrift::client::connect(&a.thrift.to_string(), false, false).expect("tcp connect");
    assert!(plain.get_table_names().is_err(), "plain Thrift served");
    for (what, addr) in [("server", a.http), ("master", master.http)] {
        let answer = plain_get(addr, "/status");
        assert!(!answer.contains(" 200 "), "plain HTTP served by the {what}: {answer}");
    }
    let rogue = server::tls::peer_client_config(&files(&certs, &rogue_ca, "rogue")).expect("rogue config");
    assert_eq!(rows_read(a.thrift, &rogue), 0, "a rogue CA's certificate served");
    let no_cert = server::tls::client_config(&cluster_ca_file).expect("config");
    assert!(
        server::thrift::client::connect_tls_with(&a.thrift.to_string(), &no_cert, false, false)
            .and_then(|mut c| c.get_table_names())
            .is_err()
    );
    let anonymous = PeerAccess { token: None, tls: Some(no_cert) };
    let refused = anonymous.request(&a.http.to_string(), "POST", "/admin/flush?table=t", Duration::from_secs(5));
    assert!(refused.as_ref().is_err_and(|e| e.contains("401")), "{refused:?}");
    let application = PeerAccess { token: None, tls: Some(trusted.clone()) };
    let refused = application.request(&a.http.to_string(), "POST", "/admin/flush?table=t", Duration::from_secs(5));
    assert!(refused.as_ref().is_err_and(|e| e.contains("401")), "an application's certificate: {refused:?}");
    assert!(access.request(&a.http.to_string(), "POST", "/admin/flush?table=t", Duration::from_secs(30)).is_ok());

    // a dies; the master, which has no token, recovers a's WAL and assigns
    // its region to b with its certificate.
    a.kill();
    wait_for("the master reopens t's region on b", Duration::from_secs(60), || open_regions(&access, &b) == 1);
    assert_eq!(rows_read(b.thrift, &trusted), ROWS, "every acknowledged row, on b");
}
