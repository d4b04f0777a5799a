//! `EventLog`: the most recent disk flushes and compactions of a store
//! instance, for the server's status page ("what just happened here").
//!
//! Thread safety: a short mutex around a bounded ring; written once per
//! flush or compaction, so never contended on the write path.

use std::collections::VecDeque;
use std::time::Instant;

use parking_lot::Mutex;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoreEvent {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// "flush", "compaction" or "major_compaction".
    pub kind: &'static str,
    /// "table/region/family".
    pub store: String,
    /// Bytes of the file written (0 if everything was dropped).
    pub bytes: u64,
    /// Files read (1 memstore snapshot for a flush).
    pub inputs: usize,
    pub millis: u64,
}

pub struct EventLog {
    events: Mutex<VecDeque<StoreEvent>>,
    capacity: usize,
}

impl EventLog {
    pub fn new(capacity: usize) -> EventLog {
        EventLog { events: Mutex::new(VecDeque::with_capacity(capacity)), capacity: capacity.max(1) }
    }

    pub fn record(&self, kind: &'static str, store: String, bytes: u64, inputs: usize, started: Instant) {
        let event = StoreEvent {
            at_ms: crate::clock::now_ms(),
            kind,
            store,
            bytes,
            inputs,
            millis: started.elapsed().as_millis() as u64,
        };
        let mut events = self.events.lock();
        if events.len() == self.capacity {
            events.pop_front();
        }
        events.push_back(event);
    }

    /// Newest first.
    pub fn recent(&self) -> Vec<StoreEvent> {
        self.events.lock().iter().rev().cloned().collect()
    }
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::new(64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_events_up_to_capacity() {
        let log = EventLog::new(2);
        for (i, kind) in ["flush", "compaction", "major_compaction"].into_iter().enumerate() {
            log.record(kind, format!("t/r/f{i}"), i as u64, 1, Instant::now());
        }
        let recent = log.recent();
        assert_eq!(recent.iter().map(|e| e.kind).collect::<Vec<_>>(), ["major_compaction", "compaction"]);
    }
}
