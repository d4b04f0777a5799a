//! HBase 2's native RPC, the wire that HBase's own Java client
//! (`org.apache.hbase:hbase-client` 2.6) speaks to masters and region
//! servers: this crate holds its messages, its framing and cell blocks, and a
//! threaded server that hands each call to an [`RpcServices`]
//! implementation.
//!
//! The messages ([`pb`]) are generated from HBase's `.proto` files in
//! `org.apache.hbase:hbase-protocol-shaded:2.6.4` by the small generator in
//! `crates/hbase_rpc/codegen` (`cd crates/hbase_rpc/codegen && cargo run
//! --release`: protox + prost-build, no `protoc`), and committed.
//!
//! The wire, per connection ([`preamble`], [`frame`], [`cell_block`]):
//!
//! 1. Six bytes: `HBas`, version 0, auth 80 (SIMPLE). (`Regist` instead asks
//!    for the cluster id and ends the connection; `Securi` asks for a
//!    Kerberos principal and is told security is off.)
//! 2. The `ConnectionHeader`: a 4-byte length and the protobuf. It names the
//!    one service the connection calls, and the cell block codec. No reply.
//! 3. Calls, each a 4-byte length then a delimited `RequestHeader` (call id,
//!    method), the delimited request message and the cell block; responses
//!    alike, with `ResponseHeader` (call id, exception). Calls overlap:
//!    responses go out as calls finish, matched by call id.
//!
//! Errors reach the client as HBase exceptions by class name ([`RpcError`]),
//! so its retry logic treats them as it treats HBase's own.
//!
//! Serving is implementing [`RpcServices`] and starting an [`RpcServer`] on
//! a bound listener:
//!
//! ```no_run
//! use std::net::TcpListener;
//! use std::sync::Arc;
//! use hbase_rpc::pb::hbase::pb::{GetClusterIdRequest, GetClusterIdResponse};
//! use hbase_rpc::{Call, Reply, RpcError, RpcServer, RpcServices};
//!
//! struct Registry;
//!
//! impl RpcServices for Registry {
//!     fn call(&self, call: Call) -> Result<Reply, RpcError> {
//!         match (&*call.service, call.method.as_str()) {
//!             ("ClientMetaService", "GetClusterId") => {
//!                 let _request: GetClusterIdRequest = call.decode()?;
//!                 Ok(Reply::new(&GetClusterIdResponse { cluster_id: Some("c1".into()) }))
//!             }
//!             (service, method) => Err(RpcError::not_implemented(service, method)),
//!         }
//!     }
//! }
//!
//! let listener = TcpListener::bind("127.0.0.1:16020")?;
//! let server = RpcServer::start(listener, Arc::new(Registry))?;
//! // ... serve until asked to stop, then:
//! server.shutdown();
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Thread safety: see each module's header; the server's rules are in
//! [`server`], the services' in [`service`].

pub mod cell;
pub mod cell_block;
pub mod error;
pub mod frame;
pub mod pb;
mod pool;
pub mod preamble;
mod response_writer;
pub mod server;
pub mod service;

pub use cell::{Cell, CellError, CellType, KeyValueParts};
pub use cell_block::{CellCodec, CellSource};
pub use error::{RpcError, WireError};
pub use server::{RpcServer, RpcServerConfig};
pub use service::{Call, Immediate, Reply, RpcServices};

/// The HBase release whose `.proto` files [`pb`] is generated from, and so
/// whose protocol a server built on this crate speaks: what it reports as
/// its HBase version (`ClusterStatus.hbase_version`).
pub const HBASE_VERSION: &str = "2.6.4";
