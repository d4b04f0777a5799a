//! The thrift engine: the bench's workloads against a running `accordion
//! server` (or HBase's Thrift v1 gateway) — the paper's client/server
//! setup. Each client thread takes a connection from a pool (one per
//! thread at most), writes a batch as one mutateRows and reads with
//! getRow. Counters are the server's, read from its HTTP `/status` before
//! and after the run.
//!
//! The table is created over Thrift, so it has one region and the
//! server's default family settings (its memstore policy is the policy
//! under test: start the server with the one to measure).

use std::collections::BTreeMap;

use parking_lot::Mutex;
use server::thrift::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::thrift::hbase_thrift::{BatchMutation, ColumnDescriptor, Mutation};

use crate::BenchError;
use crate::engine::{Engine, EngineCounters};

const TABLE: &[u8] = b"usertable";

pub struct ThriftEngine {
    addr: String,
    /// The CA file of a server serving Thrift over TLS.
    tls_ca: Option<std::path::PathBuf>,
    http: Option<String>,
    pool: Mutex<Vec<ThriftClient>>,
    qualifiers: Vec<Vec<u8>>,
    before: EngineCounters,
}

/// A framed compact connection, over TLS when the server's CA is given.
fn connect_to(addr: &str, tls_ca: Option<&std::path::Path>) -> thrift::Result<ThriftClient> {
    match tls_ca {
        None => connect(addr, true, true),
        Some(ca) => server::thrift::client::connect_tls(addr, ca, true, true),
    }
}

fn err(e: thrift::Error) -> BenchError {
    BenchError::Engine { engine: "thrift".into(), message: error_message(&e) }
}

impl ThriftEngine {
    /// Connects, (re)creates the bench table, and notes the server's
    /// counters so the run reports only its own.
    pub fn open(
        addr: &str,
        http: Option<&str>,
        fields: usize,
        tls_ca: Option<&std::path::Path>,
    ) -> Result<ThriftEngine, BenchError> {
        let mut c = connect_to(addr, tls_ca).map_err(err)?;
        if c.get_table_names().map_err(err)?.iter().any(|t| t == TABLE) {
            if c.is_table_enabled(TABLE.to_vec()).map_err(err)? {
                c.disable_table(TABLE.to_vec()).map_err(err)?;
            }
            c.delete_table(TABLE.to_vec()).map_err(err)?;
        }
        let cd = ColumnDescriptor { name: Some(b"f".to_vec()), max_versions: Some(1), ..Default::default() };
        c.create_table(TABLE.to_vec(), vec![cd]).map_err(err)?;
        let mut engine = ThriftEngine {
            addr: addr.to_string(),
            tls_ca: tls_ca.map(std::path::Path::to_path_buf),
            http: http.map(str::to_string),
            pool: Mutex::new(vec![c]),
            qualifiers: (0..fields.max(1)).map(|i| format!("field{i}").into_bytes()).collect(),
            before: EngineCounters::default(),
        };
        engine.before = engine.server_counters();
        Ok(engine)
    }

    fn with_client<T>(&self, f: impl FnOnce(&mut ThriftClient) -> thrift::Result<T>) -> Result<T, BenchError> {
        let pooled = self.pool.lock().pop();
        let mut c = match pooled {
            Some(c) => c,
            None => connect_to(&self.addr, self.tls_ca.as_deref()).map_err(err)?,
        };
        let r = f(&mut c).map_err(err);
        // A connection that failed may be out of step; drop it.
        if r.is_ok() {
            self.pool.lock().push(c);
        }
        r
    }

    fn server_counters(&self) -> EngineCounters {
        self.http.as_deref().map(crate::server_status::server_counters).unwrap_or_default()
    }
}

/// A bench row's puts through Thrift: `fields` columns `f:field0..` of
/// `value`, written to the WAL (the thrift and cluster engines' rows).
pub(crate) fn row_columns(qualifiers: &[Vec<u8>], fields: usize, value: &[u8]) -> Vec<Mutation> {
    qualifiers[..fields.min(qualifiers.len())]
        .iter()
        .map(|q| Mutation {
            is_delete: Some(false),
            column: Some([&b"f:"[..], q].concat()),
            value: Some(value.to_vec()),
            write_to_w_a_l: Some(true),
        })
        .collect()
}

impl Engine for ThriftEngine {
    fn name(&self) -> &str {
        "thrift"
    }

    fn write_rows(&self, keys: &[&[u8]], value: &[u8], fields: usize) -> Result<(), BenchError> {
        let batches: Vec<BatchMutation> = keys
            .iter()
            .map(|k| BatchMutation {
                row: Some(k.to_vec()),
                mutations: Some(row_columns(&self.qualifiers, fields, value)),
            })
            .collect();
        self.with_client(|c| c.mutate_rows(TABLE.to_vec(), batches, BTreeMap::new()))
    }

    fn read_row(&self, key: &[u8]) -> Result<bool, BenchError> {
        self.with_client(|c| c.get_row(TABLE.to_vec(), key.to_vec(), BTreeMap::new())).map(|rows| !rows.is_empty())
    }

    fn counters(&self) -> EngineCounters {
        self.server_counters().since(&self.before)
    }

    /// Leaves the server and its data as they are (the server is not ours).
    fn finish(&self) -> Result<(), BenchError> {
        self.pool.lock().clear();
        Ok(())
    }
}
