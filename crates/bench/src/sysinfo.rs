//! Process CPU time and peak RSS, read from /proc (Linux).

/// User + system CPU seconds of this process so far.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may contain spaces) start after ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the full line (11 and 12 here).
    (ticks(11) + ticks(12)) / 100.0
}

/// Resets the peak RSS (VmHWM) to the current RSS, so that the next
/// `peak_rss_bytes` is the peak of one run, not of the whole process
/// (`echo 5 > /proc/self/clear_refs`, Linux 4.0+). Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

/// Peak resident set size of this process in bytes (VmHWM) since it started
/// or since the last successful `reset_peak_rss`.
pub fn peak_rss_bytes() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next().and_then(|kb| kb.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
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
