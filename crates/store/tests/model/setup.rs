//! The store's configuration for one sequence (`Setup`).

use std::sync::Arc;

use store::fs::FileSystem;
use store::jobs::compaction::policy::CompactionConfig;
use store::storefile::{BloomType, Compression};
use store::wal::{Durability, WalOptions};
use store::{FamilyDescriptor, StoreOptions, TableDescriptor};

use crate::ops::{FAMILIES, MAX_CELL_SIZE, PRESPLIT, TABLE, TTL_SECS};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setup {
    pub(crate) policy: &'static str,
    /// Per family.
    pub(crate) max_versions: [u32; 2],
    /// Per family: whether it has a TTL (`TTL_SECS`).
    pub(crate) ttl: [bool; 2],
    pub(crate) layout: &'static str,
    /// The in-memory flush threshold (converted to a share of the flush size).
    pub(crate) in_memory_flush_bytes: u64,
    pub(crate) segments_limit: usize,
    /// Huge (flushes only when asked) or tiny (writes flush their region).
    pub(crate) region_flush_size: u64,
    /// Indexes into `PRESPLIT`.
    pub(crate) split_keys: Vec<usize>,
    pub(crate) bloom: BloomType,
    pub(crate) compression: Compression,
    pub(crate) block_size: usize,
    pub(crate) block_cache: bool,
    pub(crate) wal_roll_size: u64,
    pub(crate) min_files: usize,
    pub(crate) max_region_size: u64,
}

impl Setup {
    /// A fixed setup for the explicit sequences.
    pub(crate) fn fixed(policy: &'static str, max_versions: [u32; 2]) -> Setup {
        Setup {
            policy,
            max_versions,
            ttl: [false, true],
            layout: "cell-chunk",
            in_memory_flush_bytes: 400,
            segments_limit: 2,
            region_flush_size: 1 << 30,
            split_keys: vec![1],
            bloom: BloomType::Row,
            compression: Compression::None,
            block_size: 512,
            block_cache: true,
            wal_roll_size: 2048,
            min_files: 2,
            max_region_size: 10 << 30,
        }
    }

    pub(crate) fn options(&self, fs: Arc<dyn FileSystem>) -> StoreOptions {
        StoreOptions {
            fs,
            region_flush_size: self.region_flush_size,
            memory_budget: 64 << 20,
            block_cache_share: if self.block_cache { 0.25 } else { 0.0 },
            wal: WalOptions { roll_size: self.wal_roll_size, ..WalOptions::default() },
            compaction: CompactionConfig { min_files: self.min_files, ..CompactionConfig::default() },
            max_cell_size: MAX_CELL_SIZE,
            background: false,
            ..StoreOptions::default()
        }
    }

    pub(crate) fn descriptor(&self) -> TableDescriptor {
        // Each family's memstore gets its share of the region flush size.
        let family_flush_size = self.region_flush_size / FAMILIES.len() as u64;
        let share = (self.in_memory_flush_bytes as f64 / family_flush_size as f64).min(1.0);
        let families = FAMILIES
            .iter()
            .zip(self.max_versions)
            .zip(self.ttl)
            .map(|((name, max_versions), ttl)| FamilyDescriptor {
                max_versions,
                ttl_secs: ttl.then_some(TTL_SECS),
                memstore_policy: self.policy.to_string(),
                inmemory_flush_share: Some(share),
                pipeline_segments_limit: self.segments_limit,
                flat_layout: self.layout.to_string(),
                bloom: self.bloom,
                block_size: self.block_size,
                compression: self.compression,
                ..FamilyDescriptor::new(String::from_utf8_lossy(name))
            })
            .collect();
        TableDescriptor {
            durability: Durability::SyncWal,
            max_region_size: self.max_region_size,
            ..TableDescriptor::new(TABLE, families)
        }
    }

    pub(crate) fn split_keys(&self) -> Vec<Vec<u8>> {
        self.split_keys.iter().map(|&i| PRESPLIT[i % PRESPLIT.len()].to_vec()).collect()
    }
}
