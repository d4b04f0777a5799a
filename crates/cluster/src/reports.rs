//! `ReportBook`: the active master's view of the cluster, kept up to date
//! from the region servers' reports (`http_api::ServerReport`, HBase's
//! `RegionServerReport`) instead of reading every server's status each
//! pass.
//!
//! What it holds:
//! - per live server: the last report applied (`seq`), when it came, the
//!   regions it holds (in any state but OFFLINE), the tables it lists and
//!   its load;
//! - every region known to exist (`known`): seeded from the catalog when
//!   the master becomes active, added to by `held` and `appeared` entries,
//!   taken from by `retired` ones — so the regions no server holds are
//!   known without any server listing them;
//! - the WAL directories on the root (`wal_owners`), as one server listed
//!   them when the master asked (at activation and after a server left).
//!
//! Rules (see `http_api::report` for the protocol):
//! - A delta is applied only on top of the report it names as its base;
//!   otherwise the answer asks for a whole report. A report from a server
//!   that is not a live member is not applied (it may be one whose session
//!   ended: it must not put regions back in the view).
//! - A server whose last report is older than [`ReportBook::stale_after`]
//!   counts as unread: a pass then knows it may hold regions it has not
//!   reported, and acts as it did on a status it could not read.
//! - A region known only from a delta's `appeared` (a table another server
//!   created, or another server's split or merge, seen from the root before
//!   the server that made it reported holding it), and a daughter a whole
//!   report lists, is not listed as unassigned until [`APPEARED_GRACE`] has
//!   passed: its creator reports it held well
//!   within that time (at once on a change), and the master must not open
//!   a region its creator holds.
//! - Applying a report costs what it carries; only a heartbeat's load is
//!   written for an idle server. `dirty` is set when anything but load
//!   changed, and the master runs a pass only then (or when a timer or the
//!   membership asks).
//!
//! - Every region a report, a master's note or a departure touches is
//!   recorded as changed ([`ReportBook::take_changes`]); a table enabled
//!   (its unheld regions named by nobody) asks for a pass over everything.
//!
//! [`ReportBook::statuses`] renders the view as the per-server status
//! documents the assignment plan reads (`assignment/plan.rs`): each fresh
//! server with the regions it holds, and the first of them also listing
//! every known region nobody holds as OFFLINE, with the WAL owners;
//! [`ReportBook::statuses_of`] the same for some regions only (a scoped
//! pass), in O(those regions), and [`ReportBook::retain_unsettled`] which
//! of them the next pass still watches.
//!
//! Thread safety: behind the master's mutex; applied from the HTTP thread,
//! read by the poller thread for a pass.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use http_api::{
    RegionState, RegionStatus, ReportAnswer, ReportedLoad, ServerReport, ServerSection, ServerStatus, TableStatus,
};
use serde::Serialize;

/// How long a region known only from another server's `appeared` waits
/// before it may be listed as unassigned (see the module doc).
pub const APPEARED_GRACE: Duration = Duration::from_secs(10);

/// What the master keeps of one server's reports.
#[derive(Debug, Clone)]
struct Reported {
    seq: u64,
    at: Instant,
    held: BTreeMap<String, (String, RegionState)>,
    tables: BTreeMap<String, bool>,
    load: ReportedLoad,
    rpc_addr: Option<String>,
    /// The request counter at the previous report, for a rate.
    previous: Option<(Instant, u64)>,
    /// Opens (`Some`) and closes (`None`) the master made on this server,
    /// with the server's change count after each: they hold in the view
    /// until a report whose snapshot was taken after them
    /// (`changes_seen` at least that count) says how things are.
    overrides: HashMap<String, (Option<(String, RegionState)>, u64)>,
}

/// A region known to exist.
#[derive(Debug, Clone)]
struct Known {
    table: String,
    /// When it was first known only from an `appeared`; `None`: held by
    /// some server once, or in the catalog.
    appeared_at: Option<Instant>,
}

/// Counters of what reports brought (the master's page and `/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReportCounters {
    /// Reports applied, whole and delta.
    pub applied: u64,
    pub whole: u64,
    /// Deltas that carried nothing but the load.
    pub heartbeats: u64,
    /// Deltas refused for a base the master did not have (a whole report
    /// was asked for).
    pub out_of_step: u64,
    /// Reports from servers that are not live members (not applied).
    pub from_non_members: u64,
    /// Bytes of report bodies received.
    pub bytes: u64,
}

/// The view; see the module doc.
#[derive(Debug)]
pub struct ReportBook {
    servers: HashMap<String, Reported>,
    known: BTreeMap<String, Known>,
    wal_owners: Option<Vec<String>>,
    stale_after: Duration,
    dirty: bool,
    counters: ReportCounters,
    /// Whether one server has listed every region it knows of since this
    /// book began (see `ReportAnswer::list_known`), and which was asked.
    known_listed: bool,
    asked_to_list: Option<String>,
    /// Regions whose listing may have changed since the last
    /// [`take_changes`](Self::take_changes): what a scoped pass reads.
    changed: BTreeSet<String>,
    /// The next pass must read every region (a seed, a table's DDL).
    full_wanted: bool,
    /// Known regions per table (which tables still exist, without reading
    /// every region).
    table_regions: HashMap<String, usize>,
}

/// A server's load as the master's page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportedServerLoad {
    pub regions: u64,
    pub memstore_bytes: u64,
    /// Requests per second between its last two reports.
    pub requests_per_sec: Option<f64>,
    /// Seconds since its last report.
    pub reported_secs_ago: f64,
}

impl ReportBook {
    /// An empty book; a server's report older than `stale_after` counts as
    /// unread (three report periods, say).
    pub fn new(stale_after: Duration) -> ReportBook {
        ReportBook {
            servers: HashMap::new(),
            known: BTreeMap::new(),
            wal_owners: None,
            stale_after,
            dirty: true,
            counters: ReportCounters::default(),
            known_listed: false,
            asked_to_list: None,
            changed: BTreeSet::new(),
            full_wanted: true,
            table_regions: HashMap::new(),
        }
    }

    /// Records `id` of `table` as known (once: a table's count counts it once).
    fn know(&mut self, id: &str, table: &str, appeared_at: Option<Instant>) -> &mut Known {
        if !self.known.contains_key(id) {
            *self.table_regions.entry(table.to_string()).or_default() += 1;
        }
        self.known.entry(id.to_string()).or_insert(Known { table: table.to_string(), appeared_at })
    }

    /// Forgets `id` (retired).
    fn unknow(&mut self, id: &str) {
        if let Some(k) = self.known.remove(id)
            && let Some(n) = self.table_regions.get_mut(&k.table)
        {
            *n -= 1;
            if *n == 0 {
                self.table_regions.remove(&k.table);
            }
        }
    }

    pub fn stale_after(&self) -> Duration {
        self.stale_after
    }

    /// Seeds the regions known to exist with the catalog's (a master that
    /// just became active).
    pub fn seed(&mut self, catalog: &BTreeMap<String, http_api::CatalogEntry>) {
        for (id, entry) in catalog {
            self.know(id, &entry.table, None);
        }
        self.dirty = true;
        self.full_wanted = true;
    }

    /// Applies `report` (of `bytes` bytes) from a server that `is_member`
    /// says is live or not; see the module doc.
    pub fn apply(&mut self, report: &ServerReport, is_member: bool, bytes: usize, now: Instant) -> ReportAnswer {
        self.counters.bytes += bytes as u64;
        if !is_member {
            self.counters.from_non_members += 1;
            return ReportAnswer { applied: false, need_full: true, list_known: false };
        }
        let entry = match (report.base, self.servers.get_mut(&report.server)) {
            (None, _) => {
                let fresh = Reported {
                    seq: report.seq,
                    at: now,
                    held: BTreeMap::new(),
                    tables: BTreeMap::new(),
                    load: report.load,
                    rpc_addr: report.rpc_addr.clone(),
                    previous: None,
                    overrides: HashMap::new(),
                };
                let previous = self.servers.insert(report.server.clone(), fresh);
                self.counters.whole += 1;
                if let Some(p) = &previous {
                    self.changed.extend(p.held.keys().cloned());
                    if report.tables.iter().any(|t| t.enabled && p.tables.get(&t.name) == Some(&false)) {
                        self.full_wanted = true;
                    }
                }
                // Whatever it held before is replaced by what it lists now.
                if previous.as_ref().is_none_or(|p| !p.held.is_empty() || !p.tables.is_empty()) {
                    self.dirty = true;
                }
                let entry = self.servers.get_mut(&report.server).expect("just inserted");
                if let Some(p) = previous {
                    entry.previous = Some((p.at, p.load.requests));
                    entry.overrides = p.overrides;
                }
                if !report.held.is_empty() || !report.tables.is_empty() {
                    self.dirty = true;
                }
                entry
            }
            (Some(base), Some(entry)) if entry.seq == base => {
                if !report.is_heartbeat() {
                    self.dirty = true;
                } else {
                    self.counters.heartbeats += 1;
                }
                entry.previous = Some((entry.at, entry.load.requests));
                entry.seq = report.seq;
                entry.at = now;
                entry.load = report.load;
                entry
            }
            (Some(_), _) => {
                self.counters.out_of_step += 1;
                return ReportAnswer { applied: false, need_full: true, list_known: false };
            }
        };
        if report.base.is_some() && report.tables.iter().any(|t| t.enabled && entry.tables.get(&t.name) == Some(&false))
        {
            // A table enabled: its regions, held by nobody, are to be
            // assigned without a report naming each. (A created table's
            // regions are reported held or appeared, a disabled one's
            // closes and a dropped one's retirements name theirs.)
            self.full_wanted = true;
        }
        let changed = &mut self.changed;
        changed.extend(report.held.iter().map(|r| r.id.clone()));
        changed.extend(report.released.iter().chain(&report.retired).cloned());
        changed.extend(report.appeared.iter().map(|r| r.id.clone()));
        changed.extend(entry.overrides.keys().cloned());
        for r in &report.held {
            entry.held.insert(r.id.clone(), (r.table.clone(), r.state));
        }
        for id in report.released.iter().chain(&report.retired) {
            entry.held.remove(id);
        }
        // What the master did on this server after the report's snapshot
        // stands; what it did before, the report already shows.
        entry.overrides.retain(|_, (_, changes)| *changes > report.changes_seen);
        for (id, (state, _)) in &entry.overrides {
            match state {
                Some(held) => entry.held.insert(id.clone(), held.clone()),
                None => entry.held.remove(id),
            };
        }
        for t in &report.tables {
            entry.tables.insert(t.name.clone(), t.enabled);
        }
        for t in &report.dropped_tables {
            entry.tables.remove(t);
        }
        for r in &report.held {
            self.know(&r.id, &r.table, None).appeared_at = None;
        }
        for r in &report.appeared {
            // A region that appears in a delta is new on the root: a table
            // another server created, or its split's or merge's daughter.
            // Its creator opened it and reports it held: the master waits
            // for that report and must not open it elsewhere meanwhile
            // (assigned at once, a created table's region opened on two
            // servers when this report came before the creator's). One a
            // whole report lists is assigned at once unless it is a
            // daughter: the listing names every region the server knows.
            let appeared_at = (r.daughter || report.base.is_some()).then_some(now);
            self.know(&r.id, &r.table, appeared_at);
        }
        for id in &report.retired {
            self.unknow(id);
        }
        self.counters.applied += 1;
        if report.lists_known {
            self.known_listed = true;
        }
        // One server, once per book, lists every region it knows of; ask
        // another if the one asked left before it did.
        let ask = !self.known_listed
            && self.asked_to_list.as_ref().is_none_or(|a| a == &report.server || !self.servers.contains_key(a));
        if ask {
            self.asked_to_list = Some(report.server.clone());
        }
        ReportAnswer { applied: true, need_full: ask, list_known: ask }
    }

    /// Whether a server has listed every region it knows of since this
    /// book began (until then, a region created while no master was active
    /// may be missing from the view).
    pub fn known_listed(&self) -> bool {
        self.known_listed
    }

    /// Takes into the view at once a region the master opened (`open`) or
    /// closed on `server`, whose answer gave the change count `changes`:
    /// a later pass must not find it unassigned (or still held) because
    /// the server's report of it has not come yet, nor because a report
    /// whose snapshot was taken before the call arrives after it.
    pub fn note(&mut self, server: &str, region: &str, table: &str, open: bool, changes: u64) {
        let Some(entry) = self.servers.get_mut(server) else { return };
        let state = open.then(|| (table.to_string(), RegionState::Open));
        match &state {
            Some(held) => entry.held.insert(region.to_string(), held.clone()),
            None => entry.held.remove(region),
        };
        entry.overrides.insert(region.to_string(), (state, changes));
        if open {
            self.know(region, table, None).appeared_at = None;
        }
        self.changed.insert(region.to_string());
    }

    /// Forgets servers that are no longer live members.
    pub fn retain_members(&mut self, is_member: impl Fn(&str) -> bool) {
        let gone: Vec<String> = self.servers.keys().filter(|n| !is_member(n)).cloned().collect();
        for name in gone {
            if let Some(r) = self.servers.remove(&name) {
                self.changed.extend(r.held.into_keys());
            }
            self.dirty = true;
        }
    }

    /// The WAL directories on the root, as a server last listed them.
    pub fn set_wal_owners(&mut self, owners: Vec<String>) {
        if self.wal_owners.as_ref() != Some(&owners) {
            self.wal_owners = Some(owners);
            self.dirty = true;
        }
    }

    /// A dead server's WAL directory was recovered (retired to `oldWALs`).
    pub fn recovered(&mut self, server: &str) {
        if let Some(owners) = &mut self.wal_owners {
            owners.retain(|o| o != server);
        }
    }

    /// The regions whose listing may have changed since the last call, and
    /// whether the next pass must read every region instead.
    pub fn take_changes(&mut self) -> (bool, BTreeSet<String>) {
        (std::mem::take(&mut self.full_wanted), std::mem::take(&mut self.changed))
    }

    /// Whether some known region belongs to `table`.
    pub fn has_table(&self, table: &str) -> bool {
        self.table_regions.contains_key(table)
    }

    /// Whether every server of `serving` has a fresh report.
    pub fn all_fresh<'a>(&self, mut serving: impl Iterator<Item = &'a str>, now: Instant) -> bool {
        serving.all(|s| self.is_fresh(s, now))
    }

    /// Whether region `id` needs no pass's attention: held OPEN by one
    /// live server and recorded so (`entry`); or closed by an operator and
    /// held nowhere; or gone, known to nobody and out of the catalog.
    /// Anything else (unheld, in transition, recorded otherwise, a
    /// daughter in its grace) is watched by the passes until it is.
    pub fn is_settled(&self, id: &str, entry: Option<&http_api::CatalogEntry>) -> bool {
        let mut holders = self.servers.iter().filter_map(|(n, r)| r.held.get(id).map(|(_, s)| (n, *s)));
        let first = holders.next();
        if holders.next().is_some() {
            return false;
        }
        match (first, entry) {
            (None, None) => !self.known.contains_key(id),
            // Closed by an operator, and still a region (a retired one's
            // entry is to be forgotten).
            (None, Some(e)) => e.state == RegionState::Closed && self.known.contains_key(id),
            (Some((server, RegionState::Open)), Some(e)) => {
                e.state == RegionState::Open && e.server.as_deref() == Some(server.as_str())
            }
            _ => false,
        }
    }

    /// Every region the book or the catalog knows that is not settled
    /// ([`is_settled`](Self::is_settled)): after a pass that read
    /// everything, what the next ones watch. O(regions).
    pub fn unsettled(&self, catalog: &BTreeMap<String, http_api::CatalogEntry>) -> BTreeSet<String> {
        // Each held region's one holder and state, or `None` when several
        // servers list it.
        let mut holders: HashMap<&str, Option<(&str, RegionState)>> = HashMap::with_capacity(self.known.len());
        for (name, r) in &self.servers {
            for (id, (_, state)) in &r.held {
                holders.entry(id.as_str()).and_modify(|h| *h = None).or_insert(Some((name.as_str(), *state)));
            }
        }
        let mut out = BTreeSet::new();
        for (id, holder) in &holders {
            let settled = match (holder, catalog.get(*id)) {
                (Some((server, RegionState::Open)), Some(e)) => {
                    e.state == RegionState::Open && e.server.as_deref() == Some(*server)
                }
                _ => false,
            };
            if !settled {
                out.insert(id.to_string());
            }
        }
        for id in self.known.keys().chain(catalog.keys()) {
            if holders.contains_key(id.as_str()) {
                continue;
            }
            let settled = match catalog.get(id) {
                None => !self.known.contains_key(id),
                Some(e) => e.state == RegionState::Closed && self.known.contains_key(id),
            };
            if !settled {
                out.insert(id.clone());
            }
        }
        out
    }

    /// Who holds each of `ids` (table, server, state), each server that
    /// lists it: found id by id for a few ids, or by one walk of what every
    /// server holds when that is shorter (a table's creation changes every
    /// region at once).
    fn holders_in<'a>(&'a self, ids: &BTreeSet<String>) -> HashMap<&'a str, Vec<(&'a str, &'a str, RegionState)>> {
        let held: usize = self.servers.values().map(|r| r.held.len()).sum();
        let mut out: HashMap<&str, Vec<(&str, &str, RegionState)>> = HashMap::new();
        if ids.len().saturating_mul(self.servers.len()) > held {
            for (name, r) in &self.servers {
                for (id, (table, state)) in r.held.iter().filter(|(id, _)| ids.contains(*id)) {
                    out.entry(id.as_str()).or_default().push((table.as_str(), name.as_str(), *state));
                }
            }
        } else {
            for id in ids {
                for (name, r) in &self.servers {
                    if let Some((id, (table, state))) = r.held.get_key_value(id) {
                        out.entry(id.as_str()).or_default().push((table.as_str(), name.as_str(), *state));
                    }
                }
            }
        }
        out
    }

    /// Keeps of `ids` only the regions that are not settled
    /// ([`is_settled`](Self::is_settled)); O(ids) lookups.
    pub fn retain_unsettled(&self, ids: &mut BTreeSet<String>, entry: impl Fn(&str) -> Option<http_api::CatalogEntry>) {
        let holders = self.holders_in(ids);
        ids.retain(|id| {
            let settled = match (holders.get(id.as_str()).map(Vec::as_slice), entry(id)) {
                (None, None) => !self.known.contains_key(id),
                (None, Some(e)) => e.state == RegionState::Closed && self.known.contains_key(id),
                (Some([(_, server, RegionState::Open)]), Some(e)) => {
                    e.state == RegionState::Open && e.server.as_deref() == Some(*server)
                }
                _ => false,
            };
            !settled
        });
    }

    /// The servers whose report is fresh, by name, and each table with
    /// whether every server lists it enabled (what the statuses say).
    fn fresh_names_and_tables(&self, now: Instant) -> (Vec<&String>, BTreeMap<&str, bool>) {
        let mut names: Vec<&String> = self.servers.keys().filter(|n| self.is_fresh(n, now)).collect();
        names.sort();
        let mut enabled: BTreeMap<&str, bool> = BTreeMap::new();
        for r in self.servers.values() {
            for (t, on) in &r.tables {
                let e = enabled.entry(t.as_str()).or_insert(true);
                *e &= *on;
            }
        }
        (names, enabled)
    }

    /// Each fresh server's count of open regions, as it last reported.
    pub fn open_counts(&self, now: Instant) -> BTreeMap<String, usize> {
        self.servers
            .iter()
            .filter(|(n, _)| self.is_fresh(n, now))
            .map(|(n, r)| (n.clone(), r.load.open_regions as usize))
            .collect()
    }

    /// [`statuses`](Self::statuses) listing only the regions `ids`: each
    /// where it is held, or (known, held nowhere) as OFFLINE in the first
    /// server's; every fresh server with its tables. O(ids) lookups per
    /// server, or one walk of the held regions when that is shorter.
    pub fn statuses_of(
        &self,
        ids: &BTreeSet<String>,
        now: Instant,
        in_catalog: impl Fn(&str) -> bool,
    ) -> HashMap<String, ServerStatus> {
        let (names, enabled) = self.fresh_names_and_tables(now);
        let table_status = |t: &str| TableStatus {
            name: t.to_string(),
            enabled: enabled.get(t).copied().unwrap_or(true),
            regions: Vec::new(),
        };
        let mut docs: Vec<BTreeMap<String, TableStatus>> = names
            .iter()
            .map(|n| {
                self.servers[*n]
                    .tables
                    .iter()
                    .map(|(t, on)| (t.clone(), TableStatus { name: t.clone(), enabled: *on, regions: Vec::new() }))
                    .collect()
            })
            .collect();
        let holders = self.holders_in(ids);
        let at: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        for id in ids {
            if let Some(held) = holders.get(id.as_str()) {
                // Listed where it is held (by a server whose report is
                // fresh); held by a stale one only, it is not unheld.
                for (table, server, state) in held {
                    if let Some(&i) = at.get(server) {
                        docs[i]
                            .entry(table.to_string())
                            .or_insert_with(|| table_status(table))
                            .regions
                            .push(RegionStatus::listed(id, *state));
                    }
                }
                continue;
            }
            if docs.is_empty() {
                continue;
            }
            if let Some(known) = self.known.get(id) {
                let waiting = known.appeared_at.is_some_and(|at| now.duration_since(at) < APPEARED_GRACE);
                if !waiting || in_catalog(id) {
                    docs[0]
                        .entry(known.table.clone())
                        .or_insert_with(|| table_status(&known.table))
                        .regions
                        .push(RegionStatus::listed(id, RegionState::Offline));
                }
            }
        }
        names
            .iter()
            .zip(docs)
            .enumerate()
            .map(|(i, (name, tables))| {
                let mut server = ServerSection { member: Some((*name).clone()), ..ServerSection::default() };
                if i == 0 {
                    server.wal_owners = self.wal_owners.clone();
                }
                let status = ServerStatus { server, tables: tables.into_values().collect(), ..ServerStatus::default() };
                ((*name).clone(), status)
            })
            .collect()
    }

    /// [`next_grace_end`](Self::next_grace_end) among `ids` only.
    pub fn next_grace_end_of(&self, ids: &BTreeSet<String>) -> Option<Instant> {
        let holders = self.holders_in(ids);
        ids.iter()
            .filter(|id| !holders.contains_key(id.as_str()))
            .filter_map(|id| self.known.get(id).and_then(|k| k.appeared_at))
            .min()
            .map(|at| at + APPEARED_GRACE)
    }

    /// Whether anything but load changed since [`take_dirty`](Self::take_dirty).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Marks the view changed (a pass must run).
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    pub fn counters(&self) -> ReportCounters {
        self.counters
    }

    /// How many regions are known to exist.
    pub fn known_regions(&self) -> usize {
        self.known.len()
    }

    /// Regions the servers report holding, and how many of those are OPEN
    /// (summed over servers: O(servers)).
    pub fn held_regions(&self) -> (usize, usize) {
        let held = self.servers.values().map(|r| r.held.len()).sum();
        let open = self.servers.values().map(|r| r.load.open_regions as usize).sum();
        (held, open)
    }

    /// When the earliest grace of a region known only from `appeared`
    /// ends (a pass must follow then, or the region would wait for the
    /// next change). O(regions known): asked after a pass, which costs as
    /// much.
    pub fn next_grace_end(&self) -> Option<Instant> {
        let held: std::collections::HashSet<&str> =
            self.servers.values().flat_map(|r| r.held.keys().map(String::as_str)).collect();
        self.known
            .iter()
            .filter(|(id, _)| !held.contains(id.as_str()))
            .filter_map(|(_, k)| k.appeared_at)
            .min()
            .map(|at| at + APPEARED_GRACE)
    }

    /// Servers with a report applied.
    pub fn reporting_servers(&self) -> usize {
        self.servers.len()
    }

    /// Whether `server` reported within [`stale_after`](Self::stale_after).
    pub fn is_fresh(&self, server: &str, now: Instant) -> bool {
        self.servers.get(server).is_some_and(|r| now.duration_since(r.at) <= self.stale_after)
    }

    /// Where `server` serves HBase's native RPC, as its report said.
    pub fn rpc_addr(&self, server: &str) -> Option<&str> {
        self.servers.get(server).and_then(|r| r.rpc_addr.as_deref())
    }

    /// The server holding region `id` OPEN, as reported.
    pub fn holder(&self, id: &str) -> Option<&str> {
        self.servers
            .iter()
            .find(|(_, r)| r.held.get(id).is_some_and(|(_, s)| *s == RegionState::Open))
            .map(|(n, _)| n.as_str())
    }

    /// Each reporting server's load.
    pub fn loads(&self, now: Instant) -> BTreeMap<String, ReportedServerLoad> {
        self.servers
            .iter()
            .map(|(name, r)| {
                let rate = r.previous.and_then(|(at, requests)| {
                    let secs = r.at.duration_since(at).as_secs_f64();
                    (secs > 0.0).then(|| r.load.requests.saturating_sub(requests) as f64 / secs)
                });
                let load = ReportedServerLoad {
                    regions: r.load.open_regions,
                    memstore_bytes: r.load.memstore_bytes,
                    requests_per_sec: rate,
                    reported_secs_ago: now.duration_since(r.at).as_secs_f64(),
                };
                (name.clone(), load)
            })
            .collect()
    }

    /// The view as per-server status documents for the assignment plan
    /// (see the module doc): only servers whose report is fresh; the first
    /// of them (by name) also lists every known region no server holds, as
    /// OFFLINE, and the WAL owners. `in_catalog` says whether the catalog
    /// has an entry for a region (one known only from `appeared` is then
    /// listed without waiting for [`APPEARED_GRACE`]).
    pub fn statuses(&self, now: Instant, in_catalog: impl Fn(&str) -> bool) -> HashMap<String, ServerStatus> {
        let (names, enabled) = self.fresh_names_and_tables(now);
        let mut out = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            let r = &self.servers[*name];
            let mut tables: BTreeMap<&str, TableStatus> = r
                .tables
                .iter()
                .map(|(t, on)| (t.as_str(), TableStatus { name: t.clone(), enabled: *on, regions: Vec::new() }))
                .collect();
            for (id, (table, state)) in &r.held {
                tables
                    .entry(table.as_str())
                    .or_insert_with(|| TableStatus {
                        name: table.clone(),
                        enabled: enabled.get(table.as_str()).copied().unwrap_or(true),
                        regions: Vec::new(),
                    })
                    .regions
                    .push(RegionStatus::listed(id, *state));
            }
            let mut server = ServerSection { member: Some((*name).clone()), ..ServerSection::default() };
            if i == 0 {
                server.wal_owners = self.wal_owners.clone();
                let held: std::collections::HashSet<&str> =
                    self.servers.values().flat_map(|r| r.held.keys().map(String::as_str)).collect();
                for (id, known) in &self.known {
                    let waiting = known.appeared_at.is_some_and(|at| now.duration_since(at) < APPEARED_GRACE);
                    if held.contains(id.as_str()) || (waiting && !in_catalog(id)) {
                        continue;
                    }
                    tables
                        .entry(known.table.as_str())
                        .or_insert_with(|| TableStatus {
                            name: known.table.clone(),
                            enabled: enabled.get(known.table.as_str()).copied().unwrap_or(true),
                            regions: Vec::new(),
                        })
                        .regions
                        .push(RegionStatus::listed(id, RegionState::Offline));
                }
            }
            let status = ServerStatus { server, tables: tables.into_values().collect(), ..ServerStatus::default() };
            out.insert((*name).clone(), status);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use http_api::{ReportedRegion, ReportedTable};

    use super::*;

    fn region(id: &str, state: RegionState) -> ReportedRegion {
        ReportedRegion { id: id.into(), table: "t".into(), state, daughter: state == RegionState::Offline }
    }

    fn whole(server: &str, seq: u64, held: &[&str]) -> ServerReport {
        ServerReport {
            server: server.into(),
            seq,
            base: None,
            held: held.iter().map(|id| region(id, RegionState::Open)).collect(),
            tables: vec![ReportedTable { name: "t".into(), enabled: true }],
            ..ServerReport::default()
        }
    }

    fn delta(server: &str, seq: u64) -> ServerReport {
        ServerReport { server: server.into(), seq, base: Some(seq - 1), ..ServerReport::default() }
    }

    fn open_on(book: &ReportBook, now: Instant) -> BTreeMap<String, Vec<(String, RegionState)>> {
        book.statuses(now, |_| false)
            .into_iter()
            .map(|(name, s)| (name, s.regions().map(|(_, r)| (r.id.clone(), r.state)).collect()))
            .collect()
    }

    #[test]
    fn deltas_apply_on_their_base_and_a_missed_report_asks_for_a_whole_one() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        assert!(book.apply(&whole("a", 1, &["01"]), true, 10, now).applied);
        let mut d = delta("a", 2);
        d.held.push(region("02", RegionState::Open));
        assert!(book.apply(&d, true, 10, now).applied);
        // Report 3 was lost; 4 names 3 as its base: refused, whole asked.
        let mut d4 = delta("a", 4);
        d4.released.push("01".into());
        assert_eq!(book.apply(&d4, true, 10, now), ReportAnswer { applied: false, need_full: true, list_known: false });
        assert_eq!(open_on(&book, now)["a"].len(), 2, "nothing of the refused delta applied");
        // A duplicate of report 2 (its answer lost) is refused too.
        assert!(!book.apply(&d, true, 10, now).applied);
        // The whole report replaces what the master held for it.
        assert!(book.apply(&whole("a", 5, &["02"]), true, 10, now).applied);
        let listed = open_on(&book, now);
        assert!(listed["a"].contains(&("02".into(), RegionState::Open)));
        assert!(listed["a"].contains(&("01".into(), RegionState::Offline)), "01 is known and held by nobody");
        assert_eq!(book.counters().out_of_step, 2);
    }

    #[test]
    fn one_server_once_is_asked_to_list_every_region_it_knows() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        let first = book.apply(&whole("a", 1, &["01"]), true, 10, now);
        assert!(first.applied && first.need_full && first.list_known, "{first:?}");
        // Another server is not asked while "a" is.
        assert!(!book.apply(&whole("b", 1, &[]), true, 10, now).list_known);
        // "a" lists a region created while no master listened.
        let mut listing = whole("a", 2, &["01"]);
        listing.lists_known = true;
        listing.appeared.push(region("09", RegionState::Offline));
        let answer = book.apply(&listing, true, 10, now);
        assert!(answer.applied && !answer.need_full && !answer.list_known);
        assert!(book.known_listed());
        assert!(book.known_regions() >= 2);
        assert!(!book.apply(&delta("a", 3), true, 10, now).need_full);
    }

    #[test]
    fn what_the_master_opened_or_closed_holds_until_a_report_taken_after_it() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        book.apply(&whole("a", 1, &["01"]), true, 10, now);
        book.apply(&whole("b", 1, &[]), true, 10, now);
        // The master opened 02 on b (b's count is 5 after it) and moved 01
        // from a (closed at a's count 7).
        book.note("b", "02", "t", true, 5);
        book.note("a", "01", "t", false, 7);
        assert_eq!(book.holder("02"), Some("b"), "held at once, before b reports it");
        assert_eq!(book.holder("01"), None);
        // A whole report b took before the open (count 4) and a delta of
        // a's taken before the close do not undo them.
        let mut stale = whole("b", 2, &[]);
        stale.changes_seen = 4;
        assert!(book.apply(&stale, true, 10, now).applied);
        assert_eq!(book.holder("02"), Some("b"));
        let mut before_close = whole("a", 2, &["01"]);
        before_close.changes_seen = 6;
        book.apply(&before_close, true, 10, now);
        assert_eq!(book.holder("01"), None);
        // One taken after the open says what b holds (it closed 02 since).
        let mut after = whole("b", 3, &[]);
        after.changes_seen = 5;
        book.apply(&after, true, 10, now);
        assert_eq!(book.holder("02"), None, "the server's own later word wins");
    }

    #[test]
    fn a_report_from_a_server_that_is_not_a_member_changes_nothing() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        book.apply(&whole("a", 1, &["01"]), true, 10, now);
        book.take_dirty();
        // "b" left the membership; a report it sent late must not put 01
        // on it.
        let answer = book.apply(&whole("b", 1, &["01"]), false, 10, now);
        assert!(!answer.applied);
        assert!(!book.take_dirty());
        assert_eq!(book.holder("01"), Some("a"));
        // A server that leaves is forgotten, and its regions are unheld.
        book.retain_members(|n| n != "a");
        assert!(book.take_dirty());
        assert_eq!(book.holder("01"), None);
    }

    #[test]
    fn a_stale_server_is_unread_and_a_heartbeat_changes_nothing_but_load() {
        let t0 = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        book.apply(&whole("a", 1, &["01"]), true, 10, t0);
        book.apply(&whole("b", 1, &[]), true, 10, t0);
        book.take_dirty();
        let mut hb = delta("a", 2);
        hb.load.requests = 100;
        book.apply(&hb, true, 10, t0 + Duration::from_secs(5));
        assert!(!book.take_dirty(), "a heartbeat does not make a pass run");
        assert_eq!(book.counters().heartbeats, 1);
        let later = t0 + Duration::from_secs(12);
        let statuses = book.statuses(later, |_| false);
        assert!(statuses.contains_key("a") && !statuses.contains_key("b"), "b has not reported for 12 s");
        assert!(book.loads(later)["a"].requests_per_sec.is_some_and(|r| (r - 20.0).abs() < 1e-9));
    }

    /// The race the Java client's load through moves found (issue 56): a
    /// table created through server a is opened there; b took it from the
    /// root and reported its regions before a reported holding them. The
    /// master assigned them to b at once, and the rows of one region were
    /// written on a and read on b.
    #[test]
    fn a_created_table_s_region_another_server_reports_first_waits_for_its_creator() {
        let t0 = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(60));
        book.apply(&whole("a", 1, &[]), true, 10, t0);
        book.apply(&whole("b", 1, &[]), true, 10, t0);
        let mut d = delta("b", 2);
        d.appeared.push(ReportedRegion {
            id: "07".into(),
            table: "new".into(),
            state: RegionState::Offline,
            daughter: false,
        });
        book.apply(&d, true, 10, t0);
        let unheld =
            |book: &ReportBook, at, region: &str| open_on(book, at).values().flatten().any(|(id, _)| id == region);
        assert!(!unheld(&book, t0 + Duration::from_secs(1), "07"), "assigned before its creator could report it");
        // The creator reports it held: held there, never unheld.
        let mut d = delta("a", 2);
        d.held.push(ReportedRegion { id: "07".into(), table: "new".into(), state: RegionState::Open, daughter: false });
        book.apply(&d, true, 10, t0);
        assert_eq!(open_on(&book, t0 + APPEARED_GRACE * 2)["a"], [("07".to_string(), RegionState::Open)]);
        // A region a whole report lists (a master's first listing of what a
        // server knows) is assigned at once.
        let mut book = ReportBook::new(Duration::from_secs(60));
        let mut w = whole("b", 1, &[]);
        w.appeared.push(ReportedRegion {
            id: "08".into(),
            table: "t".into(),
            state: RegionState::Offline,
            daughter: false,
        });
        w.lists_known = true;
        book.apply(&w, true, 10, t0);
        assert!(unheld(&book, t0, "08"), "a region a whole listing names waits for nobody");
    }

    #[test]
    fn a_region_that_appeared_waits_for_its_creator_to_report_it_and_retired_ones_go() {
        let t0 = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(60));
        book.apply(&whole("a", 1, &["01"]), true, 10, t0);
        book.apply(&whole("b", 1, &[]), true, 10, t0);
        // b took a's split from the root before a reported it: 01 retired,
        // 02 and 03 appeared.
        let mut d = delta("b", 2);
        d.retired.push("01".into());
        d.appeared.extend([region("02", RegionState::Offline), region("03", RegionState::Offline)]);
        book.apply(&d, true, 10, t0);
        let listed = open_on(&book, t0 + Duration::from_secs(1));
        assert!(listed.values().flatten().all(|(id, _)| id != "02" && id != "03"), "{listed:?}");
        // 01 stays on a, which still holds it, until a itself reports it
        // gone; nobody else lists it (b's retirement took it from `known`).
        assert!(listed["b"].iter().all(|(id, _)| id != "01"), "{listed:?}");
        assert!(listed["a"].contains(&("01".into(), RegionState::Open)), "{listed:?}");
        // a reports 02 held; 03 it does not (it failed to open, say): 03
        // is unassigned once the grace is over.
        let mut d = delta("a", 2);
        d.retired.push("01".into());
        d.held.push(region("02", RegionState::Open));
        book.apply(&d, true, 10, t0);
        let listed = open_on(&book, t0 + APPEARED_GRACE + Duration::from_secs(1));
        let all: Vec<_> = listed.values().flatten().cloned().collect();
        assert!(all.contains(&("02".into(), RegionState::Open)));
        assert!(all.contains(&("03".into(), RegionState::Offline)), "{all:?}");
        assert_eq!(book.known_regions(), 2);
    }

    #[test]
    fn the_catalog_seeds_what_exists_for_a_new_master() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(9));
        let entry = http_api::CatalogEntry {
            table: "t".into(),
            server: Some("dead".into()),
            state: RegionState::Open,
            at_ms: 1,
        };
        book.seed(&BTreeMap::from([("07".to_string(), entry)]));
        book.apply(&whole("a", 1, &[]), true, 10, now);
        book.set_wal_owners(vec!["a".into(), "dead".into()]);
        let statuses = book.statuses(now, |_| true);
        assert_eq!(statuses["a"].server.wal_owners.as_deref(), Some(&["a".to_string(), "dead".to_string()][..]));
        assert_eq!(statuses["a"].regions().map(|(_, r)| r.id.as_str()).collect::<Vec<_>>(), ["07"]);
        book.recovered("dead");
        assert_eq!(book.statuses(now, |_| true)["a"].server.wal_owners.as_deref(), Some(&["a".to_string()][..]));
    }

    #[test]
    fn the_changes_name_what_reports_notes_and_departures_touched_and_an_enable_asks_for_everything() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(60));
        book.apply(&whole("a", 1, &["01", "02"]), true, 10, now);
        book.apply(&whole("b", 1, &["03"]), true, 10, now);
        let (full, changed) = book.take_changes();
        assert!(full, "a first look reads everything");
        assert!(changed.contains("01") && changed.contains("03"));
        // A delta names its regions; a heartbeat nothing.
        let mut d = delta("a", 2);
        d.released.push("02".into());
        book.apply(&d, true, 10, now);
        book.apply(&delta("b", 2), true, 10, now);
        assert_eq!(book.take_changes(), (false, BTreeSet::from(["02".to_string()])));
        // A master's note, and a server leaving with what it held.
        book.note("a", "02", "t", true, 1);
        book.retain_members(|n| n == "a");
        assert_eq!(book.take_changes(), (false, BTreeSet::from(["02".to_string(), "03".to_string()])));
        // A table disabled names its regions as they close; enabled, its
        // regions (held by nobody) are not named: everything is read.
        let mut ddl = delta("a", 3);
        ddl.tables.push(http_api::ReportedTable { name: "t".into(), enabled: false });
        book.apply(&ddl, true, 10, now);
        assert!(!book.take_changes().0, "a disable");
        let mut ddl = delta("a", 4);
        ddl.tables.push(http_api::ReportedTable { name: "t".into(), enabled: true });
        book.apply(&ddl, true, 10, now);
        assert!(book.take_changes().0, "an enable");
        // Tables known by their regions.
        assert!(book.has_table("t") && !book.has_table("u"));
    }

    #[test]
    fn a_scoped_status_lists_only_its_regions_and_settled_means_open_where_recorded() {
        let now = Instant::now();
        let mut book = ReportBook::new(Duration::from_secs(60));
        book.apply(&whole("a", 1, &["01", "02"]), true, 10, now);
        book.apply(&whole("b", 1, &["03"]), true, 10, now);
        let mut d = delta("a", 2);
        d.appeared.push(ReportedRegion {
            id: "04".into(),
            table: "t".into(),
            state: RegionState::Offline,
            daughter: false,
        });
        book.apply(&d, true, 10, now);
        let scope = BTreeSet::from(["02".to_string(), "04".to_string()]);
        // 04 appeared in a delta: listed unheld once its grace is over.
        let docs = book.statuses_of(&scope, now + APPEARED_GRACE, |_| false);
        let listed: BTreeMap<String, Vec<(String, RegionState)>> = docs
            .iter()
            .map(|(n, s)| (n.clone(), s.regions().map(|(_, r)| (r.id.clone(), r.state)).collect()))
            .collect();
        assert_eq!(listed["a"], [("02".to_string(), RegionState::Open), ("04".to_string(), RegionState::Offline)]);
        assert!(listed["b"].is_empty(), "b is listed (it is readable), without its regions");
        let open = |server: &str| http_api::CatalogEntry {
            table: "t".into(),
            server: Some(server.into()),
            state: RegionState::Open,
            at_ms: 0,
        };
        assert!(book.is_settled("01", Some(&open("a"))));
        assert!(!book.is_settled("01", Some(&open("b"))), "recorded on another server");
        assert!(!book.is_settled("01", None), "not recorded");
        assert!(!book.is_settled("04", None), "known and held by nobody");
        let closed = http_api::CatalogEntry { state: RegionState::Closed, server: None, ..open("a") };
        assert!(!book.is_settled("05", Some(&closed)), "a closed entry of a region nobody knows is to be forgotten");
        assert!(book.is_settled("04", Some(&closed)), "closed by an operator");
        assert!(book.is_settled("06", None), "gone");
        let catalog: BTreeMap<String, http_api::CatalogEntry> =
            [("01".to_string(), open("a")), ("02".to_string(), open("a")), ("03".to_string(), open("a"))].into();
        assert_eq!(book.unsettled(&catalog), BTreeSet::from(["03".to_string(), "04".to_string()]));
    }
}
