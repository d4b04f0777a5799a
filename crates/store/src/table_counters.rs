//! `TableCounters`: a table's monotonic counters (requests, flushes,
//! compactions, in-memory work) summed over its regions, and
//! [`RetiredCounters`], what regions that left the catalog had counted.
//!
//! A region's counters live in the region (and its family stores and
//! memstores) and go with it. So that a table's totals — and the store's —
//! never go backwards while the process lives, the catalog folds a region's
//! counters into `RetiredCounters` when an edit takes the region out of the
//! lists: into its table's retained counters when a split, merge or reopen
//! replaces it, into the store-wide `dropped` counters when its table is
//! dropped (together with what the table had retained).
//!
//! Invariants:
//! - A region is counted exactly once at any instant: live (in a table's
//!   list) or retired, never both, never neither. The catalog folds under
//!   the same lock it reads totals under ([`crate::catalog::Catalog`]).
//! - Every figure a reader gets is at least the one it got before. An
//!   increment that races with its region's retirement (the request passed
//!   the region's open check before the close, and adds after the fold) is
//!   lost, never subtracted.
//!
//! Thread safety: `TableCounters` is a plain value; `RetiredCounters` is
//! owned by the catalog behind its mutex.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::region::Region;

/// A table's counters (or a region's, or the dropped tables'); every field
/// only grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TableCounters {
    /// Cells written by puts.
    pub puts: u64,
    /// Delete markers written.
    pub deletes: u64,
    /// Gets served (each reads one region).
    pub gets: u64,
    /// Gets answered from the memstores alone: every column asked for was
    /// newer there than anything in the store files (none was read).
    pub gets_from_memstore: u64,
    /// Region scanners opened (a scan over n regions opens n).
    pub scans: u64,
    /// Bytes of user data written (keys and values).
    pub user_bytes: u64,
    /// Rows written (a batch of n rows counts n; HBase's write requests).
    pub write_requests: u64,
    /// Region flushes to disk.
    pub flushes: u64,
    /// Store files written by family flushes, their bytes and cells.
    pub family_flushes: u64,
    pub bytes_flushed: u64,
    pub cells_flushed: u64,
    /// Disk compactions (major ones included), the bytes they wrote and the
    /// files they read.
    pub compactions: u64,
    pub major_compactions: u64,
    pub bytes_compacted: u64,
    pub files_compacted: u64,
    /// Accordion's in-memory work: active segments pushed into the
    /// pipeline, segments flattened, merged, compacted, and cells that
    /// in-memory compactions dropped.
    pub inmemory_flushes: u64,
    pub flattens: u64,
    pub merges: u64,
    pub inmemory_compactions: u64,
    pub cells_dropped_in_memory: u64,
}

impl TableCounters {
    /// What `region` has counted so far.
    pub fn of_region(region: &Region) -> TableCounters {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &region.counters;
        let mut t = TableCounters {
            puts: g(&c.puts),
            deletes: g(&c.deletes),
            gets: g(&c.gets),
            gets_from_memstore: g(&c.gets_from_memstore),
            scans: g(&c.scans),
            user_bytes: g(&c.user_bytes),
            write_requests: g(&c.write_requests),
            flushes: g(&c.flushes),
            ..TableCounters::default()
        };
        for s in region.stores() {
            let sc = &s.counters;
            let mc = s.memstore().counters();
            t.add(&TableCounters {
                family_flushes: g(&sc.flushes),
                bytes_flushed: g(&sc.bytes_flushed),
                cells_flushed: g(&sc.cells_flushed),
                compactions: g(&sc.compactions),
                major_compactions: g(&sc.major_compactions),
                bytes_compacted: g(&sc.bytes_compacted),
                files_compacted: g(&sc.files_compacted),
                inmemory_flushes: mc.inmemory_flushes,
                flattens: mc.flattens,
                merges: mc.merges,
                inmemory_compactions: mc.compactions,
                cells_dropped_in_memory: mc.cells_dropped,
                ..TableCounters::default()
            });
        }
        t
    }

    /// Adds `other`, field by field.
    pub fn add(&mut self, other: &TableCounters) {
        let TableCounters {
            puts,
            deletes,
            gets,
            gets_from_memstore,
            scans,
            user_bytes,
            write_requests,
            flushes,
            family_flushes,
            bytes_flushed,
            cells_flushed,
            compactions,
            major_compactions,
            bytes_compacted,
            files_compacted,
            inmemory_flushes,
            flattens,
            merges,
            inmemory_compactions,
            cells_dropped_in_memory,
        } = *other;
        self.puts += puts;
        self.deletes += deletes;
        self.gets += gets;
        self.gets_from_memstore += gets_from_memstore;
        self.scans += scans;
        self.user_bytes += user_bytes;
        self.write_requests += write_requests;
        self.flushes += flushes;
        self.family_flushes += family_flushes;
        self.bytes_flushed += bytes_flushed;
        self.cells_flushed += cells_flushed;
        self.compactions += compactions;
        self.major_compactions += major_compactions;
        self.bytes_compacted += bytes_compacted;
        self.files_compacted += files_compacted;
        self.inmemory_flushes += inmemory_flushes;
        self.flattens += flattens;
        self.merges += merges;
        self.inmemory_compactions += inmemory_compactions;
        self.cells_dropped_in_memory += cells_dropped_in_memory;
    }
}

/// What regions that left the catalog had counted (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct RetiredCounters {
    /// Per live table: its regions that a split, merge or reopen replaced.
    by_table: BTreeMap<String, TableCounters>,
    /// Every dropped table's regions, retired or live at the drop.
    dropped: TableCounters,
    tables_dropped: u64,
}

impl RetiredCounters {
    /// `region` of `table` was replaced.
    pub(crate) fn retire_region(&mut self, table: &str, region: &Region) {
        self.by_table.entry(table.to_string()).or_default().add(&TableCounters::of_region(region));
    }

    /// `table` was dropped; `regions` were its last ones.
    pub(crate) fn retire_table<'a>(&mut self, table: &str, regions: impl IntoIterator<Item = &'a Region>) {
        if let Some(retained) = self.by_table.remove(table) {
            self.dropped.add(&retained);
        }
        for r in regions {
            self.dropped.add(&TableCounters::of_region(r));
        }
        self.tables_dropped += 1;
    }

    /// What `table`'s replaced regions counted.
    pub(crate) fn table(&self, table: &str) -> TableCounters {
        self.by_table.get(table).copied().unwrap_or_default()
    }

    pub(crate) fn dropped(&self) -> TableCounters {
        self.dropped
    }

    pub(crate) fn tables_dropped(&self) -> u64 {
        self.tables_dropped
    }
}
