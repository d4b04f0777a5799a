//! Open Thrift scanners, by id, with HBase's lease: a scanner untouched for
//! `lease` (`hbase.client.scanner.timeout.period`, 60 s) is closed by the
//! reaper, and later calls with its id get IllegalArgument as for any
//! unknown id.
//!
//! Thread safety: the id map is behind one mutex held only to look up,
//! insert or remove; each scanner has its own mutex, held for the length of
//! one scannerGet call, so two clients never block on each other's scans.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memstore::Cell;
use parking_lot::Mutex;

/// One open scan. Its filter and batch size are the store scanner's own
/// (filters run inside the store's scan).
pub struct OpenScanner {
    pub table: String,
    scanner: store::scanner::Scanner,
    pub sort_columns: bool,
    last_used: Instant,
    done: bool,
}

impl OpenScanner {
    pub fn new(table: String, scanner: store::scanner::Scanner, sort_columns: bool) -> Self {
        OpenScanner { table, scanner, sort_columns, last_used: Instant::now(), done: false }
    }

    /// Up to `n` results (rows, or pieces of them of the scan's batch
    /// size). The lease restarts when the call starts and ends.
    pub fn next_rows(&mut self, n: usize) -> store::Result<Vec<Vec<Cell>>> {
        self.last_used = Instant::now();
        let mut out = Vec::new();
        while out.len() < n && !self.done {
            match self.scanner.next().transpose()? {
                Some(row) => out.push(row),
                None => self.done = true,
            }
        }
        self.last_used = Instant::now();
        Ok(out)
    }
}

pub struct ScannerRegistry {
    next_id: AtomicI32,
    open: Mutex<HashMap<i32, Arc<Mutex<OpenScanner>>>>,
    lease: Duration,
    max_open: usize,
    expired: AtomicU64,
}

impl ScannerRegistry {
    pub fn new(lease: Duration, max_open: usize) -> ScannerRegistry {
        ScannerRegistry {
            next_id: AtomicI32::new(1),
            open: Mutex::new(HashMap::new()),
            lease,
            max_open,
            expired: AtomicU64::new(0),
        }
    }

    /// Registers a scanner; `None` when `max_open` are already open.
    pub fn insert(&self, scanner: OpenScanner) -> Option<i32> {
        let mut open = self.open.lock();
        if open.len() >= self.max_open {
            return None;
        }
        let mut id = self.next_id.fetch_add(1, Ordering::Relaxed);
        while id <= 0 || open.contains_key(&id) {
            // Wrapped around after 2^31 scanners: skip ids still in use.
            self.next_id.store(1, Ordering::Relaxed);
            id = self.next_id.fetch_add(1, Ordering::Relaxed);
        }
        open.insert(id, Arc::new(Mutex::new(scanner)));
        Some(id)
    }

    pub fn get(&self, id: i32) -> Option<Arc<Mutex<OpenScanner>>> {
        self.open.lock().get(&id).cloned()
    }

    pub fn remove(&self, id: i32) -> bool {
        self.open.lock().remove(&id).is_some()
    }

    pub fn len(&self) -> usize {
        self.open.lock().len()
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
        let before = open.len();
        open.retain(|_, s| {
            Arc::strong_count(s) > 1
                || match s.try_lock() {
                    Some(s) => now.duration_since(s.last_used) < self.lease,
                    None => true,
                }
        });
        let reaped = before - open.len();
        self.expired.fetch_add(reaped as u64, Ordering::Relaxed);
        reaped
    }

    /// Closes every scanner (shutdown).
    pub fn clear(&self) {
        self.open.lock().clear();
    }
}
