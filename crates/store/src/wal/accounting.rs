//! `SequenceIdAccounting`: per region, the lowest sequence id the WAL holds
//! that is not yet in a committed store file (HBase's
//! `SequenceIdAccounting`). It decides which WAL files may be archived.
//!
//! Why it is kept here and updated at append time, not derived from the
//! memstores: an edit is appended to the WAL *before* it is inserted into a
//! memstore, and a region can be created, opened or split while an archive
//! pass runs. Any answer computed from memstore contents or from a list of
//! regions taken earlier misses edits in those windows, and archiving a file
//! that holds one loses an acknowledged write at the next crash.
//!
//! Invariants:
//! - `on_append(region, seq)` runs before the entry can reach any WAL file
//!   (the WAL calls it under the same lock that buffers the entry).
//! - For every region, every appended seq that is not yet in a committed
//!   store file is ≥ `lowest(region)`: it is either in `unflushed` (appended
//!   since the last flush started) or in `flushing` (the flush in progress
//!   covers it).
//! - `start_flush` is called while no edit of the region is between its WAL
//!   append and its memstore insert (the region holds its `updates` lock
//!   exclusively), so the flush's snapshot holds every edit moved to
//!   `flushing`. `complete_flush` only after the flush committed;
//!   `abort_flush` puts the ids back.
//!
//! Thread safety: a plain value; the WAL keeps it behind its `pending` mutex.

use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct SequenceIdAccounting {
    /// Lowest seq appended since the region's last flush started.
    unflushed: HashMap<u64, u64>,
    /// Lowest seq of the region's flush in progress.
    flushing: HashMap<u64, u64>,
}

impl SequenceIdAccounting {
    /// An edit of `region` with `seq` is being appended (or was replayed
    /// into its memstore at recovery).
    pub fn on_append(&mut self, region: u64, seq: u64) {
        let lowest = self.unflushed.entry(region).or_insert(seq);
        if seq < *lowest {
            *lowest = seq;
        }
    }

    /// A flush of every edit appended so far for `region` begins.
    pub fn start_flush(&mut self, region: u64) {
        if let Some(seq) = self.unflushed.remove(&region) {
            let lowest = self.flushing.entry(region).or_insert(seq);
            *lowest = (*lowest).min(seq);
        }
    }

    /// The flush started by `start_flush` committed its files.
    pub fn complete_flush(&mut self, region: u64) {
        self.flushing.remove(&region);
    }

    /// The flush failed: its edits are unflushed again.
    pub fn abort_flush(&mut self, region: u64) {
        if let Some(seq) = self.flushing.remove(&region) {
            self.on_append(region, seq);
        }
    }

    /// The region's data is gone for good (its table was deleted).
    pub fn forget(&mut self, region: u64) {
        self.unflushed.remove(&region);
        self.flushing.remove(&region);
    }

    /// Lowest seq of `region` the WAL must keep; `None` when every edit
    /// appended for it is in committed files.
    pub fn lowest(&self, region: u64) -> Option<u64> {
        match (self.unflushed.get(&region), self.flushing.get(&region)) {
            (Some(&a), Some(&b)) => Some(a.min(b)),
            (a, b) => a.or(b).copied(),
        }
    }

    /// Whether a file whose highest seq per region is `region_max_seq` holds
    /// nothing that is still needed.
    pub fn is_obsolete<'a>(&self, mut region_max_seq: impl Iterator<Item = (&'a u64, &'a u64)>) -> bool {
        region_max_seq.all(|(&region, &max)| self.lowest(region).is_none_or(|l| l > max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_releases_only_what_it_covered() {
        let mut a = SequenceIdAccounting::default();
        a.on_append(1, 7);
        a.on_append(1, 5);
        assert_eq!(a.lowest(1), Some(5));
        a.start_flush(1);
        a.on_append(1, 9); // written while the flush runs
        assert_eq!(a.lowest(1), Some(5), "the flush has not committed");
        a.complete_flush(1);
        assert_eq!(a.lowest(1), Some(9), "edits after the flush started stay");
        a.start_flush(1);
        a.complete_flush(1);
        assert_eq!(a.lowest(1), None);
    }

    #[test]
    fn an_aborted_flush_puts_its_ids_back() {
        let mut a = SequenceIdAccounting::default();
        a.on_append(2, 3);
        a.start_flush(2);
        a.on_append(2, 8);
        a.abort_flush(2);
        assert_eq!(a.lowest(2), Some(3));
        let file = HashMap::from([(2u64, 4u64)]);
        assert!(!a.is_obsolete(file.iter()));
        a.start_flush(2);
        a.complete_flush(2);
        assert!(a.is_obsolete(file.iter()));
    }

    #[test]
    fn unknown_regions_hold_nothing_and_forget_drops_a_region() {
        let mut a = SequenceIdAccounting::default();
        assert_eq!(a.lowest(3), None);
        a.on_append(3, 1);
        a.forget(3);
        assert_eq!(a.lowest(3), None);
    }
}
