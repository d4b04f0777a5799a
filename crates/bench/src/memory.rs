//! Memory held during a run: a sampler thread reads, every
//! [`SAMPLE_PERIOD`], what the engine's memstores hold by part (data
//! chunks, index memory; active segments, pipelines, snapshots being
//! flushed), the chunk pool's chunks in use and idle, and the process's
//! resident set, and keeps the sample at which the memstores held most.
//! The report puts `peak_held_bytes` beside `peak_rss_bytes`, so that the
//! gap between what the store accounts and what the process keeps shows.
//!
//! It also keeps the sample at which the resident set was highest, with
//! what the rest of the process held then: the WAL's buffers, the resident
//! set split into anonymous and file-backed pages (`/proc/self/status`),
//! and glibc's malloc statistics (`mallinfo2`: bytes in use and free in
//! its arenas, bytes in blocks it mapped one by one), so that the gap
//! between RSS and held bytes can be attributed by measurement.
//!
//! Every figure is read, not computed: held bytes are the memstores' own
//! counts of whole chunks at capacity (`memstore::MemStoreHeld`), pool bytes
//! the pool's counts, RSS `/proc/self/statm`. The costlier reads (status,
//! `mallinfo2`, which walks malloc's free lists under its arena locks) are
//! made only for a sample that sets a new peak.
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
    /// The WAL's batch buffers (`store::wal::Wal::buffer_bytes`).
    pub wal_buffers: u64,
    /// The resident set's anonymous pages (heap, mappings, stacks) and its
    /// file-backed ones (the binary, shared libraries), from
    /// `/proc/self/status`; read only at peaks.
    pub rss_anon: u64,
    pub rss_file: u64,
    /// glibc's malloc at the sample (`mallinfo2`; 0 elsewhere): bytes in
    /// use in its arenas, bytes free in them (kept, possibly resident), and
    /// bytes of the blocks it mapped one by one (chunks, large arrays);
    /// read only at peaks.
    pub malloc_in_use: u64,
    pub malloc_free: u64,
    pub malloc_mapped: u64,
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
    /// The sample at which the resident set was largest.
    pub at_peak_rss: HeldSample,
    /// The most the pool's chunks (in use + idle) came to.
    pub peak_pool: u64,
    pub samples: u64,
}

/// The current resident set of this process (0 where `/proc` cannot be read).
pub fn current_rss_bytes() -> u64 {
    procfs::process::Process::myself().and_then(|me| me.statm()).map_or(0, |s| s.resident * procfs::page_size())
}

/// Fills the figures read only at peaks: the resident set's split and
/// malloc's statistics.
fn add_details(s: &mut HeldSample) {
    if let Ok(status) = procfs::process::Process::myself().and_then(|me| me.status()) {
        s.rss_anon = status.rssanon.unwrap_or(0) * 1024;
        s.rss_file = status.rssfile.unwrap_or(0) * 1024;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads malloc's state (under its locks).
        let m = unsafe { libc::mallinfo2() };
        s.malloc_in_use = m.uordblks as u64;
        s.malloc_free = m.fordblks as u64;
        s.malloc_mapped = m.hblkhd as u64;
    }
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
                    // Strictly above: at a plateau (a read-only run holds
                    // the same bytes throughout) `>=` read the details at
                    // every sample, and `mallinfo2` takes each malloc arena's
                    // lock while it walks the free lists — 100 times a second
                    // it stalled the readers' allocations (issue 28).
                    let held_peak = s.held() > peak.at_peak_held.held() || peak.samples == 1;
                    let rss_peak = s.rss > peak.at_peak_rss.rss;
                    if held_peak || rss_peak {
                        add_details(&mut s);
                    }
                    if held_peak {
                        peak.at_peak_held = s;
                    }
                    if rss_peak {
                        peak.at_peak_rss = s;
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

#[cfg(test)]
mod tests {
    use super::{HeldSample, add_details};

    #[test]
    fn details_split_the_resident_set_and_read_malloc() {
        let block = std::hint::black_box(vec![1u8; 4 << 20]);
        let mut s = HeldSample::default();
        add_details(&mut s);
        assert!(s.rss_anon >= 4 << 20, "the 4 MiB block is resident and anonymous: {s:?}");
        assert!(s.rss_file > 0, "the test binary's own pages are file-backed: {s:?}");
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(s.malloc_in_use + s.malloc_mapped >= 4 << 20, "malloc counts the block: {s:?}");
        }
        drop(block);
    }
}
