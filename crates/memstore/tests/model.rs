//! Model-based property test of the memstore.
//!
//! Random sequences of operations are applied both to a real [`MemStore`] and
//! to a [`Model`], and every read of the memstore must equal the model's:
//! row mutations (puts and all four delete markers; completed at once, left
//! in flight, or several rows under one sequence id as a region's mini-batch
//! writes them), gets and forward and reverse scans (at the latest read point,
//! past in-flight writes, or at a registered reader's older read point, with
//! qualifier filters, time ranges, version limits and TTL), scanners held open
//! while the memstore changes under them, in-memory flushes, pipeline
//! compactions, snapshots and their release, and a moving TTL clock.
//!
//! The model is deliberately naive: a list of every cell ever written to the
//! family (minus those a released snapshot took away), and reads computed by
//! brute force straight from the rules in the header of `src/visibility.rs`
//! (read point, newest write per timestamp, the family's version slots that
//! deleted versions still occupy, delete markers in either write order, TTL,
//! time range, requested versions). It shares no code with `RowResolver` or
//! `CompactionRetainer`, so it checks them rather than restating them.
//!
//! The model never compacts: in-memory flushes, flattening, merging and
//! compaction must not change what any reader can see. A compaction may drop
//! cells that no reader at or above the smallest read point can see, so reads
//! at an older read point are only generated from a [`ReaderGuard`]
//! registered (and held) before the compactions that follow it, exactly as a
//! region's scanners do. TTL expiry only moves forward because the clock does,
//! so a cell that a compaction dropped as expired is expired for the model at
//! every later read too. Releasing a snapshot removes exactly the cells that
//! were in the memstore when the snapshot was taken (a disk flush moved them
//! to a file); writes made after the snapshot stay.
//!
//! Besides reads, every step checks sizes and the lowest unflushed sequence
//! id against the model (exactly for the policies that never drop cells,
//! bounded for those that compact), every snapshot's cells against the
//! model's, and every sequence ends by checking that a snapshot plus its
//! release leaves `size()` at exactly zero.
//!
//! Every policy runs with both flat layouts, 1 or 3 family versions, an
//! optional TTL, a small in-memory flush threshold (so that flushes also
//! happen on their own), S = 1..=3 and a private chunk pool. Compaction is
//! `Manual` (driven by the sequence, deterministic) or `Inline`, plus a
//! `Background` variant that races with the sequence (reads must hold at any
//! moment, but a failure there may not replay). Keys straddle the 8-byte word
//! boundary of the key comparator, and rare puts are jumbo cells.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use memstore::{
    Cell, CellInput, CellType, ChunkPool, Clock, CompactionExecutor, CompactionMode, CompactionPolicy,
    InMemoryFlushThreshold, IndexLayout, JUMBO_CELL_THRESHOLD, ManualClock, MemStore, MemStoreConfig, MemStoreError,
    MemStoreSize, Mvcc, ReadOptions, ReaderGuard, RowScanner, ScanRange, TimeRange, VersionRules, WriteEntry,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const FAMILY: &[u8] = b"f";
/// Row keys of different lengths around the 8-byte word boundary of the
/// key comparator, so that byte order (not length) must decide.
const ROWS: [&[u8]; 6] = [b"a", b"abcdefgh", b"abcdefgh\0", b"abcdefghi", b"abcdefgi", b"b"];
/// Rows a get may ask for: every row plus a prefix that is never written.
const GET_ROWS: [&[u8]; 7] = [b"a", b"abcdefgh", b"abcdefgh\0", b"abcdefghi", b"abcdefgi", b"b", b"abcdefg"];
/// Scan bounds: rows and keys between, before and after them.
const SCAN_KEYS: [&[u8]; 11] = [
    b"0",
    b"a",
    b"a\0",
    b"abcdefg",
    b"abcdefgh",
    b"abcdefgh\0",
    b"abcdefgh\x01",
    b"abcdefghi",
    b"abcdefgi",
    b"b",
    b"c",
];
/// Qualifiers, including the empty one that family markers also use.
const QUALIFIERS: [&[u8]; 4] = [b"", b"q", b"qualifier", b"qualifies"];
/// Qualifier filters may also name a column that never exists.
const FILTER_QUALIFIERS: [&[u8]; 5] = [b"", b"q", b"qualifier", b"qualifies", b"qualifiers"];
/// Timestamps are `1..=MAX_TS`, so that versions collide.
const MAX_TS: u64 = 8;
/// Registered readers held at most at once.
const MAX_READERS: usize = 4;
/// Scanners held open at most at once.
const MAX_SCANNERS: usize = 2;
/// In-flight (begun, not completed) writes at most at once.
const MAX_PENDING: usize = 2;
/// Cases per generated test; each runs up to `MAX_OPS` operations.
const CASES: u32 = 256;
/// Cases of the (nondeterministic) background-compaction variants.
const BACKGROUND_CASES: u32 = 128;
const MAX_OPS: usize = 100;
/// Whether a batch may write the same row twice under one sequence id, so
/// that a full key is rewritten across mutations and, when an in-memory flush
/// falls between them, across segments (see
/// `equal_keys_of_one_batch_resolve_the_same_with_or_without_a_flush`).
const SAME_ROW_IN_BATCH: bool = true;

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// One cell of a row mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CellSpec {
    kind: CellType,
    /// Index into `QUALIFIERS`; ignored (empty) for family markers.
    qualifier: usize,
    ts: u64,
    /// Padding added to a put's value, to vary cell sizes (rarely enough for
    /// a jumbo cell with a chunk of its own).
    value_len: usize,
}

impl CellSpec {
    fn qualifier(&self) -> &'static [u8] {
        if self.kind.is_family_delete() { b"" } else { QUALIFIERS[self.qualifier % QUALIFIERS.len()] }
    }
}

fn put(qualifier: usize, ts: u64) -> CellSpec {
    CellSpec { kind: CellType::Put, qualifier, ts, value_len: 0 }
}

fn delete(qualifier: usize, ts: u64) -> CellSpec {
    CellSpec { kind: CellType::Delete, qualifier, ts, value_len: 0 }
}

fn delete_column(qualifier: usize, ts: u64) -> CellSpec {
    CellSpec { kind: CellType::DeleteColumn, qualifier, ts, value_len: 0 }
}

fn delete_family(ts: u64) -> CellSpec {
    CellSpec { kind: CellType::DeleteFamily, qualifier: 0, ts, value_len: 0 }
}

fn delete_family_version(ts: u64) -> CellSpec {
    CellSpec { kind: CellType::DeleteFamilyVersion, qualifier: 0, ts, value_len: 0 }
}

/// Which read point a read uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadAt {
    /// `u64::MAX`: everything written, in-flight writes included.
    Everything,
    /// The MVCC read point now.
    Current,
    /// The read point of a registered reader (index modulo their number; the
    /// current read point when none is registered).
    Reader(usize),
}

/// The options of a get or scan.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadSpec {
    at: ReadAt,
    /// Indexes into `FILTER_QUALIFIERS`.
    qualifiers: Option<Vec<usize>>,
    /// `[min, max)`; `max` may be `u64::MAX`.
    time_range: (u64, u64),
    max_versions: u32,
    /// Read at the clock plus this many milliseconds (`None`: the clock).
    now_ahead: Option<u64>,
}

impl ReadSpec {
    /// Every version of every column at read point `at`.
    fn all(at: ReadAt) -> ReadSpec {
        ReadSpec { at, qualifiers: None, time_range: (0, u64::MAX), max_versions: 4, now_ahead: None }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// A row mutation (index into `ROWS`), completed at once.
    Write {
        row: usize,
        cells: Vec<CellSpec>,
    },
    /// A row mutation whose MVCC write stays in flight until `Complete`.
    BeginWrite {
        row: usize,
        cells: Vec<CellSpec>,
    },
    /// Several row mutations sharing one sequence id, as a region's
    /// mini-batch writes them (distinct rows unless `SAME_ROW_IN_BATCH`).
    Batch {
        rows: Vec<(usize, Vec<CellSpec>)>,
    },
    /// Completes an in-flight write (index modulo their number).
    Complete(usize),
    Get {
        row: usize,
        read: ReadSpec,
    },
    /// Bounds are indexes into `SCAN_KEYS`.
    Scan {
        start: Option<usize>,
        stop: Option<usize>,
        reverse: bool,
        read: ReadSpec,
    },
    /// Opens a scanner that is read later, by `PullScanner`, while the
    /// memstore changes under it; it must return what was visible when it
    /// was opened. Its read point is never `Everything` (later writes would
    /// legitimately show through the active segment it holds).
    OpenScanner {
        start: Option<usize>,
        stop: Option<usize>,
        reverse: bool,
        read: ReadSpec,
    },
    /// Reads up to `rows` rows from an open scanner (index modulo their number).
    PullScanner {
        scanner: usize,
        rows: usize,
    },
    FlushInMemory,
    CompactPipeline,
    Snapshot,
    ReleaseSnapshot,
    RegisterReader,
    /// Drops a registered reader (index modulo their number).
    DropReader(usize),
    AdvanceClock(u64),
}

/// Where compactions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Only in `CompactPipeline` (deterministic).
    Manual,
    /// In the writer that triggered the in-memory flush (deterministic).
    Inline,
    /// On a background thread, racing with the sequence. Reads stay valid
    /// (compactions must never change them), but a failure may not replay.
    Background,
}

/// The memstore's configuration for one sequence.
#[derive(Debug, Clone, PartialEq)]
struct Setup {
    policy: CompactionPolicy,
    layout: IndexLayout,
    mode: Mode,
    max_versions: u32,
    ttl_ms: Option<u64>,
    start_ms: u64,
    flush_bytes: u64,
    segments_limit: usize,
    pooled_chunks: usize,
    adaptive_seed: u64,
}

impl Setup {
    /// A fixed setup for the explicit regression tests.
    fn fixed(policy: CompactionPolicy, layout: IndexLayout, max_versions: u32) -> Setup {
        Setup {
            policy,
            layout,
            mode: Mode::Manual,
            max_versions,
            ttl_ms: None,
            start_ms: 100,
            flush_bytes: 1 << 20,
            segments_limit: 2,
            pooled_chunks: 0,
            adaptive_seed: 1,
        }
    }

    /// Whether the policy may drop cells (so sizes can only be bounded).
    fn drops_cells(&self) -> bool {
        matches!(self.policy, CompactionPolicy::Eager | CompactionPolicy::Adaptive { .. })
    }

    fn config(&self, clock: Arc<ManualClock>) -> MemStoreConfig {
        MemStoreConfig {
            policy: self.policy,
            flat_layout: self.layout,
            in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(self.flush_bytes),
            pipeline_segments_limit: self.segments_limit,
            rules: VersionRules { max_versions: self.max_versions, ttl_ms: self.ttl_ms },
            chunk_pool: ChunkPool::new(self.pooled_chunks),
            compaction_mode: match self.mode {
                Mode::Manual => CompactionMode::Manual,
                Mode::Inline => CompactionMode::Inline,
                Mode::Background => CompactionMode::Background(CompactionExecutor::new(1)),
            },
            clock,
            mvcc: Arc::new(Mvcc::new(0)),
            adaptive_seed: self.adaptive_seed,
            ..MemStoreConfig::new(FAMILY)
        }
    }
}

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

fn cell_spec() -> impl Strategy<Value = CellSpec> {
    let q = || 0..QUALIFIERS.len();
    let ts = || 1..=MAX_TS;
    prop_oneof![
        12 => (q(), ts(), prop_oneof![60 => 0..24usize, 1 => Just(JUMBO_CELL_THRESHOLD)]).prop_map(|(qualifier, ts, value_len)| CellSpec {
            kind: CellType::Put,
            qualifier,
            ts,
            value_len
        }),
        1 => (q(), ts()).prop_map(|(q, ts)| delete(q, ts)),
        1 => (q(), ts()).prop_map(|(q, ts)| delete_column(q, ts)),
        1 => ts().prop_map(delete_family),
        1 => ts().prop_map(delete_family_version),
    ]
}

fn read_spec() -> impl Strategy<Value = ReadSpec> {
    let at = prop_oneof![
        1 => Just(ReadAt::Everything),
        1 => Just(ReadAt::Current),
        2 => (0..MAX_READERS).prop_map(ReadAt::Reader),
    ];
    let qualifiers = prop::option::weighted(
        0.3,
        prop::sample::subsequence((0..FILTER_QUALIFIERS.len()).collect::<Vec<_>>(), 1..=3).prop_shuffle(),
    );
    let time_range = prop_oneof![
        2 => Just((0, u64::MAX)),
        1 => (0..=MAX_TS + 1).prop_map(|min| (min, u64::MAX)),
        1 => (0..=MAX_TS + 1, 0..=MAX_TS + 2),
    ];
    let now_ahead = prop::option::weighted(0.2, 0..=3u64);
    (at, qualifiers, time_range, 1..=4u32, now_ahead).prop_map(
        |(at, qualifiers, time_range, max_versions, now_ahead)| ReadSpec {
            at,
            qualifiers,
            time_range,
            max_versions,
            now_ahead,
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    let mutation = || (0..ROWS.len(), vec(cell_spec(), 1..=4));
    let bound = || prop::option::weighted(0.6, 0..SCAN_KEYS.len());
    prop_oneof![
        30 => mutation().prop_map(|(row, cells)| Op::Write { row, cells }),
        3 => mutation().prop_map(|(row, cells)| Op::BeginWrite { row, cells }),
        4 => vec(mutation(), 2..=3).prop_map(|mut rows| {
            if !SAME_ROW_IN_BATCH {
                rows.sort_by_key(|(row, _)| *row);
                rows.dedup_by_key(|(row, _)| *row);
            }
            Op::Batch { rows }
        }),
        3 => (0..MAX_PENDING).prop_map(Op::Complete),
        15 => (0..GET_ROWS.len(), read_spec()).prop_map(|(row, read)| Op::Get { row, read }),
        8 => (bound(), bound(), any::<bool>(), read_spec())
            .prop_map(|(start, stop, reverse, read)| Op::Scan { start, stop, reverse, read }),
        2 => (bound(), bound(), any::<bool>(), read_spec())
            .prop_map(|(start, stop, reverse, read)| Op::OpenScanner { start, stop, reverse, read }),
        4 => (0..MAX_SCANNERS, 1..=3usize).prop_map(|(scanner, rows)| Op::PullScanner { scanner, rows }),
        8 => Just(Op::FlushInMemory),
        8 => Just(Op::CompactPipeline),
        1 => Just(Op::Snapshot),
        1 => Just(Op::ReleaseSnapshot),
        4 => Just(Op::RegisterReader),
        3 => (0..MAX_READERS).prop_map(Op::DropReader),
        2 => (1..=2u64).prop_map(Op::AdvanceClock),
    ]
}

fn setup(policy: CompactionPolicy, layouts: &'static [IndexLayout], mode: Mode) -> impl Strategy<Value = Setup> {
    let ttl = prop::option::weighted(0.3, 3..=6u64);
    (
        prop::sample::select(layouts),
        prop::sample::select(&[1u32, 3][..]),
        ttl,
        0..=2u64,
        300..=2000u64,
        1..=3usize,
        0..=2usize,
        any::<u64>(),
    )
        .prop_map(
            move |(
                layout,
                max_versions,
                ttl_ms,
                expired,
                flush_bytes,
                segments_limit,
                pooled_chunks,
                adaptive_seed,
            )| {
                // With a TTL, start so that timestamps below 1 + `expired` are
                // already expired; AdvanceClock expires more.
                let start_ms = ttl_ms.map_or(100, |ttl| ttl + 1 + expired);
                Setup {
                    policy,
                    layout,
                    mode,
                    max_versions,
                    ttl_ms,
                    start_ms,
                    flush_bytes,
                    segments_limit,
                    pooled_chunks,
                    adaptive_seed,
                }
            },
        )
}

fn case(
    policy: CompactionPolicy,
    layouts: &'static [IndexLayout],
    mode: Mode,
) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (setup(policy, layouts, mode), vec(op(), 1..=MAX_OPS))
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// A cell's position in HBase's order (see `ModelCell::order_key`).
type OrderKey = (Vec<u8>, Vec<u8>, Reverse<u64>, Reverse<u8>, Reverse<u64>);

/// One cell written to the family.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelCell {
    row: Vec<u8>,
    qualifier: Vec<u8>,
    ts: u64,
    kind: CellType,
    seq: u64,
    value: Vec<u8>,
    /// In the outstanding snapshot (removed when it is released).
    in_snapshot: bool,
}

impl ModelCell {
    fn to_cell(&self) -> Cell {
        Cell {
            row: self.row.clone().into(),
            family: FAMILY.to_vec().into(),
            qualifier: self.qualifier.clone().into(),
            timestamp: self.ts,
            cell_type: self.kind,
            value: self.value.clone().into(),
            seq: self.seq,
        }
    }

    /// Bytes of the encoded cell (`src/cell.rs`: header 8, key fixed 12, seq 8).
    fn encoded_len(&self) -> u64 {
        (8 + 12 + self.row.len() + FAMILY.len() + self.qualifier.len() + 8 + self.value.len()) as u64
    }

    /// HBase's cell order: row, qualifier ascending; timestamp, type code,
    /// seq descending.
    fn order_key(&self) -> OrderKey {
        (self.row.clone(), self.qualifier.clone(), Reverse(self.ts), Reverse(self.kind as u8), Reverse(self.seq))
    }

    /// Whether the delete marker `self` hides the put `put` of the same row.
    fn masks(&self, put: &ModelCell) -> bool {
        let same_column = self.qualifier == put.qualifier;
        match self.kind {
            CellType::DeleteFamily => put.ts <= self.ts,
            CellType::DeleteFamilyVersion => put.ts == self.ts,
            CellType::DeleteColumn => same_column && put.ts <= self.ts,
            CellType::Delete => same_column && put.ts == self.ts,
            CellType::Put => false,
        }
    }
}

/// A read, resolved to plain values.
#[derive(Debug, Clone)]
struct Query {
    read_point: u64,
    qualifiers: Option<Vec<Vec<u8>>>,
    min_ts: u64,
    max_ts: u64,
    max_versions: u32,
    now_ms: u64,
}

impl Query {
    fn options(&self, explicit_now: bool) -> ReadOptions {
        ReadOptions {
            read_point: self.read_point,
            qualifiers: self.qualifiers.clone(),
            time_range: TimeRange { min: self.min_ts, max: self.max_ts },
            max_versions: self.max_versions,
            now_ms: explicit_now.then_some(self.now_ms),
        }
    }

    fn in_time_range(&self, ts: u64) -> bool {
        ts >= self.min_ts && ts < self.max_ts
    }
}

#[derive(Debug, Default)]
struct Model {
    max_versions: u32,
    ttl_ms: Option<u64>,
    /// Every cell currently in the memstore (as far as readers can tell).
    cells: Vec<ModelCell>,
    last_seq: u64,
    /// Sequence ids of in-flight writes, ascending.
    pending: Vec<u64>,
    snapshot_outstanding: bool,
    /// Whether a full key was ever written twice (sizes are then bounds).
    rewrote_keys: bool,
    /// Cells (and their bytes) that a rewrite of their key replaced. Until
    /// a merge, compaction or flush folds them, both copies may still be
    /// stored (in different segments), so sizes may exceed the model's by
    /// at most this much.
    superseded: (u64, u64),
}

impl Model {
    /// Records a row mutation; returns the data bytes it writes. A cell with
    /// the same full key as an earlier one replaces it (last writer wins).
    fn write(&mut self, row: &[u8], cells: &[(CellSpec, Vec<u8>)], seq: u64) -> u64 {
        self.last_seq = seq;
        let mut added = 0;
        for (spec, value) in cells {
            let cell = ModelCell {
                row: row.to_vec(),
                qualifier: spec.qualifier().to_vec(),
                ts: spec.ts,
                kind: spec.kind,
                seq,
                value: value.clone(),
                in_snapshot: false,
            };
            // The same full key written again replaces the earlier cell (last
            // writer wins, as in HBase's memstore), wherever that one lives.
            if let Some(old) = self.cells.iter().find(|c| c.order_key() == cell.order_key()) {
                self.rewrote_keys = true;
                self.superseded.0 += 1;
                self.superseded.1 += old.encoded_len();
            }
            self.cells.retain(|c| c.order_key() != cell.order_key());
            added += cell.encoded_len();
            self.cells.push(cell);
        }
        added
    }

    /// The MVCC read point: everything below the oldest in-flight write.
    fn read_point(&self) -> u64 {
        self.pending.first().map_or(self.last_seq, |&seq| seq - 1)
    }

    fn take_snapshot(&mut self) {
        for c in &mut self.cells {
            c.in_snapshot = true;
        }
        self.snapshot_outstanding = true;
    }

    fn release_snapshot(&mut self) {
        self.cells.retain(|c| !c.in_snapshot);
        self.snapshot_outstanding = false;
    }

    /// The outstanding snapshot's cells, in cell order.
    fn snapshot_cells(&self) -> Vec<ModelCell> {
        let mut cells: Vec<ModelCell> = self.cells.iter().filter(|c| c.in_snapshot).cloned().collect();
        cells.sort_by_key(ModelCell::order_key);
        cells
    }

    /// The visible cells of `row`, by brute force from the rules in the
    /// header of `src/visibility.rs`.
    fn get(&self, row: &[u8], q: &Query) -> Vec<Cell> {
        // 1. Only cells with seq <= rp exist.
        let cells: Vec<&ModelCell> = self.cells.iter().filter(|c| c.row == row && c.seq <= q.read_point).collect();
        let markers: Vec<&ModelCell> = cells.iter().copied().filter(|c| c.kind != CellType::Put).collect();
        let mut qualifiers: Vec<&[u8]> =
            cells.iter().filter(|c| c.kind == CellType::Put).map(|c| c.qualifier.as_ref()).collect();
        qualifiers.sort();
        qualifiers.dedup();
        let cutoff = self.ttl_ms.map_or(0, |ttl| q.now_ms.saturating_sub(ttl));
        let mut out = Vec::new();
        for qualifier in qualifiers {
            if q.qualifiers.as_ref().is_some_and(|wanted| !wanted.iter().any(|w| w.as_slice() == qualifier)) {
                continue;
            }
            // 2. One version per timestamp: the highest seq.
            let mut versions: BTreeMap<u64, &ModelCell> = BTreeMap::new();
            for c in cells.iter().filter(|c| c.kind == CellType::Put && c.qualifier == qualifier) {
                let newest = versions.entry(c.ts).or_insert(c);
                if c.seq > newest.seq {
                    *newest = c;
                }
            }
            // 3. The newest `max_versions` timestamps are the versions, 4.
            // hidden ones keep their slot, 5. at most the requested number.
            let visible = versions
                .values()
                .rev()
                .take(self.max_versions as usize)
                .filter(|put| !markers.iter().any(|m| m.masks(put)))
                .filter(|put| put.ts >= cutoff && q.in_time_range(put.ts))
                .take(q.max_versions as usize)
                .map(|put| put.to_cell());
            out.extend(visible);
        }
        out
    }

    /// The non-empty visible rows in `range`.
    fn scan(&self, range: &ScanRange, q: &Query) -> Vec<Vec<Cell>> {
        let mut rows: Vec<&[u8]> = self.cells.iter().map(|c| c.row.as_ref()).collect();
        rows.sort();
        rows.dedup();
        if range.reverse {
            rows.reverse();
        }
        let in_range = |row: &[u8]| {
            let start = range.start.as_deref();
            let stop = range.stop.as_deref();
            if range.reverse {
                start.is_none_or(|s| row <= s) && stop.is_none_or(|s| row > s)
            } else {
                start.is_none_or(|s| row >= s) && stop.is_none_or(|s| row < s)
            }
        };
        rows.into_iter().filter(|r| in_range(r)).map(|r| self.get(r, q)).filter(|cells| !cells.is_empty()).collect()
    }
}

// ---------------------------------------------------------------------------
// The harness: one memstore and its model
// ---------------------------------------------------------------------------

struct Harness {
    setup: Setup,
    store: MemStore,
    clock: Arc<ManualClock>,
    model: Model,
    readers: Vec<ReaderGuard>,
    pending: Vec<WriteEntry>,
    snapshot_id: Option<u64>,
    scanners: Vec<HeldScanner>,
    /// The operation being applied, for failure messages.
    step: String,
}

/// A scanner held open across operations, with the rows it must return.
struct HeldScanner {
    scanner: RowScanner,
    want: Vec<Vec<Cell>>,
    returned: usize,
    /// How it was opened, for failure messages.
    opened: String,
}

/// The scan range with bounds from `SCAN_KEYS`.
fn scan_range(start: &Option<usize>, stop: &Option<usize>, reverse: bool) -> ScanRange {
    let key = |i: &Option<usize>| i.map(|i| SCAN_KEYS[i % SCAN_KEYS.len()].to_vec());
    ScanRange { start: key(start), stop: key(stop), reverse }
}

/// A put's value: unique per cell, so that a wrong version is visible.
fn value_of(seq: u64, mutation: usize, index: usize, spec: &CellSpec) -> Vec<u8> {
    if spec.kind.is_delete() {
        return Vec::new();
    }
    let mut v = format!("v{seq}.{mutation}.{index}").into_bytes();
    v.resize(v.len() + spec.value_len, b'x');
    v
}

impl Harness {
    fn new(setup: Setup) -> Harness {
        let clock = Arc::new(ManualClock::new(setup.start_ms));
        let store = MemStore::new(setup.config(clock.clone())).expect("the generated config is valid");
        let model = Model { max_versions: setup.max_versions, ttl_ms: setup.ttl_ms, ..Model::default() };
        Harness {
            setup,
            store,
            clock,
            model,
            readers: Vec::new(),
            pending: Vec::new(),
            snapshot_id: None,
            scanners: Vec::new(),
            step: String::new(),
        }
    }

    fn mvcc(&self) -> &Arc<Mvcc> {
        &self.store.config().mvcc
    }

    fn query(&self, read: &ReadSpec) -> Query {
        let read_point = match read.at {
            ReadAt::Everything => u64::MAX,
            ReadAt::Current => self.model.read_point(),
            ReadAt::Reader(_) if self.readers.is_empty() => self.model.read_point(),
            ReadAt::Reader(i) => self.readers[i % self.readers.len()].read_point(),
        };
        Query {
            read_point,
            qualifiers: read
                .qualifiers
                .as_ref()
                .map(|qs| qs.iter().map(|&i| FILTER_QUALIFIERS[i % FILTER_QUALIFIERS.len()].to_vec()).collect()),
            min_ts: read.time_range.0,
            max_ts: read.time_range.1,
            max_versions: read.max_versions,
            now_ms: self.clock.now_ms() + read.now_ahead.unwrap_or(0),
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Write { row, cells } => self.write(&[(*row, cells.clone())], true)?,
            Op::BeginWrite { row, cells } => {
                if self.pending.len() < MAX_PENDING {
                    self.write(&[(*row, cells.clone())], false)?;
                }
            }
            Op::Batch { rows } => self.write(rows, true)?,
            Op::Complete(i) => {
                if !self.pending.is_empty() {
                    let i = i % self.pending.len();
                    let entry = self.pending.remove(i);
                    self.model.pending.remove(i);
                    self.mvcc().complete(entry);
                }
            }
            Op::Get { row, read } => {
                let row = GET_ROWS[row % GET_ROWS.len()];
                let q = self.query(read);
                let got = self.store.get(row, &q.options(read.now_ahead.is_some()));
                let want = self.model.get(row, &q);
                prop_assert_eq!(got, want, "{}: get {:?} {:?}", self.step, String::from_utf8_lossy(row), q);
            }
            Op::Scan { start, stop, reverse, read } => {
                let range = scan_range(start, stop, *reverse);
                let q = self.query(read);
                self.check_scan(&range, &q, read.now_ahead.is_some())?;
            }
            Op::OpenScanner { start, stop, reverse, read } => {
                if self.scanners.len() < MAX_SCANNERS {
                    let range = scan_range(start, stop, *reverse);
                    let at = if read.at == ReadAt::Everything { ReadAt::Current } else { read.at };
                    let q = self.query(&ReadSpec { at, ..read.clone() });
                    let want = self.model.scan(&range, &q);
                    let scanner = self.store.scan(range.clone(), q.options(read.now_ahead.is_some()));
                    let opened = format!("{} ({range:?} {q:?})", self.step);
                    self.scanners.push(HeldScanner { scanner, want, returned: 0, opened });
                }
            }
            Op::PullScanner { scanner, rows } => {
                if !self.scanners.is_empty() {
                    let i = scanner % self.scanners.len();
                    if !self.pull(i, *rows)? {
                        self.scanners.remove(i);
                    }
                }
            }
            Op::FlushInMemory => {
                let expect = self.setup.policy != CompactionPolicy::None && self.store.layout_info().active.cells > 0;
                prop_assert_eq!(self.store.flush_in_memory(), expect, "{}: whether anything was pushed", self.step);
                self.check_everything()?;
            }
            Op::CompactPipeline => {
                self.store.compact_pipeline();
                self.check_everything()?;
            }
            Op::Snapshot => self.snapshot()?,
            Op::ReleaseSnapshot => self.release_snapshot()?,
            Op::RegisterReader => {
                if self.readers.len() < MAX_READERS {
                    let reader = self.mvcc().register_reader();
                    prop_assert_eq!(reader.read_point(), self.model.read_point(), "{}: reader read point", self.step);
                    self.readers.push(reader);
                }
            }
            Op::DropReader(i) => {
                if !self.readers.is_empty() {
                    let i = i % self.readers.len();
                    self.readers.remove(i);
                }
            }
            Op::AdvanceClock(ms) => self.clock.set(self.clock.now_ms() + ms),
        }
        prop_assert_eq!(self.mvcc().read_point(), self.model.read_point(), "{}: MVCC read point", self.step);
        self.check_sizes()
    }

    /// Writes row mutations under one sequence id; completes it or leaves
    /// it in flight.
    fn write(&mut self, mutations: &[(usize, Vec<CellSpec>)], complete: bool) -> Result<(), TestCaseError> {
        let entry = self.mvcc().begin();
        let seq = entry.seq();
        for (m, (row, specs)) in mutations.iter().enumerate() {
            let row = ROWS[row % ROWS.len()];
            let cells: Vec<(CellSpec, Vec<u8>)> =
                specs.iter().enumerate().map(|(i, spec)| (*spec, value_of(seq, m, i, spec))).collect();
            let inputs: Vec<CellInput<'_>> = cells
                .iter()
                .map(|(spec, value)| CellInput {
                    row,
                    family: FAMILY,
                    qualifier: spec.qualifier(),
                    timestamp: spec.ts,
                    cell_type: spec.kind,
                    value,
                })
                .collect();
            let added = self.store.add_row(&inputs, seq).expect("generated rows are valid");
            let want = self.model.write(row, &cells, seq);
            prop_assert_eq!(added, want, "{}: bytes added by mutation {}", self.step, m);
        }
        if complete {
            self.mvcc().complete(entry);
        } else {
            self.pending.push(entry);
            self.model.pending.push(seq);
        }
        Ok(())
    }

    /// Reads up to `rows` rows from held scanner `i`; false once it is done.
    fn pull(&mut self, i: usize, rows: usize) -> Result<bool, TestCaseError> {
        let held = &mut self.scanners[i];
        for _ in 0..rows {
            let got = held.scanner.next();
            let want = held.want.get(held.returned).cloned();
            prop_assert_eq!(
                &got,
                &want,
                "{}: row {} of the scanner opened at {}",
                self.step,
                held.returned,
                held.opened
            );
            if got.is_none() {
                return Ok(false);
            }
            held.returned += 1;
        }
        Ok(true)
    }

    fn check_scan(&self, range: &ScanRange, q: &Query, explicit_now: bool) -> Result<(), TestCaseError> {
        let got: Vec<Vec<Cell>> = self.store.scan(range.clone(), q.options(explicit_now)).collect();
        let want = self.model.scan(range, q);
        prop_assert_eq!(got, want, "{}: scan {:?} {:?}", self.step, range, q);
        Ok(())
    }

    /// Full scans at every read point a reader may use.
    fn check_everything(&self) -> Result<(), TestCaseError> {
        let mut at = vec![ReadAt::Everything, ReadAt::Current];
        at.extend((0..self.readers.len()).map(ReadAt::Reader));
        for at in at {
            let q = self.query(&ReadSpec::all(at));
            self.check_scan(&ScanRange::default(), &q, false)?;
        }
        Ok(())
    }

    /// Sizes against the model: exact for the policies that never drop cells,
    /// bounded for those that compact (delete markers are never dropped).
    fn check_sizes(&self) -> Result<(), TestCaseError> {
        let size = self.store.size();
        let cells = self.model.cells.len() as u64;
        let data: u64 = self.model.cells.iter().map(ModelCell::encoded_len).sum();
        let markers = self.model.cells.iter().filter(|c| c.kind.is_delete()).count() as u64;
        let min_seq = self.model.cells.iter().map(|c| c.seq).min();
        let lowest = self.store.lowest_unflushed_seq();
        let (extra_cells, extra_data) = self.model.superseded;
        if self.setup.drops_cells() {
            prop_assert!(
                markers <= size.cells && size.cells <= cells + extra_cells && size.data_size <= data + extra_data,
                "{}: size {:?}, model has {} cells ({} markers) of {} bytes, {} cells of {} bytes superseded",
                self.step,
                size,
                cells,
                markers,
                data,
                extra_cells,
                extra_data
            );
            prop_assert!(
                lowest.is_none_or(|l| min_seq.is_some_and(|m| l >= m)),
                "{}: lowest unflushed seq {:?}, model's {:?}",
                self.step,
                lowest,
                min_seq
            );
        } else if self.model.rewrote_keys {
            // A key rewritten after its first copy left the active segment
            // is stored twice until a merge or flush folds the copies.
            prop_assert!(
                (cells..=cells + extra_cells).contains(&size.cells)
                    && (data..=data + extra_data).contains(&size.data_size),
                "{}: size {:?}, model has {} cells of {} bytes, {} cells of {} bytes superseded",
                self.step,
                size,
                cells,
                data,
                extra_cells,
                extra_data
            );
            prop_assert_eq!(lowest, min_seq, "{}: lowest unflushed seq", self.step);
        } else {
            prop_assert_eq!((size.cells, size.data_size), (cells, data), "{}: cells and data size", self.step);
            prop_assert_eq!(lowest, min_seq, "{}: lowest unflushed seq", self.step);
        }
        prop_assert_eq!(size.cells == 0, size == MemStoreSize::default(), "{}: empty size {:?}", self.step, size);
        Ok(())
    }

    fn snapshot(&mut self) -> Result<(), TestCaseError> {
        let snapshot = self.store.snapshot();
        match self.snapshot_id {
            Some(id) => prop_assert_eq!(snapshot.id(), id, "{}: the outstanding snapshot again", self.step),
            None => {
                self.snapshot_id = Some(snapshot.id());
                self.model.take_snapshot();
                let flushable = self.store.flushable_size();
                prop_assert_eq!(
                    (flushable.data_size, flushable.heap_size, flushable.cells),
                    (0, 0, 0),
                    "{}: flushable",
                    self.step
                );
                // A background compaction the snapshot overtook still holds
                // its copy (counted while built) until it finds itself
                // overtaken (seen in CI: 608 bytes, adaptive, background).
                if self.setup.mode != Mode::Background {
                    prop_assert_eq!(flushable.held_size, 0, "{}: flushable held bytes", self.step);
                }
            }
        }
        // The snapshot holds the cells the model put in it, in cell order
        // (all of them unless the policy compacts; every delete marker).
        let mut got = Vec::new();
        let mut cursor = snapshot.cursor();
        while let Some(c) = cursor.current() {
            got.push(ModelCell {
                row: c.row().to_vec(),
                qualifier: c.qualifier().to_vec(),
                ts: c.timestamp(),
                kind: c.cell_type(),
                seq: c.seq(),
                value: c.value().to_vec(),
                in_snapshot: true,
            });
            cursor.advance();
        }
        let want = self.model.snapshot_cells();
        if self.setup.drops_cells() {
            prop_assert!(got.is_sorted_by_key(ModelCell::order_key), "{}: snapshot order {:?}", self.step, got);
            prop_assert!(got.iter().all(|c| want.contains(c)), "{}: snapshot {:?} not in {:?}", self.step, got, want);
            let markers = want.iter().filter(|c| c.kind.is_delete());
            prop_assert!(markers.clone().all(|m| got.contains(m)), "{}: snapshot lost a marker {:?}", self.step, got);
        } else {
            prop_assert_eq!(&got, &want, "{}: snapshot cells", self.step);
        }
        if self.model.rewrote_keys {
            // Rewritten keys may be stored twice; the cursor yields the newest.
            let (counted, yielded) = (snapshot.cell_count(), got.len() as u64);
            prop_assert!(
                (yielded..=yielded + self.model.superseded.0).contains(&counted),
                "{}: snapshot counts {} cells, yields {}",
                self.step,
                counted,
                yielded
            );
        } else {
            prop_assert_eq!(snapshot.cell_count(), got.len() as u64, "{}: snapshot cell count", self.step);
        }
        self.check_everything()
    }

    fn release_snapshot(&mut self) -> Result<(), TestCaseError> {
        match self.snapshot_id.take() {
            Some(id) => {
                prop_assert_eq!(self.store.release_snapshot(id), Ok(()), "{}: release", self.step);
                self.model.release_snapshot();
                prop_assert!(self.store.current_snapshot().is_none(), "{}: snapshot still there", self.step);
            }
            None => {
                let refused = self.store.release_snapshot(0);
                prop_assert_eq!(refused, Err(MemStoreError::UnknownSnapshot(0)), "{}: release of nothing", self.step);
            }
        }
        self.check_everything()
    }

    /// Ends the sequence: finishes in-flight writes, lets readers go,
    /// compacts, and flushes everything; `size()` must then be exactly zero.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        self.step = "finish".into();
        while !self.pending.is_empty() {
            self.apply(&Op::Complete(0))?;
        }
        self.readers.clear();
        self.check_everything()?;
        self.store.flush_in_memory();
        self.store.compact_pipeline();
        self.check_everything()?;
        self.check_sizes()?;
        if self.snapshot_id.is_some() {
            self.release_snapshot()?;
        }
        self.snapshot()?;
        self.release_snapshot()?;
        prop_assert_eq!(self.model.cells.len(), 0, "the model flushed everything");
        let size = self.store.size();
        prop_assert_eq!((size.data_size, size.heap_size, size.cells), (0, 0, 0), "size after the last flush");
        // A background compaction still building its copy holds that copy
        // (counted when it appears) until it finds itself overtaken; the
        // others have none in flight.
        if self.setup.mode != Mode::Background {
            prop_assert_eq!(size.held_size, 0, "held bytes after the last flush");
        }
        prop_assert_eq!(self.store.lowest_unflushed_seq(), None, "nothing left unflushed");
        // A background compaction overtaken by the snapshot must not bring
        // anything back.
        self.store.wait_for_compactions();
        prop_assert_eq!(self.store.size(), MemStoreSize::default(), "size once compactions are idle");
        self.check_everything()?;
        // Scanners still open hold the segments (and chunks) they started on.
        while !self.scanners.is_empty() {
            if !self.pull(0, usize::MAX)? {
                self.scanners.remove(0);
            }
        }
        Ok(())
    }
}

/// Runs one sequence against a fresh memstore and its model.
fn run(setup: &Setup, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(setup.clone());
    for (i, op) in ops.iter().enumerate() {
        h.step = format!("op {i} {op:?}");
        h.apply(op)?;
    }
    h.finish()
}

/// Runs a literal sequence in a plain `#[test]`.
fn replay(setup: Setup, ops: &[Op]) {
    if let Err(e) = run(&setup, ops) {
        panic!("{setup:?}\n{ops:#?}\n{e}");
    }
}

// ---------------------------------------------------------------------------
// The property tests: every policy, both flat layouts, Manual compaction
// (plus Inline for the policies that compact).
// ---------------------------------------------------------------------------

const BOTH: &[IndexLayout] = &[IndexLayout::CellArray, IndexLayout::CellChunk];
const ARRAY: &[IndexLayout] = &[IndexLayout::CellArray];
const CHUNK: &[IndexLayout] = &[IndexLayout::CellChunk];
const ADAPTIVE_HALF: CompactionPolicy = CompactionPolicy::Adaptive { redundancy_threshold: 0.5 };
const ADAPTIVE_LOW: CompactionPolicy = CompactionPolicy::Adaptive { redundancy_threshold: 0.2 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn none_matches_model((setup, ops) in case(CompactionPolicy::None, BOTH, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn basic_cell_array_matches_model((setup, ops) in case(CompactionPolicy::Basic, ARRAY, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn basic_cell_chunk_matches_model((setup, ops) in case(CompactionPolicy::Basic, CHUNK, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn eager_cell_array_matches_model((setup, ops) in case(CompactionPolicy::Eager, ARRAY, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn eager_cell_chunk_matches_model((setup, ops) in case(CompactionPolicy::Eager, CHUNK, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_half_cell_array_matches_model((setup, ops) in case(ADAPTIVE_HALF, ARRAY, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_half_cell_chunk_matches_model((setup, ops) in case(ADAPTIVE_HALF, CHUNK, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_low_cell_array_matches_model((setup, ops) in case(ADAPTIVE_LOW, ARRAY, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_low_cell_chunk_matches_model((setup, ops) in case(ADAPTIVE_LOW, CHUNK, Mode::Manual)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn basic_inline_matches_model((setup, ops) in case(CompactionPolicy::Basic, BOTH, Mode::Inline)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn eager_inline_matches_model((setup, ops) in case(CompactionPolicy::Eager, BOTH, Mode::Inline)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_half_inline_matches_model((setup, ops) in case(ADAPTIVE_HALF, BOTH, Mode::Inline)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_low_inline_matches_model((setup, ops) in case(ADAPTIVE_LOW, BOTH, Mode::Inline)) {
        run(&setup, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: BACKGROUND_CASES, ..ProptestConfig::default() })]

    #[test]
    fn basic_background_matches_model((setup, ops) in case(CompactionPolicy::Basic, BOTH, Mode::Background)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn eager_background_matches_model((setup, ops) in case(CompactionPolicy::Eager, BOTH, Mode::Background)) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_background_matches_model((setup, ops) in case(ADAPTIVE_LOW, BOTH, Mode::Background)) {
        run(&setup, &ops)?;
    }
}

// ---------------------------------------------------------------------------
// Explicit sequences
// ---------------------------------------------------------------------------

/// A hand-written sequence touching every operation once, so that the
/// harness itself is exercised even with `PROPTEST_CASES=0`.
#[test]
fn every_operation_once() {
    let ops = vec![
        Op::Write { row: 0, cells: vec![put(1, 5), put(1, 3), put(0, 2)] },
        Op::RegisterReader,
        Op::Write { row: 0, cells: vec![delete_column(1, 4), delete(0, 2)] },
        Op::BeginWrite { row: 2, cells: vec![put(2, 7)] },
        Op::Get { row: 0, read: ReadSpec::all(ReadAt::Reader(0)) },
        Op::Get { row: 2, read: ReadSpec::all(ReadAt::Everything) },
        Op::FlushInMemory,
        Op::CompactPipeline,
        Op::Complete(0),
        Op::Write { row: 3, cells: vec![delete_family(6), delete_family_version(8), put(3, 8), put(3, 7)] },
        Op::Snapshot,
        Op::Write { row: 4, cells: vec![put(2, 1)] },
        Op::Scan { start: Some(1), stop: None, reverse: false, read: ReadSpec::all(ReadAt::Current) },
        Op::Scan { start: Some(8), stop: Some(2), reverse: true, read: ReadSpec::all(ReadAt::Reader(0)) },
        Op::ReleaseSnapshot,
        Op::DropReader(0),
        Op::AdvanceClock(2),
        Op::Get { row: 4, read: ReadSpec::all(ReadAt::Current) },
    ];
    let policies = [CompactionPolicy::None, CompactionPolicy::Basic, CompactionPolicy::Eager, ADAPTIVE_HALF];
    for policy in policies {
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            for max_versions in [1, 3] {
                replay(Setup::fixed(policy, layout, max_versions), &ops);
                let ttl = Setup { ttl_ms: Some(4), start_ms: 6, ..Setup::fixed(policy, layout, max_versions) };
                replay(ttl, &ops);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Regressions: bugs the model found (fixed in src/)
// ---------------------------------------------------------------------------

/// Two writes of one full key (row, column, timestamp, type and sequence id:
/// a region's mini-batch writes all its rows under one sequence id, and the
/// same row may appear twice). The skiplist used to keep the first write
/// inside a segment while the merging cursor preferred the newer segment's
/// cell across segments, so which value a reader saw depended on whether an
/// in-memory flush happened between the two writes. The last write wins.
#[test]
fn equal_keys_of_one_batch_resolve_the_same_with_or_without_a_flush() {
    let read = |flush_between: bool| {
        let setup = Setup::fixed(CompactionPolicy::Basic, IndexLayout::CellArray, 1);
        let store = MemStore::new(setup.config(Arc::new(ManualClock::new(100)))).expect("valid config");
        let mvcc = store.config().mvcc.clone();
        let batch = mvcc.begin();
        store.add_row(&[CellInput::put(b"r", FAMILY, b"q", 5, b"first")], batch.seq()).expect("first row");
        if flush_between {
            assert!(store.flush_in_memory(), "pushed the active segment");
        }
        store.add_row(&[CellInput::put(b"r", FAMILY, b"q", 5, b"second")], batch.seq()).expect("second row");
        mvcc.complete(batch);
        let cells = store.get(b"r", &ReadOptions::default());
        cells.iter().map(|c| String::from_utf8_lossy(&c.value).into_owned()).collect::<Vec<String>>()
    };
    // Once: (["first"]) without the flush, (["second"]) with it.
    assert_eq!(read(false), ["second"], "the last write of a key wins");
    assert_eq!(read(true), ["second"], "the result must not depend on in-memory flush timing");
}

/// The sequence in which the property test (with `SAME_ROW_IN_BATCH` on)
/// found the bug above, as shrunk: the first mutation of the batch pushes the
/// active segment over the 300-byte threshold, so the second mutation's equal
/// key lands in a new segment and was stored there instead of refused.
#[test]
fn regression_same_row_twice_in_a_batch_across_an_in_memory_flush() {
    let setup = Setup { flush_bytes: 300, ..Setup::fixed(CompactionPolicy::Basic, IndexLayout::CellArray, 1) };
    let sized = |q, ts, value_len| CellSpec { value_len, ..put(q, ts) };
    let ops = vec![
        Op::Write { row: 0, cells: vec![sized(0, 7, 0), sized(0, 1, 14), sized(0, 2, 15), sized(0, 3, 18)] },
        Op::Batch { rows: vec![(1, vec![sized(3, 5, 6), sized(0, 1, 8)]), (1, vec![sized(3, 5, 0)])] },
        Op::Get { row: 1, read: ReadSpec::all(ReadAt::Current) },
    ];
    replay(setup, &ops);
}
