//! Jumps between neighbouring floors, and whether a step moved the level: what the growth rule
//! counts apart from a slope.

use crate::verdict::stats::median;

/// The jumps between neighbouring floors: steps beyond the typical step by more than the
/// threshold (their size is that excess).
pub(super) struct Jumps {
    /// (index of the floor after the jump, size).
    pub(super) all: Vec<(usize, f64)>,
    /// Their sum inside the later part.
    pub(super) in_later: f64,
    /// Rises (jumps to a new high) inside the later part.
    pub(super) rises_in_later: u32,
    /// Rises inside the last quarter.
    pub(super) in_last_quarter: u32,
    /// How far the one rise in the later part topped the high before it, when there is exactly
    /// one (it may be retention).
    pub(super) single_rise: f64,
    /// The cycle of the last rise anywhere in the judged part whose level is still kept at the
    /// end (a bump that came back down is not retention).
    pub(super) last_rise: Option<f64>,
    /// The largest kept rise (cycle, by how much it topped the high before it).
    pub(super) largest_rise: Option<(u64, f64)>,
}

impl Jumps {
    pub(super) fn find(x: &[f64], y: &[f64], threshold: f64, typical: f64, mid: f64, quarter: f64) -> Jumps {
        let all: Vec<(usize, f64)> = y
            .windows(2)
            .enumerate()
            .map(|(i, p)| (i + 1, p[1] - p[0] - typical))
            .filter(|&(i, d)| d.abs() > threshold && moves_level(y, i, d, typical))
            .collect();
        // Rises are the jumps to a new high of the jumps' running level, by how much they top it:
        // a level that goes up and down by whole steps (descriptors opened and closed) rises once,
        // a staircase at every step.
        let (mut level, mut high) = (0.0f64, 0.0f64);
        // Each rise with the high it topped.
        let mut rises: Vec<(usize, f64, f64)> = Vec::new();
        for &(i, d) in &all {
            level += d;
            if level > high + threshold / 2.0 {
                rises.push((i, level - high, high));
                high = level;
            }
        }
        // A rise is kept when the level still tops the high before it at the end; a bump that
        // came back down kept nothing, so it is no retention waiting to be retired. Nor is a
        // rise that left the floors below where they had been: on floors that fall step by step
        // (a cache giving memory back), a step that falls less than the typical one rises
        // against the trend and keeps nothing.
        let kept: Vec<(usize, f64)> = rises
            .iter()
            .filter(|&&(i, _, before)| level > before + threshold / 2.0 && lifts_floors(y, i))
            .map(|&(i, d, _)| (i, d))
            .collect();
        let later: Vec<(usize, f64)> = rises.iter().filter(|(i, _, _)| x[*i] >= mid).map(|&(i, d, _)| (i, d)).collect();
        Jumps {
            in_later: all.iter().filter(|(i, _)| x[*i] >= mid).map(|(_, d)| d).sum(),
            rises_in_later: later.len() as u32,
            in_last_quarter: later.iter().filter(|(i, _)| x[*i] >= quarter).count() as u32,
            single_rise: if later.len() == 1 { later[0].1 } else { 0.0 },
            last_rise: kept.last().map(|(i, _)| x[*i]),
            largest_rise: kept.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(i, d)| (x[*i] as u64, *d)),
            all,
        }
    }

    /// The sum of the jumps at or after `from`, and the variance that sum has as far as the
    /// jumps are noise: steps that go both ways (noise with heavy tails) could have come out
    /// otherwise, and the steps down measure how much (twice their squares); steps that only
    /// go up (a staircase, a container doubling) are what was kept.
    pub(super) fn moments_from(&self, x: &[f64], from: f64) -> (f64, f64) {
        let later = self.all.iter().filter(|(i, _)| x[*i] >= from).map(|(_, d)| *d);
        later.fold((0.0, 0.0), |(s, q), d| (s + d, q + if d < 0.0 { 2.0 * d * d } else { 0.0 }))
    }

    /// `y` with every jump taken out (each later floor lowered by the jumps before it).
    pub(super) fn levelled(&self, y: &[f64]) -> Vec<f64> {
        let mut out = y.to_vec();
        let mut shift = 0.0;
        let mut next = self.all.iter().peekable();
        for (i, v) in out.iter_mut().enumerate() {
            while let Some((_, d)) = next.next_if(|(at, _)| *at == i) {
                shift += d;
            }
            *v -= shift;
        }
        out
    }
}

/// Floors each side of a step that [`moves_level`] reads.
const LEVEL_SIDE: usize = 3;

/// Whether the step of `d` (the typical step taken out) into floor `at` moved the level: the
/// median of the [`LEVEL_SIDE`] floors after it must stand at least half of `d` from the median
/// of those before it, the same way. A floor that stood out on one side and came back (a spike
/// whose rise passed the threshold and whose fall did not) is no jump: levelled as one, it would
/// shift every later floor by the rise it never kept, and a stationary series would become a
/// staircase of level switches (long-lived-db seed 13: +18 KiB at cycle 279 and -22 KiB at 541,
/// read by the walk test as a wandering level).
fn moves_level(y: &[f64], at: usize, d: f64, typical: f64) -> bool {
    let before = level_median(y, typical, at.saturating_sub(LEVEL_SIDE)..at);
    let after = level_median(y, typical, at..(at + LEVEL_SIDE).min(y.len()));
    before.zip(after).is_some_and(|(before, after)| (after - before) * d.signum() >= 0.5 * d.abs())
}

/// Whether the floors after the step into floor `at` (the median of [`LEVEL_SIDE`] of them)
/// stand above every floor before it: memory kept, not a pause in memory given back. The kv
/// service (`examples/kv-service`, 1 run in about 50) falls by 1.2 KiB a cycle as its cache
/// shrinks; one block that fell less was a rise against that trend, never retired, and left
/// `check` inconclusive at 800 cycles with an upper bound of -1.2 KiB a cycle.
fn lifts_floors(y: &[f64], at: usize) -> bool {
    let high = y[..at].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    level_median(y, 0.0, at..(at + LEVEL_SIDE).min(y.len())).is_some_and(|after| after > high)
}

/// The median of the floors `y[r]` with the typical step taken out (`y[j] - typical * j`), or
/// `None` for an empty range: the level on one side of a floor or a step.
pub(super) fn level_median(y: &[f64], typical: f64, r: std::ops::Range<usize>) -> Option<f64> {
    let mut v: Vec<f64> = r.map(|j| y[j] - typical * j as f64).collect();
    (!v.is_empty()).then(|| median(&mut v))
}
