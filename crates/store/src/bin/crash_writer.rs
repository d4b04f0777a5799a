//! `crash-writer`: the child process of `tests/crash.rs`. It opens (and so
//! recovers) a store in the directory given on the command line, with
//! background flushes and compactions, a small flush size, small WAL files
//! and a small maximum region size, so that flushes, compactions, WAL rolls,
//! WAL archiving and region splits all happen while it runs; then it writes
//! until it is killed.
//!
//! Usage: `crash-writer <root> <first-op> <threads> [single|batch]`, the
//! root a local directory or a URI (`hdfs://host:port/path`).
//!
//! Besides the writers, a thread splits a random region every few hundred
//! milliseconds (up to 16 regions) and, once there are eight or more, at
//! random one time in two compacts a random region and its right
//! neighbour and merges them instead (a pair that a split or merge changed
//! meanwhile is refused and skipped).
//!
//! In `batch` mode (the mode must stay the same for a directory) the table
//! is pre-split into six regions, the flush size and WAL files are tiny (a
//! flush every few dozen rows of a region, a WAL roll every few batches, so
//! flushes, rolls and WAL archiving never stop), and every operation is one
//! `mutate_rows` batch of 5–20 distinct data rows (see `batch`): spread over
//! the whole table or within a few neighbouring regions, each row a put, a
//! row delete or a family delete plus put, all at the timestamp `n + 1`.
//! During one run a data row belongs to one writer thread (row index ≡
//! thread mod threads), so its writes are applied in operation order. One
//! batch in twelve also carries a row that mixes puts to family `a` with a
//! put to a family the table does not have: the store must refuse that row
//! whole, apply the others and return the refusal — the writer acknowledges
//! such a batch only if the call failed with exactly that refusal.
//!
//! Writer thread `t` runs operations `first + t + threads * i`. An operation
//! `n` is derived from `n` alone (see `op`): a multi-cell put to a data row,
//! a row delete, a family delete plus put in one atomic mutation, or an
//! increment of a counter row that only thread `t` touches during this run.
//! Puts and deletes carry the timestamp `n + 1`, so that the state of a data
//! row is the state written by the highest-numbered operation applied to it,
//! whatever order they were applied in.
//!
//! Protocol on stdout (one line per `write`, flushed at once):
//! - `ready`: the store is open (recovered) and the table exists;
//! - `begin <n> <kind> <row>` before operation `n` is handed to the store
//!   (`kind` is `put`, `del`, `delb` or `inc`); for a batch
//!   `begin <n> batch <kind>:<row>,<kind>:<row>,...` with the kinds `put`,
//!   `del`, `delb`, and `bad` for the row that must be refused;
//! - `ack <n>` (or `ack <n> <value>` for an increment: the new value) once
//!   the store acknowledged it;
//! - `error <n> <message>` if the store refused it (the process then exits
//!   with status 3: the test treats any error as a failure).
//!
//! The contents of a cell are `cell_value(row, n, family, i)`; the test has
//! its own copy of that function.

use std::io::Write;

use store::jobs::compaction::policy::CompactionConfig;
use store::region::Mutation;
use store::wal::{Durability, WalOptions};
use store::{FamilyDescriptor, MutationRef, RowMutations, Store, StoreError, StoreOptions, TableDescriptor};

const TABLE: &str = "crash";
/// Data rows `r00000` .. `r02399`.
const DATA_ROWS: u64 = 2400;
/// Counter rows, `r<300 * j>~ctr`: spread over the pre-split regions.
const COUNTERS: u64 = 8;
/// Qualifiers `q0..` written in family `a` and in family `b`.
const A_CELLS: usize = 3;
const B_CELLS: usize = 2;
/// Stop (cleanly) after this many operations per run; the test always kills
/// the process long before.
const MAX_OPS_PER_RUN: u64 = 200_000;
/// Rows per batch: `MIN_BATCH..=MAX_BATCH` (plus the refused row, if any).
const MIN_BATCH: u64 = 5;
const MAX_BATCH: u64 = 20;
/// A family the table does not have (the refused row of a batch).
const MISSING_FAMILY: &str = "zz";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One row per operation, and increments.
    Single,
    /// `mutate_rows` batches.
    Batch,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The value of cell `i` of `family` written by operation `op` to `row`.
fn cell_value(row: &str, op: u64, family: &str, i: usize) -> Vec<u8> {
    let mut v = format!("{row}|{op}|{family}{i}|").into_bytes();
    let len = 24 + (mix(op.wrapping_mul(31).wrapping_add(i as u64)) % 180) as usize;
    v.extend((0..len).map(|j| b'a' + ((op as usize + j) % 26) as u8));
    v
}

enum Op {
    /// Every cell of families `a` and `b`.
    Put(String),
    /// The whole row.
    Delete(String),
    /// Family `b` deleted and every cell of `a` put, in one mutation.
    DeleteBPutA(String),
    /// +1 on the counter row.
    Increment(String),
}

fn op(n: u64, thread: u64, threads: u64) -> Op {
    let h = mix(n ^ 0x00C0_FFEE);
    let row = format!("r{:05}", (h >> 8) % DATA_ROWS);
    match h % 100 {
        0..62 => Op::Put(row),
        62..74 => Op::Delete(row),
        74..86 => Op::DeleteBPutA(row),
        _ => {
            // Counter j belongs to thread j % threads during this run, so
            // that the increments of one counter are sequential.
            let per_thread = (COUNTERS / threads).max(1);
            let j = (thread + threads * ((h >> 40) % per_thread)) % COUNTERS;
            Op::Increment(format!("r{:05}~ctr", j * 300))
        }
    }
}

fn puts(row: &str, n: u64, family: &str, cells: usize) -> Vec<Mutation> {
    (0..cells)
        .map(|i| Mutation::Put {
            family: family.as_bytes().to_vec(),
            qualifier: format!("q{i}").into_bytes(),
            timestamp: Some(n + 1),
            value: cell_value(row, n, family, i),
        })
        .collect()
}

/// The rows of batch `n` of `thread`: distinct data rows of that thread,
/// each with its kind, and the refused row last (if there is one). Every
/// third batch takes its rows from a window of about 600 rows (a few
/// neighbouring regions), the others from the whole table.
fn batch(n: u64, thread: u64, threads: u64) -> Vec<(&'static str, String)> {
    let h = mix(n ^ 0x00BA_7C4E);
    let count = MIN_BATCH + h % (MAX_BATCH - MIN_BATCH + 1);
    let refused = (h >> 12).is_multiple_of(12);
    // Row indexes `thread + threads * j` for `j` in `first..first + span`.
    let owned = DATA_ROWS.div_ceil(threads);
    let (first, span) = if (h >> 8).is_multiple_of(3) {
        let span = (600 / threads).clamp(MAX_BATCH + 1, owned);
        ((h >> 20) % (owned - span + 1), span)
    } else {
        (0, owned)
    };
    let mut rows: Vec<(&'static str, String)> = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    let want = count + u64::from(refused);
    for attempt in 0u64.. {
        if used.len() as u64 == want || attempt > 1000 {
            break;
        }
        let index = thread + threads * (first + mix(h ^ attempt.wrapping_mul(0x51ED)) % span);
        if index >= DATA_ROWS || !used.insert(index) {
            continue;
        }
        let row = format!("r{index:05}");
        let kind = if refused && used.len() as u64 == want {
            "bad"
        } else {
            match mix(h ^ index) % 100 {
                0..70 => "put",
                70..85 => "del",
                _ => "delb",
            }
        };
        rows.push((kind, row));
    }
    rows
}

/// The mutations of one row of a batch (see `batch`).
fn batch_row(kind: &str, row: &str, n: u64) -> Vec<Mutation> {
    match kind {
        "put" => {
            let mut m = puts(row, n, "a", A_CELLS);
            m.extend(puts(row, n, "b", B_CELLS));
            m
        }
        "del" => vec![Mutation::DeleteRow { timestamp: Some(n + 1) }],
        "delb" => {
            let mut m = vec![Mutation::DeleteFamily { family: b"b".to_vec(), timestamp: Some(n + 1) }];
            m.extend(puts(row, n, "a", A_CELLS));
            m
        }
        "bad" => {
            // Valid puts around the invalid one: none of them may land.
            let mut m = puts(row, n, "a", 1);
            m.extend(puts(row, n, MISSING_FAMILY, 1));
            m.extend(puts(row, n, "b", 1));
            m
        }
        other => unreachable!("batch row kind {other}"),
    }
}

fn run_batch(store: &Store, n: u64, thread: u64, threads: u64) -> Result<(), String> {
    let rows = batch(n, thread, threads);
    let listed: Vec<String> = rows.iter().map(|(kind, row)| format!("{kind}:{row}")).collect();
    let mutations: Vec<Vec<Mutation>> = rows.iter().map(|(kind, row)| batch_row(kind, row, n)).collect();
    let refs: Vec<Vec<MutationRef<'_>>> = mutations.iter().map(|m| m.iter().map(Mutation::as_ref).collect()).collect();
    let batch: Vec<RowMutations<'_>> =
        rows.iter().zip(&refs).map(|((_, row), m)| RowMutations { row: row.as_bytes(), mutations: m }).collect();
    let refused = rows.iter().any(|(kind, _)| *kind == "bad");
    say(format!("begin {n} batch {}", listed.join(",")));
    match store.mutate_rows(TABLE, &batch, None) {
        Ok(()) if !refused => {}
        Ok(()) => return Err("the store accepted a row with a put to a missing family".to_string()),
        // The refused row is the batch's last, so the error of any other
        // row would come first: this one means the others went in.
        Err(StoreError::NoSuchFamily { family, .. }) if refused && family == MISSING_FAMILY => {}
        Err(e) => return Err(e.to_string()),
    }
    say(format!("ack {n}"));
    Ok(())
}

fn say(line: String) {
    let mut line = line.into_bytes();
    line.push(b'\n');
    let mut lock = std::io::stdout().lock();
    // One write per line: a line is either wholly in the pipe or not at all.
    if lock.write_all(&line).and_then(|()| lock.flush()).is_err() {
        std::process::exit(4); // the test is gone
    }
}

fn run(store: &Store, n: u64, thread: u64, threads: u64) -> Result<(), String> {
    let err = |e: store::StoreError| e.to_string();
    match op(n, thread, threads) {
        Op::Put(row) => {
            say(format!("begin {n} put {row}"));
            let mut m = puts(&row, n, "a", A_CELLS);
            m.extend(puts(&row, n, "b", B_CELLS));
            store.mutate_row(TABLE, row.as_bytes(), &m, None).map_err(err)?;
            say(format!("ack {n}"));
        }
        Op::Delete(row) => {
            say(format!("begin {n} del {row}"));
            store
                .mutate_row(TABLE, row.as_bytes(), &[Mutation::DeleteRow { timestamp: Some(n + 1) }], None)
                .map_err(err)?;
            say(format!("ack {n}"));
        }
        Op::DeleteBPutA(row) => {
            say(format!("begin {n} delb {row}"));
            let mut m = vec![Mutation::DeleteFamily { family: b"b".to_vec(), timestamp: Some(n + 1) }];
            m.extend(puts(&row, n, "a", A_CELLS));
            store.mutate_row(TABLE, row.as_bytes(), &m, None).map_err(err)?;
            say(format!("ack {n}"));
        }
        Op::Increment(row) => {
            say(format!("begin {n} inc {row}"));
            let v = store.increment(TABLE, row.as_bytes(), b"c", b"n", 1).map_err(err)?;
            say(format!("ack {n} {v}"));
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = match args.get(4).map(String::as_str) {
        _ if !(4..=5).contains(&args.len()) => None,
        None | Some("single") => Some(Mode::Single),
        Some("batch") => Some(Mode::Batch),
        Some(_) => None,
    };
    let Some(mode) = mode else {
        eprintln!("usage: crash-writer <root> <first-op> <threads> [single|batch]");
        std::process::exit(2);
    };
    let dir = &args[1];
    let first: u64 = args[2].parse().expect("first-op is a number");
    let threads: u64 = args[3].parse().expect("threads is a number");
    assert!(threads > 0, "at least one writer thread");

    // Batch mode: a flush every ~40 KiB of a region's edits, a new WAL file
    // every ~16 KiB (a few batches), and few WAL files before the regions
    // pinning the oldest are flushed.
    let (flush_size, roll_size, max_logs) = match mode {
        Mode::Single => (256 << 10, 192 << 10, 6),
        Mode::Batch => (40 << 10, 16 << 10, 4),
    };
    let options = StoreOptions {
        region_flush_size: flush_size,
        memory_budget: 256 << 20,
        wal: WalOptions { roll_size, ..WalOptions::default() },
        max_logs,
        compaction: CompactionConfig {
            min_files: 3,
            blocking_store_files: 12,
            blocking_wait_ms: 500,
            ..CompactionConfig::default()
        },
        background: true,
        ..StoreOptions::default()
    };
    let (fs, path) = store::fs::resolve_root(dir).unwrap_or_else(|e| {
        eprintln!("crash-writer: {dir}: {e}");
        std::process::exit(3);
    });
    let options = StoreOptions { fs, ..options };
    let store = Store::open(&path, options).unwrap_or_else(|e| {
        eprintln!("crash-writer: open {dir}: {e}");
        std::process::exit(3);
    });
    if !store.list_tables().iter().any(|t| t == TABLE) {
        let families = ["a", "b", "c"].iter().map(|f| FamilyDescriptor::new(*f)).collect();
        let mut desc = TableDescriptor::new(TABLE, families);
        desc.durability = Durability::SyncWal;
        desc.max_region_size = 256 << 10;
        let split_keys: &[&str] = match mode {
            Mode::Single => &["r00800", "r01600"],
            Mode::Batch => &["r00400", "r00800", "r01200", "r01600", "r02000"],
        };
        let split_keys: Vec<Vec<u8>> = split_keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        if let Err(e) = store.create_table(desc, &split_keys) {
            eprintln!("crash-writer: create table: {e}");
            std::process::exit(3);
        }
    }
    say("ready".to_string());

    // Splits on top of the automatic ones (which need a region's files to
    // pass the maximum size right after a background flush), so that every
    // run has splits in flight when it is killed.
    {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0u64.. {
                std::thread::sleep(std::time::Duration::from_millis(100 + mix(first ^ i) % 300));
                let regions = store.table_regions(TABLE).unwrap_or_default();
                if regions.len() >= 8 && (mix(first ^ i) >> 8).is_multiple_of(2) {
                    let at = (mix(first ^ i) % (regions.len() as u64 - 1)) as usize;
                    // Compact the pair's references away first (a region
                    // fresh from a split cannot merge).
                    for r in &regions[at..=at + 1] {
                        if let Err(e) = store.compact_region(TABLE, &r.start_key, false) {
                            say(format!("error compaction {e}"));
                            std::process::exit(3);
                        }
                    }
                    match store.merge_regions(&regions[at].dir_name(), &regions[at + 1].dir_name()) {
                        // References not compacted yet, or a region split
                        // or merged automatically meanwhile.
                        Ok(_) => say("merged".to_string()),
                        Err(
                            StoreError::MergeRefused { .. }
                            | StoreError::UnknownRegion(_)
                            | StoreError::NotServingRegion { .. },
                        ) => {}
                        Err(e) => {
                            say(format!("error merge {e}"));
                            std::process::exit(3);
                        }
                    }
                    continue;
                }
                if regions.len() >= 16 {
                    continue;
                }
                let row = format!("r{:05}", mix(first.wrapping_add(i)) % DATA_ROWS);
                if let Err(e) = store.split_region(TABLE, row.as_bytes(), None) {
                    say(format!("error split {e}"));
                    std::process::exit(3);
                }
            }
        });
    }
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..MAX_OPS_PER_RUN / threads {
                    let n = first + t + threads * i;
                    let result = match mode {
                        Mode::Single => run(&store, n, t, threads),
                        Mode::Batch => run_batch(&store, n, t, threads),
                    };
                    if let Err(e) = result {
                        say(format!("error {n} {e}"));
                        std::process::exit(3);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer thread");
    }
    store.close().expect("close");
}
