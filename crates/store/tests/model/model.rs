//! The model: every cell ever written, reads computed from them by brute
//! force (see the rules in the test's header).

use std::collections::{BTreeMap, BTreeSet};

use memstore::{Cell, CellType, TimeRange};
use store::{Column, Get, Scan};

use crate::ops::{FAMILIES, TTL_SECS, now_ms};
use crate::setup::Setup;

/// One cell ever written (and not purged by a major compaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelCell {
    pub(crate) row: Vec<u8>,
    pub(crate) family: Vec<u8>,
    pub(crate) qualifier: Vec<u8>,
    pub(crate) ts: u64,
    pub(crate) kind: CellType,
    pub(crate) value: Vec<u8>,
    /// The model's own write order: of two writes of one version, the later wins.
    pub(crate) order: u64,
    /// The store's sequence id of the write (reads return it; a cell is in a
    /// store file once its family store's flushed sequence id reaches it).
    pub(crate) seq: u64,
}

impl ModelCell {
    /// Whether the marker `self` hides `put` (of the same row and family).
    pub(crate) fn masks(&self, put: &ModelCell) -> bool {
        let same_column = self.qualifier == put.qualifier;
        match self.kind {
            CellType::DeleteFamily => put.ts <= self.ts,
            CellType::DeleteFamilyVersion => put.ts == self.ts,
            CellType::DeleteColumn => same_column && put.ts <= self.ts,
            CellType::Delete => same_column && put.ts == self.ts,
            CellType::Put => false,
        }
    }

    /// Two cells of one mutation with the same full key (one sequence id):
    /// the later replaces the earlier (last writer wins, as in HBase's
    /// memstore).
    pub(crate) fn same_key(&self, other: &ModelCell) -> bool {
        (&self.family, &self.qualifier, self.ts, self.kind) == (&other.family, &other.qualifier, other.ts, other.kind)
    }

    pub(crate) fn to_cell(&self) -> Cell {
        Cell {
            row: self.row.clone().into(),
            family: self.family.clone().into(),
            qualifier: self.qualifier.clone().into(),
            timestamp: self.ts,
            cell_type: self.kind,
            value: self.value.clone().into(),
            seq: self.seq,
        }
    }
}

/// Whether a read asking for `columns` wants this column (none: every column).
pub(crate) fn wanted(columns: &[Column], family: &[u8], qualifier: &[u8]) -> bool {
    columns.is_empty()
        || columns.iter().any(|c| c.family == family && c.qualifier.as_deref().is_none_or(|q| q == qualifier))
}

pub(crate) fn in_time_range(range: &TimeRange, ts: u64) -> bool {
    ts >= range.min && (ts < range.max || range.max == u64::MAX)
}

#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) max_versions: [u32; 2],
    /// Per family.
    pub(crate) ttl_ms: [Option<u64>; 2],
    pub(crate) cells: Vec<ModelCell>,
    pub(crate) next_order: u64,
}

impl Model {
    pub(crate) fn new(setup: &Setup) -> Model {
        let ttl_ms = setup.ttl.map(|ttl| ttl.then_some(TTL_SECS * 1000));
        Model { max_versions: setup.max_versions, ttl_ms, cells: Vec::new(), next_order: 1 }
    }

    pub(crate) fn family_index(family: &[u8]) -> usize {
        FAMILIES.iter().position(|f| *f == family).expect("a family of the table")
    }

    pub(crate) fn family_versions(&self, family: &[u8]) -> usize {
        self.max_versions[Self::family_index(family)] as usize
    }

    /// Whether a put of `family` at `ts` has expired (by the wall clock: the
    /// timestamps are either decades old or minutes, far from any edge).
    pub(crate) fn expired(&self, family: &[u8], ts: u64) -> bool {
        self.ttl_ms[Self::family_index(family)].is_some_and(|ttl| ts < now_ms() - ttl)
    }

    /// Records one row mutation's cells, all under sequence id `seq`.
    pub(crate) fn write(&mut self, cells: Vec<ModelCell>, seq: u64) {
        let order = self.next_order;
        self.next_order += 1;
        let mut written: Vec<ModelCell> = Vec::new();
        for cell in cells {
            written.retain(|w| !w.same_key(&cell));
            written.push(ModelCell { order, seq, ..cell });
        }
        self.cells.extend(written);
    }

    /// The versions of one column of `cells` (the cells of one row and
    /// family), newest first: puts deduplicated by timestamp (the latest
    /// write wins), then the family's newest `max_versions` timestamps; with
    /// whether a marker of `cells` masks each.
    pub(crate) fn versions<'a>(
        &self,
        cells: &[&'a ModelCell],
        family: &[u8],
        qualifier: &[u8],
    ) -> Vec<(&'a ModelCell, bool)> {
        let mut by_ts: BTreeMap<u64, &ModelCell> = BTreeMap::new();
        for c in cells.iter().filter(|c| c.kind == CellType::Put && c.qualifier == qualifier) {
            let newest = by_ts.entry(c.ts).or_insert(c);
            if c.order > newest.order {
                *newest = c;
            }
        }
        by_ts
            .values()
            .rev()
            .take(self.family_versions(family))
            .map(|put| (*put, cells.iter().any(|m| m.masks(put))))
            .collect()
    }

    /// The visible cells of `get.row`, by brute force.
    pub(crate) fn get(&self, get: &Get) -> Vec<Cell> {
        let mut out = Vec::new();
        for family in FAMILIES {
            let cells: Vec<&ModelCell> = self.cells.iter().filter(|c| c.row == get.row && c.family == family).collect();
            let qualifiers: BTreeSet<&[u8]> =
                cells.iter().filter(|c| c.kind == CellType::Put).map(|c| c.qualifier.as_slice()).collect();
            for qualifier in qualifiers {
                if !wanted(&get.columns, family, qualifier) {
                    continue;
                }
                let visible = self
                    .versions(&cells, family, qualifier)
                    .into_iter()
                    .filter(|(put, masked)| {
                        !masked && !self.expired(family, put.ts) && in_time_range(&get.time_range, put.ts)
                    })
                    .take(get.max_versions.max(1) as usize)
                    .map(|(put, _)| put.to_cell());
                out.extend(visible);
            }
        }
        out
    }

    /// The newest visible version of a column.
    pub(crate) fn latest(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> Option<Cell> {
        let column = Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) };
        self.get(&Get { columns: vec![column], ..Get::new(row) }).into_iter().next()
    }

    /// What a scan returns, by brute force over every row ever written.
    pub(crate) fn scan(&self, scan: &Scan) -> Vec<Vec<Cell>> {
        let bound = |k: &Option<Vec<u8>>| k.clone().filter(|k| !k.is_empty());
        let (start, stop) = (bound(&scan.start), bound(&scan.stop));
        let in_range = |row: &[u8]| {
            let bounded = if scan.reverse {
                start.as_deref().is_none_or(|s| row <= s) && stop.as_deref().is_none_or(|s| row > s)
            } else {
                start.as_deref().is_none_or(|s| row >= s) && stop.as_deref().is_none_or(|s| row < s)
            };
            bounded && scan.prefix.as_deref().is_none_or(|p| row.starts_with(p))
        };
        let mut rows: Vec<&[u8]> =
            self.cells.iter().map(|c| c.row.as_slice()).collect::<BTreeSet<_>>().into_iter().collect();
        if scan.reverse {
            rows.reverse();
        }
        let results = rows
            .into_iter()
            .filter(|row| in_range(row))
            .map(|row| {
                self.get(&Get {
                    row: row.to_vec(),
                    columns: scan.columns.clone(),
                    time_range: scan.time_range,
                    max_versions: scan.max_versions,
                })
            })
            .filter(|cells| !cells.is_empty())
            .take(scan.limit.map_or(usize::MAX, |l| l as usize));
        match scan.batch.filter(|&b| b > 0) {
            Some(b) => results.flat_map(|cells| cells.chunks(b).map(<[Cell]>::to_vec).collect::<Vec<_>>()).collect(),
            None => results.collect(),
        }
    }

    /// A major compaction of every family store, by the rule in the header
    /// of `visibility.rs`. It sees the cells in store files (`seq <=` the
    /// store's flushed sequence id), and of those uses as evidence only the
    /// ones every reader sees (`seq <=` its smallest read point, which held
    /// scanners pin); `store_of(row, family)` gives both. It drops the
    /// evidence markers, and every put that no reader at or above the
    /// smallest read point can see by the evidence: masked by an evidence
    /// marker, an older write of a version an evidence put rewrote, or
    /// behind the family's maximum of newer evidence versions (deleted ones
    /// count).
    pub(crate) fn major_compact(&mut self, store_of: impl Fn(&[u8], &[u8]) -> (u64, u64)) {
        let compacted: Vec<(bool, bool)> = self
            .cells
            .iter()
            .map(|c| {
                let (flushed_seq, smallest_read_point) = store_of(&c.row, &c.family);
                (c.seq <= flushed_seq, c.seq <= smallest_read_point)
            })
            .collect();
        let evidence = |i: usize| compacted[i].0 && compacted[i].1;
        let purge: Vec<bool> = (0..self.cells.len())
            .map(|i| {
                let c = &self.cells[i];
                if !compacted[i].0 {
                    return false; // still in a memstore
                }
                if c.kind != CellType::Put {
                    return evidence(i);
                }
                let mut newer_versions = BTreeSet::new();
                let mut dropped = false;
                for (j, e) in self.cells.iter().enumerate() {
                    if !evidence(j) || e.row != c.row || e.family != c.family {
                        continue;
                    }
                    if e.kind != CellType::Put {
                        dropped |= e.masks(c);
                    } else if e.qualifier == c.qualifier {
                        dropped |= e.ts == c.ts && e.order > c.order;
                        if e.ts > c.ts {
                            newer_versions.insert(e.ts);
                        }
                    }
                }
                dropped || newer_versions.len() >= self.family_versions(&c.family)
            })
            .collect();
        let mut i = 0;
        self.cells.retain(|_| {
            i += 1;
            !purge[i - 1]
        });
    }
}
