//! `MemStoreCounters`: what the memstore did, for metrics and the bench.
//!
//! Thread safety: relaxed atomics; a snapshot is a consistent-enough view for
//! reporting (each counter is exact, the set is not taken atomically).

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default, Debug)]
pub struct MemStoreCounters {
    pub(crate) rows_added: AtomicU64,
    pub(crate) cells_added: AtomicU64,
    pub(crate) inmemory_flushes: AtomicU64,
    pub(crate) flattens: AtomicU64,
    pub(crate) merges: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) compactions_interrupted: AtomicU64,
    pub(crate) compactions_deferred: AtomicU64,
    pub(crate) cells_dropped: AtomicU64,
    pub(crate) snapshots: AtomicU64,
    pub(crate) snapshot_cells: AtomicU64,
    pub(crate) snapshot_bytes: AtomicU64,
}

/// A point-in-time copy of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    pub rows_added: u64,
    pub cells_added: u64,
    /// Active segments pushed into the pipeline.
    pub inmemory_flushes: u64,
    /// Skiplist segments turned into a flat index.
    pub flattens: u64,
    /// Pipeline segments merged into one flat index (nothing dropped).
    pub merges: u64,
    /// In-memory compactions (redundant cells dropped, survivors copied).
    pub compactions: u64,
    /// Compaction or merge results discarded because a snapshot (or another
    /// change) overtook them.
    pub compactions_interrupted: u64,
    /// Flattens, merges and compactions not started because their copy
    /// did not fit under the global memory limit ([`crate::MemoryGauge`]).
    pub compactions_deferred: u64,
    /// Cells dropped by in-memory compactions.
    pub cells_dropped: u64,
    /// Snapshots taken for disk flushes.
    pub snapshots: u64,
    /// Cells and data bytes handed to disk flushes.
    pub snapshot_cells: u64,
    pub snapshot_bytes: u64,
}

impl MemStoreCounters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CountersSnapshot {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CountersSnapshot {
            rows_added: g(&self.rows_added),
            cells_added: g(&self.cells_added),
            inmemory_flushes: g(&self.inmemory_flushes),
            flattens: g(&self.flattens),
            merges: g(&self.merges),
            compactions: g(&self.compactions),
            compactions_interrupted: g(&self.compactions_interrupted),
            compactions_deferred: g(&self.compactions_deferred),
            cells_dropped: g(&self.cells_dropped),
            snapshots: g(&self.snapshots),
            snapshot_cells: g(&self.snapshot_cells),
            snapshot_bytes: g(&self.snapshot_bytes),
        }
    }
}
