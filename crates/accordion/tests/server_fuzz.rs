//! Hostile and careless clients against a real `accordion server` process:
//! valid Thrift requests (captured from the generated client) are mutated —
//! bit flips, truncations, inserted bytes, extreme length fields — and sent
//! over all four wires (binary/compact × buffered/framed), each stream on
//! a connection of its own that then goes away; a quarter of the streams
//! are valid scanner opens whose connection leaves without closing them.
//!
//! The server must stay up, keep serving a well-behaved client, keep its
//! acknowledged data intact, close the scanners of connections that ended,
//! and keep its resident memory bounded.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ServerProcess;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use server::thrift::client::{THbaseSyncClient, connect};
use server::thrift::hbase_thrift::{ColumnDescriptor, HbaseSyncClient, Mutation, TScan};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol, TInputProtocol,
    TOutputProtocol,
};
use thrift::transport::{TBufferedWriteTransport, TFramedWriteTransport};

/// A `Write` into a shared buffer: what the client sends is kept.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Wire {
    BinaryBuffered,
    BinaryFramed,
    CompactBuffered,
    CompactFramed,
}

const WIRES: [Wire; 4] = [Wire::BinaryBuffered, Wire::BinaryFramed, Wire::CompactBuffered, Wire::CompactFramed];

/// The bytes of one call made with the generated client on `wire` (the
/// client then fails reading a reply from an empty input, which is ignored).
fn request(wire: Wire, call: impl FnOnce(&mut dyn THbaseSyncClient)) -> Vec<u8> {
    let capture = Capture::default();
    let input: Box<dyn TInputProtocol> = match wire {
        Wire::BinaryBuffered | Wire::BinaryFramed => Box::new(TBinaryInputProtocol::new(std::io::empty(), true)),
        Wire::CompactBuffered | Wire::CompactFramed => Box::new(TCompactInputProtocol::new(std::io::empty())),
    };
    let output: Box<dyn TOutputProtocol> = match wire {
        Wire::BinaryBuffered => {
            Box::new(TBinaryOutputProtocol::new(TBufferedWriteTransport::new(capture.clone()), true))
        }
        Wire::BinaryFramed => Box::new(TBinaryOutputProtocol::new(TFramedWriteTransport::new(capture.clone()), true)),
        Wire::CompactBuffered => Box::new(TCompactOutputProtocol::new(TBufferedWriteTransport::new(capture.clone()))),
        Wire::CompactFramed => Box::new(TCompactOutputProtocol::new(TFramedWriteTransport::new(capture.clone()))),
    };
    let mut client = HbaseSyncClient::new(input, output);
    call(&mut client);
    capture.0.lock().expect("capture").clone()
}

/// One put of `value` to column f:q.
fn put(value: &[u8]) -> Vec<Mutation> {
    vec![Mutation {
        is_delete: Some(false),
        column: Some(b"f:q".to_vec()),
        value: Some(value.to_vec()),
        write_to_w_a_l: Some(true),
    }]
}

fn scan_open(wire: Wire) -> Vec<u8> {
    request(wire, |c| {
        let scan = TScan::new(None, None, None, None, None, b"PrefixFilter('zz')".to_vec(), None, None, None);
        let _ = c.scanner_open_with_scan(b"fz".to_vec(), scan, BTreeMap::new());
    })
}

/// Valid requests of several kinds on `wire`, none of which can touch the
/// well-behaved client's table.
fn base_requests(wire: Wire) -> Vec<Vec<u8>> {
    vec![
        scan_open(wire),
        request(wire, |c| {
            let _ = c.mutate_row(b"fz".to_vec(), b"zzzz-1".to_vec(), put(b"fuzz"), BTreeMap::new());
        }),
        request(wire, |c| {
            let _ = c.get_row(b"fz".to_vec(), b"zzzz-1".to_vec(), BTreeMap::new());
        }),
        request(wire, |c| {
            let _ = c.scanner_get_list(1, 100);
        }),
        request(wire, |c| {
            let _ = c.get_table_names();
        }),
        request(wire, |c| {
            let _ = c.atomic_increment(b"fz".to_vec(), b"zzzz-2".to_vec(), b"f:n".to_vec(), 1);
        }),
    ]
}

/// One mutation of a valid stream.
fn mutate(rng: &mut SmallRng, mut bytes: Vec<u8>) -> Vec<u8> {
    match rng.random_range(0..5) {
        0 => {
            for _ in 0..rng.random_range(1..8) {
                let i = rng.random_range(0..bytes.len());
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
        }
        1 => bytes.truncate(rng.random_range(0..bytes.len())),
        2 => {
            let i = rng.random_range(0..=bytes.len());
            let junk: Vec<u8> = (0..rng.random_range(1..64)).map(|_| rng.random()).collect();
            bytes.splice(i..i, junk);
        }
        3 => {
            // An extreme length or size field.
            if bytes.len() >= 4 {
                let i = rng.random_range(0..bytes.len() - 3);
                let v: u32 = [0x7fff_ffff, 0xffff_ffff, 0x8000_0000, 0x0100_0000][rng.random_range(0..4)];
                bytes[i..i + 4].copy_from_slice(&v.to_be_bytes());
            }
        }
        _ => {
            // Several calls in one stream, the last one cut.
            let extra = bytes.clone();
            bytes.extend_from_slice(&extra[..rng.random_range(0..extra.len())]);
        }
    }
    bytes
}

/// Sends `bytes` on a new connection, half-closes it, reads what comes
/// back for a moment, and goes away.
fn send(addr: SocketAddr, bytes: &[u8]) {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else { return };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut sink = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        match s.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS value")
}

fn status(server: &ServerProcess) -> serde_json::Value {
    let body = ureq::get(&format!("http://{}/status", server.http))
        .call()
        .expect("status")
        .body_mut()
        .read_to_string()
        .expect("body");
    serde_json::from_str(&body).expect("json")
}

#[test]
fn mutated_thrift_streams_on_every_wire_leave_the_server_serving_with_bounded_memory() {
    let mut server = ServerProcess::start(&["max_scanners_per_connection=8", "max_open_scanners=400"]);
    let addr = server.thrift;
    let mut good = connect(&addr.to_string(), false, false).expect("connect");
    let cd =
        |n: &str| ColumnDescriptor { name: Some(n.as_bytes().to_vec()), max_versions: Some(1), ..Default::default() };
    good.create_table(b"t".to_vec(), vec![cd("f:")]).expect("create t");
    good.create_table(b"fz".to_vec(), vec![cd("f:")]).expect("create fz");
    let rows: Vec<(Vec<u8>, Vec<u8>)> =
        (0..200).map(|i| (format!("row-{i:03}").into_bytes(), format!("value-{i}").into_bytes())).collect();
    for (r, v) in &rows {
        good.mutate_row(b"t".to_vec(), r.clone(), put(v), BTreeMap::new()).expect("acknowledged put");
    }
    for i in 0..50 {
        let r = format!("zzzz-{i}").into_bytes();
        good.mutate_row(b"fz".to_vec(), r.clone(), put(b"fz"), BTreeMap::new()).expect("put fz");
    }
    let rss_before = rss_kib(server.child.id());

    let per_wire = 300;
    let threads: Vec<_> = WIRES
        .iter()
        .enumerate()
        .map(|(w, &wire)| {
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(0xacc0_0000 + w as u64);
                let bases = base_requests(wire);
                let open = scan_open(wire);
                for i in 0..per_wire {
                    if i % 4 == 0 {
                        // A careless client: opens scanners (more than its
                        // cap allows) and leaves without closing them.
                        let many: Vec<u8> = std::iter::repeat_n(open.clone(), 12).flatten().collect();
                        send(addr, &many);
                    } else {
                        let base = bases[rng.random_range(0..bases.len())].clone();
                        send(addr, &mutate(&mut rng, base));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("fuzz thread");
    }

    server.assert_alive();
    // The well-behaved client's connection was open throughout.
    for (r, v) in &rows {
        let got = good.get_row(b"t".to_vec(), r.clone(), BTreeMap::new()).expect("get");
        let value = got.first().and_then(|row| row.columns.as_ref()).and_then(|c| c.get(&b"f:q".to_vec()).cloned());
        assert_eq!(value.and_then(|c| c.value).as_deref(), Some(v.as_slice()), "row {}", String::from_utf8_lossy(r));
    }
    good.mutate_row(b"t".to_vec(), b"after".to_vec(), put(b"1"), BTreeMap::new()).expect("writes go on");
    let mut fresh = connect(&addr.to_string(), true, true).expect("a new client connects");
    assert_eq!(fresh.get_table_names().expect("tables").len(), 2);

    // Every fuzz connection ended: its scanners are closed.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = status(&server);
        let open = s["server"]["open_scanners"].as_u64().expect("open_scanners");
        if open == 0 {
            assert!(s["server"]["scanners_closed_on_disconnect"].as_u64() > Some(0), "{s}");
            break;
        }
        assert!(Instant::now() < deadline, "{open} scanners still open after their connections ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let rss_after = rss_kib(server.child.id());
    eprintln!(
        "{} streams: RSS {} MiB before, {} MiB after",
        per_wire * WIRES.len(),
        rss_before / 1024,
        rss_after / 1024
    );
    assert!(rss_after < rss_before + 128 * 1024, "RSS grew from {rss_before} KiB to {rss_after} KiB");
    server.assert_alive();
}
