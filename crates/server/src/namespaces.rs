//! `GET /namespaces` on the HTTP port: every namespace with its
//! configuration and tables, as JSON; `?name=NS` one of them (404 when it
//! does not exist). Thrift v1 has no namespace calls; the shell's
//! `list_namespace`, `describe_namespace` and `list_namespace_tables` read
//! this, and create and drop go through the admin calls
//! (`create_namespace`, `drop_namespace` in `admin.rs`).
//!
//! Thread safety: reads of the store's namespaces (`Store` calls, safe from
//! any thread); no state of its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use store::{Store, StoreError};

type Response = (String, &'static str, u16);

/// One namespace as `GET /namespaces` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceEntry {
    pub name: String,
    pub configuration: BTreeMap<String, String>,
    pub tables: Vec<String>,
}

fn entry(store: &Store, name: &str) -> Result<NamespaceEntry, StoreError> {
    let desc = store.describe_namespace(name)?;
    Ok(NamespaceEntry { name: desc.name, configuration: desc.configuration, tables: store.namespace_tables(name)? })
}

/// The answer to `GET /namespaces` with `query`.
pub fn respond(store: &Store, query: &str) -> Response {
    let answer = match crate::admin::param(query, "name") {
        Some(_) => match crate::admin::text_param(query, "name") {
            Ok(name) => entry(store, &name).map(|e| vec![e]),
            Err(refused) => return refused,
        },
        None => store.list_namespaces().and_then(|names| names.iter().map(|n| entry(store, n)).collect()),
    };
    match answer {
        Ok(entries) => match serde_json::to_string_pretty(&entries) {
            Ok(json) => (json, "application/json", 200),
            Err(e) => (format!("cannot encode the namespaces: {e}\n"), "text/plain", 500),
        },
        Err(e) => (crate::errors::client_message(&e) + "\n", "text/plain", crate::errors::exception(&e).http),
    }
}
