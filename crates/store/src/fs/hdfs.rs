//! `HdfsFs`: store files and WALs on HDFS, through the `hdfs-native` client
//! (its blocking wrapper, which owns a Tokio runtime: the store itself stays
//! synchronous threads).
//!
//! How the [`FileSystem`] contract maps onto HDFS:
//! - `sync` is `hsync`: the bytes written so far are on every DataNode of the
//!   pipeline and persisted there before it returns (HBase's WAL does the
//!   same for SYNC_WAL). A DataNode lost mid-write is handled by the
//!   client's pipeline recovery, inside `hsync` or the next write (with
//!   `replace-datanode-on-failure.best-effort`, so a small cluster goes on
//!   with the DataNodes it has left).
//! - `sync_dir` does nothing: the NameNode logs every namespace operation
//!   (create, rename, delete, mkdir) to its edit log before the call
//!   returns, so a directory entry is durable as soon as the call succeeds.
//! - `rename` replaces its target (HDFS's `rename` with `OVERWRITE`), as the
//!   atomic commit of a file written under a temporary name needs.
//! - `recover_lease` asks the NameNode to recover a file's lease, and waits
//!   until it reports the file closed: from then on the file's length is
//!   final and the writer that held it can append nothing more (its next
//!   write or `hsync` fails). Replay of a WAL another process may have held
//!   open does this first.
//! - `truncate` is not offered by the HDFS client used here and fails with
//!   an error saying so; the store never truncates (only the fault-injecting
//!   test file system does, on local disk).
//!
//! Paths are absolute HDFS paths (`/accordion/data/...`); the name node is
//! given once, by the URI the file system is opened with.
//!
//! Thread safety: the client is shared (`Send + Sync`, clones share one
//! connection and runtime); readers are shared between threads; a writer has
//! one owner at a time, as the contract says.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdfs_native::HdfsError;
use hdfs_native::client::WriteOptions;
use hdfs_native::sync::{Client, ClientBuilder, FileReader, FileWriter};

use super::{FileSystem, ReadableFile, WritableFile};
use crate::error::{Result, StoreError};

/// How long `recover_lease` waits for the NameNode to close a file.
const LEASE_RECOVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// An HDFS cluster, addressed by its name node URI.
#[derive(Clone)]
pub struct HdfsFs {
    client: Client,
    uri: String,
}

impl std::fmt::Debug for HdfsFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdfsFs").field("uri", &self.uri).finish()
    }
}

struct HdfsWritable {
    path: PathBuf,
    writer: FileWriter,
    len: u64,
}

struct HdfsReadable {
    path: PathBuf,
    reader: FileReader,
    len: u64,
}

/// The store's error for a failed HDFS call: file-not-found and
/// already-exists keep their I/O kinds, so callers can tell them apart.
fn hdfs_error(op: &'static str, path: &Path, e: HdfsError) -> StoreError {
    let kind = match &e {
        HdfsError::FileNotFound(_) => io::ErrorKind::NotFound,
        HdfsError::AlreadyExists(_) => io::ErrorKind::AlreadyExists,
        HdfsError::IsADirectoryError(_) => io::ErrorKind::IsADirectory,
        HdfsError::UnsupportedFeature(_) => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    StoreError::io(op, path, io::Error::new(kind, format!("HDFS: {e}")))
}

fn hdfs_path(path: &Path) -> Result<&str> {
    let s = path.to_str().ok_or_else(|| StoreError::InvalidArgument(format!("{path:?} is not UTF-8")))?;
    if !s.starts_with('/') {
        return Err(StoreError::InvalidArgument(format!("HDFS paths are absolute: {s:?}")));
    }
    Ok(s)
}

impl HdfsFs {
    /// Connects to the name node of `uri` (`hdfs://host:port`, or a name
    /// service resolved from the Hadoop configuration).
    pub fn connect(uri: &str) -> Result<HdfsFs> {
        let client =
            ClientBuilder::new().with_url(uri).build().map_err(|e| hdfs_error("connect", Path::new(uri), e))?;
        Ok(HdfsFs { client, uri: uri.to_string() })
    }

    /// The name node URI this file system was opened with.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    fn info(&self, path: &Path) -> Result<Option<hdfs_native::client::FileStatus>> {
        match self.client.get_file_info(hdfs_path(path)?) {
            Ok(status) => Ok(Some(status)),
            Err(HdfsError::FileNotFound(_)) => Ok(None),
            Err(e) => Err(hdfs_error("stat", path, e)),
        }
    }
}

impl FileSystem for HdfsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let p = hdfs_path(path)?;
        // HDFS refuses `overwrite` of a file that does not exist, and a
        // plain create of one that does.
        let overwrite = self.info(path)?.is_some();
        let options = WriteOptions { overwrite, create_parent: false, ..WriteOptions::default() };
        let writer = self.client.create(p, options).map_err(|e| hdfs_error("create", path, e))?;
        Ok(Box::new(HdfsWritable { path: path.to_path_buf(), writer, len: 0 }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let reader = self.client.read(hdfs_path(path)?).map_err(|e| hdfs_error("open", path, e))?;
        let len = reader.file_length() as u64;
        Ok(Arc::new(HdfsReadable { path: path.to_path_buf(), reader, len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.client.rename(hdfs_path(from)?, hdfs_path(to)?, true).map_err(|e| hdfs_error("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        match self.client.delete(hdfs_path(path)?, false) {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::io("remove", path, io::Error::from(io::ErrorKind::NotFound))),
            Err(e) => Err(hdfs_error("remove", path, e)),
        }
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.info(path)?.is_some())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let statuses = self.client.list_status(hdfs_path(dir)?, false).map_err(|e| hdfs_error("list", dir, e))?;
        let mut names: Vec<String> = statuses
            .into_iter()
            .filter_map(|s| s.path.rsplit('/').next().map(str::to_string))
            .filter(|n| !n.is_empty())
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.client.mkdirs(hdfs_path(dir)?, 0o755, true).map_err(|e| hdfs_error("mkdir", dir, e))
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        match self.client.delete(hdfs_path(dir)?, true) {
            Ok(_) => Ok(()),
            Err(e) => Err(hdfs_error("remove", dir, e)),
        }
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        // Namespace operations are durable once the NameNode answered (see
        // the module doc); only a check that the directory is there.
        hdfs_path(dir).map(|_| ())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        match self.info(path)? {
            Some(s) => Ok(s.length as u64),
            None => Err(StoreError::io("stat", path, io::Error::from(io::ErrorKind::NotFound))),
        }
    }

    fn truncate(&self, path: &Path, _len: u64) -> Result<()> {
        Err(StoreError::io(
            "truncate",
            path,
            io::Error::new(io::ErrorKind::Unsupported, "truncate is not supported on HDFS by this client"),
        ))
    }

    fn recover_lease(&self, path: &Path) -> Result<()> {
        let p = hdfs_path(path)?;
        let started = Instant::now();
        let mut wait = Duration::from_millis(50);
        loop {
            match self.client.recover_lease(p) {
                Ok(true) => return Ok(()),
                Ok(false) if started.elapsed() < LEASE_RECOVERY_TIMEOUT => {
                    // The NameNode is recovering the last block (it asks the
                    // DataNodes to agree on its length); ask again.
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                Ok(false) => {
                    return Err(StoreError::io(
                        "recover lease",
                        path,
                        io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("the NameNode did not close the file within {LEASE_RECOVERY_TIMEOUT:?}"),
                        ),
                    ));
                }
                Err(e) => return Err(hdfs_error("recover lease", path, e)),
            }
        }
    }
}

impl WritableFile for HdfsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut written = 0;
        while written < data.len() {
            let n = self
                .writer
                .write_bytes(bytes::Bytes::copy_from_slice(&data[written..]))
                .map_err(|e| hdfs_error("write", &self.path, e))?;
            written += n;
        }
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // The client sends full packets as they fill; `sync` sends the rest.
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.writer.hsync().map_err(|e| hdfs_error("hsync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.writer.close().map_err(|e| hdfs_error("close", &self.path, e))
    }
}

impl ReadableFile for HdfsReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if offset + buf.len() as u64 > self.len {
            return Err(StoreError::io(
                "read",
                &self.path,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{} bytes at {offset} of {}", buf.len(), self.len),
                ),
            ));
        }
        self.reader.read_range_buf(buf, offset as usize).map_err(|e| hdfs_error("read", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
