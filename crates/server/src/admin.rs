//! Admin calls that HBase's Thrift v1 IDL lacks, as `POST /admin/<call>` on
//! the HTTP port (the shell uses them): `create_namespace?name=NS` and
//! `drop_namespace?name=NS` (HBase's namespace DDL), `flush?table=T`,
//! `compact?table=T|region=ENC[&family=F][&major=true]` (HBase's `compact
//! 't', 'f'` and `compact 'REGION'`; the Thrift call compacts whole tables),
//! `split?table=T&row=R[&at=K]`, `unassign?region=ENC` (close a region),
//! `assign?region=ENC` (open it again), `merge?a=ENC&b=ENC`,
//! `alter?table=T&family=F[&VERSIONS=N&TTL=S&...]` (change family F's
//! settings, or add it with the server's defaults for what is not given)
//! and `alter?table=T&delete=F` (remove family F and its data); in a
//! cluster, `sync_table?table=T` (take another server's DDL of T from the
//! root), `refresh` and `recover?server=NAME`. Parameters are
//! percent-encoded bytes (row keys may be binary); regions are named by
//! their encoded name, as in HBase's shell. The calls the master and peers
//! make (assign, unassign, recover, sync_table, refresh) are typed in
//! `http_api::RegionServerCall`, which both sides use.
//!
//! Answers: 200 with a line saying what was done; 400 for a missing or bad
//! parameter or a refused request (not adjacent, not closed, ...); 404 for
//! an unknown table, region or call; 409 for a region that is not serving; 500 for
//! a store failure.

use http_api::RegionServerCall;
use store::{FamilyDescriptor, RegionState, Store, StoreError, TableDescriptor};

use crate::cluster_authority::ClusterAuthority;
use crate::peer::region_ops;

type Response = (String, &'static str, u16);

/// The bytes of query parameter `key` (`+` is a space, `%XX` a byte).
pub(crate) fn param(query: &str, key: &str) -> Option<Vec<u8>> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then(|| percent_encoding::percent_decode_str(&v.replace('+', " ")).collect())
    })
}

pub(crate) fn text_param(query: &str, key: &str) -> Result<String, Response> {
    match param(query, key) {
        Some(v) if !v.is_empty() => String::from_utf8(v).map_err(|_| bad(format!("?{key}= is not UTF-8"))),
        _ => Err(bad(format!("missing ?{key}="))),
    }
}

fn bad(message: String) -> Response {
    (message + "\n", "text/plain", 400)
}

/// A region operation's failure: the store's, the holder's answer as it
/// was, or 409 for a region no server held open in time.
fn op_failed(e: region_ops::RegionOpError) -> Response {
    match e {
        region_ops::RegionOpError::Store(e) => failed(e),
        region_ops::RegionOpError::Refused { status, text } => {
            (text.trim_end().to_string() + "\n", "text/plain", status)
        }
        e @ region_ops::RegionOpError::InTransition { .. } => (e.to_string() + "\n", "text/plain", 409),
    }
}

fn ok(message: String) -> Response {
    (message + "\n", "text/plain", 200)
}

fn failed(e: StoreError) -> Response {
    (format!("{e}\n"), "text/plain", crate::errors::exception(&e).http)
}

/// A refusal with HBase's exception class in front, as HBase's shell
/// prints it (the namespace calls, new enough to have no callers that
/// match on the plain message).
fn failed_as_hbase(e: StoreError) -> Response {
    (crate::errors::client_message(&e) + "\n", "text/plain", crate::errors::exception(&e).http)
}

/// Runs admin call `call` with `query`.
pub fn respond(
    store: &Store,
    template: &FamilyDescriptor,
    router: &crate::peer::routing::Router,
    authority: Option<&dyn ClusterAuthority>,
    call: &str,
    query: &str,
) -> Response {
    if let Some(parsed) = RegionServerCall::parse(call, query) {
        return match parsed {
            Ok(call) => region_server_call(store, authority, call).unwrap_or_else(|e| e),
            Err(e) => (e.message + "\n", "text/plain", e.status),
        };
    }
    // Sent on by another member: run here or refuse (409 when the region
    // is not open here), never send on again.
    let here_only = param(query, "here").as_deref() == Some(b"true");
    let run = || -> Result<Response, Response> {
        Ok(match call {
            "create_namespace" => {
                let name = text_param(query, "name")?;
                let descriptor = store::NamespaceDescriptor { name: name.clone(), configuration: Default::default() };
                store.create_namespace(descriptor).map_err(failed_as_hbase)?;
                ok(format!("created namespace {name}"))
            }
            "drop_namespace" => {
                let name = text_param(query, "name")?;
                store.drop_namespace(&name).map_err(failed_as_hbase)?;
                ok(format!("dropped namespace {name}"))
            }
            "flush" => {
                let table = text_param(query, "table")?;
                region_ops::table_wide(router, here_only, "flush", query, || store.flush_table(&table))
                    .map_err(op_failed)?;
                ok(format!("flushed {table}"))
            }
            "compact" => {
                let family = param(query, "family").filter(|f| !f.is_empty());
                let major = match param(query, "major").as_deref() {
                    None | Some(b"false") => false,
                    Some(b"true") => true,
                    Some(_) => return Err(bad("?major= is true or false".into())),
                };
                let kind = if major { "major-compacted" } else { "compacted" };
                let what = match (param(query, "table"), param(query, "region")) {
                    (Some(_), None) => {
                        let table = text_param(query, "table")?;
                        region_ops::table_wide(router, here_only, "compact", query, || {
                            store.compact_table_family(&table, family.as_deref(), major)
                        })
                        .map_err(op_failed)?;
                        table
                    }
                    (None, Some(_)) => {
                        let region = text_param(query, "region")?;
                        if here_only {
                            store.compact_named_region(&region, family.as_deref(), major).map_err(failed)?;
                        } else {
                            region_ops::compact_region(store, router, &region, family.as_deref(), major, query)
                                .map_err(op_failed)?;
                        }
                        format!("region {region}")
                    }
                    _ => return Err(bad("compact: give ?table= or ?region=".into())),
                };
                match family {
                    Some(f) => ok(format!("{kind} family {} of {what}", String::from_utf8_lossy(&f))),
                    None => ok(format!("{kind} {what}")),
                }
            }
            "split" => {
                let table = text_param(query, "table")?;
                let row = param(query, "row").unwrap_or_default();
                let at = param(query, "at").filter(|a| !a.is_empty());
                let done = if here_only {
                    let split = store.split_region(&table, &row, at.as_deref()).map_err(failed)?;
                    region_ops::Split { split, here: split }
                } else {
                    region_ops::split(store, router, &table, &row, at.as_deref(), query).map_err(op_failed)?
                };
                if done.here {
                    told_everywhere(router, &table)?;
                }
                if done.split {
                    ok(format!("split the region of {table} holding {}", String::from_utf8_lossy(&row)))
                } else {
                    bad(region_ops::NOT_SPLIT.to_string())
                }
            }
            "merge" => {
                let (a, b) = (text_param(query, "a")?, text_param(query, "b")?);
                let (merged, here) = if here_only {
                    (store.merge_regions(&a, &b).map_err(failed)?, true)
                } else {
                    region_ops::merge(store, router, &a, &b, query).map_err(op_failed)?
                };
                if here && let Some(table) = store.table_of_region(&merged) {
                    told_everywhere(router, &table)?;
                }
                ok(format!("merged {a} and {b} into {merged}"))
            }
            "alter" => {
                let table = text_param(query, "table")?;
                let desc = altered(store.describe_table(&table).map_err(failed)?, template, query)?;
                let families: Vec<&str> = desc.families.iter().map(|f| f.name.as_str()).collect();
                let answer = format!("altered {table}: families {}", families.join(", "));
                // In a cluster the table is altered disabled, every server
                // told at each step (as HBase's shell alters with online
                // schema changes off).
                let around = store.as_member().is_some() && store.is_table_enabled(&table).map_err(failed)?;
                if around {
                    store.disable_table(&table).map_err(failed)?;
                    if let Err(e) = told_everywhere(router, &table) {
                        // Not every server drained it: nothing is altered,
                        // and the table serves again.
                        let _ = store.enable_table(&table);
                        let _ = told_everywhere(router, &table);
                        return Err(e);
                    }
                }
                let altered = store.alter_table(desc).map_err(failed).and_then(|()| told_everywhere(router, &table));
                if around {
                    store.enable_table(&table).map_err(failed)?;
                    told_everywhere(router, &table)?;
                }
                altered?;
                ok(answer)
            }
            other => (format!("no admin call {other:?}\n"), "text/plain", 404),
        })
    };
    run().unwrap_or_else(|e| e)
}

/// The calls the master and peers make ([`RegionServerCall`]).
fn region_server_call(
    store: &Store,
    authority: Option<&dyn ClusterAuthority>,
    call: RegionServerCall,
) -> Result<Response, Response> {
    Ok(match call {
        RegionServerCall::Unassign { region } => {
            if store.as_member().is_some() {
                intended_here(store, authority, &region, &[RegionState::Closing, RegionState::Closed])?;
            }
            store.close_region(&region).map_err(failed)?;
            let changes = crate::master_report::region_changed();
            ok(format!("closed region {region}\n{}", http_api::changes_line(changes)))
        }
        RegionServerCall::Assign { region } => {
            if store.as_member().is_some() {
                intended_here(store, authority, &region, &[RegionState::Opening])?;
            }
            open_region(store, &region).map_err(failed)?;
            let changes = crate::master_report::region_changed();
            ok(format!("opened region {region}\n{}", http_api::changes_line(changes)))
        }
        RegionServerCall::AssignBatch { regions } => {
            store.require_member("open regions in a batch for the master").map_err(failed)?;
            ok(assign_batch(store, authority, &regions))
        }
        RegionServerCall::WalOwners => {
            let member = store.require_member("list the WAL directories of the root").map_err(failed)?;
            let owners = member.wal_owners().map_err(failed)?;
            ok(serde_json::to_string(&owners).expect("names serialise"))
        }
        // Cluster mode (the master's calls): recover a dead server's WAL
        // into recovered edits; list tables other servers created.
        RegionServerCall::Recover { server } => {
            let member = store.require_member("recover a dead server's WAL").map_err(failed)?;
            let authority = authority.ok_or_else(not_joined)?;
            if authority.is_member(&server).map_err(unreadable)? {
                return Err(conflict(format!(
                    "region server {server} is live (ZooKeeper lists it); only a dead server's WAL is recovered"
                )));
            }
            let summary = member.recover_server(&server).map_err(failed)?;
            ok(format!(
                "recovered the WAL of {server}: {} entries for {} regions",
                summary.entries,
                summary.per_region.len()
            ))
        }
        RegionServerCall::SyncTable { table } => {
            let member = store.require_member("sync tables from the root").map_err(failed)?;
            let done = member.sync_table(&table).map_err(failed)?;
            ok(format!("{table}: {done:?}"))
        }
        RegionServerCall::Refresh => {
            let member = store.require_member("refresh its tables from the root").map_err(failed)?;
            let added = member.refresh_tables().map_err(failed)?;
            ok(format!("{added} new tables"))
        }
    })
}

fn conflict(message: String) -> Response {
    (message + "\n", "text/plain", 409)
}

fn not_joined() -> Response {
    ("this server has not joined its cluster yet; try again\n".into(), "text/plain", 503)
}

fn unreadable(e: String) -> Response {
    (format!("cannot read the cluster's state (ZooKeeper, the active master's catalog): {e}\n"), "text/plain", 503)
}

/// In a cluster a region opens or closes for an admin call only as the
/// master's catalog says (the one authority, as HBase's AssignmentManager):
/// it must record region `encoded` on this server in one of `states`
/// (OPENING for an assign; CLOSING or CLOSED for an unassign), which the
/// master writes before it calls. Operators move regions through the
/// master (`POST /admin/move|assign|unassign` on its HTTP port).
fn intended_here(
    store: &Store,
    authority: Option<&dyn ClusterAuthority>,
    encoded: &str,
    states: &[RegionState],
) -> Result<(), Response> {
    let authority = authority.ok_or_else(not_joined)?;
    let entry = authority.catalog_entry(encoded).map_err(unreadable)?;
    intended_by(store, entry.as_ref(), encoded, states)
}

/// [`intended_here`] with the catalog's entry for `encoded` already read.
fn intended_by(
    store: &Store,
    entry: Option<&http_api::CatalogEntry>,
    encoded: &str,
    states: &[RegionState],
) -> Result<(), Response> {
    let me = store.as_member().map(|m| m.name()).unwrap_or_default();
    if let Some(e) = entry
        && states.iter().any(|state| e.is(*state, me))
    {
        return Ok(());
    }
    let recorded = match entry {
        None => "has no entry for it".to_string(),
        Some(e) => format!("records it {} on {}", e.state, e.server.as_deref().unwrap_or("no server")),
    };
    Err(conflict(format!(
        "region {encoded}: the master's catalog {recorded}, not {} on this server ({me}); regions move through \
         the active master (POST /admin/move, /admin/assign or /admin/unassign on its HTTP port)",
        states.iter().map(|s| s.name()).collect::<Vec<_>>().join(" or ")
    )))
}

/// Opens region `encoded`; in a cluster, a region this server does not
/// list yet (a table another server created, whose call to take it from
/// the root did not reach this one) is looked for on the root once.
fn open_region(store: &Store, encoded: &str) -> Result<(), StoreError> {
    match store.open_region(encoded) {
        Err(StoreError::UnknownRegion(_)) if store.as_member().is_some() => {
            let member = store.require_member("take tables from the root")?;
            member.refresh_tables()?;
            store.open_region(encoded)
        }
        other => other,
    }
}

/// Regions of one `assign_batch` call opened at once (each open reads its
/// files and replays its recovered edits; a failover opens hundreds).
const BATCH_OPENERS: usize = 4;

/// The master's batched assignment: each region the catalog records
/// OPENING on this server is opened, [`BATCH_OPENERS`] at a time; the
/// answer has one line per region, `opened ID` or `failed ID: why`. The
/// master's view, fresh from every server's reports, is what keeps a
/// region held elsewhere out of a batch (`cluster::reports`): no peer is
/// asked.
fn assign_batch(store: &Store, authority: Option<&dyn ClusterAuthority>, regions: &[String]) -> String {
    // One question to the master for the whole batch; every region's
    // intent was recorded before the call.
    let entries = match authority.map(|a| a.catalog_entries(regions)) {
        None => Err(not_joined()),
        Some(Err(e)) => Err(unreadable(e)),
        Some(Ok(entries)) => Ok(entries),
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: Vec<parking_lot::Mutex<Option<String>>> = regions.iter().map(|_| Default::default()).collect();
    std::thread::scope(|scope| {
        for _ in 0..BATCH_OPENERS.min(regions.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(region) = regions.get(i) else { break };
                    let intended = match &entries {
                        Ok(entries) => intended_by(store, entries.get(region), region, &[RegionState::Opening]),
                        Err(e) => Err(e.clone()),
                    };
                    let line = match intended.and_then(|()| open_region(store, region).map_err(failed)) {
                        Ok(()) => format!("opened {region}"),
                        Err((why, _, _)) => format!("failed {region}: {}", why.trim().replace('\n', " ")),
                    };
                    *outcomes[i].lock() = Some(line);
                }
            });
        }
    });
    let mut lines: Vec<String> = outcomes.into_iter().filter_map(|o| o.into_inner()).collect();
    lines.push(http_api::changes_line(crate::master_report::region_changed()));
    lines.join("\n")
}

/// In a cluster, has every other server take `table`'s regions from the
/// root after a split or merge here (as DDL does: `peer/routing.rs`).
fn told_everywhere(router: &crate::peer::routing::Router, table: &str) -> Result<(), Response> {
    let failed = router.sync_table_everywhere(table);
    if failed.is_empty() {
        return Ok(());
    }
    Err((
        format!(
            "done here, but not every other server confirmed it (the master's next pass tells them): {}\n",
            failed.join("; ")
        ),
        "text/plain",
        500,
    ))
}

/// The family settings `alter` takes, by their HBase shell names.
const FAMILY_SETTINGS: &[&str] =
    &["VERSIONS", "TTL", "IN_MEMORY", "BLOCKCACHE", "BLOOMFILTER", "COMPRESSION", "BLOCKSIZE", "IN_MEMORY_COMPACTION"];

/// `desc` as an alter query changes it: `delete=F` removes family F;
/// `family=F` with settings changes F, or adds it from `template`.
fn altered(mut desc: TableDescriptor, template: &FamilyDescriptor, query: &str) -> Result<TableDescriptor, Response> {
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let key = kv.split_once('=').map_or(kv, |(k, _)| k);
        if !["table", "family", "delete"].contains(&key) && !FAMILY_SETTINGS.contains(&key) {
            return Err(bad(format!("alter: unknown setting {key} (known: {})", FAMILY_SETTINGS.join(", "))));
        }
    }
    match (param(query, "delete"), param(query, "family")) {
        (Some(_), Some(_)) => Err(bad("alter: give either ?family= or ?delete=, not both".into())),
        (Some(name), None) => {
            let name = String::from_utf8(name).map_err(|_| bad("?delete= is not UTF-8".into()))?;
            if FAMILY_SETTINGS.iter().any(|k| param(query, k).is_some()) {
                return Err(bad(format!("alter: settings with delete of family {name}")));
            }
            let before = desc.families.len();
            desc.families.retain(|f| f.name != name);
            if desc.families.len() == before {
                return Err(bad(format!("alter: table {} has no family {name}", desc.name)));
            }
            if desc.families.is_empty() {
                return Err(bad(format!("alter: {name} is the last family of {}; a table needs one", desc.name)));
            }
            Ok(desc)
        }
        (None, Some(name)) => {
            let name = String::from_utf8(name).map_err(|_| bad("?family= is not UTF-8".into()))?;
            let at = match desc.families.iter().position(|f| f.name == name) {
                Some(i) => i,
                None => {
                    let mut f = template.clone();
                    f.name = name;
                    desc.families.push(f);
                    desc.families.len() - 1
                }
            };
            let f = &mut desc.families[at];
            for key in FAMILY_SETTINGS {
                if let Some(v) = param(query, key) {
                    let v = String::from_utf8(v).map_err(|_| bad(format!("?{key}= is not UTF-8")))?;
                    set_family(f, key, &v).map_err(|why| bad(format!("alter: {key} => {v:?}: {why}")))?;
                }
            }
            Ok(desc)
        }
        (None, None) => Err(bad("alter: missing ?family= or ?delete=".into())),
    }
}

/// Sets one of `FAMILY_SETTINGS` from its text.
fn set_family(f: &mut FamilyDescriptor, key: &str, v: &str) -> Result<(), String> {
    let number = |v: &str| v.parse::<u64>().map_err(|_| "not a number".to_string());
    let flag = |v: &str| match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("not true or false".to_string()),
    };
    match key {
        "VERSIONS" => f.max_versions = u32::try_from(number(v)?).map_err(|_| "too large".to_string())?,
        // HBase's shell says FOREVER (or Integer.MAX_VALUE) for no TTL.
        "TTL" if v.eq_ignore_ascii_case("FOREVER") => f.ttl_secs = None,
        "TTL" => {
            let t = number(v)?;
            if t == 0 {
                return Err("a TTL is a positive number of seconds".into());
            }
            f.ttl_secs = (t < i32::MAX as u64).then_some(t);
        }
        "IN_MEMORY" => f.in_memory = flag(v)?,
        "BLOCKCACHE" => f.block_cache = flag(v)?,
        "BLOCKSIZE" => f.block_size = usize::try_from(number(v)?).map_err(|_| "too large".to_string())?,
        "BLOOMFILTER" => f.bloom = crate::thrift::convert::bloom_type(v).ok_or("not NONE, ROW or ROWCOL")?,
        "COMPRESSION" => f.compression = crate::thrift::convert::compression(v).ok_or("not NONE, LZ4 or ZSTD")?,
        "IN_MEMORY_COMPACTION" => {
            let policy = v.to_ascii_lowercase();
            let mut probe = f.clone();
            probe.memstore_policy = policy.clone();
            probe.policy().map_err(|e| e.to_string())?;
            f.memstore_policy = policy;
        }
        _ => return Err("unknown setting".into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_percent_decoded_bytes() {
        assert_eq!(param("table=t&row=a%00b%2B+c", "row"), Some(b"a\0b+ c".to_vec()));
        assert_eq!(param("table=t&row=", "row"), Some(Vec::new()));
        assert_eq!(param("table=t", "row"), None);
        assert_eq!(text_param("a=%FF", "a"), Err(bad("?a= is not UTF-8".into())));
        assert_eq!(text_param("a=", "a"), Err(bad("missing ?a=".into())));
    }

    #[test]
    fn alter_queries_change_add_and_remove_families() {
        use store::storefile::options::BloomType;
        let template = FamilyDescriptor::new("template");
        let desc = TableDescriptor::new("t", vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
        let changed =
            altered(desc.clone(), &template, "table=t&family=f&VERSIONS=5&TTL=60&BLOOMFILTER=row").expect("changed");
        assert_eq!((changed.families[0].max_versions, changed.families[0].ttl_secs), (5, Some(60)));
        assert_eq!(changed.families[0].bloom, BloomType::Row);
        let added = altered(desc.clone(), &template, "table=t&family=h&IN_MEMORY_COMPACTION=EAGER").expect("added");
        assert_eq!(added.families.len(), 3);
        assert_eq!((added.families[2].name.as_str(), added.families[2].memstore_policy.as_str()), ("h", "eager"));
        let removed = altered(desc.clone(), &template, "table=t&delete=g").expect("removed");
        assert_eq!(removed.families.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["f"]);
        for (query, why) in [
            ("table=t&family=f&VERSINS=5", "unknown setting VERSINS"),
            ("table=t&family=f&VERSIONS=x", "not a number"),
            ("table=t&family=f&IN_MEMORY_COMPACTION=sometimes", "IN_MEMORY_COMPACTION"),
            ("table=t&delete=nope", "has no family nope"),
            ("table=t&delete=f&family=g", "not both"),
            ("table=t", "missing ?family= or ?delete="),
        ] {
            let (message, _, code) = altered(desc.clone(), &template, query).expect_err(query);
            assert_eq!(code, 400, "{query}");
            assert!(message.contains(why), "{query}: {message}");
        }
        let last = TableDescriptor::new("t", vec![FamilyDescriptor::new("f")]);
        assert!(altered(last, &template, "table=t&delete=f").expect_err("last").0.contains("last family"));
    }
}
