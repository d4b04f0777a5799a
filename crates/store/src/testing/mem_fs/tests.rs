use std::path::Path;
use std::time::Duration;

use super::*;

/// Creates `path` with `data`, synced (the entry is not: see `sync_dir`).
fn write_synced(fs: &MemFs, path: &str, data: &[u8]) {
    let mut f = fs.create(Path::new(path)).expect("create");
    f.append(data).expect("append");
    f.sync().expect("sync");
    f.close().expect("close");
}

fn read(fs: &MemFs, path: &str) -> Vec<u8> {
    fs.read_all(Path::new(path)).expect("read")
}

fn exists(fs: &MemFs, path: &str) -> bool {
    fs.exists(Path::new(path)).expect("exists")
}

/// Creates `/d/<name>` with a durable entry, for appending.
fn create_in_d(fs: &MemFs, name: &str) -> Box<dyn WritableFile> {
    let f = fs.create(&Path::new("/d").join(name)).expect("create");
    fs.sync_dir(Path::new("/d")).expect("sync /d");
    f
}

/// A file system with the durable directory `/d`.
fn with_durable_dir() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).expect("mkdir");
    fs.sync_dir(Path::new("/")).expect("sync the root");
    fs
}

#[test]
fn a_crash_keeps_synced_bytes_and_loses_the_rest() {
    let fs = with_durable_dir();
    let mut f = create_in_d(&fs, "wal");
    f.append(b"durable").expect("append");
    f.sync().expect("sync");
    f.append(b"-volatile").expect("append");
    assert_eq!(read(&fs, "/d/wal"), b"durable-volatile", "the original reads every appended byte");
    assert_eq!(read(&fs.crash_clone(), "/d/wal"), b"durable");
    f.sync().expect("sync");
    assert_eq!(read(&fs.crash_clone(), "/d/wal"), b"durable-volatile");
}

#[test]
fn a_file_or_directory_whose_directory_was_never_synced_is_gone_after_a_crash() {
    let fs = with_durable_dir();
    write_synced(&fs, "/d/new", b"synced bytes");
    fs.create_dir_all(Path::new("/d/a/b")).expect("mkdir");
    fs.sync_dir(Path::new("/d/a")).expect("sync /d/a (but not /d, which names a)");
    let clone = fs.crash_clone();
    assert!(!exists(&clone, "/d/new"), "the file's entry was never synced");
    assert!(!exists(&clone, "/d/a"), "the directory's entry was never synced");
    assert_eq!(clone.list(Path::new("/d")).expect("list"), Vec::<String>::new());
    assert!(exists(&fs, "/d/new") && exists(&fs, "/d/a/b"), "the original keeps them");

    fs.sync_dir(Path::new("/d")).expect("sync /d");
    let clone = fs.crash_clone();
    assert_eq!(read(&clone, "/d/new"), b"synced bytes");
    assert!(exists(&clone, "/d/a/b"), "a's own entries were synced before");
}

#[test]
fn a_rename_not_followed_by_a_sync_of_its_directory_is_undone_by_a_crash() {
    let fs = with_durable_dir();
    write_synced(&fs, "/d/current", b"old");
    write_synced(&fs, "/d/current.tmp", b"new");
    fs.sync_dir(Path::new("/d")).expect("sync /d");
    fs.rename(Path::new("/d/current.tmp"), Path::new("/d/current")).expect("rename");
    assert_eq!(read(&fs, "/d/current"), b"new");
    assert!(!exists(&fs, "/d/current.tmp"));

    let clone = fs.crash_clone();
    assert_eq!(read(&clone, "/d/current"), b"old", "the replaced file is back");
    assert_eq!(read(&clone, "/d/current.tmp"), b"new", "the renamed file is under its old name");

    fs.sync_dir(Path::new("/d")).expect("sync /d");
    let clone = fs.crash_clone();
    assert_eq!(read(&clone, "/d/current"), b"new");
    assert!(!exists(&clone, "/d/current.tmp"));
}

#[test]
fn a_rename_across_directories_is_durable_on_each_side_with_its_own_directory() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/a")).expect("mkdir");
    fs.create_dir_all(Path::new("/b")).expect("mkdir");
    fs.sync_dir(Path::new("/")).expect("sync the root");
    write_synced(&fs, "/a/f", b"f");
    fs.sync_dir(Path::new("/a")).expect("sync /a");
    fs.rename(Path::new("/a/f"), Path::new("/b/f")).expect("rename");
    fs.sync_dir(Path::new("/b")).expect("sync /b only");
    let clone = fs.crash_clone();
    assert_eq!(read(&clone, "/a/f"), b"f", "the removal from /a was not synced");
    assert_eq!(read(&clone, "/b/f"), b"f", "the entry in /b was");
    fs.sync_dir(Path::new("/a")).expect("sync /a");
    assert!(!exists(&fs.crash_clone(), "/a/f"));
}

#[test]
fn a_removal_not_followed_by_a_sync_of_its_directory_is_undone_by_a_crash() {
    let fs = with_durable_dir();
    write_synced(&fs, "/d/f", b"kept");
    fs.create_dir_all(Path::new("/d/sub")).expect("mkdir");
    fs.sync_dir(Path::new("/d")).expect("sync /d");
    write_synced(&fs, "/d/sub/g", b"g");
    fs.sync_dir(Path::new("/d/sub")).expect("sync /d/sub");
    fs.remove(Path::new("/d/f")).expect("remove");
    fs.remove_dir_all(Path::new("/d/sub")).expect("rm -r");
    assert!(!exists(&fs, "/d/f") && !exists(&fs, "/d/sub"));

    let clone = fs.crash_clone();
    assert_eq!(read(&clone, "/d/f"), b"kept", "the file is back with its bytes");
    assert_eq!(read(&clone, "/d/sub/g"), b"g", "the directory is back with its files");

    fs.sync_dir(Path::new("/d")).expect("sync /d");
    let clone = fs.crash_clone();
    assert!(!exists(&clone, "/d/f") && !exists(&clone, "/d/sub"));
}

#[test]
fn a_crash_clone_is_independent_of_the_original() {
    let fs = with_durable_dir();
    let mut f = create_in_d(&fs, "f");
    f.append(b"before").expect("append");
    f.sync().expect("sync");
    let clone = fs.crash_clone();

    // The original goes on: the file open before the crash, a new file.
    f.append(b"-after").expect("append");
    f.sync().expect("sync");
    write_synced(&fs, "/d/g", b"g");
    fs.sync_dir(Path::new("/d")).expect("sync /d");
    assert_eq!(read(&clone, "/d/f"), b"before");
    assert!(!exists(&clone, "/d/g"));

    // And the clone goes its own way.
    let mut c = clone.create(Path::new("/d/f")).expect("create in the clone");
    c.append(b"clone").expect("append");
    c.sync().expect("sync");
    clone.remove(Path::new("/d/f")).expect("remove in the clone");
    assert_eq!(read(&fs, "/d/f"), b"before-after");
    assert_eq!(clone.list(Path::new("/d")).expect("list"), Vec::<String>::new());
}

#[test]
fn a_removed_file_open_for_reading_reads_on_and_reads_stop_at_its_length() {
    let fs = with_durable_dir();
    write_synced(&fs, "/d/f", b"0123456789");
    let r = fs.open(Path::new("/d/f")).expect("open");
    fs.remove(Path::new("/d/f")).expect("remove");
    fs.sync_dir(Path::new("/d")).expect("sync /d (which drops unreachable nodes)");
    let mut buf = [0; 4];
    r.read_at(6, &mut buf).expect("read");
    assert_eq!(&buf, b"6789");
    assert!(r.read_at(7, &mut buf).is_err(), "a read past the end fails");
    assert!(fs.open(Path::new("/d/f")).is_err(), "the name is gone");
}

#[test]
fn operations_on_missing_or_wrong_kinds_of_entries_fail() {
    let fs = with_durable_dir();
    write_synced(&fs, "/d/f", b"f");
    assert!(fs.create(Path::new("/missing/f")).is_err(), "create never makes a missing parent");
    assert!(fs.create(Path::new("/d")).is_err(), "a directory is not a file");
    assert!(fs.create_dir_all(Path::new("/d/f/x")).is_err(), "a file is not a directory");
    assert!(fs.remove(Path::new("/d")).is_err(), "remove takes files");
    assert!(fs.remove(Path::new("/d/nothing")).is_err());
    fs.remove_dir_all(Path::new("/d/nothing")).expect("removing no directory is fine");
    assert!(fs.rename(Path::new("/d"), Path::new("/d/inside")).is_err(), "a directory cannot move into itself");
    assert!(fs.sync_dir(Path::new("/nothing")).is_err());
    assert!(fs.open(Path::new("/d/../f")).is_err(), "`..` is refused (not skipped, which would read /d/f)");
    assert_eq!(fs.list(Path::new("/")).expect("list"), ["d"]);
    assert_eq!(fs.file_size(Path::new("/d/f")).expect("size"), 1);
}

#[test]
fn one_store_per_root_and_a_crash_clone_starts_unlocked() {
    let fs = with_durable_dir();
    let held = fs.lock_root(Path::new("/d")).expect("lock").expect("MemFs has a lock");
    fs.lock_root(Path::new("/")).expect("another root is another lock");
    fs.crash_clone().lock_root(Path::new("/d")).expect("the clone starts unlocked");

    let started = std::time::Instant::now();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
    });
    fs.lock_root(Path::new("/d")).expect("the second waits for the first to let go");
    assert!(started.elapsed() >= Duration::from_millis(100), "it waited");
    release.join().expect("the releasing thread");
}

#[test]
fn a_second_lock_of_a_held_root_fails_after_the_wait() {
    let fs = with_durable_dir();
    let _held = fs.lock_root(Path::new("/d")).expect("lock");
    let err = fs.lock_root(Path::new("/d")).expect_err("held");
    assert!(err.to_string().contains("one store at a time"), "{err}");
}
