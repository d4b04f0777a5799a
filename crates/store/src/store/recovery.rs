//! Opening a store: the tables and regions on disk (finishing what a crash
//! left of a split, merge or table creation), then the WAL directories of
//! earlier instances fenced (`wal/takeover.rs`) and their edits replayed
//! into the regions under the memory limit, flushed, and the directories
//! retired. The new instance writes its WAL in a directory of its own.
//!
//! Invariant: an entry is replayed only above its family's flushed sequence
//! id at open; replay-time flushes leave that mark where it was, so a crash
//! during recovery replays the same entries again (identical cells). A
//! fenced directory is retired only after every region its entries touched
//! has flushed.
//!
//! Thread safety: runs once, in the thread opening the store, before any
//! background thread starts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use memstore::Cell;

use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::family_store::StoreContext;
use crate::options::StoreOptions;
use crate::region::{Region, RegionInfo};
use crate::services::Services;
use crate::wal::takeover::{self, FencedDir};
use crate::wal::{ReplaySummary, Wal, WalPlace};

/// Opens the store in `dir` (creating it if needed) and recovers it: the
/// tables and regions on disk are opened and the WAL is replayed.
pub(super) fn open(dir: PathBuf, options: StoreOptions) -> Result<Arc<Services>> {
    if let Some(name) = options.member.clone() {
        return super::member::open(dir, options, &name);
    }
    let fs = options.fs.clone();
    crate::fs::create_dir_all_durably(fs.as_ref(), &crate::layout::data_dir(&dir))?;
    // Before anything is read or changed: one process at a time, and not a
    // cluster's root.
    let root_lock = fs.lock_root(&dir)?;
    super::member::refuse_cluster_root(fs.as_ref(), &dir)?;
    crate::layout::migrate_legacy_tables(fs.as_ref(), &dir)?;
    let ctx = StoreContext::new(&options);
    // Earlier instances' WAL directories are fenced first: a writer of one
    // that still runs can then acknowledge nothing more.
    let wals = crate::layout::wal::wals_dir(&dir);
    let archive_dir = crate::layout::wal::archive_root(&dir);
    crate::fs::create_dir_all_durably(fs.as_ref(), &wals)?;
    if options.wal.keep_archived {
        // The old layout's archive moves there before the WAL opens.
        crate::fs::create_dir_all_durably(fs.as_ref(), &archive_dir)?;
    }
    // Unique also against a fenced directory of the same name (a reopen
    // within the same millisecond after a crash during recovery).
    let mut own = takeover::instance_name();
    while fs.exists(&wals.join(&own))? || fs.exists(&wals.join(crate::layout::wal::fenced_name(&own)))? {
        own.push('+');
    }
    let earlier = takeover::fence_earlier(fs.as_ref(), &dir, &own, &archive_dir, options.wal.keep_archived)?;
    if let Some(hooks) = &options.hooks {
        hooks.at(crate::hooks::HookPoint::WalDirsFenced, 0)?;
    }
    // Recovery reads the fenced files twice, holding no entry in memory:
    // this first pass checks every file and learns what each holds; the
    // second, once the regions are open, streams the entries into them.
    let mut checked = Vec::with_capacity(earlier.len());
    for fenced in earlier {
        let summary = takeover::check(fs.as_ref(), &fenced)?;
        checked.push((fenced, summary));
    }
    let fenced: Vec<FencedDir> = checked.iter().map(|(f, _)| f.clone()).collect();
    let place = WalPlace {
        dir: wals.join(&own),
        numbered_after: takeover::highest_number(fs.as_ref(), &fenced, &archive_dir)?,
        archive_dir,
    };
    let (wal, _) = Wal::open_at(fs.clone(), &place, options.wal.clone(), |_| Ok(()))?;
    let services = Arc::new(Services::new(dir, options, wal, ctx, root_lock));
    let reference_holders = load_tables(&services)?;
    replay(&services, &checked)?;
    if services.options.background {
        crate::jobs::flush::flusher::start(&services);
        crate::jobs::compaction::compactor::start(&services);
        for r in &reference_holders {
            services.compaction_queue.request_all(r);
        }
    }
    Ok(services)
}

/// Opens the tables and regions on disk; returns the regions that still
/// read through references (their compaction is asked for once the
/// background threads run).
fn load_tables(services: &Services) -> Result<Vec<Arc<Region>>> {
    let mut reference_holders = Vec::new();
    let fs = services.ctx.fs.as_ref();
    for entry in crate::layout::table_dirs(fs, &services.dir)? {
        let table_dir = match entry {
            crate::layout::TableDirEntry::Trash(dir) => {
                // A table or namespace whose removal a crash interrupted.
                fs.remove_dir_all(&dir)?;
                continue;
            }
            crate::layout::TableDirEntry::Table { dir, .. } => dir,
        };
        let desc_path = crate::layout::table_desc(&table_dir);
        if !fs.exists(&desc_path)? {
            // A table whose creation did not commit holds empty regions
            // only: data arrives after the descriptor. One with store files
            // lost its descriptor some other way; its data is not deleted.
            if crate::region::retired_parents::holds_store_files(fs, &table_dir)? {
                return Err(StoreError::corruption(
                    &desc_path,
                    0,
                    "the table's descriptor is missing but its directory holds store files; restore the descriptor \
                     (or move the directory away) to open the store",
                ));
            }
            tracing::warn!(dir = %table_dir.display(), "removing a table directory whose creation did not commit");
            crate::region::retired_parents::remove_region_dir(fs, &table_dir)?;
            continue;
        }
        let file = super::ddl::read_table_file(fs, &desc_path)?;
        let desc = Arc::new(file.descriptor);
        let mut infos = Vec::new();
        for name in fs.list(&table_dir)? {
            let region_dir = table_dir.join(&name);
            if crate::layout::is_trash(&name) {
                fs.remove_dir_all(&region_dir)?;
                continue;
            }
            if name.starts_with('.') {
                continue;
            }
            let info_path = crate::layout::region_info(&region_dir);
            let Some(info) = crate::layout::read_json::<RegionInfo>(fs, &info_path, "region info")? else {
                if crate::layout::is_region_dir_name(&name) {
                    // A daughter or merged region whose writing a crash
                    // interrupted before its commit.
                    tracing::info!(dir = %region_dir.display(), "removing a region directory without .regioninfo");
                    crate::region::retired_parents::remove_region_dir(fs, &region_dir)?;
                }
                continue;
            };
            services.catalog.observe_region_id(info.id);
            infos.push((region_dir, info));
        }
        let on_disk = crate::region::retired_parents::resolve_leftovers(fs, infos)?;
        let mut opened = Vec::with_capacity(on_disk.regions.len());
        for (region_dir, info) in on_disk.regions {
            let closed = crate::layout::has_marker(fs, &region_dir, crate::layout::Marker::Closed)?;
            let region = services.open_region(region_dir, info, desc.clone())?;
            if closed {
                // Closed by an operator: it stays closed until opened.
                region.close();
                region.stores().for_each(|s| s.set_retired(true));
            }
            opened.push(region);
        }
        opened.sort_by(|a, b| a.info().start_key.cmp(&b.info().start_key));
        for parent_dir in on_disk.retired {
            crate::region::retired_parents::remove_if_unreferenced(fs, &parent_dir, &opened)?;
        }
        for r in &opened {
            if r.has_references() && !r.is_closed() {
                reference_holders.push(r.clone());
            }
        }
        services.catalog.apply(CatalogEdit::AddTable(Arc::new(TableState::new(desc, file.enabled, opened))))?;
    }
    Ok(reference_holders)
}

/// Replays the WAL entries of the fenced directories (in log order) that
/// the first pass checked into their regions, one entry at a time, flushing
/// the largest regions whenever the memstores pass the global limit (so
/// recovery of a log of any length holds about that much), then flushes
/// what was replayed, so that the fenced files are no longer needed, and
/// retires their directories.
fn replay(services: &Services, checked: &[(FencedDir, ReplaySummary)]) -> Result<()> {
    let started = std::time::Instant::now();
    let mut by_id: BTreeMap<u64, Arc<Region>> = BTreeMap::new();
    for r in services.catalog.all_regions() {
        by_id.insert(r.info().id, r);
    }
    let fs = services.ctx.fs.as_ref();
    let limit = services.options.global_memstore_limit();
    let low_mark = services.options.global_memstore_low_mark();
    let mut touched: BTreeMap<u64, Arc<Region>> = BTreeMap::new();
    let (mut entries, mut flushes) = (0u64, 0u64);
    let mut since_check = 0u64;
    for (fenced, summary) in checked {
        let files: Vec<(u64, PathBuf)> = summary.files.iter().map(|f| (f.number, f.path.clone())).collect();
        let mut reader = crate::wal::WalReader::open_files(fs, files)?;
        for entry in reader.by_ref() {
            let entry = entry?;
            entries += 1;
            let Some(region) = by_id.get(&entry.region_id) else { continue };
            let cells: Vec<Cell> = entry.cells()?.map(|c| c.to_cell()).collect();
            if !cells.is_empty() && region.replay(entry.seq, &cells)? {
                touched.insert(entry.region_id, region.clone());
            }
            // Look at the memstores' total after every sixteenth of the
            // limit replayed (by WAL bytes, close to what the cells take).
            since_check += entry.cells.len() as u64;
            if since_check >= limit / 16 {
                since_check = 0;
                flushes += flush_down_to(touched.values(), limit, low_mark)?;
            }
        }
        if let Some((path, offset)) = &reader.into_summary().torn_tail {
            tracing::warn!(
                dir = %fenced.dir.display(),
                file = %path.display(),
                offset,
                "WAL ended in a torn record; replayed everything before it"
            );
        }
    }
    for region in touched.values() {
        region.flush()?;
    }
    let archive_dir = services.wal.archive_dir();
    for (fenced, _) in checked {
        takeover::retire(fs, &fenced.dir, archive_dir, services.options.wal.keep_archived)?;
    }
    if entries > 0 {
        let files: usize = checked.iter().map(|(_, summary)| summary.files.len()).sum();
        let bytes: u64 = checked.iter().flat_map(|(_, summary)| &summary.files).map(|f| f.valid_len).sum();
        tracing::info!(
            files,
            bytes,
            dirs = checked.len(),
            entries,
            regions = touched.len(),
            flushes_under_memory_limit = flushes,
            seconds = started.elapsed().as_secs_f64(),
            "WAL replayed"
        );
    }
    services.archive_wal()?;
    Ok(())
}

/// When the memstores of `regions` hold more than `limit` bytes, flushes the
/// largest of them until they hold at most `low_mark`; returns the flushes.
fn flush_down_to<'a>(regions: impl Iterator<Item = &'a Arc<Region>> + Clone, limit: u64, low_mark: u64) -> Result<u64> {
    let total = |rs: &mut dyn Iterator<Item = &'a Arc<Region>>| rs.map(|r| r.memstore_held_size()).sum::<u64>();
    if total(&mut regions.clone()) <= limit {
        return Ok(0);
    }
    let mut flushes = 0;
    while total(&mut regions.clone()) > low_mark {
        let Some(largest) = regions.clone().max_by_key(|r| r.memstore_held_size()) else { break };
        if largest.memstore_held_size() == 0 {
            break;
        }
        largest.flush_replayed()?;
        flushes += 1;
    }
    Ok(flushes)
}
