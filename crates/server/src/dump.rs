//! `/dump`: a plain-text debug dump of the server, as HBase's region server
//! dump servlet gives one to paste into a bug report: who and what the
//! server is (name, version, uptime), a summary of its configuration, its
//! regions with their memstore and store-file sizes and request counts,
//! the flush and compaction queues, the tasks in progress, the recent log
//! lines and the threads (`thread_dump.rs`).
//!
//! Every section reads the sources the other pages read (`Store::metrics`,
//! `/conf`'s TOML, `recent_logs`, `/proc/self`); nothing is kept here.
//!
//! Thread safety: reads snapshots; holds no lock while it renders.

use std::fmt::Write as _;

use crate::status_source::{StatusSource, now_ms};

/// How many of the recent log lines the dump shows (the newest).
const LOG_LINES: usize = 100;

/// The dump; see the module doc.
pub fn render(source: &StatusSource) -> String {
    let m = source.store.metrics();
    let t = &m.totals;
    let mut out = String::new();
    let name =
        source.store.as_member().map_or_else(|| source.thrift_addr.to_string(), |member| member.name().to_string());
    let _ = writeln!(out, "Accordion KV region server {name}, as of {}\n", utc(now_ms()));

    section(&mut out, "Version Info");
    let _ = writeln!(out, "accordion {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, "Thrift {} · data {}", source.thrift_addr, source.store.dir().display());
    let uptime = source.started.elapsed().as_secs();
    let _ = writeln!(out, "Up {uptime} s, since {}", utc(source.started_at_ms()));

    section(&mut out, "Configuration summary (every setting: /conf)");
    for line in source.conf.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let _ = writeln!(out, "{line}");
    }

    section(&mut out, "Regions");
    let _ = writeln!(
        out,
        "{} regions · memstore {} bytes (heap {}) · {} store files",
        m.regions.len(),
        t.memstore_data_bytes,
        t.memstore_heap_bytes,
        t.store_files
    );
    for r in &m.regions {
        let files: u64 = r.families.iter().map(|f| f.store_files).sum();
        let file_bytes: u64 = r.families.iter().map(|f| f.store_files_bytes).sum();
        let memstore: u64 = r.families.iter().map(|f| f.memstore_data_bytes).sum();
        let _ = writeln!(
            out,
            "{}/{} {} [{:?}, {:?}): memstore {memstore} bytes, {files} store files of {file_bytes} bytes, \
             {} read requests, {} write requests",
            r.table, r.region, r.state, r.start_key, r.end_key, r.read_requests, r.write_requests
        );
    }

    section(&mut out, "Flush and compaction queues");
    let _ = writeln!(out, "Flush queue: {} regions waiting for a flusher thread", t.flush_queue_length);
    let _ = writeln!(out, "Compaction queue: {} stores waiting for a compaction thread", t.compaction_queue_length);

    section(&mut out, "Tasks in progress");
    if m.tasks.is_empty() {
        let _ = writeln!(out, "none");
    }
    for task in &m.tasks {
        let _ = writeln!(
            out,
            "{} of {}: running for {} ms, since {}",
            task.kind.name(),
            task.target,
            task.running_ms,
            utc(task.started_ms)
        );
    }

    section(&mut out, &format!("Recent log lines (the last {LOG_LINES}; more: /logs)"));
    let lines = crate::recent_logs::global().lines();
    if lines.is_empty() {
        let _ = writeln!(out, "none kept: this process's logger does not write to the recent-lines ring");
    }
    for line in &lines[lines.len().saturating_sub(LOG_LINES)..] {
        let _ = writeln!(out, "{line}");
    }

    section(&mut out, "Threads (also /stacks)");
    out.push_str(&crate::thread_dump::render());
    out
}

fn section(out: &mut String, title: &str) {
    let _ = write!(out, "\n{title}:\n{}\n", "=".repeat(60));
}

/// `ms` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's days → civil date, for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_814_445_123), "2026-11-27 21:20:45 UTC");
    }
}
