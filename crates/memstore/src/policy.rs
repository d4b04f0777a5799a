//! `CompactionStrategy`: what an in-memory flush leads to under each policy
//! (HBase's MemStoreCompactionStrategy family).
//!
//! - none: nothing (there is no pipeline);
//! - basic: flatten the new segment; merge when more than S segments;
//! - eager: compact the whole pipeline;
//! - adaptive: compact when the estimated unique-key fraction of the
//!   pipeline is below 1 − R, with probability p (starts at 0.5, ×1.02 after
//!   a compaction that removed at least R of the cells, ÷1.02 otherwise,
//!   reset at each disk flush); else as basic, counting unique keys.
//!
//! Thread safety: owned by the memstore behind its compaction lock (one
//! compaction at a time per memstore).

use std::sync::Arc;

use crate::config::CompactionPolicy;
use crate::segment::{IndexLayout, Segment};

/// What to do with the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Noop,
    Flatten { count_uniques: bool },
    Merge { count_uniques: bool },
    Compact,
}

const INITIAL_PROBABILITY: f64 = 0.5;
const ADJUSTMENT: f64 = 1.02;

pub struct CompactionStrategy {
    policy: CompactionPolicy,
    segments_limit: usize,
    probability: f64,
    rng: u64,
    compacted_from: Option<u64>,
}

impl CompactionStrategy {
    pub fn new(policy: CompactionPolicy, segments_limit: usize, seed: u64) -> Self {
        CompactionStrategy {
            policy,
            segments_limit,
            probability: INITIAL_PROBABILITY,
            rng: seed | 1,
            compacted_from: None,
        }
    }

    /// The adaptive policy's current compaction probability.
    pub fn probability(&self) -> f64 {
        self.probability
    }

    fn coin(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// HBase's estimate: the unique fraction of the largest segment whose
    /// unique keys were counted (1.0 when none was).
    pub fn estimated_unique_fraction(segments: &[Arc<Segment>]) -> f64 {
        let mut best = (0u64, 1.0);
        for s in segments {
            let st = s.stats();
            if let Some(u) = st.unique_keys
                && st.cells > best.0
            {
                best = (st.cells, u as f64 / st.cells as f64);
            }
        }
        best.1
    }

    fn merge_or_flatten(&self, segments: &[Arc<Segment>], count_uniques: bool) -> Action {
        if segments.len() > self.segments_limit {
            Action::Merge { count_uniques }
        } else if segments.iter().any(|s| s.layout() == IndexLayout::SkipList) {
            Action::Flatten { count_uniques }
        } else {
            Action::Noop
        }
    }

    /// Decides on the pipeline's segments (newest first).
    pub fn action(&mut self, segments: &[Arc<Segment>]) -> Action {
        self.compacted_from = None;
        if segments.is_empty() {
            return Action::Noop;
        }
        match self.policy {
            CompactionPolicy::None => Action::Noop,
            CompactionPolicy::Basic => self.merge_or_flatten(segments, false),
            CompactionPolicy::Eager => {
                let settled = segments.len() == 1 && segments[0].layout() != IndexLayout::SkipList;
                if settled { Action::Noop } else { Action::Compact }
            }
            CompactionPolicy::Adaptive { redundancy_threshold } => {
                if Self::estimated_unique_fraction(segments) < 1.0 - redundancy_threshold
                    && self.coin() < self.probability
                {
                    self.compacted_from = Some(segments.iter().map(|s| s.cell_count()).sum());
                    return Action::Compact;
                }
                self.merge_or_flatten(segments, true)
            }
        }
    }

    /// Learns from a compaction's result (adaptive only).
    pub fn record_compaction(&mut self, cells_after: u64) {
        let (CompactionPolicy::Adaptive { redundancy_threshold }, Some(before)) = (self.policy, self.compacted_from)
        else {
            return;
        };
        if before > 0 && (cells_after as f64 / before as f64) < 1.0 - redundancy_threshold {
            self.probability = (self.probability * ADJUSTMENT).min(1.0);
        } else {
            self.probability /= ADJUSTMENT;
        }
        self.compacted_from = None;
    }

    /// Forgets what was learnt (at each disk flush).
    pub fn reset(&mut self) {
        self.probability = INITIAL_PROBABILITY;
        self.compacted_from = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use crate::chunk_pool::ChunkPool;
    use crate::mutable_segment::MutableSegment;

    fn skiplist_segment(pool: &ChunkPool, rows: &[&str]) -> Arc<Segment> {
        let m = Arc::new(MutableSegment::new(pool.clone()));
        for (i, r) in rows.iter().enumerate() {
            let g = m.begin_write().expect("not frozen");
            m.insert_row(&g, &[CellInput::put(r.as_bytes(), b"f", b"q", 1, b"v")], i as u64 + 1);
        }
        Arc::new(Segment::from_active(1, m))
    }

    fn flat_segment(pool: &ChunkPool, rows: &[&str]) -> Arc<Segment> {
        let s = skiplist_segment(pool, rows);
        Arc::new(Segment::flat(2, IndexLayout::CellArray, s.cell_ptrs(), s.data_chunks(), pool, true))
    }

    #[test]
    fn basic_flattens_then_merges_past_the_limit() {
        let pool = ChunkPool::new(8);
        let mut basic = CompactionStrategy::new(CompactionPolicy::Basic, 2, 1);
        let head = skiplist_segment(&pool, &["a"]);
        let flat = flat_segment(&pool, &["b"]);
        assert_eq!(basic.action(std::slice::from_ref(&head)), Action::Flatten { count_uniques: false });
        assert_eq!(basic.action(std::slice::from_ref(&flat)), Action::Noop);
        let three = [head.clone(), flat.clone(), flat.clone()];
        assert_eq!(basic.action(&three), Action::Merge { count_uniques: false });
        let mut eager = CompactionStrategy::new(CompactionPolicy::Eager, 2, 1);
        assert_eq!(eager.action(std::slice::from_ref(&head)), Action::Compact);
        assert_eq!(eager.action(std::slice::from_ref(&flat)), Action::Noop);
        let mut none = CompactionStrategy::new(CompactionPolicy::None, 2, 1);
        assert_eq!(none.action(&three), Action::Noop);
    }

    #[test]
    fn adaptive_compacts_redundant_pipelines_and_learns() {
        let pool = ChunkPool::new(8);
        let redundant = flat_segment(&pool, &["a", "a", "a", "a", "b", "b", "b", "b"]);
        assert_eq!(CompactionStrategy::estimated_unique_fraction(std::slice::from_ref(&redundant)), 0.25);
        let unique = flat_segment(&pool, &["a", "b", "c", "d"]);
        let head = skiplist_segment(&pool, &["x"]);
        let mut adaptive = CompactionStrategy::new(CompactionPolicy::Adaptive { redundancy_threshold: 0.5 }, 5, 7);
        // Unique pipelines never compact, whatever the coin says.
        for _ in 0..50 {
            assert_eq!(adaptive.action(&[head.clone(), unique.clone()]), Action::Flatten { count_uniques: true });
        }
        // Redundant ones compact about half the time at p = 0.5.
        let compactions =
            (0..400).filter(|_| adaptive.action(&[head.clone(), redundant.clone()]) == Action::Compact).count();
        assert!((140..260).contains(&compactions), "{compactions} of 400");
        // A compaction that removed most cells raises p; one that did not lowers it.
        while adaptive.action(std::slice::from_ref(&redundant)) != Action::Compact {}
        adaptive.record_compaction(2);
        assert!((adaptive.probability() - 0.51).abs() < 1e-9);
        while adaptive.action(std::slice::from_ref(&redundant)) != Action::Compact {}
        adaptive.record_compaction(8);
        assert!((adaptive.probability() - 0.5).abs() < 1e-9);
        adaptive.reset();
        assert_eq!(adaptive.probability(), 0.5);
    }
}
