//! `ClientService.{Get, Mutate, Multi}`: one row's reads and writes, and
//! batches of them, on the region the call names.
//!
//! * Get: columns, versions, time range; `existence_only`; a filter (see
//!   [`super::filters`]) makes it a one-row scan, as in HBase.
//! * Mutate: Put and Delete (every kind) as one row's write; Increment and
//!   Append of all their columns as one atomic write; with a condition (`checkAndMutate`), the
//!   store's check-and-mutate when the condition is "equals value" or "is
//!   absent", refused otherwise.
//! * Multi: each region action's actions; an `atomic` action (RowMutations)
//!   is one row's write, or a conditional one. The plain Puts and Deletes of
//!   a region action are written as one batch; when the batch fails, each is
//!   written alone so each action gets its own result or exception, as
//!   HBase answers them.
//!
//! Invariant: a row outside the named region is answered
//! `NotServingRegionException` (the client relocates).
//!
//! Thread safety: no state; see the module `rpc`.

use std::borrow::Cow;

use hbase_rpc::pb::hbase::pb::{
    self as pb, CompareType, Condition, GetRequest, GetResponse, MultiRequest, MultiResponse, MutateRequest,
    MutateResponse, MutationProto, RegionActionResult, ResultOrException, mutation_proto::MutationType,
};
use hbase_rpc::{Call, Cell as WireCell, Immediate, Reply, RpcError};
use memstore::{RowCells, TimeRange};
use store::{Column, Get, MutationRef, RegionInfo};

use super::cells::{
    mutation_cells, mutation_durability, mutation_row, result, row_write, store_mutation_refs, store_mutations,
    wire_cell,
};
use super::errors::{from_gateway, name_bytes_pair};
use super::filters::filter_text;
use super::{RpcAdapter, Target};
use crate::gateway::{CheckAndMutate, RowWrite, RowWriteRef, ScanRequest};

/// The store's columns for a read's: a family, or its named qualifiers.
pub fn columns(columns: &[pb::Column]) -> Vec<Column> {
    let mut out = Vec::new();
    for c in columns {
        if c.qualifier.is_empty() {
            out.push(Column { family: c.family.to_vec(), qualifier: None });
        }
        for q in &c.qualifier {
            out.push(Column { family: c.family.to_vec(), qualifier: Some(q.to_vec()) });
        }
    }
    out
}

/// HBase's time range `[from, to)` (unset: all time).
pub fn time_range(range: Option<&pb::TimeRange>) -> TimeRange {
    match range {
        None => TimeRange::ALL,
        Some(r) => TimeRange { min: r.from.unwrap_or(0), max: r.to.unwrap_or(u64::MAX) },
    }
}

/// A wire Get as the store's (its filter apart: see `get_cells`).
pub fn store_get(get: &pb::Get) -> Result<Get, RpcError> {
    if get.closest_row_before.unwrap_or(false) {
        return Err(RpcError::do_not_retry(
            "closest_row_before (getRowOrBefore) is not supported; use a reversed scan",
        ));
    }
    Ok(Get {
        row: get.row.to_vec(),
        columns: columns(&get.column),
        time_range: time_range(get.time_range.as_ref()),
        max_versions: get.max_versions.unwrap_or(1).max(1),
    })
}

fn check_row(region: &RegionInfo, row: &[u8]) -> Result<(), RpcError> {
    if region.contains(row) {
        Ok(())
    } else {
        Err(RpcError::not_serving_region(&String::from_utf8_lossy(&super::names::region_name(
            &region.table,
            &region.start_key,
            region.id,
        ))))
    }
}

const BINARY_COMPARATOR: &str = "org.apache.hadoop.hbase.filter.BinaryComparator";
const NULL_COMPARATOR: &str = "org.apache.hadoop.hbase.filter.NullComparator";

/// A condition as the store's check: "equals value" (a BinaryComparator;
/// an empty value means "absent", as in HBase) or "absent" (a
/// NullComparator).
pub fn check(condition: &Condition, mutations: Vec<store::Mutation>) -> Result<CheckAndMutate, RpcError> {
    if condition.filter.is_some() {
        return Err(RpcError::do_not_retry("checkAndMutate with a filter is not supported here"));
    }
    if condition.compare_type != Some(CompareType::Equal as i32) {
        return Err(RpcError::do_not_retry("checkAndMutate supports the EQUAL comparison only here"));
    }
    if condition
        .time_range
        .as_ref()
        .is_some_and(|r| time_range(Some(r)) != TimeRange::ALL && r.to != Some(i64::MAX as u64))
    {
        return Err(RpcError::do_not_retry("checkAndMutate with a time range is not supported here"));
    }
    let comparator =
        condition.comparator.as_ref().ok_or_else(|| RpcError::do_not_retry("a condition without a comparator"))?;
    let expected = match comparator.name.as_str() {
        BINARY_COMPARATOR => {
            let c: pb::BinaryComparator =
                prost::Message::decode(comparator.serialized_comparator.clone().unwrap_or_default())
                    .map_err(|e| RpcError::do_not_retry(format!("malformed BinaryComparator: {e}")))?;
            let value = c.comparable.value.unwrap_or_default();
            (!value.is_empty()).then(|| value.to_vec())
        }
        NULL_COMPARATOR => None,
        other => {
            return Err(RpcError::do_not_retry(format!(
                "checkAndMutate with comparator {other} is not supported here"
            )));
        }
    };
    Ok(CheckAndMutate {
        row: condition.row.to_vec(),
        family: condition.family.clone().unwrap_or_default().to_vec(),
        qualifier: condition.qualifier.clone().unwrap_or_default().to_vec(),
        expected,
        mutations,
    })
}

/// One action's outcome in a Multi.
type Outcome = Result<pb::Result, RpcError>;

impl RpcAdapter {
    pub(super) fn get(&self, call: &Call) -> Result<Reply, RpcError> {
        let request: GetRequest = call.decode()?;
        let cells = match self.target(&request.region)? {
            Target::Meta => self.meta_get(&request.get)?,
            Target::Region(region) => self.get_cells(&region, &request.get).map_err(|e| self.redirected(&region, e))?,
        };
        Ok(get_reply(call, &request, cells))
    }

    /// A get answered on the connection's reader thread when memory holds
    /// its cells (see [`Gateway::get_from_memory`]); handed back to run on a
    /// worker when a block must be read, or when it is a filtered get (a
    /// one-row scan) or a get of `hbase:meta`.
    pub(super) fn get_now(&self, call: Call) -> Immediate {
        let request: GetRequest = match call.decode() {
            Ok(request) => request,
            Err(e) => return Immediate::Answered(Err(e)),
        };
        let region = match self.target(&request.region) {
            Ok(Target::Region(region)) if request.get.filter.is_none() => region,
            Ok(_) => return Immediate::Later(call),
            Err(e) => return Immediate::Answered(Err(e)),
        };
        let cells = check_row(&region, &request.get.row).and_then(|()| {
            let get = store_get(&request.get)?;
            self.gateway.get_from_memory(&region.table, &get).map_err(from_gateway)
        });
        match cells {
            Ok(Some(cells)) => {
                Immediate::Answered(Ok(get_reply(&call, &request, cells.into_iter().map(wire_cell).collect())))
            }
            Ok(None) => Immediate::Later(call),
            // Where the region went is asked of the master: not on the
            // connection's reader thread.
            Err(e) if e.class_name() == hbase_rpc::error::class::NOT_SERVING_REGION => Immediate::Later(call),
            Err(e) => Immediate::Answered(Err(e)),
        }
    }

    fn get_cells(&self, region: &RegionInfo, get: &pb::Get) -> Result<Vec<WireCell>, RpcError> {
        check_row(region, &get.row)?;
        let store_get = store_get(get)?;
        let filter = get.filter.as_ref().map(filter_text).transpose()?.flatten();
        let cells = match filter {
            None => self.gateway.get(&region.table, store_get).map_err(from_gateway)?,
            // A filtered Get is HBase's one-row scan with that filter.
            Some(filter) => {
                let scan = store::Scan {
                    start: Some(store_get.row.clone()),
                    stop: Some(store_get.row),
                    stop_inclusive: true,
                    columns: store_get.columns,
                    time_range: store_get.time_range,
                    max_versions: store_get.max_versions,
                    ..store::Scan::default()
                };
                let request = ScanRequest { scan, filter: Some(filter), sorted_columns: false };
                let id = self.gateway.open_scanner(&region.table, request).map_err(from_gateway)?;
                let rows = self.gateway.scanner_rows(id, 1);
                let _ = self.gateway.close_scanner(id);
                rows.map_err(from_gateway)?.rows.first().map(RowCells::to_cells).unwrap_or_default()
            }
        };
        Ok(cells.into_iter().map(wire_cell).collect())
    }

    pub(super) fn mutate(&self, call: Call) -> Result<Reply, RpcError> {
        let request: MutateRequest = call.decode()?;
        let region = self.region(&request.region, "Mutate")?;
        self.mutate_in(&region, &request, &call).map_err(|e| self.redirected(&region, e))
    }

    fn mutate_in(&self, region: &RegionInfo, request: &MutateRequest, call: &Call) -> Result<Reply, RpcError> {
        let cells = mutation_cells(&request.mutation, &call.cells, &mut 0)?;
        if let Some(condition) = &request.condition {
            let processed = self.conditional(region, condition, &[(&request.mutation, &cells[..])])?;
            return Ok(Reply::new(&MutateResponse { result: None, processed: Some(processed), metrics: None }));
        }
        let mut block = Vec::new();
        let result = self.apply(region, &request.mutation, &cells, call.cell_block_supported, &mut block)?;
        Ok(Reply::with_cells(&MutateResponse { result: Some(result), processed: Some(true), metrics: None }, block))
    }

    /// Applies one mutation; its result (Increment's and Append's new
    /// values, else empty).
    fn apply(
        &self,
        region: &RegionInfo,
        m: &MutationProto,
        cells: &[WireCell],
        cell_block: bool,
        block: &mut Vec<WireCell>,
    ) -> Result<pb::Result, RpcError> {
        let row = mutation_row(m, cells)?.to_vec();
        check_row(region, &row)?;
        let table = &region.table;
        let now = now_ms();
        let new_cells = match super::cells::mutation_type(m)? {
            MutationType::Put | MutationType::Delete => {
                self.gateway.mutate_row(table, row_write(m, cells)?).map_err(from_gateway)?;
                return Ok(pb::Result::default());
            }
            MutationType::Increment => {
                let mut columns = Vec::with_capacity(cells.len());
                for c in cells {
                    let amount = <[u8; 8]>::try_from(&c.value[..])
                        .map(i64::from_be_bytes)
                        .map_err(|_| RpcError::do_not_retry("an increment's amount must be an 8-byte long"))?;
                    columns.push((c.family.to_vec(), c.qualifier.to_vec(), amount));
                }
                let values = self.gateway.increment(table, &row, &columns).map_err(from_gateway)?;
                cells
                    .iter()
                    .zip(values)
                    .map(|(c, v)| {
                        WireCell::put(row.clone(), c.family.clone(), c.qualifier.clone(), now, v.to_be_bytes().to_vec())
                    })
                    .collect()
            }
            MutationType::Append => {
                let columns: Vec<_> =
                    cells.iter().map(|c| (c.family.to_vec(), c.qualifier.to_vec(), c.value.to_vec())).collect();
                let values = self.gateway.append(table, &row, &columns).map_err(from_gateway)?;
                cells
                    .iter()
                    .zip(values)
                    .map(|(c, v)| WireCell::put(row.clone(), c.family.clone(), c.qualifier.clone(), now, v))
                    .collect()
            }
        };
        Ok(result(new_cells, cell_block, block))
    }

    /// A conditional write of Puts and Deletes of one row; whether it was
    /// applied.
    fn conditional(
        &self,
        region: &RegionInfo,
        condition: &Condition,
        mutations: &[(&MutationProto, &[WireCell])],
    ) -> Result<bool, RpcError> {
        check_row(region, &condition.row)?;
        let mut changes = Vec::new();
        for (m, cells) in mutations {
            match super::cells::mutation_type(m)? {
                MutationType::Put | MutationType::Delete => {
                    if mutation_row(m, cells)? != condition.row {
                        return Err(RpcError::do_not_retry("a conditional mutation must change the row it checks"));
                    }
                    changes.extend(store_mutations(m, cells)?)
                }
                other => {
                    return Err(RpcError::do_not_retry(format!("checkAndMutate with {other:?} is not supported here")));
                }
            }
        }
        self.gateway.check_and_mutate(&region.table, check(condition, changes)?).map_err(from_gateway)
    }

    #[expect(
        deprecated,
        reason = "clients before HBase 2.4 send a conditional Multi's condition and read its outcome on the MultiRequest and MultiResponse"
    )]
    pub(super) fn multi(&self, call: Call) -> Result<Reply, RpcError> {
        let request: MultiRequest = call.decode()?;
        let cell_block = call.cell_block_supported;
        let mut block_at = 0;
        let mut block_out = Vec::new();
        let mut response = MultiResponse::default();
        for action in &request.region_action {
            // Every action's cells first: the block is read in order even
            // for a region refused below.
            let mut cells = Vec::with_capacity(action.action.len());
            for a in &action.action {
                cells.push(match &a.mutation {
                    Some(m) => mutation_cells(m, &call.cells, &mut block_at)?,
                    None => Cow::Borrowed(&[][..]),
                });
            }
            let outcome = self.region_action(action, &cells, request.condition.as_ref(), cell_block, &mut block_out);
            // hbase-client sends the actions of a RowMutations (and of a
            // conditional one) without indexes and files each answer under
            // its index: as HBase's region server does, an atomic action's
            // answer without an index takes its position.
            let positional = action.atomic.unwrap_or(false) || action.condition.is_some();
            let index = |a: &pb::Action, i: usize| if positional { a.index.or(Some(i as u32)) } else { a.index };
            let result = match outcome {
                Ok((results, processed)) => {
                    if action.condition.is_some() || request.condition.is_some() {
                        response.processed = processed;
                    }
                    RegionActionResult {
                        result_or_exception: action
                            .action
                            .iter()
                            .zip(results)
                            .enumerate()
                            .map(|(i, (a, r))| match r {
                                Ok(result) => {
                                    ResultOrException { index: index(a, i), result: Some(result), ..Default::default() }
                                }
                                Err(e) => ResultOrException {
                                    index: index(a, i),
                                    exception: Some(name_bytes_pair(&e)),
                                    ..Default::default()
                                },
                            })
                            .collect(),
                        processed,
                        ..Default::default()
                    }
                }
                Err(e) => RegionActionResult { exception: Some(name_bytes_pair(&e)), ..Default::default() },
            };
            response.region_action_result.push(result);
        }
        Ok(Reply::with_cells(&response, block_out))
    }

    /// One region action: each action's outcome, and for a conditional
    /// one whether it was applied.
    fn region_action(
        &self,
        action: &pb::RegionAction,
        cells: &[Cow<'_, [WireCell]>],
        multi_condition: Option<&Condition>,
        cell_block: bool,
        block: &mut Vec<WireCell>,
    ) -> Result<(Vec<Outcome>, Option<bool>), RpcError> {
        let region = self.region(&action.region, "Multi")?;
        let (outcomes, processed) = self
            .region_action_in(&region, action, cells, multi_condition, cell_block, block)
            .map_err(|e| self.redirected(&region, e))?;
        // The catalog is asked once for the region's actions refused alike.
        let mut moved: Option<RpcError> = None;
        let outcomes = outcomes
            .into_iter()
            .map(|o| {
                o.map_err(|e| {
                    if e.class_name() != hbase_rpc::error::class::NOT_SERVING_REGION {
                        return e;
                    }
                    moved.get_or_insert_with(|| self.redirected(&region, e)).clone()
                })
            })
            .collect();
        Ok((outcomes, processed))
    }

    fn region_action_in(
        &self,
        region: &RegionInfo,
        action: &pb::RegionAction,
        cells: &[Cow<'_, [WireCell]>],
        multi_condition: Option<&Condition>,
        cell_block: bool,
        block: &mut Vec<WireCell>,
    ) -> Result<(Vec<Outcome>, Option<bool>), RpcError> {
        let mutations: Vec<(&MutationProto, &[WireCell])> =
            action.action.iter().zip(cells).filter_map(|(a, c)| a.mutation.as_ref().map(|m| (m, &c[..]))).collect();
        if let Some(condition) = action.condition.as_ref().or(multi_condition) {
            let processed = self.conditional(region, condition, &mutations)?;
            return Ok((action.action.iter().map(|_| Ok(pb::Result::default())).collect(), Some(processed)));
        }
        if action.atomic.unwrap_or(false) {
            // RowMutations: one row's Puts and Deletes, applied together.
            let mut write: Option<RowWrite> = None;
            for (m, c) in &mutations {
                let w = row_write(m, c)?;
                check_row(region, &w.row)?;
                match &mut write {
                    None => write = Some(w),
                    Some(all) if all.row == w.row => all.mutations.extend(w.mutations),
                    Some(_) => return Err(RpcError::do_not_retry("an atomic region action must change one row")),
                }
            }
            if let Some(w) = write {
                self.gateway.mutate_row(&region.table, w).map_err(from_gateway)?;
            }
            // HBase's region server says an atomic action was processed;
            // the client takes a result without it as no answer.
            return Ok((action.action.iter().map(|_| Ok(pb::Result::default())).collect(), Some(true)));
        }
        let mut outcomes: Vec<Option<Outcome>> = vec![None; action.action.len()];
        // Plain Puts and Deletes go as one batch (the actions they came
        // from in `batch_at`); each reports its own row's result. Their
        // changes borrow the request's cells, all in one vector (`changes`,
        // each row its range of it): the store copies the bytes once, into
        // its WAL buffer and MSLAB chunks (copying them into owned
        // mutations first was 4 % of the server's samples in YCSB's write
        // phase, bench-results/issue27-long-columns/server-write-profile.txt).
        let (mut batch_at, mut rows) = (Vec::new(), Vec::new());
        let mut changes: Vec<MutationRef<'_>> = Vec::new();
        for (i, (a, c)) in action.action.iter().zip(cells).enumerate() {
            let outcome = match (&a.get, &a.mutation) {
                (Some(get), _) => self.get_cells(region, get).map(|cells| result(cells, cell_block, block)),
                (None, Some(m)) => match super::cells::mutation_type(m) {
                    Ok(MutationType::Put | MutationType::Delete) => {
                        let start = changes.len();
                        let row = mutation_row(m, c)
                            .and_then(|row| store_mutation_refs(m, c, &mut changes).map(|()| row))
                            .and_then(|row| check_row(region, row).map(|()| row));
                        match row {
                            Ok(row) => {
                                batch_at.push(i);
                                rows.push((row, start..changes.len(), mutation_durability(m)));
                                continue;
                            }
                            Err(e) => {
                                changes.truncate(start);
                                Err(e)
                            }
                        }
                    }
                    _ => self.apply(region, m, c, cell_block, block),
                },
                (None, None) => Err(RpcError::do_not_retry("coprocessor service calls are not supported")),
            };
            outcomes[i] = Some(outcome);
        }
        if !rows.is_empty() {
            let batch: Vec<RowWriteRef<'_>> = rows
                .into_iter()
                .map(|(row, at, durability)| RowWriteRef { row, mutations: &changes[at], durability })
                .collect();
            let refused = self.gateway.write_row_refs_each(&region.table, &batch).map_err(from_gateway)?;
            for (j, e) in refused {
                outcomes[batch_at[j]] = Some(Err(from_gateway(e)));
            }
        }
        Ok((outcomes.into_iter().map(|o| o.unwrap_or_else(|| Ok(pb::Result::default()))).collect(), None))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The reply to a get whose cells are `cells`.
fn get_reply(call: &Call, request: &GetRequest, cells: Vec<WireCell>) -> Reply {
    let mut block = Vec::new();
    let result = if request.get.existence_only.unwrap_or(false) {
        pb::Result { exists: Some(!cells.is_empty()), stale: Some(false), ..Default::default() }
    } else {
        result(cells, call.cell_block_supported, &mut block)
    };
    Reply::with_cells(&GetResponse { result: Some(result) }, block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use hbase_rpc::pb::hbase::pb::{ByteArrayComparable, Comparator};

    fn condition(name: &str, value: Option<&'static [u8]>) -> Condition {
        let serialized = value.map(|v| {
            prost::Message::encode_to_vec(&pb::BinaryComparator {
                comparable: ByteArrayComparable { value: Some(Bytes::from_static(v)) },
            })
        });
        Condition {
            row: Bytes::from_static(b"r"),
            family: Some(Bytes::from_static(b"f")),
            qualifier: Some(Bytes::from_static(b"q")),
            compare_type: Some(CompareType::Equal as i32),
            comparator: Some(Comparator { name: name.into(), serialized_comparator: serialized.map(Into::into) }),
            ..Default::default()
        }
    }

    #[test]
    fn conditions_become_the_store_s_checks() {
        let c = check(&condition(BINARY_COMPARATOR, Some(b"v")), vec![]).unwrap();
        assert_eq!(
            (c.row, c.family, c.qualifier, c.expected),
            (b"r".to_vec(), b"f".to_vec(), b"q".to_vec(), Some(b"v".to_vec()))
        );
        assert_eq!(check(&condition(BINARY_COMPARATOR, Some(b"")), vec![]).unwrap().expected, None);
        assert_eq!(check(&condition(NULL_COMPARATOR, None), vec![]).unwrap().expected, None);
        let mut greater = condition(BINARY_COMPARATOR, Some(b"v"));
        greater.compare_type = Some(CompareType::Greater as i32);
        assert!(check(&greater, vec![]).unwrap_err().is_do_not_retry());
        assert!(check(&condition("org.apache.hadoop.hbase.filter.RegexStringComparator", None), vec![]).is_err());
    }

    #[test]
    fn gets_map_columns_versions_and_time_ranges() {
        let get = pb::Get {
            row: Bytes::from_static(b"r"),
            column: vec![
                pb::Column { family: Bytes::from_static(b"f"), qualifier: vec![] },
                pb::Column {
                    family: Bytes::from_static(b"g"),
                    qualifier: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
                },
            ],
            time_range: Some(pb::TimeRange { from: Some(5), to: Some(10) }),
            max_versions: Some(3),
            ..Default::default()
        };
        let g = store_get(&get).unwrap();
        assert_eq!(g.columns.len(), 3);
        assert_eq!(g.columns[0], Column { family: b"f".to_vec(), qualifier: None });
        assert_eq!(g.columns[2], Column { family: b"g".to_vec(), qualifier: Some(b"b".to_vec()) });
        assert_eq!((g.time_range, g.max_versions), (TimeRange { min: 5, max: 10 }, 3));
    }
}
