//! Compaction jobs: disk compactions run by the threads of
//! `compaction_queue.rs` — minor ones chosen by the exploring policy after flushes, and major ones on request.
//!
//! The queue and its deduplication are `compaction_queue.rs`; this module is
//! the job. Worker threads hold only a weak reference to the store's
//! services.

use std::sync::{Arc, Weak};

use crate::error::Result;
use crate::family_store::FamilyStore;
use crate::jobs::compaction::policy::select_exploring;
use crate::region::Region;
use crate::services::Services;

/// Starts the compaction threads.
pub(crate) fn start(services: &Arc<Services>) {
    let weak = Arc::downgrade(services);
    services.compaction_queue.start(move |region, store| run(&weak, region, store));
}

/// Compacts `store` of `region` now: every file when `major`, else the
/// exploring policy's choice — or every file when the store still reads
/// through references to a split parent (HBase compacts a daughter's
/// references away first). Once a daughter no longer refers to its parent,
/// the parent's directory goes if its other daughter does not either.
/// Returns whether a compaction ran.
pub(crate) fn compact_store(
    services: &Services,
    region: &Region,
    store: &Arc<FamilyStore>,
    major: bool,
) -> Result<bool> {
    let cfg = &services.options.compaction;
    let had_references = store.has_references();
    let done = store.compact_selected(major, |files| {
        if had_references {
            return Some(files.to_vec());
        }
        let sizes: Vec<u64> = files.iter().map(|f| f.info().file_size).collect();
        select_exploring(&sizes, cfg).map(|range| files[range].to_vec())
    })?;
    if had_references {
        for parent in region.info().parents() {
            crate::region::retired_parents::remove_parent_if_unreferenced(services, &region.info().table, parent)?;
        }
    }
    Ok(done.is_some())
}

/// One request of a compaction thread; false once the store is gone.
fn run(weak: &Weak<Services>, region: Arc<Region>, store: Arc<FamilyStore>) -> bool {
    let Some(services) = weak.upgrade() else { return false };
    services.compaction_queue.take_pending(&region, &store);
    if region.is_closed() || services.compaction_queue.is_stopped() {
        return true;
    }
    match compact_store(&services, &region, &store, false) {
        Ok(true) => {
            // More may be worth doing (the store may still have many files).
            if store.files().len() >= services.options.compaction.min_files {
                services.compaction_queue.request(&region, &store);
            }
        }
        Ok(false) => {}
        Err(e) => {
            services.compaction_queue.note_failure();
            tracing::error!(region = region.info().id, family = store.name(), error = %e, "compaction failed; inputs are untouched");
        }
    }
    true
}
