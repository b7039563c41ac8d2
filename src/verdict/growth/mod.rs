//! The growth rule: a statistical signal is a leak when it keeps growing through the later part
//! of the run by more than a budget that stops growing with the run.
//!
//! 1. The judged samples (after the warm-up) are reduced to block floors ([`Floors`]): the
//!    lowest sample of every block of 4, so memory used for a moment does not count and memory
//!    kept does.
//! 2. A jump between neighbouring floors larger than the budget (and than 6 times the noise),
//!    that moves the level (the medians of three floors on its two sides stand at least half of
//!    it apart), is counted apart: one jump followed by level data is retention (memory kept
//!    once), repeated jumps are growth. A floor that stood out and came back is no jump.
//! 3. Growth over the later half of the judged cycles is a least-squares slope times the span,
//!    plus the jumps inside it, with an interval that holds for the dependence real stores show
//!    (below).
//! 4. The verdict: **leak** when the growth's lower bound is above the budget, with more than
//!    one jump's worth, and growth still shows in the last quarter (its lower bound above a
//!    quarter of the budget, or a jump there); **clean** when the upper
//!    bound is below the budget, every jump is followed by at least three times as many level
//!    cycles as preceded it, and (before the last look) the lower bound is not above zero: growth
//!    that is evidenced but still under the budget makes the run look longer, so a steady leak
//!    is found once its growth passes the total budget and bounded growth is clean once it has
//!    stopped. Under a rule without a total (the per-cycle tolerance alone: page-granular
//!    memory) the budget grows with the span as fast as growth at its rate does, so looking
//!    longer cannot turn growth bounded under it into a leak: evidenced growth is clean there
//!    as soon as its upper bound is below the budget, and the verdict says what it rules out
//!    (one release that alone makes the growth look evidenced still waits: it may hide more);
//!    at the last look, an upper bound above the total budget but below the tolerance times the
//!    span is clean too (what the verdict rules out is then larger, and said), and the upper
//!    bound is taken at [`LAST_LOOK_MISS_RATE`] rather than at the spent rate (below);
//!    **inconclusive** otherwise, with the cycles a decision should take.
//!
//! The budget is `min(tolerance x span, total)`: over a short later half it is the per-cycle
//! tolerance, over a long one the total, so a run of N cycles finds steady leaks down to about
//! `2 x total / N` per cycle.
//!
//! # The interval
//! Least squares on the floors of the later half, with two variances, the larger taken:
//! - **levels**: the residual variance times `(1 + r) / (1 - r)`, `r` the lag-1 autocorrelation
//!   pooled over four detrended segments of the judged floors (corrected for its downward bias,
//!   at most 0.9), with `n (1 - r) / (1 + r) - 2` degrees of freedom (at least 8);
//! - **random walk**: when the floors wander like a random walk (their variance ratio, long-lag
//!   against one-step increments, is at least 0.2: about 1 for a walk, `1 / lag` for independent
//!   noise), the variance the slope has under a walk, from the variance of the increments at a
//!   lag of a quarter of the judged floors, with `2 n / lag - 1` degrees of freedom. Taken on
//!   the floors with jumps levelled and transients dropped: a staircase of a few jumps is growth
//!   counted apart, not a wandering level.
//!
//! Simulated (Gaussian noise of a check's first look and last, 180 and 780 samples, 4,000 series
//! each; `docs/verdict.md`): white noise, AR(1) with rho up to 0.95 and a random walk stay
//! within twice the nominal one-sided rate at 1%, 0.1% and 0.01%, and white noise over a short
//! run is called with less power than it could be (the random-walk variance is taken where the
//! two cannot be told apart). The noise structure is read from the last three quarters of the
//! judged floors: a warm-up that is still settling (a cache filling) is not noise.

mod jumps;

use super::floors::{Floor, Floors};
use super::outcome::{Evidence, Verdict};
use super::stats::{lag_weighted_sum, median, robust_variance, t_upper, Line};
use jumps::{level_median, Jumps};
use serde::{Deserialize, Serialize};

/// Samples per block floor, when the run has enough of them.
const BLOCK: usize = 4;
/// Fewest floors the analysis wants before it uses blocks of [`BLOCK`].
const MIN_FLOORS: u64 = 40;
/// A jump counts apart when above this many noise deviations (and above the budget).
const JUMP_NOISE: f64 = 6.0;
/// Level cycles after the last jump, per cycle before it, that make it retention.
const RETIRE_FACTOR: f64 = 3.0;
/// A drop that is at least this share of all the later part released is one release.
const DOMINANT_DROP: f64 = 2.0 / 3.0;
/// The share of the budget the last quarter's lower bound must pass for growth to count as still
/// going on (a steady leak above the budget puts half of it there).
const STILL_GROWING_SHARE: f64 = 0.25;
/// The bias-corrected autocorrelation's cap (inflation 19).
const RHO_CAP: f64 = 0.9;
/// The fewest degrees of freedom of the levels variance.
const MIN_DF: f64 = 8.0;
/// One-sided rate of the upper bound at the last look (each of the two estimates at half of it).
///
/// The rate a look spends ([`GrowthRule::alpha`]) bounds false leaks: it is shared over every
/// signal and look of the run, so by the twentieth look it is about 1e-7, and on a store whose
/// floors wander (a DB kept open: 8 degrees of freedom) its t quantile is 16 instead of 2.3. That
/// rate guards the lower bound, which calls leaks. The upper bound calls clean: its error is a
/// missed leak, not a false one, and before the last look a clean call stops a check, so it keeps
/// the spent rate there (a leak is not let go early). At the last look no later look follows:
/// the upper bound is taken at 5%, once per run, and what a clean verdict rules out holds at 95%
/// ([`Growth::upper_alpha`]). Without it a clean store of that kind ends inconclusive whenever its
/// interval at 1e-7 is wider than the tolerance over the span (long-lived-db: 3 seeds of 20).
pub(super) const LAST_LOOK_MISS_RATE: f64 = 0.05;
/// The variance ratio (long-lag against one-step increments, 1 for a random walk, about `2 /
/// lag` for independent noise) at and above which the floors are taken to wander like a walk.
const WALK_RATIO: f64 = 0.2;

/// Whether the later part's growth is evidenced, and how ([`Series::evidenced`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidenced {
    No,
    /// The lower bound is above zero.
    Growth,
    /// It would be but for one release that is most of what the later part gave back.
    OneRelease,
}

/// Where a signal's budget came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetFrom {
    /// The per-cycle tolerance times the span (a short later part).
    Tolerance,
    /// The total budget (a long later part).
    Total,
}

/// What the growth rule measured over the later part of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Growth {
    /// The later part: from this cycle ...
    pub from_cycle: u64,
    /// ... to this one.
    pub to_cycle: u64,
    /// Growth over it, in the signal's unit.
    pub growth: f64,
    /// Its lower confidence bound.
    pub lower: f64,
    /// Its upper confidence bound.
    pub upper: f64,
    /// The one-sided rate `upper` holds at: the rule's `alpha`, or `LAST_LOOK_MISS_RATE` at a
    /// run's last look. Absent in reports written before it was recorded (then the rule's alpha).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_alpha: Option<f64>,
    /// The growth a clean run may show over it.
    pub budget: f64,
    /// Whether the budget is the tolerance times the span or the total.
    pub budget_from: BudgetFrom,
    /// Jumps above the budget inside the later part.
    #[serde(default)]
    pub jumps: u32,
    /// Growth still shows in the last quarter of the judged cycles.
    #[serde(default)]
    pub still_growing: bool,
    /// Part of `budget`: what the store's data may add over the later part (the live SST files
    /// a DB kept open gained, at their bounds: `LIVE_FILE_BYTES` and
    /// `TABLE_READER_SHARE`; one fd or map per file).
    #[serde(default)]
    pub data_allowance: f64,
}

impl Growth {
    /// Cycles the later part spans.
    pub(crate) fn cycles(&self) -> u64 {
        self.to_cycle.saturating_sub(self.from_cycle)
    }

    /// Growth per cycle over the later part.
    #[cfg(test)]
    pub(crate) fn per_cycle(&self) -> f64 {
        self.growth / self.cycles().max(1) as f64
    }
}

/// How a statistical signal is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GrowthRule {
    /// Growth per cycle a short run may show.
    pub tolerance_per_cycle: f64,
    /// Growth a long run may show in all (None: no cap, the tolerance alone).
    pub budget: Option<f64>,
    /// One-sided error rate of each bound.
    pub alpha: f64,
    /// The values are counts (fds, maps, threads): every whole step beyond the noise is a jump,
    /// so a descriptor leaked now and then is a staircase of repeated jumps, not noise around a
    /// line. Bytes count a jump apart only above the budget.
    #[serde(default)]
    pub counts: bool,
}

impl GrowthRule {
    /// The budget over `span` cycles, and where it came from.
    pub(crate) fn budget_over(&self, span: f64) -> (f64, BudgetFrom) {
        let by_tolerance = self.tolerance_per_cycle * span;
        match self.budget {
            Some(total) if total < by_tolerance => (total, BudgetFrom::Total),
            _ => (by_tolerance, BudgetFrom::Tolerance),
        }
    }
}

/// The growth rule's judgement of one series.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GrowthJudgement {
    pub(crate) verdict: Verdict,
    pub(crate) growth: Option<Growth>,
    /// The largest jump that level data followed (cycle, size).
    pub(crate) retention: Option<(u64, f64)>,
    pub(crate) more_cycles_needed: Option<u64>,
    /// Clean with growth evidenced below the budget (at the last look, or at any look under a
    /// rule without a total budget).
    pub(crate) growth_below_budget: bool,
}

impl GrowthJudgement {
    fn undecided(more: u64) -> Self {
        GrowthJudgement {
            verdict: Verdict::Inconclusive,
            growth: None,
            retention: None,
            more_cycles_needed: Some(more.max(1)),
            growth_below_budget: false,
        }
    }
}

/// Judges `floors` by `rule` (see the module's docs). `last_look`: no later look will come, so
/// growth evidenced below the budget is clean (with [`GrowthJudgement::growth_below_budget`]).
///
/// `data` is what the store's data may legitimately add over the later part that starts at the
/// cycle given (live files of a DB kept open, in the signal's unit): it adds to the budget.
pub(crate) fn judge(
    floors: &Floors,
    rule: &GrowthRule,
    evidence: Evidence,
    last_look: bool,
    data: &dyn Fn(u64) -> f64,
) -> GrowthJudgement {
    let Some((w, t)) = floors.span() else {
        return GrowthJudgement::undecided(evidence.min_cycles);
    };
    let span = t - w + 1;
    let short_points = (evidence.min_points as u64).saturating_sub(floors.samples());
    let gap = span / floors.samples().max(1);
    let short = (short_points * gap.max(1)).max(evidence.min_cycles.saturating_sub(span));
    if short > 0 {
        return GrowthJudgement::undecided(short);
    }
    let fl = floors.at_block(floors.analysis_block(BLOCK, MIN_FLOORS));
    if fl.len() < 16 {
        return GrowthJudgement::undecided(span.max(1));
    }
    Series::new(fl, w as f64, t as f64, rule).judge(last_look, data)
}

/// The floors of one look, with the later part's bounds.
struct Series<'a> {
    x: Vec<f64>,
    y: Vec<f64>,
    w: f64,
    t: f64,
    mid: f64,
    quarter: f64,
    rule: &'a GrowthRule,
}

impl<'a> Series<'a> {
    fn new(fl: Vec<Floor>, w: f64, t: f64, rule: &'a GrowthRule) -> Self {
        let sw = t - w;
        Series {
            x: fl.iter().map(|f| f.cycle as f64).collect(),
            y: fl.iter().map(|f| f.value).collect(),
            w,
            t,
            mid: w + sw / 2.0,
            quarter: w + 3.0 * sw / 4.0,
            rule,
        }
    }

    fn judge(mut self, last_look: bool, data: &dyn Fn(u64) -> f64) -> GrowthJudgement {
        let span = self.t - self.mid;
        let (budget, budget_from) = self.rule.budget_over(span);
        let data_allowance = data(self.mid.ceil() as u64).max(0.0);
        let mut steps: Vec<f64> = self.y.windows(2).map(|p| p[1] - p[0]).collect();
        // A step the store's data could have taken (its allowance over the later part) is growth
        // of the data, not a jump.
        let floor = if self.rule.counts { 0.5 } else { budget } + data_allowance;
        let threshold = floor.max(JUMP_NOISE * robust_variance(&steps).sqrt());
        // A steady leak moves every floor by as much: a jump stands out from the typical step.
        let typical = median(&mut steps);
        let pending = self.drop_transients(threshold, typical);
        let jumps = Jumps::find(&self.x, &self.y, threshold, typical, self.mid, self.quarter);
        let level = jumps.levelled(&self.y);
        // Steps below the budget that stand out from the noise (a container doubling, a small
        // burst) are growth too. Two estimates of the same growth, each at half the error rate,
        // the narrower taken (either bound holds at its rate, so the one taken holds at the
        // whole): the floors as they are, and the floors with those steps levelled out (one step
        // is not a wandering level) and added back, with the variance they bring as noise
        // ([`Jumps::moments_from`]). The first suits a sawtooth (its drops undo its slope), the
        // second a leak with a few steps in it.
        let outlier = JUMP_NOISE * robust_variance(&steps).sqrt();
        let small = Jumps::find(&self.x, &level, outlier, typical, self.mid, self.quarter);
        let smooth = small.levelled(&level);
        let upper_alpha = if last_look { LAST_LOOK_MISS_RATE.max(self.rule.alpha) } else { self.rule.alpha };
        let estimate = |from: f64, span: f64| self.estimate(&level, &smooth, &small, from, span, upper_alpha);
        let (Some(later), Some(last)) = (estimate(self.mid, span), estimate(self.quarter, self.t - self.quarter))
        else {
            return GrowthJudgement::undecided((self.t - self.w) as u64);
        };
        let (growth, lower, upper) = (later.0 + jumps.in_later, later.1 + jumps.in_later, later.2 + jumps.in_later);
        let retired = jumps.last_rise.is_none_or(|at| self.t - at >= RETIRE_FACTOR * (at - self.w));
        // What the store's data may add is allowed on top of the budget.
        let budget = budget + data_allowance;
        // Growth that continues at a rate above the budget puts half of it in the last quarter:
        // growth still shows when the last quarter's lower bound is above a quarter of the
        // budget (or a jump falls there). A staircase of small steps that is levelling off (a
        // container growing by doublings, a registry filling) shows a step or two there, not that.
        let still_growing = last.1 > STILL_GROWING_SHARE * budget || jumps.in_last_quarter > 0;
        let leak = lower - jumps.single_rise > budget && still_growing;
        let evidence = self.evidenced(lower, &jumps, &small);
        let evidenced = evidence != Evidenced::No;
        let waits = self.waits(evidence);
        // At the last look no later one can narrow the interval: growth the run could not bound
        // by the total budget is clean when the per-cycle tolerance bounds it, and the verdict
        // says so (`budget_from` tolerance, and what it rules out, larger).
        let by_tolerance = self.rule.tolerance_per_cycle * span + data_allowance;
        let (budget, budget_from) = if last_look && !leak && upper >= budget && upper < by_tolerance {
            (by_tolerance, BudgetFrom::Tolerance)
        } else {
            (budget, budget_from)
        };
        let clean = upper < budget && retired && !pending && (!waits || last_look);
        let verdict = match (leak, clean) {
            (true, _) => Verdict::Leak,
            (false, true) => Verdict::Clean,
            (false, false) => Verdict::Inconclusive,
        };
        let g = Growth {
            from_cycle: self.mid.ceil() as u64,
            to_cycle: self.t as u64,
            growth,
            lower,
            upper,
            upper_alpha: Some(upper_alpha),
            budget,
            budget_from,
            jumps: jumps.rises_in_later,
            still_growing,
            data_allowance,
        };
        let more_cycles_needed = (verdict == Verdict::Inconclusive).then(|| self.more_cycles(&g, &jumps, pending));
        GrowthJudgement {
            verdict,
            growth: Some(g),
            retention: if retired { jumps.largest_rise } else { None },
            more_cycles_needed,
            growth_below_budget: clean && evidenced,
        }
    }

    /// Whether evidenced growth waits for a later look: only where waiting can decide it, under a
    /// total budget, which a steady leak's growth passes as the span grows. Without one the
    /// budget grows as fast as growth at the tolerance does.
    fn waits(&self, evidence: Evidenced) -> bool {
        match evidence {
            Evidenced::No => false,
            Evidenced::Growth => self.rule.budget.is_some(),
            Evidenced::OneRelease => true,
        }
    }

    /// Growth from `from` over `span` cycles and its interval: of the two estimates, each with
    /// its lower bound at half the rule's error rate and its upper at half `upper_alpha`, the
    /// narrower (see [`Series::judge`]).
    fn estimate(
        &self,
        level: &[f64],
        smooth: &[f64],
        small: &Jumps,
        from: f64,
        span: f64,
        upper_alpha: f64,
    ) -> Option<(f64, f64, f64)> {
        let rates = (self.rule.alpha / 2.0, upper_alpha / 2.0);
        let raw = later_growth(&self.x, level, from, span, rates, (0.0, 0.0));
        let stepped = later_growth(&self.x, smooth, from, span, rates, small.moments_from(&self.x, from));
        match (raw, stepped) {
            (Some(a), Some(b)) => Some(if b.2 - b.1 < a.2 - a.1 { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Growth is evidenced when the lower bound is above zero, or would be but for one drop that
    /// is most of what the later part released (memory returned once, a leak going on around
    /// it): a run is not clean before its last look on the strength of one release. Drops of
    /// about the same size are a sawtooth, judged as they are.
    fn evidenced(&self, lower: f64, jumps: &Jumps, small: &Jumps) -> Evidenced {
        let drops =
            jumps.all.iter().chain(&small.all).filter(|(i, d)| *d < 0.0 && self.x[*i] >= self.mid).map(|(_, d)| *d);
        let (released, largest) = drops.fold((0.0, 0.0f64), |(s, m), d| (s + d, m.min(d)));
        let one_release = largest < 0.0 && largest <= DOMINANT_DROP * released;
        if lower > 0.0 {
            Evidenced::Growth
        } else if one_release && lower - largest > 0.0 {
            Evidenced::OneRelease
        } else {
            Evidenced::No
        }
    }

    /// The cycles an inconclusive verdict needs: for its last jump to retire, for the interval
    /// to decide against the budget, for a pending block.
    fn more_cycles(&self, g: &Growth, jumps: &Jumps, pending: bool) -> u64 {
        let to_retire = jumps.last_rise.map_or(0.0, |at| RETIRE_FACTOR * (at - self.w) - (self.t - at)).max(0.0);
        let to_decide = cycles_to_decide(g, self.t - self.w);
        (to_retire.max(to_decide).max(if pending { BLOCK as f64 } else { 0.0 })).ceil().max(1.0) as u64
    }

    /// Drops floors far above the floors on both sides of them (a block in which every sample
    /// caught a transient; a step has its later side as high), the typical step taken out
    /// first. The last two floors, with no later side yet, are dropped when far above the
    /// earlier side, and a decision waits for the next block: it returns whether that happened.
    fn drop_transients(&mut self, threshold: f64, typical: f64) -> bool {
        let n = self.y.len();
        let side = |r: std::ops::Range<usize>| level_median(&self.y, typical, r);
        let keep: Vec<bool> = (0..n)
            .map(|i| {
                let before = side(i.saturating_sub(2)..i);
                let after = side(i + 1..(i + 3).min(n));
                let level = self.y[i] - typical * i as f64;
                let above = |m: Option<f64>| m.is_none_or(|m| level - m > threshold);
                let late = i + 2 >= n;
                !(above(before) && (above(after) || late) && (before.is_some() || after.is_some()))
            })
            .collect();
        let pending = keep.iter().rev().take(2).any(|k| !k);
        let (x, y) = self.x.iter().zip(&self.y).zip(&keep).filter(|(_, k)| **k).map(|((x, y), _)| (*x, *y)).unzip();
        (self.x, self.y) = (x, y);
        pending
    }
}

/// Growth over the floors `y` (every outlying step levelled) at or after `from`: a least-squares
/// slope times `span`, plus the levelled steps there (`steps`, adding `step_variance` to the
/// variance), with its lower and upper bounds at the one-sided rates `(lower, upper)` (module
/// docs): `(growth, lower, upper)`.
fn later_growth(
    x: &[f64],
    y: &[f64],
    from: f64,
    span: f64,
    (lower_alpha, upper_alpha): (f64, f64),
    (steps, step_variance): (f64, f64),
) -> Option<(f64, f64, f64)> {
    // The noise is read from the last three quarters (and never from less than the later part).
    let (x, y) = if x.len() > 16 {
        let start = (x[0] + 0.25 * (x[x.len() - 1] - x[0])).min(from);
        let k = x.partition_point(|v| *v < start);
        (&x[k..], &y[k..])
    } else {
        (x, y)
    };
    let first = x.partition_point(|v| *v < from);
    let (lx, ly) = (&x[first..], &y[first..]);
    let n = lx.len();
    if n < 4 {
        return None;
    }
    let line = Line::fit(lx, ly)?;
    let rss: f64 = lx.iter().zip(ly).map(|(a, b)| line.residual(*a, *b).powi(2)).sum();
    let growth = line.slope * span;
    let r = pooled_autocorrelation(x, y);
    let inflation = (1.0 + r) / (1.0 - r);
    let levels = (rss / (n as f64 - 2.0) / line.sxx * inflation, (n as f64 / inflation - 2.0).max(MIN_DF));
    let walk = walk_variance(y, lx, &line, first);
    let (variance, df) = if levels.0 >= walk.0 { levels } else { walk };
    let sd = (variance.max(0.0) * span * span + step_variance).sqrt();
    let growth = growth + steps;
    Some((growth, growth - t_upper(lower_alpha, df) * sd, growth + t_upper(upper_alpha, df) * sd))
}

/// The sample variance (the jumps are levelled and transients dropped before it is taken).
fn variance(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
}

fn increments(y: &[f64], lag: usize) -> Vec<f64> {
    y.windows(lag + 1).map(|w| w[lag] - w[0]).collect()
}

/// Lag-1 autocorrelation of the residuals of four segments, each about its own line, corrected
/// for its downward bias and capped.
fn pooled_autocorrelation(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let (mut lagged, mut squares, mut points, mut segments) = (0.0, 0.0, 0usize, 0usize);
    for s in 0..4 {
        let (a, b) = (s * n / 4, (s + 1) * n / 4);
        if b - a < 4 {
            continue;
        }
        let Some(line) = Line::fit(&x[a..b], &y[a..b]) else { continue };
        let e: Vec<f64> = (a..b).map(|i| line.residual(x[i], y[i])).collect();
        lagged += e.windows(2).map(|p| p[0] * p[1]).sum::<f64>();
        squares += e.iter().map(|v| v * v).sum::<f64>();
        points += b - a;
        segments += 1;
    }
    if squares <= 0.0 || segments == 0 {
        return 0.0;
    }
    let r = lagged / squares;
    let m = points as f64 / segments as f64;
    (r + (1.0 + 4.0 * r.max(0.0)) / m).clamp(0.0, RHO_CAP)
}

/// The slope's variance if the floors were a random walk, weighted by how much they look like
/// one, with its degrees of freedom.
fn walk_variance(y: &[f64], lx: &[f64], line: &Line, first: usize) -> (f64, f64) {
    let n = y.len();
    let step = variance(&increments(y, 1));
    let lag = (n / 4).max(2);
    if step <= 0.0 || lag >= n {
        return (0.0, 1.0);
    }
    let long = variance(&increments(y, lag)) / lag as f64 / (1.0 - lag as f64 / n as f64);
    let ratio = (long / step).min(1.0);
    let c: Vec<f64> = lx.iter().map(|v| (v - line.mean_x) / line.sxx).collect();
    let k: Vec<f64> = (first..first + lx.len()).map(|i| i as f64).collect();
    if ratio < WALK_RATIO {
        return (0.0, 1.0);
    }
    // The walk's variance per step, read at a shorter lag than the test's: as unbiased for a walk,
    // with four times the degrees of freedom (at the test's lag a quarter of the floors gives
    // about seven, and the t quantile at a small rate is then several times the normal one);
    // mean-reverting noise and white noise on top of a walk make it larger, not smaller.
    let short = (n / 16).max(2);
    let per_step = variance(&increments(y, short)) / short as f64 / (1.0 - short as f64 / n as f64);
    let variance = -lag_weighted_sum(&c, &k) * per_step / 2.0;
    (variance, (2.0 * n as f64 / short as f64 - 1.0).max(2.0))
}

/// About how many more cycles would decide, if the growth per cycle and the noise hold: the
/// interval's half-width shrinks like the later part's square root grows.
fn cycles_to_decide(g: &Growth, judged: f64) -> f64 {
    let s = g.cycles().max(1) as f64;
    let rate = g.growth / s;
    // Later looks judge at the spent rate: the lower bound's half-width.
    let half = g.growth - g.lower;
    let total = g.budget.max(f64::MIN_POSITIVE);
    for k in 1..=64 {
        let f = 1.0 + k as f64 * 0.25;
        let s2 = s * f;
        let h2 = half / f.sqrt();
        let budget2 = if g.budget_from == BudgetFrom::Tolerance { total * f } else { total };
        let centre = rate.max(0.0) * s2;
        if centre - h2 > budget2 || (centre + h2 < budget2 && rate <= 0.0) {
            return judged * (f - 1.0);
        }
    }
    judged * 16.0
}

#[cfg(test)]
mod tests;
