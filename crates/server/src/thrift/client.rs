//! A Thrift client for our server (and HBase's Thrift v1 gateway): the
//! generated `HbaseSyncClient` over a TCP connection with the chosen
//! transport and protocol. Used by `accordion shell` and the bench's
//! thrift engine.

use std::net::ToSocketAddrs;
use std::time::Duration;

use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol, TInputProtocol,
    TOutputProtocol,
};
use thrift::transport::{
    TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport, TIoChannel,
    TTcpChannel,
};

pub use crate::thrift::hbase_thrift::{HbaseSyncClient, THbaseSyncClient};

pub type ThriftClient = HbaseSyncClient<Box<dyn TInputProtocol + Send>, Box<dyn TOutputProtocol + Send>>;

/// What a region server forwarding calls to another sends before its
/// first Thrift message (`client::connect_as_peer`): the calls of such a
/// connection are answered here, never forwarded again (`peer/routing.rs`). No
/// wire starts so (Thrift: 0x80, 0x82, 0x00; HTTP: an upper-case method).
pub const PEER_PREAMBLE: &[u8; 5] = b"ACCFW";

/// Connects to `addr` ("host:port") with framed or buffered transport and
/// the compact or binary protocol.
pub fn connect(addr: &str, framed: bool, compact: bool) -> thrift::Result<ThriftClient> {
    over(open(addr)?, framed, compact)
}

/// A connection from one region server to another that forwards calls
/// for the regions the other holds (`peer/routing.rs`): it announces itself with
/// [`PEER_PREAMBLE`], so the other server never forwards
/// its calls again (no loops), and a call may take at most `timeout` to be
/// written or answered (HBase's `hbase.rpc.timeout` is 60 s). With `tls`
/// (a cluster serving TLS) the connection is TLS and presents this
/// server's certificate.
pub fn connect_as_peer(
    addr: &str,
    timeout: Duration,
    tls: Option<&std::sync::Arc<rustls::ClientConfig>>,
) -> thrift::Result<ThriftClient> {
    use std::io::Write;
    match tls {
        None => {
            let mut stream = open(addr)?;
            stream.set_read_timeout(Some(timeout))?;
            stream.set_write_timeout(Some(timeout))?;
            stream.write_all(PEER_PREAMBLE)?;
            over(stream, false, false)
        }
        Some(config) => {
            let mut tls =
                TlsClient(std::sync::Arc::new(parking_lot::Mutex::new(crate::tls::connect(config, addr, timeout)?)));
            tls.write_all(PEER_PREAMBLE)?;
            Ok(over_halves(tls.clone(), tls, false, false))
        }
    }
}

fn open(addr: &str) -> thrift::Result<std::net::TcpStream> {
    let sock = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| thrift::Error::from(std::io::Error::other(format!("{addr} resolves to no address"))))?;
    let stream = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(10))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Connects to a server serving Thrift over TLS (`tls_enabled`), trusting
/// the CA certificates in `ca_file` (PEM); `addr`'s host must be a name or
/// address the server's certificate names.
pub fn connect_tls(addr: &str, ca_file: &std::path::Path, framed: bool, compact: bool) -> thrift::Result<ThriftClient> {
    let config = crate::tls::client_config(ca_file).map_err(|m| thrift::Error::from(std::io::Error::other(m)))?;
    connect_tls_with(addr, &config, framed, compact)
}

/// Connects over TLS with a client configuration of the caller's (one
/// that presents a client certificate, say).
pub fn connect_tls_with(
    addr: &str,
    config: &std::sync::Arc<rustls::ClientConfig>,
    framed: bool,
    compact: bool,
) -> thrift::Result<ThriftClient> {
    let stream = crate::tls::connect(config, addr, Duration::from_secs(60))?;
    let tls = TlsClient(std::sync::Arc::new(parking_lot::Mutex::new(stream)));
    Ok(over_halves(tls.clone(), tls, framed, compact))
}

/// A client's TLS stream, shared by its read and write halves (one call at
/// a time: write the call, then read the answer).
#[derive(Clone)]
struct TlsClient(
    std::sync::Arc<parking_lot::Mutex<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>>,
);

impl std::io::Read for TlsClient {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.0.lock().read(b)
    }
}

impl std::io::Write for TlsClient {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().write(b)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().flush()
    }
}

fn over(stream: std::net::TcpStream, framed: bool, compact: bool) -> thrift::Result<ThriftClient> {
    let (read, write) = TTcpChannel::with_stream(stream).split()?;
    Ok(over_halves(read, write, framed, compact))
}

fn over_halves(
    read: impl std::io::Read + Send + 'static,
    write: impl std::io::Write + Send + 'static,
    framed: bool,
    compact: bool,
) -> ThriftClient {
    let (input, output): (Box<dyn TInputProtocol + Send>, Box<dyn TOutputProtocol + Send>) = match (framed, compact) {
        (false, false) => (
            Box::new(TBinaryInputProtocol::new(TBufferedReadTransport::new(read), true)),
            Box::new(TBinaryOutputProtocol::new(TBufferedWriteTransport::new(write), true)),
        ),
        (true, false) => (
            Box::new(TBinaryInputProtocol::new(TFramedReadTransport::new(read), true)),
            Box::new(TBinaryOutputProtocol::new(TFramedWriteTransport::new(write), true)),
        ),
        (false, true) => (
            Box::new(TCompactInputProtocol::new(TBufferedReadTransport::new(read))),
            Box::new(TCompactOutputProtocol::new(TBufferedWriteTransport::new(write))),
        ),
        (true, true) => (
            Box::new(TCompactInputProtocol::new(TFramedReadTransport::new(read))),
            Box::new(TCompactOutputProtocol::new(TFramedWriteTransport::new(write))),
        ),
    };
    HbaseSyncClient::new(input, output)
}

/// The message of a Thrift error, with HBase's exceptions unwrapped.
pub fn error_message(e: &thrift::Error) -> String {
    use crate::thrift::hbase_thrift::{AlreadyExists, IOError, IllegalArgument};
    if let thrift::Error::User(u) = e {
        if let Some(x) = u.downcast_ref::<IOError>() {
            return format!("IOError: {}", x.message.clone().unwrap_or_default());
        }
        if let Some(x) = u.downcast_ref::<IllegalArgument>() {
            return format!("IllegalArgument: {}", x.message.clone().unwrap_or_default());
        }
        if let Some(x) = u.downcast_ref::<AlreadyExists>() {
            return format!("AlreadyExists: {}", x.message.clone().unwrap_or_default());
        }
    }
    if let thrift::Error::Application(a) = e {
        return format!("TApplicationException: {}", a.message);
    }
    e.to_string()
}
