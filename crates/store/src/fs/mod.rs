//! The file-system abstraction (LevelDB's Env, Pebble's vfs): everything the
//! store reads or writes goes through [`FileSystem`], so that the WAL and
//! store files can live on local disk, on HDFS (`hdfs.rs`), or on the
//! fault-injecting file system of the tests, without the rest knowing.
//!
//! Contract:
//! - `create` makes a new, empty file (replacing one of the same name);
//!   appended bytes are durable only after `sync` returns.
//! - `rename` is atomic: readers see the old name or the new one, never a
//!   partial file; `sync_dir` makes creations, renames and removals in a
//!   directory durable.
//! - A `ReadableFile` reads exactly the requested range or fails.
//!
//! Thread safety: a `FileSystem` and its `ReadableFile`s are shared between
//! threads; a `WritableFile` has one owner at a time.

pub mod fault;
mod fault_dirs;
pub mod hdfs;
pub mod local;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;

pub use fault::{BeforeHook, FaultInjectingFs, FaultKind, FsOp};
pub use hdfs::HdfsFs;
pub use local::LocalFs;

pub trait FileSystem: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending. Its directory must
    /// exist: a missing parent is an error, never created on the way
    /// (fencing a WAL directory by renaming it relies on this).
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for random reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    fn remove(&self, path: &Path) -> Result<()>;
    fn exists(&self, path: &Path) -> Result<bool>;
    /// File names (not paths) in `dir`, sorted.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    fn remove_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Cuts a file to `len` bytes.
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;

    /// Takes over a file another process may still hold open for writing:
    /// returns once that writer can append nothing more and the file's
    /// length is final (HDFS's lease recovery). A file system without
    /// leases has nothing to recover.
    fn recover_lease(&self, path: &Path) -> Result<()> {
        let _ = path;
        Ok(())
    }

    /// Takes the exclusive lock of the store rooted at `dir` (a `LOCK` file
    /// in it), held until the returned guard is dropped or the process
    /// exits, so that a second process opening the same root fails with a
    /// clear error instead of writing beside the first. `None` where the
    /// file system offers no such lock (HDFS: there the WAL directories are
    /// fenced instead, see `wal/takeover.rs`).
    fn lock_root(&self, dir: &Path) -> Result<Option<RootLock>> {
        let _ = dir;
        Ok(None)
    }

    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let f = self.open(path)?;
        let mut buf = vec![0; f.len() as usize];
        f.read_at(0, &mut buf)?;
        Ok(buf)
    }

    /// Writes a whole file under a temporary name, syncs it, and renames it
    /// into place (then syncs the directory).
    fn write_atomic(&self, path: &Path, data: &[u8]) -> Result<()> {
        write_then_rename(self, path, data, &|| Ok(()))
    }
}

/// [`FileSystem::write_atomic`] whose rename — the commit — happens only if
/// `fence` allows it once the new content is durable under its temporary
/// name; refused, the temporary file is removed and nothing changes.
pub fn write_atomic_fenced(
    fs: &dyn FileSystem,
    path: &Path,
    data: &[u8],
    fence: &dyn Fn() -> Result<()>,
) -> Result<()> {
    write_then_rename(fs, path, data, fence)
}

fn write_then_rename<F: FileSystem + ?Sized>(
    fs: &F,
    path: &Path,
    data: &[u8],
    fence: &dyn Fn() -> Result<()>,
) -> Result<()> {
    // A temporary name of this writer's own: two servers that both believe
    // they own a region (the fence is what tells them apart) must not write
    // one temporary file, nor remove the other's.
    let tmp = unique_tmp_path(path);
    let mut f = fs.create(&tmp)?;
    f.append(data)?;
    f.sync()?;
    f.close()?;
    if let Err(e) = fence() {
        let _ = fs.remove(&tmp);
        return Err(e);
    }
    fs.rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        fs.sync_dir(dir)?;
    }
    Ok(())
}

/// A file being written.
pub trait WritableFile: Send {
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system (not durable yet).
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable.
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn path(&self) -> &Path;
    /// Flushes and closes (without syncing).
    fn close(self: Box<Self>) -> Result<()>;
}

/// A file open for positional reads.
pub trait ReadableFile: Send + Sync {
    /// Fills `buf` from `offset`; fails if the file is shorter.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn path(&self) -> &Path;
}

/// Creates `dir` and whichever of its ancestors are missing, and makes each
/// new directory's entry durable in its parent (a file committed later in
/// `dir` is durable only if the path to it is).
/// A held root lock (see [`FileSystem::lock_root`]); released when dropped.
pub struct RootLock(#[expect(dead_code, reason = "held for its drop, which releases the lock")] Box<dyn Send + Sync>);

impl RootLock {
    pub fn new(held: Box<dyn Send + Sync>) -> RootLock {
        RootLock(held)
    }
}

impl std::fmt::Debug for RootLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RootLock")
    }
}

/// The name of a store root's lock file (RocksDB's is `LOCK` too).
pub const LOCK_FILE: &str = "LOCK";

pub fn create_dir_all_durably(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty()) {
        if fs.exists(d)? {
            break;
        }
        missing.push(d);
        at = d.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    fs.create_dir_all(dir)?;
    for d in missing.iter().rev() {
        if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
    }
    Ok(())
}

/// The temporary name a file is written under before its atomic rename.
/// `path` + `.<pid>-<n>.tmp`: a temporary name no other writer, in this
/// process or another, uses at the same time.
fn unique_tmp_path(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{}-{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Where a store lives, from a root URI: `hdfs://host:port/path` (the HDFS
/// name node and the store's directory on it), `file:///path`, or a plain
/// local path. Returns the file system and the store's directory on it.
pub fn resolve_root(root: &str) -> Result<(Arc<dyn FileSystem>, PathBuf)> {
    if let Some(rest) = root.strip_prefix("hdfs://") {
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(crate::error::StoreError::InvalidOption {
                name: "root",
                reason: format!("{root:?}: an HDFS root names its name node (hdfs://host:port/path)"),
            });
        }
        let fs = HdfsFs::connect(&format!("hdfs://{authority}"))?;
        return Ok((Arc::new(fs), PathBuf::from(path)));
    }
    if let Some(path) = root.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(crate::error::StoreError::InvalidOption {
                name: "root",
                reason: format!("{root:?}: a file root is absolute (file:///path)"),
            });
        }
        return Ok((Arc::new(LocalFs), PathBuf::from(path)));
    }
    if let Some((scheme, _)) = root.split_once("://") {
        return Err(crate::error::StoreError::InvalidOption {
            name: "root",
            reason: format!("{root:?}: unknown scheme {scheme:?} (hdfs:// or file://, or a local path)"),
        });
    }
    Ok((Arc::new(LocalFs), PathBuf::from(root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_name_a_file_system_and_a_directory() {
        let (_, dir) = resolve_root("file:///var/accordion").expect("file root");
        assert_eq!(dir, Path::new("/var/accordion"));
        let (_, dir) = resolve_root("./data").expect("a plain path");
        assert_eq!(dir, Path::new("./data"));
        assert!(resolve_root("file://relative").is_err());
        assert!(resolve_root("s3://bucket/x").is_err());
        assert!(resolve_root("hdfs:///no-namenode").is_err());
    }

    #[test]
    fn create_never_makes_a_missing_parent() {
        let dir = tempfile::tempdir().expect("tempdir");
        for fs in [&LocalFs as &dyn FileSystem, &FaultInjectingFs::new(Arc::new(LocalFs))] {
            assert!(fs.create(&dir.path().join("missing").join("x")).is_err());
            assert!(!dir.path().join("missing").exists());
        }
    }
}
