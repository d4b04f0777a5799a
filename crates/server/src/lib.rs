//! # server — `accordion server`: HBase's Thrift v1 API over the store
//!
//! Existing HBase clients (Python's `happybase`, the HBase Thrift gateway's
//! users) talk to [`Server`] unchanged. Every protocol is a thin adapter
//! over one protocol-neutral [`gateway::Gateway`], which decides once per
//! call whether it runs here or on the server holding the region, enforces
//! the request limits and times the calls. The Thrift v1 adapter is
//! [`thrift`]: one port serves the binary and compact protocols over
//! buffered and framed transports ([`thrift::connection`]), and
//! [`thrift::handler`] maps each call of `Hbase.thrift` onto the gateway
//! with HBase's semantics and exceptions. Scan filters use HBase's filter
//! language (`store::read::filter`, run inside the store's scan); scanners
//! have leases ([`scanners`]). Cluster members reach each other through the
//! peer protocol ([`peer`]: routing, forwarded calls, scans across servers,
//! admin calls over HTTP), over TLS when the cluster serves it. The HTTP
//! side ([`http`]) serves Prometheus metrics ([`prometheus`], with request
//! latencies from [`request_metrics`] and the process's figures from
//! [`process_metrics`]), JSON status, and a status page: request rates and
//! latency percentiles of the last minutes ([`request_history`]), tables
//! and regions, the live memstores, `/conf`, `/logs` ([`recent_logs`]),
//! `/health`, and HBase's operator pages: `/jmx` ([`jmx`]), `/stacks`
//! ([`thread_dump`]), `/logLevel` ([`log_level`]) and `/dump` ([`dump`]).
//! TLS ([`tls`]) serves the Thrift port itself and the HTTP port through a
//! relay ([`https`]). Settings have our names and HBase's property names,
//! one table of them in [`config`].

pub mod admin;
pub mod admin_auth;
pub mod cluster_authority;
pub mod config;
pub mod config_xml;
pub mod dump;
pub mod errors;
pub mod gate;
pub mod gateway;
pub mod http;
pub mod http_relay;
pub mod https;
pub mod jmx;
pub mod log_level;
pub mod master_report;
pub mod namespaces;
pub mod object_name;
pub mod peer;
pub mod process_metrics;
pub mod prometheus;
pub mod recent_logs;
pub mod request_history;
pub mod request_metrics;
pub mod rpc;
pub mod scan_attributes;
pub mod scanners;
pub mod server;
pub mod status_source;
pub mod table_schema;
pub mod thread_dump;
pub mod thrift;
pub mod tls;
pub mod tls_relay;

pub use config::ServerConfig;
pub use server::{Server, ServerError};
