//! `CursorHeap`: the binary min-heap behind every merging cursor (the
//! memstore's over its segments, the store's over memstore and files). It
//! orders cursor *indices* by each cursor's current cell; ties go to the
//! lower index — the newer source — so that the newest write of a key wins.
//!
//! Invariants: `heap` holds exactly the indices of non-exhausted cursors and
//! satisfies the heap property for the cursors' current cells, as long as
//! callers report every move of a cursor (`rebuild` after seeks,
//! `top_advanced` after advancing the top). `runner_up`, when set, is the
//! heap position (1 or 2) of the root's smaller child: the second-smallest
//! cursor. Only a step of the top leaves it valid; every other change of
//! the heap's shape clears it.
//!
//! Why the runner-up: a scan mostly steps one source through a run of
//! cells (a row's columns sit together in one segment or file), and while
//! the top alone moves the root's children stay put. Knowing the smaller
//! of them, a step that leaves the top in front costs one comparison
//! instead of a sift's two (measured: the sift's comparisons were a tenth
//! of a YCSB E scan's server CPU).
//!
//! Thread safety: plain data, owned by one merging cursor.

use std::cmp::Ordering;

use crate::cell::{CellRef, compare_cells, same_cell};

/// A cursor the heap can order.
pub trait HeapCursor {
    fn current(&self) -> Option<CellRef<'_>>;
}

#[derive(Debug, Default, Clone)]
pub struct CursorHeap {
    heap: Vec<usize>,
    runner_up: Option<usize>,
}

fn less<C: HeapCursor>(cursors: &[C], a: usize, b: usize) -> bool {
    match (cursors[a].current(), cursors[b].current()) {
        (Some(x), Some(y)) => compare_cells(&x, &y).then(a.cmp(&b)) == Ordering::Less,
        (Some(_), None) => true,
        _ => false,
    }
}

impl CursorHeap {
    /// The index of the cursor with the smallest current cell.
    #[inline]
    pub fn top(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    /// Whether another cursor's current cell equals the top's (the same
    /// cell in two sources). Such a cursor is a child of the top: every
    /// cell is >= the top's, so the path down to an equal one is all equal.
    #[inline]
    pub fn top_has_equal<C: HeapCursor>(&self, cursors: &[C]) -> bool {
        let Some(top) = self.heap.first().and_then(|&i| cursors[i].current()) else { return false };
        self.heap[1..self.heap.len().min(3)].iter().any(|&j| cursors[j].current().is_some_and(|c| same_cell(&c, &top)))
    }

    /// Orders all cursors anew (after seeks).
    pub fn rebuild<C: HeapCursor>(&mut self, cursors: &[C]) {
        // Refilled in place: a get seeks (and so rebuilds) once per source,
        // and a fresh vector each time was an allocation per seek.
        self.heap.clear();
        self.runner_up = None;
        self.heap.extend((0..cursors.len()).filter(|&i| cursors[i].current().is_some()));
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(cursors, i);
        }
    }

    /// Restores the heap after the top cursor moved forward (or ran out).
    pub fn top_advanced<C: HeapCursor>(&mut self, cursors: &[C]) {
        let Some(&top) = self.heap.first() else { return };
        if cursors[top].current().is_none() {
            let last = self.heap.pop().expect("heap is non-empty");
            self.runner_up = None;
            if self.heap.is_empty() {
                return;
            }
            self.heap[0] = last;
            self.sift_down(cursors, 0);
            return;
        }
        let n = self.heap.len();
        if n == 1 {
            return;
        }
        let runner_up = *self
            .runner_up
            .get_or_insert_with(|| if n > 2 && less(cursors, self.heap[2], self.heap[1]) { 2 } else { 1 });
        if less(cursors, top, self.heap[runner_up]) {
            return; // still in front of both children
        }
        // The runner-up is the smallest now: it takes the root, and the
        // old top sifts down from its place.
        self.heap.swap(0, runner_up);
        self.runner_up = None;
        self.sift_down(cursors, runner_up);
    }

    /// Takes the top cursor out of the merge (its source failed).
    pub fn drop_top<C: HeapCursor>(&mut self, cursors: &[C]) {
        self.runner_up = None;
        if self.heap.is_empty() {
            return;
        }
        let last = self.heap.pop().expect("heap is non-empty");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(cursors, 0);
        }
    }

    fn sift_down<C: HeapCursor>(&mut self, cursors: &[C], mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < n && less(cursors, self.heap[l], self.heap[smallest]) {
                smallest = l;
            }
            if r < n && less(cursors, self.heap[r], self.heap[smallest]) {
                smallest = r;
            }
            if smallest == i {
                return;
            }
            self.heap.swap(i, smallest);
            i = smallest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;

    /// A cursor over owned encoded cells.
    struct VecCursor {
        cells: Vec<Vec<u8>>,
        pos: usize,
    }

    impl HeapCursor for VecCursor {
        fn current(&self) -> Option<CellRef<'_>> {
            self.cells.get(self.pos).map(|c| CellRef::new(c))
        }
    }

    fn cursor(rows: &[&str], value: &[u8]) -> VecCursor {
        VecCursor {
            cells: rows.iter().map(|r| CellInput::put(r.as_bytes(), b"f", b"q", 1, value).to_encoded(1)).collect(),
            pos: 0,
        }
    }

    fn drain(heap: &mut CursorHeap, cursors: &mut [VecCursor]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(top) = heap.top() {
            let c = cursors[top].current().expect("top is not exhausted");
            out.push((String::from_utf8_lossy(c.row()).into_owned(), c.value().to_vec()));
            cursors[top].pos += 1;
            heap.top_advanced(cursors);
        }
        out
    }

    #[test]
    fn orders_by_cell_and_prefers_the_newer_source_on_ties() {
        let mut cursors = vec![cursor(&["b", "d"], b"new"), cursor(&["a", "b", "c"], b"old"), cursor(&[], b"")];
        let mut heap = CursorHeap::default();
        heap.rebuild(&cursors);
        let got = drain(&mut heap, &mut cursors);
        let rows: Vec<&str> = got.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(rows, ["a", "b", "b", "c", "d"]);
        assert_eq!(got[1].1, b"new", "the equal cell of the first (newer) cursor comes first");
    }

    #[test]
    fn a_merge_of_many_cursors_yields_the_sorted_union_whatever_the_runs() {
        // Cursors holding long runs (the runner-up shortcut's case: the top
        // steps many times before another cursor comes first) and short
        // interleaved ones, of every heap size up to nine: the merge must be
        // the stable sort of the union, newer cursor first on ties.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..200 {
            let sources = 1 + (round % 9) as usize;
            let mut rows: Vec<Vec<String>> = Vec::new();
            for _ in 0..sources {
                let run = 1 + next(if round % 2 == 0 { 30 } else { 3 });
                let mut r: Vec<String> = Vec::new();
                let mut at = next(40);
                for _ in 0..next(25) {
                    for _ in 0..run {
                        r.push(format!("{at:04}"));
                        at += 1 + next(2);
                    }
                    at += next(60);
                }
                r.dedup();
                rows.push(r);
            }
            let mut cursors: Vec<VecCursor> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| cursor(&r.iter().map(String::as_str).collect::<Vec<_>>(), i.to_string().as_bytes()))
                .collect();
            let mut expected: Vec<(String, Vec<u8>)> = rows
                .iter()
                .enumerate()
                .flat_map(|(i, r)| r.iter().map(move |row| (row.clone(), i.to_string().into_bytes())))
                .collect();
            expected.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.len().cmp(&b.1.len())).then_with(|| a.1.cmp(&b.1)));
            let mut heap = CursorHeap::default();
            heap.rebuild(&cursors);
            assert_eq!(drain(&mut heap, &mut cursors), expected, "round {round}: {rows:?}");
        }
    }

    #[test]
    fn a_dropped_source_leaves_the_others_in_order() {
        let mut cursors = vec![cursor(&["a", "x"], b"1"), cursor(&["b", "c"], b"2")];
        let mut heap = CursorHeap::default();
        heap.rebuild(&cursors);
        assert_eq!(heap.top(), Some(0));
        heap.drop_top(&cursors);
        let rows: Vec<String> = drain(&mut heap, &mut cursors).into_iter().map(|(r, _)| r).collect();
        assert_eq!(rows, ["b", "c"]);
    }

    #[test]
    fn top_has_equal_finds_a_copy_of_the_top_in_any_cursor() {
        // Seven cursors (a heap three deep) sharing some rows: at every
        // step the heap's answer matches a look at every cursor.
        let rows: [&[&str]; 7] =
            [&["a", "c"], &["b", "c", "e"], &["c"], &["d", "e"], &["a", "e"], &["f"], &["c", "f", "g"]];
        let mut cursors: Vec<VecCursor> = rows.iter().map(|r| cursor(r, b"v")).collect();
        let mut heap = CursorHeap::default();
        heap.rebuild(&cursors);
        let (mut steps, mut copies) = (0, 0);
        while let Some(top) = heap.top() {
            let cell = cursors[top].current().expect("top is not exhausted");
            let expected = (0..cursors.len())
                .any(|i| i != top && cursors[i].current().is_some_and(|c| compare_cells(&c, &cell) == Ordering::Equal));
            assert_eq!(heap.top_has_equal(&cursors), expected, "at {:?}", String::from_utf8_lossy(cell.row()));
            copies += usize::from(expected);
            steps += 1;
            cursors[top].pos += 1;
            heap.top_advanced(&cursors);
        }
        assert_eq!(steps, 14);
        assert_eq!(copies, 7, "a, c, e and f are shared: each but its last cell has a copy after it");
    }
}
