//! Bounded WAL recovery: a log several times larger than the memstore limit
//! is replayed entry by entry, flushing as the limit is reached, and every
//! edit is there afterwards; cells that were valid when written are replayed
//! even after `max_cell_size` was lowered.

use store::region::{MutationRef, RowMutations};
use store::testing::{StoreBuilder, sync_wal_table};
use store::wal::Durability;
use store::{Get, Store, StoreOptions};

fn row(i: usize) -> String {
    format!("row{:06}", i * 7919 % 100_000)
}

/// Writes `rows` rows of `value_size` bytes in batches of 100, with no
/// flush (the region's flush size and the memory budget are far above what
/// is written), then drops the store without closing it: everything is in
/// the WAL only.
fn write_wal_only(dir: &std::path::Path, rows: usize, value_size: usize) {
    let builder = StoreBuilder::new().flush_only_when_asked().with(|o| o.max_logs = 1000);
    let store = builder.open(dir).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let value = vec![b'v'; value_size];
    let keys: Vec<String> = (0..rows).map(row).collect();
    for chunk in keys.chunks(100) {
        let muts: Vec<[MutationRef<'_>; 1]> = chunk
            .iter()
            .map(|_| [MutationRef::Put { family: b"f", qualifier: b"q", timestamp: None, value: &value }])
            .collect();
        let batch: Vec<RowMutations<'_>> =
            chunk.iter().zip(&muts).map(|(k, m)| RowMutations { row: k.as_bytes(), mutations: m }).collect();
        store.mutate_rows("t", &batch, None).expect("batch");
    }
    drop(store);
}

/// Bytes of the live WAL files of the store in `dir` (in its instances'
/// directories under `WALs`).
fn wal_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("WALs"))
        .expect("WALs dir")
        .filter_map(|e| e.ok())
        .flat_map(|instance| std::fs::read_dir(instance.path()).expect("an instance's WAL dir").filter_map(|e| e.ok()))
        .filter(|e| e.path().is_file())
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

fn count_present(store: &Store, rows: usize, value_size: usize) -> usize {
    (0..rows)
        .filter(|&i| {
            let cells = store.get("t", &Get::new(row(i).as_bytes())).expect("get");
            cells.len() == 1 && cells[0].value.len() == value_size
        })
        .count()
}

#[test]
fn a_wal_four_times_the_memstore_limit_replays_in_flushes_under_the_limit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (rows, value_size) = (16_000, 1000);
    write_wal_only(tmp.path(), rows, value_size);
    let wal_bytes = wal_bytes(tmp.path());

    // Reopen with a memstore limit a quarter of the log.
    let memory_budget = wal_bytes / 4 * 10 / 4; // global share 0.4 of the budget
    let options = StoreOptions { background: false, memory_budget, ..StoreOptions::default() };
    let limit = options.global_memstore_limit();
    assert!(wal_bytes >= 4 * limit - 4096, "the log ({wal_bytes} B) is at least 4× the limit ({limit} B)");
    let store = Store::open(tmp.path(), options).expect("recovery");
    let flushes = store.recent_events().iter().filter(|e| e.kind == "flush" && e.bytes > 0).count();
    assert!(flushes >= 4, "recovery flushed as the limit was reached ({flushes} flushes, limit {limit} B)");
    // A flushed file holds about what the memstore held (no compression).
    let largest = store.recent_events().iter().filter(|e| e.kind == "flush").map(|e| e.bytes).max().unwrap_or(0);
    assert!(largest <= limit * 11 / 10, "no flush held much more than the limit: {largest} > {limit}");
    assert_eq!(count_present(&store, rows, value_size), rows, "every edit replayed");
    store.close().expect("close");
    let store = Store::open(tmp.path(), StoreOptions { background: false, ..StoreOptions::default() }).expect("reopen");
    assert_eq!(count_present(&store, rows, value_size), rows, "every edit after a clean reopen");
}

#[test]
fn cells_written_before_max_cell_size_was_lowered_are_replayed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write_wal_only(tmp.path(), 300, 20_000);
    let options = StoreOptions { background: false, max_cell_size: 4096, ..StoreOptions::default() };
    let store = Store::open(tmp.path(), options).expect("recovery accepts what was valid when written");
    assert_eq!(count_present(&store, 300, 20_000), 300);
    // New writes still obey the lowered limit.
    let big = vec![b'x'; 20_000];
    assert!(store.put("t", b"new", &[(b"f", b"q", &big)], None).is_err(), "a new oversized cell is refused");
}

/// The recovery of a log 4× the memstore limit, in a process of its own:
/// its peak resident memory stays near the limit, far below the log (the
/// old recovery held every entry and every replayed cell at once).
#[test]
fn recovery_of_a_big_log_peaks_near_the_memstore_limit_in_memory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (rows, value_size) = (64_000, 1000);
    write_wal_only(tmp.path(), rows, value_size);
    let wal_bytes = wal_bytes(tmp.path());
    let memory_budget = wal_bytes / 4 * 10 / 4;
    let limit = StoreOptions { memory_budget, ..StoreOptions::default() }.global_memstore_limit();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_recover_probe"))
        .arg(tmp.path())
        .arg(memory_budget.to_string())
        .output()
        .expect("run recover-probe");
    assert!(out.status.success(), "recover-probe failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    let (hwm, recovered): (u64, usize) = match fields.as_slice() {
        ["hwm", h, "rows", n] => (h.parse().expect("hwm"), n.parse().expect("rows")),
        _ => panic!("unexpected recover-probe output: {stdout}"),
    };
    eprintln!("WAL {wal_bytes} B, memstore limit {limit} B, recovery peak RSS {hwm} B");
    assert_eq!(recovered, rows, "every edit recovered");
    // The process itself (code, libraries, allocator) takes some tens of MB.
    assert!(
        hwm < 2 * limit + (40 << 20),
        "recovery peak RSS {hwm} B is not near the memstore limit {limit} B (WAL {wal_bytes} B)"
    );
    assert!(hwm < wal_bytes, "recovery peak RSS {hwm} B is not below the log's size {wal_bytes} B");
}

/// A region's entries need not be in seq order in the log: a writer takes
/// its seq before it appends, so seq 11 can precede seq 10. Recovery that
/// flushes between them to stay under the memory limit must still replay
/// seq 10 (it once took the flush's seq as the new floor and skipped it).
#[test]
fn an_entry_below_a_flush_made_during_replay_is_still_replayed() {
    use memstore::CellInput;
    use store::wal::{Wal, WalEntry, WalOptions};

    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path(), StoreOptions { background: false, ..StoreOptions::default() }).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let region = store.table_regions("t").expect("regions")[0].id;
    store.close().expect("close");

    // Seq 11 (big: its replay passes the memory limit) before seq 10.
    let fs: std::sync::Arc<dyn store::fs::FileSystem> = std::sync::Arc::new(store::fs::LocalFs);
    let (wal, _) = Wal::open(fs, &tmp.path().join("wal"), WalOptions::default()).expect("open the WAL");
    let big = vec![b'b'; 600_000];
    for (seq, row, value) in [(11u64, &b"late-seq"[..], &big[..]), (10, b"early-seq", b"small")] {
        let cells = [CellInput::put(row, b"f", b"q", 1, value)];
        wal.append(&WalEntry::from_cells(region, seq, &cells), Durability::SyncWal).expect("append");
    }
    wal.close().expect("close the WAL");

    // A memstore limit of 400 KB: replaying seq 11 flushes before seq 10.
    let options = StoreOptions { background: false, memory_budget: 1_000_000, ..StoreOptions::default() };
    let store = Store::open(tmp.path(), options).expect("recovery");
    assert!(store.recent_events().iter().any(|e| e.kind == "flush"), "recovery flushed");
    for row in [&b"late-seq"[..], b"early-seq"] {
        let cells = store.get("t", &Get::new(row)).expect("get");
        assert_eq!(cells.len(), 1, "{} replayed", String::from_utf8_lossy(row));
    }
    // And again after a crash right after recovery (nothing lost, nothing doubled).
    drop(store);
    let store = Store::open(tmp.path(), StoreOptions { background: false, ..StoreOptions::default() }).expect("reopen");
    for row in [&b"late-seq"[..], b"early-seq"] {
        let cells = store.get("t", &Get::new(row)).expect("get");
        assert_eq!(cells.len(), 1, "{} after a reopen", String::from_utf8_lossy(row));
    }
}

/// A table directory without its descriptor is an uncommitted creation
/// (removed at open) only while it holds no store file; one with data is
/// refused, naming the missing descriptor, and nothing of it is deleted.
#[test]
fn a_table_without_its_descriptor_is_removed_only_if_it_holds_no_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = || StoreOptions { background: false, ..StoreOptions::default() };
    let store = Store::open(dir.path(), options()).expect("open");
    store.create_table(sync_wal_table("t", &["f"]), &[]).expect("create");
    let mut empty = sync_wal_table("t", &["f"]);
    empty.name = "empty".into();
    store.create_table(empty, &[b"m".to_vec()]).expect("create");
    store.put("t", b"r", &[(b"f", b"q", b"v")], None).expect("put");
    store.flush_table("t").expect("flush");
    store.close().expect("close");

    // An interrupted creation: regions, no descriptor, no data.
    let empty_dir = dir.path().join("data/default/empty");
    std::fs::remove_file(empty_dir.join(".tabledesc")).expect("remove descriptor");
    // A lost descriptor of a table with data.
    let t_desc = dir.path().join("data/default/t/.tabledesc");
    let saved = std::fs::read(&t_desc).expect("read descriptor");
    std::fs::remove_file(&t_desc).expect("remove descriptor");

    let err = Store::open(dir.path(), options()).expect_err("a table with data and no descriptor");
    assert!(
        matches!(&err, store::StoreError::Corruption { path, .. } if path == &t_desc),
        "the error names the missing descriptor: {err}"
    );
    assert!(dir.path().join("data/default/t").exists(), "nothing of the table was deleted");

    std::fs::write(&t_desc, saved).expect("restore the descriptor");
    let store = Store::open(dir.path(), options()).expect("open with the descriptor back");
    assert_eq!(store.list_tables(), ["t"], "the uncommitted creation is gone");
    assert!(!empty_dir.exists());
    assert_eq!(store.get("t", &Get::new(&b"r"[..])).expect("get")[0].value, &b"v"[..]);
}

/// A store written before WAL directories were per instance kept its WAL
/// in `<root>/wal` and archived files in `<root>/wal/archive`. Opening it
/// fences that directory like any earlier instance's, replays it, archives
/// its files (and the old archive) in `oldWALs`, and removes it; the new
/// instance writes in `WALs/<its name>`, numbering its files after all of
/// them.
#[test]
fn a_store_with_the_old_wal_layout_is_replayed_and_moved() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    write_wal_only(dir, 500, 100);
    let wals = dir.join(store::wal::takeover::WALS_DIR);
    let instances: Vec<_> = std::fs::read_dir(&wals).expect("WALs").flatten().map(|e| e.path()).collect();
    assert_eq!(instances.len(), 1, "one instance wrote: {instances:?}");
    let legacy = dir.join("wal");
    std::fs::rename(&instances[0], &legacy).expect("lay the WAL out as before");
    // A store of the old layout has no oldWALs (nor WALs) yet.
    let _ = std::fs::remove_dir_all(dir.join(store::wal::ARCHIVE_DIR));
    std::fs::remove_dir(&wals).expect("WALs is empty now");
    let mut replayed: Vec<String> = std::fs::read_dir(&legacy)
        .expect("wal")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    std::fs::create_dir(legacy.join("archive")).expect("the old archive");
    let old_archived = store::wal::log_file_name(0);
    std::fs::write(legacy.join("archive").join(&old_archived), b"an archived file").expect("write");

    let store = Store::open(dir, StoreOptions { background: false, ..StoreOptions::default() }).expect("reopen");
    for i in 0..500 {
        assert!(!store.get("t", &Get::new(row(i).as_bytes())).expect("get").is_empty(), "row {i}");
    }
    assert!(!legacy.exists(), "the old WAL directory is gone");
    let mut archived: Vec<String> = std::fs::read_dir(dir.join(store::wal::ARCHIVE_DIR))
        .expect("oldWALs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    archived.sort();
    replayed.push(old_archived);
    replayed.sort();
    assert_eq!(archived, replayed, "the replayed files and the old archive are in oldWALs");
    let own: Vec<_> = std::fs::read_dir(&wals).expect("WALs").flatten().map(|e| e.path()).collect();
    assert_eq!(own, [store.wal().dir().to_path_buf()], "only the new instance's directory is left");
    let newest = store.wal().live_files().pop().expect("a live file");
    let newest = newest.file_name().expect("name").to_string_lossy().into_owned();
    assert!(archived.iter().all(|a| *a < newest), "{newest} is numbered after every archived file");
    store.close().expect("close");
}
