//! The process's last log lines, for the status page's `/logs` (HBase's
//! region server serves its log directory the same way). The binary's
//! logger writes each event a second time, as plain text, through
//! [`RecentLogs::writer`]; the page reads [`RecentLogs::lines`].
//!
//! Invariants: at most [`MAX_LINES`] lines, oldest dropped first, each cut
//! to [`MAX_LINE_BYTES`], so the ring holds at most about 4 MiB whatever
//! is logged; lines are in the order their events finished writing.
//!
//! Thread safety: one mutex around the ring, taken once per event when its
//! writer is dropped (the logger makes one writer per event), never while
//! formatting.

use std::collections::VecDeque;
use std::sync::OnceLock;

use parking_lot::Mutex;

pub const MAX_LINES: usize = 1000;
pub const MAX_LINE_BYTES: usize = 4096;

#[derive(Default)]
pub struct RecentLogs {
    lines: Mutex<VecDeque<String>>,
}

/// The process's ring: logging is process-wide, so is its tail.
pub fn global() -> &'static RecentLogs {
    static GLOBAL: OnceLock<RecentLogs> = OnceLock::new();
    GLOBAL.get_or_init(RecentLogs::default)
}

impl RecentLogs {
    pub fn push(&self, line: &str) {
        let line = if line.len() <= MAX_LINE_BYTES {
            line.to_string()
        } else {
            let mut end = MAX_LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &line[..end])
        };
        let mut lines = self.lines.lock();
        if lines.len() == MAX_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }

    /// A writer for one event: what is written is kept, a line at a time,
    /// when the writer is dropped.
    pub fn writer(&self) -> LineWriter<'_> {
        LineWriter { logs: self, buf: Vec::new() }
    }
}

pub struct LineWriter<'a> {
    logs: &'a RecentLogs,
    buf: Vec<u8>,
}

impl std::io::Write for LineWriter<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter<'_> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        for line in text.lines().filter(|l| !l.is_empty()) {
            self.logs.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn an_event_written_in_pieces_is_one_line_and_the_ring_is_bounded() {
        let logs = RecentLogs::default();
        {
            let mut w = logs.writer();
            write!(w, "2026-11-25 INFO ").unwrap();
            writeln!(w, "flushed region=r").unwrap();
        }
        assert_eq!(logs.lines(), vec!["2026-11-25 INFO flushed region=r"]);
        for i in 0..MAX_LINES + 5 {
            logs.push(&format!("line {i}"));
        }
        let lines = logs.lines();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines[0], "line 5", "the oldest go first");
        logs.push(&"é".repeat(MAX_LINE_BYTES));
        let long = logs.lines().pop().unwrap();
        assert!(long.len() <= MAX_LINE_BYTES + '…'.len_utf8() && long.ends_with('…'), "{}", long.len());
    }
}
