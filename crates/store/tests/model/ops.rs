//! The operations of a sequence (`Op`, `Change`, the read and scan specs)
//! and the key space they range over: indexes into small fixed tables, so
//! that sequences shrink well and versions, rows and regions collide.

use memstore::{MemStoreError, TimeRange};
use store::{Column, Scan, StoreError};

pub(crate) const TABLE: &str = "t";
/// The families, in byte order (reads return them in this order).
pub(crate) const FAMILIES: [&[u8]; 2] = [b"f", b"g"];
/// The row space: rows that prefix one another, across region boundaries.
pub(crate) const ROWS: [&[u8]; 8] = [b"a", b"aa", b"ab", b"b", b"ba", b"c", b"cab", b"d"];
/// Gets also ask for rows that are never written.
pub(crate) const GET_ROWS: [&[u8]; 10] = [b"a", b"aa", b"ab", b"b", b"ba", b"c", b"cab", b"d", b"", b"ac"];
/// Qualifiers of the ordinary columns; the empty one sorts with the family
/// markers.
pub(crate) const QUALIFIERS: [&[u8]; 3] = [b"", b"q", b"qq"];
/// The counter column (in either family), written only by increments.
pub(crate) const COUNTER: &[u8] = b"n";
/// Qualifiers a read may name: the columns, the counter, and one never written.
pub(crate) const READ_QUALIFIERS: [&[u8]; 5] = [b"", b"q", b"qq", b"n", b"qqq"];
/// Keys the table may be pre-split at (one or two of them).
pub(crate) const PRESPLIT: [&[u8]; 4] = [b"ab", b"b", b"c", b"ca"];
/// Split points: rows, keys between rows, region boundaries, and keys
/// outside every region's interior.
pub(crate) const SPLIT_AT: [&[u8]; 13] =
    [b"", b"a", b"a\0", b"aa", b"ab", b"b", b"b\0", b"ba", b"bb", b"c", b"cab", b"d", b"e"];
/// Scan bounds (the empty key means unbounded).
pub(crate) const SCAN_KEYS: [&[u8]; 13] =
    [b"", b"0", b"a", b"aa", b"aa\0", b"ab", b"b", b"ba", b"bz", b"c", b"cab", b"d", b"z"];
pub(crate) const PREFIXES: [&[u8]; 7] = [b"", b"a", b"aa", b"b", b"c", b"ca", b"x"];
/// The store's largest cell (`max_cell_size`), and a value size beyond it.
pub(crate) const MAX_CELL_SIZE: usize = 8192;
pub(crate) const OVERSIZED: usize = 9000;
/// Explicit timestamps are `0..=MAX_TS`, so that versions collide. Those
/// below `RECENT_FROM` are taken literally (decades old: expired in a family
/// with a TTL); the others are `Timestamps::base` plus them (recent).
pub(crate) const MAX_TS: u64 = 6;
pub(crate) const RECENT_FROM: u64 = 3;
/// The TTL of a family that has one: nothing recent expires during a test.
pub(crate) const TTL_SECS: u64 = 24 * 3600;
/// Where the model puts a `DeleteVersion` of "the latest version" of a
/// column that has none: the store puts it at the wall clock, which no put of
/// an ordinary column ever reaches, so any timestamp above `MAX_TS` is the
/// same to the model (such a marker masks nothing).
pub(crate) const NOTHING_TO_DELETE_TS: u64 = u64::MAX / 4;
/// Scanners held open at most at once.
pub(crate) const MAX_SCANNERS: usize = 2;

/// One change of a row mutation; indexes into `FAMILIES` and `QUALIFIERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
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
    pub(crate) fn refusal(&self) -> Option<Refusal> {
        match self {
            Change::PutToMissingFamily { .. } => Some(Refusal::NoSuchFamily),
            Change::Put { size, .. } if *size >= OVERSIZED => Some(Refusal::CellTooLarge),
            _ => None,
        }
    }
}

/// Why a row mutation is refused (as a whole, before it takes a sequence id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Refusal {
    /// Checked first, while the mutation's cells are built.
    NoSuchFamily,
    /// Checked once every cell is built.
    CellTooLarge,
}

impl Refusal {
    pub(crate) fn matches(self, e: &StoreError) -> bool {
        match self {
            Refusal::NoSuchFamily => matches!(e, StoreError::NoSuchFamily { .. }),
            Refusal::CellTooLarge => matches!(e, StoreError::MemStore(MemStoreError::CellTooLarge { .. })),
        }
    }
}

/// The refusal of a mutation made of `changes`, if any.
pub(crate) fn refusal(changes: &[Change]) -> Option<Refusal> {
    changes.iter().filter_map(Change::refusal).min()
}

/// Maps the generated timestamps `0..=MAX_TS` (and time-range bounds) to
/// the store's, preserving their order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timestamps {
    /// A quarter of an hour before the sequence started: recent timestamps
    /// are all below the wall clock (and so below every increment's).
    pub(crate) base: u64,
}

impl Timestamps {
    pub(crate) fn new() -> Timestamps {
        Timestamps { base: now_ms() - 15 * 60 * 1000 }
    }

    /// `change` with the store's timestamp.
    pub(crate) fn apply(&self, change: &Change) -> Change {
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

    pub(crate) fn map(&self, t: u64) -> u64 {
        match t {
            u64::MAX => u64::MAX,
            t if t < RECENT_FROM => t,
            t => self.base + t,
        }
    }
}

pub(crate) fn now_ms() -> u64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since_epoch.expect("the clock is after 1970").as_millis() as u64
}

/// Columns, time range and versions of a get or scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadSpec {
    /// (index into `FAMILIES`, index into `READ_QUALIFIERS` or the whole family).
    pub(crate) columns: Vec<(usize, Option<usize>)>,
    /// `[min, max)`; `max` may be `u64::MAX` (unbounded).
    pub(crate) time_range: (u64, u64),
    pub(crate) max_versions: u32,
}

impl ReadSpec {
    /// Every version of every column.
    pub(crate) fn all() -> ReadSpec {
        ReadSpec { columns: Vec::new(), time_range: (0, u64::MAX), max_versions: 4 }
    }

    pub(crate) fn columns(&self) -> Vec<Column> {
        self.columns
            .iter()
            .map(|&(f, q)| Column {
                family: FAMILIES[f % FAMILIES.len()].to_vec(),
                qualifier: q.map(|q| READ_QUALIFIERS[q % READ_QUALIFIERS.len()].to_vec()),
            })
            .collect()
    }

    pub(crate) fn time_range(&self, ts: Timestamps) -> TimeRange {
        TimeRange { min: ts.map(self.time_range.0), max: ts.map(self.time_range.1) }
    }
}

/// Indexes into `SCAN_KEYS` and `PREFIXES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanSpec {
    pub(crate) start: Option<usize>,
    pub(crate) stop: Option<usize>,
    pub(crate) prefix: Option<usize>,
    pub(crate) reverse: bool,
    pub(crate) read: ReadSpec,
    pub(crate) batch: Option<usize>,
    pub(crate) limit: Option<u64>,
}

impl ScanSpec {
    pub(crate) fn scan(&self, ts: Timestamps) -> Scan {
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
    pub(crate) fn everything(reverse: bool) -> ScanSpec {
        ScanSpec { start: None, stop: None, prefix: None, reverse, read: ReadSpec::all(), batch: None, limit: None }
    }
}

/// What a check-and-mutate expects the column to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
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
pub(crate) enum Op {
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

pub(crate) fn put(family: usize, qualifier: usize, ts: u64) -> Change {
    Change::Put { family, qualifier, ts, size: 1 }
}

pub(crate) fn write(row: usize, changes: &[Change]) -> Op {
    Op::Write { row, changes: changes.to_vec() }
}

pub(crate) fn get_all(row: usize) -> Op {
    Op::Get { row, read: ReadSpec::all() }
}
