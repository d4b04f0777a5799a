//! Cells and mutations between HBase's wire forms and the gateway's values.
//!
//! * Results: the store's cells become `Result`s whose cells travel in the
//!   reply's cell block when the client named a codec
//!   (`associated_cell_count`), inside the message otherwise.
//! * Mutations: a `MutationProto`'s cells are those inside it
//!   (`column_value`, typed by `delete_type` for a Delete) followed by
//!   `associated_cell_count` cells of the request's cell block, in order.
//!   HBase's `LATEST_TIMESTAMP` (`Long.MAX_VALUE`) means "now": no
//!   timestamp in the store's terms.
//!
//! Thread safety: pure functions over values.

use std::borrow::Cow;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::{self as pb, MutationProto, mutation_proto};
use hbase_rpc::{Cell as WireCell, CellSource, CellType as WireType, KeyValueParts, RpcError};
use memstore::{Cell, CellRef, RowCells};
use store::wal::Durability;
use store::{Mutation, MutationRef};

use crate::gateway::RowWrite;

/// HBase's `HConstants.LATEST_TIMESTAMP`: "now".
pub const LATEST_TIMESTAMP: i64 = i64::MAX;

/// A stored cell (always a value: reads never return markers) on the wire.
pub fn wire_cell(cell: Cell) -> WireCell {
    WireCell::put(cell.row, cell.family, cell.qualifier, cell.timestamp as i64, cell.value)
}

/// [`wire_cell`]'s `KeyValue`, borrowed from the cell's encoding.
pub fn wire_parts<'a>(cell: &CellRef<'a>) -> KeyValueParts<'a> {
    KeyValueParts {
        row: cell.row(),
        family: cell.family(),
        qualifier: cell.qualifier(),
        timestamp: cell.timestamp() as i64,
        cell_type: WireType::Put,
        value: cell.value(),
        tags: &[],
    }
}

/// Rows a scan read, written into a response's cell block from the
/// buffers the scan read them into: no wire cell is made of each (for a
/// YCSB E scan, a thousand cells: their owned cells, wire cells and the
/// reference counts of both were a fifth of the server's time).
pub struct RowsCellBlock(pub Vec<RowCells>);

impl CellSource for RowsCellBlock {
    fn cell_count(&self) -> usize {
        self.0.iter().map(RowCells::len).sum()
    }

    fn for_each_cell(&self, f: &mut dyn FnMut(KeyValueParts<'_>)) {
        for row in &self.0 {
            row.iter().for_each(|c| f(wire_parts(&c)));
        }
    }
}

fn pb_cell(cell: &WireCell) -> pb::Cell {
    pb::Cell {
        row: Some(cell.row.clone()),
        family: Some(cell.family.clone()),
        qualifier: Some(cell.qualifier.clone()),
        timestamp: Some(cell.timestamp as u64),
        cell_type: Some(i32::from(cell.cell_type.code())),
        value: Some(cell.value.clone()),
        tags: None,
    }
}

/// One `Result` of `cells`: in the cell block (`block`) when the client
/// takes one, else inside the message.
pub fn result(cells: Vec<WireCell>, cell_block: bool, block: &mut Vec<WireCell>) -> pb::Result {
    if cell_block {
        let count = cells.len() as i32;
        block.extend(cells);
        pb::Result { associated_cell_count: Some(count), stale: Some(false), ..Default::default() }
    } else {
        pb::Result { cell: cells.iter().map(pb_cell).collect(), stale: Some(false), ..Default::default() }
    }
}

/// The store's timestamp for a wire one: `None` for "now".
pub fn timestamp(ts: i64) -> Option<u64> {
    (ts != LATEST_TIMESTAMP && ts >= 0).then_some(ts as u64)
}

/// The mutation's type (PUT, DELETE, INCREMENT, APPEND).
pub fn mutation_type(m: &MutationProto) -> Result<mutation_proto::MutationType, RpcError> {
    m.mutate_type
        .and_then(|t| mutation_proto::MutationType::try_from(t).ok())
        .ok_or_else(|| RpcError::do_not_retry("a mutation without a known type"))
}

/// The mutation's cells: those inside it, then its share of the cell block
/// (`block[*next..]`; `next` moves past it, so the block is read in order
/// even for a mutation refused later). Borrowed from the block when all of
/// them are there, as the Java client sends a Put's and a Delete's cells.
pub fn mutation_cells<'a>(
    m: &MutationProto,
    block: &'a [WireCell],
    next: &mut usize,
) -> Result<Cow<'a, [WireCell]>, RpcError> {
    use mutation_proto::DeleteType;
    let is_delete = mutation_type(m)? == mutation_proto::MutationType::Delete;
    let from_block = usize::try_from(m.associated_cell_count.unwrap_or(0)).unwrap_or(0);
    let end = next.checked_add(from_block).filter(|&end| end <= block.len()).ok_or_else(|| {
        RpcError::do_not_retry("the cell block holds fewer cells than the mutations say (associated_cell_count)")
    })?;
    let block_cells = &block[*next..end];
    *next = end;
    if m.column_value.is_empty() {
        return Ok(Cow::Borrowed(block_cells));
    }
    let row = m.row.clone().unwrap_or_default();
    let default_ts = m.timestamp.map_or(LATEST_TIMESTAMP, |t| t as i64);
    let mut cells = Vec::new();
    for column in &m.column_value {
        for qv in &column.qualifier_value {
            let cell_type = if is_delete {
                match qv.delete_type.and_then(|t| DeleteType::try_from(t).ok()) {
                    Some(DeleteType::DeleteOneVersion) => WireType::Delete,
                    Some(DeleteType::DeleteFamily) => WireType::DeleteFamily,
                    Some(DeleteType::DeleteFamilyVersion) => WireType::DeleteFamilyVersion,
                    Some(DeleteType::DeleteMultipleVersions) | None => WireType::DeleteColumn,
                }
            } else {
                WireType::Put
            };
            cells.push(WireCell {
                row: row.clone(),
                family: column.family.clone(),
                qualifier: qv.qualifier.clone().unwrap_or_default(),
                timestamp: qv.timestamp.map_or(default_ts, |t| t as i64),
                cell_type,
                value: qv.value.clone().unwrap_or_default(),
                tags: Bytes::new(),
            });
        }
    }
    cells.extend_from_slice(block_cells);
    Ok(Cow::Owned(cells))
}

/// The row a mutation changes: its own, or its first cell's.
pub fn mutation_row<'a>(m: &'a MutationProto, cells: &'a [WireCell]) -> Result<&'a [u8], RpcError> {
    match (&m.row, cells.first()) {
        (Some(row), _) if !row.is_empty() => Ok(row),
        (_, Some(cell)) => Ok(&cell.row),
        _ => Err(RpcError::do_not_retry("a mutation without a row")),
    }
}

/// A Put's or Delete's changes in the store's terms, borrowed from its
/// cells, pushed onto `out` (nothing is pushed on an error).
pub fn store_mutation_refs<'a>(
    m: &MutationProto,
    cells: &'a [WireCell],
    out: &mut Vec<MutationRef<'a>>,
) -> Result<(), RpcError> {
    let kind = mutation_type(m)?;
    if cells.is_empty() && kind == mutation_proto::MutationType::Delete {
        // A Delete naming no column deletes the row.
        let ts = m.timestamp.map_or(LATEST_TIMESTAMP, |t| t as i64);
        out.push(MutationRef::DeleteRow { timestamp: timestamp(ts) });
        return Ok(());
    }
    let start = out.len();
    out.reserve(cells.len());
    for c in cells {
        let (family, qualifier, ts) = (&c.family[..], &c.qualifier[..], timestamp(c.timestamp));
        out.push(match c.cell_type {
            WireType::Put => MutationRef::Put { family, qualifier, timestamp: ts, value: &c.value },
            WireType::Delete => MutationRef::DeleteVersion { family, qualifier, timestamp: ts },
            WireType::DeleteColumn => MutationRef::DeleteColumn { family, qualifier, timestamp: ts },
            WireType::DeleteFamily => MutationRef::DeleteFamily { family, timestamp: ts },
            WireType::DeleteFamilyVersion => match ts {
                Some(timestamp) => MutationRef::DeleteFamilyVersion { family, timestamp },
                None => {
                    out.truncate(start);
                    return Err(RpcError::do_not_retry("a family version delete needs an explicit timestamp"));
                }
            },
        });
    }
    Ok(())
}

/// A Put's or Delete's changes in the store's terms, owned.
pub fn store_mutations(m: &MutationProto, cells: &[WireCell]) -> Result<Vec<Mutation>, RpcError> {
    let mut refs = Vec::new();
    store_mutation_refs(m, cells, &mut refs)?;
    Ok(refs.iter().map(MutationRef::to_mutation).collect())
}

/// A Put or Delete as one row's write.
pub fn row_write(m: &MutationProto, cells: &[WireCell]) -> Result<RowWrite, RpcError> {
    Ok(RowWrite {
        row: mutation_row(m, cells)?.to_vec(),
        mutations: store_mutations(m, cells)?,
        durability: mutation_durability(m),
    })
}

/// A mutation's own durability, which overrides its table's as in HBase
/// (`USE_DEFAULT`, or none sent: the table's). HBase's `SYNC_WAL` hflushes
/// and `FSYNC_WAL` hsyncs; the store's `SyncWal` fsyncs, so both map to it:
/// never less durable than the client asked.
pub fn mutation_durability(m: &MutationProto) -> Option<Durability> {
    use mutation_proto::Durability as Wire;
    match m.durability.and_then(|d| Wire::try_from(d).ok())? {
        Wire::UseDefault => None,
        Wire::SkipWal => Some(Durability::SkipWal),
        Wire::AsyncWal => Some(Durability::AsyncWal),
        Wire::SyncWal | Wire::FsyncWal => Some(Durability::SyncWal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hbase_rpc::CellCodec;
    use memstore::CellInput;

    #[test]
    fn rows_written_from_their_buffers_make_the_block_their_wire_cells_make() {
        // Rows with an empty qualifier, an empty value, several cells and
        // a zero timestamp: the block written from the scan's buffers must
        // be byte for byte the one wire cells of the same rows make, for
        // both codecs.
        let row = |cells: &[CellInput<'_>]| {
            let owned: Vec<Cell> = cells.iter().map(|c| CellRef::new(&c.to_encoded(7)).to_cell()).collect();
            RowCells::from_cells(&owned)
        };
        let rows = vec![
            row(&[CellInput::put(b"r1", b"f", b"", 0, b"v"), CellInput::put(b"r1", b"f", b"q", 9, b"")]),
            row(&[CellInput::put(b"r2", b"family", b"qualifier", u64::MAX >> 1, &[0u8; 300])]),
        ];
        let wire: Vec<WireCell> = rows.iter().flat_map(|r| r.to_cells()).map(wire_cell).collect();
        let block = RowsCellBlock(rows);
        assert_eq!(block.cell_count(), 3);
        for codec in [CellCodec::KeyValue, CellCodec::KeyValueWithTags] {
            let (mut from_rows, mut from_wire) = (Vec::new(), Vec::new());
            codec.encode_source(&block, &mut from_rows).expect("encodes");
            codec.encode(&wire, &mut from_wire).expect("encodes");
            assert_eq!(from_rows, from_wire, "{codec:?}");
            assert_eq!(codec.source_len(&block), from_rows.len(), "{codec:?}");
            assert_eq!(codec.decode(&Bytes::from(from_rows)).expect("decodes"), wire, "{codec:?}");
        }
    }
    use hbase_rpc::pb::hbase::pb::mutation_proto::{
        ColumnValue, DeleteType, MutationType, column_value::QualifierValue,
    };

    fn delete(qvs: Vec<QualifierValue>) -> MutationProto {
        MutationProto {
            row: Some(Bytes::from_static(b"r")),
            mutate_type: Some(MutationType::Delete as i32),
            column_value: vec![ColumnValue { family: Bytes::from_static(b"f"), qualifier_value: qvs }],
            timestamp: Some(LATEST_TIMESTAMP as u64),
            ..Default::default()
        }
    }

    fn qv(q: &'static [u8], ts: Option<u64>, kind: DeleteType) -> QualifierValue {
        QualifierValue {
            qualifier: Some(Bytes::from_static(q)),
            timestamp: ts,
            delete_type: Some(kind as i32),
            ..Default::default()
        }
    }

    #[test]
    fn deletes_of_each_kind_become_the_store_s() {
        let m = delete(vec![
            qv(b"a", None, DeleteType::DeleteOneVersion),
            qv(b"b", Some(7), DeleteType::DeleteMultipleVersions),
            qv(b"", None, DeleteType::DeleteFamily),
            qv(b"", Some(9), DeleteType::DeleteFamilyVersion),
        ]);
        let cells = mutation_cells(&m, &[], &mut 0).unwrap();
        let w = row_write(&m, &cells).unwrap();
        assert_eq!(w.row, b"r");
        assert_eq!(
            w.mutations,
            vec![
                Mutation::DeleteVersion { family: b"f".to_vec(), qualifier: b"a".to_vec(), timestamp: None },
                Mutation::DeleteColumn { family: b"f".to_vec(), qualifier: b"b".to_vec(), timestamp: Some(7) },
                Mutation::DeleteFamily { family: b"f".to_vec(), timestamp: None },
                Mutation::DeleteFamilyVersion { family: b"f".to_vec(), timestamp: 9 },
            ]
        );
        let row = MutationProto { column_value: vec![], ..delete(vec![]) };
        let w = row_write(&row, &[]).unwrap();
        assert_eq!(w.mutations, vec![Mutation::DeleteRow { timestamp: None }]);
    }

    #[test]
    fn a_put_s_cells_come_from_the_cell_block() {
        let m = MutationProto {
            row: Some(Bytes::from_static(b"r")),
            mutate_type: Some(MutationType::Put as i32),
            associated_cell_count: Some(2),
            durability: Some(mutation_proto::Durability::SkipWal as i32),
            ..Default::default()
        };
        let block = vec![
            WireCell::put("r", "f", "q1", LATEST_TIMESTAMP, "v1"),
            WireCell::put("r", "f", "q2", 5, "v2"),
            WireCell::put("other", "f", "q", 1, "next mutation's"),
        ];
        let mut next = 0;
        let cells = mutation_cells(&m, &block, &mut next).unwrap();
        assert!(matches!(cells, Cow::Borrowed(_)), "cells all in the block are borrowed from it");
        assert_eq!(next, 2, "the next mutation's cell stays in the block");
        let w = row_write(&m, &cells).unwrap();
        assert_eq!(w.durability, Some(Durability::SkipWal));
        use mutation_proto::Durability as Wire;
        for (wire, ours) in [
            (None, None),
            (Some(Wire::UseDefault), None),
            (Some(Wire::AsyncWal), Some(Durability::AsyncWal)),
            (Some(Wire::SyncWal), Some(Durability::SyncWal)),
            (Some(Wire::FsyncWal), Some(Durability::SyncWal)),
        ] {
            let m = MutationProto { durability: wire.map(|d| d as i32), ..m.clone() };
            assert_eq!(row_write(&m, &cells).unwrap().durability, ours, "{wire:?}");
        }
        assert_eq!(
            w.mutations[1],
            Mutation::Put {
                family: b"f".to_vec(),
                qualifier: b"q2".to_vec(),
                timestamp: Some(5),
                value: b"v2".to_vec()
            }
        );
        assert!(matches!(w.mutations[0], Mutation::Put { timestamp: None, .. }));
        let short = MutationProto { associated_cell_count: Some(3), ..m.clone() };
        assert!(mutation_cells(&short, &block[..2], &mut 0).is_err());
        assert!(mutation_cells(&m, &block, &mut 2).is_err(), "two cells asked past the block's last");
    }

    #[test]
    fn results_carry_cells_in_the_block_or_the_message() {
        let cells = vec![WireCell::put("r", "f", "q", 1, "v")];
        let mut block = Vec::new();
        let r = result(cells.clone(), true, &mut block);
        assert_eq!((r.associated_cell_count, r.cell.len(), block.len()), (Some(1), 0, 1));
        let mut block = Vec::new();
        let r = result(cells, false, &mut block);
        assert_eq!((r.associated_cell_count, r.cell.len(), block.len()), (None, 1, 0));
        assert_eq!(r.cell[0].value.as_deref(), Some(&b"v"[..]));
    }
}
