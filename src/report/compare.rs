//! Two runs side by side: what regressed between them.

use serde::{Deserialize, Serialize};

use super::RunReport;
use crate::verdict::Verdict;

/// Limits for [`compare`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareLimits {
    /// The leak rate (bytes per cycle of the bytes signal) may grow by at most this much.
    pub max_rate_increase_bytes: f64,
    /// Time per cycle may grow by at most this fraction (0.2: 20%).
    pub max_overhead_increase: f64,
}

impl Default for CompareLimits {
    fn default() -> Self {
        CompareLimits { max_rate_increase_bytes: 64.0, max_overhead_increase: 0.25 }
    }
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// Old and new verdicts.
    pub verdicts: (Verdict, Verdict),
    /// Old and new leak rates (bytes per cycle).
    pub rates: (Option<f64>, Option<f64>),
    /// Old and new `retained_bytes` per cycle (what allocating sites that recur across judged
    /// cycles hold), where the record was judged.
    #[serde(default)]
    pub retained: (Option<f64>, Option<f64>),
    /// Old and new milliseconds per cycle.
    pub ms_per_cycle: (f64, f64),
    /// What got worse.
    pub regressions: Vec<String>,
}

/// Compares a new run against an old one: a regression is a verdict that got worse, a leak rate
/// that grew beyond the limit (by more than the new interval's half-width too, so noise is not a
/// regression), `retained_bytes` per cycle that grew beyond the same limit (a record: no noise
/// to allow for), or time per cycle that grew beyond the limit.
pub fn compare(old: &RunReport, new: &RunReport, limits: CompareLimits) -> Comparison {
    let rate = |r: &RunReport| r.verdict.leak_rate.as_ref().map(|l| l.bytes_per_cycle);
    let retained = |r: &RunReport| {
        r.signal(crate::signal::Signal::RetainedBytes)
            .filter(|s| !s.informational)
            .and_then(|s| s.estimate)
            .map(|e| e.value)
    };
    let mut regressions = Vec::new();
    if new.verdict.verdict > old.verdict.verdict {
        regressions.push(format!("verdict {} -> {}", old.verdict.verdict, new.verdict.verdict));
    }
    if let (Some(a), Some(b)) = (rate(old), rate(new)) {
        let half = new.bytes_signal().and_then(|s| s.estimate).map_or(0.0, |e| (e.upper - e.lower) / 2.0);
        if b - a > limits.max_rate_increase_bytes.max(half) {
            regressions.push(format!("leak rate {a:.1} -> {b:.1} B/cycle"));
        }
    }
    if let (Some(a), Some(b)) = (retained(old), retained(new)) {
        if b - a > limits.max_rate_increase_bytes {
            regressions.push(format!("retained bytes {a:.1} -> {b:.1} B/cycle"));
        }
    }
    if old.ms_per_cycle > 0.0 && new.ms_per_cycle > old.ms_per_cycle * (1.0 + limits.max_overhead_increase) {
        regressions.push(format!("time per cycle {:.2} -> {:.2} ms", old.ms_per_cycle, new.ms_per_cycle));
    }
    Comparison {
        verdicts: (old.verdict.verdict, new.verdict.verdict),
        rates: (rate(old), rate(new)),
        retained: (retained(old), retained(new)),
        ms_per_cycle: (old.ms_per_cycle, new.ms_per_cycle),
        regressions,
    }
}
