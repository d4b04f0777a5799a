//! `Mvcc`: sequence ids, the read point, and the readers' read points
//! (HBase's MultiVersionConcurrencyControl). Pure bookkeeping, no I/O; a
//! region owns one and its stores' memstores consult it for the smallest
//! read point that a compaction must preserve.
//!
//! Invariants:
//! - Sequence ids are handed out strictly increasing.
//! - The read point is the highest id such that every write with an id at or
//!   below it has completed; it never goes back. So a reader at the read point
//!   sees each row mutation whole or not at all.
//! - `smallest_read_point()` ≤ every registered reader's read point and ≤ the
//!   current read point.
//!
//! - A write entry is completed exactly once: by [`Mvcc::complete`], or by
//!   dropping the [`PendingWrite`] guard that holds it (an error or a panic
//!   on the write path *abandons* it, which completes it too, so the read
//!   point never freezes behind a writer that gave up). Abandoning is only
//!   sound if nothing was made readable under the entry's id; the region's
//!   write path guarantees that by inserting nothing before the point of no
//!   return (after the WAL) and by never failing after it.
//!
//! Thread safety: all methods take `&self`. Beginning and completing a write
//! take a short mutex (the write queue, as in HBase); reading the read point
//! is a single atomic load. A writer waiting for the read point spins
//! briefly and then parks on a condvar that `complete` signals only when
//! someone is parked (`parked` counter, SeqCst on both sides: either the
//! completer sees the parked waiter or the waiter sees the new read point).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

#[derive(Debug)]
pub struct Mvcc {
    read_point: AtomicU64,
    queue: Mutex<WriteQueue>,
    readers: Mutex<BTreeMap<u64, usize>>,
    /// Writers parked in `wait_for_read_point`.
    parked: AtomicUsize,
    park_lock: Mutex<()>,
    advanced: Condvar,
}

#[derive(Debug)]
struct WriteQueue {
    next_seq: u64,
    /// In-flight writes in id order, with their completion flag.
    pending: VecDeque<(u64, bool)>,
}

/// A write in progress; complete it with [`Mvcc::complete`].
#[derive(Debug)]
#[must_use = "a write must be completed or the read point stalls"]
pub struct WriteEntry {
    seq: u64,
}

impl WriteEntry {
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// A registered reader; its read point is protected from compaction until
/// the guard drops.
#[derive(Debug)]
pub struct ReaderGuard {
    mvcc: Arc<Mvcc>,
    read_point: u64,
}

/// A write in progress that cannot leak: dropping it without
/// [`complete`](Self::complete) abandons the entry (the read point moves
/// past it). See the module invariants for when abandoning is sound.
#[derive(Debug)]
pub struct PendingWrite<'a> {
    mvcc: &'a Mvcc,
    entry: Option<WriteEntry>,
}

impl PendingWrite<'_> {
    pub fn seq(&self) -> u64 {
        self.entry.as_ref().map_or(0, WriteEntry::seq)
    }

    /// Completes the write and waits until the read point covers it, so the
    /// writer reads its own write (HBase's completeAndWait).
    pub fn complete_and_wait(mut self) {
        if let Some(entry) = self.entry.take() {
            let seq = entry.seq;
            self.mvcc.complete(entry);
            self.mvcc.wait_for_read_point(seq);
        }
    }
}

impl Drop for PendingWrite<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            self.mvcc.complete(entry);
        }
    }
}

impl ReaderGuard {
    pub fn read_point(&self) -> u64 {
        self.read_point
    }
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        let mut readers = self.mvcc.readers.lock();
        if let Some(n) = readers.get_mut(&self.read_point) {
            *n -= 1;
            if *n == 0 {
                readers.remove(&self.read_point);
            }
        }
    }
}

impl Default for Mvcc {
    fn default() -> Self {
        Mvcc::new(0)
    }
}

impl Mvcc {
    /// Starts after `last_seq` (e.g. the highest id recovered from disk).
    pub fn new(last_seq: u64) -> Mvcc {
        Mvcc {
            read_point: AtomicU64::new(last_seq),
            queue: Mutex::new(WriteQueue { next_seq: last_seq + 1, pending: VecDeque::new() }),
            readers: Mutex::new(BTreeMap::new()),
            parked: AtomicUsize::new(0),
            park_lock: Mutex::new(()),
            advanced: Condvar::new(),
        }
    }

    /// Assigns the next sequence id to a new write, held by a guard that
    /// abandons it if dropped uncompleted.
    pub fn begin_write(&self) -> PendingWrite<'_> {
        PendingWrite { mvcc: self, entry: Some(self.begin()) }
    }

    /// Assigns the next sequence id to a new write.
    pub fn begin(&self) -> WriteEntry {
        let mut q = self.queue.lock();
        let seq = q.next_seq;
        q.next_seq += 1;
        q.pending.push_back((seq, false));
        WriteEntry { seq }
    }

    /// Marks a write complete and advances the read point past every
    /// completed prefix of the queue.
    pub fn complete(&self, entry: WriteEntry) {
        let mut q = self.queue.lock();
        if let Some(slot) = q.pending.iter_mut().find(|(s, _)| *s == entry.seq) {
            slot.1 = true;
        }
        let mut advanced = None;
        while let Some(&(seq, true)) = q.pending.front() {
            advanced = Some(seq);
            q.pending.pop_front();
        }
        if let Some(seq) = advanced {
            self.read_point.fetch_max(seq, Ordering::SeqCst);
            drop(q);
            if self.parked.load(Ordering::SeqCst) > 0 {
                let _g = self.park_lock.lock();
                self.advanced.notify_all();
            }
        }
    }

    /// Moves past `seq` (recovery: ids found in files or the WAL). Only for
    /// use while no write is in flight.
    pub fn advance_to(&self, seq: u64) {
        let mut q = self.queue.lock();
        debug_assert!(q.pending.is_empty(), "advance_to with writes in flight");
        q.next_seq = q.next_seq.max(seq + 1);
        self.read_point.fetch_max(seq, Ordering::Release);
    }

    /// Waits until the read point reaches `seq` (a writer that must read its
    /// own write, as HBase's completeAndWait).
    pub fn wait_for_read_point(&self, seq: u64) {
        for _ in 0..64 {
            if self.read_point() >= seq {
                return;
            }
            std::hint::spin_loop();
        }
        self.parked.fetch_add(1, Ordering::SeqCst);
        let mut g = self.park_lock.lock();
        while self.read_point.load(Ordering::SeqCst) < seq {
            // Timed only as a belt and braces; `complete` signals.
            self.advanced.wait_for(&mut g, Duration::from_millis(10));
        }
        drop(g);
        self.parked.fetch_sub(1, Ordering::SeqCst);
    }

    /// Everything at or below this id is complete and visible.
    pub fn read_point(&self) -> u64 {
        self.read_point.load(Ordering::Acquire)
    }

    /// The highest id handed out so far.
    pub fn last_assigned(&self) -> u64 {
        self.queue.lock().next_seq - 1
    }

    /// Registers a reader at the current read point.
    pub fn register_reader(self: &Arc<Self>) -> ReaderGuard {
        let mut readers = self.readers.lock();
        // Taken under the lock so that smallest_read_point cannot miss it.
        let read_point = self.read_point();
        *readers.entry(read_point).or_insert(0) += 1;
        ReaderGuard { mvcc: self.clone(), read_point }
    }

    /// The lowest read point any current or future reader can have.
    pub fn smallest_read_point(&self) -> u64 {
        let readers = self.readers.lock();
        let rp = self.read_point();
        readers.keys().next().map_or(rp, |&r| r.min(rp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_point_waits_for_earlier_writes() {
        let m = Mvcc::new(10);
        let (a, b) = (m.begin(), m.begin());
        assert_eq!((a.seq(), b.seq()), (11, 12));
        m.complete(b);
        assert_eq!(m.read_point(), 10, "11 still in flight");
        m.complete(a);
        assert_eq!(m.read_point(), 12);
    }

    #[test]
    fn a_dropped_pending_write_is_abandoned_and_frees_the_read_point() {
        let m = Mvcc::new(0);
        let first = m.begin_write();
        let second = m.begin_write();
        assert_eq!((first.seq(), second.seq()), (1, 2));
        drop(first); // an error path gave up
        assert_eq!(m.read_point(), 1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _w = m.begin_write();
            panic!("a write path panics");
        }));
        assert!(r.is_err());
        second.complete_and_wait();
        assert_eq!(m.read_point(), 3, "the panicked write no longer holds the read point back");
    }

    #[test]
    fn a_parked_waiter_wakes_when_an_earlier_write_completes() {
        let m = Arc::new(Mvcc::new(0));
        let early = m.begin();
        let late = m.begin();
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || m.wait_for_read_point(2))
        };
        std::thread::sleep(Duration::from_millis(20));
        m.complete(late);
        assert_eq!(m.read_point(), 0, "1 still in flight");
        m.complete(early);
        waiter.join().expect("waiter");
        assert_eq!(m.read_point(), 2);
    }

    #[test]
    fn readers_hold_back_the_smallest_read_point() {
        let m = Arc::new(Mvcc::new(0));
        let w = m.begin();
        m.complete(w);
        let reader = m.register_reader();
        assert_eq!(reader.read_point(), 1);
        for _ in 0..3 {
            let w = m.begin();
            m.complete(w);
        }
        assert_eq!(m.smallest_read_point(), 1);
        drop(reader);
        assert_eq!(m.smallest_read_point(), 4);
    }
}
