//! Reading rows back, as the tests compare them.

use crate::read::scanner::Scan;
use crate::store::Store;

/// The row keys `scan` of `table` returns, in order (lossy UTF-8). Panics
/// if the scan fails.
pub fn scan_row_keys(store: &Store, table: &str, scan: Scan) -> Vec<String> {
    store
        .scan(table, scan)
        .expect("scan")
        .map(|r| String::from_utf8_lossy(&r.expect("scanned row")[0].row).into_owned())
        .collect()
}
