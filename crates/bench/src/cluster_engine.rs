//! The cluster engine: the bench's workloads against several `accordion
//! server --cluster` processes, driven the way HBase's client drives a
//! cluster — it knows which server holds each region (`getTableRegions`
//! names the owner) and sends each server the rows of its regions, one
//! mutateRows per server per client batch (HBase's AsyncProcess groups a
//! batch per server the same way). A region that moved since is still
//! served: the server that gets its rows forwards them.
//!
//! Counters are the sum of every server's `/status` totals, before and
//! after the run.
//!
//! Thread safety: the region map is read-only after `open`; each server's
//! connection pool is behind its own mutex, held to take or return one.

use std::collections::BTreeMap;

use parking_lot::Mutex;
use server::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::hbase_thrift::BatchMutation;

use crate::BenchError;
use crate::engine::{Engine, EngineCounters};

const TABLE: &[u8] = b"usertable";

/// A live region server: where its Thrift and HTTP services listen.
#[derive(Debug, Clone)]
pub struct ClusterServer {
    pub thrift: String,
    pub http: String,
}

pub struct ClusterEngine {
    servers: Vec<ClusterServer>,
    /// Regions by start key: (start key, index of the owner in `servers`).
    regions: Vec<(Vec<u8>, usize)>,
    pools: Vec<Mutex<Vec<ThriftClient>>>,
    qualifiers: Vec<Vec<u8>>,
    before: EngineCounters,
}

fn err(e: thrift::Error) -> BenchError {
    BenchError::Engine { engine: "cluster".into(), message: error_message(&e) }
}

impl ClusterEngine {
    /// Learns where every region of the bench table is (the table exists:
    /// the caller made it) and notes the servers' counters.
    pub fn open(servers: Vec<ClusterServer>, fields: usize) -> Result<ClusterEngine, BenchError> {
        let first = servers.first().ok_or_else(|| BenchError::Invalid("a cluster of no servers".into()))?;
        let mut c = connect(&first.thrift, false, false).map_err(err)?;
        let mut regions = Vec::new();
        for r in c.get_table_regions(TABLE.to_vec()).map_err(err)? {
            let owner = format!(
                "{}:{}",
                String::from_utf8_lossy(r.server_name.as_deref().unwrap_or_default()),
                r.port.unwrap_or(0)
            );
            let i = servers.iter().position(|s| s.thrift == owner).ok_or_else(|| {
                BenchError::Invalid(format!("region {:?} is held by {owner}, not one of the servers", r.name))
            })?;
            regions.push((r.start_key.unwrap_or_default(), i));
        }
        regions.sort();
        let pools = servers.iter().map(|_| Mutex::new(Vec::new())).collect();
        let mut engine = ClusterEngine {
            servers,
            regions,
            pools,
            qualifiers: (0..fields.max(1)).map(|i| format!("field{i}").into_bytes()).collect(),
            before: EngineCounters::default(),
        };
        engine.before = engine.server_counters();
        Ok(engine)
    }

    /// The index of the server holding `row`.
    fn owner(&self, row: &[u8]) -> usize {
        let i = self.regions.partition_point(|(start, _)| start.as_slice() <= row);
        self.regions.get(i.saturating_sub(1)).map_or(0, |(_, s)| *s)
    }

    fn with_client<T>(
        &self,
        server: usize,
        f: impl FnOnce(&mut ThriftClient) -> thrift::Result<T>,
    ) -> Result<T, BenchError> {
        let pooled = self.pools[server].lock().pop();
        let mut c = match pooled {
            Some(c) => c,
            None => connect(&self.servers[server].thrift, false, false).map_err(err)?,
        };
        let r = f(&mut c).map_err(err);
        if r.is_ok() {
            self.pools[server].lock().push(c);
        }
        r
    }

    /// Each server's `/status` totals, summed.
    fn server_counters(&self) -> EngineCounters {
        let mut sum = EngineCounters::default();
        for s in &self.servers {
            sum.add(&server_counters(&s.http));
        }
        sum
    }
}

/// One server's counters from its `/status` totals.
pub fn server_counters(http: &str) -> EngineCounters {
    let status: Option<serde_json::Value> = ureq::get(&format!("http://{http}/status"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .and_then(|b| serde_json::from_str(&b).ok());
    let Some(s) = status else { return EngineCounters::default() };
    let t = &s["totals"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    EngineCounters {
        flushes: n("disk_flushes"),
        inmemory_flushes: n("inmemory_flushes"),
        merges: n("merges"),
        inmemory_compactions: n("inmemory_compactions"),
        compactions: n("disk_compactions"),
        wal_files: n("wal_files_created"),
        bytes_wal: n("wal_bytes"),
        bytes_flushed: n("bytes_flushed"),
        bytes_compacted: n("bytes_compacted"),
        user_bytes: n("user_bytes"),
        ..EngineCounters::default()
    }
}

impl Engine for ClusterEngine {
    fn name(&self) -> &str {
        "cluster"
    }

    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError> {
        let columns = crate::thrift_engine::row_columns(&self.qualifiers, fields, value);
        let mut per_server: BTreeMap<usize, Vec<BatchMutation>> = BTreeMap::new();
        for k in keys {
            per_server
                .entry(self.owner(k))
                .or_default()
                .push(BatchMutation { row: Some(k.to_vec()), mutations: Some(columns.clone()) });
        }
        for (server, batch) in per_server {
            self.with_client(server, |c| c.mutate_rows(TABLE.to_vec(), batch, BTreeMap::new()))?;
        }
        Ok(())
    }

    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError> {
        self.with_client(self.owner(key), |c| c.get_row(TABLE.to_vec(), key.to_vec(), BTreeMap::new()))
            .map(|rows| !rows.is_empty())
    }

    fn counters(&self) -> EngineCounters {
        self.server_counters().since(&self.before)
    }

    /// The servers are the caller's; only the connections close.
    fn finish(&self) -> Result<(), BenchError> {
        self.pools.iter().for_each(|p| p.lock().clear());
        Ok(())
    }
}
