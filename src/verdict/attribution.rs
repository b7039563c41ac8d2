//! Bytes left behind per firing of each fault point, at any sampling interval.
//!
//! A leak on an error path is diluted by the firing rate in a per-cycle estimate (1 KiB per
//! firing at 3% is 30 B per cycle), but stands out against the firings themselves. Between two
//! samples the level (unexplained bytes) changes by what the firings in between left behind, plus
//! noise; memory a firing holds only until the next cycle shows at the sample right after it and
//! is gone at the next. So each interval between consecutive samples gives one equation
//!
//! ```text
//! change = drift x cycles + sum_p persistent_p x firings_p + sum_p transient_p x (last_p - last_p before)
//! ```
//!
//! where `firings_p` counts point `p`'s firings in the interval's cycles and `last_p` its firings
//! in the cycle just sampled. Least squares over the intervals gives `persistent_p`, a mean (a
//! leak on 40% of firings adds 40% of its bytes per firing), with a t interval. Intervals are kept
//! in a bounded number of blocks (neighbours summed pairwise when full: the equation is additive),
//! so a soak costs what a check costs.

use std::collections::BTreeMap;

use super::model::{Estimate, Rule, SignalVerdict};
use super::outcome::Verdict;
use super::stats::t_upper;
use crate::signal::{Signal, SignalId};

/// Intervals in which a point must have fired before it is judged (and twice as many without
/// it): fewer are too few against background work that spans cycles.
pub(crate) const MIN_FIRING_INTERVALS: u64 = 10;
/// The most blocks kept.
const MAX_BLOCKS: usize = 512;

/// One column of the regression: a block's value in it.
type Column<'a> = Box<dyn Fn(&Block) -> f64 + 'a>;

/// One block of consecutive intervals, summed.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// The sampled cycles it spans: from the sample after this cycle ...
    from: u64,
    /// ... to the one after this.
    to: u64,
    change: f64,
    /// Per point: firings in the block's cycles.
    fired: Vec<f64>,
    /// Per point: firings in the cycle sampled at the block's end minus in the one at its start.
    transient: Vec<f64>,
}

impl Block {
    /// Appends the block that follows it.
    fn add(&mut self, other: &Block) {
        self.to = other.to;
        self.change += other.change;
        for (a, b) in [(&mut self.fired, &other.fired), (&mut self.transient, &other.transient)] {
            a.resize(a.len().max(b.len()), 0.0);
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    /// The cycles it spans.
    fn cycles(&self) -> f64 {
        (self.to - self.from) as f64
    }
}

/// The intervals so far, and the firings since the last sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Firings {
    points: Vec<String>,
    blocks: Vec<Block>,
    group: usize,
    open: Option<(Block, usize)>,
    /// Per point: intervals in which it fired, how many intervals saw each count of its firings
    /// (a regression learns from the counts varying, not from quiet intervals), and its
    /// firings in all.
    intervals_fired: Vec<u64>,
    count_intervals: Vec<BTreeMap<u64, u64>>,
    total_fired: Vec<f64>,
    intervals: u64,
    /// Firings per point since the last sample, and in the last cycle seen.
    since: Vec<f64>,
    last_cycle_fired: (u64, Vec<f64>),
    /// The last sample: its cycle, level, and the firings of the cycle it followed.
    previous: Option<(u64, f64, Vec<f64>)>,
}

impl Firings {
    fn index(&mut self, point: &str) -> usize {
        match self.points.iter().position(|p| p == point) {
            Some(i) => i,
            None => {
                self.points.push(point.to_string());
                self.points.len() - 1
            }
        }
    }

    /// Records the fault points that fired in `cycle`.
    pub(crate) fn fired(&mut self, cycle: u64, fired: &BTreeMap<String, u64>) {
        let mut this = vec![0.0; self.points.len()];
        for (p, n) in fired.iter().filter(|(_, n)| **n > 0) {
            let i = self.index(p);
            this.resize(self.points.len(), 0.0);
            this[i] += *n as f64;
        }
        self.since.resize(self.points.len(), 0.0);
        for (s, t) in self.since.iter_mut().zip(&this) {
            *s += t;
        }
        self.last_cycle_fired = (cycle, this);
    }

    /// Records the level read after `cycle` (only from the end of the warm-up on).
    pub(crate) fn level(&mut self, cycle: u64, level: f64) {
        let p = self.points.len();
        let last: Vec<f64> =
            if self.last_cycle_fired.0 == cycle { self.last_cycle_fired.1.clone() } else { Vec::new() };
        let mut last = last;
        last.resize(p, 0.0);
        let since = std::mem::take(&mut self.since);
        if let Some((c0, y0, last0)) = self.previous.take() {
            let mut fired = since;
            fired.resize(p, 0.0);
            let mut transient = last.clone();
            for (t, b) in transient.iter_mut().zip(&last0) {
                *t -= b;
            }
            self.intervals += 1;
            self.intervals_fired.resize(p, 0);
            self.count_intervals.resize(p, BTreeMap::new());
            self.total_fired.resize(p, 0.0);
            for (i, f) in fired.iter().enumerate() {
                if *f > 0.0 {
                    self.intervals_fired[i] += 1;
                }
                *self.count_intervals[i].entry(*f as u64).or_default() += 1;
                self.total_fired[i] += f;
            }
            self.push(Block { from: c0, to: cycle, change: level - y0, fired, transient });
        }
        self.previous = Some((cycle, level, last));
    }

    fn push(&mut self, b: Block) {
        let group = self.group.max(1);
        let (open, n) = match self.open.take() {
            Some((mut open, n)) => {
                open.add(&b);
                (open, n)
            }
            None => (b, 0),
        };
        if n + 1 < group {
            self.open = Some((open, n + 1));
            return;
        }
        self.blocks.push(open);
        if self.blocks.len() >= MAX_BLOCKS {
            self.blocks = self
                .blocks
                .chunks(2)
                .map(|pair| {
                    let mut s = pair[0].clone();
                    if let Some(b) = pair.get(1) {
                        s.add(b);
                    }
                    s
                })
                .collect();
            self.group = group * 2;
        }
    }

    /// Total firings of each point over the judged intervals.
    pub(crate) fn totals(&self) -> impl Iterator<Item = (&str, f64)> {
        self.points.iter().map(String::as_str).zip(self.total_fired.iter().copied())
    }

    /// The closed blocks, then the open one.
    fn all_blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter().chain(self.open.as_ref().map(|(b, _)| b))
    }

    /// Firings of `point` in the cycles after `from` (a block that straddles it counted pro
    /// rata): what a leak on its firings adds to growth measured from `from` on.
    pub(crate) fn fired_after(&self, point: &str, from: u64) -> f64 {
        self.fired_within(point, from.saturating_add(1), u64::MAX)
    }

    /// Firings of `point` in cycles `first..=last` (a block that straddles them counted pro rata).
    pub(crate) fn fired_within(&self, point: &str, first: u64, last: u64) -> f64 {
        let Some(i) = self.points.iter().position(|p| p == point) else {
            return 0.0;
        };
        // A block holds the firings of cycles `from + 1..=to`.
        self.all_blocks()
            .map(|b| {
                let (lo, hi) = (b.from.saturating_add(1).max(first), b.to.min(last));
                let inside = hi.saturating_add(1).saturating_sub(lo) as f64 / (b.to - b.from).max(1) as f64;
                b.fired.get(i).copied().unwrap_or(0.0) * inside.min(1.0)
            })
            .sum()
    }

    /// Whether point `i` fired in enough intervals, and its count differed from its most common
    /// count in as many (with a sample every cycle and rare firings: the intervals it was
    /// quiet in; with a sample every 5th cycle and frequent firings: the intervals it fired
    /// more or less often than usual).
    fn judgeable(&self, i: usize) -> bool {
        let fired = self.intervals_fired.get(i).copied().unwrap_or(0);
        let counts = self.count_intervals.get(i);
        let seen: u64 = counts.map_or(0, |c| c.values().sum());
        let modal = counts.and_then(|c| c.values().max().copied()).unwrap_or(0);
        // Intervals before the point first fired saw a count of 0 too.
        let unseen = self.intervals.saturating_sub(seen);
        let at_zero = unseen + counts.and_then(|c| c.get(&0).copied()).unwrap_or(0);
        let off_mode = self.intervals - modal.max(at_zero);
        fired >= MIN_FIRING_INTERVALS
            && off_mode >= MIN_FIRING_INTERVALS.min(fired)
            && self.intervals >= 3 * MIN_FIRING_INTERVALS
    }

    /// One verdict per point that fired in enough intervals, with counts that varied enough
    /// ([`Firings::judgeable`]): bytes per firing against `tolerance(point)`, each bound at
    /// one-sided `alpha`.
    pub(crate) fn verdicts(&self, alpha: f64, tolerance: &dyn Fn(&str) -> f64) -> Vec<SignalVerdict> {
        let judged: Vec<usize> = (0..self.points.len()).filter(|&i| self.judgeable(i)).collect();
        if judged.is_empty() {
            return Vec::new();
        }
        let blocks: Vec<&Block> = self.all_blocks().collect();
        // Columns: cycles, then fired and transient of each judged point (a transient column that
        // never varies is left out: with a sample every cycle and rare firings it can be).
        let mut columns: Vec<Column<'_>> = vec![Box::new(Block::cycles)];
        let mut persistent_col = Vec::new();
        for &i in &judged {
            persistent_col.push(columns.len());
            columns.push(Box::new(move |b: &Block| b.fired.get(i).copied().unwrap_or(0.0)));
            if blocks.iter().any(|b| b.transient.get(i).is_some_and(|t| *t != 0.0)) {
                columns.push(Box::new(move |b: &Block| b.transient.get(i).copied().unwrap_or(0.0)));
            }
        }
        let k = columns.len();
        let n = blocks.len();
        if n <= k + 2 {
            return Vec::new();
        }
        let mut xtx = vec![vec![0.0; k]; k];
        let mut xty = vec![0.0; k];
        let mut yty = 0.0;
        for b in &blocks {
            let row: Vec<f64> = columns.iter().map(|c| c(b)).collect();
            for a in 0..k {
                xty[a] += row[a] * b.change;
                for c in 0..k {
                    xtx[a][c] += row[a] * row[c];
                }
            }
            yty += b.change * b.change;
        }
        let Some(inverse) = invert(xtx) else { return Vec::new() };
        let beta: Vec<f64> = (0..k).map(|a| (0..k).map(|c| inverse[a][c] * xty[c]).sum()).collect();
        let rss = (yty - beta.iter().zip(&xty).map(|(b, y)| b * y).sum::<f64>()).max(0.0);
        let df = (n - k) as f64;
        let s2 = rss / df;
        let q = t_upper(alpha, df);
        judged
            .iter()
            .zip(persistent_col)
            .map(|(&i, col)| {
                let point = &self.points[i];
                let tolerance = tolerance(point);
                let half = q * (s2 * inverse[col][col]).max(0.0).sqrt();
                let estimate = Estimate::new(beta[col], beta[col] - half, beta[col] + half);
                let mut v = SignalVerdict::undecided(
                    SignalId::member(Signal::BytesPerFiring, point.as_str()),
                    Rule::Shift { tolerance, alpha },
                );
                v.cycles = self.intervals_fired[i] as usize;
                v.estimate = Some(estimate);
                v.verdict = shift_verdict(estimate, tolerance);
                v
            })
            .collect()
    }
}

/// A leak when the interval lies above the tolerance, clean when below it, else inconclusive.
pub(crate) fn shift_verdict(e: Estimate, tolerance: f64) -> Verdict {
    if e.lower > tolerance {
        Verdict::Leak
    } else if e.upper < tolerance {
        Verdict::Clean
    } else {
        Verdict::Inconclusive
    }
}

/// The mean of `changed` less the mean of `reference`, with Welch's interval at one-sided
/// `alpha`: the bytes per cycle a plan of the fault matrix leaves beyond clean cycles.
pub(crate) fn mean_shift(changed: &[f64], reference: &[f64], alpha: f64) -> Option<Estimate> {
    let stats = |v: &[f64]| {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        (n, m, var)
    };
    if changed.len() < 2 || reference.len() < 2 {
        return None;
    }
    let (n1, m1, v1) = stats(changed);
    let (n2, m2, v2) = stats(reference);
    let (a, b) = (v1 / n1, v2 / n2);
    let se = (a + b).sqrt();
    let df = if a + b > 0.0 { (a + b).powi(2) / (a * a / (n1 - 1.0) + b * b / (n2 - 1.0)) } else { n1 + n2 - 2.0 };
    let half = t_upper(alpha, df) * se;
    let d = m1 - m2;
    Some(Estimate::new(d, d - half, d + half))
}

/// The inverse of a small symmetric matrix (Gauss-Jordan with partial pivoting); `None` when it is
/// singular.
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut inv: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect()).collect();
    let scale = a.iter().enumerate().map(|(i, r)| r[i].abs()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() <= 1e-12 * scale {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let p = a[col][col];
        for j in 0..n {
            a[col][j] /= p;
            inv[col][j] /= p;
        }
        for row in 0..n {
            if row != col {
                let f = a[row][col];
                if f != 0.0 {
                    for j in 0..n {
                        a[row][j] -= f * a[col][j];
                        inv[row][j] -= f * inv[col][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::unit_random as rng;

    /// `marker` fires in 10% of cycles and leaks 4 KiB on 40% of its firings; `flush` fires in
    /// 5% and holds 8 KiB until the next cycle only. Sampled every `every` cycles.
    fn run(every: u64, cycles: u64) -> Vec<SignalVerdict> {
        let mut f = Firings::default();
        let mut seed = 7;
        let (mut level, mut held) = (1e6, 0.0);
        for c in 0..cycles {
            level -= held;
            held = 0.0;
            let mut fired = BTreeMap::new();
            if rng(&mut seed) < 0.10 {
                fired.insert("close.marker".to_string(), 1);
                if rng(&mut seed) < 0.4 {
                    level += 4096.0;
                }
            }
            if rng(&mut seed) < 0.05 {
                fired.insert("close.flush".to_string(), 1);
                held = 8192.0;
                level += held;
            }
            f.fired(c, &fired);
            if c % every == 0 {
                f.level(c, level + (rng(&mut seed) - 0.5) * 200.0);
            }
        }
        f.verdicts(1e-4, &|_| 256.0)
    }

    #[test]
    fn a_leak_on_some_firings_adds_its_mean_at_any_sampling_interval() {
        for (every, cycles) in [(1, 800), (5, 20_000)] {
            let v = run(every, cycles);
            let marker = v.iter().find(|s| s.signal.qualifier() == Some("close.marker")).expect("marker judged");
            let e = marker.estimate.expect("estimate");
            assert_eq!(marker.verdict, Verdict::Leak, "every {every}: {e:?}");
            assert!((e.value - 0.4 * 4096.0).abs() < 400.0, "every {every}: {e:?}");
            let flush = v.iter().find(|s| s.signal.qualifier() == Some("close.flush")).expect("flush judged");
            assert_ne!(
                flush.verdict,
                Verdict::Leak,
                "every {every}: memory held for one cycle is no leak: {:?}",
                flush.estimate
            );
        }
    }

    #[test]
    fn welch_shift() {
        let e = mean_shift(&[10.0, 12.0, 11.0, 9.0], &[0.0, 1.0, -1.0, 0.5], 0.01).expect("shift");
        assert!(e.lower > 0.0 && (e.value - 10.375).abs() < 1e-9);
    }
}
