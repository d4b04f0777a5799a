//! The server: accepts connections on a bound listener, reads each
//! connection's calls on its own thread, runs them on a shared bounded
//! worker pool, and writes each response when its call finishes.
//!
//! One connection carries one service (its connection header names it) and
//! many concurrent calls: HBase's client multiplexes all its threads' calls
//! to a server over one connection, each with its own call id, and matches
//! responses by id. So a connection never serialises calls that may wait:
//! its reader thread decodes them and submits them, and responses go out
//! in whatever order the calls finish. The one exception is a call the
//! services can answer without waiting ([`RpcServices::answer_now`]: a get
//! whose cells are in memory), which the reader answers itself: handing it
//! to a worker cost more than answering it (a third of our server's CPU
//! per get in YCSB C). The reader holds those answers until no whole frame
//! is left to read, then writes them together.
//!
//! Limits, as HBase's server has them: a frame over `max_request_size`
//! (`hbase.ipc.max.request.size`, 256 MiB) is answered
//! `RequestTooBigException` and the connection closed; a full call queue
//! answers `CallQueueTooBigException`; a connection with no call in flight
//! and nothing to read for `idle_timeout` is closed (the client reconnects
//! when it next needs one).
//!
//! Thread safety:
//! * The acceptor thread owns the listener.
//! * Each connection has one reader thread, which alone reads its socket
//!   and alone holds its held answers, and a [`ResponseWriter`]: responses
//!   go out whole, one after another, written by whichever thread is
//!   writing (see its module).
//! * Workers call `RpcServices::call`, and readers `answer_now`,
//!   concurrently (see [`crate::service`]).
//! * [`RpcServer::shutdown`] (or drop) stops accepting, stops every reader
//!   from reading further calls, lets the calls already read finish and
//!   their responses go out (for at most `shutdown_grace`), then closes the
//!   sockets and joins every thread it started.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, BufReader, ErrorKind, Read};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::cell_block::CellCodec;
use crate::error::{RpcError, WireError, class};
use crate::frame::{self, DEFAULT_MAX_REQUEST_SIZE};
use crate::pb::hbase::pb::{CellBlockMeta, ConnectionHeader, RequestHeader, ResponseHeader};
use crate::pool::{Refused, WorkerPool};
use crate::preamble::{self, PREAMBLE_LEN, Preamble};
use crate::response_writer::ResponseWriter;
use crate::service::{CONNECTION_REGISTRY_SERVICE, Call, GET_CONNECTION_REGISTRY, Immediate, Reply, RpcServices};

/// The call id of answers that belong to no call (preamble responses and
/// fatal connection errors): HBase's -1.
const NO_CALL: u32 = u32::MAX;

/// The most of a too-big request's header the server reads to find its
/// call id.
const MAX_HEADER_OF_TOO_BIG: usize = 64 * 1024;

/// How long a refused connection is drained before it closes, so the
/// client reads the refusal instead of a reset.
const DRAIN_BEFORE_CLOSE: Duration = Duration::from_secs(2);

/// The server's limits and sizes.
#[derive(Debug, Clone)]
pub struct RpcServerConfig {
    /// Threads that run calls (HBase's handler count).
    pub workers: usize,
    /// Calls read and waiting for a worker, over all connections.
    pub queue_len: usize,
    /// The largest call frame accepted (`hbase.ipc.max.request.size`).
    pub max_request_size: usize,
    /// A connection with no call in flight and nothing read for this long is
    /// closed; a call frame that stalls this long mid-way closes it too.
    pub idle_timeout: Duration,
    /// How long writing one response may block on a client that does not
    /// read; then the connection is closed. A worker writes its call's
    /// response itself, so this bounds how long a stalled client can hold a
    /// worker.
    pub write_timeout: Duration,
    /// How long shutdown waits for calls already read to finish.
    pub shutdown_grace: Duration,
}

impl Default for RpcServerConfig {
    fn default() -> Self {
        Self {
            workers: 16,
            queue_len: 1024,
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
            // HBase's client keeps an idle connection for 2 minutes
            // (hbase.ipc.client.connection.minIdleTimeBeforeClose); the
            // server waits a little longer so the client closes first.
            idle_timeout: Duration::from_secs(150),
            write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// A running server. Dropping it shuts it down.
pub struct RpcServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    services: Arc<dyn RpcServices>,
    config: RpcServerConfig,
    pool: WorkerPool,
    stopping: AtomicBool,
    /// A handle on every open connection's socket, to stop its reader.
    connections: Mutex<HashMap<u64, TcpStream>>,
    readers: Mutex<Vec<JoinHandle<()>>>,
    next_connection: AtomicU64,
}

impl RpcServer {
    /// Serves `listener` with the default limits.
    pub fn start(listener: TcpListener, services: Arc<dyn RpcServices>) -> io::Result<Self> {
        Self::start_with(listener, services, RpcServerConfig::default())
    }

    pub fn start_with(
        listener: TcpListener,
        services: Arc<dyn RpcServices>,
        config: RpcServerConfig,
    ) -> io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let pool = WorkerPool::new(config.workers, config.queue_len, "hbase-rpc-worker")?;
        let shared = Arc::new(Shared {
            services,
            config,
            pool,
            stopping: AtomicBool::new(false),
            connections: Mutex::new(HashMap::new()),
            readers: Mutex::new(Vec::new()),
            next_connection: AtomicU64::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new().name("hbase-rpc-accept".into()).spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(Self { local_addr, shared, acceptor: Some(acceptor) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and reading, lets calls already read finish (for at
    /// most `shutdown_grace`), closes every connection and joins every
    /// thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // The acceptor is blocked in accept(): a connection wakes it, and it
        // sees `stopping`.
        let _ = TcpStream::connect_timeout(&wake_address(self.local_addr), Duration::from_secs(1));
        let _ = acceptor.join();
        // Readers blocked in read() see end of stream; they then wait for
        // their calls in flight before closing.
        for stream in lock(&self.shared.connections).values() {
            let _ = stream.shutdown(Shutdown::Read);
        }
        let readers = std::mem::take(&mut *lock(&self.shared.readers));
        for reader in readers {
            let _ = reader.join();
        }
        self.shared.pool.shutdown();
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where to connect to reach a listener (its unspecified address is not).
fn wake_address(addr: SocketAddr) -> SocketAddr {
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() { Ipv4Addr::LOCALHOST.into() } else { Ipv6Addr::LOCALHOST.into() });
    }
    addr
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let stream = match stream {
            Ok(stream) => stream,
            // E.g. out of file descriptors: wait for some to close rather
            // than spin.
            Err(_) => {
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        lock(&shared.connections).insert(id, handle);
        let spawned = {
            let shared = Arc::clone(shared);
            thread::Builder::new().name(format!("hbase-rpc-conn-{id}")).spawn(move || {
                serve_connection(stream, &shared);
                lock(&shared.connections).remove(&id);
            })
        };
        let mut readers = lock(&shared.readers);
        readers.retain(|r| !r.is_finished());
        match spawned {
            Ok(reader) => readers.push(reader),
            Err(_) => {
                lock(&shared.connections).remove(&id);
            }
        }
    }
}

/// Calls of one connection read but not yet answered; the reader waits for
/// none to remain before it closes the socket.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    zero: Condvar,
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        *lock(&self.count) += 1;
        InFlightGuard(Arc::clone(self))
    }

    fn is_busy(&self) -> bool {
        *lock(&self.count) > 0
    }

    fn wait_idle(&self, timeout: Duration) {
        let guard = lock(&self.count);
        let _ = self.zero.wait_timeout_while(guard, timeout, |n| *n > 0);
    }
}

/// One call in flight; dropping it (when the response is written, or the
/// job is dropped unrun) counts the call out.
struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut count = lock(&self.0.count);
        *count -= 1;
        if *count == 0 {
            self.0.zero.notify_all();
        }
    }
}

/// What every call of a connection shares.
struct Connection {
    shared: Arc<Shared>,
    peer: SocketAddr,
    service: Arc<str>,
    codec: Option<CellCodec>,
    user: Option<String>,
    writer: Arc<ResponseWriter>,
    in_flight: Arc<InFlight>,
}

fn serve_connection(stream: TcpStream, shared: &Arc<Shared>) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let timeout = Some(shared.config.idle_timeout);
    let write_timeout = Some(shared.config.write_timeout);
    let (Ok(()), Ok(()), Ok(())) =
        (stream.set_nodelay(true), stream.set_read_timeout(timeout), stream.set_write_timeout(write_timeout))
    else {
        return;
    };
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let writer = Arc::new(ResponseWriter::new(writer));
    let in_flight = Arc::new(InFlight::default());
    let mut reader = BufReader::new(stream);
    // Whatever ends the connection (end of stream, idleness, shutdown, a
    // refused or malformed frame: each answered before this point where
    // HBase answers it), the calls already read still get their responses.
    let _ = serve(&mut reader, shared, peer, &writer, &in_flight);
    in_flight.wait_idle(shared.config.shutdown_grace);
    writer.close(Shutdown::Both);
}

fn serve(
    reader: &mut BufReader<TcpStream>,
    shared: &Arc<Shared>,
    peer: SocketAddr,
    writer: &Arc<ResponseWriter>,
    in_flight: &Arc<InFlight>,
) -> Result<(), WireError> {
    // The preamble; a security probe comes before the real one.
    loop {
        let mut bytes = [0u8; PREAMBLE_LEN];
        if !read_start(reader, shared, in_flight, &mut bytes, "preamble")? {
            return Ok(());
        }
        match preamble::parse(bytes) {
            Ok(Preamble::Rpc) => break,
            Ok(Preamble::Security) => {
                let error = RpcError::rpc_layer(class::SECURITY_NOT_ENABLED, "security is not enabled", false);
                writer.send(&error_response(NO_CALL, &error))?;
            }
            Ok(Preamble::Registry) => {
                answer_registry(shared, peer, writer)?;
                drain_and_close(reader, writer);
                return Ok(());
            }
            Err(e) => {
                refuse(reader, writer, &preamble::refusal(bytes, &e, peer));
                return Err(e);
            }
        }
    }

    let Some(header) = read_whole_frame(reader, shared, in_flight)? else {
        return Ok(());
    };
    let connection = match accept_header(header, shared, peer, writer, in_flight) {
        Ok(connection) => connection,
        Err(refused) => {
            let (error, refusal) = *refused;
            refuse(reader, writer, &refusal);
            return Err(error);
        }
    };

    let mut held = HeldAnswers::default();
    let result = serve_calls(reader, &connection, &mut held);
    // The answers already given go out whatever ended the connection.
    let sent = held.send(writer);
    result.and(sent.map_err(WireError::from))
}

/// Reads the connection's calls and runs them until it ends. The answers
/// given on this thread (see [`RpcServices::answer_now`]) are held until
/// no whole frame is left to read, then written together: the calls a
/// client sent in one segment are answered in one, and its event loop
/// wakes once for them.
fn serve_calls(
    reader: &mut BufReader<TcpStream>,
    connection: &Connection,
    held: &mut HeldAnswers,
) -> Result<(), WireError> {
    let shared = &connection.shared;
    loop {
        if !held.is_empty() && (held.is_full() || !whole_frame_buffered(reader.buffer())) {
            held.send(&connection.writer)?;
        }
        let mut len = [0u8; 4];
        if !read_start(reader, shared, &connection.in_flight, &mut len, "frame length")? {
            return Ok(());
        }
        let len = u32::from_be_bytes(len);
        if let Err(e) = frame::check_length(len, shared.config.max_request_size) {
            held.send(&connection.writer)?;
            answer_too_big(reader, connection, len);
            return Err(e);
        }
        let mut frame = frame::read_body(reader, len as usize)?;
        let header = match frame::take_request_header(&mut frame) {
            Ok(header) => header,
            Err(e) => {
                let error = RpcError::rpc_layer(
                    class::FATAL_CONNECTION,
                    format!("malformed request header from {}: {e}", connection.peer),
                    true,
                );
                held.send(&connection.writer)?;
                refuse(reader, &connection.writer, &error);
                return Err(e);
            }
        };
        dispatch(connection, header, frame, held);
    }
}

/// Whether `buffered` (what the reader holds, unread) starts with a whole
/// frame: reading it cannot wait on the socket.
fn whole_frame_buffered(buffered: &[u8]) -> bool {
    match buffered {
        [a, b, c, d, rest @ ..] => rest.len() >= u32::from_be_bytes([*a, *b, *c, *d]) as usize,
        _ => false,
    }
}

/// Held answers beyond this many bytes are written without waiting for the
/// reader's buffer to empty.
const MAX_HELD_BYTES: usize = 256 << 10;

/// Response frames the reader thread produced (answers given at once and
/// refusals), held to go out in one write; owned by the reader thread.
#[derive(Default)]
struct HeldAnswers {
    frames: Vec<u8>,
    /// The frame being encoded (`encode_reply` writes a whole buffer).
    one: Vec<u8>,
}

impl HeldAnswers {
    fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    fn is_full(&self) -> bool {
        self.frames.len() >= MAX_HELD_BYTES
    }

    fn push(&mut self, call_id: u32, codec: Option<CellCodec>, result: Result<Reply, RpcError>) {
        encode_reply(&mut self.one, call_id, codec, result);
        self.frames.extend_from_slice(&self.one);
        if self.one.capacity() > KEPT_RESPONSE_CAPACITY {
            self.one = Vec::new();
        }
    }

    fn push_error(&mut self, call_id: u32, error: &RpcError) {
        self.frames.extend_from_slice(&error_response(call_id, error));
    }

    /// Writes what is held (if anything) and empties it.
    fn send(&mut self, writer: &ResponseWriter) -> io::Result<()> {
        if self.frames.is_empty() {
            return Ok(());
        }
        let result = writer.send(&self.frames);
        self.frames.clear();
        if self.frames.capacity() > KEPT_RESPONSE_CAPACITY {
            self.frames = Vec::new();
        }
        result
    }
}

/// Fills `buf` with the start of the next preamble or frame, waiting as long
/// as the connection is busy or not yet idle. `false`: the stream ended
/// cleanly, the connection went idle, or the server is stopping.
fn read_start(
    reader: &mut impl Read,
    shared: &Shared,
    in_flight: &InFlight,
    buf: &mut [u8],
    what: &'static str,
) -> Result<bool, WireError> {
    let mut idle_since = Instant::now();
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(WireError::Truncated { what, need: buf.len(), have: got });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) && got == 0 => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return Ok(false);
                }
                if in_flight.is_busy() {
                    idle_since = Instant::now();
                } else if idle_since.elapsed() >= shared.config.idle_timeout {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

fn read_whole_frame(
    reader: &mut BufReader<TcpStream>,
    shared: &Shared,
    in_flight: &InFlight,
) -> Result<Option<Bytes>, WireError> {
    let mut len = [0u8; 4];
    if !read_start(reader, shared, in_flight, &mut len, "frame length")? {
        return Ok(None);
    }
    let len = u32::from_be_bytes(len);
    frame::check_length(len, shared.config.max_request_size)?;
    frame::read_body(reader, len as usize).map(Some)
}

/// Checks the connection header; on refusal, the error and the fatal
/// exception HBase answers it with.
fn accept_header(
    frame: Bytes,
    shared: &Arc<Shared>,
    peer: SocketAddr,
    writer: &Arc<ResponseWriter>,
    in_flight: &Arc<InFlight>,
) -> Result<Connection, Box<(WireError, RpcError)>> {
    let fatal = |class_name: &'static str, e: WireError| {
        let refusal = RpcError::rpc_layer(class_name, e.to_string(), true);
        Box::new((e, refusal))
    };
    let header: ConnectionHeader =
        frame::decode_connection_header(frame).map_err(|e| fatal(class::FATAL_CONNECTION, e))?;
    let service = header
        .service_name
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| fatal(class::FATAL_CONNECTION, WireError::NoService))?;
    let codec = CellCodec::from_class_name(header.cell_block_codec_class.as_deref())
        .map_err(|e| fatal(class::UNSUPPORTED_CELL_CODEC, e))?;
    if let Some(compressor) = header.cell_block_compressor_class.as_deref().filter(|c| !c.is_empty()) {
        return Err(fatal(class::UNSUPPORTED_COMPRESSION, WireError::UnsupportedCompressor(compressor.to_owned())));
    }
    // With SIMPLE authentication and no crypto negotiated, HBase's server
    // sends nothing back for the connection header; neither does this one.
    Ok(Connection {
        shared: Arc::clone(shared),
        peer,
        service: service.into(),
        codec,
        user: header.user_info.map(|u| u.effective_user),
        writer: Arc::clone(writer),
        in_flight: Arc::clone(in_flight),
    })
}

/// Decodes the rest of a call and runs it: answered here when the services
/// can answer it at once, else queued for a worker. What cannot run is
/// answered here.
fn dispatch(connection: &Connection, header: RequestHeader, body: Bytes, held: &mut HeldAnswers) {
    let call_id = header.call_id();
    let call = match prepare_call(connection, &header, body) {
        Ok(call) => call,
        Err(error) => {
            held.push_error(call_id, &error);
            return;
        }
    };
    let call = match catch_unwind(AssertUnwindSafe(|| connection.shared.services.answer_now(call))) {
        Ok(Immediate::Later(call)) => call,
        Ok(Immediate::Answered(result)) => {
            held.push(call_id, connection.codec, result);
            return;
        }
        Err(_) => {
            let error = RpcError::io("the server failed the call (its handler panicked)");
            held.push_error(call_id, &error);
            return;
        }
    };
    let guard = connection.in_flight.enter();
    let services = Arc::clone(&connection.shared.services);
    let writer = Arc::clone(&connection.writer);
    let codec = connection.codec;
    let job = Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(|| services.call(call)))
            .unwrap_or_else(|_| Err(RpcError::io("the server failed the call (its handler panicked)")));
        RESPONSE.with_borrow_mut(|response| {
            encode_reply(response, call_id, codec, result);
            let _ = writer.send(response);
            if response.capacity() > KEPT_RESPONSE_CAPACITY {
                *response = Vec::new();
            }
        });
        drop(guard);
    });
    if let Err(refused) = connection.shared.pool.submit(job) {
        let error = match refused {
            Refused::QueueFull => RpcError::rpc_layer(
                class::CALL_QUEUE_TOO_BIG,
                format!("Call queue is full on {}, too many items queued ?", connection.peer),
                false,
            ),
            Refused::ShutDown => RpcError::rpc_layer(class::IO, "the server is shutting down", false),
        };
        held.push_error(call_id, &error);
    }
}

fn prepare_call(connection: &Connection, header: &RequestHeader, body: Bytes) -> Result<Call, RpcError> {
    let method = header.method_name().to_owned();
    if !header.request_param() {
        return Err(RpcError::rpc_layer(
            class::DO_NOT_RETRY,
            format!("Invalid request header: call {} of {} has no request message", header.call_id(), method),
            true,
        ));
    }
    let unreadable = |e: &dyn std::fmt::Display| {
        RpcError::rpc_layer(
            class::DO_NOT_RETRY,
            format!("unable to read call parameter of {}.{method} from {}: {e}", connection.service, connection.peer),
            true,
        )
    };
    let request = frame::split_request_body(header, body).map_err(|e| unreadable(&e))?;
    let cells = match (connection.codec, request.cell_block.is_empty()) {
        (_, true) => Vec::new(),
        (Some(codec), false) => codec.decode(&request.cell_block).map_err(|e| unreadable(&e))?,
        (None, false) => return Err(unreadable(&"a cell block, but the connection named no codec")),
    };
    Ok(Call {
        service: Arc::clone(&connection.service),
        method,
        param: request.param,
        cells,
        cell_block_supported: connection.codec.is_some(),
        priority: header.priority(),
        timeout: header.timeout.filter(|&t| t > 0).map(|t| Duration::from_millis(u64::from(t))),
        user: connection.user.clone(),
        peer: connection.peer,
    })
}

thread_local! {
    /// A pool worker's response frame, kept from call to call: a scan's
    /// response (a thousand cells, ~150 KB) was two fresh buffers above
    /// malloc's mmap threshold, mapped, faulted in page by page and unmapped
    /// for every call (a sixth of a YCSB E scan's server time).
    static RESPONSE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A worker keeps its response buffer up to this capacity (a bigger one,
/// from an unusually large response, is let go after its call).
const KEPT_RESPONSE_CAPACITY: usize = 4 << 20;

/// Writes the response frame to `call_id` into `out`: the reply's message
/// and its cells encoded in place as the cell block, or the error.
fn encode_reply(out: &mut Vec<u8>, call_id: u32, codec: Option<CellCodec>, result: Result<Reply, RpcError>) {
    let reply = match result {
        Ok(reply) => reply,
        Err(error) => {
            *out = error_response(call_id, &error);
            return;
        }
    };
    let (codec, block_len) = match codec {
        _ if reply.cells.cell_count() == 0 => (None, 0),
        Some(codec) => (Some(codec), codec.source_len(reply.cells.as_ref())),
        None => {
            let error = RpcError::io(format!(
                "the server answered with {} cells in a cell block, but the client named no codec",
                reply.cells.cell_count()
            ));
            *out = error_response(call_id, &error);
            return;
        }
    };
    let header = ResponseHeader {
        call_id: Some(call_id),
        exception: None,
        cell_block_meta: (block_len > 0).then_some(CellBlockMeta { length: Some(block_len as u32) }),
    };
    let written = frame::encode_response_into(out, &header, Some(&reply.message), block_len, |out| match codec {
        Some(codec) => codec.encode_source(reply.cells.as_ref(), out),
        None => Ok(()),
    });
    if let Err(e) = written {
        *out = error_response(call_id, &RpcError::io(format!("the response's cells: {e}")));
    }
}

fn error_response(call_id: u32, error: &RpcError) -> Vec<u8> {
    let header = ResponseHeader {
        call_id: Some(call_id),
        exception: Some(error.to_exception_response()),
        cell_block_meta: None,
    };
    frame::encode_response(&header, None, &[])
}

/// The registry probe: the cluster id from the services, or, when they have
/// none, the refusal an HBase server older than the probe gives (the client
/// then goes on without a cluster id).
fn answer_registry(shared: &Shared, peer: SocketAddr, writer: &ResponseWriter) -> io::Result<()> {
    let call = Call {
        service: CONNECTION_REGISTRY_SERVICE.into(),
        method: GET_CONNECTION_REGISTRY.to_owned(),
        param: Bytes::new(),
        cells: Vec::new(),
        cell_block_supported: false,
        priority: 0,
        timeout: None,
        user: None,
        peer,
    };
    let response = match catch_unwind(AssertUnwindSafe(|| shared.services.call(call))) {
        Ok(Ok(reply)) => {
            let header = ResponseHeader { call_id: Some(NO_CALL), ..Default::default() };
            frame::encode_response(&header, Some(&reply.message), &[])
        }
        Ok(Err(_)) | Err(_) => {
            let refusal = preamble::refusal(*preamble::REGISTRY_PREAMBLE, &WireError::BadMagic(*b"Regi"), peer);
            error_response(NO_CALL, &refusal)
        }
    };
    writer.send(&response)
}

/// A frame over the limit: HBase reads its request header for the call id,
/// answers `RequestTooBigException` under it and closes.
fn answer_too_big(reader: &mut BufReader<TcpStream>, connection: &Connection, len: u32) {
    let message = format!(
        "RPC data length of {len} received from {} is greater than max allowed {}. Set \"hbase.ipc.max.request.size\" on server to override this limit (not recommended)",
        connection.peer, connection.shared.config.max_request_size
    );
    let error = RpcError::rpc_layer(class::REQUEST_TOO_BIG, message, true);
    let call_id = read_too_big_call_id(reader, len).unwrap_or(NO_CALL);
    let _ = connection.writer.send(&error_response(call_id, &error));
    drain_and_close(reader, &connection.writer);
}

fn read_too_big_call_id(reader: &mut impl Read, frame_len: u32) -> Option<u32> {
    // The varint length of the header, a byte at a time (at most five).
    let mut varint = Vec::with_capacity(5);
    loop {
        let mut b = [0u8; 1];
        reader.read_exact(&mut b).ok()?;
        varint.push(b[0]);
        if b[0] & 0x80 == 0 || varint.len() == 5 {
            break;
        }
    }
    let len = prost::decode_length_delimiter(&varint[..]).ok()?;
    if len > MAX_HEADER_OF_TOO_BIG || len > frame_len as usize {
        return None;
    }
    let header = frame::read_body(reader, len).ok()?;
    <RequestHeader as prost::Message>::decode(header).ok()?.call_id
}

/// Writes a fatal refusal, then closes the connection as HBase does.
fn refuse(reader: &mut BufReader<TcpStream>, writer: &ResponseWriter, error: &RpcError) {
    if writer.send(&error_response(NO_CALL, error)).is_ok() {
        drain_and_close(reader, writer);
    }
}

/// Ends the connection so the client reads what was written: closing a
/// socket with unread bytes in it sends a reset, which can destroy the
/// response in flight. So: send end of stream, and read (and drop) what the
/// client still sends, for a bounded time.
fn drain_and_close(reader: &mut BufReader<TcpStream>, writer: &ResponseWriter) {
    writer.close(Shutdown::Write);
    let deadline = Instant::now() + DRAIN_BEFORE_CLOSE;
    let mut sink = [0u8; 8192];
    while let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
        if reader.get_ref().set_read_timeout(Some(left)).is_err() {
            break;
        }
        match reader.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}
