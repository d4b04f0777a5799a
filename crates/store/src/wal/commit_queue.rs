//! The commit pipeline's queue and outcomes, as data: what appenders have
//! buffered for the next round (`Pending`) and what rounds have published
//! (`Outcomes`: how far appends are done, which txid ranges failed). The
//! pipeline that fills and drains them is `commit.rs`; they live apart so
//! that `Shared` (`shared.rs`) can hold them without importing the pipeline.
//!
//! Thread safety: plain data, each behind its own mutex in `Shared`
//! (`pending`, `outcomes`); see `wal.rs` for the lock order.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::wal::accounting::SequenceIdAccounting;

/// Failed txid ranges remembered for late waiters; older ones are forgotten
/// and their txids conservatively reported as failed.
const MAX_REMEMBERED_FAILURES: usize = 1024;

/// The appenders' queue: records framed and waiting for a round.
pub(super) struct Pending {
    pub(super) buf: Vec<u8>,
    /// Per region, the highest seq among the buffered entries.
    pub(super) regions: HashMap<u64, u64>,
    pub(super) last_txid: u64,
    pub(super) closed: bool,
    pub(super) accounting: SequenceIdAccounting,
}

impl Pending {
    pub(super) fn new() -> Pending {
        Pending {
            buf: Vec::new(),
            regions: HashMap::new(),
            last_txid: 0,
            closed: false,
            accounting: SequenceIdAccounting::default(),
        }
    }
}

pub(super) struct Failure {
    first: u64,
    last: u64,
    error: Arc<StoreError>,
}

/// What the rounds published: how far appends are done, and which failed.
pub(super) struct Outcomes {
    /// Every txid up to this one has been written and synced, or failed.
    pub(super) done_txid: u64,
    /// A `SyncWal` appender is running a round.
    pub(super) leader: bool,
    pub(super) failures: VecDeque<Failure>,
    /// Failures up to this txid may have been forgotten.
    pub(super) forgotten_upto: u64,
}

impl Outcomes {
    pub(super) fn new() -> Outcomes {
        Outcomes { done_txid: 0, leader: false, failures: VecDeque::new(), forgotten_upto: 0 }
    }

    pub(super) fn record_failure(&mut self, first: u64, last: u64, error: Arc<StoreError>) {
        if let Some(prev) = self.failures.back_mut()
            && prev.last + 1 == first
        {
            prev.last = last; // consecutive failed batches: one range
            return;
        }
        if self.failures.len() == MAX_REMEMBERED_FAILURES
            && let Some(old) = self.failures.pop_front()
        {
            self.forgotten_upto = old.last;
        }
        self.failures.push_back(Failure { first, last, error });
    }

    /// The outcome of a txid that is done.
    pub(super) fn outcome(&self, txid: u64) -> Result<()> {
        for f in self.failures.iter().rev() {
            if f.last < txid {
                break;
            }
            if f.first <= txid {
                return Err(duplicate_error(&f.error));
            }
        }
        if txid <= self.forgotten_upto {
            return Err(StoreError::WritesStopped(format!(
                "the outcome of WAL append {txid} is no longer known; treat it as failed"
            )));
        }
        Ok(())
    }
}

/// A copy of an error for each appender of a failed batch (`StoreError` is
/// not `Clone`; an I/O error keeps its OS code, so `is_disk_full` still
/// works, its kind and its message).
pub(super) fn duplicate_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::Io { op, path, source } => {
            let source = match source.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(source.kind(), source.to_string()),
            };
            StoreError::Io { op, path: path.clone(), source }
        }
        StoreError::Corruption { path, offset, reason } => {
            StoreError::Corruption { path: path.clone(), offset: *offset, reason: reason.clone() }
        }
        StoreError::Closed => StoreError::Closed,
        StoreError::InvalidArgument(m) => StoreError::InvalidArgument(m.clone()),
        other => StoreError::WritesStopped(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_ranges_merge_and_answer_each_txid() {
        let mut o = Outcomes::new();
        let err = || Arc::new(StoreError::io("fsync", "/x", std::io::Error::from_raw_os_error(28)));
        o.record_failure(3, 5, err());
        o.record_failure(6, 7, err());
        o.record_failure(10, 10, err());
        o.done_txid = 12;
        assert_eq!(o.failures.len(), 2, "3..=5 and 6..=7 merge");
        for t in 1..=12 {
            let failed = (3..=7).contains(&t) || t == 10;
            assert_eq!(o.outcome(t).is_err(), failed, "txid {t}");
        }
        assert!(o.outcome(4).expect_err("failed").is_disk_full(), "the OS error code survives duplication");
        for i in 0..MAX_REMEMBERED_FAILURES as u64 {
            o.record_failure(100 + 2 * i, 100 + 2 * i, err());
        }
        assert_eq!(o.forgotten_upto, 10, "the two oldest ranges were forgotten");
        assert!(o.outcome(9).is_err(), "a txid whose failure may have been forgotten is reported as failed");
        assert!(o.outcome(11).is_ok());
    }
}
