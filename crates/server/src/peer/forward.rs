//! The gateway's calls as the peer protocol carries them to the server
//! holding a region: Thrift v1 calls on that server's own client port
//! (`routing::Router::call`), and their answers back in the gateway's terms.
//!
//! Thrift v1 says less than the gateway's requests can: a read of one
//! version at a time bound `[0, ts)` is one `getRowWithColumns(Ts)` call;
//! any other read (several versions, a time range with a lower bound) goes
//! as a scan of the one row, whose versions and time range travel as scan
//! attributes (`crate::scan_attributes`). A row's mutations go as one
//! `mutateRow(Ts)` call, which carries one timestamp for all of them and no
//! delete of a single version: a row whose mutations the protocol cannot
//! say is refused with [`GatewayError::CannotForward`], never sent
//! changed. A call that Thrift cannot carry is refused before anything is
//! sent.
//!
//! Thread safety: free functions over a connection the caller holds alone
//! (the router's pool lends each connection to one call at a time).

use std::collections::BTreeMap;

use bytes::Bytes;
use memstore::{Cell, CellType, TimeRange};
use store::wal::Durability;
use store::{Column, Get, Mutation};

use crate::gateway::error::{GatewayError, RemoteKind};
use crate::gateway::request::{CheckAndMutate, RowWrite, ScanRequest};
use crate::scan_attributes::{MAX_VERSIONS, STOP_INCLUSIVE, TIME_RANGE};
use crate::thrift::client::THbaseSyncClient;
pub use crate::thrift::client::ThriftClient as PeerClient;
use crate::thrift::hbase_thrift::{
    AlreadyExists, BatchMutation, IOError, IllegalArgument, Mutation as TMutation, TAppend, TRowResult, TScan,
};

/// A request the peer protocol cannot say (see the module doc), carried
/// out of the router's call as a user error so that it is neither retried
/// nor taken for a moved region.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct CannotSay(String);

fn cannot_say(what: impl Into<String>) -> thrift::Error {
    thrift::Error::User(Box::new(CannotSay(what.into())))
}

/// A forwarded call's failure in the gateway's terms: the owner's own
/// answer as it gave it, or the owner of `region` at `owner` unreachable.
pub fn failure(e: thrift::Error, region: &str, owner: &str) -> GatewayError {
    match e {
        thrift::Error::User(u) => {
            let u = match u.downcast::<IOError>() {
                Ok(x) => return remote(RemoteKind::IoError, x.message),
                Err(u) => u,
            };
            let u = match u.downcast::<IllegalArgument>() {
                Ok(x) => return remote(RemoteKind::IllegalArgument, x.message),
                Err(u) => u,
            };
            let u = match u.downcast::<AlreadyExists>() {
                Ok(x) => return remote(RemoteKind::AlreadyExists, x.message),
                Err(u) => u,
            };
            match u.downcast::<CannotSay>() {
                Ok(x) => GatewayError::CannotForward(x.0),
                Err(u) => remote(RemoteKind::IoError, Some(u.to_string())),
            }
        }
        other => {
            GatewayError::Unreachable { region: region.to_string(), owner: owner.to_string(), cause: other.to_string() }
        }
    }
}

fn remote(kind: RemoteKind, message: Option<String>) -> GatewayError {
    GatewayError::Remote { kind, message: message.unwrap_or_default() }
}

/// A column as Thrift names it: "family" or "family:qualifier".
pub fn column_name(c: &Column) -> Vec<u8> {
    match &c.qualifier {
        None => c.family.clone(),
        Some(q) => [c.family.as_slice(), b":", q.as_slice()].concat(),
    }
}

fn qualified(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    [family, b":", qualifier].concat()
}

/// A Thrift timestamp, or `None` when `ts` is beyond what Thrift carries.
fn thrift_ts(ts: u64) -> Option<i64> {
    i64::try_from(ts).ok()
}

/// One row, read on the server at the other end of `c`.
pub fn get(c: &mut PeerClient, table: &str, request: &Get) -> thrift::Result<Vec<Cell>> {
    let (t, row) = (table.as_bytes().to_vec(), request.row.clone());
    let columns: Vec<Vec<u8>> = request.columns.iter().map(column_name).collect();
    let TimeRange { min, max } = request.time_range;
    if request.max_versions == 1 && min == 0 {
        let found = match max {
            u64::MAX => c.get_row_with_columns(t, row, columns, BTreeMap::new())?,
            before => {
                let ts = thrift_ts(before).ok_or_else(|| cannot_say(format!("a read before {before}")))?;
                c.get_row_with_columns_ts(t, row, columns, ts, BTreeMap::new())?
            }
        };
        return Ok(found.into_iter().flat_map(cells_of).collect());
    }
    // Several versions or a lower time bound: a scan of the one row.
    let mut attributes = BTreeMap::new();
    attributes.insert(MAX_VERSIONS.to_vec(), request.max_versions.to_string().into_bytes());
    attributes.insert(TIME_RANGE.to_vec(), format!("{min},{max}").into_bytes());
    attributes.insert(STOP_INCLUSIVE.to_vec(), b"true".to_vec());
    let scan = TScan::new(
        request.row.clone(),
        request.row.clone(),
        None,
        columns,
        None,
        None,
        None,
        // Versions come back only as a list (the map holds one).
        true,
        false,
    );
    let id = c.scanner_open_with_scan(t, scan, attributes)?;
    let rows = c.scanner_get_list(id, 1);
    let closed = c.scanner_close(id);
    let rows = rows?;
    closed?;
    Ok(rows.into_iter().flat_map(cells_of).collect())
}

/// The single timestamp of a row's mutations (`None`: each takes the
/// time of the write), or why Thrift cannot carry them.
fn one_timestamp(mutations: &[Mutation]) -> thrift::Result<Option<i64>> {
    let stamp = |m: &Mutation| match m {
        Mutation::Put { timestamp, .. }
        | Mutation::DeleteColumn { timestamp, .. }
        | Mutation::DeleteFamily { timestamp, .. }
        | Mutation::DeleteRow { timestamp } => Ok(*timestamp),
        Mutation::DeleteVersion { .. } | Mutation::DeleteFamilyVersion { .. } => {
            Err(cannot_say("a delete of a single version (Thrift v1 between servers has none)"))
        }
    };
    let first = mutations.first().map(stamp).transpose()?.flatten();
    for m in mutations {
        if stamp(m)? != first {
            return Err(cannot_say("mutations of one row with different timestamps (Thrift v1 carries one)"));
        }
    }
    first.map(|ts| thrift_ts(ts).ok_or_else(|| cannot_say(format!("timestamp {ts}")))).transpose()
}

/// A row's mutations as Thrift's (a delete of a whole row has none).
fn thrift_mutations(write: &RowWrite) -> thrift::Result<Vec<TMutation>> {
    let log = write.durability != Some(Durability::SkipWal);
    write
        .mutations
        .iter()
        .map(|m| {
            let (column, value, delete) = match m {
                Mutation::Put { family, qualifier, value, .. } => (qualified(family, qualifier), value.clone(), false),
                Mutation::DeleteColumn { family, qualifier, .. } => (qualified(family, qualifier), Vec::new(), true),
                Mutation::DeleteFamily { family, .. } => (family.clone(), Vec::new(), true),
                _ => return Err(cannot_say("a delete of a whole row among other mutations")),
            };
            Ok(TMutation::new(delete, column, value, log))
        })
        .collect()
}

/// One row's mutations, applied on the server at the other end of `c`.
pub fn mutate_row(c: &mut PeerClient, table: &str, write: &RowWrite) -> thrift::Result<()> {
    let ts = one_timestamp(&write.mutations)?;
    let (t, row) = (table.as_bytes().to_vec(), write.row.clone());
    if let [Mutation::DeleteRow { .. }] = write.mutations.as_slice() {
        return match ts {
            Some(ts) => c.delete_all_row_ts(t, row, ts, BTreeMap::new()),
            None => c.delete_all_row(t, row, BTreeMap::new()),
        };
    }
    let mutations = thrift_mutations(write)?;
    match ts {
        Some(ts) => c.mutate_row_ts(t, row, mutations, ts, BTreeMap::new()),
        None => c.mutate_row(t, row, mutations, BTreeMap::new()),
    }
}

/// A batch of rows, written on the server at the other end of `c`: one
/// `mutateRows` call when Thrift can say it so (one timestamp, no row
/// deletes), else row by row.
pub fn mutate_rows(c: &mut PeerClient, table: &str, rows: &[RowWrite]) -> thrift::Result<()> {
    let all: Vec<Mutation> = rows.iter().flat_map(|w| w.mutations.iter().cloned()).collect();
    let one_call = rows.iter().all(|w| !w.mutations.iter().any(|m| matches!(m, Mutation::DeleteRow { .. })));
    match one_timestamp(&all) {
        Ok(ts) if one_call => {
            let batches = rows
                .iter()
                .map(|w| Ok(BatchMutation::new(w.row.clone(), thrift_mutations(w)?)))
                .collect::<thrift::Result<Vec<_>>>()?;
            let t = table.as_bytes().to_vec();
            match ts {
                Some(ts) => c.mutate_rows_ts(t, batches, ts, BTreeMap::new()),
                None => c.mutate_rows(t, batches, BTreeMap::new()),
            }
        }
        _ => rows.iter().try_for_each(|w| mutate_row(c, table, w)),
    }
}

pub fn increment(
    c: &mut PeerClient,
    table: &str,
    row: &[u8],
    family: &[u8],
    qualifier: &[u8],
    amount: i64,
) -> thrift::Result<i64> {
    c.atomic_increment(table.as_bytes().to_vec(), row.to_vec(), qualified(family, qualifier), amount)
}

/// Appends on the server at the other end of `c`; the new values.
pub fn append(
    c: &mut PeerClient,
    table: &str,
    row: &[u8],
    columns: &[(Vec<u8>, Vec<u8>, Vec<u8>)],
) -> thrift::Result<Vec<Vec<u8>>> {
    let names: Vec<Vec<u8>> = columns.iter().map(|(f, q, _)| qualified(f, q)).collect();
    let values: Vec<Vec<u8>> = columns.iter().map(|(_, _, v)| v.clone()).collect();
    let cells = c.append(TAppend::new(table.as_bytes().to_vec(), row.to_vec(), names, values))?;
    Ok(cells.into_iter().map(|c| c.value.unwrap_or_default()).collect())
}

/// A check-and-mutate of one mutation (Thrift's `checkAndPut`).
pub fn check_and_mutate(c: &mut PeerClient, table: &str, check: &CheckAndMutate) -> thrift::Result<bool> {
    let write = RowWrite { row: check.row.clone(), mutations: check.mutations.clone(), durability: None };
    let [mutation] = <[TMutation; 1]>::try_from(thrift_mutations(&write)?)
        .map_err(|_| cannot_say("a check-and-mutate of several mutations (Thrift v1 carries one)"))?;
    if one_timestamp(&check.mutations)?.is_some() {
        return Err(cannot_say("a check-and-mutate with a timestamp (Thrift v1 carries none)"));
    }
    c.check_and_put(
        table.as_bytes().to_vec(),
        check.row.clone(),
        qualified(&check.family, &check.qualifier),
        check.expected.clone().unwrap_or_default(),
        mutation,
        BTreeMap::new(),
    )
}

/// A scan as another server runs a piece of it: the `TScan` (each piece
/// sets its bounds) and the attributes that carry what `TScan` cannot say.
#[derive(Debug, Clone)]
pub struct RemoteScan {
    pub scan: TScan,
    pub attributes: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// A stretch of the scan's key range, `[start, stop)` (`stop` empty: the
/// end of the table).
/// A scan as another server runs a piece of it: the `TScan` (each piece
/// sets its bounds) and the attributes that carry what `TScan` cannot say.
pub fn remote_scan(request: &ScanRequest) -> RemoteScan {
    let scan = &request.scan;
    let mut attributes = BTreeMap::new();
    if scan.max_versions != 1 {
        attributes.insert(MAX_VERSIONS.to_vec(), scan.max_versions.to_string().into_bytes());
    }
    if scan.time_range != TimeRange::ALL {
        let TimeRange { min, max } = scan.time_range;
        attributes.insert(TIME_RANGE.to_vec(), format!("{min},{max}").into_bytes());
    }
    let scan = TScan::new(
        None,
        None,
        None,
        scan.columns.iter().map(column_name).collect::<Vec<_>>(),
        None,
        request.filter.clone(),
        scan.batch.map(|b| i32::try_from(b).unwrap_or(i32::MAX)),
        // Versions come back only as a list (the map holds one).
        scan.max_versions > 1,
        false,
    );
    RemoteScan { scan, attributes }
}

/// A row another server returned, as cells (columns "family:qualifier").
pub fn cells_of(row: TRowResult) -> Vec<Cell> {
    let key = Bytes::from(row.row.unwrap_or_default());
    let columns = row.columns.unwrap_or_default().into_iter();
    let sorted = row.sorted_columns.unwrap_or_default().into_iter().map(|c| (c.column_name, c.cell));
    let mut cells: Vec<Cell> = columns
        .map(|(name, cell)| (Some(name), Some(cell)))
        .chain(sorted)
        .filter_map(|(name, cell)| {
            let (name, cell) = (name?, cell?);
            let at = name.iter().position(|&b| b == b':').unwrap_or(name.len());
            Some(Cell {
                row: key.clone(),
                family: Bytes::copy_from_slice(&name[..at]),
                qualifier: Bytes::copy_from_slice(name.get(at + 1..).unwrap_or_default()),
                timestamp: cell.timestamp.unwrap_or_default().max(0) as u64,
                cell_type: CellType::Put,
                value: cell.value.unwrap_or_default().into(),
                seq: 0,
            })
        })
        .collect();
    // Our order (family, then qualifier), not the names' byte order ("f1:"
    // sorts before "f:"); versions of a column keep their order.
    cells.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_rows_come_back_as_cells_in_family_order() {
        use crate::thrift::hbase_thrift::TCell;
        let mut columns = BTreeMap::new();
        columns.insert(b"f:q".to_vec(), TCell::new(b"1".to_vec(), 5));
        columns.insert(b"f1:a".to_vec(), TCell::new(b"2".to_vec(), 6));
        let cells = cells_of(TRowResult::new(b"r".to_vec(), columns, None));
        let names: Vec<(&[u8], &[u8])> = cells.iter().map(|c| (c.family.as_ref(), c.qualifier.as_ref())).collect();
        assert_eq!(names, [(&b"f"[..], &b"q"[..]), (&b"f1"[..], &b"a"[..])]);
        assert_eq!((cells[0].timestamp, cells[1].value.as_ref()), (5, &b"2"[..]));
    }

    fn put(ts: Option<u64>) -> Mutation {
        Mutation::Put { family: b"f".to_vec(), qualifier: b"q".to_vec(), timestamp: ts, value: b"v".to_vec() }
    }

    #[test]
    fn a_row_goes_as_one_call_only_when_thrift_can_say_it() {
        assert_eq!(one_timestamp(&[put(Some(5)), put(Some(5))]).ok(), Some(Some(5)));
        assert_eq!(one_timestamp(&[put(None)]).ok(), Some(None));
        let said = |r: thrift::Result<Option<i64>>| match r {
            Err(e) => matches!(failure(e, "r", "o"), GatewayError::CannotForward(_)),
            Ok(_) => false,
        };
        assert!(said(one_timestamp(&[put(Some(5)), put(Some(6))])), "two timestamps");
        assert!(said(one_timestamp(&[put(Some(u64::MAX))])), "beyond Thrift's i64");
        let version = Mutation::DeleteVersion { family: b"f".to_vec(), qualifier: b"q".to_vec(), timestamp: None };
        assert!(said(one_timestamp(&[version])), "a single version's delete");
    }

    #[test]
    fn a_skip_wal_row_asks_the_owner_not_to_log_it() {
        let write = RowWrite { row: b"r".to_vec(), mutations: vec![put(None)], durability: Some(Durability::SkipWal) };
        let ms = thrift_mutations(&write).expect("a put");
        assert_eq!(ms[0].write_to_w_a_l, Some(false));
        assert_eq!(ms[0].column.as_deref(), Some(&b"f:q"[..]));
    }

    #[test]
    fn a_scan_piece_carries_versions_and_time_range_as_attributes() {
        let scan = store::Scan {
            max_versions: 3,
            time_range: TimeRange { min: 2, max: 9 },
            columns: vec![Column { family: b"f".to_vec(), qualifier: None }],
            ..store::Scan::default()
        };
        let request = ScanRequest { scan, ..ScanRequest::default() };
        let remote = remote_scan(&request);
        assert_eq!(remote.attributes.get(MAX_VERSIONS), Some(&b"3".to_vec()));
        assert_eq!(remote.attributes.get(TIME_RANGE), Some(&b"2,9".to_vec()));
        assert_eq!(remote.scan.columns, Some(vec![b"f".to_vec()]));
        assert_eq!(remote.scan.sort_columns, Some(true));
        // The owner reads them back as the same versions and time range.
        let back = crate::scan_attributes::ScanAttributes::parse(&remote.attributes).expect("valid attributes");
        assert_eq!((back.max_versions, back.time_range), (3, TimeRange { min: 2, max: 9 }));
        assert!(remote_scan(&ScanRequest::default()).attributes.is_empty());
    }
}
