//! Crash recovery with real process kills: the `crash-writer` child writes
//! to a store (SyncWal, three pre-split regions that keep splitting, three
//! families, background flushes and compactions, small WAL files) and
//! prints a line for every acknowledged write; the test SIGKILLs it at
//! random moments — after a random number of acknowledgements, right after
//! it is ready, and during its recovery at start — at least 24 times on the
//! same directory, so that recovery of an interrupted recovery is exercised
//! too. After every kill a copy of the directory is opened in-process and
//! checked, and after every round of kills the directory itself:
//!
//! - every acknowledged write is there with exactly the cells it wrote (for
//!   each row, the state written by its highest acknowledged operation, or
//!   by a higher one that was in flight at the kill);
//! - a write in flight at the kill may be there or not, but whole (row
//!   atomicity: every cell of a row comes from one operation, a family
//!   delete and the put of the same mutation go together);
//! - acknowledged increments are neither lost nor applied twice (each
//!   acknowledged value is the previous one plus one, across kills);
//! - no row appears that was never written, and a scan agrees with gets;
//! - once a kill's outcome has been observed it never changes (recovery is
//!   deterministic and nothing resurfaces later).
//!
//! The same kills run a second time with the writer in batch mode: every
//! operation is one `mutate_rows` batch of 5–20 rows over the regions of a
//! pre-split table, with a tiny flush size and tiny WAL files so that
//! flushes, WAL rolls and WAL archiving run all the time. On top of the
//! checks above (which hold row by row for every row of an acknowledged
//! batch: all of them are there, each with the cells of its batch or of a
//! later write), a row the store must refuse — puts to family `a` and `b`
//! around a put to a family the table does not have — is acknowledged only
//! if the batch failed with that refusal, and must never show a cell.
//!
//! `CRASH_SEED=<n>` replays a run's kill schedule.

#[path = "common/mini_hdfs.rs"]
#[expect(dead_code, reason = "this test starts the cluster and reads its URI only")]
mod mini_hdfs;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use store::testing::copy_dir;
use store::{Get, Scan, Store, StoreOptions};

const TABLE: &str = "crash";
const THREADS: u64 = 4;
/// Single-row mode: rounds of kills, and the most acknowledgements before a
/// kill.
const ROUNDS: usize = 4;
const KILLS_PER_ROUND: usize = 6;
const MAX_ACKS: u64 = 2000;
/// Batch mode: the same, an acknowledgement being a batch of 5–20 rows.
const BATCH_ROUNDS: usize = 3;
const BATCH_MAX_ACKS: u64 = 200;
/// Qualifiers `q0..` of families `a` and `b` (as in crash_writer.rs).
const A_CELLS: usize = 3;
const B_CELLS: usize = 2;
/// How long the child may stay silent before the test calls it stuck.
const STALL: Duration = Duration::from_secs(30);

// ------------------------------------------- the writer's data, restated

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Must match `cell_value` in src/bin/crash_writer.rs.
fn cell_value(row: &str, op: u64, family: &str, i: usize) -> Vec<u8> {
    let mut v = format!("{row}|{op}|{family}{i}|").into_bytes();
    let len = 24 + (mix(op.wrapping_mul(31).wrapping_add(i as u64)) % 180) as usize;
    v.extend((0..len).map(|j| b'a' + ((op as usize + j) % 26) as u8));
    v
}

// ------------------------------------------------------------ the model

/// What a data row holds: the operation whose cells are in family `a`, and
/// in family `b` (`None`: no cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct RowState {
    a: Option<u64>,
    b: Option<u64>,
}

/// The row state operation `n` of `kind` leaves behind (every kind sets
/// every family of the row, at timestamp `n + 1`).
fn state_of(kind: &str, n: u64) -> RowState {
    match kind {
        "put" => RowState { a: Some(n), b: Some(n) },
        "del" => RowState { a: None, b: None },
        "delb" => RowState { a: Some(n), b: None },
        other => panic!("unknown operation kind {other:?}"),
    }
}

/// A data row: its known state, then the operations acknowledged or in
/// flight since it was known. The row holds the state of the highest
/// operation applied to it (timestamps are operation numbers).
#[derive(Debug, Default)]
struct DataRow {
    base: RowState,
    acked: Option<(u64, RowState)>,
    inflight: Vec<(u64, RowState)>,
}

impl DataRow {
    fn possible(&self) -> Vec<RowState> {
        let mut v = match self.acked {
            Some((m, s)) => {
                let mut v = vec![s];
                v.extend(self.inflight.iter().filter(|(x, _)| *x > m).map(|(_, s)| *s));
                v
            }
            None => {
                let mut v = vec![self.base];
                v.extend(self.inflight.iter().map(|(_, s)| *s));
                v
            }
        };
        v.dedup();
        v
    }

    fn settle(&mut self, observed: RowState) {
        *self = DataRow { base: observed, ..DataRow::default() };
    }
}

/// A counter row: its known value and the increments in flight since.
#[derive(Debug, Default)]
struct Counter {
    known: i64,
    inflight: i64,
}

#[derive(Debug, Default)]
struct Model {
    rows: BTreeMap<String, DataRow>,
    counters: BTreeMap<String, Counter>,
    /// The first operation number no child has used.
    next_op: u64,
    /// Acknowledged operations (a batch counts once)...
    acks: u64,
    /// ... and rows of acknowledged batches (the refused ones included).
    batch_rows: u64,
}

/// The rows operation `n` writes, each with its kind, from its `begin` line:
/// one row, or for a batch the list `<kind>:<row>,...`.
fn rows_of(n: u64, kind: &str, row: &str) -> Result<Vec<(String, String)>, String> {
    if kind != "batch" {
        if !["put", "del", "delb", "inc"].contains(&kind) {
            return Err(format!("operation {n} has the unknown kind {kind:?}"));
        }
        return Ok(vec![(kind.to_string(), row.to_string())]);
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    for item in row.split(',') {
        match item.split_once(':') {
            Some((kind @ ("put" | "del" | "delb" | "bad"), row)) if !row.is_empty() => {
                if rows.iter().any(|(_, r)| r == row) {
                    return Err(format!("batch {n} lists row {row} twice"));
                }
                rows.push((kind.to_string(), row.to_string()));
            }
            _ => return Err(format!("batch {n}: bad row {item:?}")),
        }
    }
    Ok(rows)
}

impl Model {
    /// Operation `n`, writing `rows`, was acknowledged.
    fn ack(&mut self, n: u64, rows: &[(String, String)], value: Option<i64>) -> Result<(), String> {
        self.acks += 1;
        if rows.len() > 1 || rows.iter().any(|(kind, _)| kind == "bad") {
            self.batch_rows += rows.len() as u64;
        }
        for (kind, row) in rows {
            self.ack_row(n, kind, row, value)?;
        }
        Ok(())
    }

    fn ack_row(&mut self, n: u64, kind: &str, row: &str, value: Option<i64>) -> Result<(), String> {
        if kind == "bad" {
            // Refused: the row must keep whatever it held.
            self.rows.entry(row.to_string()).or_default();
        } else if kind == "inc" {
            let v = value.ok_or_else(|| format!("increment {n} acknowledged without its value"))?;
            let c = self.counters.entry(row.to_string()).or_default();
            if v < c.known + 1 || v > c.known + 1 + c.inflight {
                return Err(format!(
                    "increment {n} of {row} returned {v}, but the counter was {} (+{} in flight): an acknowledged \
                     increment was lost or applied twice",
                    c.known, c.inflight
                ));
            }
            *c = Counter { known: v, inflight: 0 };
        } else {
            let r = self.rows.entry(row.to_string()).or_default();
            if r.acked.is_none_or(|(m, _)| n > m) {
                r.acked = Some((n, state_of(kind, n)));
            }
        }
        Ok(())
    }

    fn in_flight(&mut self, n: u64, kind: &str, row: &str) {
        if kind == "bad" {
            self.rows.entry(row.to_string()).or_default();
        } else if kind == "inc" {
            self.counters.entry(row.to_string()).or_default().inflight += 1;
        } else {
            self.rows.entry(row.to_string()).or_default().inflight.push((n, state_of(kind, n)));
        }
    }
}

// ------------------------------------------------------- the child runs

#[derive(Debug, Clone, Copy)]
enum Kill {
    /// This long after the start, whatever the child is doing (usually
    /// recovering).
    Early(Duration),
    /// Once this many writes were acknowledged (0: as soon as it is ready).
    AfterAcks(u64),
}

/// How the child writes (`crash-writer`'s last argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One row per operation, and increments.
    Single,
    /// `mutate_rows` batches over many regions, tiny flushes and WAL files.
    Batch,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::Batch => "batch",
        }
    }
}

#[derive(Debug)]
struct RunOutcome {
    ready: bool,
    acks: u64,
    in_flight: usize,
    /// Merges the writer's background thread completed.
    merges: usize,
}

/// Runs the child on `dir` until `kill` says, SIGKILLs it, and feeds every
/// line it printed into `model`.
fn run_child(root: &str, mode: Mode, model: &mut Model, kill: Kill) -> Result<RunOutcome, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
        .arg(root)
        .arg(model.next_op.to_string())
        .arg(THREADS.to_string())
        .arg(mode.arg())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn crash-writer: {e}"))?;
    let stdout = child.stdout.take().ok_or("the child has no stdout")?;
    let mut stderr = child.stderr.take().ok_or("the child has no stderr")?;
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                // A line cut short by the kill was never written whole:
                // what it announced did not happen yet.
                Ok(_) if line.last() == Some(&b'\n') => {
                    line.pop();
                    if tx.send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });

    let mut begun: HashMap<u64, Vec<(String, String)>> = HashMap::new();
    let mut outcome = RunOutcome { ready: false, acks: 0, in_flight: 0, merges: 0 };
    let mut error = None;
    let mut handle = |line: String, model: &mut Model, outcome: &mut RunOutcome| -> Result<(), String> {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["ready"] => outcome.ready = true,
            ["merged"] => outcome.merges += 1,
            ["begin", n, kind, row] => {
                let n: u64 = n.parse().map_err(|_| format!("bad line {line:?}"))?;
                if (*kind == "batch") != (mode == Mode::Batch) {
                    return Err(format!("operation {n} of kind {kind} from a {mode:?} writer"));
                }
                begun.insert(n, rows_of(n, kind, row)?);
                model.next_op = model.next_op.max(n + 1);
            }
            ["ack", n, rest @ ..] => {
                let n: u64 = n.parse().map_err(|_| format!("bad line {line:?}"))?;
                let value = rest.first().map(|v| v.parse::<i64>()).transpose().map_err(|_| format!("bad {line:?}"))?;
                let rows = begun.remove(&n).ok_or_else(|| format!("ack of {n} before its begin"))?;
                model.ack(n, &rows, value)?;
                outcome.acks += 1;
            }
            _ => return Err(format!("the writer reported: {line}")),
        }
        Ok(())
    };

    let start = Instant::now();
    match kill {
        Kill::Early(delay) => std::thread::sleep(delay),
        Kill::AfterAcks(target) => loop {
            if outcome.ready && outcome.acks >= target {
                break;
            }
            match rx.recv_timeout(STALL) {
                Ok(line) => {
                    if let Err(e) = handle(line, model, &mut outcome) {
                        error = Some(e);
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    error = Some(format!("the writer was silent for {STALL:?} ({} acks so far)", outcome.acks));
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    error = Some(format!("the writer exited by itself after {:?}", start.elapsed()));
                    break;
                }
            }
        },
    }
    // SIGKILL on Unix. It fails only if the child was already reaped.
    let _ = child.kill();
    let status = child.wait().map_err(|e| format!("wait for the writer: {e}"))?;
    // Everything printed before the kill is still in the pipe.
    for line in rx.iter() {
        if let Err(e) = handle(line, model, &mut outcome) {
            error.get_or_insert(e);
        }
    }
    reader.join().map_err(|_| "the stdout reader panicked".to_string())?;
    let stderr = stderr_reader.join().map_err(|_| "the stderr reader panicked".to_string())?;
    if let Some(e) = error {
        return Err(format!("{e} (exit status {status}; stderr: {stderr:?})"));
    }
    outcome.in_flight = begun.len();
    for (n, rows) in begun {
        for (kind, row) in rows {
            model.in_flight(n, &kind, &row);
        }
    }
    Ok(outcome)
}

// --------------------------------------------------------- verification

fn verify_options() -> StoreOptions {
    StoreOptions { background: false, memory_budget: 256 << 20, ..StoreOptions::default() }
}

/// The state of a data row from its cells; an error if any cell is not
/// exactly what some operation wrote, or the row is not whole.
fn parse_row(row: &str, cells: &[memstore::Cell]) -> Result<RowState, String> {
    let mut state = RowState::default();
    for (family, count, slot) in [("a", A_CELLS, &mut state.a), ("b", B_CELLS, &mut state.b)] {
        let mine: Vec<_> = cells.iter().filter(|c| c.family == family.as_bytes()).collect();
        if mine.is_empty() {
            continue;
        }
        let op_of = |c: &memstore::Cell| -> Option<u64> {
            let v = std::str::from_utf8(&c.value).ok()?;
            v.split('|').nth(1)?.parse().ok()
        };
        let op = op_of(mine[0]).ok_or_else(|| format!("row {row}: unreadable cell {:?}", mine[0]))?;
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            (0..count).map(|i| (format!("q{i}").into_bytes(), cell_value(row, op, family, i))).collect();
        let got: Vec<(Vec<u8>, Vec<u8>)> = mine.iter().map(|c| (c.qualifier.to_vec(), c.value.to_vec())).collect();
        if got != expected {
            let ops: Vec<Option<u64>> = mine.iter().map(|c| op_of(c)).collect();
            return Err(format!(
                "row {row} family {family} is not whole: {} cells from operations {ops:?}, expected the {count} \
                 cells of operation {op}",
                mine.len()
            ));
        }
        *slot = Some(op);
    }
    if let Some(c) = cells.iter().find(|c| c.family != b"a"[..] && c.family != b"b"[..]) {
        return Err(format!("data row {row} has a cell of family {:?}", String::from_utf8_lossy(&c.family)));
    }
    Ok(state)
}

fn key_of(c: &memstore::Cell) -> (Vec<u8>, Vec<u8>, u64, Vec<u8>) {
    (c.family.to_vec(), c.qualifier.to_vec(), c.timestamp, c.value.to_vec())
}

/// Checks `store` against `model`; with `settle`, what was observed becomes
/// the known state (later checks must agree with it).
fn verify(store: &Store, model: &mut Model, settle: bool) -> Result<(), String> {
    let err = |what: &str, e: store::StoreError| format!("{what}: {e}");
    let mut scanned: BTreeMap<String, Vec<memstore::Cell>> = BTreeMap::new();
    for row in store.scan(TABLE, Scan::default()).map_err(|e| err("scan", e))? {
        let cells = row.map_err(|e| err("scan", e))?;
        let key = String::from_utf8_lossy(&cells[0].row).into_owned();
        if scanned.insert(key.clone(), cells).is_some() {
            return Err(format!("the scan returned row {key} twice"));
        }
    }
    for key in scanned.keys() {
        if !model.rows.contains_key(key) && !model.counters.contains_key(key) {
            return Err(format!("row {key} exists but was never written"));
        }
    }
    let read = |key: &str| -> Result<Vec<memstore::Cell>, String> {
        let cells = store.get(TABLE, &Get::new(key.as_bytes())).map_err(|e| err(&format!("get {key}"), e))?;
        let from_scan: Vec<_> = scanned.get(key).map(|c| c.iter().map(key_of).collect()).unwrap_or_default();
        if cells.iter().map(key_of).collect::<Vec<_>>() != from_scan {
            return Err(format!("get and scan disagree on row {key}"));
        }
        Ok(cells)
    };
    for (key, r) in model.rows.iter_mut() {
        let state = parse_row(key, &read(key)?)?;
        let possible = r.possible();
        if !possible.contains(&state) {
            return Err(format!(
                "row {key} holds {state:?}; an acknowledged write is missing or a lost one resurfaced (possible: \
                 {possible:?}, model {r:?})"
            ));
        }
        if settle {
            r.settle(state);
        }
    }
    for (key, c) in model.counters.iter_mut() {
        let cells = read(key)?;
        let v = match cells.as_slice() {
            [] => 0,
            [cell] if cell.family == b"c"[..] && cell.qualifier == b"n"[..] => {
                i64::from_be_bytes(cell.value.as_ref().try_into().map_err(|_| format!("counter {key}: bad value"))?)
            }
            _ => return Err(format!("counter row {key} has unexpected cells: {cells:?}")),
        };
        if v < c.known || v > c.known + c.inflight {
            return Err(format!(
                "counter {key} is {v}, expected {} (+ up to {} in flight): acknowledged increments are lost or \
                 repeated",
                c.known, c.inflight
            ));
        }
        if settle {
            *c = Counter { known: v, inflight: 0 };
        }
    }
    Ok(())
}

/// Opens `dir` in-process and checks it (settling the model).
/// Opens (recovers) the store at `root`, a local directory or a URI.
fn open_root(root: &str) -> Result<Store, String> {
    let (fs, dir) = store::fs::resolve_root(root).map_err(|e| format!("{root}: {e}"))?;
    Store::open(dir, StoreOptions { fs, ..verify_options() }).map_err(|e| format!("recovery failed: {e}"))
}

fn open_and_verify(root: &str, model: &mut Model) -> Result<Option<Store>, String> {
    let store = open_root(root)?;
    if !store.list_tables().iter().any(|t| t == TABLE) {
        if model.acks > 0 {
            return Err("the table is gone".to_string());
        }
        return Ok(None);
    }
    verify(&store, model, true)?;
    Ok(Some(store))
}

/// Checks a copy of `dir`, leaving `dir` itself as the kill left it.
fn verify_copy(dir: &Path, scratch: &Path, model: &mut Model) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(scratch);
    copy_dir(dir, scratch).map_err(|e| format!("copy {}: {e}", dir.display()))?;
    let result = open_and_verify(&scratch.display().to_string(), model).map(drop);
    let _ = std::fs::remove_dir_all(scratch);
    result
}

fn files_named(dir: &Path, pred: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_named(&path, pred, out);
        } else if pred(&entry.file_name().to_string_lossy()) {
            out.push(path);
        }
    }
}

// ----------------------------------------------------------------- test

/// Fails the test, keeping the store directory for a post-mortem.
fn fail(what: String, tmp: tempfile::TempDir, seed: u64) -> ! {
    let kept = tmp.keep();
    panic!("{what}\n(seed CRASH_SEED={seed}; the store is kept in {})", kept.display());
}

fn crash_seed() -> u64 {
    std::env::var("CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64)
    })
}

/// What a campaign of kills did.
#[derive(Debug)]
struct Summary {
    kills: usize,
    acks: u64,
    batch_rows: u64,
    regions: usize,
    archived: usize,
    store_files: usize,
}

/// Runs the writer in `mode` on one directory and kills it `rounds` times
/// `KILLS_PER_ROUND` times (a kill once up to `max_acks` operations were
/// acknowledged, or during recovery, or right after it), checking a copy of
/// the directory after every kill and the directory itself after every
/// round, then a last recovery, a clean close and a reopen.
/// Where the writer's store lives.
#[derive(Debug, Clone, Copy)]
enum Place<'a> {
    /// A local directory: a copy of it is checked after every kill, so the
    /// next writer recovers exactly what the kill left.
    Local,
    /// Under this HDFS URI (`hdfs://host:port`): checked in place after
    /// every kill (no copy), and dropped without a close, so the next writer
    /// recovers from a crash again.
    Hdfs(&'a str),
}

fn kill_and_recover(mode: Mode, rounds: usize, max_acks: u64) -> Summary {
    kill_and_recover_at(Place::Local, mode, rounds, max_acks)
}

fn kill_and_recover_at(place: Place<'_>, mode: Mode, rounds: usize, max_acks: u64) -> Summary {
    let seed = crash_seed();
    eprintln!("crash test ({mode:?}, {place:?}) seed: CRASH_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let scratch = tmp.path().join("copy");
    let root = match place {
        Place::Local => dir.display().to_string(),
        Place::Hdfs(uri) => format!("{uri}/crash-{seed}"),
    };
    let mut model = Model::default();
    let started = Instant::now();
    let (mut kills, mut during_recovery, mut in_flight, mut merges) = (0, 0, 0, 0);

    for round in 0..rounds {
        for k in 0..KILLS_PER_ROUND {
            let kill = match k {
                // Kill the recovery of what the previous kill left.
                1 | 4 => Kill::Early(Duration::from_millis(rng.random_range(0..60))),
                // Right after recovery, as the writers start.
                2 => Kill::AfterAcks(rng.random_range(0..3)),
                _ => Kill::AfterAcks(rng.random_range(1..max_acks)),
            };
            let outcome = match run_child(&root, mode, &mut model, kill) {
                Ok(o) => o,
                Err(e) => fail(format!("round {round}, kill {k} ({kill:?}): {e}"), tmp, seed),
            };
            kills += 1;
            during_recovery += usize::from(!outcome.ready);
            in_flight += outcome.in_flight;
            merges += outcome.merges;
            let checked = match place {
                Place::Local => verify_copy(&dir, &scratch, &mut model),
                Place::Hdfs(_) => open_and_verify(&root, &mut model).map(drop),
            };
            if let Err(e) = checked {
                fail(format!("after round {round}, kill {k} ({kill:?}, {outcome:?}): {e}"), tmp, seed);
            }
        }
        // The directory itself, recovered in-process, then handed back to
        // the next round's writer.
        match open_and_verify(&root, &mut model) {
            Ok(Some(store)) => {
                if let Err(e) = store.close() {
                    fail(format!("close after round {round}: {e}"), tmp, seed);
                }
            }
            Ok(None) => {}
            Err(e) => fail(format!("in-process check after round {round}: {e}"), tmp, seed),
        }
    }

    // A last recovery, a clean close, and a reopen that must agree.
    let store = match open_and_verify(&root, &mut model) {
        Ok(Some(store)) => store,
        Ok(None) => fail("the table was never created".to_string(), tmp, seed),
        Err(e) => fail(format!("final check: {e}"), tmp, seed),
    };
    let regions = store.table_regions(TABLE).expect("regions").len();
    store.close().expect("close");
    let store = match open_root(&root) {
        Ok(store) => store,
        Err(e) => fail(format!("reopen after a clean close: {e}"), tmp, seed),
    };
    if let Err(e) = verify(&store, &mut model, false) {
        fail(format!("after a clean close: {e}"), tmp, seed);
    }
    drop(store);

    // Counted on local disk (on HDFS the test does not list files).
    let mut archived = Vec::new();
    files_named(&dir.join(store::wal::ARCHIVE_DIR), &|n| n.ends_with(".log"), &mut archived);
    let mut store_files = Vec::new();
    files_named(&dir.join("data"), &|n| n.ends_with(".sf"), &mut store_files);
    eprintln!(
        "{mode:?} ({place:?}): {kills} kills ({during_recovery} before the writer was ready, {in_flight} writes in flight), {} \
         acknowledged operations ({} rows of batches), {} rows, {regions} regions ({merges} merges), {} archived \
         WAL files, {} store files, {:?}",
        model.acks,
        model.batch_rows,
        model.rows.len() + model.counters.len(),
        archived.len(),
        store_files.len(),
        started.elapsed()
    );
    Summary {
        kills,
        acks: model.acks,
        batch_rows: model.batch_rows,
        regions,
        archived: archived.len(),
        store_files: store_files.len(),
    }
}

#[test]
fn acknowledged_writes_survive_repeated_kills_and_interrupted_recoveries() {
    let s = kill_and_recover(Mode::Single, ROUNDS, MAX_ACKS);
    assert!(s.kills >= 20);
    assert!(s.acks > 1000, "the writer made progress: {} acks", s.acks);
    assert!(s.archived > 0, "WAL files rolled and were archived during the run");
    assert!(s.regions > 3, "regions split during the run ({} regions)", s.regions);
}

/// The batch writer: every acknowledged batch is whole after every kill
/// (each of its rows holds its cells or a later write's), a refused row of a
/// batch never shows, while flushes, WAL rolls, WAL archiving and splits run
/// all the time.
#[test]
fn acknowledged_batches_survive_repeated_kills_with_constant_flushes_and_wal_rolls() {
    let s = kill_and_recover(Mode::Batch, BATCH_ROUNDS, BATCH_MAX_ACKS);
    assert!(s.kills >= 18);
    assert!(s.acks > 200, "the writer made progress: {} batches", s.acks);
    assert!(s.batch_rows >= 5 * s.acks, "batches of 5 rows or more: {s:?}");
    assert!(s.archived > 20, "WAL files rolled and were archived all the time: {s:?}");
    assert!(s.store_files > 6, "regions flushed: {s:?}");
    assert!(s.regions > 6, "regions split during the run: {s:?}");
    // Merges (printed in the summary line) happen in most runs but depend on timing; their
    // crash windows are tested deterministically in tests/merge.rs.
}

// ------------------------------------------- a split's parent removal

/// The crash windows of the last step of a split: the split has committed
/// (its `.split` marker is written), the daughters serve and take
/// acknowledged writes, and the parent's directory is being removed
/// (`remove_dir_all`) when the process dies. Whatever part of the parent's
/// directory is left, recovery must keep the daughters and their writes.
#[test]
fn a_crash_while_removing_a_split_parent_loses_nothing() {
    use store::wal::Durability;
    use store::{FamilyDescriptor, TableDescriptor};

    // A committed split renames the parent's directory to `.trash-<name>`
    // (atomically) and then deletes it; a crash can leave that directory
    // with nothing in it (just before its rmdir) or its .regioninfo alone.
    // (Before the fix the parent was deleted in place, so the same leftovers
    // sat under the parent's own name and recovery took the daughters for
    // orphans of an uncommitted split.)
    let mut failures = Vec::new();
    for leftover in ["an empty directory", "only its .regioninfo"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("store");
        let store = Store::open(&dir, verify_options()).expect("open");
        let mut desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]);
        desc.durability = Durability::SyncWal;
        store.create_table(desc, &[]).expect("create");
        let put = |row: &str, v: &str| store.put("t", row.as_bytes(), &[(b"f", b"q", v.as_bytes())], None);
        for i in 0..100 {
            put(&format!("a{i:03}"), "before").expect("put");
        }
        let parent = store.table_regions("t").expect("regions").remove(0);
        let parent_dir = dir.join("data").join("default").join("t").join(parent.dir_name());
        let region_info = std::fs::read(parent_dir.join(".regioninfo")).expect("read .regioninfo");
        assert!(store.split_region("t", b"a000", Some(b"a050")).expect("split"), "the split committed");
        assert!(parent_dir.exists(), "the daughters read the parent's files through references");
        // Compacting the daughters rewrites the references; then the parent goes.
        store.compact_table("t", false).expect("compact");
        assert!(!parent_dir.exists(), "the parent's directory is gone once no daughter refers to it");
        // Acknowledged writes to the daughters, only in the WAL.
        for i in (0..100).step_by(3) {
            put(&format!("a{i:03}"), "after").expect("put");
        }
        drop(store); // the crash

        let trash_dir = parent_dir.with_file_name(format!(".trash-{}", parent.dir_name()));
        std::fs::create_dir(&trash_dir).expect("recreate the half-removed parent");
        if leftover == "only its .regioninfo" {
            std::fs::write(trash_dir.join(".regioninfo"), &region_info).expect("write .regioninfo");
        }
        let store = Store::open(&dir, verify_options()).expect("recovery");
        let wrong: Vec<String> = (0..100)
            .filter_map(|i| {
                let row = format!("a{i:03}");
                let want: &[u8] = if i % 3 == 0 { b"after" } else { b"before" };
                let got = store.get("t", &Get::new(row.as_bytes()));
                let got = got.as_ref().map(|cells| cells.first().map(|c| String::from_utf8_lossy(&c.value)));
                let ok = matches!(&got, Ok(Some(v)) if v.as_bytes() == want);
                (!ok).then(|| format!("{row}: {got:?}"))
            })
            .collect();
        if !wrong.is_empty() {
            failures.push(format!("parent left as {leftover}: {} of 100 rows wrong, e.g. {:?}", wrong.len(), wrong[0]));
        }
        assert!(!trash_dir.exists(), "recovery removes the half-removed parent");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The single-row writer on a real HDFS (a MiniDFSCluster with 3
/// DataNodes): SIGKILLs of the writer, also during its recovery, each
/// followed by a recovery in-process that recovers the WAL files' leases
/// first; nothing acknowledged is lost. Two rounds (the cluster is slower
/// than local disk). Ignored by default: `.ci/run` runs it.
#[test]
#[ignore = "starts a MiniDFSCluster (Java, Maven): cargo test -p store --test crash -- --ignored"]
fn acknowledged_writes_survive_repeated_kills_on_hdfs() {
    let cluster = mini_hdfs::MiniHdfs::start();
    let s = kill_and_recover_at(Place::Hdfs(&cluster.uri), Mode::Single, 2, MAX_ACKS / 2);
    assert!(s.acks > 300, "the writer made progress on HDFS: {} acks", s.acks);
}
