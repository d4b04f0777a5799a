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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use crate::catalog::Catalog;
use crate::membership::ServerInfo;
use crate::server_load::request;

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

/// A region as one server's status lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) table: String,
    pub(crate) enabled: bool,
    pub(crate) state: String,
}

/// The regions a status document lists, by id.
pub(crate) fn regions(doc: &serde_json::Value) -> BTreeMap<String, Listed> {
    let mut out = BTreeMap::new();
    for table in doc["tables"].as_array().into_iter().flatten() {
        let name = table["name"].as_str().unwrap_or_default().to_string();
        let enabled = table["enabled"].as_bool().unwrap_or(true);
        for r in table["regions"].as_array().into_iter().flatten() {
            if let Some(id) = r["id"].as_str() {
                let state = r["state"].as_str().unwrap_or_default().to_string();
                out.insert(id.to_string(), Listed { table: name.clone(), enabled, state });
            }
        }
    }
    out
}

/// A region not simply open on one server, as the master's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InTransition {
    pub region: String,
    pub table: String,
    /// OPENING, CLOSING, SPLITTING, MERGING where a server reports it;
    /// UNASSIGNED where no live server holds it.
    pub state: String,
    /// The server reporting the state, if one does.
    pub server: Option<String>,
}

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
    /// table first seen in this pass may be in
    /// the middle of its creation: its creator commits the descriptor (which
    /// the other servers' refresh finds) a moment before it lists the new
    /// regions as its own, so its regions are not assigned until a later
    /// pass sees them unheld again.
    known_tables: BTreeSet<String>,
}

/// Whether region server `name` is registered in ZooKeeper now (`None`: it
/// could not be asked).
pub type Registered<'a> = &'a dyn Fn(&str) -> Option<bool>;

/// How long one balancer run may go on moving regions.
const BALANCER_RUN_LIMIT: Duration = Duration::from_secs(10);

/// Regions one balancer run moves at most.
const MOVES_PER_RUN: usize = 32;

/// How long a region the catalog records OPENING on a live server that does
/// not list it yet counts as on its way there (the assign call may still be
/// in flight, sent by this master or by one that died meanwhile), before it
/// is taken as unassigned. A server lists a region it is opening as
/// OPENING, so this covers only a call not yet received, or one that failed.
const OPENING_GRACE: Duration = Duration::from_secs(10);

/// Whether the catalog has `id` on its way to live server (see
/// [`OPENING_GRACE`]).
fn pending_open(catalog: &Catalog, id: &str, is_live: impl Fn(&str) -> bool) -> bool {
    catalog.get(id).is_some_and(|l| {
        let age = crate::catalog::now_ms().saturating_sub(l.at_ms);
        l.state == "OPENING" && l.server.as_deref().is_some_and(&is_live) && Duration::from_millis(age) < OPENING_GRACE
    })
}

/// One assignment pass; see the module doc. With a serving server's status
/// missing it only reassigns what the catalog puts on dead servers.
/// `balance`: the balancer is due (the outcome says whether it ran).
pub fn pass(
    live: &[ServerInfo],
    docs: &HashMap<String, serde_json::Value>,
    memory: &mut PassMemory,
    catalog: &mut Catalog,
    registered: Registered<'_>,
    balance: bool,
) -> PassOutcome {
    let serving: Vec<&ServerInfo> = live.iter().filter(|s| s.is_serving()).collect();
    let readable: Vec<&ServerInfo> = serving.iter().filter(|s| docs.contains_key(&s.name)).copied().collect();
    if readable.is_empty() {
        return PassOutcome::default();
    }
    let complete = readable.len() == serving.len();
    let mut transit = Vec::new();
    let mut balanced = false;
    let events = assign(
        live,
        &readable,
        complete,
        docs,
        memory,
        catalog,
        registered,
        &mut transit,
        (balance && complete).then_some(&mut balanced),
    );
    PassOutcome { events, in_transition: complete.then_some(transit), balanced }
}

/// What the statuses of the readable servers say, gathered once.
struct Listing {
    /// Open regions per server (every readable server, even with none).
    open: BTreeMap<String, usize>,
    /// Open regions of enabled tables: (server, region, table), what the
    /// balancer may move.
    movable: Vec<(String, String, String)>,
    /// Each region some server holds (in any state but OFFLINE): the
    /// server and its state, OPEN preferred.
    holders: BTreeMap<String, (String, String)>,
    /// Every region listed, by id.
    all: BTreeMap<String, Listed>,
    wal_owners: BTreeSet<String>,
    /// Tables some server lists as disabled.
    disabled: BTreeSet<String>,
}

fn list(
    readable: &[&ServerInfo],
    docs: &HashMap<String, serde_json::Value>,
    transit: &mut Vec<InTransition>,
) -> Listing {
    let mut l = Listing {
        open: readable.iter().map(|s| (s.name.clone(), 0)).collect(),
        movable: Vec::new(),
        holders: BTreeMap::new(),
        all: BTreeMap::new(),
        wal_owners: BTreeSet::new(),
        disabled: BTreeSet::new(),
    };
    for s in readable {
        let doc = &docs[&s.name];
        for (id, listed) in regions(doc) {
            if listed.state != "OFFLINE" {
                let replace = l.holders.get(&id).is_none_or(|(_, state)| state != "OPEN");
                if replace {
                    l.holders.insert(id.clone(), (s.name.clone(), listed.state.clone()));
                }
                if listed.state == "OPEN" {
                    *l.open.entry(s.name.clone()).or_default() += 1;
                    if listed.enabled {
                        l.movable.push((s.name.clone(), id.clone(), listed.table.clone()));
                    }
                } else {
                    transit.push(InTransition {
                        region: id.clone(),
                        table: listed.table.clone(),
                        state: listed.state.clone(),
                        server: Some(s.name.clone()),
                    });
                }
            }
            if !listed.enabled {
                // Disabled on one server: a DDL in progress, or done there
                // and not yet taken by the others. Nothing of it is assigned.
                l.disabled.insert(listed.table.clone());
            }
            l.all.entry(id).or_insert(listed);
        }
        for owner in doc["server"]["wal_owners"].as_array().into_iter().flatten().filter_map(|o| o.as_str()) {
            l.wal_owners.insert(owner.to_string());
        }
    }
    l
}

/// Brings the catalog in step with what the servers report (see
/// `catalog.rs`). `complete`: every serving server's status was read, so a
/// region no status shows held is held by no live server.
fn reconcile(catalog: &mut Catalog, listing: &Listing, live: &[ServerInfo], complete: bool, events: &mut Vec<String>) {
    let mut failed = None;
    for (id, (server, state)) in &listing.holders {
        let table = &listing.all[id].table;
        if let Err(e) = catalog.record(id, table, Some(server), state) {
            failed = Some(e);
        }
    }
    if complete {
        let is_live = |name: &str| live.iter().any(|s| s.name == name);
        for (id, listed) in listing.all.iter().filter(|(id, _)| !listing.holders.contains_key(*id)) {
            // Kept on a dead server until its recovery reassigns it; kept
            // OPENING while its assign call may still arrive.
            let on_dead = catalog.get(id).and_then(|l| l.server.as_deref()).is_some_and(|s| !is_live(s));
            let closed = catalog.get(id).is_some_and(|l| l.state == crate::catalog::CLOSED);
            if !on_dead
                && !closed
                && !pending_open(catalog, id, is_live)
                && let Err(e) = catalog.record(id, &listed.table, None, "OFFLINE")
            {
                failed = Some(e);
            }
        }
        let gone: Vec<String> = catalog.entries().keys().filter(|id| !listing.all.contains_key(*id)).cloned().collect();
        for id in gone {
            if let Err(e) = catalog.remove(&id) {
                failed = Some(e);
            }
        }
    }
    if let Some(e) = failed {
        events.push(format!("could not bring the catalog up to date: {e}"));
    }
}

#[expect(clippy::too_many_arguments, reason = "one pass's inputs, each used by a different step")]
fn assign(
    live: &[ServerInfo],
    readable: &[&ServerInfo],
    complete: bool,
    docs: &HashMap<String, serde_json::Value>,
    memory: &mut PassMemory,
    catalog: &mut Catalog,
    registered: Registered<'_>,
    transit: &mut Vec<InTransition>,
    balance: Option<&mut bool>,
) -> Vec<String> {
    let mut events = Vec::new();
    // Every server learns the tables created elsewhere (another server's
    // createTable), so that their regions are listed when their creator
    // dies, and takes every table's state and regions from the root (a
    // disable, split or merge it was not told of); its status is read
    // again after that, so the pass acts on what it lists now.
    let mut docs = docs.clone();
    for s in readable {
        match request(&s.http, "POST", "/admin/refresh", REFRESH_CALL) {
            Ok(_) => match request(&s.http, "GET", "/status", REFRESH_CALL).map(|b| serde_json::from_str(&b)) {
                Ok(Ok(doc)) => {
                    docs.insert(s.name.clone(), doc);
                }
                _ => return events,
            },
            Err(e) => {
                events.push(format!("{} could not refresh its tables: {e}; assignment waits", s.name));
                return events;
            }
        }
    }
    // Tables the catalog had before this pass count as seen (not those
    // this pass's reconciling adds: see `PassMemory`).
    let catalog_tables = catalog.tables();
    let Listing { mut open, movable, holders, all, wal_owners, disabled } = {
        let listing = list(readable, &docs, transit);
        reconcile(catalog, &listing, live, complete, &mut events);
        listing
    };
    let least_loaded = |open: &BTreeMap<String, usize>| -> &ServerInfo {
        let name = open.iter().min_by_key(|(name, n)| (**n, name.as_str())).map(|(name, _)| name.as_str());
        readable.iter().find(|s| Some(s.name.as_str()) == name).copied().unwrap_or(readable[0])
    };

    let is_live = |name: &str| live.iter().any(|s| s.name == name);
    // Without every status, only a region the catalog puts on a dead server
    // is known to be on no live one.
    let on_dead_server = |id: &str| catalog.get(id).and_then(|l| l.server.as_deref()).is_some_and(|s| !is_live(s));
    let assignable = |id: &str, l: &Listed| {
        l.enabled
            && !disabled.contains(&l.table)
            && !holders.contains_key(id)
            && catalog.get(id).is_none_or(|c| c.state != crate::catalog::CLOSED)
            && !pending_open(catalog, id, is_live)
            && (complete || on_dead_server(id))
    };
    for (id, listed) in all.iter().filter(|(id, l)| assignable(id, l)) {
        transit.push(InTransition {
            region: id.clone(),
            table: listed.table.clone(),
            state: "UNASSIGNED".into(),
            server: None,
        });
    }

    // 1. Recovery of every dead server's WAL directory. The membership
    // snapshot may predate a server that registered since and then created
    // its directory: ZooKeeper is asked again before anything is fenced.
    for dead in wal_owners.iter().filter(|w| !is_live(w)) {
        match registered(dead) {
            Some(false) => {}
            Some(true) => continue, // a server that joined after the snapshot
            None => {
                events.push(format!("could not ask ZooKeeper whether {dead} lives; assignment waits"));
                return events;
            }
        }
        let by = least_loaded(&open);
        let started = Instant::now();
        let held = catalog.entries().values().filter(|l| l.server.as_deref() == Some(dead.as_str())).count();
        match request(&by.http, "POST", &format!("/admin/recover?server={}", encode(dead)), SLOW_CALL) {
            Ok(answer) => events.push(format!(
                "{} ({:.2} s, by {}; the catalog had {held} regions on it)",
                answer.trim(),
                started.elapsed().as_secs_f64(),
                by.name
            )),
            Err(e) => {
                events.push(format!("recovering the WAL of dead server {dead} failed: {e}; assignment waits"));
                return events;
            }
        }
    }

    // 2. Assignment of what no live server holds, in tables an earlier pass
    // or the catalog has seen (see `PassMemory`).
    let mut known = std::mem::replace(&mut memory.known_tables, all.values().map(|l| l.table.clone()).collect());
    known.extend(catalog_tables);
    let todo: Vec<(&String, &Listed)> =
        all.iter().filter(|(id, l)| assignable(id, l) && known.contains(&l.table)).collect();
    for (id, listed) in todo {
        let to = least_loaded(&open);
        let started = Instant::now();
        if let Err(e) = catalog.record(id, &listed.table, Some(&to.name), "OPENING") {
            events
                .push(format!("could not record region {id} opening on {} in the catalog: {e}; not assigned", to.name));
            continue;
        }
        match request(&to.http, "POST", &format!("/admin/assign?region={}", encode(id)), SLOW_CALL) {
            Ok(_) => {
                *open.entry(to.name.clone()).or_default() += 1;
                let recorded = catalog.record(id, &listed.table, Some(&to.name), "OPEN");
                events.push(format!(
                    "assigned region {id} of table {} to {} ({:.2} s){}",
                    listed.table,
                    to.name,
                    started.elapsed().as_secs_f64(),
                    recorded.err().map_or(String::new(), |e| format!("; the catalog still says OPENING: {e}"))
                ));
            }
            Err(e) => {
                events.push(format!("assigning region {id} of table {} to {} failed: {e}", listed.table, to.name))
            }
        }
    }

    // 3. Balance, when due and nothing moves otherwise.
    if let Some(ran) = balance
        && transit.is_empty()
        && events.is_empty()
    {
        *ran = true;
        let by_name = |name: &str| readable.iter().find(|s| s.name == name).copied();
        // Every open region counts toward its server's load; only regions
        // of tables no server lists disabled (no DDL under way) move.
        let mut open_regions: BTreeMap<String, Vec<String>> =
            readable.iter().map(|s| (s.name.clone(), Vec::new())).collect();
        for (server, region, table) in &movable {
            if !disabled.contains(table) {
                open_regions.entry(server.clone()).or_default().push(region.clone());
            }
        }
        let run_started = Instant::now();
        for m in crate::balancer::plan(&open_regions, MOVES_PER_RUN) {
            // A run is bounded in time, as HBase's (the poller also recovers
            // dead servers' regions).
            if run_started.elapsed() > BALANCER_RUN_LIMIT {
                break;
            }
            let (Some(from), Some(to)) = (by_name(&m.from), by_name(&m.to)) else { continue };
            let table = all.get(&m.region).map_or(String::new(), |l| l.table.clone());
            let started = Instant::now();
            let region = encode(&m.region);
            let intent = catalog.record(&m.region, &table, Some(&from.name), "CLOSING");
            if let Err(e) = intent {
                events.push(format!("balancer: could not record region {} closing in the catalog: {e}", m.region));
                break;
            }
            if let Err(e) = request(&from.http, "POST", &format!("/admin/unassign?region={region}"), SLOW_CALL) {
                events.push(format!("balancer: closing region {} on {} failed: {e}", m.region, from.name));
                break;
            }
            if let Err(e) = catalog.record(&m.region, &table, Some(&to.name), "OPENING") {
                // Closed and unassigned: the next pass assigns it.
                events.push(format!("balancer: could not record region {} opening in the catalog: {e}", m.region));
                break;
            }
            match request(&to.http, "POST", &format!("/admin/assign?region={region}"), SLOW_CALL) {
                Ok(_) => {
                    let _ = catalog.record(&m.region, &table, Some(&to.name), "OPEN");
                    events.push(format!(
                        "balancer moved region {} from {} to {} ({:.2} s)",
                        m.region,
                        from.name,
                        to.name,
                        started.elapsed().as_secs_f64()
                    ))
                }
                Err(e) => {
                    // Closed and unassigned: the next pass assigns it.
                    events.push(format!("balancer: opening region {} on {} failed: {e}", m.region, to.name));
                    break;
                }
            }
        }
    }
    events
}

/// `text` percent-encoded for a query string.
pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalog::tests::MemoryStore;

    fn catalog() -> Catalog {
        Catalog::load(Arc::new(MemoryStore::default())).expect("load")
    }

    #[test]
    fn a_status_lists_regions_with_their_table_and_state() {
        let doc = serde_json::json!({"tables": [
            {"name": "t", "enabled": true, "regions": [{"id": "01", "state": "OPEN"}, {"id": "02", "state": "OFFLINE"}]},
            {"name": "u", "enabled": false, "regions": [{"id": "03", "state": "OFFLINE"}]}
        ]});
        let r = regions(&doc);
        assert_eq!(r.len(), 3);
        assert_eq!(r["02"], Listed { table: "t".into(), enabled: true, state: "OFFLINE".into() });
        assert!(!r["03"].enabled);
        assert_eq!(encode("host,1,2"), "host%2C1%2C2");
    }

    type Shared<T> = std::sync::Arc<std::sync::Mutex<T>>;

    /// A fake region server's HTTP side: answers `GET /status` with the
    /// status the test puts in the third slot, every other request with 200
    /// and the body `answer` gives, and records the requests.
    fn fake_server(answer: impl Fn(&str) -> String + Send + 'static) -> (String, Shared<Vec<String>>, Shared<String>) {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind");
        let addr = server.server_addr().to_ip().expect("ip").to_string();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let status = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (log, doc) = (seen.clone(), status.clone());
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let line = format!("{} {}", request.method(), request.url());
                let body = if line == "GET /status" { doc.lock().expect("status").clone() } else { answer(&line) };
                log.lock().expect("log").push(line);
                let _ = request.respond(tiny_http::Response::from_string(body));
            }
        });
        (addr, seen, status)
    }

    fn doc(wal_owners: &[&str], regions: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"server": {"wal_owners": wal_owners}, "tables": [{"name": "t", "enabled": true, "regions": regions}]})
    }

    #[test]
    fn a_region_an_operator_closed_stays_closed_across_passes() {
        let (http, seen, status) =
            fake_server(|line| if line.contains("refresh") { "0 new tables".into() } else { "ok".into() });
        let mut a = ServerInfo::new("127.0.0.1", 1, http, 1);
        a.name = "a".into();
        let regions = serde_json::json!([{"id": "01", "state": "OFFLINE"}, {"id": "02", "state": "OFFLINE"}]);
        let docs: HashMap<String, serde_json::Value> = [("a".to_string(), doc(&["a"], regions))].into();
        *status.lock().expect("status") = docs["a"].to_string();
        let mut catalog = catalog();
        catalog.record("01", "t", Some("a"), crate::catalog::CLOSED).expect("record");
        catalog.record("02", "t", Some("a"), "OPEN").expect("record");
        let mut memory = PassMemory::default();
        for _ in 0..2 {
            pass(std::slice::from_ref(&a), &docs, &mut memory, &mut catalog, &|_| Some(true), false);
        }
        let log = seen.lock().expect("log").clone();
        assert!(log.iter().any(|l| l == "POST /admin/assign?region=02"), "the unheld region is assigned: {log:?}");
        assert!(!log.iter().any(|l| l == "POST /admin/assign?region=01"), "the closed one is not: {log:?}");
        assert_eq!(catalog.get("01").map(|l| l.state.as_str()), Some(crate::catalog::CLOSED), "kept CLOSED");
    }

    #[test]
    fn a_wal_directory_is_fenced_only_if_zookeeper_confirms_its_server_is_gone() {
        let (http, seen, status) =
            fake_server(|line| if line.contains("refresh") { "0 new tables".into() } else { "ok".into() });
        let mut a = ServerInfo::new("127.0.0.1", 1, http, 1);
        a.name = "a".into();
        let docs: HashMap<String, serde_json::Value> =
            [("a".to_string(), doc(&["a", "b"], serde_json::json!([{"id": "01", "state": "OPEN"}])))].into();
        *status.lock().expect("status") = docs["a"].to_string();
        // "b" is not in the membership snapshot but registered since: left alone.
        let outcome = pass(
            std::slice::from_ref(&a),
            &docs,
            &mut PassMemory::default(),
            &mut catalog(),
            &|name| Some(name == "b"),
            false,
        );
        assert!(outcome.events.is_empty(), "{:?}", outcome.events);
        assert!(!seen.lock().expect("log").iter().any(|l| l.contains("recover")));
        // ZooKeeper cannot be asked: nothing is fenced and nothing assigned.
        let outcome =
            pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut catalog(), &|_| None, false);
        assert!(outcome.events[0].contains("assignment waits"), "{:?}", outcome.events);
        assert!(!seen.lock().expect("log").iter().any(|l| l.contains("recover")));
        // Gone: recovered.
        pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut catalog(), &|_| Some(false), false);
        assert!(seen.lock().expect("log").iter().any(|l| l == "POST /admin/recover?server=b"));
    }

    #[test]
    fn a_table_first_seen_in_a_pass_is_assigned_from_the_next_one() {
        let (http, seen, status) =
            fake_server(|line| if line.contains("refresh") { "0 new tables".into() } else { "ok".into() });
        let mut a = ServerInfo::new("127.0.0.1", 1, http, 1);
        a.name = "a".into();
        let docs: HashMap<String, serde_json::Value> =
            [("a".to_string(), doc(&["a"], serde_json::json!([{"id": "02", "state": "OFFLINE"}])))].into();
        *status.lock().expect("status") = docs["a"].to_string();
        let mut memory = PassMemory::default();
        let mut cat = catalog();
        let first = pass(std::slice::from_ref(&a), &docs, &mut memory, &mut cat, &|_| Some(true), false);
        assert!(first.events.is_empty(), "a table seen for the first time may be mid-creation: {:?}", first.events);
        assert_eq!(first.in_transition.map(|t| t.len()), Some(1), "listed as unassigned meanwhile");
        let second = pass(std::slice::from_ref(&a), &docs, &mut memory, &mut cat, &|_| Some(true), false);
        assert!(second.events[0].starts_with("assigned region 02 of table t to a"), "{:?}", second.events);
        assert!(seen.lock().expect("log").iter().any(|l| l == "POST /admin/assign?region=02"));
    }

    #[test]
    fn a_pass_waits_for_every_serving_servers_status() {
        let mut a = ServerInfo::new("127.0.0.1", 1, "127.0.0.1:9".into(), 1);
        a.name = "a".into();
        let starting = ServerInfo::starting("b".into(), 2);
        // No status for the serving server: nothing is done (no request is
        // even tried: its address would refuse), and nothing is known.
        let outcome = pass(
            &[a.clone(), starting],
            &HashMap::new(),
            &mut PassMemory::default(),
            &mut catalog(),
            &|_| Some(false),
            false,
        );
        assert!(outcome.events.is_empty());
        assert_eq!(outcome.in_transition, None);
    }

    fn server(name: &str, http: String) -> ServerInfo {
        let mut s = ServerInfo::new("127.0.0.1", 1, http, 1);
        s.name = name.into();
        s
    }

    fn answer_ok(line: &str) -> String {
        if line.contains("refresh") { "0 new tables".into() } else { "ok".into() }
    }

    #[test]
    fn a_dead_servers_regions_are_reassigned_from_the_catalog_while_another_status_is_missing() {
        let (http, seen, status) = fake_server(answer_ok);
        let a = server("a", http);
        // x is live and serving, but its status could not be read.
        let x = server("x", "127.0.0.1:9".into());
        let docs: HashMap<String, serde_json::Value> = [(
            "a".to_string(),
            doc(
                &["a", "d", "x"],
                serde_json::json!([{"id": "01", "state": "OFFLINE"}, {"id": "02", "state": "OFFLINE"}, {"id": "03", "state": "OFFLINE"}]),
            ),
        )]
        .into();
        *status.lock().expect("status") = docs["a"].to_string();
        let mut cat = catalog();
        cat.record("01", "t", Some("d"), "OPEN").expect("record");
        cat.record("02", "t", Some("x"), "OPEN").expect("record");
        // 03: no entry (made by a server since the last pass: x may hold it).
        let outcome = pass(&[a, x], &docs, &mut PassMemory::default(), &mut cat, &|name| Some(name != "d"), true);
        let seen = seen.lock().expect("log").clone();
        assert!(seen.iter().any(|l| l == "POST /admin/recover?server=d"), "{seen:?}");
        assert!(seen.iter().any(|l| l == "POST /admin/assign?region=01"), "{seen:?}");
        assert!(!seen.iter().any(|l| l.contains("region=02") || l.contains("region=03")), "{seen:?}");
        assert!(!outcome.balanced, "no balancing without every status");
        assert_eq!(outcome.in_transition, None);
        assert_eq!(cat.get("01").map(|l| (l.server.as_deref(), l.state.as_str())), Some((Some("a"), "OPEN")));
        assert_eq!(cat.get("02").and_then(|l| l.server.as_deref()), Some("x"), "left where it was");
        assert!(cat.get("03").is_none(), "nothing is said of what no status shows held");
    }

    #[test]
    fn a_complete_pass_brings_the_catalog_in_step_with_the_servers() {
        let (http, _, status) = fake_server(answer_ok);
        let a = server("a", http);
        let docs: HashMap<String, serde_json::Value> = [(
            "a".to_string(),
            serde_json::json!({"server": {"wal_owners": ["a"]}, "tables": [
                {"name": "t", "enabled": true, "regions": [{"id": "01", "state": "OPEN"}, {"id": "02", "state": "OFFLINE"}]},
                {"name": "u", "enabled": false, "regions": [{"id": "03", "state": "OFFLINE"}]}
            ]}),
        )]
        .into();
        *status.lock().expect("status") = docs["a"].to_string();
        let mut cat = catalog();
        cat.record("02", "t", Some("a"), "CLOSING").expect("record");
        cat.record("03", "u", Some("d"), "OPEN").expect("record");
        cat.record("09", "gone", Some("a"), "OPEN").expect("record");
        let outcome =
            pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut cat, &|_| Some(false), false);
        let at = |id: &str| cat.get(id).map(|l| (l.table.clone(), l.server.clone(), l.state.clone()));
        assert_eq!(at("01"), Some(("t".into(), Some("a".into()), "OPEN".into())));
        // 02 was closed on live a and not yet reopened: the table's regions
        // are known from the catalog, so it is assigned again at once.
        assert_eq!(at("02"), Some(("t".into(), Some("a".into()), "OPEN".into())), "{:?}", outcome.events);
        assert_eq!(at("03"), Some(("u".into(), Some("d".into()), "OPEN".into())), "kept on the dead server");
        assert_eq!(at("09"), None, "a region no server lists is removed");
    }

    #[test]
    fn nothing_is_assigned_that_the_catalog_could_not_record_first() {
        let (http, seen, status) = fake_server(answer_ok);
        let a = server("a", http);
        let docs: HashMap<String, serde_json::Value> =
            [("a".to_string(), doc(&["a"], serde_json::json!([{"id": "01", "state": "OFFLINE"}])))].into();
        *status.lock().expect("status") = docs["a"].to_string();
        let store = Arc::new(MemoryStore::default());
        let mut cat = Catalog::load(store.clone()).expect("load");
        cat.record("01", "t", None, "OFFLINE").expect("record");
        store.fail_writes.store(true, std::sync::atomic::Ordering::Relaxed);
        let outcome =
            pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut cat, &|_| Some(true), false);
        assert!(outcome.events.iter().any(|e| e.contains("not assigned")), "{:?}", outcome.events);
        assert!(!seen.lock().expect("log").iter().any(|l| l.contains("assign?")));
    }

    #[test]
    fn a_region_recorded_opening_on_a_live_server_waits_for_its_assign_call() {
        let (http, seen, status) = fake_server(answer_ok);
        let a = server("a", http);
        let docs: HashMap<String, serde_json::Value> =
            [("a".to_string(), doc(&["a"], serde_json::json!([{"id": "01", "state": "OFFLINE"}])))].into();
        *status.lock().expect("status") = docs["a"].to_string();
        // Recorded OPENING on a a moment ago (an earlier master's call, say),
        // which a does not list yet: neither reassigned nor marked OFFLINE.
        let store = Arc::new(MemoryStore::default());
        let entry = |at_ms: u64| {
            serde_json::to_vec(&crate::catalog::Location {
                table: "t".into(),
                server: Some("a".into()),
                state: "OPENING".into(),
                at_ms,
            })
            .expect("json")
        };
        store.entries.lock().expect("entries").insert("01".into(), entry(crate::catalog::now_ms()));
        let mut cat = Catalog::load(store.clone()).expect("load");
        let outcome =
            pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut cat, &|_| Some(true), false);
        assert!(!seen.lock().expect("log").iter().any(|l| l.contains("assign?")), "{:?}", outcome.events);
        assert_eq!(cat.get("01").map(|l| l.state.as_str()), Some("OPENING"));
        // Past the grace, the call is taken as lost: the region is assigned.
        store.entries.lock().expect("entries").insert("01".into(), entry(crate::catalog::now_ms() - 60_000));
        let mut cat = Catalog::load(store).expect("load");
        pass(std::slice::from_ref(&a), &docs, &mut PassMemory::default(), &mut cat, &|_| Some(true), false);
        assert!(seen.lock().expect("log").iter().any(|l| l == "POST /admin/assign?region=01"));
    }
}
