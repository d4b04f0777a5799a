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
//! Thread safety: call once, first thing in `main`, before other threads
//! allocate.

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
