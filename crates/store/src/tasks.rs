//! `TaskMonitor`: the background work running now in a store instance —
//! disk flushes, disk compactions, splits and merges — as HBase's
//! `TaskMonitor` lists a region server's monitored tasks. The server's
//! `/dump` lists them and its gauges count them by kind; the recent
//! *finished* ones are `events.rs`.
//!
//! Invariants: a task is listed from [`TaskMonitor::start`] until its
//! [`RunningTask`] is dropped, whether the work succeeded, failed or
//! panicked, so a listed task is running now (or its thread is unwinding).
//! The monitor only observes: nothing waits on it and nothing is decided
//! from it.
//!
//! Thread safety: one short mutex around the running set, taken when a
//! task starts and ends (once per flush, compaction, split or merge, never
//! per write) and when a page reads it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A family store's memstore snapshot written to a store file.
    Flush,
    /// A disk compaction of a family store (minor or major).
    Compaction,
    /// A region split.
    Split,
    /// Two regions merged.
    Merge,
}

impl TaskKind {
    pub const ALL: [TaskKind; 4] = [TaskKind::Flush, TaskKind::Compaction, TaskKind::Split, TaskKind::Merge];

    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Flush => "flush",
            TaskKind::Compaction => "compaction",
            TaskKind::Split => "split",
            TaskKind::Merge => "merge",
        }
    }
}

/// A task running now, as pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub kind: TaskKind,
    /// What it works on: "table/region/family" for a flush or compaction,
    /// the region's name for a split or merge.
    pub target: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// How long it has run so far.
    pub running_ms: u64,
    /// A compaction that rewrites every file of its store (HBase's major
    /// compaction, which `Admin.getCompactionState` tells from a minor
    /// one); false for every other task.
    #[serde(default)]
    pub major: bool,
}

struct Running {
    kind: TaskKind,
    target: String,
    major: bool,
    started_ms: u64,
    started: Instant,
}

/// The running tasks of a store instance; see the module doc.
#[derive(Default)]
pub struct TaskMonitor {
    next_id: AtomicU64,
    running: Mutex<BTreeMap<u64, Running>>,
}

impl TaskMonitor {
    /// Lists a task until the returned guard is dropped.
    pub fn start(self: &Arc<Self>, kind: TaskKind, target: String) -> RunningTask {
        self.begin(kind, target, false)
    }

    /// Lists a compaction of `target` (`major`: of every file of its
    /// store) until the returned guard is dropped.
    pub fn start_compaction(self: &Arc<Self>, target: String, major: bool) -> RunningTask {
        self.begin(TaskKind::Compaction, target, major)
    }

    fn begin(self: &Arc<Self>, kind: TaskKind, target: String, major: bool) -> RunningTask {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let running = Running { kind, target, major, started_ms: crate::clock::now_ms(), started: Instant::now() };
        self.running.lock().insert(id, running);
        RunningTask { monitor: self.clone(), id }
    }

    /// The running tasks, oldest first.
    pub fn list(&self) -> Vec<TaskStatus> {
        self.running
            .lock()
            .values()
            .map(|r| TaskStatus {
                kind: r.kind,
                target: r.target.clone(),
                started_ms: r.started_ms,
                running_ms: r.started.elapsed().as_millis() as u64,
                major: r.major,
            })
            .collect()
    }
}

/// A listed task; dropping it (at the end of the work, or while unwinding)
/// takes it off the list.
#[must_use = "the task is listed only while this guard lives"]
pub struct RunningTask {
    monitor: Arc<TaskMonitor>,
    id: u64,
}

impl Drop for RunningTask {
    fn drop(&mut self) {
        self.monitor.running.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_listed_while_its_guard_lives() {
        let monitor = Arc::new(TaskMonitor::default());
        let flush = monitor.start(TaskKind::Flush, "t/r/f".into());
        let split = monitor.start(TaskKind::Split, "t,,1".into());
        let listed = monitor.list();
        assert_eq!(
            listed.iter().map(|t| (t.kind, t.target.as_str())).collect::<Vec<_>>(),
            [(TaskKind::Flush, "t/r/f"), (TaskKind::Split, "t,,1")]
        );
        drop(flush);
        assert_eq!(monitor.list().iter().map(|t| t.kind).collect::<Vec<_>>(), [TaskKind::Split]);
        drop(split);
        assert!(monitor.list().is_empty());
    }

    #[test]
    fn a_compaction_says_whether_it_is_major() {
        let monitor = Arc::new(TaskMonitor::default());
        let _minor = monitor.start_compaction("t/r/f".into(), false);
        let _major = monitor.start_compaction("t/r/g".into(), true);
        let _flush = monitor.start(TaskKind::Flush, "t/r/h".into());
        let listed: Vec<_> = monitor.list().into_iter().map(|t| (t.kind, t.major)).collect();
        assert_eq!(listed, [(TaskKind::Compaction, false), (TaskKind::Compaction, true), (TaskKind::Flush, false)]);
    }

    #[test]
    fn a_task_that_panics_leaves_the_list() {
        let monitor = Arc::new(TaskMonitor::default());
        let m = monitor.clone();
        let _ = std::thread::spawn(move || {
            let _task = m.start(TaskKind::Compaction, "t/r/f".into());
            panic!("the compaction failed hard");
        })
        .join();
        assert!(monitor.list().is_empty());
    }
}
