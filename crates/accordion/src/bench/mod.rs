//! `accordion bench`: load generators and reports. This issue brings the
//! memstore benchmark; the YCSB experiments and engines arrive with the
//! bench issue.

pub mod keys;
pub mod memstore_bench;
pub mod write_bench;
