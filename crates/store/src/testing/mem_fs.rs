//! `MemFs`: a [`FileSystem`] in memory that knows what a power cut would
//! keep, modelled on Pebble's strict `vfs.MemFS` and its `CrashClone`.
//!
//! What is durable:
//! - A file's bytes up to its *synced length*: what it held at its last
//!   `sync` (appends after that are lost by a crash).
//! - A directory's *synced entries*: the names it held, each bound to its
//!   file or directory, at its last `sync_dir`. A creation, rename or
//!   removal of an entry is durable only once the directory holding the
//!   entry is synced (a rename across directories: each side with its own
//!   directory). `create_dir_all` is no exception: a new directory's entry
//!   is durable once its parent is synced, which is what
//!   `fs::create_dir_all_durably` does and what LocalFs gives a store that
//!   syncs the parent; a store that forgot would lose the directory here.
//! - `truncate` is durable at once (the store never truncates; a test that
//!   cuts a torn tail expects the cut to stay).
//!
//! [`MemFs::crash_clone`] returns a new, independent `MemFs` holding only
//! that: the tree of synced entries from the root, each file cut to its
//! synced length, every entry and byte of it synced. The original goes on
//! as if nothing happened, so a test can clone at any instant, while the
//! store runs, and open a second store on the clone.
//!
//! Invariants:
//! - Files and directories are nodes (inodes), named by entries: an entry
//!   moves with a rename and a node outlives its live entry while a synced
//!   entry or an open handle still refers to it (a file removed while open
//!   is still written and read; a removal not yet synced is undone by a
//!   crash with the file's bytes intact). `create` binds the name to a new
//!   node, so a crash before the directory's sync brings the old file back.
//! - `synced_len <= data.len()`, and the first `synced_len` bytes change
//!   only by a `truncate` (files are written by appending).
//! - The root directory always exists and is durable.
//! - Nodes reachable neither from the root (through live or synced
//!   entries) nor from an open handle are dropped at the next `sync_dir`.
//!
//! Paths: absolute or relative to the root alike; `.` is skipped, `..` is
//! refused. The root lock (`lock_root`) is this file system's own state,
//! one lock per root directory, not a `LOCK` file; a crash clone starts
//! with none held.
//!
//! Thread safety: every operation, file handles' reads, appends and syncs
//! included, holds the one mutex of the tree for its whole length, so
//! operations are atomic and totally ordered, and `crash_clone` sees the
//! state between two operations (a power cut at one instant, never half of
//! a sync). Handles hold the tree, not a lock; a `lock_root` that waits for
//! another store of the test to let go waits on a condvar, not holding it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, ReadableFile, RootLock, WritableFile};

mod error;
mod tree;

use error::MemFsError;
use tree::{NodeId, Tree, names};

/// How long `lock_root` waits for another store on the same root to let go
/// (as LocalFs waits for an earlier store of the process going away).
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The tree and the condvar `lock_root` waits on (paired with the tree's
/// mutex).
#[derive(Debug)]
struct Shared {
    tree: Mutex<Tree>,
    unlocked: Condvar,
}

/// The in-memory file system (see the module doc). Clones share one tree,
/// as the file systems of `fs` share their state.
#[derive(Debug, Clone)]
pub struct MemFs {
    shared: Arc<Shared>,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new()
    }
}

impl MemFs {
    /// An empty file system: the root directory only.
    pub fn new() -> MemFs {
        MemFs::from_tree(Tree::new())
    }

    fn from_tree(tree: Tree) -> MemFs {
        MemFs { shared: Arc::new(Shared { tree: Mutex::new(tree), unlocked: Condvar::new() }) }
    }

    /// What a power cut now would leave, as a new file system of its own:
    /// the synced entries of every directory reachable from the root
    /// through synced entries, each file cut to its synced bytes. Neither
    /// file system sees the other's later changes; no root is locked in
    /// the clone.
    pub fn crash_clone(&self) -> MemFs {
        MemFs::from_tree(self.shared.tree.lock().crash_clone())
    }

    /// Runs `f` on the tree; its error as the store's I/O error of `op`.
    fn with<T>(
        &self,
        op: &'static str,
        path: &Path,
        f: impl FnOnce(&mut Tree) -> std::result::Result<T, MemFsError>,
    ) -> Result<T> {
        f(&mut self.shared.tree.lock()).map_err(|e| e.at(op, path))
    }

    /// Counts a handle of file `id` (dropping it uncounts it).
    fn handle(&self, tree: &mut Tree, id: NodeId, path: &Path) -> Handle {
        *tree.handles.entry(id).or_default() += 1;
        Handle { shared: self.shared.clone(), id, path: path.to_path_buf() }
    }
}

/// A file node held open: it lives while this does.
struct Handle {
    shared: Arc<Shared>,
    id: NodeId,
    path: PathBuf,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut tree = self.shared.tree.lock();
        if let Some(n) = tree.handles.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                tree.handles.remove(&self.id);
            }
        }
    }
}

struct MemWritable {
    file: Handle,
    /// Bytes appended through this handle.
    len: u64,
}

struct MemReadable {
    file: Handle,
    /// The file's length when it was opened (as LocalFs's readers have).
    len: u64,
}

/// The root lock's guard: releases the root when dropped.
struct HeldRoot {
    shared: Arc<Shared>,
    root: PathBuf,
}

impl Drop for HeldRoot {
    fn drop(&mut self) {
        self.shared.tree.lock().locked_roots.remove(&self.root);
        self.shared.unlocked.notify_all();
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut tree = self.shared.tree.lock();
        let id = tree.create(path).map_err(|e| e.at("create", path))?;
        let file = self.handle(&mut tree, id, path);
        Ok(Box::new(MemWritable { file, len: 0 }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let mut tree = self.shared.tree.lock();
        let id = tree.lookup_file(path).map_err(|e| e.at("open", path))?;
        let len = tree.file(id).data.len() as u64;
        let file = self.handle(&mut tree, id, path);
        Ok(Arc::new(MemReadable { file, len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.with("rename", from, |t| t.rename(from, to))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.with("remove", path, |t| t.remove(path, false))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.with("stat", path, |t| Ok(t.lookup(path)?.is_some()))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.with("list", dir, |t| {
            let id = t.lookup_dir(dir)?;
            let mut names: Vec<String> = t.dir(id).live.keys().map(|n| n.to_string_lossy().into_owned()).collect();
            names.sort();
            Ok(names)
        })
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.with("mkdir", dir, |t| t.create_dir_all(dir))
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        self.with("rmdir", dir, |t| match t.remove(dir, true) {
            Err(MemFsError::NotFound) => Ok(()),
            other => other,
        })
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.with("sync dir", dir, |t| t.sync_dir(dir))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.with("stat", path, |t| Ok(t.file(t.lookup_file(path)?).data.len() as u64))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.with("truncate", path, |t| {
            let id = t.lookup_file(path)?;
            let file = t.file_mut(id);
            file.data.resize(len as usize, 0);
            file.synced_len = file.synced_len.min(file.data.len());
            Ok(())
        })
    }

    /// One store per root of this file system: a second waits up to
    /// `LOCK_WAIT` for the first to let go, then fails.
    fn lock_root(&self, dir: &Path) -> Result<Option<RootLock>> {
        let mut tree = self.shared.tree.lock();
        tree.lookup_dir(dir).map_err(|e| e.at("lock", dir))?;
        let root: PathBuf = names(dir).map_err(|e| e.at("lock", dir))?.iter().collect();
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        while tree.locked_roots.contains(&root) {
            if self.shared.unlocked.wait_until(&mut tree, deadline).timed_out() {
                return Err(MemFsError::Locked(dir.to_path_buf()).at("lock", dir));
            }
        }
        tree.locked_roots.insert(root.clone());
        Ok(Some(RootLock::new(Box::new(HeldRoot { shared: self.shared.clone(), root }))))
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut tree = self.file.shared.tree.lock();
        tree.file_mut(self.file.id).data.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        let mut tree = self.file.shared.tree.lock();
        let file = tree.file_mut(self.file.id);
        file.synced_len = file.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.file.path
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

impl ReadableFile for MemReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let tree = self.file.shared.tree.lock();
        let data = &tree.file(self.file.id).data;
        let end = offset.checked_add(buf.len() as u64).filter(|&end| end <= self.len.min(data.len() as u64));
        let Some(end) = end else {
            return Err(StoreError::corruption(
                &self.file.path,
                offset,
                format!("read of {} bytes past the end of a {}-byte file", buf.len(), self.len),
            ));
        };
        buf.copy_from_slice(&data[offset as usize..end as usize]);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.file.path
    }
}

#[cfg(test)]
mod tests;
