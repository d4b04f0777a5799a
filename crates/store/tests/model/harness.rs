//! The harness: one store and its model; applies each operation to both
//! and compares every read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use memstore::{Cell, CellType};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use store::read::scanner::Scanner;
use store::region::Region;
use store::{Column, Get, Mutation, RegionInfo, RegionState, Scan, Store, StoreError};

use crate::model::{Model, ModelCell};
use crate::ops::{
    COUNTER, Change, Expect, FAMILIES, GET_ROWS, MAX_SCANNERS, NOTHING_TO_DELETE_TS, Op, QUALIFIERS, ROWS, Refusal,
    SPLIT_AT, ScanSpec, TABLE, Timestamps, refusal,
};
use crate::root::Root;
use crate::scans::{Expected, Got, HeldScanner, ScanExpect, prefix_successor, walk_bounds};
use crate::setup::Setup;

pub(crate) struct Harness {
    pub(crate) setup: Setup,
    pub(crate) root: Root,
    pub(crate) path: PathBuf,
    pub(crate) store: Option<Store>,
    pub(crate) model: Model,
    pub(crate) scanners: Vec<HeldScanner>,
    /// Whether the table is enabled.
    pub(crate) enabled: bool,
    /// The key ranges (start, end) of the closed regions.
    pub(crate) closed: BTreeSet<(Vec<u8>, Vec<u8>)>,
    pub(crate) timestamps: Timestamps,
    /// The operation being applied (for failure messages and unique values).
    pub(crate) step: String,
    pub(crate) op_index: usize,
}

/// Whether `result` is the refusal of a disabled table (`disabled`) or of an
/// enabled one.
pub(crate) fn is_disabled_error<T>(result: &store::Result<T>, disabled: bool) -> bool {
    match result {
        Err(StoreError::TableDisabled(_)) => disabled,
        Err(StoreError::TableEnabled(_)) => !disabled,
        _ => false,
    }
}

/// Whether `result` is the refusal of a closed region.
pub(crate) fn is_not_serving<T>(result: &store::Result<T>) -> bool {
    matches!(result, Err(StoreError::NotServingRegion { state: RegionState::Closed, .. }))
}

/// A region's key range (what identifies a closed region).
pub(crate) fn range(info: &RegionInfo) -> (Vec<u8>, Vec<u8>) {
    (info.start_key.clone(), info.end_key.clone())
}

pub(crate) fn region_containing(regions: &[RegionInfo], key: &[u8]) -> RegionInfo {
    regions.iter().find(|r| r.contains(key)).expect("regions cover every key").clone()
}

impl Harness {
    pub(crate) fn new(setup: Setup) -> Result<Harness, TestCaseError> {
        let (root, path) = Root::local();
        Harness::new_at(setup, root, path)
    }

    pub(crate) fn new_at(setup: Setup, root: Root, path: PathBuf) -> Result<Harness, TestCaseError> {
        let model = Model::new(&setup);
        let mut h = Harness {
            setup,
            root,
            path,
            store: None,
            model,
            scanners: Vec::new(),
            enabled: true,
            closed: BTreeSet::new(),
            timestamps: Timestamps::new(),
            step: "create".into(),
            op_index: 0,
        };
        h.open()?;
        let store = h.store();
        let created = store.create_table(h.setup.descriptor(), &h.setup.split_keys());
        h.ok(created, "create table")?;
        Ok(h)
    }

    pub(crate) fn store(&self) -> Store {
        self.store.clone().expect("the store is open between operations")
    }

    pub(crate) fn open(&mut self) -> Result<(), TestCaseError> {
        let opened = Store::open(&self.path, self.setup.options(self.root.fs()));
        self.store = Some(self.ok(opened, "open")?);
        Ok(())
    }

    /// A store error as a test failure, with the step that hit it.
    pub(crate) fn ok<T>(&self, result: store::Result<T>, what: &str) -> Result<T, TestCaseError> {
        result.map_err(|e| TestCaseError::fail(format!("{}: {what} failed: {e}", self.step)))
    }

    pub(crate) fn region_of(&self, row: &[u8]) -> Arc<Region> {
        self.store()
            .all_regions()
            .into_iter()
            .find(|r| r.info().table == TABLE && r.info().contains(row))
            .expect("a table's regions cover every row")
    }

    /// The sequence id of the last write to the region holding `row`.
    pub(crate) fn last_seq(&self, row: &[u8]) -> u64 {
        self.region_of(row).mvcc().read_point()
    }

    /// What a major compaction of each region sees: its smallest read point
    /// and each family store's flushed sequence id.
    pub(crate) fn compaction_inputs(&self) -> Vec<(RegionInfo, u64, BTreeMap<Vec<u8>, u64>)> {
        let regions = self.store().all_regions();
        regions
            .iter()
            .filter(|r| r.info().table == TABLE)
            .map(|r| {
                let flushed = r.stores().map(|s| (s.name().as_bytes().to_vec(), s.flushed_seq())).collect();
                (r.info().clone(), r.mvcc().smallest_read_point(), flushed)
            })
            .collect()
    }

    /// The table's regions, in key order.
    pub(crate) fn regions(&self) -> Vec<RegionInfo> {
        self.store().table_regions(TABLE).expect("the table exists")
    }

    /// The region a scanner for `scan` reads first: the region of its start
    /// row (forward: at least the prefix; reverse: the prefix's successor,
    /// or the last region).
    pub(crate) fn first_region(&self, scan: &Scan) -> RegionInfo {
        let regions = self.regions();
        let start = if scan.reverse {
            match (&scan.start, &scan.prefix) {
                (None, Some(prefix)) => prefix_successor(prefix),
                (start, _) => start.clone(),
            }
            .filter(|s| !s.is_empty())
        } else {
            let start = scan.start.clone().unwrap_or_default();
            Some(scan.prefix.clone().filter(|p| *p > start).unwrap_or(start))
        };
        match start {
            Some(start) => region_containing(&regions, &start),
            None => regions.last().expect("a table has regions").clone(),
        }
    }

    /// Whether the region `info` is closed.
    pub(crate) fn is_closed(&self, info: &RegionInfo) -> bool {
        self.closed.contains(&range(info))
    }

    /// Whether the region holding `row` is closed.
    pub(crate) fn row_closed(&self, row: &[u8]) -> bool {
        self.closed.iter().any(|(start, end)| row >= start.as_slice() && (end.is_empty() || row < end.as_slice()))
    }

    /// What a scanner must return next: its pending batch pieces, else the
    /// next row of the region it reads (as of when it opened that region),
    /// else — once that region is exhausted — of the next region, looked up
    /// now from the exhausted one's boundary and read as of now from there
    /// on; unless the scan's bounds end in the exhausted region (a reverse
    /// scan's prefix too: no row below a start key at or below it has the
    /// prefix), or the next one is closed (the scan fails there).
    pub(crate) fn expected_next(&self, expect: &mut ScanExpect) -> Expected {
        if let Some(piece) = expect.pending.pop_front() {
            return Expected::Row(piece);
        }
        if expect.scan.limit.is_some_and(|l| expect.rows >= l) {
            return Expected::End;
        }
        let unlimited = Scan { limit: None, batch: None, ..expect.scan.clone() };
        let bounds = walk_bounds(&unlimited);
        let reverse = unlimited.reverse;
        loop {
            let Some((info, model)) = expect.region.as_ref() else { return Expected::End };
            let after_last = |row: &[u8]| {
                expect.last_row.as_deref().is_none_or(|last| if reverse { row < last } else { row > last })
                    && expect.resume.as_deref().is_none_or(|key| if reverse { row < key } else { row >= key })
            };
            let next = model
                .scan(&unlimited)
                .into_iter()
                .find(|cells| info.contains(&cells[0].row) && after_last(&cells[0].row));
            if let Some(cells) = next {
                expect.last_row = Some(cells[0].row.to_vec());
                expect.rows += 1;
                let size = expect.scan.batch.filter(|&b| b > 0).unwrap_or(cells.len());
                expect.pending = cells.chunks(size).map(<[Cell]>::to_vec).collect();
                return expect.pending.pop_front().map_or(Expected::End, Expected::Row);
            }
            let info = info.clone();
            let last = if reverse {
                info.start_key.is_empty()
                    || bounds.stop.as_ref().is_some_and(|s| *s >= info.start_key)
                    || bounds.prefix.as_ref().is_some_and(|p| info.start_key <= *p)
            } else {
                info.end_key.is_empty() || bounds.stop.as_ref().is_some_and(|s| !s.is_empty() && *s <= info.end_key)
            };
            if last {
                expect.region = None;
                return Expected::End;
            }
            expect.resume = Some(if reverse { info.start_key.clone() } else { info.end_key.clone() });
            let regions = self.regions();
            let next = if reverse {
                regions.iter().rev().find(|r| r.start_key < info.start_key).cloned()
            } else {
                Some(region_containing(&regions, &info.end_key))
            };
            match next {
                Some(r) if self.is_closed(&r) => {
                    expect.region = None;
                    return Expected::NotServing;
                }
                next => expect.region = next.map(|r| (r, self.model.clone())),
            }
        }
    }

    /// Reads up to `rows` results from `scanner`, each as `expect` says;
    /// false once it has ended.
    pub(crate) fn read_against(
        &self,
        scanner: &mut Scanner,
        expect: &mut ScanExpect,
        rows: usize,
        what: &str,
    ) -> Result<bool, TestCaseError> {
        for _ in 0..rows {
            let got = Got::of(scanner.next());
            let want = self.expected_next(expect);
            prop_assert!(
                want.admits(&got),
                "{}: result {} of {}: got {:?}, want {:?} (closed regions: {:?})",
                self.step,
                expect.rows,
                what,
                got,
                want,
                self.closed
            );
            match got {
                Got::Row(_) => {}
                Got::End => return Ok(false),
                _ => {
                    let after = scanner.next().map(|r| r.map(drop));
                    prop_assert!(after.is_none(), "{}: {} went on after failing: {:?}", self.step, what, after);
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Reads up to `rows` results from held scanner `i`; false once it is done.
    pub(crate) fn pull(&mut self, i: usize, rows: usize) -> Result<bool, TestCaseError> {
        let mut held = self.scanners.remove(i);
        let what = format!("the scanner opened at {}", held.opened);
        let open = self.read_against(&mut held.scanner, &mut held.expect, rows, &what)?;
        if open {
            self.scanners.insert(i, held);
        }
        Ok(open)
    }

    /// Reads every held scanner to its end.
    pub(crate) fn drain_scanners(&mut self) -> Result<(), TestCaseError> {
        while !self.scanners.is_empty() {
            self.pull(0, usize::MAX)?;
        }
        Ok(())
    }

    /// Reads to its end every held scanner that reads one of `regions` now.
    pub(crate) fn drain_scanners_of(&mut self, regions: &[RegionInfo]) -> Result<(), TestCaseError> {
        let mut i = 0;
        while i < self.scanners.len() {
            let reads = self.scanners[i].expect.region.as_ref().is_some_and(|(r, _)| regions.contains(r));
            if !reads || self.pull(i, usize::MAX)? {
                i += 1;
            }
        }
        Ok(())
    }

    /// The store's mutations for `changes` to `row`, and the cells the model
    /// records for them (resolving "the latest version" against the model
    /// before the mutation, as the store does).
    pub(crate) fn resolve(&self, row: &[u8], changes: &[Change]) -> (Vec<Mutation>, Vec<ModelCell>) {
        let mut mutations = Vec::new();
        let mut cells = Vec::new();
        let cell = |family: &[u8], qualifier: &[u8], ts: u64, kind: CellType, value: Vec<u8>| ModelCell {
            row: row.to_vec(),
            family: family.to_vec(),
            qualifier: qualifier.to_vec(),
            ts,
            kind,
            value,
            order: 0,
            seq: 0,
        };
        for (i, change) in changes.iter().enumerate() {
            let change = self.timestamps.apply(change);
            let f = |family: usize| FAMILIES[family % FAMILIES.len()];
            let q = |qualifier: usize| QUALIFIERS[qualifier % QUALIFIERS.len()];
            match change {
                Change::Put { family, qualifier, ts, size } => {
                    let mut value = Vec::new();
                    if size > 0 {
                        value = format!("v{}.{i}", self.op_index).into_bytes();
                        value.resize(value.len() + size - 1, b'x');
                    }
                    mutations.push(Mutation::Put {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: Some(ts),
                        value: value.clone(),
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::Put, value));
                }
                Change::Delete { family, qualifier, ts } => {
                    mutations.push(Mutation::DeleteVersion {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: ts,
                    });
                    let ts = ts.unwrap_or_else(|| {
                        self.model.latest(row, f(family), q(qualifier)).map_or(NOTHING_TO_DELETE_TS, |c| c.timestamp)
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::Delete, Vec::new()));
                }
                Change::DeleteColumn { family, qualifier, ts } => {
                    mutations.push(Mutation::DeleteColumn {
                        family: f(family).to_vec(),
                        qualifier: q(qualifier).to_vec(),
                        timestamp: Some(ts),
                    });
                    cells.push(cell(f(family), q(qualifier), ts, CellType::DeleteColumn, Vec::new()));
                }
                Change::DeleteFamily { family, ts } => {
                    mutations.push(Mutation::DeleteFamily { family: f(family).to_vec(), timestamp: Some(ts) });
                    cells.push(cell(f(family), b"", ts, CellType::DeleteFamily, Vec::new()));
                }
                Change::DeleteFamilyVersion { family, ts } => {
                    mutations.push(Mutation::DeleteFamilyVersion { family: f(family).to_vec(), timestamp: ts });
                    cells.push(cell(f(family), b"", ts, CellType::DeleteFamilyVersion, Vec::new()));
                }
                Change::DeleteRow { ts } => {
                    mutations.push(Mutation::DeleteRow { timestamp: Some(ts) });
                    for family in FAMILIES {
                        cells.push(cell(family, b"", ts, CellType::DeleteFamily, Vec::new()));
                    }
                }
                Change::PutToMissingFamily { ts } => mutations.push(Mutation::Put {
                    family: b"x".to_vec(),
                    qualifier: b"q".to_vec(),
                    timestamp: Some(ts),
                    value: b"v".to_vec(),
                }),
            }
        }
        (mutations, cells)
    }

    pub(crate) fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        if !self.enabled {
            return self.apply_disabled(op);
        }
        let store = self.store();
        match op {
            Op::Write { row, changes } => {
                let row = ROWS[row % ROWS.len()];
                let (mutations, cells) = self.resolve(row, changes);
                let before = self.last_seq(row);
                let written = store.mutate_row(TABLE, row, &mutations, None);
                if self.row_closed(row) {
                    return self.check_not_serving(row, written, before, "mutate_row");
                }
                match refusal(changes) {
                    None => {
                        self.ok(written, "mutate_row")?;
                        self.record(row, cells, before)?;
                    }
                    Some(refusal) => self.check_refused(row, written, refusal, before)?,
                }
            }
            Op::Get { row, read } => {
                let get = Get {
                    row: GET_ROWS[row % GET_ROWS.len()].to_vec(),
                    columns: read.columns(),
                    time_range: read.time_range(self.timestamps),
                    max_versions: read.max_versions,
                };
                if self.row_closed(&get.row) {
                    let before = self.last_seq(&get.row);
                    return self.check_not_serving(&get.row, store.get(TABLE, &get), before, "get");
                }
                self.check_get(&get)?;
            }
            Op::Scan(spec) => self.check_scan(&spec.scan(self.timestamps))?,
            Op::OpenScanner(spec) => {
                if self.scanners.len() < MAX_SCANNERS {
                    let scan = spec.scan(self.timestamps);
                    let region = self.first_region(&scan);
                    let scanner = store.scan(TABLE, scan.clone());
                    if self.is_closed(&region) {
                        let refused = scanner.map(drop);
                        prop_assert!(
                            is_not_serving(&refused),
                            "{}: a scan from a closed region: {:?}",
                            self.step,
                            refused
                        );
                        return Ok(());
                    }
                    let scanner = self.ok(scanner, "scan")?;
                    self.scanners.push(HeldScanner {
                        scanner,
                        expect: ScanExpect::new(scan, region, self.model.clone()),
                        opened: self.step.clone(),
                    });
                }
            }
            Op::PullScanner { scanner, rows } => {
                if !self.scanners.is_empty() {
                    let i = scanner % self.scanners.len();
                    self.pull(i, *rows)?;
                }
            }
            Op::Increment { row, family, amount } => {
                let (row, family) = (ROWS[row % ROWS.len()], FAMILIES[family % FAMILIES.len()]);
                if self.row_closed(row) {
                    let before = self.last_seq(row);
                    let refused = store.increment(TABLE, row, family, COUNTER, *amount);
                    return self.check_not_serving(row, refused, before, "increment");
                }
                let current = match self.model.latest(row, family, COUNTER) {
                    Some(c) => i64::from_be_bytes(c.value.as_ref().try_into().expect("counters are 8 bytes")),
                    None => 0,
                };
                let before = self.last_seq(row);
                let incremented = store.increment(TABLE, row, family, COUNTER, *amount);
                let next = self.ok(incremented, "increment")?;
                prop_assert_eq!(next, current.wrapping_add(*amount), "{}: the incremented value", self.step);
                // The new cell's timestamp is the wall clock's: read it back.
                let column = Column { family: family.to_vec(), qualifier: Some(COUNTER.to_vec()) };
                let read = store.get(TABLE, &Get { columns: vec![column], ..Get::new(row) });
                let read = self.ok(read, "get of the counter")?;
                prop_assert_eq!(read.len(), 1, "{}: the counter after the increment: {:?}", self.step, read);
                prop_assert_eq!(&read[0].value, &next.to_be_bytes().to_vec(), "{}: the counter's value", self.step);
                let put = ModelCell {
                    row: row.to_vec(),
                    family: family.to_vec(),
                    qualifier: COUNTER.to_vec(),
                    ts: read[0].timestamp,
                    kind: CellType::Put,
                    value: next.to_be_bytes().to_vec(),
                    order: 0,
                    seq: 0,
                };
                self.record(row, vec![put], before)?;
            }
            Op::CheckAndMutate { row, family, qualifier, expect, changes } => {
                let row = ROWS[row % ROWS.len()];
                let (family, qualifier) = (FAMILIES[family % FAMILIES.len()], QUALIFIERS[qualifier % QUALIFIERS.len()]);
                let current = self.model.latest(row, family, qualifier).map(|c| c.value.to_vec());
                let expected = match expect {
                    Expect::Current => current.clone(),
                    Expect::Absent => None,
                    Expect::Other => Some(b"other".to_vec()),
                    Expect::Empty => Some(Vec::new()),
                };
                let (mutations, cells) = self.resolve(row, changes);
                let before = self.last_seq(row);
                let result = store.check_and_mutate(TABLE, row, family, qualifier, expected.as_deref(), &mutations);
                if self.row_closed(row) {
                    return self.check_not_serving(row, result, before, "check_and_mutate");
                }
                let matches = current == expected;
                match refusal(changes).filter(|_| matches) {
                    None => {
                        let applied = self.ok(result, "check_and_mutate")?;
                        prop_assert_eq!(applied, matches, "{}: whether it applied ({:?})", self.step, current);
                        if applied {
                            self.record(row, cells, before)?;
                        } else {
                            prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
                        }
                    }
                    Some(refusal) => self.check_refused(row, result, refusal, before)?,
                }
            }
            Op::Flush => {
                let flushed = store.flush_table(TABLE);
                self.ok(flushed, "flush")?;
                self.check_memstores_empty()?;
                self.check_everything()?;
            }
            Op::Compact { major } => {
                // What the compaction sees is what is in files before it
                // (a split it triggers afterwards flushes the rest).
                let inputs = self.compaction_inputs();
                let compacted = store.compact_table(TABLE, *major);
                self.ok(compacted, "compact")?;
                if *major {
                    // A closed region's files are not compacted.
                    let closed = self.closed.clone();
                    self.model.major_compact(|row, family| {
                        let (info, srp, flushed) =
                            inputs.iter().find(|(info, _, _)| info.contains(row)).expect("regions cover every row");
                        if closed.contains(&range(info)) { (0, 0) } else { (flushed[family], *srp) }
                    });
                }
                self.check_regions()?;
                self.check_everything()?;
            }
            Op::Split { row, at } => {
                let row = ROWS[row % ROWS.len()];
                let at = at.map(|i| SPLIT_AT[i % SPLIT_AT.len()]);
                let info = self.region_of(row).info().clone();
                // A daughter that still reads its parent's files through
                // references is not split again until compacted (HBase's rule).
                let has_references = self.region_of(row).has_references();
                // Nor is a closed one.
                let closed = self.is_closed(&info);
                let split = store.split_region(TABLE, row, at);
                let split = self.ok(split, "split")?;
                if let Some(at) = at {
                    let inside = at > info.start_key.as_slice() && (info.end_key.is_empty() || at < &info.end_key[..]);
                    prop_assert_eq!(
                        split,
                        inside && !has_references && !closed,
                        "{}: whether {:?} (references: {}, closed: {}) splits at {:?}",
                        self.step,
                        info,
                        has_references,
                        closed,
                        at
                    );
                }
                if has_references || closed {
                    prop_assert!(!split, "{}: a region with references or closed split", self.step);
                }
                let regions = self.check_regions()?;
                prop_assert_eq!(
                    regions.contains(&info),
                    !split,
                    "{}: the parent {:?} is gone exactly when it split",
                    self.step,
                    info
                );
                self.check_everything()?;
            }
            Op::Merge { row, gap, swap } => self.merge(ROWS[row % ROWS.len()], *gap, *swap)?,
            Op::CloseRegion { row } => {
                let row = ROWS[row % ROWS.len()];
                let info = self.region_of(row).info().clone();
                // What a held scanner does once the region it reads is
                // closed is not specified: read those out first.
                self.drain_scanners_of(std::slice::from_ref(&info))?;
                let closed = store.close_region(&info.dir_name());
                if self.is_closed(&info) {
                    prop_assert!(is_not_serving(&closed), "{}: a close of a closed region: {:?}", self.step, closed);
                } else {
                    self.ok(closed, "close_region")?;
                    self.closed.insert(range(&info));
                    // Everything is in its files, and the WAL needs none of it.
                    let region = self.region_of(row);
                    prop_assert!(
                        region.memstore_data_size() == 0 && region.lowest_unflushed_seq().is_none(),
                        "{}: the closed region {:?} still has {} bytes in memory",
                        self.step,
                        info,
                        region.memstore_data_size()
                    );
                }
                self.check_regions()?;
                self.check_everything()?;
            }
            Op::OpenRegion { row } => {
                let regions = self.regions();
                let info = match row {
                    Some(row) => region_containing(&regions, ROWS[row % ROWS.len()]),
                    None => regions.iter().find(|r| self.is_closed(r)).unwrap_or(&regions[0]).clone(),
                };
                let opened = store.open_region(&info.dir_name());
                if self.is_closed(&info) {
                    self.ok(opened, "open_region")?;
                    self.closed.remove(&range(&info));
                } else {
                    prop_assert!(
                        matches!(opened, Err(StoreError::RegionNotClosed { .. })),
                        "{}: an open of a region that is not closed: {:?}",
                        self.step,
                        opened
                    );
                }
                prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after an open", self.step);
                self.check_everything()?;
            }
            Op::Disable => {
                // What a held scanner does once its table is disabled is not
                // specified: read them out first.
                self.drain_scanners()?;
                let disabled = store.disable_table(TABLE);
                self.ok(disabled, "disable")?;
                self.enabled = false;
                self.check_memstores_empty()?;
                self.check_everything()?;
            }
            Op::Enable => {
                let refused = store.enable_table(TABLE);
                prop_assert!(
                    is_disabled_error(&refused, false),
                    "{}: enable of an enabled table: {:?}",
                    self.step,
                    refused
                );
            }
            Op::Reopen => self.reopen(false)?,
            Op::Crash => {
                drop(store); // the reopened store must be the only one
                self.reopen(true)?
            }
        }
        Ok(())
    }

    /// Applies `op` while the table is disabled.
    pub(crate) fn apply_disabled(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let store = self.store();
        let refused = |r: store::Result<()>| is_disabled_error(&r, true);
        let ok = match op {
            Op::Write { row, changes } => {
                let row = ROWS[row % ROWS.len()];
                let before = self.last_seq(row);
                let (mutations, _) = self.resolve(row, changes);
                let ok = refused(store.mutate_row(TABLE, row, &mutations, None));
                prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
                ok
            }
            Op::Get { row, .. } => refused(store.get(TABLE, &Get::new(GET_ROWS[row % GET_ROWS.len()])).map(drop)),
            Op::Scan(spec) | Op::OpenScanner(spec) => refused(store.scan(TABLE, spec.scan(self.timestamps)).map(drop)),
            Op::Increment { row, family, amount } => {
                let (row, family) = (ROWS[row % ROWS.len()], FAMILIES[family % FAMILIES.len()]);
                refused(store.increment(TABLE, row, family, COUNTER, *amount).map(drop))
            }
            Op::CheckAndMutate { row, family, qualifier, changes, .. } => {
                let row = ROWS[row % ROWS.len()];
                let (family, qualifier) = (FAMILIES[family % FAMILIES.len()], QUALIFIERS[qualifier % QUALIFIERS.len()]);
                let (mutations, _) = self.resolve(row, changes);
                refused(store.check_and_mutate(TABLE, row, family, qualifier, None, &mutations).map(drop))
            }
            Op::Disable => refused(store.disable_table(TABLE)),
            Op::Enable => {
                let enabled = store.enable_table(TABLE);
                self.ok(enabled, "enable")?;
                self.enabled = true;
                return self.check_everything();
            }
            Op::Merge { row, .. } => {
                // The region and the next (or itself): refused for the table.
                let regions = self.regions();
                let i = regions.iter().position(|r| r.contains(ROWS[row % ROWS.len()])).expect("regions cover rows");
                let next = regions.get(i + 1).unwrap_or(&regions[i]);
                refused(store.merge_regions(&regions[i].dir_name(), &next.dir_name()).map(drop))
            }
            Op::Reopen => return self.reopen(false),
            Op::Crash => {
                drop(store); // the reopened store must be the only one
                return self.reopen(true);
            }
            Op::PullScanner { .. }
            | Op::Flush
            | Op::Compact { .. }
            | Op::Split { .. }
            | Op::CloseRegion { .. }
            | Op::OpenRegion { .. } => true,
        };
        prop_assert!(ok, "{}: not refused although the table is disabled", self.step);
        Ok(())
    }

    /// Merges the region of `row` with the one `1 + gap` places after it (or
    /// with itself if there is none) and checks the outcome: refused unless
    /// the two are adjacent, both open and both without references (each
    /// checked in key order: first whether it is open); else one region in
    /// their place, the same data.
    pub(crate) fn merge(&mut self, row: &[u8], gap: usize, swap: bool) -> Result<(), TestCaseError> {
        #[derive(Debug, PartialEq)]
        enum Outcome {
            Merged,
            Refused,
            NotServing,
        }
        let regions = self.regions();
        let i = regions.iter().position(|r| r.contains(row)).expect("regions cover every row");
        let low = regions[i].clone();
        let other = regions.get(i + 1 + gap).cloned();
        let expected = match &other {
            Some(high) if gap == 0 => [&low, high]
                .into_iter()
                .find_map(|r| {
                    if self.is_closed(r) {
                        Some(Outcome::NotServing)
                    } else if self.region_of(&r.start_key).has_references() {
                        Some(Outcome::Refused)
                    } else {
                        None
                    }
                })
                .unwrap_or(Outcome::Merged),
            _ => Outcome::Refused,
        };
        let other = other.unwrap_or_else(|| low.clone());
        let (a, b) = if swap { (&other, &low) } else { (&low, &other) };
        let merged = self.store().merge_regions(&a.dir_name(), &b.dir_name());
        match (&merged, &expected) {
            (Ok(name), Outcome::Merged) => {
                let after = self.check_regions()?;
                let mut want: Vec<_> = regions.iter().map(range).collect();
                want.splice(i..=i + 1, [(low.start_key.clone(), other.end_key.clone())]);
                let got: Vec<_> = after.iter().map(range).collect();
                prop_assert_eq!(got, want, "{}: the regions after merging {:?} and {:?}", self.step, low, other);
                prop_assert_eq!(&after[i].dir_name(), name, "{}: the merged region's name", self.step);
                prop_assert_eq!(&after[i].merged_from, &vec![low.id, other.id], "{}: the merged region", self.step);
            }
            (Err(StoreError::MergeRefused { .. }), Outcome::Refused) => {}
            (result, Outcome::NotServing) if is_not_serving(result) => {}
            _ => prop_assert!(
                false,
                "{}: merging {:?} and {:?}: got {:?}, want {:?} (closed regions: {:?})",
                self.step,
                a,
                b,
                merged,
                expected,
                self.closed
            ),
        }
        if expected != Outcome::Merged {
            prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after a refused merge", self.step);
        }
        self.check_everything()
    }

    /// A request to `row` in a closed region: refused with
    /// `NotServingRegion` (CLOSED), and no sequence id taken.
    pub(crate) fn check_not_serving<T: std::fmt::Debug>(
        &self,
        row: &[u8],
        result: store::Result<T>,
        before: u64,
        what: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert!(is_not_serving(&result), "{}: {} in a closed region: {:?}", self.step, what, result);
        prop_assert_eq!(self.last_seq(row), before, "{}: a refused request took a seq", self.step);
        Ok(())
    }

    /// Records a row mutation the store acknowledged, checking that it took
    /// exactly the next sequence id of its region.
    pub(crate) fn record(&mut self, row: &[u8], cells: Vec<ModelCell>, before: u64) -> Result<(), TestCaseError> {
        let seq = self.last_seq(row);
        prop_assert_eq!(seq, before + 1, "{}: a row mutation takes one sequence id", self.step);
        self.model.write(cells, seq);
        Ok(())
    }

    /// A mutation the store had to refuse as a whole: the right error, and
    /// no sequence id taken (the model records nothing).
    pub(crate) fn check_refused<T: std::fmt::Debug>(
        &self,
        row: &[u8],
        result: store::Result<T>,
        refusal: Refusal,
        before: u64,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            result.as_ref().is_err_and(|e| refusal.matches(e)),
            "{}: expected {:?}, got {:?}",
            self.step,
            refusal,
            result
        );
        prop_assert_eq!(self.last_seq(row), before, "{}: a refused mutation took a seq", self.step);
        Ok(())
    }

    pub(crate) fn check_get(&self, get: &Get) -> Result<(), TestCaseError> {
        let got = self.store().get(TABLE, get);
        let got = self.ok(got, "get")?;
        let want = self.model.get(get);
        prop_assert_eq!(got, want, "{}: {:?}", self.step, get);
        Ok(())
    }

    pub(crate) fn check_scan(&self, scan: &Scan) -> Result<(), TestCaseError> {
        let scanner = self.store().scan(TABLE, scan.clone());
        if !self.closed.is_empty() {
            // Where it fails depends on the regions it walks.
            let first = self.first_region(scan);
            if self.is_closed(&first) {
                let refused = scanner.map(drop);
                prop_assert!(is_not_serving(&refused), "{}: a scan from a closed region: {:?}", self.step, refused);
                return Ok(());
            }
            let mut expect = ScanExpect::new(scan.clone(), first, self.model.clone());
            let mut scanner = self.ok(scanner, "scan")?;
            self.read_against(&mut scanner, &mut expect, usize::MAX, &format!("{scan:?}"))?;
            return Ok(());
        }
        let got: store::Result<Vec<Vec<Cell>>> = self.ok(scanner, "scan")?.collect();
        let got = self.ok(got, "scan")?;
        let want = self.model.scan(scan);
        prop_assert_eq!(got, want.clone(), "{}: {:?}", self.step, scan);
        // Read in place, the same scan returns the same cells.
        let mut scanner = self.ok(self.store().scan(TABLE, scan.clone()), "scan")?;
        let mut in_place = Vec::new();
        while let Some(row) = scanner.next_row_cells() {
            in_place.push(self.ok(row, "scan")?.to_cells());
        }
        prop_assert_eq!(in_place, want, "{}: {:?} read in place", self.step, scan);
        Ok(())
    }

    /// The whole table, forward and reverse (or, while it is disabled, that
    /// it refuses to serve).
    pub(crate) fn check_everything(&self) -> Result<(), TestCaseError> {
        let enabled = self.store().is_table_enabled(TABLE);
        prop_assert_eq!(
            self.ok(enabled, "is_table_enabled")?,
            self.enabled,
            "{}: whether the table is enabled",
            self.step
        );
        if !self.enabled {
            let scan = self.store().scan(TABLE, Scan::default()).map(drop);
            prop_assert!(is_disabled_error(&scan, true), "{}: a scan of a disabled table: {:?}", self.step, scan);
            return Ok(());
        }
        let forward = ScanSpec::everything(false).scan(self.timestamps);
        let reverse = ScanSpec::everything(true).scan(self.timestamps);
        self.check_scan(&forward)?;
        self.check_scan(&reverse)?;
        // Those end at the first closed region: each run of open regions
        // from its first row, and down from its last.
        let regions = self.regions();
        for run in regions.split(|r| self.is_closed(r)).filter(|run| !run.is_empty()) {
            if run.len() == regions.len() {
                break;
            }
            let (start, end) = (&run[0].start_key, &run[run.len() - 1].end_key);
            self.check_scan(&Scan { start: Some(start.clone()), ..forward.clone() })?;
            let in_run = |row: &&Vec<u8>| *row >= start && (end.is_empty() || *row < end);
            if let Some(last) = self.model.cells.iter().map(|c| &c.row).filter(in_run).max() {
                self.check_scan(&Scan { start: Some(last.clone()), ..reverse.clone() })?;
            }
        }
        Ok(())
    }

    /// The regions are sorted and cover the key space without overlap.
    pub(crate) fn check_regions(&self) -> Result<Vec<RegionInfo>, TestCaseError> {
        let regions = self.store().table_regions(TABLE);
        let regions = self.ok(regions, "table_regions")?;
        prop_assert!(!regions.is_empty(), "{}: no regions", self.step);
        prop_assert!(regions[0].start_key.is_empty(), "{}: first region {:?}", self.step, regions[0]);
        let last = regions.last().expect("not empty");
        prop_assert!(last.end_key.is_empty(), "{}: last region {:?}", self.step, last);
        for w in regions.windows(2) {
            prop_assert!(
                w[0].end_key == w[1].start_key && w[0].start_key < w[0].end_key,
                "{}: regions {:?} and {:?}",
                self.step,
                w[0],
                w[1]
            );
        }
        // Exactly the closed ones are CLOSED (a closed region is never
        // split or merged: its range stays).
        let states = self.store().region_states(TABLE);
        let states = self.ok(states, "region_states")?;
        let listed: Vec<RegionInfo> = states.iter().map(|(info, _)| info.clone()).collect();
        prop_assert_eq!(&listed, &regions, "{}: the regions of region_states", self.step);
        for (info, state) in &states {
            let want = if self.is_closed(info) { RegionState::Closed } else { RegionState::Open };
            prop_assert_eq!(*state, want, "{}: the state of {:?}", self.step, info);
        }
        for closed in &self.closed {
            prop_assert!(
                regions.iter().any(|r| range(r) == *closed),
                "{}: the closed region {:?} is gone: {:?}",
                self.step,
                closed,
                regions
            );
        }
        Ok(regions)
    }

    pub(crate) fn check_memstores_empty(&self) -> Result<(), TestCaseError> {
        for r in self.store().all_regions() {
            prop_assert!(
                r.memstore_data_size() == 0 && r.lowest_unflushed_seq().is_none(),
                "{}: region {:?} still has {} bytes in memory",
                self.step,
                r.info(),
                r.memstore_data_size()
            );
        }
        Ok(())
    }

    /// Closes the store (or drops it without closing and loses whatever was
    /// not synced: a crash) and opens it again; nothing may change.
    pub(crate) fn reopen(&mut self, crash: bool) -> Result<(), TestCaseError> {
        self.drain_scanners()?;
        let regions = self.check_regions()?;
        let store = self.store.take().expect("the store is open");
        if crash {
            let lost = self.root.crash(store);
            self.ok(lost, "crash")?;
        } else {
            let closed = store.close();
            self.ok(closed, "close")?;
            let refused = store.get(TABLE, &Get::new(ROWS[0]));
            prop_assert!(matches!(refused, Err(StoreError::Closed)), "{}: a get after close: {:?}", self.step, refused);
            drop(store);
        }
        self.open()?;
        prop_assert_eq!(self.check_regions()?, regions, "{}: the regions after reopening", self.step);
        self.check_memstores_empty()?;
        self.check_everything()
    }

    /// A power cut now, seen by a second store while this one runs on: on
    /// a crash clone of the file system (a `MemFs` root; elsewhere nothing
    /// is checked) a store opens, recovers, and must hold exactly what the
    /// model holds — every acknowledged write, since the table syncs its
    /// WAL before it acknowledges, and nothing refused — in the same
    /// regions, closed ones closed, the table enabled or not. Then it is
    /// closed and the sequence goes on with the first store, which the cut
    /// did not touch.
    pub(crate) fn check_power_cut(&mut self) -> Result<(), TestCaseError> {
        let Some(kept) = self.root.crash_clone() else { return Ok(()) };
        let regions = self.check_regions()?;
        let opened = Store::open(&self.path, self.setup.options(Arc::new(kept)));
        let recovered = self.ok(opened, "open after a power cut")?;
        let running = self.store.replace(recovered);
        let checked = self.check_regions().and_then(|after| {
            prop_assert_eq!(after, regions, "{}: the regions after a power cut", self.step);
            self.check_everything()
        });
        let recovered = std::mem::replace(&mut self.store, running).expect("the recovered store");
        let closed = recovered.close();
        checked.map_err(|e| TestCaseError::fail(format!("after a power cut: {e}")))?;
        self.ok(closed, "close the store recovered after a power cut")
    }

    /// Ends the sequence: a full check, close, reopen, and a full check;
    /// then every closed region opened and a full check.
    pub(crate) fn finish(&mut self) -> Result<(), TestCaseError> {
        self.step = "finish".into();
        if !self.enabled {
            self.apply(&Op::Enable)?;
        }
        self.check_everything()?;
        self.reopen(false)?;
        while !self.closed.is_empty() {
            self.apply(&Op::OpenRegion { row: None })?;
        }
        let closed = self.store().close();
        self.ok(closed, "the last close")
    }
}

/// Runs one sequence against a fresh store and its model.
pub(crate) fn run(setup: &Setup, ops: &[Op]) -> Result<(), TestCaseError> {
    run_checked(setup, ops, |_, _| Ok(()))
}

/// `run`, calling `check` with each operation's index after it.
pub(crate) fn run_checked(
    setup: &Setup,
    ops: &[Op],
    check: impl FnMut(usize, &mut Harness) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let (root, path) = Root::local();
    run_at(setup, ops, root, path, check)
}

/// `run_checked` with the store at `path` of `root`.
pub(crate) fn run_at(
    setup: &Setup,
    ops: &[Op],
    root: Root,
    path: PathBuf,
    mut check: impl FnMut(usize, &mut Harness) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut h = Harness::new_at(setup.clone(), root, path)?;
    for (i, op) in ops.iter().enumerate() {
        h.op_index = i;
        h.step = format!("op {i} {op:?}");
        h.apply(op)?;
        check(i, &mut h)?;
    }
    h.finish()
}

/// Runs a literal sequence in a plain `#[test]`.
pub(crate) fn replay(setup: Setup, ops: &[Op]) {
    if let Err(e) = run(&setup, ops) {
        panic!("{setup:?}\n{ops:#?}\n{e}");
    }
}
