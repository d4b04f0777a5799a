//! `MemoryGauge`: what the memstores sharing a global memory limit hold,
//! as their owner last counted it, and the room an in-memory compaction
//! asks for before it builds its copy.
//!
//! Why: a merge or compaction builds its result beside the segments it
//! replaces, so until it is installed the memstore holds both. The owner's
//! global limit blocks writers, but a copy started near the limit pushed
//! the memstores past it (measured: adaptive 0.35 held 1.24× its 150 MiB
//! budget, the excess copies built while a snapshot was being flushed).
//! A compaction now starts only if its copy fits: held + copies already
//! reserved + this copy ≤ the limit. One that does not fit is deferred; the
//! segments stay in the pipeline, and the disk flush the owner's pressure
//! brings takes them as they are (HBase likewise abandons an in-memory
//! compaction when a flush comes).
//!
//! The held figure is the owner's (the memstore crate does no global
//! accounting); it includes copies being built, so a copy in flight is
//! counted twice while it grows — the gauge errs towards deferring.
//!
//! Thread safety: all methods take `&self`; reservations are a CAS loop, so
//! two compactions cannot both take the last room.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct MemoryGauge {
    limit: u64,
    held: AtomicU64,
    reserved: AtomicU64,
}

impl MemoryGauge {
    /// A gauge for memstores sharing `limit` bytes.
    pub fn new(limit: u64) -> MemoryGauge {
        MemoryGauge { limit, held: AtomicU64::new(0), reserved: AtomicU64::new(0) }
    }

    /// A gauge that never defers (a memstore with no global limit).
    pub fn unlimited() -> Arc<MemoryGauge> {
        Arc::new(MemoryGauge::new(u64::MAX))
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Records what the memstores hold now (the owner's count).
    pub fn set_held(&self, bytes: u64) {
        self.held.store(bytes, Ordering::Relaxed);
    }

    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Bytes reserved by copies being built now.
    pub fn reserved(&self) -> u64 {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` for a copy if held + reserved + `bytes` stays within
    /// the limit; the reservation ends when the returned guard drops.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let held = self.held();
        let mut reserved = self.reserved.load(Ordering::Relaxed);
        loop {
            let wanted = held.saturating_add(reserved).saturating_add(bytes);
            if wanted > self.limit {
                return None;
            }
            match self.reserved.compare_exchange_weak(reserved, reserved + bytes, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(Reservation { gauge: self.clone(), bytes }),
                Err(now) => reserved = now,
            }
        }
    }
}

/// Room reserved for a copy being built; released on drop.
#[derive(Debug)]
pub struct Reservation {
    gauge: Arc<MemoryGauge>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.gauge.reserved.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_admitted_only_while_it_fits_and_its_room_returns_on_drop() {
        let g = Arc::new(MemoryGauge::new(100));
        g.set_held(60);
        let first = g.try_reserve(30).expect("60 + 30 fits in 100");
        assert!(g.try_reserve(11).is_none(), "60 + 30 + 11 does not");
        let second = g.try_reserve(10).expect("exactly 100 fits");
        assert_eq!(g.reserved(), 40);
        drop(first);
        assert_eq!(g.reserved(), 10);
        g.set_held(95);
        assert!(g.try_reserve(1).is_none(), "95 held + 10 reserved is over");
        drop(second);
        assert!(g.try_reserve(5).is_some());
        assert_eq!(g.reserved(), 0, "a guard dropped at once returns its room");
        assert!(MemoryGauge::unlimited().try_reserve(u64::MAX / 2).is_some());
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_limit() {
        let g = Arc::new(MemoryGauge::new(1_000));
        let admitted = AtomicU64::new(0);
        let peak = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        if let Some(r) = g.try_reserve(300) {
                            admitted.fetch_add(1, Ordering::Relaxed);
                            peak.fetch_max(g.reserved(), Ordering::Relaxed);
                            drop(r);
                        }
                    }
                });
            }
        });
        assert!(admitted.load(Ordering::Relaxed) > 0);
        assert!(peak.load(Ordering::Relaxed) <= 900, "at most three copies of 300 fit in 1000");
        assert_eq!(g.reserved(), 0);
    }
}
