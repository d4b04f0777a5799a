//! `accordion bench`'s subcommands: the memstore benchmark, the write-only
//! driver, the preset runner over the `bench` crate's engines, the split
//! stall benchmark and the cluster scale-out benchmark.

pub mod memstore_bench;
pub mod progress_bar;
pub mod run_cmd;
pub mod scale_out;
pub mod split_bench;
pub mod write_bench;
