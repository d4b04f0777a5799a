//! A process-wide count of changes to what a region server reports to its
//! master: a region's state, the tables and their region lists, a table
//! enabled or disabled. The master reporter (`server::master_report`) reads
//! it before each look at the store and rebuilds its snapshot of every
//! region only when the count moved, so an idle server's ticks cost
//! nothing per region.
//!
//! Invariant: every change to a region's state (`region::state::StateCell`)
//! and every applied catalog edit (`catalog::Catalog::apply`) adds one
//! after the change is visible, so a reader that reads the count and then
//! the store sees at least the changes counted.
//!
//! Process-wide rather than per store: several stores share a process only
//! in tests, and a change in one of them costs the others one needless
//! snapshot, never a missed one.
//!
//! Thread safety: one atomic; any thread.

use std::sync::atomic::{AtomicU64, Ordering};

static CHANGES: AtomicU64 = AtomicU64::new(0);

/// The count now.
pub fn layout_changes() -> u64 {
    CHANGES.load(Ordering::Acquire)
}

/// Counts one change, made visible before this call.
pub(crate) fn note_layout_change() {
    CHANGES.fetch_add(1, Ordering::AcqRel);
}
