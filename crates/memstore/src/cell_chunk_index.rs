//! `CellChunkIndex`: a flat segment's index as fixed-size entries stored
//! inside pooled chunks (HBase's CellChunkMap). An entry is 16 bytes: eight
//! bytes of the cell's row (its *row prefix*, below) and the chunk id (u32)
//! and offset (u32) of the cell — against HBase's 20 (chunk id, offset,
//! length, sequence id): the length and sequence id live in the cell's own
//! encoding, so the entry only locates and orders.
//!
//! Row prefix: the rows of a segment share the leading bytes its first and
//! last rows share (`common`, often a table's key prefix such as YCSB's
//! `user`); an entry keeps the eight row bytes after them, zero padded, as a
//! big-endian integer. Zero-padded prefixes order as the rows do whenever
//! they differ (a shorter row that is a prefix of a longer one pads to at
//! most the longer's bytes), so a binary-search probe whose prefix differs
//! from the search key's is decided from the entry alone; only equal
//! prefixes read the cell. Why: a probe that reads the cell costs three
//! cache misses (the entry, the chunk table, the cell); the reader of the
//! mixed workload spent a quarter of each get in these searches
//! (`bench-results/issue28-mixed-scale1/profile-reader-adaptive-64k.txt`).
//!
//! Invariants: entries are strictly increasing in cell order; every row
//! starts with `common`; every chunk id in an entry is one of the segment's
//! data chunks, which the segment keeps referenced, so the id resolves
//! through the chunk table for the index's whole life.
//!
//! Size: the entries fill whole index chunks from the pool
//! ([`INDEX_CHUNK_SIZE`], 128 KiB, 8 K entries: smaller than data chunks,
//! as HBase's index chunks are), so the index *holds*
//! `⌈cells / entries per chunk⌉ × index chunk size` bytes
//! ([`held_bytes`](CellChunkIndex::held_bytes)) while it *uses*
//! `16 × cells` ([`entry_bytes`](CellChunkIndex::entry_bytes)); a small
//! segment's index wastes most of its one chunk. Memstore heap accounting
//! charges the entries, as HBase charges `CELL_CHUNK_MAP_ENTRY` per cell and
//! not its index chunks; held accounting, which the global memstore limit
//! uses, charges the chunks (see `segment.rs`).
//!
//! Long columns: a hot row rewritten many times since the last flush holds
//! thousands of versions of each column, and a get must step past each
//! column's spent versions in every segment. A gallop over n versions
//! costs about 2·log2(n) probes, each a cell read (entries of one row tie
//! on their prefix): in YCSB C after A's updates, through the Java
//! client, a tenth of the server's samples
//! (`bench-results/issue27-ycsb-steady-state/c-after-a/`). So the index
//! keeps a table of its *long columns*, each a position range
//! `[start, end)` of at least [`LONG_COLUMN`] cells of one (row, family,
//! qualifier): a reseek from inside one tests the column's last cell and,
//! when the key is past it, lands after it in one probe. The table is
//! found as the entries are written: stretches of equal prefixes are
//! tracked on the entries alone (the merge's copy already has them in
//! cache), and only stretches at least [`LONG_COLUMN`] long have their
//! cells read, by galloping from column to column. Its bytes (eight per
//! long column) are charged as index bytes, heap and held.
//!
//! Thread safety: immutable after construction; shared freely. A
//! [`CellChunkIndexBuilder`] belongs to the one merge that fills it; its
//! chunks are shared only once `finish` has made them an index.

use std::cmp::Ordering;

use crate::cell::{CellKey, CellRef, common_prefix_len, compare_bytes, compare_cells, row_prefix};
use crate::chunk::{CHUNK_TABLE, ChunkId, ChunkRef, INDEX_CHUNK_SIZE};
use crate::chunk_pool::ChunkPool;
use crate::gallop::{first_not_below, gallop};
use crate::sorted_runs::{Items, RunItem, Sink};

/// The fewest cells of one column that the long-column table lists: a
/// gallop over fewer costs about as much as the table's probe.
pub const LONG_COLUMN: usize = 16;

/// Finds, as entries are written in order, the stretches of at least
/// [`LONG_COLUMN`] equal row prefixes: the only places a long column can
/// be. Reads entries only.
#[derive(Default)]
struct PrefixStretches {
    prefix: u64,
    start: usize,
    fed: usize,
    long: Vec<(u32, u32)>,
}

impl PrefixStretches {
    #[inline]
    fn feed(&mut self, entries: &[Entry]) {
        for e in entries {
            if self.fed == 0 || e.prefix != self.prefix {
                self.close();
                (self.prefix, self.start) = (e.prefix, self.fed);
            }
            self.fed += 1;
        }
    }

    fn close(&mut self) {
        if self.fed - self.start >= LONG_COLUMN {
            self.long.push((pos32(self.start), pos32(self.fed)));
        }
    }

    fn finish(mut self) -> Vec<(u32, u32)> {
        self.close();
        self.long
    }
}

/// An index position as the long-column table stores it.
fn pos32(i: usize) -> u32 {
    u32::try_from(i).expect("an index holds fewer than 2^32 cells")
}

/// One entry: the row prefix, then chunk id << 32 | offset.
///
/// The pipeline's merges work on entries rather than cell pointers
/// (`compactor.rs`): two entries whose prefixes differ are ordered without
/// reading either cell, so a galloping merge reads cells only where rows
/// tie, and the merged index is written from the entries without reading a
/// cell at all. Before, the merges compared cells (a cache miss each) and
/// then read every cell of the result again for its prefix: 15 % of the
/// process's samples on paper-write-zipf
/// (`bench-results/issue28-write-profile-poolcap/profile.txt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    prefix: u64,
    location: u64,
}

const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

impl RunItem for Entry {
    /// Entries of one merge carry prefixes past the same common bytes
    /// ([`CellChunkIndex::entries_past`]), so differing prefixes order as
    /// the rows do.
    #[inline]
    unsafe fn order(a: Self, b: Self) -> Ordering {
        match a.prefix.cmp(&b.prefix) {
            // SAFETY: per the contract, both locate live encoded cells.
            Ordering::Equal => unsafe {
                compare_cells(&CellRef::from_ptr(a.cell_ptr()), &CellRef::from_ptr(b.cell_ptr()))
            },
            o => o,
        }
    }

    #[inline]
    unsafe fn same_column(a: Self, b: Self) -> bool {
        // SAFETY: per the contract, both locate live encoded cells.
        a.prefix == b.prefix && unsafe { CellRef::from_ptr(a.cell_ptr()).same_column(&CellRef::from_ptr(b.cell_ptr())) }
    }

    /// The cell this entry locates.
    #[inline]
    fn cell_ptr(self) -> *const u8 {
        CellChunkIndex::locate_cell(self.location)
    }
}

/// `prefix`, a row prefix past `common`, re-based to the row bytes past
/// `common[..skip]`: the dropped common bytes lead, the old prefix's bytes
/// follow — the same eight bytes `row_prefix(row, skip)` reads, without
/// reading the row.
fn rebase(prefix: u64, common: &[u8], skip: usize) -> u64 {
    let moved = &common[skip..];
    let d = moved.len().min(8);
    let mut lead = [0u8; 8];
    lead[..d].copy_from_slice(&moved[..d]);
    let lead = u64::from_be_bytes(lead);
    // Shifting by 64 would overflow: eight or more moved bytes fill it all.
    if d == 8 { lead } else { lead | (prefix >> (8 * d)) }
}
const ENTRIES_PER_CHUNK: usize = INDEX_CHUNK_SIZE / ENTRY_BYTES;

pub struct CellChunkIndex {
    index_chunks: Vec<ChunkRef>,
    len: usize,
    /// The leading row bytes every cell's row has.
    common: Box<[u8]>,
    /// Ascending, disjoint `[start, end)` ranges, each at least
    /// [`LONG_COLUMN`] cells of one column (module doc).
    long_columns: Box<[(u32, u32)]>,
}

/// An index's entries read in place, prefixes re-based past the first
/// `skip` bytes of its common row bytes
/// ([`CellChunkIndex::entries_past`] without the copy).
pub struct EntriesPast<'a> {
    index: &'a CellChunkIndex,
    skip: usize,
}

impl EntriesPast<'_> {
    #[inline]
    fn rebased(&self, e: Entry) -> Entry {
        if self.skip == self.index.common.len() {
            e
        } else {
            Entry { prefix: rebase(e.prefix, &self.index.common, self.skip), location: e.location }
        }
    }
}

impl Items<Entry> for EntriesPast<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.index.len
    }

    #[inline]
    fn at(&self, i: usize) -> Entry {
        self.rebased(*self.index.entry(i))
    }

    fn append(&self, from: usize, to: usize, out: &mut impl Sink<Entry>) {
        let mut i = from;
        while i < to {
            let in_chunk = i % ENTRIES_PER_CHUNK;
            let n = (ENTRIES_PER_CHUNK - in_chunk).min(to - i);
            // SAFETY: entries i..i + n lie in one chunk, written at construction.
            let entries = unsafe { std::slice::from_raw_parts(self.index.entry(i) as *const Entry, n) };
            if self.skip == self.index.common.len() {
                out.extend_from_slice(entries);
            } else {
                entries.iter().for_each(|&e| out.push(self.rebased(e)));
            }
            i += n;
        }
    }
}

/// Builds a cell-chunk index entry by entry, in whole index chunks from the
/// pool: a merge writes its result here directly.
pub struct CellChunkIndexBuilder<'p> {
    pool: &'p ChunkPool,
    index_chunks: Vec<ChunkRef>,
    len: usize,
    stretches: PrefixStretches,
}

impl<'p> CellChunkIndexBuilder<'p> {
    pub fn new(pool: &'p ChunkPool) -> Self {
        CellChunkIndexBuilder { pool, index_chunks: Vec::new(), len: 0, stretches: PrefixStretches::default() }
    }

    /// The free entries of the last chunk, taking a new chunk when it is full.
    #[inline]
    fn room(&mut self) -> &mut [Entry] {
        let used = self.len % ENTRIES_PER_CHUNK;
        if used == 0 && self.len / ENTRIES_PER_CHUNK == self.index_chunks.len() {
            let chunk = self.pool.get_index();
            chunk.alloc(INDEX_CHUNK_SIZE, ENTRY_BYTES).expect("an empty index chunk holds a chunk of entries");
            self.index_chunks.push(chunk);
        }
        let chunk = self.index_chunks.last().expect("a chunk with room");
        // SAFETY: the chunk's whole capacity was allocated to entries above;
        // only this builder writes it, before the index is shared.
        unsafe { std::slice::from_raw_parts_mut((chunk.base() as *mut Entry).add(used), ENTRIES_PER_CHUNK - used) }
    }

    /// The index over the entries written, whose rows all start with `common`.
    pub fn finish(self, common: Box<[u8]>) -> CellChunkIndex {
        let index =
            CellChunkIndex { index_chunks: self.index_chunks, len: self.len, common, long_columns: Box::new([]) };
        index.with_long_columns(self.stretches.finish())
    }
}

impl Sink<Entry> for CellChunkIndexBuilder<'_> {
    #[inline]
    fn push(&mut self, item: Entry) {
        self.room()[0] = item;
        self.len += 1;
        self.stretches.feed(&[item]);
    }

    fn extend_from_slice(&mut self, mut items: &[Entry]) {
        while !items.is_empty() {
            let room = self.room();
            let n = room.len().min(items.len());
            room[..n].copy_from_slice(&items[..n]);
            self.len += n;
            self.stretches.feed(&items[..n]);
            items = &items[n..];
        }
    }
}

/// Where a search key stands against a segment's row prefixes.
#[derive(Clone, Copy)]
pub enum KeyProbe {
    /// The key's row sorts before every row of the segment.
    BeforeAll,
    /// The key's row sorts after every row of the segment.
    AfterAll,
    /// The key's row starts with the common bytes; its prefix after them.
    Prefix(u64),
}

/// Maps a cell pointer back to (chunk id, offset) over a segment's chunks.
pub struct ChunkLocator {
    ranges: Vec<(usize, usize, ChunkId)>,
}

impl ChunkLocator {
    pub fn new(chunks: &[ChunkRef]) -> ChunkLocator {
        let mut ranges: Vec<_> = chunks.iter().map(|c| (c.base() as usize, c.capacity(), c.id())).collect();
        ranges.sort_unstable();
        ChunkLocator { ranges }
    }

    /// The chunk id and offset of `ptr`, which must lie in one of the chunks.
    #[inline]
    pub fn locate(&self, ptr: *const u8) -> (ChunkId, u32) {
        let p = ptr as usize;
        let i = self.ranges.partition_point(|&(base, _, _)| base <= p) - 1;
        let (base, len, id) = self.ranges[i];
        debug_assert!(p < base + len, "cell pointer outside the segment's chunks");
        (id, (p - base) as u32)
    }
}

impl CellChunkIndex {
    /// Builds from sorted cell pointers, storing entries in chunks from `pool`.
    pub fn from_sorted(cells: &[*const u8], locator: &ChunkLocator, pool: &ChunkPool) -> CellChunkIndex {
        Self::from_sorted_counting(cells, locator, pool, false).0
    }

    /// Like [`from_sorted`](Self::from_sorted), and with `count` also the
    /// number of distinct (row, family, qualifier) columns of the cells,
    /// counted in the same pass that reads each cell's row for its prefix:
    /// a flatten for the adaptive policy otherwise read every cell twice.
    pub fn from_sorted_counting(
        cells: &[*const u8],
        locator: &ChunkLocator,
        pool: &ChunkPool,
        count: bool,
    ) -> (CellChunkIndex, Option<u64>) {
        let common: Box<[u8]> = match (cells.first(), cells.last()) {
            // SAFETY: the pointers are live encoded cells in the segment's
            // chunks (the caller's contract, as for `locate`).
            (Some(&first), Some(&last)) => unsafe {
                let (a, b) = (CellRef::from_ptr(first).row(), CellRef::from_ptr(last).row());
                a[..common_prefix_len(a, b)].into()
            },
            _ => Box::default(),
        };
        let skip = common.len();
        let mut columns = 0u64;
        let index = Self::build(cells.len(), common, pool, |group_start, out| {
            for k in 0..out.len() {
                let (i, p) = (group_start + k, cells[group_start + k]);
                // SAFETY: as above.
                let e = unsafe { Self::entry_of(p, skip, locator) };
                out[k] = e;
                if count {
                    // Rows whose prefixes differ differ; else the cells tell
                    // (the previous one was just read: no second miss).
                    let differs = k > 0 && out[k - 1].prefix != e.prefix;
                    // SAFETY: as above.
                    let same = || unsafe { CellRef::from_ptr(cells[i - 1]).same_column(&CellRef::from_ptr(p)) };
                    columns += u64::from(i == 0 || differs || !same());
                }
            }
        });
        (index, count.then_some(columns))
    }

    /// The entry for the cell at `p`, its prefix past `skip` row bytes.
    ///
    /// # Safety
    /// `p` must be a live encoded cell in one of the locator's chunks.
    unsafe fn entry_of(p: *const u8, skip: usize, locator: &ChunkLocator) -> Entry {
        let (id, off) = locator.locate(p);
        // SAFETY: per the contract.
        let row = unsafe { CellRef::from_ptr(p) }.row();
        Entry { prefix: row_prefix(row, skip), location: (u64::from(id) << 32) | u64::from(off) }
    }

    /// Fills whole index chunks: `fill(first, out)` writes the entries from
    /// position `first` into `out` (one chunk's worth or the rest).
    fn build(
        len: usize,
        common: Box<[u8]>,
        pool: &ChunkPool,
        mut fill: impl FnMut(usize, &mut [Entry]),
    ) -> CellChunkIndex {
        let mut index_chunks: Vec<ChunkRef> = Vec::with_capacity(len.div_ceil(ENTRIES_PER_CHUNK));
        let mut stretches = PrefixStretches::default();
        for group_start in (0..len).step_by(ENTRIES_PER_CHUNK) {
            let n = ENTRIES_PER_CHUNK.min(len - group_start);
            let chunk = pool.get_index();
            let dst = chunk.alloc(n * ENTRY_BYTES, ENTRY_BYTES).expect("entries fit a chunk");
            // SAFETY: `dst` is a fresh, aligned allocation of n entries.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr() as *mut Entry, n) };
            fill(group_start, out);
            stretches.feed(out);
            index_chunks.push(chunk);
        }
        CellChunkIndex { index_chunks, len, common, long_columns: Box::new([]) }.with_long_columns(stretches.finish())
    }

    /// The index with its long-column table, found inside `stretches`
    /// (ranges of equal prefixes, ascending): from each column's first
    /// cell, a gallop to the first cell of another column. A column is a
    /// prefix of what follows it in its stretch (the cells are sorted), so
    /// "same column" is monotone there.
    fn with_long_columns(mut self, stretches: Vec<(u32, u32)>) -> CellChunkIndex {
        let mut long = Vec::new();
        for (start, end) in stretches {
            let (mut i, end) = (start as usize, end as usize);
            while i < end {
                // SAFETY: positions below `len` locate live cells (invariant).
                let first = unsafe { CellRef::from_ptr(self.cell_ptr(i)) };
                // SAFETY: as above.
                let next = gallop(i + 1, end, |j| unsafe { CellRef::from_ptr(self.cell_ptr(j)) }.same_column(&first));
                if next - i >= LONG_COLUMN {
                    long.push((pos32(i), pos32(next)));
                }
                i = next;
            }
        }
        self.long_columns = long.into_boxed_slice();
        self
    }

    /// The end of the long column (module doc) that position `i` lies in:
    /// the position of the first cell of the next column.
    #[inline]
    pub fn long_column_end(&self, i: usize) -> Option<usize> {
        let table = &self.long_columns;
        let k = table.partition_point(|&(start, _)| start as usize <= i);
        let (_, end) = *table.get(k.checked_sub(1)?)?;
        (i < end as usize).then_some(end as usize)
    }

    /// Bytes of the long-column table (on the heap; module doc).
    pub fn long_column_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.long_columns)
    }

    /// What memstore heap accounting charges for this index: its entries
    /// and its long-column table.
    pub fn charged_bytes(&self) -> usize {
        self.entry_bytes() + self.long_column_bytes()
    }

    /// The leading row bytes every cell's row has.
    pub fn common(&self) -> &[u8] {
        &self.common
    }

    /// The entries in order, their prefixes re-based past the first `skip`
    /// bytes of [`common`](Self::common) (`skip <= common().len()`), for a
    /// merge with other segments whose rows share only those bytes. Reads
    /// the entries, not the cells.
    pub fn entries_past(&self, skip: usize) -> Vec<Entry> {
        assert!(skip <= self.common.len(), "re-basing past bytes not every row has");
        let mut out = Vec::with_capacity(self.len);
        for (i, chunk) in self.index_chunks.iter().enumerate() {
            let n = ENTRIES_PER_CHUNK.min(self.len - i * ENTRIES_PER_CHUNK);
            // SAFETY: the chunk holds n entries written at construction.
            let entries = unsafe { std::slice::from_raw_parts(chunk.base() as *const Entry, n) };
            if skip == self.common.len() {
                out.extend_from_slice(entries);
            } else {
                out.extend(
                    entries
                        .iter()
                        .map(|e| Entry { prefix: rebase(e.prefix, &self.common, skip), location: e.location }),
                );
            }
        }
        out
    }

    /// [`entries_past`](Self::entries_past), read in place.
    pub fn view_past(&self, skip: usize) -> EntriesPast<'_> {
        assert!(skip <= self.common.len(), "re-basing past bytes not every row has");
        EntriesPast { index: self, skip }
    }

    /// Entries for sorted cell pointers, prefixes past `skip` row bytes.
    ///
    /// # Safety
    /// Every pointer must be a live encoded cell in one of the locator's
    /// chunks, and every row must start with the same `skip` bytes.
    pub unsafe fn entries_of_sorted(cells: &[*const u8], skip: usize, locator: &ChunkLocator) -> Vec<Entry> {
        // SAFETY: per the contract.
        cells.iter().map(|&p| unsafe { Self::entry_of(p, skip, locator) }).collect()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of index entries, sixteen per cell ([`charged_bytes`](Self::charged_bytes) adds the table).
    pub fn entry_bytes(&self) -> usize {
        self.len * ENTRY_BYTES
    }

    /// Bytes the index actually holds: every chunk it took from the pool,
    /// whole, however few entries its last chunk has.
    pub fn held_bytes(&self) -> usize {
        self.index_chunks.iter().map(|c| c.capacity()).sum()
    }

    /// Calls `f` with the id and capacity of every chunk holding entries.
    pub fn visit_chunks(&self, mut f: impl FnMut(ChunkId, usize)) {
        self.index_chunks.iter().for_each(|c| f(c.id(), c.capacity()));
    }

    /// Chunks holding the entries.
    pub fn index_chunk_count(&self) -> usize {
        self.index_chunks.len()
    }

    #[inline]
    fn entry(&self, i: usize) -> &Entry {
        let chunk = &self.index_chunks[i / ENTRIES_PER_CHUNK];
        // SAFETY: entries were written at construction at this aligned slot,
        // and the chunk lives as long as `self`.
        unsafe { &*(chunk.base() as *const Entry).add(i % ENTRIES_PER_CHUNK) }
    }

    #[inline]
    fn locate_cell(location: u64) -> *const u8 {
        let base = CHUNK_TABLE.base((location >> 32) as ChunkId);
        debug_assert!(!base.is_null(), "data chunk of a live segment was released");
        // SAFETY: the offset lies within the referenced, live chunk.
        unsafe { base.add((location & 0xFFFF_FFFF) as usize) }
    }

    #[inline]
    pub fn cell_ptr(&self, i: usize) -> *const u8 {
        Self::locate_cell(self.entry(i).location)
    }

    /// Where `key` stands against this segment's row prefixes; computed
    /// once per search and passed to [`is_below`](Self::is_below).
    #[inline]
    pub fn probe(&self, key: &CellKey<'_>) -> KeyProbe {
        let c = &self.common;
        let n = c.len().min(key.row.len());
        match compare_bytes(&key.row[..n], &c[..n]) {
            // A key row that is a proper prefix of `common` sorts first too.
            Ordering::Less => KeyProbe::BeforeAll,
            Ordering::Equal if n < c.len() => KeyProbe::BeforeAll,
            Ordering::Equal => KeyProbe::Prefix(row_prefix(key.row, c.len())),
            Ordering::Greater => KeyProbe::AfterAll,
        }
    }

    /// Whether the cell at `i` sorts before `key` (whose probe is `probe`).
    #[inline]
    pub fn is_below(&self, i: usize, probe: KeyProbe, key: &CellKey<'_>) -> bool {
        let Entry { prefix, location } = *self.entry(i);
        match probe {
            KeyProbe::BeforeAll => false,
            KeyProbe::AfterAll => true,
            KeyProbe::Prefix(p) if prefix != p => prefix < p,
            // SAFETY: entries point at live encoded cells (invariant).
            KeyProbe::Prefix(_) => {
                unsafe { CellRef::from_ptr(Self::locate_cell(location)) }.compare_key(key) == Ordering::Less
            }
        }
    }

    /// Position of the first cell >= `key` (len if none).
    pub fn lower_bound(&self, key: &CellKey<'_>) -> usize {
        let probe = self.probe(key);
        first_not_below(0, self.len, |i| self.is_below(i, probe, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rebased_prefix_is_the_prefix_read_from_the_row() {
        let common = b"user1234567890123";
        let tails: [&[u8]; 6] = [b"", b"7", b"0000", b"98765432", b"987654321098", b"\xff\x00\x01"];
        for tail in tails {
            let row = [&common[..], tail].concat();
            let old = row_prefix(&row, common.len());
            for skip in 0..=common.len() {
                assert_eq!(
                    rebase(old, common, skip),
                    row_prefix(&row, skip),
                    "row {row:?}, skip {skip}: the same eight bytes"
                );
            }
        }
    }

    #[test]
    fn entries_order_as_their_cells_do() {
        use crate::cell::CellInput;
        let cells: Vec<Box<[u8]>> = ["user1", "user10", "user100", "user2", "user2", "user29"]
            .iter()
            .enumerate()
            .map(|(i, r)| CellInput::put(r.as_bytes(), b"f", b"q", 1, b"v").to_encoded(i as u64).into_boxed_slice())
            .collect();
        // Entries outside chunks cannot locate their cells; prefixes that
        // differ must decide alone, so give them locations that would fault.
        let entry = |i: usize| Entry {
            prefix: row_prefix(unsafe { CellRef::from_ptr(cells[i].as_ptr()) }.row(), 4),
            location: u64::MAX,
        };
        for i in 0..cells.len() {
            for j in 0..cells.len() {
                let (a, b) = (entry(i), entry(j));
                if a.prefix != b.prefix {
                    let want = unsafe {
                        compare_cells(&CellRef::from_ptr(cells[i].as_ptr()), &CellRef::from_ptr(cells[j].as_ptr()))
                    };
                    assert_eq!(unsafe { Entry::order(a, b) }, want, "{i} against {j}");
                    assert!(!unsafe { Entry::same_column(a, b) });
                }
            }
        }
    }
}
