//! A client batch that writes a row more than once. Puts alone share one
//! mini-batch (one sequence id, one WAL record): the last put of a column
//! wins, read from the memstore, after WAL replay and after a flush. A
//! delete of the latest version still sees the put its batch made before
//! it (that repeat starts a new mini-batch): it deletes that put's version,
//! where a delete blind to it would mark only the current millisecond.

use store::region::{MutationRef, RowMutations};
use store::testing::{StoreBuilder, sync_wal_table};
use store::{Get, Store};

fn put<'a>(qualifier: &'a [u8], value: &'a [u8]) -> MutationRef<'a> {
    MutationRef::Put { family: b"f", qualifier, timestamp: None, value }
}

/// Row `a`'s (qualifier, value) pairs, newest version of each column.
fn row_a(store: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
    let cells = store.get("t", &Get::new(&b"a"[..])).expect("get");
    cells.iter().map(|c| (c.qualifier.to_vec(), c.value.to_vec())).collect()
}

#[test]
fn the_last_put_of_a_repeated_row_wins_in_memory_after_replay_and_on_disk() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let builder = StoreBuilder::new().flush_only_when_asked();
    let want = vec![(b"q".to_vec(), b"third".to_vec()), (b"r".to_vec(), b"other".to_vec())];
    {
        let store = builder.open(tmp.path()).expect("open");
        store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
        let (first, second, b, third) = (
            [put(b"q", b"first")],
            [put(b"q", b"second"), put(b"r", b"other")],
            [put(b"q", b"b")],
            [put(b"q", b"third")],
        );
        let batch = [
            RowMutations { row: b"a", mutations: &first },
            RowMutations { row: b"b", mutations: &b },
            RowMutations { row: b"a", mutations: &second },
            RowMutations { row: b"a", mutations: &third },
        ];
        store.mutate_rows("t", &batch, None).expect("batch");
        assert_eq!(row_a(&store), want, "in the memstore");
        // Dropped without a close: the rows are in the WAL alone.
    }
    let store = builder.open(tmp.path()).expect("reopen");
    assert_eq!(row_a(&store), want, "after WAL replay");
    store.flush_table("t").expect("flush");
    assert_eq!(row_a(&store), want, "after a flush");
    let b = store.get("t", &Get::new(&b"b"[..])).expect("get b");
    assert_eq!(b.len(), 1);
    assert_eq!(&b[0].value[..], b"b");
}

#[test]
fn a_delete_of_the_latest_version_sees_the_put_before_it_in_its_batch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().flush_only_when_asked().open(tmp.path()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let (write, delete) = (
        [MutationRef::Put { family: b"f", qualifier: b"q", timestamp: Some(100), value: b"gone" }, put(b"r", b"kept")],
        [MutationRef::DeleteVersion { family: b"f", qualifier: b"q", timestamp: None }],
    );
    let batch = [RowMutations { row: b"a", mutations: &write }, RowMutations { row: b"a", mutations: &delete }];
    store.mutate_rows("t", &batch, None).expect("batch");
    assert_eq!(row_a(&store), vec![(b"r".to_vec(), b"kept".to_vec())]);
}
