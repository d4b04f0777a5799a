//! The region server's side of HBase's `RegionServerReport`: a thread that
//! tells the active master what this server holds (`http_api::report`),
//! so the master never reads every server's status.
//!
//! Every [`TICK`] the reporter takes a [`Snapshot`] of the store — regions
//! held (any state but OFFLINE), regions known and not held, tables and
//! whether each is enabled — and compares it with the snapshot the master
//! last acknowledged. It sends a report when that changed (a region
//! opened, closed, split; a table created, disabled, dropped) or when
//! [`ReportPeriod`] has passed since the last one (a heartbeat with the
//! load, a few dozen bytes). The first report, and any report after the
//! master answered `need_full`, is whole; every other one is a delta
//! against the acknowledged snapshot, so a lost report or answer costs one
//! whole report and never a wrong view (the master applies a delta only on
//! its base). A failed send is retried at the next tick after
//! [`RETRY_AFTER`]; the caller's send function finds the master again.
//!
//! Cost: a tick reads each region's state once (no I/O, no allocation per
//! region beyond the snapshot's names); a report carries what changed.
//!
//! Thread safety: one thread owns the reporter's state; the store is read
//! through its own thread-safe API. [`Reporter`]'s drop stops and joins it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use http_api::{ReportAnswer, ReportedLoad, ReportedRegion, ReportedTable, ServerReport};
use store::{RegionState, Store};

/// How often the store is looked at for a change.
pub const TICK: Duration = Duration::from_millis(250);

/// After a failed send, how long until the next try.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Region opens and closes made for the master, counted process-wide (see
/// `http_api::ServerReport::changes_seen`): only ever compared as "at
/// least", so servers sharing a process (tests) may share it.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// Counts an open or close the master asked for, once it is done; the
/// count to put in the call's answer.
pub fn region_changed() -> u64 {
    CHANGES.fetch_add(1, Ordering::AcqRel) + 1
}

/// The count now, read before a report's snapshot is taken.
pub fn changes_seen() -> u64 {
    CHANGES.load(Ordering::Acquire)
}

/// How often a report is sent when nothing changed (HBase's
/// `hbase.regionserver.msginterval`, 3 s).
#[derive(Debug, Clone, Copy)]
pub struct ReportPeriod(pub Duration);

/// What the store holds, as a report names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Regions held: encoded name → (table, state).
    pub held: BTreeMap<String, (String, RegionState)>,
    /// Regions known and not held (OFFLINE here): encoded name → table,
    /// and whether it is a split or merge's daughter.
    pub known: BTreeMap<String, (String, bool)>,
    /// Tables → enabled.
    pub tables: BTreeMap<String, bool>,
}

impl Snapshot {
    /// Reads `store` now.
    pub fn of(store: &Store) -> Snapshot {
        let mut snap = Snapshot::default();
        for table in store.list_tables() {
            if let Ok(enabled) = store.is_table_enabled(&table) {
                snap.tables.insert(table, enabled);
            }
        }
        for region in store.all_regions() {
            let info = region.info();
            match region.state() {
                RegionState::Offline => {
                    let daughter = info.parents().next().is_some();
                    snap.known.insert(info.dir_name(), (info.table.clone(), daughter));
                }
                state => {
                    snap.held.insert(info.dir_name(), (info.table.clone(), state));
                }
            }
        }
        snap
    }

    fn exists(&self, id: &str) -> bool {
        self.held.contains_key(id) || self.known.contains_key(id)
    }

    /// A whole report of this snapshot; with `list_known`, also every
    /// region known and not held.
    pub fn whole(&self, server: &str, seq: u64, rpc_addr: Option<String>, list_known: bool) -> ServerReport {
        ServerReport {
            server: server.to_string(),
            seq,
            base: None,
            rpc_addr,
            held: self.held.iter().map(held).collect(),
            appeared: if list_known { self.known.iter().map(offline).collect() } else { Vec::new() },
            lists_known: list_known,
            tables: self.tables.iter().map(|(name, on)| ReportedTable { name: name.clone(), enabled: *on }).collect(),
            ..ServerReport::default()
        }
    }

    /// The delta from `base` (acknowledged as report `base_seq`) to this
    /// snapshot.
    pub fn delta(&self, base: &Snapshot, server: &str, seq: u64, base_seq: u64) -> ServerReport {
        let mut r = ServerReport { server: server.to_string(), seq, base: Some(base_seq), ..ServerReport::default() };
        for (id, entry) in &self.held {
            if base.held.get(id) != Some(entry) {
                r.held.push(held((id, entry)));
            }
        }
        for id in base.held.keys().filter(|id| !self.held.contains_key(*id)) {
            if self.exists(id) {
                r.released.push(id.clone());
            }
        }
        for id in base.held.keys().chain(base.known.keys()) {
            if !self.exists(id) {
                r.retired.push(id.clone());
            }
        }
        for (id, table) in &self.known {
            if !base.exists(id) {
                r.appeared.push(offline((id, table)));
            }
        }
        for (name, on) in &self.tables {
            if base.tables.get(name) != Some(on) {
                r.tables.push(ReportedTable { name: name.clone(), enabled: *on });
            }
        }
        r.dropped_tables = base.tables.keys().filter(|t| !self.tables.contains_key(*t)).cloned().collect();
        r
    }
}

fn held((id, (table, state)): (&String, &(String, RegionState))) -> ReportedRegion {
    ReportedRegion { id: id.clone(), table: table.clone(), state: *state, daughter: false }
}

fn offline((id, (table, daughter)): (&String, &(String, bool))) -> ReportedRegion {
    ReportedRegion { id: id.clone(), table: table.clone(), state: RegionState::Offline, daughter: *daughter }
}

/// The store's load now.
pub fn load_of(store: &Store, snap: &Snapshot) -> ReportedLoad {
    let totals = store.metrics().totals;
    ReportedLoad {
        open_regions: snap.held.values().filter(|(_, s)| *s == RegionState::Open).count() as u64,
        memstore_bytes: totals.memstore_data_bytes,
        requests: totals.puts + totals.gets + totals.scans,
    }
}

/// Sends one report to the active master: its answer, or why it could not
/// (no master, refused, unreachable).
pub type SendReport = Box<dyn FnMut(&ServerReport) -> Result<ReportAnswer, String> + Send>;

/// What the reporter's thread keeps between ticks; separate from the
/// thread so a test drives it tick by tick.
pub struct ReportState {
    server: String,
    rpc_addr: Option<String>,
    period: Duration,
    seq: u64,
    /// The last snapshot the master applied, and its report's seq.
    acked: Option<(u64, Arc<Snapshot>)>,
    list_known: bool,
    last_sent: Option<Instant>,
    failing_since: Option<Instant>,
}

impl ReportState {
    pub fn new(server: String, rpc_addr: Option<String>, period: ReportPeriod) -> ReportState {
        ReportState {
            server,
            rpc_addr,
            period: period.0,
            seq: 0,
            acked: None,
            list_known: false,
            last_sent: None,
            failing_since: None,
        }
    }

    /// The report due now for `snap`, if any.
    pub fn due(
        &mut self,
        snap: &Arc<Snapshot>,
        load: impl FnOnce() -> ReportedLoad,
        now: Instant,
    ) -> Option<ServerReport> {
        let quiet = self.last_sent.map_or(Duration::MAX, |at| now.duration_since(at));
        if self.failing_since.is_some() && quiet < RETRY_AFTER {
            return None;
        }
        // The same snapshot (an idle tick reuses it) is unchanged without
        // comparing region by region.
        let changed = self.acked.as_ref().is_none_or(|(_, base)| !Arc::ptr_eq(base, snap) && **base != **snap);
        if !changed && quiet < self.period {
            return None;
        }
        self.seq += 1;
        let mut report = match &self.acked {
            None => snap.whole(&self.server, self.seq, self.rpc_addr.clone(), self.list_known),
            Some((base_seq, base)) => snap.delta(base, &self.server, self.seq, *base_seq),
        };
        report.load = load();
        Some(report)
    }

    /// Records what came of sending `report` (made from `snap`).
    pub fn sent(
        &mut self,
        report: &ServerReport,
        snap: Arc<Snapshot>,
        outcome: &Result<ReportAnswer, String>,
        now: Instant,
    ) {
        self.last_sent = Some(now);
        match outcome {
            Ok(answer) => {
                if self.failing_since.take().is_some() {
                    tracing::info!(seq = report.seq, "the master takes this server's reports again");
                }
                self.acked = (answer.applied && !answer.need_full).then_some((report.seq, snap));
                self.list_known = answer.list_known;
            }
            Err(why) => {
                if self.failing_since.is_none() {
                    tracing::warn!(%why, "cannot report to the master; retrying every {RETRY_AFTER:?}");
                    self.failing_since = Some(now);
                }
            }
        }
    }
}

/// The running reporter; dropping it stops the thread.
pub struct Reporter {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts reporting `store`'s regions as `server` through `send`.
    pub fn start(
        store: Arc<Store>,
        server: String,
        rpc_addr: Option<String>,
        period: ReportPeriod,
        mut send: SendReport,
    ) -> std::io::Result<Reporter> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("master-report".into()).spawn(move || {
            let mut state = ReportState::new(server, rpc_addr, period);
            // The last snapshot and the layout count read before it: an
            // idle tick reuses it instead of reading every region again.
            let mut looked: Option<(u64, Arc<Snapshot>)> = None;
            while !stopping.load(Ordering::Acquire) {
                let seen = changes_seen();
                let count = store::layout_changes::layout_changes();
                let snap = match &looked {
                    Some((at, snap)) if *at == count => snap.clone(),
                    _ => {
                        let snap = Arc::new(Snapshot::of(&store));
                        looked = Some((count, snap.clone()));
                        snap
                    }
                };
                if let Some(mut report) = state.due(&snap, || load_of(&store, &snap), Instant::now()) {
                    report.changes_seen = seen;
                    let outcome = send(&report);
                    state.sent(&report, snap, &outcome, Instant::now());
                }
                std::thread::sleep(TICK);
            }
        })?;
        Ok(Reporter { stop, thread: Some(thread) })
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(held: &[(&str, RegionState)], known: &[&str]) -> Snapshot {
        Snapshot {
            held: held.iter().map(|(id, s)| (id.to_string(), ("t".to_string(), *s))).collect(),
            known: known.iter().map(|id| (id.to_string(), ("t".to_string(), false))).collect(),
            tables: [("t".to_string(), true)].into(),
        }
    }

    fn applied() -> Result<ReportAnswer, String> {
        Ok(ReportAnswer { applied: true, need_full: false, list_known: false })
    }

    #[test]
    fn a_delta_names_what_changed_and_nothing_else() {
        let base = snap(&[("01", RegionState::Open), ("02", RegionState::Open)], &["03", "04"]);
        let mut now = snap(&[("01", RegionState::Open), ("03", RegionState::Opening)], &["02", "05"]);
        now.tables.insert("u".into(), false);
        let d = now.delta(&base, "s", 8, 7);
        assert_eq!(d.base, Some(7));
        assert_eq!(d.held.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["03"]);
        assert_eq!(d.released, ["02"]);
        assert_eq!(d.retired, ["04"]);
        assert_eq!(d.appeared.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["05"]);
        assert_eq!(d.tables, [ReportedTable { name: "u".into(), enabled: false }]);
        assert!(now.delta(&now, "s", 9, 8).is_heartbeat());
    }

    #[test]
    fn whole_then_deltas_then_whole_again_after_the_master_asks() {
        let t0 = Instant::now();
        let mut state = ReportState::new("s".into(), None, ReportPeriod(Duration::from_secs(3)));
        let a = Arc::new(snap(&[("01", RegionState::Open)], &["02"]));
        let first = state.due(&a, ReportedLoad::default, t0).expect("a first report");
        assert_eq!(first.base, None);
        assert!(first.appeared.is_empty(), "a whole report lists only what it holds");
        // The master asks this server to list what it knows.
        let ask = Ok(ReportAnswer { applied: true, need_full: true, list_known: true });
        state.sent(&first, a.clone(), &ask, t0);
        let listing = state.due(&a, ReportedLoad::default, t0).expect("a whole report at once");
        assert!(listing.lists_known && listing.base.is_none() && listing.appeared.len() == 1);
        state.sent(&listing, a.clone(), &applied(), t0);
        // Nothing changed, period not over: nothing sent.
        assert!(state.due(&a, ReportedLoad::default, t0 + Duration::from_secs(1)).is_none());
        // A change goes at once, as a delta on the applied report.
        let b = Arc::new(snap(&[("01", RegionState::Closed)], &["02"]));
        let d = state.due(&b, ReportedLoad::default, t0 + Duration::from_secs(1)).expect("a change");
        assert_eq!(d.base, Some(listing.seq));
        // Its answer is lost: the next delta still names the last applied
        // base, and the master (which did apply it) asks for a whole one.
        state.sent(&d, b.clone(), &Err("reset".into()), t0 + Duration::from_secs(1));
        assert!(state.due(&b, ReportedLoad::default, t0 + Duration::from_millis(1500)).is_none(), "waits to retry");
        let again = state.due(&b, ReportedLoad::default, t0 + Duration::from_secs(3)).expect("a retry");
        assert_eq!(again.base, Some(listing.seq));
        let out_of_step = Ok(ReportAnswer { applied: false, need_full: true, list_known: false });
        state.sent(&again, b.clone(), &out_of_step, t0 + Duration::from_secs(3));
        let whole = state.due(&b, ReportedLoad::default, t0 + Duration::from_secs(3)).expect("whole");
        assert_eq!(whole.base, None);
        assert_eq!(whole.held[0].state, RegionState::Closed);
        // After the period, a heartbeat.
        state.sent(&whole, b.clone(), &applied(), t0 + Duration::from_secs(3));
        let beat = state.due(&b, ReportedLoad::default, t0 + Duration::from_secs(7)).expect("heartbeat");
        assert!(beat.is_heartbeat());
    }
}
