//! `StoreManifest`: the list of a family store's live files, committed
//! atomically (write to a temporary name, fsync, rename, fsync the
//! directory). A store file exists for readers only once a manifest naming
//! it is committed; files in the directory that no manifest names are
//! leftovers of a crash and are removed at open.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fs::FileSystem;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreManifest {
    /// Live files, oldest first.
    pub files: Vec<String>,
    /// Every write with a sequence id at or below this is in the files; the
    /// WAL replay skips them for this store.
    pub flushed_seq: u64,
}

impl StoreManifest {
    pub fn path(dir: &Path) -> PathBuf {
        crate::layout::manifest(dir)
    }

    /// Loads the manifest of `dir` (empty if the store is new).
    pub fn load(fs: &dyn FileSystem, dir: &Path) -> Result<StoreManifest> {
        Ok(crate::layout::read_json(fs, &Self::path(dir), "manifest")?.unwrap_or_default())
    }

    pub fn commit(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        self.commit_fenced(fs, dir, &|| Ok(()))
    }

    /// Commits only if `fence` allows it once the new manifest is durable
    /// under its temporary name (see `fs::write_atomic_fenced`).
    pub fn commit_fenced(&self, fs: &dyn FileSystem, dir: &Path, fence: &dyn Fn() -> Result<()>) -> Result<()> {
        crate::layout::write_json(fs, &Self::path(dir), self, fence)
    }
}
