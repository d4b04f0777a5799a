//! A connection's responses, written whole and one after another by
//! whichever worker is writing (flat combining): a worker that finds
//! another one writing leaves its response in the queue and goes back to
//! the pool, and the writing worker sends whatever queued meanwhile before
//! it stops writing.
//!
//! Why: HBase's client multiplexes all its threads over one connection per
//! server, so every worker's response goes out through one socket. With a
//! socket under a plain mutex, a profile of YCSB C had workers asleep on
//! that mutex (futex waits) and waking each other, and one `send` per
//! response; here a busy connection's responses leave in batches, and no
//! worker waits for another's write.
//!
//! Invariants:
//! * Only the thread that set `writing` writes to the socket, and it
//!   clears `writing` only under the lock with the queue empty: a response
//!   queued is always sent (or the connection closed).
//! * Responses are queued whole and sent in the order queued; bytes of two
//!   responses never interleave.
//! * After a failed write the socket is shut down and every later send
//!   fails: a half-written response corrupts the stream, so the client must
//!   fail its calls rather than misread them.
//! * [`ResponseWriter::close`] waits for the writer to finish (the queue
//!   drained), then shuts the socket down; later sends fail.
//! * The queue holds at most [`MAX_QUEUED_BYTES`] plus one response: a
//!   sender that finds it fuller waits for the writer to take it. A client
//!   that sends calls and reads their answers slowly (or not at all) holds
//!   workers, as it did when each worker wrote its own response, instead of
//!   growing the server's memory without bound.
//!
//! Thread safety: the queue and flags are behind one mutex, held only to
//! queue, take or flag, never across a socket write. A writer is bounded by
//! the socket's write timeout for each batch it writes.

use std::io::{self, ErrorKind, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Queued bytes beyond which a sender waits (see the module's invariants):
/// sixteen answers of the client's default 2 MB scan size.
const MAX_QUEUED_BYTES: usize = 32 << 20;

/// The most queue capacity kept between batches (a scan's response can be
/// megabytes; a connection should not hold that much once idle).
const KEPT_QUEUE_CAPACITY: usize = 4 << 20;

#[derive(Default)]
struct Outbox {
    /// Whole responses, one after another, waiting for the writer.
    queued: Vec<u8>,
    /// A thread is writing to the socket.
    writing: bool,
    /// The socket was shut down (a write failed, or `close`).
    closed: bool,
}

/// The writing side of one connection (see the module's invariants).
pub struct ResponseWriter {
    stream: TcpStream,
    outbox: Mutex<Outbox>,
    /// Signalled when `writing` is cleared or the writer takes the queue.
    changed: Condvar,
}

fn closed_error() -> io::Error {
    io::Error::new(ErrorKind::NotConnected, "the connection is closed")
}

impl ResponseWriter {
    pub fn new(stream: TcpStream) -> ResponseWriter {
        ResponseWriter { stream, outbox: Mutex::new(Outbox::default()), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `response` (whole frames): written now, or queued for the
    /// thread writing at the time, which sends it before it stops. An
    /// error when the connection is closed or this thread's write failed;
    /// a queued response whose later write fails closes the connection.
    pub fn send(&self, response: &[u8]) -> io::Result<()> {
        let mut out = self.lock();
        while out.writing && !out.closed && out.queued.len() >= MAX_QUEUED_BYTES {
            out = self.changed.wait(out).unwrap_or_else(|p| p.into_inner());
        }
        if out.closed {
            return Err(closed_error());
        }
        if out.writing {
            out.queued.extend_from_slice(response);
            return Ok(());
        }
        out.writing = true;
        drop(out);
        let result = (&self.stream).write_all(response);
        let mut failed = result.is_err();
        let mut batch = Vec::new();
        loop {
            let mut out = self.lock();
            if failed {
                let _ = self.stream.shutdown(Shutdown::Both);
                out.closed = true;
                out.queued = Vec::new();
            }
            if out.closed || out.queued.is_empty() {
                out.writing = false;
                if out.queued.capacity() == 0 && batch.capacity() <= KEPT_QUEUE_CAPACITY {
                    batch.clear();
                    out.queued = batch;
                }
                drop(out);
                self.changed.notify_all();
                return result;
            }
            batch.clear();
            if batch.capacity() > KEPT_QUEUE_CAPACITY {
                batch = Vec::new();
            }
            std::mem::swap(&mut out.queued, &mut batch);
            drop(out);
            self.changed.notify_all();
            // Other calls' responses: a failure closes the connection (their
            // clients see it), while this call's own response went out.
            failed = (&self.stream).write_all(&batch).is_err();
        }
    }

    /// Waits until no thread is writing (everything queued is sent), then
    /// shuts down `how` of the socket; every later send fails.
    pub fn close(&self, how: Shutdown) {
        let mut out = self.lock();
        while out.writing {
            out = self.changed.wait(out).unwrap_or_else(|p| p.into_inner());
        }
        out.closed = true;
        out.queued = Vec::new();
        let _ = self.stream.shutdown(how);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A connected pair: our writer's side, and the client's.
    fn pair() -> (Arc<ResponseWriter>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        (Arc::new(ResponseWriter::new(server)), client)
    }

    /// A frame: 4-byte length, then `len` bytes of `tag`.
    fn frame(tag: u8, len: usize) -> Vec<u8> {
        let mut f = (len as u32).to_be_bytes().to_vec();
        f.resize(4 + len, tag);
        f
    }

    /// Reads frames until end of stream; each must be whole (one tag).
    fn read_frames(mut client: TcpStream) -> Vec<(u8, usize)> {
        let mut all = Vec::new();
        client.read_to_end(&mut all).expect("read");
        let mut frames = Vec::new();
        let mut at = 0;
        while at < all.len() {
            let len = u32::from_be_bytes(all[at..at + 4].try_into().unwrap()) as usize;
            let body = &all[at + 4..at + 4 + len];
            assert!(body.iter().all(|&b| b == body[0]), "frame at {at} mixes bytes of two responses");
            frames.push((body[0], len));
            at += 4 + len;
        }
        frames
    }

    #[test]
    fn concurrent_responses_arrive_whole_and_each_once() {
        let (writer, client) = pair();
        let reader = std::thread::spawn(move || read_frames(client));
        let threads: Vec<_> = (0..8u8)
            .map(|t| {
                let writer = Arc::clone(&writer);
                std::thread::spawn(move || {
                    for i in 0..200usize {
                        writer.send(&frame(t, 1 + (i * 37 + t as usize * 1000) % 20_000)).expect("send");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("sender");
        }
        writer.close(Shutdown::Both);
        let frames = reader.join().expect("reader");
        assert_eq!(frames.len(), 8 * 200);
        for t in 0..8u8 {
            let mine: Vec<usize> = frames.iter().filter(|f| f.0 == t).map(|f| f.1).collect();
            let sent: Vec<usize> = (0..200usize).map(|i| 1 + (i * 37 + t as usize * 1000) % 20_000).collect();
            assert_eq!(mine, sent, "sender {t}'s responses, in the order it sent them");
        }
    }

    #[test]
    fn a_sender_does_not_wait_for_another_ones_write() {
        let (writer, client) = pair();
        // A response larger than both sockets' buffers: its writer blocks
        // until the client reads, which it does only after the second send
        // below has returned.
        let big = frame(1, 64 << 20);
        let first = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || writer.send(&big))
        };
        while !writer.lock().writing {
            std::thread::yield_now();
        }
        let (returned, second_returned) = mpsc::channel();
        let second = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                let r = writer.send(&frame(2, 10));
                returned.send(()).expect("signal");
                r
            })
        };
        // With a socket under a plain mutex, the second sender would wait
        // for the first's write, which waits for this reader: a deadlock.
        second_returned.recv_timeout(Duration::from_secs(30)).expect("the second send returned while the first wrote");
        let reader = std::thread::spawn(move || read_frames(client));
        first.join().expect("first").expect("first send");
        second.join().expect("second").expect("second send");
        writer.close(Shutdown::Both);
        assert_eq!(reader.join().expect("reader"), vec![(1, 64 << 20), (2, 10)], "whole, in the order queued");
    }

    #[test]
    fn a_full_queue_holds_its_senders_until_the_client_reads() {
        let (writer, client) = pair();
        let first = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || writer.send(&frame(1, 64 << 20)))
        };
        while !writer.lock().writing {
            std::thread::yield_now();
        }
        // Two of these fill the queue past its cap; the third must wait for
        // the writer, which waits for the client, which reads only later.
        let part = MAX_QUEUED_BYTES / 2 + 1;
        let (sent, sends) = mpsc::channel();
        let second = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                for tag in 2..5u8 {
                    writer.send(&frame(tag, part)).expect("send");
                    sent.send(tag).expect("signal");
                }
            })
        };
        assert_eq!(sends.recv_timeout(Duration::from_secs(30)), Ok(2));
        assert_eq!(sends.recv_timeout(Duration::from_secs(30)), Ok(3));
        assert_eq!(
            sends.recv_timeout(Duration::from_millis(500)),
            Err(mpsc::RecvTimeoutError::Timeout),
            "a send past the cap returned while the client read nothing"
        );
        let reader = std::thread::spawn(move || read_frames(client));
        assert_eq!(sends.recv_timeout(Duration::from_secs(30)), Ok(4), "the send went ahead once the client read");
        first.join().expect("first").expect("first send");
        second.join().expect("second");
        writer.close(Shutdown::Both);
        assert_eq!(reader.join().expect("reader"), vec![(1, 64 << 20), (2, part), (3, part), (4, part)]);
    }

    #[test]
    fn after_close_sends_fail_and_queued_responses_went_out_first() {
        let (writer, client) = pair();
        writer.send(&frame(3, 100)).expect("send");
        writer.close(Shutdown::Write);
        assert_eq!(writer.send(&frame(4, 1)).expect_err("closed").kind(), ErrorKind::NotConnected);
        assert_eq!(read_frames(client), vec![(3, 100)]);
    }

    #[test]
    fn a_failed_write_closes_the_connection() {
        let (writer, client) = pair();
        drop(client);
        // Writing to a socket the peer closed fails (reset or broken pipe)
        // within a few writes.
        let mut failed = false;
        for _ in 0..1000 {
            if writer.send(&frame(5, 64 << 10)).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "writes to a closed peer fail");
        assert_eq!(writer.send(&frame(6, 1)).expect_err("closed").kind(), ErrorKind::NotConnected);
    }
}
