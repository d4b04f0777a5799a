//! Directory entries for the fault-injecting file system, modelled the way
//! LevelDB's `FaultInjectionTestEnv` and Pebble's strict `MemFS` do: a
//! creation, rename or removal in a directory is durable only once that
//! directory is synced; a simulated power loss undoes the others, newest
//! first.
//!
//! Removed files and directories (and a file a rename replaces) are not
//! deleted but moved aside to a hidden sibling (`.faultfs-stash-N`, never
//! listed) until their directory is synced, so a power loss can put them
//! back with exactly the bytes they had. Which directory makes an operation
//! durable: the parent of the created, removed or renamed-to path (a rename
//! across directories is durable with its destination's).
//!
//! Thread safety: `DirLog` is a plain value; `FaultInjectingFs` keeps it
//! behind its state mutex and holds that mutex across each directory
//! operation, so the log's order is the operations' order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::FileSystem;
use crate::error::Result;

/// The prefix of stashed entries' names; `list` leaves them out.
pub(crate) const STASH_PREFIX: &str = ".faultfs-stash-";

#[derive(Debug)]
enum DirOp {
    Created { path: PathBuf, dir: bool },
    Renamed { from: PathBuf, to: PathBuf, displaced: Option<PathBuf> },
    Removed { path: PathBuf, stash: PathBuf, dir: bool },
}

impl DirOp {
    /// The directory whose sync makes this operation durable.
    fn directory(&self) -> Option<&Path> {
        match self {
            DirOp::Created { path, .. } | DirOp::Removed { path, .. } | DirOp::Renamed { to: path, .. } => {
                path.parent()
            }
        }
    }

    /// Stashed entries that go for good once the operation is durable.
    fn stashed(&self) -> Option<(&Path, bool)> {
        match self {
            DirOp::Removed { stash, dir, .. } => Some((stash, *dir)),
            DirOp::Renamed { displaced: Some(stash), .. } => Some((stash, false)),
            _ => None,
        }
    }
}

/// Directory operations not yet made durable, oldest first.
#[derive(Debug, Default)]
pub(crate) struct DirLog {
    pending: Vec<DirOp>,
    next_stash: u64,
}

/// Moves the synced lengths recorded for `from` (a file, or files under a
/// directory) to the same names under `to`.
pub(crate) fn move_synced(synced: &mut HashMap<PathBuf, u64>, from: &Path, to: &Path) {
    let moved: Vec<(PathBuf, u64)> =
        synced.iter().filter(|(p, _)| p.starts_with(from)).map(|(p, &len)| (p.clone(), len)).collect();
    for (p, len) in moved {
        synced.remove(&p);
        let rest = p.strip_prefix(from).unwrap_or(Path::new(""));
        synced.insert(if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) }, len);
    }
}

impl DirLog {
    fn stash_path(&mut self, path: &Path) -> PathBuf {
        self.next_stash += 1;
        path.with_file_name(format!("{STASH_PREFIX}{}", self.next_stash))
    }

    /// Records the creation of `path` if it did not exist before.
    pub(crate) fn created(&mut self, path: &Path, dir: bool) {
        self.pending.push(DirOp::Created { path: path.to_path_buf(), dir });
    }

    /// Creates the directories of `dir` that are missing, recording each.
    pub(crate) fn create_dir_all(&mut self, inner: &dyn FileSystem, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at {
            if d.as_os_str().is_empty() || inner.exists(d)? {
                break;
            }
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        inner.create_dir_all(dir)?;
        for d in missing.into_iter().rev() {
            self.created(&d, true);
        }
        Ok(())
    }

    /// Renames `from` to `to`, moving a file it replaces aside.
    pub(crate) fn rename(
        &mut self,
        inner: &dyn FileSystem,
        synced: &mut HashMap<PathBuf, u64>,
        from: &Path,
        to: &Path,
    ) -> Result<()> {
        let displaced = if inner.exists(to)? {
            let stash = self.stash_path(to);
            inner.rename(to, &stash)?;
            move_synced(synced, to, &stash);
            Some(stash)
        } else {
            None
        };
        if let Err(e) = inner.rename(from, to) {
            if let Some(stash) = &displaced {
                inner.rename(stash, to)?;
                move_synced(synced, stash, to);
            }
            return Err(e);
        }
        move_synced(synced, from, to);
        self.pending.push(DirOp::Renamed { from: from.to_path_buf(), to: to.to_path_buf(), displaced });
        Ok(())
    }

    /// Removes `path` (a file, or a directory with everything in it) by
    /// moving it aside until its directory is synced.
    pub(crate) fn remove(
        &mut self,
        inner: &dyn FileSystem,
        synced: &mut HashMap<PathBuf, u64>,
        path: &Path,
        dir: bool,
    ) -> Result<()> {
        if dir && !inner.exists(path)? {
            return Ok(()); // remove_dir_all of nothing
        }
        let stash = self.stash_path(path);
        inner.rename(path, &stash)?;
        move_synced(synced, path, &stash);
        self.pending.push(DirOp::Removed { path: path.to_path_buf(), stash, dir });
        Ok(())
    }

    /// `dir` was synced: the operations in it are durable; what they
    /// stashed goes.
    pub(crate) fn synced_dir(
        &mut self,
        inner: &dyn FileSystem,
        synced: &mut HashMap<PathBuf, u64>,
        dir: &Path,
    ) -> Result<()> {
        let (durable, pending): (Vec<DirOp>, Vec<DirOp>) =
            std::mem::take(&mut self.pending).into_iter().partition(|op| op.directory() == Some(dir));
        self.pending = pending;
        for op in durable {
            if let Some((stash, is_dir)) = op.stashed()
                && inner.exists(stash)?
            {
                if is_dir {
                    inner.remove_dir_all(stash)?;
                } else {
                    inner.remove(stash)?;
                }
                synced.retain(|p, _| !p.starts_with(stash));
            }
        }
        Ok(())
    }

    /// A power loss: undoes every operation not made durable, newest first.
    pub(crate) fn undo_all(&mut self, inner: &dyn FileSystem, synced: &mut HashMap<PathBuf, u64>) -> Result<()> {
        while let Some(op) = self.pending.pop() {
            match op {
                DirOp::Created { path, dir } => {
                    if inner.exists(&path)? {
                        if dir {
                            inner.remove_dir_all(&path)?;
                        } else {
                            inner.remove(&path)?;
                        }
                    }
                    synced.retain(|p, _| !p.starts_with(&path));
                }
                DirOp::Renamed { from, to, displaced } => {
                    if inner.exists(&to)? && from.parent().is_some_and(|p| inner.exists(p).unwrap_or(false)) {
                        inner.rename(&to, &from)?;
                        move_synced(synced, &to, &from);
                    }
                    if let Some(stash) = displaced.filter(|s| inner.exists(s).unwrap_or(false)) {
                        inner.rename(&stash, &to)?;
                        move_synced(synced, &stash, &to);
                    }
                }
                // (A stash is gone if a later, durable removal took its
                // directory.)
                DirOp::Removed { path, stash, .. } => {
                    if inner.exists(&stash)? {
                        inner.rename(&stash, &path)?;
                        move_synced(synced, &stash, &path);
                    }
                }
            }
        }
        Ok(())
    }
}
