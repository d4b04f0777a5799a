//! Our write-only runs beside the paper's (seed 000, §Write-Only, SSD
//! cluster): per engine and policy, rows/s, disk flushes, disk compactions,
//! WAL files and bytes written by flushes and compactions, each also as a
//! ratio to the same engine's `none` run, next to the paper's counters and
//! their ratios to its `none`.
//!
//! The paper gives absolute counters only (its bytes-written figures are
//! plots), and for throughput only the best policy's gain over `none`
//! (+47.6 % Zipf, +23.8 % uniform). Its uniform table has four policies.
//! Absolute counts cannot match (500 M operations on a 2-server cluster);
//! the ratios to `none` are what compare.

use serde::Serialize;

use crate::report::{RunReport, disk_bytes, memstore_policy};

/// One policy's row of the paper's counters table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PaperCounters {
    pub flushes: u64,
    pub compactions: u64,
    pub wal_files: u64,
}

const fn counters(flushes: u64, compactions: u64, wal_files: u64) -> PaperCounters {
    PaperCounters { flushes, compactions, wal_files }
}

/// The paper's SSD counters, Zipf (its Figure "counters", SSD).
const ZIPF_SSD: &[(&str, PaperCounters)] = &[
    ("none", counters(1468, 524, 789)),
    ("basic", counters(1224, 355, 806)),
    ("adaptive:0.5", counters(922, 309, 678)),
    ("adaptive:0.35", counters(754, 261, 615)),
    ("adaptive:0.2", counters(631, 209, 533)),
    ("eager", counters(695, 242, 490)),
];

/// The paper's SSD counters, uniform (its Figure "counters-uniform", SSD).
const UNIFORM_SSD: &[(&str, PaperCounters)] = &[
    ("none", counters(1705, 288, 632)),
    ("basic", counters(1416, 220, 577)),
    ("adaptive:0.2", counters(1402, 219, 586)),
    ("eager", counters(1382, 255, 578)),
];

/// The paper's figures for one preset.
struct PaperPreset {
    table: &'static [(&'static str, PaperCounters)],
    /// Best policy's throughput over none, minus one.
    best_gain: f64,
    what: &'static str,
}

fn paper_preset(preset: &str) -> Option<PaperPreset> {
    match preset {
        "paper-write-zipf" => Some(PaperPreset { table: ZIPF_SSD, best_gain: 0.476, what: "SSD, Zipf" }),
        "paper-write-uniform" => Some(PaperPreset { table: UNIFORM_SSD, best_gain: 0.238, what: "SSD, uniform" }),
        _ => None,
    }
}

/// A figure and its ratio to the same engine's (or the paper's) `none`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    pub value: f64,
    pub vs_none: Option<f64>,
}

fn figure(value: f64, none: Option<f64>) -> Figure {
    Figure { value, vs_none: none.filter(|n| *n != 0.0).map(|n| value / n) }
}

/// The paper's counters for one policy and their ratios to its `none`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperFigures {
    pub flushes: Figure,
    pub compactions: Figure,
    pub wal_files: Figure,
}

/// One engine × policy of a paper preset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonRow {
    pub engine: String,
    pub policy: String,
    pub rows_per_sec: Figure,
    pub flushes: Figure,
    pub compactions: Figure,
    pub wal_files: Figure,
    /// Bytes written by flushes and compactions.
    pub disk_bytes: Figure,
    /// The paper's row for this policy, if it has one.
    pub paper: Option<PaperFigures>,
}

/// One paper preset's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresetComparison {
    pub preset: String,
    /// Which of the paper's tables this is (`SSD, Zipf`).
    pub paper_table: String,
    pub rows: Vec<ComparisonRow>,
    /// The paper's best policy's throughput gain over none (0.476 = +47.6 %).
    pub paper_best_gain: f64,
    /// Per engine: our best non-none policy and its gain over our none.
    pub best_gains: Vec<(String, String, f64)>,
}

/// A policy as the paper's tables name it: `adaptive` is `adaptive:0.5`
/// (HBase's default R); `None` for what is not a memstore policy (`-` for
/// RocksDB, `server` over Thrift).
fn canonical_policy(policy: &str) -> Option<String> {
    memstore::CompactionPolicy::parse(policy).ok().map(|p| p.name())
}

/// The comparisons for every paper preset among `runs` (medians), per
/// engine that ran a memstore policy (accordion, hbase; not RocksDB or a
/// server whose own setting decides).
pub fn compare(runs: &[RunReport]) -> Vec<PresetComparison> {
    let mut presets: Vec<&str> = runs.iter().map(|r| r.preset.as_str()).collect();
    presets.dedup();
    let mut out = Vec::new();
    for preset in presets {
        let Some(paper) = paper_preset(preset) else { continue };
        let paper_of = |p: &str| paper.table.iter().find(|(name, _)| *name == p).map(|(_, c)| *c);
        let paper_none = paper_of("none");
        let mut engines: Vec<&str> = runs.iter().filter(|r| r.preset == preset).map(|r| r.engine.as_str()).collect();
        engines.dedup();
        let mut rows = Vec::new();
        let mut best_gains = Vec::new();
        for engine in engines {
            let ours: Vec<(&RunReport, String)> = runs
                .iter()
                .filter(|r| r.preset == preset && r.engine == engine)
                .filter_map(|r| canonical_policy(memstore_policy(r)).map(|p| (r, p)))
                .collect();
            let none = ours.iter().find(|(_, p)| p == "none").map(|(r, _)| *r);
            let base = |f: fn(&RunReport) -> f64| none.map(f);
            for (r, policy) in &ours {
                let pc = paper_of(policy).map(|c| PaperFigures {
                    flushes: figure(c.flushes as f64, paper_none.map(|n| n.flushes as f64)),
                    compactions: figure(c.compactions as f64, paper_none.map(|n| n.compactions as f64)),
                    wal_files: figure(c.wal_files as f64, paper_none.map(|n| n.wal_files as f64)),
                });
                rows.push(ComparisonRow {
                    engine: engine.to_string(),
                    policy: policy.clone(),
                    rows_per_sec: figure(r.ops_per_sec, base(|n| n.ops_per_sec)),
                    flushes: figure(r.flushes as f64, base(|n| n.flushes as f64)),
                    compactions: figure(r.compactions as f64, base(|n| n.compactions as f64)),
                    wal_files: figure(r.wal_files as f64, base(|n| n.wal_files as f64)),
                    disk_bytes: figure(disk_bytes(r), base(disk_bytes)),
                    paper: pc,
                });
            }
            if let Some(none) = none
                && let Some((best, p)) =
                    ours.iter().filter(|(_, p)| p != "none").max_by(|a, b| a.0.ops_per_sec.total_cmp(&b.0.ops_per_sec))
                && none.ops_per_sec > 0.0
            {
                best_gains.push((engine.to_string(), p.clone(), best.ops_per_sec / none.ops_per_sec - 1.0));
            }
        }
        if !rows.is_empty() {
            out.push(PresetComparison {
                preset: preset.to_string(),
                paper_table: paper.what.to_string(),
                rows,
                paper_best_gain: paper.best_gain,
                best_gains,
            });
        }
    }
    out
}

fn cell(f: &Figure, unit: f64, decimals: usize) -> String {
    let ratio = f.vs_none.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!("{:.*} ({ratio})", decimals, f.value / unit)
}

/// The comparison as printed lines: a table per preset, then the best gains.
pub fn lines(comparisons: &[PresetComparison]) -> Vec<String> {
    let mut out = Vec::new();
    for c in comparisons {
        out.push(format!("{} beside the paper ({}); (ratio to the same engine's none):", c.preset, c.paper_table));
        out.push(format!(
            "  {:<10} {:<14} {:>16} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>16}",
            "engine",
            "policy",
            "rows/s K",
            "flushes",
            "paper",
            "compactions",
            "paper",
            "WAL files",
            "paper",
            "flush+comp MB"
        ));
        for r in &c.rows {
            let paper = |f: fn(&PaperFigures) -> Figure| r.paper.as_ref().map_or("-".into(), |p| cell(&f(p), 1.0, 0));
            out.push(format!(
                "  {:<10} {:<14} {:>16} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>16}",
                r.engine,
                r.policy,
                cell(&r.rows_per_sec, 1e3, 1),
                cell(&r.flushes, 1.0, 0),
                paper(|p| p.flushes),
                cell(&r.compactions, 1.0, 0),
                paper(|p| p.compactions),
                cell(&r.wal_files, 1.0, 0),
                paper(|p| p.wal_files),
                cell(&r.disk_bytes, 1048576.0, 1),
            ));
        }
        let ours: Vec<String> = c.best_gains.iter().map(|(e, p, g)| format!("{e} {p} {:+.1} %", g * 100.0)).collect();
        out.push(format!(
            "  best throughput over none: paper {:+.1} %; ours {}",
            c.paper_best_gain * 100.0,
            if ours.is_empty() { "- (needs none and another policy)".to_string() } else { ours.join(", ") }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(preset: &str, engine: &str, policy: &str, ops: f64, flushes: u64) -> RunReport {
        RunReport {
            engine: engine.into(),
            policy: policy.into(),
            preset: preset.into(),
            ops_per_sec: ops,
            flushes,
            compactions: flushes / 4,
            wal_files: 10,
            bytes_flushed: flushes << 20,
            bytes_compacted: 1 << 20,
            ..RunReport::default()
        }
    }

    #[test]
    fn each_policy_sits_beside_the_papers_figures_with_ratios_to_none() {
        let z = "paper-write-zipf";
        let runs = [
            run(z, "accordion", "none", 100.0, 40),
            run(z, "accordion", "basic", 150.0, 30),
            run(z, "accordion", "adaptive", 120.0, 20),
            run(z, "hbase", "none", 50.0, 40),
            run(z, "hbase", "eager", 55.0, 10),
            run(z, "rocksdb", "-", 300.0, 5),
            run("tune-a", "accordion", "none", 1.0, 1),
        ];
        let c = compare(&runs);
        assert_eq!(c.len(), 1, "only the paper presets");
        let c = &c[0];
        assert_eq!((c.paper_table.as_str(), c.paper_best_gain), ("SSD, Zipf", 0.476));
        assert_eq!(c.rows.len(), 5, "RocksDB has no memstore policy: {:?}", c.rows);
        let basic = &c.rows[1];
        assert_eq!((basic.engine.as_str(), basic.policy.as_str()), ("accordion", "basic"));
        assert_eq!(basic.rows_per_sec.vs_none, Some(1.5));
        assert_eq!(basic.flushes.vs_none, Some(0.75));
        assert_eq!(basic.disk_bytes.vs_none, Some(31.0 / 41.0));
        let paper = basic.paper.as_ref().expect("the paper has basic");
        assert_eq!(paper.flushes, Figure { value: 1224.0, vs_none: Some(1224.0 / 1468.0) });
        assert_eq!(paper.compactions.value, 355.0);
        assert_eq!(paper.wal_files, Figure { value: 806.0, vs_none: Some(806.0 / 789.0) });
        let adaptive = &c.rows[2];
        assert_eq!(adaptive.policy, "adaptive:0.5", "HBase's default R");
        assert_eq!(adaptive.paper.as_ref().map(|p| p.flushes.value), Some(922.0));
        let eager = &c.rows[4];
        assert_eq!((eager.engine.as_str(), eager.rows_per_sec.vs_none), ("hbase", Some(1.1)));
        assert_eq!(eager.paper.as_ref().map(|p| p.flushes.value), Some(695.0));
        assert_eq!(c.best_gains[0].0, "accordion");
        assert_eq!(c.best_gains[0].1, "basic");
        assert!((c.best_gains[0].2 - 0.5).abs() < 1e-9);
        let text = lines(std::slice::from_ref(c)).join("\n");
        assert!(text.contains("paper +47.6 %; ours accordion basic +50.0 %, hbase eager +10.0 %"), "{text}");
        assert!(text.contains("1224 (0.83)"), "{text}");
    }

    #[test]
    fn uniform_uses_the_papers_uniform_table() {
        let u = "paper-write-uniform";
        let runs = [run(u, "accordion", "none", 100.0, 40), run(u, "accordion", "adaptive:0.35", 90.0, 30)];
        let c = &compare(&runs)[0];
        assert_eq!((c.paper_table.as_str(), c.paper_best_gain), ("SSD, uniform", 0.238));
        assert_eq!(c.rows[0].paper.as_ref().map(|p| p.flushes.value), Some(1705.0));
        assert!(c.rows[1].paper.is_none(), "the paper's uniform table has no R = 0.35");
        assert!(lines(std::slice::from_ref(c)).iter().any(|l| l.contains("adaptive:0.35") && l.contains(" - ")));
    }
}
