//! The split keys of `create`'s `NUMREGIONS => n, SPLITALGO => '...'`,
//! computed as HBase's `RegionSplitter` algorithms compute them, so a table
//! pre-split here has HBase's region boundaries:
//!
//! * `HexStringSplit`: rows are 8 lower-case hex digits, `00000000` to
//!   `ffffffff`; n regions of equal width (the last takes the remainder).
//! * `DecimalStringSplit`: 8 decimal digits, `00000000` to `99999999`.
//! * `UniformSplit`: 8 raw bytes, the whole 64-bit space in n equal parts.
//!
//! Each algorithm is named by its simple name or HBase's class name
//! (`org.apache.hadoop.hbase.util.RegionSplitter$HexStringSplit`). And
//! `SPLITS_FILE`: one split key a line, as HBase's shell reads it.
//!
//! Thread safety: pure functions.

use anyhow::{Context, bail};

/// The `n - 1` split keys of `n` regions under algorithm `algo`.
pub fn split_keys(algo: &str, n: i64) -> anyhow::Result<Vec<Vec<u8>>> {
    if n <= 1 {
        bail!("create: NUMREGIONS must be greater than 1, got {n}");
    }
    let n = n as u128;
    let simple = algo.rsplit(['$', '.']).next().unwrap_or(algo);
    // (the width of the row space, how a point is written)
    let (range, write): (u128, fn(u128) -> Vec<u8>) = match simple {
        "HexStringSplit" => (1 << 32, |v| format!("{v:08x}").into_bytes()),
        "DecimalStringSplit" => (100_000_000, |v| format!("{v:08}").into_bytes()),
        "UniformSplit" => (1 << 64, |v| (v as u64).to_be_bytes().to_vec()),
        other => bail!(
            "create: SPLITALGO {other:?} is not one of HBase's split algorithms (HexStringSplit, \
             DecimalStringSplit, UniformSplit)"
        ),
    };
    if n > range {
        bail!("create: NUMREGIONS {n} is more than {simple} has rows");
    }
    let size = range / n;
    Ok((1..n).map(|i| write(size * i)).collect())
}

/// The split keys in file `path`: one a line, without its line ending.
pub fn splits_file(path: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    let text = std::fs::read(path).with_context(|| format!("create: reading SPLITS_FILE {path}"))?;
    Ok(text
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line).to_vec())
        .filter(|line| !line.is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(algo: &str, n: i64) -> Vec<String> {
        split_keys(algo, n).unwrap().into_iter().map(|k| String::from_utf8_lossy(&k).into_owned()).collect()
    }

    /// The keys HBase 2.6's `RegionSplitter` gives (its `split(n)`).
    #[test]
    fn the_algorithms_give_hbase_s_keys() {
        assert_eq!(keys("HexStringSplit", 4), ["40000000", "80000000", "c0000000"]);
        assert_eq!(keys("org.apache.hadoop.hbase.util.RegionSplitter$HexStringSplit", 2), ["80000000"]);
        assert_eq!(keys("DecimalStringSplit", 4), ["25000000", "50000000", "75000000"]);
        assert_eq!(keys("DecimalStringSplit", 3), ["33333333", "66666666"]);
        let uniform = split_keys("UniformSplit", 4).unwrap();
        assert_eq!(uniform, [[0x40, 0, 0, 0, 0, 0, 0, 0], [0x80, 0, 0, 0, 0, 0, 0, 0], [0xc0, 0, 0, 0, 0, 0, 0, 0]]);
        assert_eq!(split_keys("HexStringSplit", 16).unwrap().len(), 15);
    }

    #[test]
    fn bad_counts_and_names_are_refused() {
        assert!(split_keys("HexStringSplit", 1).is_err());
        assert!(split_keys("NoSuchSplit", 4).unwrap_err().to_string().contains("NoSuchSplit"));
    }

    #[test]
    fn a_splits_file_has_one_key_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("splits.txt");
        std::fs::write(&path, "b\r\nm\n\nt\n").unwrap();
        let got = splits_file(path.to_str().unwrap()).unwrap();
        assert_eq!(got, [b"b".to_vec(), b"m".to_vec(), b"t".to_vec()]);
        assert!(splits_file("/nonexistent/splits").is_err());
    }
}
