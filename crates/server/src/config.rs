//! `ServerConfig`: where the server listens and stores, its limits, and the
//! store's settings. Read from a TOML file whose `[properties]` table takes
//! HBase's property names (the settings we share with HBase), then from
//! `--set NAME=VALUE` flags, which win.
//!
//! ```toml
//! data_dir = "./data"            # or: root = "hdfs://127.0.0.1:9000/accordion"
//! thrift_addr = "127.0.0.1:9090"
//! http_addr = "127.0.0.1:16030"
//!
//! [properties]
//! "hbase.hregion.memstore.flush.size" = 134217728
//! "hbase.hregion.compacting.memstore.type" = "ADAPTIVE"
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use store::wal::Durability;
use store::{FamilyDescriptor, StoreOptions};

use crate::connection::ConnectionLimits;
use crate::handler::RequestLimits;

/// A bad configuration: which setting, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Toml { path: PathBuf, source: toml::de::Error },
    #[error("setting {name}: {reason}")]
    Setting { name: String, reason: String },
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// Where the store lives as a URI (`hdfs://host:port/path`,
    /// `file:///path`); when set it wins over `data_dir`, the local
    /// shorthand.
    pub root: Option<String>,
    pub thrift_addr: SocketAddr,
    pub http_addr: SocketAddr,
    pub store: StoreOptions,
    /// New families' settings (memstore policy, A, S) for createTable.
    pub family_template: FamilyDescriptor,
    pub connection: ConnectionLimits,
    pub requests: RequestLimits,
    /// `hbase.thrift.maxWorkerThreads` (1000).
    pub max_connections: usize,
    /// `hbase.client.scanner.timeout.period` (60 s).
    pub scanner_lease: Duration,
    pub max_open_scanners: usize,
    /// `hbase.hregion.compacting.memstore.adaptive.compaction.threshold`.
    pub adaptive_threshold: Option<f64>,
    /// How long shutdown waits for in-flight calls before cutting their
    /// connections (`shutdown_grace_ms`, 10 s).
    pub shutdown_grace: Duration,
    /// Durability of tables created over Thrift (`table_durability`:
    /// SYNC_WAL, HBase's default, ASYNC_WAL or SKIP_WAL).
    pub table_durability: Durability,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./data"),
            root: None,
            thrift_addr: "127.0.0.1:9090".parse().expect("valid address"),
            http_addr: "127.0.0.1:16030".parse().expect("valid address"),
            store: StoreOptions::default(),
            family_template: FamilyDescriptor::new("template"),
            connection: ConnectionLimits {
                max_frame_bytes: 2 << 20,
                max_string_bytes: 64 << 20,
                max_container_len: 1 << 20,
                read_timeout: Duration::from_secs(60),
                idle_timeout: Duration::from_secs(60),
            },
            requests: RequestLimits::default(),
            max_connections: 1000,
            scanner_lease: Duration::from_secs(60),
            max_open_scanners: 10_000,
            adaptive_threshold: None,
            table_durability: Durability::SyncWal,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    data_dir: Option<PathBuf>,
    root: Option<String>,
    thrift_addr: Option<String>,
    http_addr: Option<String>,
    #[serde(default)]
    properties: toml::Table,
}

/// The properties `set` understands, for error messages and docs.
pub const PROPERTIES: &[&str] = &[
    "hbase.hregion.memstore.flush.size",
    "hbase.hregion.compacting.memstore.type",
    "hbase.memstore.inmemoryflush.threshold.factor",
    "hbase.hregion.compacting.pipeline.segments.limit",
    "hbase.hregion.compacting.memstore.adaptive.compaction.threshold",
    "hbase.hregion.compacting.memstore.index.type",
    "hbase.regionserver.global.memstore.size",
    "hbase.regionserver.global.memstore.size.lower.limit",
    "hbase.regionserver.memory.budget",
    "hbase.hregion.memstore.block.multiplier",
    "hfile.block.cache.size",
    "hbase.regionserver.maxlogs",
    "hbase.hstore.flusher.count",
    "hbase.server.keyvalue.maxsize",
    "hbase.table.max.rowsize",
    "hbase.regionserver.thrift.framed.max_frame_size_in_mb",
    "hbase.thrift.maxWorkerThreads",
    "hbase.thrift.server.socket.read.timeout",
    "hbase.client.scanner.timeout.period",
    "hbase.column.max.version",
];

impl ServerConfig {
    /// The defaults, then `file` (if any), then each `NAME=VALUE` of `sets`.
    pub fn load(file: Option<&std::path::Path>, sets: &[String]) -> Result<ServerConfig, ConfigError> {
        let mut c = ServerConfig::default();
        if let Some(path) = file {
            let text =
                std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
            let f: ConfigFile =
                toml::from_str(&text).map_err(|source| ConfigError::Toml { path: path.into(), source })?;
            if let Some(d) = f.data_dir {
                c.data_dir = d;
            }
            if let Some(r) = f.root {
                c.root = Some(r);
            }
            if let Some(a) = f.thrift_addr {
                c.set("thrift_addr", &a)?;
            }
            if let Some(a) = f.http_addr {
                c.set("http_addr", &a)?;
            }
            for (name, value) in f.properties {
                let value = match value {
                    toml::Value::String(s) => s,
                    other => other.to_string(),
                };
                c.set(&name, &value)?;
            }
        }
        for s in sets {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| ConfigError::Setting { name: s.clone(), reason: "expected NAME=VALUE".into() })?;
            c.set(name.trim(), value.trim())?;
        }
        Ok(c)
    }

    /// Applies one setting by our name or HBase's property name.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let bad = |reason: String| ConfigError::Setting { name: name.to_string(), reason };
        let int = || value.parse::<u64>().map_err(|e| bad(format!("{value:?} is not a whole number: {e}")));
        let float = || value.parse::<f64>().map_err(|e| bad(format!("{value:?} is not a number: {e}")));
        let share = || {
            float().and_then(|v| if v > 0.0 && v < 1.0 { Ok(v) } else { Err(bad(format!("{v} must be in (0, 1)"))) })
        };
        match name {
            "data_dir" => self.data_dir = PathBuf::from(value),
            "root" => self.root = Some(value.to_string()),
            "shutdown_grace_ms" => self.shutdown_grace = Duration::from_millis(int()?),
            "table_durability" => {
                self.table_durability = match value.to_ascii_uppercase().as_str() {
                    "SYNC_WAL" | "FSYNC_WAL" | "USE_DEFAULT" => Durability::SyncWal,
                    "ASYNC_WAL" => Durability::AsyncWal,
                    "SKIP_WAL" => Durability::SkipWal,
                    other => return Err(bad(format!("{other:?}: expected SYNC_WAL, ASYNC_WAL or SKIP_WAL"))),
                }
            }
            "thrift_addr" => self.thrift_addr = value.parse().map_err(|e| bad(format!("{value:?}: {e}")))?,
            "http_addr" => self.http_addr = value.parse().map_err(|e| bad(format!("{value:?}: {e}")))?,
            "hbase.hregion.memstore.flush.size" => self.store.region_flush_size = int()?.max(1),
            "hbase.hregion.compacting.memstore.type" => {
                let base = self.family_template.memstore_policy.clone();
                self.family_template.memstore_policy = value.to_ascii_lowercase();
                if let Err(e) = self.family_template.policy() {
                    self.family_template.memstore_policy = base;
                    return Err(bad(e.to_string()));
                }
                self.apply_adaptive_threshold();
            }
            "hbase.memstore.inmemoryflush.threshold.factor" => {
                self.family_template.inmemory_flush_share = Some(share()?)
            }
            "hbase.hregion.compacting.pipeline.segments.limit" => {
                self.family_template.pipeline_segments_limit = int()?.max(1) as usize
            }
            "hbase.hregion.compacting.memstore.adaptive.compaction.threshold" => {
                self.adaptive_threshold = Some(share()?);
                self.apply_adaptive_threshold();
            }
            "hbase.hregion.compacting.memstore.index.type" => {
                self.family_template.flat_layout = match value.to_ascii_uppercase().as_str() {
                    "CHUNK_MAP" => "cell-chunk".into(),
                    "ARRAY_MAP" => "cell-array".into(),
                    other => return Err(bad(format!("{other:?}: expected CHUNK_MAP or ARRAY_MAP"))),
                }
            }
            "hbase.regionserver.global.memstore.size" => self.store.global_memstore_share = share()?,
            "hbase.regionserver.global.memstore.size.lower.limit" => self.store.global_memstore_lower_mark = share()?,
            "hbase.regionserver.memory.budget" => self.store.memory_budget = int()?.max(1 << 20),
            "hbase.hregion.memstore.block.multiplier" => self.store.block_multiplier = int()?.max(1),
            "hfile.block.cache.size" => {
                let v = float()?;
                if !(0.0..1.0).contains(&v) {
                    return Err(bad(format!("{v} must be in [0, 1)")));
                }
                self.store.block_cache_share = v;
            }
            "hbase.regionserver.maxlogs" => self.store.max_logs = int()?.max(1) as usize,
            "hbase.hstore.flusher.count" => self.store.flusher_threads = int()?.max(1) as usize,
            "hbase.server.keyvalue.maxsize" => self.store.max_cell_size = int()?.max(1) as usize,
            "hbase.table.max.rowsize" => self.requests.max_row_bytes = int()?.max(1) as usize,
            "hbase.regionserver.thrift.framed.max_frame_size_in_mb" => {
                self.connection.max_frame_bytes = (int()?.max(1) as usize) << 20
            }
            "hbase.thrift.maxWorkerThreads" => self.max_connections = int()?.max(1) as usize,
            "hbase.thrift.server.socket.read.timeout" => {
                self.connection.idle_timeout = Duration::from_millis(int()?.max(1))
            }
            "hbase.client.scanner.timeout.period" => self.scanner_lease = Duration::from_millis(int()?.max(1)),
            "hbase.column.max.version" => self.family_template.max_versions = int()?.max(1) as u32,
            other => {
                return Err(ConfigError::Setting {
                    name: other.to_string(),
                    reason: format!(
                        "unknown setting; known: data_dir, root, thrift_addr, http_addr, {}",
                        PROPERTIES.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// The adaptive policy carries its threshold R in its name.
    fn apply_adaptive_threshold(&mut self) {
        let base = self.family_template.memstore_policy.split(':').next().unwrap_or_default().to_string();
        if let (Some(r), "adaptive") = (self.adaptive_threshold, base.as_str()) {
            self.family_template.memstore_policy = format!("adaptive:{r}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hbase_property_names_set_the_shared_settings() {
        let sets = [
            "hbase.hregion.memstore.flush.size=1048576",
            "hbase.hregion.compacting.memstore.type=ADAPTIVE",
            "hbase.hregion.compacting.memstore.adaptive.compaction.threshold=0.35",
            "hbase.memstore.inmemoryflush.threshold.factor=0.02",
            "hbase.hregion.compacting.pipeline.segments.limit=5",
            "hbase.regionserver.global.memstore.size=0.3",
        ]
        .map(String::from);
        let c = ServerConfig::load(None, &sets).expect("valid");
        assert_eq!(c.store.region_flush_size, 1 << 20);
        assert_eq!(c.family_template.memstore_policy, "adaptive:0.35");
        assert_eq!(c.family_template.inmemory_flush_share, Some(0.02));
        assert_eq!(c.family_template.pipeline_segments_limit, 5);
        assert_eq!(c.store.global_memstore_share, 0.3);
    }

    #[test]
    fn a_toml_file_is_read_and_flags_win() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accordion.toml");
        std::fs::write(
            &path,
            "data_dir = \"/tmp/x\"\nthrift_addr = \"127.0.0.1:9999\"\n[properties]\n\"hbase.hregion.memstore.flush.size\" = 4096\n\"hbase.hregion.compacting.memstore.type\" = \"EAGER\"\n",
        )
        .expect("write");
        let c = ServerConfig::load(Some(&path), &["hbase.hregion.memstore.flush.size=8192".into()]).expect("valid");
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(c.thrift_addr.port(), 9999);
        assert_eq!(c.store.region_flush_size, 8192);
        assert_eq!(c.family_template.memstore_policy, "eager");
    }

    #[test]
    fn bad_settings_name_what_is_wrong() {
        for bad in [
            "hbase.no.such=1",
            "hbase.hregion.memstore.flush.size=big",
            "hbase.hregion.compacting.memstore.type=TURBO",
            "noequals",
        ] {
            let e = ServerConfig::load(None, &[bad.to_string()]).expect_err(bad).to_string();
            assert!(e.contains(bad.split('=').next().unwrap_or(bad)), "{e}");
        }
    }
}
