//! Store files end to end: write, read back, seek against a sorted model,
//! reverse steps, bloom filters, metadata, corruption of every kind, the
//! block cache, and I/O failures while writing.
//!
//! Corruption and fuzz tests run on an in-memory file system (below), so
//! that thousands of damaged variants of a file cost no disk I/O.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use memstore::cell::compare_cells;
use memstore::{CellInput, CellKey, CellRef, CellType};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use store::StoreError;
use store::fs::{FaultInjectingFs, FaultKind, FileSystem, LocalFs, ReadableFile, WritableFile};
use store::storefile::{
    BlockCache, BloomType, Compression, FileMetaExtra, StoreFileInfo, StoreFileOptions, StoreFileReader,
    StoreFileWriter,
};

// ---------------------------------------------------------------------------
// An in-memory file system.

#[derive(Clone, Default)]
struct MemFs {
    files: Arc<Mutex<HashMap<PathBuf, Arc<Vec<u8>>>>>,
}

impl MemFs {
    fn get(&self, path: &Path) -> Vec<u8> {
        self.files.lock().expect("lock").get(path).map(|d| d.to_vec()).expect("file exists")
    }

    fn set(&self, path: &Path, data: Vec<u8>) {
        self.files.lock().expect("lock").insert(path.to_path_buf(), Arc::new(data));
    }
}

struct MemWritable {
    fs: MemFs,
    path: PathBuf,
    buf: Vec<u8>,
}

struct MemReadable {
    path: PathBuf,
    data: Arc<Vec<u8>>,
}

fn not_found(path: &Path) -> StoreError {
    StoreError::io("open", path, std::io::Error::from(std::io::ErrorKind::NotFound))
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> store::Result<Box<dyn WritableFile>> {
        self.set(path, Vec::new());
        Ok(Box::new(MemWritable { fs: self.clone(), path: path.to_path_buf(), buf: Vec::new() }))
    }
    fn open(&self, path: &Path) -> store::Result<Arc<dyn ReadableFile>> {
        let data = self.files.lock().expect("lock").get(path).cloned().ok_or_else(|| not_found(path))?;
        Ok(Arc::new(MemReadable { path: path.to_path_buf(), data }))
    }
    fn rename(&self, from: &Path, to: &Path) -> store::Result<()> {
        let mut f = self.files.lock().expect("lock");
        let d = f.remove(from).ok_or_else(|| not_found(from))?;
        f.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn remove(&self, path: &Path) -> store::Result<()> {
        self.files.lock().expect("lock").remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }
    fn exists(&self, path: &Path) -> store::Result<bool> {
        Ok(self.files.lock().expect("lock").contains_key(path))
    }
    fn list(&self, _dir: &Path) -> store::Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn create_dir_all(&self, _dir: &Path) -> store::Result<()> {
        Ok(())
    }
    fn remove_dir_all(&self, _dir: &Path) -> store::Result<()> {
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> store::Result<()> {
        Ok(())
    }
    fn file_size(&self, path: &Path) -> store::Result<u64> {
        Ok(self.get(path).len() as u64)
    }
    fn truncate(&self, path: &Path, len: u64) -> store::Result<()> {
        let mut d = self.get(path);
        d.truncate(len as usize);
        self.set(path, d);
        Ok(())
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> store::Result<()> {
        self.buf.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> store::Result<()> {
        self.fs.set(&self.path, self.buf.clone());
        Ok(())
    }
    fn sync(&mut self) -> store::Result<()> {
        self.flush()
    }
    fn len(&self) -> u64 {
        self.buf.len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn close(mut self: Box<Self>) -> store::Result<()> {
        self.flush()
    }
}

impl ReadableFile for MemReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> store::Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.data.len() as u64);
        match end {
            Some(end) => {
                buf.copy_from_slice(&self.data[offset as usize..end as usize]);
                Ok(())
            }
            None => Err(StoreError::corruption(&self.path, offset, "read past the end")),
        }
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

// ---------------------------------------------------------------------------
// Cells and a sorted model.

/// Sorted, distinct encoded cells: rows `row-NNNNNN` (every third number,
/// so absent rows lie between them), two families, a few qualifiers with
/// several versions, and delete markers of all five types.
fn gen_cells(rows: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut cells = Vec::new();
    for r in 0..rows {
        let row = format!("row-{:06}", r * 3);
        for fam in [&b"a"[..], b"b"] {
            let mut seq = || rng.random_range(1..1_000_000u64);
            let (s1, s2) = (seq(), seq());
            if rng.random_ratio(1, 20) {
                let ts = rng.random_range(1000..2000);
                cells.push(CellInput::delete(row.as_bytes(), fam, b"", ts, CellType::DeleteFamily).to_encoded(s1));
            }
            if rng.random_ratio(1, 25) {
                let ts = rng.random_range(1000..2000);
                cells.push(
                    CellInput::delete(row.as_bytes(), fam, b"", ts, CellType::DeleteFamilyVersion).to_encoded(s2),
                );
            }
            for q in 0..rng.random_range(1..=3) {
                let qual = format!("q{q}");
                for _ in 0..rng.random_range(1..=3) {
                    let ts = rng.random_range(1000..2000);
                    let mut value = vec![0u8; rng.random_range(0..64)];
                    rng.fill(&mut value[..]);
                    let seq = rng.random_range(1..1_000_000);
                    cells.push(CellInput::put(row.as_bytes(), fam, qual.as_bytes(), ts, &value).to_encoded(seq));
                }
                for (odds, t) in [(10, CellType::Delete), (15, CellType::DeleteColumn)] {
                    if rng.random_ratio(1, odds) {
                        let ts = rng.random_range(1000..2000);
                        let seq = rng.random_range(1..1_000_000);
                        cells.push(CellInput::delete(row.as_bytes(), fam, qual.as_bytes(), ts, t).to_encoded(seq));
                    }
                }
            }
        }
    }
    cells.sort_by(|a, b| compare_cells(&CellRef::new(a), &CellRef::new(b)));
    cells.dedup_by(|a, b| compare_cells(&CellRef::new(a), &CellRef::new(b)).is_eq());
    cells
}

/// An owned seek target.
#[derive(Debug, Clone)]
struct Key {
    row: Vec<u8>,
    family: Vec<u8>,
    qualifier: Vec<u8>,
    timestamp: u64,
    type_code: u8,
    seq: u64,
}

impl Key {
    fn first_on_row(row: &[u8]) -> Key {
        Key { row: row.to_vec(), family: vec![], qualifier: vec![], timestamp: u64::MAX, type_code: 255, seq: u64::MAX }
    }

    fn key(&self) -> CellKey<'_> {
        CellKey {
            row: &self.row,
            family: &self.family,
            qualifier: &self.qualifier,
            timestamp: self.timestamp,
            type_code: self.type_code,
            seq: self.seq,
        }
    }
}

/// A seek target near a random cell, or outside every cell.
fn random_key(cells: &[Vec<u8>], rng: &mut SmallRng) -> Key {
    let c = CellRef::new(&cells[rng.random_range(0..cells.len())]);
    let exact = Key {
        row: c.row().to_vec(),
        family: c.family().to_vec(),
        qualifier: c.qualifier().to_vec(),
        timestamp: c.timestamp(),
        type_code: c.type_code(),
        seq: c.seq(),
    };
    match rng.random_range(0..8) {
        0 => Key::first_on_row(c.row()),
        1 => exact,
        2 => Key {
            timestamp: rng.random_range(900..2100),
            type_code: [0, 4, 8, 255][rng.random_range(0..4)],
            seq: rng.random_range(0..1_000_000),
            ..exact
        },
        3 => Key::first_on_row(&[c.row(), b"\x00"].concat()),
        4 => {
            // An absent row between two present ones.
            let n: u32 = rng.random_range(0..(cells.len() as u32 / 2));
            Key::first_on_row(format!("row-{:06}", n * 3 + 1).as_bytes())
        }
        5 => Key { qualifier: [c.qualifier(), b"0"].concat(), timestamp: u64::MAX, type_code: 255, ..exact },
        6 => Key::first_on_row(if rng.random_bool(0.5) { b"a" } else { b"zzz" }),
        _ => Key { seq: exact.seq.wrapping_sub(1), ..exact },
    }
}

/// Where the first cell >= `key` is in the model.
fn model_seek(cells: &[Vec<u8>], key: &CellKey<'_>) -> usize {
    cells.partition_point(|c| CellRef::new(c).compare_key(key).is_lt())
}

fn model_row_before(cells: &[Vec<u8>], row: Option<&[u8]>) -> Option<Vec<u8>> {
    let p = match row {
        Some(r) => model_seek(cells, &CellKey::first_on_row(r)),
        None => cells.len(),
    };
    (p > 0).then(|| CellRef::new(&cells[p - 1]).row().to_vec())
}

fn write_file(fs: Arc<dyn FileSystem>, path: &Path, cells: &[Vec<u8>], options: StoreFileOptions) -> StoreFileInfo {
    let mut w = StoreFileWriter::create(fs, path, options).expect("create");
    for c in cells {
        w.append(CellRef::new(c)).expect("append");
    }
    w.finish(FileMetaExtra::default()).expect("finish")
}

fn scan_all(reader: &Arc<StoreFileReader>) -> store::Result<Vec<Vec<u8>>> {
    let mut s = reader.scanner();
    s.seek_to_first()?;
    let mut out = Vec::new();
    while let Some(c) = s.current() {
        out.push(c.encoded().to_vec());
        s.advance()?;
    }
    Ok(out)
}

fn local() -> (tempfile::TempDir, Arc<dyn FileSystem>) {
    (tempfile::tempdir().expect("tempdir"), Arc::new(LocalFs))
}

// ---------------------------------------------------------------------------
// Round trips.

/// Reads everything back, seeks to many keys (in random order, then in
/// ascending order, which takes the in-block fast path), and steps back by
/// rows, all checked against the model.
fn check_reads(reader: &Arc<StoreFileReader>, cells: &[Vec<u8>], rng: &mut SmallRng) {
    assert_eq!(scan_all(reader).expect("scan"), cells, "full scan");
    let mut s = reader.scanner();
    assert!(s.current().is_none(), "a new scanner is unpositioned");
    let mut keys: Vec<Key> = (0..600).map(|_| random_key(cells, rng)).collect();
    for k in &keys {
        s.seek(&k.key()).expect("seek");
        let p = model_seek(cells, &k.key());
        for step in 0..3 {
            let want = cells.get(p + step).map(|c| c.as_slice());
            assert_eq!(s.current().map(|c| c.encoded()), want, "seek {k:?} + {step}");
            s.advance().expect("advance");
        }
    }
    keys.sort_by(|a, b| a.key().compare(&b.key()));
    let mut s = reader.scanner();
    for k in &keys {
        s.seek(&k.key()).expect("seek");
        assert_eq!(s.current().map(|c| c.encoded()), cells.get(model_seek(cells, &k.key())).map(|c| c.as_slice()));
    }
    for _ in 0..200 {
        let k = random_key(cells, rng);
        assert_eq!(s.row_before(Some(&k.row)).expect("row_before"), model_row_before(cells, Some(&k.row)), "{k:?}");
    }
    assert_eq!(s.row_before(None).expect("last row"), model_row_before(cells, None));
    // Walk the whole file backwards by rows, as a reverse scan does.
    let (mut row, mut rows) = (reader.row_before(None).expect("last"), 0);
    while let Some(r) = row {
        rows += 1;
        row = reader.row_before(Some(&r)).expect("row before");
    }
    assert_eq!(rows, reader.info().row_count);
}

fn round_trip(compression: Compression) {
    let cells = gen_cells(6000, 7);
    assert!(cells.len() > 45_000, "{} cells", cells.len());
    let (dir, fs) = local();
    let mut rng = SmallRng::seed_from_u64(compression as u64);
    for block_size in [512, 4096, 64 << 10] {
        let path = dir.path().join(format!("f-{compression}-{block_size}"));
        let opts = StoreFileOptions { block_size, compression, ..StoreFileOptions::default() };
        let info = write_file(fs.clone(), &path, &cells, opts);
        assert_eq!(info.cell_count, cells.len() as u64);
        assert_eq!(info.file_size, fs.file_size(&path).expect("size"));
        if compression != Compression::None {
            assert!(info.data_bytes_on_disk < info.data_bytes_uncompressed, "{info}");
        }
        let cache = Arc::new(BlockCache::new(1 << 20));
        let reader = StoreFileReader::open(fs.clone(), &path, 1, Some(cache)).expect("open");
        assert_eq!(reader.info(), &info, "the metadata read back is the metadata written");
        assert!(info.block_count as usize >= info.data_bytes_uncompressed as usize / block_size.max(1) / 2);
        check_reads(&reader, &cells, &mut rng);
        // Without a cache, too.
        let uncached = StoreFileReader::open(&*fs as &dyn FileSystem, &path, 2, None).expect("open");
        let all = uncached.cells().collect::<store::Result<Vec<_>>>().expect("cells");
        assert_eq!(all.len(), cells.len());
    }
}

#[test]
fn round_trip_seek_and_row_before_uncompressed() {
    round_trip(Compression::None);
}

#[test]
fn round_trip_seek_and_row_before_lz4() {
    round_trip(Compression::Lz4);
}

#[test]
fn round_trip_seek_and_row_before_zstd() {
    round_trip(Compression::Zstd);
}

#[test]
fn get_row_cells_and_cells_iterator_match_the_model() {
    let cells = gen_cells(500, 3);
    let (dir, fs) = local();
    let path = dir.path().join("f");
    write_file(fs.clone(), &path, &cells, StoreFileOptions { block_size: 1024, ..Default::default() });
    let reader = StoreFileReader::open(fs, &path, 1, None).expect("open");
    for r in [0, 3, 300, 1497, 1, 4, 100_000] {
        let row = format!("row-{r:06}");
        let want: Vec<_> =
            cells.iter().map(|c| CellRef::new(c)).filter(|c| c.row() == row.as_bytes()).map(|c| c.to_cell()).collect();
        assert_eq!(reader.get_row_cells(row.as_bytes()).expect("get"), want, "{row}");
    }
    let all: Vec<_> = reader.cells().map(|c| c.expect("cell")).collect();
    assert_eq!(all, cells.iter().map(|c| CellRef::new(c).to_cell()).collect::<Vec<_>>());
}

#[test]
fn cells_larger_than_a_block_and_empty_files() {
    let (dir, fs) = local();
    let big = vec![0xABu8; 300 << 10];
    let cells: Vec<Vec<u8>> = (0..5u32)
        .map(|i| {
            let row = format!("r{i}");
            let v = if i % 2 == 0 { &big[..] } else { b"small" };
            CellInput::put(row.as_bytes(), b"f", b"q", 1, v).to_encoded(u64::from(i))
        })
        .collect();
    let path = dir.path().join("big");
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let opts = StoreFileOptions { block_size: 4096, compression, ..Default::default() };
        let info = write_file(fs.clone(), &path, &cells, opts);
        // A block is closed once it reaches the target size: each big cell
        // ends its block (the small cells share one with the next big one).
        assert_eq!(info.block_count, 3);
        let reader = StoreFileReader::open(fs.clone(), &path, 1, None).expect("open");
        assert_eq!(scan_all(&reader).expect("scan"), cells);
    }

    let empty = dir.path().join("empty");
    let info = write_file(fs.clone(), &empty, &[], StoreFileOptions::default());
    assert_eq!((info.cell_count, info.block_count, info.first_row.clone()), (0, 0, None));
    let reader = StoreFileReader::open(fs, &empty, 1, None).expect("open");
    assert_eq!(scan_all(&reader).expect("scan"), Vec::<Vec<u8>>::new());
    let mut s = reader.scanner();
    s.seek(&CellKey::first_on_row(b"x")).expect("seek");
    assert!(s.current().is_none());
    assert_eq!(reader.row_before(None).expect("rb"), None);
    assert_eq!(reader.row_before(Some(b"x")).expect("rb"), None);
    assert!(!reader.might_contain_row(b"x"));
}

// ---------------------------------------------------------------------------
// Metadata.

#[test]
fn metadata_counts_ranges_and_extras() {
    let cells = gen_cells(800, 11);
    let (dir, fs) = local();
    let path = dir.path().join("meta");
    let opts = StoreFileOptions { compression: Compression::Lz4, bloom: BloomType::RowCol, ..Default::default() };
    let mut w = StoreFileWriter::create(fs.clone(), &path, opts).expect("create");
    for c in &cells {
        w.append(CellRef::new(c)).expect("append");
    }
    assert_eq!(w.cell_count(), cells.len() as u64);
    let extra = FileMetaExtra {
        major_compaction: true,
        compacted_from: vec!["a.sf".into(), "b.sf".into()],
        properties: [("origin".to_string(), "test".to_string())].into(),
    };
    let info = w.finish(extra.clone()).expect("finish");
    let reader = StoreFileReader::open(fs, &path, 9, None).expect("open");
    let got = reader.info();
    assert_eq!(got, &info);
    assert!(got.major_compaction());
    assert_eq!(got.extra, extra);

    let refs: Vec<CellRef<'_>> = cells.iter().map(|c| CellRef::new(c)).collect();
    let count = |t: CellType| refs.iter().filter(|c| c.cell_type() == t).count() as u64;
    let t = &got.cell_types;
    assert_eq!(t.puts, count(CellType::Put));
    assert_eq!(t.deletes, count(CellType::Delete));
    assert_eq!(t.delete_columns, count(CellType::DeleteColumn));
    assert_eq!(t.delete_families, count(CellType::DeleteFamily));
    assert_eq!(t.delete_family_versions, count(CellType::DeleteFamilyVersion));
    assert!(t.deletes > 0 && t.delete_columns > 0 && t.delete_families > 0 && t.delete_family_versions > 0);
    assert_eq!(got.min_seq_id, refs.iter().map(|c| c.seq()).min().expect("cells"));
    assert_eq!(got.max_seq_id, refs.iter().map(|c| c.seq()).max().expect("cells"));
    assert_eq!(got.min_timestamp, refs.iter().map(|c| c.timestamp()).min().expect("cells"));
    assert_eq!(got.max_timestamp, refs.iter().map(|c| c.timestamp()).max().expect("cells"));
    let earliest_put = refs.iter().filter(|c| c.cell_type() == CellType::Put).map(|c| c.timestamp()).min();
    assert_eq!(got.earliest_put_timestamp, earliest_put);
    assert_eq!(got.first_row.as_deref(), Some(refs[0].row()));
    assert_eq!(got.last_row.as_deref(), Some(refs[refs.len() - 1].row()));
    assert_eq!(got.row_count, 800);
    assert_eq!(got.cell_bytes, cells.iter().map(|c| c.len() as u64).sum::<u64>());
    let columns = refs.windows(2).filter(|w| !w[0].same_column(&w[1])).count() as u64 + 1;
    assert_eq!(got.bloom_key_count, columns);
    assert_eq!((got.compression, got.bloom_type, got.bloom_bits_per_key), (Compression::Lz4, BloomType::RowCol, 10));
    assert!(got.created_at_ms > 1_600_000_000_000);

    let report = reader.describe();
    for needle in [path.to_string_lossy().as_ref(), "LZ4", "ROWCOL", "major compaction:   true", "row-000000", "a.sf"] {
        assert!(report.contains(needle), "{needle:?} missing from:\n{report}");
    }
    assert_eq!(store::storefile::describe(&reader), report);
}

// ---------------------------------------------------------------------------
// Bloom filters.

#[test]
fn row_bloom_has_no_false_negatives_and_about_one_percent_false_positives() {
    let rows = 20_000;
    let cells: Vec<Vec<u8>> = (0..rows)
        .flat_map(|r: u32| {
            let row = format!("user{:08}", r * 2);
            [b"q1", b"q2"].map(|q| CellInput::put(row.as_bytes(), b"f", q, 5, b"v").to_encoded(1))
        })
        .collect();
    let (dir, fs) = local();
    let path = dir.path().join("bloom");
    let info = write_file(fs.clone(), &path, &cells, StoreFileOptions::default());
    assert_eq!((info.bloom_type, info.bloom_key_count), (BloomType::Row, u64::from(rows)));
    let reader = StoreFileReader::open(fs, &path, 1, None).expect("open");
    for r in 0..rows {
        assert!(reader.might_contain_row(format!("user{:08}", r * 2).as_bytes()), "false negative");
    }
    // Absent rows inside the file's key range (outside it the range check
    // answers, not the bloom).
    let probes = 100_000;
    let fp = (0..probes).filter(|&r: &u32| reader.might_contain_row(format!("user{:08}", r % rows * 2 + 1).as_bytes()));
    let rate = fp.count() as f64 / f64::from(probes);
    println!("ROW bloom, 10 bits/key: false-positive rate {:.3} %", rate * 100.0);
    assert!(rate < 0.02, "false-positive rate {rate}");
    assert!(!reader.might_contain_row(b"zzz"), "outside the key range");
    // A ROW filter answers column questions by row.
    assert!(reader.might_contain(b"user00000000", b"f", b"nope"));
}

#[test]
fn row_col_bloom_has_no_false_negatives_and_sees_family_deletes() {
    let mut cells = Vec::new();
    for r in 0..5000u32 {
        let row = format!("r{r:06}");
        if r % 100 == 0 {
            cells.push(CellInput::delete(row.as_bytes(), b"f", b"", 9, CellType::DeleteFamily).to_encoded(1));
        }
        for q in 0..3 {
            let q = format!("q{q}");
            cells.push(CellInput::put(row.as_bytes(), b"f", q.as_bytes(), 5, b"v").to_encoded(1));
        }
    }
    let (dir, fs) = local();
    let path = dir.path().join("rowcol");
    write_file(fs.clone(), &path, &cells, StoreFileOptions { bloom: BloomType::RowCol, ..Default::default() });
    let reader = StoreFileReader::open(fs, &path, 1, None).expect("open");
    for c in &cells {
        let c = CellRef::new(c);
        assert!(reader.might_contain(c.row(), c.family(), c.qualifier()), "false negative {c:?}");
    }
    // A get of any column of a row with a family delete must see this file.
    assert!(reader.might_contain(b"r000100", b"f", b"never-written"));
    assert!(reader.might_contain_row(b"r000001"), "a ROWCOL filter can't rule out rows");
    // Absent columns of rows without a family delete: two probes (the
    // column, and the family-delete key), so about twice a ROW filter's rate.
    let rows: Vec<u32> = (0..50_000u32).map(|i| i % 5000).filter(|r| r % 100 != 0).collect();
    let fp = rows.iter().filter(|r| reader.might_contain(format!("r{r:06}").as_bytes(), b"f", b"q9")).count();
    let rate = fp as f64 / rows.len() as f64;
    println!("ROWCOL bloom, 10 bits/key, file with family deletes: false-positive rate {:.3} %", rate * 100.0);
    assert!(rate < 0.03, "false-positive rate {rate}");
}

// ---------------------------------------------------------------------------
// Ordering.

#[test]
fn out_of_order_and_duplicate_appends_are_refused_without_harm() {
    let (dir, fs) = local();
    let path = dir.path().join("order");
    let mut w = StoreFileWriter::create(fs.clone(), &path, StoreFileOptions::default()).expect("create");
    let b = CellInput::put(b"b", b"f", b"q", 5, b"v").to_encoded(1);
    let a = CellInput::put(b"a", b"f", b"q", 5, b"v").to_encoded(1);
    let newer_b = CellInput::put(b"b", b"f", b"q", 6, b"v").to_encoded(1);
    let c = CellInput::put(b"c", b"f", b"q", 5, b"v").to_encoded(1);
    w.append(CellRef::new(&b)).expect("first");
    for bad in [&a, &b, &newer_b] {
        let err = w.append(CellRef::new(bad)).expect_err("out of order");
        assert!(matches!(err, StoreError::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("order"), "{err}");
    }
    w.append(CellRef::new(&c)).expect("in order again");
    w.finish(FileMetaExtra::default()).expect("finish");
    let reader = StoreFileReader::open(fs, &path, 1, None).expect("open");
    assert_eq!(scan_all(&reader).expect("scan"), vec![b, c]);
}

#[test]
fn bad_options_and_malformed_cells_are_refused() {
    let (dir, fs) = local();
    let bad = StoreFileOptions { block_size: 0, ..Default::default() };
    assert!(matches!(
        StoreFileWriter::create(fs.clone(), dir.path().join("x"), bad),
        Err(StoreError::InvalidOption { name: "block size", .. })
    ));
    let mut w = StoreFileWriter::create(fs, dir.path().join("y"), StoreFileOptions::default()).expect("create");
    let mut cell = CellInput::put(b"r", b"f", b"q", 1, b"v").to_encoded(1);
    cell.push(0);
    assert!(matches!(w.append(CellRef::new(&cell)), Err(StoreError::MalformedCell { .. })));
    w.abandon().expect("abandon");
}

// ---------------------------------------------------------------------------
// Corruption.

fn mem_file(cells: &[Vec<u8>], options: StoreFileOptions) -> (MemFs, PathBuf, Vec<u8>) {
    let fs = MemFs::default();
    let path = PathBuf::from("/mem/region/cf/0123abcd.sf");
    write_file(Arc::new(fs.clone()), &path, cells, options);
    let bytes = fs.get(&path);
    (fs, path, bytes)
}

fn assert_corruption_names_file(err: &StoreError, path: &Path) {
    assert!(matches!(err, StoreError::Corruption { .. }), "not a corruption: {err}");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

/// Opens and reads the whole file; the first error.
fn open_and_scan(fs: &MemFs, path: &Path) -> store::Result<usize> {
    let reader = StoreFileReader::open(Arc::new(fs.clone()) as Arc<dyn FileSystem>, path, 1, None)?;
    Ok(scan_all(&reader)?.len())
}

/// The trailer's section offsets, as documented in `storefile/mod.rs`.
fn sections(bytes: &[u8]) -> [u64; 7] {
    let t = &bytes[bytes.len() - 72..];
    std::array::from_fn(|i| u64::from_be_bytes(t[4 + 8 * i..12 + 8 * i].try_into().expect("8 bytes")))
}

#[test]
fn every_single_byte_corruption_is_detected_and_names_the_file() {
    let cells = gen_cells(40, 5);
    let opts = StoreFileOptions { block_size: 512, compression: Compression::Lz4, ..Default::default() };
    let (fs, path, orig) = mem_file(&cells, opts);
    let [data_end, _, bloom_len, index_offset, _, meta_offset, _] = sections(&orig);
    assert!(bloom_len > 0 && data_end > 2000, "a file with several blocks and a bloom");
    let mut failed_on_open = 0;
    for i in 0..orig.len() {
        let mut m = orig.clone();
        m[i] ^= 1 << (i % 8);
        fs.set(&path, m);
        match StoreFileReader::open(Arc::new(fs.clone()) as Arc<dyn FileSystem>, &path, 1, None) {
            Err(e) => {
                assert_corruption_names_file(&e, &path);
                failed_on_open += 1;
            }
            Ok(reader) => {
                assert!((i as u64) < data_end, "damage at {i} outside the data blocks went unnoticed on open");
                let err = scan_all(&reader).expect_err("damage in a data block is found when it is read");
                assert_corruption_names_file(&err, &path);
            }
        }
    }
    assert_eq!(failed_on_open, orig.len() - data_end as usize, "everything after the data fails on open");
    // Named sections, for the record.
    for (what, at) in [("bloom", data_end + 20), ("index", index_offset + 12), ("meta", meta_offset + 14)] {
        let mut m = orig.clone();
        m[at as usize] ^= 0xFF;
        fs.set(&path, m);
        let err = open_and_scan(&fs, &path).expect_err(what);
        assert_corruption_names_file(&err, &path);
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
}

#[test]
fn truncation_at_any_length_fails_to_open() {
    let cells = gen_cells(30, 6);
    let (fs, path, orig) = mem_file(&cells, StoreFileOptions { block_size: 256, ..Default::default() });
    for len in 0..orig.len() {
        fs.set(&path, orig[..len].to_vec());
        let err = open_and_scan(&fs, &path).expect_err("truncated");
        assert_corruption_names_file(&err, &path);
    }
    fs.set(&path, orig.clone());
    assert_eq!(open_and_scan(&fs, &path).expect("whole file"), cells.len());
    // A file with extra bytes appended is not ours either.
    fs.set(&path, [orig.as_slice(), b"junk"].concat());
    assert_corruption_names_file(&open_and_scan(&fs, &path).expect_err("appended"), &path);
}

/// A block frame with a valid checksum around `payload`.
fn frame(kind: u8, compression: u8, uncompressed_len: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![kind, compression];
    f.extend_from_slice(&uncompressed_len.to_be_bytes());
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(payload);
    let crc = crc32c::crc32c(&f);
    f.extend_from_slice(&crc.to_be_bytes());
    f
}

/// A trailer with a valid checksum over the given sections.
fn trailer(data_end: u64, bloom_len: u64, index_len: u64, meta_len: u64) -> Vec<u8> {
    let mut t = 1u32.to_be_bytes().to_vec();
    let index_offset = data_end + bloom_len;
    let meta_offset = index_offset + index_len;
    for v in [data_end, data_end, bloom_len, index_offset, index_len, meta_offset, meta_len] {
        t.extend_from_slice(&v.to_be_bytes());
    }
    let crc = crc32c::crc32c(&t);
    t.extend_from_slice(&crc.to_be_bytes());
    t.extend_from_slice(b"ACCSTF01");
    t
}

fn random_bytes(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let mut v = vec![0u8; rng.random_range(0..max)];
    rng.fill(&mut v[..]);
    v
}

#[test]
fn random_and_crafted_garbage_never_panics() {
    let fs = MemFs::default();
    let path = PathBuf::from("/mem/garbage.sf");
    let mut rng = SmallRng::seed_from_u64(99);
    for round in 0..3000 {
        let bytes = match round % 4 {
            // Plain noise.
            0 => random_bytes(&mut rng, 4096),
            // Noise ending in our magic.
            1 => [random_bytes(&mut rng, 200), b"ACCSTF01".to_vec()].concat(),
            // A valid trailer over noise sections.
            2 => {
                let (d, b, i, m) = (
                    rng.random_range(0..300),
                    rng.random_range(0..100),
                    rng.random_range(14..100),
                    rng.random_range(14..100),
                );
                let mut body = vec![0u8; (d + b + i + m) as usize];
                rng.fill(&mut body[..]);
                [body, trailer(d, b, i, m)].concat()
            }
            // Valid frames (right checksums) around noise payloads: the
            // parsers of every section see garbage.
            _ => {
                let data = frame(b'D', rng.random_range(0..3), rng.random_range(0..5000), &random_bytes(&mut rng, 300));
                let bloom = frame(b'B', 0, 0, &random_bytes(&mut rng, 100));
                let index = if rng.random_bool(0.5) {
                    frame(b'I', 0, 0, &random_bytes(&mut rng, 100))
                } else {
                    // One block covering the data, with a random key.
                    let mut p = 1u32.to_be_bytes().to_vec();
                    p.extend_from_slice(&0u64.to_be_bytes());
                    p.extend_from_slice(&(data.len() as u32).to_be_bytes());
                    let key = random_bytes(&mut rng, 40);
                    p.extend_from_slice(&(key.len() as u32).to_be_bytes());
                    p.extend_from_slice(&key);
                    p.extend_from_slice(&(key.len() as u32).to_be_bytes());
                    p.extend_from_slice(&key);
                    frame(b'I', 0, p.len() as u32, &p)
                };
                let meta_json = random_bytes(&mut rng, 60);
                let meta = frame(b'M', 0, meta_json.len() as u32, &meta_json);
                let t = trailer(data.len() as u64, bloom.len() as u64, index.len() as u64, meta.len() as u64);
                [data, bloom, index, meta, t].concat()
            }
        };
        fs.set(&path, bytes);
        let err = open_and_scan(&fs, &path).expect_err("garbage is never a store file");
        assert_corruption_names_file(&err, &path);
    }
}

#[test]
fn data_blocks_with_valid_checksums_but_bad_contents_are_corruption() {
    let cells = gen_cells(40, 8);
    let (fs, path, orig) = mem_file(&cells, StoreFileOptions { block_size: 1 << 20, ..Default::default() });
    let [data_end, ..] = sections(&orig);
    let payload_len = u32::from_be_bytes(orig[6..10].try_into().expect("4 bytes")) as usize;
    assert_eq!(payload_len + 14, data_end as usize, "one block");
    let payload = orig[10..10 + payload_len].to_vec();
    let mut rng = SmallRng::seed_from_u64(4);
    for round in 0..500 {
        let mut p = payload.clone();
        match round % 3 {
            0 => {
                let i = rng.random_range(0..p.len());
                p[i] = rng.random();
            }
            1 => rng.fill(&mut p[..]),
            _ => {
                // Overwrite a run of bytes: lengths, keys or order break.
                let a = rng.random_range(0..p.len() / 2);
                p[a..a + 8].copy_from_slice(&[0xEE; 8]);
            }
        }
        if p == payload {
            continue;
        }
        let block = frame(b'D', 0, p.len() as u32, &p);
        fs.set(&path, [block.as_slice(), &orig[data_end as usize..]].concat());
        match open_and_scan(&fs, &path) {
            Err(e) => assert_corruption_names_file(&e, &path),
            // A change inside a value that keeps every length and key intact
            // is invisible without the original checksum; that's expected.
            Ok(n) => assert_eq!(n, cells.len()),
        }
    }
}

// ---------------------------------------------------------------------------
// Block cache.

#[test]
fn block_cache_hits_on_the_second_scan_and_honours_its_capacity() {
    let cells = gen_cells(2000, 12);
    let (dir, fs) = local();
    let path = dir.path().join("cached");
    let info = write_file(fs.clone(), &path, &cells, StoreFileOptions { block_size: 4096, ..Default::default() });
    let blocks = info.block_count;
    assert!(blocks > 50, "{blocks} blocks");

    let cache = Arc::new(BlockCache::new(64 << 20));
    let reader = StoreFileReader::open(fs.clone(), &path, 1, Some(cache.clone())).expect("open");
    scan_all(&reader).expect("first scan");
    let s = cache.stats();
    assert_eq!((s.misses, s.hits, s.inserts, s.count), (blocks, 0, blocks, blocks), "{s:?}");
    scan_all(&reader).expect("second scan");
    let s = cache.stats();
    assert_eq!((s.misses, s.hits), (blocks, blocks), "the second scan is served from the cache: {s:?}");
    assert!(s.bytes as usize >= info.data_bytes_uncompressed as usize);

    // An uncached scanner (compactions) uses but does not fill the cache.
    let other = StoreFileReader::open(fs.clone(), &path, 2, Some(cache.clone())).expect("open");
    let mut sc = other.scanner_uncached();
    sc.seek_to_first().expect("seek");
    while sc.current().is_some() {
        sc.advance().expect("advance");
    }
    assert_eq!(cache.stats().count, blocks, "file 2's blocks were not cached");
    assert_eq!(cache.evict_file(1), blocks as usize);
    assert_eq!(cache.stats().bytes, 0);

    // A small cache: many reads, never over capacity, evicting as it goes.
    let capacity = 40 << 10;
    let small = Arc::new(BlockCache::new(capacity));
    let reader = StoreFileReader::open(fs, &path, 3, Some(small.clone())).expect("open");
    let mut rng = SmallRng::seed_from_u64(1);
    let mut s = reader.scanner();
    for _ in 0..3000 {
        let k = random_key(&cells, &mut rng);
        s.seek(&k.key()).expect("seek");
        assert!(small.stats().bytes <= capacity);
    }
    for _ in 0..2 {
        assert_eq!(scan_all(&reader).expect("scan"), cells);
    }
    let st = small.stats();
    assert!(st.bytes <= capacity && st.count > 0 && st.evictions > 0 && st.hits > 0, "{st:?}");
    assert!(st.count < 15, "about capacity / block size blocks: {st:?}");
}

#[test]
fn readers_share_a_cache_across_threads() {
    let cells = Arc::new(gen_cells(1500, 13));
    let (dir, fs) = local();
    let path = dir.path().join("shared");
    write_file(fs.clone(), &path, &cells, StoreFileOptions { block_size: 2048, ..Default::default() });
    let cache = Arc::new(BlockCache::new(256 << 10));
    let reader = StoreFileReader::open(fs, &path, 1, Some(cache.clone())).expect("open");
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (reader, cells) = (reader.clone(), cells.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                let mut s = reader.scanner();
                for _ in 0..1500 {
                    let k = random_key(&cells, &mut rng);
                    s.seek(&k.key()).expect("seek");
                    let want = cells.get(model_seek(&cells, &k.key())).map(|c| c.as_slice());
                    assert_eq!(s.current().map(|c| c.encoded()), want);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("reader thread");
    }
    let s = cache.stats();
    assert!(s.hits > 0 && s.bytes <= s.capacity, "{s:?}");
}

// ---------------------------------------------------------------------------
// I/O failures while writing.

fn faulty() -> (tempfile::TempDir, FaultInjectingFs) {
    let dir = tempfile::tempdir().expect("tempdir");
    (dir, FaultInjectingFs::new(Arc::new(LocalFs)))
}

#[test]
fn a_failed_write_or_fsync_in_finish_is_returned_and_leaves_no_file() {
    let cells = gen_cells(200, 14);
    // One data block, so every append happens inside `finish`: the data
    // block, bloom, index, meta and trailer are appends 0..5.
    let opts = StoreFileOptions { block_size: 1 << 20, ..Default::default() };
    for (kind, skip) in [
        (FaultKind::Write, 0),
        (FaultKind::Write, 1),
        (FaultKind::Write, 2),
        (FaultKind::Write, 3),
        (FaultKind::Write, 4),
        (FaultKind::Sync, 0),
    ] {
        let (dir, fs) = faulty();
        let path = dir.path().join("faulty.sf.tmp");
        let mut w = StoreFileWriter::create(Arc::new(fs.clone()), &path, opts).expect("create");
        for c in &cells {
            w.append(CellRef::new(c)).expect("append");
        }
        fs.fail(kind, "faulty", skip, 1);
        let err = w.finish(FileMetaExtra::default()).expect_err("injected failure");
        assert!(matches!(err, StoreError::Io { .. }), "{kind:?}/{skip}: {err}");
        assert_eq!(fs.injected(), 1);
        assert!(!fs.exists(&path).expect("exists"), "{kind:?}/{skip}: the partial file was removed");
    }
}

#[test]
fn a_failed_append_poisons_the_writer_and_abandon_removes_the_file() {
    let cells = gen_cells(300, 15);
    let (dir, fs) = faulty();
    let path = dir.path().join("faulty.sf.tmp");
    let opts = StoreFileOptions { block_size: 512, ..Default::default() };
    let mut w = StoreFileWriter::create(Arc::new(fs.clone()), &path, opts).expect("create");
    fs.fail(FaultKind::Write, "faulty", 3, 1);
    let mut iter = cells.iter();
    let err = iter.by_ref().map(|c| w.append(CellRef::new(c))).find_map(Result::err).expect("a write fails");
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    let next = iter.next().expect("more cells");
    assert!(matches!(w.append(CellRef::new(next)), Err(StoreError::InvalidArgument(_))), "the writer is failed");
    assert!(fs.exists(&path).expect("exists"));
    w.abandon().expect("abandon");
    assert!(!fs.exists(&path).expect("exists"));

    // Running out of space is reported as such.
    let path = dir.path().join("full.sf");
    let mut w = StoreFileWriter::create(Arc::new(fs.clone()), &path, opts).expect("create");
    fs.set_space_left(2000);
    let err = cells.iter().map(|c| w.append(CellRef::new(c))).find_map(Result::err).expect("disk full");
    assert!(err.is_disk_full(), "{err}");
    w.abandon().expect("abandon");
    fs.heal();
}

#[test]
fn a_finished_file_survives_a_power_loss() {
    let cells = gen_cells(300, 16);
    let (dir, fs) = faulty();
    // Its bytes are durable when `finish` returns; its name once its
    // directory is synced (a store's manifest commit does that).
    let lost = dir.path().join("unlisted.sf");
    write_file(Arc::new(fs.clone()), &lost, &cells, StoreFileOptions::default());
    fs.drop_unsynced().expect("power loss");
    assert!(!fs.exists(&lost).expect("exists"), "a file whose directory was not synced is gone");
    let path = dir.path().join("durable.sf");
    write_file(Arc::new(fs.clone()), &path, &cells, StoreFileOptions::default());
    fs.sync_dir(dir.path()).expect("sync dir");
    fs.drop_unsynced().expect("power loss");
    let reader = StoreFileReader::open(Arc::new(fs) as Arc<dyn FileSystem>, &path, 1, None).expect("open");
    assert_eq!(scan_all(&reader).expect("scan"), cells);
}
