//! HBase's client znodes (`cluster::client_znodes`) against a real
//! ZooKeeper server: the first member to advertise is named in `master` and
//! `meta-region-server`, anyone may read them and `hbaseid` (also a client
//! without the cluster's secret), no one else may change them, and when the
//! named member's session ends another member names itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster::client_znodes::{ClientZnodes, advertise};
use cluster::local_zk::LocalZooKeeper;
use cluster::zk::{Secret, Zk, ZkUrl};

const SESSION: Duration = Duration::from_secs(4);

fn znodes(who: &str) -> ClientZnodes {
    ClientZnodes {
        hbaseid: b"PBUF-cluster".to_vec(),
        master: format!("master {who}").into_bytes(),
        meta_region_server: format!("meta {who}").into_bytes(),
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_live_member_is_named_readable_by_anyone_and_another_takes_over_when_it_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    let plain: ZkUrl = zk.url("/accordion").parse().expect("url");
    let url = plain.clone().with_secret(Secret::new("the-cluster-secret-0123"));
    let a = Arc::new(Zk::connect(&url, SESSION).expect("member a"));
    let b = Arc::new(Zk::connect(&url, SESSION).expect("member b"));
    let outsider = Zk::connect(&plain, SESSION).expect("a client without the secret");
    let read = |rel: &str| outsider.get(rel).ok().flatten();

    advertise(&a, znodes("a"));
    wait_for("a is named", || read("hbase/master").as_deref() == Some(&b"master a"[..]));
    advertise(&b, znodes("b"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(read("hbase/master").as_deref(), Some(&b"master a"[..]), "the first member stays named");
    assert_eq!(read("hbase/meta-region-server").as_deref(), Some(&b"meta a"[..]));
    assert_eq!(read("hbase/hbaseid").as_deref(), Some(&b"PBUF-cluster"[..]));
    let mut listed = outsider.children("hbase").expect("a client lists the parent (for meta replicas)");
    listed.sort();
    assert_eq!(listed, ["hbaseid", "master", "meta-region-server"]);
    // Readable, not writable, by a client without the secret.
    assert!(outsider.set("hbase/master", b"rogue").is_err(), "a client changed the named master");
    assert!(outsider.delete("hbase/meta-region-server").is_err(), "a client deleted the meta location");

    // The named member goes (its session closes): the other names itself.
    drop(a);
    wait_for("b is named", || {
        read("hbase/master").as_deref() == Some(&b"master b"[..])
            && read("hbase/meta-region-server").as_deref() == Some(&b"meta b"[..])
    });
}
