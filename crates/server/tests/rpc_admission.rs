//! The RPC port's schema-change gate, wired into the adapter: a master call
//! that changes the schema runs for a caller from loopback and is refused,
//! changing nothing, for one from elsewhere (`rpc/admission.rs`). The calls
//! go straight to the adapter with the caller's address set, so the test
//! needs no second network interface.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::{
    ColumnFamilySchema, CreateNamespaceRequest, CreateTableRequest, DeleteTableRequest, GetTableNamesRequest,
    GetTableNamesResponse, NamespaceDescriptor, TableName, TableSchema,
};
use hbase_rpc::{Call, RpcError, RpcServices};
use prost::Message;
use server::gateway::{Gateway, RequestLimits};
use server::rpc::{ClusterLink, DdlAdmission, Identity, RpcAdapter};
use server::scanners::ScannerRegistry;
use store::wal::Durability;
use store::{FamilyDescriptor, Store, StoreOptions};

fn adapter(dir: &std::path::Path, ddl: DdlAdmission) -> RpcAdapter {
    let store = Arc::new(Store::open(dir, StoreOptions::default()).expect("open"));
    let scanners = Arc::new(ScannerRegistry::new(Duration::from_secs(60), 100, 100, 100));
    let gateway = Arc::new(Gateway::new(
        store,
        scanners,
        FamilyDescriptor::new("template"),
        Durability::SyncWal,
        RequestLimits::default(),
    ));
    let identity = Identity { cluster_id: "c".into(), host: "localhost".into(), port: 16020, start_code: 1 };
    RpcAdapter::new(gateway, identity, ddl, ClusterLink::standalone())
}

fn call(adapter: &RpcAdapter, method: &str, message: &impl Message, peer: &str) -> Result<Vec<u8>, RpcError> {
    adapter
        .call(Call {
            service: Arc::from("MasterService"),
            method: method.into(),
            param: Bytes::from(message.encode_to_vec()),
            cells: Vec::new(),
            cell_block_supported: true,
            priority: 200,
            timeout: None,
            user: Some("mallory".into()),
            peer: peer.parse::<SocketAddr>().expect("peer"),
        })
        .map(|reply| reply.message)
}

fn table(name: &str) -> TableName {
    TableName { namespace: Bytes::from_static(b"default"), qualifier: Bytes::copy_from_slice(name.as_bytes()) }
}

fn create(name: &str) -> CreateTableRequest {
    CreateTableRequest {
        table_schema: TableSchema {
            table_name: Some(table(name)),
            column_families: vec![ColumnFamilySchema { name: Bytes::from_static(b"f"), ..Default::default() }],
            ..Default::default()
        },
        ..Default::default()
    }
}

fn tables(adapter: &RpcAdapter, peer: &str) -> Vec<String> {
    let reply = call(adapter, "GetTableNames", &GetTableNamesRequest::default(), peer).expect("listing is served");
    let names = GetTableNamesResponse::decode(&reply[..]).expect("decode");
    names.table_names.iter().map(|t| String::from_utf8_lossy(&t.qualifier).into_owned()).collect()
}

const REMOTE: &str = "10.20.30.40:50000";
const LOCAL: &str = "127.0.0.1:50000";

#[test]
fn schema_changes_from_beyond_loopback_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = adapter(dir.path(), DdlAdmission::default());

    let denied = call(&a, "CreateTable", &create("t"), REMOTE).expect_err("a remote create is refused");
    assert!(denied.class_name().ends_with("AccessDeniedException"), "{}", denied.class_name());
    assert!(denied.is_do_not_retry());
    assert!(tables(&a, REMOTE).is_empty(), "the refused create made no table");

    let ns = CreateNamespaceRequest {
        namespace_descriptor: NamespaceDescriptor { name: Bytes::from_static(b"ns"), configuration: vec![] },
        ..Default::default()
    };
    assert!(call(&a, "CreateNamespace", &ns, REMOTE).is_err(), "a remote namespace create is refused");

    call(&a, "CreateTable", &create("t"), LOCAL).expect("a local create runs");
    assert_eq!(tables(&a, REMOTE), ["t"], "reads are served to remote callers");
    let drop = DeleteTableRequest { table_name: table("t"), ..Default::default() };
    assert!(call(&a, "DeleteTable", &drop, REMOTE).is_err(), "a remote delete is refused");
    assert_eq!(tables(&a, LOCAL), ["t"], "the refused delete left the table");
}

#[test]
fn rpc_remote_ddl_serves_schema_changes_to_every_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = adapter(dir.path(), DdlAdmission { remote_allowed: true });
    call(&a, "CreateTable", &create("t"), REMOTE).expect("a remote create runs");
    assert_eq!(tables(&a, LOCAL), ["t"]);
}
