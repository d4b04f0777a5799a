//! YCSB 0.17's report (its text exporter, on stdout), read into numbers:
//! lines `[CLASS], Name, Value` — `[OVERALL]`'s run time and throughput, and
//! per operation class (READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, …)
//! its count, average and, with `measurementtype=hdrhistogram` and
//! `hdrhistogram.percentiles=50,95,99`, the 50th/95th/99th percentile
//! latencies in µs, and its `Return=STATUS` counts. Nothing is estimated:
//! a figure YCSB did not print is absent.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::BenchError;

/// One operation class's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpStats {
    pub operations: u64,
    pub average_us: Option<f64>,
    pub p50_us: Option<u64>,
    pub p95_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// `Return=STATUS` counts (OK, ERROR, NOT_FOUND, …).
    pub returns: BTreeMap<String, u64>,
}

impl OpStats {
    /// Operations that did not return OK.
    pub fn failed(&self) -> u64 {
        self.returns.iter().filter(|(s, _)| s.as_str() != "OK").map(|(_, n)| n).sum()
    }
}

/// One YCSB run's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct YcsbOutput {
    pub runtime_ms: f64,
    pub throughput_ops_per_sec: f64,
    /// Per operation class, as YCSB names them; CLEANUP and the JVM's GC
    /// lines are left out.
    pub ops: BTreeMap<String, OpStats>,
}

impl YcsbOutput {
    /// Every class's non-OK returns, as `CLASS STATUS×N` (empty when all
    /// were OK).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (class, s) in &self.ops {
            for (status, n) in &s.returns {
                if status != "OK" {
                    out.push(format!("{class} {status}×{n}"));
                }
            }
            // READ-MODIFY-WRITE is timed as a whole but has no returns of its
            // own (its read and update have theirs).
            let counted: u64 = s.returns.values().sum();
            if class.ends_with("-FAILED") || (!s.returns.is_empty() && counted != s.operations) {
                out.push(format!("{class}: {} operations, {counted} returns", s.operations));
            }
        }
        out
    }
}

fn number<T: std::str::FromStr>(line: &str, v: &str) -> Result<T, BenchError> {
    v.parse().map_err(|_| BenchError::Invalid(format!("YCSB output: bad number in {line:?}")))
}

/// Reads YCSB's stdout; an output without `[OVERALL]` is an error.
pub fn parse(stdout: &str) -> Result<YcsbOutput, BenchError> {
    let mut out = YcsbOutput::default();
    let mut overall = false;
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((class, rest)) = rest.split_once("], ") else { continue };
        let Some((name, value)) = rest.split_once(", ") else { continue };
        let value = value.trim();
        if class == "OVERALL" {
            match name {
                "RunTime(ms)" => out.runtime_ms = number(line, value)?,
                "Throughput(ops/sec)" => {
                    out.throughput_ops_per_sec = number(line, value)?;
                    overall = true;
                }
                _ => {}
            }
            continue;
        }
        if class == "CLEANUP" || class.starts_with("TOTAL_G") {
            continue;
        }
        let s = out.ops.entry(class.to_string()).or_default();
        match name {
            "Operations" => s.operations = number(line, value)?,
            "AverageLatency(us)" => s.average_us = Some(number(line, value)?),
            "50thPercentileLatency(us)" => s.p50_us = Some(number(line, value)?),
            "95thPercentileLatency(us)" => s.p95_us = Some(number(line, value)?),
            "99thPercentileLatency(us)" => s.p99_us = Some(number(line, value)?),
            _ => {
                if let Some(status) = name.strip_prefix("Return=") {
                    s.returns.insert(status.to_string(), number(line, value)?);
                }
            }
        }
    }
    if !overall {
        return Err(BenchError::Invalid("YCSB output has no [OVERALL] throughput".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of a real run's report (workload A, hdrhistogram).
    const SAMPLE: &str = "\
[OVERALL], RunTime(ms), 5397
[OVERALL], Throughput(ops/sec), 370.5762460626274
[TOTAL_GCS_G1_Young_Generation], Count, 6
[READ], Operations, 957
[READ], AverageLatency(us), 3882.379
[READ], MinLatency(us), 751
[READ], MaxLatency(us), 38943
[READ], 50thPercentileLatency(us), 2609
[READ], 95thPercentileLatency(us), 11071
[READ], 99thPercentileLatency(us), 16879
[READ], Return=OK, 957
[CLEANUP], Operations, 4
[UPDATE], Operations, 1043
[UPDATE], 50thPercentileLatency(us), 3000
[UPDATE], Return=OK, 1040
[UPDATE], Return=ERROR, 3
[READ-MODIFY-WRITE], Operations, 10
[READ-MODIFY-WRITE], 50thPercentileLatency(us), 4903
";

    #[test]
    fn reads_overall_and_per_class_figures() {
        let out = parse(SAMPLE).expect("parses");
        assert_eq!(out.runtime_ms, 5397.0);
        assert!((out.throughput_ops_per_sec - 370.576).abs() < 0.001);
        let read = &out.ops["READ"];
        assert_eq!(
            (read.operations, read.p50_us, read.p95_us, read.p99_us),
            (957, Some(2609), Some(11071), Some(16879))
        );
        assert_eq!(read.average_us, Some(3882.379));
        assert_eq!(read.failed(), 0);
        assert!(!out.ops.contains_key("CLEANUP") && !out.ops.keys().any(|k| k.starts_with("TOTAL")));
        assert_eq!(out.ops["UPDATE"].failed(), 3);
        assert_eq!(out.ops["READ-MODIFY-WRITE"].p50_us, Some(4903));
        // UPDATE's error is a failure; READ-MODIFY-WRITE, without returns, is not.
        assert_eq!(out.failures(), vec!["UPDATE ERROR×3".to_string()]);
    }

    #[test]
    fn an_output_without_overall_is_refused() {
        assert!(parse("Loading workload...\nError initializing datastore bindings.\n").is_err());
    }
}
