//! HBase's names for tables and regions, as hbase-client 2.6 builds and
//! parses them, and the order of `hbase:meta`'s rows.
//!
//! * A table is `TableName { namespace, qualifier }` on the wire and
//!   `ns:qualifier` here (`qualifier` alone in `default`, as the store names
//!   it).
//! * A region's name is `<table>,<start key>,<region id>.<encoded>.` where
//!   the region id is our region's id in decimal and the encoded name is the
//!   MD5 (hex) of `<table>,<start key>,<region id>`: the client computes the
//!   name itself from the `RegionInfo` it reads in `hbase:meta`, so it must
//!   be HBase's formula. The name maps back to our region through the table
//!   and the id, which are both in it.
//! * `hbase:meta`'s rows sort by table, then start key, then the rest
//!   (HBase's `MetaCellComparator`), not by bytes: the client's meta scans
//!   stop at keys like `t ,,`, which sort after every `t,...` row only so.
//!
//! Thread safety: pure functions.

use std::cmp::Ordering;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::TableName;
use md5::{Digest, Md5};

/// `hbase:meta`'s one region, as the client names it.
pub const META_TABLE: &str = "hbase:meta";

/// A wire table name as the store names it.
pub fn table_name(name: &TableName) -> Result<String, hbase_rpc::RpcError> {
    let text = |b: &Bytes| {
        String::from_utf8(b.to_vec()).map_err(|_| hbase_rpc::RpcError::do_not_retry("table names must be UTF-8"))
    };
    let (namespace, qualifier) = (text(&name.namespace)?, text(&name.qualifier)?);
    Ok(if namespace.is_empty() || namespace == store::names::DEFAULT_NAMESPACE {
        qualifier
    } else {
        format!("{namespace}:{qualifier}")
    })
}

/// A store table name on the wire.
pub fn wire_table_name(name: &str) -> TableName {
    let (namespace, qualifier) = store::names::split_table_name(name);
    TableName {
        namespace: Bytes::copy_from_slice(namespace.as_bytes()),
        qualifier: Bytes::copy_from_slice(qualifier.as_bytes()),
    }
}

/// The region name hbase-client computes for a region of `table` starting
/// at `start` with id `id` (see the module doc).
pub fn region_name(table: &str, start: &[u8], id: u64) -> Vec<u8> {
    let mut name = name_without_encoding(table, start, id);
    let encoded = encoded_name(&name);
    name.push(b'.');
    name.extend_from_slice(encoded.as_bytes());
    name.push(b'.');
    name
}

/// `<table>,<start key>,<region id>`: what the encoded name hashes.
fn name_without_encoding(table: &str, start: &[u8], id: u64) -> Vec<u8> {
    let mut name = Vec::with_capacity(table.len() + start.len() + 56);
    name.extend_from_slice(table.as_bytes());
    name.push(b',');
    name.extend_from_slice(start);
    name.push(b',');
    name.extend_from_slice(id.to_string().as_bytes());
    name
}

/// The encoded name of the region `region_name` names (what
/// `RegionInfo.getEncodedName` returns, and a merge request names).
pub fn encoded_region_name(table: &str, start: &[u8], id: u64) -> String {
    encoded_name(&name_without_encoding(table, start, id))
}

/// HBase's encoded region name: the MD5 of the name's first part, in hex.
pub fn encoded_name(name_without_encoding: &[u8]) -> String {
    Md5::digest(name_without_encoding).iter().map(|b| format!("{b:02x}")).collect()
}

/// The table and region id of a region name (`None`: not a region name).
/// Accepts names with the encoded suffix and without (HBase's old format).
pub fn parse_region_name(name: &[u8]) -> Option<(String, u64)> {
    let first = name.iter().position(|&b| b == b',')?;
    let table = std::str::from_utf8(&name[..first]).ok()?.to_string();
    let mut rest = &name[first + 1..];
    // `.<32 hex>.` at the end: the encoded name.
    if rest.len() >= 34
        && rest.ends_with(b".")
        && rest[rest.len() - 34] == b'.'
        && rest[rest.len() - 33..rest.len() - 1].iter().all(u8::is_ascii_hexdigit)
    {
        rest = &rest[..rest.len() - 34];
    }
    let last = rest.iter().rposition(|&b| b == b',')?;
    let id = std::str::from_utf8(&rest[last + 1..]).ok()?.parse().ok()?;
    Some((table, id))
}

/// `hbase:meta`'s row order (see the module doc): table (up to the first
/// comma), then whether there is more, then the start key (up to the last
/// comma), then the rest.
pub fn compare_meta_rows(a: &[u8], b: &[u8]) -> Ordering {
    /// Table, then (start key, the rest) when the key goes on past it.
    type Parts<'a> = (&'a [u8], Option<(&'a [u8], &'a [u8])>);
    fn parts(key: &[u8]) -> Parts<'_> {
        let Some(first) = key.iter().position(|&b| b == b',') else {
            return (key, None);
        };
        let rest = &key[first + 1..];
        match rest.iter().rposition(|&b| b == b',') {
            Some(last) => (&key[..first], Some((&rest[..last], &rest[last + 1..]))),
            None => (&key[..first], Some((rest, &[][..]))),
        }
    }
    parts(a).cmp(&parts(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_round_trip_to_table_and_id() {
        let name = region_name("ns:t", b"a,b", 42);
        let text = String::from_utf8(name.clone()).unwrap();
        assert!(text.starts_with("ns:t,a,b,42."), "{text}");
        assert_eq!(text.len(), "ns:t,a,b,42.".len() + 33);
        assert_eq!(parse_region_name(&name), Some(("ns:t".to_string(), 42)));
        assert_eq!(parse_region_name(b"t,,7"), Some(("t".to_string(), 7)));
        assert_eq!(parse_region_name(b"garbage"), None);
        let encoded = encoded_region_name("ns:t", b"a,b", 42);
        assert!(text.ends_with(&format!(".{encoded}.")), "{text}");
    }

    #[test]
    fn the_encoded_name_is_hbase_s_md5() {
        // MD5("t,,1") as HBase's RegionInfo.encodeRegionName computes it.
        assert_eq!(encoded_name(b"t,,1"), format!("{:x}", md5_reference(b"t,,1")));
        assert_eq!(encoded_name(b"").len(), 32);
        assert_eq!(encoded_name(b""), "d41d8cd98f00b204e9800998ecf8427e");
    }

    fn md5_reference(data: &[u8]) -> u128 {
        u128::from_be_bytes(Md5::digest(data).into())
    }

    #[test]
    fn meta_rows_sort_by_table_first() {
        // The client's stop row for table t's regions is `t ,,`: after them.
        assert_eq!(compare_meta_rows(b"t,zzz,5.abc.", b"t ,,"), Ordering::Less);
        assert_eq!(compare_meta_rows(b"t,,", b"t,,1.abc."), Ordering::Less);
        assert_eq!(compare_meta_rows(b"t", b"t,,1.abc."), Ordering::Less);
        assert_eq!(compare_meta_rows(b"t,b,2.x.", b"t,b,99999999999999"), Ordering::Less);
        assert_eq!(compare_meta_rows(b"t,c,2.x.", b"t,b,99999999999999"), Ordering::Greater);
        // A start key holding a comma still sorts by the key.
        assert_eq!(compare_meta_rows(b"t,a,b,3.x.", b"t,a\x00,4.x."), Ordering::Greater);
        assert_eq!(compare_meta_rows(b"t,a,3.x.", b"t,a\x00,4.x."), Ordering::Less);
    }
}
