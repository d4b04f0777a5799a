//! Carries out an assignment [`Plan`]: catalog writes and calls to region
//! servers, in the plan's order, each intent recorded before its call.
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
//! - an `Assign` whose OPENING intent cannot be recorded is not made;
//! - balancer moves run only when nothing else happened in the pass, stop
//!   at the first failure, and stop after [`BALANCER_RUN_LIMIT`].
//!
//! Thread safety: runs on the master's poller thread only.

use std::time::{Duration, Instant};

use http_api::{RegionServerCall, RegionState};

use super::plan::{Action, Plan};
use super::{RegionServers, Registered, SLOW_CALL};
use crate::catalog::MasterCatalog;
use crate::membership::ServerInfo;

/// How long one balancer run may go on moving regions (HBase bounds a run
/// in time too: the poller also recovers dead servers' regions).
pub const BALANCER_RUN_LIMIT: Duration = Duration::from_secs(10);

/// What carrying a plan out did.
#[derive(Debug, Default)]
pub struct Execution {
    /// Lines for the master's event list.
    pub events: Vec<String>,
    /// The balancer ran (it was planned, and nothing else happened).
    pub balanced: bool,
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
    let mut catalog_failed = None;
    let (moves, steps): (Vec<&Action>, Vec<&Action>) =
        plan.actions.iter().partition(|a| matches!(a, Action::Move { .. }));
    for action in steps {
        if !matches!(action, Action::Record { .. } | Action::Forget { .. })
            && let Some(e) = catalog_failed.take()
        {
            events.push(format!("could not bring the catalog up to date: {e}"));
        }
        match action {
            Action::Record { region, table, server, state } => {
                if let Err(e) = catalog.record(region, table, server.as_deref(), *state) {
                    catalog_failed = Some(e);
                }
            }
            Action::Forget { region } => {
                if let Err(e) = catalog.remove(region) {
                    catalog_failed = Some(e);
                }
            }
            Action::Recover { dead, by, held } => {
                match registered(dead) {
                    Some(false) => {}
                    Some(true) => continue, // a server that joined after the snapshot
                    None => {
                        events.push(format!("could not ask ZooKeeper whether {dead} lives; assignment waits"));
                        return Execution { events, balanced: false };
                    }
                }
                let started = Instant::now();
                let answer = match by_name(by) {
                    Some(by) => servers.call(by, &RegionServerCall::Recover { server: dead.clone() }, SLOW_CALL),
                    None => Err(format!("{by} is not live")),
                };
                match answer {
                    Ok(answer) => events.push(format!(
                        "{} ({:.2} s, by {by}; the catalog had {held} regions on it)",
                        answer.trim(),
                        started.elapsed().as_secs_f64(),
                    )),
                    Err(e) => {
                        events.push(format!("recovering the WAL of dead server {dead} failed: {e}; assignment waits"));
                        return Execution { events, balanced: false };
                    }
                }
            }
            Action::Assign { region, table, to } => {
                let started = Instant::now();
                if let Err(e) = catalog.record(region, table, Some(to), RegionState::Opening) {
                    events.push(format!(
                        "could not record region {region} opening on {to} in the catalog: {e}; not assigned"
                    ));
                    continue;
                }
                let answer = match by_name(to) {
                    Some(server) => {
                        servers.call(server, &RegionServerCall::Assign { region: region.clone() }, SLOW_CALL)
                    }
                    None => Err(format!("{to} is not live")),
                };
                match answer {
                    Ok(_) => {
                        let recorded = catalog.record(region, table, Some(to), RegionState::Open);
                        events.push(format!(
                            "assigned region {region} of table {table} to {to} ({:.2} s){}",
                            started.elapsed().as_secs_f64(),
                            recorded.err().map_or(String::new(), |e| format!("; the catalog still says OPENING: {e}"))
                        ));
                    }
                    Err(e) => events.push(format!("assigning region {region} of table {table} to {to} failed: {e}")),
                }
            }
            Action::Move { .. } => unreachable!("moves were partitioned out"),
        }
    }
    if let Some(e) = catalog_failed {
        events.push(format!("could not bring the catalog up to date: {e}"));
    }
    // Balance only when the pass did nothing else.
    let balanced = plan.balancing && events.is_empty();
    if balanced {
        run_moves(&moves, &by_name, servers, catalog, &mut events);
    }
    Execution { events, balanced }
}

/// The balancer's moves, each recorded before each of its calls.
fn run_moves<'a>(
    moves: &[&Action],
    by_name: &impl Fn(&str) -> Option<&'a ServerInfo>,
    servers: &dyn RegionServers,
    catalog: &mut MasterCatalog,
    events: &mut Vec<String>,
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
        if let Err(e) = servers.call(from_server, &RegionServerCall::Unassign { region: region.clone() }, SLOW_CALL) {
            events.push(format!("balancer: closing region {region} on {from} failed: {e}"));
            break;
        }
        if let Err(e) = catalog.record(region, table, Some(to), RegionState::Opening) {
            // Closed and unassigned: the next pass assigns it.
            events.push(format!("balancer: could not record region {region} opening in the catalog: {e}"));
            break;
        }
        match servers.call(to_server, &RegionServerCall::Assign { region: region.clone() }, SLOW_CALL) {
            Ok(_) => {
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
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use http_api::ServerStatus;

    use super::*;
    use crate::assignment::plan::tests::server;
    use crate::catalog::tests::MemoryStore;

    /// Region servers that answer every call with 200 unless told to fail
    /// calls whose path contains a given text; they record every call.
    #[derive(Default)]
    pub(crate) struct FakeServers {
        pub(crate) calls: Mutex<Vec<String>>,
        pub(crate) failing: Mutex<Vec<String>>,
        pub(crate) statuses: Mutex<HashMap<String, ServerStatus>>,
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
            if self.failing.lock().expect("failing").iter().any(|f| line.contains(f.as_str())) {
                return Err(format!("{line}: refused"));
            }
            Ok("done".into())
        }

        fn status(&self, server: &ServerInfo, _: Duration) -> Result<ServerStatus, String> {
            self.statuses.lock().expect("statuses").get(&server.name).cloned().ok_or_else(|| "unreadable".into())
        }
    }

    fn catalog() -> (MasterCatalog, Arc<MemoryStore>) {
        let store = Arc::new(MemoryStore::default());
        (MasterCatalog::load(store.clone()).expect("load"), store)
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
        assert_eq!(fake.calls(), ["a /admin/assign?region=01"]);
        assert!(done.events[0].starts_with("assigned region 01 of table t to a"), "{:?}", done.events);
        // ZooKeeper cannot be asked: nothing is fenced and nothing assigned.
        let fake = FakeServers::default();
        let done = execute(&p, &live, &fake, &mut cat, &|_| None);
        assert!(done.events[0].contains("assignment waits"), "{:?}", done.events);
        assert!(fake.calls().is_empty());
        // Gone: recovered, then assigned.
        let fake = FakeServers::default();
        execute(&p, &live, &fake, &mut cat, &|_| Some(false));
        assert_eq!(fake.calls(), ["a /admin/recover?server=b", "a /admin/assign?region=01"]);
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
        assert!(done.events.iter().any(|e| e.contains("not assigned")), "{:?}", done.events);
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
        assert!(done.events[1].contains("failed"), "{:?}", done.events);
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
        assert_eq!(cat.get("02").and_then(|l| l.server.as_deref()), Some("b"));
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
