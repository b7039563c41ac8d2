//! `retained_bytes`: what the cycles' own allocations still hold at the end of a run, read from
//! the allocation generations ([`crate::probe::generations`]) — a record, not an estimate.
//!
//! The figures are exact, and so is the rule: a leak is an allocating site (a call stack) that
//! holds what two or more judged cycles allocated, or a block that two or more judged cycles
//! grew (a container kept across cycles that keeps growing: each growth moves it to a new
//! block, so it is one block of one cycle at any time). Residue in scattered cycles is not
//! enough by itself: a one-time initialisation reached late (a fault path firing for the first
//! time) leaves residue in one cycle, from its own site. Recurrence across cycles at one site is
//! what makes a leak, whether it fires every cycle or once in a hundred.
//!
//! One statistic remains, for one case: a stack that took from a few early judged cycles and from
//! none of the many since has stopped taking from new cycles, as a table grown to the most entries
//! ever alive at once does (RocksDB's thread-local id map grows to the most column families open at
//! once, and reuses its entries after). A leak at a steady rate, however rare, takes from the
//! later cycles too: when the chance that it took only from the first ones is below
//! [`STOPPED_ALPHA`], the stack is listed as stopped, not judged a leak.
//!
//! The ledger says exactly when such a table may grow: in a cycle that held more handles of some
//! kind open at once than any before it (a high-water mark rose). When every cycle a stack took
//! from is such a cycle, the chance is that of a steady leak's takings all falling among those
//! cycles, wherever they are in the run: few cycles raise a high-water mark once a store has
//! warmed up, so a leak is rarely there alone, and a store whose handles open at once keep rising
//! has high-water cycles throughout, a chance near 1, and no excuse.

pub(crate) mod age;

use serde::{Deserialize, Serialize};

use super::model::{Estimate, Residue, Rule, SignalVerdict};
use super::Verdict;
use crate::probe::generations::Live;
use crate::signal::Signal;

/// What the record held against a leak the counter's growth rule found (`unexplained_bytes`,
/// `bytes_per_firing.*`): the smallest leak that rule calls (its threshold per cycle, or per
/// firing) leaves at least `leak_would_hold` bytes allocated in cycles `from_cycle..=to_cycle`
/// (where the counter grew, among the cycles the record judges) and still held when the counter
/// was last read; the record knows exactly what those cycles held then, before the store let go.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordHolds {
    /// The first cycle counted.
    pub from_cycle: u64,
    /// The last cycle counted.
    pub to_cycle: u64,
    /// Bytes those cycles allocated and still held before the store let go.
    pub bytes: i64,
    /// The least the smallest leak the rule calls leaves in them: the rule's threshold per cycle
    /// (or per firing) times the cycles (or the point's firings) counted.
    pub leak_would_hold: f64,
}

impl RecordHolds {
    /// Whether the cycles held less than the smallest leak the rule calls would have left: any
    /// leak they kept is below the rule's threshold, so its leak is not one these cycles kept
    /// (the counter moved with older memory given back, RocksDB's accounting, a working set that
    /// grows but is given back, a regression's coincidence), and a judged clean record, which
    /// judges leaks of any size by their stacks, decides the bytes.
    pub fn contradicts(&self) -> bool {
        (self.bytes as f64) < self.leak_would_hold
    }
}

/// What the judged generations still hold at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Retained {
    /// The first cycle judged (the first after the warm-up).
    pub from_cycle: u64,
    /// The last cycle judged: the youngest cycles are left out, their memory may still be in
    /// use (a store's state carried to the next cycle).
    pub to_cycle: u64,
    /// Bytes those cycles allocated and still hold.
    pub bytes: i64,
    /// Allocations those cycles made that are still live.
    pub allocations: i64,
    /// How many of those cycles hold anything.
    pub generations_holding: u64,
    /// Of the cycles holding anything: bytes each, the median.
    pub median_bytes: i64,
    /// ... the least.
    pub min_bytes: i64,
    /// ... the most.
    pub max_bytes: i64,
    /// The first cycle holding anything.
    pub first_cycle: Option<u64>,
    /// The last cycle holding anything.
    pub last_cycle: Option<u64>,
    /// Where what is held was allocated: recurring sites first, then stopped ones, then by bytes
    /// (at most `MAX_SITES`).
    #[serde(default)]
    pub sites: Vec<RetainedSite>,
    /// Sites that hold what two or more judged cycles allocated (all of them, listed or not).
    #[serde(default)]
    pub recurring_sites: u64,
    /// Bytes those sites hold.
    #[serde(default)]
    pub recurring_bytes: i64,
}

impl RetainedSite {
    /// Whether it is a stack that holds what two or more judged cycles allocated and never gave
    /// back anything that outlived its cycle: a leak. One cycle's is memory kept once (a lazy
    /// initialisation reached late, a first fault's path); a stack that drains keeps state and
    /// turns it over.
    pub fn recurs(&self) -> bool {
        self.suppressed.is_none() && self.recurs_unsuppressed()
    }

    /// [`recurs`](Self::recurs), suppression aside.
    fn recurs_unsuppressed(&self) -> bool {
        self.stacked && ((!self.drains && self.cycles_holding >= 2 && !self.stopped()) || self.growths >= 2)
    }

    /// Whether it held what two or more judged cycles allocated, all early in the run and none
    /// from the many since, or all in cycles that raised a handle high-water mark
    /// ([`at_handle_peaks`](Self::at_handle_peaks)), for a chance below `STOPPED_ALPHA`: a
    /// high-water mark, listed, not judged.
    pub fn stopped(&self) -> bool {
        self.growths < 2 && self.steady_chance.is_some_and(|p| p < STOPPED_ALPHA)
    }

    /// Whether it recurs but may yet turn out stopped, given more cycles ([`STOPPED_UNDECIDED`]).
    pub(crate) fn stop_undecided(&self) -> bool {
        self.recurs() && self.growths < 2 && self.steady_chance.is_some_and(|p| p < STOPPED_UNDECIDED)
    }
}

/// The most sites a [`Retained`] lists.
pub(crate) const MAX_SITES: usize = 20;

/// What one allocating site holds of the judged cycles' memory. A site is an allocating call stack;
/// allocations made before their size was watched have no stack and are grouped by usable size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RetainedSite {
    /// The stack in one line: its innermost frame and the first of the user's own code; for
    /// allocations without a stack, `no stack: N B blocks allocated before their size was watched`.
    pub function: String,
    /// The stack's frames, innermost first, the allocator's and the hooks' left out (empty
    /// without a stack).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// Whether it is an allocating stack (else allocations of one size made before their size was
    /// watched).
    pub stacked: bool,
    /// Whether the stack gave back, during the run, an allocation that had outlived the cycle
    /// after its own: it keeps state across cycles and turns it over (a queue's blocks, a cache's
    /// entries), which a leak never does.
    #[serde(default)]
    pub drains: bool,
    /// Bytes held.
    pub bytes: i64,
    /// Allocations held.
    pub allocations: i64,
    /// Judged cycles whose allocations it holds.
    pub cycles_holding: u64,
    /// The first of them.
    pub first_cycle: u64,
    /// The last of them.
    pub last_cycle: u64,
    /// The most judged cycles that grew one block it holds (counted up to 3): a container kept
    /// across cycles, reallocated larger. Two or more is a leak, whatever the stack gave back.
    #[serde(default)]
    pub growths: u8,
    /// For a stack that holds what two or more judged cycles allocated and never drains: the chance
    /// that a leak taking at a steady rate from the judged cycles took from these ones only, all of
    /// them no later than its last one (or, with `at_handle_peaks`, all of them in the cycles that
    /// raised a handle high-water mark, when that is less likely). Below 0.01 it has stopped taking
    /// (a high-water mark), and is not a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_chance: Option<f64>,
    /// Every judged cycle it holds from raised the most handles of some kind ever alive at once
    /// (the ledger's high-water marks), and its `steady_chance` is that of a steady leak's takings
    /// all falling in those cycles: memory sized by the most handles open at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_handle_peaks: bool,
    /// A known leak the run accepts: where its suppression is written (`leakcheck.toml:7`). It
    /// does not count as a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
}

/// Below this chance of a steady leak's takings all coming as early as a stack's did, the stack
/// has stopped taking from new cycles: the one false-negative rate of `retained_bytes`, for a
/// leak whose firings are few and fall at random times (a steady or periodic one takes from the
/// last cycles and is never near it).
pub(crate) const STOPPED_ALPHA: f64 = 0.01;

/// Below this chance (and at or above [`STOPPED_ALPHA`]), whether a stack stopped taking is not
/// decided yet: `check` goes on (up to its most cycles) rather than stop at a look; a run that
/// ends so calls it a leak.
pub(crate) const STOPPED_UNDECIDED: f64 = 0.1;

/// The chance that `k` takings of a steady leak, at uniformly random ones of `n` judged cycles, all
/// fall in the first `m`: C(m, k) / C(n, k).
pub(crate) fn steady_chance(k: u64, m: u64, n: u64) -> f64 {
    if m >= n {
        return 1.0;
    }
    if k > m {
        return 0.0;
    }
    let mut p = 1.0;
    for i in 0..k {
        p *= (m - i) as f64 / (n - i) as f64;
        if p < 1e-300 {
            return 0.0;
        }
    }
    p
}

/// One allocation a judged cycle made and that is still live, for [`sites`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    pub cycle: u64,
    pub size: u64,
    /// The allocating stack's id, when it was taken.
    pub stack: Option<u32>,
    /// Judged cycles that grew this block (up to 3).
    pub growths: u8,
}

#[derive(Default)]
struct Group {
    bytes: i64,
    allocations: i64,
    cycles: std::collections::BTreeSet<u64>,
    growths: u8,
}

impl Group {
    fn add(&mut self, h: &Held) {
        self.bytes += h.size as i64;
        self.allocations += 1;
        self.cycles.insert(h.cycle);
        self.growths = self.growths.max(h.growths);
    }
}

/// Groups what judged cycles still hold by allocating stack, names each stack with `name` (its
/// frames, innermost first), and puts the recurring sites first, then the stopped ones, then the
/// most bytes.
///
/// A stack that drains (`drains`: it gave back an allocation that had outlived the cycle after its
/// own) keeps state across cycles, a queue or a cache, and is listed, not judged.
///
/// Allocations made before their size was watched have no stack; they are grouped by usable
/// size, listed, and never decide: two one-time initialisations of one size class in two cycles
/// are not one site, and without the stacks nothing tells them from a leak. A leak's later
/// firings, after the runner watches its size, carry its stack.
pub(crate) fn sites(
    held: &[Held],
    judged: std::ops::RangeInclusive<u64>,
    name: &dyn Fn(u32) -> Vec<String>,
    drains: &dyn Fn(u32) -> bool,
    peaks: &[u64],
) -> Vec<RetainedSite> {
    use std::collections::BTreeMap;
    let mut stacked: BTreeMap<u32, Group> = BTreeMap::new();
    let mut by_size: BTreeMap<u64, Group> = BTreeMap::new();
    for h in held {
        match h.stack {
            Some(id) => stacked.entry(id).or_default().add(h),
            None => by_size.entry(h.size).or_default().add(h),
        }
    }
    let (from, to) = (*judged.start(), *judged.end());
    let judged_peaks = peaks.iter().filter(|c| judged.contains(c)).count() as u64;
    let site = |function: String, frames: Vec<String>, stacked: bool, drains: bool, g: Group| {
        let (first, last) = (g.cycles.first().copied().unwrap_or(0), g.cycles.last().copied().unwrap_or(0));
        let k = g.cycles.len() as u64;
        let span = |c: u64| (c + 1).saturating_sub(from);
        let early = (stacked && !drains && k >= 2).then(|| steady_chance(k, span(last), span(to)));
        // Takings only in cycles that raised a handle high-water mark: the chance that a steady
        // leak's all fell among those cycles.
        let at_peaks = early.is_some() && g.cycles.iter().all(|c| peaks.binary_search(c).is_ok());
        let peak_chance = at_peaks.then(|| steady_chance(k, judged_peaks, span(to)));
        let (steady, at_handle_peaks) = match (early, peak_chance) {
            (Some(e), Some(p)) if p < e => (Some(p), true),
            (e, _) => (e, false),
        };
        RetainedSite {
            function,
            frames,
            stacked,
            drains,
            bytes: g.bytes,
            allocations: g.allocations,
            cycles_holding: k,
            first_cycle: first,
            last_cycle: last,
            growths: g.growths,
            steady_chance: steady,
            at_handle_peaks,
            suppressed: None,
        }
    };
    let mut out: Vec<RetainedSite> = stacked
        .into_iter()
        .map(|(id, g)| {
            let frames = name(id);
            let function = if frames.is_empty() {
                format!("stack {id} (not kept: the stacks' table was full)")
            } else {
                crate::probe::stacks::headline(&frames, 60)
            };
            site(function, frames, true, drains(id), g)
        })
        .chain(by_size.into_iter().map(|(size, g)| {
            site(
                format!("no stack: {size} B blocks allocated before their size was watched"),
                Vec::new(),
                false,
                false,
                g,
            )
        }))
        .collect();
    out.sort_by(|a, b| {
        (b.recurs(), b.stopped())
            .cmp(&(a.recurs(), a.stopped()))
            .then_with(|| b.bytes.cmp(&a.bytes))
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

impl Retained {
    /// The figures of cycles `from..=to`, given what each cycle's generation holds.
    pub(crate) fn of(from: u64, to: u64, live: impl IntoIterator<Item = (u64, Live)>) -> Retained {
        let mut holding: Vec<(u64, i64)> = Vec::new();
        let (mut bytes, mut allocations) = (0, 0);
        for (cycle, l) in live {
            if cycle < from || cycle > to {
                continue;
            }
            bytes += l.bytes;
            allocations += l.allocations;
            if l.bytes > 0 {
                holding.push((cycle, l.bytes));
            }
        }
        let mut sizes: Vec<i64> = holding.iter().map(|&(_, b)| b).collect();
        sizes.sort_unstable();
        Retained {
            from_cycle: from,
            to_cycle: to,
            bytes,
            allocations,
            generations_holding: holding.len() as u64,
            median_bytes: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
            min_bytes: sizes.first().copied().unwrap_or(0),
            max_bytes: sizes.last().copied().unwrap_or(0),
            first_cycle: holding.first().map(|&(c, _)| c),
            last_cycle: holding.last().map(|&(c, _)| c),
            sites: Vec::new(),
            recurring_sites: 0,
            recurring_bytes: 0,
        }
    }

    /// Sets the sites (from [`sites`]): counts the recurring ones, keeps [`MAX_SITES`].
    #[cfg(test)]
    pub(crate) fn with_sites(self, all: Vec<RetainedSite>) -> Retained {
        self.with_sites_suppressed(all, &crate::Suppressions::none())
    }

    /// [`with_sites`](Self::with_sites), with the sites `suppressions` accept marked first (all
    /// of them, listed or not), and the leaks that remain listed before them.
    pub(crate) fn with_sites_suppressed(
        mut self,
        mut all: Vec<RetainedSite>,
        suppressions: &crate::Suppressions,
    ) -> Retained {
        suppressions.mark_sites(&mut all, self.cycles());
        all.sort_by_key(|s| !s.recurs());
        let recurring = all.iter().filter(|s| s.recurs());
        self.recurring_sites = recurring.clone().count() as u64;
        self.recurring_bytes = recurring.map(|s| s.bytes).sum();
        all.truncate(MAX_SITES);
        self.sites = all;
        self
    }

    /// Whether a site holds what two or more judged cycles allocated.
    pub fn leaks(&self) -> bool {
        self.recurring_sites > 0
    }

    /// Cycles judged.
    pub fn cycles(&self) -> u64 {
        (self.to_cycle + 1).saturating_sub(self.from_cycle)
    }

    /// Bytes held per cycle judged.
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes as f64 / self.cycles().max(1) as f64
    }
}

/// Judged cycles a clean `retained_bytes` needs: a leak that fires in every cycle from the first
/// judged one leaves its first block before its size is watched (no stack), and is stacked from
/// the next cycle on; recurrence at one stack needs two stacked cycles. With fewer judged cycles
/// nothing is ruled out, and the row is inconclusive (a leak already recurring is still a leak).
pub(crate) const MIN_JUDGED_CYCLES: u64 = 3;

/// The `retained_bytes` row: a leak when an allocating site holds what two or more judged cycles
/// allocated (the estimate is those sites' bytes per judged cycle), else clean (what single
/// cycles keep is listed, not judged).
pub(crate) fn verdict(r: Retained) -> SignalVerdict {
    let mut v = SignalVerdict::undecided(Signal::RetainedBytes.into(), Rule::Exact { expected: 0.0 });
    v.verdict = match (r.leaks(), r.cycles()) {
        (true, _) => Verdict::Leak,
        (false, judged) if judged < MIN_JUDGED_CYCLES => {
            v.more_cycles_needed = Some(MIN_JUDGED_CYCLES - judged);
            Verdict::Inconclusive
        }
        (false, _) => Verdict::Clean,
    };
    v.cycles = r.cycles() as usize;
    let per_cycle = r.recurring_bytes as f64 / r.cycles().max(1) as f64;
    v.estimate = Some(Estimate::new(per_cycle, per_cycle, per_cycle));
    let largest = r.sites.iter().filter(|s| s.recurs()).map(|s| s.bytes).max().unwrap_or(0);
    let first = r.sites.iter().filter(|s| s.recurs()).map(|s| s.first_cycle).min();
    v.residue = Some(Residue { max: largest as f64, first_cycle: first.map(|c| c as usize) });
    v.retained = Some(r);
    v
}

#[cfg(test)]
mod tests;
