//! Local directories as a crash leaves them.

use std::path::Path;

/// Copies the directory tree `from` into `to` (created): what a crash at
/// this instant leaves, when nothing writes concurrently. Panics on an I/O
/// error (a test's setup failing).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
