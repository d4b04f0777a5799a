//! What the bench reads of a running `accordion server`: its counters, from
//! the totals of its `/status` document (the thrift and cluster engines'
//! counters, the scale-out bench's per-server figures).
//!
//! Thread safety: a blocking HTTP read per call; nothing shared.

use crate::engine::EngineCounters;

/// One server's counters from its `/status` totals.
pub fn server_counters(http: &str) -> EngineCounters {
    let status: Option<serde_json::Value> = ureq::get(&format!("http://{http}/status"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .and_then(|b| serde_json::from_str(&b).ok());
    let Some(s) = status else { return EngineCounters::default() };
    let t = &s["totals"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    EngineCounters {
        flushes: n("disk_flushes"),
        inmemory_flushes: n("inmemory_flushes"),
        merges: n("merges"),
        inmemory_compactions: n("inmemory_compactions"),
        compactions: n("disk_compactions"),
        wal_files: n("wal_files_created"),
        bytes_wal: n("wal_bytes"),
        bytes_flushed: n("bytes_flushed"),
        bytes_compacted: n("bytes_compacted"),
        user_bytes: n("user_bytes"),
        ..EngineCounters::default()
    }
}
