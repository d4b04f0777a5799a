//! `StoreBuilder`: the options of a test's store and the store opened with
//! them, in one expression, instead of a `StoreOptions` literal per test
//! file.
//!
//! The test settings: no background flushes or compactions (a test drives
//! them through the admin calls, so they happen when it says), and a 64 MiB
//! memory budget (a test's memstores and block cache, not a server's heap);
//! everything else as in [`StoreOptions::default`], the local disk
//! included. Each setting a test cares about has its own method; `with`
//! reaches the rest.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::fs::FileSystem;
use crate::hooks::WriteHooks;
use crate::options::{RegionIdSource, StoreOptions};
use crate::store::Store;
use crate::wal::WalOptions;

/// The memory budget of a test's store.
const TEST_MEMORY_BUDGET: u64 = 64 << 20;

/// Builds a test's [`StoreOptions`] and opens [`Store`]s with them.
#[derive(Clone)]
pub struct StoreBuilder {
    options: StoreOptions,
}

impl Default for StoreBuilder {
    fn default() -> Self {
        StoreBuilder::new()
    }
}

impl std::fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StoreBuilder").field(&self.options).finish()
    }
}

/// The cluster's region id source, as ZooKeeper's sequence would be: one
/// counter every member store of the test process shares (ids start high,
/// as the server's do).
fn shared_region_ids() -> RegionIdSource {
    static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
    Arc::new(|| Ok(NEXT.fetch_add(1, Ordering::Relaxed)))
}

impl StoreBuilder {
    /// The test settings (see the module doc).
    pub fn new() -> StoreBuilder {
        StoreBuilder {
            options: StoreOptions { background: false, memory_budget: TEST_MEMORY_BUDGET, ..StoreOptions::default() },
        }
    }

    /// The file system the store lives on (a `MemFs`, a
    /// `FaultInjectingFs`, an `HdfsFs`; the local disk by default).
    pub fn fs(mut self, fs: Arc<dyn FileSystem>) -> StoreBuilder {
        self.options.fs = fs;
        self
    }

    /// The clock of cell timestamps and TTLs (a `memstore::ManualClock`).
    pub fn clock(mut self, clock: Arc<dyn memstore::Clock>) -> StoreBuilder {
        self.options.clock = clock;
        self
    }

    /// Pause points and faults on the write path.
    pub fn hooks(mut self, hooks: Arc<dyn WriteHooks>) -> StoreBuilder {
        self.options.hooks = Some(hooks);
        self
    }

    /// Background flushes and compactions (off by default).
    pub fn background(mut self, on: bool) -> StoreBuilder {
        self.options.background = on;
        self
    }

    /// The memstore size at which a region flushes.
    pub fn region_flush_size(mut self, bytes: u64) -> StoreBuilder {
        self.options.region_flush_size = bytes;
        self
    }

    /// A region flush size and a memory budget (1 GiB each) no test
    /// reaches: a region flushes only when the test asks.
    pub fn flush_only_when_asked(self) -> StoreBuilder {
        self.region_flush_size(1 << 30).memory_budget(1 << 30)
    }

    /// The memory the store plans with (memstores, block cache).
    pub fn memory_budget(mut self, bytes: u64) -> StoreBuilder {
        self.options.memory_budget = bytes;
        self
    }

    /// The WAL's settings.
    pub fn wal(mut self, wal: WalOptions) -> StoreBuilder {
        self.options.wal = wal;
        self
    }

    /// The largest cell a write may carry.
    pub fn max_cell_size(mut self, bytes: usize) -> StoreBuilder {
        self.options.max_cell_size = bytes;
        self
    }

    /// A member store of a cluster, named `name`, taking region ids from a
    /// sequence every member in this test process shares.
    pub fn member(mut self, name: &str) -> StoreBuilder {
        self.options.member = Some(name.to_string());
        self.options.region_ids = Some(shared_region_ids());
        self
    }

    /// Any other setting.
    pub fn with(mut self, change: impl FnOnce(&mut StoreOptions)) -> StoreBuilder {
        change(&mut self.options);
        self
    }

    /// The options built so far.
    pub fn options(&self) -> StoreOptions {
        self.options.clone()
    }

    /// Opens (creating it if needed, else recovering it) the store in
    /// `dir` with these options.
    pub fn open(&self, dir: impl AsRef<Path>) -> Result<Store> {
        Store::open(dir, self.options())
    }
}
