//! The cluster engine: the bench's workloads against several `accordion
//! server --cluster` processes, driven the way HBase's client drives a
//! cluster — it knows which server holds each region (`getTableRegions`
//! names the owner) and sends each server the rows of its regions, one
//! mutateRows per server per client batch (HBase's AsyncProcess groups a
//! batch per server the same way). A region that moved since is still
//! served: the server that gets its rows forwards them. A call that fails
//! (its server died, its region is moving) is retried as HBase's client
//! retries: the region map is read again from a live server and the rows
//! the failed call carried are sent again, with a growing pause, for up to
//! [`RETRY_FOR`] (HBase's `hbase.client.operation.timeout`); the retries
//! are counted ([`ClusterEngine::retries`]).
//!
//! Counters are the sum of every server's `/status` totals, before and
//! after the run.
//!
//! Thread safety: the region map is behind a read-write lock, written only
//! when a retry reads it again; each server's connection pool is behind its
//! own mutex, held to take or return one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use server::thrift::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::thrift::hbase_thrift::BatchMutation;

use crate::BenchError;
use crate::engine::{Engine, EngineCounters};
use crate::server_status::server_counters;

const TABLE: &[u8] = b"usertable";

/// How long a client batch keeps being retried before it fails.
pub const RETRY_FOR: Duration = Duration::from_secs(120);

/// A live region server: where its Thrift and HTTP services listen.
#[derive(Debug, Clone)]
pub struct ClusterServer {
    pub thrift: String,
    pub http: String,
}

pub struct ClusterEngine {
    servers: Vec<ClusterServer>,
    /// Regions by start key: (start key, index of the owner in `servers`).
    regions: RwLock<Vec<(Vec<u8>, usize)>>,
    retries: AtomicU64,
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
        let regions = region_map(&servers, &first.thrift)?;
        let pools = servers.iter().map(|_| Mutex::new(Vec::new())).collect();
        let mut engine = ClusterEngine {
            servers,
            regions: RwLock::new(regions),
            retries: AtomicU64::new(0),
            pools,
            qualifiers: (0..fields.max(1)).map(|i| format!("field{i}").into_bytes()).collect(),
            before: EngineCounters::default(),
        };
        engine.before = engine.server_counters();
        Ok(engine)
    }

    /// The index of the server holding `row`.
    fn owner(&self, row: &[u8]) -> usize {
        let regions = self.regions.read();
        let i = regions.partition_point(|(start, _)| start.as_slice() <= row);
        regions.get(i.saturating_sub(1)).map_or(0, |(_, s)| *s)
    }

    /// Calls (client batches) sent again after a failure, so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Before the next try of a failed call: a pause growing with `attempt`
    /// (HBase's client pauses 100 ms and backs off), then the region map
    /// read again from the first server that answers. An error once
    /// [`RETRY_FOR`] has passed since `began`.
    fn before_retry(&self, began: Instant, attempt: u32, failure: BenchError) -> Result<(), BenchError> {
        if began.elapsed() > RETRY_FOR {
            return Err(failure);
        }
        self.retries.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(100 * u64::from(attempt.min(10))));
        for s in &self.servers {
            if let Ok(map) = region_map(&self.servers, &s.thrift) {
                *self.regions.write() = map;
                break;
            }
        }
        Ok(())
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

/// The bench table's regions as the server at `thrift` reports them: each
/// start key and the index of its owner in `servers`.
fn region_map(servers: &[ClusterServer], thrift: &str) -> Result<Vec<(Vec<u8>, usize)>, BenchError> {
    let mut c = connect(thrift, false, false).map_err(err)?;
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
    Ok(regions)
}

impl Engine for ClusterEngine {
    fn name(&self) -> &str {
        "cluster"
    }

    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError> {
        let columns = crate::thrift_engine::row_columns(&self.qualifiers, fields, value);
        let began = Instant::now();
        let mut pending: Vec<&[u8]> = keys.to_vec();
        for attempt in 1.. {
            let mut per_server: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
            for k in pending {
                per_server.entry(self.owner(k)).or_default().push(k);
            }
            let mut failed: Vec<&[u8]> = Vec::new();
            let mut failure = None;
            for (server, rows) in per_server {
                let batch: Vec<BatchMutation> = rows
                    .iter()
                    .map(|k| BatchMutation { row: Some(k.to_vec()), mutations: Some(columns.clone()) })
                    .collect();
                if let Err(e) = self.with_client(server, |c| c.mutate_rows(TABLE.to_vec(), batch, BTreeMap::new())) {
                    // Sent again whole: a put written twice is one more
                    // version of the same value, as with HBase's retries.
                    failed.extend(rows);
                    failure = Some(e);
                }
            }
            let Some(failure) = failure else { return Ok(()) };
            self.before_retry(began, attempt, failure)?;
            pending = failed;
        }
        unreachable!("the attempts never run out")
    }

    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError> {
        let began = Instant::now();
        for attempt in 1.. {
            match self.with_client(self.owner(key), |c| c.get_row(TABLE.to_vec(), key.to_vec(), BTreeMap::new())) {
                Ok(rows) => return Ok(!rows.is_empty()),
                Err(e) => self.before_retry(began, attempt, e)?,
            }
        }
        unreachable!("the attempts never run out")
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
