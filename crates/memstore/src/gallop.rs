//! `gallop`: the forward search a reseek and a long-column scan share —
//! from a known position, steps of 1, 2, 4, … then a binary search, so
//! that a target a few cells on costs a few probes (a full binary search
//! costs log2 of the whole index).
//!
//! Thread safety: a pure function.

/// The first position in `from..len` that is not `below` the search key
/// (`len` if none), in O(log distance): steps of 1, 2, 4, … from `from`,
/// then a binary search inside the last step. `below` must be monotone
/// (true, then false) over `from..len`.
pub(crate) fn gallop(from: usize, len: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (from, 1usize);
    let mut hi = from;
    while hi < len && below(hi) {
        lo = hi + 1;
        hi = from.saturating_add(step).min(len);
        step = step.saturating_mul(2);
    }
    first_not_below(lo, hi.min(len), below)
}

/// The first position in `lo..hi` that is not `below` (`hi` if none), by
/// binary search; `below` must be monotone over `lo..hi`.
pub(crate) fn first_not_below(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;
    use crate::cell::{CellInput, CellKey, CellRef};

    /// A reseek gallops forward from the cursor's position and lands where
    /// a binary search over the whole index does, for every start and key.
    #[test]
    fn gallop_finds_what_a_full_search_finds_from_any_start() {
        let cells: Vec<Vec<u8>> = (0..40u32)
            .flat_map(|r| {
                (0..3u64).map(move |ts| {
                    CellInput::put(format!("r{r:03}").as_bytes(), b"f", b"q", 10 - ts, b"v").to_encoded(1)
                })
            })
            .collect();
        fn below<'a>(cells: &'a [Vec<u8>], key: CellKey<'a>) -> impl Fn(usize) -> bool + 'a {
            move |i| CellRef::new(&cells[i]).compare_key(&key) == Ordering::Less
        }
        let full = |key: &CellKey<'_>| cells.partition_point(|c| CellRef::new(c).compare_key(key) == Ordering::Less);
        for r in 0..=41u32 {
            let row = format!("r{r:03}");
            for key in [CellKey::first_on_row(row.as_bytes()), CellKey::last_on_column(row.as_bytes(), b"f", b"q")] {
                let want = full(&key);
                for from in 0..=want {
                    assert_eq!(gallop(from, cells.len(), below(&cells, key)), want, "{row} from {from}");
                }
            }
        }
        assert_eq!(gallop(0, 0, below(&cells, CellKey::first_on_row(b"a"))), 0);
    }
}
