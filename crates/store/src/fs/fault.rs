//! `FaultInjectingFs`: wraps another file system and, on command, fails
//! writes, syncs, creations or renames of matching files, runs out of space,
//! drops everything that was not synced (a simulated power loss), or flips
//! bytes — so that tests can prove the store reports such failures and loses
//! nothing it acknowledged.
//!
//! It can also *hold* syncs: after `hold_syncs(path_contains)`, every
//! `sync` of a writable file whose path contains `path_contains` blocks
//! inside `sync` (before anything is made durable) until `release_syncs`;
//! `wait_for_held_sync` lets a test wait, with a timeout, until at least one
//! sync is blocked — so a test can freeze a writer exactly between "written"
//! and "durable" and look at the store from other threads.
//!
//! It can also *stop* like a crashed process (`stop_after(n)`): the next
//! `n` operations that change the disk (create, write, fsync, rename,
//! remove, directory creation, removal and sync, truncate) go through, every
//! later one fails, so nothing reaches the disk after that point; with
//! `drop_unsynced` afterwards, that is a crash (or power cut) at exactly the
//! `n`-th change. `mutations` counts the changes so far, so a test can run
//! an operation once to count its changes and then crash it at each one.
//!
//! And it runs a test's own code *before* each operation
//! ([`FaultInjectingFs::before`]): a hook that sees the operation and the
//! path may block (a barrier that holds a split while its parent is
//! closed), slow it down (an fsync as slow as a real disk's) or fail it,
//! in place of a hand-written delegating file system per test.
//!
//! Directory entries are modelled too (`fault_dirs.rs`): a creation,
//! rename or removal is durable only once its directory is synced, and a
//! power loss undoes the others before it cuts files to their synced bytes.
//!
//! Invariants: `synced` records, per path written through this file system,
//! how many bytes were durable at the last successful `sync`;
//! `drop_unsynced` truncates every such file to that length. `held` counts
//! the syncs blocked right now; a held sync waits until the hold it was
//! caught by is released (`hold_generation` moves on), even if a new hold
//! is set before it wakes up.
//!
//! Thread safety: the fault state is behind one mutex; every operation
//! consults it once. Held syncs wait on a condvar paired with that mutex
//! (not holding it), so every other operation goes on while syncs are held.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::fault_dirs::{DirLog, STASH_PREFIX};
use super::{FileSystem, ReadableFile, WritableFile};
use crate::error::{Result, StoreError};

/// The operation a fault rule hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Write,
    Sync,
    Create,
    Rename,
}

#[derive(Debug, Clone)]
struct FaultRule {
    kind: FaultKind,
    path_contains: String,
    skip: u32,
    times: u32,
}

#[derive(Default)]
struct FaultState {
    rules: Vec<FaultRule>,
    synced: HashMap<PathBuf, u64>,
    /// Bytes appended through this file system that still count as used.
    used: u64,
    space_limit: Option<u64>,
    injected: u64,
    /// Syncs of paths containing this block until released.
    hold: Option<String>,
    /// Moves on at every release; a held sync waits for it to change.
    hold_generation: u64,
    /// Syncs blocked right now.
    held: usize,
    /// Directory operations not yet durable.
    dirs: DirLog,
    /// Operations that changed (or tried to change) the disk.
    mutations: u64,
    /// After this many mutations, every mutation fails (a stopped process).
    stop_after: Option<u64>,
    /// Files created and not closed read as empty (see
    /// [`FaultInjectingFs::hide_unclosed_files`]), by their current path.
    hide_unclosed: bool,
    unclosed: std::collections::HashSet<PathBuf>,
}

/// An operation a [`FaultInjectingFs::before`] hook is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsOp {
    Create,
    Open,
    Rename,
    Remove,
    Append,
    Sync,
    CreateDir,
    RemoveDir,
    SyncDir,
    Truncate,
}

/// A test's code run before an operation; an error fails the operation.
pub type BeforeHook = Arc<dyn Fn(FsOp, &Path) -> Result<()> + Send + Sync>;

#[derive(Clone)]
pub struct FaultInjectingFs {
    inner: Arc<dyn FileSystem>,
    state: Arc<Mutex<FaultState>>,
    /// Outside `state`'s lock, so that a hook may block without stopping
    /// other threads' operations.
    hook: Arc<Mutex<Option<BeforeHook>>>,
    /// Signals a change of `held` or a release (paired with `state`).
    hold_cv: Arc<Condvar>,
}

fn injected(op: &'static str, path: &Path, kind: io::ErrorKind, what: &str) -> StoreError {
    StoreError::io(op, path, io::Error::new(kind, format!("injected fault: {what}")))
}

fn disk_full(path: &Path) -> StoreError {
    StoreError::io("write", path, io::Error::from_raw_os_error(28))
}

impl FaultState {
    /// Counts a mutation; whether the file system has stopped before it.
    fn stopped(&mut self) -> bool {
        self.mutations += 1;
        if self.stop_after.is_some_and(|n| self.mutations > n) {
            self.injected += 1;
            return true;
        }
        false
    }

    /// Whether a rule fires for this operation (consuming one of its shots).
    fn fires(&mut self, kind: FaultKind, path: &Path) -> bool {
        let p = path.to_string_lossy();
        for rule in &mut self.rules {
            if rule.kind == kind && rule.times > 0 && p.contains(&rule.path_contains) {
                if rule.skip > 0 {
                    rule.skip -= 1;
                    return false;
                }
                rule.times -= 1;
                self.injected += 1;
                return true;
            }
        }
        false
    }
}

impl FaultInjectingFs {
    pub fn new(inner: Arc<dyn FileSystem>) -> FaultInjectingFs {
        FaultInjectingFs {
            inner,
            state: Arc::new(Mutex::new(FaultState::default())),
            hook: Arc::new(Mutex::new(None)),
            hold_cv: Arc::new(Condvar::new()),
        }
    }

    /// Runs `hook` before every later operation (replacing an earlier
    /// hook); its error fails the operation before anything else happens.
    pub fn before(&self, hook: impl Fn(FsOp, &Path) -> Result<()> + Send + Sync + 'static) {
        *self.hook.lock() = Some(Arc::new(hook));
    }

    fn run_hook(&self, op: FsOp, path: &Path) -> Result<()> {
        run_hook(&self.hook, op, path)
    }

    /// From now on, every `sync` of a file whose path contains
    /// `path_contains` blocks until [`release_syncs`](Self::release_syncs)
    /// (replacing any previous hold pattern for syncs not yet caught).
    pub fn hold_syncs(&self, path_contains: &str) {
        self.state.lock().hold = Some(path_contains.to_string());
    }

    /// Lets every held sync go on (each then runs normally, fault rules
    /// included) and stops holding new ones.
    pub fn release_syncs(&self) {
        let mut s = self.state.lock();
        s.hold = None;
        s.hold_generation += 1;
        drop(s);
        self.hold_cv.notify_all();
    }

    /// Syncs blocked by a hold right now.
    pub fn held_syncs(&self) -> usize {
        self.state.lock().held
    }

    /// Waits until at least one sync is held; false if none is within
    /// `timeout`.
    pub fn wait_for_held_sync(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut s = self.state.lock();
        while s.held == 0 {
            if self.hold_cv.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
        s.held > 0
    }

    /// Fails `times` operations of `kind` on paths containing
    /// `path_contains`, after letting `skip` matching ones through.
    pub fn fail(&self, kind: FaultKind, path_contains: &str, skip: u32, times: u32) {
        self.state.lock().rules.push(FaultRule { kind, path_contains: path_contains.to_string(), skip, times });
    }

    /// From now on, a file created and not yet closed reads as empty (and
    /// stays so if its writer is dropped unclosed), also under a new name
    /// after a rename: what a reader on HDFS sees of a file whose writer
    /// still holds its lease (hdfs-native reads a file's completed blocks).
    pub fn hide_unclosed_files(&self) {
        self.state.lock().hide_unclosed = true;
    }

    /// Lets the next `n` mutations through and fails every later one (see
    /// the module doc); `heal` lifts it.
    pub fn stop_after(&self, n: u64) {
        let mut s = self.state.lock();
        s.stop_after = Some(s.mutations + n);
    }

    /// Mutations so far (see the module doc).
    pub fn mutations(&self) -> u64 {
        self.state.lock().mutations
    }

    /// Removes every fault rule and the space limit (a hold on syncs stays:
    /// see [`release_syncs`](Self::release_syncs)).
    pub fn heal(&self) {
        let mut s = self.state.lock();
        s.stop_after = None;
        s.rules.clear();
        s.space_limit = None;
    }

    /// Fails appends with ENOSPC once `bytes` more have been written.
    pub fn set_space_left(&self, bytes: u64) {
        let mut s = self.state.lock();
        s.space_limit = Some(s.used + bytes);
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    /// Simulates a power loss: every creation, rename and removal made
    /// through this file system whose directory was not synced since is
    /// undone (newest first), then every file written through it loses what
    /// was not synced.
    pub fn drop_unsynced(&self) -> Result<()> {
        let synced: Vec<(PathBuf, u64)> = {
            let mut s = self.state.lock();
            let FaultState { dirs, synced, .. } = &mut *s;
            dirs.undo_all(self.inner.as_ref(), synced)?;
            synced.iter().map(|(p, &l)| (p.clone(), l)).collect()
        };
        for (path, len) in synced {
            if self.inner.exists(&path)? && self.inner.file_size(&path)? > len {
                self.inner.truncate(&path, len)?;
            }
        }
        Ok(())
    }

    /// Flips the bits of the byte at `offset` of `path`.
    pub fn corrupt_byte(&self, path: &Path, offset: u64) -> Result<()> {
        let mut data = self.inner.read_all(path)?;
        let i = usize::try_from(offset)
            .ok()
            .filter(|&i| i < data.len())
            .ok_or_else(|| StoreError::InvalidArgument(format!("offset {offset} is outside {}", path.display())))?;
        data[i] ^= 0xFF;
        let mut f = self.inner.create(path)?;
        f.append(&data)?;
        f.sync()?;
        f.close()
    }
}

/// Runs the hook in `slot`, if any, without holding the slot's lock.
fn run_hook(slot: &Mutex<Option<BeforeHook>>, op: FsOp, path: &Path) -> Result<()> {
    let hook = slot.lock().clone();
    match hook {
        Some(hook) => hook(op, path),
        None => Ok(()),
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    state: Arc<Mutex<FaultState>>,
    hook: Arc<Mutex<Option<BeforeHook>>>,
    hold_cv: Arc<Condvar>,
}

impl FileSystem for FaultInjectingFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.run_hook(FsOp::Create, path)?;
        {
            let mut s = self.state.lock();
            if s.stopped() {
                return Err(injected("create", path, io::ErrorKind::Other, "the process has stopped"));
            }
            if s.fires(FaultKind::Create, path) {
                return Err(injected("create", path, io::ErrorKind::PermissionDenied, "create refused"));
            }
            let existed = self.inner.exists(path)?;
            s.synced.insert(path.to_path_buf(), 0);
            if s.hide_unclosed {
                s.unclosed.insert(path.to_path_buf());
            }
            if !existed {
                s.dirs.created(path, false);
            }
        }
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultWritable {
            inner,
            state: self.state.clone(),
            hook: self.hook.clone(),
            hold_cv: self.hold_cv.clone(),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        self.run_hook(FsOp::Open, path)?;
        if self.state.lock().unclosed.contains(path) {
            return Ok(Arc::new(Unclosed { path: path.to_path_buf() }));
        }
        self.inner.open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.run_hook(FsOp::Rename, from)?;
        {
            let mut s = self.state.lock();
            if s.stopped() {
                return Err(injected("rename", from, io::ErrorKind::Other, "the process has stopped"));
            }
            if s.fires(FaultKind::Rename, from) {
                return Err(injected("rename", from, io::ErrorKind::Other, "rename refused"));
            }
        }
        let mut s = self.state.lock();
        if s.unclosed.remove(from) {
            s.unclosed.insert(to.to_path_buf());
        }
        let FaultState { dirs, synced, .. } = &mut *s;
        dirs.rename(self.inner.as_ref(), synced, from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.run_hook(FsOp::Remove, path)?;
        let mut s = self.state.lock();
        if s.stopped() {
            return Err(injected("remove", path, io::ErrorKind::Other, "the process has stopped"));
        }
        let FaultState { dirs, synced, .. } = &mut *s;
        dirs.remove(self.inner.as_ref(), synced, path, false)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = self.inner.list(dir)?;
        names.retain(|n| !n.starts_with(STASH_PREFIX));
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.run_hook(FsOp::CreateDir, dir)?;
        let mut s = self.state.lock();
        if s.stopped() {
            return Err(injected("create_dir_all", dir, io::ErrorKind::Other, "the process has stopped"));
        }
        s.dirs.create_dir_all(self.inner.as_ref(), dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        self.run_hook(FsOp::RemoveDir, dir)?;
        let mut s = self.state.lock();
        if s.stopped() {
            return Err(injected("remove_dir_all", dir, io::ErrorKind::Other, "the process has stopped"));
        }
        let FaultState { dirs, synced, .. } = &mut *s;
        dirs.remove(self.inner.as_ref(), synced, dir, true)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.run_hook(FsOp::SyncDir, dir)?;
        if self.state.lock().stopped() {
            return Err(injected("sync_dir", dir, io::ErrorKind::Other, "the process has stopped"));
        }
        self.inner.sync_dir(dir)?;
        let mut s = self.state.lock();
        let FaultState { dirs, synced, .. } = &mut *s;
        dirs.synced_dir(self.inner.as_ref(), synced, dir)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        if self.state.lock().unclosed.contains(path) {
            return Ok(0);
        }
        self.inner.file_size(path)
    }

    fn recover_lease(&self, path: &Path) -> Result<()> {
        self.inner.recover_lease(path)
    }

    fn lock_root(&self, dir: &Path) -> Result<Option<super::RootLock>> {
        self.inner.lock_root(dir)
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.run_hook(FsOp::Truncate, path)?;
        if self.state.lock().stopped() {
            return Err(injected("truncate", path, io::ErrorKind::Other, "the process has stopped"));
        }
        self.inner.truncate(path, len)
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        run_hook(&self.hook, FsOp::Append, self.inner.path())?;
        {
            let mut s = self.state.lock();
            if s.stopped() {
                return Err(injected("write", self.inner.path(), io::ErrorKind::Other, "the process has stopped"));
            }
            if s.fires(FaultKind::Write, self.inner.path()) {
                return Err(injected("write", self.inner.path(), io::ErrorKind::Other, "write failed"));
            }
            if s.space_limit.is_some_and(|limit| s.used + data.len() as u64 > limit) {
                return Err(disk_full(self.inner.path()));
            }
            s.used += data.len() as u64;
        }
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        run_hook(&self.hook, FsOp::Sync, self.inner.path())?;
        {
            let mut s = self.state.lock();
            let path = self.inner.path().to_string_lossy();
            if s.hold.as_ref().is_some_and(|h| path.contains(h.as_str())) {
                let generation = s.hold_generation;
                s.held += 1;
                self.hold_cv.notify_all();
                while s.hold_generation == generation {
                    self.hold_cv.wait(&mut s);
                }
                s.held -= 1;
                self.hold_cv.notify_all();
            }
            if s.stopped() {
                return Err(injected("fsync", self.inner.path(), io::ErrorKind::Other, "the process has stopped"));
            }
            if s.fires(FaultKind::Sync, self.inner.path()) {
                return Err(injected("fsync", self.inner.path(), io::ErrorKind::Other, "fsync failed"));
            }
        }
        self.inner.sync()?;
        let len = self.inner.len();
        self.state.lock().synced.insert(self.inner.path().to_path_buf(), len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.state.lock().unclosed.remove(self.inner.path());
        self.inner.close()
    }
}

/// A file created through a file system that hides unclosed files, not
/// closed yet: it reads as empty.
struct Unclosed {
    path: PathBuf,
}

impl ReadableFile for Unclosed {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() && offset == 0 {
            return Ok(());
        }
        Err(StoreError::io(
            "read",
            &self.path,
            io::Error::new(io::ErrorKind::UnexpectedEof, "a file still open for writing reads as empty"),
        ))
    }

    fn len(&self) -> u64 {
        0
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::LocalFs;

    #[test]
    fn the_before_hook_sees_every_operation_and_its_error_fails_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(crate::fs::LocalFs));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        fs.before(move |op, path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            log.lock().push((op, name.clone()));
            if name == "refused" {
                return Err(injected("hook", path, io::ErrorKind::Other, "refused by the hook"));
            }
            Ok(())
        });
        let path = dir.path().join("a");
        let mut f = fs.create(&path).expect("create");
        f.append(b"x").expect("append");
        f.sync().expect("sync");
        f.close().expect("close");
        fs.rename(&path, &dir.path().join("b")).expect("rename");
        fs.sync_dir(dir.path()).expect("sync dir");
        let ops: Vec<FsOp> = seen.lock().iter().map(|(op, _)| *op).collect();
        assert_eq!(ops, [FsOp::Create, FsOp::Append, FsOp::Sync, FsOp::Rename, FsOp::SyncDir]);
        let refused = fs.create(&dir.path().join("refused"));
        assert!(refused.is_err_and(|e| e.to_string().contains("refused by the hook")));
        assert!(!dir.path().join("refused").exists(), "nothing happened after the hook's error");
    }

    #[test]
    fn faults_fire_as_configured_and_power_loss_drops_unsynced_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        let path = dir.path().join("wal-1");
        let mut f = fs.create(&path).expect("create");
        fs.sync_dir(dir.path()).expect("the file's entry is durable");
        f.append(b"durable").expect("append");
        f.sync().expect("sync");
        f.append(b"-volatile").expect("append");
        f.flush().expect("flush");
        fs.fail(FaultKind::Sync, "wal", 0, 1);
        assert!(f.sync().is_err(), "the injected fsync failure surfaces");
        assert_eq!(fs.injected(), 1);
        f.close().expect("close");
        assert_eq!(fs.read_all(&path).expect("read"), b"durable-volatile");
        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.read_all(&path).expect("read"), b"durable");

        fs.set_space_left(4);
        let mut g = fs.create(&dir.path().join("big")).expect("create");
        let err = g.append(b"12345").expect_err("no space");
        assert!(err.is_disk_full(), "{err}");
        fs.heal();
        g.append(b"12345").expect("space again");

        fs.corrupt_byte(&path, 0).expect("corrupt");
        assert_eq!(fs.read_all(&path).expect("read")[0], b'd' ^ 0xFF);
    }

    #[test]
    fn a_stopped_fs_refuses_every_change_after_the_nth_until_healed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        let path = dir.path().join("f");
        let start = fs.mutations();
        fs.stop_after(3);
        let mut f = fs.create(&path).expect("1: create");
        f.append(b"abc").expect("2: write");
        f.sync().expect("3: fsync");
        assert!(f.append(b"def").is_err(), "4: write refused");
        assert!(f.sync().is_err(), "5: fsync refused");
        assert!(fs.sync_dir(dir.path()).is_err(), "6: directory sync refused");
        assert!(fs.rename(&path, &dir.path().join("g")).is_err(), "7: rename refused");
        assert!(fs.remove(&path).is_err(), "8: remove refused");
        assert!(fs.create_dir_all(&dir.path().join("d")).is_err(), "9: mkdir refused");
        assert!(fs.exists(&path).expect("reads go on") && fs.read_all(&path).expect("read") == b"abc");
        assert_eq!(fs.mutations() - start, 9, "every change is counted, refused or not");
        fs.heal();
        fs.sync_dir(dir.path()).expect("healed");
        fs.remove(&path).expect("healed");
    }

    #[test]
    fn held_syncs_block_until_released_and_other_paths_go_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        assert!(!fs.wait_for_held_sync(std::time::Duration::from_millis(10)), "nothing is held yet");
        fs.hold_syncs("/wal/");
        fs.create_dir_all(&dir.path().join("wal")).expect("mkdir");
        let held_path = dir.path().join("wal").join("log-1");
        let mut held = fs.create(&held_path).expect("create");
        fs.sync_dir(&dir.path().join("wal")).expect("sync wal dir");
        held.append(b"pending").expect("append");
        let syncer = std::thread::spawn(move || held.sync());
        assert!(fs.wait_for_held_sync(std::time::Duration::from_secs(10)), "the WAL sync is held");
        assert_eq!(fs.held_syncs(), 1);
        let mut other = fs.create(&dir.path().join("other")).expect("create");
        fs.sync_dir(dir.path()).expect("sync dir");
        other.append(b"x").expect("append");
        other.sync().expect("a sync of another path is not held");
        fs.drop_unsynced().expect("power loss while the sync is held");
        assert_eq!(fs.read_all(&held_path).expect("read"), b"", "the held sync made nothing durable");
        assert_eq!(fs.read_all(&dir.path().join("other")).expect("read"), b"x");
        fs.release_syncs();
        syncer.join().expect("syncer thread").expect("the released sync succeeds");
        assert_eq!(fs.held_syncs(), 0);
    }

    fn write_synced(fs: &FaultInjectingFs, path: &Path, data: &[u8]) {
        let mut f = fs.create(path).expect("create");
        f.append(data).expect("append");
        f.sync().expect("sync");
        f.close().expect("close");
    }

    #[test]
    fn power_loss_undoes_directory_operations_whose_directory_was_not_synced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(LocalFs));
        let root = dir.path();
        // Durable: a file in a synced directory, a synced subdirectory.
        write_synced(&fs, &root.join("kept"), b"kept");
        fs.create_dir_all(&root.join("sub")).expect("mkdir");
        fs.sync_dir(root).expect("sync root");
        write_synced(&fs, &root.join("sub").join("old"), b"old");
        fs.sync_dir(&root.join("sub")).expect("sync sub");

        // Not durable: a new file (synced bytes, unsynced entry), a rename
        // over an existing file, a removal, a new directory tree, and the
        // removal of a whole directory.
        write_synced(&fs, &root.join("new"), b"new");
        write_synced(&fs, &root.join("sub").join("tmp"), b"replacement");
        fs.rename(&root.join("sub").join("tmp"), &root.join("sub").join("old")).expect("rename");
        fs.remove(&root.join("kept")).expect("remove");
        fs.create_dir_all(&root.join("a").join("b")).expect("mkdir a/b");
        write_synced(&fs, &root.join("a").join("b").join("f"), b"f");
        fs.sync_dir(&root.join("a").join("b")).expect("sync a/b (but not a's entry in root)");
        assert_eq!(fs.list(root).expect("list"), ["a", "new", "sub"], "stashed entries are not listed");
        assert_eq!(fs.read_all(&root.join("sub").join("old")).expect("read"), b"replacement");

        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.list(root).expect("list"), ["kept", "sub"]);
        assert_eq!(fs.read_all(&root.join("kept")).expect("read"), b"kept");
        assert_eq!(fs.list(&root.join("sub")).expect("list"), ["old"]);
        assert_eq!(fs.read_all(&root.join("sub").join("old")).expect("read"), b"old");

        // A removal of a directory is undone unless its parent was synced.
        fs.remove_dir_all(&root.join("sub")).expect("rm sub");
        assert!(!fs.exists(&root.join("sub")).expect("exists"));
        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.read_all(&root.join("sub").join("old")).expect("read"), b"old");
        fs.remove_dir_all(&root.join("sub")).expect("rm sub");
        fs.sync_dir(root).expect("sync root");
        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.list(root).expect("list"), ["kept"]);
        assert_eq!(std::fs::read_dir(root).expect("read_dir").count(), 1, "the stash went with the sync");

        // write_atomic is durable as a whole (it syncs the directory).
        fs.write_atomic(&root.join("atomic"), b"x").expect("write_atomic");
        fs.drop_unsynced().expect("power loss");
        assert_eq!(fs.read_all(&root.join("atomic")).expect("read"), b"x");
    }
}
