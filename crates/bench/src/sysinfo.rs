//! Process CPU time and peak RSS, read from /proc (Linux) through the
//! `procfs` crate.
//!
//! Thread safety: stateless; every call reads `/proc/self` afresh.

use procfs::process::{ClearRefs, Process};
use procfs::{Current, CurrentSI, KernelStats};
use serde::Serialize;

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

/// The machine a benchmark ran on: the same command gives different ratios
/// on different hosts (a JVM gains more than we do from a large L3), so a
/// result says where it was measured.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    /// `/proc/cpuinfo`'s model name of the first CPU (`None` where unread).
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may run on.
    pub cpus: usize,
}

/// This machine (see [`Host`]).
pub fn host() -> Host {
    let cpu_model = procfs::CpuInfo::current().ok().and_then(|c| c.model_name(0).map(str::to_owned));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    Host { cpu_model, cpus }
}

/// CPU seconds the hypervisor gave other guests while this machine's CPUs
/// wanted to run (`/proc/stat`'s steal, all CPUs summed); `None` where it
/// cannot be read. Its rise over a run says how noisy the host was.
pub fn machine_steal_seconds() -> Option<f64> {
    let steal = KernelStats::current().ok()?.total.steal?;
    Some(steal as f64 / procfs::ticks_per_second() as f64)
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
    fn names_this_machine_and_reads_its_steal_time() {
        let host = super::host();
        assert!(host.cpus >= 1);
        let model = host.cpu_model.expect("/proc/cpuinfo names a model");
        assert!(!model.trim().is_empty());
        let before = super::machine_steal_seconds().expect("/proc/stat has a steal column");
        let after = super::machine_steal_seconds().expect("/proc/stat has a steal column");
        assert!(before >= 0.0 && after >= before, "steal only grows: {before} → {after}");
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
