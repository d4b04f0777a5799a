//! The store's counters never go backwards while the process lives: a
//! split, a merge, a reopen of a region and a dropped table keep what the
//! regions that went had counted (in their table's counters, or in the
//! dropped tables' ones), each region counted exactly once.

use store::metrics::StoreMetrics;
use store::testing::StoreBuilder;
use store::{FamilyDescriptor, Get, Scan, Store, TableCounters, TableDescriptor};

fn fields(c: &TableCounters) -> Vec<(String, u64)> {
    let serde_json::Value::Object(map) = serde_json::to_value(c).expect("json") else { panic!("an object") };
    map.into_iter().map(|(k, v)| (k, v.as_u64().expect("a count"))).collect()
}

fn table(m: &StoreMetrics, name: &str) -> Option<TableCounters> {
    m.tables.iter().find(|t| t.table == name).map(|t| t.counters)
}

/// Every table's counters plus the dropped tables'.
fn everything(m: &StoreMetrics) -> TableCounters {
    let mut all = m.dropped_tables;
    for t in &m.tables {
        all.add(&t.counters);
    }
    all
}

fn totals_counters(m: &StoreMetrics) -> Vec<(&'static str, u64)> {
    let t = &m.totals;
    vec![
        ("puts", t.puts),
        ("deletes", t.deletes),
        ("gets", t.gets),
        ("scans", t.scans),
        ("disk_flushes", t.disk_flushes),
        ("disk_compactions", t.disk_compactions),
        ("bytes_flushed", t.bytes_flushed),
        ("bytes_compacted", t.bytes_compacted),
        ("user_bytes", t.user_bytes),
        ("inmemory_flushes", t.inmemory_flushes),
        ("merges", t.merges),
        ("inmemory_compactions", t.inmemory_compactions),
        ("wal_bytes", t.wal_bytes),
        ("wal_syncs", t.wal_syncs),
    ]
}

/// `after` counts at least what `before` did, everywhere; and the totals
/// are the tables' plus the dropped ones'.
fn never_backwards(before: &StoreMetrics, after: &StoreMetrics, step: &str) {
    for ((name, b), (_, a)) in totals_counters(before).into_iter().zip(totals_counters(after)) {
        assert!(a >= b, "{step}: totals.{name} went from {b} to {a}");
    }
    for ((name, b), (_, a)) in fields(&everything(before)).into_iter().zip(fields(&everything(after))) {
        assert!(a >= b, "{step}: {name} over all tables went from {b} to {a}");
    }
    for ((name, b), (_, a)) in fields(&before.dropped_tables).into_iter().zip(fields(&after.dropped_tables)) {
        assert!(a >= b, "{step}: dropped tables' {name} went from {b} to {a}");
    }
    let all = everything(after);
    assert_eq!(after.totals.puts, all.puts, "{step}");
    assert_eq!(after.totals.disk_flushes, all.flushes, "{step}");
    assert_eq!(after.totals.bytes_compacted, all.bytes_compacted, "{step}");
}

fn load(store: &Store, name: &str, rows: usize) {
    for i in 0..rows {
        let row = format!("r{i:04}");
        store.put(name, row.as_bytes(), &[(b"f", b"q", b"value-value-value")], None).expect("put");
        store.get(name, &Get::new(row.as_bytes())).expect("get");
    }
    assert!(store.scan(name, Scan::default()).expect("scan").count() >= rows);
}

/// The request counters (a split, merge or close may flush, so the flush
/// counters may grow).
fn requests(c: Option<TableCounters>) -> Option<[u64; 6]> {
    c.map(|c| [c.puts, c.deletes, c.gets, c.scans, c.user_bytes, c.write_requests])
}

fn regions(store: &Store, name: &str) -> Vec<String> {
    store.table_regions(name).expect("regions").iter().map(|r| r.dir_name()).collect()
}

#[test]
fn counters_survive_splits_merges_reopens_and_dropped_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    for name in ["t", "u"] {
        store
            .create_table(TableDescriptor::new(name, vec![FamilyDescriptor::new("f")]), &[b"r0100".to_vec()])
            .expect("create");
        load(&store, name, 200);
        store.flush_table(name).expect("flush");
        load(&store, name, 200);
        store.flush_table(name).expect("flush");
        store.compact_table(name, true).expect("compact");
    }
    let start = store.metrics();
    let t = table(&start, "t").expect("t");
    assert_eq!(t.puts, 400);
    assert_eq!(t.gets, 400);
    assert_eq!(t.write_requests, 400, "one row per put");
    assert!(t.flushes >= 2 && t.compactions >= 1 && t.bytes_flushed > 0, "{t:?}");
    assert_eq!(start.totals.puts, 800);

    // A split: the parent's counts stay with its table.
    assert!(store.split_region("t", b"r0010", Some(b"r0050")).expect("split"));
    let split = store.metrics();
    never_backwards(&start, &split, "split");
    assert_eq!(requests(table(&split, "t")), requests(Some(t)), "the split lost nothing, counted nothing twice");
    assert_eq!(regions(&store, "t").len(), 3);

    // A merge of the daughters back (once compaction has rewritten their
    // references to the parent's files), then a reopen of the merged region.
    store.compact_table("t", true).expect("compact the daughters");
    let names = regions(&store, "t");
    store.merge_regions(&names[0], &names[1]).expect("merge");
    let merged = store.metrics();
    never_backwards(&split, &merged, "merge");
    assert_eq!(requests(table(&merged, "t")), requests(Some(t)));
    assert!(table(&merged, "t").is_some_and(|m| m.bytes_flushed >= t.bytes_flushed && m.compactions >= t.compactions));
    let first = regions(&store, "t")[0].clone();
    store.close_region(&first).expect("close");
    store.open_region(&first).expect("open");
    let reopened = store.metrics();
    never_backwards(&merged, &reopened, "reopen");
    assert_eq!(table(&reopened, "t").map(|c| c.puts), Some(400));

    // More work on the merged regions, then the table goes.
    load(&store, "t", 50);
    let worked = store.metrics();
    never_backwards(&reopened, &worked, "writes after the merge");
    let t = table(&worked, "t").expect("t");
    assert_eq!(t.puts, 450);
    store.disable_table("t").expect("disable");
    store.delete_table("t").expect("delete");
    let dropped = store.metrics();
    never_backwards(&worked, &dropped, "drop");
    assert_eq!(table(&dropped, "t"), None);
    assert_eq!(dropped.totals.tables_dropped, 1);
    let d = dropped.dropped_tables;
    assert_eq!(requests(Some(d)), requests(Some(t)), "the dropped table's counts are kept whole");
    assert!(d.bytes_flushed >= t.bytes_flushed && d.compactions == t.compactions, "{d:?} {t:?}");
    assert_eq!(dropped.totals.puts, 850);
    assert_eq!(table(&dropped, "u"), table(&worked, "u"), "the other table is untouched");

    // A new table of the same name starts from nothing; the totals go on.
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create again");
    load(&store, "t", 10);
    let again = store.metrics();
    never_backwards(&dropped, &again, "a new table of the same name");
    assert_eq!(table(&again, "t").map(|c| c.puts), Some(10));
    assert_eq!(again.totals.puts, 860);
    store.close().expect("close");
}

/// A flush with nothing to write (an empty memstore) makes no file and is
/// neither counted nor listed as a flush (it filled the status page's
/// recent flushes with `bytes=0` lines); one with data is both.
#[test]
fn a_flush_with_nothing_to_write_is_not_a_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    let flushes =
        |s: &Store| (s.metrics().totals.disk_flushes, s.recent_events().iter().filter(|e| e.kind == "flush").count());
    store.flush_table("t").expect("an empty flush");
    assert_eq!(flushes(&store), (0, 0), "an empty flush counted or listed");
    store.put("t", b"r", &[(b"f", b"q", b"v")], None).expect("put");
    store.flush_table("t").expect("flush");
    assert_eq!(flushes(&store), (1, 1), "a flush with data");
    store.flush_table("t").expect("an empty flush again");
    assert_eq!(flushes(&store), (1, 1), "the second empty flush");
    store.close().expect("close");
}
