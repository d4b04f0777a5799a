//! Process CPU time and peak RSS, read from /proc (Linux) through the
//! `procfs` crate.
//!
//! Thread safety: stateless; every call reads `/proc/self` afresh.

use procfs::process::{ClearRefs, Process};

/// User + system CPU seconds of this process so far (0 where `/proc`
/// cannot be read).
pub fn cpu_seconds() -> f64 {
    let Some(stat) = Process::myself().and_then(|me| me.stat()).ok() else { return 0.0 };
    (stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64
}

/// Resets the peak RSS (VmHWM) to the current RSS, so that the next
/// `peak_rss_bytes` is the peak of one run, not of the whole process
/// (`/proc/self/clear_refs`, Linux 4.0+). Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    Process::myself().and_then(|me| me.clear_refs(ClearRefs::PeakRSS)).is_ok()
}

/// Peak resident set size of this process in bytes (VmHWM) since it started
/// or since the last successful `reset_peak_rss`.
pub fn peak_rss_bytes() -> u64 {
    Process::myself().and_then(|me| me.status()).ok().and_then(|s| s.vmhwm).map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        let before = super::cpu_seconds();
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(super::cpu_seconds() >= before);
        assert!(super::peak_rss_bytes() > 1 << 20);
    }

    #[test]
    fn the_peak_can_be_reset_to_the_current_rss() {
        let big = vec![1u8; 256 << 20];
        std::hint::black_box(&big);
        let with_big = super::peak_rss_bytes();
        drop(big);
        assert!(super::reset_peak_rss(), "clear_refs is writable on Linux");
        let after = super::peak_rss_bytes();
        assert!(after + (128 << 20) < with_big, "peak {after} after reset, {with_big} with 256 MiB touched");
    }
}
