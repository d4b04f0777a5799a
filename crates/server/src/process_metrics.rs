//! The process's own figures, as Prometheus client libraries export them
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...),
//! read from `/proc/self` at each scrape through the `procfs` crate (it
//! handles the format's traps: a command name holding spaces or
//! parentheses, the clock tick, the limits table). Off Linux there is no
//! `/proc` and nothing is read.
//!
//! Thread safety: stateless; every read opens the files afresh.

use std::time::Duration;

use procfs::process::{LimitValue, Process};

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
    let me = Process::myself().ok()?;
    let stat = me.stat().ok()?;
    let hz = procfs::ticks_per_second() as f64;
    let boot_time = procfs::boot_time_secs().ok()?;
    let max_fds = me.limits().ok().and_then(|l| match l.max_open_files.soft_limit {
        LimitValue::Value(n) => Some(n),
        LimitValue::Unlimited => None,
    });
    Some(ProcessMetrics {
        cpu: Duration::from_secs_f64((stat.utime + stat.stime) as f64 / hz),
        resident_bytes: me.status().ok()?.vmrss? * 1024,
        virtual_bytes: stat.vsize,
        open_fds: me.fd_count().ok()? as u64,
        max_fds,
        threads: u64::try_from(stat.num_threads).ok()?,
        start_time_seconds: boot_time as f64 + stat.starttime as f64 / hz,
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
