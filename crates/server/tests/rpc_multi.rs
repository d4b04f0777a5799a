//! A client's Multi through the RPC adapter: each action reports its own
//! result, and a row the store refuses does not make the adapter write the
//! other rows again. The calls go straight to the adapter (no socket).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::mutation_proto::{ColumnValue, DeleteType, MutationType, column_value::QualifierValue};
use hbase_rpc::pb::hbase::pb::region_specifier::RegionSpecifierType;
use hbase_rpc::pb::hbase::pb::{
    Action, MultiRequest, MultiResponse, MutationProto, RegionAction, RegionActionResult, RegionSpecifier,
    ResultOrException,
};
use hbase_rpc::{Call, Cell as WireCell, RpcServices};
use prost::Message;
use server::gateway::{Gateway, RequestLimits};
use server::rpc::{ClusterLink, DdlAdmission, Identity, RpcAdapter};
use server::scanners::ScannerRegistry;
use store::wal::Durability;
use store::{FamilyDescriptor, Get, Mutation, Store, StoreOptions, TableDescriptor};

fn open(dir: &std::path::Path) -> (Arc<Store>, RpcAdapter, Arc<Gateway>) {
    let store = Arc::new(Store::open(dir, StoreOptions::default()).expect("open"));
    let scanners = Arc::new(ScannerRegistry::new(Duration::from_secs(60), 100, 100, 100));
    let gateway = Arc::new(Gateway::new(
        Arc::clone(&store),
        scanners,
        FamilyDescriptor::new("template"),
        Durability::SyncWal,
        RequestLimits::default(),
    ));
    let identity = Identity { cluster_id: "c".into(), host: "localhost".into(), port: 16020, start_code: 1 };
    (
        store,
        RpcAdapter::new(Arc::clone(&gateway), identity, DdlAdmission::default(), ClusterLink::standalone()),
        gateway,
    )
}

fn column(family: &[u8], qualifier: &[u8], value: Option<&[u8]>, delete: Option<DeleteType>) -> ColumnValue {
    ColumnValue {
        family: Bytes::copy_from_slice(family),
        qualifier_value: vec![QualifierValue {
            qualifier: Some(Bytes::copy_from_slice(qualifier)),
            value: value.map(Bytes::copy_from_slice),
            delete_type: delete.map(|d| d as i32),
            ..Default::default()
        }],
    }
}

fn action(index: u32, row: &[u8], kind: MutationType, column_value: ColumnValue) -> Action {
    Action {
        index: Some(index),
        mutation: Some(MutationProto {
            row: Some(Bytes::copy_from_slice(row)),
            mutate_type: Some(kind as i32),
            column_value: vec![column_value],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One region action on `region` of table `t`.
fn multi_request(region: u64, action: Vec<Action>) -> MultiRequest {
    MultiRequest {
        region_action: vec![RegionAction {
            region: RegionSpecifier {
                r#type: RegionSpecifierType::RegionName as i32,
                value: Bytes::from(format!("t,,{region}")),
            },
            action,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Sends `request` (with `cells` as its cell block) as alice's Multi; the
/// only region action's result, checked to have no region-level exception.
fn multi(adapter: &RpcAdapter, request: &MultiRequest, cells: Vec<WireCell>) -> RegionActionResult {
    let reply = adapter
        .call(Call {
            service: Arc::from("ClientService"),
            method: "Multi".into(),
            param: Bytes::from(request.encode_to_vec()),
            cells,
            cell_block_supported: true,
            priority: 0,
            timeout: None,
            user: Some("alice".into()),
            peer: "127.0.0.1:5000".parse::<SocketAddr>().unwrap(),
        })
        .expect("the Multi is answered");
    let result = MultiResponse::decode(&reply.message[..]).unwrap().region_action_result.remove(0);
    assert!(result.exception.is_none(), "no region-level exception: {:?}", result.exception);
    result
}

/// The result of the action of index `i`.
fn by_index(results: &RegionActionResult, i: u32) -> &ResultOrException {
    results.result_or_exception.iter().find(|r| r.index == Some(i)).expect("a result per action")
}

#[test]
fn a_refused_row_fails_alone_and_the_other_rows_are_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, adapter, gateway) = open(dir.path());
    let mut family = FamilyDescriptor::new("f");
    family.max_versions = 5;
    store.create_table(TableDescriptor::new("t", vec![family]), &[]).unwrap();
    let put = |ts: u64, value: &[u8]| Mutation::Put {
        family: b"f".to_vec(),
        qualifier: b"q".to_vec(),
        timestamp: Some(ts),
        value: value.to_vec(),
    };
    store.mutate_row("t", b"a", &[put(1, b"v1"), put(2, b"v2")], None).unwrap();
    let region = gateway.region_infos("t").unwrap().remove(0);

    // Deleting "the latest version" of a:f:q (no timestamp) removes v2;
    // applying it a second time would remove v1 as well.
    let request = multi_request(
        region.id,
        vec![
            action(0, b"a", MutationType::Delete, column(b"f", b"q", None, Some(DeleteType::DeleteOneVersion))),
            action(1, b"b", MutationType::Put, column(b"nope", b"q", Some(b"x"), None)),
            action(2, b"c", MutationType::Put, column(b"f", b"q", Some(b"y"), None)),
        ],
    );
    let results = multi(&adapter, &request, Vec::new());
    let by_index = |i| by_index(&results, i);
    assert!(by_index(0).exception.is_none() && by_index(0).result.is_some());
    assert!(by_index(2).exception.is_none() && by_index(2).result.is_some());
    let refused = by_index(1).exception.as_ref().expect("the row of an unknown family is refused");
    assert!(refused.name.contains("NoSuchColumnFamilyException"), "{}", refused.name);

    let mut get = Get::new(b"a".to_vec());
    get.max_versions = 5;
    let values: Vec<Vec<u8>> = store.get("t", &get).unwrap().iter().map(|c| c.value.to_vec()).collect();
    assert_eq!(values, vec![b"v1".to_vec()], "the delete of the latest version was applied once");
    let c: Vec<Vec<u8>> = store.get("t", &Get::new(b"c".to_vec())).unwrap().iter().map(|c| c.value.to_vec()).collect();
    assert_eq!(c, vec![b"y".to_vec()]);
}

#[test]
fn each_row_of_a_batch_is_written_with_its_own_cells_around_a_malformed_one() {
    // The batch's changes borrow the request's cells, all rows' in one
    // vector: a row must get exactly its own, whether they came in the
    // message or in the cell block, and a malformed row between two good
    // ones must be refused alone with nothing of it applied.
    let dir = tempfile::tempdir().unwrap();
    let (store, adapter, gateway) = open(dir.path());
    store.create_table(TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]), &[]).unwrap();
    let old =
        Mutation::Put { family: b"f".to_vec(), qualifier: b"q1".to_vec(), timestamp: None, value: b"old".to_vec() };
    store.mutate_row("t", b"b", &[old], None).unwrap();
    let region = gateway.region_infos("t").unwrap().remove(0);

    let mut a_put = column(b"f", b"q1", Some(b"a1"), None);
    a_put.qualifier_value.push(QualifierValue {
        qualifier: Some(Bytes::from_static(b"q2")),
        value: Some(Bytes::from_static(b"a2")),
        ..Default::default()
    });
    // A delete of b:f:q1 and then of a family version with no timestamp,
    // which the adapter refuses after reading the first.
    let mut b_delete = column(b"f", b"q1", None, Some(DeleteType::DeleteOneVersion));
    b_delete
        .qualifier_value
        .push(QualifierValue { delete_type: Some(DeleteType::DeleteFamilyVersion as i32), ..Default::default() });
    // Their cells in the cell block, as the Java client sends a Put's.
    let from_block = |index: u32, row: &'static [u8], count: i32| Action {
        index: Some(index),
        mutation: Some(MutationProto {
            row: Some(Bytes::from_static(row)),
            mutate_type: Some(MutationType::Put as i32),
            associated_cell_count: Some(count),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (c_put, d_put) = (from_block(2, b"c", 3), from_block(3, b"d", 1));
    let latest = i64::MAX;
    let cells = vec![
        WireCell::put(&b"c"[..], &b"f"[..], &b"q1"[..], latest, &b"c1"[..]),
        WireCell::put(&b"c"[..], &b"f"[..], &b"q2"[..], latest, &b"c2"[..]),
        WireCell::put(&b"c"[..], &b"f"[..], &b"q3"[..], latest, &b"c3"[..]),
        WireCell::put(&b"d"[..], &b"f"[..], &b"q1"[..], latest, &b"d1"[..]),
    ];
    let request = multi_request(
        region.id,
        vec![action(0, b"a", MutationType::Put, a_put), action(1, b"b", MutationType::Delete, b_delete), c_put, d_put],
    );
    let results = multi(&adapter, &request, cells);
    let by_index = |i| by_index(&results, i);
    for i in [0, 2, 3] {
        assert!(by_index(i).exception.is_none(), "action {i}: {:?}", by_index(i).exception);
    }
    let refused = by_index(1).exception.as_ref().expect("the malformed delete is refused");
    assert!(refused.name.contains("DoNotRetryIOException"), "{}", refused.name);

    let row = |r: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
        store
            .get("t", &Get::new(r.to_vec()))
            .unwrap()
            .iter()
            .map(|c| (c.qualifier.to_vec(), c.value.to_vec()))
            .collect()
    };
    let pairs = |p: &[(&[u8], &[u8])]| p.iter().map(|(q, v)| (q.to_vec(), v.to_vec())).collect::<Vec<_>>();
    assert_eq!(row(b"a"), pairs(&[(b"q1", b"a1"), (b"q2", b"a2")]));
    assert_eq!(row(b"b"), pairs(&[(b"q1", b"old")]), "nothing of the refused row was applied");
    assert_eq!(row(b"c"), pairs(&[(b"q1", b"c1"), (b"q2", b"c2"), (b"q3", b"c3")]));
    assert_eq!(row(b"d"), pairs(&[(b"q1", b"d1")]));
}
