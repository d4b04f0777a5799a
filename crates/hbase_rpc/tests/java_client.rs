//! The proof: HBase's own Java client (hbase-client 2.6.4) against
//! `RpcServer`, with a small in-test fake behind it.
//!
//! The client is configured with `RpcConnectionRegistry` and this server as
//! its bootstrap node, so it speaks RPC only (no ZooKeeper): the registry
//! probe and `ClientMetaService` give it the cluster id, the master and
//! `hbase:meta`'s location; a `Scan` of `hbase:meta` gives it table `t`'s
//! region; then `Mutate` (a Put, cells inside the message), `Multi` (a list
//! of Puts, cells in a cell block) and `Get` (cells answered in a cell
//! block) go through `Table`; a Get answered `RegionMovedException` is
//! retried where it points. An `AdminService` call the fake lacks must fail
//! at once with `DoNotRetryIOException`.
//!
//! Needs `java` (17) and `mvn`; the Maven project is `tests/java`. Skips,
//! saying so, only when either is missing.

use std::collections::{BTreeMap, HashSet};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
// The Java tests' Maven and child-process helpers, shared with the
// accordion crate's (one copy of them in the repository).
#[path = "../../accordion/tests/common/maven.rs"]
mod maven;
use hbase_rpc::pb::hbase::pb::{
    self as pb, GetActiveMasterResponse, GetBootstrapNodesResponse, GetClusterIdResponse,
    GetConnectionRegistryResponse, GetMetaRegionLocationsResponse, GetRequest, GetResponse, MultiRequest,
    MultiResponse, MutateRequest, MutateResponse, RegionActionResult, RegionInfo, RegionLocation, ResultOrException,
    ScanRequest, ScanResponse, ServerName, TableName,
};
use hbase_rpc::{Call, Cell, CellType, Reply, RpcError, RpcServer, RpcServices};
use maven::{build, classpath, have_java_and_maven, run, tail};

const CLUSTER_ID: &str = "accordion-hbase-rpc-test";
const START_CODE: u64 = 1;

/// Rows of table `t`: row -> (family, qualifier) -> value.
type Rows = BTreeMap<Bytes, BTreeMap<(Bytes, Bytes), Bytes>>;

struct Fake {
    port: u16,
    rows: Mutex<Rows>,
    /// Whether the first Get of row `moved` has been answered
    /// `RegionMovedException`.
    moved: AtomicBool,
    /// `service.method` of every call, and facts about the cell blocks seen.
    seen: Mutex<HashSet<String>>,
}

impl Fake {
    fn server_name(&self) -> ServerName {
        ServerName { host_name: "127.0.0.1".into(), port: Some(u32::from(self.port)), start_code: Some(START_CODE) }
    }

    fn note(&self, what: impl Into<String>) {
        self.seen.lock().unwrap().insert(what.into());
    }

    fn meta_region() -> RegionInfo {
        RegionInfo {
            region_id: 1,
            table_name: TableName { namespace: Bytes::from_static(b"hbase"), qualifier: Bytes::from_static(b"meta") },
            start_key: Some(Bytes::new()),
            end_key: Some(Bytes::new()),
            offline: Some(false),
            split: Some(false),
            replica_id: Some(0),
        }
    }

    fn table_region() -> RegionInfo {
        RegionInfo {
            region_id: 2,
            table_name: TableName { namespace: Bytes::from_static(b"default"), qualifier: Bytes::from_static(b"t") },
            ..Self::meta_region()
        }
    }

    /// `hbase:meta`'s row for table `t`'s one region, as HBase writes it.
    fn meta_row(&self) -> Vec<Cell> {
        let row = Bytes::from_static(b"t,,2");
        let info = |qualifier: &'static [u8], value: Vec<u8>| Cell::put(row.clone(), "info", qualifier, 1, value);
        let mut region_info = b"PBUF".to_vec();
        region_info.extend(prost::Message::encode_to_vec(&Self::table_region()));
        vec![
            info(b"regioninfo", region_info),
            info(b"seqnumDuringOpen", 1i64.to_be_bytes().to_vec()),
            info(b"server", format!("127.0.0.1:{}", self.port).into_bytes()),
            info(b"serverstartcode", (START_CODE as i64).to_be_bytes().to_vec()),
        ]
    }

    /// A Get of `hbase:meta`: the client reads a table's state row
    /// (`table:state`) before it retries an operation on the table.
    fn meta_get(&self, row: &Bytes) -> Vec<Cell> {
        if &row[..] != b"t" {
            return Vec::new();
        }
        // A bare TableState: unlike info:regioninfo, no "PBUF" magic in front
        // (TableState.parseFrom reads the bytes as the message).
        let state = prost::Message::encode_to_vec(&pb::TableState { state: pb::table_state::State::Enabled as i32 });
        vec![Cell::put(row.clone(), "table", "state", 1, state)]
    }

    fn scan(&self, call: &Call) -> Result<Reply, RpcError> {
        let request: ScanRequest = call.decode()?;
        if request.scan.is_none() {
            // Closing (or renewing) a scanner: they are all closed already.
            return Ok(Reply::new(&ScanResponse::default()));
        }
        let region = request.region.map(|r| r.value).unwrap_or_default();
        if !region.starts_with(b"hbase:meta,") {
            return Err(RpcError::not_implemented("ClientService", "Scan of a user table"));
        }
        self.note("meta scan");
        let cells = self.meta_row();
        let mut response = ScanResponse {
            scanner_id: Some(1),
            more_results: Some(false),
            more_results_in_region: Some(false),
            ttl: Some(60_000),
            ..Default::default()
        };
        if call.cell_block_supported {
            response.cells_per_result = vec![cells.len() as u32];
            response.partial_flag_per_result = vec![false];
            Ok(Reply::with_cells(&response, cells))
        } else {
            response.results = vec![pb::Result { cell: cells.iter().map(to_pb_cell).collect(), ..Default::default() }];
            Ok(Reply::new(&response))
        }
    }

    fn row_cells(&self, row: &Bytes) -> Vec<Cell> {
        let rows = self.rows.lock().unwrap();
        rows.get(row)
            .map(|columns| {
                columns.iter().map(|((f, q), v)| Cell::put(row.clone(), f.clone(), q.clone(), 1, v.clone())).collect()
            })
            .unwrap_or_default()
    }

    /// A `Result` for `cells`: in the cell block when the client takes one.
    fn result(&self, cells: Vec<Cell>, cell_block: bool, out: &mut Vec<Cell>) -> pb::Result {
        if cell_block {
            let count = cells.len() as i32;
            out.extend(cells);
            pb::Result { associated_cell_count: Some(count), stale: Some(false), ..Default::default() }
        } else {
            pb::Result { cell: cells.iter().map(to_pb_cell).collect(), stale: Some(false), ..Default::default() }
        }
    }

    fn get(&self, call: &Call) -> Result<Reply, RpcError> {
        let request: GetRequest = call.decode()?;
        if &request.get.row[..] == b"moved" && !self.moved.swap(true, Ordering::SeqCst) {
            self.note("region moved answered");
            return Err(RpcError::region_moved("127.0.0.1", u32::from(self.port), START_CODE as i64, 5));
        }
        let row = &request.get.row;
        let found = if request.region.value.starts_with(b"hbase:meta,") {
            self.note("meta get");
            self.meta_get(row)
        } else {
            self.row_cells(row)
        };
        let mut cells = Vec::new();
        let result = self.result(found, call.cell_block_supported, &mut cells);
        self.note(format!("get: response cell block {}", !cells.is_empty()));
        Ok(Reply::with_cells(&GetResponse { result: Some(result) }, cells))
    }

    /// Applies a mutation whose cells are inside it or, when it says how
    /// many, next in the request's cell block.
    fn apply(&self, mutation: &pb::MutationProto, block: &mut impl Iterator<Item = Cell>) -> Result<(), RpcError> {
        if mutation.mutate_type != Some(pb::mutation_proto::MutationType::Put as i32) {
            return Err(RpcError::do_not_retry("the fake applies Puts only"));
        }
        let mut cells = Vec::new();
        for column in &mutation.column_value {
            for qv in &column.qualifier_value {
                cells.push(Cell::put(
                    mutation.row.clone().unwrap_or_default(),
                    column.family.clone(),
                    qv.qualifier.clone().unwrap_or_default(),
                    1,
                    qv.value.clone().unwrap_or_default(),
                ));
            }
        }
        let from_block = mutation.associated_cell_count.unwrap_or(0);
        for _ in 0..from_block {
            cells.push(block.next().ok_or_else(|| RpcError::do_not_retry("fewer cells than associated_cell_count"))?);
        }
        let mut rows = self.rows.lock().unwrap();
        for cell in cells {
            assert_eq!(cell.cell_type, CellType::Put);
            rows.entry(cell.row).or_default().insert((cell.family, cell.qualifier), cell.value);
        }
        Ok(())
    }

    fn mutate(&self, call: Call) -> Result<Reply, RpcError> {
        let request: MutateRequest = call.decode()?;
        self.apply(&request.mutation, &mut call.cells.into_iter())?;
        Ok(Reply::new(&MutateResponse { result: None, processed: Some(true), metrics: None }))
    }

    fn multi(&self, call: Call) -> Result<Reply, RpcError> {
        let request: MultiRequest = call.decode()?;
        self.note(format!("multi: request cell block {}", !call.cells.is_empty()));
        let mut block = call.cells.into_iter();
        let mut out_cells = Vec::new();
        let mut response = MultiResponse::default();
        for region_action in &request.region_action {
            let mut results = RegionActionResult::default();
            for action in &region_action.action {
                let result = if let Some(mutation) = &action.mutation {
                    self.apply(mutation, &mut block)?;
                    pb::Result::default()
                } else if let Some(get) = &action.get {
                    self.result(self.row_cells(&get.row), call.cell_block_supported, &mut out_cells)
                } else {
                    return Err(RpcError::do_not_retry("the fake runs Puts and Gets in a Multi"));
                };
                results.result_or_exception.push(ResultOrException {
                    index: action.index,
                    result: Some(result),
                    ..Default::default()
                });
            }
            response.region_action_result.push(results);
        }
        Ok(Reply::with_cells(&response, out_cells))
    }
}

fn to_pb_cell(cell: &Cell) -> pb::Cell {
    pb::Cell {
        row: Some(cell.row.clone()),
        family: Some(cell.family.clone()),
        qualifier: Some(cell.qualifier.clone()),
        timestamp: Some(cell.timestamp as u64),
        cell_type: Some(i32::from(cell.cell_type.code())),
        value: Some(cell.value.clone()),
        tags: None,
    }
}

impl RpcServices for Fake {
    fn call(&self, call: Call) -> Result<Reply, RpcError> {
        self.note(format!("{}.{}", call.service, call.method));
        match (&*call.service, call.method.as_str()) {
            ("ConnectionRegistryService", "GetConnectionRegistry") => {
                Ok(Reply::new(&GetConnectionRegistryResponse { cluster_id: CLUSTER_ID.into() }))
            }
            ("ClientMetaService", "GetClusterId") => {
                Ok(Reply::new(&GetClusterIdResponse { cluster_id: Some(CLUSTER_ID.into()) }))
            }
            ("ClientMetaService", "GetActiveMaster") => {
                Ok(Reply::new(&GetActiveMasterResponse { server_name: Some(self.server_name()) }))
            }
            ("ClientMetaService", "GetMetaRegionLocations") => Ok(Reply::new(&GetMetaRegionLocationsResponse {
                meta_locations: vec![RegionLocation {
                    region_info: Self::meta_region(),
                    server_name: Some(self.server_name()),
                    seq_num: 1,
                }],
            })),
            ("ClientMetaService", "GetBootstrapNodes") => {
                Ok(Reply::new(&GetBootstrapNodesResponse { server_name: vec![self.server_name()] }))
            }
            ("ClientService", "Scan") => self.scan(&call),
            ("ClientService", "Get") => self.get(&call),
            ("ClientService", "Mutate") => self.mutate(call),
            ("ClientService", "Multi") => self.multi(call),
            (service, method) => Err(RpcError::not_implemented(service, method)),
        }
    }
}

#[test]
fn hbase_s_java_client_connects_puts_and_gets_through_the_rpc_server() {
    if !have_java_and_maven() {
        eprintln!("SKIPPED: java and mvn are needed to run HBase's Java client against the server");
        return;
    }
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    build(&project);
    let classpath = classpath(&project);

    // The client's default: KeyValueCodec, so cells travel in cell blocks.
    let seen = probe(&classpath, true);
    for expected in ["multi: request cell block true", "get: response cell block true"] {
        assert!(seen.contains(expected), "{expected} not seen; saw {seen:?}");
    }
    // No codec: every cell inside the protobuf messages.
    let seen = probe(&classpath, false);
    for unexpected in ["multi: request cell block true", "get: response cell block true"] {
        assert!(!seen.contains(unexpected), "{unexpected} without a codec; saw {seen:?}");
    }
    assert!(seen.contains("multi: request cell block false"), "no Multi seen; saw {seen:?}");
}

/// Runs the probe against a fresh server and fake, checks its report, and
/// returns what the fake saw.
fn probe(classpath: &str, codec: bool) -> HashSet<String> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = Arc::new(Fake {
        port,
        rows: Mutex::new(Rows::new()),
        moved: AtomicBool::new(false),
        seen: Mutex::new(HashSet::new()),
    });
    let server = RpcServer::start(listener, fake.clone()).unwrap();

    let mut args = vec!["-cp".to_owned(), classpath.to_owned(), "Probe".to_owned(), port.to_string()];
    if !codec {
        args.push("nocodec".to_owned());
    }
    let (out, err, ok) = run(Command::new("java").args(&args), Duration::from_secs(120));
    // The probe's report, in the test's output (shown on failure, or with
    // --nocapture).
    eprintln!("probe (codec: {codec}) stdout:\n{out}");
    let context = format!("stdout:\n{out}\nstderr (tail):\n{}", tail(&err, 4000));
    assert!(ok, "the probe failed\n{context}");
    let lines: Vec<&str> = out.lines().collect();
    let has = |line: &str| lines.contains(&line);
    assert!(!out.contains("FAIL "), "a step failed\n{context}");
    assert!(has("CONNECTED"), "{context}");
    assert!(has(&format!("META hbase:meta,,1.1588230740 on 127.0.0.1,{port},{START_CODE}")), "{context}");
    assert!(has("PUT r1") && has("MULTI r2 r3"), "{context}");
    assert!(has("GET r1 f:q=v1"), "{context}");
    assert!(has("GET r2 f:q=v2"), "{context}");
    assert!(has("GET r3 f:q=v3 f:q2=w3"), "{context}");
    assert!(has("GET r9 <empty>"), "{context}");
    assert!(has("MOVED vm"), "the client retried where RegionMovedException sent it\n{context}");
    let unimplemented = lines.iter().find(|l| l.starts_with("UNIMPLEMENTED ")).unwrap_or_else(|| panic!("{context}"));
    let ms: u64 = unimplemented.split_whitespace().nth(1).and_then(|t| t.strip_suffix("ms")).unwrap().parse().unwrap();
    assert!(ms < 5_000, "an unimplemented call must fail fast, not at a timeout: {unimplemented}");
    assert!(
        unimplemented.contains(
            "org.apache.hadoop.hbase.DoNotRetryIOException: org.apache.hadoop.hbase.DoNotRetryIOException: AdminService.GetRegionLoad is not implemented"
        ),
        "{unimplemented}"
    );
    assert!(has("DONE"), "{context}");

    let seen = fake.seen.lock().unwrap().clone();
    for expected in [
        "ConnectionRegistryService.GetConnectionRegistry",
        "ClientMetaService.GetMetaRegionLocations",
        "meta scan",
        "ClientService.Mutate",
        "region moved answered",
        "meta get",
    ] {
        assert!(seen.contains(expected), "{expected} not seen; saw {seen:?}\n{context}");
    }
    server.shutdown();
    seen
}
