//! # bench — `accordion bench`'s workloads, engines, driver and reports
//!
//! A YCSB-compatible workload ([`workload`], [`keys`]) drives an
//! [`engine::Engine`] from T client threads ([`driver`]); every engine sees
//! the same key sequence (operation `i` always uses the same key, whichever
//! thread runs it). Results carry the counters of DESIGN §6 ([`report`]).
//! Presets scale the papers' experiments to this machine ([`presets`]),
//! keeping the paper's ratios ([`regime`]); each run records its settings
//! ([`settings`]).

pub mod cluster_engine;
pub mod document;
pub mod driver;
pub mod engine;
pub mod hbase_engine;
pub mod keys;
pub mod memory;
pub mod paper;
pub mod plot;
pub mod presets;
pub mod progress;
pub mod read_presets;
pub mod read_report;
pub mod regime;
pub mod report;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_engine;
pub mod server_status;
pub mod settings;
pub mod sysinfo;
pub mod thrift_engine;
pub mod workload;
pub mod ycsb;

/// What can go wrong while benchmarking.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("engine {engine}: {message}")]
    Engine { engine: String, message: String },
    #[error("engine {engine} does not support {what}")]
    Unsupported { engine: String, what: &'static str },
}
