//! # store::testing — what the store's tests are built from
//!
//! Behind the cargo feature `testing`, for tests and benches only, never
//! for production code: the store's own integration tests enable it
//! through a dev-dependency on the crate itself, and another crate's tests
//! or benches may enable it the same way. Nothing outside `testing`
//! depends on it.
//!
//! - Helpers the test files shared by copy: copying a directory as a crash
//!   leaves it (`dirs.rs`).

mod dirs;

pub use dirs::copy_dir;
