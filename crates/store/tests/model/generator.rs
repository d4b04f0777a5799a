//! The strategies that generate a sequence: its setup and its operations.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use store::storefile::{BloomType, Compression};

use crate::ops::{
    Change, Expect, FAMILIES, GET_ROWS, MAX_SCANNERS, MAX_TS, OVERSIZED, Op, PREFIXES, PRESPLIT, QUALIFIERS,
    READ_QUALIFIERS, ROWS, ReadSpec, SCAN_KEYS, SPLIT_AT, ScanSpec,
};
use crate::setup::Setup;

pub(crate) const MAX_OPS: usize = 60;

pub(crate) fn ts() -> impl Strategy<Value = u64> {
    0..=MAX_TS
}

pub(crate) fn value_size() -> impl Strategy<Value = usize> {
    prop_oneof![2 => Just(0), 60 => Just(1), 6 => 2..=600usize, 2 => 2000..=5000usize, 1 => Just(OVERSIZED)]
}

pub(crate) fn change() -> impl Strategy<Value = Change> {
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

pub(crate) fn read_spec() -> impl Strategy<Value = ReadSpec> {
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

pub(crate) fn scan_spec() -> impl Strategy<Value = ScanSpec> {
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

pub(crate) fn op() -> impl Strategy<Value = Op> {
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

pub(crate) fn setup(policy: &'static str) -> impl Strategy<Value = Setup> {
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

pub(crate) fn case(policy: &'static str) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (setup(policy), vec(op(), 1..=MAX_OPS))
}

/// A case of any memstore policy.
pub(crate) fn any_policy_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    select(&["none", "basic", "eager", "adaptive:0.5"][..]).prop_flat_map(case)
}

/// The share of operations after which a power cut is checked.
const POWER_CUT_CHANCE: f64 = 0.3;

/// Whether a power cut is checked after each operation (by index; longer
/// than any sequence).
pub(crate) fn power_cuts() -> impl Strategy<Value = Vec<bool>> {
    vec(prop::bool::weighted(POWER_CUT_CHANCE), MAX_OPS)
}
