//! A region server's reports lost on the way to the master, and the
//! master's answers lost on the way back, with real server processes, a
//! real ZooKeeper and the master (in this process) behind a proxy that
//! loses them on cue. The master must still reach the right view: a
//! region its creator holds while its reports are lost is never opened
//! elsewhere (the server counts as unread once its reports stop), and
//! once reports flow again the master's catalog puts it on its creator.
//! A lost answer makes the server send a delta on a base the master moved
//! past; the master asks for a whole report and gets the view right.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cluster::local_zk::LocalZooKeeper;
use cluster::master::{Master, MasterConfig};
use common::ServerProcess;
use server::thrift::client::{THbaseSyncClient, connect};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation};

const SESSION_MS: u64 = 4_000;

/// What the proxy does to the reports of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loss {
    None,
    /// The request never reaches the master.
    Requests,
    /// The master applies it; its answer never reaches the server.
    Answers,
}

/// A proxy in front of the master's HTTP port that loses the reports of
/// the server named `victim` as `loss` says, and counts what it lost.
struct LossyProxy {
    addr: SocketAddr,
    loss: Arc<Mutex<(String, Loss)>>,
    lost: Arc<AtomicU64>,
}

impl LossyProxy {
    fn start(master: Arc<OnceLock<SocketAddr>>) -> LossyProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let loss = Arc::new(Mutex::new((String::new(), Loss::None)));
        let lost = Arc::new(AtomicU64::new(0));
        let (rule, count) = (loss.clone(), lost.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (rule, count, master) = (rule.clone(), count.clone(), master.clone());
                std::thread::spawn(move || relay(client, &rule, &count, &master));
            }
        });
        LossyProxy { addr, loss, lost }
    }

    fn lose(&self, server: &str, loss: Loss) {
        *self.loss.lock().expect("loss") = (server.to_string(), loss);
    }
}

/// One request: read whole, maybe lost, else forwarded and its answer
/// (read whole) maybe lost, else passed back.
fn relay(mut client: TcpStream, rule: &Mutex<(String, Loss)>, lost: &AtomicU64, master: &OnceLock<SocketAddr>) {
    let Some(request) = read_message(&mut client) else { return };
    let text = String::from_utf8_lossy(&request);
    let (victim, loss) = rule.lock().expect("loss").clone();
    let is_victims_report =
        text.starts_with("POST /report") && !victim.is_empty() && text.contains(&format!("\"server\":\"{victim}\""));
    if is_victims_report && loss == Loss::Requests {
        lost.fetch_add(1, Ordering::Relaxed);
        return; // dropped: the connection closes without an answer
    }
    let Some(master) = master.get() else { return };
    let Ok(mut upstream) = TcpStream::connect(master) else { return };
    // One request a connection: the master closes it after its answer
    // (and says so to the server, which then opens a new one).
    let Some(end) = request.windows(2).position(|w| w == b"\r\n") else { return };
    let mut request = request;
    request.splice(end + 2..end + 2, b"Connection: close\r\n".iter().copied());
    if upstream.write_all(&request).is_err() {
        return;
    }
    let mut answer = Vec::new();
    if upstream.read_to_end(&mut answer).is_err() {
        return;
    }
    if is_victims_report && loss == Loss::Answers {
        lost.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let _ = client.write_all(&answer);
}

/// An HTTP request's head and its Content-Length body.
fn read_message(s: &mut TcpStream) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    s.read_exact(&mut body).ok()?;
    buf.extend_from_slice(&body);
    Some(buf)
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server_doc(server: &ServerProcess) -> serde_json::Value {
    let mut s = TcpStream::connect(server.http).expect("connect");
    write!(s, "GET /status HTTP/1.0\r\nHost: x\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    serde_json::from_str(out.split_once("\r\n\r\n").map_or("", |(_, b)| b)).unwrap_or_default()
}

/// The member name and the OPEN regions of `table` on `server`.
fn open_regions(server: &ServerProcess, table: &str) -> Vec<String> {
    let doc = server_doc(server);
    let tables = doc["tables"].as_array().cloned().unwrap_or_default();
    tables
        .iter()
        .filter(|t| t["name"] == table)
        .flat_map(|t| t["regions"].as_array().cloned().unwrap_or_default())
        .filter(|r| r["state"] == "OPEN")
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect()
}

fn member_name(server: &ServerProcess) -> String {
    server_doc(server)["server"]["member"].as_str().expect("a member name").to_string()
}

/// Where the master's catalog puts `table`'s regions: region → (server, state).
fn catalog_of(master: &Master, table: &str) -> BTreeMap<String, (String, String)> {
    let view = master.view();
    let entries = view.catalog.read();
    entries
        .iter()
        .filter(|(_, e)| e.table == table)
        .map(|(id, e)| (id.clone(), (e.server.clone().unwrap_or_default(), e.state.name().to_string())))
        .collect()
}

fn create_and_write(server: &ServerProcess, table: &str) {
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let f = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(1), ..Default::default() };
    c.create_table(table.as_bytes().to_vec(), vec![f]).expect("create");
    let batch: Vec<BatchMutation> = (0..20)
        .map(|i| BatchMutation {
            row: Some(format!("row{i:03}").into_bytes()),
            mutations: Some(vec![Mutation {
                is_delete: Some(false),
                column: Some(b"f:q".to_vec()),
                value: Some(b"v".to_vec()),
                write_to_w_a_l: Some(true),
            }]),
        })
        .collect();
    c.mutate_rows(table.as_bytes().to_vec(), batch, BTreeMap::new()).expect("write");
}

fn rows_through(server: &ServerProcess, table: &str) -> usize {
    let mut c = connect(&server.thrift.to_string(), false, false).expect("connect");
    let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("row{i:03}").into_bytes()).collect();
    c.get_rows(table.as_bytes().to_vec(), keys, BTreeMap::new()).map(|r| r.len()).unwrap_or(0)
}

#[test]
fn lost_reports_and_lost_answers_leave_the_master_with_the_right_view() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(&dir.path().join("zk")).expect("ZooKeeper starts");
    let url = zk.url("/accordion");
    let root = format!("file://{}", dir.path().join("root").display());
    let target = Arc::new(OnceLock::new());
    let proxy = LossyProxy::start(target.clone());
    let master = Master::start(MasterConfig {
        cluster: url.parse().expect("url"),
        http_addr: "127.0.0.1:0".parse().expect("addr"),
        session_timeout: Duration::from_millis(SESSION_MS),
        balancer_period: None,
        // The cluster reaches the master through the proxy.
        advertised_http: Some(proxy.addr),
        admit: None,
        root: Some(root.clone()),
    })
    .expect("master");
    target.set(master.page_addr()).expect("set once");
    let x = ServerProcess::start_in_cluster_at_root(&root, &url, SESSION_MS);
    let y = ServerProcess::start_in_cluster_at_root(&root, &url, SESSION_MS);
    let x_name = member_name(&x);
    wait_for("the master hears from both servers", Duration::from_secs(30), || {
        let v = master.view();
        v.servers.len() == 2 && v.reports.applied >= 2
    });

    // 1. x's reports are lost while it creates a table (its region opens
    // on x) and for longer than a report may be late: y learns the table
    // and reports its region as known, unheld; the master must not open it
    // on y.
    proxy.lose(&x_name, Loss::Requests);
    create_and_write(&x, "lost");
    let region = open_regions(&x, "lost").first().cloned().expect("lost's region, open on x");
    let window = Instant::now();
    while window.elapsed() < cluster::master::REPORT_STALE + Duration::from_secs(4) {
        assert!(!open_regions(&y, "lost").contains(&region), "the master opened x's region on y as well");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(catalog_of(&master, "lost").get(&region).is_none_or(|(s, _)| *s != member_name(&y)));
    let lost_requests = proxy.lost.load(Ordering::Relaxed);
    assert!(lost_requests >= 3, "x's reports and heartbeats were lost: {lost_requests}");
    proxy.lose(&x_name, Loss::None);
    wait_for("the master's catalog puts lost's region on x", Duration::from_secs(20), || {
        catalog_of(&master, "lost").get(&region) == Some(&(x_name.clone(), "OPEN".to_string()))
    });
    assert!(!open_regions(&y, "lost").contains(&region), "one holder only");
    assert_eq!(rows_through(&y, "lost"), 20, "y routes to x by the master's catalog");

    // 2. The master applies x's next reports but x never hears so: x sends
    // its next delta on a base the master moved past; the master refuses
    // it, asks for a whole report, and ends with the right view.
    let out_of_step = master.view().reports.out_of_step;
    proxy.lose(&x_name, Loss::Answers);
    create_and_write(&x, "dup");
    let dup_region = open_regions(&x, "dup").first().cloned().expect("dup's region, open on x");
    wait_for("an answer is lost", Duration::from_secs(20), || proxy.lost.load(Ordering::Relaxed) > lost_requests);
    proxy.lose(&x_name, Loss::None);
    wait_for("the master's catalog puts dup's region on x", Duration::from_secs(20), || {
        catalog_of(&master, "dup").get(&dup_region) == Some(&(x_name.clone(), "OPEN".to_string()))
    });
    wait_for("x's delta on a stale base is refused and a whole report follows", Duration::from_secs(20), || {
        master.view().reports.out_of_step > out_of_step
    });
    assert!(!open_regions(&y, "dup").contains(&dup_region), "one holder only");
    assert_eq!(rows_through(&y, "dup"), 20);
    assert_eq!(catalog_of(&master, "lost").get(&region), Some(&(x_name.clone(), "OPEN".to_string())));
    drop(x);
    drop(y);
    master.shutdown().expect("master stops");
}
