//! `Gateway`: the server's calls, free of any protocol. A protocol adapter
//! (Thrift v1 in `crate::thrift::handler`; HBase's native RPC next) turns
//! its messages into the request values of [`request`], calls the gateway,
//! and renders the results and [`GatewayError`]s in its own terms. The
//! gateway decides, once per call, whether the call runs here or on the
//! server that holds the region (cluster mode, [`Gateway::placement`]),
//! enforces the request limits, and times every call that reached the
//! store and succeeded into its [`RequestMetrics`].
//!
//! Where a call runs: a row's call runs on the server holding the row's
//! region. Here, the region is OPEN (or any state but OFFLINE: the store
//! answers or refuses it). In a cluster, a region another server holds is
//! an OFFLINE placeholder here, and the call goes to its owner through the
//! peer protocol (`crate::peer`); a call that came from a peer is always
//! answered here, never sent on again, so two servers with stale owner maps
//! cannot bounce a call between them. A multi-row write is split by owner;
//! a scan across regions held by several servers reads each piece where it
//! is held (`peer::cluster_scan`).
//!
//! Thread safety: one gateway serves every connection of every protocol;
//! it holds no lock across calls other than an open scanner's own (see
//! `crate::scanners`); the router's and the metrics' locks are held for a
//! lookup or an update only.

pub mod error;
mod namespaces;
mod reads;
pub mod request;
pub(crate) mod result_size;
mod tables;
mod writes;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use memstore::Cell;
use store::wal::Durability;
use store::{FamilyDescriptor, Store};

pub use error::{GatewayError, GatewayResult, RemoteKind};
pub use request::{CheckAndMutate, RegionLocation, RowWrite, RowWriteRef, ScanRequest, ScannedRows};

use crate::gateway::result_size::row_bytes;
use crate::peer::forward::{self, PeerClient};
use crate::peer::routing::Router;
use crate::request_metrics::{Op, RequestMetrics};
use crate::scanners::ScannerRegistry;

/// Limits the gateway enforces on requests.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// `hbase.table.max.rowsize` (1 GiB): a row bigger than this is refused
    /// on write and on read (RowTooBigException).
    pub max_row_bytes: usize,
    /// Rows one scanner call or multi-row get may return.
    pub max_rows_per_call: usize,
    /// `hbase.server.scanner.max.result.size` (100 MiB): a scanner call's
    /// answer stops at the row that reaches it (the client asks again for
    /// the rest); a multi-row get's answer over it is refused.
    pub max_result_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits { max_row_bytes: 1 << 30, max_rows_per_call: 100_000, max_result_bytes: 100 << 20 }
    }
}

/// Where a row's call runs (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// This server answers (or refuses) it.
    Here,
    /// Another server holds the row's region (`region`: its encoded name),
    /// and its client port is `owner`.
    Elsewhere { region: String, owner: String },
}

pub struct Gateway {
    store: Arc<Store>,
    scanners: Arc<ScannerRegistry>,
    /// The settings of a family a create names without them.
    family_template: FamilyDescriptor,
    /// The durability of a table created through the gateway.
    table_durability: Durability,
    limits: RequestLimits,
    requests: Arc<RequestMetrics>,
    /// Where this server's client port listens (set once it is bound),
    /// reported as the host and port of every region it serves.
    served_at: Arc<OnceLock<std::net::SocketAddr>>,
    /// Cluster mode: where calls for regions held elsewhere go.
    router: Arc<Router>,
}

impl Gateway {
    pub fn new(
        store: Arc<Store>,
        scanners: Arc<ScannerRegistry>,
        family_template: FamilyDescriptor,
        table_durability: Durability,
        limits: RequestLimits,
    ) -> Gateway {
        Gateway {
            store,
            scanners,
            family_template,
            table_durability,
            limits,
            requests: Arc::new(RequestMetrics::default()),
            served_at: Arc::new(OnceLock::new()),
            router: Arc::new(Router::default()),
        }
    }

    /// Where calls for regions another server holds go (cluster mode).
    pub fn router(&self) -> &Arc<Router> {
        &self.router
    }

    /// Set once the client port is bound (see `served_at`).
    pub fn served_at(&self) -> &Arc<OnceLock<std::net::SocketAddr>> {
        &self.served_at
    }

    /// The latencies of the calls the gateway served.
    pub fn request_metrics(&self) -> &Arc<RequestMetrics> {
        &self.requests
    }

    /// The settings a family named without them gets.
    pub fn family_template(&self) -> &FamilyDescriptor {
        &self.family_template
    }

    pub fn limits(&self) -> &RequestLimits {
        &self.limits
    }

    /// Where a call on `row` of `table` runs (see the module doc).
    pub fn placement(&self, table: &str, row: &[u8]) -> Placement {
        // A call another server forwarded is answered here, never again
        // forwarded (see `peer::routing`).
        if !self.router.is_cluster() || crate::peer::routing::serving_peer() {
            return Placement::Here;
        }
        let Ok(Some((info, state))) = self.store.region_state_for(table, row) else {
            return Placement::Here;
        };
        if state != store::RegionState::Offline {
            return Placement::Here;
        }
        let region = info.dir_name();
        match self.router.owner(&region) {
            Some(owner) => Placement::Elsewhere { region, owner },
            // No live server holds it: the store refuses it here.
            None => Placement::Here,
        }
    }

    /// `call` on the server holding `row` of `table`, when another server
    /// holds it; `None`: this server answers. A call whose region has moved
    /// (or whose server died) is sent once more to the region's owner now,
    /// as HBase's client relocates and retries.
    fn forwarded<T>(
        &self,
        table: &str,
        row: &[u8],
        call: impl FnMut(&mut PeerClient) -> thrift::Result<T>,
    ) -> Option<GatewayResult<T>> {
        let Placement::Elsewhere { region, owner } = self.placement(table, row) else {
            return None;
        };
        let mut call = call;
        let mut result = self.router.call(&owner, &mut call);
        let mut at = owner;
        if let Err(e) = &result
            && Router::moved(e)
        {
            self.router.forget(&region);
            if let Placement::Elsewhere { owner: now, .. } = self.placement(table, row)
                && now != at
            {
                result = self.router.call(&now, &mut call);
                at = now;
            }
        }
        Some(result.map_err(|e| forward::failure(e, &region, &at)))
    }

    /// Records a call of kind `op` on `table` begun at `started`, if it
    /// succeeded.
    fn timed<T>(&self, table: &str, op: Op, started: Instant, result: GatewayResult<T>) -> GatewayResult<T> {
        if result.is_ok() {
            self.requests.observe(table, op, started.elapsed());
        }
        result
    }

    fn check_row_size(&self, cells: &[Cell]) -> GatewayResult<()> {
        self.check_row_bytes(row_bytes(cells))
    }

    fn check_row_bytes(&self, bytes: usize) -> GatewayResult<()> {
        if bytes > self.limits.max_row_bytes {
            return Err(GatewayError::RowTooBig { bytes, limit: self.limits.max_row_bytes });
        }
        Ok(())
    }
}
