//! What the bench reads of a running `accordion server`: its `/status`
//! document (`http_api::ServerStatus`), for its counters (the thrift and
//! cluster engines' counters, the scale-out bench's per-server figures) and
//! the regions it has open.
//!
//! Thread safety: a blocking HTTP read per call; nothing shared.

use http_api::ServerStatus;

use crate::engine::EngineCounters;

/// The status of the server at HTTP address `http` (`None`: it could not
/// be read).
pub fn read_status(http: &str) -> Option<ServerStatus> {
    ureq::get(&format!("http://{http}/status"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .and_then(|b| serde_json::from_str(&b).ok())
}

/// One server's counters from its `/status` totals.
pub fn server_counters(http: &str) -> EngineCounters {
    let Some(s) = read_status(http) else { return EngineCounters::default() };
    EngineCounters::from_totals(&s.totals)
}
