//! Concurrency stress: writers, readers, the background compactor and a
//! disk-flush thread run against one memstore at once, under every policy
//! and flat layout, and the memstore keeps its promises:
//!
//! - row atomicity: a reader at an MVCC read point sees each row mutation
//!   whole or not at all — the four cells of a row always carry the same
//!   version and value, in reads, scans and flushed snapshots alike;
//! - durability: every acknowledged write is found at the end, either in the
//!   memstore or in a snapshot that was handed to a disk flush, and no reader
//!   ever sees a row older than its last acknowledged write;
//! - accounting: once everything is flushed the memstore's size is exactly
//!   zero, and once it is dropped no chunk of its pool is still referenced.
//!
//! Why: the memstore's structure changes under readers and writers without
//! locks (views published atomically, segments frozen and drained, pipeline
//! suffixes swapped by version); a torn row, a lost write or a leaked chunk
//! is only visible when in-memory flushes, flattens, merges, compactions and
//! snapshots actually race with reads and writes. The in-memory flush
//! threshold is tiny so that they do, many times per run. Runs are bounded by
//! operation counts, not by time.
//!
//! The last tests stress the active segment's lock-free skiplist through the
//! memstore: many threads inserting distinct keys, identical cells,
//! versions of one hot column, and multi-cell rows whose cells come out of
//! order (the insert path reuses the previous cell's position in the list).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use memstore::cell::compare_cells;
use memstore::{
    Cell, CellInput, CellRef, CellType, ChunkPool, CompactionExecutor, CompactionMode, CompactionPolicy,
    CountersSnapshot, InMemoryFlushThreshold, IndexLayout, MemStore, MemStoreConfig, MemStoreSize, ReadOptions,
    ScanRange, VersionRules,
};

const FAMILY: &[u8] = b"f";
const QUALIFIERS: [&[u8]; 4] = [b"q0", b"q1", b"q2", b"q3"];
const WRITERS: usize = 3;
const READERS: usize = 2;
/// Each writer owns this many "hot" row keys and rewrites them round-robin,
/// so that compactions find redundant versions to drop...
const KEYS_PER_WRITER: usize = 24;
/// ...and every this many writes (coprime with the above) writes a row of
/// its own that is never overwritten, so that a lost write cannot hide
/// behind a newer version of its row.
const UNIQUE_EVERY: usize = 5;
const ROWS_PER_WRITER: usize = 20_000;
/// Writers pause briefly after this many rows.
const PACE_EVERY_ROWS: usize = 16;
/// Writers wait while the pipeline holds more segments than this...
const PIPELINE_BACKLOG: usize = 4;
/// ...but at most this many short sleeps per row.
const MAX_THROTTLE_WAITS: usize = 200;
/// The flush thread takes a snapshot each time this many more rows were written.
const SNAPSHOT_EVERY_ROWS: u64 = 5_000;
/// Reads each reader performs at least (they keep going while writers run).
const MIN_READS: usize = 500;

fn row_key(writer: usize, key: usize) -> Vec<u8> {
    format!("w{writer}-k{key:04}").into_bytes()
}

/// The row of a writer's `counter`-th write.
fn row_of_write(writer: usize, counter: usize) -> Vec<u8> {
    if counter.is_multiple_of(UNIQUE_EVERY) {
        format!("w{writer}-u{counter:06}").into_bytes()
    } else {
        row_key(writer, counter % KEYS_PER_WRITER)
    }
}

/// The last write of a hot key.
fn last_write_of(key: usize) -> usize {
    (0..ROWS_PER_WRITER)
        .rev()
        .find(|&c| c % KEYS_PER_WRITER == key && !c.is_multiple_of(UNIQUE_EVERY))
        .expect("every hot key is written")
}

fn encode_value(writer: usize, counter: usize) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&(writer as u64).to_be_bytes());
    v[8..].copy_from_slice(&(counter as u64).to_be_bytes());
    v
}

fn decode_value(v: &[u8]) -> (usize, usize) {
    assert_eq!(v.len(), 16, "value of a foreign length: {v:?}");
    let w = u64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
    let c = u64::from_be_bytes(v[8..].try_into().expect("8 bytes"));
    (w as usize, c as usize)
}

/// A small deterministic generator for the readers' choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// State shared by the threads of one run.
struct Shared {
    store: MemStore,
    max_versions: u32,
    /// Latest acknowledged seq of each writer's hot keys.
    acked: Vec<Vec<AtomicU64>>,
    /// Writes acknowledged so far by each writer.
    progress: Vec<AtomicUsize>,
    /// Seq of each writer's n-th write, published before the write is visible.
    seq_of: Vec<Vec<AtomicU64>>,
    /// Highest seq per row and qualifier handed to a released snapshot.
    flushed: Mutex<HashMap<Vec<u8>, [u64; 4]>>,
    rows_written: AtomicU64,
    writers_done: AtomicBool,
}

impl Shared {
    fn new(store: MemStore, max_versions: u32) -> Shared {
        let table = |n| (0..WRITERS).map(|_| (0..n).map(|_| AtomicU64::new(0)).collect()).collect();
        Shared {
            store,
            max_versions,
            acked: table(KEYS_PER_WRITER),
            seq_of: table(ROWS_PER_WRITER),
            progress: (0..WRITERS).map(|_| AtomicUsize::new(0)).collect(),
            flushed: Mutex::new(HashMap::new()),
            rows_written: AtomicU64::new(0),
            writers_done: AtomicBool::new(false),
        }
    }

    fn read_options(&self, read_point: u64) -> ReadOptions {
        ReadOptions { read_point, max_versions: self.max_versions, ..ReadOptions::default() }
    }

    /// Writes rows as a region does: begin, add, complete, and acknowledge
    /// once the read point has reached the write (HBase's completeAndWait).
    fn write(&self, writer: usize) {
        let mvcc = &self.store.config().mvcc;
        for counter in 0..ROWS_PER_WRITER {
            let row = row_of_write(writer, counter);
            let value = encode_value(writer, counter);
            let entry = mvcc.begin();
            let seq = entry.seq();
            self.seq_of[writer][counter].store(seq, Ordering::Release);
            let cells = QUALIFIERS.map(|q| CellInput::put(&row, FAMILY, q, seq, &value));
            self.store.add_row(&cells, seq).expect("a valid row is accepted");
            mvcc.complete(entry);
            while mvcc.read_point() < seq {
                thread::yield_now();
            }
            if !counter.is_multiple_of(UNIQUE_EVERY) {
                self.acked[writer][counter % KEYS_PER_WRITER].store(seq, Ordering::Release);
            }
            self.progress[writer].store(counter + 1, Ordering::Release);
            self.rows_written.fetch_add(1, Ordering::Relaxed);
            self.throttle(counter);
        }
    }

    /// Holds writers back while the pipeline is long, as a region blocks
    /// updates when its memstore is too large, so that the compaction thread
    /// keeps up even when it gets little of a small machine. Bounded: a
    /// compactor that never catches up slows the run but cannot hang it.
    fn throttle(&self, counter: usize) {
        if counter % PACE_EVERY_ROWS == PACE_EVERY_ROWS - 1 {
            thread::sleep(Duration::from_micros(100));
        }
        for _ in 0..MAX_THROTTLE_WAITS {
            if self.store.layout_info().pipeline.len() <= PIPELINE_BACKLOG {
                break;
            }
            thread::sleep(Duration::from_micros(50));
        }
    }

    /// Checks one row as read at `read_point`: every column holds the same
    /// versions, each version is one whole write (same seq and value in all
    /// four columns), and the value is the one written with that seq.
    /// Returns the newest seq.
    fn check_row(&self, cells: &[Cell], read_point: u64) -> u64 {
        let row = &cells[0].row;
        let columns: Vec<Vec<&Cell>> =
            QUALIFIERS.iter().map(|q| cells.iter().filter(|c| c.qualifier == *q).collect()).collect();
        let versions = &columns[0];
        assert_eq!(columns.iter().map(Vec::len).sum::<usize>(), cells.len(), "foreign qualifier: {cells:?}");
        assert!(
            !versions.is_empty() && versions.len() <= self.max_versions as usize,
            "row {:?}: {} versions in q0: {cells:?}",
            String::from_utf8_lossy(row),
            versions.len()
        );
        for column in &columns[1..] {
            let same = column.len() == versions.len()
                && column.iter().zip(versions).all(|(a, b)| a.seq == b.seq && a.value == b.value);
            assert!(same, "torn row {:?} at read point {read_point}: {cells:?}", String::from_utf8_lossy(row));
        }
        assert!(versions.windows(2).all(|w| w[0].seq > w[1].seq), "versions newest first: {cells:?}");
        for c in cells {
            assert_eq!((&c.row, c.family.as_ref(), c.cell_type), (row, FAMILY, CellType::Put));
            assert_eq!(c.timestamp, c.seq, "timestamp is the seq");
            assert!(c.seq <= read_point, "seq {} beyond read point {read_point}", c.seq);
            let (w, counter) = decode_value(&c.value);
            assert_eq!(&row_of_write(w, counter), row, "value of another row: {c:?}");
            assert_eq!(self.seq_of[w][counter].load(Ordering::Acquire), c.seq, "value of another write: {c:?}");
        }
        versions[0].seq
    }

    /// The row is not readable: its write `seq` must have been flushed.
    fn assert_flushed(&self, row: &[u8], seq: u64) {
        if seq == 0 {
            return;
        }
        let flushed = self.flushed.lock().unwrap_or_else(PoisonError::into_inner);
        let got = flushed.get(row).copied().unwrap_or_default();
        assert!(
            got.iter().all(|&s| s >= seq),
            "row {:?} acknowledged at seq {seq} is neither readable nor flushed (flushed: {got:?})",
            String::from_utf8_lossy(row)
        );
    }

    /// Reads a row whose last acknowledged write (0: none) is `before`, or
    /// later. A `slow` reader lets writes and compactions go on between
    /// taking its read point and reading: what it could see must be kept.
    fn check_get(&self, row: &[u8], before: u64, slow: bool) {
        let reader = self.store.config().mvcc.register_reader();
        let rp = reader.read_point();
        if slow {
            thread::sleep(Duration::from_micros(300));
        }
        assert!(rp >= before, "read point {rp} behind acknowledged write {before}");
        let cells = self.store.get(row, &self.read_options(rp));
        if cells.is_empty() {
            self.assert_flushed(row, before);
        } else {
            let newest = self.check_row(&cells, rp);
            assert!(newest >= before, "get saw seq {newest} after seq {before} was acknowledged");
        }
    }

    fn check_scan(&self, writer: usize, from: usize, to: usize, reverse: bool) {
        let befores: Vec<u64> = (from..to).map(|k| self.acked[writer][k].load(Ordering::Acquire)).collect();
        let reader = self.store.config().mvcc.register_reader();
        let rp = reader.read_point();
        let range = if reverse {
            // Reverse: from `start` inclusive down to `stop` exclusive.
            let stop = if from == 0 { format!("w{writer}-k").into_bytes() } else { row_key(writer, from - 1) };
            ScanRange { start: Some(row_key(writer, to - 1)), stop: Some(stop), reverse }
        } else {
            ScanRange { start: Some(row_key(writer, from)), stop: Some(row_key(writer, to)), reverse }
        };
        let rows: Vec<Vec<Cell>> = self.store.scan(range, self.read_options(rp)).collect();
        let keys: Vec<&bytes::Bytes> = rows.iter().map(|r| &r[0].row).collect();
        let ordered = keys.windows(2).all(|w| if reverse { w[0] > w[1] } else { w[0] < w[1] });
        assert!(ordered, "scan out of order (reverse={reverse}): {keys:?}");
        let mut seen = HashMap::new();
        for cells in &rows {
            seen.insert(cells[0].row.to_vec(), self.check_row(cells, rp));
        }
        for (k, &before) in (from..to).zip(&befores) {
            let row = row_key(writer, k);
            match seen.remove(&row) {
                Some(newest) => assert!(newest >= before, "scan saw seq {newest} after seq {before} was acknowledged"),
                None => self.assert_flushed(&row, before),
            }
        }
        assert!(seen.is_empty(), "scan returned rows outside its range: {:?}", seen.keys());
    }

    fn read(&self, id: usize) {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1));
        let mut reads = 0;
        while reads < MIN_READS || !self.writers_done.load(Ordering::Acquire) {
            let writer = rng.below(WRITERS);
            let slow = reads % 16 < 2;
            if reads % 4 == 3 {
                let from = rng.below(KEYS_PER_WRITER);
                let to = (from + 1 + rng.below(16)).min(KEYS_PER_WRITER);
                self.check_scan(writer, from, to, rng.below(2) == 1);
            } else if reads % 4 == 1 {
                // A row written once, at an acknowledged write, or an unwritten one.
                let written = self.progress[writer].load(Ordering::Acquire);
                let counter = rng.below(ROWS_PER_WRITER / UNIQUE_EVERY) * UNIQUE_EVERY;
                let before = if counter < written { self.seq_of[writer][counter].load(Ordering::Acquire) } else { 0 };
                self.check_get(&row_of_write(writer, counter), before, slow);
            } else {
                let key = rng.below(KEYS_PER_WRITER);
                self.check_get(&row_key(writer, key), self.acked[writer][key].load(Ordering::Acquire), slow);
            }
            reads += 1;
            if reads % 8 == 0 {
                thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// A disk flush: snapshot, iterate it fully (sorted, whole rows, exact
    /// statistics), record what it held, release it. Returns its cell count.
    fn flush_once(&self) -> u64 {
        let snap = self.store.snapshot();
        let mut cursor = snap.cursor();
        let mut prev: Option<Vec<u8>> = None;
        let (mut cells, mut bytes) = (0u64, 0u64);
        let mut per_write: HashMap<(Vec<u8>, u64), usize> = HashMap::new();
        let mut newest: HashMap<Vec<u8>, [u64; 4]> = HashMap::new();
        while let Some(c) = cursor.current() {
            if let Some(p) = &prev {
                let order = compare_cells(&CellRef::new(p), &c);
                assert_eq!(order, std::cmp::Ordering::Less, "snapshot out of order: {:?} then {c:?}", CellRef::new(p));
            }
            let q = QUALIFIERS.iter().position(|q| *q == c.qualifier()).expect("known qualifier");
            *per_write.entry((c.row().to_vec(), c.seq())).or_default() += 1;
            let slot = &mut newest.entry(c.row().to_vec()).or_default()[q];
            *slot = (*slot).max(c.seq());
            cells += 1;
            bytes += c.encoded().len() as u64;
            prev = Some(c.encoded().to_vec());
            cursor.advance();
        }
        drop(cursor);
        let stats = snap.stats();
        assert_eq!((cells, bytes), (stats.cells, stats.data_size), "snapshot statistics are exact");
        for ((row, seq), n) in per_write {
            assert_eq!(n, 4, "snapshot holds {n} of the 4 cells of row {:?} seq {seq}", String::from_utf8_lossy(&row));
        }
        let mut flushed = self.flushed.lock().unwrap_or_else(PoisonError::into_inner);
        for (row, seqs) in newest {
            let entry = flushed.entry(row).or_default();
            for (e, s) in entry.iter_mut().zip(seqs) {
                *e = (*e).max(s);
            }
        }
        drop(flushed);
        self.store.release_snapshot(snap.id()).expect("the snapshot just taken is current");
        cells
    }

    fn flush_periodically(&self) -> usize {
        let mut next = SNAPSHOT_EVERY_ROWS;
        let mut snapshots = 0;
        while !self.writers_done.load(Ordering::Acquire) {
            if self.rows_written.load(Ordering::Relaxed) >= next {
                self.flush_once();
                snapshots += 1;
                next += SNAPSHOT_EVERY_ROWS;
            } else {
                thread::sleep(Duration::from_millis(1));
            }
        }
        snapshots
    }

    /// Every row's last write: (writer, counter) of each row written.
    fn last_writes() -> Vec<(usize, usize)> {
        let hot = (0..KEYS_PER_WRITER).map(last_write_of);
        let unique = (0..ROWS_PER_WRITER).step_by(UNIQUE_EVERY);
        let counters: Vec<usize> = hot.chain(unique).collect();
        (0..WRITERS).flat_map(|w| counters.iter().map(move |&c| (w, c))).collect()
    }

    /// Every row's last write is readable or was flushed.
    fn check_final_state(&self) {
        let opts = self.read_options(u64::MAX);
        for (writer, counter) in Self::last_writes() {
            let row = row_of_write(writer, counter);
            let expected = self.seq_of[writer][counter].load(Ordering::Acquire);
            if !counter.is_multiple_of(UNIQUE_EVERY) {
                assert_eq!(self.acked[writer][counter % KEYS_PER_WRITER].load(Ordering::Acquire), expected);
            }
            let cells = self.store.get(&row, &opts);
            if cells.is_empty() {
                self.assert_flushed(&row, expected);
            } else {
                let newest = self.check_row(&cells, u64::MAX);
                assert_eq!(newest, expected, "newest version of {:?}", String::from_utf8_lossy(&row));
                assert_eq!(decode_value(&cells[0].value), (writer, counter));
            }
        }
    }
}

fn config(policy: CompactionPolicy, layout: IndexLayout, max_versions: u32, pool: &ChunkPool) -> MemStoreConfig {
    MemStoreConfig {
        policy,
        flat_layout: layout,
        in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(16 * 1024),
        pipeline_segments_limit: 2,
        rules: VersionRules { max_versions, ttl_ms: None },
        chunk_pool: pool.clone(),
        compaction_mode: CompactionMode::Background(CompactionExecutor::new(1)),
        ..MemStoreConfig::new(FAMILY)
    }
}

/// Waits (bounded) for the pool to report no chunk in use: the compaction
/// thread may still be dropping its handle on the memstore's internals.
fn wait_for_no_chunks_in_use(pool: &ChunkPool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let in_use = pool.stats().in_use;
        if in_use == 0 || Instant::now() > deadline {
            return in_use;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

fn stress(policy: CompactionPolicy, layout: IndexLayout, max_versions: u32) {
    let what = format!("{policy:?} {layout:?} versions={max_versions}");
    let pool = ChunkPool::new(64);
    let store = MemStore::new(config(policy, layout, max_versions, &pool)).expect("valid config");
    let shared = Shared::new(store, max_versions);
    let s = &shared;
    let snapshots = thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS).map(|w| scope.spawn(move || s.write(w))).collect();
        for r in 0..READERS {
            scope.spawn(move || s.read(r));
        }
        let flusher = scope.spawn(|| s.flush_periodically());
        for w in writers {
            w.join().expect("writer");
        }
        s.writers_done.store(true, Ordering::Release);
        flusher.join().expect("flush thread")
    });

    let store = &shared.store;
    store.wait_for_compactions();
    shared.check_final_state();
    shared.flush_once();
    for (writer, counter) in Shared::last_writes() {
        // After the last flush every row's last write is in the flushed record.
        let row = row_of_write(writer, counter);
        shared.assert_flushed(&row, shared.seq_of[writer][counter].load(Ordering::Acquire));
        assert!(store.get(&row, &ReadOptions::default()).is_empty(), "{what}");
    }
    assert_eq!(store.size(), MemStoreSize::default(), "{what}: nothing left after the final flush");
    assert_eq!(store.lowest_unflushed_seq(), None, "{what}");
    let c = store.counters();
    eprintln!("{what}: {snapshots} periodic snapshots; {c:?}; pool {:?}", pool.stats());
    check_activity(policy, &c, &what);

    drop(shared);
    assert_eq!(wait_for_no_chunks_in_use(&pool), 0, "{what}: chunks still referenced: {:?}", pool.stats());
}

/// The run exercised what the policy does.
fn check_activity(policy: CompactionPolicy, c: &CountersSnapshot, what: &str) {
    let rows = (WRITERS * ROWS_PER_WRITER) as u64;
    assert_eq!((c.rows_added, c.cells_added), (rows, 4 * rows), "{what}");
    assert!(c.snapshots >= 2, "{what}: {c:?}");
    match policy {
        CompactionPolicy::None => assert_eq!(c.inmemory_flushes, 0, "{what}: {c:?}"),
        // How many of each depends on scheduling; the writers' throttle
        // guarantees that the compaction thread did work.
        CompactionPolicy::Basic => {
            assert!(c.inmemory_flushes > 10 && c.flattens > 0 && c.merges > 0 && c.compactions == 0, "{what}: {c:?}")
        }
        CompactionPolicy::Eager => {
            assert!(c.inmemory_flushes > 10 && c.compactions > 0 && c.cells_dropped > 0, "{what}: {c:?}")
        }
        CompactionPolicy::Adaptive { .. } => assert!(c.inmemory_flushes > 10 && c.flattens > 0, "{what}: {c:?}"),
    }
}

#[test]
fn stress_none_cell_array() {
    stress(CompactionPolicy::None, IndexLayout::CellArray, 1);
}

#[test]
fn stress_none_cell_chunk() {
    stress(CompactionPolicy::None, IndexLayout::CellChunk, 1);
}

#[test]
fn stress_basic_cell_array() {
    stress(CompactionPolicy::Basic, IndexLayout::CellArray, 1);
}

#[test]
fn stress_basic_cell_chunk() {
    stress(CompactionPolicy::Basic, IndexLayout::CellChunk, 1);
}

#[test]
fn stress_eager_cell_array() {
    stress(CompactionPolicy::Eager, IndexLayout::CellArray, 1);
}

#[test]
fn stress_eager_cell_chunk() {
    stress(CompactionPolicy::Eager, IndexLayout::CellChunk, 1);
}

#[test]
fn stress_adaptive_cell_array() {
    stress(CompactionPolicy::Adaptive { redundancy_threshold: 0.5 }, IndexLayout::CellArray, 1);
}

#[test]
fn stress_adaptive_cell_chunk() {
    stress(CompactionPolicy::Adaptive { redundancy_threshold: 0.5 }, IndexLayout::CellChunk, 1);
}

#[test]
fn stress_eager_cell_chunk_three_versions() {
    stress(CompactionPolicy::Eager, IndexLayout::CellChunk, 3);
}

#[test]
fn stress_basic_cell_array_three_versions() {
    stress(CompactionPolicy::Basic, IndexLayout::CellArray, 3);
}

/// A memstore whose active segment never moves: one skiplist takes every insert.
fn single_skiplist(pool: &ChunkPool) -> MemStore {
    MemStore::new(MemStoreConfig {
        policy: CompactionPolicy::None,
        chunk_pool: pool.clone(),
        compaction_mode: CompactionMode::Manual,
        ..MemStoreConfig::new(FAMILY)
    })
    .expect("valid config")
}

const SKIPLIST_THREADS: usize = 6;
const SKIPLIST_ROWS_PER_THREAD: usize = 4_000;

#[test]
fn skiplist_concurrent_distinct_keys_are_all_linked_in_order() {
    let pool = ChunkPool::new(8);
    let m = single_skiplist(&pool);
    let total = SKIPLIST_THREADS * SKIPLIST_ROWS_PER_THREAD;
    let key = |i: usize| format!("k{i:08}").into_bytes();
    let added: u64 = thread::scope(|scope| {
        let handles: Vec<_> = (0..SKIPLIST_THREADS)
            .map(|t| {
                let (m, key) = (&m, &key);
                scope.spawn(move || {
                    // Interleaved keys: neighbours are inserted by different threads.
                    let mine: Vec<usize> = (0..SKIPLIST_ROWS_PER_THREAD).map(|j| j * SKIPLIST_THREADS + t).collect();
                    let order: Box<dyn Iterator<Item = &usize>> =
                        if t % 2 == 0 { Box::new(mine.iter()) } else { Box::new(mine.iter().rev()) };
                    let mut added = 0;
                    for &i in order {
                        let (row, seq) = (key(i), i as u64 + 1);
                        let cell = CellInput::put(&row, FAMILY, b"q", seq, &row);
                        added += m.add_row(&[cell], seq).expect("valid row");
                    }
                    added
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("inserter")).sum()
    });

    let mut cursor = m.cursor();
    let mut n = 0;
    while let Some(c) = cursor.current() {
        assert_eq!(c.row(), key(n).as_slice(), "cell {n} out of order or missing");
        assert_eq!((c.value(), c.seq()), (key(n).as_slice(), n as u64 + 1));
        n += 1;
        cursor.advance();
    }
    assert_eq!(n, total);
    let size = m.size();
    assert_eq!((size.cells, size.data_size), (total as u64, added));
    let reverse: Vec<Vec<u8>> = m
        .scan(ScanRange { reverse: true, ..ScanRange::default() }, ReadOptions::default())
        .map(|r| r[0].row.to_vec())
        .collect();
    assert_eq!(reverse, (0..total).rev().map(key).collect::<Vec<_>>(), "reverse scan sees every key");
}

#[test]
fn skiplist_concurrent_identical_cells_are_linked_once() {
    let pool = ChunkPool::new(8);
    let m = single_skiplist(&pool);
    const CELLS: usize = 3_000;
    let key = |i: usize| format!("dup{i:06}").into_bytes();
    // Every thread offers the same cells (same full key, same seq): each is
    // linked once and counted once in the memstore's size (a later write of
    // the same key replaces the earlier one), whoever wins the race.
    let added: u64 = thread::scope(|scope| {
        let handles: Vec<_> = (0..SKIPLIST_THREADS)
            .map(|t| {
                let (m, key) = (&m, &key);
                scope.spawn(move || {
                    let mut added = 0;
                    for j in 0..CELLS {
                        let i = if t % 2 == 0 { j } else { CELLS - 1 - j };
                        let row = key(i);
                        added += m.add_row(&[CellInput::put(&row, FAMILY, b"q", 7, b"v")], 7).expect("valid row");
                    }
                    added
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("inserter")).sum()
    });
    let one = CellInput::put(&key(0), FAMILY, b"q", 7, b"v").encoded_len() as u64;
    assert_eq!(added, (SKIPLIST_THREADS * CELLS) as u64 * one, "add_row reports the bytes each call wrote");
    let size = m.size();
    assert_eq!((size.cells, size.data_size), (CELLS as u64, CELLS as u64 * one), "live cells are counted once");
    let mut cursor = m.cursor();
    let mut n = 0;
    while let Some(c) = cursor.current() {
        assert_eq!(c.row(), key(n).as_slice());
        n += 1;
        cursor.advance();
    }
    assert_eq!(n, CELLS);
}

#[test]
fn skiplist_concurrent_versions_of_one_hot_column_are_ordered_by_seq() {
    let pool = ChunkPool::new(8);
    let m = single_skiplist(&pool);
    const VERSIONS_PER_THREAD: u64 = 3_000;
    let threads = SKIPLIST_THREADS as u64;
    // All threads write versions of one column; timestamps collide across
    // threads, so the order falls back to seq.
    thread::scope(|scope| {
        for t in 0..threads {
            let m = &m;
            scope.spawn(move || {
                for j in 0..VERSIONS_PER_THREAD {
                    let seq = j * threads + t + 1;
                    let ts = j;
                    let value = seq.to_be_bytes();
                    m.add_row(&[CellInput::put(b"hot", FAMILY, b"q", ts, &value)], seq).expect("valid row");
                }
            });
        }
    });
    let mut cursor = m.cursor();
    let mut prev: Option<(u64, u64)> = None;
    let mut n = 0;
    while let Some(c) = cursor.current() {
        let cur = (c.timestamp(), c.seq());
        assert_eq!(c.value(), c.seq().to_be_bytes());
        if let Some((pts, pseq)) = prev {
            assert!(pts > cur.0 || (pts == cur.0 && pseq > cur.1), "{prev:?} then {cur:?}: not newest first");
        }
        prev = Some(cur);
        n += 1;
        cursor.advance();
    }
    assert_eq!(n, threads * VERSIONS_PER_THREAD);
    let newest = m.get(b"hot", &ReadOptions::default());
    assert_eq!(newest.len(), 1);
    assert_eq!((newest[0].timestamp, newest[0].seq), (VERSIONS_PER_THREAD - 1, threads * VERSIONS_PER_THREAD));
}

#[test]
fn skiplist_concurrent_multi_cell_rows_in_any_cell_order() {
    // Rows of several cells given out of order and with a duplicate: each
    // insert starts from where the row's previous cell was linked, which
    // must work for keys before it, after it and equal to it, while other
    // threads link neighbouring rows.
    let pool = ChunkPool::new(8);
    let m = single_skiplist(&pool);
    const ROWS: usize = 2_000;
    let qualifiers: [&[u8]; 7] = [b"q5", b"q1", b"q3", b"q0", b"q1", b"q4", b"q2"];
    let key = |i: usize| format!("m{i:07}").into_bytes();
    let added: u64 = thread::scope(|scope| {
        let handles: Vec<_> = (0..SKIPLIST_THREADS)
            .map(|t| {
                let (m, key) = (&m, &key);
                scope.spawn(move || {
                    let mut added = 0;
                    for i in (t..ROWS).step_by(SKIPLIST_THREADS) {
                        let (row, seq) = (key(i), i as u64 + 1);
                        let cells = qualifiers.map(|q| CellInput::put(&row, FAMILY, q, seq, q));
                        added += m.add_row(&cells, seq).expect("valid row");
                    }
                    added
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("inserter")).sum()
    });
    let distinct = 6;
    let one = CellInput::put(&key(0), FAMILY, b"q0", 1, b"q0").encoded_len() as u64;
    assert_eq!(added, (ROWS * qualifiers.len()) as u64 * one, "add_row reports the bytes each call wrote");
    assert_eq!(m.size().data_size, (ROWS * distinct) as u64 * one, "the row's duplicate cell replaced the first");
    let mut cursor = m.cursor();
    let mut n = 0;
    while let Some(c) = cursor.current() {
        let (row, q) = (n / distinct, n % distinct);
        assert_eq!(c.row(), key(row).as_slice(), "cell {n}");
        assert_eq!(c.qualifier(), format!("q{q}").as_bytes(), "cell {n}");
        assert_eq!(c.value(), c.qualifier());
        n += 1;
        cursor.advance();
    }
    assert_eq!(n, ROWS * distinct);
    assert_eq!(m.size().cells, (ROWS * distinct) as u64);
}
