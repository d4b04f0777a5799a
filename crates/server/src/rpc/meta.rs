//! `hbase:meta`, synthesised on every read from the store's tables and
//! regions, as HBase's master writes it:
//!
//! * per region, row `<table>,<start key>,<id>.<encoded>.` (see `names`)
//!   with `info:regioninfo` (`PBUF` then the `RegionInfo` protobuf),
//!   `info:seqnumDuringOpen`, `info:server` (the RPC `host:port` of the
//!   server holding it: this one, or in a cluster another) and
//!   `info:serverstartcode`;
//! * per table, row `<table>` with `table:state` (a bare `TableState`
//!   protobuf: no `PBUF` in front, as HBase writes it).
//!
//! Rows sort in `hbase:meta`'s own order (`names::compare_meta_rows`). A
//! scan of it is answered whole in one response (a table's regions are few);
//! writes to it are refused.
//!
//! Thread safety: each read builds its rows from the gateway's snapshot of
//! the regions at that moment; nothing is kept between calls.

use std::cmp::Ordering;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::{self as pb, RegionInfo as PbRegionInfo, TableName, table_state};
use hbase_rpc::{Cell as WireCell, RpcError};
use store::RegionInfo;

use super::names::{compare_meta_rows, region_name, wire_table_name};
use super::{RpcAdapter, errors};

/// `hbase:meta`'s region's encoded name (HBase's fixed 1588230740).
pub const META_ENCODED_NAME: &str = "1588230740";

/// `hbase:meta`'s one region, as `GetMetaRegionLocations` reports it.
pub fn meta_region_info() -> PbRegionInfo {
    PbRegionInfo {
        region_id: 1,
        table_name: TableName { namespace: Bytes::from_static(b"hbase"), qualifier: Bytes::from_static(b"meta") },
        start_key: Some(Bytes::new()),
        end_key: Some(Bytes::new()),
        offline: Some(false),
        split: Some(false),
        replica_id: Some(0),
    }
}

/// A user region as `info:regioninfo` describes it.
pub fn pb_region_info(r: &RegionInfo) -> PbRegionInfo {
    PbRegionInfo {
        region_id: r.id,
        table_name: wire_table_name(&r.table),
        start_key: Some(Bytes::copy_from_slice(&r.start_key)),
        end_key: Some(Bytes::copy_from_slice(&r.end_key)),
        offline: Some(false),
        split: Some(false),
        replica_id: Some(0),
    }
}

/// One row of `hbase:meta`: its key and its cells in column order.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaRow {
    pub key: Vec<u8>,
    pub cells: Vec<WireCell>,
}

/// The row of region `r`, served at `server` (`host:port`) since
/// `start_code`.
pub fn region_row(r: &RegionInfo, server: &str, start_code: u64) -> MetaRow {
    let key = Bytes::from(region_name(&r.table, &r.start_key, r.id));
    let ts = start_code as i64;
    let info = |qualifier: &'static str, value: Vec<u8>| WireCell::put(key.clone(), "info", qualifier, ts, value);
    let mut region_info = b"PBUF".to_vec();
    region_info.extend(prost::Message::encode_to_vec(&pb_region_info(r)));
    MetaRow {
        key: key.to_vec(),
        cells: vec![
            info("regioninfo", region_info),
            info("seqnumDuringOpen", 1i64.to_be_bytes().to_vec()),
            info("server", server.as_bytes().to_vec()),
            info("serverstartcode", ts.to_be_bytes().to_vec()),
        ],
    }
}

/// The state row of `table`.
pub fn state_row(table: &str, enabled: bool, start_code: u64) -> MetaRow {
    let state = if enabled { table_state::State::Enabled } else { table_state::State::Disabled };
    let value = prost::Message::encode_to_vec(&pb::TableState { state: state as i32 });
    MetaRow {
        key: table.as_bytes().to_vec(),
        cells: vec![WireCell::put(table.as_bytes().to_vec(), "table", "state", start_code as i64, value)],
    }
}

/// The cells of `cells` the read's columns select (none named: all).
pub fn select(cells: &[WireCell], columns: &[pb::Column]) -> Vec<WireCell> {
    cells
        .iter()
        .filter(|c| {
            columns.is_empty()
                || columns.iter().any(|col| {
                    col.family == c.family && (col.qualifier.is_empty() || col.qualifier.contains(&c.qualifier))
                })
        })
        .cloned()
        .collect()
}

/// Whether `key` is in a scan's range, in meta order.
fn in_range(key: &[u8], scan: &pb::Scan) -> bool {
    let reversed = scan.reversed.unwrap_or(false);
    let start = scan.start_row.as_deref().filter(|s| !s.is_empty());
    let stop = scan.stop_row.as_deref().filter(|s| !s.is_empty());
    let include_start = scan.include_start_row.unwrap_or(true);
    let include_stop = scan.include_stop_row.unwrap_or(false);
    // Forward rows go up from start; reversed ones down.
    let (after_start, before_stop) =
        if reversed { (Ordering::Less, Ordering::Greater) } else { (Ordering::Greater, Ordering::Less) };
    let start_ok = start.is_none_or(|s| {
        let o = compare_meta_rows(key, s);
        o == after_start || (include_start && o == Ordering::Equal)
    });
    let stop_ok = stop.is_none_or(|s| {
        let o = compare_meta_rows(key, s);
        o == before_stop || (include_stop && o == Ordering::Equal)
    });
    start_ok && stop_ok
}

/// The rows of `rows` (sorted in meta order) a scan reads, in its order,
/// with the cells it selects; rows left with none are skipped.
pub fn scan_rows(rows: &[MetaRow], scan: &pb::Scan, limit: Option<usize>) -> Vec<Vec<WireCell>> {
    let picked = rows.iter().filter(|r| in_range(&r.key, scan)).map(|r| select(&r.cells, &scan.column));
    let nonempty = |cells: &Vec<WireCell>| !cells.is_empty();
    let limit = limit.unwrap_or(usize::MAX);
    if scan.reversed.unwrap_or(false) {
        picked.rev().filter(nonempty).take(limit).collect()
    } else {
        picked.filter(nonempty).take(limit).collect()
    }
}

impl RpcAdapter {
    /// Every row of `hbase:meta` now, in its order.
    pub(super) fn meta_rows(&self) -> Result<Vec<MetaRow>, RpcError> {
        let id = &self.identity;
        let server = format!("{}:{}", id.host, id.port);
        let mut rows = Vec::new();
        for table in self.gateway.list_tables() {
            let enabled = match self.gateway.is_table_enabled(&table) {
                Ok(enabled) => enabled,
                // Dropped since it was listed.
                Err(_) => continue,
            };
            rows.push(state_row(&table, enabled, id.start_code));
            for location in self.gateway.table_regions(&table).map_err(errors::from_gateway)? {
                // In a cluster, the server that holds the region, so the
                // client goes there; one whose RPC port is not known yet
                // is named as this one, which answers NotServingRegion
                // until the next look finds it.
                let owner = location
                    .elsewhere
                    .then(|| self.gateway.router().rpc_location(&format!("{}:{}", location.host, location.port)))
                    .flatten();
                match owner {
                    Some(o) => rows.push(region_row(&location.info, &format!("{}:{}", o.host, o.port), o.start_code)),
                    None => rows.push(region_row(&location.info, &server, id.start_code)),
                }
            }
        }
        rows.sort_by(|a, b| compare_meta_rows(&a.key, &b.key));
        Ok(rows)
    }

    /// A Get of `hbase:meta`: the row's selected cells.
    pub(super) fn meta_get(&self, get: &pb::Get) -> Result<Vec<WireCell>, RpcError> {
        let rows = self.meta_rows()?;
        Ok(rows.iter().find(|r| r.key == get.row).map(|r| select(&r.cells, &get.column)).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(id: u64, start: &[u8], end: &[u8]) -> RegionInfo {
        RegionInfo {
            id,
            table: "ns:t".into(),
            start_key: start.to_vec(),
            end_key: end.to_vec(),
            parent: None,
            merged_from: vec![],
        }
    }

    #[test]
    fn a_region_row_round_trips_through_regioninfo() {
        let r = region(7, b"m", b"");
        let row = region_row(&r, "h:16020", 99);
        assert!(row.key.starts_with(b"ns:t,m,7."));
        let value = &row.cells[0].value;
        assert_eq!(&value[..4], b"PBUF");
        let info: PbRegionInfo = prost::Message::decode(&value[4..]).unwrap();
        assert_eq!(
            (info.region_id, &info.table_name.namespace[..], &info.table_name.qualifier[..]),
            (7, &b"ns"[..], &b"t"[..])
        );
        assert_eq!((info.start_key.as_deref(), info.end_key.as_deref()), (Some(&b"m"[..]), Some(&b""[..])));
        assert_eq!(&row.cells[2].value[..], b"h:16020");
        assert_eq!(row.cells[3].value[..], 99i64.to_be_bytes());
        // The client's name for the region maps back to it.
        assert_eq!(super::super::names::parse_region_name(&row.key), Some(("ns:t".into(), 7)));
        let names: Vec<_> = row.cells.iter().map(|c| c.qualifier.clone()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "cells in column order");
    }

    #[test]
    fn the_locator_s_reversed_scan_finds_the_region_holding_the_row() {
        let mut rows = vec![
            state_row("ns:t", true, 1),
            region_row(&region(1, b"", b"g"), "h:1", 1),
            region_row(&region(2, b"g", b"p"), "h:1", 1),
            region_row(&region(3, b"p", b""), "h:1", 1),
        ];
        rows.sort_by(|a, b| compare_meta_rows(&a.key, &b.key));
        let info = |cells: &Vec<WireCell>| -> u64 {
            let v = &cells[0].value;
            prost::Message::decode(&v[4..]).map(|i: PbRegionInfo| i.region_id).unwrap()
        };
        // AsyncNonMetaRegionLocator: from `t,row,99999999999999` down to `t,,`.
        let scan = pb::Scan {
            start_row: Some(Bytes::from_static(b"ns:t,k,99999999999999")),
            stop_row: Some(Bytes::from_static(b"ns:t,,")),
            include_stop_row: Some(true),
            reversed: Some(true),
            column: vec![pb::Column { family: Bytes::from_static(b"info"), qualifier: vec![] }],
            ..Default::default()
        };
        let found = scan_rows(&rows, &scan, Some(1));
        assert_eq!(found.iter().map(info).collect::<Vec<_>>(), vec![2]);
        // getAllRegionLocations: `t,,` up to `t ,,`, every region, no state row.
        let all = pb::Scan {
            start_row: Some(Bytes::from_static(b"ns:t,,")),
            stop_row: Some(Bytes::from_static(b"ns:t ,,")),
            column: vec![pb::Column { family: Bytes::from_static(b"info"), qualifier: vec![] }],
            ..Default::default()
        };
        assert_eq!(scan_rows(&rows, &all, None).iter().map(info).collect::<Vec<_>>(), vec![1, 2, 3]);
        // The state row, by Get's column selection.
        let state = select(&rows[0].cells, &[pb::Column { family: Bytes::from_static(b"table"), qualifier: vec![] }]);
        let s: pb::TableState = prost::Message::decode(&state[0].value[..]).unwrap();
        assert_eq!(s.state, table_state::State::Enabled as i32);
    }
}
