//! Helpers for the crate's unit tests.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::family_store::StoreContext;
use crate::fs::LocalFs;
use crate::region::{Region, RegionConfig, RegionInfo};
use crate::table::{FamilyDescriptor, TableDescriptor};
use crate::wal::Wal;

/// Opens regions of table "t" with the given (start, end) keys in `dir`.
pub(crate) fn regions(dir: &Path, wal: &Arc<Wal>, bounds: &[(&str, &str)], first_id: u64) -> Vec<Arc<Region>> {
    let ctx = StoreContext {
        fs: Arc::new(LocalFs),
        block_cache: None,
        next_file_id: Arc::new(AtomicU64::new(1)),
        events: Arc::new(crate::events::EventLog::default()),
        tasks: Arc::default(),
        commit_fence: None,
        hooks: None,
        clock: Arc::new(memstore::SystemClock),
        memory_gauge: memstore::MemoryGauge::unlimited(),
    };
    let cfg = RegionConfig { ctx, flush_size: 1 << 20, max_cell_size: 1 << 20, hooks: None };
    let desc = Arc::new(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]));
    bounds
        .iter()
        .enumerate()
        .map(|(i, (start, end))| {
            let info = RegionInfo {
                id: first_id + i as u64,
                table: "t".into(),
                start_key: start.as_bytes().to_vec(),
                end_key: end.as_bytes().to_vec(),
                parent: None,
                merged_from: Vec::new(),
            };
            let dir = dir.join(info.dir_name());
            Arc::new(Region::open(dir, info, desc.clone(), wal.clone(), &cfg).expect("open region"))
        })
        .collect()
}

/// One region (id 7) opened twice from its directory in `dir`: two
/// instances of the same region, as a close and reopen leaves them.
pub(crate) fn one_region_twice(dir: &Path) -> (Arc<Region>, Arc<Region>) {
    let (wal, _) =
        Wal::open(Arc::new(LocalFs), &dir.join("wal"), crate::wal::WalOptions::default()).expect("open a WAL");
    let old = regions(dir, &wal, &[("", "")], 7).remove(0);
    let reopened = regions(dir, &wal, &[("", "")], 7).remove(0);
    (old, reopened)
}
