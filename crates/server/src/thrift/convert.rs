//! Conversions between HBase's Thrift v1 structures and the store's: column
//! names ("family" or "family:qualifier"), cells, rows and column
//! descriptors, following HBase's ThriftHBaseServiceHandler.

use std::collections::BTreeMap;

use memstore::Cell;
use store::{Column, FamilyDescriptor, TableDescriptor};

use crate::thrift::errors::illegal_argument;
use crate::thrift::hbase_thrift::{ColumnDescriptor, TCell, TColumn, TRowResult};

/// HBase's `CellUtil.parseColumn`: "f" is the whole family, "f:q" one
/// column ("f:" is the column with the empty qualifier).
pub fn parse_column(column: &[u8]) -> Column {
    match column.iter().position(|&b| b == b':') {
        None => Column { family: column.to_vec(), qualifier: None },
        Some(i) => Column { family: column[..i].to_vec(), qualifier: Some(column[i + 1..].to_vec()) },
    }
}

/// Columns of a read; an empty list reads every column. As HBase's
/// `Get`/`Scan` build their family map: a family named alone reads the
/// whole family, replacing its columns named before; a column named after
/// its whole family replaces the family with that column (the later,
/// narrower mention wins). Families keep the order of their first mention.
pub fn parse_columns(columns: &[Vec<u8>]) -> Vec<Column> {
    /// What a read asks of one family: `None` all of it, or these qualifiers.
    type Wanted = Option<Vec<Vec<u8>>>;
    let mut families: Vec<(Vec<u8>, Wanted)> = Vec::new();
    for c in columns.iter().map(|c| parse_column(c)) {
        let slot = match families.iter().position(|(f, _)| *f == c.family) {
            Some(i) => &mut families[i].1,
            None => {
                families.push((c.family.clone(), Some(Vec::new())));
                &mut families.last_mut().expect("just pushed").1
            }
        };
        match c.qualifier {
            None => *slot = None,
            Some(q) => match slot {
                Some(qualifiers) => {
                    if !qualifiers.contains(&q) {
                        qualifiers.push(q);
                    }
                }
                None => *slot = Some(vec![q]),
            },
        }
    }
    families
        .into_iter()
        .flat_map(|(family, qualifiers)| match qualifiers {
            None => vec![Column { family, qualifier: None }],
            Some(qs) => qs.into_iter().map(|q| Column { family: family.clone(), qualifier: Some(q) }).collect(),
        })
        .collect()
}

/// A Thrift timestamp as the store's; HBase refuses negative ones.
pub fn timestamp(ts: i64) -> thrift::Result<u64> {
    u64::try_from(ts).map_err(|_| illegal_argument(format!("Timestamp cannot be negative. ts={ts}")))
}

pub fn column_name(cell: &Cell) -> Vec<u8> {
    let mut name = Vec::with_capacity(cell.family.len() + 1 + cell.qualifier.len());
    name.extend_from_slice(&cell.family);
    name.push(b':');
    name.extend_from_slice(&cell.qualifier);
    name
}

pub fn tcell(cell: &Cell) -> TCell {
    TCell::new(cell.value.to_vec(), cell.timestamp as i64)
}

/// One row's cells (newest version first per column, as the store returns
/// them) as a `TRowResult`: a column map of the newest versions, or with
/// `sorted`, the list of columns in order, each with every version the read
/// returned (one unless a scan asked for more, `scan_attributes.rs`).
pub fn row_result(cells: &[Cell], sorted: bool) -> Option<TRowResult> {
    let row = cells.first()?.row.to_vec();
    if sorted {
        let list: Vec<TColumn> = cells.iter().map(|c| TColumn::new(column_name(c), tcell(c))).collect();
        Some(TRowResult::new(row, None, list))
    } else {
        let mut map = BTreeMap::new();
        for c in cells {
            map.entry(column_name(c)).or_insert_with(|| tcell(c));
        }
        Some(TRowResult::new(row, map, None))
    }
}

/// A family as `getColumnDescriptors` reports it (name "f:", HBase's
/// field meanings; TTL forever is `Integer.MAX_VALUE`).
pub fn column_descriptor(f: &FamilyDescriptor) -> ColumnDescriptor {
    let (bloom, compression) = (f.bloom.name(), f.compression.name());
    ColumnDescriptor {
        name: Some(format!("{}:", f.name).into_bytes()),
        max_versions: Some(f.max_versions as i32),
        compression: Some(compression.to_string()),
        in_memory: Some(f.in_memory),
        bloom_filter_type: Some(bloom.to_string()),
        bloom_filter_vector_size: Some(0),
        bloom_filter_nb_hashes: Some(0),
        block_cache_enabled: Some(f.block_cache),
        time_to_live: Some(f.ttl_secs.map_or(i32::MAX, |t| t.min(i32::MAX as u64) as i32)),
    }
}

/// A bloom filter type by HBase's name (NONE, ROW, ROWCOL; empty is NONE).
pub fn bloom_type(name: &str) -> Option<store::storefile::options::BloomType> {
    use store::storefile::options::BloomType;
    match name.to_ascii_uppercase().as_str() {
        "NONE" | "" => Some(BloomType::None),
        "ROW" => Some(BloomType::Row),
        "ROWCOL" => Some(BloomType::RowCol),
        _ => None,
    }
}

/// A compression by HBase's name (NONE, LZ4, ZSTD; empty is NONE).
pub fn compression(name: &str) -> Option<store::storefile::options::Compression> {
    use store::storefile::options::Compression;
    match name.to_ascii_uppercase().as_str() {
        "NONE" | "" => Some(Compression::None),
        "LZ4" => Some(Compression::Lz4),
        "ZSTD" => Some(Compression::Zstd),
        _ => None,
    }
}

/// A table from `createTable`'s arguments; unset fields take `template`'s
/// values (the server's configured defaults).
pub fn table_descriptor(
    name: &str,
    columns: &[ColumnDescriptor],
    template: &FamilyDescriptor,
) -> thrift::Result<TableDescriptor> {
    if columns.is_empty() {
        return Err(illegal_argument(format!("table {name} needs at least one column family")));
    }
    let mut families = Vec::new();
    for c in columns {
        let raw = c.name.clone().unwrap_or_default();
        let fam = match raw.iter().position(|&b| b == b':') {
            Some(i) if i + 1 == raw.len() => &raw[..i],
            Some(_) => return Err(illegal_argument("column family names cannot contain ':' before the end")),
            None => &raw[..],
        };
        let fam = std::str::from_utf8(fam).map_err(|_| illegal_argument("column family names must be UTF-8"))?;
        if fam.is_empty() {
            return Err(illegal_argument("column family name is empty"));
        }
        let mut f = template.clone();
        f.name = fam.to_string();
        // An absent field keeps the server's default; HBase's builder
        // refuses a maxVersions below 1.
        match c.max_versions {
            Some(v) if v < 1 => {
                return Err(illegal_argument(format!("max versions of {fam} must be positive, got {v}")));
            }
            Some(v) => f.max_versions = v as u32,
            None => {}
        }
        // As HBase's ThriftUtilities sets them: happybase sends the IDL's
        // defaults (both false) when the caller names neither.
        if let Some(b) = c.in_memory {
            f.in_memory = b;
        }
        if let Some(b) = c.block_cache_enabled {
            f.block_cache = b;
        }
        if let Some(b) = &c.bloom_filter_type {
            f.bloom = bloom_type(b)
                .ok_or_else(|| illegal_argument(format!("unknown bloom filter type {:?}", b.to_ascii_uppercase())))?;
        }
        if let Some(cmp) = &c.compression {
            f.compression = compression(cmp).ok_or_else(|| {
                illegal_argument(format!(
                    "compression {:?} is not supported (NONE, LZ4, ZSTD)",
                    cmp.to_ascii_uppercase()
                ))
            })?;
        }
        if let Some(ttl) = c.time_to_live {
            f.ttl_secs = match ttl {
                t if t <= 0 || t == i32::MAX => None,
                t => Some(t as u64),
            };
        }
        families.push(f);
    }
    Ok(TableDescriptor::new(name, families))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_parse_as_hbase_does() {
        assert_eq!(parse_column(b"cf"), Column { family: b"cf".to_vec(), qualifier: None });
        assert_eq!(parse_column(b"cf:q"), Column { family: b"cf".to_vec(), qualifier: Some(b"q".to_vec()) });
        assert_eq!(parse_column(b"cf:"), Column { family: b"cf".to_vec(), qualifier: Some(Vec::new()) });
        assert_eq!(parse_column(b"cf:a:b").qualifier, Some(b"a:b".to_vec()));
    }

    /// HBase's answers (issue 15 item 4): `row(r, columns=[b'fh', b'fh:a'])`
    /// reads only fh:a; the family named after its column reads it whole.
    #[test]
    fn a_later_narrower_column_replaces_its_whole_family() {
        let cols = |names: &[&str]| parse_columns(&names.iter().map(|n| n.as_bytes().to_vec()).collect::<Vec<_>>());
        let col = |f: &str, q: Option<&str>| Column { family: f.into(), qualifier: q.map(|q| q.into()) };
        assert_eq!(cols(&["fh", "fh:a"]), [col("fh", Some("a"))]);
        assert_eq!(cols(&["fh:a", "fh"]), [col("fh", None)]);
        assert_eq!(cols(&["fh:a", "g", "fh:b", "fh:a"]), [col("fh", Some("a")), col("fh", Some("b")), col("g", None)]);
        assert_eq!(cols(&["fh", "fh:a", "fh"]), [col("fh", None)]);
        assert!(cols(&[]).is_empty());
    }

    /// The map holds each column's newest version; the sorted list every
    /// version the read returned (more than one only when a scan asked for
    /// more, `scan_attributes.rs`), newest first.
    #[test]
    fn rows_keep_the_newest_version_per_column_in_the_map_and_every_version_in_the_list() {
        let cell = |q: &str, ts: u64, v: &str| Cell {
            row: bytes::Bytes::from_static(b"r"),
            family: bytes::Bytes::from_static(b"f"),
            qualifier: bytes::Bytes::copy_from_slice(q.as_bytes()),
            timestamp: ts,
            cell_type: memstore::CellType::Put,
            value: bytes::Bytes::copy_from_slice(v.as_bytes()),
            seq: 1,
        };
        let cells = [cell("a", 2, "new"), cell("a", 1, "old"), cell("b", 1, "b")];
        let r = row_result(&cells, false).expect("row");
        let cols = r.columns.expect("map");
        assert_eq!(cols[&b"f:a".to_vec()].value.as_deref(), Some(&b"new"[..]));
        assert_eq!(cols.len(), 2);
        let sorted = row_result(&cells, true).expect("row").sorted_columns.expect("list");
        let values: Vec<Vec<u8>> =
            sorted.iter().filter_map(|c| c.cell.as_ref().and_then(|c| c.value.clone())).collect();
        assert_eq!(values, [b"new".to_vec(), b"old".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn create_table_takes_families_and_refuses_bad_ones() {
        let t = FamilyDescriptor::new("x");
        let cd = |n: &str| ColumnDescriptor {
            name: Some(n.as_bytes().to_vec()),
            max_versions: Some(3),
            ..Default::default()
        };
        let d = table_descriptor("t", &[cd("a:"), cd("b")], &t).expect("valid");
        assert_eq!(d.families.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(d.families[0].max_versions, 3);
        assert!(table_descriptor("t", &[], &t).is_err());
        assert!(table_descriptor("t", &[cd(":")], &t).is_err());
        // Issue 15 item 6: HBase refuses maxVersions 0 with IllegalArgument.
        let zero = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(0), ..Default::default() };
        assert!(table_descriptor("t", &[zero], &t).is_err());
        let absent = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: None, ..Default::default() };
        assert_eq!(table_descriptor("t", &[absent], &t).expect("valid").families[0].max_versions, 1, "the template's");
        let negative = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(-1), ..Default::default() };
        assert!(table_descriptor("t", &[negative], &t).is_err());
    }
}
