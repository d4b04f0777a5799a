//! Why an operation of `MemFs` fails, as the store's I/O errors.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::StoreError;

/// Why an operation of the in-memory file system fails.
#[derive(Debug, thiserror::Error)]
pub(super) enum MemFsError {
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
    pub(super) fn kind(&self) -> io::ErrorKind {
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
    pub(super) fn at(self, op: &'static str, path: &Path) -> StoreError {
        StoreError::io(op, path, io::Error::new(self.kind(), self))
    }
}
