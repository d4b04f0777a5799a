//! `layout`: the store's files on disk, named in one place (HBase's
//! `HRegionFileSystem`, Pebble's `base/filenames.go`). No other module
//! builds a path from a name or knows a marker's spelling; every metadata
//! file is read and written here, as JSON committed atomically.
//!
//! ```text
//! <root>/data/<ns>/.namespacedesc                   a namespace's descriptor      (JSON)
//! <root>/data/<ns>/.trash-<table>                   a table directory being removed
//! <root>/data/.trash-<ns>                           a namespace being removed
//! <table> below is <root>/data/<ns>/<qualifier>     (HBase's layout; `t` is `default:t`)
//! <table>/.tabledesc                                descriptor and enabled flag   (JSON, fenced)
//! <table>/<region>/.regioninfo                      id, range, parents            (JSON; the region's commit)
//! <table>/<region>/.closed                          closed by an admin call        (marker)
//! <table>/<region>/.split                           a committed split's parent     (marker, fenced)
//! <table>/<region>/.merged                          a committed merge's parent     (marker)
//! <table>/<region>/recovered.edits/                 a dead server's edits for it (wal/log_split.rs)
//! <table>/<region>/<family>/MANIFEST                the family's live files       (JSON, fenced)
//! <table>/<region>/<family>/<id>.sf                 a store file                   (storefile/)
//! <table>/<region>/<family>/<file>.<parent>.ref     half of a parent's file (JSON)
//! <table>/.trash-<region>                           a region directory being removed
//! <root>/CLUSTER                                   a cluster's shared root        (marker)
//! <root>/WALs/<instance>/wal-<n>.log                a store instance's WAL         (wal.rs)
//! <root>/WALs/<instance>-splitting/                 a dead instance's WAL, fenced
//! <root>/oldWALs/...                                archived WAL files
//! <root>/MasterData/catalog/<epoch>-<n>.log         the master's catalog          (record_log.rs)
//! ```
//!
//! `<ns>`, `<qualifier>` and `<family>` are names from outside: they become
//! path segments only through [`crate::names::child`], which refuses
//! separators and dot segments. `<region>` is the region id in 16 hex
//! digits. A root written before namespaces held its tables at
//! `data/<table>`; [`migrate_legacy_tables`] moves them into `default`.
//!
//! Metadata files ([`read_json`], [`write_json`]) are written under a
//! temporary name, fsynced, then renamed into place; a fenced write checks
//! the commit fence (`StoreOptions::commit_fence`: this server still owns
//! the region) between the fsync and the rename. A file that does not
//! parse is a corruption naming the file, never a silent default.
//!
//! Thread safety: pure functions over the file system.

pub mod wal;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Result, StoreError};
use crate::fs::FileSystem;

/// The file that marks a root as a cluster's shared root: written by the
/// first member that opens it, it keeps a standalone store out (one would
/// fence and retire every live member's WAL directory as its own earlier
/// instances'). An operator who retires the cluster removes it.
pub const CLUSTER_MARKER: &str = "CLUSTER";

/// `<root>/CLUSTER`.
pub fn cluster_marker(root: &Path) -> PathBuf {
    root.join(CLUSTER_MARKER)
}

/// The directory of the active master's catalog (a `record_log`), under
/// the root (HBase keeps its master's region states in `MasterData`).
pub fn master_catalog_dir(root: &Path) -> PathBuf {
    root.join("MasterData").join("catalog")
}

/// The directory of the tables, under the root.
pub const DATA_DIR: &str = "data";
/// A table's descriptor, in its directory.
pub const TABLE_DESC: &str = ".tabledesc";
/// A region's identity and range, in its directory: written last, it is
/// what makes a region directory a region.
pub const REGION_INFO: &str = ".regioninfo";
/// A family's list of live files, in the family's directory.
pub const MANIFEST: &str = "MANIFEST";
/// What a store file's name ends with.
pub const STORE_FILE_SUFFIX: &str = ".sf";
/// What a reference file's name ends with.
pub const REFERENCE_SUFFIX: &str = ".ref";
/// What a directory being removed is renamed to start with.
pub const TRASH_PREFIX: &str = ".trash-";

/// The markers a region directory may hold (empty files whose presence is
/// the fact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Closed by an admin call: stays closed across restarts.
    Closed,
    /// A split's parent whose split committed: retired.
    Split,
    /// A merge's parent whose merge committed: retired.
    Merged,
}

impl Marker {
    pub fn file_name(self) -> &'static str {
        match self {
            Marker::Closed => ".closed",
            Marker::Split => ".split",
            Marker::Merged => ".merged",
        }
    }

    /// What the marker holds (for a human who opens it).
    fn content(self) -> &'static [u8] {
        match self {
            Marker::Closed => b"closed",
            Marker::Split => b"split",
            Marker::Merged => b"merged",
        }
    }
}

/// `<root>/data`.
pub fn data_dir(root: &Path) -> PathBuf {
    root.join(DATA_DIR)
}

/// `<root>/data/<ns>/<qualifier>` of table `ns:qualifier` (`t`: in
/// `default`); refuses a name whose parts are not plain segments.
pub fn table_dir(root: &Path, table: &str) -> Result<PathBuf> {
    let (namespace, qualifier) = crate::names::split_table_name(crate::names::canonical_table_name(table));
    crate::names::child(&namespace_dir(root, namespace)?, qualifier)
}

/// `<root>/data/<ns>`.
pub fn namespace_dir(root: &Path, namespace: &str) -> Result<PathBuf> {
    crate::names::child(&data_dir(root), namespace)
}

/// A namespace's descriptor, in its directory: what makes a directory
/// under `data/` a namespace.
pub const NAMESPACE_DESC: &str = ".namespacedesc";

/// `<ns dir>/.namespacedesc`.
pub fn namespace_desc(namespace_dir: &Path) -> PathBuf {
    namespace_dir.join(NAMESPACE_DESC)
}

/// A directory under `data/` as [`table_dirs`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableDirEntry {
    /// A table's directory and its name as the store keeps it.
    Table { name: String, dir: PathBuf },
    /// A table or namespace whose removal a crash interrupted.
    Trash(PathBuf),
}

/// Every table directory of every namespace under `root`, and the
/// directories being removed; a namespace directory without its descriptor
/// (a creation a crash interrupted, or a layout before namespaces that
/// [`migrate_legacy_tables`] has not moved) holds no tables.
pub fn table_dirs(fs: &dyn FileSystem, root: &Path) -> Result<Vec<TableDirEntry>> {
    let data = data_dir(root);
    let mut out = Vec::new();
    for namespace in fs.list(&data)? {
        let ns_dir = data.join(&namespace);
        if is_trash(&namespace) {
            out.push(TableDirEntry::Trash(ns_dir));
            continue;
        }
        if namespace.starts_with('.') || !fs.exists(&namespace_desc(&ns_dir))? {
            continue;
        }
        for qualifier in fs.list(&ns_dir)? {
            let dir = ns_dir.join(&qualifier);
            if is_trash(&qualifier) {
                out.push(TableDirEntry::Trash(dir));
            } else if !qualifier.starts_with('.') {
                let name = if namespace == crate::names::DEFAULT_NAMESPACE {
                    qualifier
                } else {
                    format!("{namespace}:{qualifier}")
                };
                out.push(TableDirEntry::Table { name, dir });
            }
        }
    }
    Ok(out)
}

/// A namespace as its descriptor holds it (HBase's `NamespaceDescriptor`:
/// a name and its configuration).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamespaceFile {
    pub name: String,
    #[serde(default)]
    pub configuration: std::collections::BTreeMap<String, String>,
}

/// Writes namespace `name`'s directory and descriptor (the descriptor is
/// the commit: a directory without it is not a namespace), durably.
pub fn write_namespace(fs: &dyn FileSystem, root: &Path, file: &NamespaceFile) -> Result<()> {
    let dir = namespace_dir(root, &file.name)?;
    crate::fs::create_dir_all_durably(fs, &dir)?;
    write_json(fs, &namespace_desc(&dir), file, &unfenced)?;
    fs.sync_dir(&dir)
}

/// Moves the tables of a root laid out before namespaces (`data/<table>`)
/// into the default namespace (`data/default/<table>`, HBase's layout), and
/// makes sure the `default` and `hbase` namespaces exist. Each table moves
/// by one rename, so a crash leaves every table in one place or the other,
/// and the next open moves the rest. Idempotent.
pub fn migrate_legacy_tables(fs: &dyn FileSystem, root: &Path) -> Result<()> {
    let data = data_dir(root);
    for name in [crate::names::DEFAULT_NAMESPACE, crate::names::SYSTEM_NAMESPACE] {
        if !fs.exists(&namespace_desc(&data.join(name)))? {
            let file = NamespaceFile { name: name.to_string(), configuration: Default::default() };
            write_namespace(fs, root, &file)?;
        }
    }
    let default = data.join(crate::names::DEFAULT_NAMESPACE);
    let mut moved = 0;
    for name in fs.list(&data)? {
        let dir = data.join(&name);
        if name.starts_with('.') || fs.exists(&namespace_desc(&dir))? {
            continue;
        }
        // A directory of `data/` without a namespace descriptor: a table of
        // the layout before namespaces (a namespace being created writes
        // its descriptor before any table can be made in it).
        let to = default.join(&name);
        if fs.exists(&to)? {
            return Err(StoreError::corruption(
                &dir,
                0,
                format!("a table directory of the layout before namespaces, and {} exists too", to.display()),
            ));
        }
        tracing::info!(from = %dir.display(), to = %to.display(), "moving a table into the default namespace");
        if let Err(e) = fs.rename(&dir, &to) {
            // Another member of a cluster opening the same root moved it.
            if fs.exists(&dir)? || !fs.exists(&to)? {
                return Err(e);
            }
        }
        moved += 1;
    }
    if moved > 0 {
        fs.sync_dir(&default)?;
        fs.sync_dir(&data)?;
    }
    Ok(())
}

/// `<table dir>/.tabledesc`.
pub fn table_desc(table_dir: &Path) -> PathBuf {
    table_dir.join(TABLE_DESC)
}

/// A region directory's name: its id in 16 hex digits.
pub fn region_dir_name(id: u64) -> String {
    format!("{id:016x}")
}

/// Whether `name` (an entry of a table directory) is a region directory's
/// name.
pub fn is_region_dir_name(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `<table dir>/<region id>`.
pub fn region_dir(table_dir: &Path, id: u64) -> PathBuf {
    table_dir.join(region_dir_name(id))
}

/// The directory of region `id` beside the region directory `sibling` (a
/// split's parent beside its daughter).
pub fn sibling_region_dir(sibling: &Path, id: u64) -> PathBuf {
    sibling.with_file_name(region_dir_name(id))
}

/// `<region dir>/.regioninfo`.
pub fn region_info(region_dir: &Path) -> PathBuf {
    region_dir.join(REGION_INFO)
}

/// `<region dir>/<family>`; refuses a name that is not one plain segment.
pub fn family_dir(region_dir: &Path, family: &str) -> Result<PathBuf> {
    crate::names::child(region_dir, family)
}

/// Whether `name` (an entry of a region directory) may be a family
/// directory: every other entry is a dot file (markers, `.regioninfo`).
pub fn may_be_family_dir(name: &str) -> bool {
    !name.starts_with('.')
}

/// `<family dir>/MANIFEST`.
pub fn manifest(family_dir: &Path) -> PathBuf {
    family_dir.join(MANIFEST)
}

/// `<family dir>/<32 hex digits of nanos><8+ hex digits of id>.sf`: unique
/// across servers writing one root (time and a per-process counter).
pub fn store_file(family_dir: &Path, nanos: u128, id: u64) -> PathBuf {
    family_dir.join(format!("{nanos:032x}{id:08x}{STORE_FILE_SUFFIX}"))
}

/// Whether `name` is a store file's.
pub fn is_store_file(name: &str) -> bool {
    name.ends_with(STORE_FILE_SUFFIX)
}

/// A reference's file name: the referenced file's name, the parent
/// region's directory name, `.ref`.
pub fn reference_name(file: &str, parent_region: &str) -> String {
    format!("{file}.{parent_region}{REFERENCE_SUFFIX}")
}

/// Whether `name` is a reference file's.
pub fn is_reference(name: &str) -> bool {
    name.ends_with(REFERENCE_SUFFIX)
}

/// Whether reference file `name` refers into the region directory `parent`.
pub fn refers_into(name: &str, parent: &str) -> bool {
    name.strip_suffix(REFERENCE_SUFFIX).is_some_and(|stem| stem.ends_with(&format!(".{parent}")))
}

/// The file a reference in `family_dir` reads: `file` of the same family
/// in region `parent_region` of the same table.
pub fn referenced_file(family_dir: &Path, parent_region: &str, file: &str) -> Result<PathBuf> {
    let family = family_dir.file_name();
    let table_dir = family_dir.parent().and_then(Path::parent);
    match (family, table_dir) {
        (Some(family), Some(table_dir)) => Ok(table_dir.join(parent_region).join(family).join(file)),
        _ => Err(StoreError::InvalidArgument(format!(
            "a reference outside a table/region/family directory: {}",
            family_dir.display()
        ))),
    }
}

/// `<region dir>/<marker>`.
pub fn marker(region_dir: &Path, which: Marker) -> PathBuf {
    region_dir.join(which.file_name())
}

/// Whether `region_dir` holds `which`.
pub fn has_marker(fs: &dyn FileSystem, region_dir: &Path, which: Marker) -> Result<bool> {
    fs.exists(&marker(region_dir, which))
}

/// Writes `which` into `region_dir` durably, if `fence` allows it once it
/// is written under a temporary name.
pub fn write_marker(
    fs: &dyn FileSystem,
    region_dir: &Path,
    which: Marker,
    fence: &dyn Fn() -> Result<()>,
) -> Result<()> {
    crate::fs::write_atomic_fenced(fs, &marker(region_dir, which), which.content(), fence)
}

/// Removes `which` from `region_dir` (absent is fine).
pub fn remove_marker(fs: &dyn FileSystem, region_dir: &Path, which: Marker) -> Result<()> {
    let path = marker(region_dir, which);
    if fs.exists(&path)? { fs.remove(&path) } else { Ok(()) }
}

/// The name `dir` is renamed to while it is removed.
pub fn trash_for(dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.with_file_name(format!("{TRASH_PREFIX}{name}"))
}

/// Whether `name` is a directory being removed.
pub fn is_trash(name: &str) -> bool {
    name.starts_with(TRASH_PREFIX)
}

/// No fence: for metadata files only their writer can reach (a region
/// being created, a store opening).
pub fn unfenced() -> Result<()> {
    Ok(())
}

/// Reads metadata file `path` (`None` if it does not exist). `what` names
/// the file in the corruption error of one that does not parse.
pub fn read_json<T: DeserializeOwned>(fs: &dyn FileSystem, path: &Path, what: &'static str) -> Result<Option<T>> {
    if !fs.exists(path)? {
        return Ok(None);
    }
    parse_json(path, &fs.read_all(path)?, what).map(Some)
}

/// Parses the bytes of metadata file `path`.
pub fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8], what: &'static str) -> Result<T> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::corruption(path, e.column() as u64, format!("unreadable {what}: {e}")))
}

/// Writes metadata file `path` atomically (pretty JSON, for a human who
/// opens it), committing only if `fence` allows it.
pub fn write_json<T: Serialize>(
    fs: &dyn FileSystem,
    path: &Path,
    value: &T,
    fence: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| StoreError::Encode { path: path.into(), source })?;
    crate::fs::write_atomic_fenced(fs, path, &bytes, fence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognised_as_what_they_are() {
        let family = Path::new("/r/data/default/t/00000000000000aa/f");
        let sf = store_file(family, 7, 3);
        let sf_name = sf.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(is_store_file(sf_name) && !is_reference(sf_name));
        let reference = reference_name(sf_name, "00000000000000aa");
        assert!(is_reference(&reference) && refers_into(&reference, "00000000000000aa"));
        assert!(!refers_into(&reference, "00000000000000ab"));
        assert!(is_region_dir_name(&region_dir_name(u64::MAX)) && !is_region_dir_name(".trash-00000000000000aa"));
        assert!(is_trash(trash_for(Path::new("/r/data/t")).file_name().and_then(|n| n.to_str()).expect("name")));
        assert_eq!(
            referenced_file(family, "00000000000000bb", "x.sf").expect("path"),
            Path::new("/r/data/default/t/00000000000000bb/f/x.sf")
        );
        assert!(table_dir(Path::new("/r"), "..").is_err() && family_dir(family, "a/b").is_err());
        assert_eq!(table_dir(Path::new("/r"), "t").expect("t"), Path::new("/r/data/default/t"));
        assert_eq!(table_dir(Path::new("/r"), "default:t").expect("t"), Path::new("/r/data/default/t"));
        assert_eq!(table_dir(Path::new("/r"), "ns:t").expect("ns:t"), Path::new("/r/data/ns/t"));
        assert!(table_dir(Path::new("/r"), "ns:..").is_err() && table_dir(Path::new("/r"), "..:t").is_err());
        for m in [Marker::Closed, Marker::Split, Marker::Merged] {
            assert!(!may_be_family_dir(m.file_name()));
        }
        assert!(!may_be_family_dir(REGION_INFO));
    }

    #[test]
    fn metadata_round_trips_and_garbage_is_a_corruption() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let fs = crate::fs::LocalFs;
        let path = tmp.path().join("m.json");
        assert_eq!(read_json::<Vec<u32>>(&fs, &path, "list").expect("absent"), None);
        write_json(&fs, &path, &vec![1u32, 2], &unfenced).expect("write");
        assert_eq!(read_json::<Vec<u32>>(&fs, &path, "list").expect("read"), Some(vec![1, 2]));
        std::fs::write(&path, b"{not json").expect("garble");
        let e = read_json::<Vec<u32>>(&fs, &path, "list").expect_err("garbage");
        assert!(matches!(e, StoreError::Corruption { .. }) && e.to_string().contains("unreadable list"), "{e}");
        let refused = write_json(&fs, &path, &vec![3u32], &|| Err(StoreError::Fenced("test".into())));
        assert!(matches!(refused, Err(StoreError::Fenced(_))));
        assert_eq!(std::fs::read(&path).expect("read"), b"{not json", "a refused write changes nothing");
    }
}
