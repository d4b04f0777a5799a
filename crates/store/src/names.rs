//! Names that come from outside the store — table names, column family
//! names, region server names — checked in one place, and the one function
//! through which any of them becomes a path ([`child`]).
//!
//! Why here and not at each entry: a name reaches the disk from many doors
//! (Thrift `createTable`, an admin `alter` or `recover` call, the shell,
//! the embedded API, a descriptor read back from disk) and a single door
//! left open is enough to lose data. A family named `.` once made a region
//! open its own directory as a store directory and delete `.regioninfo` as
//! a stray file; an alter of family `..` removed the table's descriptor.
//! The rules are HBase's (`ColumnFamilyDescriptorBuilder.isLegalColumnFamilyName`,
//! `TableName.isLegalTableQualifierName` and `isLegalNamespaceName`), and
//! the refusals carry HBase's wording, so that scripts matching on it keep
//! working. [`child`] checks again what every path segment must be, so a
//! rule missed above still cannot climb out of the directory it names.
//!
//! Thread safety: pure functions.

use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// The longest family name (the cell format stores its length in a byte,
/// as HBase's does).
pub const MAX_FAMILY_LEN: usize = memstore::cell::MAX_FAMILY_LEN;
/// The longest table name: one path segment on every file system we use.
pub const MAX_TABLE_NAME_LEN: usize = 255;
/// The namespace of tables named without one (HBase's `default`).
pub const DEFAULT_NAMESPACE: &str = "default";
/// The directory of a region that holds the edits split from a dead
/// server's WAL: not a family name (HBase's `HConstants.RECOVERED_EDITS_DIR`).
pub const RECOVERED_EDITS: &str = "recovered.edits";

fn illegal(message: String) -> StoreError {
    StoreError::IllegalName(message)
}

/// Checks a column family name by HBase's rules: not empty, at most 127
/// bytes, not starting with `.`, no `:`, `/`, `\` or control character, and
/// not `recovered.edits`.
pub fn check_family_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(illegal("Column Family name can not be empty".into()));
    }
    if name.len() > MAX_FAMILY_LEN {
        return Err(illegal(format!("Column Family name is longer than {MAX_FAMILY_LEN} bytes: {name}")));
    }
    if name.starts_with('.') {
        return Err(illegal(format!("Column Family names cannot start with a period: {name}")));
    }
    if let Some(b) = name.bytes().find(|&b| b.is_ascii_control() || matches!(b, b':' | b'\\' | b'/')) {
        return Err(illegal(format!(
            "Column Family {} contains non-printable or illegal character: {b}",
            name.escape_debug()
        )));
    }
    if name == RECOVERED_EDITS {
        return Err(illegal(format!("Column Family name cannot be: {RECOVERED_EDITS}")));
    }
    Ok(())
}

/// A table name split into its namespace (`None`: the default) and its
/// qualifier, both checked by HBase's rules: `ns:qualifier` or `qualifier`;
/// a namespace of letters, digits and `_`; a qualifier of letters, digits,
/// `_`, `-` and `.` that starts with neither `.` nor `-`.
pub fn parse_table_name(name: &str) -> Result<(Option<&str>, &str)> {
    if name.len() > MAX_TABLE_NAME_LEN {
        return Err(illegal(format!("Table name is longer than {MAX_TABLE_NAME_LEN} bytes: {name}")));
    }
    let (namespace, qualifier) = match name.split_once(':') {
        Some((ns, q)) => (Some(ns), q),
        None => (None, name),
    };
    if let Some(ns) = namespace {
        check_namespace_name(ns)?;
    }
    let Some(first) = qualifier.chars().next() else {
        return Err(illegal("Table qualifier must not be empty".into()));
    };
    if first == '.' || first == '-' {
        return Err(illegal(format!(
            "Illegal first character <{first}> at 0. User-space table qualifiers can only start with \
             'alphanumeric characters' from any language: {}",
            qualifier.escape_debug()
        )));
    }
    if let Some((i, c)) =
        qualifier.char_indices().find(|&(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(illegal(format!(
            "Illegal character code:{}, <{}> at {i}. User-space table qualifiers may only contain 'alphanumeric \
             characters' and digits: {}",
            c as u32,
            c.escape_debug(),
            qualifier.escape_debug()
        )));
    }
    Ok((namespace, qualifier))
}

/// The namespace of HBase's own tables (`hbase:meta`): no user table may
/// be created in it, and it cannot be dropped.
pub const SYSTEM_NAMESPACE: &str = "hbase";

/// Checks a table name this store can hold: legal by HBase's rules, and
/// not in the system namespace (`hbase:`), whose tables the server itself
/// answers for.
pub fn check_table_name(name: &str) -> Result<()> {
    match parse_table_name(name)? {
        (Some(SYSTEM_NAMESPACE), _) => Err(illegal(format!(
            "Table {name}: the namespace {SYSTEM_NAMESPACE:?} holds the system's own tables; create user tables in \
             another namespace"
        ))),
        _ => Ok(()),
    }
}

/// A table's name as the store keeps it, HBase's `TableName.getNameAsString`:
/// `default:t` is `t`; any other namespace stays (`ns:t`).
pub fn canonical_table_name(name: &str) -> &str {
    name.strip_prefix(DEFAULT_NAMESPACE).and_then(|rest| rest.strip_prefix(':')).unwrap_or(name)
}

/// A table's namespace and qualifier (`t` is in `default`). The name is
/// not checked: [`check_table_name`] does that where names come in.
pub fn split_table_name(name: &str) -> (&str, &str) {
    match name.split_once(':') {
        Some((ns, q)) => (ns, q),
        None => (DEFAULT_NAMESPACE, name),
    }
}

/// Checks a namespace name by HBase's rules (`TableName.isLegalNamespaceName`):
/// not empty, at most 255 bytes, letters, digits and `_` only.
pub fn check_namespace_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(illegal("Namespace name must not be empty".into()));
    }
    if name.len() > MAX_TABLE_NAME_LEN {
        return Err(illegal(format!("Namespace name is longer than {MAX_TABLE_NAME_LEN} bytes: {name}")));
    }
    if let Some((i, c)) = name.char_indices().find(|&(_, c)| !(c.is_alphanumeric() || c == '_')) {
        return Err(illegal(format!(
            "Illegal character <{}> at {i}. Namespaces may only contain 'alphanumeric characters' from any \
             language and digits: {}",
            c.escape_debug(),
            name.escape_debug()
        )));
    }
    Ok(())
}

/// Checks a region server name as a cluster gives them, HBase's
/// `host,port,startcode` (ours: `host,pid,start ms`): a host of letters,
/// digits, `.`, `-`, `_` and `:` (IPv6) that does not start with `.`, and
/// two decimal numbers.
pub fn check_server_name(name: &str) -> Result<()> {
    let bad = || illegal(format!("{:?} is not a region server name (host,port,startcode)", name));
    let mut parts = name.split(',');
    let (Some(host), Some(port), Some(start), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let number = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
    if !host_ok || !number(port) || !number(start) {
        return Err(bad());
    }
    Ok(())
}

/// `dir/name`, where `name` must be one plain path segment: not empty, not
/// `.` or `..`, without a separator (`/`, `\`) or NUL. Every path built from
/// a name that came from outside goes through here.
pub fn child(dir: &Path, name: &str) -> Result<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.bytes().any(|b| matches!(b, b'/' | b'\\' | 0)) {
        return Err(illegal(format!("{:?} cannot name a directory entry", name)));
    }
    Ok(dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(StoreError::IllegalName(m)) => m,
            other => panic!("expected an illegal name, got {other:?}"),
        }
    }

    #[test]
    fn family_names_follow_hbase_rules() {
        for ok in ["f", "cf1", "a.b", "a-b_c", "ünïcode", "recovered.edits2", &"x".repeat(127)] {
            check_family_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        for (bad, why) in [
            ("", "can not be empty"),
            (".", "cannot start with a period"),
            ("..", "cannot start with a period"),
            (".regioninfo", "cannot start with a period"),
            ("a/b", "illegal character: 47"),
            ("a\\b", "illegal character: 92"),
            ("a:b", "illegal character: 58"),
            ("a\nb", "illegal character: 10"),
            ("a\0b", "illegal character: 0"),
            ("a\x7fb", "illegal character: 127"),
            ("recovered.edits", "cannot be: recovered.edits"),
        ] {
            let m = message(check_family_name(bad));
            assert!(m.contains(why), "{bad:?}: {m}");
        }
        assert!(message(check_family_name(&"x".repeat(128))).contains("longer than 127"));
    }

    #[test]
    fn namespaces_are_checked_and_default_is_implied() {
        for ok in ["ns", "ns_1", "名前"] {
            check_namespace_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        for bad in ["", "a-b", "a.b", "..", "a/b", "a:b"] {
            assert!(check_namespace_name(bad).is_err(), "{bad:?}");
        }
        check_table_name("ns:t").expect("a table of a namespace");
        assert!(message(check_table_name("hbase:t")).contains("system's own tables"));
        assert_eq!(canonical_table_name("default:t"), "t");
        assert_eq!(canonical_table_name("ns:t"), "ns:t");
        assert_eq!(canonical_table_name("defaults:t"), "defaults:t");
        assert_eq!(split_table_name("t"), ("default", "t"));
        assert_eq!(split_table_name("ns:t"), ("ns", "t"));
    }

    #[test]
    fn table_names_follow_hbase_rules() {
        for ok in ["t", "T_1", "a.b-c", "表", "x9"] {
            check_table_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        assert_eq!(parse_table_name("ns_1:t.x").expect("qualified"), (Some("ns_1"), "t.x"));
        for (bad, why) in [
            ("", "must not be empty"),
            (".", "Illegal first character <.>"),
            ("..", "Illegal first character <.>"),
            ("-t", "Illegal first character <->"),
            ("a/b", "Illegal character code:47"),
            ("a b", "Illegal character code:32"),
            ("a\\b", "Illegal character code:92"),
            ("a\0", "Illegal character code:0"),
            ("ns-x:t", "Namespaces may only contain"),
            (":t", "Namespace name must not be empty"),
            ("ns:", "must not be empty"),
            ("ns:a:b", "Illegal character code:58"),
            ("hbase:t", "the system's own tables"),
        ] {
            let m = message(check_table_name(bad));
            assert!(m.contains(why), "{bad:?}: {m}");
        }
        assert!(message(check_table_name(&"t".repeat(256))).contains("longer than 255"));
    }

    #[test]
    fn server_names_are_host_port_startcode() {
        for ok in ["localhost,1234,1700000000000", "10.0.0.1,9090,1", "::1,5,6", "my-host_1.example,1,2"] {
            check_server_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        for bad in
            ["", "..", "../data/t", "h,1", "h,1,2,3", "h,x,2", "h,1,", ".h,1,2", "h/x,1,2", "h,1,2/..", "h\0,1,2"]
        {
            message(check_server_name(bad));
        }
    }

    #[test]
    fn a_child_is_one_plain_segment() {
        let dir = Path::new("/root/data");
        assert_eq!(child(dir, "t").expect("plain"), Path::new("/root/data/t"));
        assert_eq!(child(dir, ".tabledesc").expect("dot file"), Path::new("/root/data/.tabledesc"));
        for bad in ["", ".", "..", "a/b", "/abs", "a\\b", "a\0b", "../x"] {
            message(child(dir, bad));
        }
    }
}
