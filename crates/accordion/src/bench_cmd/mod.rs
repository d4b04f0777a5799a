//! `accordion bench`'s subcommands: the memstore benchmark, the write-only
//! driver, the preset runner over the `bench` crate's engines, the split
//! stall benchmark, the cluster scale-out benchmark, the cluster scale
//! emulator (the master against emulated servers) and YCSB through HBase's
//! Java client against our server and real HBase.

pub mod memstore_bench;
pub mod progress_bar;
pub mod run_cmd;
pub mod run_isolated;
pub mod scale_emulator;
pub mod scale_out;
pub mod split_bench;
pub mod write_bench;
pub mod ycsb_cmd;
