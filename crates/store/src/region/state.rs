//! `RegionState`: where a region is in its life on this server, as HBase's
//! `RegionState.State` names it, and whether it serves requests then.
//!
//! Transitions (made under the table's change lock (`Catalog::lock_changes`), so two never
//! interleave on one region — except closing every region when the store
//! closes, and setting CLOSED at open for a region closed by an operator,
//! which no other transition can race):
//! ```text
//! OPENING → OPEN → CLOSING → CLOSED → OPENING …   (close_region / open_region)
//!           OPEN → SPLITTING → SPLIT               (split; back to OPEN if it fails)
//!           OPEN → MERGING → MERGED                (merge; back to OPEN if it fails)
//! ```
//! A CLOSING, SPLITTING or MERGING region still serves until its owner
//! drains its writes for the final flush; after that (and in every other
//! state but OPEN) a request gets `NotServingRegion`. SPLIT and MERGED
//! regions are no longer in their table: a request that raced with the
//! switch looks the row up again.

use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegionState {
    Opening,
    Open,
    Closing,
    Closed,
    Splitting,
    Split,
    Merging,
    Merged,
    /// In a cluster: on the shared root, not served by this server (another
    /// holds it, or none yet). HBase's OFFLINE.
    Offline,
}

impl RegionState {
    const ALL: [RegionState; 9] = [
        RegionState::Opening,
        RegionState::Open,
        RegionState::Closing,
        RegionState::Closed,
        RegionState::Splitting,
        RegionState::Split,
        RegionState::Merging,
        RegionState::Merged,
        RegionState::Offline,
    ];

    /// HBase's name for the state.
    pub fn name(self) -> &'static str {
        match self {
            RegionState::Opening => "OPENING",
            RegionState::Open => "OPEN",
            RegionState::Closing => "CLOSING",
            RegionState::Closed => "CLOSED",
            RegionState::Splitting => "SPLITTING",
            RegionState::Split => "SPLIT",
            RegionState::Merging => "MERGING",
            RegionState::Merged => "MERGED",
            RegionState::Offline => "OFFLINE",
        }
    }

    /// Whether a request refused in this state should look its row up
    /// again: the region is being replaced by daughters or a merged region
    /// within milliseconds (HBase's client retries these the same way).
    pub fn is_being_replaced(self) -> bool {
        matches!(self, RegionState::Splitting | RegionState::Split | RegionState::Merging | RegionState::Merged)
    }

    pub fn all() -> &'static [RegionState] {
        &Self::ALL
    }
}

impl std::fmt::Display for RegionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A region's state and whether it accepts requests, readable without a
/// lock. `serving` is separate from the state because a region that is
/// CLOSING (or SPLITTING, MERGING) keeps serving until it is drained.
#[derive(Debug)]
pub(crate) struct StateCell {
    state: AtomicU8,
    serving: std::sync::atomic::AtomicBool,
}

impl StateCell {
    pub(crate) fn new(state: RegionState, serving: bool) -> StateCell {
        StateCell { state: AtomicU8::new(state as u8), serving: std::sync::atomic::AtomicBool::new(serving) }
    }

    pub(crate) fn get(&self) -> RegionState {
        RegionState::ALL[self.state.load(Ordering::Acquire) as usize]
    }

    pub(crate) fn set(&self, state: RegionState) {
        self.state.store(state as u8, Ordering::Release);
        crate::layout_changes::note_layout_change();
    }

    pub(crate) fn serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    pub(crate) fn set_serving(&self, serving: bool) {
        self.serving.store(serving, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discriminants_index_all() {
        for (i, s) in RegionState::all().iter().enumerate() {
            assert_eq!(*s as usize, i, "{s}");
        }
        let cell = StateCell::new(RegionState::Opening, false);
        for s in RegionState::all() {
            cell.set(*s);
            assert_eq!(cell.get(), *s);
        }
    }

    #[test]
    fn only_splits_and_merges_send_a_request_elsewhere() {
        let moving: Vec<_> = RegionState::all().iter().filter(|s| s.is_being_replaced()).map(|s| s.name()).collect();
        assert_eq!(moving, ["SPLITTING", "SPLIT", "MERGING", "MERGED"]);
    }
}
