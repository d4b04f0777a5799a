//! The write path of a region: row mutations and region batches (HBase's
//! batchMutate with mini-batches), increments, check-and-mutate, and WAL
//! replay; the invariants are in the module doc of `region/mod.rs`.

use std::sync::atomic::Ordering;

use memstore::cell::bytes_equal;
use memstore::{Cell, CellInput, CellType, TimeRange};
use parking_lot::Mutex;
use smallvec::SmallVec;

use super::{BatchOutcome, Column, Get, Mutation, MutationRef, Region, RowMutations};
use crate::error::{Result, StoreError};
use crate::hooks::HookPoint;
use crate::wal::{Durability, codec};

/// HBase's `HConstants.LATEST_TIMESTAMP` (`Long.MAX_VALUE`): a mutation
/// carrying it is stamped by the region as if it carried no timestamp.
pub const LATEST_TIMESTAMP: u64 = i64::MAX as u64;

/// The timestamp of a read-modify-write's new version (increment, append):
/// now, or just above the version it read when that one is not older, so
/// that the new version supersedes it — also one written with a future
/// timestamp, and one written in the same millisecond (two increments stay
/// two versions). HBase's increment and append do the same.
fn superseding(now: u64, read: Option<&Cell>) -> u64 {
    match read {
        Some(c) if c.timestamp >= now => c.timestamp.saturating_add(1).min(LATEST_TIMESTAMP - 1),
        _ => now,
    }
}

impl Region {
    /// The timestamp of a cell written now without one: the clock, or the
    /// highest an increment or append stamped if that is later (`stamped`).
    fn server_now(&self) -> u64 {
        self.clock.now_ms().max(self.stamped.load(Ordering::Acquire))
    }

    /// The timestamp of an increment's or append's new version (superseding
    /// `read`, the version it read), recorded in `stamped`. The caller holds
    /// the row's lock until the version is written.
    fn stamp_superseding(&self, read: Option<&Cell>) -> u64 {
        let ts = superseding(self.server_now(), read);
        self.stamped.fetch_max(ts, Ordering::AcqRel);
        ts
    }
}

/// `m` with a timestamp of [`LATEST_TIMESTAMP`] taken as none.
fn latest_as_now(m: MutationRef<'_>) -> MutationRef<'_> {
    let given = |t: Option<u64>| t.filter(|&t| t != LATEST_TIMESTAMP);
    match m {
        MutationRef::Put { family, qualifier, timestamp, value } => {
            MutationRef::Put { family, qualifier, timestamp: given(timestamp), value }
        }
        MutationRef::DeleteVersion { family, qualifier, timestamp } => {
            MutationRef::DeleteVersion { family, qualifier, timestamp: given(timestamp) }
        }
        MutationRef::DeleteColumn { family, qualifier, timestamp } => {
            MutationRef::DeleteColumn { family, qualifier, timestamp: given(timestamp) }
        }
        MutationRef::DeleteFamily { family, timestamp } => {
            MutationRef::DeleteFamily { family, timestamp: given(timestamp) }
        }
        MutationRef::DeleteRow { timestamp } => MutationRef::DeleteRow { timestamp: given(timestamp) },
        // Names one exact version: there is no "latest" to stand for.
        other @ MutationRef::DeleteFamilyVersion { .. } => other,
    }
}

impl Region {
    /// Applies the mutations of one row atomically; returns its sequence id.
    pub fn mutate_row(&self, row: &[u8], mutations: &[Mutation], durability: Durability) -> Result<u64> {
        let refs: SmallVec<[MutationRef<'_>; 8]> = mutations.iter().map(Mutation::as_ref).collect();
        let mut outcome = self.mutate_rows(&[RowMutations { row, mutations: &refs }], durability)?;
        match outcome.refused.pop() {
            Some((_, e)) => Err(e),
            None => Ok(outcome.seq),
        }
    }

    /// Applies a batch of row mutations, each row atomically (see the
    /// module invariants). A row that cannot be applied (outside the
    /// region, unknown family, cell too large, …) is refused alone and
    /// listed in the outcome; the others are applied, as HBase's
    /// batchMutate does. An `Err` means nothing of the batch (or of its
    /// last mini-batch, after a repeated row) was applied.
    pub fn mutate_rows(&self, rows: &[RowMutations<'_>], durability: Durability) -> Result<BatchOutcome> {
        self.check_open()?;
        let mut outcome = BatchOutcome::default();
        let mut start = 0;
        while start < rows.len() {
            let end = start + mini_batch_len(&rows[start..]);
            let _locks = self.lock_rows(&rows[start..end]);
            match self.apply_locked(&rows[start..end], start, durability, &mut outcome.refused) {
                Ok(seq) => outcome.seq = seq,
                // Drained by a split, merge or close between two
                // mini-batches: report what was done; the caller sends the
                // rest to whichever region serves it now.
                Err(StoreError::NotServingRegion { .. } | StoreError::Closed) if start > 0 => break,
                Err(e) => return Err(e),
            }
            start = end;
        }
        outcome.done = start;
        Ok(outcome)
    }

    /// Takes the row locks of `rows` in stripe order (no deadlock between
    /// batches, or with a single-row lock), each stripe once, without
    /// allocating.
    fn lock_rows(&self, rows: &[RowMutations<'_>]) -> RowLockSet<'_> {
        let stripes = rows.iter().fold(0u128, |set, r| set | (1u128 << self.row_stripe(r.row)));
        let mut rest = stripes;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            // Released by `RowLockSet::drop`, which unlocks exactly the set.
            std::mem::forget(self.row_locks[i].lock());
            rest &= rest - 1;
        }
        RowLockSet { locks: &self.row_locks, stripes }
    }

    /// Resolves one row's mutations into cells (appended to `cells`, sorted
    /// by family so each family's cells are one run). A timestamp of
    /// [`LATEST_TIMESTAMP`] means none given (the server's time, or the
    /// latest version for a version delete), as in HBase.
    fn resolve_row<'a>(
        &'a self,
        row: &'a [u8],
        mutations: &[MutationRef<'a>],
        now: u64,
        cells: &mut SmallVec<[CellInput<'a>; 32]>,
    ) -> Result<()> {
        if !self.info.contains(row) {
            return Err(StoreError::WrongRegion {
                row: String::from_utf8_lossy(row).into_owned(),
                region: format!("{:016x}", self.info.id),
                table: self.info.table.clone(),
            });
        }
        if mutations.is_empty() {
            return Err(StoreError::EmptyMutation);
        }
        let start = cells.len();
        let mk = |family: &'a [u8], qualifier: &'a [u8], timestamp: u64, cell_type: CellType, value: &'a [u8]| {
            CellInput { row, family, qualifier, timestamp, cell_type, value }
        };
        for m in mutations {
            match latest_as_now(*m) {
                MutationRef::Put { family, qualifier, timestamp, value } => {
                    self.store(family)?;
                    cells.push(mk(family, qualifier, timestamp.unwrap_or(now), CellType::Put, value));
                }
                MutationRef::DeleteVersion { family, qualifier, timestamp } => {
                    self.store(family)?;
                    let ts = match timestamp {
                        Some(ts) => Some(ts),
                        None => self.latest_timestamp(row, family, qualifier)?,
                    };
                    // Nothing to delete: HBase places the marker at now.
                    cells.push(mk(family, qualifier, ts.unwrap_or(now), CellType::Delete, &[]));
                }
                MutationRef::DeleteColumn { family, qualifier, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, qualifier, timestamp.unwrap_or(now), CellType::DeleteColumn, &[]));
                }
                MutationRef::DeleteFamily { family, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, &[], timestamp.unwrap_or(now), CellType::DeleteFamily, &[]));
                }
                MutationRef::DeleteFamilyVersion { family, timestamp } => {
                    self.store(family)?;
                    cells.push(mk(family, &[], timestamp, CellType::DeleteFamilyVersion, &[]));
                }
                MutationRef::DeleteRow { timestamp } => {
                    for family in self.stores.keys() {
                        cells.push(mk(family, &[], timestamp.unwrap_or(now), CellType::DeleteFamily, &[]));
                    }
                }
            }
        }
        for c in &cells[start..] {
            c.validate(self.max_cell_size)?;
        }
        // Stable: mutations of one column keep their order.
        cells[start..].sort_by(|a, b| a.family.cmp(b.family));
        Ok(())
    }

    fn latest_timestamp(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> Result<Option<u64>> {
        Ok(self.latest_cell(row, family, qualifier)?.map(|c| c.timestamp))
    }

    /// The newest visible version of one column.
    fn latest_cell(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> Result<Option<Cell>> {
        let get = Get {
            row: row.to_vec(),
            columns: vec![Column { family: family.to_vec(), qualifier: Some(qualifier.to_vec()) }],
            time_range: TimeRange::ALL,
            max_versions: 1,
        };
        Ok(self.get(&get)?.into_iter().next())
    }

    /// One mini-batch ([`mini_batch_len`]) whose locks the caller holds.
    /// Refused rows go to `refused` (indices offset by `base`). Returns the
    /// batch's sequence id (0: nothing to apply).
    fn apply_locked(
        &self,
        rows: &[RowMutations<'_>],
        base: usize,
        durability: Durability,
        refused: &mut Vec<(usize, StoreError)>,
    ) -> Result<u64> {
        let Some(mut prepared) = self.prepare_locked(rows, base, durability, refused)? else {
            return Ok(0);
        };
        prepared.durable()?;
        let (seq, _updates) = prepared.publish()?;
        self.mvcc.wait_for_read_point(seq);
        Ok(seq)
    }

    /// Waits until the region's read point covers `seq` (a published
    /// batch is then visible).
    pub(crate) fn wait_visible(&self, seq: u64) {
        self.mvcc.wait_for_read_point(seq);
    }

    /// Takes the row locks of a region batch (see
    /// [`prepare_locked`](Self::prepare_locked)).
    pub(crate) fn lock_batch(&self, rows: &[RowMutations<'_>]) -> RowLockSet<'_> {
        self.lock_rows(rows)
    }

    /// The first half of a mini-batch ([`mini_batch_len`]) whose locks the
    /// caller holds: resolved, given its sequence id and appended to the
    /// WAL — neither durable (for SYNC_WAL) nor in the memstore nor
    /// visible. `None`: every row was refused. The caller makes it durable
    /// ([`PreparedBatch::durable`]), then publishes it; dropping it instead
    /// abandons it (nothing becomes visible). A client batch over several
    /// regions prepares each region's, then awaits one sync for all.
    pub(crate) fn prepare_locked<'a>(
        &'a self,
        rows: &[RowMutations<'a>],
        base: usize,
        durability: Durability,
        refused: &mut Vec<(usize, StoreError)>,
    ) -> Result<Option<PreparedBatch<'a>>> {
        let now = self.server_now();
        // On the stack for the usual region batch of a few rows.
        let mut cells: SmallVec<[CellInput<'a>; 32]> = SmallVec::new();
        // Per applied row: where its cells end in `cells`.
        let mut ends: SmallVec<[usize; 16]> = SmallVec::new();
        for (i, r) in rows.iter().enumerate() {
            let start = cells.len();
            match self.resolve_row(r.row, r.mutations, now, &mut cells) {
                Ok(()) => ends.push(cells.len()),
                // A read of the row (delete of the latest version) met the
                // region draining: the whole mini-batch goes elsewhere, not
                // this row alone refused.
                Err(e @ StoreError::NotServingRegion { .. }) => return Err(e),
                Err(e) => {
                    cells.truncate(start);
                    refused.push((base + i, e));
                }
            }
        }
        if cells.is_empty() {
            return Ok(None);
        }
        let updates = self.updates.read();
        self.check_open()?;
        let write = self.mvcc.begin_write();
        let seq = write.seq();
        self.hook(HookPoint::BeforeWalAppend)?;
        let user_bytes: usize = cells.iter().map(CellInput::encoded_len).sum();
        // Cells of a row are sorted by family, so the WAL codec writes each
        // row and family once.
        let ticket = self
            .wal
            .append_with(self.info.id, seq, codec::encoded_len(&cells), durability, |dst| codec::encode(&cells, dst))?;
        Ok(Some(PreparedBatch { region: self, write, updates, ticket: Some(ticket), cells, ends, user_bytes }))
    }
    /// One row mutation whose row lock the caller holds.
    fn mutate_row_locked(&self, row: &[u8], mutations: &[Mutation], durability: Durability) -> Result<u64> {
        let refs: SmallVec<[MutationRef<'_>; 8]> = mutations.iter().map(Mutation::as_ref).collect();
        let mut refused = Vec::new();
        let seq = self.apply_locked(&[RowMutations { row, mutations: &refs }], 0, durability, &mut refused)?;
        match refused.pop() {
            Some((_, e)) => Err(e),
            None => Ok(seq),
        }
    }

    /// Re-inserts a WAL entry during recovery (cells already flushed to a
    /// family's files are skipped). An entry is one region batch: its cells
    /// come in runs of one row and family. Returns whether anything was
    /// applied; what was is accounted in the WAL until the region flushes.
    pub fn replay(&self, seq: u64, cells: &[Cell]) -> Result<bool> {
        let mut applied = false;
        let mut inputs: Vec<CellInput<'_>> = Vec::new();
        let mut run = 0;
        while run < cells.len() {
            let (row, family) = (&cells[run].row, &cells[run].family);
            let len = cells[run..].iter().take_while(|c| c.row == row && c.family == family).count();
            // A family that no longer exists (an alter removed it after
            // these edits were flushed) is skipped, as HBase's replay does.
            let Some(store) = self.stores.get(family.as_ref()) else {
                tracing::debug!(region = %self.info.region_name(), family = %String::from_utf8_lossy(family), seq,
                    "skipped replayed edits of a family the table no longer has");
                run += len;
                continue;
            };
            if seq > store.replay_floor() {
                inputs.clear();
                inputs.extend(cells[run..run + len].iter().map(Cell::as_input));
                store.memstore().add_replayed_row(&inputs, seq)?;
                applied = true;
            }
            run += len;
        }
        if applied {
            self.wal.note_replayed(self.info.id, seq);
        }
        self.mvcc.advance_to(seq);
        Ok(applied)
    }

    /// Replays the region's recovered edits (what a WAL split wrote for it
    /// from a dead server's log, `wal::split`), flushes them, and removes
    /// them; returns the entries replayed. Each file is read on its own (it
    /// has no predecessor). A crash before the removal replays them again
    /// at the next open, idempotently above the flushed sequence ids.
    pub fn replay_recovered_edits(&self) -> Result<u64> {
        let fs = self.stores.values().next().map(|s| s.fs());
        let Some(fs) = fs else { return Ok(0) };
        let files = crate::wal::log_split::recovered_edits(fs.as_ref(), &self.dir)?;
        if files.is_empty() {
            return Ok(0);
        }
        let mut entries = 0;
        for file in &files {
            let reader = crate::wal::WalReader::open_files(fs.as_ref(), vec![file.clone()])?;
            for entry in reader {
                let entry = entry?;
                let cells: Vec<Cell> = entry.cells()?.map(|c| c.to_cell()).collect();
                if !cells.is_empty() {
                    self.replay(entry.seq, &cells)?;
                }
                entries += 1;
            }
        }
        self.flush()?;
        crate::wal::log_split::remove_recovered_edits(fs.as_ref(), &self.dir)?;
        tracing::info!(region = %self.info.region_name(), files = files.len(), entries, "replayed recovered edits");
        Ok(entries)
    }

    /// Adds each amount to its big-endian 8-byte counter column, all in one
    /// write under the row's lock (HBase's Increment of several columns is
    /// one atomic row mutation); returns each column's new value, in the
    /// order asked. A column named twice gets both amounts.
    pub fn increment(&self, row: &[u8], columns: &[(&[u8], &[u8], i64)], durability: Durability) -> Result<Vec<i64>> {
        self.read_modify_write(row, columns, durability, |family, qualifier, current, amount| {
            let current = match current {
                None => 0,
                Some(value) => {
                    let bytes: [u8; 8] = value.try_into().map_err(|_| StoreError::NotACounter {
                        column: format!("{}:{}", String::from_utf8_lossy(family), String::from_utf8_lossy(qualifier)),
                        len: value.len(),
                    })?;
                    i64::from_be_bytes(bytes)
                }
            };
            let next = current.wrapping_add(*amount);
            Ok((next.to_be_bytes().to_vec(), next))
        })
    }

    /// Appends each suffix to its column's newest value (an absent column
    /// counts as empty), all in one write under the row's lock; returns the
    /// new values in the order asked. Like an increment, each new version
    /// supersedes the one it read.
    pub fn append(
        &self,
        row: &[u8],
        columns: &[(&[u8], &[u8], &[u8])],
        durability: Durability,
    ) -> Result<Vec<Vec<u8>>> {
        self.read_modify_write(row, columns, durability, |_, _, current, suffix| {
            let mut value = current.map(<[u8]>::to_vec).unwrap_or_default();
            value.extend_from_slice(suffix);
            Ok((value.clone(), value))
        })
    }

    /// One row's read-modify-write of several columns: under the row lock,
    /// `next(family, qualifier, current value, argument)` gives each
    /// column's new value (and what to return for it) from its current one
    /// — for a column named twice, the value the first step made — and the
    /// new values are written as one mutation, each version superseding the
    /// one it read.
    fn read_modify_write<A, R>(
        &self,
        row: &[u8],
        columns: &[(&[u8], &[u8], A)],
        durability: Durability,
        next: impl Fn(&[u8], &[u8], Option<&[u8]>, &A) -> Result<(Vec<u8>, R)>,
    ) -> Result<Vec<R>> {
        self.check_open()?;
        let _row = self.row_lock(row).lock();
        let mut puts: Vec<Mutation> = Vec::with_capacity(columns.len());
        let mut out = Vec::with_capacity(columns.len());
        for (family, qualifier, argument) in columns {
            let earlier = puts.iter_mut().find_map(|m| match m {
                Mutation::Put { family: f, qualifier: q, value, .. } if f == family && q == qualifier => Some(value),
                _ => None,
            });
            match earlier {
                Some(value) => {
                    let (made, result) = next(family, qualifier, Some(value.as_slice()), argument)?;
                    *value = made;
                    out.push(result);
                }
                None => {
                    let latest = self.latest_cell(row, family, qualifier)?;
                    let (made, result) = next(family, qualifier, latest.as_ref().map(|c| c.value.as_ref()), argument)?;
                    puts.push(Mutation::Put {
                        family: family.to_vec(),
                        qualifier: qualifier.to_vec(),
                        timestamp: Some(self.stamp_superseding(latest.as_ref())),
                        value: made,
                    });
                    out.push(result);
                }
            }
        }
        self.mutate_row_locked(row, &puts, durability)?;
        Ok(out)
    }

    /// Applies `mutations` if the column's latest value equals `expected`
    /// (`None`: the column must not exist). Returns whether it applied.
    pub fn check_and_mutate(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        mutations: &[Mutation],
        durability: Durability,
    ) -> Result<bool> {
        self.check_open()?;
        let _row = self.row_lock(row).lock();
        let current = self.latest_cell(row, family, qualifier)?;
        let matches = match (current.as_ref(), expected) {
            (None, None) => true,
            (Some(c), Some(e)) => c.value == e,
            _ => false,
        };
        if matches {
            self.mutate_row_locked(row, mutations, durability)?;
        }
        Ok(matches)
    }
}

/// A region batch between its WAL append and its publication; see
/// [`Region::prepare_locked`]. It holds the region's `updates` lock shared
/// (a flush waits for it) and the batch's MVCC entry, which dropping the
/// batch unpublished abandons.
pub(crate) struct PreparedBatch<'a> {
    region: &'a Region,
    // Dropped in this order: the entry is abandoned before a flush may go on.
    write: memstore::PendingWrite<'a>,
    updates: parking_lot::RwLockReadGuard<'a, ()>,
    ticket: Option<crate::wal::AppendTicket>,
    cells: SmallVec<[CellInput<'a>; 32]>,
    ends: SmallVec<[usize; 16]>,
    user_bytes: usize,
}

impl<'a> PreparedBatch<'a> {
    /// Waits until the batch is durable under its durability (one sync
    /// serves every batch appended before it).
    pub(crate) fn durable(&mut self) -> Result<()> {
        match self.ticket.take() {
            Some(t) => self.region.wal.await_durable(t),
            None => Ok(()),
        }
    }

    /// Inserts the durable batch into the memstores and completes its MVCC
    /// entry: it becomes visible once every earlier entry of the region
    /// has completed (`Mvcc::wait_for_read_point` of the returned sequence
    /// id waits for that). Returns the `updates` guard too, so the caller
    /// chooses when a flush may go on. Fails only at the `AfterWalAppend`
    /// hook, before anything is inserted.
    pub(crate) fn publish(self) -> Result<(u64, parking_lot::RwLockReadGuard<'a, ()>)> {
        let PreparedBatch { region, updates, write, cells, ends, user_bytes, .. } = self;
        region.hook(HookPoint::AfterWalAppend)?;
        let seq = write.seq();
        // The point of no return: nothing below fails.
        let mut start = 0;
        for &end in &ends {
            let mut run = start;
            while run < end {
                let family = cells[run].family;
                let run_end = run + cells[run..end].iter().take_while(|c| c.family == family).count();
                if let Some(store) = region.stores.get(family) {
                    store.memstore().add_validated_row(&cells[run..run_end], seq);
                }
                run = run_end;
            }
            start = end;
        }
        drop(write); // completes the entry
        let puts = cells.iter().filter(|c| c.cell_type == CellType::Put).count() as u64;
        region.counters.puts.fetch_add(puts, Ordering::Relaxed);
        region.counters.deletes.fetch_add(cells.len() as u64 - puts, Ordering::Relaxed);
        region.counters.user_bytes.fetch_add(user_bytes as u64, Ordering::Relaxed);
        region.counters.write_requests.fetch_add(ends.len() as u64, Ordering::Relaxed);
        Ok((seq, updates))
    }
}

/// The row locks a batch holds: the stripes in `stripes`, locked in
/// ascending order by `Region::lock_rows` (their guards forgotten), unlocked
/// here.
pub(crate) struct RowLockSet<'a> {
    locks: &'a [Mutex<()>],
    stripes: u128,
}

impl Drop for RowLockSet<'_> {
    fn drop(&mut self) {
        let mut rest = self.stripes;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            // SAFETY: `lock_rows` locked stripe `i` in this thread and
            // forgot its guard; nothing else unlocks it.
            unsafe { self.locks[i].force_unlock() };
            rest &= rest - 1;
        }
    }
}

/// How many leading rows of `rows` go into one mini-batch (one sequence
/// id, one WAL record). A row may repeat in it when the row's every
/// occurrence so far is puts alone: puts read nothing, so the later one's
/// cells follow the earlier one's and, where a key repeats (the same column
/// and timestamp, and the batch's one sequence id), replace them in the
/// memstore — the last write wins, as it does in HBase, whose batches hold
/// shared row locks and put a row twice in one mini-batch. Any other
/// repeat starts a new mini-batch, so that a delete of the latest version,
/// which reads the row, sees what the batch wrote before it.
/// Only the first occurrence is checked against: a later one that was not
/// puts alone would have ended the mini-batch already.
/// Allocation-free for the common case of a few dozen rows.
fn mini_batch_len(rows: &[RowMutations<'_>]) -> usize {
    let puts_only = |r: &RowMutations<'_>| r.mutations.iter().all(|m| matches!(m, MutationRef::Put { .. }));
    for (i, r) in rows.iter().enumerate().skip(1) {
        if let Some(first) = rows[..i].iter().find(|p| bytes_equal(p.row, r.row))
            && !(puts_only(first) && puts_only(r))
        {
            return i;
        }
    }
    rows.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_row_ends_the_mini_batch_unless_it_is_puts_alone() {
        static NONE: [MutationRef<'static>; 0] = [];
        static PUT: [MutationRef<'static>; 1] =
            [MutationRef::Put { family: b"f", qualifier: b"q", timestamp: None, value: b"v" }];
        static DELETE: [MutationRef<'static>; 1] =
            [MutationRef::DeleteVersion { family: b"f", qualifier: b"q", timestamp: None }];
        let (none, put, delete) = (&NONE[..], &PUT[..], &DELETE[..]);
        let rows = |spec: &[(&'static [u8], &'static [MutationRef<'static>])]| -> Vec<RowMutations<'static>> {
            spec.iter().map(|&(row, mutations)| RowMutations { row, mutations }).collect()
        };
        let puts = rows(&[(b"a", put), (b"b", put), (b"a", put), (b"c", put), (b"a", put)]);
        assert_eq!(mini_batch_len(&puts), 5, "puts of one row share a mini-batch");
        let then_delete = rows(&[(b"a", put), (b"b", put), (b"a", delete), (b"c", put)]);
        assert_eq!(mini_batch_len(&then_delete), 2, "a delete of the row it follows starts a new one");
        assert_eq!(mini_batch_len(&then_delete[2..]), 2);
        let after_delete = rows(&[(b"a", delete), (b"a", put)]);
        assert_eq!(mini_batch_len(&after_delete), 1, "so does a put after a delete");
        let empty = rows(&[(b"a", none), (b"a", put)]);
        assert_eq!(mini_batch_len(&empty), 2, "no mutations read nothing");
        assert_eq!(mini_batch_len(&puts[..0]), 0);
    }
}
