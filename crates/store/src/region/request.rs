//! What a region is asked to do: row mutations (owned and borrowed), a
//! batch's outcome, and point reads.
//!
//! Thread safety: plain values; the borrowed forms borrow the caller's
//! bytes for the length of one call.

use memstore::TimeRange;

use crate::error::StoreError;

/// One change to a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// A value; `timestamp` defaults to now.
    Put { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64>, value: Vec<u8> },
    /// One version of a column: the one at `timestamp`, or the latest.
    DeleteVersion { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64> },
    /// Every version of a column at or below `timestamp` (default now).
    DeleteColumn { family: Vec<u8>, qualifier: Vec<u8>, timestamp: Option<u64> },
    /// Every column of a family at or below `timestamp` (default now).
    DeleteFamily { family: Vec<u8>, timestamp: Option<u64> },
    /// Every column of a family at exactly `timestamp`.
    DeleteFamilyVersion { family: Vec<u8>, timestamp: u64 },
    /// Every family of the row at or below `timestamp` (default now).
    DeleteRow { timestamp: Option<u64> },
}

impl Mutation {
    /// The same change, borrowed.
    pub fn as_ref(&self) -> MutationRef<'_> {
        match self {
            Mutation::Put { family, qualifier, timestamp, value } => {
                MutationRef::Put { family, qualifier, timestamp: *timestamp, value }
            }
            Mutation::DeleteVersion { family, qualifier, timestamp } => {
                MutationRef::DeleteVersion { family, qualifier, timestamp: *timestamp }
            }
            Mutation::DeleteColumn { family, qualifier, timestamp } => {
                MutationRef::DeleteColumn { family, qualifier, timestamp: *timestamp }
            }
            Mutation::DeleteFamily { family, timestamp } => MutationRef::DeleteFamily { family, timestamp: *timestamp },
            Mutation::DeleteFamilyVersion { family, timestamp } => {
                MutationRef::DeleteFamilyVersion { family, timestamp: *timestamp }
            }
            Mutation::DeleteRow { timestamp } => MutationRef::DeleteRow { timestamp: *timestamp },
        }
    }
}

/// One change to a row, borrowing its bytes (the write path copies them
/// once into the WAL buffer and once into MSLAB chunks, nowhere else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationRef<'a> {
    Put { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64>, value: &'a [u8] },
    DeleteVersion { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64> },
    DeleteColumn { family: &'a [u8], qualifier: &'a [u8], timestamp: Option<u64> },
    DeleteFamily { family: &'a [u8], timestamp: Option<u64> },
    DeleteFamilyVersion { family: &'a [u8], timestamp: u64 },
    DeleteRow { timestamp: Option<u64> },
}

impl MutationRef<'_> {
    /// The same change, owning its bytes.
    pub fn to_mutation(&self) -> Mutation {
        match *self {
            MutationRef::Put { family, qualifier, timestamp, value } => Mutation::Put {
                family: family.to_vec(),
                qualifier: qualifier.to_vec(),
                timestamp,
                value: value.to_vec(),
            },
            MutationRef::DeleteVersion { family, qualifier, timestamp } => {
                Mutation::DeleteVersion { family: family.to_vec(), qualifier: qualifier.to_vec(), timestamp }
            }
            MutationRef::DeleteColumn { family, qualifier, timestamp } => {
                Mutation::DeleteColumn { family: family.to_vec(), qualifier: qualifier.to_vec(), timestamp }
            }
            MutationRef::DeleteFamily { family, timestamp } => {
                Mutation::DeleteFamily { family: family.to_vec(), timestamp }
            }
            MutationRef::DeleteFamilyVersion { family, timestamp } => {
                Mutation::DeleteFamilyVersion { family: family.to_vec(), timestamp }
            }
            MutationRef::DeleteRow { timestamp } => Mutation::DeleteRow { timestamp },
        }
    }
}

/// The changes to one row in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowMutations<'a> {
    pub row: &'a [u8],
    pub mutations: &'a [MutationRef<'a>],
}

/// What a region batch did: the rows refused one by one (index into the
/// batch, and why); every other row was applied.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    pub refused: Vec<(usize, StoreError)>,
    /// The batch's last sequence id (0 if nothing was applied).
    pub seq: u64,
    /// Rows dealt with (applied or refused): all of them, unless the region
    /// closed between two mini-batches (a repeated row) — the caller sends
    /// the rest to whichever region serves them now.
    pub done: usize,
}

/// Which columns a read wants: a family, or one column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub family: Vec<u8>,
    pub qualifier: Option<Vec<u8>>,
}

/// A point read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get {
    pub row: Vec<u8>,
    /// Empty: every column of every family.
    pub columns: Vec<Column>,
    pub time_range: TimeRange,
    pub max_versions: u32,
}

impl Get {
    pub fn new(row: impl Into<Vec<u8>>) -> Get {
        Get { row: row.into(), columns: Vec::new(), time_range: TimeRange::ALL, max_versions: 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutation_borrowed_and_owned_again_is_the_same() {
        let (f, q, v) = (b"f".to_vec(), b"q".to_vec(), b"v".to_vec());
        let all = [
            Mutation::Put { family: f.clone(), qualifier: q.clone(), timestamp: Some(3), value: v },
            Mutation::DeleteVersion { family: f.clone(), qualifier: q.clone(), timestamp: None },
            Mutation::DeleteColumn { family: f.clone(), qualifier: q, timestamp: Some(4) },
            Mutation::DeleteFamily { family: f.clone(), timestamp: Some(5) },
            Mutation::DeleteFamilyVersion { family: f, timestamp: 6 },
            Mutation::DeleteRow { timestamp: None },
        ];
        for m in all {
            assert_eq!(m.as_ref().to_mutation(), m);
        }
    }
}
