//! Run progress that a front end (the binary's progress bar) can poll
//! without the driver knowing about terminals: the driver adds finished
//! operations to one process-wide pair of counters; one run at a time.

use std::sync::atomic::{AtomicU64, Ordering};

static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Starts a run of `total` operations.
pub fn start(total: u64) {
    DONE.store(0, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
}

/// Adds `n` finished operations; called once per batch, not per operation,
/// so the shared cache line is touched rarely.
pub fn add(n: u64) {
    DONE.fetch_add(n, Ordering::Relaxed);
}

/// (done, total) of the current run.
pub fn get() -> (u64, u64) {
    (DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_what_was_added() {
        super::start(10);
        super::add(3);
        super::add(4);
        assert_eq!(super::get(), (7, 10));
    }
}
