//! `accordion server --print-config`: prints the effective configuration
//! (defaults, then --config, then the flags) as TOML and exits 0 without
//! starting anything; with the defaults it prints exactly the committed
//! sample, `docs/accordion.toml`.

use std::path::Path;
use std::process::Command;

fn print_config(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_accordion"))
        .args(["server", "--print-config"])
        .args(args)
        .output()
        .expect("run accordion");
    assert!(out.status.success(), "exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_defaults_print_as_the_committed_sample() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/accordion.toml");
    let committed = std::fs::read_to_string(&sample).expect("docs/accordion.toml");
    assert!(
        print_config(&[]) == committed,
        "docs/accordion.toml differs from `accordion server --print-config`; regenerate it with \
         `cargo run -p accordion -- server --print-config > docs/accordion.toml`"
    );
}

#[test]
fn the_printed_configuration_is_the_effective_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("accordion.toml");
    std::fs::write(&file, "memstore_policy = \"EAGER\"\n[properties]\n\"hbase.hregion.memstore.flush.size\" = 4096\n")
        .expect("write");
    let data = dir.path().join("data");
    let printed = print_config(&[
        "--config",
        file.to_str().expect("UTF-8 path"),
        "--set",
        "hbase.hregion.memstore.flush.size=8192",
        "--data-dir",
        data.to_str().expect("UTF-8 path"),
    ]);
    assert!(printed.contains("\nmemstore_policy = \"EAGER\"\n"), "{printed}");
    assert!(printed.contains("\nmemstore_flush_size = 8192\n"), "--set wins over the file: {printed}");
    assert!(printed.contains(&format!("\ndata_dir = \"{}\"\n", data.display())), "{printed}");
    assert!(!data.exists(), "printing the configuration opens no store");
    // What it prints loads back to itself.
    let again = dir.path().join("printed.toml");
    std::fs::write(&again, &printed).expect("write");
    assert_eq!(print_config(&["--config", again.to_str().expect("UTF-8 path")]), printed);
}
