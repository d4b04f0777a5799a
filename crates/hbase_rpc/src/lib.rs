//! HBase 2's native RPC, the wire that HBase's own Java client
//! (`org.apache.hbase:hbase-client` 2.6) speaks to masters and region servers.
//!
//! The messages (`pb`) are generated from HBase's `.proto` files in
//! `org.apache.hbase:hbase-protocol-shaded:2.6.4` by the small generator in
//! `crates/hbase_rpc/codegen` (`cd crates/hbase_rpc/codegen && cargo run
//! --release`: protox + prost-build, no `protoc`), and committed.

pub mod pb;
