//! A region server's load as HBase reports it (`RegionLoad`, `ServerLoad`,
//! a region's `CompactionState`), built from the store's own counters
//! (`store::metrics`) and running tasks (`store::tasks`). Nothing is
//! estimated: a field the store does not count is left unset (the client
//! reads an unset field as 0 or as its default).
//!
//! A region's load, from its `RegionMetrics`:
//! * `stores`: its families; `storefiles`, `storefile_size_mb`: its store
//!   files and their bytes (MiB, rounded down as HBase rounds);
//! * `mem_store_size_mb`: its memstores' data bytes (MiB, rounded down);
//! * `read_requests_count`: its gets and scans (the store counts a scan
//!   once, HBase every row it returns); `write_requests_count`: the rows
//!   written to it;
//! * `compaction_state`: from the compactions running on its families now.
//!
//! Unset, because the store does not keep them: uncompressed store sizes,
//! index and bloom sizes, compacting KV counts, sequence ids, locality,
//! the last major compaction's time, filtered reads, reference counts.
//! A region this server does not hold (a cluster's other members') is
//! named with no counters: its counters live in its own server's store.
//!
//! Thread safety: pure functions over one snapshot of the metrics.

use std::collections::HashMap;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::{RegionLoad, RegionSpecifier, region_load, region_specifier::RegionSpecifierType};
use store::RegionInfo;
use store::metrics::{RegionMetrics, StoreMetrics};
use store::tasks::{TaskKind, TaskStatus};

use super::names::region_name;

const MIB: u64 = 1 << 20;

/// A region's compaction state (HBase's NONE, MINOR, MAJOR,
/// MAJOR_AND_MINOR) from the compactions running now: a compaction task's
/// target is `table/region/family` (see `FamilyStore::event_name`), the
/// region being its directory's name.
pub fn compaction_state(tasks: &[TaskStatus], region_dir: &str) -> region_load::CompactionState {
    use region_load::CompactionState as S;
    let on_region = |t: &&TaskStatus| {
        t.kind == TaskKind::Compaction && t.target.rsplit('/').nth(1).is_some_and(|r| r == region_dir)
    };
    let running: Vec<&TaskStatus> = tasks.iter().filter(on_region).collect();
    match (running.iter().any(|t| t.major), running.iter().any(|t| !t.major)) {
        (true, true) => S::MajorAndMinor,
        (true, false) => S::Major,
        (false, true) => S::Minor,
        (false, false) => S::None,
    }
}

/// The load of region `info`: its name, and its counters when this
/// server holds it (`metrics`), with the compactions of `tasks`.
pub fn region_load(info: &RegionInfo, metrics: Option<&RegionMetrics>, tasks: &[TaskStatus]) -> RegionLoad {
    let region_specifier = RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: Bytes::from(region_name(&info.table, &info.start_key, info.id)),
    };
    let Some(m) = metrics else {
        return RegionLoad { region_specifier, ..Default::default() };
    };
    let mib = |bytes: u64| u32::try_from(bytes / MIB).unwrap_or(u32::MAX);
    let sum = |f: fn(&store::metrics::FamilyMetrics) -> u64| m.families.iter().map(f).sum::<u64>();
    RegionLoad {
        region_specifier,
        stores: Some(m.families.len() as u32),
        storefiles: Some(u32::try_from(sum(|f| f.store_files)).unwrap_or(u32::MAX)),
        storefile_size_mb: Some(mib(sum(|f| f.store_files_bytes))),
        mem_store_size_mb: Some(mib(sum(|f| f.memstore_data_bytes))),
        read_requests_count: Some(m.read_requests),
        write_requests_count: Some(m.write_requests),
        compaction_state: Some(compaction_state(tasks, &m.region) as i32),
        ..Default::default()
    }
}

/// The regions of `metrics` this server serves now (OPEN), by their
/// directory's name.
pub fn open_regions(metrics: &StoreMetrics) -> HashMap<&str, &RegionMetrics> {
    metrics.regions.iter().filter(|r| r.state == "OPEN").map(|r| (r.region.as_str(), r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::metrics::FamilyMetrics;

    fn task(kind: TaskKind, target: &str, major: bool) -> TaskStatus {
        TaskStatus { kind, target: target.into(), started_ms: 0, running_ms: 0, major }
    }

    fn info() -> RegionInfo {
        RegionInfo {
            id: 7,
            table: "ns:t".into(),
            start_key: b"g".to_vec(),
            end_key: vec![],
            parent: None,
            merged_from: vec![],
        }
    }

    #[test]
    fn the_compaction_state_is_the_running_compactions_of_the_region() {
        use region_load::CompactionState as S;
        let dir = info().dir_name();
        let on = |family: &str| format!("t/{dir}/{family}");
        assert_eq!(compaction_state(&[], &dir), S::None);
        // A flush of the region, or a compaction of another region, is not.
        let others = [task(TaskKind::Flush, &on("f"), false), task(TaskKind::Compaction, "t/0000000000000008/f", true)];
        assert_eq!(compaction_state(&others, &dir), S::None);
        assert_eq!(compaction_state(&[task(TaskKind::Compaction, &on("f"), false)], &dir), S::Minor);
        assert_eq!(compaction_state(&[task(TaskKind::Compaction, &on("f"), true)], &dir), S::Major);
        let both = [task(TaskKind::Compaction, &on("f"), true), task(TaskKind::Compaction, &on("g"), false)];
        assert_eq!(compaction_state(&both, &dir), S::MajorAndMinor);
    }

    #[test]
    fn a_region_s_load_is_its_counters_summed_over_its_families() {
        let r = info();
        let family = |store_files, store_files_bytes, memstore_data_bytes| FamilyMetrics {
            store_files,
            store_files_bytes,
            memstore_data_bytes,
            ..Default::default()
        };
        let m = RegionMetrics {
            region: r.dir_name(),
            state: "OPEN",
            read_requests: 11,
            write_requests: 5,
            families: vec![family(2, 3 * MIB + 5, MIB - 1), family(1, MIB, 1)],
            ..Default::default()
        };
        let load = region_load(&r, Some(&m), &[task(TaskKind::Compaction, &format!("t/{}/f", r.dir_name()), true)]);
        assert_eq!(&load.region_specifier.value[..], &region_name("ns:t", b"g", 7)[..]);
        assert_eq!((load.stores, load.storefiles, load.storefile_size_mb), (Some(2), Some(3), Some(4)));
        assert_eq!(load.mem_store_size_mb, Some(1));
        assert_eq!((load.read_requests_count, load.write_requests_count), (Some(11), Some(5)));
        assert_eq!(load.compaction_state, Some(region_load::CompactionState::Major as i32));
        // What the store does not count is left unset, not zero.
        assert_eq!((load.store_uncompressed_size_mb, load.last_major_compaction_ts), (None, None));
        // A region held elsewhere: its name only.
        let named = region_load(&r, None, &[]);
        assert_eq!((named.stores, named.read_requests_count, named.compaction_state), (None, None, None));
        assert_eq!(named.region_specifier, load.region_specifier);
    }

    #[test]
    fn only_open_regions_are_online() {
        let metrics = StoreMetrics {
            regions: vec![
                RegionMetrics { region: "a".into(), state: "OPEN", ..Default::default() },
                RegionMetrics { region: "b".into(), state: "CLOSED", ..Default::default() },
            ],
            ..Default::default()
        };
        assert_eq!(open_regions(&metrics).keys().copied().collect::<Vec<_>>(), ["a"]);
    }
}
