//! # store::testing — what the store's tests are built from
//!
//! Behind the cargo feature `testing`, for tests and benches only, never
//! for production code: the store's own integration tests enable it
//! through a dev-dependency on the crate itself, and another crate's tests
//! or benches may enable it the same way. Nothing outside `testing`
//! depends on it.
//!
//! - [`MemFs`] (`mem_fs.rs`): a file system in memory whose
//!   [`crash_clone`](MemFs::crash_clone) keeps only what was durable — a
//!   power cut at any instant, without stopping the store.
//! - [`StoreBuilder`] (`store_builder.rs`): a store with small test
//!   settings, on the file system, clock and hooks a test gives it.
//! - Helpers the test files shared by copy: tables (`tables.rs`), reading
//!   rows back (`reads.rs`), copying a directory as a crash leaves it
//!   (`dirs.rs`).
//!
//! Thread safety: see each module; `MemFs` is shared by a store's threads.

mod dirs;
mod mem_fs;
mod reads;
mod store_builder;
mod tables;

pub use dirs::copy_dir;
pub use mem_fs::MemFs;
pub use reads::scan_row_keys;
pub use store_builder::StoreBuilder;
pub use tables::sync_wal_table;
