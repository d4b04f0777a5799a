//! References (HBase's `Reference` / half store files): how a split's
//! daughter reads its half of the parent's files without copying them.
//!
//! A reference is a small file in the daughter's family directory, named
//! `<parent file>.<parent region dir>.ref` and listed in the daughter's
//! manifest like any store file. It names the parent's file and the half:
//! the bottom half holds the rows `< split_row`, the top half the rows
//! `>= split_row`. The daughter opens the parent's file through it and reads
//! only its half ([`StoreFileReader::open_half`]); a compaction of the
//! daughter writes real files and drops the references; the parent's
//! directory goes once no daughter refers to it.
//!
//! Thread safety: plain values.
//!
//! [`StoreFileReader::open_half`]: super::reader::StoreFileReader::open_half

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fs::FileSystem;

/// Which half of a file a reader sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Half {
    pub split_row: Vec<u8>,
    /// The rows `>= split_row` (else the rows `< split_row`).
    pub top: bool,
}

impl Half {
    pub fn contains(&self, row: &[u8]) -> bool {
        (row >= self.split_row.as_slice()) == self.top
    }

    /// Whether a file whose rows are `first..=last` has any row in this half.
    pub fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        if self.top { last >= self.split_row.as_slice() } else { first < self.split_row.as_slice() }
    }
}

/// A reference to half of a parent region's store file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// The parent region's directory name (a sibling of the daughter's).
    pub parent_region: String,
    /// The parent's store file name, in the same family directory.
    pub file: String,
    pub half: Half,
}

impl Reference {
    /// The reference's own file name.
    pub fn file_name(&self) -> String {
        crate::layout::reference_name(&self.file, &self.parent_region)
    }

    pub fn is_reference_name(name: &str) -> bool {
        crate::layout::is_reference(name)
    }

    /// The referred file, for a reference in `family_dir`
    /// (`<table>/<region>/<family>`).
    pub fn target(&self, family_dir: &Path) -> Result<PathBuf> {
        crate::layout::referenced_file(family_dir, &self.parent_region, &self.file)
    }

    /// Writes the reference into `family_dir` (durably, under its name).
    pub fn write(&self, fs: &dyn FileSystem, family_dir: &Path) -> Result<PathBuf> {
        let path = family_dir.join(self.file_name());
        crate::layout::write_json(fs, &path, self, &crate::layout::unfenced)?;
        Ok(path)
    }

    pub fn read(fs: &dyn FileSystem, path: &Path) -> Result<Reference> {
        crate::layout::parse_json(path, &fs.read_all(path)?, "reference file")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_split_the_rows_at_the_split_row() {
        let bottom = Half { split_row: b"m".to_vec(), top: false };
        let top = Half { split_row: b"m".to_vec(), top: true };
        for (row, in_top) in
            [(&b"a"[..], false), (b"l", false), (b"lzz", false), (b"m", true), (b"m0", true), (b"z", true)]
        {
            assert_eq!(top.contains(row), in_top, "{row:?}");
            assert_eq!(bottom.contains(row), !in_top, "{row:?}");
        }
        assert!(bottom.overlaps(b"a", b"c") && !top.overlaps(b"a", b"c"));
        assert!(!bottom.overlaps(b"m", b"z") && top.overlaps(b"m", b"z"));
        assert!(bottom.overlaps(b"a", b"z") && top.overlaps(b"a", b"z"));
    }

    #[test]
    fn a_reference_points_into_its_parents_family_directory() {
        let r = Reference {
            parent_region: "00000000000000aa".into(),
            file: "f1.sf".into(),
            half: Half { split_row: b"m".to_vec(), top: true },
        };
        assert_eq!(r.file_name(), "f1.sf.00000000000000aa.ref");
        assert!(Reference::is_reference_name(&r.file_name()));
        let target = r.target(Path::new("/d/data/t/00000000000000bb/cf")).expect("target");
        assert_eq!(target, Path::new("/d/data/t/00000000000000aa/cf/f1.sf"));
    }
}
