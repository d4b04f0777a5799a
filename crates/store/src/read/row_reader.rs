//! `RowReader`: turns the merged cells of one row (every family asked for)
//! into the visible cells, applying each family's version and TTL rules and
//! the read's columns, time range, versions and read point.
//!
//! Thread safety: a plain function object, used by one reader.

use memstore::visibility::RowResolver;
use memstore::{Cell, ReadOptions, VersionRules};

use crate::error::Result;
use crate::read::cursor::MergedCursor;

/// How to read one family.
#[derive(Debug, Clone)]
pub struct FamilyReadSpec {
    pub family: Vec<u8>,
    pub opts: ReadOptions,
    pub rules: VersionRules,
}

pub struct RowReader<'a> {
    /// Sorted by family.
    specs: &'a [FamilyReadSpec],
}

impl<'a> RowReader<'a> {
    pub fn new(specs: &'a [FamilyReadSpec]) -> RowReader<'a> {
        RowReader { specs }
    }

    /// Reads the row at the cursor (which must be at or before its first
    /// cell); leaves the cursor at the next row.
    pub fn read_row(&self, cursor: &mut MergedCursor, row: &[u8]) -> Result<Vec<Cell>> {
        let mut out = Vec::new();
        let mut resolver: Option<(usize, RowResolver<'a>)> = None;
        while let Some(c) = cursor.current() {
            if c.row() != row {
                break;
            }
            let same_family = resolver.as_ref().is_some_and(|(i, _)| self.specs[*i].family.as_slice() == c.family());
            if !same_family {
                resolver = self.specs.iter().position(|s| s.family.as_slice() == c.family()).map(|i| {
                    let s = &self.specs[i];
                    (i, RowResolver::new(&s.opts, s.rules, s.opts.now_ms.unwrap_or(0)))
                });
            }
            if let Some((_, r)) = resolver.as_mut() {
                r.push(c, &mut out);
            }
            cursor.advance()?;
        }
        Ok(out)
    }
}
