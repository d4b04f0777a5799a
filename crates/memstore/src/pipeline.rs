//! `CompactionPipeline`: the immutable segments between the active segment
//! and the snapshot, newest first, as a versioned copy-on-write value.
//!
//! Invariants:
//! - A pipeline value never changes; every operation returns a new value
//!   that the memstore publishes atomically (readers load it without locks).
//! - `version` grows on every structural change (a segment replaced, the
//!   pipeline drained). Pushing a new head does not bump it — a compaction
//!   works on a suffix, and new heads do not touch the suffix.
//! - A compaction result replaces the segments it was computed from only if
//!   the version it started from is still current and those segments are
//!   still the pipeline's suffix; otherwise the result is discarded.
//!
//! Thread safety: a plain immutable value; the memstore serialises the
//! publication of new values.

use std::sync::Arc;

use crate::segment::Segment;

#[derive(Clone, Debug, Default)]
pub struct CompactionPipeline {
    version: u64,
    segments: Vec<Arc<Segment>>,
}

impl CompactionPipeline {
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Segments, newest first.
    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    pub fn len(&self) -> usize {
        self.segments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// A pipeline with `segment` as its new head.
    pub fn with_head(&self, segment: Arc<Segment>) -> CompactionPipeline {
        let mut segments = Vec::with_capacity(self.segments.len() + 1);
        segments.push(segment);
        segments.extend(self.segments.iter().cloned());
        CompactionPipeline { version: self.version, segments }
    }

    /// Replaces `suffix` (which must be the pipeline's current suffix, seen at
    /// `expected_version`) by `replacement` (or by nothing). `None` if the
    /// pipeline changed since.
    pub fn with_suffix_replaced(
        &self,
        expected_version: u64,
        suffix: &[Arc<Segment>],
        replacement: Option<Arc<Segment>>,
    ) -> Option<CompactionPipeline> {
        if self.version != expected_version || suffix.len() > self.segments.len() {
            return None;
        }
        let keep = self.segments.len() - suffix.len();
        let matches = self.segments[keep..].iter().zip(suffix).all(|(a, b)| Arc::ptr_eq(a, b));
        if !matches {
            return None;
        }
        let mut segments: Vec<_> = self.segments[..keep].to_vec();
        segments.extend(replacement);
        Some(CompactionPipeline { version: self.version + 1, segments })
    }

    /// Replaces one segment by another of the same content (a flatten).
    pub fn with_segment_replaced(
        &self,
        expected_version: u64,
        old: &Arc<Segment>,
        new: Arc<Segment>,
    ) -> Option<CompactionPipeline> {
        if self.version != expected_version {
            return None;
        }
        let i = self.segments.iter().position(|s| Arc::ptr_eq(s, old))?;
        let mut segments = self.segments.clone();
        segments[i] = new;
        Some(CompactionPipeline { version: self.version + 1, segments })
    }

    /// An empty pipeline of the next version, and the segments it held.
    pub fn drained(&self) -> (CompactionPipeline, Vec<Arc<Segment>>) {
        (CompactionPipeline { version: self.version + 1, segments: Vec::new() }, self.segments.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk_pool::ChunkPool;
    use crate::mutable_segment::MutableSegment;

    fn seg(id: u64) -> Arc<Segment> {
        Arc::new(Segment::from_active(id, Arc::new(MutableSegment::new(ChunkPool::new(0)))))
    }

    #[test]
    fn suffix_swap_requires_unchanged_version_and_suffix() {
        let p = CompactionPipeline::default().with_head(seg(1)).with_head(seg(2));
        let v = p.version();
        let suffix = p.segments().to_vec();
        // A new head does not invalidate a compaction of the old segments.
        let p2 = p.with_head(seg(3));
        let swapped = p2.with_suffix_replaced(v, &suffix, Some(seg(9))).expect("suffix unchanged");
        assert_eq!(swapped.segments().iter().map(|s| s.id()).collect::<Vec<_>>(), [3, 9]);
        assert_eq!(swapped.version(), v + 1);
        // A stale version is refused.
        assert!(swapped.with_suffix_replaced(v, &suffix, None).is_none());
        // A drained pipeline refuses the swap too.
        let (empty, held) = p2.drained();
        assert_eq!(held.len(), 3);
        assert!(empty.with_suffix_replaced(v, &suffix, Some(seg(9))).is_none());
    }

    #[test]
    fn flatten_replaces_one_segment() {
        let a = seg(1);
        let p = CompactionPipeline::default().with_head(a.clone()).with_head(seg(2));
        let p2 = p.with_segment_replaced(p.version(), &a, seg(7)).expect("present");
        assert_eq!(p2.segments().iter().map(|s| s.id()).collect::<Vec<_>>(), [2, 7]);
        assert!(p2.with_segment_replaced(p.version(), &a, seg(8)).is_none());
    }
}
