//! The rule for bytes: a leak is live memory that keeps growing (docs/verdict.md has it on one
//! page).
//!
//! A series (one site's live bytes, a consumer's unexplained share, the record's total) is judged
//! over the judged cycles `J` (after the warm-up), their later half `H` and its last quarter `Q`:
//!
//! - **kept growth**: the floor ahead at a cycle is the least the series holds from then on: what
//!   stays. Its rise from the later half's start to the last eighth's (the least held through
//!   the last eighth of the judged cycles less the least held through the later half) is growth
//!   that stayed; a series that never gave anything back has no transient to discount and is read
//!   to its last sample. Less what its size class's older blocks (made before the class was
//!   watched, without a stack) gave back meanwhile, in the site's share (a site replacing them
//!   rises while nothing grows), and less the sampling's error of that rise, at the rate split
//!   over the series judged.
//! - **the budget**: the largest single rise and the largest give-back the series showed in the
//!   judged cycles (its own variability, which the run's length does not grow): kept growth
//!   beyond both is more than the series' own ups and downs.
//! - **a leak**: kept growth beyond the budget, from at least [`LATE_RISES`] rises of the floor
//!   ahead in the later half (two lazy initialisations are no leak), one of them in its last
//!   quarter: it went on.
//! - **stopped**: such growth that did not go on into the last quarter (a fill that reached its
//!   bound).
//! - **rare losses**: a series that never gave anything back and rose in two or more judged
//!   cycles, too few for a leak: a loss that recurs too rarely for the run's length to prove it.
//!   Its question is open until the gaps between its rises lengthen, as a high-water mark's do:
//!   quiet for as long after its last rise as a steady loss at the pace of its rises would be
//!   with probability [`QUIET_MISS`].
//!
//! The power of the count is the age rule's: a loss recurring in a fraction `p` of cycles rises
//! in `LATE_RISES` cycles of a later half of `n` with the probability of a binomial tail, so the
//! power table (docs/verdict.md) holds for it.

use serde::{Deserialize, Serialize};

use super::series::View;

/// Rises of the floor ahead in the later half that growth must come from to be a leak.
pub const LATE_RISES: u64 = 4;

/// The chance that a steady loss at the pace of a site's rises stays quiet as long as the site
/// has since its last: below it, the gaps have lengthened (a high-water mark's do) and the losses
/// stopped. Two losses give a pace from one gap: at 0.001 a steady loss's next gap passes the
/// mark in 1 of 8 runs (the gap ratio of two exponentials: `1 / (1 + ln 1000)`), so repeated
/// rare losses stay open in most runs where they repeat.
const QUIET_MISS: f64 = 0.001;

/// What the rule says of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "grew", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Grew {
    /// Kept growth beyond its budget that went on into the last quarter: a leak.
    Leak,
    /// Kept growth beyond its budget that stopped before the last quarter: a fill that reached
    /// its bound.
    Stopped,
    /// Rises in two or more judged cycles of a series that never gave anything back, too few
    /// for a leak, and not yet quiet for long enough to say they stopped.
    RareLosses {
        /// The last cycle run by which the gap after its last rise is long enough, if no other
        /// rise comes.
        settles_by: u64,
    },
    /// Kept growth from rises that went on into the last quarter, more than half its budget but
    /// not beyond it: a leak not yet grown past the series' own variability, or noise. Open: the
    /// run goes on, and a leak grows past its budget, which does not grow with the run.
    BelowBudget,
    /// Nothing kept beyond its own variability.
    Flat,
}

/// The facts the rule read, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SiteGrowth {
    /// What the rule says.
    #[serde(flatten)]
    pub grew: Grew,
    /// The later half's first cycle.
    pub from_cycle: u64,
    /// What stayed from the later half's start to the last sample (the floor ahead's rise, the
    /// last eighth's transients included): what a counter that grew over the same cycles can be
    /// held against.
    #[serde(default)]
    pub kept_to_end: f64,
    /// The last cycle read.
    pub to_cycle: u64,
    /// Growth of its stacked bytes kept through the later half, after the class's older blocks
    /// given back (a common class's blocks are stacked one in so many: the growth thinned).
    pub growth_bytes: f64,
    /// The budget: the larger of [`SiteGrowth::largest_rise`] and
    /// [`SiteGrowth::largest_give_back`], and for a series that gives back, what its live
    /// blocks' comings and goings spread it by.
    pub budget_bytes: f64,
    /// The largest rise from one sample to the next in the judged cycles.
    pub largest_rise: f64,
    /// The deepest fall below an earlier value in the judged cycles.
    pub largest_give_back: f64,
    /// Bytes of the site's size class made before it was watched and given back over the later
    /// half, in the site's share: subtracted from its growth.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drained_bytes: f64,
    /// Rises of the floor ahead in the later half.
    pub rises: u64,
    /// Of them, in its last quarter.
    pub rises_last_quarter: u64,
    /// Rises in all the judged cycles.
    pub rises_judged: u64,
    /// The cycle of the last rise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rise: Option<u64>,
    /// The growth per cycle over the later half, as its stacked blocks' weights estimate it.
    pub bytes_per_cycle: f64,
    /// What the series held at its last sample, as estimated from its stacked blocks' weights.
    pub live_bytes: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl SiteGrowth {
    /// Whether the rule calls it a leak.
    pub fn leaks(&self) -> bool {
        self.grew == Grew::Leak
    }

    /// Whether its question is open.
    pub fn open(&self) -> bool {
        matches!(self.grew, Grew::RareLosses { .. } | Grew::BelowBudget)
    }

    /// Whether a whole (the record's total) leaves its question open: open, and still rising in
    /// its last quarter (a structure rebuilt bigger every cycle, below the total's 4 KiB floor in
    /// a short run). Its rises long past (a store's caches filled early, a container's first
    /// doublings) are not.
    pub fn whole_open(&self) -> bool {
        self.open() && self.rises_last_quarter > 0
    }
}

/// A series measured before the share of its class's drain is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Measure {
    /// Blocks where the later half, its last quarter and its last eighth begin.
    im: usize,
    iq: usize,
    ie: usize,
    from_cycle: u64,
    to_cycle: u64,
    /// The cycles of those blocks' ends (for the growth per cycle).
    span: u64,
    /// Kept growth before any subtraction.
    pub(crate) raw: f64,
    /// The floor ahead's rise from the later half's start to the last block.
    to_end: f64,
    monotone: bool,
    rises: u64,
    rises_last_quarter: u64,
    rises_judged: u64,
    first_rise: Option<u64>,
    last_rise: Option<u64>,
    largest_rise: f64,
    largest_give_back: f64,
    live: f64,
    /// The estimate over the stacked bytes at the last reading: what a stacked byte stands for.
    scale: f64,
    spread: f64,
    noisy: bool,
}

impl Measure {
    /// The blocks over which kept growth is read: from the later half's start to the last
    /// eighth's (or the last block, for a series that never gave anything back).
    pub(crate) fn blocks(&self) -> (usize, usize) {
        (self.im, self.ie)
    }

    /// Whether it rose in any judged cycle.
    pub(crate) fn rose(&self) -> bool {
        self.rises_judged > 0
    }
}

/// The first block whose end is at or after `cycle`.
fn block_at(ends: &[u64], cycle: u64) -> usize {
    ends.partition_point(|&e| e < cycle).min(ends.len().saturating_sub(1))
}

/// Measures a series whose judged cycles begin at `first`. `None` when it has no block.
pub(crate) fn measure(v: &View<'_>, first: u64) -> Option<Measure> {
    let n = v.mins.len().min(v.ends.len());
    if n == 0 {
        return None;
    }
    let last = v.ends[n - 1];
    let m = first + (last + 1).saturating_sub(first) / 2;
    let q = m + (last + 1).saturating_sub(m) / 2;
    let e = q + (last + 1).saturating_sub(q) / 2;
    let (im, iq) = (block_at(&v.ends[..n], m), block_at(&v.ends[..n], q));
    let monotone = v.max_give_back <= 0.0;
    let ie = if monotone { n - 1 } else { block_at(&v.ends[..n], e) };
    // The floor ahead: the least held from each block on.
    let mut ahead = vec![0.0; n];
    let mut low = f64::INFINITY;
    for i in (0..n).rev() {
        low = low.min(v.mins[i]);
        ahead[i] = low;
    }
    // A rise at a block is what the cycles since the block before added and kept. A series that
    // never gave anything back kept every rise of its samples, counted one by one (a block of
    // merged samples holds several).
    let kept = |i: usize| {
        if i == 0 || ahead[i] <= ahead[i - 1] {
            0
        } else if monotone {
            u64::from(v.ups.get(i).copied().unwrap_or(1).max(1))
        } else {
            1
        }
    };
    let (mut rises, mut late, mut judged) = (0, 0, 0);
    let (mut first_rise, mut last_rise) = (None, None);
    for i in 1..n {
        let k = kept(i);
        if k > 0 {
            judged += k;
            first_rise.get_or_insert(v.ends[i]);
            last_rise = Some(v.ends[i]);
            rises += if i >= im { k } else { 0 };
            late += if i >= iq { k } else { 0 };
        }
    }
    Some(Measure {
        im,
        iq,
        ie,
        from_cycle: v.ends[im],
        to_cycle: last,
        span: v.ends[ie].saturating_sub(v.ends[im]).max(1),
        raw: ahead[ie] - ahead[im],
        to_end: ahead[n - 1] - ahead[im],
        monotone,
        rises,
        rises_last_quarter: late,
        rises_judged: judged,
        first_rise,
        last_rise,
        largest_rise: v.max_rise.max(0.0),
        largest_give_back: v.max_give_back.max(0.0),
        live: v.estimate,
        scale: if v.last > 0.0 { (v.estimate / v.last).max(1.0) } else { 1.0 },
        spread: v.spread.max(0.0),
        noisy: v.noisy,
    })
}

/// Judges a measured series: `drained`, the bytes its class's older blocks gave back over the
/// blocks it was measured on, in its share; `class_spread`, the spread those blocks turned over
/// with (per cycle); `z`, the normal quantile of the error rate the series gets (the run's rate at
/// this look, split over the series judged).
pub(crate) fn judge(m: &Measure, drained: f64, class_spread: f64, z: f64) -> SiteGrowth {
    let drained = drained.clamp(0.0, m.raw.max(0.0));
    let growth = m.raw - drained;
    // A series that never gave anything back, and replaced nothing of its class's older blocks,
    // rose only by blocks it still holds: each rise is memory kept. One that gives back (or
    // replaced older blocks, turning over as they did, or is computed from others) moves by what
    // its blocks' comings and goings spread it (two levels apart, each spread as much), at the
    // rate split over the series judged.
    let turns_over = !m.monotone || m.noisy || drained > 0.0;
    let spread = if turns_over { z * (2.0 * (m.spread + class_spread.max(0.0))).sqrt() } else { 0.0 };
    let budget = (m.largest_rise + spread).max(m.largest_give_back);
    let beyond = growth > budget && m.rises >= LATE_RISES;
    let going_on = m.rises >= LATE_RISES && m.rises_last_quarter > 0;
    let grew = if beyond && going_on {
        Grew::Leak
    } else if beyond {
        Grew::Stopped
    } else if going_on && ((growth > 0.5 * budget && growth > m.largest_rise) || (drained > 0.0 && m.monotone)) {
        // Still rising at its end: near its budget, or, never giving anything back, excused only
        // by its class's older blocks given back meanwhile, an excuse that holds only while they
        // go (a leak beside a cache of its size replaces them as the cache does; a cache's own
        // site gives back once they are gone): open, not clean.
        Grew::BelowBudget
    } else {
        match rare_losses(m) {
            Some(settles_by) => Grew::RareLosses { settles_by },
            None => Grew::Flat,
        }
    };
    SiteGrowth {
        grew,
        from_cycle: m.from_cycle,
        kept_to_end: m.to_end * m.scale,
        to_cycle: m.to_cycle,
        growth_bytes: growth,
        budget_bytes: budget,
        largest_rise: m.largest_rise,
        largest_give_back: m.largest_give_back,
        drained_bytes: drained,
        rises: m.rises,
        rises_last_quarter: m.rises_last_quarter,
        rises_judged: m.rises_judged,
        last_rise: m.last_rise,
        bytes_per_cycle: growth * m.scale / m.span as f64,
        live_bytes: m.live,
    }
}

/// For a series that never gave anything back and rose in two or more judged cycles: the last
/// cycle run by which the quiet after its last rise is as long as a steady loss at the pace of
/// its rises would be with probability [`QUIET_MISS`], when that is still to come. `None` when it
/// gave something back, rose fewer than twice, or has been quiet that long (its gaps lengthen).
fn rare_losses(m: &Measure) -> Option<u64> {
    if !m.monotone || m.rises_judged < 2 {
        return None;
    }
    let (first, last) = (m.first_rise?, m.last_rise?);
    // The pace of its rises: the gaps between them (the wait for the first is not one).
    let pace = (m.rises_judged - 1) as f64 / (last - first).max(1) as f64;
    if pace >= 1.0 {
        return None;
    }
    let quiet = (QUIET_MISS.ln() / (1.0 - pace).ln()).ceil() as u64;
    let settles_by = last + quiet + 1;
    (m.to_cycle + 1 < settles_by).then_some(settles_by)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::sites::series::{Key, Reading, SeriesSet};

    /// Judges one series given per cycle from `first` (its values), no drain, z = 4.
    fn judged(first: u64, values: &[f64]) -> SiteGrowth {
        let mut set = SeriesSet::default();
        for (i, &v) in values.iter().enumerate() {
            set.push(first + i as u64, [Reading::of(Key::Stack { id: 1 }, v)]);
        }
        set.prepare();
        let view = set.view(&Key::Stack { id: 1 }).expect("a series");
        judge(&measure(&view, first).expect("blocks"), 0.0, 0.0, 4.0)
    }

    #[test]
    fn eight_bytes_a_cycle_at_its_own_site_is_a_leak_in_thirty_judged_cycles() {
        let leak: Vec<f64> = (0..30).map(|c| 8.0 * c as f64).collect();
        let g = judged(20, &leak);
        assert_eq!(g.grew, Grew::Leak, "{g:?}");
        assert!(g.growth_bytes > 100.0 && (g.bytes_per_cycle - 8.0).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn a_lazy_initialisation_that_rose_twice_and_a_queue_at_its_bound_are_no_leak() {
        let twice: Vec<f64> = (0..180)
            .map(|c| {
                if c < 120 {
                    0.0
                } else if c < 150 {
                    64.0
                } else {
                    128.0
                }
            })
            .collect();
        assert!(!judged(20, &twice).leaks());
        // The last 64 entries, one a cycle: full at cycle 64 of 200.
        let queue: Vec<f64> = (0..180).map(|c| 32.0 * (c as f64 + 20.0).min(64.0)).collect();
        assert_eq!(judged(20, &queue).grew, Grew::Flat);
        // ... and still filling at the end of a run too short to see its bound: a leak.
        let short: Vec<f64> = (0..30).map(|c| 32.0 * (c as f64 + 2.0).min(64.0)).collect();
        assert_eq!(judged(2, &short).grew, Grew::Leak);
    }

    #[test]
    fn a_sawtooth_and_a_cache_turning_over_are_flat_and_a_leak_beside_them_is_not() {
        // A janitor freeing what piled up every 40 cycles.
        let saw: Vec<f64> = (0..180).map(|c| 100.0 * (c % 40) as f64).collect();
        assert_eq!(judged(20, &saw).grew, Grew::Flat);
        let leaking: Vec<f64> = saw.iter().enumerate().map(|(c, v)| v + 200.0 * c as f64).collect();
        assert_eq!(judged(20, &leaking).grew, Grew::Leak);
    }

    #[test]
    fn growth_that_stopped_before_the_last_quarter_is_stopped() {
        let fill: Vec<f64> = (0..180).map(|c| 16.0 * (c as f64).min(120.0)).collect();
        assert_eq!(judged(20, &fill).grew, Grew::Stopped);
    }

    #[test]
    fn rare_losses_stay_open_until_their_gaps_lengthen() {
        // 32 KiB at cycles 60, 120 and 170 of a 200-cycle run: open.
        let at = |c: u64| 32768.0 * [60, 120, 170].iter().filter(|&&l| c >= l).count() as f64;
        let burst: Vec<f64> = (20..200).map(at).collect();
        let g = judged(20, &burst);
        let Grew::RareLosses { settles_by } = g.grew else { panic!("{g:?}") };
        assert!(settles_by > 300, "{g:?}");
        // A high-water mark: rises at 22, 25, 31, 44, then nothing to 200.
        let high = |c: u64| 8.0 * [22, 25, 31, 44].iter().filter(|&&l| c >= l).count() as f64;
        let mark: Vec<f64> = (20..200).map(high).collect();
        assert_eq!(judged(20, &mark).grew, Grew::Flat);
    }
}
