//! Chunks: the fixed-size memory blocks (MSLAB) that cell bytes and index
//! entries are copied into, and the process-wide table that resolves a chunk
//! id to its memory.
//!
//! Invariants:
//! - A chunk's memory never moves while any [`ChunkRef`] to it exists; the
//!   memory is returned to its pool (or freed) only when the last reference
//!   drops. Segments hold references to every chunk their cells or index
//!   live in, and readers hold the segments, so a chunk is never recycled
//!   while a segment or a reader can still reach it.
//! - A chunk's id is fixed for the life of its memory, also across recycling;
//!   the id table maps the id to the base address while the memory exists.
//! - Bytes below [`Chunk::used`] were handed out by [`Chunk::alloc`] and are
//!   written exactly once by the thread that allocated them, before being
//!   published (with release ordering) through an index.
//!
//! Thread safety: `alloc` is lock-free (a CAS bump pointer) and may be called
//! from any number of threads; distinct allocations never overlap, so writers
//! never race. The id table is lock-free for lookups.

use std::alloc::{Layout, alloc, dealloc};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Size of a regular chunk (HBase's default MSLAB chunk).
pub const CHUNK_SIZE: usize = 2 * 1024 * 1024;
/// Size of an index chunk: what a cell-chunk index stores its entries in
/// (HBase sizes these apart too,
/// `hbase.regionserver.inmemory.compaction.index.chunk.size.percent`,
/// 10 % of a data chunk). A flattened segment of the paper's shape
/// (A = 0.02 of a 32 MiB flush size) has ≈ 10 K cells, 80 KB of entries:
/// a 2 MiB chunk held 25× that, and the index chunks of a pipeline of such
/// segments were a third of what basic held. A power of two, so that an
/// entry's chunk is a shift away.
pub const INDEX_CHUNK_SIZE: usize = 128 * 1024;
/// Cells larger than this get a dedicated ("jumbo") chunk of their own.
pub const JUMBO_CELL_THRESHOLD: usize = 256 * 1024;
/// Alignment of every chunk's base address.
const CHUNK_ALIGN: usize = 64;

/// A chunk's process-wide id.
pub type ChunkId = u32;

/// A counted reference to a chunk; the chunk's memory lives while one exists.
pub type ChunkRef = Arc<Chunk>;

/// Where a chunk's memory goes when its last reference drops (the chunk
/// pool's shared state, `chunk_pool.rs`): a chunk knows only this, not the
/// pool, so that the pool may build on chunks without a circle. Called
/// once per chunk (every 2 MiB of cells), never per cell.
pub(crate) trait Recycler: Send + Sync {
    fn recycle(&self, memory: ChunkMemory);
}

/// Raw memory of a chunk with its id, as kept in a pool between uses.
pub(crate) struct ChunkMemory {
    pub(crate) id: ChunkId,
    pub(crate) ptr: NonNull<u8>,
    pub(crate) len: usize,
    /// A dedicated chunk for one oversized cell: never pooled, whatever its size.
    pub(crate) jumbo: bool,
}

// SAFETY: ChunkMemory is an owned heap block; nothing else aliases it while it
// sits in a pool.
unsafe impl Send for ChunkMemory {}

impl ChunkMemory {
    /// Allocates fresh memory and registers a new id for it.
    pub(crate) fn allocate(len: usize, jumbo: bool) -> ChunkMemory {
        let layout = Layout::from_size_align(len.max(1), CHUNK_ALIGN).expect("chunk layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        let id = CHUNK_TABLE.register(ptr.as_ptr());
        ChunkMemory { id, ptr, len, jumbo }
    }

    /// Unregisters the id and frees the memory.
    pub(crate) fn free(self) {
        CHUNK_TABLE.unregister(self.id);
        let layout = Layout::from_size_align(self.len.max(1), CHUNK_ALIGN).expect("chunk layout");
        // SAFETY: allocated in `allocate` with this layout; no references remain.
        unsafe { dealloc(self.ptr.as_ptr(), layout) };
    }
}

/// A chunk in use: memory plus a bump-allocation cursor.
pub struct Chunk {
    memory: Option<ChunkMemory>,
    base: *mut u8,
    len: usize,
    id: ChunkId,
    next_free: AtomicUsize,
    pool: Option<Arc<dyn Recycler>>,
}

// SAFETY: the raw base pointer refers to memory owned by this chunk; concurrent
// access goes through `alloc` (atomic) and disjoint allocations.
unsafe impl Send for Chunk {}
// SAFETY: see above.
unsafe impl Sync for Chunk {}

impl Chunk {
    pub(crate) fn new(memory: ChunkMemory, pool: Option<Arc<dyn Recycler>>) -> Chunk {
        Chunk {
            base: memory.ptr.as_ptr(),
            len: memory.len,
            id: memory.id,
            memory: Some(memory),
            next_free: AtomicUsize::new(0),
            pool,
        }
    }

    /// This chunk's id.
    pub fn id(&self) -> ChunkId {
        self.id
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.len
    }

    /// Bytes handed out so far.
    pub fn used(&self) -> usize {
        self.next_free.load(Ordering::Relaxed).min(self.len)
    }

    /// Base address of the chunk's memory.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Whether `ptr` points into this chunk.
    pub fn contains(&self, ptr: *const u8) -> bool {
        let p = ptr as usize;
        let b = self.base as usize;
        p >= b && p < b + self.len
    }

    /// Reserves `size` bytes aligned to `align` (a power of two) and returns a
    /// pointer to them, or `None` when the chunk is full.
    #[inline]
    pub fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let mut cur = self.next_free.load(Ordering::Relaxed);
        loop {
            let start = (cur + align - 1) & !(align - 1);
            let end = start.checked_add(size)?;
            if end > self.len {
                return None;
            }
            match self.next_free.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                // SAFETY: start + size <= len, so the pointer stays inside the chunk.
                Ok(_) => return NonNull::new(unsafe { self.base.add(start) }),
                Err(actual) => cur = actual,
            }
        }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if let Some(memory) = self.memory.take() {
            match &self.pool {
                Some(pool) => pool.recycle(memory),
                None => memory.free(),
            }
        }
    }
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk").field("id", &self.id).field("len", &self.len).field("used", &self.used()).finish()
    }
}

/// Resolves a chunk id to its memory's base address.
///
/// Two levels of lazily allocated pages so that lookups are two loads and
/// need no lock; written by hand because no crate offers a lock-free,
/// id-recycling slot table this small.
pub struct ChunkTable {
    pages: Box<[AtomicPtr<AtomicPtr<u8>>]>,
    next_id: AtomicU32,
    free_ids: Mutex<Vec<ChunkId>>,
}

const PAGE_BITS: u32 = 12;
const PAGE_LEN: usize = 1 << PAGE_BITS;
const PAGES: usize = 1 << 12;

/// The process-wide chunk id table.
pub static CHUNK_TABLE: std::sync::LazyLock<ChunkTable> = std::sync::LazyLock::new(ChunkTable::new);

impl ChunkTable {
    fn new() -> ChunkTable {
        ChunkTable {
            pages: (0..PAGES).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            // Id 0 is never handed out so that a zeroed entry is recognisably empty.
            next_id: AtomicU32::new(1),
            free_ids: Mutex::new(Vec::new()),
        }
    }

    fn register(&self, base: *mut u8) -> ChunkId {
        let id = self.free_ids.lock().pop().unwrap_or_else(|| self.next_id.fetch_add(1, Ordering::Relaxed));
        assert!((id as usize) < PAGES * PAGE_LEN, "more than {} chunks alive", PAGES * PAGE_LEN);
        self.slot(id).store(base, Ordering::Release);
        id
    }

    fn unregister(&self, id: ChunkId) {
        self.slot(id).store(std::ptr::null_mut(), Ordering::Release);
        self.free_ids.lock().push(id);
    }

    fn slot(&self, id: ChunkId) -> &AtomicPtr<u8> {
        let page_index = (id >> PAGE_BITS) as usize;
        let page_slot = &self.pages[page_index];
        let mut page = page_slot.load(Ordering::Acquire);
        if page.is_null() {
            let fresh: Box<[AtomicPtr<u8>]> = (0..PAGE_LEN).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect();
            let fresh = Box::into_raw(fresh) as *mut AtomicPtr<u8>;
            match page_slot.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => page = fresh,
                Err(existing) => {
                    // SAFETY: `fresh` was created above and never shared.
                    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, PAGE_LEN)) });
                    page = existing;
                }
            }
        }
        // SAFETY: pages are PAGE_LEN long and never freed (the table is static).
        unsafe { &*page.add(id as usize & (PAGE_LEN - 1)) }
    }

    /// Base address of a live chunk, or null if the id is not registered.
    #[inline]
    pub fn base(&self, id: ChunkId) -> *mut u8 {
        let page = self.pages[(id >> PAGE_BITS) as usize].load(Ordering::Acquire);
        if page.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: see `slot`.
        unsafe { (*page.add(id as usize & (PAGE_LEN - 1))).load(Ordering::Acquire) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_allocation_respects_alignment_and_capacity() {
        let chunk = Chunk::new(ChunkMemory::allocate(64, false), None);
        let a = chunk.alloc(3, 1).expect("fits");
        let b = chunk.alloc(8, 8).expect("fits");
        assert_eq!(b.as_ptr() as usize % 8, 0);
        assert!(b.as_ptr() as usize >= a.as_ptr() as usize + 3);
        assert!(chunk.alloc(64, 1).is_none(), "over capacity");
        assert_eq!(chunk.used(), 16);
    }

    #[test]
    fn ids_resolve_while_alive_and_clear_after_free() {
        let memory = ChunkMemory::allocate(128, false);
        let (id, ptr) = (memory.id, memory.ptr.as_ptr());
        assert_eq!(CHUNK_TABLE.base(id), ptr);
        drop(Chunk::new(memory, None));
        assert_ne!(CHUNK_TABLE.base(id), ptr, "freed chunk id must not resolve to its old memory");
    }

    #[test]
    fn concurrent_allocations_never_overlap() {
        let chunk = Arc::new(Chunk::new(ChunkMemory::allocate(1 << 16, false), None));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = chunk.clone();
                std::thread::spawn(move || {
                    let mut v = Vec::new();
                    while let Some(p) = c.alloc(24, 8) {
                        v.push(p.as_ptr() as usize);
                    }
                    v
                })
            })
            .collect();
        let mut all: Vec<usize> = handles.into_iter().flat_map(|h| h.join().expect("thread")).collect();
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(w[1] - w[0] >= 24);
        }
        assert_eq!(all.len(), (1 << 16) / 24);
    }
}
