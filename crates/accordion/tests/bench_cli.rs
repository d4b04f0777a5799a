//! `accordion bench run`'s own help: `--list-presets` names every preset
//! with what it runs and its shape at the given scale (read from the
//! experiments, so `--scale` changes it), and runs nothing; `--help` says
//! what `--json` writes.

use std::process::Command;

fn bench_run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["bench", "run"])
        .args(args)
        .output()
        .expect("run accordion");
    assert!(out.status.success(), "exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn list_presets_describes_every_preset_at_the_scale_given() {
    let at_one = bench_run(&["--list-presets", "--scale", "0.1"]);
    for name in bench::presets::PRESETS {
        assert!(at_one.lines().any(|l| l == *name), "{name} missing:\n{at_one}");
    }
    assert!(at_one.contains("writer threads"), "{at_one}");
    assert!(at_one.contains("distinct keys: at the leanest row"), "{at_one}");
    assert!(!at_one.contains("engine "), "nothing ran:\n{at_one}");
    let at_half = bench_run(&["--list-presets", "--scale", "0.05"]);
    assert!(at_half.contains("at --scale 0.05:"), "{at_half}");
    assert_ne!(at_one.replace("--scale 0.1:", ""), at_half.replace("--scale 0.05:", ""), "the shape follows --scale");
}

#[test]
fn help_says_what_json_writes() {
    let help = bench_run(&["--help"]);
    assert!(help.contains("--json <FILE>"), "{help}");
    assert!(help.contains("Also writes every run as JSON"), "{help}");
    assert!(help.contains("--list-presets"), "{help}");
}

/// Each embedded run is a child process of its own (a run's peak RSS is its
/// own, not the high-water mark of the runs before it); `--in-process`
/// runs them all in the bench's process.
#[test]
fn each_run_is_a_process_of_its_own_unless_in_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = |extra: &[&str]| -> Vec<u64> {
        let json = dir.path().join("runs.json");
        let dir_arg = dir.path().display().to_string();
        let json_arg = json.display().to_string();
        let mut args =
            vec!["--presets", "paper-write-zipf", "--scale", "0.002", "--policies", "none,basic", "--repeat", "2"];
        args.extend(["--dir", &dir_arg, "--json", &json_arg]);
        args.extend(extra);
        let table = bench_run(&args);
        assert!(table.contains("medians of 2"), "{table}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("valid json");
        doc["all_runs"]
            .as_array()
            .expect("all runs")
            .iter()
            .map(|r| {
                assert!(r["ops"].as_u64().is_some_and(|n| n > 0), "{r}");
                r["process_id"].as_u64().expect("each run names its process")
            })
            .collect()
    };
    let children = pids(&[]);
    assert_eq!(children.len(), 4);
    let mut distinct = children.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "four runs, four processes: {children:?}");
    let one = pids(&["--in-process"]);
    assert!(one.iter().all(|p| *p == one[0]), "one process: {one:?}");
    assert!(!children.contains(&one[0]));
}
