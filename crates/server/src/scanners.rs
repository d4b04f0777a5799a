//! Open Thrift scanners, by id, with HBase's lease: a scanner untouched for
//! `lease` (`hbase.client.scanner.timeout.period`, 60 s) is closed by the
//! reaper, and later calls with its id get IllegalArgument as for any
//! unknown id.
//!
//! A scanner belongs to the connection that opened it (each connection has
//! its own thread, which [`on_connection`] marks with the connection's id):
//! when that connection ends, its scanners are closed at once rather than
//! pinning memory until their leases run out, and no connection may hold
//! more than `max_per_connection` of them (HBase has no such cap; a client
//! that opens scanners in a loop and never closes them would otherwise take
//! the whole `max_open`). Scanners opened outside a connection (id 0) have
//! no owner.
//!
//! What open scanners pin — memstore segments the memstore has let go of
//! (flushed, merged, compacted) and a scanner still reads — is measured by
//! [`ScannerRegistry::memstore_footprint`] against the store's own
//! (`/status` and `/metrics` report it).
//!
//! Thread safety: the id map is behind one mutex held only to look up,
//! insert or remove; each scanner has its own mutex, held for the length of
//! one scannerGet call, so two clients never block on each other's scans.

use std::cell::Cell as StdCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memstore::{Footprint, RowCells};
use parking_lot::Mutex;

use crate::gateway::error::GatewayError;
use crate::peer::cluster_scan::PieceScan;

/// One open scan. Its filter and batch size are the store scanner's own
/// (filters run inside the store's scan).
pub struct OpenScanner {
    pub table: String,
    source: Source,
    pub sort_columns: bool,
    last_used: Instant,
    done: bool,
}

/// Where an open scan reads: the store (every region it touches is held
/// here), or pieces of the key space some of which other servers hold.
enum Source {
    Store(Box<store::read::scanner::Scanner>),
    Pieces(Box<PieceScan>),
}

impl OpenScanner {
    pub fn new(table: String, scanner: store::read::scanner::Scanner, sort_columns: bool) -> Self {
        Self::of(table, Source::Store(Box::new(scanner)), sort_columns)
    }

    /// A scan over regions some of which other servers hold (cluster mode).
    pub fn over_pieces(table: String, pieces: PieceScan, sort_columns: bool) -> Self {
        Self::of(table, Source::Pieces(Box::new(pieces)), sort_columns)
    }

    fn of(table: String, source: Source, sort_columns: bool) -> Self {
        OpenScanner { table, source, sort_columns, last_used: Instant::now(), done: false }
    }

    /// Up to `n` results (rows, or pieces of them of the scan's batch
    /// size), ending early after the row that brings them to `max_bytes`
    /// (HBase's `hbase.server.scanner.max.result.size`: at least one row
    /// is returned, and the client asks again for the rest). The lease
    /// restarts when the call starts and ends.
    pub fn next_rows(&mut self, n: usize, max_bytes: usize) -> Result<Vec<RowCells>, GatewayError> {
        self.last_used = Instant::now();
        let mut out = Vec::new();
        let mut bytes = 0;
        while out.len() < n && !self.done && bytes < max_bytes {
            let next = match &mut self.source {
                // Read in place: a protocol writing the cells out takes them
                // from this buffer, without an owned cell of each.
                Source::Store(scanner) => scanner.next_row_cells().transpose()?,
                Source::Pieces(pieces) => pieces.next_row()?.map(|cells| RowCells::from_cells(&cells)),
            };
            match next {
                Some(row) => {
                    bytes += crate::gateway::result_size::encoded_row_bytes(&row);
                    out.push(row);
                }
                None => self.done = true,
            }
        }
        self.last_used = Instant::now();
        Ok(out)
    }

    /// Adds the memstore segments this scan holds to `footprint`.
    fn add_memstore_footprint(&self, footprint: &mut Footprint) {
        match &self.source {
            Source::Store(scanner) => scanner.add_memstore_footprint(footprint),
            Source::Pieces(pieces) => pieces.add_memstore_footprint(footprint),
        }
    }
}

thread_local! {
    /// The connection the current thread serves (0: none).
    static CONNECTION: StdCell<u64> = const { StdCell::new(0) };
    /// The address of that connection's client (`None`: none).
    static CLIENT: StdCell<Option<IpAddr>> = const { StdCell::new(None) };
}

/// Runs `f` as connection `id`'s thread, whose client is at `client`:
/// scanners opened meanwhile belong to that connection and count against
/// that address.
pub fn on_connection<R>(id: u64, client: IpAddr, f: impl FnOnce() -> R) -> R {
    CONNECTION.with(|c| c.set(id));
    CLIENT.with(|c| c.set(Some(client)));
    let result = f();
    CONNECTION.with(|c| c.set(0));
    CLIENT.with(|c| c.set(None));
    result
}

/// Why a scanner could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScannerLimit {
    #[error("too many open scanners ({0}, max_open_scanners); close some or wait for their leases to expire")]
    Total(usize),
    #[error("this connection has {0} scanners open (max_scanners_per_connection); close some first")]
    PerConnection(usize),
    #[error("connections from this address have {0} scanners open (max_scanners_per_client); close some first")]
    PerClient(usize),
}

struct Entry {
    scanner: Arc<Mutex<OpenScanner>>,
    /// The connection that opened it (0: none).
    owner: u64,
    /// Its client's address (`None`: not opened by a connection).
    client: Option<IpAddr>,
}

/// The open scanners, and how many each connection holds (kept with them,
/// so that opening a scanner and ending a connection do not scan them all).
/// Invariant: `per_owner[o]` is the number of entries of owner `o != 0`,
/// `per_client[a]` the number of entries of client address `a`, and owners
/// and addresses holding none are absent.
#[derive(Default)]
struct Open {
    by_id: HashMap<i32, Entry>,
    per_owner: HashMap<u64, usize>,
    per_client: HashMap<IpAddr, usize>,
}

/// One fewer for `key`, removing it at zero.
fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

impl Open {
    fn insert(&mut self, id: i32, entry: Entry) {
        if entry.owner != 0 {
            *self.per_owner.entry(entry.owner).or_default() += 1;
        }
        if let Some(client) = entry.client {
            *self.per_client.entry(client).or_default() += 1;
        }
        self.by_id.insert(id, entry);
    }

    fn forget_owner_of(&mut self, entry: &Entry) {
        decrement(&mut self.per_owner, &entry.owner);
        if let Some(client) = &entry.client {
            decrement(&mut self.per_client, client);
        }
    }

    fn remove(&mut self, id: i32) -> bool {
        match self.by_id.remove(&id) {
            Some(e) => {
                self.forget_owner_of(&e);
                true
            }
            None => false,
        }
    }

    /// Keeps the entries `keep` says to keep; returns how many went.
    fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) -> usize {
        let gone: Vec<i32> = self.by_id.iter().filter(|(_, e)| !keep(e)).map(|(id, _)| *id).collect();
        for id in &gone {
            self.remove(*id);
        }
        gone.len()
    }
}

pub struct ScannerRegistry {
    next_id: AtomicI32,
    open: Mutex<Open>,
    lease: Duration,
    max_open: usize,
    max_per_connection: usize,
    max_per_client: usize,
    expired: AtomicU64,
    closed_on_disconnect: AtomicU64,
}

impl ScannerRegistry {
    pub fn new(lease: Duration, max_open: usize, max_per_connection: usize, max_per_client: usize) -> ScannerRegistry {
        ScannerRegistry {
            next_id: AtomicI32::new(1),
            open: Mutex::new(Open::default()),
            lease,
            max_open,
            max_per_connection,
            max_per_client,
            expired: AtomicU64::new(0),
            closed_on_disconnect: AtomicU64::new(0),
        }
    }

    /// Registers a scanner for the current connection; an error when
    /// `max_open` are open, the connection has `max_per_connection`, or its
    /// client's address has `max_per_client`.
    pub fn insert(&self, scanner: OpenScanner) -> Result<i32, ScannerLimit> {
        let owner = CONNECTION.with(StdCell::get);
        let client = CLIENT.with(StdCell::get);
        let mut open = self.open.lock();
        if open.by_id.len() >= self.max_open {
            return Err(ScannerLimit::Total(open.by_id.len()));
        }
        let mine = open.per_owner.get(&owner).copied().unwrap_or(0);
        if owner != 0 && mine >= self.max_per_connection {
            return Err(ScannerLimit::PerConnection(mine));
        }
        if let Some(client) = client {
            let theirs = open.per_client.get(&client).copied().unwrap_or(0);
            if theirs >= self.max_per_client {
                return Err(ScannerLimit::PerClient(theirs));
            }
        }
        let mut id = self.next_id.fetch_add(1, Ordering::Relaxed);
        while id <= 0 || open.by_id.contains_key(&id) {
            // Wrapped around after 2^31 scanners: skip ids still in use.
            self.next_id.store(1, Ordering::Relaxed);
            id = self.next_id.fetch_add(1, Ordering::Relaxed);
        }
        open.insert(id, Entry { scanner: Arc::new(Mutex::new(scanner)), owner, client });
        Ok(id)
    }

    pub fn get(&self, id: i32) -> Option<Arc<Mutex<OpenScanner>>> {
        self.open.lock().by_id.get(&id).map(|e| e.scanner.clone())
    }

    /// Closes the scanners connection `owner` opened (it ended); returns how
    /// many. A call still using one keeps it alive until the call ends.
    pub fn close_connection(&self, owner: u64) -> usize {
        if owner == 0 {
            return 0;
        }
        let mut open = self.open.lock();
        if !open.per_owner.contains_key(&owner) {
            return 0;
        }
        let closed = open.retain(|e| e.owner != owner);
        self.closed_on_disconnect.fetch_add(closed as u64, Ordering::Relaxed);
        closed
    }

    /// Scanners closed because their connection ended.
    pub fn closed_on_disconnect(&self) -> u64 {
        self.closed_on_disconnect.load(Ordering::Relaxed)
    }

    pub fn remove(&self, id: i32) -> bool {
        self.open.lock().remove(id)
    }

    pub fn len(&self) -> usize {
        self.open.lock().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Scanners closed because their lease ran out.
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// Closes scanners idle longer than the lease. A scanner a call holds
    /// (its `Arc` was handed out under the map lock, which this holds too)
    /// is skipped, and its lease restarts when that call ends.
    pub fn reap(&self) -> usize {
        let now = Instant::now();
        let mut open = self.open.lock();
        let reaped = open.retain(|e| {
            let s = &e.scanner;
            Arc::strong_count(s) > 1
                || match s.try_lock() {
                    Some(s) => now.duration_since(s.last_used) < self.lease,
                    None => true,
                }
        });
        self.expired.fetch_add(reaped as u64, Ordering::Relaxed);
        reaped
    }

    /// The memstore segments the open scanners keep alive
    /// (`memstore::footprint`), and how many scanners a call was using and
    /// so were not looked at (their segments are not in the footprint).
    /// Holds the map lock only to copy the list; a scanner in use is
    /// skipped, never waited for.
    pub fn memstore_footprint(&self) -> (Footprint, usize) {
        let scanners: Vec<Arc<Mutex<OpenScanner>>> =
            self.open.lock().by_id.values().map(|e| e.scanner.clone()).collect();
        let (mut footprint, mut busy) = (Footprint::default(), 0);
        for s in scanners {
            match s.try_lock() {
                Some(s) => s.add_memstore_footprint(&mut footprint),
                None => busy += 1,
            }
        }
        (footprint, busy)
    }

    /// Closes every scanner (shutdown).
    pub fn clear(&self) {
        *self.open.lock() = Open::default();
    }
}
