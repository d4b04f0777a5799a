//! Model-based property test of the embedded `Store`.
//!
//! Random sequences of operations run against a real [`Store`] (in a
//! temporary directory, with `background: false`, so that flushes,
//! compactions and splits happen when the sequence says — or inline, when a
//! tiny region flush size makes writes flush their region) and against a
//! [`Model`]; every read of the store must equal the model's. Operations:
//! row mutations over two families (puts and every kind of delete, at
//! explicit timestamps 0..=6 so that versions collide; `DeleteVersion` also
//! without one, "the latest version"; values empty, small or spanning blocks;
//! sometimes a put to a missing family or an oversized cell, which must
//! refuse the whole mutation without taking a sequence id), gets (columns,
//! time range, versions), scans (forward and reverse, start/stop/prefix,
//! limit, batch) compared as whole results, scanners held open while the
//! store changes under them, increments of a counter column,
//! check-and-mutate, flush, minor and major compaction, splits at a chosen
//! row or the midpoint, merges of adjacent regions (refused unless both are
//! open and without references; also named in either order, a region with
//! itself and two that are not adjacent, which are refused), close and open
//! of single regions, disable and enable (while disabled, reads, writes and
//! merges must be refused), close + reopen, and a crash + reopen: the store
//! dropped without `close`, then everything not synced cut from the files
//! ([`FaultInjectingFs::drop_unsynced`]). The table's durability is
//! `SyncWal`, so every acknowledged write is in the WAL and a crash must lose
//! nothing.
//!
//! The model is deliberately naive: a list of every cell ever written, and
//! reads computed by brute force from the rules in the header of
//! `memstore/src/visibility.rs` (per column: puts deduplicated by timestamp,
//! the newest write winning; the family's `max_versions` newest timestamps
//! are the versions, deleted ones keeping their slot; a version is hidden if
//! any delete marker masks it, whichever was written first; the time range;
//! the TTL; the request's versions). It shares no code with the store's
//! resolver or retainer. Two cells of one mutation with the same full key
//! share its sequence id; the later replaces the earlier, as in HBase's
//! memstore.
//!
//! The model never flushes and never compacts, except for one thing: a
//! *major* compaction purges delete markers together with everything they
//! mask (and versions beyond the family's maximum), which changes what later
//! writes show — a put written after the purge with a timestamp at or below a
//! purged marker's is visible again (HBase's behaviour). So at a major
//! compaction the model applies the same purge to exactly the cells that
//! compaction sees: those already in store files, i.e. with a sequence id at
//! or below their family store's flushed sequence id (cells still in a
//! memstore are not compacted), judged by the evidence of the cells at or
//! below the region's smallest read point. Without held scanners that is the
//! latest sequence id; a held scanner pins it lower, and then the markers
//! (and versions) it might still need survive. For that the model records
//! each write's sequence id, read from the region's MVCC after the write (and
//! checks that every row mutation takes exactly one, and that reads return
//! it). Flushes, minor compactions and in-memory compactions drop cells too
//! (versions beyond the maximum, older writes of a version, puts under a
//! range delete), but that must never change a read — that is what "deleted
//! versions still occupy their slot" is for — and leaving them out of the
//! model checks exactly that.
//!
//! A held scanner reads each region as of when it opened that region's
//! scanner: the first with the scan itself, each next one once the previous
//! is exhausted, looked up afresh from its boundary (so a split during the
//! scan neither skips nor repeats rows). The model keeps a copy of itself for
//! the region being read. Held scanners are read to their end before a
//! disable, close or crash, and those reading a region before it is closed.
//! A held scanner reading a region that is merged (or split) away reads it
//! to its end, then resumes from its boundary in the region found there —
//! a merged region holding rows it has read must not return them again.
//!
//! The harness tracks which regions are closed (by key range: a closed
//! region is neither split nor merged, so its range stays). A request to a
//! row of a closed region must fail with `NotServingRegion` (CLOSED) and
//! change nothing; a scan fails once it needs a closed region — at once if
//! its first region is closed, else after the rows of the regions before it,
//! in its direction, unless its limit or range ends first; a compaction
//! leaves a closed region's files alone; and a closed region stays closed
//! across a close + reopen and a crash. The whole-table checks then also
//! scan each run of open regions on its own, and every sequence ends by
//! opening the closed regions again and checking everything.
//!
//! Timestamps 0..=2 are taken literally (decades old: expired in a family
//! with a TTL of a day), 3..=6 are minutes before the sequence started (never
//! expire during it), so expiry is deterministic although the store judges it
//! by the wall clock. Expired puts, like deleted ones, keep their version
//! slot; the store's flushes and compactions drop them, which again must not
//! change a read. Increments write at the wall clock's timestamp; the model
//! learns it by reading the counter back (and checks the value). The counter
//! has its own column, which no other operation writes, and every explicit
//! timestamp is below the wall clock, so only the increments decide it.
//!
//! Every policy (none, basic, eager, adaptive:0.5) runs with family versions
//! 1 or 3, with or without a TTL, both flat layouts, tiny in-memory flush
//! thresholds and pipeline limits 1..=3, a huge or tiny region flush size,
//! 1–2 pre-split keys, every bloom type and compression, small blocks, with
//! or without the block cache, small WAL files (rolled and archived), minor
//! compactions of 2 or 3 files, and sometimes a tiny maximum region size
//! (compactions then split regions at their midpoint too). Every read is checked at once; after
//! flushes, compactions, splits, reopens and enables the whole table is
//! scanned forward and reverse; every sequence ends with a full scan, close,
//! reopen and a full scan. The store lives on `/dev/shm` when there is one
//! (`SyncWal` fsyncs are then cheap). `PROPTEST_CASES` overrides the number
//! of cases, for a longer soak.
//!
//! `the_model_holds_with_the_store_on_hdfs` (ignored by default; `.ci/run`
//! runs it) runs the same sequences with the store on a real mini HDFS,
//! where a crash is a process death: the client is severed without closing
//! its WAL, and the reopen, through a new client, recovers the lease.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use memstore::{Cell, CellType, MemStoreError, TimeRange};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use store::jobs::compaction::policy::CompactionConfig;
#[path = "common/mini_hdfs.rs"]
#[expect(dead_code, reason = "this test starts the cluster and reads its URI only")]
mod mini_hdfs;

use store::fs::{FaultInjectingFs, FileSystem, HdfsFs, LocalFs};
use store::read::scanner::Scanner;
use store::region::Region;
use store::storefile::{BloomType, Compression};
use store::wal::{Durability, WalOptions};
use store::{
    Column, FamilyDescriptor, Get, Mutation, MutationRef, RegionInfo, RegionState, RowMutations, Scan, Store,
    StoreError, StoreOptions, TableDescriptor,
};

const TABLE: &str = "t";
/// The families, in byte order (reads return them in this order).
const FAMILIES: [&[u8]; 2] = [b"f", b"g"];
/// The row space: rows that prefix one another, across region boundaries.
const ROWS: [&[u8]; 8] = [b"a", b"aa", b"ab", b"b", b"ba", b"c", b"cab", b"d"];
/// Gets also ask for rows that are never written.
const GET_ROWS: [&[u8]; 10] = [b"a", b"aa", b"ab", b"b", b"ba", b"c", b"cab", b"d", b"", b"ac"];
/// Qualifiers of the ordinary columns; the empty one sorts with the family
/// markers.
const QUALIFIERS: [&[u8]; 3] = [b"", b"q", b"qq"];
/// The counter column (in either family), written only by increments.
const COUNTER: &[u8] = b"n";
/// Qualifiers a read may name: the columns, the counter, and one never written.
const READ_QUALIFIERS: [&[u8]; 5] = [b"", b"q", b"qq", b"n", b"qqq"];
/// Keys the table may be pre-split at (one or two of them).
const PRESPLIT: [&[u8]; 4] = [b"ab", b"b", b"c", b"ca"];
/// Split points: rows, keys between rows, region boundaries, and keys
/// outside every region's interior.
const SPLIT_AT: [&[u8]; 13] = [b"", b"a", b"a\0", b"aa", b"ab", b"b", b"b\0", b"ba", b"bb", b"c", b"cab", b"d", b"e"];
/// Scan bounds (the empty key means unbounded).
const SCAN_KEYS: [&[u8]; 13] = [b"", b"0", b"a", b"aa", b"aa\0", b"ab", b"b", b"ba", b"bz", b"c", b"cab", b"d", b"z"];
const PREFIXES: [&[u8]; 7] = [b"", b"a", b"aa", b"b", b"c", b"ca", b"x"];
/// The store's largest cell (`max_cell_size`), and a value size beyond it.
const MAX_CELL_SIZE: usize = 8192;
const OVERSIZED: usize = 9000;
/// Explicit timestamps are `0..=MAX_TS`, so that versions collide. Those
/// below `RECENT_FROM` are taken literally (decades old: expired in a family
/// with a TTL); the others are `Timestamps::base` plus them (recent).
const MAX_TS: u64 = 6;
const RECENT_FROM: u64 = 3;
/// The TTL of a family that has one: nothing recent expires during a test.
const TTL_SECS: u64 = 24 * 3600;
/// Where the model puts a `DeleteVersion` of "the latest version" of a
/// column that has none: the store puts it at the wall clock, which no put of
/// an ordinary column ever reaches, so any timestamp above `MAX_TS` is the
/// same to the model (such a marker masks nothing).
const NOTHING_TO_DELETE_TS: u64 = u64::MAX / 4;
/// Scanners held open at most at once.
const MAX_SCANNERS: usize = 2;
/// Cases per policy (fewer when the store must live on a disk, where every
/// `SyncWal` write waits for an fsync); each runs up to `MAX_OPS` operations.
const CASES: u32 = 256;
const DISK_CASES: u32 = 48;
/// Sequences of the model test on the mini HDFS (every call a round trip).
const HDFS_CASES: u32 = 64;
/// Where stores live when the machine has a tmpfs.
const TMPFS: &str = "/dev/shm";
const MAX_OPS: usize = 60;

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// One change of a row mutation; indexes into `FAMILIES` and `QUALIFIERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// `size`: 0 for an empty value, else a unique value padded by `size - 1`
    /// bytes (rarely enough to span store-file blocks and memstore chunks).
    Put {
        family: usize,
        qualifier: usize,
        ts: u64,
        size: usize,
    },
    /// `ts: None` deletes the latest version.
    Delete {
        family: usize,
        qualifier: usize,
        ts: Option<u64>,
    },
    DeleteColumn {
        family: usize,
        qualifier: usize,
        ts: u64,
    },
    DeleteFamily {
        family: usize,
        ts: u64,
    },
    DeleteFamilyVersion {
        family: usize,
        ts: u64,
    },
    DeleteRow {
        ts: u64,
    },
    /// A put to a family the table does not have: refuses the whole mutation.
    PutToMissingFamily {
        ts: u64,
    },
}

impl Change {
    /// Why the store must refuse a mutation with this change, if it must.
    fn refusal(&self) -> Option<Refusal> {
        match self {
            Change::PutToMissingFamily { .. } => Some(Refusal::NoSuchFamily),
            Change::Put { size, .. } if *size >= OVERSIZED => Some(Refusal::CellTooLarge),
            _ => None,
        }
    }
}

/// Why a row mutation is refused (as a whole, before it takes a sequence id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Refusal {
    /// Checked first, while the mutation's cells are built.
    NoSuchFamily,
    /// Checked once every cell is built.
    CellTooLarge,
}

impl Refusal {
    fn matches(self, e: &StoreError) -> bool {
        match self {
            Refusal::NoSuchFamily => matches!(e, StoreError::NoSuchFamily { .. }),
            Refusal::CellTooLarge => matches!(e, StoreError::MemStore(MemStoreError::CellTooLarge { .. })),
        }
    }
}

/// The refusal of a mutation made of `changes`, if any.
fn refusal(changes: &[Change]) -> Option<Refusal> {
    changes.iter().filter_map(Change::refusal).min()
}

/// Maps the generated timestamps `0..=MAX_TS` (and time-range bounds) to
/// the store's, preserving their order.
#[derive(Debug, Clone, Copy)]
struct Timestamps {
    /// A quarter of an hour before the sequence started: recent timestamps
    /// are all below the wall clock (and so below every increment's).
    base: u64,
}

impl Timestamps {
    fn new() -> Timestamps {
        Timestamps { base: now_ms() - 15 * 60 * 1000 }
    }

    /// `change` with the store's timestamp.
    fn apply(&self, change: &Change) -> Change {
        let mut change = *change;
        match &mut change {
            Change::Put { ts, .. }
            | Change::DeleteColumn { ts, .. }
            | Change::DeleteFamily { ts, .. }
            | Change::DeleteFamilyVersion { ts, .. }
            | Change::DeleteRow { ts }
            | Change::PutToMissingFamily { ts } => *ts = self.map(*ts),
            Change::Delete { ts, .. } => *ts = ts.map(|t| self.map(t)),
        }
        change
    }

    fn map(&self, t: u64) -> u64 {
        match t {
            u64::MAX => u64::MAX,
            t if t < RECENT_FROM => t,
            t => self.base + t,
        }
    }
}

fn now_ms() -> u64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since_epoch.expect("the clock is after 1970").as_millis() as u64
}

/// Columns, time range and versions of a get or scan.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadSpec {
    /// (index into `FAMILIES`, index into `READ_QUALIFIERS` or the whole family).
    columns: Vec<(usize, Option<usize>)>,
    /// `[min, max)`; `max` may be `u64::MAX` (unbounded).
    time_range: (u64, u64),
    max_versions: u32,
}

impl ReadSpec {
    /// Every version of every column.
    fn all() -> ReadSpec {
        ReadSpec { columns: Vec::new(), time_range: (0, u64::MAX), max_versions: 4 }
    }

    fn columns(&self) -> Vec<Column> {
        self.columns
            .iter()
            .map(|&(f, q)| Column {
                family: FAMILIES[f % FAMILIES.len()].to_vec(),
                qualifier: q.map(|q| READ_QUALIFIERS[q % READ_QUALIFIERS.len()].to_vec()),
            })
            .collect()
    }

    fn time_range(&self, ts: Timestamps) -> TimeRange {
        TimeRange { min: ts.map(self.time_range.0), max: ts.map(self.time_range.1) }
    }
}

/// Indexes into `SCAN_KEYS` and `PREFIXES`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScanSpec {
    start: Option<usize>,
    stop: Option<usize>,
    prefix: Option<usize>,
    reverse: bool,
    read: ReadSpec,
    batch: Option<usize>,
    limit: Option<u64>,
}

impl ScanSpec {
    fn scan(&self, ts: Timestamps) -> Scan {
        let key = |i: Option<usize>| i.map(|i| SCAN_KEYS[i % SCAN_KEYS.len()].to_vec());
        Scan {
            start: key(self.start),
            stop: key(self.stop),
            start_inclusive: true,
            stop_inclusive: false,
            prefix: self.prefix.map(|i| PREFIXES[i % PREFIXES.len()].to_vec()),
            reverse: self.reverse,
            columns: self.read.columns(),
            time_range: self.read.time_range(ts),
            max_versions: self.read.max_versions,
            batch: self.batch,
            limit: self.limit,
            filter: None,
        }
    }

    /// The whole table, every version.
    fn everything(reverse: bool) -> ScanSpec {
        ScanSpec { start: None, stop: None, prefix: None, reverse, read: ReadSpec::all(), batch: None, limit: None }
    }
}

/// What a check-and-mutate expects the column to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// What the model says it holds (so the mutation applies).
    Current,
    /// Nothing.
    Absent,
    /// A value never written.
    Other,
    /// The empty value (which is not the same as no value).
    Empty,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// A row mutation (index into `ROWS`).
    Write {
        row: usize,
        changes: Vec<Change>,
    },
    /// A get of a row of `GET_ROWS`.
    Get {
        row: usize,
        read: ReadSpec,
    },
    Scan(ScanSpec),
    /// Opens a scanner that is read later, by `PullScanner`, while the store
    /// changes under it.
    OpenScanner(ScanSpec),
    /// Reads up to `rows` results from a held scanner (index modulo their number).
    PullScanner {
        scanner: usize,
        rows: usize,
    },
    Increment {
        row: usize,
        family: usize,
        amount: i64,
    },
    CheckAndMutate {
        row: usize,
        family: usize,
        qualifier: usize,
        expect: Expect,
        changes: Vec<Change>,
    },
    Flush,
    Compact {
        major: bool,
    },
    /// Splits the region of `ROWS[row]` at `SPLIT_AT[at]` (or its midpoint).
    Split {
        row: usize,
        at: Option<usize>,
    },
    /// Merges the region of `ROWS[row]` with the region `1 + gap` places
    /// after it (`gap` > 0: not adjacent, refused; none there: with itself,
    /// refused), naming the two in the other order if `swap`.
    Merge {
        row: usize,
        gap: usize,
        swap: bool,
    },
    /// Closes the region of `ROWS[row]` (refused if it is closed).
    CloseRegion {
        row: usize,
    },
    /// Opens the region of `ROWS[row]` (`None`: the first closed region, or
    /// the first region if none is closed); refused unless it is closed.
    OpenRegion {
        row: Option<usize>,
    },
    /// Disables the table (refused if it is disabled); while it is, every
    /// read and write is refused, merges too, and flushes, compactions,
    /// splits and closes and opens of regions are skipped.
    Disable,
    /// Enables the table (refused if it is enabled).
    Enable,
    /// `close`, then open again.
    Reopen,
    /// Drop without `close`, lose everything not synced, open again.
    Crash,
}

// ---------------------------------------------------------------------------
// The store's configuration for one sequence
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Setup {
    policy: &'static str,
    /// Per family.
    max_versions: [u32; 2],
    /// Per family: whether it has a TTL (`TTL_SECS`).
    ttl: [bool; 2],
    layout: &'static str,
    /// The in-memory flush threshold (converted to a share of the flush size).
    in_memory_flush_bytes: u64,
    segments_limit: usize,
    /// Huge (flushes only when asked) or tiny (writes flush their region).
    region_flush_size: u64,
    /// Indexes into `PRESPLIT`.
    split_keys: Vec<usize>,
    bloom: BloomType,
    compression: Compression,
    block_size: usize,
    block_cache: bool,
    wal_roll_size: u64,
    min_files: usize,
    max_region_size: u64,
}

impl Setup {
    /// A fixed setup for the explicit sequences.
    fn fixed(policy: &'static str, max_versions: [u32; 2]) -> Setup {
        Setup {
            policy,
            max_versions,
            ttl: [false, true],
            layout: "cell-chunk",
            in_memory_flush_bytes: 400,
            segments_limit: 2,
            region_flush_size: 1 << 30,
            split_keys: vec![1],
            bloom: BloomType::Row,
            compression: Compression::None,
            block_size: 512,
            block_cache: true,
            wal_roll_size: 2048,
            min_files: 2,
            max_region_size: 10 << 30,
        }
    }

    fn options(&self, fs: Arc<dyn FileSystem>) -> StoreOptions {
        StoreOptions {
            fs,
            region_flush_size: self.region_flush_size,
            memory_budget: 64 << 20,
            block_cache_share: if self.block_cache { 0.25 } else { 0.0 },
            wal: WalOptions { roll_size: self.wal_roll_size, ..WalOptions::default() },
            compaction: CompactionConfig { min_files: self.min_files, ..CompactionConfig::default() },
            max_cell_size: MAX_CELL_SIZE,
            background: false,
            ..StoreOptions::default()
        }
    }

    fn descriptor(&self) -> TableDescriptor {
        // Each family's memstore gets its share of the region flush size.
        let family_flush_size = self.region_flush_size / FAMILIES.len() as u64;
        let share = (self.in_memory_flush_bytes as f64 / family_flush_size as f64).min(1.0);
        let families = FAMILIES
            .iter()
            .zip(self.max_versions)
            .zip(self.ttl)
            .map(|((name, max_versions), ttl)| FamilyDescriptor {
                max_versions,
                ttl_secs: ttl.then_some(TTL_SECS),
                memstore_policy: self.policy.to_string(),
                inmemory_flush_share: Some(share),
                pipeline_segments_limit: self.segments_limit,
                flat_layout: self.layout.to_string(),
                bloom: self.bloom,
                block_size: self.block_size,
                compression: self.compression,
                ..FamilyDescriptor::new(String::from_utf8_lossy(name))
            })
            .collect();
        TableDescriptor {
            durability: Durability::SyncWal,
            max_region_size: self.max_region_size,
            ..TableDescriptor::new(TABLE, families)
        }
    }

    fn split_keys(&self) -> Vec<Vec<u8>> {
        self.split_keys.iter().map(|&i| PRESPLIT[i % PRESPLIT.len()].to_vec()).collect()
    }
}

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

fn ts() -> impl Strategy<Value = u64> {
    0..=MAX_TS
}

fn value_size() -> impl Strategy<Value = usize> {
    prop_oneof![2 => Just(0), 60 => Just(1), 6 => 2..=600usize, 2 => 2000..=5000usize, 1 => Just(OVERSIZED)]
}

fn change() -> impl Strategy<Value = Change> {
    let f = || 0..FAMILIES.len();
    let q = || 0..QUALIFIERS.len();
    prop_oneof![
        12 => (f(), q(), ts(), value_size())
            .prop_map(|(family, qualifier, ts, size)| Change::Put { family, qualifier, ts, size }),
        2 => (f(), q(), ts()).prop_map(|(family, qualifier, ts)| Change::Delete { family, qualifier, ts: Some(ts) }),
        1 => (f(), q()).prop_map(|(family, qualifier)| Change::Delete { family, qualifier, ts: None }),
        2 => (f(), q(), ts()).prop_map(|(family, qualifier, ts)| Change::DeleteColumn { family, qualifier, ts }),
        1 => (f(), ts()).prop_map(|(family, ts)| Change::DeleteFamily { family, ts }),
        1 => (f(), ts()).prop_map(|(family, ts)| Change::DeleteFamilyVersion { family, ts }),
        1 => ts().prop_map(|ts| Change::DeleteRow { ts }),
        1 => ts().prop_map(|ts| Change::PutToMissingFamily { ts }),
    ]
}

fn read_spec() -> impl Strategy<Value = ReadSpec> {
    let columns = prop_oneof![
        2 => Just(Vec::new()),
        1 => vec((0..FAMILIES.len(), prop::option::weighted(0.7, 0..READ_QUALIFIERS.len())), 1..=3),
    ];
    let time_range = prop_oneof![
        3 => Just((0, u64::MAX)),
        1 => (0..=MAX_TS + 1).prop_map(|min| (min, u64::MAX)),
        1 => (0..=MAX_TS + 1, 0..=MAX_TS + 2),
    ];
    (columns, time_range, 0..=4u32).prop_map(|(columns, time_range, max_versions)| ReadSpec {
        columns,
        time_range,
        max_versions,
    })
}

fn scan_spec() -> impl Strategy<Value = ScanSpec> {
    let bound = || prop::option::weighted(0.5, 0..SCAN_KEYS.len());
    (
        bound(),
        bound(),
        prop::option::weighted(0.3, 0..PREFIXES.len()),
        any::<bool>(),
        read_spec(),
        prop::option::weighted(0.25, 1..=3usize),
        prop::option::weighted(0.25, 0..=3u64),
    )
        .prop_map(|(start, stop, prefix, reverse, read, batch, limit)| ScanSpec {
            start,
            stop,
            prefix,
            reverse,
            read,
            batch,
            limit,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let expect = prop_oneof![
        4 => Just(Expect::Current),
        1 => Just(Expect::Absent),
        1 => Just(Expect::Other),
        1 => Just(Expect::Empty),
    ];
    prop_oneof![
        30 => (0..ROWS.len(), vec(change(), 1..=4)).prop_map(|(row, changes)| Op::Write { row, changes }),
        14 => (0..GET_ROWS.len(), read_spec()).prop_map(|(row, read)| Op::Get { row, read }),
        8 => scan_spec().prop_map(Op::Scan),
        2 => scan_spec().prop_map(Op::OpenScanner),
        4 => (0..MAX_SCANNERS, 1..=3usize).prop_map(|(scanner, rows)| Op::PullScanner { scanner, rows }),
        3 => (0..ROWS.len(), 0..FAMILIES.len(), -3..=5i64)
            .prop_map(|(row, family, amount)| Op::Increment { row, family, amount }),
        4 => (0..ROWS.len(), 0..FAMILIES.len(), 0..QUALIFIERS.len(), expect, vec(change(), 1..=2)).prop_map(
            |(row, family, qualifier, expect, changes)| Op::CheckAndMutate { row, family, qualifier, expect, changes }
        ),
        3 => Just(Op::Flush),
        3 => Just(Op::Compact { major: false }),
        3 => Just(Op::Compact { major: true }),
        2 => (0..ROWS.len(), prop::option::weighted(0.8, 0..SPLIT_AT.len()))
            .prop_map(|(row, at)| Op::Split { row, at }),
        2 => (0..ROWS.len(), prop_oneof![6 => Just(0usize), 1 => Just(1usize)], any::<bool>())
            .prop_map(|(row, gap, swap)| Op::Merge { row, gap, swap }),
        2 => (0..ROWS.len()).prop_map(|row| Op::CloseRegion { row }),
        2 => prop::option::weighted(0.3, 0..ROWS.len()).prop_map(|row| Op::OpenRegion { row }),
        1 => Just(Op::Disable),
        6 => Just(Op::Enable),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

fn setup(policy: &'static str) -> impl Strategy<Value = Setup> {
    let versions = (select(&[1u32, 3][..]), select(&[1u32, 3][..])).prop_map(|(f, g)| [f, g]);
    let versions = (versions, any::<[bool; 2]>());
    let memstore = (select(&["cell-chunk", "cell-array"][..]), prop_oneof![1..=100u64, 100..=600u64], 1..=3usize);
    let flush_size = prop_oneof![1 => Just(1u64 << 30), 1 => 1500..=6000u64];
    let split_keys = prop::sample::subsequence((0..PRESPLIT.len()).collect::<Vec<_>>(), 1..=2);
    let files = (
        select(&[BloomType::None, BloomType::Row, BloomType::RowCol][..]),
        select(&[Compression::None, Compression::Lz4, Compression::Zstd][..]),
        select(&[512usize, 4096, 64 << 10][..]),
        any::<bool>(),
    );
    let wal_roll_size = prop_oneof![1 => Just(128u64 << 20), 1 => 1024..=4096u64];
    let max_region_size = prop_oneof![3 => Just(10u64 << 30), 1 => 1024..=8192u64];
    (versions, memstore, flush_size, split_keys, files, wal_roll_size, 2..=3usize, max_region_size).prop_map(
        move |(
            (max_versions, ttl),
            (layout, in_memory_flush_bytes, segments_limit),
            region_flush_size,
            split_keys,
            (bloom, compression, block_size, block_cache),
            wal_roll_size,
            min_files,
            max_region_size,
        )| Setup {
            policy,
            max_versions,
            ttl,
            layout,
            in_memory_flush_bytes,
            segments_limit,
            region_flush_size,
            split_keys,
            bloom,
            compression,
            block_size,
            block_cache,
            wal_roll_size,
            min_files,
            max_region_size,
        },
    )
}

fn case(policy: &'static str) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (setup(policy), vec(op(), 1..=MAX_OPS))
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// One cell ever written (and not purged by a major compaction).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelCell {
    row: Vec<u8>,
    family: Vec<u8>,
    qualifier: Vec<u8>,
    ts: u64,
    kind: CellType,
    value: Vec<u8>,
    /// The model's own write order: of two writes of one version, the later wins.
    order: u64,
    /// The store's sequence id of the write (reads return it; a cell is in a
    /// store file once its family store's flushed sequence id reaches it).
    seq: u64,
}

impl ModelCell {
    /// Whether the marker `self` hides `put` (of the same row and family).
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

    /// Two cells of one mutation with the same full key (one sequence id):
    /// the later replaces the earlier (last writer wins, as in HBase's
    /// memstore).
    fn same_key(&self, other: &ModelCell) -> bool {
        (&self.family, &self.qualifier, self.ts, self.kind) == (&other.family, &other.qualifier, other.ts, other.kind)
    }

    fn to_cell(&self) -> Cell {
        Cell {
            row: self.row.clone(),
            family: self.family.clone(),
            qualifier: self.qualifier.clone(),
            timestamp: self.ts,
            cell_type: self.kind,
            value: self.value.clone(),
            seq: self.seq,
        }
    }
}

/// Whether a read asking for `columns` wants this column (none: every column).
fn wanted(columns: &[Column], family: &[u8], qualifier: &[u8]) -> bool {
    columns.is_empty()
        || columns.iter().any(|c| c.family == family && c.qualifier.as_deref().is_none_or(|q| q == qualifier))
}

fn in_time_range(range: &TimeRange, ts: u64) -> bool {
    ts >= range.min && (ts < range.max || range.max == u64::MAX)
}

#[derive(Debug, Clone)]
struct Model {
    max_versions: [u32; 2],
    /// Per family.
    ttl_ms: [Option<u64>; 2],
    cells: Vec<ModelCell>,
    next_order: u64,
}

impl Model {
    fn new(setup: &Setup) -> Model {
        let ttl_ms = setup.ttl.map(|ttl| ttl.then_some(TTL_SECS * 1000));
        Model { max_versions: setup.max_versions, ttl_ms, cells: Vec::new(), next_order: 1 }
    }

    fn family_index(family: &[u8]) -> usize {
        FAMILIES.iter().position(|f| *f == family).expect("a family of the table")
    }

    fn family_versions(&self, family: &[u8]) -> usize {
        self.max_versions[Self::family_index(family)] as usize
    }

    /// Whether a put of `family` at `ts` has expired (by the wall clock: the
    /// timestamps are either decades old or minutes, far from any edge).
    fn expired(&self, family: &[u8], ts: u64) -> bool {
        self.ttl_ms[Self::family_index(family)].is_some_and(|ttl| ts < now_ms() - ttl)
    }

    /// Records one row mutation's cells, all under sequence id `seq`.
    fn write(&mut self, cells: Vec<ModelCell>, seq: u64) {
        let order = self.next_order;
        self.next_order += 1;
        let mut written: Vec<ModelCell> = Vec::new();
        for cell in cells {
            written.retain(|w| !w.same_key(&cell));
            written.push(ModelCell { order, seq, ..cell });
        }
        self.cells.extend(written);
    }

    /// The versions of one column of `cells` (the cells of one row and
    /// family), newest first: puts deduplicated by timestamp (the latest
    /// write wins), then the family's newest `max_versions` timestamps; with
    /// whether a marker of `cells` masks each.
    fn versions<'a>(&self, cells: &[&'a ModelCell], family: &[u8], qualifier: &[u8]) -> Vec<(&'a ModelCell, bool)> {
        let mut by_ts: BTreeMap<u64, &ModelCell> = BTreeMap::new();
        for c in cells.iter().filter(|c| c.kind == CellType::Put && c.qualifier == qualifier) {
            let newest = by_ts.entry(c.ts).or_insert(c);
            if c.order > newest.order {
                *newest = c;
            }
        }
        by_ts
            .values()
            .rev()
            .take(self.family_versions(family))
            .map(|put| (*put, cells.iter().any(|m| m.masks(put))))
            .collect()
    }

    /// The visible cells of `get.row`, by brute force.
    fn get(&self, get: &Get) -> Vec<Cell> {
        let mut out = Vec::new();
        for family in FAMILIES {
            let cells: Vec<&ModelCell> = self.cells.iter().filter(|c| c.row == get.row && c.family == family).collect();
            let qualifiers: BTreeSet<&[u8]> =
                cells.iter().filter(|c| c.kind == CellType::Put).map(|c| c.qualifier.as_slice()).collect();
            for qualifier in qualifiers {
                if !wanted(&get.columns, family, qualifier) {
                    continue;
                }
                let visible = self
                    .versions(&cells, family, qualifier)
                    .into_iter()
                    .filter(|(put, masked)| {
                        !masked && !self.expired(family, put.ts) && in_time_range(&get.time_range, put.ts)
                    })
                    .take(get.max_versions.max(1) as usize)
                    .map(|(put, _)| put.to_cell());
                out.extend(visible);
            }
        }
        out
    }

    /// The newest visible version of a column.
    fn latest(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> Option<Cell> {
        let column = Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) };
        self.get(&Get { columns: vec![column], ..Get::new(row) }).into_iter().next()
    }

    /// What a scan returns, by brute force over every row ever written.
    fn scan(&self, scan: &Scan) -> Vec<Vec<Cell>> {
        let bound = |k: &Option<Vec<u8>>| k.clone().filter(|k| !k.is_empty());
        let (start, stop) = (bound(&scan.start), bound(&scan.stop));
        let in_range = |row: &[u8]| {
            let bounded = if scan.reverse {
                start.as_deref().is_none_or(|s| row <= s) && stop.as_deref().is_none_or(|s| row > s)
            } else {
                start.as_deref().is_none_or(|s| row >= s) && stop.as_deref().is_none_or(|s| row < s)
            };
            bounded && scan.prefix.as_deref().is_none_or(|p| row.starts_with(p))
        };
        let mut rows: Vec<&[u8]> =
            self.cells.iter().map(|c| c.row.as_slice()).collect::<BTreeSet<_>>().into_iter().collect();
        if scan.reverse {
            rows.reverse();
        }
        let results = rows
            .into_iter()
            .filter(|row| in_range(row))
            .map(|row| {
                self.get(&Get {
                    row: row.to_vec(),
                    columns: scan.columns.clone(),
                    time_range: scan.time_range,
                    max_versions: scan.max_versions,
                })
            })
            .filter(|cells| !cells.is_empty())
            .take(scan.limit.map_or(usize::MAX, |l| l as usize));
        match scan.batch.filter(|&b| b > 0) {
            Some(b) => results.flat_map(|cells| cells.chunks(b).map(<[Cell]>::to_vec).collect::<Vec<_>>()).collect(),
            None => results.collect(),
        }
    }

    /// A major compaction of every family store, by the rule in the header
    /// of `visibility.rs`. It sees the cells in store files (`seq <=` the
    /// store's flushed sequence id), and of those uses as evidence only the
    /// ones every reader sees (`seq <=` its smallest read point, which held
    /// scanners pin); `store_of(row, family)` gives both. It drops the
    /// evidence markers, and every put that no reader at or above the
    /// smallest read point can see by the evidence: masked by an evidence
    /// marker, an older write of a version an evidence put rewrote, or
    /// behind the family's maximum of newer evidence versions (deleted ones
    /// count).
    fn major_compact(&mut self, store_of: impl Fn(&[u8], &[u8]) -> (u64, u64)) {
        let compacted: Vec<(bool, bool)> = self
            .cells
            .iter()
            .map(|c| {
                let (flushed_seq, smallest_read_point) = store_of(&c.row, &c.family);
                (c.seq <= flushed_seq, c.seq <= smallest_read_point)
            })
            .collect();
        let evidence = |i: usize| compacted[i].0 && compacted[i].1;
        let purge: Vec<bool> = (0..self.cells.len())
            .map(|i| {
                let c = &self.cells[i];
                if !compacted[i].0 {
                    return false; // still in a memstore
                }
                if c.kind != CellType::Put {
                    return evidence(i);
                }
                let mut newer_versions = BTreeSet::new();
                let mut dropped = false;
                for (j, e) in self.cells.iter().enumerate() {
                    if !evidence(j) || e.row != c.row || e.family != c.family {
                        continue;
                    }
                    if e.kind != CellType::Put {
                        dropped |= e.masks(c);
                    } else if e.qualifier == c.qualifier {
                        dropped |= e.ts == c.ts && e.order > c.order;
                        if e.ts > c.ts {
                            newer_versions.insert(e.ts);
                        }
                    }
                }
                dropped || newer_versions.len() >= self.family_versions(&c.family)
            })
            .collect();
        let mut i = 0;
        self.cells.retain(|_| {
            i += 1;
            !purge[i - 1]
        });
    }
}

// ---------------------------------------------------------------------------
// The harness: one store and its model
// ---------------------------------------------------------------------------

/// Where a harness's store lives.
enum Root {
    /// A local directory (on `/dev/shm` when there is one) through the
    /// fault-injecting file system: a crash cuts every file to its synced
    /// bytes and undoes unsynced directory entries (a power loss).
    Local { _dir: tempfile::TempDir, fs: Arc<FaultInjectingFs> },
    /// A directory on the mini HDFS: a crash severs the client without
    /// closing anything (a process death: unsynced bytes may be lost, the
    /// WAL's lease stays with the dead client), and the store reopens
    /// through a new client, which recovers the lease first.
    Hdfs { uri: String, fs: HdfsFs },
}

impl Root {
    fn local() -> (Root, PathBuf) {
        let dir = temp_dir();
        let path = dir.path().to_path_buf();
        (Root::Local { _dir: dir, fs: Arc::new(FaultInjectingFs::new(Arc::new(LocalFs))) }, path)
    }

    fn fs(&self) -> Arc<dyn FileSystem> {
        match self {
            Root::Local { fs, .. } => fs.clone(),
            Root::Hdfs { fs, .. } => Arc::new(fs.clone()),
        }
    }

    /// After the store was dropped without `close`: loses what a crash
    /// loses.
    fn crash(&mut self) -> store::Result<()> {
        match self {
            Root::Local { fs, .. } => fs.drop_unsynced().map(|_| ()),
            Root::Hdfs { uri, fs } => {
                *fs = HdfsFs::connect(uri)?;
                Ok(())
            }
        }
    }
}

struct Harness {
    setup: Setup,
    root: Root,
    path: PathBuf,
    store: Option<Store>,
    model: Model,
    scanners: Vec<HeldScanner>,
    /// Whether the table is enabled.
    enabled: bool,
    /// The key ranges (start, end) of the closed regions.
    closed: BTreeSet<(Vec<u8>, Vec<u8>)>,
    timestamps: Timestamps,
    /// The operation being applied (for failure messages and unique values).
    step: String,
    op_index: usize,
}

/// A scanner held open across operations, and what the model expects of it.
struct HeldScanner {
    scanner: Scanner,
    expect: ScanExpect,
    /// The step that opened it (for failure messages).
    opened: String,
}

/// What the model expects of a scanner, result by result.
struct ScanExpect {
    scan: Scan,
    /// The region its current region scanner reads, and the model as of when
    /// that region scanner opened (`None`: it has ended).
    region: Option<(RegionInfo, Model)>,
    /// Where the region it reads was looked up: the boundary of the one it
    /// read before (forward: its end key; reverse: its start key, exclusive).
    /// It reads on from there, even if that region and the one before were
    /// merged meanwhile.
    resume: Option<Vec<u8>>,
    /// The last row it returned.
    last_row: Option<Vec<u8>>,
    /// Rows returned (for the limit).
    rows: u64,
    /// The rest of the last row, cut into batches.
    pending: VecDeque<Vec<Cell>>,
}

impl ScanExpect {
    /// A scan whose first region scanner reads `region`, as of `model`.
    fn new(scan: Scan, region: RegionInfo, model: Model) -> ScanExpect {
        ScanExpect {
            scan,
            region: Some((region, model)),
            resume: None,
            last_row: None,
            rows: 0,
            pending: VecDeque::new(),
        }
    }
}

/// What a scanner must return next.
#[derive(Debug)]
enum Expected {
    Row(Vec<Cell>),
    End,
    /// `NotServingRegion` (CLOSED): it needs a closed region; then it ends.
    NotServing,
}

/// What a scanner returned.
#[derive(Debug)]
enum Got {
    Row(Vec<Cell>),
    End,
    NotServing,
    Error(#[expect(dead_code, reason = "shown in failure messages")] String),
}

impl Got {
    fn of(next: Option<store::Result<Vec<Cell>>>) -> Got {
        match next {
            None => Got::End,
            Some(Ok(cells)) => Got::Row(cells),
            Some(Err(StoreError::NotServingRegion { state: RegionState::Closed, .. })) => Got::NotServing,
            Some(Err(e)) => Got::Error(e.to_string()),
        }
    }
}

impl Expected {
    fn admits(&self, got: &Got) -> bool {
        match (self, got) {
            (Expected::Row(want), Got::Row(got)) => want == got,
            (Expected::End, Got::End) | (Expected::NotServing, Got::NotServing) => true,
            _ => false,
        }
    }
}

/// The smallest key greater than every key starting with `prefix`, if any.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut key = prefix.to_vec();
    while let Some(last) = key.pop() {
        if last < 0xFF {
            key.push(last + 1);
            return Some(key);
        }
    }
    None
}

/// Whether `result` is the refusal of a disabled table (`disabled`) or of an
/// enabled one.
fn is_disabled_error<T>(result: &store::Result<T>, disabled: bool) -> bool {
    match result {
        Err(StoreError::TableDisabled(_)) => disabled,
        Err(StoreError::TableEnabled(_)) => !disabled,
        _ => false,
    }
}

/// Whether `result` is the refusal of a closed region.
fn is_not_serving<T>(result: &store::Result<T>) -> bool {
    matches!(result, Err(StoreError::NotServingRegion { state: RegionState::Closed, .. }))
}

/// A region's key range (what identifies a closed region).
fn range(info: &RegionInfo) -> (Vec<u8>, Vec<u8>) {
    (info.start_key.clone(), info.end_key.clone())
}

/// `scan` with its prefix folded into its start and stop rows, as the
/// store's scanner does: the bounds by which it walks from region to region.
fn walk_bounds(scan: &Scan) -> Scan {
    let mut walk = scan.clone();
    if let Some(prefix) = &scan.prefix {
        if !scan.reverse {
            if walk.start.as_ref().is_none_or(|s| s < prefix) {
                walk.start = Some(prefix.clone());
            }
            if let Some(successor) = prefix_successor(prefix)
                && walk.stop.as_ref().is_none_or(|s| s.is_empty() || *s > successor)
            {
                walk.stop = Some(successor);
            }
        } else if walk.start.is_none() {
            walk.start = prefix_successor(prefix);
        }
    }
    walk
}

fn region_containing(regions: &[RegionInfo], key: &[u8]) -> RegionInfo {
    regions.iter().find(|r| r.contains(key)).expect("regions cover every key").clone()
}

/// A temporary directory, in memory when the machine has a tmpfs (fsyncs of
/// `SyncWal` writes are then cheap).
fn temp_dir() -> tempfile::TempDir {
    if std::path::Path::new(TMPFS).is_dir()
        && let Ok(dir) = tempfile::tempdir_in(TMPFS)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

impl Harness {
    fn new(setup: Setup) -> Result<Harness, TestCaseError> {
        let (root, path) = Root::local();
        Harness::new_at(setup, root, path)
    }

    fn new_at(setup: Setup, root: Root, path: PathBuf) -> Result<Harness, TestCaseError> {
        let model = Model::new(&setup);
        let mut h = Harness {
            setup,
            root,
            path,
            store: None,
            model,
            scanners: Vec::new(),
            enabled: true,
            closed: BTreeSet::new(),
            timestamps: Timestamps::new(),
            step: "create".into(),
            op_index: 0,
        };
        h.open()?;
        let store = h.store();
        let created = store.create_table(h.setup.descriptor(), &h.setup.split_keys());
        h.ok(created, "create table")?;
        Ok(h)
    }

    fn store(&self) -> Store {
        self.store.clone().expect("the store is open between operations")
    }

    fn open(&mut self) -> Result<(), TestCaseError> {
        let opened = Store::open(&self.path, self.setup.options(self.root.fs()));
        self.store = Some(self.ok(opened, "open")?);
        Ok(())
    }

    /// A store error as a test failure, with the step that hit it.
    fn ok<T>(&self, result: store::Result<T>, what: &str) -> Result<T, TestCaseError> {
        result.map_err(|e| TestCaseError::fail(format!("{}: {what} failed: {e}", self.step)))
    }

    fn region_of(&self, row: &[u8]) -> Arc<Region> {
        self.store()
            .all_regions()
            .into_iter()
            .find(|r| r.info().table == TABLE && r.info().contains(row))
            .expect("a table's regions cover every row")
    }

    /// The sequence id of the last write to the region holding `row`.
    fn last_seq(&self, row: &[u8]) -> u64 {
        self.region_of(row).mvcc().read_point()
    }

    /// What a major compaction of each region sees: its smallest read point
    /// and each family store's flushed sequence id.
    fn compaction_inputs(&self) -> Vec<(RegionInfo, u64, BTreeMap<Vec<u8>, u64>)> {
        let regions = self.store().all_regions();
        regions
            .iter()
            .filter(|r| r.info().table == TABLE)
            .map(|r| {
                let flushed = r.stores().map(|s| (s.name().as_bytes().to_vec(), s.flushed_seq())).collect();
                (r.info().clone(), r.mvcc().smallest_read_point(), flushed)
            })
            .collect()
    }

    /// The table's regions, in key order.
    fn regions(&self) -> Vec<RegionInfo> {
        self.store().table_regions(TABLE).expect("the table exists")
    }

    /// The region a scanner for `scan` reads first: the region of its start
    /// row (forward: at least the prefix; reverse: the prefix's successor,
    /// or the last region).
    fn first_region(&self, scan: &Scan) -> RegionInfo {
        let regions = self.regions();
        let start = if scan.reverse {
            match (&scan.start, &scan.prefix) {
                (None, Some(prefix)) => prefix_successor(prefix),
                (start, _) => start.clone(),
            }
            .filter(|s| !s.is_empty())
        } else {
            let start = scan.start.clone().unwrap_or_default();
            Some(scan.prefix.clone().filter(|p| *p > start).unwrap_or(start))
        };
        match start {
            Some(start) => region_containing(&regions, &start),
            None => regions.last().expect("a table has regions").clone(),
        }
    }

    /// Whether the region `info` is closed.
    fn is_closed(&self, info: &RegionInfo) -> bool {
        self.closed.contains(&range(info))
    }

    /// Whether the region holding `row` is closed.
    fn row_closed(&self, row: &[u8]) -> bool {
        self.closed.iter().any(|(start, end)| row >= start.as_slice() && (end.is_empty() || row < end.as_slice()))
    }

    /// What a scanner must return next: its pending batch pieces, else the
    /// next row of the region it reads (as of when it opened that region),
    /// else — once that region is exhausted — of the next region, looked up
    /// now from the exhausted one's boundary and read as of now from there
    /// on; unless the scan's bounds end in the exhausted region (a reverse
    /// scan's prefix too: no row below a start key at or below it has the
    /// prefix), or the next one is closed (the scan fails there).
    fn expected_next(&self, expect: &mut ScanExpect) -> Expected {
        if let Some(piece) = expect.pending.pop_front() {
            return Expected::Row(piece);
        }
        if expect.scan.limit.is_some_and(|l| expect.rows >= l) {
            return Expected::End;
        }
        let unlimited = Scan { limit: None, batch: None, ..expect.scan.clone() };
        let bounds = walk_bounds(&unlimited);
        let reverse = unlimited.reverse;
        loop {
            let Some((info, model)) = expect.region.as_ref() else { return Expected::End };
            let after_last = |row: &[u8]| {
                expect.last_row.as_deref().is_none_or(|last| if reverse { row < last } else { row > last })
                    && expect.resume.as_deref().is_none_or(|key| if reverse { row < key } else { row >= key })
            };
            let next = model
                .scan(&unlimited)
                .into_iter()
                .find(|cells| info.contains(&cells[0].row) && after_last(&cells[0].row));
            if let Some(cells) = next {
                expect.last_row = Some(cells[0].row.clone());
                expect.rows += 1;
                let size = expect.scan.batch.filter(|&b| b > 0).unwrap_or(cells.len());
                expect.pending = cells.chunks(size).map(<[Cell]>::to_vec).collect();
                return expect.pending.pop_front().map_or(Expected::End, Expected::Row);
            }
            let info = info.clone();
            let last = if reverse {
                info.start_key.is_empty()
                    || bounds.stop.as_ref().is_some_and(|s| *s >= info.start_key)
                    || bounds.prefix.as_ref().is_some_and(|p| info.start_key <= *p)
            } else {
                info.end_key.is_empty() || bounds.stop.as_ref().is_some_and(|s| !s.is_empty() && *s <= info.end_key)
            };
            if last {
                expect.region = None;
                return Expected::End;
            }
            expect.resume = Some(if reverse { info.start_key.clone() } else { info.end_key.clone() });
            let regions = self.regions();
            let next = if reverse {
                regions.iter().rev().find(|r| r.start_key < info.start_key).cloned()
            } else {
                Some(region_containing(&regions, &info.end_key))
            };
            match next {
                Some(r) if self.is_closed(&r) => {
                    expect.region = None;
                    return Expected::NotServing;
                }
                next => expect.region = next.map(|r| (r, self.model.clone())),
            }
        }
    }

    /// Reads up to `rows` results from `scanner`, each as `expect` says;
    /// false once it has ended.
    fn read_against(
        &self,
        scanner: &mut Scanner,
        expect: &mut ScanExpect,
        rows: usize,
        what: &str,
    ) -> Result<bool, TestCaseError> {
        for _ in 0..rows {
            let got = Got::of(scanner.next());
            let want = self.expected_next(expect);
            prop_assert!(
                want.admits(&got),
                "{}: result {} of {}: got {:?}, want {:?} (closed regions: {:?})",
                self.step,
                expect.rows,
                what,
                got,
                want,
                self.closed
            );
            match got {
                Got::Row(_) => {}
                Got::End => return Ok(false),
                _ => {
                    let after = scanner.next().map(|r| r.map(drop));
                    prop_assert!(after.is_none(), "{}: {} went on after failing: {:?}", self.step, what, after);
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Reads up to `rows` results from held scanner `i`; false once it is done.
    fn pull(&mut self, i: usize, rows: usize) -> Result<bool, TestCaseError> {
        let mut held = self.scanners.remove(i);
        let what = format!("the scanner opened at {}", held.opened);
        let open = self.read_against(&mut held.scanner, &mut held.expect, rows, &what)?;
        if open {
            self.scanners.insert(i, held);
        }
        Ok(open)
    }

    /// Reads every held scanner to its end.
    fn drain_scanners(&mut self) -> Result<(), TestCaseError> {
        while !self.scanners.is_empty() {
            self.pull(0, usize::MAX)?;
        }
        Ok(())
    }

    /// Reads to its end every held scanner that reads one of `regions` now.
    fn drain_scanners_of(&mut self, regions: &[RegionInfo]) -> Result<(), TestCaseError> {
        let mut i = 0;
        while i < self.scanners.len() {
            let reads = self.scanners[i].expect.region.as_ref().is_some_and(|(r, _)| regions.contains(r));
            if !reads || self.pull(i, usize::MAX)? {
                i += 1;
            }
        }
        Ok(())
    }

    /// The store's mutations for `changes` to `row`, and the cells the model
    /// records for them (resolving "the latest version" against the model
    /// before the mutation, as the store does).
    fn resolve(&self, row: &[u8], changes: &[Change]) -> (Vec<Mutation>, Vec<ModelCell>) {
        let mut mutations = Vec::new();
        let mut cells = Vec::new();
        let cell = |family: &[u8], qualifier: &[u8], ts: u64, kind: CellType, value: Vec<u8>| ModelCell {
            row: row.to_vec(),
            family: family.to_vec(),
            qualifier: qualifier.to_vec(),
            ts,
            kind,
            value,
            order: 0,
            seq: 0,
        };
        for (i, change) in changes.iter().enumerate() {
            let change = self.timestamps.apply(change);
            let f = |family: usize| FAMILIES[family % FAMILIES.len()];
            let q = |qualifier: usize| QUALIFIERS[qualifier % QUALIFIERS.len()];
            match change {
                Change::Put { family, qualifier, ts, size } => {
                    let mut value = Vec::new();
                    if size > 0 {
                        value = format!("v{}.{i}", self.op_index).into_bytes();
                        value.resize(value.len() + size - 1, b'x');
                    }
                    mutations.push(Mutation::Put {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: Some(ts),
                        value: value.clone(),
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::Put, value));
                }
                Change::Delete { family, qualifier, ts } => {
                    mutations.push(Mutation::DeleteVersion {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: ts,
                    });
                    let ts = ts.unwrap_or_else(|| {
                        self.model.latest(row, f(family), q(qualifier)).map_or(NOTHING_TO_DELETE_TS, |c| c.timestamp)
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::Delete, Vec::new()));
                }
                Change::DeleteColumn { family, qualifier, ts } => {
                    mutations.push(Mutation::DeleteColumn {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: Some(ts),
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::DeleteColumn, Vec::new()));
                }
                Change::DeleteFamily { family, ts } => {
                    mutations.push(Mutation::DeleteFamily { family: f(family).to_vec(), timestamp: Some(ts) });
                    cells.push(cell(f(family), b"", ts, CellType::DeleteFamily, Vec::new()));
                }
                Change::DeleteFamilyVersion { family, ts } => {
                    mutations.push(Mutation::DeleteFamilyVersion { family: f(family).to_vec(), timestamp: ts });
                    cells.push(cell(f(family), b"", ts, CellType::DeleteFamilyVersion, Vec::new()));
                }
                Change::DeleteRow { ts } => {
                    mutations.push(Mutation::DeleteRow { timestamp: Some(ts) });
                    for family in FAMILIES {
                        cells.push(cell(family, b"", ts, CellType::DeleteFamily, Vec::new()));
                    }
                }
                Change::PutToMissingFamily { ts } => mutations.push(Mutation::Put {
                    family: b"x".to_vec(),
                    qualifier: b"q".to_vec(),
                    timestamp: Some(ts),
                    value: b"v".to_vec(),
                }),
            }
        }
        (mutations, cells)
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        if !self.enabled {
            return self.apply_disabled(op);
        }
        let store = self.store();
        match op {
            Op::Write { row, changes } => {
                let row = ROWS[row % ROWS.len()];
                let (mutations, cells) = self.resolve(row, changes);
                let before = self.last_seq(row);
                let written = store.mutate_row(TABLE, row, &mutations, None);
                if self.row_closed(row) {
                    return self.check_not_serving(row, written, before, "mutate_row");
                }
                match refusal(changes) {
                    None => {
                        self.ok(written, "mutate_row")?;
                        self.record(row, cells, before)?;
                    }
                    Some(refusal) => self.check_refused(row, written, refusal, before)?,
                }
            }
            Op::Get { row, read } => {
                let get = Get {
                    row: GET_ROWS[row % GET_ROWS.len()].to_vec(),
                    columns: read.columns(),
                    time_range: read.time_range(self.timestamps),
                    max_versions: read.max_versions,
                };
                if self.row_closed(&get.row) {
                    let before = self.last_seq(&get.row);
                    return self.check_not_serving(&get.row, store.get(TABLE, &get), before, "get");
                }
                self.check_get(&get)?;
            }
            Op::Scan(spec) => self.check_scan(&spec.scan(self.timestamps))?,
            Op::OpenScanner(spec) => {
                if self.scanners.len() < MAX_SCANNERS {
                    let scan = spec.scan(self.timestamps);
                    let region = self.first_region(&scan);
                    let scanner = store.scan(TABLE, scan.clone());
                    if self.is_closed(&region) {
                        let refused = scanner.map(drop);
                        prop_assert!(
                            is_not_serving(&refused),
                            "{}: a scan from a closed region: {:?}",
                            self.step,
                            refused
                        );
                        return Ok(());
                    }
                    let scanner = self.ok(scanner, "scan")?;
                    self.scanners.push(HeldScanner {
                        scanner,
                        expect: ScanExpect::new(scan, region, self.model.clone()),
                        opened: self.step.clone(),
                    });
                }
            }
            Op::PullScanner { scanner, rows } => {
                if !self.scanners.is_empty() {
                    let i = scanner % self.scanners.len();
                    self.pull(i, *rows)?;
                }
            }
            Op::Increment { row, family, amount } => {
                let (row, family) = (ROWS[row % ROWS.len()], FAMILIES[family % FAMILIES.len()]);
                if self.row_closed(row) {
                    let before = self.last_seq(row);
                    let refused = store.increment(TABLE, row, family, COUNTER, *amount);
                    return self.check_not_serving(row, refused, before, "increment");
                }
                let current = match self.model.latest(row, family, COUNTER) {
                    Some(c) => i64::from_be_bytes(c.value.as_slice().try_into().expect("counters are 8 bytes")),
                    None => 0,
                };
                let before = self.last_seq(row);
                let incremented = store.increment(TABLE, row, family, COUNTER, *amount);
                let next = self.ok(incremented, "increment")?;
                prop_assert_eq!(next, current.wrapping_add(*amount), "{}: the incremented value", self.step);
                // The new cell's timestamp is the wall clock's: read it back.
                let column = Column { family: family.to_vec(), qualifier: Some(COUNTER.to_vec()) };
                let read = store.get(TABLE, &Get { columns: vec![column], ..Get::new(row) });
                let read = self.ok(read, "get of the counter")?;
                prop_assert_eq!(read.len(), 1, "{}: the counter after the increment: {:?}", self.step, read);
                prop_assert_eq!(&read[0].value, &next.to_be_bytes().to_vec(), "{}: the counter's value", self.step);
                let put = ModelCell {
                    row: row.to_vec(),
                    family: family.to_vec(),
                    qualifier: COUNTER.to_vec(),
                    ts: read[0].timestamp,
                    kind: CellType::Put,
                    value: next.to_be_bytes().to_vec(),
                    order: 0,
                    seq: 0,
                };
                self.record(row, vec![put], before)?;
            }
            Op::CheckAndMutate { row, family, qualifier, expect, changes } => {
                let row = ROWS[row % ROWS.len()];
                let (family, qualifier) = (FAMILIES[family % FAMILIES.len()], QUALIFIERS[qualifier % QUALIFIERS.len()]);
                let current = self.model.latest(row, family, qualifier).map(|c| c.value);
                let expected = match expect {
                    Expect::Current => current.clone(),
                    Expect::Absent => None,
                    Expect::Other => Some(b"other".to_vec()),
                    Expect::Empty => Some(Vec::new()),
                };
                let (mutations, cells) = self.resolve(row, changes);
                let before = self.last_seq(row);
                let result = store.check_and_mutate(TABLE, row, family, qualifier, expected.as_deref(), &mutations);
                if self.row_closed(row) {
                    return self.check_not_serving(row, result, before, "check_and_mutate");
                }
                let matches = current == expected;
                match refusal(changes).filter(|_| matches) {
                    None => {
                        let applied = self.ok(result, "check_and_mutate")?;
                        prop_assert_eq!(applied, matches, "{}: whether it applied ({:?})", self.step, current);
                        if applied {
                            self.record(row, cells, before)?;
                        } else {
                            prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
                        }
                    }
                    Some(refusal) => self.check_refused(row, result, refusal, before)?,
                }
            }
            Op::Flush => {
                let flushed = store.flush_table(TABLE);
                self.ok(flushed, "flush")?;
                self.check_memstores_empty()?;
                self.check_everything()?;
            }
            Op::Compact { major } => {
                // What the compaction sees is what is in files before it
                // (a split it triggers afterwards flushes the rest).
                let inputs = self.compaction_inputs();
                let compacted = store.compact_table(TABLE, *major);
                self.ok(compacted, "compact")?;
                if *major {
                    // A closed region's files are not compacted.
                    let closed = self.closed.clone();
                    self.model.major_compact(|row, family| {
                        let (info, srp, flushed) =
                            inputs.iter().find(|(info, _, _)| info.contains(row)).expect("regions cover every row");
                        if closed.contains(&range(info)) { (0, 0) } else { (flushed[family], *srp) }
                    });
                }
                self.check_regions()?;
                self.check_everything()?;
            }
            Op::Split { row, at } => {
                let row = ROWS[row % ROWS.len()];
                let at = at.map(|i| SPLIT_AT[i % SPLIT_AT.len()]);
                let info = self.region_of(row).info().clone();
                // A daughter that still reads its parent's files through
                // references is not split again until compacted (HBase's rule).
                let has_references = self.region_of(row).has_references();
                // Nor is a closed one.
                let closed = self.is_closed(&info);
                let split = store.split_region(TABLE, row, at);
                let split = self.ok(split, "split")?;
                if let Some(at) = at {
                    let inside = at > info.start_key.as_slice() && (info.end_key.is_empty() || at < &info.end_key[..]);
                    prop_assert_eq!(
                        split,
                        inside && !has_references && !closed,
                        "{}: whether {:?} (references: {}, closed: {}) splits at {:?}",
                        self.step,
                        info,
                        has_references,
                        closed,
                        at
                    );
                }
                if has_references || closed {
                    prop_assert!(!split, "{}: a region with references or closed split", self.step);
                }
                let regions = self.check_regions()?;
                prop_assert_eq!(
                    regions.contains(&info),
                    !split,
                    "{}: the parent {:?} is gone exactly when it split",
                    self.step,
                    info
                );
                self.check_everything()?;
            }
            Op::Merge { row, gap, swap } => self.merge(ROWS[row % ROWS.len()], *gap, *swap)?,
            Op::CloseRegion { row } => {
                let row = ROWS[row % ROWS.len()];
                let info = self.region_of(row).info().clone();
                // What a held scanner does once the region it reads is
                // closed is not specified: read those out first.
                self.drain_scanners_of(std::slice::from_ref(&info))?;
                let closed = store.close_region(&info.dir_name());
                if self.is_closed(&info) {
                    prop_assert!(is_not_serving(&closed), "{}: a close of a closed region: {:?}", self.step, closed);
                } else {
                    self.ok(closed, "close_region")?;
                    self.closed.insert(range(&info));
                    // Everything is in its files, and the WAL needs none of it.
                    let region = self.region_of(row);
                    prop_assert!(
                        region.memstore_data_size() == 0 && region.lowest_unflushed_seq().is_none(),
                        "{}: the closed region {:?} still has {} bytes in memory",
                        self.step,
                        info,
                        region.memstore_data_size()
                    );
                }
                self.check_regions()?;
                self.check_everything()?;
            }
            Op::OpenRegion { row } => {
                let regions = self.regions();
                let info = match row {
                    Some(row) => region_containing(&regions, ROWS[row % ROWS.len()]),
                    None => regions.iter().find(|r| self.is_closed(r)).unwrap_or(&regions[0]).clone(),
                };
                let opened = store.open_region(&info.dir_name());
                if self.is_closed(&info) {
                    self.ok(opened, "open_region")?;
                    self.closed.remove(&range(&info));
                } else {
                    prop_assert!(
                        matches!(opened, Err(StoreError::InvalidArgument(_))),
                        "{}: an open of a region that is not closed: {:?}",
                        self.step,
                        opened
                    );
                }
                prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after an open", self.step);
                self.check_everything()?;
            }
            Op::Disable => {
                // What a held scanner does once its table is disabled is not
                // specified: read them out first.
                self.drain_scanners()?;
                let disabled = store.disable_table(TABLE);
                self.ok(disabled, "disable")?;
                self.enabled = false;
                self.check_memstores_empty()?;
                self.check_everything()?;
            }
            Op::Enable => {
                let refused = store.enable_table(TABLE);
                prop_assert!(
                    is_disabled_error(&refused, false),
                    "{}: enable of an enabled table: {:?}",
                    self.step,
                    refused
                );
            }
            Op::Reopen => self.reopen(false)?,
            Op::Crash => {
                drop(store); // the reopened store must be the only one
                self.reopen(true)?
            }
        }
        Ok(())
    }

    /// Applies `op` while the table is disabled.
    fn apply_disabled(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let store = self.store();
        let refused = |r: store::Result<()>| is_disabled_error(&r, true);
        let ok = match op {
            Op::Write { row, changes } => {
                let row = ROWS[row % ROWS.len()];
                let before = self.last_seq(row);
                let (mutations, _) = self.resolve(row, changes);
                let ok = refused(store.mutate_row(TABLE, row, &mutations, None));
                prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
                ok
            }
            Op::Get { row, .. } => refused(store.get(TABLE, &Get::new(GET_ROWS[row % GET_ROWS.len()])).map(drop)),
            Op::Scan(spec) | Op::OpenScanner(spec) => refused(store.scan(TABLE, spec.scan(self.timestamps)).map(drop)),
            Op::Increment { row, family, amount } => {
                let (row, family) = (ROWS[row % ROWS.len()], FAMILIES[family % FAMILIES.len()]);
                refused(store.increment(TABLE, row, family, COUNTER, *amount).map(drop))
            }
            Op::CheckAndMutate { row, family, qualifier, changes, .. } => {
                let row = ROWS[row % ROWS.len()];
                let (family, qualifier) = (FAMILIES[family % FAMILIES.len()], QUALIFIERS[qualifier % QUALIFIERS.len()]);
                let (mutations, _) = self.resolve(row, changes);
                refused(store.check_and_mutate(TABLE, row, family, qualifier, None, &mutations).map(drop))
            }
            Op::Disable => refused(store.disable_table(TABLE)),
            Op::Enable => {
                let enabled = store.enable_table(TABLE);
                self.ok(enabled, "enable")?;
                self.enabled = true;
                return self.check_everything();
            }
            Op::Merge { row, .. } => {
                // The region and the next (or itself): refused for the table.
                let regions = self.regions();
                let i = regions.iter().position(|r| r.contains(ROWS[row % ROWS.len()])).expect("regions cover rows");
                let next = regions.get(i + 1).unwrap_or(&regions[i]);
                refused(store.merge_regions(&regions[i].dir_name(), &next.dir_name()).map(drop))
            }
            Op::Reopen => return self.reopen(false),
            Op::Crash => {
                drop(store); // the reopened store must be the only one
                return self.reopen(true);
            }
            Op::PullScanner { .. }
            | Op::Flush
            | Op::Compact { .. }
            | Op::Split { .. }
            | Op::CloseRegion { .. }
            | Op::OpenRegion { .. } => true,
        };
        prop_assert!(ok, "{}: not refused although the table is disabled", self.step);
        Ok(())
    }

    /// Merges the region of `row` with the one `1 + gap` places after it (or
    /// with itself if there is none) and checks the outcome: refused unless
    /// the two are adjacent, both open and both without references (each
    /// checked in key order: first whether it is open); else one region in
    /// their place, the same data.
    fn merge(&mut self, row: &[u8], gap: usize, swap: bool) -> Result<(), TestCaseError> {
        #[derive(Debug, PartialEq)]
        enum Outcome {
            Merged,
            InvalidArgument,
            NotServing,
        }
        let regions = self.regions();
        let i = regions.iter().position(|r| r.contains(row)).expect("regions cover every row");
        let low = regions[i].clone();
        let other = regions.get(i + 1 + gap).cloned();
        let expected = match &other {
            Some(high) if gap == 0 => [&low, high]
                .into_iter()
                .find_map(|r| {
                    if self.is_closed(r) {
                        Some(Outcome::NotServing)
                    } else if self.region_of(&r.start_key).has_references() {
                        Some(Outcome::InvalidArgument)
                    } else {
                        None
                    }
                })
                .unwrap_or(Outcome::Merged),
            _ => Outcome::InvalidArgument,
        };
        let other = other.unwrap_or_else(|| low.clone());
        let (a, b) = if swap { (&other, &low) } else { (&low, &other) };
        let merged = self.store().merge_regions(&a.dir_name(), &b.dir_name());
        match (&merged, &expected) {
            (Ok(name), Outcome::Merged) => {
                let after = self.check_regions()?;
                let mut want: Vec<_> = regions.iter().map(range).collect();
                want.splice(i..=i + 1, [(low.start_key.clone(), other.end_key.clone())]);
                let got: Vec<_> = after.iter().map(range).collect();
                prop_assert_eq!(got, want, "{}: the regions after merging {:?} and {:?}", self.step, low, other);
                prop_assert_eq!(&after[i].dir_name(), name, "{}: the merged region's name", self.step);
                prop_assert_eq!(&after[i].merged_from, &vec![low.id, other.id], "{}: the merged region", self.step);
            }
            (Err(StoreError::InvalidArgument(_)), Outcome::InvalidArgument) => {}
            (result, Outcome::NotServing) if is_not_serving(result) => {}
            _ => prop_assert!(
                false,
                "{}: merging {:?} and {:?}: got {:?}, want {:?} (closed regions: {:?})",
                self.step,
                a,
                b,
                merged,
                expected,
                self.closed
            ),
        }
        if expected != Outcome::Merged {
            prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after a refused merge", self.step);
        }
        self.check_everything()
    }

    /// A request to `row` in a closed region: refused with
    /// `NotServingRegion` (CLOSED), and no sequence id taken.
    fn check_not_serving<T: std::fmt::Debug>(
        &self,
        row: &[u8],
        result: store::Result<T>,
        before: u64,
        what: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert!(is_not_serving(&result), "{}: {} in a closed region: {:?}", self.step, what, result);
        prop_assert_eq!(self.last_seq(row), before, "{}: a refused request took a seq", self.step);
        Ok(())
    }

    /// Records a row mutation the store acknowledged, checking that it took
    /// exactly the next sequence id of its region.
    fn record(&mut self, row: &[u8], cells: Vec<ModelCell>, before: u64) -> Result<(), TestCaseError> {
        let seq = self.last_seq(row);
        prop_assert_eq!(seq, before + 1, "{}: a row mutation takes one sequence id", self.step);
        self.model.write(cells, seq);
        Ok(())
    }

    /// A mutation the store had to refuse as a whole: the right error, and
    /// no sequence id taken (the model records nothing).
    fn check_refused<T: std::fmt::Debug>(
        &self,
        row: &[u8],
        result: store::Result<T>,
        refusal: Refusal,
        before: u64,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            result.as_ref().is_err_and(|e| refusal.matches(e)),
            "{}: expected {:?}, got {:?}",
            self.step,
            refusal,
            result
        );
        prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
        Ok(())
    }

    fn check_get(&self, get: &Get) -> Result<(), TestCaseError> {
        let got = self.store().get(TABLE, get);
        let got = self.ok(got, "get")?;
        let want = self.model.get(get);
        prop_assert_eq!(got, want, "{}: {:?}", self.step, get);
        Ok(())
    }

    fn check_scan(&self, scan: &Scan) -> Result<(), TestCaseError> {
        let scanner = self.store().scan(TABLE, scan.clone());
        if !self.closed.is_empty() {
            // Where it fails depends on the regions it walks.
            let first = self.first_region(scan);
            if self.is_closed(&first) {
                let refused = scanner.map(drop);
                prop_assert!(is_not_serving(&refused), "{}: a scan from a closed region: {:?}", self.step, refused);
                return Ok(());
            }
            let mut expect = ScanExpect::new(scan.clone(), first, self.model.clone());
            let mut scanner = self.ok(scanner, "scan")?;
            self.read_against(&mut scanner, &mut expect, usize::MAX, &format!("{scan:?}"))?;
            return Ok(());
        }
        let got: store::Result<Vec<Vec<Cell>>> = self.ok(scanner, "scan")?.collect();
        let got = self.ok(got, "scan")?;
        let want = self.model.scan(scan);
        prop_assert_eq!(got, want, "{}: {:?}", self.step, scan);
        Ok(())
    }

    /// The whole table, forward and reverse (or, while it is disabled, that
    /// it refuses to serve).
    fn check_everything(&self) -> Result<(), TestCaseError> {
        let enabled = self.store().is_table_enabled(TABLE);
        prop_assert_eq!(
            self.ok(enabled, "is_table_enabled")?,
            self.enabled,
            "{}: whether the table is enabled",
            self.step
        );
        if !self.enabled {
            let scan = self.store().scan(TABLE, Scan::default()).map(drop);
            prop_assert!(is_disabled_error(&scan, true), "{}: a scan of a disabled table: {:?}", self.step, scan);
            return Ok(());
        }
        let forward = ScanSpec::everything(false).scan(self.timestamps);
        let reverse = ScanSpec::everything(true).scan(self.timestamps);
        self.check_scan(&forward)?;
        self.check_scan(&reverse)?;
        // Those end at the first closed region: each run of open regions
        // from its first row, and down from its last.
        let regions = self.regions();
        for run in regions.split(|r| self.is_closed(r)).filter(|run| !run.is_empty()) {
            if run.len() == regions.len() {
                break;
            }
            let (start, end) = (&run[0].start_key, &run[run.len() - 1].end_key);
            self.check_scan(&Scan { start: Some(start.clone()), ..forward.clone() })?;
            let in_run = |row: &&Vec<u8>| *row >= start && (end.is_empty() || *row < end);
            if let Some(last) = self.model.cells.iter().map(|c| &c.row).filter(in_run).max() {
                self.check_scan(&Scan { start: Some(last.clone()), ..reverse.clone() })?;
            }
        }
        Ok(())
    }

    /// The regions are sorted and cover the key space without overlap.
    fn check_regions(&self) -> Result<Vec<RegionInfo>, TestCaseError> {
        let regions = self.store().table_regions(TABLE);
        let regions = self.ok(regions, "table_regions")?;
        prop_assert!(!regions.is_empty(), "{}: no regions", self.step);
        prop_assert!(regions[0].start_key.is_empty(), "{}: first region {:?}", self.step, regions[0]);
        let last = regions.last().expect("not empty");
        prop_assert!(last.end_key.is_empty(), "{}: last region {:?}", self.step, last);
        for w in regions.windows(2) {
            prop_assert!(
                w[0].end_key == w[1].start_key && w[0].start_key < w[0].end_key,
                "{}: regions {:?} and {:?}",
                self.step,
                w[0],
                w[1]
            );
        }
        // Exactly the closed ones are CLOSED (a closed region is never
        // split or merged: its range stays).
        let states = self.store().region_states(TABLE);
        let states = self.ok(states, "region_states")?;
        let listed: Vec<RegionInfo> = states.iter().map(|(info, _)| info.clone()).collect();
        prop_assert_eq!(&listed, &regions, "{}: the regions of region_states", self.step);
        for (info, state) in &states {
            let want = if self.is_closed(info) { RegionState::Closed } else { RegionState::Open };
            prop_assert_eq!(*state, want, "{}: the state of {:?}", self.step, info);
        }
        for closed in &self.closed {
            prop_assert!(
                regions.iter().any(|r| range(r) == *closed),
                "{}: the closed region {:?} is gone: {:?}",
                self.step,
                closed,
                regions
            );
        }
        Ok(regions)
    }

    fn check_memstores_empty(&self) -> Result<(), TestCaseError> {
        for r in self.store().all_regions() {
            prop_assert!(
                r.memstore_data_size() == 0 && r.lowest_unflushed_seq().is_none(),
                "{}: region {:?} still has {} bytes in memory",
                self.step,
                r.info(),
                r.memstore_data_size()
            );
        }
        Ok(())
    }

    /// Closes the store (or drops it without closing and loses whatever was
    /// not synced: a crash) and opens it again; nothing may change.
    fn reopen(&mut self, crash: bool) -> Result<(), TestCaseError> {
        self.drain_scanners()?;
        let regions = self.check_regions()?;
        let store = self.store.take().expect("the store is open");
        if crash {
            if let Root::Hdfs { fs, .. } = &self.root {
                fs.sever();
            }
            drop(store);
            let lost = self.root.crash();
            self.ok(lost, "crash")?;
        } else {
            let closed = store.close();
            self.ok(closed, "close")?;
            let refused = store.get(TABLE, &Get::new(ROWS[0]));
            prop_assert!(matches!(refused, Err(StoreError::Closed)), "{}: a get after close: {:?}", self.step, refused);
            drop(store);
        }
        self.open()?;
        prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after reopening", self.step);
        self.check_memstores_empty()?;
        self.check_everything()
    }

    /// Ends the sequence: a full check, close, reopen, and a full check;
    /// then every closed region opened and a full check.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        self.step = "finish".into();
        if !self.enabled {
            self.apply(&Op::Enable)?;
        }
        self.check_everything()?;
        self.reopen(false)?;
        while !self.closed.is_empty() {
            self.apply(&Op::OpenRegion { row: None })?;
        }
        let closed = self.store().close();
        self.ok(closed, "the last close")
    }
}

/// Runs one sequence against a fresh store and its model.
fn run(setup: &Setup, ops: &[Op]) -> Result<(), TestCaseError> {
    run_checked(setup, ops, |_, _| Ok(()))
}

/// `run`, calling `check` with each operation's index after it.
fn run_checked(
    setup: &Setup,
    ops: &[Op],
    check: impl FnMut(usize, &Harness) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let (root, path) = Root::local();
    run_at(setup, ops, root, path, check)
}

/// `run_checked` with the store at `path` of `root`.
fn run_at(
    setup: &Setup,
    ops: &[Op],
    root: Root,
    path: PathBuf,
    mut check: impl FnMut(usize, &Harness) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut h = Harness::new_at(setup.clone(), root, path)?;
    for (i, op) in ops.iter().enumerate() {
        h.op_index = i;
        h.step = format!("op {i} {op:?}");
        h.apply(op)?;
        check(i, &h)?;
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
// The property tests: one per memstore policy.
// ---------------------------------------------------------------------------

/// `CASES` per test (`DISK_CASES` without a tmpfs), unless `PROPTEST_CASES`
/// asks for another number (a longer soak). Failures are kept as explicit
/// regression tests below, not in files.
fn config() -> ProptestConfig {
    let default = if std::path::Path::new(TMPFS).is_dir() { CASES } else { DISK_CASES };
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn none_matches_model((setup, ops) in case("none")) {
        run(&setup, &ops)?;
    }

    #[test]
    fn basic_matches_model((setup, ops) in case("basic")) {
        run(&setup, &ops)?;
    }

    #[test]
    fn eager_matches_model((setup, ops) in case("eager")) {
        run(&setup, &ops)?;
    }

    #[test]
    fn adaptive_matches_model((setup, ops) in case("adaptive:0.5")) {
        run(&setup, &ops)?;
    }
}

/// The model test with the store on a real HDFS: a MiniDFSCluster with 3
/// DataNodes (`hdfs/minicluster`), `HDFS_CASES` sequences of every policy
/// (or `PROPTEST_CASES`), each in a directory of its own. A crash there is a
/// process death (see [`Root::Hdfs`]), not a power loss: HDFS has no
/// counterpart of the fault file system's cut to the synced bytes, but a
/// severed client loses whatever it had not `hsync`ed, and the reopen must
/// recover the WAL's lease from the dead client before it replays.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test model -- --ignored"]
fn the_model_holds_with_the_store_on_hdfs() {
    use proptest::test_runner::TestRunner;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let cluster = mini_hdfs::MiniHdfs::start();
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(HDFS_CASES);
    // Shrinking a failure costs HDFS round trips too: bounded.
    let config =
        ProptestConfig { cases, failure_persistence: None, max_shrink_iters: 256, ..ProptestConfig::default() };
    let strategy = select(&["none", "basic", "eager", "adaptive:0.5"][..]).prop_flat_map(case);
    let next = AtomicUsize::new(0);
    let crashes = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let result = TestRunner::new(config).run(&strategy, |(setup, ops)| {
        let path = PathBuf::from(format!("/model/case-{}", next.fetch_add(1, Ordering::Relaxed)));
        crashes.fetch_add(ops.iter().filter(|op| matches!(op, Op::Crash)).count(), Ordering::Relaxed);
        let fs = HdfsFs::connect(&cluster.uri).map_err(|e| TestCaseError::fail(format!("connect: {e}")))?;
        let outcome = run_at(&setup, &ops, Root::Hdfs { uri: cluster.uri.clone(), fs }, path.clone(), |_, _| Ok(()));
        // Through a new client: a crash severed the first.
        if let Ok(fs) = HdfsFs::connect(&cluster.uri) {
            let _ = fs.remove_dir_all(&path);
        }
        outcome
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (sequences, crashes) = (next.load(Ordering::Relaxed), crashes.load(Ordering::Relaxed));
    eprintln!("{sequences} sequences on HDFS with {crashes} crashes in {:?}", started.elapsed());
    assert!(crashes > 0, "some sequences crashed the store");
}

// ---------------------------------------------------------------------------
// Explicit sequences
// ---------------------------------------------------------------------------

fn put(family: usize, qualifier: usize, ts: u64) -> Change {
    Change::Put { family, qualifier, ts, size: 1 }
}

fn write(row: usize, changes: &[Change]) -> Op {
    Op::Write { row, changes: changes.to_vec() }
}

fn get_all(row: usize) -> Op {
    Op::Get { row, read: ReadSpec::all() }
}

/// A hand-written sequence touching every operation, so that the harness
/// itself is exercised even with `PROPTEST_CASES=0`.
#[test]
fn every_operation_once() {
    let ops = vec![
        write(0, &[put(0, 1, 5), put(0, 1, 3), put(1, 0, 2), put(0, 0, 4)]),
        write(3, &[put(0, 2, 6), put(1, 2, 1)]),
        Op::Flush,
        write(
            0,
            &[
                Change::DeleteColumn { family: 0, qualifier: 1, ts: 4 },
                Change::Delete { family: 1, qualifier: 0, ts: Some(2) },
            ],
        ),
        write(0, &[put(0, 1, 2), Change::Delete { family: 0, qualifier: 0, ts: None }]),
        get_all(0),
        Op::Increment { row: 5, family: 1, amount: 3 },
        Op::Increment { row: 5, family: 1, amount: -1 },
        Op::CheckAndMutate { row: 3, family: 0, qualifier: 2, expect: Expect::Current, changes: vec![put(0, 2, 6)] },
        Op::CheckAndMutate { row: 3, family: 0, qualifier: 2, expect: Expect::Other, changes: vec![put(0, 2, 1)] },
        Op::CheckAndMutate { row: 2, family: 1, qualifier: 1, expect: Expect::Empty, changes: vec![put(1, 1, 1)] },
        Op::CheckAndMutate { row: 2, family: 1, qualifier: 1, expect: Expect::Absent, changes: vec![put(1, 1, 1)] },
        Op::OpenScanner(ScanSpec { batch: Some(2), ..ScanSpec::everything(false) }),
        write(2, &[put(0, 0, 0), Change::PutToMissingFamily { ts: 1 }]),
        write(2, &[Change::Put { family: 0, qualifier: 1, ts: 2, size: OVERSIZED }, put(1, 0, 2)]),
        write(2, &[Change::Put { family: 0, qualifier: 1, ts: 2, size: 3000 }, put(1, 0, 2)]),
        Op::PullScanner { scanner: 0, rows: 2 },
        Op::Compact { major: false },
        Op::Flush,
        Op::Compact { major: true },
        write(0, &[put(0, 1, 1)]),
        get_all(0),
        Op::OpenScanner(ScanSpec { reverse: true, ..ScanSpec::everything(false) }),
        Op::Split { row: 1, at: Some(3) },
        Op::PullScanner { scanner: 1, rows: 3 },
        Op::Split { row: 1, at: Some(4) },
        Op::Split { row: 7, at: None },
        write(4, &[Change::DeleteFamily { family: 0, ts: 3 }, Change::DeleteFamilyVersion { family: 1, ts: 5 }]),
        write(4, &[put(0, 0, 3), put(0, 0, 4), put(1, 1, 5), Change::DeleteRow { ts: 1 }]),
        Op::Scan(ScanSpec { prefix: Some(1), reverse: true, batch: Some(1), ..ScanSpec::everything(false) }),
        Op::Scan(ScanSpec { start: Some(3), stop: Some(9), limit: Some(2), ..ScanSpec::everything(false) }),
        Op::Merge { row: 1, gap: 0, swap: true },
        Op::CloseRegion { row: 0 },
        get_all(0),
        Op::Scan(ScanSpec::everything(true)),
        Op::Disable,
        get_all(4),
        Op::Disable,
        Op::Merge { row: 0, gap: 0, swap: false },
        Op::Crash,
        Op::Enable,
        Op::Enable,
        Op::Crash,
        Op::OpenRegion { row: None },
        write(6, &[put(1, 1, 6)]),
        Op::Reopen,
        Op::Compact { major: true },
        Op::Merge { row: 0, gap: 0, swap: false },
        Op::Merge { row: 0, gap: 1, swap: false },
        get_all(4),
    ];
    for policy in ["none", "basic", "eager", "adaptive:0.5"] {
        for max_versions in [[1, 3], [3, 1]] {
            replay(Setup::fixed(policy, max_versions), &ops);
            let tiny = Setup { region_flush_size: 1500, max_region_size: 2048, ..Setup::fixed(policy, max_versions) };
            replay(tiny, &ops);
        }
    }
}

/// A split merged back once compacted, and a region closed across a crash:
/// every request to it refused, then opened again; then everything merged
/// into one region.
#[test]
fn a_split_merged_back_and_a_closed_region_across_a_crash() {
    let ops = vec![
        write(0, &[put(0, 1, 5)]),
        write(3, &[put(0, 1, 5), put(1, 0, 4)]),
        write(4, &[put(0, 0, 3)]),
        write(6, &[put(1, 2, 6)]),
        // 4: [, b) [b, bb) [bb, ); the daughters have references.
        Op::Split { row: 4, at: Some(8) },
        Op::Merge { row: 3, gap: 0, swap: false },
        write(5, &[put(0, 1, 6)]),
        Op::Compact { major: false },
        // 8: [, b) [b, ).
        Op::Merge { row: 3, gap: 0, swap: true },
        get_all(4),
        // 10: [, b) closed.
        Op::CloseRegion { row: 1 },
        write(0, &[put(0, 1, 6)]),
        Op::Increment { row: 2, family: 0, amount: 1 },
        Op::CheckAndMutate { row: 0, family: 0, qualifier: 1, expect: Expect::Current, changes: vec![put(0, 1, 2)] },
        get_all(0),
        Op::Scan(ScanSpec::everything(false)),
        Op::Scan(ScanSpec::everything(true)),
        Op::OpenScanner(ScanSpec::everything(true)),
        Op::PullScanner { scanner: 0, rows: 5 },
        Op::Split { row: 0, at: Some(1) },
        Op::Merge { row: 0, gap: 0, swap: false },
        Op::CloseRegion { row: 0 },
        Op::OpenRegion { row: Some(3) },
        write(6, &[put(0, 0, 4)]),
        // 24
        Op::Crash,
        write(1, &[put(0, 0, 1)]),
        Op::Reopen,
        // 27
        Op::OpenRegion { row: Some(0) },
        get_all(0),
        get_all(1),
        write(1, &[put(0, 0, 1)]),
        // 31: [b, ) still reads its parents' files through references.
        Op::Merge { row: 0, gap: 0, swap: false },
        Op::Compact { major: true },
        Op::Merge { row: 7, gap: 0, swap: false },
        // 34: one region.
        Op::Merge { row: 0, gap: 0, swap: true },
        Op::Crash,
        Op::Scan(ScanSpec::everything(false)),
        get_all(3),
    ];
    /// Key ranges, (start, end).
    type Ranges = Vec<(Vec<u8>, Vec<u8>)>;
    let key = |k: &str| k.as_bytes().to_vec();
    let ranges = |r: &[(&str, &str)]| -> Ranges { r.iter().map(|(s, e)| (key(s), key(e))).collect() };
    // After the operation of each index: the regions, and the closed ones.
    let checkpoints: BTreeMap<usize, (Ranges, Ranges)> = [
        (4, (ranges(&[("", "b"), ("b", "bb"), ("bb", "")]), vec![])),
        (5, (ranges(&[("", "b"), ("b", "bb"), ("bb", "")]), vec![])),
        (8, (ranges(&[("", "b"), ("b", "")]), vec![])),
        (10, (ranges(&[("", "b"), ("b", "")]), ranges(&[("", "b")]))),
        (24, (ranges(&[("", "b"), ("b", "")]), ranges(&[("", "b")]))),
        (27, (ranges(&[("", "b"), ("b", "")]), vec![])),
        (31, (ranges(&[("", "b"), ("b", "")]), vec![])),
        (34, (ranges(&[("", "")]), vec![])),
    ]
    .into_iter()
    .collect();
    for policy in ["none", "basic", "eager", "adaptive:0.5"] {
        let setup = Setup::fixed(policy, [1, 3]);
        let checked = run_checked(&setup, &ops, |i, h| {
            if let Some((regions, closed)) = checkpoints.get(&i) {
                let got: Vec<_> = h.regions().iter().map(range).collect();
                prop_assert_eq!(&got, regions, "after op {}: the regions", i);
                let got: Vec<_> = h.closed.iter().cloned().collect();
                prop_assert_eq!(&got, closed, "after op {}: the closed regions", i);
            }
            Ok(())
        });
        if let Err(e) = checked {
            panic!("{setup:?}\n{ops:#?}\n{e}");
        }
    }
}

/// Scanners held across merges: each reads the region it is in to its end
/// (as of when it opened it), then resumes from that region's boundary in
/// the merged region — not from the scan's start, which would return rows
/// again, and without rows written meanwhile on its own side of the
/// boundary. Also a region split under a scanner, one of its daughters then
/// merged with the next region.
#[test]
fn held_scanners_resume_at_region_boundaries_across_merges() {
    let across_a_merge = vec![
        write(0, &[put(0, 1, 5)]),
        write(3, &[put(0, 1, 5)]),
        write(7, &[put(1, 0, 4)]),
        // [, b) and [b, ): one scanner in each.
        Op::OpenScanner(ScanSpec::everything(false)),
        Op::OpenScanner(ScanSpec::everything(true)),
        Op::PullScanner { scanner: 0, rows: 1 },
        Op::PullScanner { scanner: 1, rows: 1 },
        Op::Merge { row: 0, gap: 0, swap: true },
        // Each on its own side of "b", so neither scanner returns it.
        write(1, &[put(0, 0, 3)]),
        write(5, &[put(1, 1, 3)]),
        Op::PullScanner { scanner: 0, rows: 10 },
        Op::PullScanner { scanner: 0, rows: 10 },
    ];
    let a_daughter_merged = vec![
        write(0, &[put(0, 1, 5)]),
        write(2, &[put(0, 1, 5)]),
        write(7, &[put(1, 0, 4)]),
        Op::OpenScanner(ScanSpec::everything(false)),
        Op::PullScanner { scanner: 0, rows: 1 },
        // [, b) split at "ab" under the scanner, [ab, b) merged with [b, ).
        Op::Split { row: 0, at: Some(4) },
        Op::Compact { major: false },
        Op::Merge { row: 2, gap: 0, swap: false },
        // Below "b": the scanner read its region before; above: it reads it.
        write(2, &[put(0, 1, 6)]),
        write(4, &[put(0, 1, 6)]),
        Op::PullScanner { scanner: 0, rows: 10 },
    ];
    for policy in ["none", "basic", "eager", "adaptive:0.5"] {
        replay(Setup::fixed(policy, [3, 1]), &across_a_merge);
        replay(Setup::fixed(policy, [3, 1]), &a_daughter_merged);
    }
}

/// Found by the model test once it merged regions: a scanner whose current
/// region is merged away reads that region to its end, then looks the next
/// region up from its boundary — which finds the merged region, holding the
/// rows it has just read — and read that from the scan's start, returning
/// them again. (After a split the same lookup finds the region past the
/// parent.) It now resumes from the boundary.
#[test]
fn regression_a_scanner_does_not_repeat_rows_of_a_region_merged_under_it() {
    let setup = Setup::fixed("basic", [1, 1]);
    for reverse in [false, true] {
        let dir = temp_dir();
        let store = Store::open(dir.path(), setup.options(Arc::new(LocalFs))).expect("open");
        store.create_table(setup.descriptor(), &[b"c".to_vec()]).expect("create");
        for row in [b"a", b"d"] {
            store.put(TABLE, row, &[(b"f", b"q", b"v")], None).expect("put");
        }
        let mut scanner = store.scan(TABLE, Scan { reverse, ..Scan::default() }).expect("scan");
        let first = scanner.next().expect("a row").expect("read")[0].row.clone();
        let regions = store.table_regions(TABLE).expect("regions");
        store.merge_regions(&regions[0].dir_name(), &regions[1].dir_name()).expect("merge");
        let rest: Vec<Vec<u8>> = scanner.map(|r| r.expect("read")[0].row.clone()).collect();
        let want: Vec<Vec<u8>> = vec![if reverse { b"a".to_vec() } else { b"d".to_vec() }];
        assert_eq!(
            rest,
            want,
            "reverse: {reverse}: the rows after {:?}, once its region and the next were merged",
            String::from_utf8_lossy(&first)
        );
        store.close().expect("close");
    }
}

/// Found by the model test once it closed regions: a reverse scan with a
/// prefix (and no stop row) walked down past the last region that can hold
/// a row with the prefix, until it met a row below the prefix — so it
/// failed with `NotServingRegion` if a closed region came first, although
/// no row of its range is there (and with no rows below, it opened every
/// region down to the table's start). A forward prefix scan stops at the
/// prefix's successor; a reverse one now stops at the first region starting
/// at or below the prefix.
#[test]
fn regression_a_reverse_prefix_scan_stops_at_its_prefix() {
    let setup = Setup::fixed("basic", [1, 1]);
    let dir = temp_dir();
    let store = Store::open(dir.path(), setup.options(Arc::new(LocalFs))).expect("open");
    store.create_table(setup.descriptor(), &[b"b".to_vec(), b"c".to_vec()]).expect("create");
    store.put(TABLE, b"ba", &[(b"f", b"q", b"v")], None).expect("put");
    let regions = store.table_regions(TABLE).expect("regions");
    store.close_region(&regions[0].dir_name()).expect("close [, b)");
    for reverse in [false, true] {
        let scan = Scan { prefix: Some(b"b".to_vec()), reverse, ..Scan::default() };
        let rows: Vec<store::Result<Vec<u8>>> =
            store.scan(TABLE, scan).expect("scan").map(|r| r.map(|cells| cells[0].row.clone())).collect();
        let rows: Vec<Vec<u8>> = rows.into_iter().collect::<store::Result<_>>().unwrap_or_else(|e| {
            panic!("reverse: {reverse}: a scan of prefix \"b\" failed although only [, b) is closed: {e}")
        });
        assert_eq!(rows, [b"ba".to_vec()], "reverse: {reverse}");
    }
    store.close().expect("close");
}

/// HBase's quirk, through the whole store: a major compaction purges a
/// delete marker together with what it masks, so a put written afterwards
/// at an older timestamp is visible; before the compaction it is masked.
#[test]
fn a_major_compaction_unmasks_later_puts_at_older_timestamps() {
    let ops = vec![
        write(0, &[put(0, 1, 5)]),
        write(0, &[Change::DeleteColumn { family: 0, qualifier: 1, ts: 4 }]),
        write(0, &[put(0, 1, 3)]),
        get_all(0),
        Op::Flush,
        Op::Compact { major: true },
        write(0, &[put(0, 1, 2)]),
        get_all(0),
    ];
    for policy in ["none", "basic", "eager", "adaptive:0.5"] {
        replay(Setup::fixed(policy, [3, 3]), &ops);
    }
    // And by hand: before the purge ts 3 is masked; after it ts 2 shows.
    let setup = Setup::fixed("basic", [3, 3]);
    let mut h = Harness::new(setup).expect("a store");
    for (i, op) in ops.iter().enumerate() {
        h.op_index = i;
        h.apply(op).expect("the sequence matches the model");
    }
    let cells = h.store().get(TABLE, &Get { max_versions: 3, ..Get::new(ROWS[0]) }).expect("get");
    let ts: Vec<u64> = cells.iter().map(|c| c.timestamp).collect();
    let want = [h.timestamps.map(5), h.timestamps.map(2)];
    assert_eq!(ts, want, "ts 3 was purged with the marker; ts 2 came after it");
}

/// Found while the memstore moved to "last writer wins" for cells with equal
/// full keys (the model then kept the first): two puts of one version in one
/// mutation share the mutation's sequence id, so the later replaces the
/// earlier — in the memstore, in store files, and after WAL replay.
#[test]
fn regression_one_version_twice_in_one_mutation() {
    let twice = |size_first, size_second| {
        write(
            0,
            &[
                Change::Put { family: 1, qualifier: 0, ts: 3, size: size_first },
                Change::Put { family: 1, qualifier: 0, ts: 3, size: size_second },
            ],
        )
    };
    // As shrunk, then checked again from files and after a crash.
    let ops = vec![twice(0, 1), get_all(0), Op::Flush, get_all(0), twice(1, 0), Op::Crash, get_all(0)];
    for policy in ["none", "basic", "eager", "adaptive:0.5"] {
        let setup = Setup {
            in_memory_flush_bytes: 1,
            segments_limit: 1,
            split_keys: vec![0],
            bloom: BloomType::None,
            block_cache: false,
            wal_roll_size: 128 << 20,
            ..Setup::fixed(policy, [1, 1])
        };
        replay(setup, &ops);
    }
}

// ---------------------------------------------------------------------------
// Concurrent writers, readers and maintenance
// ---------------------------------------------------------------------------
//
// `CONC_WRITERS` threads write batches (`mutate_rows`) and single rows
// (`mutate_row`), each to its own rows, so that a per-row history kept by the
// writer is exact; a reader thread gets and scans rows all the while; a
// maintenance thread flushes, compacts (minor and major), rolls the WAL and
// splits regions as fast as it can, and the store's own background flushes
// and compactions run too (a tiny flush size, tiny WAL files, few of them).
//
// Every write of a row puts its four columns (two per family) in one row
// mutation, at the timestamp and with the value stamp of the write, or
// deletes the row. Each write takes a fresh stamp from its writer, so a
// row's stamps grow in the order of its writes. A writer records a write in
// the row's history before handing it to the store and publishes its stamp
// as acknowledged once the call returned. Some batches repeat a row (a
// second mini-batch) and some carry a row the store must refuse (puts around
// a put to a family the table does not have): the call must fail with that
// refusal, the other rows must be applied, and the refused row must never
// show.
//
// What every read must see, row by row: the four columns of one write with
// one stamp, or nothing (a row delete, or never written); that write (or
// delete) in the row's history, no older than the last write acknowledged
// before the read started, and no older than what this reader saw of the
// row before (reads never go back in time). At the end, and after a clean
// close and reopen, every row holds its last write.
//
// `CONCURRENT_SEED=<n>` replays a run's choices (not its interleaving).

const CONC_WRITERS: usize = 3;
const CONC_ROWS_PER_WRITER: usize = 48;
const CONC_OPS_PER_WRITER: usize = 2500;
/// Rounds of the workload, each ended by a check, a close and a reopen.
const CONC_ROUNDS: u64 = 3;
/// The regions the maintenance thread splits the table into, at most.
const CONC_MAX_REGIONS: usize = 24;
/// The four columns of a row.
const CONC_COLUMNS: [(&[u8], &[u8]); 4] = [(b"f", b"x"), (b"f", b"y"), (b"g", b"x"), (b"g", b"y")];
const CONC_MISSING_FAMILY: &str = "nosuch";
/// How long the whole workload may take before the test calls it hung.
const CONC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Row `i` of writer `w`: the writers' rows interleave across the table.
fn conc_row(w: usize, i: usize) -> Vec<u8> {
    format!("r{i:03}w{w}").into_bytes()
}

fn conc_value(row: &[u8], stamp: u64, column: usize) -> Vec<u8> {
    let mut v = format!("{}|{stamp}|{column}|", String::from_utf8_lossy(row)).into_bytes();
    v.resize(v.len() + (stamp as usize * 37 + column * 11) % 160, b'p');
    v
}

fn conc_options(fs: Arc<dyn FileSystem>) -> StoreOptions {
    StoreOptions {
        fs,
        region_flush_size: 24 << 10,
        memory_budget: 64 << 20,
        wal: WalOptions { roll_size: 8 << 10, ..WalOptions::default() },
        max_logs: 4,
        compaction: CompactionConfig { min_files: 3, ..CompactionConfig::default() },
        background: true,
        ..StoreOptions::default()
    }
}

fn conc_descriptor() -> TableDescriptor {
    let family = |name: &str, policy: &str| FamilyDescriptor {
        memstore_policy: policy.to_string(),
        inmemory_flush_share: Some(0.1),
        block_size: 1024,
        ..FamilyDescriptor::new(name)
    };
    TableDescriptor {
        durability: Durability::SyncWal,
        ..TableDescriptor::new(TABLE, vec![family("f", "basic"), family("g", "eager")])
    }
}

/// One write of a row: `true` puts the four columns, `false` deletes the row.
type ConcWrite = (u64, bool);

/// A row, shared by its writer and the reader.
struct ConcRow {
    key: Vec<u8>,
    /// The stamp of the row's last acknowledged write (0: none yet).
    acked: std::sync::atomic::AtomicU64,
    /// Every write handed to the store, in stamp order.
    history: std::sync::Mutex<Vec<ConcWrite>>,
}

struct ConcShared {
    store: Store,
    /// Writer `w`'s row `i` is `rows[w * CONC_ROWS_PER_WRITER + i]`.
    rows: Vec<ConcRow>,
    /// Set by the first thread that fails, and once the writers are done.
    stop: std::sync::atomic::AtomicBool,
}

impl ConcShared {
    fn stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Acquire)
    }

    fn index_of(&self, key: &[u8]) -> Option<usize> {
        let text = std::str::from_utf8(key).ok()?;
        let (i, w) = text.strip_prefix('r')?.split_once('w')?;
        let (i, w): (usize, usize) = (i.parse().ok()?, w.parse().ok()?);
        (i < CONC_ROWS_PER_WRITER && w < CONC_WRITERS && conc_row(w, i) == key).then_some(w * CONC_ROWS_PER_WRITER + i)
    }
}

/// The stamp of the write a row's cells come from (`None`: no cells); an
/// error unless they are exactly the four columns of one write.
fn conc_parse(row: &[u8], cells: &[Cell]) -> Result<Option<u64>, String> {
    let Some(first) = cells.first() else { return Ok(None) };
    let stamp = first.timestamp;
    let whole = cells.len() == CONC_COLUMNS.len()
        && cells.iter().zip(CONC_COLUMNS.iter().enumerate()).all(|(c, (i, (family, qualifier)))| {
            c.row == row
                && c.family == *family
                && c.qualifier == *qualifier
                && c.timestamp == stamp
                && c.cell_type == CellType::Put
                && c.value == conc_value(row, stamp, i)
        });
    if !whole {
        let seen: Vec<String> = cells
            .iter()
            .map(|c| {
                format!(
                    "{}:{}@{} {:?}",
                    String::from_utf8_lossy(&c.family),
                    String::from_utf8_lossy(&c.qualifier),
                    c.timestamp,
                    String::from_utf8_lossy(&c.value[..c.value.len().min(24)])
                )
            })
            .collect();
        return Err(format!("row {} is not the whole of one write: {seen:?}", String::from_utf8_lossy(row)));
    }
    Ok(Some(stamp))
}

/// Checks one read of row `index` that saw `observed`: `acked_before` was
/// the row's acknowledged stamp when the read started, `*seen` the stamp of
/// the state this reader saw before (0: never written); on success `*seen`
/// becomes the stamp of what it saw now (for an empty row, the oldest delete
/// that explains it). Returns whether the read saw a write not yet
/// acknowledged when it started.
fn conc_check(
    shared: &ConcShared,
    index: usize,
    observed: Option<u64>,
    acked_before: u64,
    seen: &mut u64,
) -> Result<bool, String> {
    let row = &shared.rows[index];
    let floor = acked_before.max(*seen);
    let history = row.history.lock().expect("history");
    let candidate = match observed {
        Some(s) => history.iter().find(|&&(h, put)| h == s && put).map(|_| s),
        None if floor == 0 => Some(0),
        None => history.iter().find(|&&(h, put)| h >= floor && !put).map(|&(h, _)| h),
    };
    match candidate {
        Some(s) if s >= floor => {
            *seen = s;
            Ok(s > acked_before)
        }
        _ => Err(format!(
            "row {} reads as {}, but the last write acknowledged before the read is {acked_before} and this reader \
             saw {} before (history, stamp and put/delete: {:?})",
            String::from_utf8_lossy(&row.key),
            observed.map_or("empty".to_string(), |s| format!("the write {s}")),
            *seen,
            *history
        )),
    }
}

/// Writer `w`: `CONC_OPS_PER_WRITER` batches and single-row mutations of
/// its own rows.
fn conc_writer(shared: &ConcShared, w: usize, seed: u64, first_stamp: u64) -> Result<u64, String> {
    use rand::prelude::*;
    use std::sync::atomic::Ordering;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut next_stamp = first_stamp;
    let mut refused_calls = 0u64;
    let base = w * CONC_ROWS_PER_WRITER;
    for op in 0..CONC_OPS_PER_WRITER {
        if shared.stopped() {
            return Ok(refused_calls);
        }
        // (row index, stamp, put/delete/refused) — the refused row is `None`.
        let mut writes: Vec<(usize, u64, Option<bool>)> = Vec::new();
        let batch = rng.random_bool(0.5);
        let count = if batch { rng.random_range(5..=20) } else { 1 };
        let mut chosen: Vec<usize> = (0..CONC_ROWS_PER_WRITER).collect();
        chosen.shuffle(&mut rng);
        for &i in &chosen[..count] {
            writes.push((base + i, 0, Some(rng.random_bool(0.88))));
        }
        if batch && rng.random_bool(0.15) {
            // The same row again: a second mini-batch, whose write wins.
            let (i, _, _) = writes[rng.random_range(0..writes.len())];
            writes.push((i, 0, Some(rng.random_bool(0.7))));
        }
        let refused = rng.random_bool(0.1);
        if refused {
            let at = rng.random_range(0..=writes.len());
            writes.insert(at, (base + chosen[count], 0, None));
        }
        for write in &mut writes {
            write.1 = next_stamp;
            next_stamp += 1;
        }
        let mutations: Vec<Vec<Mutation>> = writes
            .iter()
            .map(|&(index, stamp, kind)| {
                let key = &shared.rows[index].key;
                let put = |(i, (family, qualifier)): (usize, &(&[u8], &[u8]))| Mutation::Put {
                    family: family.to_vec(),
                    qualifier: qualifier.to_vec(),
                    timestamp: Some(stamp),
                    value: conc_value(key, stamp, i),
                };
                match kind {
                    Some(true) => CONC_COLUMNS.iter().enumerate().map(put).collect(),
                    Some(false) => vec![Mutation::DeleteRow { timestamp: Some(stamp) }],
                    // Valid puts around the invalid one: none may land.
                    None => {
                        let mut m: Vec<Mutation> = CONC_COLUMNS.iter().enumerate().map(put).collect();
                        m.insert(
                            2,
                            Mutation::Put {
                                family: CONC_MISSING_FAMILY.as_bytes().to_vec(),
                                qualifier: b"x".to_vec(),
                                timestamp: Some(stamp),
                                value: b"never".to_vec(),
                            },
                        );
                        m
                    }
                }
            })
            .collect();
        for &(index, stamp, kind) in &writes {
            if let Some(put) = kind {
                shared.rows[index].history.lock().expect("history").push((stamp, put));
            }
        }
        let result = if batch {
            let refs: Vec<Vec<MutationRef<'_>>> =
                mutations.iter().map(|m| m.iter().map(Mutation::as_ref).collect()).collect();
            let rows: Vec<RowMutations<'_>> = writes
                .iter()
                .zip(&refs)
                .map(|(&(index, _, _), m)| RowMutations { row: &shared.rows[index].key, mutations: m })
                .collect();
            shared.store.mutate_rows(TABLE, &rows, None)
        } else {
            // One row, or the refused row alone (`writes` holds both then:
            // the refused one is sent on its own first).
            let mut result = Ok(());
            for (&(index, _, _), m) in writes.iter().zip(&mutations) {
                let r = shared.store.mutate_row(TABLE, &shared.rows[index].key, m, None);
                if result.is_ok() {
                    result = r;
                }
            }
            result
        };
        let what = format!("writer {w}, operation {op} ({} rows, refused row: {refused})", writes.len());
        match result {
            Ok(()) if !refused => {}
            Ok(()) => return Err(format!("{what}: the store accepted a put to a missing family")),
            Err(StoreError::NoSuchFamily { family, .. }) if refused && family == CONC_MISSING_FAMILY => {
                refused_calls += 1;
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
        for &(index, stamp, kind) in &writes {
            if kind.is_some() {
                shared.rows[index].acked.fetch_max(stamp, Ordering::AcqRel);
            }
        }
    }
    Ok(refused_calls)
}

/// The reader: gets and whole-table scans (forward and reverse) until the
/// writers are done. Returns how many rows it read, and how many of those
/// showed a write not yet acknowledged.
fn conc_reader(shared: &ConcShared, seed: u64) -> Result<(u64, u64), String> {
    use rand::prelude::*;
    use std::sync::atomic::Ordering;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5EAD);
    let mut seen = vec![0u64; shared.rows.len()];
    let (mut reads, mut early) = (0u64, 0u64);
    while !shared.stopped() {
        if rng.random_bool(0.9) {
            let index = rng.random_range(0..shared.rows.len());
            let row = &shared.rows[index];
            let acked_before = row.acked.load(Ordering::Acquire);
            let cells = shared.store.get(TABLE, &Get::new(row.key.clone())).map_err(|e| format!("get: {e}"))?;
            let observed = conc_parse(&row.key, &cells)?;
            early += u64::from(conc_check(shared, index, observed, acked_before, &mut seen[index])?);
            reads += 1;
        } else {
            let reverse = rng.random_bool(0.5);
            let acked_before: Vec<u64> = shared.rows.iter().map(|r| r.acked.load(Ordering::Acquire)).collect();
            let mut observed: Vec<Option<u64>> = vec![None; shared.rows.len()];
            let mut last: Option<Vec<u8>> = None;
            let scanner =
                shared.store.scan(TABLE, Scan { reverse, ..Scan::default() }).map_err(|e| format!("scan: {e}"))?;
            for cells in scanner {
                let cells = cells.map_err(|e| format!("scan: {e}"))?;
                let key = cells.first().map(|c| c.row.clone()).ok_or("the scan returned an empty row")?;
                if last.as_ref().is_some_and(|l| if reverse { key >= *l } else { key <= *l }) {
                    return Err(format!("the scan (reverse: {reverse}) returned {key:?} after {last:?}"));
                }
                let index = shared.index_of(&key).ok_or_else(|| format!("the scan returned a stranger: {key:?}"))?;
                observed[index] = conc_parse(&key, &cells)?;
                last = Some(key);
            }
            for (index, observed) in observed.into_iter().enumerate() {
                early += u64::from(
                    conc_check(shared, index, observed, acked_before[index], &mut seen[index])
                        .map_err(|e| format!("scan (reverse: {reverse}): {e}"))?,
                );
                reads += 1;
            }
        }
    }
    Ok((reads, early))
}

/// Flushes, compactions, WAL rolls and splits, back to back, until the
/// writers are done. Returns how many of each ran.
fn conc_maintenance(shared: &ConcShared, seed: u64) -> Result<[u64; 4], String> {
    use rand::prelude::*;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x3A17);
    let mut done = [0u64; 4];
    let store = &shared.store;
    while !shared.stopped() {
        let action = rng.random_range(0..10);
        let result = match action {
            0..=2 => store.flush_table(TABLE).map(|()| 0),
            3 | 4 => store.compact_table(TABLE, action == 4).map(|()| 1),
            5..=7 => store.wal().roll().map(|()| 2),
            _ => {
                let regions = store.table_regions(TABLE).map_err(|e| format!("regions: {e}"))?.len();
                if regions >= CONC_MAX_REGIONS {
                    continue;
                }
                let row = &shared.rows[rng.random_range(0..shared.rows.len())].key;
                store.split_region(TABLE, row, None).map(|_| 3)
            }
        };
        let kind = result.map_err(|e| format!("maintenance action {action}: {e}"))?;
        done[kind] += 1;
    }
    Ok(done)
}

/// Every row holds its last write (all writes were acknowledged), by get
/// and by a scan.
fn conc_check_final(store: &Store, rows: &[ConcRow], when: &str) -> Result<(), String> {
    use std::sync::atomic::Ordering;
    let mut scanned: BTreeMap<Vec<u8>, Vec<Cell>> = BTreeMap::new();
    for cells in store.scan(TABLE, Scan::default()).map_err(|e| format!("{when}: scan: {e}"))? {
        let cells = cells.map_err(|e| format!("{when}: scan: {e}"))?;
        scanned.insert(cells[0].row.clone(), cells);
    }
    for row in rows {
        let history = row.history.lock().expect("history");
        let last = history.last().copied();
        let acked = row.acked.load(Ordering::Acquire);
        if last.map_or(0, |(s, _)| s) != acked {
            return Err(format!("{when}: row {:?}: last write {last:?}, acknowledged {acked}", row.key));
        }
        let want = last.and_then(|(s, put)| put.then_some(s));
        let cells = store.get(TABLE, &Get::new(row.key.clone())).map_err(|e| format!("{when}: get: {e}"))?;
        let got = conc_parse(&row.key, &cells).map_err(|e| format!("{when}: {e}"))?;
        let from_scan = scanned.remove(&row.key).unwrap_or_default();
        if got != want || from_scan != cells {
            return Err(format!(
                "{when}: row {} holds {got:?} (scan: {:?} cells), its last acknowledged write is {last:?}",
                String::from_utf8_lossy(&row.key),
                from_scan.len()
            ));
        }
    }
    if let Some(key) = scanned.keys().next() {
        return Err(format!("{when}: the scan returned a row never written: {key:?}"));
    }
    Ok(())
}

/// What the threads of one round report when they end.
enum ConcReport {
    /// Calls that carried a refused row.
    Writer(Result<u64, String>),
    /// Rows read, and how many showed a write not yet acknowledged.
    Reader(Result<(u64, u64), String>),
    /// Flushes, compactions, WAL rolls, splits.
    Maintenance(Result<[u64; 4], String>),
}

/// Totals over the rounds.
#[derive(Debug, Default)]
struct ConcTotals {
    refused: u64,
    reads: u64,
    early: u64,
    maintenance: [u64; 4],
}

/// One round: the writers, the reader and the maintenance thread on
/// `shared`, until the writers are done. A thread that fails stops the
/// others; a round that does not end within `deadline` fails the test (its
/// threads are left behind) instead of hanging it.
fn conc_round(shared: &Arc<ConcShared>, round: u64, seed: u64, deadline: std::time::Instant, totals: &mut ConcTotals) {
    use std::sync::atomic::Ordering;
    let (tx, rx) = std::sync::mpsc::channel::<ConcReport>();
    let spawn = |f: Box<dyn FnOnce(&ConcShared) -> ConcReport + Send>| {
        let (shared, tx) = (shared.clone(), tx.clone());
        std::thread::spawn(move || {
            let report = f(&shared);
            drop(shared); // before reporting: the caller takes the store back
            let _ = tx.send(report);
        });
    };
    let seed = seed ^ round.wrapping_mul(0xA076_1D64_78BD_642F);
    for w in 0..CONC_WRITERS {
        // Stamps grow across rounds too.
        let first_stamp = round * 1_000_000 + 1;
        spawn(Box::new(move |s| ConcReport::Writer(conc_writer(s, w, seed, first_stamp))));
    }
    spawn(Box::new(move |s| ConcReport::Reader(conc_reader(s, seed))));
    spawn(Box::new(move |s| ConcReport::Maintenance(conc_maintenance(s, seed))));
    drop(tx);

    let mut writers = 0;
    let mut failures = Vec::new();
    for _ in 0..CONC_WRITERS + 2 {
        let report = match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(r) => r,
            Err(e) => panic!(
                "round {round} (seed {seed}) did not finish within {CONC_TIMEOUT:?} ({e}); failures so far: \
                 {failures:?}"
            ),
        };
        let failed = match report {
            ConcReport::Writer(Ok(n)) => {
                totals.refused += n;
                writers += 1;
                if writers == CONC_WRITERS {
                    shared.stop.store(true, Ordering::Release);
                }
                None
            }
            ConcReport::Reader(Ok((reads, early))) => {
                totals.reads += reads;
                totals.early += early;
                None
            }
            ConcReport::Maintenance(Ok(m)) => {
                for (t, n) in totals.maintenance.iter_mut().zip(m) {
                    *t += n;
                }
                None
            }
            ConcReport::Writer(Err(e)) => Some(format!("writer: {e}")),
            ConcReport::Reader(Err(e)) => Some(format!("reader: {e}")),
            ConcReport::Maintenance(Err(e)) => Some(format!("maintenance: {e}")),
        };
        if let Some(e) = failed {
            shared.stop.store(true, Ordering::Release);
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "round {round}: {failures:#?}");
}

#[test]
fn concurrent_batches_and_maintenance_match_per_writer_models() {
    use std::sync::atomic::{AtomicBool, AtomicU64};

    let seed = std::env::var("CONCURRENT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64)
    });
    eprintln!("concurrent model test seed: CONCURRENT_SEED={seed}");
    let started = std::time::Instant::now();
    let deadline = started + CONC_TIMEOUT;
    let dir = temp_dir();
    let open = || Store::open(dir.path(), conc_options(Arc::new(LocalFs))).expect("open the store");
    let mut store = open();
    store.create_table(conc_descriptor(), &[b"r012".to_vec(), b"r024".to_vec(), b"r036".to_vec()]).expect("create");
    let mut rows: Vec<ConcRow> = (0..CONC_WRITERS)
        .flat_map(|w| (0..CONC_ROWS_PER_WRITER).map(move |i| conc_row(w, i)))
        .map(|key| ConcRow { key, acked: AtomicU64::new(0), history: std::sync::Mutex::new(Vec::new()) })
        .collect();
    let mut totals = ConcTotals::default();
    let mut archived = 0;
    for round in 0..CONC_ROUNDS {
        let shared = Arc::new(ConcShared { store, rows, stop: AtomicBool::new(false) });
        conc_round(&shared, round, seed, deadline, &mut totals);
        let ConcShared { store: s, rows: r, .. } = Arc::into_inner(shared).expect("the round's threads are done");
        rows = r;
        if let Err(e) = conc_check_final(&s, &rows, &format!("round {round}, after the writers")) {
            panic!("seed {seed}: {e}");
        }
        archived += s.wal().stats().files_archived;
        s.close().expect("close");
        store = open();
        if let Err(e) = conc_check_final(&store, &rows, &format!("round {round}, after a clean close and reopen")) {
            panic!("seed {seed}: {e}");
        }
    }
    let regions = store.table_regions(TABLE).expect("regions").len();
    store.close().expect("the last close");

    eprintln!("{totals:?}, {regions} regions, {archived} WAL files archived, {:?}", started.elapsed());
    assert!(totals.reads > 1000, "the reader ran along: {totals:?}");
    assert!(totals.refused > 0, "some calls carried a refused row");
    assert!(totals.maintenance.iter().all(|&n| n > 0), "every maintenance action ran: {totals:?}");
    assert!(regions > 4, "regions split: {regions}");
    assert!(archived > 0, "WAL files were archived");
}
