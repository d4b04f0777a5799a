//! Flushes of a region: every family's memstore snapshot into new files,
//! the WAL's sequence-id accounting moved with it, retries of a failed
//! flush, replay-time flushes, and the flush-everything a close, split or
//! merge needs.

use std::sync::atomic::Ordering;

use super::Region;
use crate::error::{Result, StoreError};
use crate::hooks::HookPoint;

impl Region {
    /// Flushes every family's memstore into new files. Returns bytes written.
    /// On error the snapshots stay in memory and the next flush retries them.
    ///
    /// A flush that starts with no failed snapshot outstanding covers every
    /// edit appended so far and tells the WAL's accounting so
    /// (`start_flush`, then `complete_flush` or `abort_flush`). A retry only
    /// rewrites old snapshots, so it leaves the accounting alone: the edits
    /// stay needed until the next complete flush, which is conservative.
    pub fn flush(&self) -> Result<u64> {
        self.flush_recording(true)
    }

    /// A flush during WAL replay, to stay under the memory limit: it writes
    /// the replayed cells but leaves each family's flushed sequence id where
    /// it was. A region's entries can be out of seq order in the log (a
    /// writer takes its seq before it appends), so an entry below the
    /// highest replayed so far may still come; and a crash before replay
    /// ends must replay everything above the old mark again. (Cells replayed
    /// twice are identical, seq included, and read as one.)
    pub fn flush_replayed(&self) -> Result<u64> {
        self.flush_recording(false)
    }

    /// Flushes until everything in memory is in files and the WAL's
    /// accounting holds nothing of the region: a flush that retries an
    /// earlier failed one writes only that old snapshot, so the writes made
    /// after it need one more. For a drained region, before a close, split
    /// or merge commits on its files alone.
    pub fn flush_all(&self) -> Result<()> {
        for _ in 0..3 {
            self.flush()?;
            if self.flush_lock.lock().is_empty()
                && self.memstore_data_size() == 0
                && self.wal.lowest_unflushed(self.info.id).is_none()
            {
                return Ok(());
            }
        }
        Err(StoreError::WritesStopped(format!(
            "region {} still holds unflushed edits after three flushes",
            self.info.region_name()
        )))
    }

    /// Flushes; `advance`: record the flush's sequence id as flushed.
    fn flush_recording(&self, advance: bool) -> Result<u64> {
        let mut pending = self.flush_lock.lock();
        let retry = !pending.is_empty();
        let snapshots = {
            let _updates = self.updates.write();
            if !retry {
                self.wal.start_flush(self.info.id);
            }
            // 0 leaves the families' flushed sequence ids as they are.
            let flush_seq = if advance { self.mvcc.last_assigned() } else { 0 };
            let snapshots: Vec<_> = self
                .stores
                .iter()
                .map(|(family, store)| {
                    let seq = *pending.entry(family.clone()).or_insert(flush_seq);
                    (family.clone(), store.clone(), store.memstore().snapshot(), seq)
                })
                .collect();
            snapshots
        };
        let written = self.hook(HookPoint::FlushSnapshotTaken).and_then(|()| {
            let mut bytes = 0;
            for (family, store, snapshot, seq) in &snapshots {
                bytes += store.flush_snapshot(snapshot, *seq)?;
                store.memstore().release_snapshot(snapshot.id())?;
                pending.remove(family);
            }
            Ok(bytes)
        });
        match &written {
            Ok(_) if !retry => self.wal.complete_flush(self.info.id),
            Err(_) if !retry => self.wal.abort_flush(self.info.id),
            _ => {}
        }
        // A flush that wrote no file (nothing to flush) is not counted.
        if written.as_ref().is_ok_and(|bytes| *bytes > 0) {
            self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        }
        written
    }
}
