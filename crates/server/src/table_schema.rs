//! `GET /schema?table=T` on the HTTP port: table T's descriptor as the
//! store keeps it (JSON of `store::TableDescriptor`), every family setting
//! included. Thrift v1's `getColumnDescriptors` carries only seven of them
//! (no block size, no in-memory compaction policy), and the shell's
//! `describe` shows them all, as HBase's shell does.
//!
//! Thread safety: a read of the store's descriptor (`Store::describe_table`,
//! itself safe from any thread); no state of its own.

use store::Store;

type Response = (String, &'static str, u16);

/// The answer to `GET /schema` with `query`.
pub fn respond(store: &Store, query: &str) -> Response {
    // The admin calls' parameter rules: percent-decoded, UTF-8, required.
    let table = match crate::admin::text_param(query, "table") {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    match store.describe_table(&table) {
        Ok(desc) => match serde_json::to_string_pretty(&desc) {
            Ok(json) => (json, "application/json", 200),
            Err(e) => (format!("cannot encode the descriptor of {table}: {e}\n"), "text/plain", 500),
        },
        Err(e) => (format!("{e}\n"), "text/plain", crate::errors::exception(&e).http),
    }
}
