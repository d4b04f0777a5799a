//! Merging sorted runs by galloping, for the pipeline's merge: the index of
//! a big merged segment absorbs a few small new ones.
//!
//! Why not the merging cursor: with the paper's A = 0.02 and S = 5, every
//! merge folds five small segments into one that is up to fifty times
//! larger, and a heap merge compares (and so reads, a cache miss each) every
//! cell of the big segment on every merge — profiles of the paper's write
//! load put 40 % of the process's CPU there. Galloping (exponential then
//! binary search from the last position, as in timsort) reads only
//! O(log gap) cells of the big run per cell of the small one and copies the
//! items in between without touching their cells.
//!
//! Items: a run holds [`RunItem`]s — cell pointers (a cell array's entries)
//! or a cell-chunk index's entries, which carry a row prefix and read their
//! cells only when the prefixes tie (`cell_chunk_index.rs`).
//!
//! Order and ties: the result is the cell order of `compare_cells`; cells
//! that compare equal keep the order of the merging cursor, the newer run
//! first (`cursor_heap`'s tie rule).
//!
//! Thread safety: pure functions over items that refer to immutable cells.

use std::cmp::Ordering;

use crate::cell::{CellRef, compare_cells};

/// What a sorted run holds: something that stands for one cell and orders
/// as the cell does.
pub trait RunItem: Copy {
    /// The cells' order (`compare_cells`).
    ///
    /// # Safety
    /// Both items must refer to live encoded cells (and, for index entries,
    /// carry row prefixes past the same common row bytes).
    unsafe fn order(a: Self, b: Self) -> Ordering;

    /// Whether both cells are of one (row, family, qualifier) column.
    ///
    /// # Safety
    /// As for [`order`](RunItem::order).
    unsafe fn same_column(a: Self, b: Self) -> bool;

    /// The cell's encoding.
    fn cell_ptr(self) -> *const u8;
}

impl RunItem for *const u8 {
    #[inline]
    unsafe fn order(a: Self, b: Self) -> Ordering {
        // SAFETY: per the contract.
        unsafe { compare_cells(&CellRef::from_ptr(a), &CellRef::from_ptr(b)) }
    }

    #[inline]
    unsafe fn same_column(a: Self, b: Self) -> bool {
        // SAFETY: per the contract.
        unsafe { CellRef::from_ptr(a).same_column(&CellRef::from_ptr(b)) }
    }

    #[inline]
    fn cell_ptr(self) -> *const u8 {
        self
    }
}

#[inline]
fn cmp<T: RunItem>(a: T, b: T) -> Ordering {
    // SAFETY: callers pass items of live encoded cells (module contract).
    unsafe { T::order(a, b) }
}

/// Read access, in place, to a sorted sequence of items: a run's vector,
/// or a cell-chunk index's entries where they lie (the pipeline's big
/// merged segment, which a merge need not copy out first).
pub trait Items<T> {
    fn count(&self) -> usize;
    fn at(&self, i: usize) -> T;
    /// Appends the items at positions `from..to` to `out`.
    fn append(&self, from: usize, to: usize, out: &mut impl Sink<T>);
}

impl<T: Copy> Items<T> for [T] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }

    #[inline]
    fn at(&self, i: usize) -> T {
        self[i]
    }

    #[inline]
    fn append(&self, from: usize, to: usize, out: &mut impl Sink<T>) {
        out.extend_from_slice(&self[from..to]);
    }
}

/// Where a merge writes its result: a vector, or a cell-chunk index being
/// built in its own chunks (no second copy of the result).
pub trait Sink<T> {
    fn push(&mut self, item: T);
    fn extend_from_slice(&mut self, items: &[T]);
}

impl<T: Copy> Sink<T> for Vec<T> {
    #[inline]
    fn push(&mut self, item: T) {
        Vec::push(self, item);
    }

    #[inline]
    fn extend_from_slice(&mut self, items: &[T]) {
        Vec::extend_from_slice(self, items);
    }
}

/// The first index `j >= from` in `run` whose cell does not belong before
/// `key`: `run[j] > key`, or `run[j] >= key` when `key` wins ties.
fn gallop<T: RunItem, L: Items<T> + ?Sized>(run: &L, from: usize, key: T, key_wins_ties: bool) -> usize {
    let before = |p: T| match cmp(p, key) {
        Ordering::Less => true,
        Ordering::Equal => !key_wins_ties,
        Ordering::Greater => false,
    };
    // Exponential probe: find `hi` with run[hi] not before key.
    let (mut lo, mut step) = (from, 1usize);
    let mut hi = from;
    let len = run.count();
    while hi < len && before(run.at(hi)) {
        lo = hi + 1;
        hi = from + step;
        step *= 2;
    }
    let mut hi = hi.min(len);
    // Binary search in [lo, hi): everything before lo is before key.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(run.at(mid)) { lo = mid + 1 } else { hi = mid }
    }
    lo
}

/// A sorted run of items and, when known, how many distinct
/// (row, family, qualifier) columns its cells cover.
#[derive(Debug)]
pub struct Run<T> {
    pub cells: Vec<T>,
    pub columns: Option<u64>,
}

impl<T> Default for Run<T> {
    fn default() -> Self {
        Run { cells: Vec::new(), columns: None }
    }
}

impl<T: RunItem> Run<T> {
    pub fn new(cells: Vec<T>, columns: Option<u64>) -> Run<T> {
        Run { cells, columns }
    }

    /// The column count, read from the cells when not known.
    ///
    /// # Safety
    /// Every item must refer to a live encoded cell.
    unsafe fn columns_or_count(&self) -> u64 {
        // SAFETY: per the contract.
        self.columns.unwrap_or_else(|| unsafe { count_columns(&self.cells) })
    }
}

#[inline]
fn same_column<T: RunItem>(a: T, b: T) -> bool {
    // SAFETY: callers pass items of live encoded cells (module contract).
    unsafe { T::same_column(a, b) }
}

/// Distinct columns of sorted cells (a column's cells are adjacent).
///
/// # Safety
/// Every item must refer to a live encoded cell.
pub unsafe fn count_columns<T: RunItem>(cells: &[T]) -> u64 {
    // SAFETY: per the contract.
    unsafe { count_columns_in(cells) }
}

/// Merges `newer` into `older` (both sorted); on equal cells, `newer`'s
/// come first. Gallops in the longer run.
///
/// With `count`, the result's column count is the inputs' counts less the
/// columns they share (see `merge_into`).
///
/// # Safety
/// Every item must refer to a live encoded cell.
pub unsafe fn merge_two<T: RunItem>(newer: &Run<T>, older: &Run<T>, count: bool) -> Run<T> {
    let mut out = Vec::with_capacity(newer.cells.len() + older.cells.len());
    // Walk the shorter run; gallop through the longer one.
    let (short, long, short_wins_ties) = if newer.cells.len() <= older.cells.len() {
        (&newer.cells, &older.cells, true)
    } else {
        (&older.cells, &newer.cells, false)
    };
    // SAFETY: per the contract.
    let shared = unsafe { merge_into(short, long.as_slice(), short_wins_ties, count, &mut out) };
    // SAFETY: per the contract.
    let columns = count.then(|| unsafe { newer.columns_or_count() + older.columns_or_count() } - shared);
    Run { cells: out, columns }
}

/// Merges `newer` into `older`, which is read in place, writing the result
/// to `out`; returns the result's column count when `count` (`older`'s is
/// read from its cells when not given). For the pipeline's final merge:
/// the folded small runs into the big segment's index, written straight
/// into the new index.
///
/// # Safety
/// Every item must refer to a live encoded cell.
pub unsafe fn merge_into_older<T: RunItem, L: Items<T> + ?Sized>(
    newer: &Run<T>,
    older: &L,
    older_columns: Option<u64>,
    count: bool,
    out: &mut impl Sink<T>,
) -> Option<u64> {
    // SAFETY: per the contract.
    let shared = unsafe { merge_into(&newer.cells, older, true, count, out) };
    count.then(|| {
        // SAFETY: per the contract.
        let older = older_columns.unwrap_or_else(|| unsafe { count_columns_in(older) });
        // SAFETY: per the contract.
        let newer = unsafe { newer.columns_or_count() };
        newer + older - shared
    })
}

/// Distinct columns of sorted items read in place.
///
/// # Safety
/// Every item must refer to a live encoded cell.
unsafe fn count_columns_in<T: RunItem, L: Items<T> + ?Sized>(items: &L) -> u64 {
    let n = items.count();
    let starts = (1..n).filter(|&i| !same_column(items.at(i - 1), items.at(i))).count();
    if n == 0 { 0 } else { starts as u64 + 1 }
}

/// Walks `short`, galloping through `long`, and writes both in order to
/// `out`; on equal cells `short`'s come first when `short_wins_ties`.
/// Returns how many columns of `short` are also in `long` (when `count`):
/// a column of the short run is in the long one exactly when a long item
/// next to its insertion point is of that column (a column's cells are
/// adjacent in cell order), so counting costs a compare or two per column
/// of the short run and reads no other cell of the long.
///
/// # Safety
/// Every item must refer to a live encoded cell.
unsafe fn merge_into<T: RunItem, L: Items<T> + ?Sized>(
    short: &[T],
    long: &L,
    short_wins_ties: bool,
    count: bool,
    out: &mut impl Sink<T>,
) -> u64 {
    let mut shared = 0u64;
    let mut at = 0;
    let len = long.count();
    for (i, &p) in short.iter().enumerate() {
        let to = gallop(long, at, p, short_wins_ties);
        if count && (i == 0 || !same_column(short[i - 1], p)) {
            let in_long = (to > 0 && same_column(long.at(to - 1), p)) || (to < len && same_column(long.at(to), p));
            shared += u64::from(in_long);
        }
        long.append(at, to, out);
        out.push(p);
        at = to;
    }
    long.append(at, len, out);
    shared
}

/// Merges `runs`, newest first (the pipeline's order), into one sorted run
/// with the merging cursor's tie rule, counting its columns when `count`.
/// `stop` is polled between runs; when it returns true the merge gives up
/// and returns `None`.
///
/// When the oldest run is the longest (the pipeline's previous merge result
/// under the newer small segments), the small runs are merged first, while
/// they are cache-resident, and the result galloped into the big run once:
/// fewer reads of the big run's cells and one copy of its pointers instead of
/// one per small run.
///
/// # Safety
/// Every item must refer to a live encoded cell.
pub unsafe fn merge_newest_first<T: RunItem>(
    mut runs: Vec<Run<T>>,
    count: bool,
    stop: &dyn Fn() -> bool,
) -> Option<Run<T>> {
    let oldest_is_longest = runs.last().is_some_and(|last| runs.iter().all(|r| r.cells.len() <= last.cells.len()));
    if runs.len() > 2 && oldest_is_longest {
        let big = runs.pop().expect("more than two runs");
        // SAFETY: per the contract.
        let small = unsafe { fold_from_oldest(runs, count, stop) }?;
        if stop() {
            return None;
        }
        // Every small run is newer than the big one: the small side wins ties.
        // SAFETY: per the contract.
        return Some(unsafe { merge_two(&small, &big, count) });
    }
    // SAFETY: per the contract.
    unsafe { fold_from_oldest(runs, count, stop) }
}

/// Folds runs (newest first) from the oldest: each run merged is newer than
/// everything folded so far.
///
/// # Safety
/// As for [`merge_newest_first`].
pub unsafe fn fold_from_oldest<T: RunItem>(runs: Vec<Run<T>>, count: bool, stop: &dyn Fn() -> bool) -> Option<Run<T>> {
    let mut runs = runs.into_iter().rev();
    let mut acc = runs.next().unwrap_or_default();
    if count && acc.columns.is_none() {
        // SAFETY: per the contract.
        acc.columns = Some(unsafe { count_columns(&acc.cells) });
    }
    for run in runs {
        if stop() {
            return None;
        }
        // SAFETY: per the contract.
        acc = unsafe { merge_two(&run, &acc, count) };
    }
    Some(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;

    /// A tiny deterministic generator (xorshift), enough for test data.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn cell(row: u32, ts: u64, seq: u64) -> Box<[u8]> {
        let row = format!("row{row:05}");
        CellInput::put(row.as_bytes(), b"f", b"q", ts, b"v").to_encoded(seq).into_boxed_slice()
    }

    /// The reference: a stable sort of (run index, cell), ties to the lower
    /// run index — what the merging cursor yields.
    fn reference(runs: &[Vec<*const u8>]) -> Vec<*const u8> {
        let mut all: Vec<(usize, *const u8)> =
            runs.iter().enumerate().flat_map(|(i, r)| r.iter().map(move |&p| (i, p))).collect();
        all.sort_by(|a, b| cmp(a.1, b.1).then(a.0.cmp(&b.0)));
        all.into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn merges_runs_of_every_size_like_the_merging_cursor_ties_included() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..200 {
            let n_runs = 1 + round % 7;
            let mut owned: Vec<Vec<Box<[u8]>>> = Vec::new();
            for r in 0..n_runs {
                // One big run among small ones, as in the pipeline; few
                // distinct rows and timestamps so that equal cells (same
                // row, ts and seq in two runs) occur.
                let len = if r == n_runs - 1 { rng.below(400) } else { rng.below(40) };
                let mut cells: Vec<Box<[u8]>> =
                    (0..len).map(|_| cell(rng.below(60) as u32, rng.below(3), 1 + rng.below(3))).collect();
                cells.sort_by(|a, b| cmp(a.as_ptr(), b.as_ptr()));
                owned.push(cells);
            }
            let runs: Vec<Vec<*const u8>> = owned.iter().map(|r| r.iter().map(|c| c.as_ptr()).collect()).collect();
            let want = reference(&runs);
            let want_columns = unsafe { count_columns(&want) };
            // Some runs come with their column count known, some without.
            let as_runs = |count_known: bool| -> Vec<Run<*const u8>> {
                runs.iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let known = count_known && i % 2 == 0;
                        Run::new(r.clone(), known.then(|| unsafe { count_columns(r) }))
                    })
                    .collect()
            };
            let got = unsafe { merge_newest_first(as_runs(false), false, &|| false) }.expect("not stopped");
            assert_eq!(got.cells, want, "round {round}: same cells, same order, same tie winners");
            assert_eq!(got.columns, None, "round {round}: nothing counted unless asked");
            for known in [false, true] {
                let got = unsafe { merge_newest_first(as_runs(known), true, &|| false) }.expect("not stopped");
                assert_eq!(got.cells, want, "round {round}: counting does not change the merge");
                assert_eq!(got.columns, Some(want_columns), "round {round}: columns of the merged run");
            }
        }
    }

    #[test]
    fn a_stop_request_abandons_the_merge() {
        let cells: Vec<Box<[u8]>> = (0..3).map(|i| cell(i, 1, 1)).collect();
        let runs = cells.iter().map(|c| Run::new(vec![c.as_ptr()], None)).collect();
        assert!(unsafe { merge_newest_first(runs, true, &|| true) }.is_none());
    }
}
