//! HBase's Thrift server is a client of its cluster: a call that meets a
//! region in the middle of a move (closing on one server, opening on
//! another, its server just died, its parent splitting) is retried by that
//! client, with HBase's back-off, until the region is served again — so a
//! Thrift client such as happybase never sees the move. The Thrift handler
//! does the same here through [`retrying`]: in a cluster, a call refused
//! because the region is not served where it was looked for is made again
//! (the gateway looks the region up anew each time) until it is answered or
//! [`MOVE_DEADLINE`] has passed, then the last refusal is the answer.
//!
//! What is retried: a refusal that says the region is not served there
//! (nothing was applied); for calls that may be applied twice without harm
//! (reads, puts, deletes, a batch's rows), also a server that could not be
//! reached. An increment, append or check-and-mutate is not retried after
//! an unreachable server: it may have been applied before the connection
//! broke, and it must not be applied twice (HBase dedupes those with
//! nonces; we do not have them).
//!
//! Standalone, only a split or merge in progress is waited out (the region
//! is replaced within milliseconds); a region an operator closed stays
//! closed, and the call is refused at once.
//!
//! A call another server forwarded (a peer connection) is never retried
//! here: the forwarding server retries it.
//!
//! Thread safety: stateless; a retry sleeps on its caller's thread.

use std::time::{Duration, Instant};

use store::StoreError;

use crate::gateway::{GatewayError, GatewayResult, RemoteKind};

/// How long a call is retried while its region moves (HBase's client with
/// its default 15 retries and back-off waits about two minutes; a Thrift
/// client's own timeout usually comes first).
pub const MOVE_DEADLINE: Duration = Duration::from_secs(60);

/// HBase's `hbase.client.pause` and `HConstants.RETRY_BACKOFF`.
const PAUSE: Duration = Duration::from_millis(100);
const BACKOFF: [u32; 13] = [1, 2, 3, 5, 10, 20, 40, 100, 100, 100, 100, 200, 200];

/// Whether a failure may be retried: see the module doc. `repeatable`:
/// the call may be applied twice without harm.
pub fn region_moving(e: &GatewayError, cluster: bool, repeatable: bool) -> bool {
    if !cluster {
        return matches!(e, GatewayError::Store(s) if s.is_region_moving());
    }
    match e {
        GatewayError::NotServing(_) | GatewayError::NoRegion { .. } => true,
        GatewayError::Store(StoreError::NotServingRegion { .. }) => true,
        GatewayError::Remote { kind: RemoteKind::IoError, message } => {
            message.contains("NotServingRegionException") || message.contains("is not serving requests")
        }
        GatewayError::Unreachable { .. } => repeatable,
        _ => false,
    }
}

/// The pause before retry number `attempt` (from 0).
pub fn pause(attempt: usize) -> Duration {
    PAUSE * BACKOFF[attempt.min(BACKOFF.len() - 1)]
}

/// `call`, made again while it fails because its region is moving (see
/// the module doc), until [`MOVE_DEADLINE`].
pub fn retrying<T>(
    cluster: bool,
    repeatable: bool,
    what: &str,
    mut call: impl FnMut() -> GatewayResult<T>,
) -> GatewayResult<T> {
    let from_peer = crate::peer::routing::serving_peer();
    let deadline = Instant::now() + MOVE_DEADLINE;
    let mut attempt = 0;
    loop {
        match call() {
            Err(e) if !from_peer && region_moving(&e, cluster, repeatable) => {
                let wait = pause(attempt);
                if Instant::now() + wait >= deadline {
                    return Err(e);
                }
                tracing::debug!(call = what, attempt, error = %e, "a region in a move: retrying");
                std::thread::sleep(wait);
                attempt += 1;
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried_and_the_back_off() {
        let not_serving =
            GatewayError::Store(StoreError::NotServingRegion { region: "r".into(), state: store::RegionState::Closed });
        let splitting = GatewayError::Store(StoreError::NotServingRegion {
            region: "r".into(),
            state: store::RegionState::Splitting,
        });
        let unreachable = GatewayError::Unreachable { region: "r".into(), owner: "o".into(), cause: "reset".into() };
        let remote = |m: &str| GatewayError::Remote { kind: RemoteKind::IoError, message: m.into() };
        // Standalone: a closed region is refused at once; a split waited out.
        assert!(!region_moving(&not_serving, false, true));
        assert!(region_moving(&splitting, false, true));
        // A cluster: every not-serving answer, here or from the owner.
        assert!(region_moving(&not_serving, true, false));
        assert!(region_moving(&remote("org.apache.hadoop.hbase.NotServingRegionException: moved"), true, false));
        assert!(!region_moving(&remote("table t is disabled"), true, true));
        assert!(!region_moving(&GatewayError::IllegalArgument("bad".into()), true, true));
        // An unreachable owner: only for a call that may be applied twice.
        assert!(region_moving(&unreachable, true, true));
        assert!(!region_moving(&unreachable, true, false));
        assert_eq!(pause(0), Duration::from_millis(100));
        assert_eq!(pause(4), Duration::from_secs(1));
        assert_eq!(pause(99), Duration::from_secs(20));
    }

    #[test]
    fn a_call_is_made_again_until_it_is_answered() {
        let mut tries = 0;
        let answer = retrying(true, true, "get", || {
            tries += 1;
            if tries < 3 { Err(GatewayError::NotServing("moving".into())) } else { Ok(tries) }
        });
        assert_eq!(answer.expect("answered"), 3);
        let mut tries = 0;
        let refused: GatewayResult<()> = retrying(true, true, "get", || {
            tries += 1;
            Err(GatewayError::IllegalArgument("bad".into()))
        });
        assert!(refused.is_err() && tries == 1, "a refusal a retry cannot change is answered at once");
    }
}
