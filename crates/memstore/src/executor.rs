//! `CompactionExecutor`: the small shared thread pool that runs in-memory
//! compactions in the background (HBase's in-memory compaction pool).
//!
//! Thread safety: `submit` may be called from any thread; jobs run on the
//! pool's threads in submission order per thread. The threads exit when the
//! last handle to the executor is dropped.

use std::sync::{Arc, OnceLock};

use crossbeam_channel::{Sender, unbounded};

type Job = Box<dyn FnOnce() + Send>;

#[derive(Clone)]
pub struct CompactionExecutor {
    sender: Arc<Sender<Job>>,
}

impl CompactionExecutor {
    /// A pool of `threads` workers.
    pub fn new(threads: usize) -> CompactionExecutor {
        let (sender, receiver) = unbounded::<Job>();
        for i in 0..threads.max(1) {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("inmemory-compaction-{i}"))
                .spawn(move || {
                    while let Ok(job) = receiver.recv() {
                        job();
                    }
                })
                .expect("spawn in-memory compaction thread");
        }
        CompactionExecutor { sender: Arc::new(sender) }
    }

    /// The process-wide pool (two threads).
    pub fn global() -> CompactionExecutor {
        static GLOBAL: OnceLock<CompactionExecutor> = OnceLock::new();
        GLOBAL.get_or_init(|| CompactionExecutor::new(2)).clone()
    }

    /// Queues a job.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        // The receivers live as long as the threads, which outlive every sender.
        let _ = self.sender.send(Box::new(job));
    }
}
