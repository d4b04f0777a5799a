//! The JSON document `accordion bench run --json` writes: the reported runs,
//! every run when experiments were repeated, the paper presets beside the
//! paper's figures, and the warnings. It stands above the reports
//! (`report.rs`) and the paper's comparisons (`paper.rs`), which it joins.
//!
//! Thread safety: pure functions.

use crate::paper::compare;
use crate::report::{RunReport, warnings};

/// `{"runs":[...], "all_runs":[...], "paper_comparison":[...],
/// "warnings":[...]}`: the reported (median) runs; when experiments were
/// repeated, every run; the paper presets beside the paper's figures
/// ([`crate::paper`]); and the [`warnings`](crate::report::warnings).
pub fn to_json_document(runs: &[RunReport], all: &[RunReport]) -> String {
    let mut v = serde_json::json!({ "runs": runs });
    if !all.is_empty() {
        v["all_runs"] = serde_json::json!(all);
    }
    let paper = compare(runs);
    if !paper.is_empty() {
        v["paper_comparison"] = serde_json::json!(paper);
    }
    let warnings = warnings(runs);
    if !warnings.is_empty() {
        v["warnings"] = serde_json::json!(warnings);
    }
    serde_json::to_string_pretty(&v).expect("reports serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::median_runs;

    fn run(engine: &str, policy: &str, ops: f64) -> RunReport {
        RunReport {
            engine: engine.into(),
            policy: policy.into(),
            preset: "p".into(),
            ops_per_sec: ops,
            ..RunReport::default()
        }
    }

    #[test]
    fn json_with_all_runs_keeps_every_run() {
        let all = [run("accordion", "none", 1.0), run("accordion", "none", 2.0)];
        let v: serde_json::Value =
            serde_json::from_str(&to_json_document(&median_runs(&all), &all)).expect("valid json");
        assert_eq!(v["runs"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["all_runs"].as_array().map(Vec::len), Some(2));
        assert!(v.get("paper_comparison").is_none() && v.get("warnings").is_none(), "{v}");
        let mut paper = [run("accordion", "none", 1.0), run("accordion", "basic", 2.0)];
        for r in &mut paper {
            r.preset = "paper-write-zipf".into();
        }
        let v: serde_json::Value = serde_json::from_str(&to_json_document(&paper, &[])).expect("valid json");
        assert_eq!(v["paper_comparison"][0]["rows"][1]["rows_per_sec"]["vs_none"], 2.0, "{v}");
        assert_eq!(v["paper_comparison"][0]["rows"][1]["paper"]["flushes"]["value"], 1224.0, "{v}");
        assert_eq!(v["warnings"].as_array().map(Vec::len), Some(1), "basic never flushed in memory: {v}");
    }
}
