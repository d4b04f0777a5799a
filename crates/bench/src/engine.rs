//! `Engine`: what the driver needs from a store under test, and the
//! embedded accordion engine. (Real HBase runs as a separate program, see
//! bench/hbase/; RocksDB arrives behind a cargo feature.)

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use store::fs::FileSystem;
use store::region::{MutationRef, RowMutations};
use store::wal::{Durability, WalOptions};
use store::{Column, FamilyDescriptor, Get, Scan, Store, StoreOptions, TableDescriptor};

use crate::BenchError;

/// Counters an engine reports after a run (DESIGN §6).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineCounters {
    pub flushes: u64,
    pub inmemory_flushes: u64,
    pub merges: u64,
    pub inmemory_compactions: u64,
    pub compactions: u64,
    pub wal_files: u64,
    pub bytes_wal: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    pub user_bytes: u64,
    /// Gets answered from the memstores alone, for the engines that count
    /// them (ours).
    pub gets_from_memstore: Option<u64>,
    /// The WAL's sync rounds (write + fsync, or hsync on HDFS) and their
    /// latency, when the engine reports them.
    pub wal_syncs: u64,
    pub wal_sync_p50_us: Option<u64>,
    pub wal_sync_p99_us: Option<u64>,
}

impl EngineCounters {
    /// The counters a store's totals hold (an in-process store's, or a
    /// server's from its `/status`); WAL sync latency is not among them.
    pub fn from_totals(t: &store::metrics::StoreTotals) -> EngineCounters {
        EngineCounters {
            flushes: t.disk_flushes,
            inmemory_flushes: t.inmemory_flushes,
            merges: t.merges,
            inmemory_compactions: t.inmemory_compactions,
            compactions: t.disk_compactions,
            wal_files: t.wal_files_created,
            bytes_wal: t.wal_bytes,
            bytes_flushed: t.bytes_flushed,
            bytes_compacted: t.bytes_compacted,
            user_bytes: t.user_bytes,
            gets_from_memstore: Some(t.gets_from_memstore),
            ..EngineCounters::default()
        }
    }

    /// What was counted since `before` (the server-side counters of the
    /// engines that read them before and after a run).
    pub fn since(&self, before: &EngineCounters) -> EngineCounters {
        EngineCounters {
            flushes: self.flushes.saturating_sub(before.flushes),
            inmemory_flushes: self.inmemory_flushes.saturating_sub(before.inmemory_flushes),
            merges: self.merges.saturating_sub(before.merges),
            inmemory_compactions: self.inmemory_compactions.saturating_sub(before.inmemory_compactions),
            compactions: self.compactions.saturating_sub(before.compactions),
            wal_files: self.wal_files.saturating_sub(before.wal_files),
            bytes_wal: self.bytes_wal.saturating_sub(before.bytes_wal),
            bytes_flushed: self.bytes_flushed.saturating_sub(before.bytes_flushed),
            bytes_compacted: self.bytes_compacted.saturating_sub(before.bytes_compacted),
            user_bytes: self.user_bytes.saturating_sub(before.user_bytes),
            gets_from_memstore: self
                .gets_from_memstore
                .map(|g| g.saturating_sub(before.gets_from_memstore.unwrap_or(0))),
            ..EngineCounters::default()
        }
    }

    /// `self` plus `other`'s counts (several servers' together).
    pub fn add(&mut self, other: &EngineCounters) {
        self.flushes += other.flushes;
        self.inmemory_flushes += other.inmemory_flushes;
        self.merges += other.merges;
        self.inmemory_compactions += other.inmemory_compactions;
        self.compactions += other.compactions;
        self.wal_files += other.wal_files;
        self.bytes_wal += other.bytes_wal;
        self.bytes_flushed += other.bytes_flushed;
        self.bytes_compacted += other.bytes_compacted;
        self.user_bytes += other.user_bytes;
        self.gets_from_memstore = match (self.gets_from_memstore, other.gets_from_memstore) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }
}

/// A store under test. Shared by the client threads.
pub trait Engine: Send + Sync {
    fn name(&self) -> &str;
    /// Writes whole rows: `fields` columns `field0..` of the given value.
    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError>;
    /// Reads one row (every column); whether it exists.
    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError>;
    /// Reads up to `limit` rows from `start` on (every column), in one scan,
    /// handing each row's key to `each`; how many rows it read. Engines
    /// that cannot scan say so (the presets with scans run on the embedded
    /// engines).
    fn scan_rows(&self, start: &[u8], limit: usize, each: &mut dyn FnMut(&[u8])) -> Result<usize, BenchError> {
        let _ = (start, limit, each);
        Err(BenchError::Unsupported { engine: self.name().to_string(), what: "scans" })
    }
    fn counters(&self) -> EngineCounters;
    /// What the engine's memstores and chunk pool hold now (RSS left 0),
    /// for engines in this process that count it.
    fn held_memory(&self) -> Option<crate::memory::HeldSample> {
        None
    }
    /// Waits, after a load, until the engine has no flush or compaction
    /// queued or running, so that a read run does not measure where the
    /// load's background work happened to fall (the same binary's YCSB C
    /// ranged 41-83 K ops/s without it). Whether it settled within
    /// [`SETTLE_LIMIT`]. Engines behind a network do not wait.
    fn settle(&self) -> Result<bool, BenchError> {
        Ok(true)
    }
    /// Closes the engine and removes its data.
    fn finish(&self) -> Result<(), BenchError>;
}

/// The longest [`Engine::settle`] waits.
pub const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `idle` until it holds on three looks in a row, 100 ms apart (a
/// finishing flush queues its compaction between two looks), or until
/// [`SETTLE_LIMIT`]; whether it did.
pub fn wait_until_idle(mut idle: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    let mut in_a_row = 0;
    while start.elapsed() < SETTLE_LIMIT {
        in_a_row = if idle() { in_a_row + 1 } else { 0 };
        if in_a_row == 3 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// How the accordion engine is set up.
#[derive(Debug, Clone)]
pub struct AccordionSetup {
    /// Where the store lives: a local path, `file:///path` or
    /// `hdfs://host:port/path` (removed before and after the run).
    pub root: String,
    /// The engine's name in reports ("accordion", or "acc-hdfs" on HDFS).
    pub name: &'static str,
    pub policy: String,
    pub split_keys: Vec<Vec<u8>>,
    pub durability: Durability,
    pub memstore_bytes: u64,
    /// The block cache (the preset's, which RocksDB gets too).
    pub block_cache_bytes: u64,
    pub region_flush_size: u64,
    pub wal_roll_size: u64,
    pub inmemory_flush_share: f64,
    pub pipeline_segments_limit: usize,
    /// The family's data block size (`None`: the store's default).
    pub block_size: Option<usize>,
    /// Gets name the row's columns instead of asking for the whole row.
    pub named_gets: bool,
}

/// The embedded store.
pub struct AccordionEngine {
    store: Store,
    name: &'static str,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    qualifiers: Vec<Vec<u8>>,
    named_gets: bool,
}

const TABLE: &str = "usertable";

impl AccordionEngine {
    pub fn open(setup: &AccordionSetup, fields: usize) -> Result<AccordionEngine, BenchError> {
        let (fs, dir) = store::fs::resolve_root(&setup.root)?;
        if fs.exists(&dir)? {
            fs.remove_dir_all(&dir)?;
        }
        // The memstores keep HBase's 0.4 share of the budget; the block
        // cache's share is whatever gives it the preset's size.
        let memory_budget = (setup.memstore_bytes as f64 / 0.4) as u64;
        let options = StoreOptions {
            fs: fs.clone(),
            region_flush_size: setup.region_flush_size,
            memory_budget,
            block_cache_share: setup.block_cache_bytes as f64 / memory_budget.max(1) as f64,
            wal: WalOptions { roll_size: setup.wal_roll_size, ..WalOptions::default() },
            ..StoreOptions::default()
        };
        let store = Store::open(&dir, options)?;
        let mut family = FamilyDescriptor::new("f");
        family.memstore_policy = setup.policy.clone();
        family.inmemory_flush_share = Some(setup.inmemory_flush_share);
        family.pipeline_segments_limit = setup.pipeline_segments_limit;
        if let Some(block_size) = setup.block_size {
            family.block_size = block_size;
        }
        let mut desc = TableDescriptor::new(TABLE, vec![family]);
        desc.durability = setup.durability;
        store.create_table(desc, &setup.split_keys)?;
        Ok(AccordionEngine {
            store,
            name: setup.name,
            fs,
            dir,
            qualifiers: (0..fields).map(|i| format!("field{i}").into_bytes()).collect(),
            named_gets: setup.named_gets,
        })
    }
}

impl Engine for AccordionEngine {
    fn name(&self) -> &str {
        self.name
    }

    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError> {
        // A client batch is one store batch (one region batch per region,
        // as HBase's client sends it); every row carries the same columns.
        let mutations: Vec<MutationRef<'_>> = self.qualifiers[..fields]
            .iter()
            .map(|q| MutationRef::Put { family: b"f", qualifier: q, timestamp: None, value })
            .collect();
        let rows: Vec<RowMutations<'_>> = keys.iter().map(|row| RowMutations { row, mutations: &mutations }).collect();
        self.store.mutate_rows(TABLE, &rows, None)?;
        Ok(())
    }

    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError> {
        let mut get = Get::new(key.to_vec());
        if self.named_gets {
            get.columns =
                self.qualifiers.iter().map(|q| Column { family: b"f".to_vec(), qualifier: Some(q.clone()) }).collect();
        }
        Ok(!self.store.get(TABLE, &get)?.is_empty())
    }

    fn scan_rows(&self, start: &[u8], limit: usize, each: &mut dyn FnMut(&[u8])) -> Result<usize, BenchError> {
        let scan = Scan { start: Some(start.to_vec()), limit: Some(limit as u64), ..Scan::default() };
        let mut scanner = self.store.scan(TABLE, scan)?;
        let mut rows = 0;
        // Read in place, as the RocksDB engine reads its iterator's slices.
        while let Some(row) = scanner.next_row_cells() {
            if let Some(cell) = row?.first() {
                each(cell.row());
                rows += 1;
            }
        }
        Ok(rows)
    }

    fn counters(&self) -> EngineCounters {
        let t = self.store.metrics().totals;
        let sync = self.store.wal().sync_latency();
        let has_syncs = sync.rounds > 0;
        EngineCounters {
            wal_syncs: sync.rounds,
            wal_sync_p50_us: has_syncs.then_some(sync.p50_us),
            wal_sync_p99_us: has_syncs.then_some(sync.p99_us),
            ..EngineCounters::from_totals(&t)
        }
    }

    fn held_memory(&self) -> Option<crate::memory::HeldSample> {
        let held = self.store.memstore_held();
        let pool = self.store.chunk_pool().stats();
        Some(crate::memory::HeldSample {
            active_data: held.active.data,
            active_index: held.active.index,
            pipeline_data: held.pipeline.data,
            pipeline_index: held.pipeline.index,
            snapshot_data: held.snapshot.data,
            snapshot_index: held.snapshot.index,
            compacting: held.compacting,
            pool_in_use: pool.in_use_bytes,
            pool_idle: pool.idle_bytes,
            wal_buffers: self.store.wal().buffer_bytes(),
            ..Default::default()
        })
    }

    fn settle(&self) -> Result<bool, BenchError> {
        Ok(wait_until_idle(|| {
            let t = self.store.metrics().totals;
            t.flush_queue_length
                + t.compaction_queue_length
                + t.flushes_in_progress
                + t.compactions_in_progress
                + t.splits_in_progress
                + t.merges_in_progress
                == 0
        }))
    }

    fn finish(&self) -> Result<(), BenchError> {
        self.store.close()?;
        let _ = self.fs.remove_dir_all(&self.dir);
        Ok(())
    }
}

/// A check every engine's gets and scans must pass (the RocksDB engine's
/// tests run it too, so that both answer alike).
#[cfg(test)]
pub(crate) mod scan_check {
    use super::*;
    use crate::keys::write_key;

    pub(crate) const FIELDS: usize = 3;
    const ROWS: u64 = 600;

    fn key(item: u64) -> Vec<u8> {
        let mut buf = [0u8; 32];
        let n = write_key(item, &mut buf);
        buf[..n].to_vec()
    }

    fn sorted_keys() -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = (0..ROWS).map(key).collect();
        all.sort();
        all
    }

    /// Our engine in `dir`, two regions split in the middle of the keys.
    pub(crate) fn accordion(dir: &std::path::Path) -> AccordionEngine {
        accordion_with(dir, false)
    }

    fn accordion_with(dir: &std::path::Path, named_gets: bool) -> AccordionEngine {
        let setup = AccordionSetup {
            root: dir.join("ours").display().to_string(),
            name: "accordion",
            policy: "basic".into(),
            split_keys: vec![sorted_keys()[ROWS as usize / 2].clone()],
            durability: Durability::AsyncWal,
            memstore_bytes: 8 << 20,
            block_cache_bytes: 1 << 20,
            region_flush_size: 1 << 20,
            wal_roll_size: 1 << 20,
            inmemory_flush_share: 0.02,
            pipeline_segments_limit: 5,
            block_size: Some(4 << 10),
            named_gets,
        };
        AccordionEngine::open(&setup, FIELDS).expect("accordion")
    }

    fn rows_from(engine: &dyn Engine, start: &[u8], limit: usize) -> Vec<Vec<u8>> {
        let mut rows = Vec::new();
        let n = engine.scan_rows(start, limit, &mut |row| rows.push(row.to_vec())).expect("scan");
        assert_eq!(n, rows.len());
        rows
    }

    /// Writes the keys, then checks gets (present and absent) and scans
    /// from a key, between keys, before and past all of them, with limits
    /// inside a region, across the split and past the end; finishes.
    pub(crate) fn gets_and_scans_match_the_keys(engine: &dyn Engine) {
        let unsorted: Vec<Vec<u8>> = (0..ROWS).map(key).collect();
        for chunk in unsorted.chunks(50) {
            let rows: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            engine.write_rows(&rows, b"value", FIELDS).expect("write");
        }
        let name = engine.name().to_string();
        for item in [0, 17, ROWS - 1, ROWS, 10 * ROWS] {
            assert_eq!(engine.read_row(&key(item)).expect("get"), item < ROWS, "{name}: get {item}");
        }
        let all = sorted_keys();
        let mut between = all[100].clone();
        between.push(b'0');
        for start in [all[0].clone(), all[299].clone(), all[598].clone(), b"a".to_vec(), b"z".to_vec(), between] {
            for limit in [1, 7, 100] {
                let expected: Vec<Vec<u8>> = all.iter().filter(|k| **k >= start).take(limit).cloned().collect();
                assert_eq!(rows_from(engine, &start, limit), expected, "{name}: from {start:?} limit {limit}");
            }
        }
        engine.finish().expect("finish");
    }

    #[test]
    fn our_gets_and_scans_match_the_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        gets_and_scans_match_the_keys(&accordion(dir.path()));
    }

    /// Gets of the row's fields by name find the same rows (some from the
    /// memstores alone, some from files: 1 MiB regions flush).
    #[test]
    fn our_named_gets_match_the_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        gets_and_scans_match_the_keys(&accordion_with(dir.path(), true));
    }

    #[test]
    fn idle_counts_only_three_looks_in_a_row() {
        let looks = [true, false, true, true, false, true, true, true, true];
        let mut at = 0;
        assert!(wait_until_idle(|| {
            at += 1;
            looks[at - 1]
        }));
        assert_eq!(at, 8, "settled on the third idle look in a row, not before");
    }

    /// After writes that flushed (1 MiB regions), the engine settles with
    /// no flush or compaction queued or running.
    #[test]
    fn our_engine_settles_with_no_flush_or_compaction_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = accordion(dir.path());
        let value = vec![b'v'; 1000];
        for round in 0..12u64 {
            let keys: Vec<Vec<u8>> = (0..300).map(|i| key(round * 300 + i)).collect();
            let rows: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            engine.write_rows(&rows, &value, FIELDS).expect("write");
        }
        assert!(engine.settle().expect("settle"));
        let t = engine.store.metrics().totals;
        assert!(t.disk_flushes > 0, "the writes flushed");
        let busy = t.flush_queue_length + t.compaction_queue_length + t.flushes_in_progress + t.compactions_in_progress;
        assert_eq!(busy, 0, "{t:?}");
        engine.finish().expect("finish");
    }
}
