//! Admin calls that HBase's Thrift v1 IDL lacks, as `POST /admin/<call>` on
//! the HTTP port (the shell uses them): `flush?table=T`,
//! `split?table=T&row=R[&at=K]`, `unassign?region=ENC` (close a region),
//! `assign?region=ENC` (open it again), `merge?a=ENC&b=ENC`. Parameters are
//! percent-encoded bytes (row keys may be binary); regions are named by
//! their encoded name, as in HBase's shell.
//!
//! Answers: 200 with a line saying what was done; 400 for a missing or bad
//! parameter or a refused request (not adjacent, not closed, ...); 404 for
//! an unknown table, region or call; 409 for a region that is not serving; 500 for
//! a store failure.

use store::{Store, StoreError};

type Response = (String, &'static str, u16);

/// The bytes of query parameter `key` (`+` is a space, `%XX` a byte).
fn param(query: &str, key: &str) -> Option<Vec<u8>> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then(|| percent_encoding::percent_decode_str(&v.replace('+', " ")).collect())
    })
}

fn text_param(query: &str, key: &str) -> Result<String, Response> {
    match param(query, key) {
        Some(v) if !v.is_empty() => String::from_utf8(v).map_err(|_| bad(format!("?{key}= is not UTF-8"))),
        _ => Err(bad(format!("missing ?{key}="))),
    }
}

fn bad(message: String) -> Response {
    (message + "\n", "text/plain", 400)
}

fn ok(message: String) -> Response {
    (message + "\n", "text/plain", 200)
}

fn failed(e: StoreError) -> Response {
    let code = match &e {
        StoreError::TableNotFound(_) | StoreError::UnknownRegion(_) => 404,
        StoreError::NotServingRegion { .. } => 409,
        StoreError::InvalidArgument(_) | StoreError::TableDisabled(_) => 400,
        _ => 500,
    };
    (format!("{e}\n"), "text/plain", code)
}

/// Runs admin call `call` with `query`.
pub fn respond(store: &Store, call: &str, query: &str) -> Response {
    let run = || -> Result<Response, Response> {
        Ok(match call {
            "flush" => {
                let table = text_param(query, "table")?;
                store.flush_table(&table).map_err(failed)?;
                ok(format!("flushed {table}"))
            }
            "split" => {
                let table = text_param(query, "table")?;
                let row = param(query, "row").unwrap_or_default();
                let at = param(query, "at").filter(|a| !a.is_empty());
                if store.split_region(&table, &row, at.as_deref()).map_err(failed)? {
                    ok(format!("split the region of {table} holding {}", String::from_utf8_lossy(&row)))
                } else {
                    bad("not split: the split point is outside the region or at its start, the region holds one \
                         row, is not open, or still reads through references"
                        .to_string())
                }
            }
            "unassign" => {
                let region = text_param(query, "region")?;
                store.close_region(&region).map_err(failed)?;
                ok(format!("closed region {region}"))
            }
            "assign" => {
                let region = text_param(query, "region")?;
                store.open_region(&region).map_err(failed)?;
                ok(format!("opened region {region}"))
            }
            "merge" => {
                let (a, b) = (text_param(query, "a")?, text_param(query, "b")?);
                let merged = store.merge_regions(&a, &b).map_err(failed)?;
                ok(format!("merged {a} and {b} into {merged}"))
            }
            // Cluster mode (the master's calls): recover a dead server's
            // WAL into recovered edits; list tables other servers created.
            "recover" => {
                let server = text_param(query, "server")?;
                let summary = store.recover_server(&server).map_err(failed)?;
                ok(format!(
                    "recovered the WAL of {server}: {} entries for {} regions",
                    summary.entries,
                    summary.per_region.len()
                ))
            }
            "refresh" => {
                let added = store.refresh_tables().map_err(failed)?;
                ok(format!("{added} new tables"))
            }
            other => (format!("no admin call {other:?}\n"), "text/plain", 404),
        })
    };
    run().unwrap_or_else(|e| e)
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
}
