//! `MutableSegment`: the active segment — a [`CellSkipList`] over cells
//! copied into the segment's own [`MemStoreLab`].
//!
//! Invariants:
//! - Cells are only added while the segment is not frozen. A writer
//!   announces itself (`writers += 1`) *before* checking `frozen`; the
//!   freezer sets `frozen` *before* waiting for `writers == 0`. Both use
//!   SeqCst, so after `freeze` + `wait_for_writers` returns, no insert is in
//!   progress or can start: the segment is immutable from then on.
//! - Statistics are updated once per row, after the row's cells are linked.
//!
//! Thread safety: any number of writers and readers concurrently; writers
//! never wait (a writer that finds the segment frozen retries on the new
//! active segment). `wait_for_writers` spins briefly for in-flight row
//! inserts, then parks on `drained`; the writer whose exit brings `writers`
//! to zero on a frozen segment signals it under `drained_lock` (the waiter
//! checks `writers` under that lock, so the signal cannot be lost).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::cell::CellInput;
use crate::chunk::{ChunkId, ChunkRef, JUMBO_CELL_THRESHOLD};
use crate::chunk_pool::ChunkPool;
use crate::mslab::MemStoreLab;
use crate::segment_stats::SegmentStats;
use crate::skiplist::{CellSkipList, Inserted, Splice};

/// Heap bytes of a skiplist's head tower.
pub const SKIPLIST_HEAD_BYTES: usize = crate::skiplist::HEAD_WORDS * std::mem::size_of::<usize>();

#[inline]
fn lower(a: &AtomicU64, v: u64) {
    if v < a.load(Ordering::Relaxed) {
        a.fetch_min(v, Ordering::Relaxed);
    }
}

#[inline]
fn raise(a: &AtomicU64, v: u64) {
    if v > a.load(Ordering::Relaxed) {
        a.fetch_max(v, Ordering::Relaxed);
    }
}

pub struct MutableSegment {
    list: CellSkipList,
    data: MemStoreLab,
    data_size: AtomicU64,
    min_seq: AtomicU64,
    max_seq: AtomicU64,
    min_ts: AtomicU64,
    max_ts: AtomicU64,
    writers: AtomicUsize,
    frozen: AtomicBool,
    drained_lock: parking_lot::Mutex<()>,
    drained: parking_lot::Condvar,
}

/// Proof that the holder may insert into the segment; dropping it ends the write.
pub struct WriteGuard<'a> {
    segment: &'a MutableSegment,
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        self.segment.leave();
    }
}

impl MutableSegment {
    pub fn new(pool: ChunkPool) -> MutableSegment {
        MutableSegment::with_labs(CellSkipList::new(pool.clone()), MemStoreLab::new(pool))
    }

    /// An empty segment in fresh chunks whose skiplist expects the rows
    /// `prev`'s did (`skiplist.rs`): the active segment after a snapshot.
    pub fn following(pool: ChunkPool, prev: &MutableSegment) -> MutableSegment {
        MutableSegment::with_labs(CellSkipList::following(pool.clone(), &prev.list), MemStoreLab::new(pool))
    }

    fn with_labs(list: CellSkipList, data: MemStoreLab) -> MutableSegment {
        MutableSegment {
            list,
            data,
            data_size: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
            min_ts: AtomicU64::new(u64::MAX),
            max_ts: AtomicU64::new(0),
            writers: AtomicUsize::new(0),
            frozen: AtomicBool::new(false),
            drained_lock: parking_lot::Mutex::new(()),
            drained: parking_lot::Condvar::new(),
        }
    }

    /// An empty segment whose data and node labs start in `prev`'s last
    /// chunks (see `mslab.rs`): the active segment that replaces `prev`
    /// at an in-memory flush.
    pub fn continuing(pool: ChunkPool, prev: &MutableSegment) -> MutableSegment {
        MutableSegment::with_labs(
            CellSkipList::continuing(pool.clone(), &prev.list),
            MemStoreLab::continuing(pool, &prev.data),
        )
    }

    /// A writer leaves; the last one out of a frozen segment wakes the
    /// freezer.
    #[inline]
    fn leave(&self) {
        if self.writers.fetch_sub(1, Ordering::SeqCst) == 1 && self.frozen.load(Ordering::SeqCst) {
            let _g = self.drained_lock.lock();
            self.drained.notify_all();
        }
    }

    /// Starts a write, or `None` if the segment has been frozen.
    #[inline]
    pub fn begin_write(&self) -> Option<WriteGuard<'_>> {
        self.writers.fetch_add(1, Ordering::SeqCst);
        if self.frozen.load(Ordering::SeqCst) {
            self.leave();
            return None;
        }
        Some(WriteGuard { segment: self })
    }

    /// Refuses new writes from now on.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    /// Waits until no write started before `freeze` is still running.
    pub fn wait_for_writers(&self) {
        debug_assert!(self.is_frozen(), "wait_for_writers before freeze could wait forever");
        for _ in 0..64 {
            if self.writers.load(Ordering::SeqCst) == 0 {
                return;
            }
            std::hint::spin_loop();
        }
        let mut g = self.drained_lock.lock();
        while self.writers.load(Ordering::SeqCst) != 0 {
            // Timed only as a belt and braces; the last writer signals.
            self.drained.wait_for(&mut g, std::time::Duration::from_millis(10));
        }
    }

    /// Copies the (validated) cells of one row mutation into the segment; a
    /// cell whose full key is already present replaces it (last writer
    /// wins). Returns the data bytes written.
    pub fn insert_row(&self, _guard: &WriteGuard<'_>, cells: &[CellInput<'_>], seq: u64) -> u64 {
        // One allocation for the whole row (unless a cell needs a jumbo
        // chunk): fewer contended bump-pointer updates, and the row's cells
        // sit together.
        let total: usize = cells.iter().map(|c| c.encoded_len()).sum();
        let mut row_mem = (total <= JUMBO_CELL_THRESHOLD).then(|| self.data.alloc(total, 1).as_ptr());
        let (mut added, mut replaced, mut linked, mut node_bytes) = (0u64, 0u64, 0usize, 0usize);
        let (mut min_ts, mut max_ts) = (u64::MAX, 0u64);
        // The cells of a row usually land next to each other: reuse the
        // position of the previous one.
        let mut splice = Splice::default();
        for cell in cells {
            let len = cell.encoded_len();
            let dst = match row_mem.as_mut() {
                Some(p) => {
                    let here = *p;
                    // SAFETY: `total` covers every cell of the row.
                    *p = unsafe { here.add(len) };
                    here
                }
                None => self.data.alloc(len, 1).as_ptr(),
            };
            // SAFETY: `dst` is `len` fresh bytes owned by this segment's lab;
            // nobody else can see them until the cell is linked.
            let bytes = unsafe { std::slice::from_raw_parts_mut(dst, len) };
            cell.encode_into(seq, bytes);
            // SAFETY: the cell is complete and lives in a chunk this segment holds.
            match unsafe { self.list.insert_with_splice(dst, &mut splice) } {
                Inserted::Linked(node) => {
                    linked += 1;
                    node_bytes += node;
                }
                // Same full key written again: the newer cell replaced it.
                Inserted::Replaced(old_len) => replaced += old_len as u64,
            }
            added += len as u64;
            min_ts = min_ts.min(cell.timestamp);
            max_ts = max_ts.max(cell.timestamp);
        }
        if !cells.is_empty() {
            self.list.record_inserts(linked, node_bytes);
            self.data_size.fetch_add(added, Ordering::Relaxed);
            if replaced > 0 {
                self.data_size.fetch_sub(replaced, Ordering::Relaxed);
            }
            // Read before writing: these rarely change once the segment has
            // a few rows, and a plain load does not take the line exclusive.
            lower(&self.min_seq, seq);
            raise(&self.max_seq, seq);
            lower(&self.min_ts, min_ts);
            raise(&self.max_ts, max_ts);
        }
        added
    }

    pub fn skiplist(&self) -> &CellSkipList {
        &self.list
    }

    /// The data chunks holding this segment's cells.
    pub fn data_chunks(&self) -> Vec<ChunkRef> {
        self.data.chunks()
    }

    /// Bytes of the data chunks this segment took, whole, at capacity (not
    /// the one it continued in: see [`inherited_chunks`](Self::inherited_chunks)).
    pub fn data_held_bytes(&self) -> u64 {
        self.data.held_bytes() as u64
    }

    /// Bytes of the node chunks this segment's skiplist took, whole, at
    /// capacity, plus the head tower once there is a node (an empty
    /// segment holds nothing); not the node chunk it continued in.
    pub fn index_held_bytes(&self) -> u64 {
        let arena = self.list.arena_held_bytes();
        (arena + if self.is_empty() { 0 } else { SKIPLIST_HEAD_BYTES }) as u64
    }

    /// The predecessor's chunks this segment continued in: its data chunk
    /// and its node chunk, each as id and capacity.
    pub fn inherited_chunks(&self) -> [Option<(ChunkId, usize)>; 2] {
        [self.data.inherited(), self.list.inherited_arena_chunk()]
    }

    /// Calls `f` with the id and capacity of every data chunk held.
    pub fn visit_data_chunks(&self, f: impl FnMut(ChunkId, usize)) {
        self.data.visit_chunks(f);
    }

    /// Calls `f` with the id and capacity of every node chunk held.
    pub fn visit_index_chunks(&self, f: impl FnMut(ChunkId, usize)) {
        self.list.visit_arena_chunks(f);
    }

    pub fn data_size(&self) -> u64 {
        self.data_size.load(Ordering::Relaxed)
    }

    pub fn cell_count(&self) -> u64 {
        self.list.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Current statistics (exact once the segment is frozen and drained).
    pub fn stats(&self) -> SegmentStats {
        SegmentStats {
            data_size: self.data_size(),
            index_size: self.list.index_bytes() as u64,
            cells: self.cell_count(),
            min_seq: self.min_seq.load(Ordering::Relaxed),
            max_seq: self.max_seq.load(Ordering::Relaxed),
            min_ts: self.min_ts.load(Ordering::Relaxed),
            max_ts: self.max_ts.load(Ordering::Relaxed),
            unique_keys: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_freezer_waits_for_every_writer_and_new_writers_are_refused() {
        let segment = Arc::new(MutableSegment::new(ChunkPool::new(4)));
        let (entered, entered_rx) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let left = Arc::new(AtomicBool::new(false));
        let writer = {
            let (segment, left) = (segment.clone(), left.clone());
            std::thread::spawn(move || {
                let guard = segment.begin_write().expect("not frozen yet");
                entered.send(()).expect("test alive");
                release_rx.recv().expect("test alive");
                left.store(true, Ordering::SeqCst);
                drop(guard);
            })
        };
        entered_rx.recv_timeout(Duration::from_secs(10)).expect("writer entered");
        segment.freeze();
        assert!(segment.begin_write().is_none(), "a frozen segment refuses new writers");
        let (done, done_rx) = mpsc::channel();
        let freezer = {
            let (segment, left) = (segment.clone(), left.clone());
            std::thread::spawn(move || {
                segment.wait_for_writers();
                done.send(left.load(Ordering::SeqCst)).expect("test alive");
            })
        };
        assert!(done_rx.recv_timeout(Duration::from_millis(50)).is_err(), "the freezer waits while a writer is in");
        release.send(()).expect("writer alive");
        assert!(
            done_rx.recv_timeout(Duration::from_secs(10)).expect("the freezer returns"),
            "only after the writer left"
        );
        writer.join().expect("writer");
        freezer.join().expect("freezer");
    }
}
