//! Namespaces, as HBase has them, through the embedded API: `default` and
//! `hbase` always exist; a table `ns:t` lives in `data/ns/t` and `t` in
//! `data/default/t`; a namespace is dropped only when empty and never
//! when reserved; and a root written before namespaces (tables at
//! `data/<table>`) opens with its tables moved into `default`, rows and
//! all, also when a crash stopped the move halfway.

use store::testing::StoreBuilder;
use store::{FamilyDescriptor, NamespaceDescriptor, Scan, Store, StoreError, TableDescriptor};

fn namespace(name: &str) -> NamespaceDescriptor {
    NamespaceDescriptor { name: name.into(), configuration: [("owner".to_string(), "ops".to_string())].into() }
}

fn create(store: &Store, table: &str) -> store::Result<()> {
    store.create_table(TableDescriptor::new(table, vec![FamilyDescriptor::new("f")]), &[])
}

fn write(store: &Store, table: &str, n: usize) {
    for i in 0..n {
        let row = format!("r{i:03}");
        store.put(table, row.as_bytes(), &[(b"f", b"q", row.as_bytes())], None).expect("put");
    }
}

fn rows(store: &Store, table: &str) -> usize {
    store.scan(table, Scan::default()).expect("scan").inspect(|r| assert!(r.is_ok(), "row: {r:?}")).count()
}

#[test]
fn tables_live_in_their_namespace_and_a_namespace_goes_only_when_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    assert_eq!(store.list_namespaces().expect("list"), ["default", "hbase"]);
    assert!(matches!(create(&store, "app:t"), Err(StoreError::NamespaceNotFound(ns)) if ns == "app"));
    store.create_namespace(namespace("app")).expect("create namespace");
    assert!(matches!(store.create_namespace(namespace("app")), Err(StoreError::NamespaceExists(_))));
    assert!(matches!(store.create_namespace(namespace("a-b")), Err(StoreError::IllegalName(_))));
    create(&store, "app:t").expect("a table of app");
    create(&store, "t").expect("a table of default");
    assert!(matches!(create(&store, "default:t"), Err(StoreError::TableExists(_))), "default:t is t");
    assert!(matches!(create(&store, "hbase:x"), Err(StoreError::IllegalName(_))), "hbase is the system's");
    write(&store, "app:t", 5);
    write(&store, "default:t", 3);
    assert_eq!((rows(&store, "app:t"), rows(&store, "t")), (5, 3));
    assert!(dir.path().join("data/app/t/.tabledesc").exists() && dir.path().join("data/default/t/.tabledesc").exists());
    assert_eq!(store.namespace_tables("app").expect("tables"), ["app:t"]);
    assert_eq!(store.namespace_tables("default").expect("tables"), ["t"]);
    assert_eq!(store.describe_namespace("app").expect("describe"), namespace("app"));
    store.flush_table("app:t").expect("flush");
    store.close().expect("close");

    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.list_namespaces().expect("list"), ["app", "default", "hbase"]);
    assert_eq!((rows(&store, "app:t"), rows(&store, "t")), (5, 3));
    for reserved in ["default", "hbase"] {
        assert!(
            matches!(store.drop_namespace(reserved), Err(StoreError::NamespaceConstraint(m)) if m.contains("Reserved"))
        );
    }
    match store.drop_namespace("app") {
        Err(StoreError::NamespaceConstraint(m)) => assert!(m.contains("has 1 tables"), "{m}"),
        other => panic!("a namespace with a table is not dropped: {other:?}"),
    }
    assert!(matches!(store.drop_namespace("nope"), Err(StoreError::NamespaceNotFound(_))));
    store.disable_table("app:t").expect("disable");
    store.delete_table("app:t").expect("delete");
    store.drop_namespace("app").expect("an empty namespace is dropped");
    assert_eq!(store.list_namespaces().expect("list"), ["default", "hbase"]);
    assert!(!dir.path().join("data/app").exists());
    store.close().expect("close");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.list_namespaces().expect("list"), ["default", "hbase"]);
    assert_eq!(rows(&store, "t"), 3);
}

#[test]
fn a_root_laid_out_before_namespaces_opens_with_its_tables_in_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = StoreBuilder::new().open(dir.path()).expect("open");
        for t in ["a", "b"] {
            create(&store, t).expect("create");
            write(&store, t, 7);
            store.flush_table(t).expect("flush");
        }
        write(&store, "a", 9); // in the WAL only
        store.close().expect("close");
    }
    // The layout of a version before namespaces: data/<table>, no
    // namespace directories.
    let data = dir.path().join("data");
    for t in ["a", "b"] {
        std::fs::rename(data.join("default").join(t), data.join(t)).expect("to the old layout");
    }
    std::fs::remove_dir_all(data.join("default")).expect("no default");
    std::fs::remove_dir_all(data.join("hbase")).expect("no hbase");
    // A crash stopped an earlier open's move halfway: `a` moved, `b` not.
    std::fs::create_dir_all(data.join("default")).expect("default");
    std::fs::rename(data.join("a"), data.join("default/a")).expect("a moved");
    let store = StoreBuilder::new().open(dir.path()).expect("open the old layout");
    assert_eq!((rows(&store, "a"), rows(&store, "b")), (9, 7));
    assert!(data.join("default/a/.tabledesc").exists() && data.join("default/b/.tabledesc").exists());
    assert!(!data.join("a").exists() && !data.join("b").exists());
    assert_eq!(store.list_namespaces().expect("list"), ["default", "hbase"]);
    write(&store, "b", 10);
    store.close().expect("close");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!((rows(&store, "a"), rows(&store, "b")), (9, 10));
}
