//! Membership, master election and the membership lease, against a real
//! ZooKeeper server (Debian's package, started by `LocalZooKeeper`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster::election::{self, Candidate, MasterInfo};
use cluster::lease::Lease;
use cluster::local_zk::LocalZooKeeper;
use cluster::master::{Master, MasterConfig, Role};
use cluster::membership::{self, ServerInfo};
use cluster::zk::{Zk, ZkUrl};

const SESSION: Duration = Duration::from_secs(2);

fn zookeeper() -> (tempfile::TempDir, LocalZooKeeper) {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    (dir, zk)
}

fn url(zk: &LocalZooKeeper) -> ZkUrl {
    zk.url("/accordion").parse().expect("url")
}

fn master(url: &ZkUrl) -> Master {
    master_on(url, None)
}

/// A master keeping its catalog under the shared root `root` (`None`: the
/// cluster's recorded one).
fn master_on(url: &ZkUrl, root: Option<&std::path::Path>) -> Master {
    Master::start(MasterConfig {
        cluster: url.clone(),
        http_addr: "127.0.0.1:0".parse().expect("addr"),
        session_timeout: SESSION,
        balancer_period: None,
        advertised_http: None,
        admit: None,
        root: root.map(|r| format!("file://{}", r.display())),
    })
    .expect("master starts")
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

#[test]
fn one_master_is_active_and_a_standby_takes_over_when_it_goes() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let first = master(&url);
    wait_for("the first master is active", Duration::from_secs(10), || first.view().role == Role::Active);
    let second = master(&url);
    let third = master(&url);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(second.view().role, Role::Standby);
    assert_eq!(third.view().role, Role::Standby);
    assert_eq!(second.view().active_master.map(|m| m.name), Some(first.view().name.clone()));

    // The active master's page says so.
    let status = http_get(first.http_addr(), "/status");
    assert!(status.contains("\"role\": \"active\""), "{status}");

    let first_name = first.view().name;
    first.shutdown().expect("clean stop");
    let took = wait_for("the next master takes over", Duration::from_secs(5), || second.view().role == Role::Active);
    assert_eq!(third.view().role, Role::Standby, "only the next in line takes over");
    let observer = Zk::connect(&url, SESSION).expect("connect");
    let active = election::active_master(&observer).expect("read").expect("an active master");
    assert_eq!(active.name, second.view().name);
    assert_ne!(active.name, first_name);
    eprintln!("standby took over {took:?} after the active master closed its session");
}

#[test]
fn region_servers_join_and_leave_and_the_active_master_sees_it() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let m = master(&url);
    wait_for("active", Duration::from_secs(10), || m.view().role == Role::Active);

    let a = Zk::connect(&url, SESSION).expect("connect");
    let b = Zk::connect(&url, SESSION).expect("connect");
    let info_a = ServerInfo::new("127.0.0.1", 9090, "127.0.0.1:16030".into(), 1);
    let info_b = ServerInfo::new("127.0.0.1", 9091, "127.0.0.1:16031".into(), 2);
    membership::register(&a, &info_a).expect("register a");
    membership::register(&b, &info_b).expect("register b");
    assert!(membership::register(&b, &info_b).is_err(), "a server name is registered once");
    wait_for("the master sees both", Duration::from_secs(5), || m.view().servers.len() == 2);
    assert_eq!(m.view().servers, vec![info_a.clone(), info_b.clone()]);

    drop(a);
    wait_for("the master sees a go", Duration::from_secs(5), || m.view().servers == vec![info_b.clone()]);
    let events: Vec<String> = m.view().events.into_iter().map(|e| e.what).collect();
    assert!(events.iter().any(|e| e.contains(&info_a.name) && e.contains("left")), "{events:?}");
}

/// A server registers before it listens and publishes its addresses after:
/// the master logs it joining once and serving once, never leaving while
/// its session lives (it compared whole records before, and logged a
/// starting server as joined, left and joined again).
#[test]
fn a_server_that_publishes_its_addresses_joins_once() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let m = master(&url);
    wait_for("active", Duration::from_secs(10), || m.view().role == Role::Active);
    let a = Zk::connect(&url, SESSION).expect("connect");
    let mut info = ServerInfo::starting("127.0.0.1,4242,7".into(), 7);
    membership::register(&a, &info).expect("register");
    wait_for("the master sees a starting", Duration::from_secs(5), || m.view().servers.len() == 1);
    (info.thrift, info.http) = ("127.0.0.1:9090".into(), "127.0.0.1:16030".into());
    membership::publish(&a, &info).expect("publish");
    wait_for("the master sees it serve", Duration::from_secs(5), || m.view().servers == vec![info.clone()]);
    let events: Vec<String> =
        m.view().events.into_iter().map(|e| e.what).filter(|e| e.contains("127.0.0.1,4242,7")).collect();
    assert_eq!(
        events,
        [
            "region server 127.0.0.1,4242,7 joined (starting)",
            "region server 127.0.0.1,4242,7 serves (thrift 127.0.0.1:9090, http 127.0.0.1:16030)"
        ],
        "{events:?}"
    );
}

/// A candidate that joins after the active one waits; the election order
/// is the order of joining.
#[test]
fn election_follows_the_order_of_joining() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let sessions: Vec<Arc<Zk>> = (0..3).map(|_| Arc::new(Zk::connect(&url, SESSION).expect("connect"))).collect();
    let candidates: Vec<Candidate> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Candidate::join(s.clone(), &MasterInfo { name: format!("m{i}"), http: String::new() }).expect("join")
        })
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    assert!(candidates[0].wait_until_active(&stop, || {}).expect("wait"));
    assert_eq!(election::active_master(&sessions[0]).expect("read").map(|m| m.name), Some("m0".into()));
    drop(candidates);
    drop(sessions);
}

/// The lease runs out within the session timeout once ZooKeeper cannot be
/// reached, so a server that cannot prove its membership stops serving
/// before ZooKeeper could expire it and the master move its regions.
#[test]
fn the_lease_runs_out_when_zookeeper_cannot_be_reached() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let session = Arc::new(Zk::connect(&url, SESSION).expect("connect"));
    let timeout = session.session_timeout();
    let lease = Lease::keep(session.clone());
    assert!(lease.valid());
    std::thread::sleep(timeout);
    assert!(lease.valid(), "renewed while ZooKeeper answers");
    drop(zk);
    let lost = wait_for("the lease runs out", timeout, || !lease.valid());
    assert!(lost <= timeout, "{lost:?}");
    eprintln!("lease ran out {lost:?} after ZooKeeper went (session timeout {timeout:?})");
}

/// A member's lease proves its own membership node, not only its session:
/// once the node is gone (an operator or a master removed it) the lease
/// runs out although the session lives on.
#[test]
fn a_member_lease_runs_out_when_its_node_is_gone() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let session = Arc::new(Zk::connect(&url, SESSION).expect("connect"));
    let info = ServerInfo::starting("host-a,1,2".into(), 2);
    membership::register(&session, &info).expect("register");
    let timeout = session.session_timeout();
    let lease = Lease::keep_member(session.clone(), format!("{}/{}", membership::SERVERS, info.name));
    assert!(lease.valid());
    std::thread::sleep(timeout);
    assert!(lease.valid(), "renewed while the node is there");
    let other = Zk::connect(&url, SESSION).expect("connect");
    other.delete(&format!("{}/{}", membership::SERVERS, info.name)).expect("delete the node");
    let lost = wait_for("the lease runs out", timeout, || !lease.valid());
    assert!(!session.has_ended(), "the session itself lives on");
    eprintln!("lease ran out {lost:?} after the node went (session timeout {timeout:?})");
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

#[test]
fn the_first_server_records_the_clusters_root_and_the_others_agree_with_it() {
    use cluster::cluster_config::{self, Proposed};
    let (_dir, zk) = zookeeper();
    let session = Zk::connect(&url(&zk), SESSION).expect("connect");
    assert_eq!(cluster_config::read(&session).expect("read"), None);
    let first = cluster_config::agree(&session, "s1", &Proposed::Given("file:///shared/root".into())).expect("first");
    assert_eq!((first.root.as_str(), first.recorded_by.as_str()), ("file:///shared/root", "s1"));
    // The same root, written with a trailing slash: agreed.
    let same = cluster_config::agree(&session, "s2", &Proposed::Given("file:///shared/root/".into())).expect("same");
    assert_eq!(same, first);
    // Only the default: the cluster's root is taken.
    let taken = cluster_config::agree(&session, "s3", &Proposed::Default("file:///cwd/data".into())).expect("default");
    assert_eq!(taken.root, "file:///shared/root");
    // Another root, given: refused, naming both.
    let e = cluster_config::agree(&session, "s4", &Proposed::Given("hdfs://nn:9000/other".into()))
        .expect_err("a second root is refused")
        .to_string();
    assert!(e.contains("hdfs://nn:9000/other") && e.contains("file:///shared/root"), "{e}");
    // It is durable: a new session reads what the first recorded.
    drop(session);
    let again = Zk::connect(&url(&zk), SESSION).expect("connect");
    assert_eq!(cluster_config::read(&again).expect("read"), Some(first));
}

/// A cluster whose earlier master kept its catalog in ZooKeeper (a znode per
/// region): the first master with the catalog log moves the entries into
/// the log on the shared root and deletes the znodes.
#[test]
fn a_catalog_kept_in_zookeeper_by_an_earlier_master_moves_to_the_log() {
    let (_dir, zk) = zookeeper();
    let url = url(&zk);
    let client = Zk::connect(&url, SESSION).expect("connect");
    client.ensure(cluster::catalog::LEGACY_REGIONS).expect("regions");
    let entry = r#"{"table":"t","server":"h,1,2","state":"OPEN","at_ms":5}"#;
    client.put("regions/00000000000000a1", entry.as_bytes()).expect("put");
    client.put("regions/00000000000000a2", entry.replace("OPEN", "CLOSED").as_bytes()).expect("put");
    client.put("regions/00000000000000a3", b"not json").expect("put");
    let root = tempfile::tempdir().expect("root");
    let master = master_on(&url, Some(root.path()));
    let start = Instant::now();
    while master.view().catalog.len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the legacy catalog was not taken: {:?}",
            master.view().events
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let view = master.view();
    assert_eq!(view.catalog.get("00000000000000a2").map(|e| e.state.name()), Some("CLOSED"));
    assert_eq!(view.catalog.len(), 2, "the malformed znode is left out");
    assert_eq!(client.get("regions").expect("read"), None, "ZooKeeper keeps no region");
    assert!(root.path().join("MasterData").join("catalog").exists());
    master.shutdown().expect("stop");
}

/// The cluster's ZooKeeper lost its data (an operator reset it): masters'
/// election sequences start again at 0. A master of the new ZooKeeper still
/// takes over the catalog log that masters of the old one wrote, later in
/// the sequence, on the same shared root.
#[test]
fn a_master_of_a_reset_zookeeper_takes_the_catalog_over() {
    let (_dir, zk) = zookeeper();
    let root = tempfile::tempdir().expect("root");
    let start = |path: &str| master_on(&zk.url(path).parse().expect("url"), Some(root.path()));
    let loaded = |m: &Master| {
        let t = Instant::now();
        while !m.view().catalog_loaded {
            assert!(t.elapsed() < Duration::from_secs(20), "the catalog was not read: {:?}", m.view().events);
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Two masters of the old ZooKeeper, one after the other (sequences 0, 1).
    for _ in 0..2 {
        let m = start("/old");
        loaded(&m);
        m.shutdown().expect("stop");
    }
    // The new ZooKeeper (another root znode here): its first master is 0.
    std::thread::sleep(Duration::from_millis(5));
    let m = start("/new");
    loaded(&m);
    assert!(!m.view().events.iter().any(|e| e.what.contains("cannot read the catalog")), "{:?}", m.view().events);
    m.shutdown().expect("stop");
}
