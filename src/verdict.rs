//! Per-signal verdicts over cycles.
//!
//! One before/after equality is useless for memory: a leak-free open/write/close cycle of a small
//! RocksDB moves jemalloc's allocated bytes by about ±100 KB from one cycle to the next. A slope
//! over many cycles separates a small leak from that noise. Statistical signals get a robust slope
//! (Theil-Sen) with a confidence interval (Sen's, widened for autocorrelated noise): a leak when
//! the lower bound exceeds the tolerance, flat when the upper bound is below it, inconclusive
//! otherwise, with an estimate of how many more cycles would decide. Exact signals (live handles,
//! files and maps under the store's directory after close) need no statistics: any residue after
//! settling is a leak.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::probe::Sample;
use crate::signal::{Class, Signal};

/// The outcome for one signal, or for a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Flat (statistical) or no residue (exact).
    Clean,
    /// Not enough evidence either way yet.
    Inconclusive,
    /// Growth beyond the tolerance (statistical) or a residue (exact).
    Leak,
}

impl Verdict {
    /// The worst of two verdicts: leak over inconclusive over clean.
    pub fn worst(self, other: Verdict) -> Verdict {
        self.max(other)
    }

    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Leak => "leak",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A robust slope with its confidence interval, in units per cycle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Slope {
    /// Theil-Sen estimate: the median of pairwise slopes.
    pub slope_per_cycle: f64,
    /// Lower confidence bound.
    pub lower: f64,
    /// Upper confidence bound.
    pub upper: f64,
    /// Points the estimate used (samples, or means of blocks of samples for long runs).
    pub points: usize,
    /// Samples averaged per point (1 unless a long run or a periodic component was averaged).
    pub block: usize,
    /// Lag-1 autocorrelation of the residuals, which widened the interval.
    pub autocorrelation: f64,
    /// A single level shift found at this cycle (after warm-up), left out of the slope.
    pub step_at: Option<usize>,
    /// The size of that level shift (the medians' difference either side of it), in the
    /// signal's unit.
    pub step_size: Option<f64>,
}

/// The least evidence a statistical signal needs before it may say clean or leak. Below it the
/// verdict is inconclusive with the cycles still needed: a slope and a 99% interval from a
/// handful of points after a short run are not evidence (a 10-second soak called the clean
/// reference store a leak from 3 points).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Readable samples after warm-up.
    pub min_points: usize,
    /// Cycles those samples span after warm-up (first to last, inclusive).
    pub min_cycles: u64,
}

impl Default for Evidence {
    fn default() -> Self {
        Evidence { min_points: 10, min_cycles: 30 }
    }
}

impl Evidence {
    /// The floor of page-granular signals (resident memory, RSS): they move in 4 KiB steps and
    /// keep growing for a while after the warm-up (RocksDB's thread stacks and TLS are touched
    /// as its pools first do work: 13 KB a cycle over the first 50 cycles of a 1 x 2 store), so
    /// they decide only over 100 cycles after it.
    pub const PAGE_GRANULAR: Evidence = Evidence { min_points: 10, min_cycles: 100 };
}

/// Largest number of points Theil-Sen works on directly (n² / 2 pairwise slopes); longer series
/// are averaged in blocks of consecutive points first, which also tames short-range correlation.
const MAX_POINTS: usize = 1000;

/// Theil-Sen slope of `values` taken at cycles 0, 1, 2, … with a two-sided confidence interval at
/// `confidence` (for example 0.99). `None` with fewer than 3 values or a non-finite value. See
/// [`theil_sen_at`] for values taken at other cycles.
pub fn theil_sen(values: &[f64], confidence: f64) -> Option<Slope> {
    let cycles: Vec<f64> = (0..values.len()).map(|i| i as f64).collect();
    theil_sen_at(&cycles, values, confidence)
}

/// Theil-Sen slope per cycle of `values[i]` taken at cycle `cycles[i]` (strictly increasing), with
/// a two-sided confidence interval at `confidence`. The slope is per cycle whatever the sampling:
/// a sample every 5th cycle gives the same slope as a sample every cycle, and a missing sample
/// leaves a gap instead of shifting the ones after it. `None` with fewer than 3 points, a
/// non-finite value or cycles that do not increase.
///
/// A single step (one-time growth, such as a cache filling at one cycle, then flat) is not a
/// slope: when one level shift stands far above the noise and above the local change elsewhere,
/// only pairs of points on the same side of it are used, so the step does not pass for a leak.
/// A staircase of several steps still shows as growth.
pub fn theil_sen_at(cycles: &[f64], values: &[f64], confidence: f64) -> Option<Slope> {
    if values.len() < 3
        || cycles.len() != values.len()
        || values.iter().chain(cycles).any(|v| !v.is_finite())
        || cycles.windows(2).any(|w| w[1] <= w[0])
    {
        return None;
    }
    let block = values.len().div_ceil(MAX_POINTS);
    let points = Points { x: block_means(cycles, block), y: block_means(values, block) };
    let first = estimate(&points, confidence)?;
    // A periodic component (a memtable filling and flushing, periodic compaction) makes the
    // residuals strongly correlated and the interval uselessly wide. Averaging over whole periods
    // removes it: find the period from the residuals' autocorrelation and re-estimate on means of
    // one period each.
    let periodic = (first.autocorrelation > 0.5)
        .then(|| detect_period(&first.residuals))
        .flatten()
        .filter(|p| points.y.len() / p >= 8)
        .and_then(|p| {
            let averaged = Points { x: block_means(&points.x, p), y: block_means(&points.y, p) };
            estimate(&averaged, confidence).map(|e| (p, e, averaged))
        });
    let (block, e, used) = match periodic {
        Some((p, e, averaged)) => (block * p, e, averaged),
        None => (block, first, points),
    };
    Some(Slope {
        slope_per_cycle: e.slope,
        lower: e.lower,
        upper: e.upper,
        points: e.points,
        block,
        autocorrelation: e.autocorrelation,
        step_at: e.step.map(|(k, _)| used.x[k].round().max(0.0) as usize),
        step_size: e.step.map(|(_, jump)| jump),
    })
}

fn block_means(values: &[f64], block: usize) -> Vec<f64> {
    if block <= 1 {
        return values.to_vec();
    }
    values.chunks(block).filter(|c| c.len() == block).map(|c| c.iter().sum::<f64>() / block as f64).collect()
}

/// Values and the cycles they were taken at.
struct Points {
    x: Vec<f64>,
    y: Vec<f64>,
}

/// A Theil-Sen estimate in units per cycle.
struct Estimate {
    slope: f64,
    lower: f64,
    upper: f64,
    points: usize,
    autocorrelation: f64,
    /// Index of the first point after a level shift.
    step: Option<(usize, f64)>,
    residuals: Vec<f64>,
}

fn estimate(p: &Points, confidence: f64) -> Option<Estimate> {
    let (x, y) = (&p.x, &p.y);
    let n = y.len();
    if n < 3 {
        return None;
    }
    let step = find_step(y);
    let same_side = |i: usize, j: usize| step.is_none_or(|(k, _)| (i < k) == (j < k));
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            if same_side(i, j) {
                slopes.push((y[j] - y[i]) / (x[j] - x[i]));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median_sorted(&slopes);

    // Residual lag-1 autocorrelation around the fitted line; positive correlation means fewer
    // independent points than it seems (effective n = n (1 - r) / (1 + r)).
    let segments: Vec<std::ops::Range<usize>> = match step {
        Some((k, _)) => vec![0..k, k..n],
        None => std::iter::once(0..n).collect(),
    };
    let mut residuals = Vec::with_capacity(n);
    for seg in &segments {
        let mut intercepts: Vec<f64> = seg.clone().map(|i| y[i] - slope * x[i]).collect();
        intercepts.sort_by(f64::total_cmp);
        let intercept = median_sorted(&intercepts);
        residuals.extend(seg.clone().map(|i| y[i] - intercept - slope * x[i]));
    }
    let r = lag1_autocorrelation(&residuals).clamp(0.0, 0.9);
    let inflation = (1.0 + r) / (1.0 - r);

    // Sen (1968): the interval's ends are order statistics of the pairwise slopes, at
    // (N ∓ z·sqrt(Var S)) / 2, where Var S = n(n-1)(2n+5)/18 is Kendall's S variance (summed over
    // the segments when a step splits the series); it holds for any distinct x.
    let total = slopes.len() as f64;
    let var_s = segments
        .iter()
        .map(|seg| {
            let m = seg.len() as f64;
            m * (m - 1.0) * (2.0 * m + 5.0) / 18.0
        })
        .sum::<f64>()
        * inflation;
    let c = normal_quantile(0.5 + confidence / 2.0) * var_s.sqrt();
    let lo = (((total - c) / 2.0).floor().max(0.0) as usize).min(slopes.len() - 1);
    let hi = (((total + c) / 2.0).ceil() as usize).min(slopes.len() - 1);
    Some(Estimate { slope, lower: slopes[lo], upper: slopes[hi], points: n, autocorrelation: r, step, residuals })
}

/// The period of a periodic component in `r`: the highest autocorrelation peak after the first
/// zero crossing, when it is strong (above 0.3).
fn detect_period(r: &[f64]) -> Option<usize> {
    let n = r.len();
    let mean = r.iter().sum::<f64>() / n as f64;
    let var: f64 = r.iter().map(|x| (x - mean).powi(2)).sum();
    if var <= f64::EPSILON {
        return None;
    }
    let acf = |k: usize| r.windows(k + 1).map(|w| (w[0] - mean) * (w[k] - mean)).sum::<f64>() / var;
    let max_lag = n / 4;
    let zero = (1..=max_lag).find(|&k| acf(k) < 0.0)?;
    let (lag, peak) = (zero + 1..=max_lag).map(|k| (k, acf(k))).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (peak > 0.3).then_some(lag)
}

/// The index of a single level shift, if one stands out: the split where the medians of the `w`
/// points on either side differ most, kept only when that jump is more than 8 times the noise
/// (from the median absolute first difference) and more than 4 times the typical jump at other
/// splits (a linear trend has the same jump everywhere; a step has one).
fn find_step(y: &[f64]) -> Option<(usize, f64)> {
    let n = y.len();
    let w = (n / 20).max(3);
    if n < 4 * w {
        return None;
    }
    let median = |s: &[f64]| {
        let mut v = s.to_vec();
        v.sort_by(f64::total_cmp);
        median_sorted(&v)
    };
    let mut diffs: Vec<f64> = y.windows(2).map(|p| (p[1] - p[0]).abs()).collect();
    diffs.sort_by(f64::total_cmp);
    // MAD of first differences; for independent noise, diff sd = sqrt(2) * sd.
    let noise = 1.4826 * median_sorted(&diffs) / std::f64::consts::SQRT_2;
    let jumps: Vec<(usize, f64)> = (w..=n - w).map(|k| (k, median(&y[k..k + w]) - median(&y[k - w..k]))).collect();
    let (k, best) = jumps.iter().copied().max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    let typical = median(&jumps.iter().map(|(_, j)| j.abs()).collect::<Vec<_>>());
    (best.abs() > 8.0 * noise && best.abs() > 4.0 * typical && best.abs() > 0.0).then_some((k, best))
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn lag1_autocorrelation(r: &[f64]) -> f64 {
    let n = r.len();
    if n < 3 {
        return 0.0;
    }
    let mean = r.iter().sum::<f64>() / n as f64;
    let var: f64 = r.iter().map(|x| (x - mean).powi(2)).sum();
    if var <= f64::EPSILON {
        return 0.0;
    }
    let cov: f64 = r.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    cov / var
}

/// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
    const B: [f64; 5] = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// How a signal is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Rule {
    /// Every value must equal `expected` (after settling); any residue is a leak.
    Exact {
        /// The value a clean run shows after every cycle (0, or the declared shared handles).
        expected: f64,
    },
    /// A slope over cycles after warm-up, against a tolerance in units per cycle.
    Statistical {
        /// Growth per cycle that is still called flat.
        tolerance_per_cycle: f64,
        /// Confidence of the interval, for example 0.99.
        confidence: f64,
    },
}

/// The verdict on one signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SignalVerdict {
    /// The signal's name (`allocated_bytes`, `live_handles.Options`, `open_fds_under_dir`, …).
    pub signal: String,
    /// Its unit (`B`, `handles`, `fds`, …).
    pub unit: String,
    /// Clean, leak or inconclusive.
    pub verdict: Verdict,
    /// How it was judged.
    pub rule: Rule,
    /// Cycles judged (after warm-up for statistical signals).
    pub cycles: usize,
    /// Statistical: the slope estimate per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slope_per_cycle: Option<f64>,
    /// Statistical: lower confidence bound of the slope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    /// Statistical: upper confidence bound of the slope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// Inconclusive: about how many more cycles would decide, if the trend holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_cycles_needed: Option<u64>,
    /// Exact: the largest residue seen (value minus expected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_residue: Option<f64>,
    /// Exact: the first cycle (0-based) with a residue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_cycle_with_residue: Option<usize>,
    /// Statistical: a single level shift found at this cycle and left out of the slope. Past the
    /// warm-up it is a retention finding: memory kept once (a pool or cache filling, or a leak
    /// that happened once), reported, not a per-cycle leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_at_cycle: Option<usize>,
    /// Statistical: the size of that shift, in the signal's unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_size: Option<f64>,
    /// Shown for reference but not part of the run's verdict (raw byte signals, when RocksDB's
    /// accounting explains part of them and the net signals are judged instead).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub informational: bool,
    /// Statistical and clean, but the interval lies above zero: growth smaller than the tolerance
    /// that is still growth. A warning, worth a look; not a leak.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub growth_below_tolerance: bool,
}

impl SignalVerdict {
    /// A signal (a family's member when `qualifier` is given) judged under `rule` with nothing
    /// decided yet: inconclusive, no figures.
    fn undecided(signal: Signal, qualifier: Option<&str>, rule: Rule) -> Self {
        SignalVerdict {
            signal: qualifier.map_or_else(|| signal.name().to_string(), |q| signal.qualified(q)),
            unit: signal.unit().to_string(),
            verdict: Verdict::Inconclusive,
            rule,
            cycles: 0,
            slope_per_cycle: None,
            lower: None,
            upper: None,
            more_cycles_needed: None,
            max_residue: None,
            first_cycle_with_residue: None,
            step_at_cycle: None,
            step_size: None,
            informational: false,
            growth_below_tolerance: false,
        }
    }

    /// The signal of the table this verdict is about ([`Signal::LiveHandlesOf`] for
    /// `live_handles.Options`).
    pub fn family(&self) -> Option<Signal> {
        Signal::of_name(&self.signal)
    }

    /// Whether it only corroborates ([`Signal::corroborating`]).
    pub fn corroborating(&self) -> bool {
        self.family().is_some_and(Signal::corroborating)
    }
}

/// Judges one series taken at cycles 0, 1, 2, … (`None` where the signal could not be read),
/// with the default [`Evidence`] floor. See [`judge_at`].
pub fn judge(signal: Signal, values: &[Option<f64>], rule: Rule, warmup: usize) -> SignalVerdict {
    let cycles: Vec<u64> = (0..values.len() as u64).collect();
    judge_at(signal, None, &cycles, values, rule, warmup as u64, Evidence::default())
}

/// Judges one series: `values[i]` was read after cycle `cycles[i]` (`None` where the signal could
/// not be read; it stays a gap at its cycle). `qualifier` names the member of a family
/// (`Some("Options")` for `live_handles.Options`).
///
/// Statistical signals skip the samples of cycles before `warmup_cycles` (caches filling,
/// allocator arenas growing), and say clean or leak only with the `evidence` floor met; their
/// slopes are per cycle whatever the sampling. Exact signals judge every cycle, warm-up included:
/// a handle leaked in cycle 0 is a leak in cycle 0.
#[allow(clippy::too_many_arguments)]
pub fn judge_at(
    signal: Signal,
    qualifier: Option<&str>,
    cycles: &[u64],
    values: &[Option<f64>],
    rule: Rule,
    warmup_cycles: u64,
    evidence: Evidence,
) -> SignalVerdict {
    let mut v = SignalVerdict::undecided(signal, qualifier, rule);
    let readable = cycles.iter().zip(values).filter_map(|(c, x)| x.map(|x| (*c, x)));
    match rule {
        Rule::Exact { expected } => {
            let readable: Vec<(u64, f64)> = readable.collect();
            v.cycles = readable.len();
            if readable.is_empty() {
                return v;
            }
            let residue = readable.iter().map(|(_, x)| x - expected).fold(f64::NEG_INFINITY, f64::max);
            v.max_residue = Some(residue);
            v.first_cycle_with_residue = readable.iter().find(|(_, x)| *x != expected).map(|(c, _)| *c as usize);
            v.verdict = if v.first_cycle_with_residue.is_some() { Verdict::Leak } else { Verdict::Clean };
        }
        Rule::Statistical { tolerance_per_cycle, confidence } => {
            let (xs, ys): (Vec<f64>, Vec<f64>) =
                readable.filter(|(c, _)| *c >= warmup_cycles).map(|(c, y)| (c as f64, y)).unzip();
            v.cycles = xs.len();
            let slope = theil_sen_at(&xs, &ys, confidence);
            if let Some(s) = &slope {
                v.slope_per_cycle = Some(s.slope_per_cycle);
                v.lower = Some(s.lower);
                v.upper = Some(s.upper);
                v.step_at_cycle = s.step_at;
                v.step_size = s.step_size;
            }
            let short = evidence_short(cycles, &xs, warmup_cycles, evidence);
            let Some(s) = slope.filter(|_| short.is_none()) else {
                v.more_cycles_needed = Some(short.unwrap_or(1).max(1));
                return v;
            };
            v.verdict = against_tolerance(s.lower, s.upper, tolerance_per_cycle);
            match v.verdict {
                Verdict::Clean => v.growth_below_tolerance = s.lower > 0.0,
                Verdict::Inconclusive => v.more_cycles_needed = more_cycles(&s, &xs, tolerance_per_cycle),
                Verdict::Leak => {}
            }
        }
    }
    v
}

/// How many more cycles the evidence floor asks for (`None`: it is met). The sampling interval is
/// read off the cycles sampled so far.
fn evidence_short(all_cycles: &[u64], judged: &[f64], warmup_cycles: u64, evidence: Evidence) -> Option<u64> {
    let gap = all_cycles.windows(2).map(|w| w[1].saturating_sub(w[0])).min().unwrap_or(1).max(1);
    let span = match (judged.first(), judged.last()) {
        (Some(a), Some(b)) => (b - a) as u64 + 1,
        _ => 0,
    };
    let missing_points = evidence.min_points.saturating_sub(judged.len()) as u64;
    let missing_span = evidence.min_cycles.saturating_sub(span);
    // Before the warm-up ends, the cycles still to go in it count too.
    let last = all_cycles.last().map_or(0, |c| c + 1);
    let warmup_left = warmup_cycles.saturating_sub(last);
    let needed = (missing_points * gap).max(missing_span);
    (needed > 0).then_some(needed + warmup_left)
}

/// The slope's interval narrows like n^(-3/2) for equally spaced points: estimate the cycles at
/// which the half-width on the side of the tolerance shrinks below the slope's distance to it.
fn more_cycles(s: &Slope, xs: &[f64], tolerance: f64) -> Option<u64> {
    let (first, last) = (xs.first()?, xs.last()?);
    let span = last - first + 1.0;
    let distance = (s.slope_per_cycle - tolerance).abs();
    let half = if s.slope_per_cycle > tolerance {
        s.slope_per_cycle - s.lower
    } else {
        s.upper - s.slope_per_cycle
    };
    if distance <= f64::EPSILON || !half.is_finite() {
        return None;
    }
    let needed = span * (half / distance).powf(2.0 / 3.0);
    (needed.is_finite() && needed < 1e12).then(|| (needed.ceil() as u64).saturating_sub(span as u64).max(1))
}

/// What one cycle left behind, observed after it closed everything and the process settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleSample {
    /// 0-based cycle number.
    pub cycle: u64,
    /// Memory and OS resources.
    pub sample: Sample,
    /// Live handles per kind that were not declared shared (the ledger's retained counts).
    pub retained_handles: BTreeMap<String, u64>,
    /// Whether two consecutive samples agreed before the timeout.
    pub settled: bool,
}

impl CycleSample {
    /// A cycle's observations.
    pub fn new(cycle: u64, sample: Sample, retained_handles: BTreeMap<String, u64>, settled: bool) -> Self {
        CycleSample { cycle, sample, retained_handles, settled }
    }
}

/// Growth per cycle still called flat, per statistical signal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// jemalloc allocated bytes (and unexplained bytes).
    pub allocated_bytes_per_cycle: f64,
    /// jemalloc resident bytes after purge (page-granular).
    pub resident_bytes_per_cycle: f64,
    /// RSS (page-granular, includes stacks and code).
    pub rss_bytes_per_cycle: f64,
    /// Open fds, maps and threads (all of the process).
    pub os_per_cycle: f64,
    /// Unexplained bytes left behind per firing of one fault point (`bytes_per_firing.*` signals).
    #[serde(default = "default_per_firing")]
    pub bytes_per_firing: f64,
    /// What RocksDB accounts for (memtables, table readers, caches net of reservations and of
    /// what lies above their capacity): it must level off. Growth of data legitimately grows
    /// table readers a little; memtables and table readers pinned by leaked iterators or
    /// versions grow by whole arena blocks and files.
    #[serde(default = "default_rocksdb_bytes")]
    pub rocksdb_bytes_per_cycle: f64,
}

fn default_per_firing() -> f64 {
    256.0
}

fn default_rocksdb_bytes() -> f64 {
    4096.0
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            allocated_bytes_per_cycle: 64.0,
            resident_bytes_per_cycle: 2048.0,
            rss_bytes_per_cycle: 4096.0,
            os_per_cycle: 0.02,
            bytes_per_firing: default_per_firing(),
            rocksdb_bytes_per_cycle: default_rocksdb_bytes(),
        }
    }
}

/// How a run is analysed.
///
/// # Error rates
/// A run calls a clean store a leak with probability at most `false_positive_rate`, across its
/// judged statistical signals and every look at the verdict. The family is a union bound:
/// the seven judged statistical signals share each look's part alike, and look `j` (the first
/// at the cycles asked for, then one every 10 cycles while the verdict is
/// inconclusive) gets `6 / (pi^2 j^2)` of the rate, so the parts over all looks sum to the rate
/// whatever the correlation between looks. A run judged once is look 1 (61% of the rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// Cycles skipped by statistical signals (caches filling, arenas growing).
    pub warmup_cycles: usize,
    /// The rate of false leak verdicts a whole run may have (over its signals and looks).
    #[serde(default = "default_false_positive_rate")]
    pub false_positive_rate: f64,
    /// With a run that goes on while inconclusive: the cycles of its first look; the look an
    /// analysis is follows from the last cycle it sees. `None`: a run judged once.
    #[serde(default)]
    pub first_look_cycles: Option<u64>,
    /// Tolerances of the statistical signals.
    pub tolerances: Tolerances,
    /// Store instances opened and closed per cycle (tasks x segments), for the leak rate per
    /// instance.
    pub instances_per_cycle: u64,
    /// After the last close, allocated bytes may exceed the pre-run baseline by this much
    /// (RocksDB allocates process-wide state once, at the first open).
    pub baseline_tolerance_bytes: u64,
    /// The least evidence a statistical signal needs to decide.
    #[serde(default)]
    pub evidence: Evidence,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            warmup_cycles: 20,
            false_positive_rate: default_false_positive_rate(),
            first_look_cycles: None,
            tolerances: Tolerances::default(),
            instances_per_cycle: 1,
            baseline_tolerance_bytes: 2 << 20,
            evidence: Evidence::default(),
        }
    }
}

fn default_false_positive_rate() -> f64 {
    0.01
}

/// The most statistical signals one analysis judges (bytes net of what is explained, RocksDB's
/// part, RSS outside jemalloc, open fds, maps of files, threads, and the bytes-per-firing family
/// as one): each gets an equal share of a look's error rate.
pub(crate) const JUDGED_STATISTICAL_SIGNALS: u32 = 7;

/// Cycles between two looks at the verdict of a run that goes on while inconclusive.
pub(crate) const LOOK_EVERY: u64 = 10;

impl AnalysisConfig {
    /// Judged once at the end of a run (look 1), or, from `cycles`, again every
    /// 10 cycles while inconclusive.
    pub fn looking_from(mut self, cycles: u64) -> Self {
        self.first_look_cycles = Some(cycles);
        self
    }

    /// Which look an analysis of the cycles up to `last_cycle` (0-based) is: 1 up to the first
    /// look, then one more per 10 cycles begun.
    pub fn look_at(&self, last_cycle: u64) -> u64 {
        match self.first_look_cycles {
            Some(first) if last_cycle + 1 > first => 1 + (last_cycle + 1 - first).div_ceil(LOOK_EVERY),
            _ => 1,
        }
    }

    /// The one-sided error rate one signal gets at look `look`.
    pub fn signal_alpha(&self, look: u64) -> f64 {
        let share = 6.0 / (std::f64::consts::PI.powi(2) * (look.max(1) as f64).powi(2));
        self.false_positive_rate * share / f64::from(JUDGED_STATISTICAL_SIGNALS)
    }

    /// The confidence of one signal's two-sided slope interval at look `look` (its lower bound
    /// decides a leak, one-sided at [`AnalysisConfig::signal_alpha`]).
    pub fn interval_confidence(&self, look: u64) -> f64 {
        1.0 - 2.0 * self.signal_alpha(look)
    }

    /// [`AnalysisConfig::interval_confidence`] for an analysis of `samples` (the look their last
    /// cycle is).
    pub fn interval_confidence_for(&self, samples: &[CycleSample]) -> f64 {
        self.interval_confidence(self.look_at(samples.last().map_or(0, |c| c.cycle)))
    }
}

/// Leak rate of the bytes signal, attributed per cycle and per store instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LeakRate {
    /// The signal the rate comes from (`unexplained_bytes` when RocksDB was asked, else
    /// `allocated_bytes`).
    pub signal: String,
    /// Slope per cycle.
    pub bytes_per_cycle: f64,
    /// Slope per store instance opened in a cycle (tasks x segments): the amplification that made
    /// KAFKA-20616 serious shows as the same rate per instance at any scale.
    pub bytes_per_instance: f64,
    /// Instances per cycle used for the division.
    pub instances_per_cycle: u64,
}

/// After the last close, what is left over against the pre-run baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BaselineReturn {
    /// Clean when every judged field is back within tolerance.
    pub verdict: Verdict,
    /// Final minus baseline allocated bytes (raw: includes what RocksDB accounts for and the
    /// harness's own records, which grow with a long run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_delta_bytes: Option<i64>,
    /// Final minus baseline unexplained bytes (allocated minus RocksDB's accounting and the
    /// harness's bookkeeping): the judged byte field when both samples carry an explanation,
    /// else `allocated_delta_bytes` is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unexplained_delta_bytes: Option<i64>,
    /// The allowed excess.
    pub tolerance_bytes: u64,
    /// Final minus baseline fds under the store directory (must be 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds_under_dir_delta: Option<i64>,
    /// Final minus baseline maps under the store directory (must be 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maps_under_dir_delta: Option<i64>,
    /// Final minus baseline open fds of the process (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds_delta: Option<i64>,
    /// Final minus baseline threads (informational: RocksDB's default Env starts its thread pools
    /// at the first open and keeps them for the life of the process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_delta: Option<i64>,
}

/// The verdict on a whole run: every signal's, the leak rate and the return to baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunVerdict {
    /// The worst of the signals' verdicts and the baseline return.
    pub verdict: Verdict,
    /// One verdict per signal.
    pub signals: Vec<SignalVerdict>,
    /// The bytes signal's slope, per cycle and per instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_rate: Option<LeakRate>,
    /// The return to the pre-run baseline, when both samples were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_return: Option<BaselineReturn>,
    /// Why the byte signals cannot be trusted (native allocations invisible to jemalloc), when
    /// so: they cannot call the run clean then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_unavailable: Option<String>,
}

impl RunVerdict {
    /// The verdict of one signal (of a family: its first member).
    pub fn signal(&self, signal: Signal) -> Option<&SignalVerdict> {
        self.signals.iter().find(|s| s.family() == Some(signal))
    }

    /// The verdict of one signal by its name in reports (`live_handles.Options`).
    pub fn signal_named(&self, name: &str) -> Option<&SignalVerdict> {
        self.signals.iter().find(|s| s.signal == name)
    }

    /// Names of the judged (not informational) signals that found a leak.
    pub fn leaking_signals(&self) -> Vec<&str> {
        self.signals
            .iter()
            .filter(|s| s.verdict == Verdict::Leak && !s.informational)
            .map(|s| s.signal.as_str())
            .collect()
    }

    /// Marks the byte signals unavailable for `reason` (native allocations do not show in
    /// jemalloc's counters): a byte signal that looked clean becomes inconclusive, and so does the
    /// run. A leak stays a leak (what is visible did grow).
    pub fn mark_bytes_unavailable(&mut self, reason: String) {
        for s in self.signals.iter_mut().filter(|s| s.family().is_some_and(|f| f.class() == Class::Bytes) && s.verdict == Verdict::Clean) {
            s.verdict = Verdict::Inconclusive;
            s.growth_below_tolerance = false;
        }
        self.verdict = self.verdict.worst(Verdict::Inconclusive);
        self.bytes_unavailable = Some(reason);
    }
}

/// The run's verdict from its signals: the worst of the judged (not informational) ones, where a
/// corroborating signal's "inconclusive" counts as clean ([`Signal::corroborating`]: coarse
/// signals, page-granular memory and the whole process's fds, maps and threads, can call a leak,
/// but their noise alone does not hold a run at "inconclusive" once the exact byte count and the
/// exact per-directory and per-handle signals have decided).
pub(crate) fn aggregate(signals: &[SignalVerdict]) -> Verdict {
    signals
        .iter()
        .filter(|s| !s.informational)
        .map(|s| if s.corroborating() && s.verdict == Verdict::Inconclusive { Verdict::Clean } else { s.verdict })
        .fold(Verdict::Clean, Verdict::worst)
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<i64> {
    Some(b? as i64 - a? as i64)
}

/// Judged cycles in which a point must have fired before it is judged per firing. Fewer
/// firings are too few against background work that spans cycles: a long-lived DB's compactions
/// made a point that fired 6 times in 200 cycles look like 3.7 KB per firing in 2 of 20 runs.
pub(crate) const MIN_FIRING_CYCLES: usize = 10;

/// Cycles after a faulted cycle that the per-firing judgement waits before it reads the level again.
pub(crate) const ATTRIBUTION_LAG: u64 = 1;

/// Bytes left behind per firing of each fault point: a leak on an error path is diluted by the
/// firing rate in a per-cycle slope (1 KiB per firing at 3% is 30 B per cycle, under any sane
/// tolerance), but stands out when the cycles in which that point fired are compared with the
/// cycles in which it did not.
///
/// `levels` holds the unexplained bytes after each sampled cycle, `fired` the fault points that
/// fired in each cycle. For a cycle `t`, the level change is the level [`ATTRIBUTION_LAG`] cycles
/// after `t` minus the level before `t`: a leak persists and shows in it, while memory a failure
/// holds only until the next cycle (a column family left for the next cycle to drop) does not.
/// (Medians over wider windows would also absorb the neighbours' firings, which are noise here.) The estimate is the Hodges-Lehmann shift
/// between the level changes of the cycles in which the point fired (each divided by its
/// firings) and those of the cycles in which it did not, with the Mann-Whitney interval; the
/// confidence is split over the points (Bonferroni), so judging several points does not raise the
/// run's false-alarm rate.
///
/// A point that fired in fewer than [`MIN_FIRING_CYCLES`] of those cycles, or was quiet in fewer
/// than twice as many, gets no verdict. The result's `slope_per_cycle`, `lower` and `upper` are bytes per firing; a point
/// can call a leak, and its "inconclusive" does not hold a run (it corroborates).
pub(crate) fn attribute_faults(
    levels: &BTreeMap<u64, f64>,
    fired: &BTreeMap<u64, &BTreeMap<String, u64>>,
    tolerance_per_firing: f64,
    confidence: f64,
) -> Vec<SignalVerdict> {
    // (level change, what fired) for every cycle with both levels read.
    let changes: Vec<(f64, &BTreeMap<String, u64>)> = fired
        .iter()
        .filter_map(|(&t, f)| Some((levels.get(&(t + ATTRIBUTION_LAG))? - levels.get(&t.checked_sub(1)?)?, *f)))
        .collect();
    let fired_at = |f: &BTreeMap<String, u64>, p: &str| f.get(p).copied().unwrap_or(0);
    let points: BTreeSet<&String> = changes.iter().flat_map(|(_, f)| f.iter().filter(|(_, &n)| n > 0).map(|(p, _)| p)).collect();
    if points.is_empty() {
        return Vec::new();
    }
    let alpha = (1.0 - confidence) / points.len() as f64;
    let mut out = Vec::new();
    for point in points {
        // Other points fire in both groups alike, so what they leave behind cancels out of the
        // shift.
        let (fired, quiet): (Vec<_>, Vec<_>) = changes.iter().partition(|(_, f)| fired_at(f, point) > 0);
        let only: Vec<f64> = fired.iter().map(|(d, f)| d / fired_at(f, point) as f64).collect();
        let clean: Vec<f64> = quiet.iter().map(|(d, _)| *d).collect();
        if only.len() < MIN_FIRING_CYCLES || clean.len() < 2 * MIN_FIRING_CYCLES {
            continue;
        }
        out.push(shift_verdict(Signal::BytesPerFiring, point, &only, &clean, tolerance_per_firing, 1.0 - alpha));
    }
    out
}

/// The Hodges-Lehmann shift of `changed` over `reference` (bytes per cycle or per firing),
/// judged against `tolerance`: a leak when its interval at `confidence` lies above it, clean when
/// below, inconclusive between.
pub(crate) fn shift_verdict(
    signal: Signal,
    qualifier: &str,
    changed: &[f64],
    reference: &[f64],
    tolerance: f64,
    confidence: f64,
) -> SignalVerdict {
    let (shift, lower, upper) = hodges_lehmann(changed, reference, confidence);
    let mut v = SignalVerdict::undecided(signal, Some(qualifier), Rule::Statistical { tolerance_per_cycle: tolerance, confidence });
    v.verdict = against_tolerance(lower, upper, tolerance);
    v.cycles = changed.len();
    (v.slope_per_cycle, v.lower, v.upper) = (Some(shift), Some(lower), Some(upper));
    v.growth_below_tolerance = v.verdict == Verdict::Clean && lower > 0.0;
    v
}

/// A leak when an interval lies above the tolerance, clean when below it, else inconclusive.
fn against_tolerance(lower: f64, upper: f64, tolerance: f64) -> Verdict {
    if lower > tolerance {
        Verdict::Leak
    } else if upper < tolerance {
        Verdict::Clean
    } else {
        Verdict::Inconclusive
    }
}

/// Hodges-Lehmann estimate of the shift of `x` over `y` (the median of all differences), with
/// the distribution-free interval at `confidence` from the Mann-Whitney statistic.
fn hodges_lehmann(x: &[f64], y: &[f64], confidence: f64) -> (f64, f64, f64) {
    let mut d: Vec<f64> = x.iter().flat_map(|a| y.iter().map(move |b| a - b)).collect();
    d.sort_by(f64::total_cmp);
    let (m, n) = (x.len() as f64, y.len() as f64);
    let c = normal_quantile(0.5 + confidence / 2.0) * (m * n * (m + n + 1.0) / 12.0).sqrt();
    let lo = (((m * n - c) / 2.0).floor().max(0.0) as usize).min(d.len() - 1);
    let hi = (((m * n + c) / 2.0).ceil() as usize).min(d.len() - 1);
    (median_sorted(&d), d[lo], d[hi])
}

/// Judges a run: statistical signals over the cycles after warm-up, exact signals over every
/// cycle, and the return to baseline when `baseline` (before the first open) and `last` (after the
/// last close) are given.
pub fn analyze(cycles: &[CycleSample], baseline: Option<&Sample>, last: Option<&Sample>, cfg: &AnalysisConfig) -> RunVerdict {
    let warmup = cfg.warmup_cycles as u64;
    let confidence = cfg.interval_confidence_for(cycles);
    let stat = |tolerance: f64| Rule::Statistical { tolerance_per_cycle: tolerance, confidence };
    let t = &cfg.tolerances;
    let at: Vec<u64> = cycles.iter().map(|c| c.cycle).collect();
    let judge = |signal: Signal, values: &[Option<f64>], rule: Rule, warmup: u64| {
        judge_at(signal, None, &at, values, rule, warmup, cfg.evidence)
    };
    let page_evidence = Evidence {
        min_points: cfg.evidence.min_points.max(Evidence::PAGE_GRANULAR.min_points),
        min_cycles: cfg.evidence.min_cycles.max(Evidence::PAGE_GRANULAR.min_cycles),
    };
    let judge_pages = |signal: Signal, values: &[Option<f64>], tolerance: f64| {
        judge_at(signal, None, &at, values, stat(tolerance), warmup, page_evidence)
    };
    let series = |f: &dyn Fn(&Sample) -> Option<f64>| cycles.iter().map(|c| f(&c.sample)).collect::<Vec<_>>();
    let mut signals = Vec::new();

    // Byte signals. When RocksDB's accounting (or the harness's own bookkeeping) was read, growth
    // it explains (memtables, table readers, caches of a store whose data legitimately grows; the
    // harness's per-cycle records) is not a leak: the net signals are judged and the raw ones
    // shown for reference.
    let explained_known = cycles.iter().any(|c| c.sample.has_explanation());
    let explained = |s: &Sample| s.explained_bytes() as f64;
    type Reader<'a> = &'a dyn Fn(&Sample) -> Option<f64>;
    let allocated: Reader<'_> = &|s| s.allocated_bytes().map(|v| v as f64);
    let mut v = judge(Signal::AllocatedBytes, &series(allocated), stat(t.allocated_bytes_per_cycle), warmup);
    v.informational = explained_known;
    signals.push(v);
    if explained_known {
        let net = series(&|s| allocated(s).map(|v| v - explained(s)));
        signals.push(judge(Signal::UnexplainedBytes, &net, stat(t.allocated_bytes_per_cycle), warmup));
        // What was subtracted, shown: a store whose data grows explains more each cycle (its
        // table readers, its cache filling), so this is not judged; a slope here is where to
        // look when the net signal is clean and memory still grows.
        let mut v = judge(Signal::ExplainedBytes, &series(&|s| Some(explained(s))), stat(t.allocated_bytes_per_cycle), warmup);
        v.informational = true;
        signals.push(v);
        // The part RocksDB explains must level off: memtables pinned by a leaked iterator are
        // RocksDB's memory, yet they grow with every cycle. Caches are left out: their usage is
        // bounded by their capacity (what lies above it is unexplained), and a cache still
        // filling grows for thousands of cycles (blocks of flushed and compacted files).
        let rocksdb_part = series(&|s| s.rocksdb.map(|r| r.unbounded_bytes() as f64));
        if rocksdb_part.iter().any(Option::is_some) {
            signals.push(judge(Signal::RocksdbExplainedBytes, &rocksdb_part, stat(t.rocksdb_bytes_per_cycle), warmup));
        }
    }
    // Resident memory after a purge is page-granular and moves with the allocator's own
    // fragmentation (a 4 x 8 store grew it 6 KiB a cycle while its allocated bytes stayed flat):
    // where allocated bytes are read, they are the byte count, and resident is shown only.
    let resident: Reader<'_> = &|s| s.jemalloc.filter(|j| j.purged).map(|j| j.resident_bytes as f64);
    let mut v = judge_pages(Signal::ResidentBytes, &series(resident), t.resident_bytes_per_cycle);
    v.informational = cycles.iter().any(|c| c.sample.allocated_bytes().is_some());
    signals.push(v);
    // Anonymous RSS outside jemalloc's resident pages: thread stacks, anonymous maps, a second
    // allocator (C code that bypasses the override): what no byte count sees. Judged net of
    // jemalloc where jemalloc is read (its own pages are judged through allocated bytes above).
    let rss_anon: Reader<'_> = &|s| s.process.rss_anon_bytes.map(|v| v as f64);
    let mut v = judge_pages(Signal::RssAnonBytes, &series(rss_anon), t.rss_bytes_per_cycle);
    let outside = series(&|s| Some(rss_anon(s)? - resident(s)?));
    if outside.iter().any(Option::is_some) {
        v.informational = true;
        signals.push(v);
        signals.push(judge_pages(Signal::RssAnonOutsideJemallocBytes, &outside, t.rss_bytes_per_cycle));
    } else {
        signals.push(v);
    }
    // RSS counts the pages of mapped files too (a store reading SST files through mmap grows it
    // with its data): shown, judged through its anonymous part above.
    let mut rss = judge_pages(Signal::RssBytes, &series(&|s| s.process.rss_bytes.map(|v| v as f64)), t.rss_bytes_per_cycle);
    rss.informational = true;
    signals.push(rss);
    signals.push(judge(Signal::OpenFds, &series(&|s| s.process.open_fds.map(|v| v as f64)), stat(t.os_per_cycle), warmup));
    // All maps move with the allocator's extents (a 4 x 8 store: 0.02 a cycle with its bytes
    // flat): shown; the maps of files are judged, those under the store's directory exactly.
    let mut maps = judge(Signal::Maps, &series(&|s| s.process.maps.map(|v| v as f64)), stat(t.os_per_cycle), warmup);
    let file_maps = series(&|s| s.process.file_maps.map(|v| v as f64));
    if file_maps.iter().any(Option::is_some) {
        maps.informational = true;
        signals.push(maps);
        signals.push(judge(Signal::FileMaps, &file_maps, stat(t.os_per_cycle), warmup));
    } else {
        signals.push(maps);
    }
    signals.push(judge(Signal::Threads, &series(&|s| s.process.threads.map(|v| v as f64)), stat(t.os_per_cycle), warmup));

    // Exact: nothing of the store's directory stays open or mapped after a close.
    let expect = |f: &dyn Fn(&Sample) -> Option<u64>| baseline.and_then(f).unwrap_or(0) as f64;
    let fds_under = series(&|s| s.process.open_fds_under_dir.map(|v| v as f64));
    if fds_under.iter().any(Option::is_some) {
        let rule = Rule::Exact { expected: expect(&|s| s.process.open_fds_under_dir) };
        signals.push(judge(Signal::OpenFdsUnderDir, &fds_under, rule, 0));
    }
    let maps_under = series(&|s| s.process.maps_under_dir.map(|v| v as f64));
    if maps_under.iter().any(Option::is_some) {
        let rule = Rule::Exact { expected: expect(&|s| s.process.maps_under_dir) };
        signals.push(judge(Signal::MapsUnderDir, &maps_under, rule, 0));
    }
    // Exact: no undeclared handle of any kind after any cycle.
    let kinds: BTreeSet<&String> = cycles.iter().flat_map(|c| c.retained_handles.keys()).collect();
    for kind in kinds {
        let values: Vec<Option<f64>> =
            cycles.iter().map(|c| Some(c.retained_handles.get(kind).copied().unwrap_or(0) as f64)).collect();
        signals.push(judge_at(Signal::LiveHandlesOf, Some(kind), &at, &values, Rule::Exact { expected: 0.0 }, 0, cfg.evidence));
    }

    let rate_signal = if explained_known { Signal::UnexplainedBytes } else { Signal::AllocatedBytes };
    let leak_rate = signals.iter().find(|s| s.family() == Some(rate_signal)).and_then(|s| s.slope_per_cycle).map(|slope| {
        let instances = cfg.instances_per_cycle.max(1);
        LeakRate {
            signal: rate_signal.name().to_string(),
            bytes_per_cycle: slope,
            bytes_per_instance: slope / instances as f64,
            instances_per_cycle: instances,
        }
    });

    let baseline_return = match (baseline, last) {
        (Some(b), Some(l)) => {
            let allocated_delta_bytes = delta(b.allocated_bytes(), l.allocated_bytes());
            let unexplained_delta_bytes = if b.has_explanation() && l.has_explanation() {
                b.unexplained_bytes().zip(l.unexplained_bytes()).map(|(b, l)| l - b)
            } else {
                None
            };
            let judged_bytes = unexplained_delta_bytes.or(allocated_delta_bytes);
            let fds_under_dir_delta = delta(b.process.open_fds_under_dir, l.process.open_fds_under_dir);
            let maps_under_dir_delta = delta(b.process.maps_under_dir, l.process.maps_under_dir);
            let ok = judged_bytes.is_none_or(|d| d <= cfg.baseline_tolerance_bytes as i64)
                && fds_under_dir_delta.is_none_or(|d| d == 0)
                && maps_under_dir_delta.is_none_or(|d| d == 0);
            Some(BaselineReturn {
                verdict: if ok { Verdict::Clean } else { Verdict::Leak },
                allocated_delta_bytes,
                unexplained_delta_bytes,
                tolerance_bytes: cfg.baseline_tolerance_bytes,
                fds_under_dir_delta,
                maps_under_dir_delta,
                fds_delta: delta(b.process.open_fds, l.process.open_fds),
                threads_delta: delta(b.process.threads, l.process.threads),
            })
        }
        _ => None,
    };

    // Page-granular and process-wide signals move in steps of their own: their growth under the
    // tolerance is no evidence worth a warning (they can still call a leak).
    for s in signals.iter_mut().filter(|s| s.corroborating()) {
        s.growth_below_tolerance = false;
    }
    let mut verdict = aggregate(&signals);
    if let Some(b) = &baseline_return {
        verdict = verdict.worst(b.verdict);
    }
    RunVerdict { verdict, signals, leak_rate, baseline_return, bytes_unavailable: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((normal_quantile(0.995) - 2.575829).abs() < 1e-5);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
    }

    #[test]
    fn exact_slope_of_a_line() {
        let v: Vec<f64> = (0..50).map(|i| 100.0 + 7.0 * i as f64).collect();
        let s = theil_sen(&v, 0.99).expect("slope");
        assert_eq!((s.slope_per_cycle, s.lower, s.upper), (7.0, 7.0, 7.0));
    }

    #[test]
    fn long_series_are_block_averaged_with_the_slope_kept_per_cycle() {
        let v: Vec<f64> = (0..5000).map(|i| 3.0 * i as f64).collect();
        let s = theil_sen(&v, 0.99).expect("slope");
        assert_eq!(s.block, 5);
        assert!((s.slope_per_cycle - 3.0).abs() < 1e-9);
    }

    fn sample(allocated: u64, explained: Option<u64>) -> Sample {
        use crate::probe::{JemallocStats, ProcessStats, RocksDbMemory};
        let j = JemallocStats {
            allocated_bytes: allocated,
            active_bytes: allocated,
            resident_bytes: 8 << 20,
            mapped_bytes: 16 << 20,
            retained_bytes: 0,
            metadata_bytes: 0,
            purged: true,
            tcache_bytes: 0,
            internal_bytes: 0,
        };
        let process = ProcessStats {
            rss_bytes: Some(32 << 20),
            rss_anon_bytes: Some(16 << 20),
            threads: Some(4),
            open_fds: Some(10),
            open_fds_under_dir: Some(0),
            maps: Some(60),
            maps_under_dir: Some(0),
            file_maps: Some(20),
        };
        let rocksdb = explained.map(|e| RocksDbMemory { mem_table_total_bytes: e, ..Default::default() });
        Sample { monotonic_ns: 0, jemalloc: Some(j), process, rocksdb, bookkeeping_bytes: None }
    }

    /// A block cache still filling (blocks of flushed and compacted files stay until evicted)
    /// takes more than its charge: RocksDB charges requested sizes, jemalloc counts size
    /// classes. Up to a quarter more is explained; a leak beside it still shows.
    #[test]
    fn a_cache_filling_below_capacity_is_not_a_leak() {
        use crate::probe::RocksDbMemory;
        let cfg = AnalysisConfig { warmup_cycles: 5, ..Default::default() };
        let run = |leak: u64| -> RunVerdict {
            let samples: Vec<CycleSample> = (0..200)
                .map(|c| {
                    let cache = 2_000 * c;
                    // 20% rounding on top of the charge, plus the leak.
                    let mut s = sample(10_000_000 + cache + cache / 5 + leak * c, None);
                    s.rocksdb = Some(RocksDbMemory { cache_total_bytes: cache, ..Default::default() });
                    CycleSample::new(c, s, BTreeMap::new(), true)
                })
                .collect();
            analyze(&samples, None, None, &cfg)
        };
        let clean = run(0);
        assert_eq!(clean.signal(Signal::UnexplainedBytes).map(|s| s.verdict), Some(Verdict::Clean), "{clean:?}");
        assert_eq!(clean.signal(Signal::RocksdbExplainedBytes).map(|s| s.verdict), Some(Verdict::Clean), "the cache is bounded");
        assert_eq!(clean.verdict, Verdict::Clean);
        let leaking = run(1_000);
        assert_eq!(leaking.verdict, Verdict::Leak, "{leaking:?}");
        assert_eq!(leaking.leak_rate.map(|r| r.signal), Some("unexplained_bytes".to_string()));
    }

    #[test]
    fn growth_rocksdb_explains_is_not_a_leak_until_it_fails_to_level_off() {
        let cfg = AnalysisConfig { instances_per_cycle: 32, warmup_cycles: 5, ..Default::default() };
        // Memtables and caches fill by 50 KB a cycle for 40 cycles and then stay, all of it
        // accounted for by RocksDB.
        let filled = |c: u64| 50_000 * c.min(40);
        let explained: Vec<CycleSample> = (0..200)
            .map(|c| CycleSample::new(c, sample(10_000_000 + filled(c), Some(filled(c))), BTreeMap::new(), true))
            .collect();
        let v = analyze(&explained, None, None, &cfg);
        assert_eq!(v.signal(Signal::UnexplainedBytes).map(|s| s.verdict), Some(Verdict::Clean));
        assert_eq!(v.signal(Signal::RocksdbExplainedBytes).map(|s| s.verdict), Some(Verdict::Clean));
        assert_eq!(v.verdict, Verdict::Clean, "{v:?}");
        // The same growth that never levels off: what RocksDB accounts for is itself the leak
        // (memtables pinned by leaked iterators are RocksDB's memory too).
        let growing: Vec<CycleSample> = (0..200)
            .map(|c| CycleSample::new(c, sample(10_000_000 + 50_000 * c, Some(50_000 * c)), BTreeMap::new(), true))
            .collect();
        let v = analyze(&growing, None, None, &cfg);
        assert_eq!(v.signal(Signal::AllocatedBytes).map(|s| (s.verdict, s.informational)), Some((Verdict::Leak, true)));
        assert_eq!(v.signal(Signal::UnexplainedBytes).map(|s| s.verdict), Some(Verdict::Clean));
        assert_eq!(v.signal(Signal::RocksdbExplainedBytes).map(|s| s.verdict), Some(Verdict::Leak));
        assert_eq!(v.verdict, Verdict::Leak, "{v:?}");
        // 32 instances per cycle each leaking 300 B that nothing explains, beside levelled growth.
        let leaking: Vec<CycleSample> = (0..200)
            .map(|c| CycleSample::new(c, sample(10_000_000 + filled(c) + 9_600 * c, Some(filled(c))), BTreeMap::new(), true))
            .collect();
        let v = analyze(&leaking, None, None, &cfg);
        assert_eq!(v.verdict, Verdict::Leak);
        assert_eq!(v.signal(Signal::RocksdbExplainedBytes).map(|s| s.verdict), Some(Verdict::Clean));
        let rate = v.leak_rate.expect("rate");
        assert_eq!(rate.signal, "unexplained_bytes");
        assert!((rate.bytes_per_cycle - 9600.0).abs() < 1.0 && (rate.bytes_per_instance - 300.0).abs() < 0.1, "{rate:?}");
    }

    #[test]
    fn a_one_time_step_past_the_warm_up_is_reported_as_retention_not_a_slope() {
        let cfg = AnalysisConfig::default();
        // Flat with a little noise, then 50 KB kept once at cycle 100.
        let level = |c: u64| 10_000_000 + (c * 7919) % 300 + if c >= 100 { 50_000 } else { 0 };
        let cycles: Vec<CycleSample> =
            (0..200).map(|c| CycleSample::new(c, sample(level(c), Some(0)), BTreeMap::new(), true)).collect();
        let v = analyze(&cycles, None, None, &cfg);
        let bytes = v.signal(Signal::UnexplainedBytes).expect("signal");
        assert_eq!(bytes.verdict, Verdict::Clean, "{bytes:?}");
        assert_eq!(bytes.step_at_cycle, Some(100), "{bytes:?}");
        assert!(bytes.step_size.is_some_and(|s| (s - 50_000.0).abs() < 500.0), "{bytes:?}");
        // Without the step, nothing to report.
        let flat: Vec<CycleSample> =
            (0..200).map(|c| CycleSample::new(c, sample(level(c) - if c >= 100 { 50_000 } else { 0 }, Some(0)), BTreeMap::new(), true)).collect();
        let v = analyze(&flat, None, None, &cfg);
        assert_eq!(v.signal(Signal::UnexplainedBytes).and_then(|s| s.step_at_cycle), None);
    }

    #[test]
    fn the_false_positive_rate_is_spent_over_signals_and_looks() {
        let once = AnalysisConfig::default();
        assert_eq!((once.look_at(0), once.look_at(199), once.look_at(799)), (1, 1, 1));
        let check = AnalysisConfig::default().looking_from(200);
        assert_eq!((check.look_at(199), check.look_at(209), check.look_at(210), check.look_at(799)), (1, 2, 3, 61));
        // Every look of every signal, summed, stays within the run's rate.
        let spent: f64 = (1..=100_000).map(|j| check.signal_alpha(j)).sum::<f64>() * f64::from(JUDGED_STATISTICAL_SIGNALS);
        assert!(spent <= check.false_positive_rate && spent > 0.9999 * check.false_positive_rate, "{spent}");
        // Look 1 of one signal: 1% x 6/pi^2 / 7, one-sided.
        assert!((once.signal_alpha(1) - 0.01 * 0.607_927 / 7.0).abs() < 1e-9);
        assert!(once.interval_confidence(2) > once.interval_confidence(1));
    }

    #[test]
    fn exact_handle_signals_and_the_return_to_baseline() {
        let cfg = AnalysisConfig::default();
        let mut cycles: Vec<CycleSample> =
            (0..50).map(|c| CycleSample::new(c, sample(10_000_000, None), BTreeMap::new(), true)).collect();
        cycles[7].retained_handles.insert("Options".into(), 1);
        let base = sample(9_000_000, None);
        let mut last = sample(10_000_000, None);
        let v = analyze(&cycles, Some(&base), Some(&last), &cfg);
        let h = v.signal_named("live_handles.Options").expect("handle signal");
        assert_eq!((h.verdict, h.first_cycle_with_residue), (Verdict::Leak, Some(7)));
        assert_eq!(v.baseline_return.as_ref().map(|b| b.verdict), Some(Verdict::Clean));
        last.process.open_fds_under_dir = Some(2);
        let v = analyze(&cycles, Some(&base), Some(&last), &cfg);
        let b = v.baseline_return.expect("baseline");
        assert_eq!((b.verdict, b.fds_under_dir_delta), (Verdict::Leak, Some(2)));
    }

    /// A long run's own records and RocksDB's accounted memory are not left over; bytes nothing
    /// explains are.
    #[test]
    fn the_return_to_baseline_judges_unexplained_bytes() {
        let cfg = AnalysisConfig::default();
        let cycles: Vec<CycleSample> =
            (0..50).map(|c| CycleSample::new(c, sample(10_000_000, Some(0)), BTreeMap::new(), true)).collect();
        let mut base = sample(9_000_000, Some(0));
        base.bookkeeping_bytes = Some(1_000);
        // 10 MB more allocated at the end: 6 MB of harness records, 3 MB of memtables, 1 MB unexplained.
        let mut last = sample(19_000_000, Some(3_000_000));
        last.bookkeeping_bytes = Some(6_001_000);
        let b = analyze(&cycles, Some(&base), Some(&last), &cfg).baseline_return.expect("baseline");
        assert_eq!((b.verdict, b.allocated_delta_bytes, b.unexplained_delta_bytes), (Verdict::Clean, Some(10_000_000), Some(1_000_000)));
        last.bookkeeping_bytes = Some(2_001_000);
        let b = analyze(&cycles, Some(&base), Some(&last), &cfg).baseline_return.expect("baseline");
        assert_eq!((b.verdict, b.unexplained_delta_bytes), (Verdict::Leak, Some(5_000_000)));
    }

    #[test]
    fn too_short_or_non_finite_series_have_no_slope() {
        assert!(theil_sen(&[1.0, 2.0], 0.99).is_none());
        assert!(theil_sen(&[1.0, f64::NAN, 2.0, 3.0], 0.99).is_none());
    }
}
