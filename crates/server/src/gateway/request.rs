//! The gateway's request and result values, in the store's terms and free
//! of any protocol: a protocol adapter builds them from its own messages
//! (with its protocol's defaults and quirks) and renders the results back.
//! A read of one row is the store's own [`store::Get`].

use store::wal::Durability;
use store::{Mutation, MutationRef, RegionInfo, Scan};

/// The changes to one row, applied atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowWrite {
    pub row: Vec<u8>,
    pub mutations: Vec<Mutation>,
    /// `Some(SkipWal)`: the client asked not to log this row.
    pub durability: Option<Durability>,
}

impl RowWrite {
    /// Whether every change deletes (the call counts as a delete).
    pub fn deletes_only(&self) -> bool {
        self.mutations.iter().all(|m| !matches!(m, Mutation::Put { .. }))
    }
}

/// A [`RowWrite`] borrowed from the request it came in: what a protocol
/// adapter hands a batch when its message already holds the bytes (the
/// HBase RPC's cell block), so no cell is copied before the store's WAL
/// buffer and MSLAB chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowWriteRef<'a> {
    pub row: &'a [u8],
    pub mutations: &'a [MutationRef<'a>],
    /// As [`RowWrite::durability`].
    pub durability: Option<Durability>,
}

impl RowWriteRef<'_> {
    /// The same row's write, owning its bytes (to forward it to a peer).
    pub fn to_row_write(&self) -> RowWrite {
        RowWrite {
            row: self.row.to_vec(),
            mutations: self.mutations.iter().map(MutationRef::to_mutation).collect(),
            durability: self.durability,
        }
    }
}

/// A scan, as a client asks for it: the store's scan with no filter, and
/// the filter as HBase's filter language text, which the gateway parses,
/// and sends on as it came when another server reads part of the scan.
#[derive(Debug, Clone, Default)]
pub struct ScanRequest {
    pub scan: Scan,
    pub filter: Option<Vec<u8>>,
    /// How the client wants each row's columns: as a list in column order
    /// (Thrift's `sortColumns`) rather than a map. Kept with the scanner
    /// for the adapter that renders its rows.
    pub sorted_columns: bool,
}

/// A conditional change of one row: `mutations` are applied only if the
/// column holds `expected` (`None`: the column is absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckAndMutate {
    pub row: Vec<u8>,
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub expected: Option<Vec<u8>>,
    pub mutations: Vec<Mutation>,
}

/// A region and the server a client reaches it at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionLocation {
    pub info: RegionInfo,
    /// The Thrift address of the server that serves it (this one's when
    /// it is here, or when no live server is known to hold it).
    pub host: String,
    pub port: u16,
    /// Whether another server holds it (in a cluster).
    pub elsewhere: bool,
}

/// Rows an open scanner returned, and how its client wants them rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedRows {
    /// Each row as the scan read it (`RowCells::to_cells` makes owned cells).
    pub rows: Vec<memstore::RowCells>,
    pub sorted_columns: bool,
}
