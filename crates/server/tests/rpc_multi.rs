//! A client's Multi through the RPC adapter: each action reports its own
//! result, and a row the store refuses does not make the adapter write the
//! other rows again. The calls go straight to the adapter (no socket).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::mutation_proto::{ColumnValue, DeleteType, MutationType, column_value::QualifierValue};
use hbase_rpc::pb::hbase::pb::region_specifier::RegionSpecifierType;
use hbase_rpc::pb::hbase::pb::{Action, MultiRequest, MultiResponse, MutationProto, RegionAction, RegionSpecifier};
use hbase_rpc::{Call, RpcServices};
use prost::Message;
use server::gateway::{Gateway, RequestLimits};
use server::rpc::{DdlAdmission, Identity, RpcAdapter};
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
    (store, RpcAdapter::new(Arc::clone(&gateway), identity, DdlAdmission::default()), gateway)
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
    let request = MultiRequest {
        region_action: vec![RegionAction {
            region: RegionSpecifier {
                r#type: RegionSpecifierType::RegionName as i32,
                value: Bytes::from(format!("t,,{}", region.id)),
            },
            action: vec![
                action(0, b"a", MutationType::Delete, column(b"f", b"q", None, Some(DeleteType::DeleteOneVersion))),
                action(1, b"b", MutationType::Put, column(b"nope", b"q", Some(b"x"), None)),
                action(2, b"c", MutationType::Put, column(b"f", b"q", Some(b"y"), None)),
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    let reply = adapter
        .call(Call {
            service: Arc::from("ClientService"),
            method: "Multi".into(),
            param: Bytes::from(request.encode_to_vec()),
            cells: Vec::new(),
            cell_block_supported: true,
            priority: 0,
            timeout: None,
            user: Some("alice".into()),
            peer: "127.0.0.1:5000".parse::<SocketAddr>().unwrap(),
        })
        .expect("the Multi is answered");
    let response = MultiResponse::decode(&reply.message[..]).unwrap();
    let results = &response.region_action_result[0];
    assert!(results.exception.is_none(), "no region-level exception: {:?}", results.exception);
    let by_index =
        |i: u32| results.result_or_exception.iter().find(|r| r.index == Some(i)).expect("a result per action");
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
