//! Region operations a client may send to any member of a cluster — split,
//! merge, flush or compact a region — carried out by the member that holds
//! the region, as HBase's master has the region's server run them
//! (`SplitTableRegionProcedure` and friends). The member that took the call
//! runs it itself when it holds the region open; otherwise it looks the
//! region's holder up in the master's catalog ([`Router::locate`]) and
//! sends it the same admin call with `here=true`, which the holder runs
//! itself or refuses with 409 (not serving) — never sends on — so two
//! members with stale views cannot bounce a call between them.
//!
//! A region in the middle of a move has no holder for a moment: the call
//! is tried again until [`REGION_OP_DEADLINE`] (the member re-reads which
//! region holds the row each time, so a region that split meanwhile is
//! found), and only then answered "in transition" — a retryable answer,
//! never a refusal a retry would not change.
//!
//! Table-wide flush and compact run on every member: each one's regions of
//! the table, as HBase flushes every region of a table wherever it is.
//!
//! Thread safety: stateless; each call blocks its caller's thread while it
//! waits for the holder.

use std::time::{Duration, Instant};

use store::{RegionState, Store, StoreError};

use super::routing::Router;

/// How long a region operation waits for the region to have a holder.
pub const REGION_OP_DEADLINE: Duration = Duration::from_secs(60);

/// How long one try waits for the holder's answer (a split or a major
/// compaction of a large region takes a while).
const HOLDER_TIMEOUT: Duration = Duration::from_secs(300);

/// The pause between tries while the region has no holder.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// Why a region operation did not run.
#[derive(Debug)]
pub enum RegionOpError {
    /// The store here refused or failed it.
    Store(StoreError),
    /// The holder refused it: its HTTP status and text.
    Refused { status: u16, text: String },
    /// No member held the region open before the deadline.
    InTransition { region: String, last: String },
}

impl std::fmt::Display for RegionOpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionOpError::Store(e) => write!(f, "{e}"),
            RegionOpError::Refused { text, .. } => f.write_str(text.trim_end()),
            RegionOpError::InTransition { region, last } => write!(
                f,
                "region {region} had no server holding it open for {}s (in transition: {last}); try again",
                REGION_OP_DEADLINE.as_secs()
            ),
        }
    }
}

/// The encoded name and state here of the region of `table` holding `row`.
pub fn region_for_row(store: &Store, table: &str, row: &[u8]) -> Result<(String, RegionState), StoreError> {
    match store.region_state_for(table, row)? {
        Some((info, state)) => Ok((info.dir_name(), state)),
        None => Err(StoreError::TableNotFound(table.to_string())),
    }
}

/// The state here of the region named `encoded`.
pub fn region_named(store: &Store, encoded: &str) -> Result<(String, RegionState), StoreError> {
    let table = store.table_of_region(encoded).ok_or_else(|| StoreError::UnknownRegion(encoded.to_string()))?;
    store
        .region_states(&table)?
        .into_iter()
        .find(|(info, _)| info.dir_name() == encoded)
        .map(|(info, state)| (info.dir_name(), state))
        .ok_or_else(|| StoreError::UnknownRegion(encoded.to_string()))
}

/// Runs a region operation where the region is: `here` when this store
/// holds the region `region_of` names open (or outside a cluster), else
/// `POST /admin/<call>` with `here=true` on its holder, whose answer's text
/// `from_answer` reads. `region_of` is asked again before each try.
pub fn at_holder<T>(
    store: &Store,
    router: &Router,
    region_of: impl Fn() -> Result<(String, RegionState), StoreError>,
    here: impl Fn() -> Result<T, StoreError>,
    call: &str,
    query: &str,
    from_answer: impl Fn(String) -> T,
) -> Result<T, RegionOpError> {
    let deadline = Instant::now() + REGION_OP_DEADLINE;
    let path = format!("/admin/{call}?{query}&here=true");
    loop {
        let (region, state) = region_of().map_err(RegionOpError::Store)?;
        let last = if state == RegionState::Open || !router.is_cluster() || store.as_member().is_none() {
            match here() {
                // Closed or moved between the look and the call.
                Err(StoreError::NotServingRegion { state, .. }) if router.is_cluster() => {
                    format!("{state} here")
                }
                done => return done.map_err(RegionOpError::Store),
            }
        } else {
            match router.locate(&region).and_then(|thrift| router.peer_http(&thrift).map(|http| (thrift, http))) {
                None => format!("{state} here, no live server holds it in the catalog"),
                Some((thrift, http)) => {
                    match router.peer_access().exchange(&http, "POST", &path, HOLDER_TIMEOUT) {
                        Ok((200, text)) => return Ok(from_answer(text)),
                        // Not open there (any more), or not serving at all.
                        Ok((409 | 503, text)) => {
                            router.forget(&region);
                            format!("{thrift}: {}", text.trim_end())
                        }
                        Ok((status, text)) => return Err(RegionOpError::Refused { status, text }),
                        Err(e) => {
                            router.forget(&region);
                            format!("{thrift} unreachable: {e}")
                        }
                    }
                }
            }
        };
        if Instant::now() >= deadline {
            return Err(RegionOpError::InTransition { region, last });
        }
        tracing::debug!(%region, why = %last, call, "a region operation waits for the region's holder");
        std::thread::sleep(RETRY_PAUSE);
    }
}

/// Runs `POST /admin/<call>?<query>&here=true` on every other live member
/// (a table-wide flush or compaction: each runs it on its own regions);
/// the members that did not, with why.
pub fn on_every_peer(router: &Router, call: &str, query: &str) -> Vec<String> {
    let peers = match router.peers() {
        Ok(p) => p,
        Err(e) => return vec![format!("the other servers could not be listed: {e}")],
    };
    let path = format!("/admin/{call}?{query}&here=true");
    let access = router.peer_access();
    peers
        .into_iter()
        .filter_map(|peer| match access.exchange(&peer.http, "POST", &path, HOLDER_TIMEOUT) {
            Ok((200, _)) => None,
            Ok((status, text)) => Some(format!("{}: {status} {}", peer.thrift, text.trim_end())),
            Err(e) => Some(format!("{}: {e}", peer.thrift)),
        })
        .collect()
}

/// What a split did, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// The region split (false: the store declined — the split point is
    /// outside it or at its start, it holds one row, or it still reads
    /// through references).
    pub split: bool,
    /// It ran here (this member then tells the others; a holder elsewhere
    /// told them itself).
    pub here: bool,
}

/// The answer text of a split the store declined (the admin call's 400).
pub const NOT_SPLIT: &str = "not split: the split point is outside the region or at its start, the region holds one \
                             row, or still reads through references";

/// Splits the region of `table` holding `row` at `at` (its midpoint with
/// `None`), where it is held. `query` is the admin call's (`table`, `row`,
/// `at`), sent on to a holder elsewhere.
pub fn split(
    store: &Store,
    router: &Router,
    table: &str,
    row: &[u8],
    at: Option<&[u8]>,
    query: &str,
) -> Result<Split, RegionOpError> {
    let ran_here = std::cell::Cell::new(false);
    let done = at_holder(
        store,
        router,
        || region_for_row(store, table, row),
        || {
            ran_here.set(true);
            store.split_region(table, row, at)
        },
        "split",
        query,
        |_| true,
    );
    match done {
        Ok(split) => Ok(Split { split, here: ran_here.get() && split }),
        Err(RegionOpError::Refused { status: 400, text }) if text.starts_with("not split") => {
            Ok(Split { split: false, here: false })
        }
        Err(e) => Err(e),
    }
}

/// Merges adjacent regions `a` and `b` (encoded names) where `a` is held
/// (which must hold `b` too); the merged region's name, and whether it ran
/// here. `query` is the admin call's (`a`, `b`).
pub fn merge(store: &Store, router: &Router, a: &str, b: &str, query: &str) -> Result<(String, bool), RegionOpError> {
    let ran_here = std::cell::Cell::new(false);
    let merged = at_holder(
        store,
        router,
        || region_named(store, a),
        || {
            ran_here.set(true);
            store.merge_regions(a, b)
        },
        "merge",
        query,
        // "merged A and B into M"
        |text| text.trim_end().rsplit(' ').next().unwrap_or_default().to_string(),
    )?;
    Ok((merged, ran_here.get()))
}

/// Compacts region `encoded` (`family`'s store, or every store) where it
/// is held. `query` is the admin call's.
pub fn compact_region(
    store: &Store,
    router: &Router,
    encoded: &str,
    family: Option<&[u8]>,
    major: bool,
    query: &str,
) -> Result<(), RegionOpError> {
    at_holder(
        store,
        router,
        || region_named(store, encoded),
        || store.compact_named_region(encoded, family, major),
        "compact",
        query,
        |_| (),
    )
}

/// Runs a table-wide operation here (`here`) and, unless `here_only` (a
/// member sent it on), on every other member; the members that failed.
pub fn table_wide(
    router: &Router,
    here_only: bool,
    call: &str,
    query: &str,
    here: impl FnOnce() -> Result<(), StoreError>,
) -> Result<(), RegionOpError> {
    here().map_err(RegionOpError::Store)?;
    if here_only {
        return Ok(());
    }
    let failed = on_every_peer(router, call, query);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(RegionOpError::Refused {
            status: 500,
            text: format!("done here, but not on every other server: {}", failed.join("; ")),
        })
    }
}

/// `bytes` as a query parameter's value (the admin calls' `param` reads it).
pub fn query_value(bytes: &[u8]) -> String {
    percent_encoding::percent_encode(bytes, percent_encoding::NON_ALPHANUMERIC).to_string()
}
