//! Concurrent writers, readers and maintenance, each writer checked
//! against its own per-row model.
//!
//! `CONC_WRITERS` threads write batches (`mutate_rows`) and single rows
//! (`mutate_row`), each to its own rows, so that a per-row history kept by the
//! writer is exact; a reader thread gets and scans rows all the while; a
//! maintenance thread flushes, compacts (minor and major), rolls the WAL and
//! splits regions as fast as it can, and the store's own background flushes
//! and compactions run too (a tiny flush size, tiny WAL files, few of them).
//!
//! Every write of a row puts its four columns (two per family) in one row
//! mutation, at the timestamp and with the value stamp of the write, or
//! deletes the row. Each write takes a fresh stamp from its writer, so a
//! row's stamps grow in the order of its writes. A writer records a write in
//! the row's history before handing it to the store and publishes its stamp
//! as acknowledged once the call returned. Some batches repeat a row (a
//! second mini-batch) and some carry a row the store must refuse (puts around
//! a put to a family the table does not have): the call must fail with that
//! refusal, the other rows must be applied, and the refused row must never
//! show.
//!
//! What every read must see, row by row: the four columns of one write with
//! one stamp, or nothing (a row delete, or never written); that write (or
//! delete) in the row's history, no older than the last write acknowledged
//! before the read started, and no older than what this reader saw of the
//! row before (reads never go back in time). At the end, and after a clean
//! close and reopen, every row holds its last write.
//!
//! `CONCURRENT_SEED=<n>` replays a run's choices (not its interleaving).

use std::collections::BTreeMap;
use std::sync::Arc;

use memstore::{Cell, CellType};
use store::fs::FileSystem;
use store::jobs::compaction::policy::CompactionConfig;
use store::wal::{Durability, WalOptions};
use store::{
    FamilyDescriptor, Get, Mutation, MutationRef, RowMutations, Scan, Store, StoreError, StoreOptions, TableDescriptor,
};

use crate::ops::TABLE;

pub(crate) const CONC_WRITERS: usize = 3;
pub(crate) const CONC_ROWS_PER_WRITER: usize = 48;
pub(crate) const CONC_OPS_PER_WRITER: usize = 2500;
/// Rounds of the workload, each ended by a check, a close and a reopen.
pub(crate) const CONC_ROUNDS: u64 = 3;
/// The regions the maintenance thread splits the table into, at most.
pub(crate) const CONC_MAX_REGIONS: usize = 24;
/// The four columns of a row.
pub(crate) const CONC_COLUMNS: [(&[u8], &[u8]); 4] = [(b"f", b"x"), (b"f", b"y"), (b"g", b"x"), (b"g", b"y")];
pub(crate) const CONC_MISSING_FAMILY: &str = "nosuch";
/// How long the whole workload may take before the test calls it hung.
pub(crate) const CONC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Row `i` of writer `w`: the writers' rows interleave across the table.
pub(crate) fn conc_row(w: usize, i: usize) -> Vec<u8> {
    format!("r{i:03}w{w}").into_bytes()
}

pub(crate) fn conc_value(row: &[u8], stamp: u64, column: usize) -> Vec<u8> {
    let mut v = format!("{}|{stamp}|{column}|", String::from_utf8_lossy(row)).into_bytes();
    v.resize(v.len() + (stamp as usize * 37 + column * 11) % 160, b'p');
    v
}

pub(crate) fn conc_options(fs: Arc<dyn FileSystem>) -> StoreOptions {
    StoreOptions {
        fs,
        region_flush_size: 24 << 10,
        memory_budget: 64 << 20,
        wal: WalOptions { roll_size: 8 << 10, ..WalOptions::default() },
        max_logs: 4,
        compaction: CompactionConfig { min_files: 3, ..CompactionConfig::default() },
        background: true,
        ..StoreOptions::default()
    }
}

pub(crate) fn conc_descriptor() -> TableDescriptor {
    let family = |name: &str, policy: &str| FamilyDescriptor {
        memstore_policy: policy.to_string(),
        inmemory_flush_share: Some(0.1),
        block_size: 1024,
        ..FamilyDescriptor::new(name)
    };
    TableDescriptor {
        durability: Durability::SyncWal,
        ..TableDescriptor::new(TABLE, vec![family("f", "basic"), family("g", "eager")])
    }
}

/// One write of a row: `true` puts the four columns, `false` deletes the row.
pub(crate) type ConcWrite = (u64, bool);

/// A row, shared by its writer and the reader.
pub(crate) struct ConcRow {
    pub(crate) key: Vec<u8>,
    /// The stamp of the row's last acknowledged write (0: none yet).
    pub(crate) acked: std::sync::atomic::AtomicU64,
    /// Every write handed to the store, in stamp order.
    pub(crate) history: std::sync::Mutex<Vec<ConcWrite>>,
}

pub(crate) struct ConcShared {
    pub(crate) store: Store,
    /// Writer `w`'s row `i` is `rows[w * CONC_ROWS_PER_WRITER + i]`.
    pub(crate) rows: Vec<ConcRow>,
    /// Set by the first thread that fails, and once the writers are done.
    pub(crate) stop: std::sync::atomic::AtomicBool,
}

impl ConcShared {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn index_of(&self, key: &[u8]) -> Option<usize> {
        let text = std::str::from_utf8(key).ok()?;
        let (i, w) = text.strip_prefix('r')?.split_once('w')?;
        let (i, w): (usize, usize) = (i.parse().ok()?, w.parse().ok()?);
        (i < CONC_ROWS_PER_WRITER && w < CONC_WRITERS && conc_row(w, i) == key).then_some(w * CONC_ROWS_PER_WRITER + i)
    }
}

/// The stamp of the write a row's cells come from (`None`: no cells); an
/// error unless they are exactly the four columns of one write.
pub(crate) fn conc_parse(row: &[u8], cells: &[Cell]) -> Result<Option<u64>, String> {
    let Some(first) = cells.first() else { return Ok(None) };
    let stamp = first.timestamp;
    let whole = cells.len() == CONC_COLUMNS.len()
        && cells.iter().zip(CONC_COLUMNS.iter().enumerate()).all(|(c, (i, (family, qualifier)))| {
            c.row == row
                && c.family == *family
                && c.qualifier == *qualifier
                && c.timestamp == stamp
                && c.cell_type == CellType::Put
                && c.value == conc_value(row, stamp, i)
        });
    if !whole {
        let seen: Vec<String> = cells
            .iter()
            .map(|c| {
                format!(
                    "{}:{}@{} {:?}",
                    String::from_utf8_lossy(&c.family),
                    String::from_utf8_lossy(&c.qualifier),
                    c.timestamp,
                    String::from_utf8_lossy(&c.value[..c.value.len().min(24)])
                )
            })
            .collect();
        return Err(format!("row {} is not the whole of one write: {seen:?}", String::from_utf8_lossy(row)));
    }
    Ok(Some(stamp))
}

/// Checks one read of row `index` that saw `observed`: `acked_before` was
/// the row's acknowledged stamp when the read started, `*seen` the stamp of
/// the state this reader saw before (0: never written); on success `*seen`
/// becomes the stamp of what it saw now (for an empty row, the oldest delete
/// that explains it). Returns whether the read saw a write not yet
/// acknowledged when it started.
pub(crate) fn conc_check(
    shared: &ConcShared,
    index: usize,
    observed: Option<u64>,
    acked_before: u64,
    seen: &mut u64,
) -> Result<bool, String> {
    let row = &shared.rows[index];
    let floor = acked_before.max(*seen);
    let history = row.history.lock().expect("history");
    let candidate = match observed {
        Some(s) => history.iter().find(|&&(h, put)| h == s && put).map(|_| s),
        None if floor == 0 => Some(0),
        None => history.iter().find(|&&(h, put)| h >= floor && !put).map(|&(h, _)| h),
    };
    match candidate {
        Some(s) if s >= floor => {
            *seen = s;
            Ok(s > acked_before)
        }
        _ => Err(format!(
            "row {} reads as {}, but the last write acknowledged before the read is {acked_before} and this reader \
             saw {} before (history, stamp and put/delete: {:?})",
            String::from_utf8_lossy(&row.key),
            observed.map_or("empty".to_string(), |s| format!("the write {s}")),
            *seen,
            *history
        )),
    }
}

/// Writer `w`: `CONC_OPS_PER_WRITER` batches and single-row mutations of
/// its own rows.
pub(crate) fn conc_writer(shared: &ConcShared, w: usize, seed: u64, first_stamp: u64) -> Result<u64, String> {
    use rand::prelude::*;
    use std::sync::atomic::Ordering;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut next_stamp = first_stamp;
    let mut refused_calls = 0u64;
    let base = w * CONC_ROWS_PER_WRITER;
    for op in 0..CONC_OPS_PER_WRITER {
        if shared.stopped() {
            return Ok(refused_calls);
        }
        // (row index, stamp, put/delete/refused) — the refused row is `None`.
        let mut writes: Vec<(usize, u64, Option<bool>)> = Vec::new();
        let batch = rng.random_bool(0.5);
        let count = if batch { rng.random_range(5..=20) } else { 1 };
        let mut chosen: Vec<usize> = (0..CONC_ROWS_PER_WRITER).collect();
        chosen.shuffle(&mut rng);
        for &i in &chosen[..count] {
            writes.push((base + i, 0, Some(rng.random_bool(0.88))));
        }
        if batch && rng.random_bool(0.15) {
            // The same row again: a second mini-batch, whose write wins.
            let (i, _, _) = writes[rng.random_range(0..writes.len())];
            writes.push((i, 0, Some(rng.random_bool(0.7))));
        }
        let refused = rng.random_bool(0.1);
        if refused {
            let at = rng.random_range(0..=writes.len());
            writes.insert(at, (base + chosen[count], 0, None));
        }
        for write in &mut writes {
            write.1 = next_stamp;
            next_stamp += 1;
        }
        let mutations: Vec<Vec<Mutation>> = writes
            .iter()
            .map(|&(index, stamp, kind)| {
                let key = &shared.rows[index].key;
                let put = |(i, (family, qualifier)): (usize, &(&[u8], &[u8]))| Mutation::Put {
                    family: family.to_vec(),
                    qualifier: qualifier.to_vec(),
                    timestamp: Some(stamp),
                    value: conc_value(key, stamp, i),
                };
                match kind {
                    Some(true) => CONC_COLUMNS.iter().enumerate().map(put).collect(),
                    Some(false) => vec![Mutation::DeleteRow { timestamp: Some(stamp) }],
                    // Valid puts around the invalid one: none may land.
                    None => {
                        let mut m: Vec<Mutation> = CONC_COLUMNS.iter().enumerate().map(put).collect();
                        m.insert(
                            2,
                            Mutation::Put {
                                family: CONC_MISSING_FAMILY.as_bytes().to_vec(),
                                qualifier: b"x".to_vec(),
                                timestamp: Some(stamp),
                                value: b"never".to_vec(),
                            },
                        );
                        m
                    }
                }
            })
            .collect();
        for &(index, stamp, kind) in &writes {
            if let Some(put) = kind {
                shared.rows[index].history.lock().expect("history").push((stamp, put));
            }
        }
        let result = if batch {
            let refs: Vec<Vec<MutationRef<'_>>> =
                mutations.iter().map(|m| m.iter().map(Mutation::as_ref).collect()).collect();
            let rows: Vec<RowMutations<'_>> = writes
                .iter()
                .zip(&refs)
                .map(|(&(index, _, _), m)| RowMutations { row: &shared.rows[index].key, mutations: m })
                .collect();
            shared.store.mutate_rows(TABLE, &rows, None)
        } else {
            // One row, or the refused row alone (`writes` holds both then:
            // the refused one is sent on its own first).
            let mut result = Ok(());
            for (&(index, _, _), m) in writes.iter().zip(&mutations) {
                let r = shared.store.mutate_row(TABLE, &shared.rows[index].key, m, None);
                if result.is_ok() {
                    result = r;
                }
            }
            result
        };
        let what = format!("writer {w}, operation {op} ({} rows, refused row: {refused})", writes.len());
        match result {
            Ok(()) if !refused => {}
            Ok(()) => return Err(format!("{what}: the store accepted a put to a missing family")),
            Err(StoreError::NoSuchFamily { family, .. }) if refused && family == CONC_MISSING_FAMILY => {
                refused_calls += 1;
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
        for &(index, stamp, kind) in &writes {
            if kind.is_some() {
                shared.rows[index].acked.fetch_max(stamp, Ordering::AcqRel);
            }
        }
    }
    Ok(refused_calls)
}

/// The reader: gets and whole-table scans (forward and reverse) until the
/// writers are done. Returns how many rows it read, and how many of those
/// showed a write not yet acknowledged.
pub(crate) fn conc_reader(shared: &ConcShared, seed: u64) -> Result<(u64, u64), String> {
    use rand::prelude::*;
    use std::sync::atomic::Ordering;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5EAD);
    let mut seen = vec![0u64; shared.rows.len()];
    let (mut reads, mut early) = (0u64, 0u64);
    while !shared.stopped() {
        if rng.random_bool(0.9) {
            let index = rng.random_range(0..shared.rows.len());
            let row = &shared.rows[index];
            let acked_before = row.acked.load(Ordering::Acquire);
            let cells = shared.store.get(TABLE, &Get::new(row.key.clone())).map_err(|e| format!("get: {e}"))?;
            let observed = conc_parse(&row.key, &cells)?;
            early += u64::from(conc_check(shared, index, observed, acked_before, &mut seen[index])?);
            reads += 1;
        } else {
            let reverse = rng.random_bool(0.5);
            let acked_before: Vec<u64> = shared.rows.iter().map(|r| r.acked.load(Ordering::Acquire)).collect();
            let mut observed: Vec<Option<u64>> = vec![None; shared.rows.len()];
            let mut last: Option<Vec<u8>> = None;
            let scanner =
                shared.store.scan(TABLE, Scan { reverse, ..Scan::default() }).map_err(|e| format!("scan: {e}"))?;
            for cells in scanner {
                let cells = cells.map_err(|e| format!("scan: {e}"))?;
                let key = cells.first().map(|c| c.row.to_vec()).ok_or("the scan returned an empty row")?;
                if last.as_ref().is_some_and(|l| if reverse { key >= *l } else { key <= *l }) {
                    return Err(format!("the scan (reverse: {reverse}) returned {key:?} after {last:?}"));
                }
                let index = shared.index_of(&key).ok_or_else(|| format!("the scan returned a stranger: {key:?}"))?;
                observed[index] = conc_parse(&key, &cells)?;
                last = Some(key);
            }
            for (index, observed) in observed.into_iter().enumerate() {
                early += u64::from(
                    conc_check(shared, index, observed, acked_before[index], &mut seen[index])
                        .map_err(|e| format!("scan (reverse: {reverse}): {e}"))?,
                );
                reads += 1;
            }
        }
    }
    Ok((reads, early))
}

/// Flushes, compactions, WAL rolls and splits, back to back, until the
/// writers are done. Returns how many of each ran.
pub(crate) fn conc_maintenance(shared: &ConcShared, seed: u64) -> Result<[u64; 4], String> {
    use rand::prelude::*;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x3A17);
    let mut done = [0u64; 4];
    let store = &shared.store;
    while !shared.stopped() {
        let action = rng.random_range(0..10);
        let result = match action {
            0..=2 => store.flush_table(TABLE).map(|()| 0),
            3 | 4 => store.compact_table(TABLE, action == 4).map(|()| 1),
            5..=7 => store.wal().roll().map(|()| 2),
            _ => {
                let regions = store.table_regions(TABLE).map_err(|e| format!("regions: {e}"))?.len();
                if regions >= CONC_MAX_REGIONS {
                    continue;
                }
                let row = &shared.rows[rng.random_range(0..shared.rows.len())].key;
                store.split_region(TABLE, row, None).map(|_| 3)
            }
        };
        let kind = result.map_err(|e| format!("maintenance action {action}: {e}"))?;
        done[kind] += 1;
    }
    Ok(done)
}

/// Every row holds its last write (all writes were acknowledged), by get
/// and by a scan.
pub(crate) fn conc_check_final(store: &Store, rows: &[ConcRow], when: &str) -> Result<(), String> {
    use std::sync::atomic::Ordering;
    let mut scanned: BTreeMap<Vec<u8>, Vec<Cell>> = BTreeMap::new();
    for cells in store.scan(TABLE, Scan::default()).map_err(|e| format!("{when}: scan: {e}"))? {
        let cells = cells.map_err(|e| format!("{when}: scan: {e}"))?;
        scanned.insert(cells[0].row.to_vec(), cells);
    }
    for row in rows {
        let history = row.history.lock().expect("history");
        let last = history.last().copied();
        let acked = row.acked.load(Ordering::Acquire);
        if last.map_or(0, |(s, _)| s) != acked {
            return Err(format!("{when}: row {:?}: last write {last:?}, acknowledged {acked}", row.key));
        }
        let want = last.and_then(|(s, put)| put.then_some(s));
        let cells = store.get(TABLE, &Get::new(row.key.clone())).map_err(|e| format!("{when}: get: {e}"))?;
        let got = conc_parse(&row.key, &cells).map_err(|e| format!("{when}: {e}"))?;
        let from_scan = scanned.remove(&row.key).unwrap_or_default();
        if got != want || from_scan != cells {
            return Err(format!(
                "{when}: row {} holds {got:?} (scan: {:?} cells), its last acknowledged write is {last:?}",
                String::from_utf8_lossy(&row.key),
                from_scan.len()
            ));
        }
    }
    if let Some(key) = scanned.keys().next() {
        return Err(format!("{when}: the scan returned a row never written: {key:?}"));
    }
    Ok(())
}

/// What the threads of one round report when they end.
pub(crate) enum ConcReport {
    /// Calls that carried a refused row.
    Writer(Result<u64, String>),
    /// Rows read, and how many showed a write not yet acknowledged.
    Reader(Result<(u64, u64), String>),
    /// Flushes, compactions, WAL rolls, splits.
    Maintenance(Result<[u64; 4], String>),
}

/// Totals over the rounds.
#[derive(Debug, Default)]
pub(crate) struct ConcTotals {
    pub(crate) refused: u64,
    pub(crate) reads: u64,
    pub(crate) early: u64,
    pub(crate) maintenance: [u64; 4],
}

/// One round: the writers, the reader and the maintenance thread on
/// `shared`, until the writers are done. A thread that fails stops the
/// others; a round that does not end within `deadline` fails the test (its
/// threads are left behind) instead of hanging it.
pub(crate) fn conc_round(
    shared: &Arc<ConcShared>,
    round: u64,
    seed: u64,
    deadline: std::time::Instant,
    totals: &mut ConcTotals,
) {
    use std::sync::atomic::Ordering;
    let (tx, rx) = std::sync::mpsc::channel::<ConcReport>();
    let spawn = |f: Box<dyn FnOnce(&ConcShared) -> ConcReport + Send>| {
        let (shared, tx) = (shared.clone(), tx.clone());
        std::thread::spawn(move || {
            let report = f(&shared);
            drop(shared); // before reporting: the caller takes the store back
            let _ = tx.send(report);
        });
    };
    let seed = seed ^ round.wrapping_mul(0xA076_1D64_78BD_642F);
    for w in 0..CONC_WRITERS {
        // Stamps grow across rounds too.
        let first_stamp = round * 1_000_000 + 1;
        spawn(Box::new(move |s| ConcReport::Writer(conc_writer(s, w, seed, first_stamp))));
    }
    spawn(Box::new(move |s| ConcReport::Reader(conc_reader(s, seed))));
    spawn(Box::new(move |s| ConcReport::Maintenance(conc_maintenance(s, seed))));
    drop(tx);

    let mut writers = 0;
    let mut failures = Vec::new();
    for _ in 0..CONC_WRITERS + 2 {
        let report = match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(r) => r,
            Err(e) => panic!(
                "round {round} (seed {seed}) did not finish within {CONC_TIMEOUT:?} ({e}); failures so far: \
                 {failures:?}"
            ),
        };
        let failed = match report {
            ConcReport::Writer(Ok(n)) => {
                totals.refused += n;
                writers += 1;
                if writers == CONC_WRITERS {
                    shared.stop.store(true, Ordering::Release);
                }
                None
            }
            ConcReport::Reader(Ok((reads, early))) => {
                totals.reads += reads;
                totals.early += early;
                None
            }
            ConcReport::Maintenance(Ok(m)) => {
                for (t, n) in totals.maintenance.iter_mut().zip(m) {
                    *t += n;
                }
                None
            }
            ConcReport::Writer(Err(e)) => Some(format!("writer: {e}")),
            ConcReport::Reader(Err(e)) => Some(format!("reader: {e}")),
            ConcReport::Maintenance(Err(e)) => Some(format!("maintenance: {e}")),
        };
        if let Some(e) = failed {
            shared.stop.store(true, Ordering::Release);
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "round {round}: {failures:#?}");
}
