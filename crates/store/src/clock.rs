//! The wall clock in milliseconds, as cell timestamps and events use it.
//! A clock before 1970 reads as 0. Thread safety: a pure function.

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
