//! `accordion inspect` on a real store file: metadata and cells are printed,
//! and a damaged file gives a clear error naming it (exit status non-zero).

use std::path::{Path, PathBuf};
use std::process::Command;

use store::{FamilyDescriptor, Store, StoreOptions, TableDescriptor};

fn store_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(store_files(&path));
        } else if path.extension().is_some_and(|e| e == "sf") {
            out.push(path);
        }
    }
    out
}

#[test]
fn inspect_prints_metadata_and_cells_and_reports_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions { background: false, ..StoreOptions::default() }).expect("open");
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).expect("create");
    store.put("t", b"row-1", &[(b"f", b"q", b"hello")], Some(7)).expect("put");
    store.close().expect("close");
    let files = store_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let bin = env!("CARGO_BIN_EXE_accordion");
    let out = Command::new(bin).arg("inspect").arg(&files[0]).arg("--cells").output().expect("run inspect");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("row-1 f:q ts=7 type=Put"), "{text}");
    assert!(text.contains("hello"), "{text}");

    let mut bytes = std::fs::read(&files[0]).expect("read");
    let n = bytes.len();
    bytes[n - 3] ^= 0xFF; // inside the trailer
    std::fs::write(&files[0], &bytes).expect("write");
    let out = Command::new(bin).arg("inspect").arg(&files[0]).output().expect("run inspect");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&files[0].display().to_string()), "{err}");
}
