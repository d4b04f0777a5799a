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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, ReadableFile, RootLock, WritableFile};

/// How long `lock_root` waits for another store on the same root to let go
/// (as LocalFs waits for an earlier store of the process going away).
const LOCK_WAIT: Duration = Duration::from_secs(5);

type NodeId = u64;

/// The root directory's node.
const ROOT: NodeId = 0;

/// What an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    File(NodeId),
    Dir(NodeId),
}

#[derive(Debug, Default)]
struct FileNode {
    data: Vec<u8>,
    /// Bytes of `data` that a crash keeps.
    synced_len: usize,
}

#[derive(Debug, Default)]
struct DirNode {
    live: BTreeMap<OsString, Node>,
    /// The entries a crash keeps.
    synced: BTreeMap<OsString, Node>,
}

/// Why an operation of the in-memory file system fails.
#[derive(Debug, thiserror::Error)]
enum MemFsError {
    #[error("no such file or directory")]
    NotFound,
    #[error("not a directory")]
    NotADirectory,
    #[error("is a directory")]
    IsADirectory,
    #[error("directory not empty")]
    DirectoryNotEmpty,
    #[error("the path names no entry (the root, or empty)")]
    NoName,
    #[error("`..` in a path is not supported")]
    ParentComponent,
    #[error("a directory cannot move into itself")]
    IntoItself,
    #[error("the store in {0} is open in this file system already; one store at a time")]
    Locked(PathBuf),
}

impl MemFsError {
    fn kind(&self) -> io::ErrorKind {
        match self {
            MemFsError::NotFound => io::ErrorKind::NotFound,
            MemFsError::NotADirectory => io::ErrorKind::NotADirectory,
            MemFsError::IsADirectory => io::ErrorKind::IsADirectory,
            MemFsError::DirectoryNotEmpty => io::ErrorKind::DirectoryNotEmpty,
            MemFsError::NoName | MemFsError::ParentComponent | MemFsError::IntoItself => io::ErrorKind::InvalidInput,
            MemFsError::Locked(_) => io::ErrorKind::WouldBlock,
        }
    }

    /// As the store's I/O error of `op` on `path`.
    fn at(self, op: &'static str, path: &Path) -> StoreError {
        StoreError::io(op, path, io::Error::new(self.kind(), self))
    }
}

/// The whole file system: nodes, and the roots locked.
#[derive(Debug)]
struct Tree {
    files: HashMap<NodeId, FileNode>,
    dirs: HashMap<NodeId, DirNode>,
    next_id: NodeId,
    /// Open handles per file node.
    handles: HashMap<NodeId, usize>,
    locked_roots: HashSet<PathBuf>,
}

/// A path's entry names, in order.
fn names(path: &Path) -> std::result::Result<Vec<&std::ffi::OsStr>, MemFsError> {
    let mut names = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(name) => names.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => return Err(MemFsError::ParentComponent),
        }
    }
    Ok(names)
}

/// A path's parent directory names and its own name.
fn split(path: &Path) -> std::result::Result<(Vec<&std::ffi::OsStr>, OsString), MemFsError> {
    let mut names = names(path)?;
    let name = names.pop().ok_or(MemFsError::NoName)?;
    Ok((names, name.to_os_string()))
}

impl Tree {
    fn new() -> Tree {
        let mut dirs = HashMap::new();
        dirs.insert(ROOT, DirNode::default());
        Tree { files: HashMap::new(), dirs, next_id: ROOT + 1, handles: HashMap::new(), locked_roots: HashSet::new() }
    }

    fn new_id(&mut self) -> NodeId {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn dir(&self, id: NodeId) -> &DirNode {
        self.dirs.get(&id).expect("an entry names a live directory node")
    }

    fn dir_mut(&mut self, id: NodeId) -> &mut DirNode {
        self.dirs.get_mut(&id).expect("an entry names a live directory node")
    }

    fn file(&self, id: NodeId) -> &FileNode {
        self.files.get(&id).expect("an entry or a handle names a live file node")
    }

    fn file_mut(&mut self, id: NodeId) -> &mut FileNode {
        self.files.get_mut(&id).expect("an entry or a handle names a live file node")
    }

    /// The directory named by `names`, through live entries; with the
    /// directories on the way (the root first), for `rename`'s check.
    fn walk(&self, names: &[&std::ffi::OsStr]) -> std::result::Result<Vec<NodeId>, MemFsError> {
        let mut path = vec![ROOT];
        for name in names {
            let at = *path.last().expect("the root is on every path");
            match self.dir(at).live.get(*name) {
                Some(Node::Dir(id)) => path.push(*id),
                Some(Node::File(_)) => return Err(MemFsError::NotADirectory),
                None => return Err(MemFsError::NotFound),
            }
        }
        Ok(path)
    }

    fn find_dir(&self, names: &[&std::ffi::OsStr]) -> std::result::Result<NodeId, MemFsError> {
        Ok(*self.walk(names)?.last().expect("the root is on every path"))
    }

    /// What `path` names now, if anything.
    fn lookup(&self, path: &Path) -> std::result::Result<Option<Node>, MemFsError> {
        let names = names(path)?;
        let Some((last, parents)) = names.split_last() else { return Ok(Some(Node::Dir(ROOT))) };
        match self.find_dir(parents) {
            Ok(dir) => Ok(self.dir(dir).live.get(*last).copied()),
            Err(MemFsError::NotFound | MemFsError::NotADirectory) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn lookup_file(&self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
        match self.lookup(path)? {
            Some(Node::File(id)) => Ok(id),
            Some(Node::Dir(_)) => Err(MemFsError::IsADirectory),
            None => Err(MemFsError::NotFound),
        }
    }

    fn lookup_dir(&self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
        match self.lookup(path)? {
            Some(Node::Dir(id)) => Ok(id),
            Some(Node::File(_)) => Err(MemFsError::NotADirectory),
            None => Err(MemFsError::NotFound),
        }
    }

    /// Binds `path` to a new, empty file.
    fn create(&mut self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
        let (parents, name) = split(path)?;
        let dir = self.find_dir(&parents)?;
        if let Some(Node::Dir(_)) = self.dir(dir).live.get(&name) {
            return Err(MemFsError::IsADirectory);
        }
        let id = self.new_id();
        self.files.insert(id, FileNode::default());
        self.dir_mut(dir).live.insert(name, Node::File(id));
        Ok(id)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> std::result::Result<(), MemFsError> {
        let (from_parents, from_name) = split(from)?;
        let (to_parents, to_name) = split(to)?;
        let from_dir = self.find_dir(&from_parents)?;
        let node = *self.dir(from_dir).live.get(&from_name).ok_or(MemFsError::NotFound)?;
        let to_path = self.walk(&to_parents)?;
        let to_dir = *to_path.last().expect("the root is on every path");
        if from_dir == to_dir && from_name == to_name {
            return Ok(());
        }
        if let Node::Dir(moved) = node
            && to_path.contains(&moved)
        {
            return Err(MemFsError::IntoItself);
        }
        match (node, self.dir(to_dir).live.get(&to_name)) {
            (Node::File(_), Some(Node::Dir(_))) => return Err(MemFsError::IsADirectory),
            (Node::Dir(_), Some(Node::File(_))) => return Err(MemFsError::NotADirectory),
            (Node::Dir(_), Some(Node::Dir(target))) if !self.dir(*target).live.is_empty() => {
                return Err(MemFsError::DirectoryNotEmpty);
            }
            _ => {}
        }
        self.dir_mut(from_dir).live.remove(&from_name);
        self.dir_mut(to_dir).live.insert(to_name, node);
        Ok(())
    }

    /// Unbinds `path`, a file (`dir: false`) or a directory with everything
    /// in it.
    fn remove(&mut self, path: &Path, dir: bool) -> std::result::Result<(), MemFsError> {
        let (parents, name) = split(path)?;
        let parent = self.find_dir(&parents)?;
        match (self.dir(parent).live.get(&name), dir) {
            (None, _) => return Err(MemFsError::NotFound),
            (Some(Node::Dir(_)), false) => return Err(MemFsError::IsADirectory),
            (Some(Node::File(_)), true) => return Err(MemFsError::NotADirectory),
            _ => {}
        }
        self.dir_mut(parent).live.remove(&name);
        Ok(())
    }

    fn create_dir_all(&mut self, path: &Path) -> std::result::Result<(), MemFsError> {
        let mut at = ROOT;
        for name in names(path)? {
            at = match self.dir(at).live.get(name) {
                Some(Node::Dir(id)) => *id,
                Some(Node::File(_)) => return Err(MemFsError::NotADirectory),
                None => {
                    let id = self.new_id();
                    self.dirs.insert(id, DirNode::default());
                    self.dir_mut(at).live.insert(name.to_os_string(), Node::Dir(id));
                    id
                }
            };
        }
        Ok(())
    }

    fn sync_dir(&mut self, path: &Path) -> std::result::Result<(), MemFsError> {
        let id = self.lookup_dir(path)?;
        let dir = self.dir_mut(id);
        dir.synced = dir.live.clone();
        self.drop_unreachable();
        Ok(())
    }

    /// Drops the nodes no entry, live or synced, and no handle refers to.
    fn drop_unreachable(&mut self) {
        let mut reached = HashSet::from([ROOT]);
        let mut pending = vec![ROOT];
        while let Some(id) = pending.pop() {
            let dir = self.dir(id);
            for node in dir.live.values().chain(dir.synced.values()) {
                let id = match node {
                    Node::File(id) => *id,
                    Node::Dir(id) => {
                        if reached.insert(*id) {
                            pending.push(*id);
                        }
                        continue;
                    }
                };
                reached.insert(id);
            }
        }
        reached.extend(self.handles.keys());
        self.files.retain(|id, _| reached.contains(id));
        self.dirs.retain(|id, _| reached.contains(id));
    }

    /// The tree a power cut leaves: synced entries from the root, files cut
    /// to their synced bytes. A node named twice (a rename durable on one
    /// side only) stays one node.
    fn crash_clone(&self) -> Tree {
        let mut clone = Tree::new();
        let mut copied: HashMap<Node, Node> = HashMap::from([(Node::Dir(ROOT), Node::Dir(ROOT))]);
        let mut pending = vec![ROOT];
        while let Some(id) = pending.pop() {
            let mut entries = BTreeMap::new();
            for (name, node) in &self.dir(id).synced {
                let copy = match copied.get(node) {
                    Some(copy) => *copy,
                    None => {
                        let new_id = clone.new_id();
                        let copy = match node {
                            Node::File(old) => {
                                let file = self.file(*old);
                                let data = file.data[..file.synced_len].to_vec();
                                clone.files.insert(new_id, FileNode { synced_len: data.len(), data });
                                Node::File(new_id)
                            }
                            Node::Dir(old) => {
                                clone.dirs.insert(new_id, DirNode::default());
                                pending.push(*old);
                                Node::Dir(new_id)
                            }
                        };
                        copied.insert(*node, copy);
                        copy
                    }
                };
                entries.insert(name.clone(), copy);
            }
            let Node::Dir(clone_id) = copied[&Node::Dir(id)] else { unreachable!("a directory copies to a directory") };
            let dir = clone.dir_mut(clone_id);
            dir.synced = entries.clone();
            dir.live = entries;
        }
        clone
    }
}

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
