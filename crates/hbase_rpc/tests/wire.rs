//! The server over real sockets, driven by a minimal client written from the
//! wire description (the Java client's proof is `java_client.rs`): preamble
//! refusals, the registry probe, calls with cell blocks, errors, concurrency
//! within one connection, and the limits.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_rpc::frame::{self, encode_connection_header, encode_request, split_response};
use hbase_rpc::pb::hbase::pb::{
    CellBlockMeta, ConnectionHeader, GetConnectionRegistryResponse, RequestHeader, ResponseHeader,
};
use hbase_rpc::service::{CONNECTION_REGISTRY_SERVICE, GET_CONNECTION_REGISTRY};
use hbase_rpc::{Call, Cell, CellCodec, Immediate, Reply, RpcError, RpcServer, RpcServerConfig, RpcServices};
use prost::Message;

const KV_CODEC: &str = "org.apache.hadoop.hbase.codec.KeyValueCodec";

/// Echo: answers with the request message and cells; `Block` waits until a
/// `Release` call arrives; `Slow` sleeps; the registry has cluster id "c-1"
/// unless `no_registry`.
struct Fake {
    release_tx: Mutex<Sender<()>>,
    release_rx: Mutex<Receiver<()>>,
    no_registry: bool,
    /// Set when a `Slow` or `Big` call has reached the services.
    slow_started: AtomicBool,
    big_started: AtomicBool,
}

impl Fake {
    fn new(no_registry: bool) -> Arc<Self> {
        let (tx, rx) = channel();
        Arc::new(Self {
            release_tx: Mutex::new(tx),
            release_rx: Mutex::new(rx),
            no_registry,
            slow_started: AtomicBool::new(false),
            big_started: AtomicBool::new(false),
        })
    }
}

impl RpcServices for Fake {
    fn call(&self, call: Call) -> Result<Reply, RpcError> {
        match (&*call.service, call.method.as_str()) {
            (CONNECTION_REGISTRY_SERVICE, GET_CONNECTION_REGISTRY) if !self.no_registry => {
                Ok(Reply::new(&GetConnectionRegistryResponse { cluster_id: "c-1".into() }))
            }
            ("TestService", "Echo") => Ok(Reply { message: call.param.to_vec(), cells: Box::new(call.cells) }),
            ("TestService", "Block") => {
                let rx = self.release_rx.lock().unwrap();
                rx.recv_timeout(Duration::from_secs(10))
                    .map_err(|_| RpcError::io("never released: calls of one connection ran one at a time"))?;
                Ok(Reply { message: b"blocked".to_vec(), cells: Box::new(Vec::<hbase_rpc::Cell>::new()) })
            }
            ("TestService", "Release") => {
                self.release_tx.lock().unwrap().send(()).unwrap();
                Ok(Reply { message: b"released".to_vec(), cells: Box::new(Vec::<hbase_rpc::Cell>::new()) })
            }
            ("TestService", "Big") => {
                self.big_started.store(true, Ordering::SeqCst);
                Ok(Reply { message: vec![b'x'; 32 << 20], cells: Box::new(Vec::<hbase_rpc::Cell>::new()) })
            }
            ("TestService", "Slow") => {
                self.slow_started.store(true, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(300));
                Ok(Reply { message: b"slow".to_vec(), cells: Box::new(Vec::<hbase_rpc::Cell>::new()) })
            }
            (service, method) => Err(RpcError::not_implemented(service, method)),
        }
    }

    /// `Now` (echoes its message) and `ReleaseNow` (as `Release`) are
    /// answered on the reader thread; `PanicNow` panics there; the rest
    /// are handed to a worker.
    fn answer_now(&self, call: Call) -> Immediate {
        match call.method.as_str() {
            "Now" => Immediate::Answered(Ok(Reply { message: call.param.to_vec(), cells: Box::new(call.cells) })),
            "ReleaseNow" => {
                self.release_tx.lock().unwrap().send(()).unwrap();
                Immediate::Answered(Ok(Reply { message: b"released".to_vec(), cells: Box::new(Vec::<Cell>::new()) }))
            }
            "PanicNow" => panic!("a service that panics while answering at once"),
            _ => Immediate::Later(call),
        }
    }
}

fn wait_for(flag: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !flag.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the call never reached the services");
        thread::sleep(Duration::from_millis(5));
    }
}

fn start(fake: Arc<Fake>, config: RpcServerConfig) -> RpcServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    RpcServer::start_with(listener, fake, config).unwrap()
}

fn connect(server: &RpcServer, codec: &str) -> TcpStream {
    connect_to(server, "TestService", codec)
}

fn connect_to(server: &RpcServer, service: &str, codec: &str) -> TcpStream {
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"HBas\x00\x50").unwrap();
    let header = ConnectionHeader {
        service_name: Some(service.into()),
        cell_block_codec_class: Some(codec.into()),
        ..Default::default()
    };
    s.write_all(&encode_connection_header(&header)).unwrap();
    s
}

fn send(s: &mut TcpStream, call_id: u32, method: &str, param: &[u8], cells: &[Cell]) {
    let mut block = Vec::new();
    CellCodec::KeyValue.encode(cells, &mut block).unwrap();
    let header = RequestHeader {
        call_id: Some(call_id),
        method_name: Some(method.into()),
        request_param: Some(true),
        cell_block_meta: (!block.is_empty()).then_some(CellBlockMeta { length: Some(block.len() as u32) }),
        ..Default::default()
    };
    s.write_all(&encode_request(&header, param, &block)).unwrap();
}

fn receive(s: &mut TcpStream) -> (ResponseHeader, Option<Bytes>, Bytes) {
    let frame = frame::read_frame(s, usize::MAX).unwrap().expect("a response, not end of stream");
    split_response(frame).unwrap()
}

fn assert_closed(s: &mut TcpStream) {
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "nothing after the last response: {rest:?}");
}

#[test]
fn a_call_with_a_cell_block_round_trips() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    let cells = vec![Cell::put("row", "f", "q", 7, "value"), Cell::put("row", "f", "r", 7, "")];
    send(&mut s, 1, "Echo", b"hello", &cells);
    let (header, message, block) = receive(&mut s);
    assert_eq!(header.call_id(), 1);
    assert!(header.exception.is_none(), "{header:?}");
    assert_eq!(message.as_deref(), Some(&b"hello"[..]));
    assert_eq!(header.cell_block_meta.unwrap().length() as usize, block.len());
    assert_eq!(CellCodec::KeyValue.decode(&block).unwrap(), cells);
}

#[test]
fn an_unknown_method_is_a_prompt_do_not_retry_answer_and_the_connection_lives_on() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 5, "Frobnicate", b"", &[]);
    let (header, message, _) = receive(&mut s);
    assert_eq!(header.call_id(), 5);
    assert!(message.is_none());
    let e = header.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.DoNotRetryIOException");
    assert_eq!(
        e.stack_trace(),
        "org.apache.hadoop.hbase.DoNotRetryIOException: TestService.Frobnicate is not implemented"
    );
    assert!(e.do_not_retry());
    send(&mut s, 6, "Echo", b"still here", &[]);
    assert_eq!(receive(&mut s).1.as_deref(), Some(&b"still here"[..]));
}

#[test]
fn an_unknown_service_is_answered_per_call_with_do_not_retry() {
    // HBase's own server refuses an unknown service at the connection header
    // with UnknownServiceException, a class the client's jar lacks; the
    // services answer each call instead, with a class the client knows.
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect_to(&server, "NoSuchService", KV_CODEC);
    send(&mut s, 1, "Echo", b"", &[]);
    let e = receive(&mut s).0.exception.unwrap();
    assert_eq!(e.stack_trace(), "org.apache.hadoop.hbase.DoNotRetryIOException: NoSuchService.Echo is not implemented");
    assert!(e.do_not_retry());
}

#[test]
fn calls_of_one_connection_run_concurrently() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    // `Block` can only finish once `Release`, sent after it on the same
    // connection, has run: were the connection's calls run one at a time,
    // `Block` would fail after 10 s. (Which answer comes first is up to the
    // threads; the client matches them by call id.)
    send(&mut s, 1, "Block", b"", &[]);
    send(&mut s, 2, "Release", b"", &[]);
    let mut answers: Vec<(u32, Option<Bytes>)> =
        (0..2).map(|_| receive(&mut s)).map(|(header, message, _)| (header.call_id(), message)).collect();
    answers.sort_by_key(|(id, _)| *id);
    assert_eq!(answers, vec![(1, Some(Bytes::from_static(b"blocked"))), (2, Some(Bytes::from_static(b"released")))]);
}

#[test]
fn a_call_answered_at_once_does_not_wait_for_the_workers() {
    // One worker, held by `Block` until `ReleaseNow` runs: `Now` is
    // answered on the reader thread while the worker is held, so it comes
    // back before `ReleaseNow` is even sent. Were it queued for the worker,
    // `Block` would fail after 10 s and be answered first. (`ReleaseNow` is
    // sent only then: sent with the others, the reader could read all
    // three at once and hold the answers to `Now` and `ReleaseNow` until
    // the last, while the released worker answered `Block` first.)
    let server = start(Fake::new(false), RpcServerConfig { workers: 1, ..RpcServerConfig::default() });
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 1, "Block", b"", &[]);
    send(&mut s, 2, "Now", b"at once", &[Cell::put("row", "f", "q", 7, "v")]);
    let (header, message, cells) = receive(&mut s);
    assert_eq!((header.call_id(), message.as_deref()), (2, Some(&b"at once"[..])));
    assert_eq!(CellCodec::KeyValue.decode(&cells).unwrap(), vec![Cell::put("row", "f", "q", 7, "v")]);
    send(&mut s, 3, "ReleaseNow", b"", &[]);
    let mut answers: Vec<(u32, Option<Bytes>)> =
        (0..2).map(|_| receive(&mut s)).map(|(header, message, _)| (header.call_id(), message)).collect();
    answers.sort_by_key(|(id, _)| *id);
    assert_eq!(answers, vec![(1, Some(Bytes::from_static(b"blocked"))), (3, Some(Bytes::from_static(b"released")))]);
}

#[test]
fn calls_sent_together_and_answered_at_once_are_all_answered_in_order() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    // One write of many frames: the reader finds them buffered together and
    // holds their answers until the last.
    let mut burst = Vec::new();
    for id in 1..=50u32 {
        let header = RequestHeader {
            call_id: Some(id),
            method_name: Some("Now".into()),
            request_param: Some(true),
            ..Default::default()
        };
        burst.extend(encode_request(&header, format!("call {id}").as_bytes(), &[]));
    }
    s.write_all(&burst).unwrap();
    for id in 1..=50u32 {
        let (header, message, _) = receive(&mut s);
        assert_eq!((header.call_id(), message), (id, Some(Bytes::from(format!("call {id}")))));
    }
}

#[test]
fn a_panic_while_answering_at_once_fails_that_call_only() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 1, "PanicNow", b"", &[]);
    send(&mut s, 2, "Now", b"still here", &[]);
    let (header, _, _) = receive(&mut s);
    assert_eq!(header.call_id(), 1);
    let exception = header.exception.expect("an exception");
    assert!(exception.stack_trace.unwrap_or_default().contains("panicked"), "the panic is reported");
    let (header, message, _) = receive(&mut s);
    assert_eq!((header.call_id(), message.as_deref()), (2, Some(&b"still here"[..])));
}

#[test]
fn a_bad_preamble_gets_hbase_s_fatal_answer_then_the_connection_closes() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let (header, message, _) = receive(&mut s);
    assert_eq!(header.call_id(), u32::MAX, "call id -1");
    assert!(message.is_none());
    let e = header.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.FatalConnectionException");
    assert!(e.stack_trace().starts_with("Expected HEADER=HBas but received HEADER=GET "), "{}", e.stack_trace());
    assert_closed(&mut s);

    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"HBas\x00\x51").unwrap();
    let e = receive(&mut s).0.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.BadAuthException");
    assert_closed(&mut s);
}

#[test]
fn an_unsupported_codec_or_compressor_is_refused_at_the_connection_header() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, "org.apache.hadoop.hbase.codec.MessageCodec");
    let e = receive(&mut s).0.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.UnsupportedCellCodecException");
    assert_closed(&mut s);

    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"HBas\x00\x50").unwrap();
    let header = ConnectionHeader {
        service_name: Some("TestService".into()),
        cell_block_codec_class: Some(KV_CODEC.into()),
        cell_block_compressor_class: Some("org.apache.hadoop.io.compress.GzipCodec".into()),
        ..Default::default()
    };
    s.write_all(&encode_connection_header(&header)).unwrap();
    let e = receive(&mut s).0.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.UnsupportedCompressionCodecException");
    assert!(e.stack_trace().contains("GzipCodec"), "{}", e.stack_trace());
}

#[test]
fn without_a_codec_cells_are_refused_both_ways() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, "");
    send(&mut s, 1, "Echo", b"x", &[Cell::put("r", "f", "q", 1, "v")]);
    let e = receive(&mut s).0.exception.unwrap();
    assert!(e.stack_trace().contains("named no codec"), "{}", e.stack_trace());
    send(&mut s, 2, "Echo", b"no cells", &[]);
    let (header, message, block) = receive(&mut s);
    assert!(header.exception.is_none() && header.cell_block_meta.is_none() && block.is_empty());
    assert_eq!(message.as_deref(), Some(&b"no cells"[..]));
}

#[test]
fn the_registry_probe_answers_the_cluster_id_or_the_old_server_refusal() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"Regist").unwrap();
    let (header, message, _) = receive(&mut s);
    assert_eq!(header.call_id(), u32::MAX);
    assert_eq!(GetConnectionRegistryResponse::decode(message.unwrap()).unwrap().cluster_id, "c-1");
    assert_closed(&mut s);

    let server = start(Fake::new(true), RpcServerConfig::default());
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"Regist").unwrap();
    let e = receive(&mut s).0.exception.unwrap();
    // What hbase-client's ClusterIdFetcher takes for an older server.
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.FatalConnectionException");
    assert!(e.stack_trace().starts_with("Expected HEADER="), "{}", e.stack_trace());
}

#[test]
fn the_security_probe_is_told_security_is_off_and_the_connection_goes_on() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"Securi").unwrap();
    let e = receive(&mut s).0.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.ipc.SecurityNotEnabledException");
    // As HBase's RPC layer sends it: the bare message, and retryable (the
    // class is no DoNotRetryIOException).
    assert_eq!((e.stack_trace(), e.do_not_retry()), ("security is not enabled", false));
    s.write_all(b"HBas\x00\x50").unwrap();
    let header = ConnectionHeader { service_name: Some("TestService".into()), ..Default::default() };
    s.write_all(&encode_connection_header(&header)).unwrap();
    send(&mut s, 1, "Echo", b"after the probe", &[]);
    assert_eq!(receive(&mut s).1.as_deref(), Some(&b"after the probe"[..]));
}

#[test]
fn a_request_over_the_limit_is_answered_request_too_big_under_its_call_id() {
    let config = RpcServerConfig { max_request_size: 1024, ..Default::default() };
    let server = start(Fake::new(false), config);
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 1, "Echo", b"small", &[]);
    assert!(receive(&mut s).0.exception.is_none());
    send(&mut s, 77, "Echo", &vec![0u8; 4096], &[]);
    let (header, _, _) = receive(&mut s);
    assert_eq!(header.call_id(), 77);
    let e = header.exception.unwrap();
    assert_eq!(e.exception_class_name(), "org.apache.hadoop.hbase.exceptions.RequestTooBigException");
    assert!(e.stack_trace().contains("is greater than max allowed 1024"), "{}", e.stack_trace());
    assert_closed(&mut s);
}

#[test]
fn a_malformed_request_header_is_fatal_a_malformed_body_is_the_call_s_error() {
    let server = start(Fake::new(false), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    // A cell block shorter than its header claims: the call fails, the
    // connection lives.
    let header = RequestHeader {
        call_id: Some(3),
        method_name: Some("Echo".into()),
        request_param: Some(true),
        cell_block_meta: Some(CellBlockMeta { length: Some(100) }),
        ..Default::default()
    };
    s.write_all(&encode_request(&header, b"p", b"short")).unwrap();
    let (h, _, _) = receive(&mut s);
    assert_eq!(h.call_id(), 3);
    assert_eq!(h.exception.unwrap().exception_class_name(), "org.apache.hadoop.hbase.DoNotRetryIOException");
    // A header that is not a protobuf: no call id to answer, so fatal.
    s.write_all(&[0, 0, 0, 3, 2, 0xff, 0xff]).unwrap();
    let (h, _, _) = receive(&mut s);
    assert_eq!(h.call_id(), u32::MAX);
    assert_eq!(h.exception.unwrap().exception_class_name(), "org.apache.hadoop.hbase.ipc.FatalConnectionException");
    assert_closed(&mut s);
}

#[test]
fn an_idle_connection_is_closed_but_not_one_with_a_call_in_flight() {
    let config = RpcServerConfig { idle_timeout: Duration::from_millis(200), ..Default::default() };
    let server = start(Fake::new(false), config);
    let mut s = connect(&server, KV_CODEC);
    // `Slow` takes 300 ms, longer than the idle timeout: the connection
    // stays open for its answer.
    send(&mut s, 1, "Slow", b"", &[]);
    assert_eq!(receive(&mut s).1.as_deref(), Some(&b"slow"[..]));
    let started = Instant::now();
    assert_closed(&mut s);
    assert!(started.elapsed() < Duration::from_secs(5), "closed for idleness, not by the test's timeout");
}

#[test]
fn a_client_that_stops_reading_holds_a_worker_only_until_the_write_timeout() {
    let config = RpcServerConfig { workers: 1, write_timeout: Duration::from_millis(300), ..Default::default() };
    let fake = Fake::new(false);
    let server = start(fake.clone(), config);
    // 32 MiB answered to a client that never reads: more than the socket
    // buffers hold, so the only worker blocks writing it.
    let mut stalled = connect(&server, KV_CODEC);
    send(&mut stalled, 1, "Big", b"", &[]);
    wait_for(&fake.big_started);
    let started = Instant::now();
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 1, "Echo", b"next", &[]);
    assert_eq!(receive(&mut s).1.as_deref(), Some(&b"next"[..]));
    assert!(started.elapsed() < Duration::from_secs(5), "the worker was freed by the write timeout");
    // The stalled connection was closed: what it can still read ends early.
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    assert!(rest.len() < (32 << 20), "the 32 MiB response was cut off, got {} bytes", rest.len());
}

#[test]
fn shutdown_answers_the_calls_already_read() {
    let fake = Fake::new(false);
    let server = start(fake.clone(), RpcServerConfig::default());
    let mut s = connect(&server, KV_CODEC);
    send(&mut s, 1, "Slow", b"", &[]);
    // The server has read the call before it stops.
    wait_for(&fake.slow_started);
    let stopper = thread::spawn(move || server.shutdown());
    let (header, message, _) = receive(&mut s);
    assert_eq!((header.call_id(), message.as_deref()), (1, Some(&b"slow"[..])));
    stopper.join().unwrap();
    assert_closed(&mut s);
    let _ = s.shutdown(Shutdown::Both);
}
