//! `docs/accordion.toml`, the sample configuration, is what
//! `ServerConfig::to_toml` (`accordion server --print-config`) prints for
//! the defaults, and loading it gives the default configuration: it cannot
//! drift from the settings table.

use std::path::{Path, PathBuf};

use server::ServerConfig;

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/accordion.toml")
}

#[test]
fn the_sample_configuration_is_the_printed_default() {
    let committed = std::fs::read_to_string(sample()).expect("docs/accordion.toml");
    let printed = ServerConfig::load(None, &[]).expect("defaults").to_toml();
    assert!(
        committed == printed,
        "docs/accordion.toml differs from the printed defaults; regenerate it with \
         `cargo run -p accordion -- server --print-config > docs/accordion.toml`"
    );
}

#[test]
fn loading_the_sample_gives_the_defaults() {
    let loaded = ServerConfig::load(Some(&sample()), &[]).expect("the sample loads");
    let default = ServerConfig::default();
    assert_eq!(loaded.to_toml(), default.to_toml(), "every setting at its default");
    assert_eq!(loaded.data_dir, default.data_dir);
    assert_eq!(loaded.root, None);
    assert_eq!(loaded.thrift_addr, default.thrift_addr);
    assert_eq!(loaded.family_template, default.family_template);
    assert_eq!(loaded.store.region_flush_size, default.store.region_flush_size);
    assert_eq!(loaded.store.global_memstore_limit(), default.store.global_memstore_limit());
    assert_eq!(loaded.scanner_lease, default.scanner_lease);
}
