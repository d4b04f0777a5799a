//! The assignment pass's decisions: a pure function from what the master
//! sees ([`ClusterView`]: the membership, the servers' statuses, the
//! catalog) to what it should do ([`Plan`]: a list of [`Action`]s, in
//! order). No I/O and no clock of its own: the executor (`executor.rs`)
//! carries the actions out, and the unit tests below check every rule
//! without a server. (The balancer's `plan` is the model: `balancer.rs`.)
//!
//! The rules, in the order of the actions:
//! 1. **Reconcile** the catalog with what the servers report (`Record`,
//!    `Forget`; see `catalog.rs`).
//! 2. **Recover** every WAL directory whose server is not a member
//!    (`Recover`). The executor asks ZooKeeper again before each, and
//!    assigns nothing after one that fails.
//! 3. **Assign** every region of an enabled table that no live server
//!    holds, that an operator did not close, that is not on its way to a
//!    live server (an OPENING intent younger than [`OPENING_GRACE`]), and
//!    whose table an earlier pass or the catalog has seen (`Assign`), to
//!    the server with the fewest open regions. Without every serving
//!    server's status, only what the catalog puts on a dead server.
//! 4. **Balance** (`Move`), when due, every status was read, nothing is in
//!    transition and nothing was to be recovered or assigned.
//!
//! Thread safety: pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use http_api::{CatalogEntry, RegionState, ServerStatus};
use serde::Serialize;

use crate::membership::ServerInfo;

/// How long a region the catalog records OPENING on a live server that does
/// not list it yet counts as on its way there (the assign call may still be
/// in flight, sent by this master or by one that died meanwhile), before it
/// is taken as unassigned. A server lists a region it is opening as
/// OPENING, so this covers only a call not yet received, or one that failed.
pub const OPENING_GRACE: Duration = Duration::from_secs(10);

/// Regions one balancer run moves at most.
pub const MOVES_PER_RUN: usize = 32;

/// What the master sees when it plans a pass.
#[derive(Debug, Clone, Copy)]
pub struct ClusterView<'a> {
    /// The live members (ZooKeeper's snapshot), serving or starting.
    pub live: &'a [ServerInfo],
    /// The status of each serving member that could be read, by name.
    pub statuses: &'a HashMap<String, ServerStatus>,
    /// The catalog's entries, by region.
    pub catalog: &'a BTreeMap<String, CatalogEntry>,
    /// Tables an earlier pass saw (see `PassMemory`).
    pub known_tables: &'a BTreeSet<String>,
    /// Now, in ms since the epoch (the catalog's clock).
    pub now_ms: u64,
    /// The balancer is due.
    pub balance: bool,
    /// A scoped pass: `statuses` list only these regions (the ones that
    /// changed or are not settled), so only they are reconciled, assigned
    /// or forgotten; `None`: the statuses list every region.
    pub scope: Option<&'a BTreeSet<String>>,
    /// Each server's open regions as it reported them, for the least
    /// loaded server in a scoped pass (its statuses do not list them all).
    pub open_counts: Option<&'a BTreeMap<String, usize>>,
}

/// One step of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Record `region` in the catalog as the servers report it.
    Record { region: String, table: String, server: Option<String>, state: RegionState },
    /// Remove the entry of a region no server lists (a dropped table, a
    /// split or merged parent).
    Forget { region: String },
    /// Have server `by` fence and split the WAL of `dead` (which the
    /// catalog had `held` regions on).
    Recover { dead: String, by: String, held: usize },
    /// Record `region` OPENING on `to`, have `to` open it, record it OPEN.
    Assign { region: String, table: String, to: String },
    /// Close `region` on `from` (recorded CLOSING first) and open it on `to`.
    Move { region: String, table: String, from: String, to: String },
}

/// A region not simply open on one server, as the master's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InTransition {
    pub region: String,
    pub table: String,
    /// OPENING, CLOSING, SPLITTING, MERGING where a server reports it;
    /// OFFLINE where no live server holds it (HBase's word for a region in
    /// transition that is unassigned).
    pub state: RegionState,
    /// The server reporting the state, if one does.
    pub server: Option<String>,
}

/// What a pass should do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// The regions in transition (`None`: not every serving server's status
    /// was read, so what is in transition is not known).
    pub in_transition: Option<Vec<InTransition>>,
    /// The balancer was due and may run (its moves, if any, end `actions`).
    pub balancing: bool,
    /// What the next pass takes as `known_tables`.
    pub known_tables: BTreeSet<String>,
    /// Regions two servers report OPEN at once (region, one server, the
    /// other): a broken invariant no pass repairs by itself, said loudly.
    pub open_twice: Vec<(String, String, String)>,
}

/// A region as one server's status lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) table: String,
    pub(crate) enabled: bool,
    pub(crate) state: RegionState,
}

/// What the statuses of the readable servers say, gathered once.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Open regions per server (every readable server, even with none).
    pub(crate) open: BTreeMap<String, usize>,
    /// Open regions of enabled tables: (server, region, table), what the
    /// balancer may move.
    movable: Vec<(String, String, String)>,
    /// Each region some server holds (in any state but OFFLINE): the
    /// server and its state, OPEN preferred.
    pub(crate) holders: BTreeMap<String, (String, RegionState)>,
    /// Every region listed, by id.
    pub(crate) all: BTreeMap<String, Listed>,
    wal_owners: BTreeSet<String>,
    /// Tables some server lists as disabled.
    pub(crate) disabled: BTreeSet<String>,
    /// Regions some server reports in a transition (OPENING, CLOSING, ...).
    transit: Vec<InTransition>,
    /// Regions two servers both report OPEN: (region, first, second).
    open_twice: Vec<(String, String, String)>,
}

impl Listing {
    /// What `servers`' statuses list (each must be in `statuses`).
    pub(crate) fn of(servers: &[&ServerInfo], statuses: &HashMap<String, ServerStatus>) -> Listing {
        let mut l = Listing { open: servers.iter().map(|s| (s.name.clone(), 0)).collect(), ..Listing::default() };
        for s in servers {
            let Some(status) = statuses.get(&s.name) else { continue };
            for (table, region) in status.regions() {
                let listed = Listed { table: table.name.clone(), enabled: table.enabled, state: region.state };
                let id = &region.id;
                if listed.state != RegionState::Offline {
                    if let Some((first, RegionState::Open)) = l.holders.get(id)
                        && listed.state == RegionState::Open
                        && *first != s.name
                    {
                        l.open_twice.push((id.clone(), first.clone(), s.name.clone()));
                    }
                    if l.holders.get(id).is_none_or(|(_, state)| *state != RegionState::Open) {
                        l.holders.insert(id.clone(), (s.name.clone(), listed.state));
                    }
                    if listed.state == RegionState::Open {
                        *l.open.entry(s.name.clone()).or_default() += 1;
                        if listed.enabled {
                            l.movable.push((s.name.clone(), id.clone(), listed.table.clone()));
                        }
                    } else {
                        l.transit.push(InTransition {
                            region: id.clone(),
                            table: listed.table.clone(),
                            state: listed.state,
                            server: Some(s.name.clone()),
                        });
                    }
                }
                if !listed.enabled {
                    // Disabled on one server: a DDL in progress, or done
                    // there and not yet taken by the others. Nothing of it
                    // is assigned or moved.
                    l.disabled.insert(listed.table.clone());
                }
                l.all.entry(id.clone()).or_insert(listed);
            }
            l.wal_owners.extend(status.server.wal_owners.iter().flatten().cloned());
        }
        l
    }
}

/// Whether the catalog has `id` on its way to a live server (see
/// [`OPENING_GRACE`]).
pub(crate) fn pending_open(
    catalog: &BTreeMap<String, CatalogEntry>,
    id: &str,
    is_live: impl Fn(&str) -> bool,
    now_ms: u64,
) -> bool {
    catalog.get(id).is_some_and(|l| {
        let age = Duration::from_millis(now_ms.saturating_sub(l.at_ms));
        l.state == RegionState::Opening && l.server.as_deref().is_some_and(&is_live) && age < OPENING_GRACE
    })
}

/// The pass for `view`; see the module doc.
pub fn plan(view: &ClusterView<'_>) -> Plan {
    let serving: Vec<&ServerInfo> = view.live.iter().filter(|s| s.is_serving()).collect();
    let readable: Vec<&ServerInfo> = serving.iter().filter(|s| view.statuses.contains_key(&s.name)).copied().collect();
    if readable.is_empty() {
        return Plan { known_tables: view.known_tables.clone(), ..Plan::default() };
    }
    let complete = readable.len() == serving.len();
    let mut listing = Listing::of(&readable, view.statuses);
    if let Some(counts) = view.open_counts {
        for (server, n) in listing.open.iter_mut() {
            *n = counts.get(server).copied().unwrap_or(*n);
        }
    }
    let is_live = |name: &str| view.live.iter().any(|s| s.name == name);

    // 1. Reconcile, on a copy of the catalog that the later rules read.
    let mut catalog = view.catalog.clone();
    let mut actions = reconcile(&mut catalog, &listing, &is_live, view.now_ms, complete, view.scope);

    let on_dead_server = |id: &str| catalog.get(id).and_then(|l| l.server.as_deref()).is_some_and(|s| !is_live(s));
    let assignable = |id: &str, l: &Listed| {
        l.enabled
            && !listing.disabled.contains(&l.table)
            && !listing.holders.contains_key(id)
            && catalog.get(id).is_none_or(|c| c.state != RegionState::Closed)
            && !pending_open(&catalog, id, is_live, view.now_ms)
            // Without every status, only a region the catalog puts on a
            // dead server is known to be on no live one.
            && (complete || on_dead_server(id))
    };
    let mut transit = listing.transit.clone();
    for (id, listed) in listing.all.iter().filter(|(id, l)| assignable(id, l)) {
        transit.push(InTransition {
            region: id.clone(),
            table: listed.table.clone(),
            state: RegionState::Offline,
            server: None,
        });
    }

    // 2. Recovery of every dead server's WAL directory.
    let mut open = listing.open.clone();
    let least_loaded = |open: &BTreeMap<String, usize>| {
        open.iter().min_by_key(|(name, n)| (**n, name.as_str())).map(|(name, _)| name.clone()).unwrap_or_default()
    };
    for dead in listing.wal_owners.iter().filter(|w| !is_live(w)) {
        let held = catalog.values().filter(|l| l.server.as_deref() == Some(dead.as_str())).count();
        actions.push(Action::Recover { dead: dead.clone(), by: least_loaded(&open), held });
    }

    // 3. Assignment of what no live server holds, in tables an earlier pass
    // or the catalog (as it was before this pass) has seen.
    let mut known = view.known_tables.clone();
    if view.scope.is_none() {
        known.extend(view.catalog.values().map(|l| l.table.clone()));
    }
    for (id, listed) in listing.all.iter().filter(|(id, l)| assignable(id, l) && known.contains(&l.table)) {
        let to = least_loaded(&open);
        *open.entry(to.clone()).or_default() += 1;
        actions.push(Action::Assign { region: id.clone(), table: listed.table.clone(), to });
    }

    // 4. Balance, when due and nothing moves otherwise.
    let busy = actions.iter().any(|a| matches!(a, Action::Recover { .. } | Action::Assign { .. }));
    let balancing = view.balance && complete && transit.is_empty() && !busy;
    if balancing {
        // Every open region counts toward its server's load; only regions
        // of tables no server lists disabled (no DDL under way) move.
        let mut open_regions: BTreeMap<String, Vec<String>> =
            readable.iter().map(|s| (s.name.clone(), Vec::new())).collect();
        for (server, region, table) in &listing.movable {
            if !listing.disabled.contains(table) {
                open_regions.entry(server.clone()).or_default().push(region.clone());
            }
        }
        for m in crate::balancer::plan(&open_regions, MOVES_PER_RUN) {
            let table = listing.all.get(&m.region).map_or(String::new(), |l| l.table.clone());
            actions.push(Action::Move { region: m.region, table, from: m.from, to: m.to });
        }
    }
    Plan {
        actions,
        open_twice: listing.open_twice.clone(),
        in_transition: complete.then_some(transit),
        balancing,
        // A scoped pass sees only some tables' regions: it keeps what the
        // pass before knew (the caller forgets tables with no region left).
        known_tables: match view.scope {
            None => listing.all.values().map(|l| l.table.clone()).collect(),
            Some(_) => known.into_iter().chain(listing.all.values().map(|l| l.table.clone())).collect(),
        },
    }
}

/// The records that bring `catalog` in step with what the servers report,
/// applied to it. `complete`: every serving server's status was read, so a
/// region no status shows held is held by no live server.
fn reconcile(
    catalog: &mut BTreeMap<String, CatalogEntry>,
    listing: &Listing,
    is_live: &impl Fn(&str) -> bool,
    now_ms: u64,
    complete: bool,
    scope: Option<&BTreeSet<String>>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut record =
        |catalog: &mut BTreeMap<String, CatalogEntry>, id: &str, table: &str, server: Option<&str>, state| {
            let same =
                catalog.get(id).is_some_and(|l| l.table == table && l.server.as_deref() == server && l.state == state);
            if !same {
                let server = server.map(str::to_string);
                catalog.insert(
                    id.to_string(),
                    CatalogEntry { table: table.into(), server: server.clone(), state, at_ms: now_ms },
                );
                actions.push(Action::Record { region: id.to_string(), table: table.into(), server, state });
            }
        };
    for (id, (server, state)) in &listing.holders {
        record(catalog, id, &listing.all[id].table, Some(server), *state);
    }
    if complete {
        for (id, listed) in listing.all.iter().filter(|(id, _)| !listing.holders.contains_key(*id)) {
            // Kept on a dead server until its recovery reassigns it; kept
            // OPENING while its assign call may still arrive; kept CLOSED.
            let on_dead = catalog.get(id).and_then(|l| l.server.as_deref()).is_some_and(|s| !is_live(s));
            let closed = catalog.get(id).is_some_and(|l| l.state == RegionState::Closed);
            if !on_dead && !closed && !pending_open(catalog, id, is_live, now_ms) {
                record(catalog, id, &listed.table, None, RegionState::Offline);
            }
        }
        let gone: Vec<String> = match scope {
            None => catalog.keys().filter(|id| !listing.all.contains_key(*id)).cloned().collect(),
            // Only a region of the scope can have gone since the last pass.
            Some(ids) => {
                ids.iter().filter(|id| catalog.contains_key(*id) && !listing.all.contains_key(*id)).cloned().collect()
            }
        };
        for id in gone {
            catalog.remove(&id);
            actions.push(Action::Forget { region: id });
        }
    }
    actions
}

#[cfg(test)]
pub(crate) mod tests {
    use http_api::{RegionStatus, TableStatus};

    use super::*;

    pub(crate) fn server(name: &str) -> ServerInfo {
        let mut s = ServerInfo::new("127.0.0.1", 1, format!("{name}:1"), 1);
        s.name = name.into();
        s
    }

    /// A status listing table "t" with `regions` (id, state) and the WAL
    /// directories `wal_owners`.
    pub(crate) fn status(wal_owners: &[&str], regions: &[(&str, RegionState)]) -> ServerStatus {
        let mut s = ServerStatus {
            tables: vec![TableStatus {
                name: "t".into(),
                enabled: true,
                regions: regions.iter().map(|(id, state)| RegionStatus::listed(id, *state)).collect(),
            }],
            ..ServerStatus::default()
        };
        s.server.wal_owners = Some(wal_owners.iter().map(|w| w.to_string()).collect());
        s
    }

    pub(crate) fn entry(table: &str, server: Option<&str>, state: RegionState, at_ms: u64) -> CatalogEntry {
        CatalogEntry { table: table.into(), server: server.map(str::to_string), state, at_ms }
    }

    const NOW: u64 = 1_000_000_000;

    struct Seen {
        live: Vec<ServerInfo>,
        statuses: HashMap<String, ServerStatus>,
        catalog: BTreeMap<String, CatalogEntry>,
        known: BTreeSet<String>,
        balance: bool,
    }

    impl Seen {
        fn new(live: &[&str], statuses: &[(&str, ServerStatus)]) -> Seen {
            Seen {
                live: live.iter().map(|n| server(n)).collect(),
                statuses: statuses.iter().map(|(n, s)| (n.to_string(), s.clone())).collect(),
                catalog: BTreeMap::new(),
                known: BTreeSet::from(["t".to_string()]),
                balance: false,
            }
        }

        fn plan(&self) -> Plan {
            plan(&ClusterView {
                scope: None,
                open_counts: None,
                live: &self.live,
                statuses: &self.statuses,
                catalog: &self.catalog,
                known_tables: &self.known,
                now_ms: NOW,
                balance: self.balance,
            })
        }
    }

    fn assigns(plan: &Plan) -> Vec<(String, String)> {
        let assign = |a: &Action| match a {
            Action::Assign { region, to, .. } => Some((region.clone(), to.clone())),
            _ => None,
        };
        plan.actions.iter().filter_map(assign).collect()
    }

    fn pair(region: &str, to: &str) -> (String, String) {
        (region.to_string(), to.to_string())
    }

    #[test]
    fn a_region_an_operator_closed_is_not_assigned_and_stays_closed() {
        let offline = [("01", RegionState::Offline), ("02", RegionState::Offline)];
        let mut seen = Seen::new(&["a"], &[("a", status(&["a"], &offline))]);
        seen.catalog.insert("01".into(), entry("t", Some("a"), RegionState::Closed, NOW));
        seen.catalog.insert("02".into(), entry("t", Some("a"), RegionState::Open, NOW));
        let plan = seen.plan();
        assert_eq!(assigns(&plan), [pair("02", "a")]);
        assert!(
            !plan.actions.iter().any(|a| matches!(a, Action::Record { region, .. } if region == "01")),
            "the closed region's entry is kept: {:?}",
            plan.actions
        );
    }

    #[test]
    fn a_dead_servers_wal_is_recovered_before_anything_is_assigned() {
        let mut seen = Seen::new(&["a", "b"], &[("a", status(&["a", "b", "d"], &[("01", RegionState::Offline)]))]);
        seen.statuses.insert("b".into(), status(&[], &[("02", RegionState::Open)]));
        let plan = seen.plan();
        let recover = plan.actions.iter().position(|a| matches!(a, Action::Recover { .. }));
        let assign = plan.actions.iter().position(|a| matches!(a, Action::Assign { .. }));
        assert!(recover.is_some_and(|r| assign.is_some_and(|a| r < a)), "{:?}", plan.actions);
        // Only d has no member: a and b are live. By the least loaded (a
        // holds nothing), and the region goes to a too.
        assert_eq!(
            plan.actions.iter().filter(|a| matches!(a, Action::Recover { .. })).collect::<Vec<_>>(),
            [&Action::Recover { dead: "d".into(), by: "a".into(), held: 0 }]
        );
        assert_eq!(assigns(&plan), [pair("01", "a")]);
    }

    #[test]
    fn a_region_two_servers_report_open_is_said() {
        let mut seen = Seen::new(&["a", "b"], &[("a", status(&["a", "b"], &[("01", RegionState::Open)]))]);
        seen.statuses.insert("b".into(), status(&[], &[("01", RegionState::Open), ("02", RegionState::Open)]));
        let plan = seen.plan();
        assert_eq!(plan.open_twice, [("01".to_string(), "a".to_string(), "b".to_string())]);
    }

    #[test]
    fn a_table_first_seen_in_a_pass_is_assigned_from_the_next_one() {
        let mut seen = Seen::new(&["a"], &[("a", status(&["a"], &[("02", RegionState::Offline)]))]);
        seen.known.clear();
        let first = seen.plan();
        assert!(assigns(&first).is_empty(), "a table seen for the first time may be mid-creation: {first:?}");
        assert_eq!(first.in_transition.as_ref().map(Vec::len), Some(1), "listed as unassigned meanwhile");
        seen.known = first.known_tables;
        assert_eq!(assigns(&seen.plan()), [pair("02", "a")]);
    }

    #[test]
    fn nothing_is_planned_or_known_without_a_serving_servers_status() {
        let mut seen = Seen::new(&["a"], &[]);
        seen.live.push(ServerInfo::starting("b".into(), 2));
        let plan = seen.plan();
        assert!(plan.actions.is_empty());
        assert_eq!(plan.in_transition, None);
        assert_eq!(plan.known_tables, seen.known, "memory unchanged");
    }

    #[test]
    fn a_dead_servers_regions_are_reassigned_from_the_catalog_while_another_status_is_missing() {
        let offline = [("01", RegionState::Offline), ("02", RegionState::Offline), ("03", RegionState::Offline)];
        // x is live and serving, but its status could not be read.
        let mut seen = Seen::new(&["a", "x"], &[("a", status(&["a", "d", "x"], &offline))]);
        seen.catalog.insert("01".into(), entry("t", Some("d"), RegionState::Open, NOW));
        seen.catalog.insert("02".into(), entry("t", Some("x"), RegionState::Open, NOW));
        // 03: no entry (made by a server since the last pass: x may hold it).
        seen.balance = true;
        let plan = seen.plan();
        assert_eq!(plan.actions[0], Action::Recover { dead: "d".into(), by: "a".into(), held: 1 });
        assert_eq!(assigns(&plan), [pair("01", "a")]);
        assert_eq!(plan.actions.len(), 2, "nothing recorded of what no status shows held: {:?}", plan.actions);
        assert!(!plan.balancing, "no balancing without every status");
        assert_eq!(plan.in_transition, None);
    }

    #[test]
    fn a_complete_pass_brings_the_catalog_in_step_with_the_servers() {
        let mut doc = status(&["a"], &[("01", RegionState::Open), ("02", RegionState::Offline)]);
        doc.tables.push(TableStatus {
            name: "u".into(),
            enabled: false,
            regions: vec![RegionStatus::listed("03", RegionState::Offline)],
        });
        let mut seen = Seen::new(&["a"], &[("a", doc)]);
        seen.catalog.insert("02".into(), entry("t", Some("a"), RegionState::Closing, NOW));
        seen.catalog.insert("03".into(), entry("u", Some("d"), RegionState::Open, NOW));
        seen.catalog.insert("09".into(), entry("gone", Some("a"), RegionState::Open, NOW));
        let plan = seen.plan();
        let record = |region: &str, server: Option<&str>, state| Action::Record {
            region: region.into(),
            table: "t".into(),
            server: server.map(str::to_string),
            state,
        };
        assert_eq!(
            plan.actions,
            [
                record("01", Some("a"), RegionState::Open),
                // Closed on live a and not reopened: unassigned, and
                // assigned again at once (its table is in the catalog).
                record("02", None, RegionState::Offline),
                // 03 stays on dead d, for its recovery; 09 no server lists.
                Action::Forget { region: "09".into() },
                Action::Assign { region: "02".into(), table: "t".into(), to: "a".into() },
            ]
        );
    }

    #[test]
    fn a_region_recorded_opening_on_a_live_server_waits_for_its_assign_call() {
        let mut seen = Seen::new(&["a"], &[("a", status(&["a"], &[("01", RegionState::Offline)]))]);
        // Recorded OPENING on a a moment ago (an earlier master's call,
        // say), which a does not list yet: neither reassigned nor OFFLINE.
        seen.catalog.insert("01".into(), entry("t", Some("a"), RegionState::Opening, NOW - 1_000));
        assert_eq!(seen.plan().actions, []);
        // Past the grace, the call is taken as lost: the region is assigned.
        seen.catalog.insert("01".into(), entry("t", Some("a"), RegionState::Opening, NOW - 60_000));
        assert_eq!(assigns(&seen.plan()), [pair("01", "a")]);
    }

    #[test]
    fn the_balancer_moves_only_when_due_and_nothing_is_in_transition() {
        let four: Vec<(String, RegionState)> = (1..=4).map(|i| (format!("0{i}"), RegionState::Open)).collect();
        let four: Vec<(&str, RegionState)> = four.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let mut seen = Seen::new(&["a", "b"], &[("a", status(&["a", "b"], &four)), ("b", status(&[], &[]))]);
        for (id, _) in &four {
            seen.catalog.insert(id.to_string(), entry("t", Some("a"), RegionState::Open, NOW));
        }
        assert!(!seen.plan().balancing, "not due");
        seen.balance = true;
        let plan = seen.plan();
        assert!(plan.balancing);
        let moves: Vec<_> = plan.actions.iter().filter(|a| matches!(a, Action::Move { .. })).collect();
        assert_eq!(moves.len(), 2, "{:?}", plan.actions);
        assert!(moves.iter().all(|m| matches!(m, Action::Move { from, to, .. } if from == "a" && to == "b")));
        // A region closing on b is in transition: nothing moves.
        seen.statuses.insert("b".into(), status(&[], &[("05", RegionState::Closing)]));
        let plan = seen.plan();
        assert!(!plan.balancing && !plan.actions.iter().any(|a| matches!(a, Action::Move { .. })));
        assert_eq!(plan.in_transition.map(|t| t[0].state), Some(RegionState::Closing));
    }
}
