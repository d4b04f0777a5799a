//! `RecordLog`: a compacted log of opaque records on the file system, for
//! one owner that keeps its whole state in memory and needs it durable and
//! readable in one sequential read — the cluster master's catalog
//! (`cluster/src/catalog_log.rs`), as HBase's master keeps region states in
//! a store of its own on the root (`MasterData`) rather than in ZooKeeper.
//!
//! ```text
//! dir/<epoch:020>-<n:020>.log
//! file   := header record*
//! header := magic "ACCRDLOG" (8) | version u32 (1) | epoch u64 | n u64 |
//!           crc32c u32                                          (32 bytes)
//! record := crc32c u32 | len u32 | payload (len bytes)
//! ```
//!
//! - The first record of every file is a *snapshot*: the owner's whole
//!   state. Every later record is a change to it. So the newest file whose
//!   first record reads back is the whole log, and every older file is
//!   superseded (removed once a newer snapshot is durable).
//! - A record's crc covers `len` and the payload. Reading a file stops at
//!   the first record that does not read back (a write cut short by a
//!   crash: the owner acts on a record only after [`RecordLog::append`]
//!   returned, which is after its sync), and says where.
//! - Owners take turns by *epoch* (the master's election sequence): a new
//!   owner starts a file of its epoch with a snapshot of what it read and
//!   writes only there; a file of a greater epoch than the writer's own
//!   means a newer owner exists, and [`RecordLog::start`] refuses. An old
//!   owner that has not noticed yet writes to its own files, which the new
//!   owner has superseded and removes: what the old owner writes after the
//!   new one read the log is read by nobody (whoever acts on the log asks
//!   the owner ZooKeeper names, so such writes reach no region server
//!   either).
//! - HDFS: before the newest file is read its lease is recovered, so an old
//!   owner still holding it open can append nothing more and its length is
//!   final.
//!
//! Thread safety: a `RecordLog` has one owner (`&mut self`); the free
//! function [`read_newest`] only reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::fs::{FileSystem, WritableFile};

const MAGIC: &[u8; 8] = b"ACCRDLOG";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 32;
const FRAME_LEN: usize = 8;
/// The largest record read back (a snapshot of 100,000 catalog entries is
/// about 12 MB): a length past it is damage, not a record.
pub const MAX_RECORD: usize = 1 << 30;

/// One log file's place in the order: `(epoch, n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogFileId {
    pub epoch: u64,
    pub n: u64,
}

impl LogFileId {
    fn name(self) -> String {
        format!("{:020}-{:020}.log", self.epoch, self.n)
    }

    /// The id a log file's name spells; `None` for any other name (a
    /// temporary file, an operator's copy).
    pub fn parse(name: &str) -> Option<LogFileId> {
        let stem = name.strip_suffix(".log")?;
        let (epoch, n) = stem.split_once('-')?;
        let digits = |s: &str| s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(epoch) || !digits(n) {
            return None;
        }
        Some(LogFileId { epoch: epoch.parse().ok()?, n: n.parse().ok()? })
    }
}

/// What [`read_newest`] found.
#[derive(Debug, Default)]
pub struct LogContents {
    /// The newest readable file's records, its snapshot first; empty when
    /// the directory holds no log.
    pub records: Vec<Vec<u8>>,
    /// That file.
    pub file: Option<LogFileId>,
    /// The greatest id of any log file in the directory (readable or not).
    pub newest: Option<LogFileId>,
    /// Bytes at the end of the file read that did not read back as
    /// records: `(offset, len)`; and newer files whose snapshot did not
    /// read back. Both are writes cut short; the caller reports them.
    pub unreadable_tail: Option<(u64, u64)>,
    pub skipped: Vec<LogFileId>,
    /// Bytes read.
    pub bytes: u64,
}

/// Reads the log in `dir` (missing: an empty log): the newest file whose
/// snapshot reads back, with every record of it up to the first that does
/// not.
pub fn read_newest(fs: &dyn FileSystem, dir: &Path) -> Result<LogContents> {
    let mut out = LogContents::default();
    if !fs.exists(dir)? {
        return Ok(out);
    }
    let mut ids: Vec<LogFileId> = fs.list(dir)?.iter().filter_map(|n| LogFileId::parse(n)).collect();
    ids.sort_unstable();
    out.newest = ids.last().copied();
    for id in ids.into_iter().rev() {
        let path = dir.join(id.name());
        fs.recover_lease(&path)?;
        let data = fs.read_all(&path)?;
        out.bytes += data.len() as u64;
        let (records, end) = parse_file(&data, id);
        if records.is_empty() {
            out.skipped.push(id);
            continue;
        }
        if end < data.len() {
            out.unreadable_tail = Some((end as u64, (data.len() - end) as u64));
        }
        out.records = records;
        out.file = Some(id);
        break;
    }
    Ok(out)
}

/// The records of one file's bytes and where the readable part ends; no
/// records when the header or the snapshot does not read back.
fn parse_file(data: &[u8], id: LogFileId) -> (Vec<Vec<u8>>, usize) {
    if data.len() < HEADER_LEN || decode_header(&data[..HEADER_LEN]) != Some(id) {
        return (Vec::new(), 0);
    }
    let mut at = HEADER_LEN;
    let mut records = Vec::new();
    while data.len() - at >= FRAME_LEN {
        let crc = u32::from_be_bytes(data[at..at + 4].try_into().expect("4 bytes"));
        let len = u32::from_be_bytes(data[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        if len > MAX_RECORD || data.len() - at - FRAME_LEN < len {
            break;
        }
        let body = &data[at + 4..at + FRAME_LEN + len];
        if crc32c::crc32c(body) != crc {
            break;
        }
        records.push(body[4..].to_vec());
        at += FRAME_LEN + len;
    }
    (records, at)
}

fn encode_header(id: LogFileId) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_be_bytes());
    h.extend_from_slice(&id.epoch.to_be_bytes());
    h.extend_from_slice(&id.n.to_be_bytes());
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_be_bytes());
    h
}

fn decode_header(h: &[u8]) -> Option<LogFileId> {
    if &h[..8] != MAGIC || u32::from_be_bytes(h[8..12].try_into().ok()?) != VERSION {
        return None;
    }
    if crc32c::crc32c(&h[..28]) != u32::from_be_bytes(h[28..32].try_into().ok()?) {
        return None;
    }
    let epoch = u64::from_be_bytes(h[12..20].try_into().ok()?);
    let n = u64::from_be_bytes(h[20..28].try_into().ok()?);
    Some(LogFileId { epoch, n })
}

fn frame(payload: &[u8]) -> Result<Vec<u8>> {
    if payload.len() > MAX_RECORD {
        return Err(StoreError::TooLarge { what: "log record", len: payload.len() as u64, limit: MAX_RECORD as u64 });
    }
    let mut out = Vec::with_capacity(FRAME_LEN + payload.len());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[4..]);
    out[..4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

/// The log as its one writer holds it.
pub struct RecordLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    id: LogFileId,
    writer: Box<dyn WritableFile>,
    /// Records after the current file's snapshot.
    appended: u64,
    /// A failed append leaves the file's tail unknown: nothing more is
    /// appended to it (the next snapshot starts a new file).
    broken: bool,
}

impl std::fmt::Debug for RecordLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordLog").field("dir", &self.dir).field("id", &self.id).finish()
    }
}

impl RecordLog {
    /// Starts writing the log in `dir` as owner `epoch`: a new file, after
    /// every file there, whose snapshot is `snapshot`, durable before this
    /// returns; then every older file is removed. Refused if a file of a
    /// greater epoch exists (a newer owner took over).
    pub fn start(fs: Arc<dyn FileSystem>, dir: &Path, epoch: u64, snapshot: &[u8]) -> Result<RecordLog> {
        crate::fs::create_dir_all_durably(fs.as_ref(), dir)?;
        let newest = fs.list(dir)?.iter().filter_map(|n| LogFileId::parse(n)).max();
        let id = match newest {
            Some(n) if n.epoch > epoch => {
                return Err(StoreError::Fenced(format!(
                    "{}: a newer owner (epoch {}) writes this log; this one's epoch is {epoch}",
                    dir.display(),
                    n.epoch
                )));
            }
            Some(n) if n.epoch == epoch => LogFileId { epoch, n: n.n + 1 },
            _ => LogFileId { epoch, n: 0 },
        };
        let writer = Self::create_file(fs.as_ref(), dir, id, snapshot)?;
        let log = RecordLog { fs, dir: dir.to_path_buf(), id, writer, appended: 0, broken: false };
        log.remove_older();
        Ok(log)
    }

    fn create_file(fs: &dyn FileSystem, dir: &Path, id: LogFileId, snapshot: &[u8]) -> Result<Box<dyn WritableFile>> {
        let path = dir.join(id.name());
        let mut f = fs.create(&path)?;
        let mut first = encode_header(id);
        first.extend_from_slice(&frame(snapshot)?);
        f.append(&first)?;
        f.sync()?;
        fs.sync_dir(dir)?;
        Ok(f)
    }

    /// Removes the files before the current one (best effort: one left
    /// behind is superseded all the same and removed next time).
    fn remove_older(&self) {
        let Ok(names) = self.fs.list(&self.dir) else { return };
        for id in names.iter().filter_map(|n| LogFileId::parse(n)).filter(|i| *i < self.id) {
            if let Err(e) = self.fs.remove(&self.dir.join(id.name())) {
                tracing::warn!(file = %self.dir.join(id.name()).display(), error = %e, "could not remove a superseded log file");
            }
        }
    }

    /// Appends one record, durable when this returns.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        if self.broken {
            return Err(StoreError::Internal(format!(
                "{}: an earlier append failed; the log takes no more records until its next snapshot",
                self.writer.path().display()
            )));
        }
        let framed = frame(payload)?;
        let done = self.writer.append(&framed).and_then(|()| self.writer.sync());
        if done.is_err() {
            self.broken = true;
        }
        done?;
        self.appended += 1;
        Ok(())
    }

    /// Starts the next file with `snapshot` (the whole state now), then
    /// removes the older ones. Until it is durable the current file stays
    /// the log.
    pub fn compact(&mut self, snapshot: &[u8]) -> Result<()> {
        let id = LogFileId { epoch: self.id.epoch, n: self.id.n + 1 };
        let writer = Self::create_file(self.fs.as_ref(), &self.dir, id, snapshot)?;
        let old = std::mem::replace(&mut self.writer, writer);
        let _ = old.close();
        self.id = id;
        self.appended = 0;
        self.broken = false;
        self.remove_older();
        Ok(())
    }

    /// Records appended after the current file's snapshot.
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Whether an append failed since the last snapshot.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The file written now.
    pub fn file(&self) -> LogFileId {
        self.id
    }

    /// Bytes in the file written now.
    pub fn len(&self) -> u64 {
        self.writer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.writer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::LocalFs;

    fn fs() -> Arc<dyn FileSystem> {
        Arc::new(LocalFs)
    }

    #[test]
    fn the_newest_snapshot_and_its_changes_are_the_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_dir = dir.path().join("catalog");
        assert!(read_newest(fs().as_ref(), &log_dir).expect("read").records.is_empty());
        let mut log = RecordLog::start(fs(), &log_dir, 3, b"s0").expect("start");
        log.append(b"a").expect("append");
        log.append(b"b").expect("append");
        let read = read_newest(fs().as_ref(), &log_dir).expect("read");
        assert_eq!(read.records, vec![b"s0".to_vec(), b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(read.file, Some(LogFileId { epoch: 3, n: 0 }));
        log.compact(b"s1").expect("compact");
        log.append(b"c").expect("append");
        let read = read_newest(fs().as_ref(), &log_dir).expect("read");
        assert_eq!(read.records, vec![b"s1".to_vec(), b"c".to_vec()]);
        assert_eq!(fs().list(&log_dir).expect("list").len(), 1, "the superseded file is removed");
    }

    #[test]
    fn a_newer_owner_supersedes_and_fences_an_older_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_dir = dir.path().join("catalog");
        let mut old = RecordLog::start(fs(), &log_dir, 3, b"old").expect("start");
        old.append(b"x").expect("append");
        let read = read_newest(fs().as_ref(), &log_dir).expect("read");
        let new = RecordLog::start(fs(), &log_dir, 7, b"new").expect("start");
        assert_eq!(read.records.len(), 2);
        // The old owner, not knowing yet, writes where nobody reads.
        let _ = old.append(b"late");
        assert_eq!(read_newest(fs().as_ref(), &log_dir).expect("read").records, vec![b"new".to_vec()]);
        // It cannot start over above the new owner either.
        assert!(matches!(RecordLog::start(fs(), &log_dir, 3, b"again"), Err(StoreError::Fenced(_))));
        assert_eq!(new.file().epoch, 7);
    }

    #[test]
    fn a_torn_tail_and_a_torn_snapshot_are_skipped_and_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_dir = dir.path().join("catalog");
        let mut log = RecordLog::start(fs(), &log_dir, 1, b"snap").expect("start");
        log.append(b"one").expect("append");
        let path = log_dir.join(log.file().name());
        drop(log);
        // A record cut short after "one".
        let mut data = std::fs::read(&path).expect("read");
        let whole = data.len();
        data.extend_from_slice(&frame(b"two").expect("frame")[..9]);
        std::fs::write(&path, &data).expect("write");
        // A newer file whose snapshot never reached the disk whole.
        let torn = LogFileId { epoch: 2, n: 0 };
        let mut bytes = encode_header(torn);
        bytes.extend_from_slice(&frame(b"big snapshot").expect("frame")[..12]);
        std::fs::write(log_dir.join(torn.name()), bytes).expect("write");
        let read = read_newest(fs().as_ref(), &log_dir).expect("read");
        assert_eq!(read.records, vec![b"snap".to_vec(), b"one".to_vec()]);
        assert_eq!(read.unreadable_tail, Some((whole as u64, 9)));
        assert_eq!(read.skipped, vec![torn]);
        assert_eq!(read.newest, Some(torn));
    }

    #[test]
    fn a_flipped_bit_ends_the_readable_part() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_dir = dir.path().join("catalog");
        let mut log = RecordLog::start(fs(), &log_dir, 1, b"snap").expect("start");
        log.append(b"one").expect("append");
        log.append(b"two").expect("append");
        let path = log_dir.join(log.file().name());
        let mut data = std::fs::read(&path).expect("read");
        let at = HEADER_LEN + FRAME_LEN + 4 + FRAME_LEN + 1;
        data[at] ^= 0x10;
        std::fs::write(&path, &data).expect("write");
        let read = read_newest(fs().as_ref(), &log_dir).expect("read");
        assert_eq!(read.records, vec![b"snap".to_vec()]);
    }

    #[test]
    fn names_that_are_not_log_files_are_left_alone() {
        assert_eq!(
            LogFileId::parse("00000000000000000003-00000000000000000001.log"),
            Some(LogFileId { epoch: 3, n: 1 })
        );
        for name in ["3-1.log", "00000000000000000003-00000000000000000001.log.tmp", "x", "../a.log"] {
            assert_eq!(LogFileId::parse(name), None, "{name}");
        }
    }
}
