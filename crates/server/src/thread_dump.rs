//! `/stacks`: the process's threads as plain text, in the place of HBase's
//! thread dump servlet. Rust has no JVM-style walk of other threads'
//! stacks (a native backtrace of another thread would need signals or
//! ptrace), so this lists every thread of the process with its name, its
//! scheduler state and its wait channel (the kernel function a sleeping
//! thread waits in, e.g. `futex_wait_queue` for a lock or condition
//! variable, `do_epoll_wait` for a socket), and the CPU time it used —
//! enough to see which thread is busy, which waits and on what kind of
//! thing.
//!
//! Read from `/proc/self/task/*/{stat,wchan}` (through `procfs` for
//! `stat`, whose command name may hold spaces and parentheses). A thread
//! that ends while it is being read is left out. Off Linux there is no
//! `/proc` and the dump says so.
//!
//! Thread safety: stateless; every call reads `/proc` afresh.

use std::fmt::Write as _;

use procfs::process::Process;

/// One thread as `/proc` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadInfo {
    pub tid: i32,
    /// Its name (`comm`: what `std::thread::Builder::name` set, cut to 15
    /// bytes by the kernel).
    pub name: String,
    /// The scheduler's state letter (R, S, D, ...).
    pub state: char,
    /// The kernel function it sleeps in; `None` while it runs.
    pub wait_channel: Option<String>,
    pub user_seconds: f64,
    pub system_seconds: f64,
}

#[derive(Debug, thiserror::Error)]
#[error("reading this process's threads from /proc: {0}")]
pub struct ThreadDumpError(#[from] procfs::ProcError);

/// Every thread of this process, by thread id.
pub fn threads() -> Result<Vec<ThreadInfo>, ThreadDumpError> {
    let hz = procfs::ticks_per_second() as f64;
    let mut out: Vec<ThreadInfo> = Process::myself()?
        .tasks()?
        .filter_map(Result::ok)
        .filter_map(|task| {
            let stat = task.stat().ok()?;
            let wchan = std::fs::read_to_string(format!("/proc/self/task/{}/wchan", task.tid)).ok();
            Some(ThreadInfo {
                tid: task.tid,
                name: stat.comm,
                state: stat.state,
                // "0" (or nothing) while it runs or has no channel to show.
                wait_channel: wchan.map(|w| w.trim().to_string()).filter(|w| !w.is_empty() && w != "0"),
                user_seconds: stat.utime as f64 / hz,
                system_seconds: stat.stime as f64 / hz,
            })
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    Ok(out)
}

/// What the state letter means (`proc(5)`).
fn state_name(state: char) -> &'static str {
    match state {
        'R' => "running",
        'S' => "sleeping",
        'D' => "waiting on disk",
        'Z' => "zombie",
        'T' => "stopped",
        't' => "tracing stop",
        'X' | 'x' => "dead",
        'I' => "idle",
        'P' => "parked",
        'W' => "waking",
        'K' => "wakekill",
        _ => "unknown",
    }
}

/// The dump as text: a header, then one block per thread.
pub fn render() -> String {
    let threads = match threads() {
        Ok(t) => t,
        Err(e) => return format!("no thread dump: {e}\n"),
    };
    let mut out = format!("Process Thread Dump: {} threads of process {}\n", threads.len(), std::process::id());
    out.push_str(
        "(Rust cannot walk another thread's stack as the JVM does: each thread's name, state and wait channel)\n\n",
    );
    for t in &threads {
        let _ = writeln!(out, "Thread {} ({}):", t.tid, t.name);
        let _ = writeln!(out, "  State: {} ({})", t.state, state_name(t.state));
        if let Some(w) = &t.wait_channel {
            let _ = writeln!(out, "  Waiting in: {w}");
        }
        let _ = writeln!(out, "  CPU: user {:.2} s, system {:.2} s", t.user_seconds, t.system_seconds);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn a_named_thread_of_this_process_is_listed_with_its_state() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let waiter = std::thread::Builder::new()
            .name("dump-test-wait".into())
            .spawn(move || {
                let _ = rx.recv();
            })
            .expect("spawn");
        // The thread names itself once it runs, and until it has gone to
        // sleep in recv() it may still be running: look until both hold.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let info = loop {
            let listed = threads().expect("threads");
            let me = listed.iter().find(|t| t.name == "dump-test-wait").cloned();
            match me {
                Some(me) if me.state == 'S' => break me,
                _ if std::time::Instant::now() > deadline => panic!("no sleeping dump-test-wait thread: {listed:?}"),
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        assert_eq!(info.state, 'S', "{info:?}");
        let text = render();
        assert!(text.contains(&format!("Thread {} (dump-test-wait):\n  State: S (sleeping)", info.tid)), "{text}");
        tx.send(()).expect("wake");
        waiter.join().expect("join");
    }
}
