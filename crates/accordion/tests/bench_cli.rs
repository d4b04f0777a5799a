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
