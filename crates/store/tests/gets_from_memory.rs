//! `Store::get_from_memory`, the get a server answers on its connection's
//! reader thread: the answer `get` gives when the memstores and cached
//! blocks hold it; `None`, with nothing counted, when a block of a file
//! that may hold the row is not cached (the caller then reads it with
//! `get`, on a thread that may wait on the file).

use memstore::Cell;
use store::testing::StoreBuilder;
use store::{FamilyDescriptor, Get, Store, TableDescriptor};

const T: &str = "t";

fn gets_counted(store: &Store) -> u64 {
    store.metrics().tables.iter().find(|t| t.table == T).map_or(0, |t| t.counters.gets)
}

fn values(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .map(|c| format!("{}={}", String::from_utf8_lossy(&c.qualifier), String::from_utf8_lossy(&c.value)))
        .collect()
}

#[test]
fn a_get_from_memory_answers_as_get_does_or_hands_the_get_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(TableDescriptor::new(T, vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    store.put(T, b"a", &[(b"f", b"q1", b"1"), (b"f", b"q2", b"2")], Some(100)).expect("put");
    store.flush_table(T).expect("flush");
    store.put(T, b"a", &[(b"f", b"q1", b"3")], Some(200)).expect("put");
    store.put(T, b"m", &[(b"f", b"q", b"only in the memstore")], None).expect("put");
    let cache = store.block_cache().expect("the default options have a block cache");

    // A row no file may hold: the memstore's answer, counted once.
    cache.clear();
    let before = gets_counted(&store);
    let m = store.get_from_memory(T, &Get::new(b"m".to_vec())).expect("get from memory");
    assert_eq!(m.as_deref().map(values), Some(vec!["q=only in the memstore".to_string()]));
    assert_eq!(gets_counted(&store), before + 1);

    // Row a needs its file's block, which is not cached: handed back, not
    // counted, and the cache is left as it was.
    let before = gets_counted(&store);
    assert_eq!(store.get_from_memory(T, &Get::new(b"a".to_vec())).expect("get from memory"), None);
    assert_eq!(gets_counted(&store), before);
    assert_eq!(store.get_from_memory(T, &Get::new(b"a".to_vec())).expect("again"), None, "it read no block");

    // `get` reads the block and caches it; then memory holds the answer,
    // and it is the same one.
    let read = store.get(T, &Get::new(b"a".to_vec())).expect("get");
    assert_eq!(values(&read), ["q1=3", "q2=2"]);
    assert_eq!(store.get_from_memory(T, &Get::new(b"a".to_vec())).expect("get from memory"), Some(read));

    // Errors are the get's own.
    assert!(store.get_from_memory("missing", &Get::new(b"a".to_vec())).is_err());
}
