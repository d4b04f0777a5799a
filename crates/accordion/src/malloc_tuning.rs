//! The C allocator's settings this binary runs with (glibc's malloc, behind
//! `counting_alloc`).
//!
//! glibc serves an allocation of at least `M_MMAP_THRESHOLD` bytes
//! (128 KiB) with its own mapping, unmapped when freed — but by default
//! the threshold *rises* to the size of every mapped block freed, up to
//! 32 MiB. The memstore frees multi-megabyte blocks all the time (the cell
//! pointer arrays of a flatten, merge or compaction), so the threshold
//! climbed and those blocks, and the 2 MiB chunks allocated after them,
//! went to the per-thread arenas, whose freed holes are not given back.
//! Measured on paper-write-zipf (issue 28), adaptive 0.35's peak RSS was
//! 308 MiB with the threshold free to rise and 229 MiB with it fixed, for
//! the same ≈ 155 MiB held by the memstores. Fixing it (any `mallopt` of
//! the threshold turns the rising off) costs a mapping per large block;
//! chunks are pooled, so that is a few per in-memory flush.
//!
//! glibc also keeps what is freed inside its arenas (allocations below the
//! threshold: blocks being encoded or decoded by flushes and compactions,
//! the WAL's buffers while they are small, the writers' batches); `free`
//! gives back only the top of an arena. Measured at the peak RSS of
//! paper-write-zipf (issue 28, `mallinfo2` in the bench's JSON), the
//! arenas held 39–50 MiB free beside 14–17 MiB in use, a quarter of the
//! memstores' budget that no accounting sees. A trimmer thread calls
//! `malloc_trim(0)` every [`TRIM_PERIOD`], which returns the free pages of
//! every arena to the system (`MADV_DONTNEED`), so the resident set
//! follows what is in use: peak RSS 218 → 176 MiB for policy none.
//!
//! Thread safety: `fix_mmap_threshold` once, first thing in `main`, before
//! other threads allocate; `start_trimmer` after it, once. `malloc_trim`
//! takes each arena's lock in turn, so it runs beside any allocation.

use std::time::Duration;

/// The threshold: glibc's default, held fixed.
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Fixes the mmap threshold; false where the C library refused (or is not
/// glibc, whose `mallopt` this is).
pub fn fix_mmap_threshold() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes malloc's tunables; called before
        // other threads start.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// How often the trimmer returns the arenas' free pages. Short enough that
/// what a flush or compaction frees is back before the next one piles on
/// it; one `malloc_trim` walks the free lists of every arena (well under a
/// millisecond here).
pub const TRIM_PERIOD: Duration = Duration::from_millis(100);

/// Returns the free pages of every malloc arena to the system now; false
/// where there was nothing to return or the C library is not glibc.
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only gives free memory back; it takes the
        // arenas' locks itself.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Overrides [`TRIM_PERIOD`], in milliseconds (0: no trimmer), like
/// glibc's own `MALLOC_*` tunables.
pub const TRIM_PERIOD_ENV: &str = "ACCORDION_MALLOC_TRIM_MS";

/// The trimmer's period: [`TRIM_PERIOD_ENV`] when set to a number, else
/// [`TRIM_PERIOD`]; `None` for no trimmer.
fn trim_period(env: Option<&str>) -> Option<Duration> {
    match env.and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(0) => None,
        Some(ms) => Some(Duration::from_millis(ms)),
        None => Some(TRIM_PERIOD),
    }
}

/// Starts the thread that [`trim`]s every [`TRIM_PERIOD`] (or what
/// [`TRIM_PERIOD_ENV`] says) for the rest of the process (glibc only);
/// false where it is not started.
pub fn start_trimmer() -> bool {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return false;
    }
    let Some(period) = trim_period(std::env::var(TRIM_PERIOD_ENV).ok().as_deref()) else {
        return false;
    };
    let spawned = std::thread::Builder::new().name("malloc-trim".into()).spawn(move || {
        loop {
            std::thread::sleep(period);
            trim();
        }
    });
    spawned.is_ok()
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn the_trim_period_comes_from_the_environment_when_it_is_a_number() {
        use std::time::Duration;
        assert_eq!(super::trim_period(None), Some(super::TRIM_PERIOD));
        assert_eq!(super::trim_period(Some("1000")), Some(Duration::from_secs(1)));
        assert_eq!(super::trim_period(Some("0")), None, "0 turns the trimmer off");
        assert_eq!(super::trim_period(Some("soon")), Some(super::TRIM_PERIOD), "not a number: the default");
    }

    /// The resident anonymous pages of this process (`RssAnon`), in bytes.
    fn rss_anon() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        let line = status.lines().find(|l| l.starts_with("RssAnon:")).expect("RssAnon");
        let kb: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number");
        kb * 1024
    }

    #[test]
    fn trim_returns_what_an_arena_keeps_after_free() {
        super::fix_mmap_threshold();
        // 64 MiB in 32 KiB blocks (below the mmap threshold: arena memory),
        // touched, then freed but for the last one, which lies above the
        // others and keeps the arena's top from shrinking over them.
        const BLOCK: usize = 32 << 10;
        const TOTAL: usize = 64 << 20;
        let freed = std::thread::spawn(|| {
            let mut blocks: Vec<Vec<u8>> = (0..TOTAL / BLOCK).map(|i| vec![i as u8 | 1; BLOCK]).collect();
            let pin = blocks.pop();
            let before_free = rss_anon();
            drop(blocks);
            let after_free = rss_anon();
            let trimmed = super::trim();
            let after_trim = rss_anon();
            drop(std::hint::black_box(pin));
            (before_free, after_free, trimmed, after_trim)
        })
        .join()
        .expect("the allocating thread");
        let (before_free, after_free, trimmed, after_trim) = freed;
        assert!(
            after_free + (TOTAL as u64) / 2 > before_free,
            "free alone keeps most of it: {before_free} → {after_free}"
        );
        assert!(trimmed, "there was free memory to return");
        assert!(
            after_trim + (TOTAL as u64) / 2 < after_free,
            "trim returns at least half of the 64 MiB: {after_free} → {after_trim}"
        );
    }
}
