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
//! Thread safety: all methods take `&self`. Beginning and completing a write
//! take a short mutex (the write queue, as in HBase); reading the read point
//! is a single atomic load.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

#[derive(Debug)]
pub struct Mvcc {
    read_point: AtomicU64,
    queue: Mutex<WriteQueue>,
    readers: Mutex<BTreeMap<u64, usize>>,
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
        }
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
            self.read_point.fetch_max(seq, Ordering::Release);
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
        let mut spins = 0u32;
        while self.read_point() < seq {
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
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
