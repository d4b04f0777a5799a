//! How store-file contents are shown to people: in `accordion inspect`,
//! in error messages. Binary keys are escaped like HBase's
//! `Bytes.toStringBinary` (printable ASCII as is, other bytes as `\xNN`), so
//! that the output is unambiguous and one line per key.

use std::fmt::Write;

use memstore::CellRef;

/// `bytes` with printable ASCII kept and everything else as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7F).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\x{b:02X}");
        }
    }
    s
}

/// A cell's key in HBase's `KeyValue.toString` style:
/// `row/family:qualifier/timestamp/Type/vlen=N/seqid=S`.
pub fn describe_cell(cell: &CellRef<'_>) -> String {
    format!(
        "{}/{}:{}/{}/{:?}/vlen={}/seqid={}",
        escape_bytes(cell.row()),
        escape_bytes(cell.family()),
        escape_bytes(cell.qualifier()),
        cell.timestamp(),
        cell.cell_type(),
        cell.value().len(),
        cell.seq()
    )
}

/// A key (an index key, or a cell's key without its value) in the same
/// style: `row/family:qualifier/timestamp/Type/seqid=S`.
pub fn describe_key(cell: &CellRef<'_>) -> String {
    format!(
        "{}/{}:{}/{}/{:?}/seqid={}",
        escape_bytes(cell.row()),
        escape_bytes(cell.family()),
        escape_bytes(cell.qualifier()),
        cell.timestamp(),
        cell.cell_type(),
        cell.seq()
    )
}

/// A byte count in binary units.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memstore::CellInput;

    #[test]
    fn escapes_and_describes() {
        assert_eq!(escape_bytes(b"row-1\x00\xff\\"), "row-1\\x00\\xFF\\x5C");
        let enc = CellInput::put(b"r", b"cf", b"q", 5, b"abc").to_encoded(9);
        assert_eq!(describe_cell(&CellRef::new(&enc)), "r/cf:q/5/Put/vlen=3/seqid=9");
        assert_eq!(describe_key(&CellRef::new(&enc)), "r/cf:q/5/Put/seqid=9");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(64 << 10), "64.0 KiB");
    }
}
