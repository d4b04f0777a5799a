//! Store files (being written).
