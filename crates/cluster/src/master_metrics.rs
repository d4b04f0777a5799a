//! The master's `/metrics`: its figures in Prometheus' text format (0.0.4),
//! with the conventions of the region server's (`server::prometheus`):
//! `# HELP` and `# TYPE` for every family, counters named `..._total`,
//! gauges with their unit in the name.
//!
//! What it says: the master's role; the assignment passes (how many, the
//! phases of the last one, the regions it saw in transition); what the
//! servers' reports brought (`reports::ReportCounters`) and the view they
//! built (servers reporting, regions known, held and open); the catalog's
//! size; the process's CPU and resident memory.
//!
//! Cost: O(servers) (the held regions are summed per server), never
//! O(regions): a scrape of a master with 100,000 regions copies nothing.
//!
//! Thread safety: takes the view's and the book's mutexes one after the
//! other, each for a few reads.

use std::fmt::Write as _;
use std::sync::Mutex;

use crate::master::{MasterView, Role};
use crate::reports::ReportBook;

fn family(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

/// The text of `/metrics`.
pub fn render(view: &Mutex<MasterView>, book: &Mutex<ReportBook>) -> String {
    let mut out = String::new();
    let (role, passes, last, in_transition, reader, members, load_secs) = {
        let v = view.lock().unwrap_or_else(|p| p.into_inner());
        (v.role, v.passes, v.last_pass, v.in_transition.len(), v.catalog.clone(), v.servers.len(), v.catalog_load_secs)
    };
    let (catalog, catalog_writes) = (reader.len(), reader.writes());
    let (counters, known, (held, open), reporting) = {
        let b = book.lock().unwrap_or_else(|p| p.into_inner());
        (b.counters(), b.known_regions(), b.held_regions(), b.reporting_servers())
    };
    family(
        &mut out,
        "accordion_master_active",
        "gauge",
        "1 if this master is the active master.",
        u8::from(role == Role::Active),
    );
    family(&mut out, "accordion_master_live_servers", "gauge", "Region servers in the membership.", members);
    family(
        &mut out,
        "accordion_master_passes_total",
        "counter",
        "Assignment passes run since it became active.",
        passes,
    );
    if let Some(p) = last {
        family(
            &mut out,
            "accordion_master_last_pass_view_seconds",
            "gauge",
            "The last pass: building its view from the reports.",
            p.view_secs,
        );
        family(
            &mut out,
            "accordion_master_last_pass_execute_seconds",
            "gauge",
            "The last pass: planning and carrying out (calls to servers, catalog writes).",
            p.plan_and_execute_secs,
        );
        family(
            &mut out,
            "accordion_master_last_pass_regions_read",
            "gauge",
            "The last pass: regions it read (the changed and unsettled ones, or every region).",
            p.regions_read,
        );
        family(
            &mut out,
            "accordion_master_last_pass_scoped",
            "gauge",
            "1 if the last pass read only the regions that changed or were unsettled.",
            u8::from(p.scoped),
        );
    }
    family(
        &mut out,
        "accordion_master_regions_in_transition",
        "gauge",
        "Regions the last pass saw in transition.",
        in_transition,
    );
    family(&mut out, "accordion_master_catalog_regions", "gauge", "Region entries in the master's catalog.", catalog);
    family(
        &mut out,
        "accordion_master_catalog_writes_total",
        "counter",
        "Durable writes to the catalog log (each one append and sync of a batch of changes).",
        catalog_writes,
    );
    if let Some(secs) = load_secs {
        family(
            &mut out,
            "accordion_master_catalog_load_seconds",
            "gauge",
            "How long reading the catalog log took when this master took over.",
            secs,
        );
    }
    family(&mut out, "accordion_master_known_regions", "gauge", "Regions known to exist.", known);
    family(
        &mut out,
        "accordion_master_held_regions",
        "gauge",
        "Regions the servers report holding, in any state.",
        held,
    );
    family(&mut out, "accordion_master_open_regions", "gauge", "Regions the servers report open.", open);
    family(&mut out, "accordion_master_reporting_servers", "gauge", "Servers with a report applied.", reporting);
    family(
        &mut out,
        "accordion_master_reports_applied_total",
        "counter",
        "Reports applied (whole and delta).",
        counters.applied,
    );
    family(&mut out, "accordion_master_reports_whole_total", "counter", "Whole reports applied.", counters.whole);
    family(
        &mut out,
        "accordion_master_reports_heartbeat_total",
        "counter",
        "Deltas that carried only the load.",
        counters.heartbeats,
    );
    family(
        &mut out,
        "accordion_master_reports_out_of_step_total",
        "counter",
        "Deltas refused for a base the master did not have.",
        counters.out_of_step,
    );
    family(
        &mut out,
        "accordion_master_reports_from_non_members_total",
        "counter",
        "Reports from servers that are not live members (not applied).",
        counters.from_non_members,
    );
    family(
        &mut out,
        "accordion_master_report_bytes_total",
        "counter",
        "Bytes of report bodies received.",
        counters.bytes,
    );
    if let Some((cpu, rss)) = process_figures() {
        family(&mut out, "process_cpu_seconds_total", "counter", "User and system CPU time.", cpu);
        family(&mut out, "process_resident_memory_bytes", "gauge", "Resident memory.", rss);
    }
    out
}

/// This process's CPU seconds and resident bytes (Linux `/proc/self`).
fn process_figures() -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the whole line, in clock ticks (100 a second).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let rss_kb: u64 =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some((ticks as f64 / 100.0, rss_kb * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_help_and_type_and_one_sample() {
        let view = Mutex::new(MasterView::standby_for_test());
        let book = Mutex::new(ReportBook::new(std::time::Duration::from_secs(9)));
        let text = render(&view, &book);
        let parsed = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), parsed, "{text}");
        assert!(text.contains("accordion_master_active 0\n"), "{text}");
        assert!(text.contains("accordion_master_known_regions 0\n"), "{text}");
        assert!(process_figures().is_some_and(|(_, rss)| rss > 0));
    }
}
