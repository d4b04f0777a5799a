//! The master's HTTP listener: every region server keeps one connection to
//! it and sends a report on it every few seconds (`reports.rs`), so at a
//! thousand servers it answers hundreds of small requests a second. One
//! thread runs hyper on a current-thread tokio runtime: a report wakes
//! that thread once (epoll), is handled there and answered, instead of
//! crossing from a connection's thread to a handler thread and back as a
//! thread-per-connection server does (the profile of the 1,000-server
//! emulation was those wake-ups, `bench-results/issue55-cluster-scale/`).
//!
//! The master's own handlers stay synchronous ([`HttpRequest`] in,
//! [`HttpReply`] out): the quick ones (a report, a catalog lookup) run on
//! the listener's thread; the ones that may wait (an operator call waits
//! for the poller's pass; pages render the whole view) run on tokio's
//! blocking pool, so a slow call never holds a report back.
//!
//! Thread safety: the handler is shared by the listener's thread and the
//! blocking pool; it must be `Send + Sync` (the master's state behind its
//! mutexes). The thread ends within 100 ms of `stop` being set.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;

/// A request as the master's handlers read it: the body is whole.
#[derive(Debug)]
pub(crate) struct HttpRequest {
    pub method: hyper::Method,
    /// The path and query, as sent.
    pub target: String,
    pub peer: Option<SocketAddr>,
    pub authorization: Option<String>,
    pub body: Bytes,
}

impl HttpRequest {
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub(crate) fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }
}

/// A handler's answer.
#[derive(Debug)]
pub(crate) struct HttpReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl HttpReply {
    /// A plain-text answer (a line).
    pub(crate) fn text(status: u16, text: String) -> HttpReply {
        HttpReply { status, content_type: "text/plain", body: text + "\n" }
    }

    pub(crate) fn json(body: String) -> HttpReply {
        HttpReply { status: 200, content_type: "application/json", body }
    }
}

/// What the listener calls.
pub(crate) struct Handler {
    /// Answers a request.
    pub handle: Box<dyn Fn(HttpRequest) -> HttpReply + Send + Sync>,
    /// Whether a request may block (runs on the blocking pool).
    pub may_block: Box<dyn Fn(&HttpRequest) -> bool + Send + Sync>,
    /// The largest body read; a longer one is answered 413 unread.
    pub max_body: usize,
}

/// Starts the listener's thread on `listener` (already bound).
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    handler: Handler,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("master-http".into()).spawn(move || {
        runtime.block_on(accept(listener, Arc::new(handler), stop));
        // An operator call still waiting on the poller is answered by the
        // poller's refusal; do not wait for it.
        runtime.shutdown_timeout(Duration::from_secs(1));
    })
}

async fn accept(listener: std::net::TcpListener, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the master's HTTP listener cannot start");
            return;
        }
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let handler = handler.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| serve(request, peer, handler.clone()));
                        let io = hyper_util::rt::TokioIo::new(stream);
                        if let Err(e) = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                            tracing::debug!(error = %e, %peer, "master HTTP connection ended");
                        }
                    });
                }
                Err(e) => {
                    // Out of descriptors, most likely: back off a little.
                    tracing::warn!(error = %e, "master HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = tick.tick() => {
                if stop.load(Ordering::Acquire) {
                    return;
                }
            }
        }
    }
}

async fn serve(
    request: hyper::Request<Incoming>,
    peer: SocketAddr,
    handler: Arc<Handler>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, handler.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            let why = format!("a request body is at most {} bytes", handler.max_body);
            return Ok(response(HttpReply::text(413, why)));
        }
        Err(e) => return Ok(response(HttpReply::text(400, format!("cannot read the request: {e}")))),
    };
    let request = HttpRequest {
        method: parts.method,
        target: parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        peer: Some(peer),
        authorization: parts
            .headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body,
    };
    let reply = if (handler.may_block)(&request) {
        let handler = handler.clone();
        match tokio::task::spawn_blocking(move || (handler.handle)(request)).await {
            Ok(reply) => reply,
            Err(e) => HttpReply::text(500, format!("the handler failed: {e}")),
        }
    } else {
        (handler.handle)(request)
    };
    Ok(response(reply))
}

fn response(reply: HttpReply) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(reply.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(reply.content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn listener() -> (std::net::TcpListener, SocketAddr) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        (l, addr)
    }

    /// Sends raw HTTP/1.1 requests on one connection and reads as many
    /// answers (each with a Content-Length).
    fn exchange(addr: SocketAddr, requests: &[String]) -> Vec<(u16, String)> {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut answers = Vec::new();
        let mut buffered = Vec::new();
        for r in requests {
            s.write_all(r.as_bytes()).expect("send");
            loop {
                let text = String::from_utf8_lossy(&buffered).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let head = &text[..end];
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
                        .and_then(|v| v.trim().parse().ok())
                        .expect("a content length");
                    if buffered.len() >= end + 4 + length {
                        let status = head[9..12].parse().expect("status");
                        answers.push((status, text[end + 4..end + 4 + length].to_string()));
                        buffered.drain(..end + 4 + length);
                        break;
                    }
                }
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).expect("read");
                assert!(n > 0, "the connection closed early");
                buffered.extend_from_slice(&chunk[..n]);
            }
        }
        answers
    }

    #[test]
    fn requests_on_one_kept_connection_are_answered_in_order_and_a_long_body_is_refused() {
        let (l, addr) = listener();
        let stop = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            handle: Box::new(|r: HttpRequest| {
                let who = r.peer.map(|p| p.ip().is_loopback()).unwrap_or(false);
                let auth = r.authorization.clone().unwrap_or_default();
                HttpReply::text(
                    200,
                    format!("{} {} {} {} {}", r.method, r.path(), r.query(), r.body.len(), who) + &auth,
                )
            }),
            may_block: Box::new(|r: &HttpRequest| r.path() == "/slow"),
            max_body: 10,
        };
        let thread = spawn(l, handler, stop.clone()).expect("spawn");
        let answers = exchange(
            addr,
            &[
                "POST /report HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".to_string(),
                "GET /slow?a=1 HTTP/1.1\r\nHost: x\r\nAuthorization: t\r\n\r\n".to_string(),
                "POST /report HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world".to_string(),
            ],
        );
        assert_eq!(answers[0], (200, "POST /report  5 true\n".to_string()));
        assert_eq!(answers[1], (200, "GET /slow a=1 0 truet\n".to_string()));
        assert_eq!(answers[2].0, 413, "{answers:?}");
        stop.store(true, Ordering::Release);
        thread.join().expect("the listener stops");
    }
}
