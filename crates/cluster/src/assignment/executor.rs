//! Carries out an assignment [`Plan`]: catalog writes and calls to region
//! servers, in the plan's order, each intent recorded before its call.
//!
//! Catalog writes are batched: the reconciling records of a pass are one
//! write (made before a recovery, which reads nothing of them, or at the
//! end of the steps), the OPENING intents of its assignments one more, and
//! what the servers opened one more — three appends to the catalog log
//! for a pass that opens 10,000 regions.
//!
//! What stops what (the plan cannot know, since it depends on answers):
//! - a catalog write that fails during reconciling is reported once, and
//!   no balancer move runs in that pass;
//! - before a `Recover`, ZooKeeper is asked again whether the server is
//!   gone (the membership snapshot may predate a server that registered
//!   since and then created its directory): still registered, it is
//!   skipped; unanswerable, or the recovery fails, the pass stops there —
//!   a region opened before a dead server's edits are split would miss
//!   acknowledged writes;
//! - `Assign`s whose OPENING intents cannot be recorded are not made;
//! - the `Assign`s of a pass run last and together: every intent is
//!   recorded first, then the regions going to one server are sent in
//!   batches of at most `http_api::MAX_BATCH` (`assign_batch`), to up to
//!   [`PARALLEL_SERVERS`] servers at once, and each region the server
//!   opened is recorded OPEN (one that failed stays OPENING: the next pass
//!   takes it as unassigned once its grace has passed);
//! - balancer moves run only when nothing else happened in the pass, stop
//!   at the first failure, and stop after [`BALANCER_RUN_LIMIT`].
//!
//! Thread safety: runs on the master's poller thread; the batched calls of
//! one pass run on scoped threads that share nothing but the
//! `RegionServers` (which is `Sync`), and the catalog is written only on
//! the poller thread, before and after them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use http_api::{MAX_BATCH, RegionServerCall, RegionState};

use super::plan::{Action, Plan};
use super::{RegionServers, Registered, SLOW_CALL};
use crate::catalog::{MasterCatalog, Recorded};
use crate::membership::ServerInfo;

/// How long one balancer run may go on moving regions (HBase bounds a run
/// in time too: the poller also recovers dead servers' regions).
pub const BALANCER_RUN_LIMIT: Duration = Duration::from_secs(10);

/// Servers a pass's assignments go to at once (each gets its batches in
/// turn): a failover spreads a dead server's regions over every survivor.
pub const PARALLEL_SERVERS: usize = 16;

/// What carrying a plan out did.
#[derive(Debug, Default)]
pub struct Execution {
    /// Lines for the master's event list.
    pub events: Vec<String>,
    /// The balancer ran (it was planned, and nothing else happened).
    pub balanced: bool,
    /// Dead servers whose WAL directories were recovered.
    pub recovered: Vec<String>,
    /// Regions opened and closed, with the servers' change counts: the
    /// master's view takes them at once (`ReportBook::note`).
    pub noted: Vec<Noted>,
}

/// A region a call opened (or closed) on `server`, with the server's change
/// count after it (`http_api::changes_in`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noted {
    pub server: String,
    pub region: String,
    pub table: String,
    pub open: bool,
    pub changes: u64,
}

/// Carries `plan` out against the live servers `live`.
pub fn execute(
    plan: &Plan,
    live: &[ServerInfo],
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    registered: Registered<'_>,
) -> Execution {
    let by_name = |name: &str| live.iter().find(|s| s.name == name);
    let mut events = Vec::new();
    let mut recovered = Vec::new();
    let mut assigns = Vec::new();
    let mut reconciled: Vec<Recorded> = Vec::new();
    let (moves, steps): (Vec<&Action>, Vec<&Action>) =
        plan.actions.iter().partition(|a| matches!(a, Action::Move { .. }));
    // The reconciling records so far, in one write.
    let flush = |reconciled: &mut Vec<Recorded>, catalog: &mut MasterCatalog, events: &mut Vec<String>| {
        if !reconciled.is_empty()
            && let Err(e) = catalog.record_all(&std::mem::take(reconciled))
        {
            events.push(format!("could not bring the catalog up to date: {e}"));
        }
    };
    for action in steps {
        match action {
            Action::Record { region, table, server, state } => {
                reconciled.push(Recorded::new(region, table, server.as_deref(), *state));
            }
            Action::Forget { region } => reconciled.push(Recorded::Remove(region.clone())),
            Action::Recover { dead, by, held } => {
                flush(&mut reconciled, catalog, &mut events);
                match registered(dead) {
                    Some(false) => {}
                    Some(true) => continue, // a server that joined after the snapshot
                    None => {
                        events.push(format!("could not ask ZooKeeper whether {dead} lives; assignment waits"));
                        return Execution { events, balanced: false, recovered, noted: Vec::new() };
                    }
                }
                let started = Instant::now();
                let answer = match by_name(by) {
                    Some(by) => servers.call(by, &RegionServerCall::Recover { server: dead.clone() }, SLOW_CALL),
                    None => Err(format!("{by} is not live")),
                };
                match answer {
                    Ok(answer) => {
                        recovered.push(dead.clone());
                        events.push(format!(
                            "{} ({:.2} s, by {by}; the catalog had {held} regions on it)",
                            answer.trim(),
                            started.elapsed().as_secs_f64(),
                        ))
                    }
                    Err(e) => {
                        events.push(format!("recovering the WAL of dead server {dead} failed: {e}; assignment waits"));
                        return Execution { events, balanced: false, recovered, noted: Vec::new() };
                    }
                }
            }
            Action::Assign { region, table, to } => assigns.push((region.as_str(), table.as_str(), to.as_str())),
            Action::Move { .. } => unreachable!("moves were partitioned out"),
        }
    }
    flush(&mut reconciled, catalog, &mut events);
    // Every intent before any call.
    let intents: Vec<Recorded> = assigns
        .iter()
        .map(|(region, table, to)| Recorded::new(region, table, Some(to), RegionState::Opening))
        .collect();
    if let Err(e) = catalog.record_all(&intents) {
        events.push(format!(
            "could not record {} region(s) opening in the catalog: {e}; none assigned this pass",
            assigns.len()
        ));
        assigns.clear();
    }
    let mut noted = Vec::new();
    assign_batched(&assigns, &by_name, servers, catalog, &mut events, &mut noted);
    // Balance only when the pass did nothing else.
    let balanced = plan.balancing && events.is_empty();
    if balanced {
        run_moves(&moves, &by_name, servers, catalog, &mut events, &mut noted);
    }
    Execution { events, balanced, recovered, noted }
}

/// What one server answered for one batch: each region's outcome, with
/// the server's change count after its batch.
type BatchOutcome<'a> = Vec<(&'a str, &'a str, Result<Option<u64>, String>)>;

/// Opens `assigns` (region, table, server; each recorded OPENING already):
/// per server in batches, servers in parallel; records what opened.
fn assign_batched<'a>(
    assigns: &[(&'a str, &'a str, &'a str)],
    by_name: &(impl Fn(&str) -> Option<&'a ServerInfo> + Sync),
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    events: &mut Vec<String>,
    noted: &mut Vec<Noted>,
) {
    let mut per_server: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (region, table, to) in assigns {
        per_server.entry(to).or_default().push((region, table));
    }
    let jobs: Vec<(&str, Vec<(&str, &str)>)> = per_server.into_iter().collect();
    let mut results: Vec<(&str, Duration, BatchOutcome<'_>)> = Vec::new();
    for wave in jobs.chunks(PARALLEL_SERVERS) {
        let done: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = wave
                .iter()
                .map(|(to, regions)| scope.spawn(move || (*to, assign_on(by_name(to), to, regions, servers))))
                .collect();
            handles.into_iter().map(|h| h.join().expect("an assignment thread panicked")).collect()
        });
        results.extend(done.into_iter().map(|(to, (took, outcome))| (to, took, outcome)));
    }
    let mut opens = Vec::new();
    for (to, took, outcome) in results {
        let mut opened = 0;
        let mut tables = std::collections::BTreeSet::new();
        for (region, table, result) in outcome {
            match result {
                Ok(changes) => {
                    opened += 1;
                    tables.insert(table);
                    if let Some(changes) = changes {
                        let (server, region, table) = (to.to_string(), region.to_string(), table.to_string());
                        noted.push(Noted { server, region, table, open: true, changes });
                    }
                    opens.push(Recorded::new(region, table, Some(to), RegionState::Open));
                }
                Err(e) => events.push(format!("assigning region {region} of table {table} to {to} failed: {e}")),
            }
        }
        if opened > 0 {
            let tables: Vec<&str> = tables.into_iter().collect();
            events.push(format!(
                "assigned {opened} region(s) of table(s) {} to {to} ({:.2} s)",
                tables.join(", "),
                took.as_secs_f64()
            ));
        }
    }
    if let Err(e) = catalog.record_all(&opens) {
        // The next pass records them from the servers' reports.
        events.push(format!("{} region(s) opened; the catalog still says OPENING: {e}", opens.len()));
    }
}

/// Sends `regions` to server `to` in batches; each region's outcome and
/// the time it all took.
fn assign_on<'a>(
    server: Option<&ServerInfo>,
    to: &str,
    regions: &[(&'a str, &'a str)],
    servers: &dyn RegionServers,
) -> (Duration, BatchOutcome<'a>) {
    let started = Instant::now();
    let mut out = Vec::with_capacity(regions.len());
    for batch in regions.chunks(MAX_BATCH) {
        let call = RegionServerCall::AssignBatch { regions: batch.iter().map(|(r, _)| r.to_string()).collect() };
        let answer = match server {
            Some(server) => servers.call(server, &call, SLOW_CALL),
            None => Err(format!("{to} is not live")),
        };
        for (region, table) in batch {
            let result = match &answer {
                Ok(text) => batch_outcome(text, region).map(|()| http_api::changes_in(text)),
                Err(e) => Err(e.clone()),
            };
            out.push((*region, *table, result));
        }
    }
    (started.elapsed(), out)
}

/// Region `region`'s outcome in an `assign_batch` answer (a line `opened
/// ID` or `failed ID: why`; a region the answer does not name failed).
pub(crate) fn batch_outcome(answer: &str, region: &str) -> Result<(), String> {
    for line in answer.lines() {
        if line.strip_prefix("opened ").is_some_and(|id| id.trim() == region) {
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("failed ")
            && let Some((id, why)) = rest.split_once(':')
            && id.trim() == region
        {
            return Err(why.trim().to_string());
        }
    }
    Err(format!("the server's answer does not name region {region}"))
}

/// The balancer's moves, each recorded before each of its calls.
fn run_moves<'a>(
    moves: &[&Action],
    by_name: &impl Fn(&str) -> Option<&'a ServerInfo>,
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    events: &mut Vec<String>,
    noted: &mut Vec<Noted>,
) {
    let run_started = Instant::now();
    for action in moves {
        let Action::Move { region, table, from, to } = action else { continue };
        if run_started.elapsed() > BALANCER_RUN_LIMIT {
            break;
        }
        let (Some(from_server), Some(to_server)) = (by_name(from), by_name(to)) else { continue };
        let started = Instant::now();
        if let Err(e) = catalog.record(region, table, Some(from), RegionState::Closing) {
            events.push(format!("balancer: could not record region {region} closing in the catalog: {e}"));
            break;
        }
        let note = |server: &str, open: bool, answer: &str| {
            http_api::changes_in(answer).map(|changes| Noted {
                server: server.to_string(),
                region: region.clone(),
                table: table.clone(),
                open,
                changes,
            })
        };
        match servers.call(from_server, &RegionServerCall::Unassign { region: region.clone() }, SLOW_CALL) {
            Ok(answer) => noted.extend(note(from, false, &answer)),
            Err(e) => {
                events.push(format!("balancer: closing region {region} on {from} failed: {e}"));
                break;
            }
        }
        if let Err(e) = catalog.record(region, table, Some(to), RegionState::Opening) {
            // Closed and unassigned: the next pass assigns it.
            events.push(format!("balancer: could not record region {region} opening in the catalog: {e}"));
            break;
        }
        match servers.call(to_server, &RegionServerCall::Assign { region: region.clone() }, SLOW_CALL) {
            Ok(answer) => {
                noted.extend(note(to, true, &answer));
                let _ = catalog.record(region, table, Some(to), RegionState::Open);
                events.push(format!(
                    "balancer moved region {region} from {from} to {to} ({:.2} s)",
                    started.elapsed().as_secs_f64()
                ));
            }
            Err(e) => {
                // Closed and unassigned: the next pass assigns it.
                events.push(format!("balancer: opening region {region} on {to} failed: {e}"));
                break;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::assignment::plan::tests::server;
    use crate::catalog::tests::MemoryStore;

    /// Region servers that answer every call with 200 unless told to fail
    /// calls whose path contains a given text; they record every call.
    #[derive(Default)]
    pub(crate) struct FakeServers {
        pub(crate) calls: Mutex<Vec<String>>,
        pub(crate) failing: Mutex<Vec<String>>,
    }

    impl FakeServers {
        pub(crate) fn calls(&self) -> Vec<String> {
            self.calls.lock().expect("calls").clone()
        }
    }

    impl RegionServers for FakeServers {
        fn call(&self, server: &ServerInfo, call: &RegionServerCall, _: Duration) -> Result<String, String> {
            let line = format!("{} {}", server.name, call.path());
            self.calls.lock().expect("calls").push(line.clone());
            let failing = self.failing.lock().expect("failing").clone();
            if failing.iter().any(|f| line.contains(f.as_str())) {
                return Err(format!("{line}: refused"));
            }
            if let RegionServerCall::AssignBatch { regions } = call {
                // Each region as a single assign would be, one line each.
                let answer = regions.iter().map(|r| {
                    let single = format!("{} /admin/assign?region={r}", server.name);
                    if failing.iter().any(|f| single.contains(f.as_str())) {
                        format!("failed {r}: refused")
                    } else {
                        format!("opened {r}")
                    }
                });
                return Ok(answer.collect::<Vec<_>>().join("\n"));
            }
            Ok("done".into())
        }
    }

    fn catalog() -> (MasterCatalog, Arc<MemoryStore>) {
        let store = Arc::new(MemoryStore::default());
        (MasterCatalog::load(store.clone(), 1).expect("load"), store)
    }

    fn assign(region: &str) -> Action {
        Action::Assign { region: region.into(), table: "t".into(), to: "a".into() }
    }

    fn recover(dead: &str) -> Action {
        Action::Recover { dead: dead.into(), by: "a".into(), held: 0 }
    }

    fn plan(actions: Vec<Action>) -> Plan {
        Plan { actions, ..Plan::default() }
    }

    #[test]
    fn a_wal_directory_is_fenced_only_if_zookeeper_confirms_its_server_is_gone() {
        let live = [server("a")];
        let fake = FakeServers::default();
        let (mut cat, _) = catalog();
        let p = plan(vec![recover("b"), assign("01")]);
        // "b" registered since the membership snapshot: left alone, and
        // assignment goes on.
        let done = execute(&p, &live, &fake, &mut cat, &|name| Some(name == "b"));
        assert_eq!(fake.calls(), ["a /admin/assign_batch?regions=01"]);
        assert!(done.events[0].starts_with("assigned 1 region(s) of table(s) t to a"), "{:?}", done.events);
        // ZooKeeper cannot be asked: nothing is fenced and nothing assigned.
        let fake = FakeServers::default();
        let done = execute(&p, &live, &fake, &mut cat, &|_| None);
        assert!(done.events[0].contains("assignment waits"), "{:?}", done.events);
        assert!(fake.calls().is_empty());
        // Gone: recovered, then assigned.
        let fake = FakeServers::default();
        let done = execute(&p, &live, &fake, &mut cat, &|_| Some(false));
        assert_eq!(fake.calls(), ["a /admin/recover?server=b", "a /admin/assign_batch?regions=01"]);
        assert_eq!(done.recovered, ["b"]);
    }

    #[test]
    fn a_failed_recovery_stops_the_pass_before_any_assignment() {
        let fake = FakeServers::default();
        fake.failing.lock().expect("failing").push("recover".into());
        let (mut cat, _) = catalog();
        let done = execute(&plan(vec![recover("d"), assign("01")]), &[server("a")], &fake, &mut cat, &|_| Some(false));
        assert_eq!(fake.calls(), ["a /admin/recover?server=d"]);
        assert!(done.events[0].contains("assignment waits"), "{:?}", done.events);
        assert!(cat.get("01").is_none(), "no intent recorded for what was not assigned");
    }

    #[test]
    fn nothing_is_assigned_that_the_catalog_could_not_record_first() {
        let fake = FakeServers::default();
        let (mut cat, store) = catalog();
        store.fail_writes.store(true, std::sync::atomic::Ordering::Relaxed);
        let done = execute(&plan(vec![assign("01")]), &[server("a")], &fake, &mut cat, &|_| Some(true));
        assert!(done.events.iter().any(|e| e.contains("none assigned")), "{:?}", done.events);
        assert!(fake.calls().is_empty());
    }

    #[test]
    fn an_assign_records_its_intent_before_the_call_and_the_outcome_after() {
        let fake = FakeServers::default();
        fake.failing.lock().expect("failing").push("region=02".into());
        let (mut cat, _) = catalog();
        let done = execute(&plan(vec![assign("01"), assign("02")]), &[server("a")], &fake, &mut cat, &|_| Some(true));
        assert_eq!(cat.get("01").map(|l| l.state), Some(RegionState::Open));
        // The failed open stays OPENING: the next pass takes it as
        // unassigned once the grace has passed.
        assert_eq!(cat.get("02").map(|l| l.state), Some(RegionState::Opening));
        assert!(done.events.iter().any(|e| e.contains("region 02") && e.contains("failed")), "{:?}", done.events);
    }

    #[test]
    fn assignments_go_in_batches_to_every_server_at_once() {
        let live: Vec<ServerInfo> = ["a", "b", "c"].map(server).to_vec();
        let fake = FakeServers::default();
        fake.failing.lock().expect("failing").push("c /admin/assign_batch".into());
        let (mut cat, _) = catalog();
        let mut actions = Vec::new();
        for i in 0..(2 * MAX_BATCH + 10) {
            let to = ["a", "b", "c"][i % 3];
            actions.push(Action::Assign { region: format!("{i:04x}"), table: "t".into(), to: to.into() });
        }
        let done = execute(&plan(actions), &live, &fake, &mut cat, &|_| Some(true));
        let calls = fake.calls();
        // 410 regions, about 137 per server: one batch each.
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls.iter().all(|c| c.contains("/admin/assign_batch?regions=")));
        let open = cat.entries().values().filter(|e| e.state == RegionState::Open).count();
        let opening = cat.entries().values().filter(|e| e.state == RegionState::Opening).count();
        assert_eq!((open, opening), (274, 136), "c's batch failed: its regions stay OPENING");
        assert!(
            done.events.iter().any(|e| e.starts_with("assigned 137 region(s) of table(s) t to a")),
            "{:?}",
            done.events
        );
    }

    #[test]
    fn a_batch_answer_names_each_region() {
        let answer = "opened 0a\nfailed 0b: region 0b is open on live region server x\n";
        assert_eq!(batch_outcome(answer, "0a"), Ok(()));
        assert_eq!(batch_outcome(answer, "0b"), Err("region 0b is open on live region server x".into()));
        assert!(batch_outcome(answer, "0c").is_err(), "a region the answer leaves out failed");
    }

    #[test]
    fn balancer_moves_run_only_when_nothing_else_happened_and_stop_at_a_failure() {
        let live = [server("a"), server("b")];
        let moves = || {
            ["01", "02"]
                .map(|r| Action::Move { region: r.into(), table: "t".into(), from: "a".into(), to: "b".into() })
                .to_vec()
        };
        let balancing = |actions| Plan { actions, balancing: true, ..Plan::default() };
        // Nothing else: both move, each closed on a then opened on b.
        let fake = FakeServers::default();
        let (mut cat, store) = catalog();
        let done = execute(&balancing(moves()), &live, &fake, &mut cat, &|_| Some(true));
        assert!(done.balanced);
        assert_eq!(
            fake.calls(),
            [
                "a /admin/unassign?region=01",
                "b /admin/assign?region=01",
                "a /admin/unassign?region=02",
                "b /admin/assign?region=02"
            ]
        );
        assert_eq!(cat.get("02").and_then(|l| l.server), Some("b".into()));
        // A failed close stops the run.
        let fake = FakeServers::default();
        fake.failing.lock().expect("failing").push("unassign?region=01".into());
        execute(&balancing(moves()), &live, &fake, &mut cat, &|_| Some(true));
        assert_eq!(fake.calls(), ["a /admin/unassign?region=01"]);
        // A catalog that cannot be brought up to date: no move at all.
        store.fail_writes.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut actions =
            vec![Action::Record { region: "09".into(), table: "t".into(), server: None, state: RegionState::Offline }];
        actions.extend(moves());
        let fake = FakeServers::default();
        let done = execute(&balancing(actions), &live, &fake, &mut cat, &|_| Some(true));
        assert!(!done.balanced && fake.calls().is_empty(), "{:?}", done.events);
        assert!(done.events[0].contains("could not bring the catalog up to date"), "{:?}", done.events);
    }
}
