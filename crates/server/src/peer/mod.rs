//! The peer protocol between the region servers of a cluster: which server
//! holds a region ([`routing`]), a call for a region another server holds
//! sent there ([`forward`]), a scan across regions held by several servers
//! ([`cluster_scan`]), and the admin calls one server makes of another
//! over HTTP ([`http`]), among them the region operations a member runs
//! where the region is ([`region_ops`]). Calls go over the other server's own Thrift port,
//! on a connection that announces itself as a peer's, so the other server
//! answers them itself and never forwards them again.

pub mod cluster_scan;
pub mod forward;
pub mod http;
pub mod kept_http;
pub mod region_ops;
pub mod routing;
