//! `recover-probe`: the child process of `tests/recovery.rs`. It opens (and
//! so recovers) the store in `<dir>` with a memory budget of
//! `<memory-budget>` bytes and no background threads, then prints the peak
//! resident memory of the recovery (`VmHWM` from /proc/self/status, in
//! bytes) and the number of rows of table `t`: `hwm <bytes> rows <n>`.
//! A process of its own, so that the peak is the recovery's alone.
//!
//! Usage: `recover-probe <dir> <memory-budget>`

use store::{Scan, Store, StoreOptions};

fn vm_hwm_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
    let kb: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmHWM in kB");
    kb * 1024
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: recover-probe <dir> <memory-budget>");
        std::process::exit(2);
    }
    let memory_budget: u64 = args[2].parse().expect("memory-budget is a number of bytes");
    let options = StoreOptions { background: false, memory_budget, ..StoreOptions::default() };
    let store = Store::open(&args[1], options).expect("recovery");
    let hwm = vm_hwm_bytes();
    let mut rows = 0u64;
    for row in store.scan("t", Scan::default()).expect("scan") {
        row.expect("row");
        rows += 1;
    }
    println!("hwm {hwm} rows {rows}");
}
