//! `MemStoreConfig`: a memstore's policy, thresholds and collaborators, with
//! HBase's defaults.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::chunk::CHUNK_SIZE;
use crate::chunk_pool::ChunkPool;
use crate::error::MemStoreError;
use crate::executor::CompactionExecutor;
use crate::memory_gauge::MemoryGauge;
use crate::mvcc::Mvcc;
use crate::segment::IndexLayout;
use crate::visibility::VersionRules;

/// The in-memory compaction policy (HBase's
/// `hbase.hregion.compacting.memstore.type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompactionPolicy {
    /// No pipeline: the classic memstore (active + snapshot).
    None,
    /// Flatten each new segment; merge indexes when the pipeline is longer than S.
    Basic,
    /// Compact the pipeline on every in-memory flush.
    Eager,
    /// Basic, but compact when the estimated unique-key fraction is below
    /// `1 - redundancy_threshold` (R; HBase default 0.5).
    Adaptive { redundancy_threshold: f64 },
}

impl CompactionPolicy {
    /// Parses `none`, `basic`, `eager`, `adaptive` or `adaptive:R`.
    pub fn parse(s: &str) -> Result<CompactionPolicy, MemStoreError> {
        let lower = s.trim().to_ascii_lowercase();
        let (name, arg) = match lower.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (lower.as_str(), None),
        };
        let policy = match (name, arg) {
            ("none", None) => CompactionPolicy::None,
            ("basic", None) => CompactionPolicy::Basic,
            ("eager", None) => CompactionPolicy::Eager,
            ("adaptive", None) => CompactionPolicy::Adaptive { redundancy_threshold: 0.5 },
            ("adaptive", Some(r)) => {
                let r: f64 = r
                    .parse()
                    .map_err(|_| MemStoreError::InvalidConfig(format!("adaptive threshold {r:?} is not a number")))?;
                CompactionPolicy::Adaptive { redundancy_threshold: r }
            }
            _ => return Err(MemStoreError::InvalidConfig(format!("unknown memstore policy {s:?}"))),
        };
        policy.validate()?;
        Ok(policy)
    }

    fn validate(&self) -> Result<(), MemStoreError> {
        if let CompactionPolicy::Adaptive { redundancy_threshold: r } = *self
            && !(0.0..=1.0).contains(&r)
        {
            return Err(MemStoreError::InvalidConfig(format!("adaptive threshold {r} is outside [0, 1]")));
        }
        Ok(())
    }

    /// The canonical name (`adaptive:0.35` for adaptive).
    pub fn name(&self) -> String {
        match self {
            CompactionPolicy::None => "none".into(),
            CompactionPolicy::Basic => "basic".into(),
            CompactionPolicy::Eager => "eager".into(),
            CompactionPolicy::Adaptive { redundancy_threshold } => format!("adaptive:{redundancy_threshold}"),
        }
    }
}

/// When the active segment is pushed into the pipeline (the paper's A).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InMemoryFlushThreshold {
    /// Once the active segment holds this many data bytes.
    Bytes(u64),
    /// Once it holds this share of `flush_size` (HBase's
    /// `hbase.memstore.inmemoryflush.threshold.factor`).
    FlushSizeShare(f64),
}

/// Where in-memory compactions run.
#[derive(Clone)]
pub enum CompactionMode {
    /// On a shared background pool (the normal mode).
    Background(CompactionExecutor),
    /// In the writer thread that triggered the in-memory flush (deterministic).
    Inline,
    /// Only when [`MemStore::compact_pipeline`](crate::MemStore::compact_pipeline) is called.
    Manual,
}

impl std::fmt::Debug for CompactionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CompactionMode::Background(_) => "Background",
            CompactionMode::Inline => "Inline",
            CompactionMode::Manual => "Manual",
        })
    }
}

/// Milliseconds since the epoch, for TTL.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told (tests).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(now_ms))
    }

    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Everything a memstore needs to know.
#[derive(Clone)]
pub struct MemStoreConfig {
    /// The column family this store holds.
    pub family: Vec<u8>,
    pub policy: CompactionPolicy,
    /// Layout of flattened, merged and compacted segments.
    pub flat_layout: IndexLayout,
    pub in_memory_flush_threshold: InMemoryFlushThreshold,
    /// The store's share of the region flush size (for the share threshold).
    pub flush_size: u64,
    /// S: merge (basic/adaptive) when the pipeline holds more segments.
    pub pipeline_segments_limit: usize,
    pub rules: VersionRules,
    /// Largest encoded cell accepted (HBase's `hbase.server.keyvalue.maxsize`).
    pub max_cell_size: usize,
    pub chunk_pool: ChunkPool,
    pub compaction_mode: CompactionMode,
    pub clock: Arc<dyn Clock>,
    /// The region's MVCC; compactions keep what its oldest reader can see.
    pub mvcc: Arc<Mvcc>,
    /// Seed of the adaptive policy's coin.
    pub adaptive_seed: u64,
    /// The global memory limit's gauge: an in-memory compaction starts
    /// only if its copy fits under it.
    pub memory_gauge: Arc<MemoryGauge>,
}

impl std::fmt::Debug for MemStoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemStoreConfig")
            .field("family", &String::from_utf8_lossy(&self.family))
            .field("policy", &self.policy)
            .field("flat_layout", &self.flat_layout)
            .field("in_memory_flush_threshold", &self.in_memory_flush_threshold)
            .field("flush_size", &self.flush_size)
            .field("pipeline_segments_limit", &self.pipeline_segments_limit)
            .field("rules", &self.rules)
            .field("max_cell_size", &self.max_cell_size)
            .field("compaction_mode", &self.compaction_mode)
            .finish()
    }
}

impl MemStoreConfig {
    /// HBase 2's defaults: basic policy, cell-chunk index, one-chunk
    /// in-memory flush threshold, S = 2, 128 MiB flush size, 1 version,
    /// 10 MiB maximum cell.
    pub fn new(family: impl Into<Vec<u8>>) -> MemStoreConfig {
        MemStoreConfig {
            family: family.into(),
            policy: CompactionPolicy::Basic,
            flat_layout: IndexLayout::CellChunk,
            in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(CHUNK_SIZE as u64),
            flush_size: 128 << 20,
            pipeline_segments_limit: 2,
            rules: VersionRules::default(),
            max_cell_size: 10 << 20,
            chunk_pool: ChunkPool::global(),
            compaction_mode: CompactionMode::Background(CompactionExecutor::global()),
            clock: Arc::new(SystemClock),
            mvcc: Arc::new(Mvcc::default()),
            adaptive_seed: 0x5EED,
            memory_gauge: MemoryGauge::unlimited(),
        }
    }

    /// Data bytes of the active segment that trigger an in-memory flush.
    pub fn in_memory_flush_bytes(&self) -> u64 {
        match self.in_memory_flush_threshold {
            InMemoryFlushThreshold::Bytes(b) => b,
            InMemoryFlushThreshold::FlushSizeShare(a) => (a * self.flush_size as f64) as u64,
        }
        .max(1)
    }

    pub fn validate(&self) -> Result<(), MemStoreError> {
        let bad = |m: String| Err(MemStoreError::InvalidConfig(m));
        self.policy.validate()?;
        if self.family.is_empty() || self.family.len() > crate::cell::MAX_FAMILY_LEN {
            return bad(format!("family name must be 1..={} bytes", crate::cell::MAX_FAMILY_LEN));
        }
        if self.flat_layout == IndexLayout::SkipList {
            return bad("the flat layout must be cell-array or cell-chunk".into());
        }
        if let InMemoryFlushThreshold::FlushSizeShare(a) = self.in_memory_flush_threshold
            && !(a > 0.0 && a <= 1.0)
        {
            return bad(format!("in-memory flush share {a} is outside (0, 1]"));
        }
        if self.pipeline_segments_limit == 0 {
            return bad("the pipeline segments limit must be at least 1".into());
        }
        if self.rules.max_versions == 0 {
            return bad("max versions must be at least 1".into());
        }
        if self.max_cell_size == 0 {
            return bad("max cell size must be positive".into());
        }
        Ok(())
    }
}
