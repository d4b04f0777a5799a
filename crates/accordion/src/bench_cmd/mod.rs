//! `accordion bench`'s subcommands: the memstore benchmark, the write-only
//! driver, and the preset runner over the `bench` crate's engines.

pub mod memstore_bench;
pub mod progress_bar;
pub mod run_cmd;
pub mod write_bench;
