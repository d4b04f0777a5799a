//! The active master's assignment pass: recover dead servers' WALs, then
//! give every region no live server holds to the live server holding the
//! fewest (HBase's `ServerCrashProcedure` and `AssignmentManager`, reduced
//! to what the region servers report).
//!
//! The master does not poll: each region server reports the regions it
//! holds and what it saw change (`reports.rs`, HBase's
//! `RegionServerReport`), and the master keeps that view. The regions no
//! server holds are known from the catalog and from the servers' reports
//! of regions that appeared (`catalog.rs`, HBase's `hbase:meta`). A pass
//! runs on that view only when something changed (a report, the
//! membership, an operator call, the balancer's period, or an earlier pass
//! that left work in transition); an idle cluster runs none, and a pass
//! reads neither ZooKeeper nor the file system, except to ask ZooKeeper
//! again before fencing a dead server's WAL.
//!
//! A pass reads the regions that changed since the last one or that the
//! last one left unsettled ([`scoped_pass`]: the report book names them,
//! `ReportBook::take_changes`), so it costs what changed; it reads every
//! region ([`pass`]) only after the master became active, after a
//! membership change or a table's enable, with a server's report missing,
//! and when the balancer runs.
//!
//! A pass, on the view as per-server status documents:
//! 1. **Recovery first.** A WAL directory whose server is not registered is
//!    a dead server's (a server registers before its store creates the
//!    directory: `membership.rs`; ZooKeeper is asked again before fencing).
//!    The WAL directories are listed by one live server when the master
//!    becomes active and after each server leaves (`wal_owners`). One live
//!    server fences and splits it (`POST /admin/recover?server=`). Until
//!    every such directory is recovered, nothing is assigned: a region
//!    opened before its edits are split would miss acknowledged writes.
//! 2. **Then assignment.** A region of an enabled table that no live server
//!    reports holding (in a table an earlier pass saw: [`PassMemory`]) goes
//!    to the serving server with the fewest open regions, unless an
//!    operator closed it (CLOSED in the catalog: `operator.rs`). The
//!    regions going to one server go in batches
//!    (`POST /admin/assign_batch?regions=`), to several servers at once
//!    (`executor.rs`).
//! 3. **Then balance**, when the master asks for it (every balancer
//!    period) and nothing is in transition or waiting: regions move from
//!    the most loaded servers to the least (`balancer.rs`), each closed on
//!    its server (`POST /admin/unassign?region=`) and opened on the other.
//!
//! How it is built: [`plan::plan`] decides — a pure function of the view,
//! unit-tested without a server — and [`executor::execute`] carries the
//! plan out (catalog writes and calls, intent before action).
//!
//! A full pass runs only when every serving server has reported recently:
//! a server whose reports stopped may hold regions the view does not list.
//! Without it, the pass still recovers dead servers: it reassigns only the
//! regions the catalog puts on a server that has left the membership, which
//! no live server can hold (the catalog's invariant), and balances nothing.
//! Each full pass first reconciles the catalog with what the servers
//! report (`reconcile`). A region a paused server still holds is not
//! touched until its session expires and it leaves the membership; it then
//! stops serving (its gate closes when its lease runs out) before its WAL
//! directory is fenced.
//!
//! Thread safety: a pass runs on the master's poller thread only.

pub mod executor;
pub mod plan;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use http_api::{RegionServerCall, ServerStatus};

pub use self::plan::{Action, ClusterView, InTransition, Plan};
use crate::catalog::MasterCatalog;
use crate::membership::ServerInfo;

/// How long a server may take to split a dead server's WAL, or to open a
/// region (replaying its recovered edits).
pub(crate) const SLOW_CALL: Duration = Duration::from_secs(120);

/// What a pass did: lines for the master's event list, and the regions in
/// transition it saw (`None` when it could not look: a status missing).
#[derive(Debug, Default)]
pub struct PassOutcome {
    pub events: Vec<String>,
    pub in_transition: Option<Vec<InTransition>>,
    /// The balancer ran (it was due, and nothing was in transition).
    pub balanced: bool,
    /// Dead servers whose WAL was recovered.
    pub recovered: Vec<String>,
    /// Regions the pass opened or closed, for the master's view.
    pub noted: Vec<executor::Noted>,
    /// The pass acted, or saw something in transition, or could not see
    /// everything: another pass should follow soon even if no report
    /// changes anything (an OPENING intent's grace runs out, a failed
    /// call is retried).
    pub busy: bool,
}

/// What the master remembers from one pass to the next.
#[derive(Debug, Default)]
pub struct PassMemory {
    /// Tables some pass has seen (the catalog's tables count as seen). A
    /// table first seen in this pass may be in the middle of its creation:
    /// its creator commits the descriptor (which the other servers' refresh
    /// finds) a moment before it lists the new regions as its own, so its
    /// regions are not assigned until a later pass sees them unheld again.
    known_tables: BTreeSet<String>,
}

/// Whether region server `name` is registered in ZooKeeper now (`None`: it
/// could not be asked).
pub type Registered<'a> = &'a dyn Fn(&str) -> Option<bool>;

/// How the master reaches region servers: their admin calls. HTTP in the
/// master ([`HttpRegionServers`]); a recording fake in tests. Shared by the
/// threads of a batched assignment.
pub trait RegionServers: Sync {
    /// Makes `call` on `server`; the answer's text, or why it failed.
    fn call(&self, server: &ServerInfo, call: &RegionServerCall, timeout: Duration) -> Result<String, String>;
}

/// Region servers over their HTTP ports (`server_load::request`).
pub struct HttpRegionServers;

impl RegionServers for HttpRegionServers {
    fn call(&self, server: &ServerInfo, call: &RegionServerCall, timeout: Duration) -> Result<String, String> {
        crate::server_load::request(&server.http, "POST", &call.path(), timeout)
    }
}

/// One assignment pass through `servers` ([`HttpRegionServers`] in the
/// master); see the module doc. `statuses`: the servers' regions as their
/// reports say (`reports.rs`); `balance`: the balancer is due (the outcome
/// says whether it ran).
pub fn pass(
    servers: &dyn RegionServers,
    live: &[ServerInfo],
    statuses: &HashMap<String, ServerStatus>,
    memory: &mut PassMemory,
    catalog: &mut MasterCatalog,
    registered: Registered<'_>,
    balance: bool,
) -> PassOutcome {
    run(servers, live, statuses, memory, catalog, registered, balance, None)
}

/// What a scoped pass reads besides the statuses of its regions.
pub struct Scope<'a> {
    /// The regions the statuses list: the ones that changed since the last
    /// pass or are not settled.
    pub regions: &'a std::collections::BTreeSet<String>,
    /// Each server's open regions, as it reported them.
    pub open_counts: &'a std::collections::BTreeMap<String, usize>,
    /// Whether a table still has a known region (a dropped table is
    /// forgotten, so a new one of its name waits a pass as any new table).
    pub table_exists: &'a dyn Fn(&str) -> bool,
}

/// A pass over the regions of `scope` only: it costs what changed, not
/// every region. The balancer does not run in it (it reads every server's
/// regions).
pub fn scoped_pass(
    servers: &dyn RegionServers,
    live: &[ServerInfo],
    statuses: &HashMap<String, ServerStatus>,
    memory: &mut PassMemory,
    catalog: &mut MasterCatalog,
    registered: Registered<'_>,
    scope: &Scope<'_>,
) -> PassOutcome {
    memory.known_tables.retain(|t| (scope.table_exists)(t));
    run(servers, live, statuses, memory, catalog, registered, false, Some(scope))
}

#[expect(clippy::too_many_arguments, reason = "the two passes' shared body; each caller names its own")]
fn run(
    servers: &dyn RegionServers,
    live: &[ServerInfo],
    statuses: &HashMap<String, ServerStatus>,
    memory: &mut PassMemory,
    catalog: &mut MasterCatalog,
    registered: Registered<'_>,
    balance: bool,
    scope: Option<&Scope<'_>>,
) -> PassOutcome {
    // A scoped pass reads only its regions' entries; a full one all of
    // them (under the catalog's read lock, released before the executor
    // writes).
    let scoped: Option<std::collections::BTreeMap<String, http_api::CatalogEntry>> =
        scope.map(|s| s.regions.iter().filter_map(|id| catalog.get(id).map(|e| (id.clone(), e))).collect());
    let plan = {
        let all;
        let entries = match &scoped {
            Some(e) => e,
            None => {
                all = catalog.entries();
                &*all
            }
        };
        plan::plan(&ClusterView {
            live,
            statuses,
            catalog: entries,
            known_tables: &memory.known_tables,
            now_ms: crate::catalog::now_ms(),
            balance,
            scope: scope.map(|s| s.regions),
            open_counts: scope.map(|s| s.open_counts),
        })
    };
    memory.known_tables = plan.known_tables.clone();
    let busy = !plan.actions.is_empty() || plan.in_transition.as_ref().is_none_or(|t| !t.is_empty());
    let done = executor::execute(&plan, live, servers, catalog, registered);
    let mut events = done.events;
    for (region, a, b) in &plan.open_twice {
        tracing::error!(region = %region, first = %a, second = %b, "a region is OPEN on two servers");
        events.push(format!(
            "region {region} is OPEN on two servers, {a} and {b}: writes to one are not read on the other; \
             unassign it and assign it again"
        ));
    }
    PassOutcome {
        events,
        in_transition: plan.in_transition,
        balanced: done.balanced,
        recovered: done.recovered,
        noted: done.noted,
        busy,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http_api::RegionState;

    use super::executor::tests::FakeServers;
    use super::plan::tests::{server, status};
    use super::*;
    use crate::catalog::tests::MemoryStore;

    #[test]
    fn a_pass_acts_on_what_the_reports_say_and_asks_no_server_for_its_status() {
        let fake = FakeServers::default();
        // The reports: a lists region 01 of table t (which the catalog
        // knows) unheld.
        let statuses = HashMap::from([("a".to_string(), status(&["a"], &[("01", RegionState::Offline)]))]);
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store, 1).expect("load");
        catalog.record("00", "t", Some("a"), RegionState::Open).expect("record");
        let outcome =
            pass(&fake, &[server("a")], &statuses, &mut PassMemory::default(), &mut catalog, &|_| Some(true), false);
        assert_eq!(fake.calls(), ["a /admin/assign_batch?regions=01"], "{:?}", outcome.events);
        assert_eq!(catalog.get("01").map(|l| l.state), Some(RegionState::Open));
        assert!(catalog.get("00").is_none(), "a region no report lists any more is forgotten");
        assert!(outcome.busy, "it acted: another pass follows");
        let again = pass(
            &fake,
            &[server("a")],
            &HashMap::from([("a".to_string(), status(&["a"], &[("01", RegionState::Open)]))]),
            &mut PassMemory::default(),
            &mut catalog,
            &|_| Some(true),
            false,
        );
        assert!(!again.busy, "{:?}", again.events);
    }

    #[test]
    fn a_scoped_pass_assigns_its_lost_region_and_leaves_every_other_entry_alone() {
        let fake = FakeServers::default();
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store, 1).expect("load");
        for i in 0..100 {
            let server = if i % 2 == 0 { "a" } else { "b" };
            catalog.record(&format!("{i:02}"), "t", Some(server), RegionState::Open).expect("record");
        }
        // Region 07 (b's) is lost: the scope is it alone; the statuses list
        // only it, unheld, and b holds 49 regions, a 50.
        let statuses = HashMap::from([
            ("a".to_string(), status(&[], &[("07", RegionState::Offline)])),
            ("b".to_string(), status(&[], &[])),
        ]);
        let regions = std::collections::BTreeSet::from(["07".to_string()]);
        let counts = std::collections::BTreeMap::from([("a".to_string(), 50), ("b".to_string(), 49)]);
        let table_exists = |t: &str| t == "t";
        let scope = Scope { regions: &regions, open_counts: &counts, table_exists: &table_exists };
        let mut memory = PassMemory { known_tables: ["t".to_string()].into() };
        let outcome = scoped_pass(
            &fake,
            &[server("a"), server("b")],
            &statuses,
            &mut memory,
            &mut catalog,
            &|_| Some(true),
            &scope,
        );
        assert_eq!(fake.calls(), ["b /admin/assign_batch?regions=07"], "{:?}", outcome.events);
        assert_eq!(catalog.entries().len(), 100, "no entry outside the scope is forgotten");
        assert_eq!(catalog.get("08").and_then(|e| e.server), Some("a".to_string()));
        assert!(memory.known_tables.contains("t"));
    }
}
