//! Misuse of the memstore API is refused with a typed [`MemStoreError`] and
//! never panics, and a refused call leaves the memstore exactly as it was
//! and usable.
//!
//! Why: the memstore sits under a region server's RPC handlers, so every
//! bad client input (empty or oversized keys, wrong family, oversized cells,
//! malformed delete markers) and every caller mistake (seq 0, releasing the
//! wrong snapshot, invalid configuration) must surface as an error value.
//! A row mutation is all or nothing: if any of its cells is bad — including
//! the last — none of them may be written. Reads of things that do not exist
//! (rows never written, empty or inverted ranges, an empty memstore) return
//! nothing rather than failing.

use memstore::{
    Cell, CellInput, CellType, ChunkPool, CompactionMode, CompactionPolicy, CountersSnapshot, InMemoryFlushThreshold,
    IndexLayout, MemStore, MemStoreConfig, MemStoreError, MemStoreLayoutInfo, MemStoreSize, ReadOptions, ScanRange,
    TimeRange, VersionRules,
};

const MAX_CELL: usize = 1024;

fn config() -> MemStoreConfig {
    MemStoreConfig {
        policy: CompactionPolicy::Basic,
        compaction_mode: CompactionMode::Manual,
        chunk_pool: ChunkPool::new(8),
        max_cell_size: MAX_CELL,
        ..MemStoreConfig::new("f")
    }
}

/// Writes one put through the memstore's MVCC; the timestamp is the seq.
fn put(m: &MemStore, row: &[u8], qualifier: &[u8], value: &[u8]) -> u64 {
    let w = m.config().mvcc.begin();
    let seq = w.seq();
    m.add_row(&[CellInput::put(row, b"f", qualifier, seq, value)], seq).expect("a valid put is accepted");
    m.config().mvcc.complete(w);
    seq
}

/// A memstore with rows in the pipeline (flattened) and in the active segment.
fn populated() -> MemStore {
    let m = MemStore::new(config()).expect("valid config");
    put(&m, b"a", b"q1", b"a1");
    put(&m, b"a", b"q2", b"a2");
    put(&m, b"b", b"q1", b"b1");
    assert!(m.flush_in_memory());
    m.compact_pipeline();
    put(&m, b"c", b"q1", b"c1");
    put(&m, b"a", b"q1", b"a1-new");
    m
}

fn all_rows(m: &MemStore, reverse: bool) -> Vec<Vec<Cell>> {
    let opts = ReadOptions { max_versions: 10, ..ReadOptions::default() };
    m.scan(ScanRange { reverse, ..ScanRange::default() }, opts).collect()
}

/// Everything observable about a memstore's content and structure.
#[derive(Debug, PartialEq)]
struct Observed {
    size: MemStoreSize,
    rows: Vec<Vec<Cell>>,
    layout: MemStoreLayoutInfo,
    counters: CountersSnapshot,
    lowest_unflushed: Option<u64>,
}

fn observe(m: &MemStore) -> Observed {
    Observed {
        size: m.size(),
        rows: all_rows(m, false),
        layout: m.layout_info(),
        counters: m.counters(),
        lowest_unflushed: m.lowest_unflushed_seq(),
    }
}

/// The memstore still takes writes and serves them.
fn assert_usable(m: &MemStore) {
    let before = m.size();
    put(m, b"usable", b"q", b"yes");
    let got = m.get(b"usable", &ReadOptions::default());
    assert_eq!(got.len(), 1, "a write after a refused call is readable");
    assert_eq!(got[0].value, &b"yes"[..]);
    assert!(m.size().cells == before.cells + 1, "the write is accounted");
}

/// Offers `cells` at `seq` and checks the exact error and that nothing changed.
fn assert_refused(m: &MemStore, what: &str, cells: &[CellInput<'_>], seq: u64, expected: MemStoreError) {
    let before = observe(m);
    assert_eq!(m.add_row(cells, seq), Err(expected), "{what}");
    assert_eq!(observe(m), before, "{what}: a refused mutation must leave the memstore unchanged");
}

fn long(len: usize) -> Vec<u8> {
    vec![b'x'; len]
}

#[test]
fn bad_cells_are_refused_with_typed_errors_and_change_nothing() {
    let m = populated();
    let seq = m.config().mvcc.last_assigned() + 1;
    let long_row = long(32_768);
    let long_family = long(128);
    let big_value = long(MAX_CELL);
    let too_big = CellInput::put(b"a", b"f", b"q1", seq, &big_value);
    let too_big_len = too_big.encoded_len();
    let wrong_family = |found: &str| MemStoreError::WrongFamily { expected: "f".into(), found: found.into() };
    let family_127 = long(127);

    let cases: Vec<(&str, Vec<CellInput<'_>>, MemStoreError)> = vec![
        ("empty row", vec![CellInput::put(b"", b"f", b"q", seq, b"v")], MemStoreError::EmptyRow),
        (
            "row of 32768 bytes",
            vec![CellInput::put(&long_row, b"f", b"q", seq, b"v")],
            MemStoreError::RowTooLong { len: 32_768, max: 32_767 },
        ),
        ("empty family", vec![CellInput::put(b"a", b"", b"q", seq, b"v")], MemStoreError::EmptyFamily),
        (
            "family of 128 bytes",
            vec![CellInput::put(b"a", &long_family, b"q", seq, b"v")],
            MemStoreError::FamilyTooLong { len: 128, max: 127 },
        ),
        ("another family", vec![CellInput::put(b"a", b"g", b"q", seq, b"v")], wrong_family("g")),
        (
            "a valid-length family that is not the store's",
            vec![CellInput::put(b"a", &family_127, b"q", seq, b"v")],
            wrong_family(&String::from_utf8_lossy(&family_127)),
        ),
        ("cell above max_cell_size", vec![too_big], MemStoreError::CellTooLarge { len: too_big_len, max: MAX_CELL }),
        (
            "last cell too large",
            vec![CellInput::put(b"a", b"f", b"q1", seq, b"x"), CellInput::put(b"a", b"f", b"q2", seq, b"y"), too_big],
            MemStoreError::CellTooLarge { len: too_big_len, max: MAX_CELL },
        ),
        (
            "last cell of another family",
            vec![CellInput::put(b"a", b"f", b"q1", seq, b"x"), CellInput::put(b"a", b"g", b"q2", seq, b"y")],
            wrong_family("g"),
        ),
        (
            "last cell with an empty row",
            vec![CellInput::put(b"a", b"f", b"q1", seq, b"x"), CellInput::put(b"", b"f", b"q2", seq, b"y")],
            MemStoreError::EmptyRow,
        ),
        (
            "last cell an invalid delete",
            vec![
                CellInput::put(b"a", b"f", b"q1", seq, b"x"),
                CellInput::delete(b"a", b"f", b"q2", seq, CellType::DeleteFamily),
            ],
            MemStoreError::FamilyDeleteWithQualifier,
        ),
        (
            "mixed rows",
            vec![CellInput::put(b"a", b"f", b"q1", seq, b"x"), CellInput::put(b"b", b"f", b"q1", seq, b"y")],
            MemStoreError::MixedRows,
        ),
        (
            "mixed rows, one a prefix of the other",
            vec![CellInput::put(b"a", b"f", b"q1", seq, b"x"), CellInput::put(b"aa", b"f", b"q1", seq, b"y")],
            MemStoreError::MixedRows,
        ),
        (
            "DeleteFamily with a qualifier",
            vec![CellInput::delete(b"a", b"f", b"q1", seq, CellType::DeleteFamily)],
            MemStoreError::FamilyDeleteWithQualifier,
        ),
        (
            "DeleteFamilyVersion with a qualifier",
            vec![CellInput::delete(b"a", b"f", b"q1", seq, CellType::DeleteFamilyVersion)],
            MemStoreError::FamilyDeleteWithQualifier,
        ),
    ];
    for (what, cells, expected) in &cases {
        assert_refused(&m, what, cells, seq, expected.clone());
    }
    for t in [CellType::Delete, CellType::DeleteColumn, CellType::DeleteFamily, CellType::DeleteFamilyVersion] {
        let q: &[u8] = if t.is_family_delete() { b"" } else { b"q1" };
        let marker = CellInput { row: b"a", family: b"f", qualifier: q, timestamp: seq, cell_type: t, value: b"v" };
        assert_refused(&m, &format!("{t:?} with a value"), &[marker], seq, MemStoreError::DeleteWithValue);
    }
    assert_refused(&m, "empty mutation", &[], seq, MemStoreError::EmptyMutation);
    assert_refused(&m, "seq 0", &[CellInput::put(b"a", b"f", b"q1", 0, b"v")], 0, MemStoreError::ZeroSequenceId);

    // Row "a" was the target of most refused mutations: its content is the old one.
    let a = m.get(b"a", &ReadOptions::default());
    let values: Vec<&[u8]> = a.iter().map(|c| c.value.as_ref()).collect();
    assert_eq!(values, [b"a1-new".as_slice(), b"a2"], "row a untouched by refused mutations");
    assert_usable(&m);
}

#[test]
fn limits_are_inclusive() {
    // The largest row, the largest family and a cell of exactly max_cell_size are accepted.
    let family = long(127);
    let m = MemStore::new(MemStoreConfig { max_cell_size: 64 * 1024, ..MemStoreConfig::new(family.clone()) })
        .expect("a 127-byte family is valid");
    let row = long(32_767);
    m.add_row(&[CellInput::put(&row, &family, b"q", 1, b"v")], 1).expect("a 32767-byte row is accepted");
    assert_eq!(m.get(&row, &ReadOptions::default()).len(), 1);

    let m = MemStore::new(config()).expect("valid config");
    let fixed = CellInput::put(b"r", b"f", b"q", 1, b"").encoded_len();
    let value = long(MAX_CELL - fixed);
    let exact = CellInput::put(b"r", b"f", b"q", 1, &value);
    assert_eq!(exact.encoded_len(), MAX_CELL);
    m.add_row(&[exact], 1).expect("a cell of exactly max_cell_size is accepted");
    assert_eq!(m.get(b"r", &ReadOptions::default())[0].value, value);
    let one_more = long(MAX_CELL - fixed + 1);
    assert_eq!(
        m.add_row(&[CellInput::put(b"r", b"f", b"q", 2, &one_more)], 2),
        Err(MemStoreError::CellTooLarge { len: MAX_CELL + 1, max: MAX_CELL })
    );
}

#[test]
fn snapshot_misuse_is_refused_and_harmless() {
    let m = populated();
    assert_eq!(m.release_snapshot(0), Err(MemStoreError::UnknownSnapshot(0)), "no snapshot outstanding");
    assert_eq!(m.release_snapshot(42), Err(MemStoreError::UnknownSnapshot(42)));
    let rows = all_rows(&m, false);

    let snap = m.snapshot();
    let id = snap.id();
    let before = observe(&m);
    for wrong in [0, id + 1, id.wrapping_sub(1), u64::MAX] {
        assert_eq!(m.release_snapshot(wrong), Err(MemStoreError::UnknownSnapshot(wrong)));
    }
    assert_eq!(observe(&m), before, "a refused release changes nothing");
    assert_eq!(m.current_snapshot().map(|s| s.id()), Some(id), "the snapshot is still outstanding");
    assert_eq!(all_rows(&m, false), rows, "reads still see the snapshot");

    m.release_snapshot(id).expect("the current snapshot is released");
    assert_eq!(m.size(), MemStoreSize::default());
    let after = observe(&m);
    assert_eq!(m.release_snapshot(id), Err(MemStoreError::UnknownSnapshot(id)), "released twice");
    assert_eq!(observe(&m), after, "a second release changes nothing");
    assert!(m.current_snapshot().is_none());
    assert_usable(&m);

    // The next snapshot gets a new id; the old one stays unknown.
    let next = m.snapshot();
    assert_ne!(next.id(), id);
    assert_eq!(m.release_snapshot(id), Err(MemStoreError::UnknownSnapshot(id)));
    m.release_snapshot(next.id()).expect("release the new snapshot");
    assert_eq!(m.size(), MemStoreSize::default());
}

fn assert_invalid(what: &str, cfg: MemStoreConfig) {
    match MemStore::new(cfg) {
        Err(MemStoreError::InvalidConfig(msg)) => assert!(!msg.is_empty(), "{what}: empty message"),
        Err(e) => panic!("{what}: expected InvalidConfig, got {e:?}"),
        Ok(_) => panic!("{what}: accepted an invalid configuration"),
    }
}

#[test]
fn invalid_configurations_are_refused() {
    let base = config;
    assert_invalid("pipeline limit 0", MemStoreConfig { pipeline_segments_limit: 0, ..base() });
    assert_invalid("flat layout skiplist", MemStoreConfig { flat_layout: IndexLayout::SkipList, ..base() });
    for share in [0.0, -0.1, 1.000_001, 2.0, f64::NAN, f64::INFINITY] {
        assert_invalid(
            &format!("flush share {share}"),
            MemStoreConfig { in_memory_flush_threshold: InMemoryFlushThreshold::FlushSizeShare(share), ..base() },
        );
    }
    assert_invalid(
        "max versions 0",
        MemStoreConfig { rules: VersionRules { max_versions: 0, ttl_ms: None }, ..base() },
    );
    for r in [-0.01, 1.01, f64::NAN, f64::NEG_INFINITY] {
        assert_invalid(
            &format!("adaptive threshold {r}"),
            MemStoreConfig { policy: CompactionPolicy::Adaptive { redundancy_threshold: r }, ..base() },
        );
    }
    assert_invalid("empty family", MemStoreConfig { family: Vec::new(), ..base() });
    assert_invalid("family of 128 bytes", MemStoreConfig { family: long(128), ..base() });
    assert_invalid("max cell size 0", MemStoreConfig { max_cell_size: 0, ..base() });

    // The boundaries themselves are valid.
    let valid = [
        MemStoreConfig { pipeline_segments_limit: 1, ..base() },
        MemStoreConfig { in_memory_flush_threshold: InMemoryFlushThreshold::FlushSizeShare(1.0), ..base() },
        MemStoreConfig { in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(0), ..base() },
        MemStoreConfig { policy: CompactionPolicy::Adaptive { redundancy_threshold: 0.0 }, ..base() },
        MemStoreConfig { policy: CompactionPolicy::Adaptive { redundancy_threshold: 1.0 }, ..base() },
        MemStoreConfig { flat_layout: IndexLayout::CellArray, ..base() },
        MemStoreConfig { max_cell_size: 1, ..base() },
    ];
    for cfg in valid {
        let debug = format!("{cfg:?}");
        let fits = cfg.max_cell_size >= 64;
        let m = MemStore::new(cfg).unwrap_or_else(|e| panic!("{debug}: {e}"));
        if fits {
            put(&m, b"r", b"q", b"v");
        }
    }
}

#[test]
fn unknown_policy_strings_are_refused() {
    for bad in [
        "",
        " ",
        "lazy",
        "basic:0.5",
        "eager:",
        "none:1",
        "adaptive:",
        "adaptive:abc",
        "adaptive:1.5",
        "adaptive:-0.1",
        "adaptive:NaN",
        "adaptive:inf",
        "adaptive:0.5:0.5",
        "adaptive 0.5",
    ] {
        match CompactionPolicy::parse(bad) {
            Err(MemStoreError::InvalidConfig(_)) => {}
            other => panic!("{bad:?}: expected InvalidConfig, got {other:?}"),
        }
    }
    let ok = [
        ("none", CompactionPolicy::None),
        (" Basic ", CompactionPolicy::Basic),
        ("EAGER", CompactionPolicy::Eager),
        ("adaptive", CompactionPolicy::Adaptive { redundancy_threshold: 0.5 }),
        ("adaptive:0", CompactionPolicy::Adaptive { redundancy_threshold: 0.0 }),
        ("adaptive:1", CompactionPolicy::Adaptive { redundancy_threshold: 1.0 }),
    ];
    for (s, expected) in ok {
        assert_eq!(CompactionPolicy::parse(s), Ok(expected), "{s:?}");
        assert_eq!(CompactionPolicy::parse(&expected.name()), Ok(expected), "name() round-trips");
    }
}

fn rows_of(m: &MemStore, start: Option<&[u8]>, stop: Option<&[u8]>, reverse: bool) -> Vec<Vec<u8>> {
    let range = ScanRange { start: start.map(<[u8]>::to_vec), stop: stop.map(<[u8]>::to_vec), reverse };
    m.scan(range, ReadOptions::default()).map(|cells| cells[0].row.to_vec()).collect()
}

#[test]
fn reads_of_nothing_return_nothing() {
    let empty = MemStore::new(config()).expect("valid config");
    let m = populated();
    for store in [&empty, &m] {
        assert!(store.get(b"never-written", &ReadOptions::default()).is_empty());
        assert!(store.get(b"", &ReadOptions::default()).is_empty(), "an empty row key matches no row");
        assert!(store.get(&long(40_000), &ReadOptions::default()).is_empty(), "an impossible row key");
        for reverse in [false, true] {
            let (lo, hi): (&[u8], &[u8]) = (b"a", b"c");
            let inverted = if reverse {
                rows_of(store, Some(lo), Some(hi), true)
            } else {
                rows_of(store, Some(hi), Some(lo), false)
            };
            assert!(inverted.is_empty(), "inverted range, reverse={reverse}: {inverted:?}");
            assert!(rows_of(store, Some(b"b"), Some(b"b"), reverse).is_empty(), "empty range, reverse={reverse}");
        }
    }
    assert!(rows_of(&empty, None, None, false).is_empty());
    assert!(rows_of(&empty, None, None, true).is_empty(), "reverse scan of an empty memstore");
    assert!(rows_of(&empty, Some(b"m"), None, true).is_empty());
    assert!(rows_of(&m, Some(b"0"), None, true).is_empty(), "reverse from before the first row");
    assert!(rows_of(&m, Some(b"z"), None, false).is_empty(), "forward from after the last row");
    assert_eq!(rows_of(&m, Some(b"z"), None, true), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);

    // A scanner that is exhausted stays exhausted.
    let mut scanner = empty.scan(ScanRange { reverse: true, ..ScanRange::default() }, ReadOptions::default());
    assert!(scanner.next().is_none() && scanner.next().is_none());

    // A raw cursor over nothing; advancing past the end is harmless.
    let mut cursor = empty.cursor();
    assert!(cursor.current().is_none());
    cursor.advance();
    assert!(cursor.current().is_none());
    assert_eq!(cursor.row_before(None), None);

    // Read options that can match nothing.
    let nothing = [
        ReadOptions { read_point: 0, ..ReadOptions::default() },
        ReadOptions { max_versions: 0, ..ReadOptions::default() },
        ReadOptions { time_range: TimeRange { min: 10, max: 5 }, ..ReadOptions::default() },
        ReadOptions { qualifiers: Some(Vec::new()), ..ReadOptions::default() },
        ReadOptions { qualifiers: Some(vec![b"no-such".to_vec()]), ..ReadOptions::default() },
    ];
    for opts in nothing {
        assert!(m.get(b"a", &opts).is_empty(), "{opts:?}");
        assert_eq!(m.scan(ScanRange::default(), opts.clone()).count(), 0, "{opts:?}");
    }

    // Structural calls on an empty memstore are no-ops.
    assert!(!empty.flush_in_memory(), "nothing to push");
    empty.compact_pipeline();
    empty.wait_for_compactions();
    let snap = empty.snapshot();
    assert!(snap.is_empty());
    assert!(snap.cursor().current().is_none());
    empty.release_snapshot(snap.id()).expect("an empty snapshot is released");
    assert_eq!(empty.size(), MemStoreSize::default());
    assert_eq!(empty.lowest_unflushed_seq(), None);
    assert_usable(&empty);
}

#[test]
fn refused_rows_of_every_policy_leave_sizes_at_zero() {
    // The same refusal on a fresh store of each policy and layout: nothing is
    // allocated or accounted (no chunk taken, sizes exactly zero).
    for policy in [
        CompactionPolicy::None,
        CompactionPolicy::Basic,
        CompactionPolicy::Eager,
        CompactionPolicy::Adaptive { redundancy_threshold: 0.5 },
    ] {
        for layout in [IndexLayout::CellArray, IndexLayout::CellChunk] {
            let pool = ChunkPool::new(4);
            let m = MemStore::new(MemStoreConfig { policy, flat_layout: layout, chunk_pool: pool.clone(), ..config() })
                .expect("valid config");
            let big = long(MAX_CELL);
            let cells = [CellInput::put(b"r", b"f", b"q1", 1, b"ok"), CellInput::put(b"r", b"f", b"q2", 1, &big)];
            assert!(matches!(m.add_row(&cells, 1), Err(MemStoreError::CellTooLarge { .. })));
            assert_eq!(m.size(), MemStoreSize::default(), "{policy:?} {layout:?}");
            assert!(m.get(b"r", &ReadOptions::default()).is_empty());
            assert_eq!(m.counters().rows_added, 0);
            assert_eq!(pool.stats().in_use, 0, "a refused row takes no chunk");
            assert_usable(&m);
        }
    }
}
