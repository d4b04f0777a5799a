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

/// HBase's own `hbase-site.xml`: the properties we have are applied (sizes
/// with HBase's suffixes, addresses by their host and port parts); the
/// others are listed as ignored; a name a letter or two from one of ours is
/// refused with a "did you mean".
#[test]
fn an_hbase_site_xml_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site = dir.path().join("hbase-site.xml");
    std::fs::write(
        &site,
        r#"<?xml version="1.0"?>
<configuration>
  <property><name>hbase.hregion.memstore.flush.size</name><value>64m</value></property>
  <property><name>hbase.hregion.compacting.memstore.type</name><value>EAGER</value></property>
  <property><name>hbase.regionserver.thrift.port</name><value>19090</value></property>
  <property><name>hbase.regionserver.info.port</name><value>16130</value></property>
  <property><name>hbase.regionserver.info.bindAddress</name><value>0.0.0.0</value></property>
  <property><name>hbase.regionserver.thread.compaction.small</name><value>3</value></property>
  <property><name>hbase.server.keyvalue.maxsize</name><value>1g</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>zk1,zk2</value></property>
  <property><name>hbase.cluster.distributed</name><value>true</value></property>
</configuration>"#,
    )
    .expect("write");
    let c = ServerConfig::load(Some(&site), &[]).expect("hbase-site.xml loads");
    assert_eq!(c.store.region_flush_size, 64 << 20);
    assert!(c.to_toml().contains("memstore_policy = \"EAGER\""), "{}", c.to_toml());
    assert_eq!(c.thrift_addr, "127.0.0.1:19090".parse().expect("addr"));
    assert_eq!(c.http_addr, "0.0.0.0:16130".parse().expect("addr"));
    assert_eq!(c.store.compaction_threads, 3);
    assert_eq!(c.store.max_cell_size, 1 << 30);
    assert_eq!(c.ignored.len(), 2, "{:?}", c.ignored);
    assert!(c.ignored[0].starts_with("hbase.zookeeper.quorum"), "{:?}", c.ignored);

    std::fs::write(
        &site,
        "<configuration><property><name>hbase.hregion.memstore.flush.szie</name><value>1</value></property>\
         </configuration>",
    )
    .expect("write");
    let e = ServerConfig::load(Some(&site), &[]).expect_err("a typo").to_string();
    assert!(e.contains("did you mean hbase.hregion.memstore.flush.size?"), "{e}");
    std::fs::write(&site, "<configuration><property><name>x</name></configuration>").expect("write");
    let e = ServerConfig::load(Some(&site), &[]).expect_err("malformed").to_string();
    assert!(e.contains("hbase-site.xml") && e.contains("not well-formed"), "{e}");
}

#[test]
fn sizes_take_hbase_suffixes_and_unknown_names_a_did_you_mean() {
    let c = ServerConfig::load(None, &["memstore_flush_size=128m".into(), "wal_roll_size=1G".into()]).expect("sizes");
    assert_eq!(c.store.region_flush_size, 128 << 20);
    assert_eq!(c.store.wal.roll_size, 1 << 30);
    let e = ServerConfig::load(None, &["memstore_flush_size=12x".into()]).expect_err("bad size").to_string();
    assert!(e.contains("memstore_flush_size"), "{e}");
    let e = ServerConfig::load(None, &["memstore_flush_sise=1".into()]).expect_err("typo").to_string();
    assert!(e.contains("did you mean memstore_flush_size?"), "{e}");
    let e = ServerConfig::load(None, &["nothing_like_it=1".into()]).expect_err("unknown").to_string();
    assert!(e.contains("unknown setting") && !e.contains("did you mean"), "{e}");
}
