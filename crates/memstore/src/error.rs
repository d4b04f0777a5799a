//! Typed errors of the memstore. Every misuse of the API and every bad input
//! ends here; nothing on these paths panics.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MemStoreError {
    #[error("row key is empty")]
    EmptyRow,
    #[error("row key is {len} bytes; the limit is {max}")]
    RowTooLong { len: usize, max: usize },
    #[error("column family name is empty")]
    EmptyFamily,
    #[error("column family name is {len} bytes; the limit is {max}")]
    FamilyTooLong { len: usize, max: usize },
    #[error("cell of {len} bytes exceeds the maximum cell size of {max} bytes")]
    CellTooLarge { len: usize, max: usize },
    #[error("a DeleteFamily or DeleteFamilyVersion marker must have an empty qualifier")]
    FamilyDeleteWithQualifier,
    #[error("a delete marker must not carry a value")]
    DeleteWithValue,
    #[error("a row mutation must contain at least one cell")]
    EmptyMutation,
    #[error("all cells of a row mutation must share one row")]
    MixedRows,
    #[error("cell family {found:?} does not belong to this store (family {expected:?})")]
    WrongFamily { expected: String, found: String },
    #[error("sequence id 0 is reserved")]
    ZeroSequenceId,
    #[error("snapshot {0} is not the memstore's current snapshot")]
    UnknownSnapshot(u64),
    #[error("invalid memstore configuration: {0}")]
    InvalidConfig(String),
    #[error("the memstore is closed")]
    Closed,
}
