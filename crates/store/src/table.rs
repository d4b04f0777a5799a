//! Table and column-family descriptors: what `create table` declares, with
//! HBase's defaults, persisted as JSON beside the table's regions.

use memstore::{CompactionPolicy, InMemoryFlushThreshold, IndexLayout, VersionRules};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::storefile::{BloomType, Compression};
use crate::wal::Durability;

/// A column family's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyDescriptor {
    pub name: String,
    /// Versions kept per column (HBase default 1).
    pub max_versions: u32,
    /// Time to live of cells, in seconds (`None`: forever).
    pub ttl_secs: Option<u64>,
    /// In-memory compaction policy: none, basic, eager, adaptive[:R].
    pub memstore_policy: String,
    /// A: in-memory flush threshold as a share of the flush size (`None`:
    /// one 2 MiB chunk, HBase's default).
    pub inmemory_flush_share: Option<f64>,
    /// S: pipeline segments before a merge (HBase default 2).
    pub pipeline_segments_limit: usize,
    /// Flat index layout: "cell-chunk" (default) or "cell-array".
    pub flat_layout: String,
    pub bloom: BloomType,
    pub block_size: usize,
    pub compression: Compression,
    /// Data blocks read for this family go through the shared block cache
    /// (HBase's BLOCKCACHE; default true).
    #[serde(default = "yes")]
    pub block_cache: bool,
    /// This family's cached blocks are evicted last while they hold at most
    /// a quarter of the cache (HBase's IN_MEMORY priority; default false).
    #[serde(default)]
    pub in_memory: bool,
}

fn yes() -> bool {
    true
}

impl FamilyDescriptor {
    /// HBase's default data block size (its BLOCKSIZE).
    pub const DEFAULT_BLOCK_SIZE: usize = 64 * 1024;

    /// A family with HBase's defaults.
    pub fn new(name: impl Into<String>) -> FamilyDescriptor {
        FamilyDescriptor {
            name: name.into(),
            max_versions: 1,
            ttl_secs: None,
            memstore_policy: "basic".into(),
            inmemory_flush_share: None,
            pipeline_segments_limit: 2,
            flat_layout: "cell-chunk".into(),
            bloom: BloomType::Row,
            block_size: Self::DEFAULT_BLOCK_SIZE,
            compression: Compression::None,
            block_cache: true,
            in_memory: false,
        }
    }

    pub fn policy(&self) -> Result<CompactionPolicy> {
        Ok(CompactionPolicy::parse(&self.memstore_policy)?)
    }

    pub fn layout(&self) -> Result<IndexLayout> {
        match self.flat_layout.as_str() {
            "cell-chunk" | "CHUNK_MAP" => Ok(IndexLayout::CellChunk),
            "cell-array" | "ARRAY_MAP" => Ok(IndexLayout::CellArray),
            other => Err(StoreError::InvalidDescriptor {
                what: format!("family {:?}", self.name),
                reason: format!("unknown flat layout {other:?}"),
            }),
        }
    }

    pub fn rules(&self) -> VersionRules {
        VersionRules { max_versions: self.max_versions, ttl_ms: self.ttl_secs.map(|s| s.saturating_mul(1000)) }
    }

    pub fn inmemory_threshold(&self) -> InMemoryFlushThreshold {
        match self.inmemory_flush_share {
            Some(a) => InMemoryFlushThreshold::FlushSizeShare(a),
            None => InMemoryFlushThreshold::Bytes(memstore::CHUNK_SIZE as u64),
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad =
            |reason: String| Err(StoreError::InvalidDescriptor { what: format!("family {:?}", self.name), reason });
        crate::names::check_family_name(&self.name)?;
        if self.max_versions == 0 {
            return bad("max versions must be at least 1".into());
        }
        if self.block_size < 512 || self.block_size > 16 << 20 {
            return bad(format!("block size {} is outside 512 B..16 MiB", self.block_size));
        }
        if self.pipeline_segments_limit == 0 {
            return bad("pipeline segments limit must be at least 1".into());
        }
        if let Some(a) = self.inmemory_flush_share
            && !(a > 0.0 && a <= 1.0)
        {
            return bad(format!("in-memory flush share {a} is outside (0, 1]"));
        }
        self.policy()?;
        self.layout()?;
        Ok(())
    }
}

/// A table's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDescriptor {
    pub name: String,
    pub families: Vec<FamilyDescriptor>,
    /// Default durability of writes to this table.
    pub durability: Durability,
    /// Maximum region size in bytes of store files before a split (HBase's
    /// `hbase.hregion.max.filesize`, 10 GiB).
    pub max_region_size: u64,
}

impl TableDescriptor {
    pub fn new(name: impl Into<String>, families: Vec<FamilyDescriptor>) -> TableDescriptor {
        TableDescriptor { name: name.into(), families, durability: Durability::AsyncWal, max_region_size: 10 << 30 }
    }

    pub fn family(&self, name: &[u8]) -> Option<&FamilyDescriptor> {
        self.families.iter().find(|f| f.name.as_bytes() == name)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |reason: &str| {
            Err(StoreError::InvalidDescriptor { what: format!("table {:?}", self.name), reason: reason.into() })
        };
        crate::names::check_table_name(&self.name)?;
        if self.families.is_empty() {
            return bad("a table needs at least one column family");
        }
        let mut names: Vec<&str> = self.families.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return bad(&format!("family {:?} is declared twice", w[0]));
        }
        for f in &self.families {
            f.validate()?;
        }
        if self.max_region_size == 0 {
            return bad("max region size must be positive");
        }
        Ok(())
    }
}
