//! The process's own figures, as Prometheus client libraries export them
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...),
//! read from `/proc/self` at each scrape. Off Linux there is no `/proc`
//! and nothing is read.
//!
//! Thread safety: stateless; every read opens the files afresh.

use std::time::Duration;

/// The kernel reports times in `/proc` in USER_HZ ticks, which is 100 on
/// every Linux architecture's ABI (what `sysconf(_SC_CLK_TCK)` returns;
/// Prometheus' own procfs reader assumes it too).
const USER_HZ: f64 = 100.0;

/// One read of the process's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessMetrics {
    /// User and system CPU time spent.
    pub cpu: Duration,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    /// The soft limit on open files (`None`: unlimited or unknown).
    pub max_fds: Option<u64>,
    pub threads: u64,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
}

/// Reads `/proc/self`; `None` where it cannot be read (not Linux).
pub fn read() -> Option<ProcessMetrics> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: the fields from 3 on follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field n of proc(5) is f[n - 3].
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let ticks = field(14)? + field(15)?;
    let threads = field(20)?;
    let start_ticks = field(22)?;
    let virtual_bytes = field(23)?;
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<u64>().ok()))?;
    let resident_bytes = std::fs::read_to_string("/proc/self/status").ok()?.lines().find_map(|l| {
        l.strip_prefix("VmRSS:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    })? * 1024;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let max_fds = std::fs::read_to_string("/proc/self/limits").ok().and_then(|limits| {
        limits.lines().find_map(|l| l.strip_prefix("Max open files")?.split_whitespace().next()?.parse::<u64>().ok())
    });
    Some(ProcessMetrics {
        cpu: Duration::from_secs_f64(ticks as f64 / USER_HZ),
        resident_bytes,
        virtual_bytes,
        open_fds,
        max_fds,
        threads,
        start_time_seconds: boot_time as f64 + start_ticks as f64 / USER_HZ,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_is_read() {
        let p = read().expect("/proc/self");
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.virtual_bytes >= p.resident_bytes, "{p:?}");
        assert!(p.open_fds >= 3 && p.threads >= 1, "{p:?}");
        assert!(p.max_fds.is_some_and(|m| m >= p.open_fds), "{p:?}");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
        assert!(p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0, "{p:?} now {now}");
    }
}
