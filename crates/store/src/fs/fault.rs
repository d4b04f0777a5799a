//! `FaultInjectingFs`: wraps another file system and, on command, fails
//! writes, syncs, creations or renames of matching files, runs out of space,
//! drops everything that was not synced (a simulated power loss), or flips
//! bytes — so that tests can prove the store reports such failures and loses
//! nothing it acknowledged.
//!
//! Invariants: `synced` records, per path written through this file system,
//! how many bytes were durable at the last successful `sync`;
//! `drop_unsynced` truncates every such file to that length.
//!
//! Thread safety: the fault state is behind one mutex; every operation
//! consults it once.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileSystem, ReadableFile, WritableFile};
use crate::error::{Result, StoreError};

/// The operation a fault rule hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Write,
    Sync,
    Create,
    Rename,
}

#[derive(Debug, Clone)]
struct FaultRule {
    kind: FaultKind,
    path_contains: String,
    skip: u32,
    times: u32,
}

#[derive(Default)]
struct FaultState {
    rules: Vec<FaultRule>,
    synced: HashMap<PathBuf, u64>,
    /// Bytes appended through this file system that still count as used.
    used: u64,
    space_limit: Option<u64>,
    injected: u64,
}

#[derive(Clone)]
pub struct FaultInjectingFs {
    inner: Arc<dyn FileSystem>,
    state: Arc<Mutex<FaultState>>,
}

fn injected(op: &'static str, path: &Path, kind: io::ErrorKind, what: &str) -> StoreError {
    StoreError::io(op, path, io::Error::new(kind, format!("injected fault: {what}")))
}

fn disk_full(path: &Path) -> StoreError {
    StoreError::io("write", path, io::Error::from_raw_os_error(28))
}

impl FaultState {
    /// Whether a rule fires for this operation (consuming one of its shots).
    fn fires(&mut self, kind: FaultKind, path: &Path) -> bool {
        let p = path.to_string_lossy();
        for rule in &mut self.rules {
            if rule.kind == kind && rule.times > 0 && p.contains(&rule.path_contains) {
                if rule.skip > 0 {
                    rule.skip -= 1;
                    return false;
                }
                rule.times -= 1;
                self.injected += 1;
                return true;
            }
        }
        false
    }
}

impl FaultInjectingFs {
    pub fn new(inner: Arc<dyn FileSystem>) -> FaultInjectingFs {
        FaultInjectingFs { inner, state: Arc::new(Mutex::new(FaultState::default())) }
    }

    /// Fails `times` operations of `kind` on paths containing
    /// `path_contains`, after letting `skip` matching ones through.
    pub fn fail(&self, kind: FaultKind, path_contains: &str, skip: u32, times: u32) {
        self.state.lock().rules.push(FaultRule { kind, path_contains: path_contains.to_string(), skip, times });
    }

    /// Removes every fault rule and the space limit.
    pub fn heal(&self) {
        let mut s = self.state.lock();
        s.rules.clear();
        s.space_limit = None;
    }

    /// Fails appends with ENOSPC once `bytes` more have been written.
    pub fn set_space_left(&self, bytes: u64) {
        let mut s = self.state.lock();
        s.space_limit = Some(s.used + bytes);
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    /// Simulates a power loss: every file written through this file system
    /// loses what was not synced.
    pub fn drop_unsynced(&self) -> Result<()> {
        let synced: Vec<(PathBuf, u64)> = self.state.lock().synced.iter().map(|(p, &l)| (p.clone(), l)).collect();
        for (path, len) in synced {
            if self.inner.exists(&path)? && self.inner.file_size(&path)? > len {
                self.inner.truncate(&path, len)?;
            }
        }
        Ok(())
    }

    /// Flips the bits of the byte at `offset` of `path`.
    pub fn corrupt_byte(&self, path: &Path, offset: u64) -> Result<()> {
        let mut data = self.inner.read_all(path)?;
        let i = usize::try_from(offset)
            .ok()
            .filter(|&i| i < data.len())
            .ok_or_else(|| StoreError::InvalidArgument(format!("offset {offset} is outside {}", path.display())))?;
        data[i] ^= 0xFF;
        let mut f = self.inner.create(path)?;
        f.append(&data)?;
        f.sync()?;
        f.close()
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    state: Arc<Mutex<FaultState>>,
}

impl FileSystem for FaultInjectingFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        {
            let mut s = self.state.lock();
            if s.fires(FaultKind::Create, path) {
                return Err(injected("create", path, io::ErrorKind::PermissionDenied, "create refused"));
            }
            s.synced.insert(path.to_path_buf(), 0);
        }
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultWritable { inner, state: self.state.clone() }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        self.inner.open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        {
            let mut s = self.state.lock();
            if s.fires(FaultKind::Rename, from) {
                return Err(injected("rename", from, io::ErrorKind::Other, "rename refused"));
            }
        }
        self.inner.rename(from, to)?;
        let mut s = self.state.lock();
        if let Some(len) = s.synced.remove(from) {
            s.synced.insert(to.to_path_buf(), len);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)?;
        self.state.lock().synced.remove(path);
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir_all(dir)?;
        self.state.lock().synced.retain(|p, _| !p.starts_with(dir));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.inner.truncate(path, len)
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        {
            let mut s = self.state.lock();
            if s.fires(FaultKind::Write, self.inner.path()) {
                return Err(injected("write", self.inner.path(), io::ErrorKind::Other, "write failed"));
            }
            if s.space_limit.is_some_and(|limit| s.used + data.len() as u64 > limit) {
                return Err(disk_full(self.inner.path()));
            }
            s.used += data.len() as u64;
        }
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        {
            let mut s = self.state.lock();
            if s.fires(FaultKind::Sync, self.inner.path()) {
                return Err(injected("fsync", self.inner.path(), io::ErrorKind::Other, "fsync failed"));
            }
        }
        self.inner.sync()?;
        let len = self.inner.len();
        self.state.lock().synced.insert(self.inner.path().to_path_buf(), len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::LocalFs;

    #[test]
    fn faults_fire_as_configured_and_power_loss_drops_unsynced_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        let path = dir.path().join("wal-1");
        let mut f = fs.create(&path).expect("create");
        f.append(b"durable").expect("append");
        f.sync().expect("sync");
        f.append(b"-volatile").expect("append");
        f.flush().expect("flush");
        fs.fail(FaultKind::Sync, "wal", 0, 1);
        assert!(f.sync().is_err(), "the injected fsync failure surfaces");
        assert_eq!(fs.injected(), 1);
        f.close().expect("close");
        assert_eq!(fs.read_all(&path).expect("read"), b"durable-volatile");
        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.read_all(&path).expect("read"), b"durable");

        fs.set_space_left(4);
        let mut g = fs.create(&dir.path().join("big")).expect("create");
        let err = g.append(b"12345").expect_err("no space");
        assert!(err.is_disk_full(), "{err}");
        fs.heal();
        g.append(b"12345").expect("space again");

        fs.corrupt_byte(&path, 0).expect("corrupt");
        assert_eq!(fs.read_all(&path).expect("read")[0], b'd' ^ 0xFF);
    }
}
