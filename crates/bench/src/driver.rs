//! `run`: drives an engine with a workload from T client threads. Threads
//! take the next operation index from one shared counter; writes are
//! buffered per thread and sent when the buffer passes `batch_bytes` (YCSB's
//! client-side write buffer, 10 KB by default); reads go out one by one.
//! Latencies go into HdrHistograms per operation type — a write's latency is
//! that of the batch it was sent in, as a buffered client sees it.
//!
//! A rate limit (`write_rate`, rows per second over all threads) holds the
//! writers to a fixed schedule so that every engine and policy is measured
//! under the same load: operation `i` is due `(i + 1) / rate` seconds after
//! the start, and a batch goes out no earlier than its last row is due
//! ([`Pacer`]). The limit only delays; an engine slower than the rate runs
//! at its own speed. It counts operations, so it is a row rate for the
//! write-only workloads the writers run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::BenchError;
use crate::engine::Engine;
use crate::workload::Workload;

/// What a run measured.
pub struct DriverResult {
    pub ops: u64,
    pub seconds: f64,
    pub put_latency_us: Histogram<u64>,
    pub get_latency_us: Histogram<u64>,
    pub rows_found: u64,
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
    workload.validate()?;
    let pacer = write_rate.map(Pacer::new).transpose()?;
    let keys = workload.key_source();
    let next = AtomicU64::new(0);
    let found = AtomicU64::new(0);
    let value = vec![b'v'; workload.value_size];
    let puts = Mutex::new(histogram());
    let gets = Mutex::new(histogram());
    let first_error: Mutex<Option<BenchError>> = Mutex::new(None);
    crate::progress::start(workload.ops);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let (mut my_puts, mut my_gets) = (histogram(), histogram());
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
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= workload.ops || first_error.lock().is_some() {
                            break;
                        }
                        let mut key = [0u8; 32];
                        let n = keys.key(i, &mut key);
                        if workload.is_read(i) {
                            let t = Instant::now();
                            if engine.read_row(&key[..n])? {
                                found.fetch_add(1, Ordering::Relaxed);
                            }
                            let _ = my_gets.record((t.elapsed().as_micros() as u64).max(1));
                            crate::progress::add(1);
                        } else {
                            buffer.push(key);
                            lens.push(n);
                            last = i;
                            buffered += n + workload.row_value_bytes();
                            if buffered >= batch_bytes {
                                flush(&mut buffer, &mut lens, last, &mut my_puts)?;
                                buffered = 0;
                            }
                        }
                    }
                    flush(&mut buffer, &mut lens, last, &mut my_puts)
                })();
                if let Err(e) = result {
                    first_error.lock().get_or_insert(e);
                }
                puts.lock().add(&my_puts).expect("same histogram bounds");
                gets.lock().add(&my_gets).expect("same histogram bounds");
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    Ok(DriverResult {
        ops: workload.ops,
        seconds,
        put_latency_us: puts.into_inner(),
        get_latency_us: gets.into_inner(),
        rows_found: found.load(Ordering::Relaxed),
    })
}

/// Runs `writes` from `writer_threads` clients (held to `write_rate` rows
/// per second if given) while one more thread reads keys of `reads` one by
/// one, unthrottled, until the writers are done (the paper's
/// read-latency-under-background-writes experiment). The reader's latencies
/// are the result's get histogram.
pub fn run_reader_under_writes(
    engine: &dyn Engine,
    writes: &Workload,
    writer_threads: usize,
    batch_bytes: usize,
    write_rate: Option<f64>,
    reads: &Workload,
) -> Result<DriverResult, BenchError> {
    let done = std::sync::atomic::AtomicBool::new(false);
    let reader_keys = reads.key_source();
    let (write_result, read_result) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| -> Result<(Histogram<u64>, u64), BenchError> {
            let mut h = histogram();
            let (mut i, mut found) = (0u64, 0u64);
            while !done.load(Ordering::Acquire) {
                let mut key = [0u8; 32];
                let n = reader_keys.key(i, &mut key);
                let t = Instant::now();
                if engine.read_row(&key[..n])? {
                    found += 1;
                }
                let _ = h.record((t.elapsed().as_micros() as u64).max(1));
                i += 1;
            }
            Ok((h, found))
        });
        let w = run(engine, writes, writer_threads, batch_bytes, write_rate);
        done.store(true, Ordering::Release);
        (w, reader.join().expect("reader thread"))
    });
    let mut result = write_result?;
    let (gets, found) = read_result?;
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
        Workload { key_space: 1000, dist: KeyDist::Uniform, fields: 4, value_size: 25, ops, read_ratio: 0.0, seed: 3 }
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
        // The last row is due ops / rate after the start: the run cannot be
        // shorter; the generous upper bound only catches a stuck schedule.
        let floor = ops as f64 / rate;
        assert!(r.seconds >= floor * 0.95, "{} s for a {floor} s schedule", r.seconds);
        assert!(r.seconds < floor + 5.0, "{} s", r.seconds);
        // At every batch, the rows written so far were all due by then.
        for &(rows, at) in engine.batches.lock().iter() {
            assert!(rows as f64 <= rate * at.as_secs_f64() + 1.0, "{rows} rows after {at:?}");
        }
        // Unlimited, the same run does not wait for a schedule.
        assert!(run(&engine, &writes(ops), 4, 10 * 1024, None).is_ok());
        assert!(run(&engine, &writes(ops), 4, 10 * 1024, Some(0.0)).is_err());
    }
}
