//! The gateway's writes: one row's mutations, a batch of rows, increments,
//! appends and check-and-mutate.

use std::collections::BTreeMap;
use std::time::Instant;

use store::wal::Durability;
use store::{Mutation, MutationRef, RowMutations};

use super::{CheckAndMutate, Gateway, GatewayError, GatewayResult, Placement, RowWrite, RowWriteRef};
use crate::peer::forward;
use crate::peer::routing::Router;
use crate::request_metrics::Op;

impl Gateway {
    /// Applies one row's mutations atomically. A call of deletes only
    /// counts as a delete, any other as a put. A write on another server
    /// is timed there.
    pub fn mutate_row(&self, table: &str, write: RowWrite) -> GatewayResult<()> {
        if write.mutations.is_empty() {
            return Ok(());
        }
        if let Some(r) = self.forwarded(table, &write.row, |c| forward::mutate_row(c, table, &write)) {
            return r;
        }
        let started = Instant::now();
        let op = if write.deletes_only() { Op::Delete } else { Op::Put };
        let result = self.store.mutate_row(table, &write.row, &write.mutations, write.durability).map_err(Into::into);
        self.timed(table, op, started, result)
    }

    /// Writes one batch of rows (one phase of a Thrift mutateRows call:
    /// `thrift::handler`), and says row by row what was not applied: `(index in rows,
    /// why)`, ascending; every other row was applied. HBase's multi reports
    /// each action's own result, so its client retries only the rows that
    /// failed; re-sending the whole batch row by row after one bad row
    /// would write the good rows twice (a delete re-sent later can remove a
    /// put another client made in between). `Err`: the batch failed as a
    /// whole (a region batch's WAL sync, a closed region, a server holding
    /// some rows unreachable): the caller reports it for every row, as
    /// HBase's region-level exception is, and its client retries them.
    /// Timed once, as a put.
    pub fn write_rows_each(&self, table: &str, rows: &[RowWrite]) -> GatewayResult<Vec<(usize, GatewayError)>> {
        let refs = mutation_refs(rows);
        self.write_row_refs_each(table, &borrowed(rows, &refs))
    }

    /// [`Gateway::write_rows_each`] of rows borrowed from their request.
    pub fn write_row_refs_each(
        &self,
        table: &str,
        rows: &[RowWriteRef<'_>],
    ) -> GatewayResult<Vec<(usize, GatewayError)>> {
        let started = Instant::now();
        let result = self.apply_rows_each(table, rows);
        self.timed(table, Op::Put, started, result)
    }

    /// Writes one batch of rows: those other servers hold go to them, one
    /// call per server; this server's go to the store as one batch (HBase's
    /// batchMutate): each region's rows are one WAL record with one sync,
    /// visible only once durable. A row the store refuses (e.g. an unknown
    /// family) is listed with its error, and the other rows are applied, as
    /// HBase applies them. Rows that asked not to be logged form their own
    /// SKIP_WAL batch. Each row is atomic; the batch is not.
    fn apply_rows_each(&self, table: &str, rows: &[RowWriteRef<'_>]) -> GatewayResult<Vec<(usize, GatewayError)>> {
        let mut here: Vec<usize> = Vec::with_capacity(rows.len());
        let mut remote: BTreeMap<String, (Vec<String>, Vec<RowWrite>)> = BTreeMap::new();
        for (i, w) in rows.iter().enumerate().filter(|(_, w)| !w.mutations.is_empty()) {
            match self.router.is_cluster().then(|| self.placement(table, w.row)) {
                Some(Placement::Elsewhere { region, owner }) => {
                    let entry = remote.entry(owner).or_default();
                    entry.0.push(region);
                    entry.1.push(w.to_row_write());
                }
                _ => here.push(i),
            }
        }
        let mut failed = self.forward_rows(table, remote);
        let mut refused = Vec::new();
        // One store batch per durability the rows ask for (usually one).
        for durability in [None, Some(Durability::SyncWal), Some(Durability::AsyncWal), Some(Durability::SkipWal)] {
            let (at, batch): (Vec<usize>, Vec<RowMutations<'_>>) = here
                .iter()
                .filter(|&&i| rows[i].durability == durability)
                .map(|&i| (i, RowMutations { row: rows[i].row, mutations: rows[i].mutations }))
                .unzip();
            if batch.is_empty() {
                continue;
            }
            match self.store.mutate_rows_each(table, &batch, durability) {
                Ok(rows_refused) => {
                    refused.extend(rows_refused.into_iter().map(|(j, e)| (at[j], GatewayError::from(e))));
                }
                Err(e) => failed = failed.and(Err(e.into())),
            }
        }
        refused.sort_unstable_by_key(|(i, _)| *i);
        failed.map(|()| refused)
    }

    /// Sends each other server the rows it holds, one call per server; the
    /// first failure (every server is called).
    fn forward_rows(&self, table: &str, remote: BTreeMap<String, (Vec<String>, Vec<RowWrite>)>) -> GatewayResult<()> {
        let mut result = Ok(());
        for (owner, (regions, batch)) in remote {
            let sent = self.router.call(&owner, |c| forward::mutate_rows(c, table, &batch));
            if let Err(e) = &sent
                && Router::moved(e)
            {
                regions.iter().for_each(|r| self.router.forget(r));
            }
            let region = regions.first().cloned().unwrap_or_default();
            result = result.and(sent.map_err(|e| forward::failure(e, &region, &owner)));
        }
        result
    }

    /// Adds each amount to its counter column (family, qualifier) of one
    /// row, atomically; the new values, in the order asked. Thrift v1
    /// increments one column per call, so a row held by another server
    /// takes one column here (several are refused, never split).
    pub fn increment(&self, table: &str, row: &[u8], columns: &[(Vec<u8>, Vec<u8>, i64)]) -> GatewayResult<Vec<i64>> {
        if let [(family, qualifier, amount)] = columns {
            if let Some(r) =
                self.forwarded(table, row, |c| forward::increment(c, table, row, family, qualifier, *amount))
            {
                return r.map(|value| vec![value]);
            }
        } else if matches!(self.placement(table, row), Placement::Elsewhere { .. }) {
            return Err(GatewayError::CannotForward(format!(
                "an increment of {} columns of a row another server holds (Thrift v1 increments one column a call)",
                columns.len()
            )));
        }
        let columns: Vec<(&[u8], &[u8], i64)> =
            columns.iter().map(|(f, q, a)| (f.as_slice(), q.as_slice(), *a)).collect();
        Ok(self.store.increment_columns(table, row, &columns)?)
    }

    /// Appends each suffix to its column (family, qualifier) of one row,
    /// atomically; the new values, in the order asked.
    pub fn append(
        &self,
        table: &str,
        row: &[u8],
        columns: &[(Vec<u8>, Vec<u8>, Vec<u8>)],
    ) -> GatewayResult<Vec<Vec<u8>>> {
        if let Some(r) = self.forwarded(table, row, |c| forward::append(c, table, row, columns)) {
            return r;
        }
        let columns: Vec<(&[u8], &[u8], &[u8])> =
            columns.iter().map(|(f, q, s)| (f.as_slice(), q.as_slice(), s.as_slice())).collect();
        Ok(self.store.append_columns(table, row, &columns)?)
    }

    /// Applies the mutations if the column holds the expected value;
    /// whether it did.
    pub fn check_and_mutate(&self, table: &str, check: CheckAndMutate) -> GatewayResult<bool> {
        if let Some(r) = self.forwarded(table, &check.row, |c| forward::check_and_mutate(c, table, &check)) {
            return r;
        }
        let CheckAndMutate { row, family, qualifier, expected, mutations } = &check;
        Ok(self.store.check_and_mutate(table, row, family, qualifier, expected.as_deref(), mutations)?)
    }
}

/// Each owned row's mutations, borrowed (what [`borrowed`] points into).
fn mutation_refs(rows: &[RowWrite]) -> Vec<Vec<MutationRef<'_>>> {
    rows.iter().map(|w| w.mutations.iter().map(Mutation::as_ref).collect()).collect()
}

/// Owned rows as the borrowed rows a batch takes.
fn borrowed<'a>(rows: &'a [RowWrite], refs: &'a [Vec<MutationRef<'a>>]) -> Vec<RowWriteRef<'a>> {
    rows.iter()
        .zip(refs)
        .map(|(w, mutations)| RowWriteRef { row: &w.row, mutations, durability: w.durability })
        .collect()
}
