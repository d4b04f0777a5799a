//! Request latency histograms per table and operation (put, delete, get,
//! scan), as the Thrift handler times its calls around the store's. The
//! handler owns this state (through [`RequestMetrics`]); `/metrics` reads it.
//!
//! Which calls count: a call that reached the store and succeeded, once per
//! call, timed from the start of the handler's work to the store's answer
//! (conversions included, the wire excluded): mutateRow(s)(Ts) are puts,
//! deleteAll* deletes, get/getVer*/getRow*/getRows*/getRowOrBefore gets, and
//! every scanner open and scannerGet/scannerGetList a scan. Failed calls are
//! not observed, so only tables that exist get histograms.
//!
//! Invariants:
//! - Buckets are fixed ([`LATENCY_BOUNDS`], seconds, Prometheus-style from
//!   100 µs to 10 s); an observation adds one to exactly one bucket and its
//!   time to the sum, so the cumulative count at `+Inf` is the number of
//!   observations.
//! - When a table is dropped its histograms are folded into the dropped
//!   tables' ones ([`RequestMetrics::table_dropped`]) under the mutex that
//!   [`RequestMetrics::snapshot`] reads under, so no count ever goes down
//!   while the process lives. An observation racing with the drop (it
//!   loaded the table's histograms before the fold) is lost, never
//!   subtracted; one that succeeded just before the drop but is recorded
//!   after may start a new histogram under the dropped table's name, which
//!   a table created again with that name goes on from.
//!
//! Thread safety: recording takes no lock — an `ArcSwap` load of the table
//! map, a hash lookup and two relaxed `fetch_add`s. The first request of a
//! table, a drop and a snapshot take the `changes` mutex (the map is
//! copy-on-write under it).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

/// Upper bounds of the buckets, in nanoseconds: 100 µs .. 10 s, three per
/// decade (1, 2.5, 5), Prometheus' default buckets extended down to the
/// sub-millisecond times of a memstore.
const BOUNDS_NANOS: [u64; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// The buckets' upper bounds in seconds (the `le` labels), `+Inf` aside.
pub const LATENCY_BOUNDS: [Duration; 16] = {
    let mut out = [Duration::ZERO; 16];
    let mut i = 0;
    while i < 16 {
        out[i] = Duration::from_nanos(BOUNDS_NANOS[i]);
        i += 1;
    }
    out
};

/// Buckets with the `+Inf` one.
const BUCKETS: usize = BOUNDS_NANOS.len() + 1;

/// One latency histogram: a count per bucket (not cumulative) and the sum.
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        // The first bound at or above the time: Prometheus' `le`.
        let i = BOUNDS_NANOS.partition_point(|&b| b < nanos);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = [0u64; BUCKETS];
        let mut running = 0;
        for (c, n) in cumulative.iter_mut().zip(&self.counts) {
            running += n.load(Ordering::Relaxed);
            *c = running;
        }
        HistogramSnapshot { cumulative, sum_nanos: self.sum_nanos.load(Ordering::Relaxed) }
    }
}

/// A histogram's counts at or below each bound of [`LATENCY_BOUNDS`], then
/// at `+Inf` (the count), and the sum of the observed times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub cumulative: [u64; BUCKETS],
    pub sum_nanos: u64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.cumulative[BUCKETS - 1]
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_nanos as f64 / 1e9
    }

    pub fn add(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.cumulative.iter_mut().zip(&other.cumulative) {
            *a += b;
        }
        self.sum_nanos += other.sum_nanos;
    }
}

/// The operations timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    Delete,
    Get,
    Scan,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Put, Op::Delete, Op::Get, Op::Scan];

    /// The `op` label.
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Delete => "delete",
            Op::Get => "get",
            Op::Scan => "scan",
        }
    }
}

/// Every operation's histogram of one table.
#[derive(Default)]
struct TableLatency([Histogram; 4]);

impl TableLatency {
    fn snapshot(&self) -> OpHistograms {
        OpHistograms(self.0.each_ref().map(Histogram::snapshot))
    }
}

/// Every operation's histogram, indexed by [`Op`] (in [`Op::ALL`]'s order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpHistograms(pub [HistogramSnapshot; 4]);

impl OpHistograms {
    pub fn get(&self, op: Op) -> &HistogramSnapshot {
        &self.0[op as usize]
    }

    fn add(&mut self, other: &OpHistograms) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            a.add(b);
        }
    }
}

/// A read of every histogram.
#[derive(Debug, Clone, Default)]
pub struct RequestSnapshot {
    /// Per live table (and any a late observation recreated), by name.
    pub tables: Vec<(String, OpHistograms)>,
    /// The dropped tables' (`None` until a table with histograms is dropped).
    pub dropped: Option<OpHistograms>,
}

/// The histograms of every table; see the module doc.
#[derive(Default)]
pub struct RequestMetrics {
    tables: ArcSwap<HashMap<String, Arc<TableLatency>>>,
    /// Guards changes to the map and holds the dropped tables' histograms.
    changes: Mutex<Option<OpHistograms>>,
}

impl RequestMetrics {
    /// Records that a call of `op` on `table` succeeded in `took`.
    pub fn observe(&self, table: &str, op: Op, took: Duration) {
        if let Some(t) = self.tables.load().get(table) {
            t.0[op as usize].observe(took);
            return;
        }
        self.table(table).0[op as usize].observe(took);
    }

    /// `table`'s histograms, added if it has none yet.
    fn table(&self, table: &str) -> Arc<TableLatency> {
        let _changes = self.changes.lock();
        let current = self.tables.load_full();
        if let Some(t) = current.get(table) {
            return t.clone();
        }
        let t = Arc::new(TableLatency::default());
        let mut next = HashMap::clone(&current);
        next.insert(table.to_string(), t.clone());
        self.tables.store(Arc::new(next));
        t
    }

    /// `table` was dropped: its histograms join the dropped tables'.
    pub fn table_dropped(&self, table: &str) {
        let mut dropped = self.changes.lock();
        let current = self.tables.load_full();
        let Some(t) = current.get(table) else { return };
        let mut next = HashMap::clone(&current);
        next.remove(table);
        self.tables.store(Arc::new(next));
        dropped.get_or_insert_default().add(&t.snapshot());
    }

    pub fn snapshot(&self) -> RequestSnapshot {
        let dropped = self.changes.lock();
        let mut tables: Vec<(String, OpHistograms)> =
            self.tables.load().iter().map(|(name, t)| (name.clone(), t.snapshot())).collect();
        tables.sort_by(|a, b| a.0.cmp(&b.0));
        RequestSnapshot { tables, dropped: *dropped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_at_or_above_them() {
        let h = Histogram::default();
        for us in [50, 100, 101, 7_000, 20_000_000] {
            h.observe(Duration::from_micros(us));
        }
        let s = h.snapshot();
        assert_eq!(s.cumulative[0], 2, "50 µs and 100 µs are at or below 0.0001 s");
        assert_eq!(s.cumulative[1], 3);
        assert_eq!(s.cumulative[6], 4, "7 ms is at or below 0.01 s");
        assert_eq!(s.cumulative[15], 4);
        assert_eq!(s.count(), 5, "20 s is only in +Inf");
        assert_eq!(s.sum_nanos, (50 + 100 + 101 + 7_000 + 20_000_000) * 1_000);
        assert_eq!(LATENCY_BOUNDS[0].as_secs_f64(), 0.0001);
        assert_eq!(LATENCY_BOUNDS[15].as_secs_f64(), 10.0);
    }

    #[test]
    fn a_dropped_table_is_folded_and_counts_never_go_down() {
        let m = RequestMetrics::default();
        m.observe("t", Op::Put, Duration::from_millis(1));
        m.observe("t", Op::Put, Duration::from_millis(2));
        m.observe("u", Op::Get, Duration::from_millis(1));
        let before = m.snapshot();
        assert_eq!(before.tables.len(), 2);
        assert_eq!(before.tables[0].1.get(Op::Put).count(), 2);
        assert!(before.dropped.is_none());
        m.table_dropped("t");
        m.table_dropped("nope");
        let after = m.snapshot();
        assert_eq!(after.tables.len(), 1);
        let dropped = after.dropped.expect("dropped");
        assert_eq!(dropped, before.tables[0].1, "the dropped table's histograms are kept whole");
        m.observe("t", Op::Put, Duration::from_millis(1));
        assert_eq!(m.snapshot().tables[0].1.get(Op::Put).count(), 1, "a new table of that name starts afresh");
    }
}
