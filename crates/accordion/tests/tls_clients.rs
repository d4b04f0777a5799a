//! `accordion server --tls-cert --tls-key --tls-client-ca` against real
//! clients: a Python thriftpy2 client over TLS (HBase's IDL, as shipped
//! with happybase) with a client certificate is served — it creates a
//! table, writes and reads back — and without one is refused; `curl` on the
//! HTTP port, which speaks TLS too, reads `/health` without a client
//! certificate, and its admin call is refused without the admin token or an
//! admin CA's certificate (an application's is not enough) and done with
//! either; plain HTTP is not served. `accordion shell --tls-ca --tls-cert
//! --tls-key` with an operator's certificate lists, flushes (an admin call
//! its certificate authenticates) and reads the status over TLS; without a
//! certificate it cannot connect.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ServerProcess, test_ca as ca, test_leaf as leaf};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("UTF-8").to_string()
}

fn python() -> PathBuf {
    let p = std::env::var_os("ACCORDION_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"));
    let ok = Command::new(&p).args(["-c", "import happybase"]).status().is_ok_and(|s| s.success());
    assert!(ok, "{} cannot import happybase: run .ci/run or set ACCORDION_PYTHON", p.display());
    p
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn python_over_tls_with_and_without_a_client_certificate_and_curl_with_the_admin_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let (server_ca, client_ca, admin_ca) = (ca("server CA"), ca("client CA"), ca("admin CA"));
    let (admin_cert, admin_key) = leaf(&admin_ca, &["an operator"]);
    let (admin_cert, admin_key) = (write(files, "admin.pem", &admin_cert), write(files, "admin.key", &admin_key));
    let (cert, key) = leaf(&server_ca, &["localhost", "127.0.0.1"]);
    let (client_cert, client_key) = leaf(&client_ca, &["a client"]);
    let ca_file = write(files, "ca.pem", &server_ca.0.pem());
    let (client_cert, client_key) = (write(files, "client.pem", &client_cert), write(files, "client.key", &client_key));
    let token = write(files, "admin.token", "curl-test-admin-token-0123\n");
    let flags = [
        "--tls-cert".to_string(),
        write(files, "server.pem", &cert),
        "--tls-key".into(),
        write(files, "server.key", &key),
        "--tls-client-ca".into(),
        write(files, "clients.pem", &client_ca.0.pem()),
        "--tls-admin-ca".into(),
        write(files, "admins.pem", &admin_ca.0.pem()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let data = files.join("data");
    let server = ServerProcess::start_with_flags(&data, &flags, &[&format!("admin_token_file={token}")]);
    let port = server.thrift.port().to_string();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/client.py");

    let served =
        run(Command::new(python()).arg(&client).args(["127.0.0.1", &port, &ca_file, &client_cert, &client_key]));
    assert!(served.starts_with("served py"), "{served}");
    let refused = run(Command::new(python()).arg(&client).args(["127.0.0.1", &port, &ca_file]));
    assert!(refused.starts_with("refused"), "a client without a certificate was served: {refused}");

    let base = format!("https://127.0.0.1:{}", server.http.port());
    let curl = |args: &[&str]| run(Command::new("curl").args(["-sS", "--cacert", &ca_file]).args(args));
    let health = curl(&[&format!("{base}/health")]);
    assert!(health.contains("\"status\":\"ok\""), "{health}");
    let flush = format!("{base}/admin/flush?table=py");
    let without = curl(&["-XPOST", &flush]);
    assert!(without.contains("Authorization: Bearer"), "{without}");
    let bearer = "Authorization: Bearer curl-test-admin-token-0123";
    let with = curl(&["-XPOST", "-H", bearer, &flush]);
    assert!(with.contains("flushed py"), "{with}");
    let application = curl(&["-XPOST", "--cert", &client_cert, "--key", &client_key, &flush]);
    assert!(
        application.contains("Authorization: Bearer"),
        "an application's certificate made an admin call: {application}"
    );
    let certified = curl(&["-XPOST", "--cert", &admin_cert, "--key", &admin_key, &flush]);
    assert!(certified.contains("flushed py"), "an admin CA's certificate authenticates an admin call: {certified}");
    let plain = run(Command::new("curl").args(["-sS", &format!("http://127.0.0.1:{}/health", server.http.port())]));
    assert!(!plain.contains("\"status\":\"ok\""), "plain HTTP served on the TLS port: {plain}");

    let thrift = format!("127.0.0.1:{port}");
    let shell = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["shell", "--server", &thrift, "--tls-ca", &ca_file])
            .args(extra)
            .args(["-e", "list; flush 'py'; status"])
            .output()
            .expect("run the shell");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, said) = shell(&["--tls-cert", &admin_cert, "--tls-key", &admin_key]);
    assert!(ok && said.contains("py") && said.contains("1 active server"), "{said}");
    let (ok, said) = shell(&[]);
    assert!(!ok && said.contains("CertificateRequired"), "a shell without a certificate: {said}");
}
