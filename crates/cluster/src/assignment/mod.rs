//! The active master's assignment pass: recover dead servers' WALs, then
//! give every region no live server serves to the live server serving the
//! fewest (HBase's `ServerCrashProcedure` and `AssignmentManager`, reduced
//! to what the region servers report).
//!
//! Every region server lists every region of the shared root in its
//! `/status` (OPEN if it serves it, OFFLINE if not) and the WAL directories
//! on the root (`wal_owners`); the master's durable map of where it put each
//! region is the catalog (`catalog.rs`, HBase's `hbase:meta`). A pass, run
//! on the statuses the master just read:
//! 1. **Recovery first.** A WAL directory whose server is not registered is
//!    a dead server's (a server registers before its store creates the
//!    directory: `membership.rs`; ZooKeeper is asked again before fencing). One live server fences and splits it
//!    (`POST /admin/recover?server=`). Until every such directory is
//!    recovered, nothing is assigned: a region opened before its edits are
//!    split would miss acknowledged writes.
//! 2. **Then assignment.** A region of an enabled table that no live server
//!    reports in any state but OFFLINE (in a table an earlier pass saw:
//!    [`PassMemory`]) goes to the serving server with the
//!    fewest open regions (`POST /admin/assign?region=`), unless an
//!    operator closed it (CLOSED in the catalog: `operator.rs`). Every pass first
//!    has each server list the tables created elsewhere since it started
//!    (`POST /admin/refresh`), so that a table whose creator died is known.
//!
//! 3. **Then balance**, when the master asks for it (every balancer
//!    period) and nothing is in transition or waiting: regions move from
//!    the most loaded servers to the least (`balancer.rs`), each closed on
//!    its server (`POST /admin/unassign?region=`) and opened on the other.
//!
//! How it is built: `pass` reads (each server refreshes its tables and
//! reports again), then [`plan::plan`] decides — a pure function of what
//! was read, unit-tested without a server — and [`executor::execute`]
//! carries the plan out (catalog writes and calls, intent before action).
//!
//! A full pass runs only when every serving server's status was read: a
//! server whose status could not be read may hold regions no status lists.
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

/// How long a pass waits for a server to refresh its tables and report
/// again. Every server is asked in turn before anything is recovered or
/// assigned, so one server paused after its status was read (SIGSTOP, a
/// long GC) must not hold the pass, and with it the recovery of a dead
/// server, for `SLOW_CALL`: past this, the pass gives up and the next one
/// reads the membership again.
const REFRESH_CALL: Duration = Duration::from_secs(10);

/// What a pass did: lines for the master's event list, and the regions in
/// transition it saw (`None` when it could not look: a status missing).
#[derive(Debug, Default)]
pub struct PassOutcome {
    pub events: Vec<String>,
    pub in_transition: Option<Vec<InTransition>>,
    /// The balancer ran (it was due, and nothing was in transition).
    pub balanced: bool,
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

/// How the master reaches region servers: their admin calls and status.
/// HTTP in the master ([`HttpRegionServers`]); a recording fake in tests.
pub trait RegionServers {
    /// Makes `call` on `server`; the answer's text, or why it failed.
    fn call(&self, server: &ServerInfo, call: &RegionServerCall, timeout: Duration) -> Result<String, String>;
    /// Reads `server`'s status.
    fn status(&self, server: &ServerInfo, timeout: Duration) -> Result<ServerStatus, String>;
}

/// Region servers over their HTTP ports (`server_load::request`).
pub struct HttpRegionServers;

impl RegionServers for HttpRegionServers {
    fn call(&self, server: &ServerInfo, call: &RegionServerCall, timeout: Duration) -> Result<String, String> {
        crate::server_load::request(&server.http, "POST", &call.path(), timeout)
    }

    fn status(&self, server: &ServerInfo, timeout: Duration) -> Result<ServerStatus, String> {
        crate::server_load::read_status(&server.http, timeout)
    }
}

/// One assignment pass through `servers` ([`HttpRegionServers`] in the
/// master); see the module doc. `statuses`: those the master just read;
/// `balance`: the balancer is due (the outcome says whether it ran).
pub fn pass(
    servers: &dyn RegionServers,
    live: &[ServerInfo],
    statuses: &HashMap<String, ServerStatus>,
    memory: &mut PassMemory,
    catalog: &mut MasterCatalog,
    registered: Registered<'_>,
    balance: bool,
) -> PassOutcome {
    // Every server learns the tables created elsewhere (another server's
    // createTable), so that their regions are listed when their creator
    // dies, and takes every table's state and regions from the root (a
    // disable, split or merge it was not told of); its status is read
    // again after that, so the pass acts on what it lists now.
    let read_before = |s: &&ServerInfo| s.is_serving() && statuses.contains_key(&s.name);
    let mut statuses = statuses.clone();
    for s in live.iter().filter(read_before) {
        if let Err(e) = servers.call(s, &RegionServerCall::Refresh, REFRESH_CALL) {
            let events = vec![format!("{} could not refresh its tables: {e}; assignment waits", s.name)];
            return PassOutcome { events, ..PassOutcome::default() };
        }
        match servers.status(s, REFRESH_CALL) {
            Ok(status) => statuses.insert(s.name.clone(), status),
            Err(_) => return PassOutcome::default(),
        };
    }
    let plan = plan::plan(&ClusterView {
        live,
        statuses: &statuses,
        catalog: catalog.entries(),
        known_tables: &memory.known_tables,
        now_ms: crate::catalog::now_ms(),
        balance,
    });
    memory.known_tables = plan.known_tables.clone();
    let done = executor::execute(&plan, live, servers, catalog, registered);
    PassOutcome { events: done.events, in_transition: plan.in_transition, balanced: done.balanced }
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
    fn a_pass_acts_on_what_each_server_reports_after_its_refresh() {
        let fake = FakeServers::default();
        // Polled before the refresh: nothing to assign. After it, a lists
        // region 01 of table t (which the catalog knows) unheld.
        let before = HashMap::from([("a".to_string(), status(&["a"], &[]))]);
        fake.statuses.lock().expect("statuses").insert("a".into(), status(&["a"], &[("01", RegionState::Offline)]));
        let store = Arc::new(MemoryStore::default());
        let mut catalog = MasterCatalog::load(store).expect("load");
        catalog.record("00", "t", Some("a"), RegionState::Open).expect("record");
        let outcome =
            pass(&fake, &[server("a")], &before, &mut PassMemory::default(), &mut catalog, &|_| Some(true), false);
        assert_eq!(fake.calls(), ["a /admin/refresh", "a /admin/assign?region=01"], "{:?}", outcome.events);
        assert_eq!(catalog.get("01").map(|l| l.state), Some(RegionState::Open));
        assert!(catalog.get("00").is_none(), "a region no server lists any more is forgotten");
    }

    #[test]
    fn a_server_that_cannot_refresh_holds_the_pass_and_nothing_is_said_of_transitions() {
        let fake = FakeServers::default();
        fake.failing.lock().expect("failing").push("refresh".into());
        let statuses = HashMap::from([("a".to_string(), status(&["a", "d"], &[("01", RegionState::Offline)]))]);
        let mut catalog = MasterCatalog::load(Arc::new(MemoryStore::default())).expect("load");
        let outcome =
            pass(&fake, &[server("a")], &statuses, &mut PassMemory::default(), &mut catalog, &|_| Some(false), true);
        assert_eq!(fake.calls(), ["a /admin/refresh"], "nothing recovered or assigned");
        assert!(outcome.events[0].contains("could not refresh its tables"), "{:?}", outcome.events);
        assert_eq!(outcome.in_transition, None);
        assert!(!outcome.balanced);
    }
}
