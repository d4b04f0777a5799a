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

/// User + system CPU seconds of process `pid` so far, all its threads
/// (`None` where `/proc/<pid>` cannot be read: gone, or not Linux).
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = Process::new(i32::try_from(pid).ok()?).and_then(|p| p.stat()).ok()?;
    Some((stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64)
}

/// Bytes process `pid` (all its threads, ended ones included) has caused to
/// be written to storage so far: the kernel's `write_bytes` less
/// `cancelled_write_bytes` (pages dirtied, then truncated or deleted before
/// writeback). The kernel counts a page when the process dirties it, so a
/// write is counted when it is made, not when the flusher gets to it; a file
/// system with no backing device (tmpfs) counts nothing. `None` where
/// `/proc/<pid>/io` cannot be read.
pub fn process_disk_write_bytes(pid: u32) -> Option<u64> {
    let io = Process::new(i32::try_from(pid).ok()?).and_then(|p| p.io()).ok()?;
    Some(io.write_bytes.saturating_sub(io.cancelled_write_bytes))
}

/// User + system CPU seconds of this process's children that have ended
/// and been waited for (theirs and their own waited-for children's:
/// `getrusage(RUSAGE_CHILDREN)`); 0 where it cannot be read.
pub fn ended_children_cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value; getrusage only writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
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
        let me = super::process_cpu_seconds(std::process::id()).expect("this process");
        assert!((me - super::cpu_seconds()).abs() < 1.0, "the same process read two ways");
    }

    #[test]
    fn bytes_written_to_a_file_are_counted_when_written() {
        use std::io::Write;
        let me = std::process::id();
        // The package's directory: a disk-backed file system, where /tmp may
        // be tmpfs (which counts nothing).
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("temp dir");
        let before = super::process_disk_write_bytes(me).expect("/proc/self/io");
        let mut f = std::fs::File::create(dir.path().join("data")).expect("create");
        f.write_all(&vec![7u8; 8 << 20]).expect("write");
        f.sync_all().expect("sync");
        let after = super::process_disk_write_bytes(me).expect("/proc/self/io");
        assert!(after >= before + (8 << 20), "8 MiB written and synced: {before} → {after}");
    }

    #[test]
    fn a_waited_child_s_cpu_is_counted() {
        let before = super::ended_children_cpu_seconds();
        // A child that spins for about 0.3 s of CPU.
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(status.success());
        let after = super::ended_children_cpu_seconds();
        assert!(after > before, "the child's CPU: {before} → {after}");
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
