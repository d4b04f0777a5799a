//! Chunk lifetime: memory that a reader can still reach is never recycled,
//! and memory that nobody can reach goes back to the pool (or, for jumbo
//! chunks, to the system).
//!
//! Why: cells live in pooled 2 MiB chunks that are handed out again as soon
//! as their last reference drops. If a chunk went back to the pool while an
//! open scanner, cursor or released snapshot still pointed into it, the next
//! writer would overwrite it and the reader would return someone else's
//! bytes (or crash on a garbage length). Each test opens a reader, makes the
//! memstore drop every segment the reader uses (in-memory flush, merge,
//! eager compaction, disk flush), writes enough new data for the pool to
//! reuse every idle chunk, and then checks every byte the old reader returns
//! against what was written, and that its chunk ids never reappear in the
//! memstore while it lives. Pool statistics then show the chunks coming back
//! once the reader is dropped.
//!
//! The tests in this file share one lock: they assert exact pool counters and
//! chunk-table entries, and chunk ids come from one process-wide table.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use memstore::chunk::{CHUNK_TABLE, ChunkId};
use memstore::segment::Segment;
use memstore::{
    CHUNK_SIZE, CellInput, CellKey, ChunkPool, CompactionMode, CompactionPolicy, InMemoryFlushThreshold, IndexLayout,
    JUMBO_CELL_THRESHOLD, MemStore, MemStoreConfig, MemStoreSize, ReadOptions, ScanRange,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

const ROWS: u64 = 3_000;
const VALUE_LEN: usize = 1_000;

fn memstore(policy: CompactionPolicy, layout: IndexLayout, pool: &ChunkPool) -> MemStore {
    MemStore::new(MemStoreConfig {
        policy,
        flat_layout: layout,
        // Only explicit in-memory flushes, only explicit compactions.
        in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(1 << 40),
        compaction_mode: CompactionMode::Manual,
        chunk_pool: pool.clone(),
        ..MemStoreConfig::new("f")
    })
    .expect("valid config")
}

fn row_key(i: u64) -> Vec<u8> {
    format!("row{i:06}").into_bytes()
}

fn row_index(row: &[u8]) -> u64 {
    std::str::from_utf8(&row[3..]).expect("ascii row").parse().expect("numeric row")
}

/// A value that differs in every byte position between rows and generations.
fn value(row: u64, generation: u64, len: usize) -> Vec<u8> {
    let mut x = (row << 20 ^ generation).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes one put through the memstore's MVCC (timestamp = seq); returns the seq.
fn put(m: &MemStore, row: &[u8], v: &[u8]) -> u64 {
    let w = m.config().mvcc.begin();
    let seq = w.seq();
    m.add_row(&[CellInput::put(row, b"f", b"q", seq, v)], seq).expect("valid row");
    m.config().mvcc.complete(w);
    seq
}

/// Writes `value(row, generation)` into rows `rows`.
fn write(m: &MemStore, rows: std::ops::Range<u64>, generation: u64) {
    for i in rows {
        put(m, &row_key(i), &value(i, generation, VALUE_LEN));
    }
}

/// Drops every segment the memstore holds now: push, compact, flush to "disk".
fn flush_everything(m: &MemStore) {
    m.flush_in_memory();
    m.compact_pipeline();
    let snap = m.snapshot();
    m.release_snapshot(snap.id()).expect("release the current snapshot");
}

/// Ids of every data chunk that `segments` hold.
fn chunk_ids(segments: &[Arc<Segment>]) -> HashSet<ChunkId> {
    segments.iter().flat_map(|s| s.data_chunks()).map(|c| c.id()).collect()
}

/// Churns the pool: new generations of every row, pushed, compacted and
/// flushed, so that idle chunks are handed out again and overwritten (a
/// chunk wrongly released by a reader would be among them). Checks after
/// each round that none of `held` is among the memstore's chunks.
fn churn(m: &MemStore, pool: &ChunkPool, held: &HashSet<ChunkId>, first_generation: u64) {
    let reused_before = pool.stats().reused;
    for generation in first_generation..first_generation + 3 {
        write(m, 0..ROWS / 2, generation);
        m.flush_in_memory();
        m.compact_pipeline();
        write(m, ROWS / 2..ROWS, generation);
        let live = chunk_ids(&m.read_segments());
        assert!(live.is_disjoint(held), "a chunk held by a reader was handed out again: {:?}", live.intersection(held));
        let snap = m.snapshot();
        m.release_snapshot(snap.id()).expect("release");
    }
    assert!(pool.stats().reused > reused_before, "the churn must recycle chunks: {:?}", pool.stats());
}

enum Reader {
    Scanner,
    Cursor,
}

/// An open reader at the read point of the moment it was opened (later
/// writes into the live active segment it holds are newer, so invisible).
enum OpenReader {
    Scanner(memstore::RowScanner),
    Cursor { cursor: memstore::MergingCursor, read_point: u64 },
}

impl OpenReader {
    fn open(m: &MemStore, kind: &Reader) -> OpenReader {
        let read_point = m.config().mvcc.read_point();
        match kind {
            Reader::Scanner => {
                OpenReader::Scanner(m.scan(ScanRange::default(), ReadOptions { read_point, ..ReadOptions::default() }))
            }
            Reader::Cursor => OpenReader::Cursor { cursor: m.cursor(), read_point },
        }
    }

    /// (row, value) of the next visible cell.
    fn next_cell(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        match self {
            OpenReader::Scanner(s) => s.next().map(|cells| {
                assert_eq!(cells.len(), 1, "one cell per row: {cells:?}");
                (cells[0].row.to_vec(), cells[0].value.to_vec())
            }),
            OpenReader::Cursor { cursor, read_point } => loop {
                let cell = cursor.current()?;
                let visible = cell.seq() <= *read_point;
                let found = visible.then(|| (cell.row().to_vec(), cell.value().to_vec()));
                cursor.advance();
                if found.is_some() {
                    return found;
                }
            },
        }
    }

    /// Reads rows `[from, to)`, checking every byte against generation 0.
    fn check_rows(&mut self, from: u64, to: u64) {
        for expected in from..to {
            let (row, v) = self.next_cell().unwrap_or_else(|| panic!("reader ended before row {expected}"));
            assert_eq!(row, row_key(expected));
            assert!(v == value(expected, 0, VALUE_LEN), "row {expected}: value bytes differ");
        }
    }
}

fn reader_outlives_its_segments(policy: CompactionPolicy, layout: IndexLayout, kind: Reader) {
    let what = format!("{policy:?} {layout:?}");
    let pool = ChunkPool::new(1024);
    let m = memstore(policy, layout, &pool);
    // Generation 0 spans the pipeline (flattened or compacted) and the active segment.
    write(&m, 0..ROWS / 2, 0);
    assert_eq!(m.flush_in_memory(), policy != CompactionPolicy::None);
    m.compact_pipeline();
    write(&m, ROWS / 2..ROWS, 0);

    let held = chunk_ids(&m.read_segments());
    assert!(held.len() >= 2, "{what}: the data spans several chunks: {held:?}");
    let mut reader = OpenReader::open(&m, &kind);
    reader.check_rows(0, ROWS / 10);

    // Generation 1 makes generation 0 garbage; eager compaction drops it and
    // the disk flush drops the rest. Nothing in the memstore refers to it now.
    write(&m, 0..ROWS, 1);
    flush_everything(&m);
    if policy == CompactionPolicy::Eager {
        assert!(m.counters().cells_dropped > 0, "{what}: eager compaction dropped generation 0");
    }
    assert_eq!(m.size(), MemStoreSize::default());
    churn(&m, &pool, &held, 2);
    assert!(pool.stats().in_use >= held.len() as u64, "{what}: the reader's chunks are in use: {:?}", pool.stats());

    reader.check_rows(ROWS / 10, ROWS);
    assert!(reader.next_cell().is_none(), "{what}: nothing beyond what was written");

    // The memstore itself holds nothing any more: every chunk in use is the reader's.
    let before = pool.stats();
    assert!(before.in_use >= held.len() as u64, "{what}: {before:?}");
    drop(reader);
    let after = pool.stats();
    assert_eq!(after.in_use, 0, "{what}: dropping the reader returns its chunks: {before:?} → {after:?}");
    assert_eq!(after.idle - before.idle, before.in_use, "{what}: regular chunks go back to the free list");

    drop(m);
    let end = pool.stats();
    assert_eq!(end.in_use, 0, "{what}: nothing is referenced once the memstore is gone: {end:?}");
    assert_eq!(end.idle, end.created, "{what}: every chunk is idle in the pool: {end:?}");
}

#[test]
fn open_scanner_keeps_its_chunks_through_eager_compaction_and_flush() {
    let _serial = serial();
    for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
        reader_outlives_its_segments(CompactionPolicy::Eager, layout, Reader::Scanner);
    }
}

#[test]
fn open_scanner_keeps_its_chunks_through_flatten_merge_and_flush() {
    let _serial = serial();
    for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
        reader_outlives_its_segments(CompactionPolicy::Basic, layout, Reader::Scanner);
    }
}

#[test]
fn open_raw_cursor_keeps_its_chunks() {
    let _serial = serial();
    reader_outlives_its_segments(CompactionPolicy::Eager, IndexLayout::CellChunk, Reader::Cursor);
    reader_outlives_its_segments(
        CompactionPolicy::Adaptive { redundancy_threshold: 0.5 },
        IndexLayout::CellArray,
        Reader::Cursor,
    );
    reader_outlives_its_segments(CompactionPolicy::None, IndexLayout::CellChunk, Reader::Cursor);
}

#[test]
fn released_snapshot_keeps_its_chunks_while_held() {
    let _serial = serial();
    for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
        let pool = ChunkPool::new(1024);
        let m = memstore(CompactionPolicy::Basic, layout, &pool);
        write(&m, 0..ROWS / 2, 0);
        assert!(m.flush_in_memory());
        m.compact_pipeline();
        write(&m, ROWS / 2..ROWS, 0);

        let snap = m.snapshot();
        assert_eq!(snap.cell_count(), ROWS);
        let held = chunk_ids(snap.segments());
        m.release_snapshot(snap.id()).expect("release the snapshot");
        assert_eq!(m.size(), MemStoreSize::default(), "{layout:?}: a released snapshot is not the memstore's");
        assert!(m.get(&row_key(7), &ReadOptions::default()).is_empty(), "{layout:?}: released data is not read");

        churn(&m, &pool, &held, 1);

        // Every cell of the held snapshot is still generation 0, byte for byte.
        let mut cursor = snap.cursor();
        let mut seen = 0u64;
        while let Some(c) = cursor.current() {
            let i = row_index(c.row());
            assert_eq!(i, seen, "{layout:?}: snapshot in row order");
            assert!(c.value() == value(i, 0, VALUE_LEN).as_slice(), "{layout:?}: row {i}: value bytes differ");
            assert_eq!((c.seq(), c.timestamp()), (i + 1, i + 1), "{layout:?}: row {i}: seq and timestamp");
            seen += 1;
            cursor.advance();
        }
        assert_eq!(seen, ROWS, "{layout:?}");
        drop(cursor);

        // The memstore itself holds nothing any more: every chunk in use is the snapshot's.
        let before = pool.stats();
        assert!(before.in_use >= held.len() as u64, "{layout:?}: {before:?}");
        drop(snap);
        let after = pool.stats();
        assert_eq!(after.in_use, 0, "{layout:?}: dropping the snapshot returns its chunks: {before:?} → {after:?}");
        assert_eq!(after.idle - before.idle, before.in_use, "{layout:?}: regular chunks go back to the free list");
        drop(m);
        assert_eq!(pool.stats().in_use, 0, "{layout:?}: {:?}", pool.stats());
    }
}

/// Encoded length of a one-cell row `row` with `value_len` value bytes.
fn encoded_len(row: &[u8], value_len: usize) -> usize {
    CellInput::put(row, b"f", b"q", 1, b"").encoded_len() + value_len
}

#[test]
fn jumbo_cells_get_dedicated_chunks_and_are_freed_not_pooled() {
    let _serial = serial();
    // Values above, at and below the jumbo threshold, and one larger than a regular chunk.
    let below = JUMBO_CELL_THRESHOLD - encoded_len(b"jumbo3", 0);
    let sizes = [300 * 1024, 1 << 20, 3 << 20, below];
    let jumbos = 3u64;
    for policy in [CompactionPolicy::Basic, CompactionPolicy::Eager] {
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            let what = format!("{policy:?} {layout:?}");
            let pool = ChunkPool::new(64);
            let m = memstore(policy, layout, &pool);
            let rows: Vec<(Vec<u8>, Vec<u8>)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &len)| (format!("jumbo{i}").into_bytes(), value(i as u64, 7, len)))
                .collect();
            for (row, v) in &rows {
                put(&m, row, v);
            }
            write(&m, 0..10, 0);
            assert_eq!(
                encoded_len(&rows[3].0, rows[3].1.len()),
                JUMBO_CELL_THRESHOLD,
                "the last cell is at the threshold"
            );
            let s = pool.stats();
            assert_eq!(s.jumbo_created, jumbos, "{what}: one dedicated chunk per cell above the threshold: {s:?}");

            let check = |when: &str| {
                for (row, v) in &rows {
                    let got = m.get(row, &ReadOptions::default());
                    assert_eq!(got.len(), 1, "{what} {when}");
                    assert!(got[0].value == *v, "{what} {when}: jumbo value bytes differ");
                }
                let raw: Vec<usize> = {
                    let mut c = m.cursor();
                    c.seek(&CellKey::first_on_row(b"jumbo"));
                    let mut lens = Vec::new();
                    while let Some(cell) = c.current().filter(|c| c.row().starts_with(b"jumbo")) {
                        lens.push(cell.value().len());
                        c.advance();
                    }
                    lens
                };
                assert_eq!(raw, sizes, "{what} {when}: raw cells intact");
            };
            check("in the active segment");

            assert!(m.flush_in_memory());
            m.compact_pipeline();
            check("after the in-memory flush");
            let s = pool.stats();
            if policy == CompactionPolicy::Eager {
                // Compaction copies survivors into fresh chunks, jumbo ones too,
                // and the old jumbo chunks are freed, not pooled.
                assert_eq!((s.jumbo_created, s.freed), (2 * jumbos, jumbos), "{what}: {s:?}");
            } else {
                assert_eq!((s.jumbo_created, s.freed), (jumbos, 0), "{what}: flattening reuses the cell bytes: {s:?}");
            }

            // A reader holds the jumbo chunks across the disk flush.
            let mut scanner = m.scan(ScanRange::default(), ReadOptions::default());
            let snap = m.snapshot();
            m.release_snapshot(snap.id()).expect("release");
            drop(snap);
            let freed_while_held = pool.stats().freed;
            write(&m, 10..2_000, 1);
            let first = scanner.next().expect("first jumbo row");
            assert!(first[0].value == rows[0].1, "{what}: a held jumbo cell is intact after the flush");
            let rest: Vec<_> = scanner.by_ref().take(3).collect();
            for (got, (row, v)) in rest.iter().zip(&rows[1..]) {
                assert_eq!(&got[0].row, row);
                assert!(got[0].value == *v, "{what}: held jumbo value bytes differ");
            }
            assert_eq!(pool.stats().freed, freed_while_held, "{what}: nothing freed while the scanner holds it");
            drop(scanner);
            let s = pool.stats();
            assert_eq!(s.freed, freed_while_held + jumbos, "{what}: jumbo chunks freed once unreferenced: {s:?}");

            flush_everything(&m);
            drop(m);
            let s = pool.stats();
            assert_eq!(s.in_use, 0, "{what}: {s:?}");
            assert_eq!(s.freed, s.jumbo_created, "{what}: every jumbo chunk was freed, no regular one: {s:?}");
            assert_eq!(s.idle, s.created, "{what}: regular chunks are pooled, jumbo ones are not: {s:?}");
        }
    }
}

#[test]
fn jumbo_chunk_of_exactly_chunk_size_is_not_pooled() {
    let _serial = serial();
    let pool = ChunkPool::new(8);
    let m = memstore(CompactionPolicy::Basic, IndexLayout::CellChunk, &pool);
    let v = vec![0xA5; CHUNK_SIZE - encoded_len(b"r", 0)];
    assert_eq!(encoded_len(b"r", v.len()), CHUNK_SIZE);
    put(&m, b"r", &v);
    assert_eq!(pool.stats().jumbo_created, 1);
    assert!(m.get(b"r", &ReadOptions::default())[0].value == v);
    flush_everything(&m);
    drop(m);
    let s = pool.stats();
    assert_eq!(s.in_use, 0);
    assert_eq!(s.freed, 1, "the jumbo chunk must be freed, not pooled: {s:?}");
    assert_eq!(s.idle, s.created, "only regular chunks (skiplist arena, index) are idle: {s:?}");
}

#[test]
fn dropping_a_pool_frees_its_idle_chunks() {
    let _serial = serial();
    let pool = ChunkPool::new(4);
    let chunk = pool.get();
    let (id, base) = (chunk.id(), chunk.base());
    drop(chunk);
    assert_eq!(pool.stats().idle, 1);
    assert_eq!(CHUNK_TABLE.base(id), base, "an idle chunk keeps its id");
    drop(pool);
    // Every chunk of this test binary is allocated under `serial()`, so
    // nobody can have taken the id again.
    assert!(CHUNK_TABLE.base(id).is_null(), "the idle chunk's id is still registered: its memory was leaked");
}
