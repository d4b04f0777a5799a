//! `LocalFs`: the local disk, through `std::fs` with positional reads, and
//! the root lock (`flock` on `<root>/LOCK`, see `lock_root`).
//!
//! Invariant: at most one live store of this process holds a root's lock;
//! `HELD_ROOTS` maps each locked root to a weak handle of its lock file, so
//! an entry that still upgrades is a live holder.
//!
//! Thread safety: files are plain OS handles; `HELD_ROOTS` is one mutex,
//! never held while sleeping.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileSystem, LOCK_FILE, ReadableFile, RootLock, WritableFile};
use crate::error::{Result, StoreError};

#[derive(Debug, Default, Clone, Copy)]
pub struct LocalFs;

struct LocalWritable {
    path: PathBuf,
    file: BufWriter<File>,
    len: u64,
}

struct LocalReadable {
    path: PathBuf,
    file: File,
    len: u64,
}

/// The roots locked by stores of this process (a live entry: a store holds
/// the lock).
static HELD_ROOTS: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashMap<PathBuf, std::sync::Weak<File>>>> =
    std::sync::LazyLock::new(Default::default);

/// How long an open waits for an earlier store of this process on the same
/// root to go away.
const IN_PROCESS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl FileSystem for LocalFs {
    /// `flock` on `<dir>/LOCK` (released by the kernel when the process
    /// dies, so a crash leaves no stale lock); the holder's pid is written
    /// into the file for the error a second opener gets. It keeps other
    /// processes out, and a second store in this process too: two live
    /// stores on one root would fence and retire each other's WAL. An
    /// earlier store of this process that is still going away (its last
    /// handle dropped, a background job finishing) is waited for, a few
    /// seconds at most.
    fn lock_root(&self, dir: &Path) -> Result<Option<RootLock>> {
        let key = std::fs::canonicalize(dir).map_err(|e| StoreError::io("resolve", dir, e))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io("open the lock file", &path, e))?;
        let ours = std::process::id().to_string();
        let refused = |who: String| {
            StoreError::io(
                "lock",
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!("the store in {} is open in {who}; one store at a time", dir.display()),
                ),
            )
        };
        let deadline = std::time::Instant::now() + IN_PROCESS_LOCK_WAIT;
        loop {
            {
                let mut held = HELD_ROOTS.lock();
                let live_here = held.get(&key).and_then(std::sync::Weak::upgrade).is_some();
                if !live_here {
                    match file.try_lock() {
                        Ok(()) => {
                            let pid = format!("{ours}\n");
                            file.set_len(0)
                                .and_then(|()| file.write_all(pid.as_bytes()))
                                .map_err(|e| StoreError::io("write the lock file", &path, e))?;
                            let file = Arc::new(file);
                            held.insert(key, Arc::downgrade(&file));
                            return Ok(Some(RootLock::new(Box::new(file))));
                        }
                        Err(std::fs::TryLockError::WouldBlock) => {
                            let holder = std::fs::read_to_string(&path).unwrap_or_default();
                            let holder = holder.trim();
                            // The file names this process although no store
                            // of it holds the lock: a child it forked shares
                            // the lock until it execs (moments). Any other
                            // holder is another process.
                            if holder != ours {
                                let who = if holder.is_empty() {
                                    "another process".to_string()
                                } else {
                                    format!("process {holder}")
                                };
                                return Err(refused(who));
                            }
                        }
                        Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", &path, e)),
                    }
                }
                if std::time::Instant::now() >= deadline {
                    return Err(refused(if live_here {
                        "this process (another store on it is still open)".to_string()
                    } else {
                        format!("process {ours}")
                    }));
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| StoreError::io("create", path, e))?;
        Ok(Box::new(LocalWritable { path: path.to_path_buf(), file: BufWriter::with_capacity(64 << 10, file), len: 0 }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io("stat", path, e))?.len();
        Ok(Arc::new(LocalReadable { path: path.to_path_buf(), file, len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| StoreError::io("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| StoreError::io("remove", path, e))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| StoreError::io("stat", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io("list", dir, e))? {
            let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io("rmdir", dir, e)),
            _ => Ok(()),
        }
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| StoreError::io("sync dir", dir, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path).map_err(|e| StoreError::io("stat", path, e))?.len())
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len))
            .map_err(|e| StoreError::io("truncate", path, e))
    }
}

impl WritableFile for LocalWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| StoreError::io("write", &self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file.flush().map_err(|e| StoreError::io("write", &self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file.get_ref().sync_data().map_err(|e| StoreError::io("fsync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.flush()
    }
}

impl ReadableFile for LocalReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if offset + buf.len() as u64 > self.len {
            return Err(StoreError::corruption(
                &self.path,
                offset,
                format!("read of {} bytes past the end of a {}-byte file", buf.len(), self.len),
            ));
        }
        self.file.read_exact_at(buf, offset).map_err(|e| StoreError::io("read", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
