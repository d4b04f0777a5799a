//! `MemStoreSnapshot`: what a disk flush writes — the former active segment
//! and the whole pipeline, as one composite sorted view.
//!
//! Invariants: the snapshot's segments are frozen; once
//! [`MemStore::snapshot`](crate::MemStore::snapshot) has returned, no write
//! into them is in flight, so their statistics are exact. The memstore keeps
//! serving reads from the snapshot until the flush is committed and the
//! snapshot released.
//!
//! Thread safety: immutable; share through `Arc`.

use std::sync::Arc;

use crate::merge_iter::MergingCursor;
use crate::segment::{Segment, SegmentStats};

#[derive(Debug)]
pub struct MemStoreSnapshot {
    id: u64,
    segments: Vec<Arc<Segment>>,
}

impl MemStoreSnapshot {
    pub(crate) fn new(id: u64, segments: Vec<Arc<Segment>>) -> MemStoreSnapshot {
        MemStoreSnapshot { id, segments }
    }

    /// The id to pass to [`MemStore::release_snapshot`](crate::MemStore::release_snapshot).
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    /// Combined statistics of the segments.
    pub fn stats(&self) -> SegmentStats {
        self.segments.iter().fold(SegmentStats::EMPTY, |acc, s| acc.merge(&s.stats()))
    }

    pub fn cell_count(&self) -> u64 {
        self.segments.iter().map(|s| s.cell_count()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.cell_count() == 0
    }

    /// A cursor over every cell of the snapshot in sorted order.
    pub fn cursor(&self) -> MergingCursor {
        MergingCursor::new(self.segments.iter().cloned())
    }
}
