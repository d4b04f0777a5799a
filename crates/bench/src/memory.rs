//! Memory held during a run: a sampler thread reads, every
//! [`SAMPLE_PERIOD`], what the engine's memstores hold by part (data
//! chunks, index memory; active segments, pipelines, snapshots being
//! flushed), the chunk pool's chunks in use and idle, and the process's
//! resident set, and keeps the sample at which the memstores held most.
//! The report puts `peak_held_bytes` beside `peak_rss_bytes`, so that the
//! gap between what the store accounts and what the process keeps shows.
//!
//! Every figure is read, not computed: held bytes are the memstores' own
//! counts of whole chunks at capacity (`memstore::MemStoreHeld`), pool bytes
//! the pool's counts, RSS `/proc/self/statm`.
//!
//! Thread safety: the sampler owns its peak until `finish` joins it; the
//! engine is shared with the driver's threads (`Engine` is `Sync`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;

/// How often the sampler reads.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(10);

/// What an engine holds in memory at one moment (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeldSample {
    /// Data chunks of the active segments.
    pub active_data: u64,
    /// Skiplist node arenas of the active segments.
    pub active_index: u64,
    /// Data chunks of the pipelines' segments.
    pub pipeline_data: u64,
    /// Index memory of the pipelines' segments: index chunks, cell arrays,
    /// skiplist arenas of segments not yet flattened.
    pub pipeline_index: u64,
    /// Data chunks of snapshots being flushed.
    pub snapshot_data: u64,
    /// Index memory of snapshots being flushed.
    pub snapshot_index: u64,
    /// Data chunks of the copies in-memory compactions are building.
    pub compacting: u64,
    /// Chunks the chunk pool has handed out (whoever holds them: segments,
    /// readers pinning released segments, compactions being built).
    pub pool_in_use: u64,
    /// Chunks idle in the pool, kept for reuse.
    pub pool_idle: u64,
    /// The process's resident set at the sample.
    pub rss: u64,
}

impl HeldSample {
    /// What the memstores hold (the figure the store's accounting charges).
    pub fn held(&self) -> u64 {
        self.active_data
            + self.active_index
            + self.pipeline_data
            + self.pipeline_index
            + self.snapshot_data
            + self.snapshot_index
            + self.compacting
    }
}

/// The peak of a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryPeak {
    /// The sample at which the memstores held most.
    pub at_peak_held: HeldSample,
    /// The most the pool's chunks (in use + idle) came to.
    pub peak_pool: u64,
    pub samples: u64,
}

/// The current resident set of this process (0 where `/proc` cannot be read).
pub fn current_rss_bytes() -> u64 {
    procfs::process::Process::myself().and_then(|me| me.statm()).map_or(0, |s| s.resident * procfs::page_size())
}

/// Runs `f` while sampling `engine`'s memory; `None` beside its result
/// when the engine reports no held memory (engines in other processes).
pub fn sampled<T>(engine: &dyn Engine, f: impl FnOnce() -> T) -> (T, Option<MemoryPeak>) {
    if engine.held_memory().is_none() {
        return (f(), None);
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = MemoryPeak::default();
            let take = |peak: &mut MemoryPeak| {
                if let Some(mut s) = engine.held_memory() {
                    s.rss = current_rss_bytes();
                    peak.samples += 1;
                    peak.peak_pool = peak.peak_pool.max(s.pool_in_use + s.pool_idle);
                    if s.held() >= peak.at_peak_held.held() {
                        peak.at_peak_held = s;
                    }
                }
            };
            while !stop.load(Ordering::Relaxed) {
                take(&mut peak);
                std::thread::sleep(SAMPLE_PERIOD);
            }
            take(&mut peak);
            peak
        });
        let out = f();
        stop.store(true, Ordering::Relaxed);
        let peak = sampler.join().expect("the memory sampler does not panic");
        (out, Some(peak))
    })
}
