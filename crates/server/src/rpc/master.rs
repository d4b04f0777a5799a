//! `MasterService`: the table and namespace DDL and descriptors
//! hbase-client's `Admin` asks for; merges ([`super::merge`]) and the
//! cluster's status ([`super::cluster_status`]) have their own files.
//!
//! HBase's master runs DDL as procedures and hands the client a procedure
//! id to poll (`GetProcedureResult`). Here every DDL call is done before it
//! answers, so the id it hands out is already finished: `Procedures`
//! remembers the ids it gave (the last `KEEP`) and answers FINISHED for
//! them, NOT_FOUND for any other.
//!
//! Descriptors carry a family's name, VERSIONS, TTL, BLOCKSIZE, BLOCKCACHE
//! and IN_MEMORY (HBase's attribute names); a create reads VERSIONS, TTL,
//! BLOCKSIZE, BLOCKCACHE and IN_MEMORY and takes the server's template for
//! the rest. Calls not listed in `RpcAdapter::master` are refused by name.
//!
//! Thread safety: `Procedures` is one mutex over a small queue, held for an
//! insert or a lookup.

use std::collections::VecDeque;

use bytes::Bytes;
use hbase_rpc::pb::hbase::pb::{
    self as pb, AddColumnRequest, AddColumnResponse, BytesBytesPair, ColumnFamilySchema, CreateNamespaceRequest,
    CreateNamespaceResponse, CreateTableRequest, CreateTableResponse, DeleteColumnRequest, DeleteColumnResponse,
    DeleteNamespaceRequest, DeleteNamespaceResponse, DeleteTableRequest, DeleteTableResponse, DisableTableRequest,
    DisableTableResponse, EnableTableRequest, EnableTableResponse, FlushTableRequest, FlushTableResponse,
    GetNamespaceDescriptorRequest, GetNamespaceDescriptorResponse, GetProcedureResultRequest,
    GetProcedureResultResponse, GetSchemaAlterStatusRequest, GetSchemaAlterStatusResponse, GetTableDescriptorsRequest,
    GetTableDescriptorsResponse, GetTableNamesRequest, GetTableNamesResponse, GetTableStateRequest,
    GetTableStateResponse, IsMasterRunningResponse, ListNamespaceDescriptorsResponse,
    ListTableDescriptorsByNamespaceRequest, ListTableDescriptorsByNamespaceResponse, ModifyColumnRequest,
    ModifyColumnResponse, ModifyTableRequest, ModifyTableResponse, NameStringPair, SplitTableRegionRequest,
    SplitTableRegionResponse, TableSchema, get_procedure_result_response, table_state,
};
use hbase_rpc::{Call, Reply, RpcError};
use parking_lot::Mutex;
use store::{FamilyDescriptor, NamespaceDescriptor, TableDescriptor};

use super::RpcAdapter;
use super::errors::from_gateway;
use super::names::{table_name, wire_table_name};

/// How many finished procedure ids are remembered.
const KEEP: usize = 10_000;
/// HBase's TTL meaning "forever" (`HConstants.FOREVER`).
const FOREVER: u64 = i32::MAX as u64;

#[derive(Default)]
pub struct Procedures {
    state: Mutex<(u64, VecDeque<u64>)>,
}

impl Procedures {
    /// A new procedure id, finished.
    pub(super) fn finished(&self) -> u64 {
        let mut s = self.state.lock();
        s.0 += 1;
        let id = s.0;
        s.1.push_back(id);
        if s.1.len() > KEEP {
            s.1.pop_front();
        }
        id
    }

    fn is_finished(&self, id: u64) -> bool {
        self.state.lock().1.contains(&id)
    }
}

fn attribute(name: &str, value: impl ToString) -> BytesBytesPair {
    BytesBytesPair {
        first: Bytes::copy_from_slice(name.as_bytes()),
        second: Bytes::from(value.to_string().into_bytes()),
    }
}

/// A table's descriptor as `TableSchema`.
pub fn table_schema(desc: &TableDescriptor) -> TableSchema {
    TableSchema {
        table_name: Some(wire_table_name(&desc.name)),
        attributes: vec![],
        column_families: desc
            .families
            .iter()
            .map(|f| ColumnFamilySchema {
                name: Bytes::copy_from_slice(f.name.as_bytes()),
                attributes: vec![
                    attribute("BLOCKCACHE", f.block_cache),
                    attribute("BLOCKSIZE", f.block_size),
                    attribute("IN_MEMORY", f.in_memory),
                    attribute("TTL", f.ttl_secs.unwrap_or(FOREVER)),
                    attribute("VERSIONS", f.max_versions),
                ],
                configuration: vec![],
            })
            .collect(),
        configuration: vec![],
    }
}

/// A `TableSchema` as the store's descriptor, families from `template`.
pub fn table_descriptor(schema: &TableSchema, template: &FamilyDescriptor) -> Result<TableDescriptor, RpcError> {
    table_descriptor_over(schema, template, None)
}

/// A `TableSchema` as the store's descriptor: each family starts from
/// `current`'s family of that name when there is one (a modify changes
/// what it names and keeps the rest), else from `template`.
fn table_descriptor_over(
    schema: &TableSchema,
    template: &FamilyDescriptor,
    current: Option<&TableDescriptor>,
) -> Result<TableDescriptor, RpcError> {
    let name =
        table_name(schema.table_name.as_ref().ok_or_else(|| RpcError::do_not_retry("a table schema without a name"))?)?;
    let mut families = Vec::with_capacity(schema.column_families.len());
    for cf in &schema.column_families {
        let base = current.and_then(|d| d.family(&cf.name)).unwrap_or(template);
        families.push(family_descriptor(cf, base)?);
    }
    Ok(TableDescriptor::new(name, families))
}

/// A `ColumnFamilySchema` over `base`: its name, and the attributes it sets.
fn family_descriptor(cf: &ColumnFamilySchema, base: &FamilyDescriptor) -> Result<FamilyDescriptor, RpcError> {
    let mut f = base.clone();
    f.name = String::from_utf8(cf.name.to_vec()).map_err(|_| RpcError::do_not_retry("family names must be UTF-8"))?;
    for a in &cf.attributes {
        let value = String::from_utf8_lossy(&a.second);
        let bad = || {
            RpcError::do_not_retry(format!("family {}: bad {} {value:?}", f.name, String::from_utf8_lossy(&a.first)))
        };
        match &a.first[..] {
            b"VERSIONS" => f.max_versions = value.parse().map_err(|_| bad())?,
            b"TTL" => {
                let ttl: u64 = value.parse().map_err(|_| bad())?;
                f.ttl_secs = (ttl < FOREVER).then_some(ttl);
            }
            b"BLOCKSIZE" => f.block_size = value.parse().map_err(|_| bad())?,
            b"BLOCKCACHE" => f.block_cache = value.eq_ignore_ascii_case("true"),
            b"IN_MEMORY" => f.in_memory = value.eq_ignore_ascii_case("true"),
            // HBase's other attributes keep this server's settings.
            _ => {}
        }
    }
    Ok(f)
}

fn namespace_descriptor(d: NamespaceDescriptor) -> pb::NamespaceDescriptor {
    pb::NamespaceDescriptor {
        name: Bytes::from(d.name.into_bytes()),
        configuration: d.configuration.into_iter().map(|(name, value)| NameStringPair { name, value }).collect(),
    }
}

impl RpcAdapter {
    pub(super) fn master(&self, method: &str, call: &Call) -> Result<Reply, RpcError> {
        self.ddl.check(method, call.peer)?;
        let g = &self.gateway;
        let done = || Some(self.procedures.finished());
        Ok(match method {
            "IsMasterRunning" => Reply::new(&IsMasterRunningResponse { is_master_running: true }),
            "CreateTable" => {
                let r: CreateTableRequest = call.decode()?;
                let desc = table_descriptor(&r.table_schema, g.family_template())?;
                let splits: Vec<Vec<u8>> = r.split_keys.iter().map(|k| k.to_vec()).collect();
                g.create_table_split(desc, &splits).map_err(from_gateway)?;
                Reply::new(&CreateTableResponse { proc_id: done() })
            }
            "DeleteTable" => {
                let r: DeleteTableRequest = call.decode()?;
                g.delete_table(&table_name(&r.table_name)?).map_err(from_gateway)?;
                Reply::new(&DeleteTableResponse { proc_id: done() })
            }
            "EnableTable" => {
                let r: EnableTableRequest = call.decode()?;
                g.enable_table(&table_name(&r.table_name)?).map_err(from_gateway)?;
                Reply::new(&EnableTableResponse { proc_id: done() })
            }
            "DisableTable" => {
                let r: DisableTableRequest = call.decode()?;
                g.disable_table(&table_name(&r.table_name)?).map_err(from_gateway)?;
                Reply::new(&DisableTableResponse { proc_id: done() })
            }
            "ModifyTable" => {
                let r: ModifyTableRequest = call.decode()?;
                let name = table_name(&r.table_name)?;
                let current = g.describe_table(&name).map_err(from_gateway)?;
                let desc = table_descriptor_over(&r.table_schema, g.family_template(), Some(&current))?;
                if desc.name != name {
                    return Err(RpcError::do_not_retry("ModifyTable cannot rename a table"));
                }
                g.alter_table(desc).map_err(from_gateway)?;
                Reply::new(&ModifyTableResponse { proc_id: done() })
            }
            "AddColumn" | "ModifyColumn" => {
                let (table, cf) = if method == "AddColumn" {
                    let r: AddColumnRequest = call.decode()?;
                    (r.table_name, r.column_families)
                } else {
                    let r: ModifyColumnRequest = call.decode()?;
                    (r.table_name, r.column_families)
                };
                let mut desc = g.describe_table(&table_name(&table)?).map_err(from_gateway)?;
                let existing = desc.families.iter().position(|f| f.name.as_bytes() == &cf.name[..]);
                match (method, existing) {
                    ("AddColumn", Some(_)) => {
                        return Err(RpcError::new(
                            "org.apache.hadoop.hbase.InvalidFamilyOperationException",
                            format!("family {} already exists", String::from_utf8_lossy(&cf.name)),
                            true,
                        ));
                    }
                    ("AddColumn", None) => desc.families.push(family_descriptor(&cf, g.family_template())?),
                    (_, Some(i)) => desc.families[i] = family_descriptor(&cf, &desc.families[i])?,
                    (_, None) => {
                        return Err(RpcError::new(
                            "org.apache.hadoop.hbase.InvalidFamilyOperationException",
                            format!("family {} does not exist", String::from_utf8_lossy(&cf.name)),
                            true,
                        ));
                    }
                }
                g.alter_table(desc).map_err(from_gateway)?;
                if method == "AddColumn" {
                    Reply::new(&AddColumnResponse { proc_id: done() })
                } else {
                    Reply::new(&ModifyColumnResponse { proc_id: done() })
                }
            }
            "DeleteColumn" => {
                let r: DeleteColumnRequest = call.decode()?;
                let mut desc = g.describe_table(&table_name(&r.table_name)?).map_err(from_gateway)?;
                let before = desc.families.len();
                desc.families.retain(|f| f.name.as_bytes() != &r.column_name[..]);
                if desc.families.len() == before {
                    return Err(RpcError::new(
                        "org.apache.hadoop.hbase.InvalidFamilyOperationException",
                        format!("family {} does not exist", String::from_utf8_lossy(&r.column_name)),
                        true,
                    ));
                }
                g.alter_table(desc).map_err(from_gateway)?;
                Reply::new(&DeleteColumnResponse { proc_id: done() })
            }
            "FlushTable" => {
                let r: FlushTableRequest = call.decode()?;
                if !r.column_family.is_empty() {
                    return Err(RpcError::do_not_retry("flushing some families of a table is not supported here"));
                }
                g.flush_table(&table_name(&r.table_name)?).map_err(from_gateway)?;
                Reply::new(&FlushTableResponse { proc_id: done() })
            }
            "SplitRegion" => {
                let r: SplitTableRegionRequest = call.decode()?;
                let table = table_name(&r.region_info.table_name)?;
                let start = r.region_info.start_key.clone().unwrap_or_default();
                let at = r.split_row.as_deref().filter(|a| !a.is_empty());
                if !g.split_region(&table, &start, at).map_err(from_gateway)? {
                    return Err(RpcError::do_not_retry(crate::peer::region_ops::NOT_SPLIT));
                }
                Reply::new(&SplitTableRegionResponse { proc_id: done() })
            }
            "MergeTableRegions" => self.merge(call, done)?,
            "GetClusterStatus" => self.cluster_status(call)?,
            "GetSchemaAlterStatus" => {
                // A schema change is done everywhere before it answers.
                let r: GetSchemaAlterStatusRequest = call.decode()?;
                let regions = g.region_infos(&table_name(&r.table_name)?).map_err(from_gateway)?;
                Reply::new(&GetSchemaAlterStatusResponse {
                    yet_to_update_regions: Some(0),
                    total_regions: Some(regions.len() as u32),
                })
            }
            // Master.proto spells it so (the client sends the proto's name).
            "getProcedureResult" => {
                let r: GetProcedureResultRequest = call.decode()?;
                let state = if self.procedures.is_finished(r.proc_id) {
                    get_procedure_result_response::State::Finished
                } else {
                    get_procedure_result_response::State::NotFound
                };
                Reply::new(&GetProcedureResultResponse { state: state as i32, ..Default::default() })
            }
            "GetTableDescriptors" => {
                let r: GetTableDescriptorsRequest = call.decode()?;
                let names = if r.table_names.is_empty() {
                    self.listed(r.regex.as_deref(), r.namespace.as_deref())?
                } else {
                    r.table_names.iter().map(table_name).collect::<Result<_, _>>()?
                };
                // A table that does not exist is left out (the client says
                // TableNotFoundException when it asked for one).
                let table_schema =
                    names.iter().filter_map(|n| g.describe_table(n).ok()).map(|d| table_schema(&d)).collect();
                Reply::new(&GetTableDescriptorsResponse { table_schema })
            }
            "GetTableNames" => {
                let r: GetTableNamesRequest = call.decode()?;
                let names = self.listed(r.regex.as_deref(), r.namespace.as_deref())?;
                Reply::new(&GetTableNamesResponse { table_names: names.iter().map(|n| wire_table_name(n)).collect() })
            }
            "GetTableState" => {
                let r: GetTableStateRequest = call.decode()?;
                let enabled = g.is_table_enabled(&table_name(&r.table_name)?).map_err(from_gateway)?;
                let state = if enabled { table_state::State::Enabled } else { table_state::State::Disabled };
                Reply::new(&GetTableStateResponse { table_state: pb::TableState { state: state as i32 } })
            }
            "CreateNamespace" => {
                let r: CreateNamespaceRequest = call.decode()?;
                let d = r.namespace_descriptor;
                let name = String::from_utf8(d.name.to_vec())
                    .map_err(|_| RpcError::do_not_retry("namespace names must be UTF-8"))?;
                let configuration = d.configuration.into_iter().map(|p| (p.name, p.value)).collect();
                g.create_namespace(NamespaceDescriptor { name, configuration }).map_err(from_gateway)?;
                Reply::new(&CreateNamespaceResponse { proc_id: done() })
            }
            "DeleteNamespace" => {
                let r: DeleteNamespaceRequest = call.decode()?;
                g.drop_namespace(&r.namespace_name).map_err(from_gateway)?;
                Reply::new(&DeleteNamespaceResponse { proc_id: done() })
            }
            "GetNamespaceDescriptor" => {
                let r: GetNamespaceDescriptorRequest = call.decode()?;
                let d = g.describe_namespace(&r.namespace_name).map_err(from_gateway)?;
                Reply::new(&GetNamespaceDescriptorResponse { namespace_descriptor: namespace_descriptor(d) })
            }
            "ListNamespaceDescriptors" => {
                let mut out = Vec::new();
                for name in g.list_namespaces().map_err(from_gateway)? {
                    out.push(namespace_descriptor(g.describe_namespace(&name).map_err(from_gateway)?));
                }
                Reply::new(&ListNamespaceDescriptorsResponse { namespace_descriptor: out })
            }
            "ListTableDescriptorsByNamespace" => {
                let r: ListTableDescriptorsByNamespaceRequest = call.decode()?;
                let names = g.namespace_tables(&r.namespace_name).map_err(from_gateway)?;
                let table_schema =
                    names.iter().filter_map(|n| g.describe_table(n).ok()).map(|d| table_schema(&d)).collect();
                Reply::new(&ListTableDescriptorsByNamespaceResponse { table_schema })
            }
            other => match self.master_op(other, call) {
                Some(answer) => answer?,
                None => return Err(RpcError::not_implemented(&call.service, other)),
            },
        })
    }

    /// The tables a listing names: all, or a namespace's, and of those the
    /// ones whose name the client's pattern matches (see [`name_matcher`]).
    fn listed(&self, regex: Option<&str>, namespace: Option<&str>) -> Result<Vec<String>, RpcError> {
        let matches = name_matcher(regex)?;
        let mut names = match namespace.filter(|n| !n.is_empty()) {
            Some(ns) => self.gateway.namespace_tables(ns).map_err(from_gateway)?,
            None => self.gateway.list_tables(),
        };
        names.retain(|n| matches(n));
        names.sort();
        Ok(names)
    }
}

/// Whether a table's name matches `Admin.listTableNames(Pattern)`'s
/// pattern as HBase's master matches it: the whole name (`ns:t`, or `t` in
/// the default namespace), and for a default-namespace table also
/// `default:t`. Java's and Rust's regular expressions share their common
/// forms (classes, groups, alternation, repetition); a pattern Rust cannot
/// read (a look-around, a back-reference) is refused, naming it.
fn name_matcher(regex: Option<&str>) -> Result<impl Fn(&str) -> bool, RpcError> {
    let pattern = match regex.filter(|r| !r.is_empty()) {
        None => None,
        Some(re) => Some(regex::Regex::new(&format!("^(?:{re})$")).map_err(|e| {
            RpcError::do_not_retry(format!("the table name pattern {re:?} is not supported here: {e}"))
        })?),
    };
    Ok(move |name: &str| match &pattern {
        None => true,
        Some(p) => p.is_match(name) || (!name.contains(':') && p.is_match(&format!("default:{name}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_round_trips_through_the_store_s_descriptor() {
        let mut family = FamilyDescriptor::new("f");
        family.max_versions = 3;
        family.ttl_secs = Some(60);
        let desc = TableDescriptor::new("ns:t", vec![family, FamilyDescriptor::new("g")]);
        let schema = table_schema(&desc);
        assert_eq!(&schema.table_name.as_ref().unwrap().namespace[..], b"ns");
        let back = table_descriptor(&schema, &FamilyDescriptor::new("template")).unwrap();
        assert_eq!(back.name, "ns:t");
        assert_eq!((back.families[0].max_versions, back.families[0].ttl_secs), (3, Some(60)));
        assert_eq!((back.families[1].name.as_str(), back.families[1].ttl_secs), ("g", None));
    }

    #[test]
    fn a_listing_pattern_matches_whole_names_as_hbase_s_master_does() {
        let m = name_matcher(Some("us.*")).unwrap();
        assert!(m("users") && !m("ausers") && !m("ns:users"));
        let m = name_matcher(Some("default:u.*")).unwrap();
        assert!(m("users"), "a default-namespace table also matches as default:name");
        let m = name_matcher(Some("ns:.*|t[0-9]")).unwrap();
        assert!(m("ns:a") && m("t1") && !m("t10"));
        assert!(name_matcher(None).unwrap()("anything"));
        let refused = name_matcher(Some("(?!x).*")).err().expect("a look-ahead is refused");
        assert!(refused.is_do_not_retry() && refused.message().contains("(?!x)"), "{refused}");
    }

    #[test]
    fn procedures_handed_out_are_finished_and_others_unknown() {
        let p = Procedures::default();
        let a = p.finished();
        assert!(p.is_finished(a));
        assert!(!p.is_finished(a + 1));
    }
}
