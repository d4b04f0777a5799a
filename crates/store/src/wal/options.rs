//! How the WAL is tuned, and how durable one append must be.
//!
//! Thread safety: plain values, copied into the `Wal` at open.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::wal::record::HEADER_LEN;

/// How durable an append must be before it is acknowledged (HBase's
/// `Durability`, per table or per mutation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Durability {
    /// Acknowledged only once the record is fsynced (with others: group
    /// commit).
    #[default]
    SyncWal,
    /// Acknowledged once the record is in the WAL's buffer; the background
    /// syncer writes and fsyncs it within `sync_interval`, or sooner once
    /// `sync_bytes` are waiting. A crash may lose the last interval's worth.
    AsyncWal,
    /// Not logged at all: `append` accepts it and does nothing. A crash
    /// loses everything not yet flushed.
    SkipWal,
}

/// Tuning of a [`Wal`](crate::wal::Wal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// Start a new file once the current one reaches this many bytes
    /// (HBase: 0.5 × the 256 MiB WAL block size = 128 MiB).
    pub roll_size: u64,
    /// `AsyncWal` entries are synced at least this often.
    pub sync_interval: Duration,
    /// ... or as soon as this many bytes of them are waiting.
    pub sync_bytes: u64,
    /// Move obsolete files to `<wal dir>/archive/` (true) or delete them.
    pub keep_archived: bool,
    /// Back-pressure: once this many bytes wait in the buffer, `AsyncWal`
    /// appenders wait for the sync like `SyncWal` ones, so that a slow disk
    /// cannot make the buffer grow without bound.
    pub max_pending_bytes: u64,
}

impl Default for WalOptions {
    fn default() -> WalOptions {
        WalOptions {
            roll_size: 128 << 20,
            sync_interval: Duration::from_secs(1),
            sync_bytes: 64 << 10,
            keep_archived: true,
            max_pending_bytes: 64 << 20,
        }
    }
}

impl WalOptions {
    /// Rejects settings the WAL cannot work with.
    pub fn validate(&self) -> Result<()> {
        if self.roll_size <= HEADER_LEN as u64 {
            return Err(StoreError::InvalidOption {
                name: "WAL roll_size",
                reason: format!("{} must exceed the {HEADER_LEN}-byte file header", self.roll_size),
            });
        }
        if self.sync_interval.is_zero() {
            return Err(StoreError::InvalidOption { name: "WAL sync_interval", reason: "must be positive".into() });
        }
        if self.sync_bytes == 0 {
            return Err(StoreError::InvalidOption { name: "WAL sync_bytes", reason: "must be positive".into() });
        }
        if self.max_pending_bytes == 0 {
            return Err(StoreError::InvalidOption { name: "WAL max_pending_bytes", reason: "must be positive".into() });
        }
        Ok(())
    }
}
