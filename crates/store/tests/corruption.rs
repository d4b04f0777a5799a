//! Damaged files on disk, through `Store::open` and the read path:
//!
//! - a torn WAL tail (the newest WAL file cut at many offsets) is the normal
//!   debris of a crash: the store opens, every write whose record ends
//!   before the cut is there whole, the cut one and later ones are not, and
//!   the store keeps working and recovering afterwards;
//! - a flipped byte inside the WAL (a record followed by valid ones, a
//!   sealed older file, a file header) is damage to acknowledged data: open
//!   fails with `StoreError::Corruption` naming the WAL file, never panics,
//!   and leaves the file as it was;
//! - a flipped byte in a store file's data block is found when that block is
//!   read: those reads (and scans and compactions through it) fail with
//!   `Corruption` naming the file, while other blocks of the same file,
//!   other regions and other tables keep serving, and nothing is deleted;
//! - a flipped byte in a store file's trailer, meta, index or bloom section
//!   makes open fail with `Corruption` naming the file;
//! - a garbage or truncated MANIFEST, `.tabledesc` or `.regioninfo`, or a
//!   MANIFEST naming a missing file, makes open fail with a typed error
//!   naming that file.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use store::fs::{FileSystem, LocalFs};
use store::storefile::StoreFileReader;
use store::testing::{StoreBuilder, copy_dir};
use store::wal::record::SYNC_MARK_LEN;
use store::wal::{Durability, WalOptions};
use store::{FamilyDescriptor, Get, Scan, Store, StoreError, StoreOptions, TableDescriptor};

// ---------------------------------------------------------------- helpers

fn options_with_wal_roll(roll_size: u64) -> StoreOptions {
    StoreBuilder::new().wal(WalOptions { roll_size, ..WalOptions::default() }).options()
}

/// A SyncWal table with families `f` and `g` and small blocks.
fn table(name: &str) -> TableDescriptor {
    let mut f = FamilyDescriptor::new("f");
    f.block_size = 1024;
    let mut g = FamilyDescriptor::new("g");
    g.block_size = 1024;
    let mut desc = TableDescriptor::new(name, vec![f, g]);
    desc.durability = Durability::SyncWal;
    desc
}

/// The cells version `v` of `row` is written with: two in `f`, one in `g`.
fn row_cells(row: &str, v: u64) -> Vec<(&'static [u8], &'static [u8], Vec<u8>)> {
    let value = |q: &str| format!("{row}/{v}/{q}/{}", "x".repeat(60 + (v % 7) as usize)).into_bytes();
    vec![(b"f", b"q0", value("f:q0")), (b"f", b"q1", value("f:q1")), (b"g", b"q0", value("g:q0"))]
}

fn put_row(store: &Store, table: &str, row: &str, v: u64) {
    let cells = row_cells(row, v);
    let refs: Vec<(&[u8], &[u8], &[u8])> = cells.iter().map(|(f, q, val)| (*f, *q, val.as_slice())).collect();
    store.put(table, row.as_bytes(), &refs, None).expect("put");
}

/// Whether version `v` of `row` is there (whole); an error if only part of
/// it is, or something else is.
fn row_present(store: &Store, table: &str, row: &str, v: u64) -> store::Result<bool> {
    let got = store.get(table, &Get::new(row.as_bytes()))?;
    if got.is_empty() {
        return Ok(false);
    }
    let got: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> =
        got.into_iter().map(|c| (c.family.to_vec(), c.qualifier.to_vec(), c.value.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> =
        row_cells(row, v).into_iter().map(|(f, q, val)| (f.to_vec(), q.to_vec(), val)).collect();
    assert_eq!(got, want, "row {row} is not whole version {v}");
    Ok(true)
}

fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The live WAL files of a store directory (in its instances' directories
/// under `WALs`), oldest first (file numbers are unique across instances).
fn wal_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("WALs"))
        .expect("WALs dir")
        .flatten()
        .flat_map(|instance| std::fs::read_dir(instance.path()).expect("an instance's WAL dir").flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    v
}

/// `file` of the store `from` in its copy `to`.
fn in_copy(file: &Path, from: &Path, to: &Path) -> PathBuf {
    to.join(file.strip_prefix(from).expect("inside the store"))
}

/// Where a WAL file is once an open fenced its instance's directory
/// (`<name>-splitting`): an open that fails on it leaves it there, as
/// HBase leaves a dead server's `-splitting` directory until it is split.
fn fenced(file: &Path) -> PathBuf {
    let dir = file.parent().expect("a WAL dir");
    let name = dir.file_name().expect("a name").to_string_lossy();
    dir.with_file_name(format!("{name}-splitting")).join(file.file_name().expect("a file name"))
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).expect("stat").len()
}

fn flip(path: &Path, offset: u64) {
    let mut data = std::fs::read(path).expect("read");
    data[offset as usize] ^= 0xFF;
    std::fs::write(path, data).expect("write");
}

/// Opens `dir`, turning a panic into a test failure that says where.
fn open(dir: &Path, options: StoreOptions, what: &str) -> store::Result<Store> {
    std::panic::catch_unwind(AssertUnwindSafe(|| Store::open(dir, options)))
        .unwrap_or_else(|_| panic!("Store::open panicked on {what}"))
}

/// Asserts `result` is a `Corruption` naming `file`; returns the message.
fn expect_corruption<T>(result: store::Result<T>, file: &Path, what: &str) -> String {
    match result {
        Err(e @ StoreError::Corruption { .. }) => {
            let msg = e.to_string();
            let StoreError::Corruption { path, .. } = &e else { unreachable!() };
            assert_eq!(path, file, "{what}: the corruption names the damaged file: {msg}");
            assert!(msg.contains(&*file.to_string_lossy()), "{what}: the message names the file: {msg}");
            msg
        }
        Err(other) => panic!("{what}: expected corruption of {}, got {other:?}", file.display()),
        Ok(_) => panic!("{what}: expected corruption of {}, but it succeeded", file.display()),
    }
}

// -------------------------------------------------------------- WAL tails

#[test]
fn a_torn_wal_tail_loses_exactly_the_writes_after_the_cut() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("base");
    let store = StoreBuilder::new().open(&base).expect("open");
    store.create_table(table("t"), &[b"m".to_vec()]).expect("create");
    let wal = wal_files(&base).pop().expect("a WAL file");
    // (row, end of its record in the WAL file): each put is synced alone.
    let mut writes = Vec::new();
    for i in 0..40u64 {
        let row = if i % 2 == 0 { format!("a{i:03}") } else { format!("n{i:03}") };
        put_row(&store, "t", &row, i);
        writes.push((row, file_len(&wal)));
    }
    // Dropped without a flush: the rows are only in the WAL. Closing the
    // WAL ended it with a sync mark; a crash leaves none, so it goes.
    drop(store);
    assert_eq!(wal_files(&base).pop().as_ref(), Some(&wal), "the writes went to one WAL file");
    assert!(files_under(&base, ".sf").is_empty(), "nothing was flushed");
    let last_end = writes.last().map(|w| w.1).expect("writes");
    assert_eq!(file_len(&wal), last_end + SYNC_MARK_LEN as u64, "the closing sync mark follows the last record");
    std::fs::OpenOptions::new().write(true).open(&wal).and_then(|f| f.set_len(last_end)).expect("as a crash left it");
    let full = file_len(&wal);
    assert_eq!(writes.last().map(|w| w.1), Some(full));

    let header = 44u64;
    let mut cuts = vec![0, 20, header - 1, header, header + 1, full - 1, full];
    for k in [0usize, 5, 17, 30, 38] {
        let end = writes[k].1;
        cuts.extend([end - 1, end, end + 1, end + 9]);
    }
    let mid = (writes[20].1 + writes[21].1) / 2;
    cuts.push(mid);
    cuts.sort_unstable();
    cuts.dedup();

    for (case, &cut) in cuts.iter().enumerate() {
        let dir = tmp.path().join(format!("cut-{case}"));
        copy_dir(&base, &dir).expect("copy the store directory");
        let wal_copy = in_copy(&wal, &base, &dir);
        std::fs::OpenOptions::new().write(true).open(&wal_copy).and_then(|f| f.set_len(cut)).expect("truncate");
        let store = open(&dir, StoreBuilder::new().options(), &format!("a WAL cut at {cut}"))
            .unwrap_or_else(|e| panic!("a torn tail at {cut} is not corruption: {e}"));
        for (i, (row, end)) in writes.iter().enumerate() {
            let present = row_present(&store, "t", row, i as u64).expect("get");
            assert_eq!(present, *end <= cut, "cut at {cut}: write {i} (record ending at {end})");
        }
        // The store goes on after the torn tail: new writes, a crash, and
        // another recovery keep both the survivors and the new writes.
        put_row(&store, "t", "z-after", 1000);
        drop(store);
        let store =
            open(&dir, StoreBuilder::new().options(), "a reopen after a torn tail").expect("reopen after a torn tail");
        for (i, (row, end)) in writes.iter().enumerate() {
            assert_eq!(row_present(&store, "t", row, i as u64).expect("get"), *end <= cut, "cut at {cut}, reopen");
        }
        assert!(row_present(&store, "t", "z-after", 1000).expect("get"), "cut at {cut}: the write after recovery");
        store.close().expect("close");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}

// ------------------------------------------------------ WAL bit flips

/// A store whose writes are spread over several WAL files (none flushed),
/// the newest of which holds at least four records. Returns, per write, its
/// row, WAL file and record range.
fn wal_base(dir: &Path) -> Vec<(String, PathBuf, u64, u64)> {
    let store = Store::open(dir, options_with_wal_roll(2048)).expect("open");
    store.create_table(table("t"), &[b"m".to_vec()]).expect("create");
    let mut writes: Vec<(String, PathBuf, u64, u64)> = Vec::new();
    for i in 0..500u64 {
        let newest = wal_files(dir).pop();
        if i >= 40 && newest.is_some_and(|f| writes.iter().filter(|w| w.1 == f).count() >= 4) {
            break;
        }
        let row = if i % 3 == 0 { format!("a{i:03}") } else { format!("n{i:03}") };
        put_row(&store, "t", &row, i);
        // Rolls happen after a write, so the record is in the newest file
        // unless that file is empty: then it is in the one before.
        let files = wal_files(dir);
        let (file, end) = files
            .iter()
            .rev()
            .map(|f| (f.clone(), file_len(f)))
            .find(|(_, len)| *len > 44)
            .expect("a WAL file with the record");
        let start = match writes.last() {
            Some((_, prev_file, _, prev_end)) if *prev_file == file => *prev_end,
            _ => 44,
        };
        writes.push((row, file, start, end));
    }
    drop(store);
    writes
}

#[test]
fn a_flipped_byte_inside_the_wal_is_corruption_naming_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("base");
    let writes = wal_base(&base);
    let files = wal_files(&base);
    assert!(files.len() >= 4, "several WAL files: {files:?}");
    let newest = files.last().expect("newest").clone();
    let in_newest: Vec<_> = writes.iter().filter(|w| w.1 == newest).collect();
    assert!(in_newest.len() >= 3, "the newest file holds a few records");
    let older = files[1].clone();
    let in_older: Vec<_> = writes.iter().filter(|w| w.1 == older).collect();
    assert!(in_older.len() >= 2, "an older file holds records");

    let mid = in_newest[in_newest.len() / 2 - 1];
    let mut cases: Vec<(String, PathBuf, u64)> = vec![
        ("the crc of a record in the middle of the newest file".into(), newest.clone(), mid.2),
        ("the length of a record in the middle of the newest file".into(), newest.clone(), mid.2 + 6),
        ("the region id of a record in the middle of the newest file".into(), newest.clone(), mid.2 + 12),
        ("a value inside a record in the middle of the newest file".into(), newest.clone(), (mid.2 + mid.3) / 2),
        ("the first record of the newest file".into(), newest.clone(), in_newest[0].2 + 30),
        ("the magic of the newest file".into(), newest.clone(), 0),
        ("the header checksum of the newest file".into(), newest.clone(), 41),
        ("a record in the middle of a sealed older file".into(), older.clone(), (in_older[0].2 + in_older[0].3) / 2),
        ("the last record of a sealed older file".into(), older.clone(), in_older[in_older.len() - 1].3 - 1),
        ("the header of a sealed older file".into(), older.clone(), 30),
        ("the magic of the oldest file".into(), files[0].clone(), 3),
    ];
    // And a sweep over the records of the middle file.
    let len = file_len(&files[files.len() / 2]);
    cases.extend((44..len).step_by(37).map(|o| (format!("sweep at {o}"), files[files.len() / 2].clone(), o)));

    for (case, (what, file, offset)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("flip-{case}"));
        copy_dir(&base, &dir).expect("copy the store directory");
        let target = in_copy(file, &base, &dir);
        flip(&target, *offset);
        let damaged = std::fs::read(&target).expect("read");
        let what = format!("a flipped byte in {what} ({} at {offset})", file.display());
        let result = open(&dir, options_with_wal_roll(2048), &what);
        let target = fenced(&target);
        expect_corruption(result, &target, &what);
        assert_eq!(std::fs::read(&target).expect("read"), damaged, "{what}: a failed open leaves the file as it was");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    // The last record of the newest file: a closed WAL ends with a sync
    // mark, which proves it durable, so a flipped byte there is corruption
    // too.
    let dir = tmp.path().join("flip-last-closed");
    copy_dir(&base, &dir).expect("copy the store directory");
    let last = writes.last().expect("writes");
    let newest_copy = in_copy(&newest, &base, &dir);
    flip(&newest_copy, (last.2 + last.3) / 2);
    expect_corruption(
        open(&dir, StoreBuilder::new().options(), "the last record"),
        &fenced(&newest_copy),
        "the last record of a closed WAL",
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");

    // After a crash (no closing mark) that is the one place a flipped byte
    // cannot be told from a torn write: it is dropped like a torn tail.
    let dir = tmp.path().join("flip-last");
    copy_dir(&base, &dir).expect("copy the store directory");
    let newest_copy = in_copy(&newest, &base, &dir);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&newest_copy)
        .and_then(|f| f.set_len(last.3))
        .expect("as a crash left it");
    flip(&newest_copy, (last.2 + last.3) / 2);
    let store = open(&dir, StoreBuilder::new().options(), "the last record")
        .expect("a damaged last record reads as a torn tail");
    for (i, (row, ..)) in writes.iter().enumerate() {
        assert_eq!(row_present(&store, "t", row, i as u64).expect("get"), i + 1 < writes.len(), "write {i}");
    }
    store.close().expect("close");
}

// -------------------------------------------------- store file damage

struct Sections {
    data_end: u64,
    bloom: (u64, u64),
    index: (u64, u64),
    meta: (u64, u64),
    len: u64,
}

/// The section table of a store file, read from its 72-byte trailer.
fn sections(path: &Path) -> Sections {
    let data = std::fs::read(path).expect("read");
    let t = &data[data.len() - 72..];
    let u = |i: usize| u64::from_be_bytes(t[4 + 8 * i..12 + 8 * i].try_into().expect("8 bytes"));
    Sections { data_end: u(0), bloom: (u(1), u(2)), index: (u(3), u(4)), meta: (u(5), u(6)), len: data.len() as u64 }
}

/// Two tables: `t` (regions split at "m", 150 rows each side) and `u`, all
/// flushed to store files. Returns the rows of each.
fn flushed_base(dir: &Path) -> (Vec<String>, Vec<String>, Vec<String>) {
    let store = StoreBuilder::new().open(dir).expect("open");
    store.create_table(table("t"), &[b"m".to_vec()]).expect("create t");
    store.create_table(table("u"), &[]).expect("create u");
    let left: Vec<String> = (0..150).map(|i| format!("a{i:03}")).collect();
    let right: Vec<String> = (0..150).map(|i| format!("n{i:03}")).collect();
    let other: Vec<String> = (0..50).map(|i| format!("u{i:03}")).collect();
    for r in left.iter().chain(&right) {
        put_row(&store, "t", r, 1);
    }
    for r in &other {
        put_row(&store, "u", r, 1);
    }
    store.flush_table("t").expect("flush t");
    store.flush_table("u").expect("flush u");
    store.close().expect("close");
    (left, right, other)
}

/// The store file of family `f` of the first region of table `t`.
fn first_region_file(dir: &Path) -> PathBuf {
    let store = StoreBuilder::new().open(dir).expect("open");
    let region = store.table_regions("t").expect("regions").into_iter().next().expect("a region");
    drop(store);
    let family = dir.join("data").join("default").join("t").join(region.dir_name()).join("f");
    let files = files_under(&family, ".sf");
    assert_eq!(files.len(), 1, "one flushed file in {}", family.display());
    files[0].clone()
}

#[test]
fn a_flipped_byte_in_a_data_block_fails_only_the_reads_of_that_block() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let (left, right, other) = flushed_base(&dir);
    let sf = first_region_file(&dir);

    let fs: Arc<dyn FileSystem> = Arc::new(LocalFs);
    let reader = StoreFileReader::open(fs, &sf, 1, None).expect("open the file");
    let index = reader.index();
    assert!(index.len() >= 8, "the file has many blocks: {}", index.len());
    let b = index.len() / 2;
    let row_of = |i: usize| String::from_utf8(index.first_key(i).row().to_vec()).expect("utf8");
    let (before, first, next) = (row_of(b - 1), row_of(b), row_of(b + 1));
    let (offset, size) = index.block(b);
    drop(reader);
    flip(&sf, offset + u64::from(size) / 2);

    let store =
        open(&dir, StoreBuilder::new().options(), "a damaged data block").expect("open does not read data blocks");
    let what = format!("block {b} of {}", sf.display());
    // Rows wholly inside the damaged block: their reads fail, every time.
    let inside: Vec<&String> = left.iter().filter(|r| **r > first && **r < next).collect();
    assert!(!inside.is_empty(), "some rows lie wholly in block {b} ({first}..{next})");
    for row in &inside {
        for _ in 0..2 {
            expect_corruption(store.get("t", &Get::new(row.as_bytes())), &sf, &what);
        }
    }
    // Rows of other blocks of the same file are fine.
    for (i, row) in left.iter().enumerate() {
        if *row < before || *row > next {
            assert!(row_present(&store, "t", row, 1).expect("an undamaged block"), "row {row} ({i})");
        }
    }
    // So are the other region and the other table, by gets and scans.
    for row in &right {
        assert!(row_present(&store, "t", row, 1).expect("the other region"), "row {row}");
    }
    for row in &other {
        assert!(row_present(&store, "u", row, 1).expect("the other table"), "row {row}");
    }
    let scanned: Vec<_> = store
        .scan("t", Scan { start: Some(b"m".to_vec()), ..Scan::default() })
        .expect("scan")
        .collect::<store::Result<_>>()
        .expect("a scan of the other region");
    assert_eq!(scanned.len(), right.len());
    let scanned: Vec<_> =
        store.scan("u", Scan::default()).expect("scan").collect::<store::Result<_>>().expect("a scan of u");
    assert_eq!(scanned.len(), other.len());
    // A scan through the damaged block stops with the corruption.
    let through: store::Result<Vec<_>> = store.scan("t", Scan::default()).expect("scan").collect();
    expect_corruption(through, &sf, &format!("a scan through {what}"));

    // Writes and flushes go on; a compaction that must read the block fails
    // and deletes nothing.
    put_row(&store, "t", "a999", 2);
    store.flush_table("t").expect("flush with a damaged file around");
    assert!(row_present(&store, "t", "a999", 2).expect("get"));
    expect_corruption(store.compact_table("t", true), &sf, &format!("a compaction through {what}"));
    assert!(sf.exists(), "the damaged file is kept");
    for row in &right {
        assert!(row_present(&store, "t", row, 1).expect("the other region after the failed compaction"));
    }
    assert!(row_present(&store, "t", &left[0], 1).expect("an undamaged block after the failed compaction"));
    store.close().expect("close");

    // Still the same after a reopen.
    let store = open(&dir, StoreBuilder::new().options(), "a damaged data block, again").expect("reopen");
    expect_corruption(store.get("t", &Get::new(inside[0].as_bytes())), &sf, &what);
    assert!(row_present(&store, "t", "a999", 2).expect("get"));
    assert!(row_present(&store, "u", &other[0], 1).expect("get"));
}

#[test]
fn a_flipped_byte_in_a_store_file_trailer_or_meta_fails_open_naming_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("base");
    flushed_base(&base);
    let sf = first_region_file(&base);
    let s = sections(&sf);
    assert!(s.bloom.1 > 0, "the file has a bloom section");
    let cases = [
        ("the trailer magic", s.len - 1),
        ("the trailer checksum", s.len - 12),
        ("the trailer version", s.len - 72 + 2),
        ("the trailer's data end", s.len - 72 + 10),
        ("the meta section's checksum", s.meta.0 + 2),
        ("the middle of the meta section", s.meta.0 + s.meta.1 / 2),
        ("the middle of the index section", s.index.0 + s.index.1 / 2),
        ("the middle of the bloom section", s.bloom.0 + s.bloom.1 / 2),
        ("the last byte of the meta section", s.meta.0 + s.meta.1 - 1),
    ];
    assert_eq!(s.bloom.0, s.data_end);
    for (case, (what, offset)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case-{case}"));
        copy_dir(&base, &dir).expect("copy the store directory");
        let target = dir.join(sf.strip_prefix(&base).expect("inside the base"));
        flip(&target, *offset);
        let what = format!("a flipped byte in {what} (offset {offset})");
        expect_corruption(open(&dir, StoreBuilder::new().options(), &what), &target, &what);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    // A store file cut short loses its trailer.
    let dir = tmp.path().join("cut");
    copy_dir(&base, &dir).expect("copy the store directory");
    let target = dir.join(sf.strip_prefix(&base).expect("inside the base"));
    std::fs::OpenOptions::new().write(true).open(&target).and_then(|f| f.set_len(s.len - 5)).expect("truncate");
    expect_corruption(
        open(&dir, StoreBuilder::new().options(), "a truncated store file"),
        &target,
        "a truncated store file",
    );
}

// ------------------------------------------------------ metadata files

#[test]
fn garbage_metadata_files_fail_open_with_a_typed_error_naming_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("base");
    flushed_base(&base);
    let sf = first_region_file(&base);
    let family = sf.parent().expect("family dir").to_path_buf();
    let region = family.parent().expect("region dir").to_path_buf();
    let rel = |p: &Path| p.strip_prefix(&base).expect("inside the base").to_path_buf();
    let manifest = rel(&family.join("MANIFEST"));
    let tabledesc = rel(&base.join("data").join("default").join("t").join(".tabledesc"));
    let regioninfo = rel(&region.join(".regioninfo"));

    let garbage: &[(&str, &Path, &[u8])] = &[
        ("random bytes in the MANIFEST", &manifest, b"\x00\x17garbage\xff\xfe not json"),
        ("an empty MANIFEST", &manifest, b""),
        ("a truncated MANIFEST", &manifest, b"{\"files\": [\"0001.sf\""),
        ("a MANIFEST of the wrong shape", &manifest, b"{\"files\": 3, \"flushed_seq\": \"x\"}"),
        ("a garbage .tabledesc", &tabledesc, b"{{{{"),
        ("a garbage .regioninfo", &regioninfo, b"[1, 2"),
    ];
    for (case, (what, file, bytes)) in garbage.iter().enumerate() {
        let dir = tmp.path().join(format!("case-{case}"));
        copy_dir(&base, &dir).expect("copy the store directory");
        let target = dir.join(file);
        std::fs::write(&target, bytes).expect("write garbage");
        expect_corruption(open(&dir, StoreBuilder::new().options(), what), &target, what);
        assert_eq!(std::fs::read(&target).expect("read"), *bytes, "{what}: a failed open leaves the file alone");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    // A MANIFEST naming a store file that is not there.
    let dir = tmp.path().join("missing");
    copy_dir(&base, &dir).expect("copy the store directory");
    let target = dir.join(rel(&sf));
    std::fs::remove_file(&target).expect("remove the store file");
    match open(&dir, StoreBuilder::new().options(), "a missing store file") {
        Err(e @ StoreError::Io { .. }) => {
            let StoreError::Io { path, .. } = &e else { unreachable!() };
            assert_eq!(path, &target, "the error names the missing file: {e}");
        }
        Err(other) => panic!("a missing store file: expected an I/O error naming it, got {other:?}"),
        Ok(_) => panic!("a store whose MANIFEST names a missing file opened"),
    }
}
