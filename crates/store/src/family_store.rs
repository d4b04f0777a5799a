//! `FamilyStore`: one column family of one region (HBase's HStore) — its
//! Accordion memstore, its store files and their manifest; flushes a
//! memstore snapshot into a new file and compacts files.
//!
//! Invariants:
//! - `files` (newest first) is exactly the manifest's list once a flush or
//!   compaction returns; it is replaced copy-on-write, so a reader that took
//!   the list keeps reading files that a compaction has since replaced (their
//!   handles stay open).
//! - A flush installs its file *before* releasing the memstore snapshot, and
//!   readers take the memstore view *before* the file list, so every cell is
//!   always visible through one or the other (duplicates are merged away).
//! - At most one flush and one compaction run per store at a time.
//! - A split daughter's store lists references (half files of the parent);
//!   every compaction of such a store takes all its files, so the first one
//!   leaves it without references. A split parent's store is *retired*
//!   under its compaction lock and never compacts again: its files belong
//!   to the daughters' references.
//! - WAL replay inserts entries above `replay_floor`, the flushed seq at
//!   open, even after flushes made during replay.
//!
//! Thread safety: all methods take `&self`; writers go to the memstore
//! without locks; the file list is swapped under a short lock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use memstore::visibility::CompactionRetainer;
use memstore::{CellKey, MemStore, MemStoreSnapshot, Mvcc};
use parking_lot::{Mutex, RwLock};

use crate::error::{Result, StoreError};
use crate::fs::FileSystem;
use crate::manifest::StoreManifest;
use crate::read::cursor::{CellCursor, MergedCursor};
use crate::storefile::{BlockCache, BlockReads, FileMetaExtra, StoreFileOptions, StoreFileReader, StoreFileWriter};
use crate::table::FamilyDescriptor;

/// Counters of one family store.
#[derive(Debug, Default)]
pub struct FamilyStoreCounters {
    pub flushes: AtomicU64,
    pub bytes_flushed: AtomicU64,
    pub cells_flushed: AtomicU64,
    pub compactions: AtomicU64,
    pub major_compactions: AtomicU64,
    pub bytes_compacted: AtomicU64,
    pub files_compacted: AtomicU64,
}

/// Everything a family store shares with the rest of the store instance.
#[derive(Clone)]
pub struct StoreContext {
    pub fs: Arc<dyn FileSystem>,
    pub block_cache: Option<Arc<BlockCache>>,
    pub next_file_id: Arc<AtomicU64>,
    pub events: Arc<crate::events::EventLog>,
    /// The flushes, compactions, splits and merges running now.
    pub tasks: Arc<crate::tasks::TaskMonitor>,
    /// Asked before each commit (see `StoreOptions::commit_fence`).
    pub commit_fence: Option<crate::options::CommitFence>,
    /// Pause points (tests only; `StoreOptions::hooks`).
    pub hooks: Option<Arc<dyn crate::hooks::WriteHooks>>,
    /// `StoreOptions::clock`.
    pub clock: Arc<dyn memstore::Clock>,
    /// What the store's memstores hold against the global memstore limit,
    /// as the flusher last counted it: their in-memory compactions start
    /// only if their copy fits under the limit.
    pub memory_gauge: Arc<memstore::MemoryGauge>,
}

impl StoreContext {
    /// A store instance's context: its file system, a block cache of the
    /// configured share (none for 0) and fresh file ids and event log.
    pub(crate) fn new(options: &crate::options::StoreOptions) -> StoreContext {
        let cache_bytes = options.block_cache_bytes();
        StoreContext {
            fs: options.fs.clone(),
            block_cache: (cache_bytes > 0).then(|| Arc::new(BlockCache::new(cache_bytes))),
            next_file_id: Arc::new(AtomicU64::new(1)),
            events: Arc::new(crate::events::EventLog::default()),
            tasks: Arc::default(),
            commit_fence: options.commit_fence.clone(),
            hooks: options.hooks.clone(),
            clock: options.clock.clone(),
            memory_gauge: Arc::new(memstore::MemoryGauge::new(options.global_memstore_limit())),
        }
    }

    /// Runs the test hook at `point`, if any.
    pub(crate) fn hook(&self, point: crate::hooks::HookPoint) -> Result<()> {
        self.hooks.as_ref().map_or(Ok(()), |h| h.at(point, 0))
    }

    /// Whether this store may still commit: the fence's answer, as
    /// [`StoreError::Fenced`].
    pub fn may_commit(&self) -> Result<()> {
        match &self.commit_fence {
            Some(fence) => fence().map_err(|why| {
                tracing::error!(reason = %why, "refused a commit: this server may no longer own its regions");
                StoreError::Fenced(why)
            }),
            None => Ok(()),
        }
    }
}

pub struct FamilyStore {
    dir: PathBuf,
    desc: FamilyDescriptor,
    memstore: MemStore,
    mvcc: Arc<Mvcc>,
    ctx: StoreContext,
    files: RwLock<Arc<Vec<Arc<StoreFileReader>>>>,
    manifest: Mutex<StoreManifest>,
    flush_lock: Mutex<()>,
    compaction_lock: Mutex<()>,
    /// The flushed sequence id when the store was opened: WAL entries above
    /// it are replayed, whatever flushes recovery makes meanwhile (a region's
    /// entries need not be in seq order in the log).
    replay_floor: u64,
    /// Set (under the compaction lock) when the region split: its files now
    /// belong to the daughters' references, so no compaction may replace
    /// or remove them.
    retired: AtomicBool,
    pub counters: FamilyStoreCounters,
}

impl FamilyStore {
    /// Opens (or creates) the store in `dir`, removing files no manifest names.
    pub fn open(
        dir: PathBuf,
        desc: FamilyDescriptor,
        memstore: MemStore,
        mvcc: Arc<Mvcc>,
        ctx: StoreContext,
    ) -> Result<FamilyStore> {
        let fs = ctx.fs.as_ref();
        fs.create_dir_all(&dir)?;
        let manifest = StoreManifest::load(fs, &dir)?;
        for name in fs.list(&dir)? {
            if name != crate::layout::MANIFEST && !manifest.files.contains(&name) {
                tracing::info!(file = %dir.join(&name).display(), "removing a file no manifest names (crash leftover)");
                fs.remove(&dir.join(&name))?;
            }
        }
        let mut files = Vec::with_capacity(manifest.files.len());
        for name in manifest.files.iter().rev() {
            files.push(Self::open_file(&ctx, &desc, &dir.join(name))?);
        }
        Ok(FamilyStore {
            dir,
            desc,
            memstore,
            mvcc,
            ctx,
            files: RwLock::new(Arc::new(files)),
            replay_floor: manifest.flushed_seq,
            manifest: Mutex::new(manifest),
            flush_lock: Mutex::new(()),
            compaction_lock: Mutex::new(()),
            retired: AtomicBool::new(false),
            counters: FamilyStoreCounters::default(),
        })
    }

    /// The store of a region this server does not serve (cluster mode): it
    /// reads nothing and writes nothing — the directory belongs to whichever
    /// server holds the region — and it is retired, so no compaction ever
    /// picks it. Assigning the region opens it from disk for real.
    pub(crate) fn unassigned(
        dir: PathBuf,
        desc: FamilyDescriptor,
        memstore: MemStore,
        mvcc: Arc<Mvcc>,
        ctx: StoreContext,
    ) -> FamilyStore {
        FamilyStore {
            dir,
            desc,
            memstore,
            mvcc,
            ctx,
            files: RwLock::new(Arc::new(Vec::new())),
            replay_floor: 0,
            manifest: Mutex::new(StoreManifest::default()),
            flush_lock: Mutex::new(()),
            compaction_lock: Mutex::new(()),
            retired: AtomicBool::new(true),
            counters: FamilyStoreCounters::default(),
        }
    }

    /// Opens a store file of this family, through the block cache unless
    /// the family has it off, with the family's cache priority.
    fn open_file(ctx: &StoreContext, desc: &FamilyDescriptor, path: &Path) -> Result<Arc<StoreFileReader>> {
        let id = ctx.next_file_id.fetch_add(1, Ordering::Relaxed);
        let cache = ctx.block_cache.clone().filter(|_| desc.block_cache);
        let reader = StoreFileReader::open_listed(ctx.fs.clone(), path, id, cache)?;
        reader.set_in_memory_priority(desc.in_memory);
        Ok(reader)
    }

    pub fn name(&self) -> &str {
        &self.desc.name
    }

    /// The file system the family's files live on.
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.ctx.fs
    }

    pub fn descriptor(&self) -> &FamilyDescriptor {
        &self.desc
    }

    pub fn memstore(&self) -> &MemStore {
        &self.memstore
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The live files, newest first.
    pub fn files(&self) -> Arc<Vec<Arc<StoreFileReader>>> {
        self.files.read().clone()
    }

    /// The sequence id up to which this store's data is in its files.
    pub fn flushed_seq(&self) -> u64 {
        self.manifest.lock().flushed_seq
    }

    /// Waits for a running compaction and holds further ones off while the
    /// guard lives (a split lists the files its references name).
    pub fn hold_compactions(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.compaction_lock.lock()
    }

    /// Stops compactions for good (`true`, a split committed or is about
    /// to) or again allows them (`false`, a split that did not commit).
    /// Call with [`hold_compactions`](Self::hold_compactions)'s guard held.
    pub fn set_retired(&self, retired: bool) {
        self.retired.store(retired, Ordering::Release);
    }

    fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Whether any live file is a reference to a split parent's file (such
    /// a store is compacted first and its region is not split again until
    /// then, as in HBase).
    pub fn has_references(&self) -> bool {
        self.files().iter().any(|f| f.half().is_some())
    }

    /// Whether a live file reads through a reference into the region
    /// directory `parent_dir` (a directory name).
    pub fn refers_to(&self, parent_dir: &str) -> bool {
        self.files().iter().any(|f| {
            f.half().is_some()
                && f.data_path()
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == parent_dir)
        })
    }

    /// The flushed sequence id this store had when it was opened (see the
    /// field).
    pub fn replay_floor(&self) -> u64 {
        self.replay_floor
    }

    /// Total bytes of the store's files.
    pub fn files_size(&self) -> u64 {
        self.files().iter().map(|f| f.info().file_size).sum()
    }

    /// A cursor over the memstore and the files (those that may hold `row`,
    /// when given), whose blocks are read as `reads` says.
    pub fn cursor(&self, row: Option<&[u8]>, reads: BlockReads) -> Result<Vec<Box<dyn CellCursor>>> {
        // Memstore first, then files: see the module invariants.
        let mut cursors: Vec<Box<dyn CellCursor>> = vec![Box::new(self.memstore.cursor())];
        cursors.extend(self.file_cursors(row, reads));
        Ok(cursors)
    }

    /// Cursors over the files (those that may hold `row`, when given), whose
    /// blocks are read as `reads` says. A reader that needs the memstore
    /// too takes its view first (module invariants).
    pub fn file_cursors(&self, row: Option<&[u8]>, reads: BlockReads) -> Vec<Box<dyn CellCursor>> {
        self.files()
            .iter()
            .filter(|f| row.is_none_or(|r| f.might_contain_row(r)))
            .map(|f| Box::new(f.scanner_with(reads)) as Box<dyn CellCursor>)
            .collect()
    }

    /// The memstore's cursor, and the newest cell timestamp (any type) in
    /// the files that may hold `row` (`None`: no file may) — taken in that
    /// order, as `cursor` takes its views (module invariants): a cell that
    /// a flush moves in between shows in both, so a get that answers from
    /// the memstore alone when its cells are newer than every file's sees
    /// the flushed copy's timestamp and does not.
    pub fn memstore_cursor_and_newest_file_timestamp(&self, row: &[u8]) -> (Box<dyn CellCursor>, Option<u64>) {
        let cursor: Box<dyn CellCursor> = Box::new(self.memstore.cursor());
        let newest = self.files().iter().filter(|f| f.might_contain_row(row)).map(|f| f.info().max_timestamp).max();
        (cursor, newest)
    }

    /// A cursor over the memstore's active segment alone, and the newest
    /// cell timestamp of everything else that may hold `row` (the
    /// memstore's other segments, then the files that may hold it — taken
    /// in that order, as [`Self::memstore_cursor_and_newest_file_timestamp`]
    /// takes its); `None` when nothing else may. The flag says whether the
    /// active segment was the whole memstore.
    pub fn active_cursor_and_newest_other_timestamp(&self, row: &[u8]) -> (Box<dyn CellCursor>, Option<u64>, bool) {
        let (active, older) = self.memstore.active_cursor_and_newest_older_timestamp();
        let files = self.files().iter().filter(|f| f.might_contain_row(row)).map(|f| f.info().max_timestamp).max();
        (Box::new(active), older.max(files), older.is_none())
    }

    fn new_file_path(&self) -> PathBuf {
        let id = self.ctx.next_file_id.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        crate::layout::store_file(&self.dir, nanos, id)
    }

    fn file_options(&self) -> StoreFileOptions {
        StoreFileOptions {
            block_size: self.desc.block_size,
            compression: self.desc.compression,
            bloom: self.desc.bloom,
            ..StoreFileOptions::default()
        }
    }

    /// Writes the cells of `cursor` that survive `retainer` into a new file,
    /// under a temporary name. Returns the final path and the reader, or
    /// `None` if nothing survived.
    fn write_file(
        &self,
        cursor: &mut impl CellCursor,
        mut retainer: CompactionRetainer,
        major: bool,
    ) -> Result<Option<(PathBuf, Arc<StoreFileReader>)>> {
        let path = self.new_file_path();
        let tmp = crate::fs::tmp_path(&path);
        let mut writer = StoreFileWriter::create(self.ctx.fs.clone(), &tmp, self.file_options())?;
        let mut written = 0u64;
        let result = (|| -> Result<()> {
            while let Some(c) = cursor.current() {
                if retainer.keep(c) {
                    writer.append(c)?;
                    written += 1;
                }
                cursor.advance()?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            writer.abandon()?;
            return Err(e);
        }
        if written == 0 {
            writer.abandon()?;
            return Ok(None);
        }
        writer.finish(FileMetaExtra { major_compaction: major, ..FileMetaExtra::default() })?;
        self.ctx.fs.rename(&tmp, &path)?;
        self.ctx.fs.sync_dir(&self.dir)?;
        let reader = Self::open_file(&self.ctx, &self.desc, &path)?;
        Ok(Some((path, reader)))
    }

    /// Writes `snapshot` to a new file and commits it with `flush_seq`; the
    /// caller releases the snapshot afterwards. On error nothing changes and
    /// the snapshot stays in memory for a retry.
    pub fn flush_snapshot(&self, snapshot: &MemStoreSnapshot, flush_seq: u64) -> Result<u64> {
        let _flush = self.flush_lock.lock();
        let _task = self.ctx.tasks.start(crate::tasks::TaskKind::Flush, self.event_name());
        let started = std::time::Instant::now();
        let mut bytes = 0;
        let mut file_name = None;
        let mut new_reader = None;
        if !snapshot.is_empty() {
            // The snapshot's own merge over its segments, without a second
            // heap and a virtual call per cell around it.
            let mut cursor = snapshot.cursor();
            // A flush drops what no reader can see (versions beyond the
            // family's maximum, expired cells) exactly as a compaction would.
            let retainer = CompactionRetainer::new(
                self.mvcc.smallest_read_point(),
                self.desc.rules(),
                self.memstore.config().clock.now_ms(),
            );
            if let Some((path, reader)) = self.write_file(&mut cursor, retainer, false)? {
                bytes = reader.info().file_size;
                self.counters.cells_flushed.fetch_add(reader.info().cell_count, Ordering::Relaxed);
                file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                new_reader = Some(reader);
            }
        }
        self.ctx.hook(crate::hooks::HookPoint::BeforeManifestCommit)?;
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.files.extend(file_name);
        next.flushed_seq = next.flushed_seq.max(flush_seq);
        next.commit_fenced(self.ctx.fs.as_ref(), &self.dir, &|| self.ctx.may_commit())?;
        *manifest = next;
        let Some(reader) = new_reader else {
            // Nothing to write (an empty memstore, or only what no reader
            // can see): the manifest's flushed sequence id moved on, no
            // file was made. Not counted or listed as a flush (as HBase
            // says "nothing to flush"): it would fill the recent flushes.
            tracing::debug!(store = %self.event_name(), flushed_seq = flush_seq, "nothing to flush");
            return Ok(0);
        };
        {
            let mut files = self.files.write();
            let mut list = Vec::with_capacity(files.len() + 1);
            list.push(reader);
            list.extend(files.iter().cloned());
            *files = Arc::new(list);
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_flushed.fetch_add(bytes, Ordering::Relaxed);
        self.ctx.events.record("flush", self.event_name(), bytes, 1, started);
        tracing::info!(
            store = %self.event_name(),
            bytes,
            flushed_seq = flush_seq,
            seconds = started.elapsed().as_secs_f64(),
            "flushed the memstore snapshot to a store file"
        );
        Ok(bytes)
    }

    /// Compacts the files `select` picks from the live ones (oldest first)
    /// into one, choosing under the compaction lock so that a concurrent
    /// compaction cannot take the same files. A major compaction takes every
    /// file. Returns `None` if nothing was selected.
    pub fn compact_selected(
        &self,
        major: bool,
        select: impl FnOnce(&[Arc<StoreFileReader>]) -> Option<Vec<Arc<StoreFileReader>>>,
    ) -> Result<Option<u64>> {
        let _compaction = self.compaction_lock.lock();
        if self.is_retired() {
            return Ok(None);
        }
        let mut oldest_first: Vec<_> = self.files().iter().cloned().collect();
        oldest_first.reverse();
        let selected = if major { Some(oldest_first) } else { select(&oldest_first) };
        match selected {
            Some(files) if worth_compacting(&files, major) => self.compact_locked(&files, major).map(Some),
            _ => Ok(None),
        }
    }

    /// "table/region/family", from the store's directory.
    fn event_name(&self) -> String {
        let mut parts: Vec<String> = self.dir.iter().rev().take(3).map(|p| p.to_string_lossy().into_owned()).collect();
        parts.reverse();
        parts.join("/")
    }

    /// Compacts `selected` (a set of this store's files) into one. A major
    /// compaction must select every file.
    pub fn compact(&self, selected: &[Arc<StoreFileReader>], major: bool) -> Result<u64> {
        let _compaction = self.compaction_lock.lock();
        if self.is_retired() {
            return Ok(0);
        }
        self.compact_locked(selected, major)
    }

    fn compact_locked(&self, selected: &[Arc<StoreFileReader>], major: bool) -> Result<u64> {
        let current = self.files();
        if !worth_compacting(selected, major) {
            return Ok(0);
        }
        if !selected.iter().all(|s| current.iter().any(|f| Arc::ptr_eq(f, s))) {
            return Err(StoreError::Internal("compaction selected a file that is no longer live".into()));
        }
        let major = major && selected.len() == current.len();
        let _task = self.ctx.tasks.start_compaction(self.event_name(), major);
        let started = std::time::Instant::now();
        // Compactions read through the cache without filling it with blocks
        // of files about to go.
        let cursors: Vec<Box<dyn CellCursor>> =
            selected.iter().map(|f| Box::new(f.scanner_uncached()) as Box<dyn CellCursor>).collect();
        let mut cursor = MergedCursor::new(cursors);
        cursor.seek(&CellKey::first_on_row(&[]))?;
        let (srp, rules, now) =
            (self.mvcc.smallest_read_point(), self.desc.rules(), self.memstore.config().clock.now_ms());
        // A major compaction sees every file, so it may purge delete markers
        // and what they mask; a minor one must keep markers for older files.
        let retainer =
            if major { CompactionRetainer::major(srp, rules, now) } else { CompactionRetainer::new(srp, rules, now) };
        let written = self.write_file(&mut cursor, retainer, major)?;
        let bytes = written.as_ref().map_or(0, |(_, r)| r.info().file_size);
        let selected_names: Vec<String> =
            selected.iter().filter_map(|f| f.path().file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        {
            self.ctx.hook(crate::hooks::HookPoint::BeforeManifestCommit)?;
            let mut manifest = self.manifest.lock();
            let mut next = manifest.clone();
            next.files.retain(|n| !selected_names.contains(n));
            if let Some((path, _)) = &written {
                // The compacted file takes the place of the oldest input so
                // that the list stays ordered by age.
                next.files.insert(0, path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            }
            next.commit_fenced(self.ctx.fs.as_ref(), &self.dir, &|| self.ctx.may_commit())?;
            *manifest = next;
            let mut files = self.files.write();
            let mut list: Vec<_> =
                files.iter().filter(|f| !selected.iter().any(|s| Arc::ptr_eq(f, s))).cloned().collect();
            if let Some((_, reader)) = written {
                list.push(reader);
            }
            *files = Arc::new(list);
        }
        for s in selected {
            if let Some(cache) = &self.ctx.block_cache {
                cache.evict_file(s.file_id());
            }
            // Open readers keep their handles; the name goes now.
            if let Err(e) = self.ctx.fs.remove(s.path()) {
                tracing::warn!(error = %e, "could not remove a compacted file; it will be removed at the next open");
            }
        }
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        if major {
            self.counters.major_compactions.fetch_add(1, Ordering::Relaxed);
        }
        self.counters.bytes_compacted.fetch_add(bytes, Ordering::Relaxed);
        self.counters.files_compacted.fetch_add(selected.len() as u64, Ordering::Relaxed);
        let kind = if major { "major_compaction" } else { "compaction" };
        self.ctx.events.record(kind, self.event_name(), bytes, selected.len(), started);
        tracing::info!(
            store = %self.event_name(),
            major,
            files = selected.len(),
            bytes,
            seconds = started.elapsed().as_secs_f64(),
            "compacted store files"
        );
        Ok(bytes)
    }
}

/// Whether compacting `selected` does anything: a major compaction of any
/// file, two or more files, or one file that is a reference (the compaction
/// turns it into a real file of the daughter's own).
fn worth_compacting(selected: &[Arc<StoreFileReader>], major: bool) -> bool {
    !selected.is_empty() && (major || selected.len() >= 2 || selected.iter().any(|f| f.half().is_some()))
}
