//! One client connection: detects its transport and protocol from the
//! first bytes, then answers calls until the client leaves, breaks the
//! protocol, or the server shuts down.
//!
//! HBase's Thrift server serves one transport and protocol per port; we
//! serve all four on one port, because they can be told apart: a strict
//! binary message starts with 0x80 0x01, a compact one with 0x82, and a
//! framed one with a 4-byte length whose first byte is 0x00 for any frame
//! under 16 MiB, followed by one of the above.
//!
//! Limits: a frame over `max_frame_bytes`, a buffered message over
//! `max_message_bytes` (it has no length in front: it is counted as it is
//! read), a string or container over the protocol limits, or bytes that are
//! no Thrift message close this connection only (HBase does the same);
//! other connections go on. So one message holds at most its cap plus one
//! string in memory, whatever its lengths claim.
//!
//! Thread safety: a connection is served by one thread, which owns its
//! reader, writer and protocols; only the shutdown flag is shared.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thrift::TConfiguration;
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol, TInputProtocol,
    TOutputProtocol,
};
use thrift::server::TProcessor;
use thrift::transport::{TBufferedWriteTransport, TFramedWriteTransport};

use crate::thrift::client::PEER_PREAMBLE;

/// How a connection talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    BinaryBuffered,
    BinaryFramed,
    CompactBuffered,
    CompactFramed,
}

impl Wire {
    /// Detects the wire from a connection's first five bytes (fewer if the
    /// connection sent fewer).
    pub fn detect(first: &[u8]) -> Option<Wire> {
        match first {
            [0x80, 0x01, ..] => Some(Wire::BinaryBuffered),
            [0x82, ..] => Some(Wire::CompactBuffered),
            [0x00, _, _, _, 0x80, ..] => Some(Wire::BinaryFramed),
            [0x00, _, _, _, 0x82, ..] => Some(Wire::CompactFramed),
            _ => None,
        }
    }

    pub fn framed(self) -> bool {
        matches!(self, Wire::BinaryFramed | Wire::CompactFramed)
    }
}

/// Connection limits.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// `hbase.regionserver.thrift.framed.max_frame_size_in_mb` (2 MiB in HBase).
    pub max_frame_bytes: usize,
    /// Largest message on a buffered transport (Thrift's own default
    /// `TConfiguration` maximum message size, 100 MiB).
    pub max_message_bytes: usize,
    /// Longest string or binary field in a message.
    pub max_string_bytes: usize,
    /// Most elements in one list or map.
    pub max_container_len: usize,
    /// How long a call may take to arrive once it has started.
    pub read_timeout: Duration,
    /// `hbase.thrift.server.socket.read.timeout` (60 s): an idle connection
    /// is closed after this long, so idle clients cannot hold every slot.
    pub idle_timeout: Duration,
}

/// A connection's socket: plain TCP, or TLS over it (`tls.rs`).
pub enum Socket {
    Plain(TcpStream),
    Tls(crate::tls::TlsSocket),
}

impl Socket {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Plain(s) => s.set_read_timeout(timeout),
            Socket::Tls(s) => s.set_read_timeout(timeout),
        }
    }

    /// A second handle on the same connection (its writing half).
    fn try_clone(&self) -> io::Result<Socket> {
        Ok(match self {
            Socket::Plain(s) => Socket::Plain(s.try_clone()?),
            Socket::Tls(s) => Socket::Tls(s.clone()),
        })
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Plain(s) => s.read(buf),
            Socket::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Plain(s) => s.write(buf),
            Socket::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Socket::Plain(s) => s.flush(),
            Socket::Tls(s) => s.flush(),
        }
    }
}

/// A buffered reader over the socket that can wait for the next message
/// while watching the shutdown flag, and knows whether it holds bytes
/// already (a pipelining client's next call).
pub struct ConnReader {
    stream: Socket,
    buf: Vec<u8>,
    pos: usize,
    cap: usize,
}

const POLL: Duration = Duration::from_millis(100);

impl ConnReader {
    pub fn new(stream: Socket) -> ConnReader {
        ConnReader { stream, buf: vec![0; 64 * 1024], pos: 0, cap: 0 }
    }

    /// Waits until a message starts (true), the client closes (false), or
    /// `shutdown` is set while the connection is idle (false).
    pub fn wait_for_message(&mut self, shutdown: &AtomicBool, limits: &ConnectionLimits) -> io::Result<bool> {
        if self.pos < self.cap {
            return Ok(true);
        }
        self.stream.set_read_timeout(Some(POLL))?;
        let idle_since = std::time::Instant::now();
        loop {
            if shutdown.load(Ordering::Acquire) || idle_since.elapsed() > limits.idle_timeout {
                return Ok(false);
            }
            match self.stream.read(&mut self.buf) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    (self.pos, self.cap) = (0, n);
                    self.stream.set_read_timeout(Some(limits.read_timeout))?;
                    return Ok(true);
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The socket and the bytes read from it that were not consumed.
    pub fn into_parts(self) -> (Socket, Vec<u8>) {
        (self.stream, self.buf[self.pos..self.cap].to_vec())
    }

    /// The next `n` bytes without consuming them (fewer at end of stream).
    pub fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.cap - self.pos < n {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.cap, 0);
                (self.cap, self.pos) = (self.cap - self.pos, 0);
            }
            let got = self.stream.read(&mut self.buf[self.cap..])?;
            if got == 0 {
                break;
            }
            self.cap += got;
        }
        Ok(&self.buf[self.pos..self.cap.min(self.pos + n)])
    }
}

impl Read for ConnReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.cap {
            // Large reads bypass the buffer.
            if out.len() >= self.buf.len() {
                return self.stream.read(out);
            }
            self.cap = self.stream.read(&mut self.buf)?;
            self.pos = 0;
        }
        let n = out.len().min(self.cap - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Reads one frame of the framed transport at a time, refusing frames over
/// the limit before allocating for them. (The `thrift` crate's framed
/// reader has a fixed 16 MB limit; HBase's is configurable.)
struct FrameReader<'a> {
    inner: &'a mut ConnReader,
    frame: Vec<u8>,
    pos: usize,
    max: usize,
}

impl Read for FrameReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.frame.len() {
            let mut len = [0u8; 4];
            self.inner.read_exact(&mut len)?;
            let len = i32::from_be_bytes(len);
            if len < 0 || len as usize > self.max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("frame of {len} bytes is over the limit of {} bytes", self.max),
                ));
            }
            self.frame.resize(len as usize, 0);
            self.inner.read_exact(&mut self.frame)?;
            self.pos = 0;
        }
        let n = out.len().min(self.frame.len() - self.pos);
        out[..n].copy_from_slice(&self.frame[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Counts the bytes of one buffered message as it is read, refusing it once
/// it passes the limit.
struct CappedReader<'a> {
    inner: &'a mut ConnReader,
    left: usize,
    max: usize,
}

impl Read for CappedReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("message over the limit of {} bytes", self.max),
            ));
        }
        let n = out.len().min(self.left);
        let got = self.inner.read(&mut out[..n])?;
        self.left -= got;
        Ok(got)
    }
}

/// Why a connection ended.
#[derive(Debug)]
pub enum Ended {
    ClientClosed,
    Shutdown,
    /// The first bytes were no Thrift message we speak.
    UnknownWire(Vec<u8>),
    /// An HTTP request, relayed to the server's HTTP port until it ended.
    RelayedHttp,
    /// A protocol or transport error (malformed or oversized message,
    /// unknown method on a buffered transport, timeout, reset).
    Error(thrift::Error),
}

/// Serves one connection until it ends; returns why, and the wire if it was
/// recognised.
///
/// A connection that starts with an HTTP request is relayed to `http`, the
/// server's HTTP listener, when it is given (`http_relay.rs`; over TLS
/// `tls_relay.rs`, which records a verified client certificate in
/// `verified`). With `tls`, the connection speaks TLS (`tls.rs`).
pub fn serve(
    stream: TcpStream,
    processor: &dyn TProcessor,
    limits: &ConnectionLimits,
    shutdown: &AtomicBool,
    http: Option<SocketAddr>,
    tls: Option<&std::sync::Arc<rustls::ServerConfig>>,
    verified: &std::sync::Arc<crate::tls_relay::VerifiedPeers>,
) -> (Ended, Option<Wire>) {
    let _ = stream.set_nodelay(true);
    // A client that stops reading its replies cannot hold this thread
    // for longer than a slow one may take to send a call.
    let _ = stream.set_write_timeout(Some(limits.read_timeout));
    let stream = match tls {
        None => Socket::Plain(stream),
        Some(config) => match crate::tls::TlsSocket::accept(config, stream) {
            Ok(s) => Socket::Tls(s),
            Err(e) => return (Ended::Error(e.into()), None),
        },
    };
    let writer: Box<dyn Write + Send> = match stream.try_clone() {
        Ok(w) => Box::new(w),
        Err(e) => return (Ended::Error(e.into()), None),
    };
    let mut reader = ConnReader::new(stream);
    match reader.wait_for_message(shutdown, limits) {
        Ok(true) => {}
        Ok(false) => {
            return (if shutdown.load(Ordering::Acquire) { Ended::Shutdown } else { Ended::ClientClosed }, None);
        }
        Err(e) => return (Ended::Error(e.into()), None),
    }
    // Five bytes tell a Thrift wire, and an HTTP method with its space.
    let first = match reader.peek(5) {
        Ok(b) => b.to_vec(),
        Err(e) => return (Ended::Error(e.into()), None),
    };
    let first = if first == PEER_PREAMBLE {
        let mut preamble = [0u8; 5];
        if let Err(e) = reader.read_exact(&mut preamble) {
            return (Ended::Error(e.into()), None);
        }
        crate::peer::routing::serve_as_peer();
        match reader
            .wait_for_message(shutdown, limits)
            .and_then(|more| if more { reader.peek(5).map(<[u8]>::to_vec) } else { Ok(Vec::new()) })
        {
            Ok(next) if next.is_empty() => return (Ended::ClientClosed, None),
            Ok(next) => next,
            Err(e) => return (Ended::Error(e.into()), None),
        }
    } else {
        first
    };
    if let Some(http) = http.filter(|_| crate::http_relay::looks_like_http(&first)) {
        // The reader must hold the connection's only handle to give it up.
        drop(writer);
        let (stream, head) = reader.into_parts();
        let relayed = match stream {
            Socket::Plain(stream) => crate::http_relay::relay(stream, &head, http, limits.idle_timeout),
            Socket::Tls(tls) => match tls.into_parts() {
                Some((conn, tcp)) => crate::tls_relay::relay(conn, tcp, &head, http, limits.idle_timeout, verified),
                None => Err(io::Error::other("a TLS connection still shared at its HTTP relay")),
            },
        };
        return match relayed {
            Ok(()) => (Ended::RelayedHttp, None),
            Err(e) => (Ended::Error(e.into()), None),
        };
    }
    let Some(wire) = Wire::detect(&first) else { return (Ended::UnknownWire(first), None) };
    let config = TConfiguration::builder()
        .max_string_size(Some(limits.max_string_bytes))
        .max_container_size(Some(limits.max_container_len))
        .build()
        .expect("valid thrift configuration");
    let mut out: Box<dyn TOutputProtocol> = match wire {
        Wire::BinaryBuffered => Box::new(TBinaryOutputProtocol::new(TBufferedWriteTransport::new(writer), true)),
        Wire::BinaryFramed => Box::new(TBinaryOutputProtocol::new(TFramedWriteTransport::new(writer), true)),
        Wire::CompactBuffered => Box::new(TCompactOutputProtocol::new(TBufferedWriteTransport::new(writer))),
        Wire::CompactFramed => Box::new(TCompactOutputProtocol::new(TFramedWriteTransport::new(writer))),
    };
    let mut frame = Vec::new();
    loop {
        match reader.wait_for_message(shutdown, limits) {
            Ok(true) => {}
            Ok(false) => {
                let why = if shutdown.load(Ordering::Acquire) { Ended::Shutdown } else { Ended::ClientClosed };
                return (why, Some(wire));
            }
            Err(e) => return (Ended::Error(e.into()), Some(wire)),
        }
        // A protocol per call: it borrows the reader only for that call.
        let result = if wire.framed() {
            // Each call is one frame; only the buffer is reused across calls.
            frame.clear();
            let mut fr = FrameReader {
                inner: &mut reader,
                frame: std::mem::take(&mut frame),
                pos: 0,
                max: limits.max_frame_bytes,
            };
            let r = process(wire, &mut fr, &config, processor, out.as_mut());
            frame = fr.frame;
            r
        } else {
            let max = limits.max_message_bytes;
            process(wire, &mut CappedReader { inner: &mut reader, left: max, max }, &config, processor, out.as_mut())
        };
        if let Err(e) = result {
            // An answer the gate withheld is dropped with the connection.
            if !crate::gate::is_withheld(&e) {
                let _ = out.flush();
            }
            return (Ended::Error(e), Some(wire));
        }
    }
}

fn process(
    wire: Wire,
    transport: &mut dyn Read,
    config: &TConfiguration,
    processor: &dyn TProcessor,
    out: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let mut input: Box<dyn TInputProtocol + '_> = match wire {
        Wire::BinaryBuffered | Wire::BinaryFramed => {
            Box::new(TBinaryInputProtocol::with_config(transport, true, config.clone()))
        }
        Wire::CompactBuffered | Wire::CompactFramed => {
            Box::new(TCompactInputProtocol::with_config(transport, config.clone()))
        }
    };
    processor.process(input.as_mut(), out)
}

/// Writes nothing and drops the connection: for refusing a client.
pub fn refuse(mut stream: TcpStream) {
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wires_are_told_apart_by_their_first_bytes() {
        assert_eq!(Wire::detect(&[0x80, 0x01, 0x00, 0x01, 0x00]), Some(Wire::BinaryBuffered));
        assert_eq!(Wire::detect(&[0x82, 0x21, 0x01]), Some(Wire::CompactBuffered));
        assert_eq!(Wire::detect(&[0x00, 0x00, 0x00, 0x20, 0x80]), Some(Wire::BinaryFramed));
        assert_eq!(Wire::detect(&[0x00, 0x00, 0x01, 0x20, 0x82]), Some(Wire::CompactFramed));
        assert_eq!(Wire::detect(b"GET / HTTP/1.1"), None);
        assert_eq!(Wire::detect(&[0x80]), None);
        assert_eq!(Wire::detect(&[]), None);
    }
}
