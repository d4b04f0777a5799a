//! The last minutes of request rates and latency percentiles, for the
//! status page's charts: every `metrics_period` (HBase's
//! `hbase.regionserver.metrics.period`, 5 s) the server's sampler reads the
//! request histograms ([`crate::request_metrics`]) summed over every table,
//! and this keeps, per operation, what happened in that period: calls,
//! calls per second and the 50th/99th percentile latency.
//!
//! Percentiles are estimated from the period's bucket counts as
//! Prometheus' `histogram_quantile` estimates them (linear within the
//! bucket holding the rank), so the page and a Grafana panel over
//! `/metrics` agree; a period with no calls has no percentile (a gap, not 0).
//!
//! Invariants: samples are in time order, at most `keep` of them (ten
//! minutes' worth); a sample's figures are differences of two cumulative
//! reads, so a period's counts are what was observed between the two
//! reads (never negative: the sums over tables never go down, as dropped
//! tables' histograms are folded, not removed).
//!
//! Thread safety: one mutex around the ring; the sampler writes once a
//! period and `/status` reads.

use std::collections::VecDeque;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::request_metrics::{HistogramSnapshot, LATENCY_BOUNDS, Op, OpHistograms, RequestSnapshot};

/// How much history the page shows.
const WINDOW: Duration = Duration::from_secs(600);

/// One operation in one period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpPeriod {
    pub calls: u64,
    pub per_sec: f64,
    /// Seconds; `None` when the period had no call.
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

/// One period: when it ended, how long it was, and each operation (in
/// [`Op::ALL`]'s order).
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    pub end_ms: u64,
    pub secs: f64,
    pub ops: [OpPeriod; 4],
}

struct Ring {
    /// The previous cumulative read and when it was taken.
    last: Option<(u64, OpHistograms)>,
    periods: VecDeque<Period>,
}

pub struct RequestHistory {
    period: Duration,
    keep: usize,
    ring: Mutex<Ring>,
}

/// Every table's histograms and the dropped tables', summed per operation.
pub fn totals(snapshot: &RequestSnapshot) -> OpHistograms {
    let mut sum = snapshot.dropped.unwrap_or_default();
    for (_, t) in &snapshot.tables {
        for (a, b) in sum.0.iter_mut().zip(&t.0) {
            a.add(b);
        }
    }
    sum
}

/// `later - earlier`, bucket by bucket (saturating: see the module doc).
fn difference(later: &HistogramSnapshot, earlier: &HistogramSnapshot) -> HistogramSnapshot {
    let mut d = *later;
    for (a, b) in d.cumulative.iter_mut().zip(&earlier.cumulative) {
        *a = a.saturating_sub(*b);
    }
    d.sum_nanos = d.sum_nanos.saturating_sub(earlier.sum_nanos);
    d
}

/// The `q` quantile (0..=1) of `h` in seconds, interpolated within the
/// bucket holding its rank as Prometheus does; the `+Inf` bucket answers
/// its lower bound, the largest finite one.
pub fn quantile(q: f64, h: &HistogramSnapshot) -> Option<f64> {
    let count = h.count();
    if count == 0 {
        return None;
    }
    let rank = q * count as f64;
    let i = h.cumulative.iter().position(|&c| c as f64 >= rank).unwrap_or(h.cumulative.len() - 1);
    if i == LATENCY_BOUNDS.len() {
        return Some(LATENCY_BOUNDS[i - 1].as_secs_f64());
    }
    let upper = LATENCY_BOUNDS[i].as_secs_f64();
    let (lower, below) = if i == 0 { (0.0, 0) } else { (LATENCY_BOUNDS[i - 1].as_secs_f64(), h.cumulative[i - 1]) };
    let in_bucket = (h.cumulative[i] - below) as f64;
    if in_bucket == 0.0 {
        return Some(upper);
    }
    Some(lower + (upper - lower) * (rank - below as f64) / in_bucket)
}

impl RequestHistory {
    pub fn new(period: Duration) -> RequestHistory {
        let period = period.max(Duration::from_millis(1));
        let keep = (WINDOW.as_millis() / period.as_millis()).clamp(2, 10_000) as usize;
        RequestHistory { period, keep, ring: Mutex::new(Ring { last: None, periods: VecDeque::new() }) }
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    /// Takes a cumulative read made at `now_ms`; from the second read on,
    /// adds the period since the previous one.
    pub fn record(&self, now_ms: u64, totals: OpHistograms) {
        let mut ring = self.ring.lock();
        if let Some((then_ms, before)) = ring.last
            && now_ms > then_ms
        {
            let secs = (now_ms - then_ms) as f64 / 1000.0;
            let ops = Op::ALL.map(|op| {
                let d = difference(totals.get(op), before.get(op));
                OpPeriod {
                    calls: d.count(),
                    per_sec: d.count() as f64 / secs,
                    p50: quantile(0.5, &d),
                    p99: quantile(0.99, &d),
                }
            });
            if ring.periods.len() == self.keep {
                ring.periods.pop_front();
            }
            ring.periods.push_back(Period { end_ms: now_ms, secs, ops });
        }
        ring.last = Some((now_ms, totals));
    }

    pub fn periods(&self) -> Vec<Period> {
        self.ring.lock().periods.iter().cloned().collect()
    }

    /// `{"period_secs", "periods": [{"end_ms", "secs", "ops": {"put": {"calls", "per_sec", "p50_ms", "p99_ms"}, …}}]}`.
    pub fn to_json(&self) -> Value {
        let ms = |s: Option<f64>| s.map(|s| s * 1000.0);
        let periods: Vec<Value> = self
            .periods()
            .iter()
            .map(|p| {
                let ops: serde_json::Map<String, Value> = Op::ALL
                    .iter()
                    .zip(&p.ops)
                    .map(|(op, o)| {
                        let v =
                            json!({ "calls": o.calls, "per_sec": o.per_sec, "p50_ms": ms(o.p50), "p99_ms": ms(o.p99) });
                        (op.name().to_string(), v)
                    })
                    .collect();
                json!({ "end_ms": p.end_ms, "secs": p.secs, "ops": ops })
            })
            .collect();
        json!({ "period_secs": self.period.as_secs_f64(), "periods": periods })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_metrics::RequestMetrics;

    #[test]
    fn quantiles_interpolate_within_the_bucket_holding_the_rank() {
        let m = RequestMetrics::default();
        // 100 calls: 50 at ≤ 100 µs, 49 in (100, 250] µs, 1 at 20 s.
        for _ in 0..50 {
            m.observe("t", Op::Get, Duration::from_micros(80));
        }
        for _ in 0..49 {
            m.observe("t", Op::Get, Duration::from_micros(200));
        }
        m.observe("t", Op::Get, Duration::from_secs(20));
        let h = *totals(&m.snapshot()).get(Op::Get);
        let p50 = quantile(0.5, &h).expect("calls");
        assert!((p50 - 0.0001).abs() < 1e-12, "rank 50 is the top of the first bucket: {p50}");
        let p99 = quantile(0.99, &h).expect("calls");
        assert!((p99 - 0.00025).abs() < 1e-12, "rank 99 is the top of the second: {p99}");
        let p995 = quantile(0.995, &h).expect("calls");
        assert_eq!(p995, 10.0, "+Inf answers the largest finite bound");
        let p25 = quantile(0.25, &h).expect("calls");
        assert!((p25 - 0.00005).abs() < 1e-12, "halfway into [0, 100 µs]: {p25}");
        assert_eq!(quantile(0.5, &HistogramSnapshot::default()), None);
    }

    #[test]
    fn a_period_holds_what_happened_between_two_reads_and_the_ring_is_bounded() {
        let m = RequestMetrics::default();
        let h = RequestHistory::new(Duration::from_secs(60));
        assert_eq!(h.keep, 10);
        h.record(1_000, totals(&m.snapshot()));
        assert!(h.periods().is_empty(), "one read is no period");
        for _ in 0..30 {
            m.observe("t", Op::Put, Duration::from_millis(1));
        }
        m.observe("u", Op::Scan, Duration::from_millis(3));
        m.table_dropped("u");
        h.record(3_000, totals(&m.snapshot()));
        let p = &h.periods()[0];
        assert_eq!((p.end_ms, p.secs), (3_000, 2.0));
        assert_eq!(p.ops[Op::Put as usize].calls, 30);
        assert_eq!(p.ops[Op::Put as usize].per_sec, 15.0);
        assert_eq!(p.ops[Op::Scan as usize].calls, 1, "a dropped table's calls still count");
        assert_eq!(p.ops[Op::Get as usize], OpPeriod { calls: 0, per_sec: 0.0, p50: None, p99: None });
        for i in 0..20 {
            h.record(4_000 + i * 1_000, totals(&m.snapshot()));
        }
        let periods = h.periods();
        assert_eq!(periods.len(), 10, "ten minutes of one-minute periods");
        assert_eq!(periods.last().map(|p| p.end_ms), Some(23_000));
        assert!(periods.windows(2).all(|w| w[0].end_ms < w[1].end_ms));
        let json = h.to_json();
        assert_eq!(json["periods"][9]["ops"]["put"]["calls"], 0);
        assert_eq!(json["periods"][9]["ops"]["put"]["p99_ms"], Value::Null);
    }
}
