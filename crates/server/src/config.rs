//! `ServerConfig`: where the server listens and stores, its limits, and the
//! store's settings. Every setting is one row of [`SETTINGS`] — its name,
//! HBase's property name where HBase has the setting, its default, what it
//! means, and how it is read from and written to a [`ServerConfig`] — and
//! everything else follows from that table: the defaults
//! ([`ServerConfig::default`] applies them), `--set NAME=VALUE` and the
//! TOML file (by either name), error messages, and the printed
//! configuration (`accordion server --print-config`, [`ServerConfig::to_toml`],
//! from which `docs/accordion.toml` is generated).
//!
//! A TOML file names settings at its top level (our names, or HBase's), and
//! may hold a `[properties]` table of HBase property names, applied after
//! the top level; `--set` flags are applied last and win. HBase's own
//! `hbase-site.xml` is read too (`config_xml.rs`): its properties we have
//! are applied; those we do not have are listed as ignored
//! ([`ServerConfig::ignored`], logged at start) unless the name is one
//! letter or two from one of ours, which is refused as a likely typo. Byte
//! sizes take HBase's suffixes (`128m`, `1g`: [`size`]); an unknown name
//! gets a "did you mean".
//!
//! ```toml
//! data_dir = "./data"            # or: root = "hdfs://127.0.0.1:9000/accordion"
//! thrift_addr = "127.0.0.1:9090"
//! memstore_policy = "ADAPTIVE"
//!
//! [properties]
//! "hbase.hregion.memstore.flush.size" = 134217728
//! ```
//!
//! Invariants: every setting's default, set and read back, reads back the
//! same text; and printing a configuration then loading the print gives a
//! configuration that prints the same (tests below).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use store::wal::Durability;
use store::{FamilyDescriptor, StoreOptions};

use crate::gateway::RequestLimits;
use crate::thrift::connection::ConnectionLimits;

/// A bad configuration: which setting, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Toml { path: PathBuf, source: toml::de::Error },
    #[error("setting {name}: {reason}")]
    Setting { name: String, reason: String },
    #[error("{path}: {reason}")]
    Xml { path: PathBuf, reason: String },
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Properties of an `hbase-site.xml` that no setting of ours takes,
    /// with why (logged when the server starts; not printed).
    pub ignored: Vec<String>,
    pub data_dir: PathBuf,
    /// Where the store lives as a URI (`hdfs://host:port/path`,
    /// `file:///path`); when set it wins over `data_dir`, the local
    /// shorthand.
    pub root: Option<String>,
    /// The log level or filter when neither `--log-level` nor `RUST_LOG`
    /// gives one.
    pub log_level: Option<String>,
    pub thrift_addr: SocketAddr,
    pub http_addr: SocketAddr,
    /// HBase's native RPC port, for hbase-client (`rpc_addr`; `None`: off).
    pub rpc_addr: Option<SocketAddr>,
    /// Serve the RPC port's schema changes to callers beyond loopback
    /// (`rpc/admission.rs`).
    pub rpc_remote_ddl: bool,
    /// Threads that run RPC calls (`rpc_handlers`,
    /// `hbase.regionserver.handler.count`).
    pub rpc_handlers: usize,
    /// A file holding the token admin calls must carry (`admin_auth.rs`).
    pub admin_token_file: Option<PathBuf>,
    /// Serve both ports over TLS (`hbase.thrift.ssl.enabled`; `tls.rs`).
    pub tls_enabled: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// With it, Thrift clients must present a certificate it signed.
    pub tls_client_ca: Option<PathBuf>,
    /// CA whose client certificates authenticate admin calls (`tls.rs`).
    pub tls_admin_ca: Option<PathBuf>,
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
    /// Thrift scanners one connection may hold open at once.
    pub max_scanners_per_connection: usize,
    /// Thrift scanners the connections of one client address may hold.
    pub max_scanners_per_client: usize,
    /// Thrift connections one client address may hold open.
    pub max_connections_per_client: usize,
    /// `hbase.hregion.compacting.memstore.adaptive.compaction.threshold`.
    pub adaptive_threshold: Option<f64>,
    /// How long shutdown waits for in-flight calls before cutting their
    /// connections (`shutdown_grace_ms`, 10 s).
    pub shutdown_grace: Duration,
    /// Durability of tables created over Thrift (`table_durability`:
    /// SYNC_WAL, HBase's default, ASYNC_WAL or SKIP_WAL).
    pub table_durability: Durability,
    /// How often the status page's request history is sampled
    /// (`hbase.regionserver.metrics.period`, 5 s).
    pub metrics_period: Duration,
}

impl Default for ServerConfig {
    /// The structure, then every default of [`SETTINGS`]: the fields a
    /// setting names take the table's default, whatever they start as here.
    fn default() -> Self {
        let mut c = ServerConfig {
            ignored: Vec::new(),
            data_dir: PathBuf::new(),
            root: None,
            log_level: None,
            thrift_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            rpc_addr: None,
            rpc_remote_ddl: false,
            rpc_handlers: 0,
            admin_token_file: None,
            tls_enabled: false,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            tls_admin_ca: None,
            store: StoreOptions::default(),
            family_template: FamilyDescriptor::new("template"),
            connection: ConnectionLimits {
                max_frame_bytes: 0,
                max_message_bytes: 0,
                max_string_bytes: 64 << 20,
                max_container_len: 1 << 20,
                read_timeout: Duration::from_secs(60),
                idle_timeout: Duration::from_secs(60),
            },
            requests: RequestLimits::default(),
            max_connections: 0,
            scanner_lease: Duration::ZERO,
            max_open_scanners: 0,
            max_scanners_per_connection: 0,
            max_scanners_per_client: 0,
            max_connections_per_client: 0,
            adaptive_threshold: None,
            table_durability: Durability::SyncWal,
            shutdown_grace: Duration::ZERO,
            metrics_period: Duration::ZERO,
        };
        for s in SETTINGS {
            if let Some(d) = s.default {
                (s.set)(&mut c, d).unwrap_or_else(|e| panic!("the default of {} ({d:?}) is refused: {e}", s.name));
            }
        }
        c
    }
}

/// How a setting's value is written in TOML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Integer,
    Float,
    Text,
}

impl Kind {
    /// `text` (as `--set` takes it) as a TOML value.
    fn toml(self, text: &str) -> toml::Value {
        match self {
            Kind::Integer => text.parse::<i64>().map_or_else(|_| text.into(), toml::Value::Integer),
            Kind::Float => text.parse::<f64>().map_or_else(|_| text.into(), toml::Value::Float),
            Kind::Text => text.into(),
        }
    }
}

/// One setting; see the module doc.
pub struct Setting {
    /// Our name: the key in the TOML file and in `--set`.
    pub name: &'static str,
    /// HBase's property name, where HBase has this setting; the file's
    /// `[properties]` table and `--set` take it too.
    pub hbase: Option<&'static str>,
    /// The default, as `--set` takes it; `None`: unset (`help` says what
    /// that means).
    pub default: Option<&'static str>,
    pub kind: Kind,
    /// What the setting means.
    pub help: &'static str,
    /// For a setting that is unset by default: a value to show, commented
    /// out, in the printed configuration.
    pub example: &'static str,
    /// The value in `c`, as `--set` takes it (`None`: unset).
    pub get: fn(&ServerConfig) -> Option<String>,
    /// Applies a value; the error says why it is refused.
    pub set: fn(&mut ServerConfig, &str) -> Result<(), String>,
}

fn int(v: &str) -> Result<u64, String> {
    v.parse::<u64>().map_err(|e| format!("{v:?} is not a whole number: {e}"))
}

/// A byte size: a whole number, or one with HBase's binary suffixes
/// (`k`, `m`, `g`, `t`, `p`, either case: `128m` is 134217728), as
/// Hadoop's `Configuration.getLongBytes` reads them.
pub fn size(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let shift = match v.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => 10,
        Some('m') => 20,
        Some('g') => 30,
        Some('t') => 40,
        Some('p') => 50,
        _ => return int(v),
    };
    let number = &v[..v.len() - 1];
    let n = number.parse::<u64>().map_err(|e| format!("{v:?} is not a size (like 134217728 or 128m): {e}"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{v:?} is too large"))
}

fn float(v: &str) -> Result<f64, String> {
    v.parse::<f64>().map_err(|e| format!("{v:?} is not a number: {e}"))
}

/// A share strictly between 0 and 1.
fn share(v: &str) -> Result<f64, String> {
    float(v).and_then(|x| if x > 0.0 && x < 1.0 { Ok(x) } else { Err(format!("{x} must be in (0, 1)")) })
}

fn boolean(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{v:?} is not true or false")),
    }
}

fn addr(v: &str) -> Result<SocketAddr, String> {
    v.parse().map_err(|e| format!("{v:?}: {e}"))
}

fn millis(d: Duration) -> Option<String> {
    Some(d.as_millis().to_string())
}

/// The base of a memstore policy name (`adaptive` of `adaptive:0.35`).
fn policy_base(policy: &str) -> &str {
    policy.split(':').next().unwrap_or_default()
}

/// Every setting, in the order `--print-config` prints them.
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: "data_dir",
        hbase: None,
        default: Some("./data"),
        kind: Kind::Text,
        help: "Directory of the store on local disk (tables, WAL, store files).",
        example: "",
        get: |c| Some(c.data_dir.display().to_string()),
        set: |c, v| {
            c.data_dir = PathBuf::from(v);
            Ok(())
        },
    },
    Setting {
        name: "log_level",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "Log level (error, warn, info, debug, trace) or a filter such as info,store=debug; used when \
               neither --log-level nor RUST_LOG gives one (default info).",
        example: "info,store=debug",
        get: |c| c.log_level.clone(),
        set: |c, v| {
            c.log_level = Some(v.to_string());
            Ok(())
        },
    },
    Setting {
        name: "root",
        hbase: Some("hbase.rootdir"),
        default: None,
        kind: Kind::Text,
        help: "Where the store lives, as a URI: hdfs://HOST:PORT/PATH (store files and WAL on HDFS) or \
               file:///PATH. When set it wins over data_dir; unset, data_dir is used.",
        example: "hdfs://127.0.0.1:9000/accordion",
        get: |c| c.root.clone(),
        set: |c, v| {
            c.root = Some(v.to_string());
            Ok(())
        },
    },
    Setting {
        name: "thrift_addr",
        hbase: None,
        default: Some("127.0.0.1:9090"),
        kind: Kind::Text,
        help: "Address of HBase's Thrift v1 API (HBase's hbase.regionserver.thrift.port is the port alone); \
               binary and compact protocols, buffered and framed transports, on this one port.",
        example: "",
        get: |c| Some(c.thrift_addr.to_string()),
        set: |c, v| {
            c.thrift_addr = addr(v)?;
            Ok(())
        },
    },
    Setting {
        name: "http_addr",
        hbase: None,
        default: Some("127.0.0.1:16030"),
        kind: Kind::Text,
        help: "Address of the HTTP port: /metrics (Prometheus), /status (JSON), the status page and \
               POST /admin/ calls (HBase's region server info port is 16030).",
        example: "",
        get: |c| Some(c.http_addr.to_string()),
        set: |c, v| {
            c.http_addr = addr(v)?;
            Ok(())
        },
    },
    Setting {
        name: "rpc_addr",
        hbase: None,
        default: Some("127.0.0.1:16020"),
        kind: Kind::Text,
        help: "Address of HBase's native RPC, which HBase's own Java client (hbase-client 2.6) speaks: \
               point it here with hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry \
               and hbase.client.bootstrap.servers=HOST:PORT (HBase's hbase.regionserver.port is the port alone, \
               16020). Port 0: any free port. \"off\": no RPC port. In a cluster every member serves it (each on its \
               own port when they share a host), and hbase:meta names each region's owner.",
        example: "",
        get: |c| Some(c.rpc_addr.map_or_else(|| "off".to_string(), |a| a.to_string())),
        set: |c, v| {
            c.rpc_addr = if v.eq_ignore_ascii_case("off") { None } else { Some(addr(v)?) };
            Ok(())
        },
    },
    Setting {
        name: "rpc_remote_ddl",
        hbase: None,
        default: Some("false"),
        kind: Kind::Text,
        help: "Serve the RPC port's schema changes (create, delete, enable, disable table; create, delete \
               namespace) and, in a cluster, its region moves and balancer calls (handed to the master with \
               this server's admin token) to callers beyond this machine. The RPC port authenticates no one (SIMPLE, as HBase \
               without Kerberos), so by default they are served only to callers connecting from loopback; others \
               get AccessDeniedException. Reads and writes of rows are served to every caller.",
        example: "",
        get: |c| Some(c.rpc_remote_ddl.to_string()),
        set: |c, v| {
            c.rpc_remote_ddl = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "rpc_handlers",
        hbase: Some("hbase.regionserver.handler.count"),
        default: Some("16"),
        kind: Kind::Integer,
        help: "Threads that run the RPC port's calls (HBase's handlers; HBase's default is 30). A call waits in a \
               queue of 1,024 while every handler is busy. Handlers beyond the cores keep calls moving while \
               some wait on a WAL sync or a row lock; an idle one spins briefly, then sleeps. A get whose \
               cells are all in memory (the memstore and cached blocks) needs no handler: the thread reading \
               the connection answers it.",
        example: "",
        get: |c| Some(c.rpc_handlers.to_string()),
        set: |c, v| {
            c.rpc_handlers = int(v)?.clamp(1, 1024) as usize;
            Ok(())
        },
    },
    Setting {
        name: "admin_token_file",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "A file holding a token (16+ characters) that every POST /admin/ call must carry as \
               Authorization: Bearer TOKEN. Without one, admin calls are served only while the Thrift and HTTP \
               ports listen on loopback.",
        example: "/etc/accordion/admin.token",
        get: |c| c.admin_token_file.as_ref().map(|p| p.display().to_string()),
        set: |c, v| {
            c.admin_token_file = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Setting {
        name: "tls_enabled",
        hbase: Some("hbase.thrift.ssl.enabled"),
        default: Some("false"),
        kind: Kind::Text,
        help: "Serve the Thrift and HTTP ports over TLS, with tls_cert and tls_key (--tls-cert and --tls-key turn it \
               on). In a cluster, every member and the master serve TLS with certificates of the cluster's CA \
               (tls_admin_ca), which they present to each other.",
        example: "",
        get: |c| Some(c.tls_enabled.to_string()),
        set: |c, v| {
            c.tls_enabled = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "tls_cert",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "The server's TLS certificate chain (PEM), its own certificate first.",
        example: "/etc/accordion/server.pem",
        get: |c| c.tls_cert.as_ref().map(|p| p.display().to_string()),
        set: |c, v| {
            c.tls_cert = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Setting {
        name: "tls_key",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "The private key of tls_cert (PEM: PKCS#8, PKCS#1 or SEC1).",
        example: "/etc/accordion/server.key",
        get: |c| c.tls_key.as_ref().map(|p| p.display().to_string()),
        set: |c, v| {
            c.tls_key = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Setting {
        name: "tls_client_ca",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "CA certificates (PEM) that applications' certificates chain to: with it, a Thrift client without \
               a valid certificate (of it or of tls_admin_ca) is refused (mutual TLS). Such a certificate makes \
               no admin call: see tls_admin_ca.",
        example: "/etc/accordion/clients-ca.pem",
        get: |c| c.tls_client_ca.as_ref().map(|p| p.display().to_string()),
        set: |c, v| {
            c.tls_client_ca = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Setting {
        name: "tls_admin_ca",
        hbase: None,
        default: None,
        kind: Kind::Text,
        help: "CA certificates (PEM) whose client certificates authenticate admin calls, as the admin token \
               does: operators', and in a cluster the cluster's CA, with which the servers and the master \
               authenticate each other (required for a member serving TLS). Certificates of tls_client_ca \
               alone read and write data but make no admin call.",
        example: "/etc/accordion/admin-ca.pem",
        get: |c| c.tls_admin_ca.as_ref().map(|p| p.display().to_string()),
        set: |c, v| {
            c.tls_admin_ca = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Setting {
        name: "table_durability",
        hbase: None,
        default: Some("SYNC_WAL"),
        kind: Kind::Text,
        help: "Durability of tables created over Thrift: SYNC_WAL (a write is acknowledged once its WAL \
               record is synced; HBase's default), ASYNC_WAL (synced within moments) or SKIP_WAL.",
        example: "",
        get: |c| {
            Some(
                match c.table_durability {
                    Durability::SyncWal => "SYNC_WAL",
                    Durability::AsyncWal => "ASYNC_WAL",
                    Durability::SkipWal => "SKIP_WAL",
                }
                .to_string(),
            )
        },
        set: |c, v| {
            c.table_durability = match v.to_ascii_uppercase().as_str() {
                "SYNC_WAL" | "FSYNC_WAL" | "USE_DEFAULT" => Durability::SyncWal,
                "ASYNC_WAL" => Durability::AsyncWal,
                "SKIP_WAL" => Durability::SkipWal,
                other => return Err(format!("{other:?}: expected SYNC_WAL, ASYNC_WAL or SKIP_WAL")),
            };
            Ok(())
        },
    },
    Setting {
        name: "shutdown_grace_ms",
        hbase: None,
        default: Some("10000"),
        kind: Kind::Integer,
        help: "On SIGTERM or SIGINT, how long (ms) in-flight calls may finish before their connections are cut.",
        example: "",
        get: |c| millis(c.shutdown_grace),
        set: |c, v| {
            c.shutdown_grace = Duration::from_millis(int(v)?);
            Ok(())
        },
    },
    Setting {
        name: "memstore_flush_size",
        hbase: Some("hbase.hregion.memstore.flush.size"),
        default: Some("134217728"),
        kind: Kind::Integer,
        help: "A region flushes its memstores to disk when they hold this many bytes.",
        example: "",
        get: |c| Some(c.store.region_flush_size.to_string()),
        set: |c, v| {
            c.store.region_flush_size = size(v)?.max(1);
            Ok(())
        },
    },
    Setting {
        name: "memstore_policy",
        hbase: Some("hbase.hregion.compacting.memstore.type"),
        default: Some("BASIC"),
        kind: Kind::Text,
        help: "In-memory compaction of new families (Accordion): NONE (a plain memstore), BASIC (flatten \
               and merge pipeline segments), EAGER (compact them, dropping redundant cells) or ADAPTIVE \
               (compact when the redundancy is above adaptive_compaction_threshold).",
        example: "",
        get: |c| Some(policy_base(&c.family_template.memstore_policy).to_ascii_uppercase()),
        set: |c, v| {
            let base = c.family_template.memstore_policy.clone();
            c.family_template.memstore_policy = v.to_ascii_lowercase();
            if let Err(e) = c.family_template.policy() {
                c.family_template.memstore_policy = base;
                return Err(e.to_string());
            }
            // ADAPTIVE:R names its threshold too.
            if let Some((_, r)) = v.split_once(':') {
                c.adaptive_threshold = Some(share(r)?);
            }
            c.apply_adaptive_threshold();
            Ok(())
        },
    },
    Setting {
        name: "adaptive_compaction_threshold",
        hbase: Some("hbase.hregion.compacting.memstore.adaptive.compaction.threshold"),
        default: Some("0.5"),
        kind: Kind::Float,
        help: "ADAPTIVE compacts the pipeline when the share of redundant cells is estimated above this \
               (0..1); below it merges.",
        example: "",
        get: |c| {
            let from_policy = || c.family_template.memstore_policy.split_once(':').map(|(_, r)| r.to_string());
            c.adaptive_threshold.map(|r| r.to_string()).or_else(from_policy)
        },
        set: |c, v| {
            c.adaptive_threshold = Some(share(v)?);
            c.apply_adaptive_threshold();
            Ok(())
        },
    },
    Setting {
        name: "inmemory_flush_threshold_factor",
        hbase: Some("hbase.memstore.inmemoryflush.threshold.factor"),
        default: None,
        kind: Kind::Float,
        help: "The active segment is pushed into the pipeline (an in-memory flush) when it holds this \
               share of the flush size (0..1). Unset: when it fills one 2 MiB MSLAB chunk.",
        example: "0.02",
        get: |c| c.family_template.inmemory_flush_share.map(|a| a.to_string()),
        set: |c, v| {
            c.family_template.inmemory_flush_share = Some(share(v)?);
            Ok(())
        },
    },
    Setting {
        name: "pipeline_segments_limit",
        hbase: Some("hbase.hregion.compacting.pipeline.segments.limit"),
        default: Some("2"),
        kind: Kind::Integer,
        help: "Segments the in-memory pipeline holds before they are merged or compacted into one.",
        example: "",
        get: |c| Some(c.family_template.pipeline_segments_limit.to_string()),
        set: |c, v| {
            c.family_template.pipeline_segments_limit = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "memstore_index_type",
        hbase: Some("hbase.hregion.compacting.memstore.index.type"),
        default: Some("CHUNK_MAP"),
        kind: Kind::Text,
        help: "Index of flattened segments: CHUNK_MAP (cell references in MSLAB chunks) or ARRAY_MAP (an \
               array of cell references).",
        example: "",
        get: |c| {
            Some(
                match c.family_template.flat_layout.as_str() {
                    "cell-array" | "ARRAY_MAP" => "ARRAY_MAP",
                    _ => "CHUNK_MAP",
                }
                .to_string(),
            )
        },
        set: |c, v| {
            c.family_template.flat_layout = match v.to_ascii_uppercase().as_str() {
                "CHUNK_MAP" => "cell-chunk".into(),
                "ARRAY_MAP" => "cell-array".into(),
                other => return Err(format!("{other:?}: expected CHUNK_MAP or ARRAY_MAP")),
            };
            Ok(())
        },
    },
    Setting {
        name: "max_versions",
        hbase: Some("hbase.column.max.version"),
        default: Some("1"),
        kind: Kind::Integer,
        help: "Versions kept per column by families created without VERSIONS.",
        example: "",
        get: |c| Some(c.family_template.max_versions.to_string()),
        set: |c, v| {
            c.family_template.max_versions = u32::try_from(int(v)?.max(1)).map_err(|e| format!("{v}: {e}"))?;
            Ok(())
        },
    },
    Setting {
        name: "memory_budget",
        hbase: None,
        default: Some("4294967296"),
        kind: Kind::Integer,
        help: "Bytes of memory the store plans with (a region server's heap); the global memstore and \
               block cache sizes are shares of it. Also accepted as hbase.regionserver.memory.budget, \
               which is not an HBase property.",
        example: "",
        get: |c| Some(c.store.memory_budget.to_string()),
        set: |c, v| {
            c.store.memory_budget = size(v)?.max(1 << 20);
            Ok(())
        },
    },
    Setting {
        name: "global_memstore_size",
        hbase: Some("hbase.regionserver.global.memstore.size"),
        default: Some("0.4"),
        kind: Kind::Float,
        help: "Share of memory_budget all memstores together may hold; writes block above it (0..1).",
        example: "",
        get: |c| Some(c.store.global_memstore_share.to_string()),
        set: |c, v| {
            c.store.global_memstore_share = share(v)?;
            Ok(())
        },
    },
    Setting {
        name: "global_memstore_lower_limit",
        hbase: Some("hbase.regionserver.global.memstore.size.lower.limit"),
        default: Some("0.95"),
        kind: Kind::Float,
        help: "Above this share of the global memstore limit the largest regions are flushed (0..1).",
        example: "",
        get: |c| Some(c.store.global_memstore_lower_mark.to_string()),
        set: |c, v| {
            c.store.global_memstore_lower_mark = share(v)?;
            Ok(())
        },
    },
    Setting {
        name: "memstore_block_multiplier",
        hbase: Some("hbase.hregion.memstore.block.multiplier"),
        default: Some("4"),
        kind: Kind::Integer,
        help: "Writes to a region block while its memstores hold this many flush sizes.",
        example: "",
        get: |c| Some(c.store.block_multiplier.to_string()),
        set: |c, v| {
            c.store.block_multiplier = int(v)?.max(1);
            Ok(())
        },
    },
    Setting {
        name: "block_cache_size",
        hbase: Some("hfile.block.cache.size"),
        default: Some("0.4"),
        kind: Kind::Float,
        help: "Share of memory_budget the block cache of store-file blocks may hold; 0 turns it off.",
        example: "",
        get: |c| Some(c.store.block_cache_share.to_string()),
        set: |c, v| {
            let x = float(v)?;
            if !(0.0..1.0).contains(&x) {
                return Err(format!("{x} must be in [0, 1)"));
            }
            c.store.block_cache_share = x;
            Ok(())
        },
    },
    Setting {
        name: "max_logs",
        hbase: Some("hbase.regionserver.maxlogs"),
        default: Some("32"),
        kind: Kind::Integer,
        help: "WAL files kept before the regions holding the oldest one back are flushed.",
        example: "",
        get: |c| Some(c.store.max_logs.to_string()),
        set: |c, v| {
            c.store.max_logs = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "wal_roll_size",
        hbase: None,
        default: Some("134217728"),
        kind: Kind::Integer,
        help: "Bytes a WAL file reaches before the next one starts (HBase derives it: \
               hbase.regionserver.hlog.blocksize × hbase.regionserver.logroll.multiplier, 128 MiB).",
        example: "",
        get: |c| Some(c.store.wal.roll_size.to_string()),
        set: |c, v| {
            c.store.wal.roll_size = size(v)?.max(4096);
            Ok(())
        },
    },
    Setting {
        name: "flusher_threads",
        hbase: Some("hbase.hstore.flusher.count"),
        default: Some("2"),
        kind: Kind::Integer,
        help: "Threads that flush memstores to disk.",
        example: "",
        get: |c| Some(c.store.flusher_threads.to_string()),
        set: |c, v| {
            c.store.flusher_threads = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "compaction_threads",
        hbase: Some("hbase.regionserver.thread.compaction.small"),
        default: Some("1"),
        kind: Kind::Integer,
        help: "Threads that run disk compactions.",
        example: "",
        get: |c| Some(c.store.compaction_threads.to_string()),
        set: |c, v| {
            c.store.compaction_threads = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "max_cell_size",
        hbase: Some("hbase.server.keyvalue.maxsize"),
        default: Some("10485760"),
        kind: Kind::Integer,
        help: "Largest cell (key and value) a write may carry, in bytes.",
        example: "",
        get: |c| Some(c.store.max_cell_size.to_string()),
        set: |c, v| {
            c.store.max_cell_size = size(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "max_row_size",
        hbase: Some("hbase.table.max.rowsize"),
        default: Some("1073741824"),
        kind: Kind::Integer,
        help: "Largest row a write may carry or a read return, in bytes (RowTooBigException).",
        example: "",
        get: |c| Some(c.requests.max_row_bytes.to_string()),
        set: |c, v| {
            c.requests.max_row_bytes = size(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "max_rows_per_call",
        hbase: None,
        default: Some("100000"),
        kind: Kind::Integer,
        help: "Most rows one getRows call may ask for (more are refused) or one scannerGetList return.",
        example: "",
        get: |c| Some(c.requests.max_rows_per_call.to_string()),
        set: |c, v| {
            c.requests.max_rows_per_call = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "thrift_max_frame_size_mb",
        hbase: Some("hbase.regionserver.thrift.framed.max_frame_size_in_mb"),
        default: Some("2"),
        kind: Kind::Integer,
        help: "Largest Thrift frame (framed transport), in MiB; a bigger one closes its connection.",
        example: "",
        get: |c| Some((c.connection.max_frame_bytes >> 20).to_string()),
        set: |c, v| {
            c.connection.max_frame_bytes = (int(v)?.max(1) as usize) << 20;
            Ok(())
        },
    },
    Setting {
        name: "thrift_max_message_size_mb",
        hbase: None,
        default: Some("100"),
        kind: Kind::Integer,
        help: "Largest Thrift message on a buffered transport, in MiB (Thrift's own default); a bigger one \
               closes its connection.",
        example: "",
        get: |c| Some((c.connection.max_message_bytes >> 20).to_string()),
        set: |c, v| {
            c.connection.max_message_bytes = (int(v)?.max(1) as usize) << 20;
            Ok(())
        },
    },
    Setting {
        name: "max_result_size",
        hbase: Some("hbase.server.scanner.max.result.size"),
        default: Some("104857600"),
        kind: Kind::Integer,
        help: "Bytes one scannerGetList answer may carry (it ends early; the client asks again) or one getRows \
               answer (more is refused).",
        example: "",
        get: |c| Some(c.requests.max_result_bytes.to_string()),
        set: |c, v| {
            c.requests.max_result_bytes = size(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "thrift_max_connections",
        hbase: Some("hbase.thrift.maxWorkerThreads"),
        default: Some("1000"),
        kind: Kind::Integer,
        help: "Thrift connections served at once (one thread each); more are refused.",
        example: "",
        get: |c| Some(c.max_connections.to_string()),
        set: |c, v| {
            c.max_connections = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "thrift_idle_timeout_ms",
        hbase: Some("hbase.thrift.server.socket.read.timeout"),
        default: Some("60000"),
        kind: Kind::Integer,
        help: "A Thrift connection idle this long (ms) is closed, so idle clients cannot hold every slot.",
        example: "",
        get: |c| millis(c.connection.idle_timeout),
        set: |c, v| {
            c.connection.idle_timeout = Duration::from_millis(int(v)?.max(1));
            Ok(())
        },
    },
    Setting {
        name: "scanner_lease_ms",
        hbase: Some("hbase.client.scanner.timeout.period"),
        default: Some("60000"),
        kind: Kind::Integer,
        help: "A Thrift scanner unused this long (ms) is closed.",
        example: "",
        get: |c| millis(c.scanner_lease),
        set: |c, v| {
            c.scanner_lease = Duration::from_millis(int(v)?.max(1));
            Ok(())
        },
    },
    Setting {
        name: "metrics_period_ms",
        hbase: Some("hbase.regionserver.metrics.period"),
        default: Some("5000"),
        kind: Kind::Integer,
        help: "How often (ms) the status page's request rates and latency percentiles are sampled; it keeps ten minutes of them.",
        example: "",
        get: |c| millis(c.metrics_period),
        set: |c, v| {
            c.metrics_period = Duration::from_millis(int(v)?.max(100));
            Ok(())
        },
    },
    Setting {
        name: "max_open_scanners",
        hbase: None,
        default: Some("10000"),
        kind: Kind::Integer,
        help: "Thrift scanners open at once; opening more fails until some close or expire.",
        example: "",
        get: |c| Some(c.max_open_scanners.to_string()),
        set: |c, v| {
            c.max_open_scanners = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "max_scanners_per_connection",
        hbase: None,
        default: Some("1000"),
        kind: Kind::Integer,
        help: "Thrift scanners one connection may hold open at once; a connection's scanners close when it ends.",
        example: "",
        get: |c| Some(c.max_scanners_per_connection.to_string()),
        set: |c, v| {
            c.max_scanners_per_connection = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "max_scanners_per_client",
        hbase: None,
        default: Some("2500"),
        kind: Kind::Integer,
        help: "Thrift scanners the connections of one client address may hold open at once (a quarter of \
               max_open_scanners: no one client can take them all).",
        example: "",
        get: |c| Some(c.max_scanners_per_client.to_string()),
        set: |c, v| {
            c.max_scanners_per_client = int(v)?.max(1) as usize;
            Ok(())
        },
    },
    Setting {
        name: "thrift_max_connections_per_client",
        hbase: None,
        default: Some("250"),
        kind: Kind::Integer,
        help: "Thrift connections one client address may hold open (a quarter of thrift_max_connections: no one \
               client can take every thread); more are refused.",
        example: "",
        get: |c| Some(c.max_connections_per_client.to_string()),
        set: |c, v| {
            c.max_connections_per_client = int(v)?.max(1) as usize;
            Ok(())
        },
    },
];

/// Names accepted for compatibility, and the setting each stands for.
const ALIASES: &[(&str, &str)] = &[("hbase.regionserver.memory.budget", "memory_budget")];

/// The setting `name` names: ours, HBase's property name, or an alias.
pub fn setting(name: &str) -> Option<&'static Setting> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, ours)| ours);
    SETTINGS.iter().find(|s| s.name == name || s.hbase == Some(name))
}

/// Whether a configuration file is HBase's XML rather than TOML.
fn is_xml(path: &std::path::Path, text: &str) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xml")) || text.trim_start().starts_with('<')
}

/// The name of ours or HBase's closest to `name` (a likely typo of it):
/// at most two edits away, or three for names over twenty letters.
fn nearest(name: &str) -> Option<&'static str> {
    let names = SETTINGS.iter().flat_map(|s| std::iter::once(s.name).chain(s.hbase));
    let names = names.chain(ALIASES.iter().map(|(alias, _)| *alias)).chain(ADDRESS_PARTS.iter().map(|(n, _)| *n));
    let (best, distance) = names.map(|known| (known, strsim::levenshtein(name, known))).min_by_key(|(_, d)| *d)?;
    let allowed = if name.len() > 20 { 3 } else { 2 };
    (distance <= allowed && distance > 0).then_some(best)
}

/// HBase names the host and the port of an address apart; each of these
/// sets its part of ours.
type AddressPart = fn(&mut ServerConfig, &str) -> Result<(), String>;

const ADDRESS_PARTS: &[(&str, AddressPart)] = &[
    ("hbase.regionserver.thrift.port", |c, v| port(&mut c.thrift_addr, v)),
    ("hbase.regionserver.thrift.ipaddress", |c, v| ip(&mut c.thrift_addr, v)),
    ("hbase.regionserver.info.port", |c, v| port(&mut c.http_addr, v)),
    ("hbase.regionserver.info.bindAddress", |c, v| ip(&mut c.http_addr, v)),
    ("hbase.regionserver.port", |c, v| {
        let mut a = c.rpc_addr.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 16020)));
        port(&mut a, v)?;
        c.rpc_addr = Some(a);
        Ok(())
    }),
];

fn address_part(name: &str) -> Option<AddressPart> {
    ADDRESS_PARTS.iter().find(|(n, _)| *n == name).map(|(_, set)| *set)
}

fn port(addr: &mut SocketAddr, v: &str) -> Result<(), String> {
    addr.set_port(v.trim().parse().map_err(|e| format!("{v:?} is not a port: {e}"))?);
    Ok(())
}

fn ip(addr: &mut SocketAddr, v: &str) -> Result<(), String> {
    addr.set_ip(v.trim().parse().map_err(|e| format!("{v:?} is not an IP address: {e}"))?);
    Ok(())
}

/// A TOML value as `--set` would give it.
fn value_text(v: toml::Value) -> String {
    match v {
        toml::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// `text` as comment lines of at most about 100 columns.
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > 100 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

impl ServerConfig {
    /// The defaults, then `file` (if any), then each `NAME=VALUE` of `sets`.
    pub fn load(file: Option<&std::path::Path>, sets: &[String]) -> Result<ServerConfig, ConfigError> {
        let mut c = ServerConfig::default();
        if let Some(path) = file {
            let text =
                std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
            if is_xml(path, &text) {
                c.apply_site_xml(path, &text)?;
            } else {
                c.apply_toml(path, &text)?;
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

    fn apply_toml(&mut self, path: &std::path::Path, text: &str) -> Result<(), ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|source| ConfigError::Toml { path: path.into(), source })?;
        let properties = table.remove("properties");
        for (name, value) in table {
            self.set(&name, &value_text(value))?;
        }
        match properties {
            None => Ok(()),
            Some(toml::Value::Table(properties)) => {
                for (name, value) in properties {
                    self.set(&name, &value_text(value))?;
                }
                Ok(())
            }
            Some(_) => Err(ConfigError::Setting {
                name: "properties".into(),
                reason: "must be a table of HBase property names".into(),
            }),
        }
    }

    /// An `hbase-site.xml`: the properties we have are applied; the others
    /// are kept in [`Self::ignored`], unless close enough to one of ours to
    /// be a typo.
    fn apply_site_xml(&mut self, path: &std::path::Path, text: &str) -> Result<(), ConfigError> {
        let properties =
            crate::config_xml::properties(text).map_err(|reason| ConfigError::Xml { path: path.into(), reason })?;
        for (name, value) in properties {
            if setting(&name).is_some() || address_part(&name).is_some() {
                self.set(&name, &value)?;
            } else if let Some(near) = nearest(&name) {
                return Err(ConfigError::Setting {
                    name,
                    reason: format!("unknown setting; did you mean {near}? ({})", path.display()),
                });
            } else {
                self.ignored.push(format!("{name} (no such setting in Accordion)"));
            }
        }
        Ok(())
    }

    /// Applies one setting by our name or HBase's property name.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let bad = |reason: String| ConfigError::Setting { name: name.to_string(), reason };
        if let Some(part) = address_part(name) {
            return part(self, value).map_err(bad);
        }
        let Some(s) = setting(name) else {
            let hint = nearest(name).map_or_else(String::new, |near| format!("; did you mean {near}?"));
            return Err(bad(format!("unknown setting{hint} (`accordion server --print-config` lists every setting)")));
        };
        (s.set)(self, value).map_err(bad)
    }

    /// Every setting as TOML, each with a comment saying what it means, its
    /// HBase property name where there is one, and its default; a setting
    /// that is unset is shown commented out. `docs/accordion.toml` is this
    /// for the defaults; loading the text gives this configuration back.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        comment(
            &mut out,
            "Accordion KV server configuration (accordion server --config FILE), as accordion server \
             --print-config prints it: the effective settings, after the file and --set. Each setting \
             says what it means, its HBase property name where HBase has the setting (a [properties] \
             table of HBase names, and --set NAME=VALUE, take that name too), and its default. Byte sizes \
             take HBase's suffixes (128m, 1g). --config also reads HBase's hbase-site.xml.",
        );
        for s in SETTINGS {
            out.push('\n');
            comment(&mut out, s.help);
            let default = s.default.map_or_else(|| "unset".to_string(), |d| s.kind.toml(d).to_string());
            let hbase = s.hbase.unwrap_or("none (Accordion's own setting)");
            comment(&mut out, &format!("HBase: {hbase}. Default: {default}."));
            match (s.get)(self) {
                Some(v) => out.push_str(&format!("{} = {}\n", s.name, s.kind.toml(&v))),
                None => out.push_str(&format!("# {} = {}\n", s.name, s.kind.toml(s.example))),
            }
        }
        out
    }

    /// The adaptive policy carries its threshold R in its name.
    fn apply_adaptive_threshold(&mut self) {
        let base = policy_base(&self.family_template.memstore_policy).to_string();
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
    fn every_default_reads_back_as_written() {
        let c = ServerConfig::default();
        for s in SETTINGS {
            assert_eq!((s.get)(&c).as_deref(), s.default, "{}", s.name);
            assert!(!s.help.is_empty(), "{} has no help", s.name);
            assert_eq!(s.default.is_none(), !s.example.is_empty(), "{}: an example exactly when unset", s.name);
        }
        assert_eq!(c.store.region_flush_size, StoreOptions::default().region_flush_size);
        assert_eq!(c.family_template.memstore_policy, "basic");
        assert_eq!(c.thrift_addr.port(), 9090);
    }

    #[test]
    fn names_are_unique_and_found_by_either_name() {
        let mut seen = std::collections::BTreeSet::new();
        for s in SETTINGS {
            for name in std::iter::once(s.name).chain(s.hbase) {
                assert!(seen.insert(name), "{name} names two settings");
                assert!(std::ptr::eq(setting(name).expect("found"), s), "{name}");
            }
        }
        assert_eq!(setting("hbase.regionserver.memory.budget").map(|s| s.name), Some("memory_budget"));
    }

    #[test]
    fn a_printed_configuration_loads_back_the_same() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sets = [
            "root=hdfs://127.0.0.1:9000/a\"b",
            "hbase.hregion.compacting.memstore.type=ADAPTIVE",
            "adaptive_compaction_threshold=0.35",
            "hbase.memstore.inmemoryflush.threshold.factor=0.02",
            "memstore_index_type=ARRAY_MAP",
            "table_durability=ASYNC_WAL",
            "thrift_addr=0.0.0.0:19090",
            "max_row_size=12345",
        ]
        .map(String::from);
        for c in [ServerConfig::default(), ServerConfig::load(None, &sets).expect("valid")] {
            let printed = c.to_toml();
            let path = dir.path().join("printed.toml");
            std::fs::write(&path, &printed).expect("write");
            let loaded = ServerConfig::load(Some(&path), &[]).expect("the print loads");
            assert_eq!(loaded.to_toml(), printed);
            assert_eq!(loaded.root, c.root);
            assert_eq!(loaded.family_template, c.family_template);
            assert_eq!(loaded.requests.max_row_bytes, c.requests.max_row_bytes);
            assert_eq!(loaded.thrift_addr, c.thrift_addr);
        }
        let c = ServerConfig::load(None, &sets).expect("valid");
        assert_eq!(c.family_template.memstore_policy, "adaptive:0.35");
        let printed = c.to_toml();
        assert!(printed.contains("\nmemstore_policy = \"ADAPTIVE\"\n"), "{printed}");
        assert!(
            printed.contains("# HBase: hbase.hregion.compacting.memstore.type. Default: \"BASIC\".\n"),
            "{printed}"
        );
        assert!(printed.contains("\nroot = 'hdfs://127.0.0.1:9000/a\"b'\n"), "a TOML string: {printed}");
        let default = ServerConfig::default().to_toml();
        assert!(
            default.contains("\n# root = \"hdfs://127.0.0.1:9000/accordion\"\n"),
            "unset, commented out: {default}"
        );
        assert!(default.lines().all(|l| l.len() <= 100), "{default}");
    }

    #[test]
    fn a_policy_may_carry_its_threshold() {
        let c =
            ServerConfig::load(None, &["hbase.hregion.compacting.memstore.type=adaptive:0.2".into()]).expect("valid");
        assert_eq!(c.family_template.memstore_policy, "adaptive:0.2");
        assert_eq!(c.adaptive_threshold, Some(0.2));
    }

    #[test]
    fn a_file_names_settings_at_the_top_or_in_properties() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accordion.toml");
        std::fs::write(
            &path,
            "memstore_policy = \"EAGER\"\nmax_versions = 3\n[properties]\n\"hbase.column.max.version\" = 4\n",
        )
        .expect("write");
        let c = ServerConfig::load(Some(&path), &[]).expect("valid");
        assert_eq!(c.family_template.memstore_policy, "eager");
        assert_eq!(c.family_template.max_versions, 4, "[properties] after the top level");
        std::fs::write(&path, "no_such_setting = 1\n").expect("write");
        let e = ServerConfig::load(Some(&path), &[]).expect_err("unknown").to_string();
        assert!(e.contains("no_such_setting") && e.contains("unknown setting"), "{e}");
        std::fs::write(&path, "properties = 3\n").expect("write");
        assert!(ServerConfig::load(Some(&path), &[]).is_err());
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
