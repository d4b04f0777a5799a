//! A cluster with a secret keeps its ZooKeeper nodes to itself: every node
//! its sessions create is readable and writable only by sessions that
//! authenticated with the same secret (digest scheme); a client without
//! it, or with another, can neither read, change, delete nor add to them.
//! Against a real ZooKeeper server (Debian's package).

use std::time::Duration;

use cluster::local_zk::LocalZooKeeper;
use cluster::membership::{self, ServerInfo};
use cluster::zk::{Secret, Zk, ZkUrl};

const SESSION: Duration = Duration::from_secs(4);

#[test]
fn a_client_without_the_cluster_secret_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    let plain: ZkUrl = zk.url("/accordion").parse().expect("url");
    let url = plain.clone().with_secret(Secret::new("the-cluster-secret-0123"));
    let member = Zk::connect(&url, SESSION).expect("connect with the secret");
    member.create_persistent("config", b"{\"root\":\"file:///r\"}").expect("create config");
    membership::register(&member, &ServerInfo::starting("host-a,1,2".into(), 2)).expect("register");

    // The holder of the secret, in another session, reads and writes.
    let peer = Zk::connect(&url, SESSION).expect("connect with the secret");
    assert!(peer.get("config").expect("read config").is_some());
    peer.set("config", b"{\"root\":\"file:///r\"}").expect("write config");

    // Without the secret, or with another one: nothing.
    let other = plain.clone().with_secret(Secret::new("not-the-cluster-secret"));
    for (who, url) in [("no secret", plain.clone()), ("another secret", other)] {
        // It gets a session (the root exists; ZooKeeper's own root is open),
        // and then every call on the cluster's nodes fails.
        let outsider = Zk::connect(&url, SESSION).unwrap_or_else(|e| panic!("{who}: connect: {e}"));
        assert!(outsider.get("config").is_err(), "{who}: read the cluster's config");
        assert!(outsider.set("config", b"{}").is_err(), "{who}: changed the cluster's config");
        assert!(outsider.delete("rs/host-a,1,2").is_err(), "{who}: deleted a server's membership");
        assert!(outsider.create_persistent("intruder", b"x").is_err(), "{who}: added a node under the root");
        assert!(outsider.children(membership::SERVERS).is_err(), "{who}: listed the servers");
    }
    assert!(peer.get("config").expect("read").is_some_and(|d| d.starts_with(b"{\"root\"")), "config unchanged");
    assert_eq!(membership::live_servers(&peer).expect("servers").len(), 1, "membership unchanged");
}
