//! `ExploringCompactionPolicy`: HBase's default choice of which store files
//! to compact — among every window of 3..=10 contiguous files (oldest
//! first), the windows whose files are each no larger than `ratio` (1.2)
//! times the rest of the window; prefer the window with the most files, then
//! the smallest total size. With too many files and no window in ratio, the
//! smallest window of `min_files` is taken so that file counts stay bounded.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompactionConfig {
    /// Fewest files a minor compaction takes (`hbase.hstore.compaction.min`).
    pub min_files: usize,
    /// Most files a minor compaction takes (`hbase.hstore.compaction.max`).
    pub max_files: usize,
    /// `hbase.hstore.compaction.ratio`.
    pub ratio: f64,
    /// Flushes wait for compactions above this many files
    /// (`hbase.hstore.blockingStoreFiles`).
    pub blocking_store_files: usize,
    /// How long a flush waits for the file count to drop (HBase 90 s).
    pub blocking_wait_ms: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig { min_files: 3, max_files: 10, ratio: 1.2, blocking_store_files: 16, blocking_wait_ms: 90_000 }
    }
}

/// Picks the files to compact from `sizes` (oldest first) as a range of
/// indices, or `None` if no compaction is worth doing.
pub fn select_exploring(sizes: &[u64], cfg: &CompactionConfig) -> Option<std::ops::Range<usize>> {
    let n = sizes.len();
    if n < cfg.min_files {
        return None;
    }
    let mut best: Option<(std::ops::Range<usize>, u64)> = None;
    let mut smallest: Option<(std::ops::Range<usize>, u64)> = None;
    for start in 0..n {
        for len in cfg.min_files..=cfg.max_files.min(n - start) {
            let window = start..start + len;
            let total: u64 = sizes[window.clone()].iter().sum();
            if smallest.as_ref().is_none_or(|(_, t)| total < *t) && len == cfg.min_files {
                smallest = Some((window.clone(), total));
            }
            let in_ratio = sizes[window.clone()].iter().all(|&s| s as f64 <= cfg.ratio * (total - s) as f64);
            if !in_ratio {
                continue;
            }
            let better = match &best {
                None => true,
                Some((b, bt)) => len > b.len() || (len == b.len() && total < *bt),
            };
            if better {
                best = Some((window, total));
            }
        }
    }
    match best {
        Some((w, _)) => Some(w),
        None if n >= cfg.blocking_store_files => smallest.map(|(w, _)| w),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_window_in_ratio() {
        let cfg = CompactionConfig::default();
        assert_eq!(select_exploring(&[10, 10], &cfg), None, "too few files");
        assert_eq!(select_exploring(&[10, 10, 10], &cfg), Some(0..3));
        // One huge old file is out of ratio; the small recent ones go together.
        assert_eq!(select_exploring(&[1000, 10, 11, 12, 9], &cfg), Some(1..5));
        // Windows are capped at max_files.
        let many = vec![5u64; 14];
        assert_eq!(select_exploring(&many, &cfg).map(|r| r.len()), Some(10));
    }

    #[test]
    fn prefers_smaller_total_among_equal_windows_and_unblocks_when_needed() {
        let cfg = CompactionConfig { max_files: 3, ..CompactionConfig::default() };
        assert_eq!(select_exploring(&[50, 50, 50, 5, 5, 5], &cfg), Some(3..6));
        // Nothing in ratio (each file dwarfs the newer ones): no compaction
        // until the store has too many files.
        let skewed: Vec<u64> = (0..5).map(|i| 1u64 << (40 - 4 * i)).collect();
        assert_eq!(select_exploring(&skewed, &cfg), None);
        let blocking = CompactionConfig { blocking_store_files: 5, ..cfg };
        assert_eq!(select_exploring(&skewed, &blocking), Some(2..5), "the smallest window of min files");
    }
}
