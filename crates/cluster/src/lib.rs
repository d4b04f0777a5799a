//! # cluster — Accordion KV's cluster mode, on ZooKeeper
//!
//! A cluster is ZooKeeper (membership, leadership), a master and region
//! servers, with files on a shared root (HDFS). This crate holds the
//! coordination: a ZooKeeper session with a blocking API ([`zk`]), region
//! server membership ([`membership`]), the master election ([`election`]),
//! the membership lease a server checks before serving ([`lease`]), the
//! master process ([`master`]) with its assignment and failover pass
//! ([`assignment`]) and a local ZooKeeper server for tests and
//! `accordion cluster` ([`local_zk`]). Of the store it uses only the file
//! systems of the shared root, where the master keeps its catalog
//! ([`catalog_log`]); it never reaches into a store's regions.
//!
//! Znodes under the cluster's root (`zk://…/accordion`): `rs/<server>`
//! (ephemeral, one per live region server), `master-election/m-<seq>`
//! (ephemeral sequential, the lowest is the active master) and
//! `region-ids`, whose sequence numbers new regions' ids ([`zk::Zk::next_sequence`]),
//! and `config`, what every member shares: the root of their files
//! ([`cluster_config`]). No znode per region: the master's catalog of
//! where each region is ([`catalog`], HBase's `hbase:meta`) is a log on the
//! shared root ([`catalog_log`]), and region servers ask the active master
//! for an entry (`GET /catalog`).

pub mod assignment;
pub mod balancer;
pub mod balancer_switch;
pub mod catalog;
pub mod catalog_log;
pub mod client_znodes;
pub mod cluster_config;
pub mod election;
pub mod error;
pub mod lease;
pub mod local_zk;
pub mod master;
mod master_http;
pub mod master_metrics;
pub mod membership;
pub mod operator;
pub mod reports;
pub mod server_load;
pub mod zk;

pub use error::{ClusterError, Result};
