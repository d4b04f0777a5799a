//! `LogWriter`: one WAL file being written — its header, then batches of
//! already-framed records, each batch made durable by one fsync.
//!
//! Invariants:
//! - The header is written and fsynced before `create` returns, so a file
//!   that holds records always has a valid header on disk.
//! - `len` counts bytes the file accepted (header + whole batches);
//!   `synced_len <= len` counts the bytes covered by the last successful
//!   fsync. Both are batch boundaries, hence record boundaries.
//! - Every batch but the first after the header is preceded by a sync mark
//!   (`record.rs`) at `synced_len == len`: a healthy writer has synced all
//!   it wrote before it writes again, and the mark says so in the file.
//! - After any failed append or fsync the writer is *broken*: the file may
//!   hold part of a batch, or the kernel may have dropped dirty pages after
//!   a failed fsync (Linux does), so nothing more is ever written to it and
//!   a failed fsync is never retried (a retry can falsely succeed). The
//!   caller seals the file at `synced_len` in the next file's header.
//!
//! Thread safety: none; the `Wal` owns it behind its I/O mutex.

use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, WritableFile};
use crate::wal::record::{self, FileHeader, HEADER_LEN};

pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    number: u64,
    len: u64,
    synced_len: u64,
    broken: bool,
}

impl LogWriter {
    /// Creates `path` (replacing debris of an earlier failed attempt), then
    /// writes and fsyncs `header`. On failure the partial file is removed,
    /// best effort (if that fails too, the next attempt replaces it).
    pub(crate) fn create(fs: &dyn FileSystem, path: &Path, header: &FileHeader) -> Result<LogWriter> {
        let attempt = || -> Result<LogWriter> {
            let mut file = fs.create(path)?;
            let bytes = header.encode();
            file.append(&bytes)?;
            file.sync()?;
            let len = bytes.len() as u64;
            Ok(LogWriter { file, number: header.number, len, synced_len: len, broken: false })
        };
        attempt().inspect_err(|_| {
            if fs.exists(path).unwrap_or(false) {
                let _ = fs.remove(path);
            }
        })
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn synced_len(&self) -> u64 {
        self.synced_len
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// Writes `batch` (whole records), after a sync mark unless it is the
    /// first batch of the file, and fsyncs the file; the bytes written.
    pub(crate) fn write_and_sync(&mut self, batch: &[u8]) -> Result<u64> {
        if self.broken {
            return Err(StoreError::io(
                "write",
                self.file.path(),
                std::io::Error::other("WAL file is broken by an earlier failure"),
            ));
        }
        debug_assert_eq!(self.len, self.synced_len, "a healthy writer synced all it wrote");
        let start = self.len;
        let mark = (start > HEADER_LEN as u64).then(|| record::sync_mark(start));
        let result = mark
            .as_ref()
            .map_or(Ok(()), |m| self.file.append(m))
            .and_then(|()| {
                self.len += mark.as_ref().map_or(0, |m| m.len() as u64);
                self.file.append(batch)
            })
            .and_then(|()| {
                self.len += batch.len() as u64;
                self.file.sync()
            });
        match result {
            Ok(()) => {
                self.synced_len = self.len;
                Ok(self.len - start)
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// Closes the file. Every accepted byte is already synced unless the
    /// writer is broken, in which case close errors are expected and
    /// ignored (the file is sealed at `synced_len` anyway).
    pub(crate) fn close(self) -> Result<()> {
        let broken = self.broken;
        match self.file.close() {
            Err(_) if broken => Ok(()),
            r => r,
        }
    }
}
