//! `run`: drives an engine with a workload from T client threads. Threads
//! take the next operation index from one shared counter; writes are
//! buffered per thread and sent when the buffer passes `batch_bytes` (YCSB's
//! client-side write buffer, 10 KB by default); reads go out one by one.
//! Latencies go into HdrHistograms per operation type — a write's latency is
//! that of the batch it was sent in, as a buffered client sees it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

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

/// Runs `workload` against `engine` with `threads` clients.
pub fn run(
    engine: &dyn Engine,
    workload: &Workload,
    threads: usize,
    batch_bytes: usize,
) -> Result<DriverResult, BenchError> {
    workload.validate()?;
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
                let flush = |buffer: &mut Vec<[u8; 32]>, lens: &mut Vec<usize>, h: &mut Histogram<u64>| {
                    if buffer.is_empty() {
                        return Ok(());
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
                            buffered += n + workload.row_value_bytes();
                            if buffered >= batch_bytes {
                                flush(&mut buffer, &mut lens, &mut my_puts)?;
                                buffered = 0;
                            }
                        }
                    }
                    flush(&mut buffer, &mut lens, &mut my_puts)
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

/// Runs `writes` from `writer_threads` clients while one more thread reads
/// keys of `reads` one by one until the writers are done (the paper's
/// read-latency-under-background-writes experiment). The reader's latencies
/// are the result's get histogram.
pub fn run_reader_under_writes(
    engine: &dyn Engine,
    writes: &Workload,
    writer_threads: usize,
    batch_bytes: usize,
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
        let w = run(engine, writes, writer_threads, batch_bytes);
        done.store(true, Ordering::Release);
        (w, reader.join().expect("reader thread"))
    });
    let mut result = write_result?;
    let (gets, found) = read_result?;
    result.get_latency_us = gets;
    result.rows_found = found;
    Ok(result)
}
