//! A fixed set of worker threads over a bounded queue: where calls run.
//!
//! Connections' reader threads submit jobs; a full queue refuses the job at
//! once (the server answers `CallQueueTooBigException`, which HBase's client
//! retries after a pause) rather than blocking a reader, which would stall
//! every other call of that connection.
//!
//! The queue is a multi-consumer channel (`crossbeam-channel`) that every
//! idle worker waits on: a job wakes one worker. Over a `std` receiver
//! behind a mutex, the worker that took a job woke the next one waiting
//! for the lock only for it to sleep again on the queue — a futex wake
//! and two context switches per call. Waking and switching threads were
//! the largest cost of a get through the Java client (over a third of the
//! server's samples); this change cut the server's CPU per get by a tenth.
//!
//! Thread safety: `submit` may be called from any thread. `shutdown` closes
//! the queue, lets the workers finish every job already queued, and joins
//! them; jobs submitted afterwards are refused.

use std::sync::Mutex;
use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, Sender, TrySendError};

type Job = Box<dyn FnOnce() + Send + 'static>;

pub(crate) struct WorkerPool {
    sender: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// Why a job was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    QueueFull,
    ShutDown,
}

impl WorkerPool {
    pub(crate) fn new(workers: usize, queue_len: usize, name: &str) -> std::io::Result<Self> {
        let (sender, receiver) = crossbeam_channel::bounded::<Job>(queue_len);
        let handles = (0..workers.max(1))
            .map(|i| {
                let receiver = receiver.clone();
                thread::Builder::new().name(format!("{name}-{i}")).spawn(move || work(&receiver))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { sender: Mutex::new(Some(sender)), workers: Mutex::new(handles) })
    }

    pub(crate) fn submit(&self, job: Job) -> Result<(), Refused> {
        let sender = self.sender.lock().unwrap_or_else(|p| p.into_inner());
        let Some(sender) = sender.as_ref() else {
            return Err(Refused::ShutDown);
        };
        sender.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => Refused::QueueFull,
            TrySendError::Disconnected(_) => Refused::ShutDown,
        })
    }

    /// Runs what is queued, then stops the workers.
    pub(crate) fn shutdown(&self) {
        drop(self.sender.lock().unwrap_or_else(|p| p.into_inner()).take());
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        for worker in workers {
            // A job that panicked has already lost its call; the pool goes on.
            let _ = worker.join();
        }
    }
}

fn work(receiver: &Receiver<Job>) {
    // `recv` fails only once the sender is gone and the queue is empty: the
    // jobs queued before a shutdown all run.
    while let Ok(job) = receiver.recv() {
        // A panicking handler must not take the worker with it: the call's
        // connection notices (its response never comes; its in-flight count
        // is restored by the job's guard) and the pool keeps its size.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn a_full_queue_refuses_and_shutdown_drains_what_was_queued() {
        let pool = WorkerPool::new(1, 2, "test-pool").unwrap();
        let (release, blocked) = channel::<()>();
        let blocked = Mutex::new(blocked);
        let done = Arc::new(AtomicUsize::new(0));
        let (started_tx, started) = channel();
        pool.submit(Box::new(move || {
            started_tx.send(()).unwrap();
            blocked.lock().unwrap().recv().unwrap();
        }))
        .unwrap();
        started.recv_timeout(Duration::from_secs(5)).unwrap();
        for _ in 0..2 {
            let done = Arc::clone(&done);
            pool.submit(Box::new(move || {
                done.fetch_add(1, Ordering::SeqCst);
            }))
            .unwrap();
        }
        assert_eq!(pool.submit(Box::new(|| {})), Err(Refused::QueueFull));
        release.send(()).unwrap();
        pool.shutdown();
        assert_eq!(done.load(Ordering::SeqCst), 2, "queued jobs ran before the workers stopped");
        assert_eq!(pool.submit(Box::new(|| {})), Err(Refused::ShutDown));
    }

    #[test]
    fn a_panicking_job_does_not_kill_its_worker() {
        let pool = WorkerPool::new(1, 4, "test-pool").unwrap();
        pool.submit(Box::new(|| panic!("handler bug"))).unwrap();
        let (tx, rx) = channel();
        pool.submit(Box::new(move || tx.send(7).unwrap())).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
        pool.shutdown();
    }
}
