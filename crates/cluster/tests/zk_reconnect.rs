//! A call whose connection to ZooKeeper drops is repeated on the same
//! session once the client has reconnected, instead of failing: a loaded
//! machine (a CI run, a GC pause of ZooKeeper) can delay answers past the
//! client's connection timeout (2/5 of the session timeout) while the
//! session itself lives on. Against a real ZooKeeper server, through a
//! proxy that holds every byte for a while, as a stalled network would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cluster::local_zk::LocalZooKeeper;
use cluster::zk::{Zk, ZkUrl};

/// The client gives up on a connection after 2/5 of this: 1.6 s.
const SESSION: Duration = Duration::from_secs(4);

/// Longer than the connection timeout, shorter than the session.
const STALL: Duration = Duration::from_millis(2500);

/// A TCP proxy to `upstream` that holds the bytes of every connection
/// while `stalled` is set.
fn stalling_proxy(upstream: SocketAddr, stalled: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(upstream) else { continue };
            for (mut from, mut to) in
                [(client.try_clone().expect("clone"), server.try_clone().expect("clone")), (server, client)]
            {
                let stalled = stalled.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 << 10];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        while stalled.load(Ordering::Acquire) {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    addr
}

#[test]
fn calls_survive_a_dropped_connection_on_a_living_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zk = LocalZooKeeper::start(dir.path()).expect("ZooKeeper starts (apt-get install zookeeper)");
    let stalled = Arc::new(AtomicBool::new(false));
    let proxy = stalling_proxy(zk.addr(), stalled.clone());
    let url: ZkUrl = format!("zk://{proxy}/accordion").parse().expect("url");
    let client = Arc::new(Zk::connect(&url, SESSION).expect("connect through the proxy"));
    client.create_persistent("config", b"v1").expect("create");
    let session = client.session_id();

    // Each call is sent while the proxy holds every byte: the client hears
    // nothing for longer than its connection timeout, drops the
    // connection, and reconnects when the proxy lets bytes through again.
    for call in ["read", "create an ephemeral node", "write", "list"] {
        stalled.store(true, Ordering::Release);
        let releaser = {
            let stalled = stalled.clone();
            std::thread::spawn(move || {
                std::thread::sleep(STALL);
                stalled.store(false, Ordering::Release);
            })
        };
        let started = Instant::now();
        let outcome = match call {
            "read" => client.get("config").map(|data| assert_eq!(data.as_deref(), Some(&b"v1"[..]))),
            "create an ephemeral node" => client.create_ephemeral("member", b"me"),
            "write" => client.set("config", b"v2"),
            "list" => client.children("").map(|names| assert!(names.contains(&"member".to_string()), "{names:?}")),
            _ => unreachable!(),
        };
        releaser.join().expect("releaser");
        outcome.unwrap_or_else(|e| panic!("{call} across a dropped connection: {e}"));
        assert!(started.elapsed() >= STALL, "{call}: answered while every byte was held");
        assert!(!client.has_ended(), "{call}: the session ended");
    }
    assert_eq!(client.session_id(), session, "the calls ran on the session they started on");
    assert_eq!(client.get("config").expect("read").as_deref(), Some(&b"v2"[..]));

    // The ephemeral node is this session's: another session sees it, and
    // it goes when this session closes.
    let other = Zk::connect(&zk.url("/accordion").parse().expect("url"), SESSION).expect("connect");
    assert_eq!(other.get("member").expect("read").as_deref(), Some(&b"me"[..]));
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(10);
    while other.get("member").expect("read").is_some() {
        assert!(Instant::now() < deadline, "the ephemeral node outlived its session");
        std::thread::sleep(Duration::from_millis(50));
    }
}
