//! `Lease`: how long this process may still act as a member of the cluster
//! without having heard from ZooKeeper.
//!
//! ZooKeeper expires a session after hearing nothing from its client for
//! the session timeout T, and only then does the master see the member go
//! (and, for a region server, give its regions to others). A process that
//! was paused (SIGSTOP, a long GC-like stall, a frozen VM) learns of its
//! expiry only when it talks to ZooKeeper again, and would meanwhile serve
//! requests as if it still held its regions. The lease closes that window:
//! a keeper thread proves the session alive with a round trip every T/4 and
//! records when the proof was *sent*; the process may act for T/2 after
//! that instant. ZooKeeper received the proof after it was sent, so it
//! cannot expire the session before send + T; T/2 leaves room for clock
//! rate and scheduling slack on the same machine.
//!
//! For a region server the round trip reads its own membership node
//! (`rs/<name>`): a session that is alive but whose node is gone (deleted
//! by an operator, or by a master that declared the server dead) proves no
//! membership, and the lease is not renewed.
//!
//! Time is read from `CLOCK_BOOTTIME`, which keeps counting while the
//! machine is suspended (`Instant`'s `CLOCK_MONOTONIC` stops): a laptop or
//! VM that slept past the session timeout wakes with its lease run out.
//!
//! Invariant: `valid()` is true only within T/2 of the send time of the
//! last round trip that succeeded. Thread safety: shared; `valid()` is one
//! atomic load and a clock read, cheap enough for every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::zk::Zk;

/// Time since boot, suspend included (`CLOCK_BOOTTIME`).
fn boot_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on
    // every Linux since 2.6.39, so the call cannot fail.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &raw mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_BOOTTIME)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

pub struct Lease {
    /// The boot time every other time is measured from.
    epoch: Duration,
    /// The membership node whose presence each renewal checks (relative to
    /// the cluster root), if any.
    node: Option<String>,
    /// Microseconds after `epoch` at which the last successful round trip
    /// was sent; 0 before the first.
    proven_at: AtomicU64,
    /// How long a proof lasts (half the session timeout).
    span: Duration,
    stop: AtomicBool,
}

impl Lease {
    /// A lease on `zk`'s session, kept by a background thread until the
    /// session ends or [`stop`](Self::stop) is called.
    pub fn keep(zk: Arc<Zk>) -> Arc<Lease> {
        Self::start(zk, None)
    }

    /// A region server's lease: each renewal also reads `node`, its own
    /// membership node, and renews only while it is there.
    pub fn keep_member(zk: Arc<Zk>, node: String) -> Arc<Lease> {
        Self::start(zk, Some(node))
    }

    fn start(zk: Arc<Zk>, node: Option<String>) -> Arc<Lease> {
        let timeout = zk.session_timeout();
        let lease = Arc::new(Lease {
            epoch: boot_time(),
            node,
            proven_at: AtomicU64::new(0),
            span: timeout / 2,
            stop: AtomicBool::new(false),
        });
        lease.prove(&zk);
        let keeper = lease.clone();
        // The keeper does not keep the session alive: once its owner drops
        // the client (closing the session), the keeper ends.
        let zk = Arc::downgrade(&zk);
        std::thread::Builder::new()
            .name("zk-lease".into())
            .spawn(move || {
                while !keeper.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(timeout / 4);
                    match zk.upgrade() {
                        Some(zk) if !zk.has_ended() => keeper.prove(&zk),
                        _ => break,
                    }
                }
            })
            .expect("spawn the lease keeper");
        lease
    }

    fn prove(&self, zk: &Zk) {
        let sent = self.elapsed();
        let round_trip = match &self.node {
            None => zk.ping(),
            Some(node) => zk.get(node).and_then(|data| match data {
                Some(_) => Ok(()),
                None => {
                    tracing::error!(node = %node, "this server's membership node is gone: the lease is not renewed");
                    Err(crate::error::ClusterError::Malformed {
                        what: "membership",
                        path: node.clone(),
                        reason: "the node is gone".into(),
                    })
                }
            }),
        };
        match round_trip {
            Ok(()) if !zk.has_ended() => {
                let micros = u64::try_from(sent.as_micros()).unwrap_or(u64::MAX).max(1);
                self.proven_at.fetch_max(micros, Ordering::Release);
            }
            Ok(()) => {}
            Err(e) => tracing::warn!(error = %e, "could not reach ZooKeeper to renew the membership lease"),
        }
    }

    /// Whether the process may still act as a member.
    pub fn valid(&self) -> bool {
        let proven = self.proven_at.load(Ordering::Acquire);
        proven > 0 && self.elapsed() < Duration::from_micros(proven) + self.span
    }

    fn elapsed(&self) -> Duration {
        boot_time().saturating_sub(self.epoch)
    }

    /// Stops renewing (the lease then runs out).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
