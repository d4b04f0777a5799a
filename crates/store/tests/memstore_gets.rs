//! Gets of named columns answered from the memstore alone (HBase's lazy
//! seek, `Region::get_from_memstores`): only when every named column's
//! newest visible cell in the memstore is newer than everything in the
//! store files that may hold the row; otherwise the files are read too.
//! Each case checks the answer and whether the files were skipped (the
//! `gets_from_memstore` counter), so a path that skipped files it needed,
//! or never skipped any, fails here. The model suite compares the same
//! gets with its model through random deletes, client timestamps, flushes
//! and compactions.

use memstore::TimeRange;
use store::region::Mutation;
use store::testing::StoreBuilder;
use store::{Column, FamilyDescriptor, Get, Store, TableDescriptor};

const T: &str = "t";

fn named(row: &str, qualifiers: &[&str]) -> Get {
    let columns =
        qualifiers.iter().map(|q| Column { family: b"f".to_vec(), qualifier: Some(q.as_bytes().to_vec()) }).collect();
    Get { columns, ..Get::new(row.as_bytes()) }
}

fn from_memstore(store: &Store) -> u64 {
    let m = store.metrics();
    m.tables.iter().find(|t| t.table == T).map_or(0, |t| t.counters.gets_from_memstore)
}

/// The values the get returns, as `qualifier=value`, and whether the files
/// were skipped.
fn read(store: &Store, get: &Get) -> (Vec<String>, bool) {
    let before = from_memstore(store);
    let cells = store.get(T, get).expect("get");
    let values = cells
        .iter()
        .map(|c| format!("{}={}", String::from_utf8_lossy(&c.qualifier), String::from_utf8_lossy(&c.value)))
        .collect();
    (values, from_memstore(store) > before)
}

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    // Three versions kept, so that a get of one version has older ones to
    // leave behind.
    let mut family = FamilyDescriptor::new("f");
    family.max_versions = 3;
    store.create_table(TableDescriptor::new(T, vec![family]), &[]).expect("create");
    (dir, store)
}

#[test]
fn named_columns_newer_in_the_memstore_skip_the_files() {
    let (_dir, store) = open();
    store
        .put(T, b"r", &[(b"f", b"a", b"old-a"), (b"f", b"b", b"old-b"), (b"f", b"c", b"old-c")], Some(100))
        .expect("put");
    store.flush_table(T).expect("flush");
    store.put(T, b"r", &[(b"f", b"a", b"new-a"), (b"f", b"b", b"new-b")], Some(200)).expect("put");

    assert_eq!(read(&store, &named("r", &["a", "b"])), (vec!["a=new-a".into(), "b=new-b".into()], true));
    assert_eq!(read(&store, &named("r", &["b", "a", "a"])), (vec!["a=new-a".into(), "b=new-b".into()], true));
    // c is only in the file.
    assert_eq!(read(&store, &named("r", &["a", "c"])), (vec!["a=new-a".into(), "c=old-c".into()], false));
    // A column nobody wrote: the files must say so.
    assert_eq!(read(&store, &named("r", &["a", "z"])), (vec!["a=new-a".into()], false));
    // Whole rows, whole families, time ranges and several versions read the files.
    assert!(!read(&store, &Get::new(b"r".to_vec())).1, "a whole row");
    let family = Get { columns: vec![Column { family: b"f".to_vec(), qualifier: None }], ..Get::new(b"r".to_vec()) };
    assert!(!read(&store, &family).1, "a whole family");
    let ranged = Get { time_range: TimeRange { min: 150, max: u64::MAX }, ..named("r", &["a"]) };
    assert_eq!(read(&store, &ranged), (vec!["a=new-a".into()], false));
    let versions = Get { max_versions: 2, ..named("r", &["a"]) };
    assert_eq!(read(&store, &versions), (vec!["a=new-a".into(), "a=old-a".into()], false));
    // Once flushed, the row is read from the files alone (the memstore has
    // none of it), and a delete marker is a cell the memstore has.
    store.flush_table(T).expect("flush");
    assert_eq!(read(&store, &named("r", &["a", "c"])), (vec!["a=new-a".into(), "c=old-c".into()], false));
    let delete = Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"a".to_vec(), timestamp: None };
    store.mutate_row(T, b"r", &[delete], None).expect("delete");
    assert_eq!(read(&store, &named("r", &["a", "c"])), (vec!["c=old-c".into()], false));
    // A row no file may hold (bloom filters) is answered by the memstore.
    store.put(T, b"fresh", &[(b"f", b"a", b"x")], Some(1)).expect("put");
    assert_eq!(read(&store, &named("fresh", &["a"])), (vec!["a=x".into()], true));
}

#[test]
fn a_memstore_cell_no_newer_than_the_files_reads_them() {
    let (_dir, store) = open();
    store.put(T, b"r", &[(b"f", b"a", b"file")], Some(500)).expect("put");
    store.flush_table(T).expect("flush");
    // A client timestamp older than the file's cell: the file's wins.
    store.put(T, b"r", &[(b"f", b"a", b"older")], Some(400)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec!["a=file".into()], false));
    // A tie on the timestamp: the later write wins, and only a merge knows.
    store.put(T, b"r", &[(b"f", b"a", b"tie")], Some(500)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec!["a=tie".into()], false));
    store.put(T, b"r", &[(b"f", b"a", b"newer")], Some(501)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec!["a=newer".into()], true));
}

#[test]
fn deletes_on_either_side_are_honoured() {
    let (_dir, store) = open();
    let delete = |m: Mutation| store.mutate_row(T, b"r", &[m], None).expect("delete");
    // A family delete in the file, newer than the memstore's client-stamped put.
    store.put(T, b"r", &[(b"f", b"a", b"v1")], Some(100)).expect("put");
    delete(Mutation::DeleteFamily { family: b"f".to_vec(), timestamp: Some(300) });
    store.flush_table(T).expect("flush");
    store.put(T, b"r", &[(b"f", b"a", b"v2")], Some(200)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec![], false), "the file's delete masks it");
    // Newer than the delete: visible, and the file need not be read.
    store.put(T, b"r", &[(b"f", b"a", b"v3")], Some(400)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec!["a=v3".into()], true));

    // A column delete in the memstore: the column has no memstore answer.
    store.put(T, b"r", &[(b"f", b"b", b"b1")], Some(400)).expect("put");
    store.flush_table(T).expect("flush");
    delete(Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"b".to_vec(), timestamp: Some(450) });
    assert_eq!(read(&store, &named("r", &["b"])), (vec![], false));
    // A newer put of it in the file than the memstore's delete shows.
    store.put(T, b"r", &[(b"f", b"c", b"c-file")], Some(900)).expect("put");
    store.flush_table(T).expect("flush");
    delete(Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"c".to_vec(), timestamp: Some(800) });
    assert_eq!(read(&store, &named("r", &["c"])), (vec!["c=c-file".into()], false));
}

/// The active segment alone answers only with cells newer than everything
/// the pipeline's segments hold: a client timestamp can make an older
/// segment's cell the newest, and then it is that cell the get returns.
#[test]
fn the_active_segment_alone_answers_only_when_newer_than_the_pipeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A ~1 KiB in-memory flush threshold: a write that fills the active
    // segment past it pushes the segment into the pipeline, in the writer.
    let store = StoreBuilder::new().region_flush_size(1 << 20).open(dir.path()).expect("open");
    let mut family = FamilyDescriptor::new("f");
    family.max_versions = 3;
    family.memstore_policy = "basic".into();
    family.inmemory_flush_share = Some(0.001);
    store.create_table(TableDescriptor::new(T, vec![family]), &[]).expect("create");
    let inmemory_flushes = |s: &Store| s.metrics().totals.inmemory_flushes;
    let filler = vec![b'x'; 4096];
    let push = |row: &[u8], qualifier: &[u8], value: &[u8], ts: u64| {
        let before = inmemory_flushes(&store);
        store.put(T, row, &[(b"f", qualifier, value), (b"f", b"filler", &filler)], Some(ts)).expect("put");
        assert!(inmemory_flushes(&store) > before, "the write pushed its segment into the pipeline");
    };
    // In the pipeline: a at 300 (a client timestamp ahead of what follows).
    push(b"r", b"a", b"pipeline-a", 300);
    // In the active segment, small: a at 200 and b at 400.
    store.put(T, b"r", &[(b"f", b"a", b"active-a"), (b"f", b"b", b"active-b")], Some(200)).expect("put");
    assert_eq!(read(&store, &named("r", &["a"])), (vec!["a=pipeline-a".into()], true), "the pipeline's newer a");
    store.put(T, b"r", &[(b"f", b"b", b"active-b")], Some(400)).expect("put");
    assert_eq!(read(&store, &named("r", &["b"])), (vec!["b=active-b".into()], true));
    // A column delete in the pipeline, newer than the active segment's put.
    store.put(T, b"r", &[(b"f", b"c", b"active-c")], Some(500)).expect("put");
    let before = inmemory_flushes(&store);
    let delete = Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"c".to_vec(), timestamp: Some(600) };
    store.mutate_row(T, b"r", &[delete], None).expect("delete");
    store.put(T, b"s", &[(b"f", b"filler", &filler)], Some(1)).expect("put");
    assert!(inmemory_flushes(&store) > before, "the delete went into the pipeline");
    store.put(T, b"r", &[(b"f", b"c", b"active-c2")], Some(550)).expect("put");
    assert_eq!(read(&store, &named("r", &["c"])), (vec![], false), "the pipeline's delete masks both puts");
    store.put(T, b"r", &[(b"f", b"c", b"active-c3")], Some(700)).expect("put");
    assert_eq!(read(&store, &named("r", &["c", "b"])), (vec!["b=active-b".into(), "c=active-c3".into()], true));
}
