//! The read figures of a bench run, in lines: the measured reader's
//! percentiles in reader-under-writes runs, the throughput and percentiles
//! per operation of the runs that load first (the YCSB presets), and the
//! comparisons issue 28 sets as goals — each policy's reader p99 against
//! `none`'s and RocksDB's with CPU per operation, and our throughput and
//! p99 per operation against RocksDB's.

use crate::report::{Percentiles, RunReport, cpu_us_per_op, ratio};

fn settings_of(r: &RunReport) -> (u64, u64) {
    r.settings.as_ref().map_or((0, 0), |s| (s.load_ops, s.reader_gets))
}

fn is_reader_run(r: &RunReport) -> bool {
    settings_of(r).1 > 0
}

fn is_loaded_run(r: &RunReport) -> bool {
    let (load, gets) = settings_of(r);
    load > 0 && gets == 0
}

fn five(p: &Percentiles) -> String {
    format!("{} / {} / {} / {} / {}", p.p50, p.p75, p.p90, p.p95, p.p99)
}

/// The measured reader's p50 / p75 / p90 / p95 / p99 µs of each
/// reader-under-writes run, with the rows per second its writers reached
/// (and the rate they were held to, if they were) and CPU per operation.
pub fn reader_lines(runs: &[RunReport]) -> Vec<String> {
    runs.iter()
        .filter(|r| is_reader_run(r))
        .filter_map(|r| {
            let g = r.latency_us.get("get")?;
            let gets = settings_of(r).1;
            let limit =
                r.settings.as_ref().and_then(|s| s.write_rate).map_or(String::new(), |w| format!(", limit {w:.0}"));
            let writers = r.ops.saturating_sub(gets) as f64 / r.seconds.max(f64::MIN_POSITIVE);
            Some(format!(
                "{} {} {}: {} ({gets} gets; writers {writers:.0} rows/s{limit}; CPU {:.2} µs/op)",
                r.preset,
                r.engine,
                r.policy,
                five(g),
                cpu_us_per_op(r)
            ))
        })
        .collect()
}

/// Each run that loaded first: operations per second, then p50 / p99 µs of
/// each kind of operation.
pub fn operation_lines(runs: &[RunReport]) -> Vec<String> {
    runs.iter()
        .filter(|r| is_loaded_run(r))
        .map(|r| {
            let ops: Vec<String> =
                r.latency_us.iter().map(|(op, p)| format!("{op} p50 {} / p99 {}", p.p50, p.p99)).collect();
            format!(
                "{} {} {}: {:.0} ops/s; {}; CPU {:.2} µs/op",
                r.preset,
                r.engine,
                r.policy,
                r.ops_per_sec,
                ops.join("; "),
                cpu_us_per_op(r)
            )
        })
        .collect()
}

/// The goals' comparisons. Reader-under-writes presets: per accordion
/// policy, reader p99 over `none`'s and over RocksDB's (below 1: lower
/// latency), CPU per operation over RocksDB's. Presets that load first:
/// per accordion policy, throughput over RocksDB's (above 1: faster) and
/// p99 per operation over RocksDB's.
pub fn goal_lines(runs: &[RunReport]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut presets: Vec<&str> = runs.iter().map(|r| r.preset.as_str()).collect();
    presets.dedup();
    for preset in presets {
        let of = |engine: &'static str| runs.iter().filter(move |r| r.preset == preset && r.engine == engine);
        let rocks = of("rocksdb").next();
        let none = of("accordion").find(|r| r.policy == "none");
        let p99 = |r: &RunReport, op: &str| r.latency_us.get(op).map_or(0.0, |p| p.p99 as f64);
        for ours in of("accordion") {
            if is_reader_run(ours) {
                let mut parts = Vec::new();
                if let Some(n) = none.filter(|n| n.policy != ours.policy) {
                    parts.push(format!("reader p99 / none's {}", ratio(p99(ours, "get"), p99(n, "get"))));
                }
                if let Some(r) = rocks {
                    parts.push(format!("reader p99 / rocksdb's {}", ratio(p99(ours, "get"), p99(r, "get"))));
                    parts.push(format!("CPU per op / rocksdb's {}", ratio(cpu_us_per_op(ours), cpu_us_per_op(r))));
                }
                if !parts.is_empty() {
                    lines.push(format!("{preset}: accordion {}: {}", ours.policy, parts.join(", ")));
                }
            } else if is_loaded_run(ours)
                && let Some(r) = rocks
            {
                let mut parts = vec![format!("throughput {}", ratio(ours.ops_per_sec, r.ops_per_sec))];
                for op in ours.latency_us.keys() {
                    parts.push(format!("{op} p99 {}", ratio(p99(ours, op), p99(r, op))));
                }
                parts.push(format!("CPU per op {}", ratio(cpu_us_per_op(ours), cpu_us_per_op(r))));
                lines.push(format!("{preset}: accordion {} / rocksdb: {}", ours.policy, parts.join(", ")));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::RunSettings;

    fn run(preset: &str, engine: &str, policy: &str, load: u64, gets: u64, p99: &[(&str, u64)]) -> RunReport {
        let mut r = RunReport {
            engine: engine.into(),
            policy: policy.into(),
            preset: preset.into(),
            ops: 1000 + gets,
            seconds: 2.0,
            ops_per_sec: (1000 + gets) as f64 / 2.0,
            cpu_seconds: 0.001 * (1000 + gets) as f64,
            settings: Some(RunSettings {
                load_ops: load,
                reader_gets: gets,
                write_rate: Some(500.0),
                ..Default::default()
            }),
            ..RunReport::default()
        };
        for (op, v) in p99 {
            r.latency_us.insert(
                (*op).into(),
                Percentiles { p50: v / 10, p75: v / 5, p90: v / 3, p95: v / 2, p99: *v, p999: 2 * v },
            );
        }
        r
    }

    #[test]
    fn the_reader_runs_report_five_percentiles_and_the_writers_rate() {
        let runs = [
            run("m", "accordion", "none", 10, 200, &[("get", 100), ("put", 7)]),
            run("y", "accordion", "none", 10, 0, &[("get", 5)]),
        ];
        let lines = reader_lines(&runs);
        assert_eq!(lines.len(), 1, "only the reader-under-writes run: {lines:?}");
        // 1200 ops in 2 s of which 200 gets: the writers did 500 rows/s.
        assert_eq!(
            lines[0],
            "m accordion none: 10 / 20 / 33 / 50 / 100 (200 gets; writers 500 rows/s, limit 500; CPU 1000.00 µs/op)"
        );
        let ops = operation_lines(&runs);
        assert_eq!(ops, ["y accordion none: 500 ops/s; get p50 0 / p99 5; CPU 1000.00 µs/op"]);
    }

    #[test]
    fn goals_compare_each_policy_with_none_and_rocksdb() {
        let runs = [
            run("m", "accordion", "none", 10, 200, &[("get", 100)]),
            run("m", "accordion", "adaptive:0.35", 10, 200, &[("get", 50)]),
            run("m", "rocksdb", "-", 10, 200, &[("get", 200)]),
            run("e", "accordion", "basic", 10, 0, &[("scan", 300), ("insert", 40)]),
            run("e", "rocksdb", "-", 10, 0, &[("scan", 600), ("insert", 20)]),
        ];
        let lines = goal_lines(&runs);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], "m: accordion none: reader p99 / rocksdb's 0.50x, CPU per op / rocksdb's 1.00x");
        assert_eq!(
            lines[1],
            "m: accordion adaptive:0.35: reader p99 / none's 0.50x, reader p99 / rocksdb's 0.25x, CPU per op / rocksdb's 1.00x"
        );
        assert_eq!(
            lines[2],
            "e: accordion basic / rocksdb: throughput 1.00x, insert p99 2.00x, scan p99 0.50x, CPU per op 1.00x"
        );
        assert!(goal_lines(&runs[..2]).len() == 1, "without rocksdb only the comparison with none");
    }
}
