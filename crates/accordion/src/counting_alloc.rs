//! A global allocator that counts allocations, so that the bench can report
//! heap allocations per insert (the memstore's goal is zero in steady state).
//! One relaxed atomic increment per allocation, plus a per-thread count so
//! that a bench can report what its *writer threads* allocated (the put
//! path), apart from flush and compaction threads; deallocations are not
//! counted. The thread-local is a const-initialised `Cell<u64>` (no
//! destructor, so touching it never allocates or registers anything).
//!
//! Counting is off until a bench that reports allocations turns it on
//! ([`start`]): every thread's increment of the one counter moves its cache
//! line between cores, and the server, which reports none, spent 2 % of
//! its samples there while YCSB wrote through it
//! (`bench-results/issue27-long-columns/server-write-profile.txt`).
//! Off, an allocation reads a flag no one writes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Turns counting on for the rest of the process.
pub fn start() {
    COUNTING.store(true, Ordering::Relaxed);
}

thread_local! {
    static THREAD_ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline]
fn count() {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // `try_with`: a thread being torn down just is not counted.
    let _ = THREAD_ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: delegates every call to the system allocator unchanged.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations (including reallocations) since the process started.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Allocations (including reallocations) made by the calling thread.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.try_with(std::cell::Cell::get).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing is counted until a bench starts counting; then every
    /// allocation is, in the process and in the allocating thread.
    #[test]
    fn counts_only_once_started() {
        let (before, thread_before) = (allocations(), thread_allocations());
        let held: Vec<Box<u64>> = (0..100).map(Box::new).collect();
        assert_eq!((allocations(), thread_allocations()), (before, thread_before), "not started: nothing counted");
        start();
        let more: Vec<Box<u64>> = (0..100).map(Box::new).collect();
        assert!(allocations() >= before + 101, "the boxes and their vector");
        assert!(thread_allocations() >= thread_before + 101);
        drop((held, more));
    }
}
