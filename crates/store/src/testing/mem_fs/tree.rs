//! The tree of `MemFs`: file and directory nodes, the entries naming
//! them (live and synced), and the crash clone. A plain value: `MemFs`
//! keeps it behind one mutex (see the invariants in `mem_fs.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

use super::error::MemFsError;

pub(super) type NodeId = u64;

/// The root directory's node.
pub(super) const ROOT: NodeId = 0;

/// What an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Node {
    File(NodeId),
    Dir(NodeId),
}

#[derive(Debug, Default)]
pub(super) struct FileNode {
    pub(super) data: Vec<u8>,
    /// Bytes of `data` that a crash keeps.
    pub(super) synced_len: usize,
}

#[derive(Debug, Default)]
pub(super) struct DirNode {
    pub(super) live: BTreeMap<OsString, Node>,
    /// The entries a crash keeps.
    pub(super) synced: BTreeMap<OsString, Node>,
}

/// The whole file system: nodes, and the roots locked.
#[derive(Debug)]
pub(super) struct Tree {
    pub(super) files: HashMap<NodeId, FileNode>,
    pub(super) dirs: HashMap<NodeId, DirNode>,
    pub(super) next_id: NodeId,
    /// Open handles per file node.
    pub(super) handles: HashMap<NodeId, usize>,
    pub(super) locked_roots: HashSet<PathBuf>,
}

/// A path's entry names, in order.
pub(super) fn names(path: &Path) -> std::result::Result<Vec<&OsStr>, MemFsError> {
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
pub(super) fn split(path: &Path) -> std::result::Result<(Vec<&OsStr>, OsString), MemFsError> {
    let mut names = names(path)?;
    let name = names.pop().ok_or(MemFsError::NoName)?;
    Ok((names, name.to_os_string()))
}

impl Tree {
    pub(super) fn new() -> Tree {
        let mut dirs = HashMap::new();
        dirs.insert(ROOT, DirNode::default());
        Tree { files: HashMap::new(), dirs, next_id: ROOT + 1, handles: HashMap::new(), locked_roots: HashSet::new() }
    }

    pub(super) fn new_id(&mut self) -> NodeId {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(super) fn dir(&self, id: NodeId) -> &DirNode {
        self.dirs.get(&id).expect("an entry names a live directory node")
    }

    pub(super) fn dir_mut(&mut self, id: NodeId) -> &mut DirNode {
        self.dirs.get_mut(&id).expect("an entry names a live directory node")
    }

    pub(super) fn file(&self, id: NodeId) -> &FileNode {
        self.files.get(&id).expect("an entry or a handle names a live file node")
    }

    pub(super) fn file_mut(&mut self, id: NodeId) -> &mut FileNode {
        self.files.get_mut(&id).expect("an entry or a handle names a live file node")
    }

    /// The directory named by `names`, through live entries; with the
    /// directories on the way (the root first), for `rename`'s check.
    pub(super) fn walk(&self, names: &[&OsStr]) -> std::result::Result<Vec<NodeId>, MemFsError> {
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

    pub(super) fn find_dir(&self, names: &[&OsStr]) -> std::result::Result<NodeId, MemFsError> {
        Ok(*self.walk(names)?.last().expect("the root is on every path"))
    }

    /// What `path` names now, if anything.
    pub(super) fn lookup(&self, path: &Path) -> std::result::Result<Option<Node>, MemFsError> {
        let names = names(path)?;
        let Some((last, parents)) = names.split_last() else { return Ok(Some(Node::Dir(ROOT))) };
        match self.find_dir(parents) {
            Ok(dir) => Ok(self.dir(dir).live.get(*last).copied()),
            Err(MemFsError::NotFound | MemFsError::NotADirectory) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(super) fn lookup_file(&self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
        match self.lookup(path)? {
            Some(Node::File(id)) => Ok(id),
            Some(Node::Dir(_)) => Err(MemFsError::IsADirectory),
            None => Err(MemFsError::NotFound),
        }
    }

    pub(super) fn lookup_dir(&self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
        match self.lookup(path)? {
            Some(Node::Dir(id)) => Ok(id),
            Some(Node::File(_)) => Err(MemFsError::NotADirectory),
            None => Err(MemFsError::NotFound),
        }
    }

    /// Binds `path` to a new, empty file.
    pub(super) fn create(&mut self, path: &Path) -> std::result::Result<NodeId, MemFsError> {
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

    pub(super) fn rename(&mut self, from: &Path, to: &Path) -> std::result::Result<(), MemFsError> {
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
    pub(super) fn remove(&mut self, path: &Path, dir: bool) -> std::result::Result<(), MemFsError> {
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

    pub(super) fn create_dir_all(&mut self, path: &Path) -> std::result::Result<(), MemFsError> {
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

    pub(super) fn sync_dir(&mut self, path: &Path) -> std::result::Result<(), MemFsError> {
        let id = self.lookup_dir(path)?;
        let dir = self.dir_mut(id);
        dir.synced = dir.live.clone();
        self.drop_unreachable();
        Ok(())
    }

    /// Drops the nodes no entry, live or synced, and no handle refers to.
    pub(super) fn drop_unreachable(&mut self) {
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
    pub(super) fn crash_clone(&self) -> Tree {
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
