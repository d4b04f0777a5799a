//! `accordion server` under hostile and broken clients: the real binary is
//! started on free ports with a temporary data directory, and each test
//! abuses one connection while well-behaved clients on other connections
//! go on working.
//!
//! What this file proves, over real sockets:
//!
//! - bytes that are no Thrift (HTTP, random bytes, bad versions, absurd
//!   string lengths) get that connection closed, nothing else;
//! - an oversized frame (announced at 100 MiB, or over the configured
//!   `hbase.regionserver.thrift.framed.max_frame_size_in_mb`) is refused
//!   without the server waiting for or allocating it;
//! - a truncated call is never applied, whether its client goes away or
//!   stays connected, and a stalled connection holds up no one else;
//! - an unknown method gets a `TApplicationException` of kind
//!   UNKNOWN_METHOD on every wire;
//! - unknown, closed and lease-expired scanner ids give IllegalArgument;
//! - a cell over `hbase.server.keyvalue.maxsize` is refused with
//!   IllegalArgument and its row is not partially written;
//! - all four wires (binary and compact, buffered and framed) are served on
//!   one port, several calls per connection.
//!
//! After each abuse the server process must still be running and every
//! write acknowledged before must still be readable.

mod common;

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ServerProcess;
use server::thrift::hbase_thrift::{ColumnDescriptor, HbaseSyncClient, IllegalArgument, Mutation, THbaseSyncClient};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol, TInputProtocol,
    TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType,
};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport};
use thrift::{ApplicationErrorKind, TransportErrorKind};

/// A client's socket timeout: a call that takes longer counts as a hang.
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the server may take to close a connection it must close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

const TABLE: &str = "t";

// ---------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------

/// A transport and protocol pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    BinaryBuffered,
    BinaryFramed,
    CompactBuffered,
    CompactFramed,
}

impl Wire {
    const ALL: [Wire; 4] = [Wire::BinaryBuffered, Wire::BinaryFramed, Wire::CompactBuffered, Wire::CompactFramed];

    fn framed(self) -> bool {
        matches!(self, Wire::BinaryFramed | Wire::CompactFramed)
    }

    fn compact(self) -> bool {
        matches!(self, Wire::CompactBuffered | Wire::CompactFramed)
    }
}

type Client = HbaseSyncClient<Box<dyn TInputProtocol>, Box<dyn TOutputProtocol>>;

/// The generated client over any reader and writer.
fn client_over(wire: Wire, r: impl Read + 'static, w: impl Write + 'static) -> Client {
    let (read, write): (Box<dyn Read>, Box<dyn Write>) = if wire.framed() {
        (Box::new(TFramedReadTransport::new(r)), Box::new(TFramedWriteTransport::new(w)))
    } else {
        (Box::new(TBufferedReadTransport::new(r)), Box::new(TBufferedWriteTransport::new(w)))
    };
    let (i, o): (Box<dyn TInputProtocol>, Box<dyn TOutputProtocol>) = if wire.compact() {
        (Box::new(TCompactInputProtocol::new(read)), Box::new(TCompactOutputProtocol::new(write)))
    } else {
        (Box::new(TBinaryInputProtocol::new(read, true)), Box::new(TBinaryOutputProtocol::new(write, true)))
    };
    HbaseSyncClient::new(i, o)
}

fn raw_connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
    s.set_write_timeout(Some(IO_TIMEOUT)).expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// A generated client on a new connection.
fn connect(addr: SocketAddr, wire: Wire) -> Client {
    let s = raw_connect(addr);
    let r = s.try_clone().expect("clone socket");
    client_over(wire, r, s)
}

/// Collects what a client writes.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u8>>>);

impl Write for Recorder {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("recorder").extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The exact bytes the generated client sends for `call` on `wire`.
fn serialized_call<T: std::fmt::Debug>(wire: Wire, call: impl FnOnce(&mut Client) -> thrift::Result<T>) -> Vec<u8> {
    let rec = Recorder::default();
    let mut c = client_over(wire, io::empty(), rec.clone());
    let r = call(&mut c);
    assert!(r.is_err(), "no reply can come from an empty reader: {r:?}");
    let bytes = rec.0.lock().expect("recorder").clone();
    assert!(!bytes.is_empty());
    bytes
}

// ---------------------------------------------------------------------------
// Calls and checks
// ---------------------------------------------------------------------------

fn attrs() -> BTreeMap<Vec<u8>, Vec<u8>> {
    BTreeMap::new()
}

fn create_table(c: &mut Client, table: &str) {
    let family = ColumnDescriptor { name: Some(b"f:".to_vec()), max_versions: Some(3), ..Default::default() };
    c.create_table(table.into(), vec![family]).unwrap_or_else(|e| panic!("createTable {table}: {e:?}"));
}

fn put_mutation(column: &str, value: &[u8]) -> Mutation {
    Mutation::new(false, column.as_bytes().to_vec(), value.to_vec(), true)
}

fn try_put(c: &mut Client, row: &str, column: &str, value: &[u8]) -> thrift::Result<()> {
    c.mutate_row(TABLE.into(), row.into(), vec![put_mutation(column, value)], attrs())
}

fn put(c: &mut Client, row: &str, column: &str, value: &[u8]) {
    try_put(c, row, column, value).unwrap_or_else(|e| panic!("mutateRow {row}/{column}: {e:?}"));
}

/// The row's columns and values (empty if the row does not exist).
fn get_row(c: &mut Client, row: &str) -> BTreeMap<String, Vec<u8>> {
    let rows = c.get_row(TABLE.into(), row.into(), attrs()).unwrap_or_else(|e| panic!("getRow {row}: {e:?}"));
    assert!(rows.len() <= 1, "getRow {row} returned {} rows", rows.len());
    let mut out = BTreeMap::new();
    for r in rows {
        assert_eq!(r.row.as_deref(), Some(row.as_bytes()));
        for (col, cell) in r.columns.unwrap_or_default() {
            out.insert(String::from_utf8_lossy(&col).into_owned(), cell.value.unwrap_or_default());
        }
    }
    out
}

fn assert_value(c: &mut Client, row: &str, column: &str, expected: &[u8]) {
    let cols = get_row(c, row);
    let got = cols.get(column).unwrap_or_else(|| panic!("{row}/{column} is missing; row has {:?}", cols.keys()));
    assert!(got == expected, "{row}/{column}: got {} bytes, expected {} bytes", got.len(), expected.len());
}

fn assert_no_row(c: &mut Client, row: &str) {
    let cols = get_row(c, row);
    assert!(cols.is_empty(), "row {row} should not exist, has {:?}", cols.keys());
}

/// The message of the IllegalArgument `r` must have failed with.
fn expect_illegal_argument<T: std::fmt::Debug>(r: thrift::Result<T>, what: &str) -> String {
    match r {
        Err(thrift::Error::User(u)) => match u.downcast::<IllegalArgument>() {
            Ok(ia) => ia.message.unwrap_or_default(),
            Err(other) => panic!("{what}: expected IllegalArgument, got {other:?}"),
        },
        other => panic!("{what}: expected IllegalArgument, got {other:?}"),
    }
}

fn is_timeout(e: &thrift::Error) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    matches!(e, thrift::Error::Transport(t) if t.kind == TransportErrorKind::TimedOut)
        || text.contains("timed out")
        || text.contains("temporarily unavailable")
        || text.contains("would block")
}

/// `e` says the server closed or reset the connection (not a timeout, not
/// a reply).
fn assert_connection_lost(e: &thrift::Error, what: &str) {
    assert!(!is_timeout(e), "{what}: the server neither answered nor closed the connection: {e:?}");
    assert!(matches!(e, thrift::Error::Transport(_)), "{what}: expected the connection to be closed, got {e:?}");
}

/// Reads until the server closes `s`; panics if it is still open after
/// `CLOSE_TIMEOUT`. Returns the bytes the server sent before closing.
fn assert_closed_by_server(s: &mut TcpStream, what: &str) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_millis(250))).expect("read timeout");
    let deadline = Instant::now() + CLOSE_TIMEOUT;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                assert!(Instant::now() < deadline, "{what}: the server kept the connection open for {CLOSE_TIMEOUT:?}");
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Reset: the server closed with our bytes unread.
            Err(_) => return got,
        }
    }
}

/// Asserts that `s` is still open and silent for a moment.
fn assert_still_open(s: &mut TcpStream, what: &str) {
    s.set_read_timeout(Some(Duration::from_millis(300))).expect("read timeout");
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
        Ok(0) => panic!("{what}: the server closed the connection"),
        Ok(n) => panic!("{what}: the server sent {n} unexpected bytes"),
        Err(e) => panic!("{what}: {e}"),
    }
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
}

/// Sends `bytes` on a new connection (ignoring a write refused because the
/// server already closed) and returns the connection.
fn send_raw(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = raw_connect(addr);
    let _ = s.write_all(bytes);
    let _ = s.flush();
    s
}

fn with_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// Deterministic pseudo-random bytes (xorshift64).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A table with one row written and checked, and the client that wrote it.
fn setup(server: &ServerProcess, wire: Wire) -> Client {
    let mut c = connect(server.thrift, wire);
    create_table(&mut c, TABLE);
    put(&mut c, "before", "f:q", b"acknowledged");
    assert_value(&mut c, "before", "f:q", b"acknowledged");
    c
}

// ---------------------------------------------------------------------------
// 1. Garbage
// ---------------------------------------------------------------------------

#[test]
fn garbage_closes_only_its_own_connection() {
    let mut server = ServerProcess::start(&[]);
    // Connected and used before any garbage arrives, then idle.
    let mut good = setup(&server, Wire::BinaryBuffered);

    let mut random = noise(0x5eed, 4096);
    random[0] = 0x17; // no wire starts so
    let mut random_after_binary_header = vec![0x80, 0x01, 0x00, 0x01];
    random_after_binary_header.extend(noise(0xbad, 4096));
    random_after_binary_header[4] = 0xF0; // a negative method-name length
    let garbage: Vec<(&str, Vec<u8>)> = vec![
        // Not an HTTP method the relay takes (http_relay.rs): garbage.
        ("an HTTP-like request", b"PUT / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec()),
        ("random bytes", random),
        ("a bad binary version", vec![0x80, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, b'g', b'e', b't']),
        ("a negative method-name length", random_after_binary_header),
        // Strict binary CALL whose method name claims 2 GiB.
        ("a 2 GiB method name (binary)", vec![0x80, 0x01, 0x00, 0x01, 0x7F, 0xFF, 0xFF, 0xFF, b'x', b'y']),
        // Compact CALL, seq 1, method name of 2^31-1 bytes (varint).
        ("a 2 GiB method name (compact)", vec![0x82, 0x21, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, b'x']),
        // A frame holding an invalid message type (0xFF).
        ("a framed bad message type", with_frame(&[0x80, 0x01, 0x00, 0xFF, 0, 0, 0, 1, b'x', 0, 0, 0, 1, 0])),
        ("an unsupported compact version", vec![0x82, 0x3F, 0x01, 0x01, b'x', 0x00]),
    ];
    for (i, (what, bytes)) in garbage.iter().enumerate() {
        let mut s = send_raw(server.thrift, bytes);
        let _ = assert_closed_by_server(&mut s, what);
        server.assert_alive();
        assert_value(&mut good, "before", "f:q", b"acknowledged");
        let row = format!("after-{i}");
        put(&mut good, &row, "f:q", what.as_bytes());
        assert_value(&mut good, &row, "f:q", what.as_bytes());
    }

    // An HTTP request on the Thrift port is answered by the HTTP port,
    // through the relay, and the Thrift client is not disturbed.
    let mut s = send_raw(server.thrift, b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let answer = assert_closed_by_server(&mut s, "an HTTP request");
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    assert_value(&mut good, "before", "f:q", b"acknowledged");

    // A lone byte and then end of stream: fewer bytes than any wire needs.
    let mut s = send_raw(server.thrift, &[0x80]);
    s.shutdown(Shutdown::Write).expect("shutdown write");
    assert_closed_by_server(&mut s, "a lone byte then EOF");

    // Many garbage connections at once, while the good client works.
    let mut open: Vec<TcpStream> = (0..20).map(|i| send_raw(server.thrift, &noise(i + 1, 512))).collect();
    put(&mut good, "during-flood", "f:q", b"x");
    for s in &mut open {
        // Those that start like a frame may wait for it; none may break others.
        s.shutdown(Shutdown::Both).ok();
    }
    server.assert_alive();

    // Everything acknowledged is there, for the old client and a new one.
    let mut fresh = connect(server.thrift, Wire::BinaryBuffered);
    for c in [&mut good, &mut fresh] {
        assert_value(c, "before", "f:q", b"acknowledged");
        assert_value(c, "during-flood", "f:q", b"x");
        for (i, (what, _)) in garbage.iter().enumerate() {
            assert_value(c, &format!("after-{i}"), "f:q", what.as_bytes());
        }
    }
}

// ---------------------------------------------------------------------------
// 2. Oversized frames
// ---------------------------------------------------------------------------

#[test]
fn oversized_frames_are_refused_without_waiting_for_them() {
    let mut server = ServerProcess::start(&[]);
    let mut good = setup(&server, Wire::BinaryBuffered);
    #[cfg(target_os = "linux")]
    let peak_before = server.peak_rss_kib();

    let header = |len: u32, proto: &[u8]| {
        let mut b = len.to_be_bytes().to_vec();
        b.extend_from_slice(proto);
        b
    };
    let cases = [
        ("100 MiB frame (binary)", header(100 << 20, &[0x80, 0x01, 0x00, 0x01])),
        ("100 MiB frame (compact)", header(100 << 20, &[0x82, 0x21])),
        // Under 16 MiB: looks framed, but over the 2 MiB default limit.
        ("15 MiB frame (binary)", header(15 << 20, &[0x80, 0x01, 0x00, 0x01])),
        ("15 MiB frame (compact)", header(15 << 20, &[0x82, 0x21])),
        ("2 MiB + 1 frame", header((2 << 20) + 1, &[0x80, 0x01, 0x00, 0x01])),
        ("negative frame length", header(0xFFFF_FFF0, &[0x80, 0x01, 0x00, 0x01])),
    ];
    for (what, bytes) in &cases {
        // The socket stays open: the server must not wait for the frame.
        let mut s = send_raw(server.thrift, bytes);
        let _ = assert_closed_by_server(&mut s, what);
        server.assert_alive();
        assert_value(&mut good, "before", "f:q", b"acknowledged");
    }
    #[cfg(target_os = "linux")]
    {
        let grown_mib = server.peak_rss_kib().saturating_sub(peak_before) / 1024;
        // The server idles at about 7 MiB; allocating a refused frame would show.
        assert!(grown_mib < 10, "peak memory grew by {grown_mib} MiB after frames that were only announced");
    }
    put(&mut good, "after", "f:q", b"still-served");
    assert_value(&mut good, "after", "f:q", b"still-served");
}

#[test]
fn a_frame_over_the_configured_limit_closes_the_connection_and_keeps_earlier_data() {
    let mut server = ServerProcess::start(&["hbase.regionserver.thrift.framed.max_frame_size_in_mb=1"]);
    let mut good = setup(&server, Wire::BinaryBuffered);

    let mut framed = connect(server.thrift, Wire::BinaryFramed);
    put(&mut framed, "small", "f:q", b"fits");
    let big = vec![0xAB; 2 << 20];
    let e = try_put(&mut framed, "big", "f:q", &big).expect_err("a 2 MiB frame over a 1 MiB limit");
    assert_connection_lost(&e, "mutateRow in a 2 MiB frame");
    server.assert_alive();

    // The same for compact.
    let mut compact = connect(server.thrift, Wire::CompactFramed);
    let e = try_put(&mut compact, "big-compact", "f:q", &big).expect_err("a 2 MiB compact frame");
    assert_connection_lost(&e, "compact mutateRow in a 2 MiB frame");
    server.assert_alive();

    // Data written before (over either wire) is intact; the big rows are not there.
    let mut fresh = connect(server.thrift, Wire::BinaryFramed);
    assert_value(&mut fresh, "small", "f:q", b"fits");
    assert_value(&mut good, "small", "f:q", b"fits");
    assert_value(&mut good, "before", "f:q", b"acknowledged");
    assert_no_row(&mut good, "big");
    assert_no_row(&mut good, "big-compact");

    // The frame limit is for framed transports only: a buffered client may
    // send the same 2 MiB value (HBase's limit is the same).
    put(&mut good, "big-buffered", "f:q", &big);
    assert_value(&mut good, "big-buffered", "f:q", &big);
}

// ---------------------------------------------------------------------------
// 3. Truncated messages
// ---------------------------------------------------------------------------

#[test]
fn a_truncated_call_is_never_applied_and_stalls_no_one() {
    let mut server = ServerProcess::start(&[]);
    let mut good = setup(&server, Wire::BinaryBuffered);

    let call = |wire: Wire, row: &'static str| serialized_call(wire, move |c| try_put(c, row, "f:q", &[0x55; 300]));

    // (a) Half a buffered call, then the client goes away.
    let whole = call(Wire::BinaryBuffered, "half-buffered");
    let mut s = send_raw(server.thrift, &whole[..whole.len() / 2]);
    s.shutdown(Shutdown::Write).expect("shutdown");
    assert_closed_by_server(&mut s, "half a buffered call then EOF");
    drop(s);
    // (b) A frame header announcing the whole call, half its bytes, EOF.
    let whole = call(Wire::BinaryFramed, "half-frame");
    let mut s = send_raw(server.thrift, &whole[..whole.len() / 2]);
    s.shutdown(Shutdown::Write).expect("shutdown");
    assert_closed_by_server(&mut s, "half a frame then EOF");
    drop(s);
    // (c) A complete frame holding only half a message, EOF.
    let whole = call(Wire::CompactFramed, "half-message-in-frame");
    let payload = &whole[4..];
    let mut s = send_raw(server.thrift, &with_frame(&payload[..payload.len() / 2]));
    s.shutdown(Shutdown::Write).expect("shutdown");
    assert_closed_by_server(&mut s, "a frame with half a message then EOF");
    drop(s);
    // (d) The same, closing the socket outright.
    let whole = call(Wire::CompactBuffered, "half-compact");
    drop(send_raw(server.thrift, &whole[..whole.len() / 2]));

    server.assert_alive();
    assert_value(&mut good, "before", "f:q", b"acknowledged");
    for row in ["half-buffered", "half-frame", "half-message-in-frame", "half-compact"] {
        assert_no_row(&mut good, row);
    }

    // (e) Half a call on a connection that stays open: the server waits for
    // the rest on that connection's thread while everyone else is served.
    let whole = call(Wire::BinaryBuffered, "held");
    let (first, second) = whole.split_at(whole.len() / 2);
    let mut held = send_raw(server.thrift, first);
    std::thread::sleep(Duration::from_millis(300));
    put(&mut good, "while-held", "f:q", b"served");
    let mut newcomer = connect(server.thrift, Wire::CompactFramed);
    assert_value(&mut newcomer, "while-held", "f:q", b"served");
    put(&mut newcomer, "while-held-2", "f:q", b"served too");
    assert_value(&mut good, "while-held-2", "f:q", b"served too");
    assert_no_row(&mut good, "held");
    assert_still_open(&mut held, "a connection in the middle of a call");

    // The rest arrives: the call completes and is answered normally.
    held.write_all(second).expect("send the second half");
    let mut i = TBinaryInputProtocol::new(&mut held, true);
    let ident = i.read_message_begin().expect("reply to the completed call");
    assert_eq!((ident.name.as_str(), ident.message_type), ("mutateRow", TMessageType::Reply));
    i.read_struct_begin().expect("result struct");
    let field = i.read_field_begin().expect("result field");
    assert_eq!(field.field_type, TType::Stop, "mutateRow must have succeeded with no exception");
    assert_value(&mut good, "held", "f:q", &[0x55; 300]);
    server.assert_alive();
}

// ---------------------------------------------------------------------------
// 4. Unknown methods
// ---------------------------------------------------------------------------

/// A CALL of "noSuchMethod" with an empty argument struct.
fn unknown_method_call(wire: Wire, seq: i32) -> Vec<u8> {
    let name = b"noSuchMethod";
    if wire == Wire::BinaryBuffered {
        // By hand, to depend on no library for the request itself.
        let mut b = vec![0x80, 0x01, 0x00, 0x01]; // strict binary, version 1, CALL
        b.extend_from_slice(&(name.len() as i32).to_be_bytes());
        b.extend_from_slice(name);
        b.extend_from_slice(&seq.to_be_bytes());
        b.push(0x00); // STOP: the empty struct
        return b;
    }
    let mut buf = Vec::new();
    {
        let mut o: Box<dyn TOutputProtocol + '_> = if wire.compact() {
            Box::new(TCompactOutputProtocol::new(&mut buf))
        } else {
            Box::new(TBinaryOutputProtocol::new(&mut buf, true))
        };
        o.write_message_begin(&TMessageIdentifier::new("noSuchMethod", TMessageType::Call, seq)).expect("write");
        o.write_struct_begin(&TStructIdentifier::new("noSuchMethod_args")).expect("write");
        o.write_field_stop().expect("write");
        o.write_struct_end().expect("write");
        o.write_message_end().expect("write");
        o.flush().expect("flush");
    }
    if wire.framed() { with_frame(&buf) } else { buf }
}

#[test]
fn an_unknown_method_gets_an_unknown_method_exception_on_every_wire() {
    let mut server = ServerProcess::start(&[]);
    let mut good = setup(&server, Wire::BinaryBuffered);

    for (n, wire) in Wire::ALL.into_iter().enumerate() {
        let seq = 41 + n as i32;
        let mut s = send_raw(server.thrift, &unknown_method_call(wire, seq));
        let read: Box<dyn Read + '_> =
            if wire.framed() { Box::new(TFramedReadTransport::new(&mut s)) } else { Box::new(&mut s) };
        let mut i: Box<dyn TInputProtocol + '_> = if wire.compact() {
            Box::new(TCompactInputProtocol::new(read))
        } else {
            Box::new(TBinaryInputProtocol::new(read, true))
        };
        let ident = i.read_message_begin().unwrap_or_else(|e| panic!("{wire:?}: no reply: {e:?}"));
        assert_eq!(ident.message_type, TMessageType::Exception, "{wire:?}: {ident:?}");
        assert_eq!(ident.name, "noSuchMethod", "{wire:?}");
        assert_eq!(ident.sequence_number, seq, "{wire:?}");
        let e = thrift::Error::read_application_error_from_in_protocol(i.as_mut())
            .unwrap_or_else(|e| panic!("{wire:?}: bad TApplicationException: {e:?}"));
        assert_eq!(e.kind, ApplicationErrorKind::UnknownMethod, "{wire:?}: {e:?}");
        assert_eq!(e.kind as i32, 1);
        assert!(e.message.contains("noSuchMethod"), "{wire:?}: {e:?}");
        i.read_message_end().expect("message end");
        drop(i);

        server.assert_alive();
        assert_value(&mut good, "before", "f:q", b"acknowledged");
        put(&mut good, &format!("after-{wire:?}"), "f:q", b"ok");
    }

    // A buffered connection that sent an unknown method stays in step: the
    // server skipped the call's arguments (as HBase does), so the next call
    // on the same connection is answered.
    let mut s = send_raw(server.thrift, &unknown_method_call(Wire::BinaryBuffered, 9));
    let mut i = TBinaryInputProtocol::new(&mut s, true);
    assert_eq!(i.read_message_begin().expect("exception").message_type, TMessageType::Exception);
    thrift::Error::read_application_error_from_in_protocol(&mut i).expect("application error");
    i.read_message_end().expect("message end");
    let r = s.try_clone().expect("clone");
    let mut same = client_over(Wire::BinaryBuffered, r, s);
    let names = same.get_table_names().expect("the call after an unknown method is answered");
    assert_eq!(names, vec![TABLE.as_bytes().to_vec()]);

    server.assert_alive();
    let mut fresh = connect(server.thrift, Wire::CompactBuffered);
    for wire in Wire::ALL {
        assert_value(&mut fresh, &format!("after-{wire:?}"), "f:q", b"ok");
    }
    assert_value(&mut fresh, "before", "f:q", b"acknowledged");
}

// ---------------------------------------------------------------------------
// 5. Scanners
// ---------------------------------------------------------------------------

fn open_scanner(c: &mut Client) -> i32 {
    c.scanner_open(TABLE.into(), Vec::new(), Vec::new(), attrs()).expect("scannerOpen")
}

#[test]
fn unknown_and_closed_scanner_ids_are_illegal_arguments() {
    let mut server = ServerProcess::start(&[]);
    let mut c = setup(&server, Wire::BinaryBuffered);
    put(&mut c, "r2", "f:q", b"two");

    for id in [0, 12_345, -1, i32::MAX, i32::MIN] {
        let m = expect_illegal_argument(c.scanner_get(id), &format!("scannerGet({id})"));
        assert!(m.contains("scanner ID is invalid"), "{m}");
        expect_illegal_argument(c.scanner_get_list(id, 10), &format!("scannerGetList({id})"));
        expect_illegal_argument(c.scanner_close(id), &format!("scannerClose({id})"));
    }

    // A live scanner works; once closed, its id is unknown.
    let id = open_scanner(&mut c);
    let rows = c.scanner_get(id).expect("scannerGet on an open scanner");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].row.as_deref(), Some(&b"before"[..]));
    c.scanner_close(id).expect("scannerClose");
    expect_illegal_argument(c.scanner_get(id), "scannerGet after close");
    expect_illegal_argument(c.scanner_get_list(id, 5), "scannerGetList after close");
    expect_illegal_argument(c.scanner_close(id), "second scannerClose");

    // Control for the lease test: with the default 60 s lease, a scanner
    // idle for 3 s is still open and goes on where it stopped.
    let id = open_scanner(&mut c);
    assert_eq!(c.scanner_get(id).expect("first row").len(), 1);
    std::thread::sleep(Duration::from_secs(3));
    let rows = c.scanner_get_list(id, 10).expect("the rest after 3 s idle");
    assert_eq!(rows.iter().map(|r| r.row.clone().unwrap_or_default()).collect::<Vec<_>>(), vec![b"r2".to_vec()]);
    c.scanner_close(id).expect("close");

    // The connection and the data are fine after all those exceptions.
    server.assert_alive();
    assert_value(&mut c, "before", "f:q", b"acknowledged");
    assert_value(&mut c, "r2", "f:q", b"two");
}

#[test]
fn a_scanner_idle_past_its_lease_is_expired() {
    let mut server = ServerProcess::start(&["hbase.client.scanner.timeout.period=500"]);
    let mut c = setup(&server, Wire::BinaryBuffered);
    let id = open_scanner(&mut c);
    std::thread::sleep(Duration::from_secs(3));
    let m = expect_illegal_argument(c.scanner_get(id), "scannerGet after the lease expired");
    assert!(m.contains("scanner ID is invalid"), "{m}");
    expect_illegal_argument(c.scanner_get_list(id, 10), "scannerGetList after the lease expired");
    expect_illegal_argument(c.scanner_close(id), "scannerClose after the lease expired");

    // New scanners still work.
    let id = open_scanner(&mut c);
    let rows = c.scanner_get_list(id, 10).expect("a new scanner");
    assert_eq!(rows.len(), 1);
    let _ = c.scanner_close(id);
    server.assert_alive();
    assert_value(&mut c, "before", "f:q", b"acknowledged");
}

// ---------------------------------------------------------------------------
// 6. Oversized cells
// ---------------------------------------------------------------------------

#[test]
fn a_cell_over_the_keyvalue_limit_is_refused_and_nothing_of_its_row_is_written() {
    let mut server = ServerProcess::start(&["hbase.server.keyvalue.maxsize=1024"]);
    let mut c = setup(&server, Wire::BinaryBuffered);

    let m = expect_illegal_argument(try_put(&mut c, "big", "f:q", &[7; 4096]), "a 4 KiB cell");
    assert!(!m.is_empty());
    assert_no_row(&mut c, "big");

    // A row whose first cell fits and second does not: all or nothing.
    let ms = vec![put_mutation("f:a", b"small"), put_mutation("f:b", &[7; 4096])];
    expect_illegal_argument(c.mutate_row(TABLE.into(), b"mixed".to_vec(), ms, attrs()), "a row with one big cell");
    assert_no_row(&mut c, "mixed");

    // An existing row keeps its old value when an update is refused.
    let e = try_put(&mut c, "before", "f:q", &[7; 4096]);
    expect_illegal_argument(e, "overwriting with a big cell");
    assert_value(&mut c, "before", "f:q", b"acknowledged");

    // Cells under the limit are still written, on the same connection.
    put(&mut c, "small", "f:q", &[1; 512]);
    assert_value(&mut c, "small", "f:q", &[1; 512]);
    let ms = vec![put_mutation("f:a", b"small"), put_mutation("f:b", &[2; 256])];
    c.mutate_row(TABLE.into(), b"mixed".to_vec(), ms, attrs()).expect("a row of small cells");
    assert_value(&mut c, "mixed", "f:a", b"small");
    assert_value(&mut c, "mixed", "f:b", &[2; 256]);
    server.assert_alive();
}

// ---------------------------------------------------------------------------
// 7. All four wires on one port
// ---------------------------------------------------------------------------

#[test]
fn all_four_wires_are_served_on_one_port_with_several_calls_each() {
    let mut server = ServerProcess::start(&[]);
    let mut clients: Vec<(Wire, Client)> = Wire::ALL.into_iter().map(|w| (w, connect(server.thrift, w))).collect();
    create_table(&mut clients[0].1, TABLE);

    // Several calls per connection: a framed or buffered connection must
    // answer its second and later calls as well as its first.
    for (wire, c) in &mut clients {
        let row = format!("row-{wire:?}");
        put(c, &row, "f:a", b"first");
        put(c, &row, "f:b", format!("{wire:?}").as_bytes());
        assert_value(c, &row, "f:a", b"first");
        assert_value(c, &row, "f:b", format!("{wire:?}").as_bytes());
        assert_eq!(c.get_table_names().expect("getTableNames"), vec![TABLE.as_bytes().to_vec()], "{wire:?}");
    }
    // Every wire reads what the others wrote, values and scans.
    for (wire, c) in &mut clients {
        for w in Wire::ALL {
            assert_value(c, &format!("row-{w:?}"), "f:b", format!("{w:?}").as_bytes());
        }
        let id = open_scanner(c);
        let rows = c.scanner_get_list(id, 100).expect("scannerGetList");
        assert_eq!(rows.len(), 4, "{wire:?}");
        c.scanner_close(id).expect("scannerClose");
    }
    server.assert_alive();
}

// ---------------------------------------------------------------------------
// 8. A client that never reads its replies
// ---------------------------------------------------------------------------

/// A client pipelines calls with large replies and never reads them, so the
/// server's connection thread blocks writing a reply. SIGTERM must still
/// shut the server down (HBase's and our contract: graceful shutdown).
/// In-flight calls get `shutdown_grace_ms`; then their sockets are cut.
#[test]
#[cfg(unix)]
fn a_client_that_never_reads_does_not_block_shutdown() {
    let mut server = ServerProcess::start(&["shutdown_grace_ms=1000"]);
    let mut c = setup(&server, Wire::BinaryBuffered);
    let big = vec![0x42; 1 << 20];
    put(&mut c, "big", "f:q", &big);
    drop(c);

    let call = serialized_call(Wire::BinaryBuffered, |c| c.get_row(TABLE.into(), b"big".to_vec(), attrs()));
    let mut s = raw_connect(server.thrift);
    s.set_nonblocking(true).expect("nonblocking");
    // Send until the server has stopped reading (it is stuck writing a
    // reply nobody reads) and both socket buffers are full.
    let (mut sent, mut blocked_since) = (0usize, None::<Instant>);
    let deadline = Instant::now() + Duration::from_secs(30);
    while blocked_since.is_none_or(|t| t.elapsed() < Duration::from_secs(1)) {
        assert!(Instant::now() < deadline, "the server kept reading {sent} bytes of calls without stalling");
        match s.write(&call) {
            Ok(n) => {
                sent += n;
                blocked_since = None;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                blocked_since.get_or_insert_with(Instant::now);
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("the server closed the connection: {e}"),
        }
    }
    server.assert_alive();

    // The grace period is 1 s; 30 s is generous for the rest of the shutdown.
    let status = server.terminate(Duration::from_secs(30));
    drop(s);
    let status = status.expect("the server did not exit within 30 s of SIGTERM while a client was not reading");
    assert!(status.success(), "the server exited with {status}");
}
