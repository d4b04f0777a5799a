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
//! In a cluster a region another server holds is named at the server the
//! master's catalog records it on now (`Router::locate`), looked up only
//! for the rows a read returns: HBase's client locates a region with a
//! one-row reverse scan, so a lookup costs one catalog read, however many
//! regions the cluster has, and a region that moved is found at once.
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
#[cfg(test)]
pub fn scan_rows(rows: &[MetaRow], scan: &pb::Scan, limit: Option<usize>) -> Vec<Vec<WireCell>> {
    let entries = rows.iter().map(|r| (r.key.clone(), r)).collect();
    scan_entries(entries, scan, limit, |r, _| r.clone())
}

/// [`scan_rows`] over `(key, entry)` pairs sorted in meta order, making a
/// row of an entry (`row`, told whether it is the scan's first) only when
/// the scan reaches it.
fn scan_entries<P>(
    entries: Vec<(Vec<u8>, P)>,
    scan: &pb::Scan,
    limit: Option<usize>,
    row: impl Fn(P, bool) -> MetaRow,
) -> Vec<Vec<WireCell>> {
    let picked = entries.into_iter().filter(|(key, _)| in_range(key, scan));
    let picked: Box<dyn Iterator<Item = _>> =
        if scan.reversed.unwrap_or(false) { Box::new(picked.rev()) } else { Box::new(picked) };
    picked
        .enumerate()
        .map(|(i, (_, p))| select(&row(p, i == 0).cells, &scan.column))
        .filter(|cells| !cells.is_empty())
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// The regions held elsewhere among the first `fresh_rows` rows a scan
/// reads, in its order: the ones looked up in the catalog now.
fn located_fresh(entries: &[(Vec<u8>, Pending)], scan: &pb::Scan, fresh_rows: usize) -> Vec<String> {
    let picked = entries.iter().filter(|(key, _)| in_range(key, scan));
    let picked: Box<dyn Iterator<Item = _>> =
        if scan.reversed.unwrap_or(false) { Box::new(picked.rev()) } else { Box::new(picked) };
    picked
        .take(fresh_rows)
        .filter_map(|(_, p)| match p {
            Pending::Elsewhere(info) => Some(info.dir_name()),
            Pending::Ready(_) => None,
        })
        .collect()
}

/// A row of `hbase:meta` before its region's server is looked up.
enum Pending {
    Ready(MetaRow),
    /// A region another server holds: its row names that server, looked
    /// up only if a read returns the row.
    Elsewhere(RegionInfo),
}

impl RpcAdapter {
    /// Every row of `hbase:meta`'s key now, in its order, with the regions
    /// other servers hold not yet looked up.
    fn meta_entries(&self) -> Result<Vec<(Vec<u8>, Pending)>, RpcError> {
        let id = &self.identity;
        let server = format!("{}:{}", id.host, id.port);
        let mut rows = Vec::new();
        for table in self.gateway.list_tables() {
            let enabled = match self.gateway.is_table_enabled(&table) {
                Ok(enabled) => enabled,
                // Dropped since it was listed.
                Err(_) => continue,
            };
            let state = state_row(&table, enabled, id.start_code);
            rows.push((state.key.clone(), Pending::Ready(state)));
            for (info, elsewhere) in self.gateway.regions_here_or_elsewhere(&table).map_err(errors::from_gateway)? {
                let key = region_name(&info.table, &info.start_key, info.id);
                let row = if elsewhere {
                    Pending::Elsewhere(info)
                } else {
                    Pending::Ready(region_row(&info, &server, id.start_code))
                };
                rows.push((key, row));
            }
        }
        rows.sort_by(|a, b| compare_meta_rows(&a.0, &b.0));
        Ok(rows)
    }

    /// The row of `pending`: a region held elsewhere names the server that
    /// holds it (`fresh`: as the catalog says now, for the row a client
    /// looks a region up by; otherwise as last looked up, so a scan of many
    /// rows costs a catalog read only for regions never looked up); one
    /// whose server is not known (being reopened after a failover, say) is
    /// named as this one, which answers NotServingRegion until a later look
    /// finds it.
    fn meta_row(&self, pending: Pending, fresh: bool) -> MetaRow {
        match pending {
            Pending::Ready(row) => row,
            Pending::Elsewhere(info) => match self.gateway.region_rpc_location(&info.dir_name(), fresh) {
                Some(o) => region_row(&info, &format!("{}:{}", o.host, o.port), o.start_code),
                None => {
                    let id = &self.identity;
                    region_row(&info, &format!("{}:{}", id.host, id.port), id.start_code)
                }
            },
        }
    }

    /// The rows a scan of `hbase:meta` reads (see [`scan_rows`]), each
    /// region's server looked up only for the rows returned: the first
    /// `fresh_rows` (the client's caching: a region locate reads its row
    /// and prefetches the next ones into its cache, HBase's
    /// `hbase.client.locate.prefetch.limit`) as the catalog says now, in
    /// one question; the rest as last looked up.
    pub(super) fn meta_scan(
        &self,
        scan: &pb::Scan,
        limit: Option<usize>,
        fresh_rows: usize,
    ) -> Result<Vec<Vec<WireCell>>, RpcError> {
        let entries = self.meta_entries()?;
        let asked = located_fresh(&entries, scan, fresh_rows);
        let found = self.gateway.regions_rpc_locations_fresh(&asked);
        Ok(scan_entries(entries, scan, limit, |p, _| match p {
            Pending::Elsewhere(info) if asked.contains(&info.dir_name()) => {
                let owner = found.get(&info.dir_name());
                let id = &self.identity;
                match owner {
                    Some(o) => region_row(&info, &format!("{}:{}", o.host, o.port), o.start_code),
                    None => region_row(&info, &format!("{}:{}", id.host, id.port), id.start_code),
                }
            }
            other => self.meta_row(other, false),
        }))
    }

    /// A Get of `hbase:meta`: the row's selected cells.
    pub(super) fn meta_get(&self, get: &pb::Get) -> Result<Vec<WireCell>, RpcError> {
        let found = self.meta_entries()?.into_iter().find(|(key, _)| *key == get.row);
        Ok(found.map(|(_, p)| select(&self.meta_row(p, true).cells, &get.column)).unwrap_or_default())
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
    fn a_locate_s_row_and_the_rows_it_prefetches_are_the_ones_looked_up_now() {
        // Regions a..j of one table, every other one held elsewhere.
        let regions: Vec<RegionInfo> = (0..10u8)
            .map(|i| {
                let end = if i == 9 { Vec::new() } else { vec![b'b' + i] };
                region(u64::from(i) + 1, &[b'a' + i], &end)
            })
            .collect();
        let mut entries: Vec<(Vec<u8>, Pending)> = regions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let key = region_name(&r.table, &r.start_key, r.id);
                let p =
                    if i % 2 == 0 { Pending::Elsewhere(r.clone()) } else { Pending::Ready(region_row(r, "h:1", 1)) };
                (key, p)
            })
            .collect();
        entries.sort_by(|a, b| compare_meta_rows(&a.0, &b.0));
        // HBase's locate: a reversed scan from the row's region key down,
        // prefetching as many rows as its caching.
        let scan = pb::Scan {
            start_row: Some(region_name("ns:t", b"f", 99).into()),
            reversed: Some(true),
            ..Default::default()
        };
        let asked = located_fresh(&entries, &scan, 4);
        let dir = |i: usize| regions[i].dir_name();
        // Rows f (here), e (elsewhere), d (here), c (elsewhere): e and c.
        assert_eq!(asked, vec![dir(4), dir(2)]);
        let forward = pb::Scan { start_row: Some(region_name("ns:t", b"a", 0).into()), ..Default::default() };
        assert_eq!(located_fresh(&entries, &forward, 4), vec![dir(0), dir(2)]);
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
