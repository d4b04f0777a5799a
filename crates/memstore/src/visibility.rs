//! Which cells a reader sees, and which cells a compaction may drop: HBase's
//! version, delete, TTL and MVCC rules over a sorted cell stream.
//!
//! For a reader at read point `rp`, in one column:
//! 1. only cells with `seq <= rp` exist (puts and delete markers alike);
//! 2. puts are deduplicated by timestamp (the highest seq wins);
//! 3. the newest `max_versions` timestamps (the family's setting) are the
//!    column's versions — deleted versions still occupy their slot, so that
//!    deleting a version never resurrects an older one (HBase's behaviour
//!    once a flush has dropped the excess versions; we do not reproduce its
//!    pre-flush variance);
//! 4. a version is hidden if a delete marker masks it — DeleteFamily (ts ≤ T,
//!    any column), DeleteFamilyVersion (ts = T, any column), DeleteColumn
//!    (ts ≤ T), Delete (ts = T) — regardless of which was written first, as
//!    in HBase; or if its TTL has expired; or if it is outside the request's
//!    time range;
//! 5. at most the request's `max_versions` survivors are returned.
//!
//! A compaction at smallest read point `srp` drops a put only when no reader
//! with `rp >= srp` can see it, using only cells with `seq <= srp` as
//! evidence. Delete markers are kept, except by a *major* compaction (which
//! sees every file of the store): it drops the markers with `seq <= srp`
//! together with every put they mask, as HBase does — so a put written later
//! with a timestamp at or below a purged marker's is visible again.
//!
//! Thread safety: plain single-threaded state machines.

use smallvec::SmallVec;

use crate::cell::{CellRef, CellType, bytes_equal};
use crate::row_cells::CellCollector;

/// A family's version rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRules {
    /// Versions kept per column (HBase default 1).
    pub max_versions: u32,
    /// Cells older than this many milliseconds (by timestamp) are expired.
    pub ttl_ms: Option<u64>,
}

impl Default for VersionRules {
    fn default() -> Self {
        VersionRules { max_versions: 1, ttl_ms: None }
    }
}

impl VersionRules {
    /// Timestamps strictly below the returned value are expired at `now_ms`.
    pub fn expiry_cutoff(&self, now_ms: u64) -> u64 {
        self.ttl_ms.map_or(0, |ttl| now_ms.saturating_sub(ttl))
    }
}

/// A half-open timestamp range `[min, max)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub min: u64,
    pub max: u64,
}

impl TimeRange {
    pub const ALL: TimeRange = TimeRange { min: 0, max: u64::MAX };

    pub fn contains(&self, ts: u64) -> bool {
        ts >= self.min && (ts < self.max || self.max == u64::MAX)
    }
}

impl Default for TimeRange {
    fn default() -> Self {
        TimeRange::ALL
    }
}

/// What a read asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Cells with a higher sequence id are invisible.
    pub read_point: u64,
    /// Only these qualifiers (sorted or not); `None` for all.
    pub qualifiers: Option<Vec<Vec<u8>>>,
    pub time_range: TimeRange,
    /// Versions per column to return.
    pub max_versions: u32,
    /// The time used for TTL; `None` uses the memstore's clock.
    pub now_ms: Option<u64>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            read_point: u64::MAX,
            qualifiers: None,
            time_range: TimeRange::ALL,
            max_versions: 1,
            now_ms: None,
        }
    }
}

/// Per-family and per-column delete state shared by both trackers.
///
/// The row, family and qualifier it compares against are kept inline up to
/// a typical key's size: a reader makes one of these per row and family,
/// and three heap copies per row were a third of a YCSB E scan's
/// allocations.
#[derive(Default)]
struct DeleteState {
    row: SmallVec<[u8; 32]>,
    family: SmallVec<[u8; 8]>,
    family_delete: Option<u64>,
    family_version_deletes: Vec<u64>,
    qualifier: SmallVec<[u8; 24]>,
    column_delete: Option<u64>,
    version_deletes: Vec<u64>,
    last_ts: Option<u64>,
    slots: u32,
    started: bool,
}

impl DeleteState {
    /// Resets state when `cell` starts a new row, family or column.
    fn enter(&mut self, cell: &CellRef<'_>) -> bool {
        let new_family =
            !self.started || !bytes_equal(cell.family(), &self.family) || !bytes_equal(cell.row(), &self.row);
        if new_family {
            self.row.clear();
            self.row.extend_from_slice(cell.row());
            self.family.clear();
            self.family.extend_from_slice(cell.family());
            self.family_delete = None;
            self.family_version_deletes.clear();
        }
        let new_column = new_family || !bytes_equal(cell.qualifier(), &self.qualifier);
        if new_column {
            self.qualifier.clear();
            self.qualifier.extend_from_slice(cell.qualifier());
            self.column_delete = None;
            self.version_deletes.clear();
            self.last_ts = None;
            self.slots = 0;
        }
        self.started = true;
        new_column
    }

    fn record_marker(&mut self, t: CellType, ts: u64) {
        match t {
            CellType::DeleteFamily => self.family_delete = Some(self.family_delete.map_or(ts, |d| d.max(ts))),
            CellType::DeleteFamilyVersion => self.family_version_deletes.push(ts),
            CellType::DeleteColumn => self.column_delete = Some(self.column_delete.map_or(ts, |d| d.max(ts))),
            CellType::Delete => self.version_deletes.push(ts),
            CellType::Put => {}
        }
    }

    /// Masked by a range delete (DeleteFamily / DeleteColumn).
    fn range_masked(&self, ts: u64) -> bool {
        self.family_delete.is_some_and(|d| ts <= d) || self.column_delete.is_some_and(|d| ts <= d)
    }

    fn masked(&self, ts: u64) -> bool {
        self.range_masked(ts) || self.family_version_deletes.contains(&ts) || self.version_deletes.contains(&ts)
    }
}

/// Resolves the visible cells of one row from its sorted cells.
pub struct RowResolver<'o> {
    opts: &'o ReadOptions,
    rules: VersionRules,
    cutoff: u64,
    state: DeleteState,
    returned: u32,
    wanted: bool,
}

impl<'o> RowResolver<'o> {
    pub fn new(opts: &'o ReadOptions, rules: VersionRules, now_ms: u64) -> Self {
        RowResolver {
            opts,
            rules,
            cutoff: rules.expiry_cutoff(opts.now_ms.unwrap_or(now_ms)),
            state: DeleteState::default(),
            returned: 0,
            wanted: true,
        }
    }

    /// Feeds the next cell of the row (in sorted order); visible ones are
    /// appended to `out`. True when no later cell of this cell's column can
    /// be visible (the versions asked for are returned, the family's
    /// versions are used up, or the column is not asked for): the caller
    /// may skip to the next column, as HBase's matcher answers
    /// `SEEK_NEXT_COL`.
    pub fn push(&mut self, cell: CellRef<'_>, out: &mut CellCollector) -> bool {
        if cell.seq() > self.opts.read_point {
            return false;
        }
        if self.state.enter(&cell) {
            self.returned = 0;
            self.wanted = self.opts.qualifiers.as_ref().is_none_or(|qs| qs.iter().any(|q| q == cell.qualifier()));
        }
        let t = cell.cell_type();
        if t.is_delete() {
            self.state.record_marker(t, cell.timestamp());
            return false;
        }
        let ts = cell.timestamp();
        let st = &mut self.state;
        if st.last_ts == Some(ts) {
            return self.column_done(); // an older write of the same version
        }
        st.last_ts = Some(ts);
        st.slots += 1;
        if !(st.slots > self.rules.max_versions
            || !self.wanted
            || st.masked(ts)
            || ts < self.cutoff
            || !self.opts.time_range.contains(ts)
            || self.returned >= self.opts.max_versions)
        {
            self.returned += 1;
            out.push(cell);
        }
        self.column_done()
    }

    /// Whether no later cell of the current column can be visible: later
    /// cells are older versions (or older writes of one), and a version is
    /// returned only while fewer than the family's versions were seen and
    /// fewer than the read's were returned.
    fn column_done(&self) -> bool {
        !self.wanted || self.state.slots >= self.rules.max_versions || self.returned >= self.opts.max_versions
    }
}

/// Decides, cell by cell over a sorted stream, what a compaction keeps.
pub struct CompactionRetainer {
    smallest_read_point: u64,
    major: bool,
    rules: VersionRules,
    cutoff: u64,
    state: DeleteState,
    /// Whether the last cell [`keep`](Self::keep) saw started a column.
    new_column: bool,
}

impl CompactionRetainer {
    pub fn new(smallest_read_point: u64, rules: VersionRules, now_ms: u64) -> Self {
        CompactionRetainer {
            smallest_read_point,
            major: false,
            rules,
            cutoff: rules.expiry_cutoff(now_ms),
            state: DeleteState::default(),
            new_column: false,
        }
    }

    /// A retainer for a major compaction (all of a store's files at once).
    pub fn major(smallest_read_point: u64, rules: VersionRules, now_ms: u64) -> Self {
        CompactionRetainer { major: true, ..Self::new(smallest_read_point, rules, now_ms) }
    }

    /// Whether the cell last passed to [`keep`](Self::keep) was the first
    /// of its (row, family, qualifier) column: a compaction counting the
    /// columns it keeps asks here rather than comparing the cells again.
    pub fn started_column(&self) -> bool {
        self.new_column
    }

    /// Whether `cell` (the next in sorted order) must be kept.
    pub fn keep(&mut self, cell: CellRef<'_>) -> bool {
        self.new_column = self.state.enter(&cell);
        let evidence = cell.seq() <= self.smallest_read_point;
        let t = cell.cell_type();
        let ts = cell.timestamp();
        if t.is_delete() {
            if evidence {
                self.state.record_marker(t, ts);
            }
            return !(self.major && evidence);
        }
        let st = &mut self.state;
        // Every reader that sees this put also sees the visible newer write of
        // the same timestamp (same version, higher seq) or the markers.
        let shadowed = st.last_ts == Some(ts);
        let beyond_versions = !shadowed && st.slots >= self.rules.max_versions;
        let masked = if self.major { st.masked(ts) } else { st.range_masked(ts) };
        let drop = shadowed || beyond_versions || ts < self.cutoff || masked;
        if evidence && !shadowed {
            st.last_ts = Some(ts);
            st.slots += 1;
        }
        !drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellInput;

    fn cell(q: &[u8], ts: u64, t: CellType, seq: u64) -> Vec<u8> {
        let value: &[u8] = if t == CellType::Put { b"v" } else { b"" };
        CellInput { row: b"r", family: b"f", qualifier: q, timestamp: ts, cell_type: t, value }.to_encoded(seq)
    }

    fn resolve(cells: &[Vec<u8>], opts: &ReadOptions, rules: VersionRules) -> Vec<(u64, u64)> {
        let mut r = RowResolver::new(opts, rules, 1_000);
        let mut out = CellCollector::new();
        for c in cells {
            r.push(CellRef::new(c), &mut out);
        }
        out.take().iter().map(|c| (c.timestamp, c.seq)).collect()
    }

    fn retained(cells: &[Vec<u8>], srp: u64, rules: VersionRules) -> Vec<bool> {
        let mut r = CompactionRetainer::new(srp, rules, 1_000);
        cells.iter().map(|c| r.keep(CellRef::new(c))).collect()
    }

    const THREE: VersionRules = VersionRules { max_versions: 3, ttl_ms: None };

    #[test]
    fn newest_seq_wins_at_equal_timestamp_and_versions_are_capped() {
        let cells = [
            cell(b"q", 9, CellType::Put, 5),
            cell(b"q", 9, CellType::Put, 2),
            cell(b"q", 7, CellType::Put, 1),
            cell(b"q", 5, CellType::Put, 1),
            cell(b"q", 3, CellType::Put, 1),
        ];
        let all = ReadOptions { max_versions: 10, ..ReadOptions::default() };
        assert_eq!(resolve(&cells, &all, THREE), [(9, 5), (7, 1), (5, 1)]);
        let at_3 = ReadOptions { read_point: 3, ..all.clone() };
        assert_eq!(resolve(&cells, &at_3, THREE), [(9, 2), (7, 1), (5, 1)]);
        assert_eq!(retained(&cells, 10, THREE), [true, false, true, true, false]);
        // With srp 1 only seq-1 cells are evidence: nothing newer may hide them.
        assert_eq!(retained(&cells, 1, THREE), [true, true, true, true, true]);
    }

    #[test]
    fn each_delete_type_masks_what_hbase_masks() {
        let cells = [
            cell(b"", 6, CellType::DeleteFamily, 9),
            cell(b"", 4, CellType::DeleteFamilyVersion, 9),
            cell(b"a", 8, CellType::Put, 1),
            cell(b"a", 6, CellType::Put, 10), // masked by DeleteFamily even though written after it
            cell(b"b", 9, CellType::Delete, 9),
            cell(b"b", 9, CellType::Put, 1),
            cell(b"b", 8, CellType::Put, 1), // occupies a slot behind the deleted version
            cell(b"c", 7, CellType::DeleteColumn, 9),
            cell(b"c", 8, CellType::Put, 1),
            cell(b"c", 7, CellType::Put, 1),
        ];
        let all = ReadOptions { max_versions: 10, ..ReadOptions::default() };
        let one = VersionRules::default();
        let got = resolve(&cells, &all, one);
        assert_eq!(got, [(8, 1), (8, 1)], "a@8 and c@8 survive; b's only slot is deleted");
        let three = resolve(&cells, &all, THREE);
        assert_eq!(three, [(8, 1), (8, 1), (8, 1)]);
        // Before the markers are visible nothing is masked.
        let early = ReadOptions { read_point: 1, ..all };
        assert_eq!(resolve(&cells, &early, one).len(), 3);
        let keep = retained(&cells, 9, one);
        assert_eq!(keep, [true, true, true, false, true, true, false, true, true, false]);
    }

    #[test]
    fn major_compaction_purges_markers_and_what_they_mask() {
        let cells = [
            cell(b"", 6, CellType::DeleteFamily, 9),
            cell(b"a", 8, CellType::Put, 1),
            cell(b"a", 6, CellType::Put, 10),
            cell(b"b", 9, CellType::Delete, 9),
            cell(b"b", 9, CellType::Put, 1),
            cell(b"b", 8, CellType::Put, 1),
            cell(b"c", 7, CellType::DeleteColumn, 20),
            cell(b"c", 7, CellType::Put, 1),
        ];
        let mut r = CompactionRetainer::major(10, THREE, 0);
        let keep: Vec<bool> = cells.iter().map(|c| r.keep(CellRef::new(c))).collect();
        // The DeleteColumn at seq 20 is newer than the oldest reader: it and
        // the put it masks stay.
        assert_eq!(keep, [false, true, false, false, false, true, true, true]);
    }

    #[test]
    fn retention_state_restarts_at_each_row() {
        let mk = |row: &[u8], seq| CellInput::put(row, b"f", b"q", seq, b"v").to_encoded(seq);
        let cells = [mk(b"a", 2), mk(b"a", 1), mk(b"b", 3), mk(b"c", 4)];
        let mut r = CompactionRetainer::new(10, VersionRules::default(), 0);
        let keep: Vec<bool> = cells.iter().map(|c| r.keep(CellRef::new(c))).collect();
        assert_eq!(keep, [true, false, true, true]);
    }

    #[test]
    fn ttl_time_range_and_qualifier_filters() {
        let cells =
            [cell(b"a", 900, CellType::Put, 1), cell(b"b", 500, CellType::Put, 1), cell(b"c", 950, CellType::Put, 1)];
        let rules = VersionRules { max_versions: 1, ttl_ms: Some(200) };
        let all = ReadOptions::default();
        assert_eq!(resolve(&cells, &all, rules), [(900, 1), (950, 1)]);
        let range = ReadOptions { time_range: TimeRange { min: 920, max: 1000 }, ..ReadOptions::default() };
        assert_eq!(resolve(&cells, &range, rules), [(950, 1)]);
        let only_a = ReadOptions { qualifiers: Some(vec![b"a".to_vec()]), ..ReadOptions::default() };
        assert_eq!(resolve(&cells, &only_a, rules), [(900, 1)]);
        assert_eq!(retained(&cells, 5, rules), [true, false, true]);
    }
}
