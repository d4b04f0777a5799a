//! `CellSkipList`: the active segment's concurrent sorted index, with its
//! nodes in arena memory (RocksDB's InlineSkipList and Pebble's arenaskl are
//! the models), so that an insert performs no heap allocation.
//!
//! A node is `[cell pointer: 8 bytes][row prefix: 8 bytes][next pointer:
//! 8 bytes × height]`, allocated from the skiplist's own [`MemStoreLab`];
//! the cell bytes live in the segment's data lab. Height is chosen with
//! p = 1/4 (≈ 1.33 next pointers per node, so ≈ 26.7 index bytes per cell)
//! and capped at 12.
//!
//! The row prefix is the eight row bytes past the bytes the list expects
//! every row to start with (its `common`), zero padded and big-endian, and
//! 0 or `u64::MAX` for a row before or after every row with `common`
//! ([`row_prefix_past`]): a search step compares it with the key's and
//! reads the node's cell — a second cache miss, in another arena — only
//! when they tie. Without it a step cost two misses, and the active
//! segment's searches were a third of a YCSB B get (issue 28).
//!
//! `common` is learned: an active segment's list takes the bytes its
//! predecessor's rows all shared (empty for a store's first list). Keys of
//! the YCSB kind (`user` and nineteen digits) then compare eight digits
//! rather than four, so a write's descent ties, and reads a cell, only
//! near its own row. A row outside `common` is still ordered correctly —
//! its prefix ties with the other outsiders and the cells decide — so a
//! wrong guess costs compares, never order.
//!
//! Invariants:
//! - Nodes are never removed or moved; the list only grows. A node pointer
//!   obtained from the list stays valid while the list lives.
//! - At every level, the linked nodes are strictly increasing in cell order.
//!   An insert of a cell whose full key (including seq) is already present
//!   replaces that node's cell (last writer wins, as in HBase's memstore);
//!   the old cell stays in the arena, unreferenced by the list.
//! - A node, its row prefix and its cell are fully written before the
//!   release-CAS that links it at level 0; readers load next pointers with
//!   acquire, so a reader that reaches a node sees its cell. A node's row
//!   prefix never changes (a replacing cell has the same key, so the same
//!   row).
//!
//! Thread safety: any number of threads may insert and read concurrently
//! without locks. Readers may or may not see inserts concurrent with them
//! (MVCC read points make that irrelevant to users).

use std::cell::Cell as StdCell;
use std::cmp::Ordering;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use crate::cell::{CellKey, CellRef, common_prefix_len, compare_cells, row_prefix_past};
use crate::chunk_pool::ChunkPool;
use crate::mslab::MemStoreLab;

/// Tallest tower.
pub const MAX_HEIGHT: usize = 12;
const PTR: usize = std::mem::size_of::<usize>();

/// A node, as an opaque pointer into arena memory.
type Node = *mut u8;

/// Where the previous insert linked its node, per level: a hint that makes
/// the next insert of a nearby larger key (the next cell of the same row)
/// nearly free (RocksDB's `Splice`). Only valid for the list it came from.
pub struct Splice {
    prev: [Node; MAX_HEIGHT],
    next: [Node; MAX_HEIGHT],
    valid: bool,
}

impl Default for Splice {
    fn default() -> Self {
        Splice { prev: [std::ptr::null_mut(); MAX_HEIGHT], next: [std::ptr::null_mut(); MAX_HEIGHT], valid: false }
    }
}

pub struct CellSkipList {
    head: NonNull<u8>,
    arena: MemStoreLab,
    height: AtomicUsize,
    len: AtomicUsize,
    node_bytes: AtomicUsize,
    /// The row bytes the list expects every row to start with (a hint:
    /// rows without them are ordered all the same).
    common: Box<[u8]>,
}

// SAFETY: all shared state is reached through atomics; node memory is owned by
// the arena, which lives as long as the list.
unsafe impl Send for CellSkipList {}
// SAFETY: see above.
unsafe impl Sync for CellSkipList {}

/// Words before a node's tower: the cell pointer and the row prefix.
const NODE_HEADER_WORDS: usize = 2;

/// Words of the head: a node header (unused) and a full tower.
pub const HEAD_WORDS: usize = NODE_HEADER_WORDS + MAX_HEIGHT;

#[inline]
fn node_size(height: usize) -> usize {
    PTR * (NODE_HEADER_WORDS + height)
}

/// # Safety
/// `node` must be a live node with a tower taller than `level`.
#[inline]
unsafe fn next_slot<'a>(node: Node, level: usize) -> &'a AtomicPtr<u8> {
    // SAFETY: per the contract, the slot lies inside the node.
    unsafe { &*(node.add(PTR * (NODE_HEADER_WORDS + level)) as *const AtomicPtr<u8>) }
}

/// # Safety
/// `node` must be a linked (or being written, unshared) non-head node.
#[inline]
unsafe fn prefix_slot(node: Node) -> *mut u64 {
    // SAFETY: per the contract, the second word of a node is its prefix;
    // nodes are pointer-aligned, and pointers are 8 bytes here.
    unsafe { node.add(PTR) as *mut u64 }
}

/// What a search orders nodes against: a key (a seek) or a cell (an
/// insert, whose compares take two encodings' fast path in
/// [`compare_cells`]: a hot row's new version compares whole with the row's
/// old ones at every level, issue 28).
trait Target {
    /// How `cell` orders against the target.
    fn order_of(&self, cell: &CellRef<'_>) -> Ordering;
}

impl Target for CellKey<'_> {
    #[inline]
    fn order_of(&self, cell: &CellRef<'_>) -> Ordering {
        cell.compare_key(self)
    }
}

impl Target for CellRef<'_> {
    #[inline]
    fn order_of(&self, cell: &CellRef<'_>) -> Ordering {
        compare_cells(cell, self)
    }
}

/// Orders `node`'s cell against `key`, whose row prefix is `key_prefix`:
/// by the prefixes where they differ, else by the cell.
///
/// # Safety
/// `node` must be a linked non-head node.
#[inline]
unsafe fn compare_node(node: Node, key: &impl Target, key_prefix: u64) -> Ordering {
    // SAFETY: per the contract; the prefix was written before the node was
    // linked (release) and the caller reached the node through an acquire.
    let prefix = unsafe { prefix_slot(node).read() };
    if prefix != key_prefix {
        return prefix.cmp(&key_prefix);
    }
    #[cfg(test)]
    tests::CELLS_READ.with_borrow_mut(|read| read.push(node as usize));
    // SAFETY: per the contract.
    key.order_of(&unsafe { cell_of(node) })
}

/// # Safety
/// `node` must be a live non-head node.
#[inline]
unsafe fn cell_slot<'a>(node: Node) -> &'a AtomicPtr<u8> {
    // SAFETY: the first word of a node is its (atomic) cell pointer.
    unsafe { &*(node as *const AtomicPtr<u8>) }
}

/// # Safety
/// `node` must be a live non-head node.
#[inline]
unsafe fn cell_ptr(node: Node) -> *const u8 {
    // SAFETY: per the contract.
    unsafe { cell_slot(node) }.load(AtomicOrdering::Acquire)
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// A new node of this many bytes was linked.
    Linked(usize),
    /// An equal key was present; its cell was replaced by the new one, and
    /// this many bytes of the old cell are no longer referenced.
    Replaced(usize),
}

/// # Safety
/// `node` must be a live non-head node.
#[inline]
unsafe fn cell_of<'a>(node: Node) -> CellRef<'a> {
    // SAFETY: the cell pointer of a linked node points at a complete cell.
    unsafe { CellRef::from_ptr(cell_ptr(node)) }
}

thread_local! {
    static RNG: StdCell<u64> = StdCell::new({
        // Distinct seeds per thread without a syscall: the address of a local.
        let local = 0u8;
        (&local as *const u8 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
    });
}

fn random_height() -> usize {
    let r = RNG.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    });
    // Two bits per level: p = 1/4.
    (1 + (r.trailing_zeros() as usize) / 2).min(MAX_HEIGHT)
}

impl CellSkipList {
    /// An empty list taking node memory from `pool`.
    pub fn new(pool: ChunkPool) -> CellSkipList {
        CellSkipList::expecting(pool, Box::default())
    }

    /// An empty list whose row prefixes are taken past `common`.
    fn expecting(pool: ChunkPool, common: Box<[u8]>) -> CellSkipList {
        // The head lives on the heap so that an empty list holds no chunk.
        let head: Box<[usize]> = vec![0usize; HEAD_WORDS].into_boxed_slice();
        let head = NonNull::new(Box::into_raw(head) as *mut u8).expect("box is non-null");
        CellSkipList {
            head,
            arena: MemStoreLab::new(pool),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            node_bytes: AtomicUsize::new(0),
            common,
        }
    }

    /// An empty list whose node arena starts in `prev`'s last arena chunk
    /// ([`MemStoreLab::continuing`]): a list per active segment otherwise
    /// held a 2 MiB chunk for ≈ 120 KB of nodes. Its row prefixes are taken
    /// past the bytes `prev`'s rows all share (module doc).
    pub fn continuing(pool: ChunkPool, prev: &CellSkipList) -> CellSkipList {
        let mut list = CellSkipList::following(pool.clone(), prev);
        list.arena = MemStoreLab::continuing(pool, &prev.arena);
        list
    }

    /// An empty list in fresh arena memory whose row prefixes are taken
    /// past the bytes `prev`'s rows all share: the list after a disk flush.
    pub fn following(pool: ChunkPool, prev: &CellSkipList) -> CellSkipList {
        CellSkipList::expecting(pool, prev.rows_common())
    }

    /// The leading bytes every row in the list has now (those of its first
    /// and last rows), or the list's own `common` while it is empty.
    fn rows_common(&self) -> Box<[u8]> {
        let (first, last) = (self.first(), self.last());
        if first.is_null() || last.is_null() {
            return self.common.clone();
        }
        // SAFETY: both are linked nodes of this live list.
        let (a, b) = unsafe { (cell_of(first).row(), cell_of(last).row()) };
        a[..common_prefix_len(a, b)].into()
    }

    /// The row prefix of `row` in this list (module doc).
    #[inline]
    fn prefix_of(&self, row: &[u8]) -> u64 {
        row_prefix_past(row, &self.common)
    }

    /// The arena chunk this list continued in, if any: id and capacity.
    pub fn inherited_arena_chunk(&self) -> Option<(crate::chunk::ChunkId, usize)> {
        self.arena.inherited()
    }

    /// Calls `f` with the id and capacity of every arena chunk.
    pub fn visit_arena_chunks(&self, f: impl FnMut(crate::chunk::ChunkId, usize)) {
        self.arena.visit_chunks(f);
    }

    /// Cells in the list.
    pub fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of node memory (the index cost of this layout).
    pub fn index_bytes(&self) -> usize {
        self.node_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Chunks holding the nodes.
    pub fn arena_chunks(&self) -> usize {
        self.arena.chunk_count()
    }

    /// Bytes of the chunks the node arena took, whole (not the one it
    /// continued in; no head: an empty list holds nothing from the pool).
    pub fn arena_held_bytes(&self) -> usize {
        self.arena.held_bytes()
    }

    fn head(&self) -> Node {
        self.head.as_ptr()
    }

    /// Walks right at `level` from `before` until the next node is not less
    /// than `key`; returns (last node < key, first node >= key or null, how
    /// that node orders against `key`: `Equal` or `Greater`, `Greater` for
    /// null). `key_prefix` is `key`'s row prefix. `bound` is a node already
    /// known not to be less than `key`, with its order (the level above's
    /// answer, or null): met again here, it ends the walk without a compare.
    /// In a descent the same node often ends several levels in a row — for
    /// a hot row's new version, the row's newest old version — and its
    /// compare ties on the prefix and reads its cell (RocksDB's
    /// `last_bigger`).
    #[inline]
    fn find_splice_for_level(
        &self,
        key: &impl Target,
        key_prefix: u64,
        before: Node,
        bound: (Node, Ordering),
        level: usize,
    ) -> (Node, Node, Ordering) {
        let mut x = before;
        loop {
            // SAFETY: `x` is the head or a linked node, both taller than `level`
            // (we only move along `level`).
            let next = unsafe { next_slot(x, level) }.load(AtomicOrdering::Acquire);
            if next.is_null() {
                return (x, next, Ordering::Greater);
            }
            if next == bound.0 {
                return (x, next, bound.1);
            }
            // SAFETY: non-null next pointers are linked nodes.
            let order = unsafe { compare_node(next, key, key_prefix) };
            if order != Ordering::Less {
                return (x, next, order);
            }
            x = next;
        }
    }

    /// Links the encoded cell at `cell` into the list. Returns `false` if a
    /// cell with the same full key was present (it is replaced).
    ///
    /// # Safety
    /// `cell` must point at a complete encoded cell that outlives the list
    /// (in practice: in a chunk held by the same segment).
    pub unsafe fn insert(&self, cell: *const u8) -> bool {
        // SAFETY: per the contract.
        match unsafe { self.insert_with_splice(cell, &mut Splice::default()) } {
            Inserted::Linked(bytes) => {
                self.record_inserts(1, bytes);
                true
            }
            Inserted::Replaced(_) => false,
        }
    }

    /// Adds inserts made through [`insert_with_splice`](Self::insert_with_splice)
    /// to the list's counts (once per batch: the counters are shared by all
    /// writers, so each update costs a contended cache line).
    pub fn record_inserts(&self, cells: usize, node_bytes: usize) {
        self.len.fetch_add(cells, AtomicOrdering::Relaxed);
        self.node_bytes.fetch_add(node_bytes, AtomicOrdering::Relaxed);
    }

    /// Like [`insert`](Self::insert), starting from the position the previous
    /// insert with the same `splice` left, when the new key lies just after it.
    /// The caller reports linked nodes with
    /// [`record_inserts`](Self::record_inserts).
    ///
    /// # Safety
    /// As for `insert`; `splice` must come from this list (or be fresh).
    pub unsafe fn insert_with_splice(&self, cell: *const u8, splice: &mut Splice) -> Inserted {
        // SAFETY: per the contract.
        let key = unsafe { CellRef::from_ptr(cell) };
        let key_prefix = self.prefix_of(key.row());
        let height = random_height();
        let mut list_height = self.height.load(AtomicOrdering::Relaxed);
        while height > list_height {
            match self.height.compare_exchange_weak(
                list_height,
                height,
                AtomicOrdering::Relaxed,
                AtomicOrdering::Relaxed,
            ) {
                Ok(_) => list_height = height,
                Err(h) => list_height = h,
            }
        }
        let head = self.head();
        if !splice.valid {
            splice.prev = [head; MAX_HEIGHT];
            splice.next = [std::ptr::null_mut(); MAX_HEIGHT];
        }
        // The lowest level at which the splice still brackets the key; every
        // level below it is searched again, starting from the splice. `bound`
        // is that level's next node and its order against the key.
        let mut recompute = list_height;
        let mut bound = (std::ptr::null_mut(), Ordering::Greater);
        if splice.valid {
            // A splice's `prev` nodes do not increase with the level and its
            // `next` nodes do not decrease (a search leaves them so), and one
            // node often spans several levels (the previous insert's node is
            // every level's `prev` up to its height): the key is after every
            // `prev` once it is after level 0's, and a `next` already found
            // less is not compared again.
            let mut less_n = std::ptr::null_mut();
            for level in 0..list_height {
                let (p, n) = (splice.prev[level], splice.next[level]);
                // SAFETY: non-head splice nodes are linked nodes of this list.
                if level == 0 && p != head && unsafe { compare_node(p, &key, key_prefix) } != Ordering::Less {
                    break; // the key is not after the splice: search from the top
                }
                let order = if n.is_null() {
                    Ordering::Greater
                } else if n == less_n {
                    Ordering::Less
                } else {
                    // SAFETY: as above.
                    unsafe { compare_node(n, &key, key_prefix) }
                };
                if order == Ordering::Less {
                    less_n = n;
                } else {
                    recompute = level;
                    bound = (n, order);
                    break;
                }
            }
        }
        let mut x = if recompute == list_height { head } else { splice.prev[recompute] };
        for level in (0..recompute).rev() {
            let (p, n, order) = self.find_splice_for_level(&key, key_prefix, x, bound, level);
            splice.prev[level] = p;
            splice.next[level] = n;
            (x, bound) = (p, (n, order));
        }
        if recompute == list_height {
            for level in list_height..MAX_HEIGHT {
                splice.prev[level] = head;
                splice.next[level] = std::ptr::null_mut();
            }
        }
        splice.valid = true;
        let (prev, next) = (&mut splice.prev, &mut splice.next);
        // `bound` is now level 0's next and its order, without a second read
        // of its cell.
        if bound.1 == Ordering::Equal {
            // SAFETY: an `Equal` next is a linked node.
            return unsafe { Self::replace_cell(next[0], cell) };
        }
        let size = node_size(height);
        let node = self.arena.alloc(size, PTR).as_ptr();
        // SAFETY: `node` is a fresh allocation of `size` bytes, aligned for pointers.
        unsafe { cell_slot(node) }.store(cell as *mut u8, AtomicOrdering::Relaxed);
        // SAFETY: as above; published with the node by the linking CAS.
        unsafe { prefix_slot(node).write(key_prefix) };
        // Every level now brackets the key: levels below `recompute` were just
        // searched, and the splice's higher levels enclose its lower ones.
        for level in 0..height {
            loop {
                // SAFETY: `node` has `height` > level slots; prev[level] is the
                // head or a node taller than `level`.
                unsafe { next_slot(node, level) }.store(next[level], AtomicOrdering::Relaxed);
                let linked = unsafe { next_slot(prev[level], level) }.compare_exchange(
                    next[level],
                    node,
                    AtomicOrdering::Release,
                    AtomicOrdering::Relaxed,
                );
                if linked.is_ok() {
                    break;
                }
                // A concurrent insert landed between prev and next: walk right
                // from prev, which is still before the key.
                let unknown = (std::ptr::null_mut(), Ordering::Greater);
                let (p, n, order) = self.find_splice_for_level(&key, key_prefix, prev[level], unknown, level);
                if level == 0 && order == Ordering::Equal {
                    // Lost a race to an identical key; our node was never linked.
                    return unsafe { Self::replace_cell(n, cell) };
                }
                prev[level] = p;
                next[level] = n;
            }
            // The next key of the batch goes after this node at this level.
            prev[level] = node;
        }
        Inserted::Linked(size)
    }

    /// Points an existing node at a new cell with the same full key.
    ///
    /// # Safety
    /// `node` is a linked node; `cell` a complete cell that outlives the list.
    unsafe fn replace_cell(node: Node, cell: *const u8) -> Inserted {
        // SAFETY: per the contract; the old cell stays alive in the arena.
        let old = unsafe { cell_slot(node) }.swap(cell as *mut u8, AtomicOrdering::AcqRel);
        Inserted::Replaced(unsafe { CellRef::from_ptr(old) }.encoded().len())
    }

    /// First node, or null.
    #[inline]
    pub fn first(&self) -> Node {
        // SAFETY: the head has MAX_HEIGHT slots.
        unsafe { next_slot(self.head(), 0) }.load(AtomicOrdering::Acquire)
    }

    /// First node whose cell is >= `key`, or null.
    pub fn seek(&self, key: &CellKey<'_>) -> Node {
        let key_prefix = self.prefix_of(key.row);
        let mut x = self.head();
        let mut n = std::ptr::null_mut();
        let mut order = Ordering::Greater;
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            (x, n, order) = self.find_splice_for_level(key, key_prefix, x, (n, order), level);
        }
        n
    }

    /// Last node whose cell is < `key`, or null.
    pub fn seek_before(&self, key: &CellKey<'_>) -> Node {
        let key_prefix = self.prefix_of(key.row);
        let (mut x, mut n, mut order) = (self.head(), std::ptr::null_mut(), Ordering::Greater);
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            (x, n, order) = self.find_splice_for_level(key, key_prefix, x, (n, order), level);
        }
        if x == self.head() { std::ptr::null_mut() } else { x }
    }

    /// Last node, or null.
    pub fn last(&self) -> Node {
        let mut x = self.head();
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            loop {
                // SAFETY: `x` is the head or a node taller than `level`.
                let n = unsafe { next_slot(x, level) }.load(AtomicOrdering::Acquire);
                if n.is_null() {
                    break;
                }
                x = n;
            }
        }
        if x == self.head() { std::ptr::null_mut() } else { x }
    }

    /// The node after `node` (null at the end).
    ///
    /// # Safety
    /// `node` must be a non-null node of this list.
    #[inline]
    pub unsafe fn next(node: Node) -> Node {
        // SAFETY: per the contract; every node has level 0.
        unsafe { next_slot(node, 0) }.load(AtomicOrdering::Acquire)
    }

    /// The cell pointer of a node.
    ///
    /// # Safety
    /// `node` must be a non-null node of a live list.
    #[inline]
    pub unsafe fn cell(node: Node) -> *const u8 {
        // SAFETY: per the contract.
        unsafe { cell_ptr(node) }
    }
}

impl Drop for CellSkipList {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` as a boxed slice of HEAD_WORDS words.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.head.as_ptr() as *mut usize, HEAD_WORDS))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;
    use std::sync::Arc;

    thread_local! {
        /// The nodes whose cells this thread's searches read, in order.
        pub(super) static CELLS_READ: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    fn encoded(row: &str, seq: u64) -> Box<[u8]> {
        CellInput::put(row.as_bytes(), b"f", b"q", 1, b"v").to_encoded(seq).into_boxed_slice()
    }

    fn rows(list: &CellSkipList) -> Vec<String> {
        let mut out = Vec::new();
        let mut n = list.first();
        while !n.is_null() {
            // SAFETY: n is a linked node of a live list.
            let c = unsafe { CellRef::from_ptr(CellSkipList::cell(n)) };
            out.push(String::from_utf8(c.row().to_vec()).expect("utf8"));
            n = unsafe { CellSkipList::next(n) };
        }
        out
    }

    /// Takes the cells read since the last call; fails if one was read twice.
    fn assert_each_cell_read_once(what: &str) {
        let read = CELLS_READ.with_borrow_mut(std::mem::take);
        let mut distinct = read.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), read.len(), "{what} read a cell twice: {read:?}");
    }

    /// A hot row's new version ties on the row prefix with the row's old
    /// versions at every level of its descent. Each node's cell is read at
    /// most once per insert or seek, however many levels it ends, and the
    /// replace check reuses level 0's compare (it fails when a level's walk
    /// compares the level above's answer again, or the check reads the
    /// cell a second time).
    #[test]
    fn a_search_reads_each_cell_at_most_once() {
        let list = CellSkipList::new(ChunkPool::new(4));
        let mut cells = Vec::new();
        for seq in 1..=3000u64 {
            // Newer versions of one column sort first: each insert descends
            // to the front of the row's versions.
            cells.push(CellInput::put(b"hot-row", b"f", b"q", seq, b"v").to_encoded(seq).into_boxed_slice());
            CELLS_READ.with_borrow_mut(Vec::clear);
            let inserted =
                unsafe { list.insert_with_splice(cells.last().expect("pushed").as_ptr(), &mut Splice::default()) };
            assert!(matches!(inserted, Inserted::Linked(_)));
            assert_each_cell_read_once(&format!("insert {seq}"));
            // The same cell again replaces its node, found by one read.
            let again = CellInput::put(b"hot-row", b"f", b"q", seq, b"w").to_encoded(seq).into_boxed_slice();
            let replaced = unsafe { list.insert_with_splice(again.as_ptr(), &mut Splice::default()) };
            assert!(matches!(replaced, Inserted::Replaced(_)), "insert {seq} again");
            assert_each_cell_read_once(&format!("insert {seq} again"));
            cells.push(again);
            let older = CellKey {
                row: b"hot-row",
                family: b"f",
                qualifier: b"q",
                timestamp: seq / 2 + 1,
                type_code: u8::MAX,
                seq: u64::MAX,
            };
            assert!(!list.seek(&older).is_null());
            assert_each_cell_read_once(&format!("seek {seq}"));
        }
        assert_eq!(rows(&list).len(), 3000);
    }

    #[test]
    fn keeps_order_replaces_duplicates_and_seeks() {
        let list = CellSkipList::new(ChunkPool::new(2));
        let cells: Vec<_> = ["m", "c", "x", "a", "c"].iter().map(|r| encoded(r, 1)).collect();
        let inserted: Vec<bool> = cells.iter().map(|c| unsafe { list.insert(c.as_ptr()) }).collect();
        assert_eq!(inserted, [true, true, true, true, false], "the second c replaces the first");
        assert_eq!(rows(&list), ["a", "c", "m", "x"]);
        assert_eq!(list.len(), 4);
        let at = list.seek(&CellKey::first_on_row(b"d"));
        assert_eq!(unsafe { CellRef::from_ptr(CellSkipList::cell(at)) }.row(), b"m");
        let before = list.seek_before(&CellKey::first_on_row(b"d"));
        assert_eq!(unsafe { CellRef::from_ptr(CellSkipList::cell(before)) }.row(), b"c");
        assert!(list.seek_before(&CellKey::first_on_row(b"a")).is_null());
        assert_eq!(unsafe { CellRef::from_ptr(CellSkipList::cell(list.last())) }.row(), b"x");
        assert!(list.index_bytes() >= 4 * 16);
    }

    /// Rows that tie on their eight-byte prefix, pad with zeros, are prefixes
    /// of one another, run past eight bytes, or lie before, inside and after
    /// the rows with the list's expected common bytes: every seek and
    /// seek-before lands where a comparison of whole cells says (it fails
    /// with the prefix read little-endian, compared without the tie's cell
    /// check, or with outsiders given any prefix past `common`).
    #[test]
    fn row_prefixes_order_searches_as_the_cells_do() {
        for common in [&b""[..], b"a", b"a\0", b"abcdefg", b"user12", b"\xff"] {
            searches_land_where_the_cells_say(common);
        }
    }

    fn searches_land_where_the_cells_say(common: &[u8]) {
        let rows: [&[u8]; 16] = [
            b"\0",
            b"\0\0\0\0\0\0\0\0\x01",
            b"a",
            b"a\0",
            b"a\0\0",
            b"a\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
            b"b",
            b"ba",
            b"user1234567",
            b"user1234568",
            b"\xff\xff",
        ];
        let list = CellSkipList::expecting(ChunkPool::new(2), common.into());
        let mut cells: Vec<Box<[u8]>> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            for q in [&b"a"[..], b"b"] {
                for ts in [1, 2] {
                    let c = CellInput::put(row, b"f", q, ts, b"v").to_encoded(i as u64 + 1);
                    cells.push(c.into_boxed_slice());
                }
            }
        }
        // Inserted out of order, so that towers cross rows of every kind.
        for c in cells.iter().rev().step_by(2).chain(cells.iter().step_by(2)) {
            assert!(unsafe { list.insert(c.as_ptr()) });
        }
        let mut sorted: Vec<CellRef<'_>> = cells.iter().map(|c| unsafe { CellRef::from_ptr(c.as_ptr()) }).collect();
        sorted.sort_by(|a, b| crate::cell::compare_cells(a, b));
        let probes: Vec<&[u8]> =
            rows.iter().copied().chain([&b""[..], b"\0\0", b"abcdefg", b"abcdefgh\0\0", b"user", b"\xff"]).collect();
        for row in probes {
            for key in [
                CellKey::first_on_row(row),
                CellKey::first_on_column(row, b"f", b"b"),
                CellKey::last_on_column(row, b"f", b"a"),
            ] {
                let want = sorted.iter().position(|c| c.compare_key(&key) != Ordering::Less);
                let at = list.seek(&key);
                let got = (!at.is_null()).then(|| unsafe { CellRef::from_ptr(CellSkipList::cell(at)) });
                assert_eq!(got.map(|c| c.key()), want.map(|i| sorted[i].key()), "common {common:?}: seek {key:?}");
                let before = list.seek_before(&key);
                let got = (!before.is_null()).then(|| unsafe { CellRef::from_ptr(CellSkipList::cell(before)) });
                let want = want.unwrap_or(sorted.len()).checked_sub(1).map(|i| sorted[i].key());
                assert_eq!(got.map(|c| c.key()), want, "common {common:?}: seek_before {key:?}");
            }
        }
    }

    #[test]
    fn a_following_list_expects_the_bytes_its_predecessor_rows_shared() {
        let pool = ChunkPool::new(4);
        let first = CellSkipList::new(pool.clone());
        assert!(first.common.is_empty());
        let cells: Vec<_> = ["user1234", "user1299", "user1250"].iter().map(|r| encoded(r, 1)).collect();
        for c in &cells {
            assert!(unsafe { first.insert(c.as_ptr()) });
        }
        let second = CellSkipList::continuing(pool.clone(), &first);
        assert_eq!(&*second.common, b"user12");
        // So does the list after a disk flush, in arena memory of its own.
        let after_flush = CellSkipList::following(pool.clone(), &first);
        assert_eq!((&*after_flush.common, after_flush.inherited_arena_chunk()), (&b"user12"[..], None));
        // An empty predecessor passes its own expectation on.
        let third = CellSkipList::continuing(pool, &second);
        assert_eq!(&*third.common, b"user12");
    }

    #[test]
    fn concurrent_inserts_are_all_linked_in_order() {
        let list = Arc::new(CellSkipList::new(ChunkPool::new(4)));
        let cells: Arc<Vec<Box<[u8]>>> = Arc::new((0..20_000).map(|i| encoded(&format!("row{i:06}"), 1)).collect());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (list, cells) = (list.clone(), cells.clone());
                std::thread::spawn(move || {
                    for c in cells.iter().skip(t).step_by(4) {
                        assert!(unsafe { list.insert(c.as_ptr()) });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("writer");
        }
        let got = rows(&list);
        assert_eq!(got.len(), 20_000);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }
}
