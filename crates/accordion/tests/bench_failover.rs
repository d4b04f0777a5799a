//! `accordion bench scale-out --kill-after-secs`: a region server of a
//! two-server cluster is SIGKILLed under the paper's write load; the
//! writers' client retries until the regions are open again on the other
//! server, and under SYNC_WAL every key an acknowledged batch wrote is in
//! the table afterwards. (The figures themselves are the bench's, in
//! `bench-results/`; this checks that the measurement runs and means what
//! it says.)

use std::process::Command;

#[test]
fn a_server_killed_under_load_loses_no_acknowledged_key_and_its_regions_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("failover.json");
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["bench", "scale-out", "--servers", "2", "--scale", "0.05", "--kill-after-secs", "0.5"])
        .args(["--session-timeout-ms", "2000", "--durability", "SYNC_WAL", "--json"])
        .arg(&json)
        .output()
        .expect("run the bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
    let failover = &doc["runs"][0]["failover"];
    assert!(failover["distinct_keys"].as_u64() > Some(1000), "{failover}");
    assert_eq!(failover["lost_keys"], 0, "{failover}");
    let reopened = failover["regions_open_again_secs"].as_f64().expect("a reopening time");
    assert!(reopened > 0.0 && reopened < 60.0, "{failover}");
    assert!(failover["retries"].as_u64() > Some(0), "the writers waited out the failover: {failover}");
    assert_eq!(doc["runs"][0]["rows"], doc["settings"]["rows"], "every row was written");
    assert!(stdout.contains("0 lost"), "{stdout}");
}
