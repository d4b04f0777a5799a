//! The RocksDB peer engine (cargo feature `rocksdb`): each row's cells are
//! keys `row \0 family \0 qualifier`; a client batch of rows is written as
//! one `WriteBatch` (the way a batching RocksDB client writes: one WAL
//! record and one group-commit slot per batch, as the accordion engine's
//! batch is one region batch per region), with the same memtable budget,
//! block cache, WAL mode and client threads as the accordion run.
//!
//! Reads as its users would with this layout: a row get is one
//! `MultiGet` of the row's cell keys (each checked against the bloom
//! filters, 10 bits per key as the tuning guide sets them), a scan one
//! iterator from the start row's first key.
//!
//! Flushes, compactions and WAL files are counted from the `EVENT_LOG_v1`
//! lines RocksDB writes to its `LOG` (the C API exposes no such counters);
//! bytes come from its statistics tickers.

use std::path::PathBuf;

use rocksdb::{BlockBasedOptions, Cache, DB, Options, ReadOptions, WaitForCompactOptions, WriteBatch, WriteOptions};
use store::wal::Durability;

use crate::BenchError;
use crate::engine::{Engine, EngineCounters};

/// The shape a RocksDB engine is opened with (the preset's).
#[derive(Debug, Clone)]
pub struct RocksDbSetup {
    pub dir: PathBuf,
    /// All memtables together (`db_write_buffer_size`, the write buffer
    /// manager's budget): the memstore budget.
    pub memtable_bytes: u64,
    /// One memtable (`write_buffer_size`): the region flush size.
    pub write_buffer_bytes: u64,
    /// The LRU block cache: the block cache the store gets.
    pub block_cache_bytes: u64,
    /// The data block size (`block_size`).
    pub block_size: usize,
    pub durability: Durability,
    pub fields: usize,
}

/// Bloom filter bits per key: the tuning guide's 10 (≈ 1 % false
/// positives), as our store files' row blooms.
pub const BLOOM_BITS_PER_KEY: f64 = 10.0;

pub struct RocksDbEngine {
    db: DB,
    /// Held by the options too; kept so the cache outlives the DB.
    _cache: Cache,
    options: Options,
    write_options: WriteOptions,
    dir: PathBuf,
    qualifiers: Vec<Vec<u8>>,
    user_bytes: std::sync::atomic::AtomicU64,
}

fn err(e: rocksdb::Error) -> BenchError {
    BenchError::Engine { engine: "rocksdb".into(), message: e.to_string() }
}

impl RocksDbEngine {
    /// Opens a fresh database in `setup.dir` with `memtable_bytes` of write
    /// buffers in all, each memtable `write_buffer_bytes` (the region flush
    /// size; at least RocksDB's own 64 KiB minimum), and an LRU block cache
    /// of `block_cache_bytes` with bloom filters.
    pub fn open(setup: &RocksDbSetup) -> Result<Self, BenchError> {
        let RocksDbSetup { dir, memtable_bytes, write_buffer_bytes, block_cache_bytes, block_size, durability, fields } =
            setup.clone();
        let _ = std::fs::remove_dir_all(&dir);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.enable_statistics();
        // The memtable budget and flush size are the store's (budget and
        // region flush size), so both engines flush files of the same size.
        let write_buffer = write_buffer_bytes.max(64 << 10);
        options.set_db_write_buffer_size(memtable_bytes as usize);
        options.set_write_buffer_size(write_buffer as usize);
        options.set_max_write_buffer_number((memtable_bytes / write_buffer).clamp(2, 8) as i32);
        // RocksDB's "Setup Options and Basic Tuning": background jobs = cores,
        // smooth the write-back of new files, dynamic level sizes (the
        // default since 8.4, set so that the intent is on record), and the
        // compaction priority the guide recommends.
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        options.increase_parallelism(cores as i32);
        options.set_bytes_per_sync(1 << 20);
        options.set_level_compaction_dynamic_level_bytes(true);
        options.set_compaction_pri(rocksdb::CompactionPri::MinOverlappingRatio);
        // Our store writes uncompressed files in these presets: compare like
        // with like on bytes written.
        options.set_compression_type(rocksdb::DBCompressionType::None);
        // Reads: the tuning guide's block cache, full bloom filters and
        // block size (the guide's 16 KiB unless the preset sets one for
        // both engines). The index and filter blocks stay outside the cache
        // (the default), as our store holds its files' indexes and blooms
        // beside its cache.
        let cache = Cache::new_lru_cache(block_cache_bytes as usize);
        let mut table = BlockBasedOptions::default();
        table.set_block_size(block_size);
        table.set_block_cache(&cache);
        table.set_bloom_filter(BLOOM_BITS_PER_KEY, false);
        options.set_block_based_table_factory(&table);
        // Opened with the default column family named, with these same
        // options: `cf_handle` knows only families opened by name, and the
        // batched MultiGet of a row's cells takes a handle.
        let default_family = rocksdb::ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, options.clone());
        let db = DB::open_cf_descriptors(&options, &dir, [default_family]).map_err(err)?;
        let mut write_options = WriteOptions::default();
        match durability {
            Durability::SyncWal => write_options.set_sync(true),
            Durability::AsyncWal => write_options.set_sync(false),
            Durability::SkipWal => write_options.disable_wal(true),
        }
        Ok(RocksDbEngine {
            db,
            _cache: cache,
            options,
            write_options,
            dir,
            qualifiers: (0..fields).map(|i| format!("field{i}").into_bytes()).collect(),
            user_bytes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    fn cell_key(row: &[u8], qualifier: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(row.len() + qualifier.len() + 3);
        Self::cell_key_into(row, qualifier, &mut k);
        k
    }

    fn cell_key_into(row: &[u8], qualifier: &[u8], k: &mut Vec<u8>) {
        k.clear();
        k.extend_from_slice(row);
        k.extend_from_slice(b"\0f\0");
        k.extend_from_slice(qualifier);
    }

    /// Counts `"event": NAME` lines of the LOG.
    fn log_events(&self, name: &str) -> u64 {
        let log = std::fs::read_to_string(self.dir.join("LOG")).unwrap_or_default();
        let needle = format!("\"event\": \"{name}\"");
        log.lines().filter(|l| l.contains(&needle)).count() as u64
    }

    fn ticker(&self, name: &str) -> u64 {
        let stats = self.options.get_statistics().unwrap_or_default();
        stats
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(" COUNT"))
            .and_then(|l| l.rsplit(':').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Engine for RocksDbEngine {
    fn name(&self) -> &str {
        "rocksdb"
    }

    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError> {
        let mut bytes = 0u64;
        let mut batch = WriteBatch::default();
        let mut k = Vec::with_capacity(64);
        for key in keys {
            for q in &self.qualifiers[..fields] {
                Self::cell_key_into(key, q, &mut k);
                bytes += (k.len() + value.len()) as u64;
                batch.put(&k, value);
            }
        }
        self.db.write_opt(batch, &self.write_options).map_err(err)?;
        self.user_bytes.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError> {
        // The row's cells, field0.. in key order (sorted input lets MultiGet
        // batch its lookups).
        let mut keys: Vec<Vec<u8>> = self.qualifiers.iter().map(|q| Self::cell_key(key, q)).collect();
        keys.sort_unstable();
        let cf = self.db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME).ok_or_else(|| BenchError::Engine {
            engine: "rocksdb".into(),
            message: "no default column family".into(),
        })?;
        let mut found = false;
        for value in self.db.batched_multi_get_cf(cf, &keys, true) {
            found |= value.map_err(err)?.is_some();
        }
        Ok(found)
    }

    fn scan_rows(&self, start: &[u8], limit: usize, each: &mut dyn FnMut(&[u8])) -> Result<usize, BenchError> {
        let mut it = self.db.raw_iterator_opt(ReadOptions::default());
        it.seek(start);
        let (mut rows, mut current): (usize, Vec<u8>) = (0, Vec::new());
        let mut value_bytes = 0usize;
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            let row = key.split(|&b| b == 0).next().unwrap_or(key);
            if rows == 0 || row != current.as_slice() {
                if rows == limit {
                    break;
                }
                rows += 1;
                current.clear();
                current.extend_from_slice(row);
                each(row);
            }
            // Every cell's value is read, as a scan's client reads them.
            value_bytes += value.len();
            it.next();
        }
        it.status().map_err(err)?;
        std::hint::black_box(value_bytes);
        Ok(rows)
    }

    fn counters(&self) -> EngineCounters {
        let wal_files = std::fs::read_to_string(self.dir.join("LOG"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("New memtable created with log file"))
            .count() as u64
            + 1;
        EngineCounters {
            flushes: self.log_events("flush_finished"),
            inmemory_flushes: 0,
            merges: 0,
            inmemory_compactions: 0,
            compactions: self.log_events("compaction_finished"),
            wal_files,
            bytes_wal: self.ticker("rocksdb.wal.bytes"),
            bytes_flushed: self.ticker("rocksdb.flush.write.bytes"),
            bytes_compacted: self.ticker("rocksdb.compact.write.bytes"),
            user_bytes: self.user_bytes.load(std::sync::atomic::Ordering::Relaxed),
            ..EngineCounters::default()
        }
    }

    /// RocksDB's own wait for its background work (`WaitForCompact`),
    /// without a flush first, as ours settles without one.
    fn settle(&self) -> Result<bool, BenchError> {
        let mut opts = WaitForCompactOptions::default();
        opts.set_timeout(crate::engine::SETTLE_LIMIT.as_micros() as u64);
        match self.db.wait_for_compact(&opts) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == rocksdb::ErrorKind::TimedOut => Ok(false),
            Err(e) => Err(err(e)),
        }
    }

    fn finish(&self) -> Result<(), BenchError> {
        self.db.flush().map_err(err)?;
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scan_check;

    /// The same rows written to both engines: every get and scan answers
    /// alike, and both agree with the sorted keys themselves.
    #[test]
    fn gets_and_scans_answer_alike_on_both_engines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rocks = RocksDbEngine::open(&RocksDbSetup {
            dir: dir.path().join("rocks"),
            memtable_bytes: 8 << 20,
            write_buffer_bytes: 1 << 20,
            block_cache_bytes: 1 << 20,
            block_size: 4 << 10,
            durability: Durability::AsyncWal,
            fields: scan_check::FIELDS,
        })
        .expect("rocksdb");
        let ours = scan_check::accordion(dir.path());
        for engine in [&rocks as &dyn Engine, &ours] {
            scan_check::gets_and_scans_match_the_keys(engine);
        }
    }
}
