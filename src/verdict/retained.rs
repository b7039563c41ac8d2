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
mod tests {
    use super::*;

    fn live(bytes: i64) -> Live {
        Live { bytes, allocations: i64::from(bytes != 0) }
    }

    #[test]
    fn too_few_judged_cycles_rule_out_nothing() {
        // Cycles 5-6 judged: a leak from cycle 5 on would have one stacked block at most.
        let short = Retained::of(5, 6, [(5, live(1024)), (6, live(1024))]);
        let v = verdict(short);
        assert_eq!((v.verdict, v.more_cycles_needed), (Verdict::Inconclusive, Some(1)));
        let empty = Retained::of(5, 5, [(5, live(0))]);
        assert_eq!(verdict(empty).more_cycles_needed, Some(2));
        assert_eq!(verdict(Retained::of(5, 7, [(5, live(0))])).verdict, Verdict::Clean);
        // A stack already holding two cycles' allocations is a leak however short the run.
        let twice = [held(5, 1024, Some(4)), held(6, 1024, Some(4))];
        let r = Retained::of(5, 6, [(5, live(1024)), (6, live(1024))]).with_sites(sites(
            &twice,
            5..=6,
            &name,
            &no_drain,
            &[],
        ));
        assert_eq!(verdict(r).verdict, Verdict::Leak);
    }

    #[test]
    fn figures_of_the_judged_cycles_only() {
        let gens = [
            (0, live(14_000)),
            (5, live(0)),
            (20, live(1024)),
            (21, live(0)),
            (30, live(3000)),
            (40, live(2048)),
            (99, live(500)),
        ];
        let r = Retained::of(20, 98, gens);
        assert_eq!((r.bytes, r.allocations, r.generations_holding), (6072, 3, 3));
        assert_eq!((r.min_bytes, r.median_bytes, r.max_bytes), (1024, 2048, 3000));
        assert_eq!((r.first_cycle, r.last_cycle, r.cycles()), (Some(20), Some(40), 79));
        let none = Retained::of(20, 98, [(0, live(14_000)), (99, live(500))]);
        assert_eq!((none.bytes, none.generations_holding, none.first_cycle), (0, 0, None));
        assert_eq!(verdict(none).verdict, Verdict::Clean);
    }

    fn held(cycle: u64, size: u64, stack: Option<u32>) -> Held {
        Held { cycle, size, stack, growths: 0 }
    }

    fn name(id: u32) -> Vec<String> {
        vec![format!("store::site_{id} (src/store.rs:{id})")]
    }

    fn no_drain(_: u32) -> bool {
        false
    }

    #[test]
    fn a_site_holding_two_cycles_is_a_leak_and_one_cycle_each_is_not() {
        // Three one-time residues, each from its own stack, in three cycles: clean, each listed.
        let once = [held(37, 32, Some(1)), held(45, 64, Some(2)), held(54, 1152, Some(3))];
        let r = Retained::of(20, 198, [(37, live(32)), (45, live(64)), (54, live(1152))]).with_sites(sites(
            &once,
            20..=198,
            &name,
            &no_drain,
            &[],
        ));
        assert_eq!((r.sites.len(), r.recurring_sites), (3, 0));
        assert_eq!(r.sites[0].function, "store::site_3 (src/store.rs:3)");
        assert_eq!(verdict(r).verdict, Verdict::Clean);
        // One stack in two cycles a hundred apart: a leak, even at 8 B.
        let rare = [held(60, 8, Some(7)), held(160, 8, Some(7)), held(37, 4096, Some(1))];
        let r = Retained::of(20, 198, [(37, live(4096)), (60, live(8)), (160, live(8))]).with_sites(sites(
            &rare,
            20..=198,
            &name,
            &no_drain,
            &[],
        ));
        assert_eq!((r.recurring_sites, r.recurring_bytes), (1, 16));
        let top = &r.sites[0];
        assert_eq!((top.cycles_holding, top.first_cycle, top.last_cycle), (2, 60, 160));
        let v = verdict(r);
        assert_eq!(v.verdict, Verdict::Leak);
        assert!(!v.informational);
        assert_eq!(v.estimate.map(|e| e.value), Some(16.0 / 179.0));
    }

    #[test]
    fn allocations_before_the_watch_are_listed_by_size_and_never_decide() {
        // A leak's first two firings came before its size was watched; its later ones decide.
        let leak = [held(20, 48, None), held(21, 48, None), held(22, 48, Some(9)), held(23, 48, Some(9))];
        let s = sites(&leak, 20..=23, &name, &no_drain, &[]);
        assert_eq!(s.len(), 2);
        assert!(s[0].recurs() && s[0].stacked && s[0].cycles_holding == 2);
        assert_eq!(s[1].function, "no stack: 48 B blocks allocated before their size was watched");
        assert!(!s[1].recurs(), "sizes without stacks never decide");
        // Two one-time residues of one size, one before the watch and one after: not one site.
        let once = sites(&[held(37, 32, None), held(54, 32, Some(4))], 20..=198, &name, &no_drain, &[]);
        assert!(once.iter().all(|s| !s.recurs()));
    }

    #[test]
    fn a_stack_that_gives_back_old_blocks_keeps_state_and_is_not_judged() {
        // A queue's two live blocks from one stack, allocated in two cycles: the stack has given
        // back older blocks during the run, so what it holds is its state.
        let queue = [held(120, 512, Some(3)), held(150, 512, Some(3))];
        let s = sites(&queue, 20..=198, &name, &|id| id == 3, &[]);
        assert!(s[0].drains && !s[0].recurs());
        let r = Retained::of(20, 198, [(120, live(512)), (150, live(512))]).with_sites(s);
        assert_eq!(verdict(r).verdict, Verdict::Clean);
        // The same blocks from a stack that never gave anything back: a leak.
        assert!(sites(&queue, 20..=198, &name, &no_drain, &[])[0].recurs());
    }

    /// A run whose counter's growth rule could not decide, `unexplained_bytes` inconclusive.
    fn undecided_run() -> crate::verdict::RunVerdict {
        let counter = SignalVerdict::undecided(Signal::UnexplainedBytes.into(), Rule::Exact { expected: 0.0 });
        crate::verdict::RunVerdict {
            verdict: Verdict::Inconclusive,
            signals: vec![counter],
            leak_rate: None,
            rules_out: None,
            baseline_return: None,
            bytes_unavailable: None,
            judged_at_cycles: None,
        }
    }

    #[test]
    fn a_judged_clean_record_decides_where_the_counter_could_not() {
        let clean = || verdict(Retained::of(20, 198, [(37, live(512))]));
        let mut run = undecided_run();
        assert!(run.undecided_only_by_the_counter(), "a clean record would decide it");
        let mut os = SignalVerdict::undecided(Signal::OpenFdsUnderDir.into(), Rule::Exact { expected: 0.0 });
        os.verdict = Verdict::Inconclusive;
        let mut with_os = undecided_run();
        with_os.signals.push(os);
        assert!(!Signal::OpenFdsUnderDir.corroborating());
        assert!(!with_os.undecided_only_by_the_counter(), "an undecided signal of its own is not the counter's");
        run.add_retained(clean());
        assert_eq!(run.verdict, Verdict::Clean);
        let counter = run.signal(Signal::UnexplainedBytes).map(|s| (s.verdict, s.informational));
        assert_eq!(counter, Some((Verdict::Inconclusive, true)), "shown, not judged");
        // Shown only (declared-shared handles alive): the counter still holds the run.
        let mut run = undecided_run();
        let mut shown = clean();
        shown.informational = true;
        run.add_retained(shown);
        assert_eq!(run.verdict, Verdict::Inconclusive);
        // A leak the counter found still counts, unless the cycles it grew over held less than it
        // would have left there (reference-4x8 seed 14: 68 B a cycle, the record clean).
        let counter_leak = |holds: Option<RecordHolds>| {
            let mut run = undecided_run();
            run.signals[0].verdict = Verdict::Leak;
            run.signals[0].record_holds = holds;
            run.verdict = Verdict::Leak;
            run
        };
        let holds = |bytes: i64| RecordHolds { from_cycle: 110, to_cycle: 198, bytes, leak_would_hold: 3_560.0 };
        for (holds, judged) in [(None, true), (Some(holds(3_560)), true), (Some(holds(1_312)), false)] {
            let mut run = counter_leak(holds);
            run.add_retained(clean());
            let want = if judged { Verdict::Leak } else { Verdict::Clean };
            assert_eq!(run.verdict, want, "{holds:?}");
            let counter = run.signal(Signal::UnexplainedBytes).map(|s| (s.verdict, s.informational));
            assert_eq!(counter, Some((Verdict::Leak, !judged)), "{holds:?}");
            // Without a judged clean record, the counter's leak stands whatever it held.
            let mut run = counter_leak(holds);
            let mut shown = clean();
            shown.informational = true;
            run.add_retained(shown);
            assert_eq!(run.verdict, Verdict::Leak, "{holds:?}");
        }
        // A leak the record found decides.
        let mut run = undecided_run();
        let leak = [held(60, 8, Some(7)), held(160, 8, Some(7))];
        run.add_retained(verdict(Retained::of(20, 198, [(60, live(8)), (160, live(8))]).with_sites(sites(
            &leak,
            20..=198,
            &name,
            &no_drain,
            &[],
        ))));
        assert_eq!(run.verdict, Verdict::Leak);
        assert!(!run.signal(Signal::UnexplainedBytes).is_some_and(|s| s.informational));
    }

    #[test]
    fn a_stack_that_stopped_taking_early_is_a_high_water_mark() {
        // RocksDB's thread-local id map (reference-4x8, seed 3): new entries in cycles 21 and 35 of
        // 20-228, none since. A steady leak takes from cycles 36-228 too, but for a chance of 0.0055.
        let map = [held(21, 32, Some(2)), held(21, 32, Some(2)), held(35, 32, Some(2))];
        let s = sites(&map, 20..=228, &name, &no_drain, &[]);
        let chance = s[0].steady_chance.unwrap_or(1.0);
        assert!((chance - (16.0 * 15.0) / (209.0 * 208.0)).abs() < 1e-12, "{chance}");
        assert!(s[0].stopped() && !s[0].recurs() && !s[0].stop_undecided());
        let r = Retained::of(20, 228, [(21, live(64)), (35, live(32))]).with_sites(s);
        assert_eq!(verdict(r).verdict, Verdict::Clean);
        // Listed before larger memory kept once, which would otherwise push it off the list.
        let beside = [map.as_slice(), &[held(90, 4096, Some(9))]].concat();
        assert!(sites(&beside, 20..=228, &name, &no_drain, &[])[0].stopped());
        // Judged over 20-130 only, the same takings are not yet shown to have stopped: a leak, and
        // check would go on rather than stop there.
        let s = sites(&map, 20..=130, &name, &no_drain, &[]);
        assert!(s[0].recurs() && s[0].stop_undecided(), "{:?}", s[0].steady_chance);
        // A rare leak whose two takings are far apart, and one taking in the last cycles: leaks, and
        // decided so.
        for leak in [[held(60, 8, Some(7)), held(160, 8, Some(7))], [held(21, 8, Some(7)), held(197, 8, Some(7))]] {
            let s = sites(&leak, 20..=198, &name, &no_drain, &[]);
            assert!(s[0].recurs() && !s[0].stop_undecided(), "{:?}", s[0].steady_chance);
        }
        // A container grown by two judged cycles early on is a leak whatever came after.
        let grown = [Held { cycle: 30, size: 4096, stack: Some(5), growths: 2 }, held(25, 64, Some(5))];
        let s = sites(&grown, 20..=900, &name, &no_drain, &[]);
        assert!(s[0].recurs() && !s[0].stopped());
    }

    #[test]
    fn a_stack_taking_only_when_a_handle_high_water_mark_rose_is_one() {
        // reference-4x8, seed 6: the thread-local id map took in cycles 24 and 139 of 20-798, each a
        // cycle with more column families open at once than ever before. As early as that, a steady
        // leak's takings come once in 42: not decided, a leak at the run's end. All at the two
        // judged high-water cycles: C(2, 2) / C(779, 2).
        let map = [held(24, 32, Some(2)), held(139, 32, Some(2))];
        let s = sites(&map, 20..=798, &name, &no_drain, &[]);
        assert!(s[0].recurs() && !s[0].at_handle_peaks, "{:?}", s[0].steady_chance);
        let peaks = [0, 1, 3, 7, 24, 139];
        let s = sites(&map, 20..=798, &name, &no_drain, &peaks);
        let chance = s[0].steady_chance.unwrap_or(1.0);
        assert!((chance - 2.0 / (779.0 * 778.0)).abs() < 1e-15, "{chance}");
        assert!(s[0].at_handle_peaks && s[0].stopped() && !s[0].recurs());
        // A taking outside the high-water cycles: the early-stop chance alone, and a leak.
        let beside = [map.as_slice(), &[held(700, 32, Some(2))]].concat();
        let s = sites(&beside, 20..=798, &name, &no_drain, &peaks);
        assert!(!s[0].at_handle_peaks && s[0].recurs());
        // A store whose handles open at once keep rising: every cycle is a high-water cycle, and a
        // leak taking in every one of them is still a leak.
        let every: Vec<u64> = (0..=198).collect();
        let leak: Vec<Held> = (20..=198).map(|c| held(c, 8, Some(7))).collect();
        let s = sites(&leak, 20..=198, &name, &no_drain, &every);
        assert!(s[0].recurs() && !s[0].stopped(), "{:?}", s[0].steady_chance);
        // A rare leak that happened to fire in two of many high-water cycles is not excused.
        let s = sites(&[held(60, 8, Some(7)), held(160, 8, Some(7))], 20..=198, &name, &no_drain, &every);
        assert!(s[0].recurs(), "{:?}", s[0].steady_chance);
    }

    #[test]
    fn steady_chance_is_the_share_of_placements_all_as_early() {
        assert_eq!(steady_chance(2, 10, 10), 1.0);
        assert_eq!(steady_chance(3, 2, 10), 0.0);
        // C(4, 2) / C(8, 2) = 6 / 28.
        assert!((steady_chance(2, 4, 8) - 6.0 / 28.0).abs() < 1e-12);
        // Many takings bounded away from the end: vanishing, not a NaN or a panic.
        assert_eq!(steady_chance(5000, 6000, 1_000_000), 0.0);
    }

    #[test]
    fn a_block_grown_by_two_judged_cycles_is_a_leak() {
        // A list kept across cycles: one block, from the cycle that last doubled it.
        let grown = |growths| [Held { cycle: 128, size: 131_072, stack: Some(5), growths }];
        for (growths, leak) in [(0, false), (1, false), (2, true), (3, true)] {
            let s = sites(&grown(growths), 20..=198, &name, &|_| true, &[]);
            assert_eq!(s[0].recurs(), leak, "growths {growths}");
            assert_eq!(s[0].growths, growths);
        }
        // Without its stack it never decides.
        let unstacked = [Held { cycle: 128, size: 131_072, stack: None, growths: 3 }];
        assert!(!sites(&unstacked, 20..=198, &name, &no_drain, &[])[0].recurs());
    }
}
