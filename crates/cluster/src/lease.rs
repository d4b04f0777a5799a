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
//! Invariant: `valid()` is true only within T/2 of the send time of the
//! last round trip that succeeded. Thread safety: shared; `valid()` is one
//! atomic load and a clock read, cheap enough for every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::zk::Zk;

pub struct Lease {
    /// The instant every other time is measured from.
    epoch: Instant,
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
        let timeout = zk.session_timeout();
        let lease = Arc::new(Lease {
            epoch: Instant::now(),
            proven_at: AtomicU64::new(0),
            span: timeout / 2,
            stop: AtomicBool::new(false),
        });
        lease.prove(&zk);
        let keeper = lease.clone();
        std::thread::Builder::new()
            .name("zk-lease".into())
            .spawn(move || {
                while !keeper.stop.load(Ordering::Relaxed) && !zk.has_ended() {
                    std::thread::sleep(timeout / 4);
                    keeper.prove(&zk);
                }
            })
            .expect("spawn the lease keeper");
        lease
    }

    fn prove(&self, zk: &Zk) {
        let sent = self.epoch.elapsed();
        match zk.ping() {
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
        proven > 0 && self.epoch.elapsed() < Duration::from_micros(proven) + self.span
    }

    /// Stops renewing (the lease then runs out).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
