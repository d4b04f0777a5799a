//! `run`: drives an engine with a workload from T client threads. Threads
//! take the next operation index from one shared counter; writes are
//! buffered per thread and sent when the buffer passes `batch_bytes` (YCSB's
//! client-side write buffer, 10 KB by default; 1 byte sends each row
//! alone); gets and scans go out one by one. Latencies go into
//! HdrHistograms per operation type — a write's latency is that of the
//! batch it was sent in, as a buffered client sees it.
//!
//! A rate limit (`write_rate`, rows per second over all threads) holds the
//! writers to a fixed schedule so that every engine and policy is measured
//! under the same load: operation `i` is due `(i + 1) / rate` seconds after
//! the start, and a batch goes out no earlier than its last row is due
//! ([`Pacer`]). The limit only delays; an engine slower than the rate runs
//! at its own speed. It counts operations, so it is a row rate for the
//! write-only workloads the writers run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::BenchError;
use crate::engine::Engine;
use crate::workload::{OpKind, Workload};

/// What a run measured.
pub struct DriverResult {
    /// Operations done: rows written, gets and scans (fewer than the
    /// workload's when a reader-under-writes run stops its writers).
    pub ops: u64,
    pub seconds: f64,
    pub put_latency_us: Histogram<u64>,
    pub get_latency_us: Histogram<u64>,
    pub scan_latency_us: Histogram<u64>,
    pub rows_found: u64,
    /// Rows the scans returned.
    pub rows_scanned: u64,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// The schedule of a rate-limited run (module doc).
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    start: Instant,
    ops_per_sec: f64,
}

impl Pacer {
    /// A schedule starting now; `ops_per_sec` must be positive and finite.
    pub fn new(ops_per_sec: f64) -> Result<Pacer, BenchError> {
        if !(ops_per_sec.is_finite() && ops_per_sec > 0.0) {
            return Err(BenchError::Invalid(format!("--write-rate must be positive, got {ops_per_sec}")));
        }
        Ok(Pacer { start: Instant::now(), ops_per_sec })
    }

    /// When operation `i` is due, after the start.
    pub fn due(&self, i: u64) -> Duration {
        Duration::from_secs_f64((i + 1) as f64 / self.ops_per_sec)
    }

    /// Sleeps until operation `i` is due (at once if it is).
    pub fn wait(&self, i: u64) {
        let due = self.start + self.due(i);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

/// Runs `workload` against `engine` with `threads` clients, the writes held
/// to `write_rate` rows per second in total if given.
pub fn run(
    engine: &dyn Engine,
    workload: &Workload,
    threads: usize,
    batch_bytes: usize,
    write_rate: Option<f64>,
) -> Result<DriverResult, BenchError> {
    run_until(engine, workload, threads, batch_bytes, write_rate, None)
}

/// [`run`], ending early once `stop` is set (the clients send what they
/// buffered and quit).
fn run_until(
    engine: &dyn Engine,
    workload: &Workload,
    threads: usize,
    batch_bytes: usize,
    write_rate: Option<f64>,
    stop: Option<&AtomicBool>,
) -> Result<DriverResult, BenchError> {
    workload.validate()?;
    let keys = workload.key_source();
    let next = AtomicU64::new(0);
    let found = AtomicU64::new(0);
    let scanned = AtomicU64::new(0);
    let done_ops = AtomicU64::new(0);
    let value = vec![b'v'; workload.value_size];
    let puts = Mutex::new(histogram());
    let gets = Mutex::new(histogram());
    let scans = Mutex::new(histogram());
    let first_error: Mutex<Option<BenchError>> = Mutex::new(None);
    let pacer = write_rate.map(Pacer::new).transpose()?;
    crate::progress::start(workload.ops);
    // The schedule and the measured time start at the same instant. The
    // pacer was made before the key source once, so a rate-limited run's
    // seconds missed that setup and it could report itself faster than its
    // rate (0.142 s for a 0.15 s schedule in one CI run).
    let start = pacer.map_or_else(Instant::now, |p| p.start);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let (mut my_puts, mut my_gets, mut my_scans) = (histogram(), histogram(), histogram());
                let mut my_ops = 0u64;
                let mut buffer: Vec<[u8; 32]> = Vec::new();
                let mut lens: Vec<usize> = Vec::new();
                let mut buffered = 0usize;
                // The buffer's last (highest) operation index.
                let mut last = 0u64;
                let flush = |buffer: &mut Vec<[u8; 32]>, lens: &mut Vec<usize>, last: u64, h: &mut Histogram<u64>| {
                    if buffer.is_empty() {
                        return Ok(());
                    }
                    if let Some(p) = &pacer {
                        p.wait(last);
                    }
                    let rows: Vec<&[u8]> = buffer.iter().zip(lens.iter()).map(|(k, &n)| &k[..n]).collect();
                    let t = Instant::now();
                    let r = engine.write_rows(&rows, &value, workload.fields);
                    let _ = h.record((t.elapsed().as_micros() as u64).max(1));
                    crate::progress::add(rows.len() as u64);
                    buffer.clear();
                    lens.clear();
                    r
                };
                let result = (|| -> Result<(), BenchError> {
                    loop {
                        let stopped = stop.is_some_and(|s| s.load(Ordering::Relaxed));
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= workload.ops || stopped || first_error.lock().is_some() {
                            break;
                        }
                        my_ops += 1;
                        let mut key = [0u8; 32];
                        match workload.op_kind(i) {
                            OpKind::Read => {
                                let n = keys.key(i, &mut key);
                                let t = Instant::now();
                                if engine.read_row(&key[..n])? {
                                    found.fetch_add(1, Ordering::Relaxed);
                                }
                                let _ = my_gets.record((t.elapsed().as_micros() as u64).max(1));
                                crate::progress::add(1);
                                continue;
                            }
                            OpKind::Scan(limit) => {
                                let n = keys.key(i, &mut key);
                                let t = Instant::now();
                                let rows = engine.scan_rows(&key[..n], limit as usize, &mut |_| {})?;
                                let _ = my_scans.record((t.elapsed().as_micros() as u64).max(1));
                                scanned.fetch_add(rows as u64, Ordering::Relaxed);
                                crate::progress::add(1);
                                continue;
                            }
                            OpKind::Write => {}
                        }
                        let n = keys.write_key(i, &mut key);
                        buffer.push(key);
                        lens.push(n);
                        last = i;
                        buffered += n + workload.row_value_bytes();
                        if buffered >= batch_bytes {
                            flush(&mut buffer, &mut lens, last, &mut my_puts)?;
                            buffered = 0;
                        }
                    }
                    flush(&mut buffer, &mut lens, last, &mut my_puts)
                })();
                if let Err(e) = result {
                    first_error.lock().get_or_insert(e);
                }
                done_ops.fetch_add(my_ops, Ordering::Relaxed);
                puts.lock().add(&my_puts).expect("same histogram bounds");
                gets.lock().add(&my_gets).expect("same histogram bounds");
                scans.lock().add(&my_scans).expect("same histogram bounds");
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    Ok(DriverResult {
        ops: done_ops.into_inner(),
        seconds,
        put_latency_us: puts.into_inner(),
        get_latency_us: gets.into_inner(),
        scan_latency_us: scans.into_inner(),
        rows_found: found.load(Ordering::Relaxed),
        rows_scanned: scanned.into_inner(),
    })
}

/// Runs one reader thread doing `reads`' gets (its `ops` keys, one by one,
/// unthrottled) while `writer_threads` clients write `writes` (held to
/// `write_rate` rows per second if given); the writers stop when the reader
/// is done, so that every engine's reader does the same gets under the same
/// write rate (the paper's read-latency-under-background-writes
/// experiment). The reader's latencies are the result's get histogram; its
/// operations count the rows written and the gets.
pub fn run_reader_under_writes(
    engine: &dyn Engine,
    writes: &Workload,
    writer_threads: usize,
    batch_bytes: usize,
    write_rate: Option<f64>,
    reads: &Workload,
) -> Result<DriverResult, BenchError> {
    reads.validate()?;
    let done = AtomicBool::new(false);
    let reader_keys = reads.key_source();
    let start = Instant::now();
    let (write_result, read_result) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| -> Result<(Histogram<u64>, u64), BenchError> {
            // Tells the writers to stop however the reader ends.
            struct Done<'a>(&'a AtomicBool);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let _done = Done(&done);
            let mut h = histogram();
            let mut found = 0u64;
            for i in 0..reads.ops {
                let mut key = [0u8; 32];
                let n = reader_keys.key(i, &mut key);
                let t = Instant::now();
                if engine.read_row(&key[..n])? {
                    found += 1;
                }
                let _ = h.record((t.elapsed().as_micros() as u64).max(1));
            }
            Ok((h, found))
        });
        let w = run_until(engine, writes, writer_threads, batch_bytes, write_rate, Some(&done));
        (w, reader.join().expect("reader thread"))
    });
    let mut result = write_result?;
    let (gets, found) = read_result?;
    // The phase lasts until both the reader and the writers are done.
    result.seconds = start.elapsed().as_secs_f64();
    result.ops += gets.len();
    result.get_latency_us = gets;
    result.rows_found = found;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineCounters;
    use crate::workload::KeyDist;

    /// Counts rows and notes, after each batch, the rows written so far and
    /// when.
    struct Recorder {
        start: Instant,
        rows: AtomicU64,
        batches: Mutex<Vec<(u64, Duration)>>,
    }

    impl Engine for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }
        fn write_rows(&self, keys: &[&[u8]], _value: &[u8], _fields: usize) -> Result<(), BenchError> {
            let mut b = self.batches.lock();
            let total = self.rows.fetch_add(keys.len() as u64, Ordering::Relaxed) + keys.len() as u64;
            b.push((total, self.start.elapsed()));
            Ok(())
        }
        fn read_row(&self, _key: &[u8]) -> Result<bool, BenchError> {
            Ok(true)
        }
        fn counters(&self) -> EngineCounters {
            EngineCounters::default()
        }
        fn finish(&self) -> Result<(), BenchError> {
            Ok(())
        }
    }

    fn writes(ops: u64) -> Workload {
        Workload {
            key_space: 1000,
            dist: KeyDist::Uniform,
            fields: 4,
            value_size: 25,
            ops,
            seed: 3,
            ..Workload::default()
        }
    }

    #[test]
    fn the_schedule_spaces_operations_at_the_rate() {
        let p = Pacer::new(1000.0).expect("valid rate");
        assert_eq!(p.due(0), Duration::from_millis(1));
        assert_eq!(p.due(999), Duration::from_secs(1));
        assert_eq!(p.due(4_999), Duration::from_secs(5));
        for bad in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert!(Pacer::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rate_limited_run_never_runs_ahead_of_its_rate() {
        let (ops, rate) = (3_000u64, 20_000.0);
        let engine = Recorder { start: Instant::now(), rows: AtomicU64::new(0), batches: Mutex::new(Vec::new()) };
        let r = run(&engine, &writes(ops), 4, 10 * 1024, Some(rate)).expect("runs");
        assert_eq!(engine.rows.load(Ordering::Relaxed), ops);
        // The last row is due ops / rate after the start, and the measured
        // time starts with the schedule: the run cannot be shorter (to a
        // microsecond's rounding); the generous upper bound only catches a
        // stuck schedule.
        let floor = ops as f64 / rate;
        assert!(r.seconds >= floor - 1e-6, "{} s for a {floor} s schedule", r.seconds);
        assert!(r.seconds < floor + 5.0, "{} s", r.seconds);
        // At every batch, the rows written so far were all due by then.
        for &(rows, at) in engine.batches.lock().iter() {
            assert!(rows as f64 <= rate * at.as_secs_f64() + 1.0, "{rows} rows after {at:?}");
        }
        // Unlimited, the same run does not wait for a schedule.
        assert!(run(&engine, &writes(ops), 4, 10 * 1024, None).is_ok());
        assert!(run(&engine, &writes(ops), 4, 10 * 1024, Some(0.0)).is_err());
    }
    /// Counts rows written, gets and scans; a scan returns `limit` rows.
    #[derive(Default)]
    struct Counter {
        rows: AtomicU64,
        gets: AtomicU64,
        scans: AtomicU64,
    }

    impl Engine for Counter {
        fn name(&self) -> &str {
            "counter"
        }
        fn write_rows(&self, keys: &[&[u8]], _value: &[u8], _fields: usize) -> Result<(), BenchError> {
            self.rows.fetch_add(keys.len() as u64, Ordering::Relaxed);
            Ok(())
        }
        fn read_row(&self, _key: &[u8]) -> Result<bool, BenchError> {
            self.gets.fetch_add(1, Ordering::Relaxed);
            Ok(true)
        }
        fn scan_rows(&self, start: &[u8], limit: usize, each: &mut dyn FnMut(&[u8])) -> Result<usize, BenchError> {
            self.scans.fetch_add(1, Ordering::Relaxed);
            (0..limit).for_each(|_| each(start));
            Ok(limit)
        }
        fn counters(&self) -> EngineCounters {
            EngineCounters::default()
        }
        fn finish(&self) -> Result<(), BenchError> {
            Ok(())
        }
    }

    /// The writers' operations are a ceiling they never reach here (a
    /// billion rows): the run ends because the reader's gets are done.
    #[test]
    fn the_writers_stop_when_the_reader_is_done() {
        let engine = Counter::default();
        let reads = Workload { dist: KeyDist::Zipfian, ops: 5_000, read_ratio: 1.0, ..writes(1) };
        let r = run_reader_under_writes(&engine, &writes(1_000_000_000), 3, 1024, None, &reads).expect("runs");
        assert_eq!(engine.gets.load(Ordering::Relaxed), 5_000);
        assert_eq!(r.get_latency_us.len(), 5_000);
        let rows = engine.rows.load(Ordering::Relaxed);
        assert!(rows < 1_000_000_000);
        assert_eq!(r.ops, rows + 5_000, "the rows written and the gets");
        assert!(run_reader_under_writes(&engine, &writes(10), 1, 1024, None, &Workload { ops: 0, ..reads }).is_err());
    }

    #[test]
    fn scans_gets_and_writes_each_have_their_latencies() {
        let engine = Counter::default();
        let w = Workload { ops: 2_000, read_ratio: 0.5, scan_ratio: 0.25, inserts: true, ..writes(1) };
        let r = run(&engine, &w, 2, 1, None).expect("runs");
        let (gets, scans, rows) = (
            engine.gets.load(Ordering::Relaxed),
            engine.scans.load(Ordering::Relaxed),
            engine.rows.load(Ordering::Relaxed),
        );
        assert_eq!(gets + scans + rows, 2_000);
        assert_eq!((r.get_latency_us.len(), r.scan_latency_us.len(), r.put_latency_us.len()), (gets, scans, rows));
        assert!(gets > 800 && scans > 350 && rows > 350, "{gets} {scans} {rows}");
        let expected: u64 =
            (0..w.ops).filter_map(|i| if let OpKind::Scan(n) = w.op_kind(i) { Some(n) } else { None }).sum();
        assert_eq!(r.rows_scanned, expected);
        assert_eq!(r.ops, 2_000);
        // An engine that cannot scan fails the run instead of skipping scans.
        let recorder = Recorder { start: Instant::now(), rows: AtomicU64::new(0), batches: Mutex::new(Vec::new()) };
        assert!(matches!(run(&recorder, &w, 1, 1, None), Err(BenchError::Unsupported { .. })));
    }
}
