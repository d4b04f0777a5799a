//! `HdfsFs`: store files and WALs on HDFS, through the `hdfs-native` client
//! run on a Tokio runtime of its own: the store itself stays synchronous
//! threads, and every call blocks on its future with a time limit
//! (`io_timeout`). A call that does not finish in time fails with
//! `TimedOut`: a write pipeline that hangs (a DataNode that stopped without
//! closing its connection) then fails the WAL's round, which marks the
//! file broken and rolls to a new one, instead of stalling every writer.
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
//! `sever` cuts a client off as if its process had died (tests crash a store
//! with it): one flag shared by the client's clones and the files they
//! opened, checked before every call.
//!
//! Thread safety: the client is shared (`Send + Sync`, clones share one
//! connection and runtime); readers are shared between threads; a writer has
//! one owner at a time, as the contract says.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdfs_native::client::WriteOptions;
use hdfs_native::file::{FileReader, FileWriter};
use hdfs_native::{Client, ClientBuilder, HdfsError};
use tokio::runtime::Runtime;

use super::{FileSystem, ReadableFile, WritableFile};
use crate::error::{Result, StoreError};

/// How long `recover_lease` waits for the NameNode to close a file.
const LEASE_RECOVERY_TIMEOUT: Duration = Duration::from_secs(120);
/// The default limit of one HDFS call (HBase waits up to 5 minutes for a WAL
/// sync; a stalled pipeline blocks every writer meanwhile, so ours is
/// shorter).
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(30);

/// An HDFS cluster, addressed by its name node URI.
#[derive(Clone)]
pub struct HdfsFs {
    client: Client,
    io: Arc<Io>,
    uri: String,
}

/// What every handle of one client shares: the runtime its calls run on,
/// their time limit, and whether the client was severed.
struct Io {
    runtime: Runtime,
    limit: Duration,
    severed: AtomicBool,
}

impl std::fmt::Debug for HdfsFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdfsFs").field("uri", &self.uri).finish()
    }
}

struct HdfsWritable {
    path: PathBuf,
    writer: FileWriter,
    io: Arc<Io>,
    len: u64,
}

struct HdfsReadable {
    path: PathBuf,
    reader: FileReader,
    io: Arc<Io>,
    len: u64,
}

impl Io {
    /// Runs `call` on the runtime, failing with `TimedOut` past the limit;
    /// a severed client fails at once without reaching HDFS.
    fn block_on<T>(
        &self,
        op: &'static str,
        path: &Path,
        call: impl std::future::Future<Output = hdfs_native::Result<T>>,
    ) -> Result<T> {
        if self.severed.load(Ordering::Acquire) {
            return Err(StoreError::io(
                op,
                path,
                io::Error::new(io::ErrorKind::ConnectionAborted, "this HDFS client was severed (HdfsFs::sever)"),
            ));
        }
        let limit = self.limit;
        match self.runtime.block_on(async { tokio::time::timeout(limit, call).await }) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(hdfs_error(op, path, e)),
            Err(_) => Err(StoreError::io(
                op,
                path,
                io::Error::new(io::ErrorKind::TimedOut, format!("HDFS {op} did not finish within {limit:?}")),
            )),
        }
    }
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
        Self::connect_with(uri, DEFAULT_IO_TIMEOUT)
    }

    /// Like [`connect`](Self::connect), with every call limited to
    /// `io_timeout`.
    pub fn connect_with(uri: &str, io_timeout: Duration) -> Result<HdfsFs> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hdfs-io")
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("start the HDFS client runtime", Path::new(uri), e))?;
        let client = ClientBuilder::new()
            .with_url(uri)
            // A DataNode lost from a write pipeline is replaced when the
            // cluster has a spare and dropped when it has none (HBase's
            // advice for small clusters): the write goes on with the
            // DataNodes left instead of failing.
            .with_config([("dfs.client.block.write.replace-datanode-on-failure.best-effort", "true")])
            .with_io_runtime(runtime.handle().clone())
            .build()
            .map_err(|e| hdfs_error("connect", Path::new(uri), e))?;
        let io = Arc::new(Io { runtime, limit: io_timeout, severed: AtomicBool::new(false) });
        Ok(HdfsFs { client, io, uri: uri.to_string() })
    }

    fn call<T>(
        &self,
        op: &'static str,
        path: &Path,
        call: impl std::future::Future<Output = hdfs_native::Result<T>>,
    ) -> Result<T> {
        self.io.block_on(op, path, call)
    }

    /// Cuts this client off as if its process had died: every later call
    /// through it (and through its clones and the files they opened) fails
    /// at once without reaching HDFS, so a file being written is abandoned,
    /// not closed. Bytes not yet `hsync`ed may be lost, and the NameNode
    /// keeps the file's lease until another client recovers it (or it
    /// expires). Tests crash a store on HDFS with it.
    pub fn sever(&self) {
        self.io.severed.store(true, Ordering::Release);
    }

    /// The name node URI this file system was opened with.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    fn info(&self, path: &Path) -> Result<Option<hdfs_native::client::FileStatus>> {
        let p = hdfs_path(path)?;
        let found = self.call("stat", path, async {
            match self.client.get_file_info(p).await {
                Ok(status) => Ok(Some(status)),
                Err(HdfsError::FileNotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        Ok(found)
    }
}

impl FileSystem for HdfsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let p = hdfs_path(path)?;
        // CREATE|OVERWRITE: a new file, or one replacing a file of that name
        // (the contract's create), in one call without a race.
        let options = WriteOptions { overwrite: true, create_parent: false, ..WriteOptions::default() };
        let writer = self.call("create", path, self.client.create(p, options))?;
        Ok(Box::new(HdfsWritable { path: path.to_path_buf(), writer, io: self.io.clone(), len: 0 }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let reader = self.call("open", path, self.client.read(hdfs_path(path)?))?;
        let len = reader.file_length() as u64;
        Ok(Arc::new(HdfsReadable { path: path.to_path_buf(), reader, io: self.io.clone(), len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.call("rename", from, self.client.rename(hdfs_path(from)?, hdfs_path(to)?, true))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        if self.call("remove", path, self.client.delete(hdfs_path(path)?, false))? {
            Ok(())
        } else {
            Err(StoreError::io("remove", path, io::Error::from(io::ErrorKind::NotFound)))
        }
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.info(path)?.is_some())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let statuses = self.call("list", dir, self.client.list_status(hdfs_path(dir)?, false))?;
        let mut names: Vec<String> = statuses
            .into_iter()
            .filter_map(|s| s.path.rsplit('/').next().map(str::to_string))
            .filter(|n| !n.is_empty())
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.call("mkdir", dir, self.client.mkdirs(hdfs_path(dir)?, 0o755, true))
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        self.call("remove", dir, self.client.delete(hdfs_path(dir)?, true)).map(|_| ())
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
            match self.call("recover lease", path, self.client.recover_lease(p)) {
                Ok(true) => return Ok(()),
                // Gone since it was listed: nothing to take over.
                Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
                // Not closed yet (the NameNode is recovering the last block:
                // the DataNodes must agree on its length), or a call that
                // failed (e.g. "committed blocks are waiting to be minimally
                // replicated" while a DataNode is down): ask again, as
                // HBase's lease recovery does.
                Ok(false) | Err(_) if started.elapsed() < LEASE_RECOVERY_TIMEOUT => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
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
            }
        }
    }
}

impl WritableFile for HdfsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut written = 0;
        while written < data.len() {
            let chunk = bytes::Bytes::copy_from_slice(&data[written..]);
            let n = self.io.block_on("write", &self.path, self.writer.write_bytes(chunk))?;
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
        self.io.block_on("hsync", &self.path, self.writer.hsync())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Self { path, mut writer, io, .. } = *self;
        io.block_on("close", &path, writer.close())
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
        self.io.block_on("read", &self.path, self.reader.read_range_buf(buf, offset as usize))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
