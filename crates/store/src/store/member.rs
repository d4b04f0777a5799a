//! Cluster mode: a store that is one region server of several sharing one
//! root (`StoreOptions::member`, HBase's region server on a shared HDFS).
//!
//! What changes from a store that owns its root:
//! - **Nothing of another server is touched.** Opening takes no root lock,
//!   fences no other WAL directory, replays nothing and cleans up no
//!   leftovers (they may be another server's work in progress). The WAL
//!   goes to `WALs/<server name>`, archived files to
//!   `oldWALs/<server name>/` (file numbers are per server).
//! - **Regions are served only when assigned.** Every committed region on
//!   the root is in the catalog — the region lists stay whole — but as an
//!   OFFLINE placeholder ([`Region::unassigned`]: nothing read or written).
//!   [`assign`] opens one from disk, replaying the recovered edits a WAL
//!   split left for it; [`unassign`] flushes and closes one and puts a
//!   placeholder back. A request for an OFFLINE region is refused as not
//!   served here (HBase's NotServingRegionException).
//! - **A dead server's edits are recovered by a live one.**
//!   [`recover_server`] fences its WAL directory (rename and lease
//!   recovery), splits it into every region's recovered edits and retires
//!   it; assigning those regions anywhere then replays them.
//! - **Region ids are the cluster's.** They key WAL entries and the split
//!   of a dead server's WAL, so a member takes new ids from the cluster's
//!   source (`StoreOptions::region_ids`, a ZooKeeper sequence), never from
//!   its own counter, and without one it creates no table.
//! - **Splits and merges are the holder's, the region lists everyone's.**
//!   A member splits or merges the regions it holds, by reference, as a
//!   lone store does; the others rebuild their lists from the root
//!   ([`sync_table`]: told by the server that split, and at every master
//!   pass). A retired parent's directory goes only once no daughter refers
//!   to it, a daughter another server holds judged by its manifests on disk
//!   (`retired_parents.rs`).
//!
//! - **Only a member has the member operations.** Assign, unassign,
//!   recovering a dead server, syncing and refreshing tables from the root
//!   and listing the root's WAL owners are methods of [`Member`], a handle
//!   [`Store::as_member`] gives only for a store opened as a member: asking
//!   a standalone store for one does not compile. A request that reaches
//!   whichever store it reaches (a call from the network) asks
//!   [`Store::require_member`], whose refusal is `ClusterRefused`.
//!
//! Thread safety: as the rest of the store — region list changes under the
//! table's change lock, through catalog edits. A `Member` is a borrow of its
//! `Store` and shares it as freely.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::{CatalogEdit, TableState};
use crate::error::{Result, StoreError};
use crate::family_store::StoreContext;
use crate::options::StoreOptions;
use crate::region::state::RegionState;
use crate::region::{Region, RegionInfo};
use crate::services::Services;
use crate::store::Store;
use crate::wal::log_split::SplitSummary;
use crate::wal::takeover::{self, SPLITTING_SUFFIX};
use crate::wal::{Wal, WalPlace};

/// A store that is a member of a cluster (opened with
/// `StoreOptions::member`): the operations only a member has. Only
/// [`Store::as_member`] makes one, and only for a member, so calling one of
/// them on a standalone store is a compile error rather than a refusal at
/// run time.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    store: &'a Store,
    name: &'a str,
}

impl Store {
    /// Cluster mode: this store as a member of the cluster sharing its root,
    /// with the operations only a member has; `None` for a store that owns
    /// its root alone.
    pub fn as_member(&self) -> Option<Member<'_>> {
        self.inner.options.member.as_deref().map(|name| Member { store: self, name })
    }

    /// [`as_member`](Self::as_member) for a request that may reach a
    /// standalone store (a call from the network asking for `what`): there
    /// it is refused with `ClusterRefused`.
    pub fn require_member(&self, what: &str) -> Result<Member<'_>> {
        self.as_member().ok_or_else(|| {
            StoreError::ClusterRefused(format!("only a cluster member can {what}; this store owns its root alone"))
        })
    }
}

impl<'a> Member<'a> {
    /// This store's region server name (`host,port,startcode`).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The store this is.
    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// Opens the OFFLINE region with encoded name `name` on this server
    /// (replaying the recovered edits a WAL split left for it).
    pub fn assign_region(&self, name: &str) -> Result<()> {
        self.store.check_open()?;
        let (t, region) = self.store.region_named(name)?;
        assign(&self.store.inner, &t, &region).map(|_| ())
    }

    /// Flushes and closes region `name`, leaving it OFFLINE here for another
    /// server to open.
    pub fn unassign_region(&self, name: &str) -> Result<()> {
        self.store.check_open()?;
        let (t, region) = self.store.region_named(name)?;
        unassign(&self.store.inner, &t, &region)
    }

    /// Fences dead region server `server`'s WAL directory and splits it into
    /// the recovered edits of every region on the root.
    pub fn recover_server(&self, server: &str) -> Result<SplitSummary> {
        self.store.check_open()?;
        crate::names::check_server_name(server)?;
        if self.name == server {
            return Err(StoreError::ClusterRefused(format!("{server} is this server; it is not dead")));
        }
        recover_server(&self.store.inner, server)
    }

    /// Lists the tables another server created since this one opened (their
    /// regions OFFLINE here); returns how many.
    pub fn refresh_tables(&self) -> Result<usize> {
        self.store.check_open()?;
        let services = &self.store.inner;
        let added = refresh_tables(services)?;
        // Another server's disable, enable or delete that this server was
        // not told of (its call to us failed) is taken from the root here.
        // One table that cannot be synced (a failing flush, say) must not
        // keep the others, or the master's pass, waiting: it is retried at
        // the next pass.
        for name in services.catalog.table_names() {
            if let Err(e) = sync_table(services, &name) {
                tracing::warn!(table = %name, error = %e, "could not take a table's state from the root; retried at the next pass");
            }
        }
        Ok(added)
    }

    /// Brings this server's view of table `name` in line with the root after
    /// another server's DDL.
    pub fn sync_table(&self, name: &str) -> Result<TableSync> {
        self.store.check_open()?;
        sync_table(&self.store.inner, name)
    }

    /// The servers with a WAL directory on the root (live, dead and not yet
    /// recovered, or recovery interrupted).
    pub fn wal_owners(&self) -> Result<Vec<String>> {
        wal_owners(&self.store.inner)
    }
}

/// Opens the store as region server `name` on the shared root `dir`.
pub(super) fn open(dir: PathBuf, options: StoreOptions, name: &str) -> Result<Arc<Services>> {
    crate::names::check_server_name(name)?;
    let fs = options.fs.clone();
    crate::fs::create_dir_all_durably(fs.as_ref(), &crate::layout::data_dir(&dir))?;
    crate::layout::migrate_legacy_tables(fs.as_ref(), &dir)?;
    mark_cluster_root(fs.as_ref(), &dir, name)?;
    let wals = crate::layout::wal::wals_dir(&dir);
    crate::fs::create_dir_all_durably(fs.as_ref(), &wals)?;
    let own = crate::layout::wal::instance_dir(&dir, name)?;
    if fs.exists(&own)? || fs.exists(&wals.join(crate::layout::wal::fenced_name(name)))? {
        return Err(StoreError::ClusterRefused(format!(
            "a region server named {name} has run on this root before; a server's name carries its start code \
             and is never reused"
        )));
    }
    let archive_dir = crate::layout::wal::instance_archive_dir(&dir, name)?;
    let ctx = StoreContext::new(&options);
    let place = WalPlace { dir: own, archive_dir, numbered_after: 0 };
    let (wal, _) = Wal::open_at(fs.clone(), &place, options.wal.clone(), |_| Ok(()))?;
    let services = Arc::new(Services::new(dir, options, wal, ctx, None));
    refresh_tables(&services)?;
    if services.options.background {
        crate::jobs::flush::flusher::start(&services);
        crate::jobs::compaction::compactor::start(&services);
    }
    tracing::info!(server = name, tables = services.catalog.table_names().len(), "opened as a cluster member");
    Ok(services)
}

fn mark_cluster_root(fs: &dyn crate::fs::FileSystem, dir: &Path, name: &str) -> Result<()> {
    let marker = crate::layout::cluster_marker(dir);
    if !fs.exists(&marker)? {
        let text = format!(
            "This root is shared by the region servers of a cluster (first opened by {name}).\n\
             A standalone store refuses it. Remove this file only once no server of the cluster runs.\n"
        );
        fs.write_atomic(&marker, text.as_bytes())?;
        fs.sync_dir(dir)?;
    }
    Ok(())
}

/// Refuses, for a standalone store, a root a cluster shares (see
/// [`crate::layout::CLUSTER_MARKER`]).
pub(super) fn refuse_cluster_root(fs: &dyn crate::fs::FileSystem, dir: &Path) -> Result<()> {
    let marker = crate::layout::cluster_marker(dir);
    if fs.exists(&marker)? {
        return Err(StoreError::ClusterRefused(format!(
            "{} is a cluster's shared root ({} exists): a store opened on it alone would fence the WAL of every \
             live region server of that cluster. Start the server with --cluster zk://HOST:PORT/PATH to join the \
             cluster, or, once no server of the cluster runs, remove {} to own the root alone",
            dir.display(),
            marker.display(),
            marker.display()
        )));
    }
    Ok(())
}

/// A table on the root: its descriptor, whether it is enabled, and its
/// committed regions that no split or merge has retired.
type TableOnRoot = (crate::table::TableDescriptor, bool, Vec<(PathBuf, RegionInfo)>);

/// Every table on the root and its current regions, read without changing
/// anything: a table without a descriptor, a region without `.regioninfo`,
/// a retired parent and a daughter of an uncommitted split are skipped (the
/// server that owns them, or the next single-owner open, sorts them out).
/// Only the tables `wanted` accepts (by name) are read.
///
/// A table's regions are read with several file-system calls, not at one
/// instant, while another server may split or merge: a read that began
/// before a split committed and ended after it sees the retired parent but
/// not its daughters. Such a read does not tile the key space and is read
/// again (a split or merge commits within the time of a few file writes);
/// a table whose regions still do not tile after [`ROOT_READ_ATTEMPTS`]
/// reads is an error, never a list with a hole or an overlap.
fn committed_regions(services: &Services, wanted: impl Fn(&str) -> bool) -> Result<Vec<TableOnRoot>> {
    let fs = services.ctx.fs.as_ref();
    let mut out = Vec::new();
    for entry in crate::layout::table_dirs(fs, &services.dir)? {
        let crate::layout::TableDirEntry::Table { name: table_name, dir: table_dir } = entry else { continue };
        if !wanted(&table_name) {
            continue;
        }
        let mut attempt = 1;
        while let Some(table) = table_on_root(services, &table_dir)? {
            if table.2.is_empty() || tiles_key_space(&table.2) {
                out.push(table);
                break;
            }
            if attempt == ROOT_READ_ATTEMPTS {
                return Err(StoreError::Internal(format!(
                    "the regions of table {table_name:?} on the root do not cover its key space exactly once after \
                     {attempt} reads (a split or merge of another server still in progress?): {:?}",
                    table.2.iter().map(|(_, i)| (i.id, &i.start_key, &i.end_key)).collect::<Vec<_>>()
                )));
            }
            tracing::debug!(table = %table_name, attempt, "read the root's regions during a split or merge; again");
            std::thread::sleep(ROOT_READ_PAUSE * attempt);
            attempt += 1;
        }
    }
    Ok(out)
}

/// Reads of a table's regions on the root before [`committed_regions`]
/// gives up; with the pause growing by [`ROOT_READ_PAUSE`] per attempt,
/// about 4 s in all.
const ROOT_READ_ATTEMPTS: u32 = 40;
const ROOT_READ_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// Whether `regions` (in any order) cover the key space once: the first
/// starts at the empty key, each ends where the next starts, the last ends
/// at the empty key.
fn tiles_key_space(regions: &[(PathBuf, RegionInfo)]) -> bool {
    let mut infos: Vec<&RegionInfo> = regions.iter().map(|(_, i)| i).collect();
    infos.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    infos.first().is_some_and(|r| r.start_key.is_empty())
        && infos.last().is_some_and(|r| r.end_key.is_empty())
        && infos.windows(2).all(|w| !w[0].end_key.is_empty() && w[0].end_key == w[1].start_key)
}

/// One read of one table on the root (see [`committed_regions`]); `None`
/// when it has no descriptor.
fn table_on_root(services: &Services, table_dir: &Path) -> Result<Option<TableOnRoot>> {
    let fs = services.ctx.fs.as_ref();
    let desc_path = crate::layout::table_desc(table_dir);
    if !fs.exists(&desc_path)? {
        return Ok(None);
    }
    let file = super::ddl::read_table_file(fs, &desc_path)?;
    let mut infos = Vec::new();
    for name in fs.list(table_dir)? {
        let region_dir = table_dir.join(&name);
        if !crate::layout::is_region_dir_name(&name) {
            continue;
        }
        let info_path = crate::layout::region_info(&region_dir);
        if let Some(info) = crate::layout::read_json::<RegionInfo>(fs, &info_path, "region info")? {
            infos.push((region_dir, info));
        }
    }
    services.hook(crate::hooks::HookPoint::RootRegionsRead)?;
    let retired = |dir: &Path| crate::region::retired_parents::is_retired(fs, dir);
    let mut retired_ids = Vec::new();
    for (dir, info) in &infos {
        if retired(dir)? || infos.iter().any(|(_, other)| other.merged_from.contains(&info.id)) {
            retired_ids.push(info.id);
        }
    }
    let regions = infos
        .into_iter()
        .filter(|(dir, info)| {
            !retired_ids.contains(&info.id)
                && !info.parent.is_some_and(|p| {
                    !retired_ids.contains(&p) && fs.exists(&crate::layout::sibling_region_dir(dir, p)).unwrap_or(false)
                })
        })
        .collect();
    Ok(Some((file.descriptor, file.enabled, regions)))
}

/// Opens the OFFLINE `region` of `table` from disk on this server,
/// replaying (and flushing) the recovered edits a WAL split left for it.
pub(super) fn assign(services: &Services, table: &TableState, region: &Arc<Region>) -> Result<Arc<Region>> {
    let (table, _change) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    if region.state() != RegionState::Offline || !table.is_current(region) {
        return Err(StoreError::ClusterRefused(format!(
            "region {} is {} here, not OFFLINE; only an unassigned region can be assigned",
            region.info().region_name(),
            region.state()
        )));
    }
    // A parent another server split or merged (this server's list not yet
    // rebuilt): its daughters serve its rows, it must not open again.
    if crate::region::retired_parents::is_retired(services.ctx.fs.as_ref(), region.dir())? {
        return Err(StoreError::ClusterRefused(format!(
            "region {} was split or merged on another server; it is retired",
            region.info().region_name()
        )));
    }
    let started = std::time::Instant::now();
    // OPENING while it opens (a replay may take long): the master sees it
    // held here, not unassigned, and gives it to no other server meanwhile.
    region.set_state(RegionState::Opening);
    let opened =
        services.open_region(region.dir().to_path_buf(), region.info().clone(), table.desc.clone()).and_then(|fresh| {
            services.catalog.apply(CatalogEdit::ReplaceRegions {
                table: table.desc.name.clone(),
                old: vec![region.clone()],
                new: vec![fresh.clone()],
            })?;
            Ok(fresh)
        });
    let fresh = match opened {
        Ok(fresh) => fresh,
        Err(e) => {
            region.set_state(RegionState::Offline);
            return Err(e);
        }
    };
    if fresh.has_references() {
        services.compaction_queue.request_all(&fresh);
    }
    tracing::info!(
        region = %fresh.info().region_name(),
        seconds = started.elapsed().as_secs_f64(),
        "region assigned and opened"
    );
    Ok(fresh)
}

/// Flushes and closes the OPEN `region` of `table` and puts an OFFLINE
/// placeholder in its place: another server may open it next. Fails,
/// leaving it OPEN, if the flush fails.
pub(super) fn unassign(services: &Services, table: &TableState, region: &Arc<Region>) -> Result<()> {
    let (table, _change) = services.catalog.lock_changes(&table.desc.name)?;
    let table = table.as_ref();
    if region.state() != RegionState::Open || !table.is_current(region) {
        return Err(StoreError::NotServingRegion { region: region.info().region_name(), state: region.state() });
    }
    let started = std::time::Instant::now();
    region.set_state(RegionState::Closing);
    let held: Vec<_> = region.stores().map(|s| s.hold_compactions()).collect();
    let flushed = crate::region::open_close::preclose_flush(region).and_then(|()| {
        region.close_and_drain();
        region.flush_all()
    });
    if let Err(e) = flushed {
        region.reopen();
        return Err(e);
    }
    region.stores().for_each(|s| s.set_retired(true));
    drop(held);
    services.wal.forget_region(region.info().id);
    let placeholder = Arc::new(Region::unassigned(
        region.dir().to_path_buf(),
        region.info().clone(),
        table.desc.clone(),
        services.wal.clone(),
        &services.region_config,
    )?);
    region.set_state(RegionState::Closed);
    services.catalog.apply(CatalogEdit::ReplaceRegions {
        table: table.desc.name.clone(),
        old: vec![region.clone()],
        new: vec![placeholder],
    })?;
    tracing::info!(
        region = %region.info().region_name(),
        seconds = started.elapsed().as_secs_f64(),
        "region unassigned"
    );
    Ok(())
}

/// Recovers the edits of dead region server `server`: fences its WAL
/// directory, splits it into the recovered edits of every committed region
/// on the root (read from disk now, so regions this server never listed are
/// included), and retires it into `oldWALs/<server>`. Run again after a
/// failure it finishes the job; split edits replay idempotently.
pub(super) fn recover_server(services: &Services, server: &str) -> Result<SplitSummary> {
    let fs = services.ctx.fs.as_ref();
    let Some(fenced) = takeover::fence_server(fs, &services.dir, server)? else {
        return Ok(SplitSummary::default());
    };
    let started = std::time::Instant::now();
    let checked = takeover::check(fs, &fenced)?;
    let mut region_dirs = BTreeMap::new();
    for (_, _, regions) in committed_regions(services, |_| true)? {
        region_dirs.extend(regions.into_iter().map(|(dir, info)| (info.id, dir)));
    }
    let summary = crate::wal::log_split::split(fs, &checked, &region_dirs)?;
    let archive_dir = crate::layout::wal::instance_archive_dir(&services.dir, server)?;
    crate::fs::create_dir_all_durably(fs, &archive_dir)?;
    takeover::retire(fs, &fenced.dir, &archive_dir, services.options.wal.keep_archived)?;
    tracing::info!(
        server,
        entries = summary.entries,
        regions = summary.per_region.len(),
        seconds = started.elapsed().as_secs_f64(),
        "recovered a dead server's WAL"
    );
    Ok(summary)
}

/// Adds the tables created on the root since this server opened (by
/// another server) as OFFLINE placeholders; returns how many. A table
/// already listed is left as it is.
pub(super) fn refresh_tables(services: &Services) -> Result<usize> {
    let _ddl = services.catalog.lock_ddl();
    let mut added = 0;
    // Tables listed already are not read again (a listing of the root's
    // table directories per call, not a read of every region's info).
    for (desc, enabled, regions) in committed_regions(services, |name| !services.catalog.contains_table(name))? {
        let desc = Arc::new(desc);
        let mut placeholders = Vec::with_capacity(regions.len());
        for (region_dir, info) in regions {
            services.catalog.observe_region_id(info.id);
            placeholders.push(Arc::new(Region::unassigned(
                region_dir,
                info,
                desc.clone(),
                services.wal.clone(),
                &services.region_config,
            )?));
        }
        placeholders.sort_by(|a, b| a.info().start_key.cmp(&b.info().start_key));
        services.catalog.apply(CatalogEdit::AddTable(Arc::new(TableState::new(desc, enabled, placeholders))))?;
        added += 1;
    }
    Ok(added)
}

/// What [`sync_table`] did to this server's view of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSync {
    /// The view already matched the root.
    Unchanged,
    Disabled,
    Enabled,
    /// The table is gone from the root: its regions here are closed and it
    /// is no longer listed.
    Dropped,
    /// New on the root: listed, its regions OFFLINE here.
    Added,
    /// Its families changed on the root (another server altered it): its
    /// regions here opened again under the new descriptor.
    Altered,
    /// Its regions changed on the root (another server split or merged
    /// one): the list here was rebuilt, the new regions OFFLINE here.
    Regions,
}

/// Rebuilds this server's region list of table `t` from the root when
/// another server split or merged regions of it: regions still on the root
/// keep their place (open ones go on serving), new ones come in as OFFLINE
/// placeholders, retired ones go. Returns whether anything changed. A
/// region open here that the root no longer lists is this server's own
/// split or merge in progress: the list is left to it.
fn reconcile_regions(services: &Services, t: &Arc<TableState>, enabled: bool) -> Result<bool> {
    let _changes = t.lock_changes();
    let name = t.desc.name.clone();
    let Some((_, _, on_root)) = committed_regions(services, |n| n == name)?.into_iter().next() else {
        return Ok(false);
    };
    let listed = t.regions();
    let same = on_root.len() == listed.len() && on_root.iter().all(|(_, i)| listed.iter().any(|r| r.info().id == i.id));
    let busy =
        listed.iter().any(|r| r.state() != RegionState::Offline && !on_root.iter().any(|(_, i)| i.id == r.info().id));
    if same || busy || on_root.is_empty() {
        return Ok(false);
    }
    let mut regions = Vec::with_capacity(on_root.len());
    for (dir, info) in on_root {
        match listed.iter().find(|r| r.info().id == info.id) {
            Some(r) => regions.push(r.clone()),
            None => {
                services.catalog.observe_region_id(info.id);
                regions.push(Arc::new(Region::unassigned(
                    dir,
                    info,
                    t.desc.clone(),
                    services.wal.clone(),
                    &services.region_config,
                )?));
            }
        }
    }
    regions.sort_by(|a, b| a.info().start_key.cmp(&b.info().start_key));
    let (before, after) = (listed.len(), regions.len());
    services.catalog.apply(CatalogEdit::ReplaceTable(Arc::new(TableState::new(t.desc.clone(), enabled, regions))))?;
    tracing::info!(table = %name, before, after, "took another server's split or merge from the root");
    Ok(true)
}

/// Brings this server's view of table `name` in line with its descriptor
/// on the root, which another server's DDL changed: a table disabled there
/// is disabled here (its regions held here flushed, so that nothing of it
/// waits in this server's memstores or WAL), an enabled one enabled, a
/// deleted one closed and forgotten (its files are gone), a new one listed.
pub(super) fn sync_table(services: &Services, name: &str) -> Result<TableSync> {
    let _ddl = services.catalog.lock_ddl();
    let desc_path = crate::layout::table_desc(&services.table_dir(name)?);
    let fs = services.ctx.fs.as_ref();
    let on_root = if fs.exists(&desc_path)? { Some(super::ddl::read_table_file(fs, &desc_path)?) } else { None };
    let listed = services.catalog.table(name).ok();
    match (on_root, listed) {
        (None, None) => Ok(TableSync::Unchanged),
        (None, Some(t)) => {
            let _changes = t.lock_changes();
            for r in t.regions() {
                r.close_and_drain();
                services.wal.forget_region(r.info().id);
            }
            services.catalog.apply(CatalogEdit::DropTable(name.to_string()))?;
            tracing::info!(table = %name, "dropped a table another server deleted");
            Ok(TableSync::Dropped)
        }
        (Some(_), None) => {
            drop(_ddl);
            refresh_tables(services)?;
            Ok(TableSync::Added)
        }
        (Some(file), Some(t)) if file.descriptor != *t.desc => {
            // Another server altered it (disabled meanwhile): this server's
            // regions of it open again under the new families.
            let _changes = t.lock_changes();
            let regions = t.regions();
            super::alter::drain(&regions)?;
            let desc = Arc::new(file.descriptor);
            let fresh = super::alter::reopen(services, &regions, &desc)?;
            services.catalog.apply(CatalogEdit::ReplaceTable(Arc::new(TableState::new(desc, file.enabled, fresh))))?;
            tracing::info!(table = %name, "took another server's alter of a table from the root");
            Ok(TableSync::Altered)
        }
        (Some(file), Some(t)) if file.enabled == t.is_enabled() => {
            Ok(if reconcile_regions(services, &t, file.enabled)? { TableSync::Regions } else { TableSync::Unchanged })
        }
        (Some(file), Some(t)) => {
            services.catalog.apply(CatalogEdit::SetEnabled { table: name.to_string(), enabled: file.enabled })?;
            if file.enabled {
                tracing::info!(table = %name, "enabled a table another server enabled");
                return Ok(TableSync::Enabled);
            }
            for r in t.regions().iter().filter(|r| r.state() == RegionState::Open) {
                r.flush()?;
            }
            tracing::info!(table = %name, "disabled a table another server disabled");
            Ok(TableSync::Disabled)
        }
    }
}

/// The region servers with a WAL directory on the root: live ones, dead
/// ones not yet recovered, and those whose recovery was interrupted.
pub(super) fn wal_owners(services: &Services) -> Result<Vec<String>> {
    let fs = services.ctx.fs.as_ref();
    let mut names: Vec<String> = fs
        .list(&crate::layout::wal::wals_dir(&services.dir))?
        .into_iter()
        .map(|n| n.strip_suffix(SPLITTING_SUFFIX).map_or(n.clone(), str::to_string))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}
