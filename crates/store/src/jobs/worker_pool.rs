//! `WorkerPool`: a fixed number of named threads serving one channel of
//! tasks — what the flusher and the compaction threads share. Tasks are
//! taken in order by whichever thread is free.
//!
//! Invariants: the pool is started at most once in practice (each `start`
//! adds `size` threads) and stopped once: `stop` sends one stop message per
//! thread and joins them, except the calling thread itself (a worker that
//! drops the last handle on the store stops the pool from inside).
//!
//! Thread safety: `Send + Sync`; `send` from any thread; `stop` is
//! idempotent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;

pub(crate) struct WorkerPool<T> {
    name: &'static str,
    size: usize,
    /// `None` tells one thread to stop.
    sender: Sender<Option<T>>,
    receiver: Receiver<Option<T>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopped: AtomicBool,
}

impl<T: Send + 'static> WorkerPool<T> {
    /// A pool of `size` threads (at least one) named `name-<i>`.
    pub(crate) fn new(name: &'static str, size: usize) -> WorkerPool<T> {
        let (sender, receiver) = unbounded();
        WorkerPool {
            name,
            size: size.max(1),
            sender,
            receiver,
            threads: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
        }
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Starts the threads; each runs `work` on every task until it is
    /// stopped, or until `work` returns false.
    pub(crate) fn start(&self, work: impl Fn(T) -> bool + Clone + Send + 'static) {
        let mut threads = self.threads.lock();
        for i in 0..self.size {
            let receiver = self.receiver.clone();
            let work = work.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || {
                    while let Ok(Some(task)) = receiver.recv() {
                        if !work(task) {
                            return;
                        }
                    }
                })
                .unwrap_or_else(|e| panic!("spawn a {} thread: {e}", self.name));
            threads.push(handle);
        }
    }

    /// Queues a task.
    pub(crate) fn send(&self, task: T) {
        let _ = self.sender.send(Some(task));
    }

    /// Stops and joins the threads; false if it was stopped already.
    pub(crate) fn stop(&self) -> bool {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return false;
        }
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for _ in &threads {
            let _ = self.sender.send(None);
        }
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        true
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// The next queued task, if any (tests look at what was queued).
    #[cfg(test)]
    pub(crate) fn try_take(&self) -> Option<T> {
        self.receiver.try_recv().ok().flatten()
    }
}
