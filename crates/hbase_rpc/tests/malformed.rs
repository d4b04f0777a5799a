//! Hostile bytes: every decoder, fed random and mutated input, returns
//! (typed) errors and never panics; the server, fed garbage on many
//! connections, keeps serving the next well-formed one.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use hbase_rpc::frame::{
    self, decode_connection_header, encode_connection_header, encode_request, split_request_body, split_response,
    take_request_header,
};
use hbase_rpc::pb::hbase::pb::{CellBlockMeta, ConnectionHeader, RequestHeader};
use hbase_rpc::{Call, Cell, CellCodec, Reply, RpcError, RpcServer, RpcServerConfig, RpcServices};

/// xorshift64*: reproducible inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// `good` with a few bytes overwritten, and maybe cut short.
    fn mutate(&mut self, good: &[u8]) -> Vec<u8> {
        let mut bad = good.to_vec();
        for _ in 0..1 + self.below(4) {
            if !bad.is_empty() {
                let at = self.below(bad.len());
                bad[at] = self.next() as u8;
            }
        }
        if self.below(3) == 0 {
            bad.truncate(self.below(bad.len() + 1));
        }
        bad
    }
}

fn valid_call() -> Vec<u8> {
    let mut block = Vec::new();
    CellCodec::KeyValueWithTags
        .encode(
            &[
                Cell::put("row", "f", "q", 3, "value"),
                Cell { tags: Bytes::from_static(b"\x00\x01\x02"), ..Cell::put("r", "g", "", 1, "") },
            ],
            &mut block,
        )
        .unwrap();
    let header = RequestHeader {
        call_id: Some(12),
        method_name: Some("Multi".into()),
        request_param: Some(true),
        cell_block_meta: Some(CellBlockMeta { length: Some(block.len() as u32) }),
        ..Default::default()
    };
    encode_request(&header, b"\x0a\x03abc", &block)
}

/// Runs every decoder over `input` (only a panic fails); whether a call's
/// cell block was reached and decoded.
fn decode_everything(input: &[u8]) -> bool {
    let bytes = Bytes::copy_from_slice(input);
    let mut frame = bytes.clone();
    let reached_cells =
        take_request_header(&mut frame).and_then(|header| split_request_body(&header, frame)).is_ok_and(|request| {
            let _ = CellCodec::KeyValue.decode(&request.cell_block);
            CellCodec::KeyValueWithTags.decode(&request.cell_block).is_ok()
        });
    let _ = split_response(bytes.clone());
    let _ = decode_connection_header(bytes.clone());
    let _ = CellCodec::KeyValue.decode(&bytes);
    let _ = CellCodec::KeyValueWithTags.decode(&bytes);
    let _ = Cell::read_key_value(&bytes, false);
    let _ = Cell::read_key_value(&bytes, true);
    let _ = frame::read_frame(&mut &input[..], 1 << 20);
    reached_cells
}

#[test]
fn decoders_survive_random_and_mutated_input() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let call = valid_call();
    assert!(decode_everything(&call[4..]), "the unmutated call decodes");
    let mut decoded = 0;
    for _ in 0..20_000 {
        decode_everything(&rng.bytes(64));
        let bad = rng.mutate(&call);
        decode_everything(&bad);
        decoded += usize::from(decode_everything(&bad[4.min(bad.len())..]));
    }
    // Mutations that spare the framing reach the cell decoder: the test
    // exercises the deep paths, not only the first length check.
    assert!(decoded > 100, "only {decoded} mutated calls reached their cells");
}

struct Echo;

impl RpcServices for Echo {
    fn call(&self, call: Call) -> Result<Reply, RpcError> {
        match call.method.as_str() {
            "Echo" => Ok(Reply { message: call.param.to_vec(), cells: Box::new(call.cells) }),
            method => Err(RpcError::not_implemented(&call.service, method)),
        }
    }
}

fn handshake() -> Vec<u8> {
    let mut out = b"HBas\x00\x50".to_vec();
    out.extend(encode_connection_header(&ConnectionHeader {
        service_name: Some("S".into()),
        cell_block_codec_class: Some("org.apache.hadoop.hbase.codec.KeyValueCodec".into()),
        ..Default::default()
    }));
    out
}

#[test]
fn the_server_keeps_serving_after_garbage_on_many_connections() {
    // A panic on a connection's thread would not reach this test by itself
    // (the server goes on with its other threads): count them.
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));
    let config = RpcServerConfig { idle_timeout: Duration::from_millis(500), ..Default::default() };
    let server = RpcServer::start_with(TcpListener::bind("127.0.0.1:0").unwrap(), Arc::new(Echo), config).unwrap();
    let mut rng = Rng(42);
    let valid = [handshake(), valid_call()].concat();
    for round in 0..60 {
        let garbage = match round % 3 {
            0 => rng.bytes(200),
            1 => [handshake(), rng.bytes(200)].concat(),
            _ => rng.mutate(&valid),
        };
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(&garbage);
        let _ = s.shutdown(std::net::Shutdown::Write);
        // Whatever the server answers, it ends the connection.
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&handshake()).unwrap();
    let header = RequestHeader {
        call_id: Some(1),
        method_name: Some("Echo".into()),
        request_param: Some(true),
        ..Default::default()
    };
    s.write_all(&encode_request(&header, b"alive", b"")).unwrap();
    let frame = frame::read_frame(&mut s, 1 << 20).unwrap().unwrap();
    let (header, message, _) = split_response(frame).unwrap();
    assert!(header.exception.is_none(), "{header:?}");
    assert_eq!(message.as_deref(), Some(&b"alive"[..]));
    server.shutdown();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a thread panicked on garbage");
}
