//! Names that once destroyed data, through the embedded API: every table
//! and family name a client can send is checked by one set of rules
//! (`store::names`, HBase's), refused names change nothing on disk, and a
//! descriptor on disk with such a name (left by an older version) is
//! refused as corrupt instead of being opened.
//!
//! What each test proves:
//! - the regression corpus (`tests/data/hostile_names.txt`: the names that
//!   were seen to lose data, and their relatives) is refused as a table
//!   name and as a family name, at create and at alter; afterwards, and
//!   after a reopen, every row written before is there and the root holds
//!   exactly the expected entries;
//! - a seeded fuzz of thousands of names made of the dangerous characters
//!   agrees with an independent statement of HBase's rules, and a sample
//!   of the accepted ones really makes tables and families that survive a
//!   reopen with their rows;
//! - a descriptor naming family `.` (what an older version wrote) is
//!   refused with a corruption error naming it, and its region's
//!   `.regioninfo` and data are left where they are.

use std::collections::BTreeSet;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use store::testing::StoreBuilder;
use store::{FamilyDescriptor, Scan, Store, StoreError, TableDescriptor};

/// The corpus: one name per line, `\xNN` escapes for any byte, `<empty>`
/// for the empty name; `#` starts a comment.
fn corpus() -> Vec<String> {
    let text = include_str!("data/hostile_names.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| if l == "<empty>" { String::new() } else { unescape(l) })
        .collect()
}

fn unescape(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).expect("hex escape"));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("corpus names are UTF-8")
}

fn rows(store: &Store, table: &str) -> usize {
    store.scan(table, Scan::default()).expect("scan").filter(|r| r.is_ok() || panic!("row: {r:?}")).count()
}

fn write_rows(store: &Store, table: &str, family: &str, n: usize) {
    for i in 0..n {
        let row = format!("row{i:04}");
        store.put(table, row.as_bytes(), &[(family.as_bytes(), b"q", row.as_bytes())], None).expect("put");
    }
}

/// Every entry under `dir`, as paths relative to it.
fn tree(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let e = e.expect("entry");
            let p = e.path();
            out.insert(p.strip_prefix(dir).expect("under dir").display().to_string());
            if e.file_type().expect("type").is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// The tables' part of the root (WAL files come and go with each open).
fn data_tree(root: &Path) -> BTreeSet<String> {
    tree(&root.join("data"))
}

fn refused_as_illegal(r: store::Result<()>, what: &str) {
    match r {
        Err(StoreError::IllegalName(_)) => {}
        other => panic!("{what}: expected an illegal-name refusal, got {other:?}"),
    }
}

#[test]
fn the_corpus_is_refused_everywhere_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let names = corpus();
    assert!(names.len() >= 30, "the corpus has {} names", names.len());
    {
        let store = StoreBuilder::new().open(dir.path()).expect("open");
        store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
        write_rows(&store, "t", "f", 100);
        store.flush_table("t").expect("flush");
        write_rows(&store, "t", "f", 150);
        let before = data_tree(dir.path());
        for name in &names {
            let as_table = TableDescriptor::new(name.clone(), vec![FamilyDescriptor::new("f")]);
            refused_as_illegal(store.create_table(as_table, &[]), &format!("table {name:?}"));
            let with_family = TableDescriptor::new("u", vec![FamilyDescriptor::new("f"), FamilyDescriptor::new(name)]);
            refused_as_illegal(store.create_table(with_family, &[]), &format!("family {name:?} at create"));
            let mut altered = store.describe_table("t").expect("describe");
            altered.families.push(FamilyDescriptor::new(name));
            refused_as_illegal(store.alter_table(altered), &format!("family {name:?} added by alter"));
            let mut renamed = store.describe_table("t").expect("describe");
            renamed.families[0].name = name.clone();
            refused_as_illegal(store.alter_table(renamed), &format!("family f renamed {name:?} by alter"));
        }
        assert_eq!(store.list_tables(), ["t"]);
        assert_eq!(data_tree(dir.path()), before, "a refused name changed the root");
        assert_eq!(rows(&store, "t"), 150);
        store.close().expect("close");
    }
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(store.list_tables(), ["t"]);
    assert_eq!(rows(&store, "t"), 150, "every row written is there after a reopen");
}

/// HBase's rules, stated again independently of `store::names` (by
/// character class, as `TableName` and `ColumnFamilyDescriptorBuilder`
/// state them), for the fuzz to compare against.
fn legal_family(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 127
        && !name.starts_with('.')
        && name != "recovered.edits"
        && name.bytes().all(|b| b >= 0x20 && b != 0x7f && b != b':' && b != b'/' && b != b'\\')
}

fn legal_table(name: &str) -> bool {
    let ok = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    let qualifier = |q: &str| q.chars().next().is_some_and(|c| c != '.' && c != '-') && q.chars().all(ok);
    let namespace = |ns: &str| !ns.is_empty() && ns != "hbase" && ns.chars().all(|c| c.is_alphanumeric() || c == '_');
    name.len() <= 255
        && match name.split_once(':') {
            None => qualifier(name),
            Some((ns, q)) => namespace(ns) && qualifier(q),
        }
}

#[test]
fn a_seeded_fuzz_of_names_agrees_with_hbase_rules_and_loses_nothing() {
    const CASES: usize = 20_000;
    const ALPHABET: &[&str] =
        &[".", ".", "/", "\\", ":", "-", "_", "a", "b", "Z", "9", " ", "\0", "\n", "\x7f", "é", "%", "~"];
    let mut rng = SmallRng::seed_from_u64(0xacc0_2d10);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreBuilder::new().open(dir.path()).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    write_rows(&store, "t", "f", 50);
    let (mut accepted_tables, mut accepted_families) = (Vec::new(), Vec::new());
    let (mut legal_tables, mut legal_families) = (0, 0);
    for case in 0..CASES {
        let len = rng.random_range(0..6);
        let name: String = (0..len).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]).collect();
        let table_ok = store::names::check_table_name(&name).is_ok();
        let family_ok = store::names::check_family_name(&name).is_ok();
        assert_eq!(table_ok, legal_table(&name), "case {case}: table name {name:?}");
        assert_eq!(family_ok, legal_family(&name), "case {case}: family name {name:?}");
        legal_tables += usize::from(table_ok);
        legal_families += usize::from(family_ok);
        if table_ok {
            assert!(store::names::child(Path::new("/r"), &name).is_ok(), "{name:?} accepted but not a segment");
        }
        if family_ok {
            assert!(store::names::child(Path::new("/r"), &name).is_ok(), "{name:?} accepted but not a segment");
        }
        // A sample of the accepted names makes real tables and families.
        if table_ok && accepted_tables.len() < 12 && !accepted_tables.contains(&name) {
            if let Some((ns, _)) = name.split_once(':') {
                match store
                    .create_namespace(store::NamespaceDescriptor { name: ns.into(), configuration: Default::default() })
                {
                    Ok(()) | Err(StoreError::NamespaceExists(_)) => {}
                    Err(e) => panic!("namespace {ns:?}: {e}"),
                }
            }
            store
                .create_table(TableDescriptor::new(name.clone(), vec![FamilyDescriptor::new("f")]), &[])
                .expect("create");
            write_rows(&store, &name, "f", 10);
            accepted_tables.push(name.clone());
        }
        if family_ok && name != "f" && accepted_families.len() < 12 && !accepted_families.contains(&name) {
            let t = format!("fam{}", accepted_families.len());
            let desc = TableDescriptor::new(t.clone(), vec![FamilyDescriptor::new(name.clone())]);
            store.create_table(desc, &[]).expect("create with a fuzzed family");
            write_rows(&store, &t, &name, 10);
            accepted_families.push(name.clone());
        }
    }
    assert!(accepted_tables.len() >= 5 && accepted_families.len() >= 5, "the fuzz made too few legal names");
    eprintln!(
        "{CASES} fuzzed names: {legal_tables} legal as table names, {legal_families} as family names; {} tables \
         and {} families made, written and reopened",
        accepted_tables.len(),
        accepted_families.len()
    );
    store.flush_table("t").expect("flush");
    store.close().expect("close");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(rows(&store, "t"), 50);
    for t in &accepted_tables {
        assert_eq!(rows(&store, t), 10, "table {t:?}");
    }
    for (i, family) in accepted_families.iter().enumerate() {
        assert_eq!(rows(&store, &format!("fam{i}")), 10, "family {family:?}");
    }
    // Nothing outside the root's own layout was made.
    let top: BTreeSet<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf8"))
        .collect();
    assert!(top.iter().all(|n| ["data", "WALs", "oldWALs", "LOCK", "wal"].contains(&n.as_str())), "{top:?}");
}

#[test]
fn a_descriptor_with_an_illegal_family_on_disk_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = StoreBuilder::new().open(dir.path()).expect("open");
        store.create_table(TableDescriptor::new("u", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
        write_rows(&store, "u", "f", 50);
        store.flush_table("u").expect("flush");
        store.close().expect("close");
    }
    // What an older version wrote for create_table('u', {'.': {}, 'f': {}}).
    let desc_path = dir.path().join("data/default/u/.tabledesc");
    let text = std::fs::read_to_string(&desc_path).expect("descriptor");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut dot = json["descriptor"]["families"][0].clone();
    dot["name"] = ".".into();
    json["descriptor"]["families"].as_array_mut().expect("families").push(dot);
    std::fs::write(&desc_path, serde_json::to_vec_pretty(&json).expect("json")).expect("write");
    let before = data_tree(dir.path());
    let Err(err) = StoreBuilder::new().open(dir.path()) else { panic!("the store must refuse the descriptor") };
    let message = err.to_string();
    assert!(matches!(err, StoreError::Corruption { .. }), "{message}");
    assert!(message.contains(".tabledesc") && message.contains("cannot start with a period"), "{message}");
    assert_eq!(data_tree(dir.path()), before, "nothing of the table was touched");
    assert!(before.iter().any(|p| p.ends_with(".regioninfo")), "{before:?}");
    // Put right by hand, the table opens with every row.
    std::fs::write(&desc_path, text).expect("restore");
    let store = StoreBuilder::new().open(dir.path()).expect("reopen");
    assert_eq!(rows(&store, "u"), 50);
}

/// A table an older version named by laxer rules (`-legacy`: HBase's rules
/// refuse a leading `-`) is one plain path segment and still opens with its
/// rows; only names that are unsafe on disk refuse the open.
#[test]
fn a_legacy_table_name_that_is_safe_on_disk_still_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = StoreBuilder::new().open(dir.path()).expect("open");
        store.create_table(TableDescriptor::new("legacy", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
        write_rows(&store, "legacy", "f", 20);
        store.flush_table("legacy").expect("flush");
        store.close().expect("close");
    }
    let data = dir.path().join("data/default");
    std::fs::rename(data.join("legacy"), data.join("-legacy")).expect("rename the table's directory");
    let desc_path = data.join("-legacy/.tabledesc");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&desc_path).expect("descriptor")).expect("json");
    json["descriptor"]["name"] = "-legacy".into();
    std::fs::write(&desc_path, serde_json::to_vec_pretty(&json).expect("json")).expect("write");
    let store = StoreBuilder::new().open(dir.path()).expect("a legacy table name opens");
    assert_eq!(rows(&store, "-legacy"), 20);
}
