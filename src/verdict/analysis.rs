//! [`Analysis`]: a run's verdict, folded as its samples and cycle records come.

use std::collections::BTreeMap;

use super::attribution::Firings;
use super::config::{AnalysisConfig, CycleSample};
use super::exact::ExactSeries;
use super::floors::Floors;
use super::growth::{self, Growth, GrowthRule};
use super::model::{Estimate, Retention, Rule, SignalVerdict, Unmeasured};
use super::outcome::{Evidence, Verdict};
use super::run::{aggregate, BaselineReturn, LeakRate, RulesOut, RunVerdict};
use crate::probe::{Sample, LIVE_FILE_BYTES, TABLE_READER_SHARE};
use crate::signal::{Signal, SignalId};

/// Which look a verdict is: its index (each gets its part of the false-positive rate,
/// [`AnalysisConfig`]) and whether it is the last (growth evidenced below the budget is clean at
/// the last look, and only there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// 1 for the first look.
    pub index: u64,
    /// No look comes after it.
    pub last: bool,
}

impl Look {
    /// The last look, with index `index`.
    pub fn last(index: u64) -> Look {
        Look { index, last: true }
    }

    /// A look before the end.
    pub fn interim(index: u64) -> Look {
        Look { index, last: false }
    }
}

/// What the harness saw of one cycle, for the exact signals and the per-firing attribution.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub(crate) struct CycleFacts<'a> {
    /// 0-based cycle number.
    pub cycle: u64,
    /// Undeclared live handles per kind after the cycle.
    pub retained_handles: &'a BTreeMap<String, u64>,
    /// Caches not declared shared while the store was open.
    pub unshared_caches_open: u64,
    /// Handles declared shared beyond those of the first cycle.
    pub declared_shared_growth: u64,
    /// Close errors dropped unseen in the cycle.
    pub swallowed_close_errors: u64,
    /// Integrity violations found after the cycle.
    pub integrity_violations: u64,
    /// The store's integrity check ran after the cycle.
    pub integrity_checked: bool,
    /// The ledger has had a handle registered (by the end of the cycle).
    pub handles_registered: bool,
    /// The ledger has seen a close result made (by the end of the cycle).
    pub close_results_made: bool,
    /// Fault points that fired in the cycle, with counts.
    pub faults_fired: &'a BTreeMap<String, u64>,
}

/// The least a byte counter moves by: jemalloc's smallest size class (8 B). A clean verdict rules
/// out no leak below one such block over the cycles it judged.
const COUNTER_RESOLUTION_BYTES: f64 = 8.0;

/// The exact signals the harness's cycle records feed.
#[derive(Debug, Clone, Default)]
struct Records {
    cycles: u64,
    live: Option<ExactSeries>,
    kinds: BTreeMap<String, ExactSeries>,
    unshared: Option<ExactSeries>,
    shared_growth: Option<ExactSeries>,
    swallowed: Option<ExactSeries>,
    integrity: Option<ExactSeries>,
    /// Whether each source reported in some cycle: a signal whose source never did is not
    /// measured.
    handles_registered: bool,
    close_results_made: bool,
    integrity_checked: bool,
}

/// A statistical signal's value in a sample, when readable.
fn value(signal: Signal, s: &Sample) -> Option<f64> {
    let p = &s.process;
    let f = |v: Option<u64>| v.map(|v| v as f64);
    let resident = s.jemalloc.filter(|j| j.purged).map(|j| j.resident_bytes as f64);
    let explained = s.has_explanation().then(|| s.explained_bytes() as f64);
    match signal {
        Signal::AllocatedBytes => f(s.allocated_bytes()),
        Signal::UnexplainedBytes => Some(f(s.allocated_bytes())? - explained?),
        Signal::ExplainedBytes => explained,
        Signal::RocksdbExplainedBytes => s.rocksdb.map(|r| r.unbounded_bytes() as f64),
        Signal::ResidentBytes => resident,
        Signal::RssAnonBytes => f(p.rss_anon_bytes),
        // jemalloc's resident pages less those of its live blocks not written yet (resident to
        // jemalloc, not to the kernel), and the record's own tables.
        Signal::RssAnonOutsideJemallocBytes => Some(
            f(p.rss_anon_bytes)?
                - (resident? - f(s.untouched_bytes).unwrap_or(0.0))
                - f(s.record_resident_bytes).unwrap_or(0.0),
        ),
        Signal::RssBytes => f(p.rss_bytes),
        // A DB kept open holds a descriptor per live SST file: the store's data, not a leak.
        Signal::OpenFds => Some(f(p.open_fds)? - s.rocksdb.map_or(0.0, |m| m.live_sst_files as f64)),
        Signal::OpenFdsOutsideDir => Some(f(p.open_fds)? - f(p.open_fds_under_dir)?),
        Signal::Maps => f(p.maps),
        Signal::FileMaps => f(p.file_maps),
        Signal::FileMapsOutsideDir => Some(f(p.file_maps)? - f(p.maps_under_dir)?),
        Signal::Threads => f(p.threads),
        _ => None,
    }
}

/// A run's verdict, folded as its samples ([`Analysis::sample`]) and cycle records
/// (`Analysis::record`) come, in bounded memory: each statistical signal keeps at most a few
/// hundred block floors, the attribution a few hundred blocks of intervals, so a look
/// ([`Analysis::look`]) costs the same after a thousand cycles or a million.
///
/// ```
/// use leakcheck::verdict::{Analysis, AnalysisConfig, Look};
/// let mut a = Analysis::new(AnalysisConfig::default());
/// let v = a.look(Look::last(1));
/// assert_eq!(v.verdict, leakcheck::Verdict::Clean); // nothing seen, nothing leaked
/// ```
#[derive(Debug, Clone)]
pub struct Analysis {
    cfg: AnalysisConfig,
    series: BTreeMap<Signal, Floors>,
    dir_fds: Option<ExactSeries>,
    dir_maps: Option<ExactSeries>,
    sample_handles: BTreeMap<String, ExactSeries>,
    samples: u64,
    records: Option<Records>,
    pub(super) firings: Firings,
    baseline: Option<Sample>,
    last: Option<Sample>,
    /// The caches' rounding allowance ([`crate::probe::RocksDbMemory::cache_rounding_bytes`]),
    /// and its latest value: what a filling cache's rounding can hide.
    cache_rounding: Floors,
    last_cache_rounding: Option<f64>,
    /// The live SST files of the DBs kept open, and their bytes: the store's data.
    live_files: Floors,
    live_sst_bytes: Floors,
    /// The statistical verdicts of the last look, and its cycles.
    memo: Option<(u64, Vec<SignalVerdict>)>,
    last_cycle: Option<u64>,
}

impl Analysis {
    /// An analysis with nothing seen yet.
    pub fn new(cfg: AnalysisConfig) -> Self {
        Analysis {
            cfg,
            series: BTreeMap::new(),
            dir_fds: None,
            dir_maps: None,
            sample_handles: BTreeMap::new(),
            samples: 0,
            records: None,
            firings: Firings::default(),
            baseline: None,
            last: None,
            cache_rounding: Floors::default(),
            last_cache_rounding: None,
            live_files: Floors::default(),
            live_sst_bytes: Floors::default(),
            memo: None,
            last_cycle: None,
        }
    }

    /// Sets the sample taken before the first open (files and maps under the store's directory
    /// must come back to it; the return to baseline compares with it).
    pub fn baseline(&mut self, s: &Sample) {
        self.baseline = Some(s.clone());
    }

    /// Sets the sample taken after the last close.
    pub fn last(&mut self, s: &Sample) {
        self.last = Some(s.clone());
    }

    /// Adds one cycle's settled sample (cycles increasing).
    pub fn sample(&mut self, c: &CycleSample) {
        self.samples += 1;
        self.last_cycle = Some(c.cycle);
        let s = &c.sample;
        if c.cycle >= self.cfg.warmup_cycles as u64 {
            for &signal in Signal::STATISTICAL {
                if let Some(v) = value(signal, s) {
                    self.series.entry(signal).or_default().push(c.cycle, v);
                }
            }
            if let Some(level) = value(Signal::UnexplainedBytes, s) {
                self.firings.level(c.cycle, level);
            }
            if let Some(m) = &s.rocksdb {
                let rounding = m.cache_rounding_bytes() as f64;
                self.cache_rounding.push(c.cycle, rounding);
                self.last_cache_rounding = Some(rounding);
                self.live_files.push(c.cycle, m.live_sst_files as f64);
                self.live_sst_bytes.push(c.cycle, m.live_sst_bytes as f64);
            }
        }
        let expect = |f: &dyn Fn(&Sample) -> Option<u64>| self.baseline.as_ref().and_then(f).unwrap_or(0) as f64;
        let (fds, maps) = (expect(&|b| b.process.open_fds_under_dir), expect(&|b| b.process.maps_under_dir));
        if let Some(v) = s.process.open_fds_under_dir {
            self.dir_fds.get_or_insert_with(|| ExactSeries::new(fds)).push(c.cycle, v as f64);
        }
        if let Some(v) = s.process.maps_under_dir {
            self.dir_maps.get_or_insert_with(|| ExactSeries::new(maps)).push(c.cycle, v as f64);
        }
        for kind in c.retained_handles.keys() {
            self.sample_handles.entry(kind.clone()).or_insert_with(|| ExactSeries::new(0.0));
        }
        for (kind, series) in &mut self.sample_handles {
            series.push(c.cycle, c.retained_handles.get(kind).copied().unwrap_or(0) as f64);
        }
    }

    /// Adds one cycle's record (every cycle, sampled or not, before its sample): the exact
    /// signals of handles, caches, close errors and integrity come from the records once any is
    /// given, and the fault points' firings feed the per-firing attribution.
    pub(crate) fn record(&mut self, r: &CycleFacts<'_>) {
        self.firings.fired(r.cycle, r.faults_fired);
        let rec = self.records.get_or_insert_with(Records::default);
        let seen = rec.cycles;
        rec.cycles += 1;
        rec.handles_registered |= r.handles_registered;
        rec.close_results_made |= r.close_results_made;
        rec.integrity_checked |= r.integrity_checked;
        let push = |slot: &mut Option<ExactSeries>, v: u64| {
            slot.get_or_insert_with(|| ExactSeries::new(0.0)).push(r.cycle, v as f64)
        };
        push(&mut rec.live, r.retained_handles.values().sum());
        push(&mut rec.unshared, r.unshared_caches_open);
        push(&mut rec.shared_growth, r.declared_shared_growth);
        push(&mut rec.swallowed, r.swallowed_close_errors);
        push(&mut rec.integrity, r.integrity_violations);
        for kind in r.retained_handles.keys() {
            rec.kinds.entry(kind.clone()).or_insert_with(|| {
                // The cycles before this kind appeared retained none of it.
                let mut s = ExactSeries::new(0.0);
                for c in 0..seen {
                    s.push(c, 0.0);
                }
                s
            });
        }
        for (kind, series) in &mut rec.kinds {
            series.push(r.cycle, r.retained_handles.get(kind).copied().unwrap_or(0) as f64);
        }
    }

    /// The verdict at `look`: every signal judged now (and the statistical verdicts kept for
    /// [`Analysis::current`]).
    pub fn look(&mut self, look: Look) -> RunVerdict {
        let statistical = self.statistical(look);
        let v = self.assemble(statistical.clone(), look, None);
        self.memo = Some((self.last_cycle.map_or(0, |c| c + 1), statistical));
        v
    }

    /// The verdict at `look`, judged now and not kept (an observer's own look, spending its own
    /// share of the rate).
    pub fn judge(&self, look: Look) -> RunVerdict {
        self.assemble(self.statistical(look), look, None)
    }

    /// The verdict between looks: the exact signals now, the statistical ones as the last look
    /// judged them (inconclusive before any look), with [`RunVerdict::judged_at_cycles`] saying
    /// when.
    pub fn current(&self) -> RunVerdict {
        let (at, statistical) = match &self.memo {
            Some((at, s)) => (Some(*at), s.clone()),
            None => (None, self.statistical(Look::interim(1)).into_iter().map(|s| undecided_like(&s)).collect()),
        };
        let index = self.cfg.looks.index(at.unwrap_or(0), false);
        self.assemble(statistical, Look::interim(index), at)
    }

    /// Per cycle over the later part, what the caches' rounding allowance grew by: the unexplained
    /// bytes subtract the most the allocator can round cached entries up to, so while a cache
    /// fills up to that much of a leak can hide in what was subtracted beyond the true rounding.
    /// Nothing once the caches are full (or without RocksDB's figures, or for the allocated bytes,
    /// which subtract nothing).
    fn cache_rounding_hidden(&self, g: &Growth, signal: Signal) -> f64 {
        if signal != Signal::UnexplainedBytes {
            return 0.0;
        }
        let grown =
            self.last_cache_rounding.zip(self.cache_rounding.lowest_from(g.from_cycle)).map_or(0.0, |(l, low)| l - low);
        grown.max(0.0) / g.cycles().max(1) as f64
    }

    fn assemble(&self, mut signals: Vec<SignalVerdict>, look: Look, judged_at: Option<u64>) -> RunVerdict {
        let rate_signal = if self.series.contains_key(&Signal::UnexplainedBytes) {
            Signal::UnexplainedBytes
        } else {
            Signal::AllocatedBytes
        };
        let rate = signals.iter().find(|s| s.family() == rate_signal).cloned();
        signals.extend(self.exact());
        signals.extend(self.per_firing(look, rate.as_ref()));
        let instances = self.cfg.instances_per_cycle.max(1);
        let leak_rate = rate.as_ref().and_then(|r| r.estimate).map(|e| LeakRate {
            signal: rate_signal.into(),
            bytes_per_cycle: e.value,
            bytes_per_instance: e.value / instances as f64,
            instances_per_cycle: instances,
        });
        let rules_out = rate.as_ref().and_then(|r| Some((r.rules_out_per_cycle()?, r.growth?))).map(|(upper, g)| {
            // A counter that did not move at all still cannot see less than one smallest block
            // over the judged cycles: what it rules out is never below that.
            let upper = upper.max(COUNTER_RESOLUTION_BYTES / g.cycles().max(1) as f64);
            let hidden = self.cache_rounding_hidden(&g, rate_signal);
            RulesOut {
                signal: rate_signal.into(),
                bytes_per_cycle: upper + hidden,
                bytes_per_instance: (upper + hidden) / instances as f64,
                from_cycle: g.from_cycle,
                to_cycle: g.to_cycle,
                budget_bytes: g.budget,
                budget_from: g.budget_from,
                cache_rounding_bytes_per_cycle: hidden,
                upper_alpha: g.upper_alpha,
            }
        });
        let baseline_return = match (&self.baseline, &self.last) {
            (Some(b), Some(l)) => Some(BaselineReturn::judge(b, l, self.cfg.baseline_tolerance_bytes)),
            _ => None,
        };
        let mut signals = signals;
        let mut verdict = aggregate(&mut signals);
        if let Some(b) = &baseline_return {
            verdict = verdict.worst(b.verdict);
        }
        RunVerdict {
            verdict,
            signals,
            leak_rate,
            rules_out,
            baseline_return,
            bytes_unavailable: None,
            judged_at_cycles: judged_at,
        }
    }

    /// For each leak the counter's rule found in `v` (the judged byte-count signal, bytes per
    /// firing), and each such signal it has not decided, the cycles among `from..=to` (those the
    /// allocation record judges) that the growth is over, and the least that the smallest leak
    /// the rule calls leaves in them: its threshold per cycle (the growth's budget over its
    /// cycles) times those cycles, or per firing (the point's tolerance) times the point's
    /// firings in them.
    pub(crate) fn leaks_would_hold(&self, v: &RunVerdict, from: u64, to: u64) -> Vec<(SignalId, u64, u64, f64)> {
        let counted =
            [Signal::UnexplainedBytes, Signal::AllocatedBytes, Signal::RocksdbExplainedBytes, Signal::BytesPerFiring];
        v.signals
            .iter()
            .filter(|s| matches!(s.verdict, Verdict::Leak | Verdict::Inconclusive))
            .filter(|s| !s.informational && counted.contains(&s.family()))
            .filter_map(|s| {
                let (first, last, would) = match (s.family(), s.growth) {
                    (Signal::BytesPerFiring, _) => {
                        let point = s.signal.qualifier()?;
                        (from, to, s.rule.tolerance()? * self.firings.fired_within(point, from, to))
                    }
                    // The growth between the samples after cycles `from_cycle` and `to_cycle`
                    // was allocated by the cycles after the first.
                    (_, Some(g)) => {
                        let (first, last) = (g.from_cycle.saturating_add(1).max(from), g.to_cycle.min(to));
                        let threshold = g.budget / g.cycles().max(1) as f64;
                        (first, last, threshold * (last + 1).saturating_sub(first) as f64)
                    }
                    (_, None) => return None,
                };
                (last >= first && would > 0.0).then(|| (s.signal.clone(), first, last, would))
            })
            .collect()
    }

    /// What the live SST files of the DBs kept open may add to `signal` from cycle `from` to the
    /// last: their gain over it at the bounds of what a file takes (one map, at most
    /// [`LIVE_FILE_BYTES`] beyond RocksDB's accounting, table readers of at most
    /// [`TABLE_READER_SHARE`] of the file's bytes). The gain is the floor of the last eighth of
    /// the part less the floor of its first eighth, scaled to the whole part (a steady gain is
    /// then its whole gain): files a compaction merges away give back what they took, so a
    /// bounded set of files gains nothing.
    fn data_allowance(&self, signal: Signal, from: u64) -> f64 {
        let Some((_, to)) = self.live_files.span() else {
            return 0.0;
        };
        let eighth = to.saturating_sub(from) / 8;
        let scale = to.saturating_sub(from) as f64 / to.saturating_sub(from + eighth).max(1) as f64;
        let gain = |f: &Floors| match (f.lowest_between(from, from + eighth), f.lowest_between(to - eighth, to)) {
            (Some(a), Some(b)) => (b - a).max(0.0) * scale,
            _ => 0.0,
        };
        let (files, bytes) = (gain(&self.live_files), gain(&self.live_sst_bytes));
        let readers = bytes * TABLE_READER_SHARE;
        match signal {
            Signal::UnexplainedBytes => files * LIVE_FILE_BYTES,
            Signal::RocksdbExplainedBytes => readers,
            Signal::AllocatedBytes
            | Signal::ExplainedBytes
            | Signal::ResidentBytes
            | Signal::RssAnonBytes
            | Signal::RssAnonOutsideJemallocBytes
            | Signal::RssBytes => files * LIVE_FILE_BYTES + readers,
            // Open fds are judged less the live files (one descriptor each).
            Signal::Maps | Signal::FileMaps => files,
            _ => 0.0,
        }
    }

    /// The rule and evidence floor of a statistical signal at a look.
    fn rule(&self, signal: Signal, look: Look) -> (GrowthRule, Evidence) {
        let t = &self.cfg.tolerances;
        let b = &self.cfg.budgets;
        let alpha = self.cfg.signal_alpha(look.index);
        let page = self.cfg.evidence.at_least(Evidence::PAGE_GRANULAR);
        let rule = |tolerance_per_cycle: f64, budget: Option<f64>| GrowthRule {
            tolerance_per_cycle,
            budget,
            alpha,
            counts: false,
        };
        match signal {
            Signal::RocksdbExplainedBytes => (rule(t.rocksdb_bytes_per_cycle, b.bytes), self.cfg.evidence),
            // Page-granular memory moves with the allocator's fragmentation and thread stacks: the
            // per-cycle tolerance alone, no total.
            Signal::ResidentBytes => (rule(t.resident_bytes_per_cycle, None), page),
            Signal::RssAnonBytes | Signal::RssAnonOutsideJemallocBytes | Signal::RssBytes => {
                (rule(t.rss_bytes_per_cycle, None), page)
            }
            Signal::OpenFds
            | Signal::OpenFdsOutsideDir
            | Signal::Maps
            | Signal::FileMaps
            | Signal::FileMapsOutsideDir
            | Signal::Threads => (GrowthRule { counts: true, ..rule(t.os_per_cycle, b.os) }, self.cfg.evidence),
            _ => (self.cfg.bytes_rule(look.index), self.cfg.evidence),
        }
    }

    /// The first judged count of OS resources (descriptors, maps, threads) whose later half of
    /// the judged cycles stayed above its first half ([`Floors::later_half_rose`]): one descriptor
    /// kept anywhere in them does that. What `check`'s early look asks is none
    /// ([`crate::harness::HarnessConfig::early_look`]). The byte signals are not asked: the
    /// record of allocations is exact where they are not, and they move once as a store's state
    /// settles.
    pub(crate) fn count_rose(&self) -> Option<Signal> {
        // The signals whose growth rule counts (its `counts`), whatever the look.
        let counts = |s: Signal| self.rule(s, Look::interim(1)).0.counts;
        self.series
            .iter()
            .find(|(s, f)| counts(**s) && !self.informational(**s) && f.later_half_rose())
            .map(|(s, _)| *s)
    }

    /// Whether a statistical signal is only shown: a net or narrower signal is judged instead.
    fn informational(&self, signal: Signal) -> bool {
        let has = |s: Signal| self.series.contains_key(&s);
        match signal {
            Signal::AllocatedBytes => has(Signal::UnexplainedBytes),
            // What was subtracted: a store whose data grows explains more each cycle.
            Signal::ExplainedBytes | Signal::RssBytes => true,
            // Where allocated bytes are read, they are the byte count.
            Signal::ResidentBytes => has(Signal::AllocatedBytes),
            Signal::RssAnonBytes => has(Signal::RssAnonOutsideJemallocBytes),
            Signal::OpenFds => has(Signal::OpenFdsOutsideDir),
            // All maps move with the allocator's extents; the maps of files are judged.
            Signal::Maps => has(Signal::FileMaps),
            Signal::FileMaps => has(Signal::FileMapsOutsideDir),
            _ => false,
        }
    }

    fn statistical(&self, look: Look) -> Vec<SignalVerdict> {
        Signal::STATISTICAL
            .iter()
            .filter_map(|&signal| {
                let (rule, evidence) = self.rule(signal, look);
                let Some(floors) = self.series.get(&signal) else {
                    // A harness run whose store reports no RocksDB memory: what RocksDB accounts for
                    // was not measured (the unexplained bytes subtract none of it).
                    let unreported =
                        signal == Signal::RocksdbExplainedBytes && self.records.is_some() && self.samples > 0;
                    return unreported.then(|| {
                        SignalVerdict::unmeasured(signal.into(), Rule::Growth(rule), Unmeasured::NoRocksdbMemory)
                    });
                };
                let j = growth::judge(floors, &rule, evidence, look.last, &|from| self.data_allowance(signal, from));
                let mut v = SignalVerdict::undecided(signal.into(), Rule::Growth(rule));
                v.verdict = j.verdict;
                v.cycles = floors.samples() as usize;
                v.growth = j.growth;
                v.estimate = j.growth.map(|g| {
                    let s = g.cycles().max(1) as f64;
                    Estimate::new(g.growth / s, g.lower / s, g.upper / s)
                });
                v.retention = j.retention.map(|(at, size)| Retention { at_cycle: at as usize, size });
                v.more_cycles_needed = j.more_cycles_needed;
                v.informational = self.informational(signal);
                // Coarse signals move in steps of their own: growth under their budget is no
                // evidence worth a warning (they can still call a leak).
                v.growth_below_budget = j.growth_below_budget && !signal.corroborating();
                Some(v)
            })
            .collect()
    }

    /// The first judged exact signal with a residue. An exact residue is a leak from the cycle it
    /// appeared on, whatever later cycles do: once there is one, the run's verdict cannot change.
    /// Cheap (one verdict per series, no samples read): asked after every cycle.
    pub(crate) fn exact_leak(&self) -> Option<SignalVerdict> {
        self.exact().into_iter().find(|v| v.verdict == Verdict::Leak && !v.informational)
    }

    fn exact(&self) -> Vec<SignalVerdict> {
        let mut out = Vec::new();
        if let Some(s) = &self.dir_fds {
            out.push(s.verdict(Signal::OpenFdsUnderDir.into()));
        }
        if let Some(s) = &self.dir_maps {
            out.push(s.verdict(Signal::MapsUnderDir.into()));
        }
        match &self.records {
            None => {
                for (kind, s) in &self.sample_handles {
                    out.push(s.verdict(SignalId::member(Signal::LiveHandlesOf, kind.as_str())));
                }
            }
            Some(r) => {
                let judged =
                    |signal: Signal, s: &Option<ExactSeries>, measured: Result<(), Unmeasured>| match (s, measured) {
                        (Some(s), Ok(())) => Some(s.verdict(signal.into())),
                        (Some(_), Err(why)) => {
                            Some(SignalVerdict::unmeasured(signal.into(), Rule::Exact { expected: 0.0 }, why))
                        }
                        (None, _) => None,
                    };
                let handles = if r.handles_registered { Ok(()) } else { Err(Unmeasured::NoHandles) };
                out.extend(judged(Signal::LiveHandles, &r.live, handles));
                for (kind, s) in &r.kinds {
                    out.push(s.verdict(SignalId::member(Signal::LiveHandlesOf, kind.as_str())));
                }
                out.extend(judged(Signal::UnsharedCachesOpen, &r.unshared, handles));
                out.extend(judged(Signal::DeclaredSharedGrowth, &r.shared_growth, handles));
                let closes = if r.close_results_made { Ok(()) } else { Err(Unmeasured::NoCloseResults) };
                out.extend(judged(Signal::SwallowedCloseErrors, &r.swallowed, closes));
                let checked = if r.integrity_checked { Ok(()) } else { Err(Unmeasured::NoIntegrityCheck) };
                out.extend(judged(Signal::Integrity, &r.integrity, checked));
                // A harness run without a data directory watched nothing under it.
                if self.dir_fds.is_none() && self.dir_maps.is_none() && self.samples > 0 {
                    for signal in [Signal::OpenFdsUnderDir, Signal::MapsUnderDir] {
                        out.push(SignalVerdict::unmeasured(
                            signal.into(),
                            Rule::Exact { expected: 0.0 },
                            Unmeasured::NoDataDir,
                        ));
                    }
                }
            }
        }
        out
    }

    /// Bytes per firing of each fault point. The family gets a tenth of a signal's share of the
    /// look's rate, split over the points: a fault changes what a cycle does, and with
    /// background work spanning cycles (a long-lived DB's flushes and compactions) that moves
    /// the level a little even with nothing leaked. A point is called a leak only while the
    /// byte signal's growth is evidenced and holds what the point is said to leave: a leak
    /// persists, so the level grows by at least the excess over the tolerance on each of the
    /// point's firings in the later part. A shift the total growth cannot hold is background
    /// work that moved with the faults (reference-4x8 seed 1: 1.8 KB per firing at least, on
    /// about seven firings, against 480 B of growth in all), not bytes lost.
    fn per_firing(&self, look: Look, bytes: Option<&SignalVerdict>) -> Vec<SignalVerdict> {
        let points = self.firings.totals().count().max(1);
        let alpha = self.cfg.signal_alpha(look.index) / 10.0 / points as f64;
        let totals: BTreeMap<&str, f64> = self.firings.totals().collect();
        let per_firing = self.cfg.tolerances.bytes_per_firing;
        let budget = self.cfg.budgets.bytes;
        // Per firing, a budget that stops growing with the firings too.
        let tolerance = |point: &str| match (budget, totals.get(point)) {
            (Some(b), Some(&n)) if n > 0.0 => per_firing.min(b / n),
            _ => per_firing,
        };
        let growth = bytes.filter(|b| b.growth_evidenced()).and_then(|b| b.growth);
        let mut out = self.firings.verdicts(alpha, &tolerance);
        for s in out.iter_mut().filter(|s| s.verdict == Verdict::Leak) {
            let held = match (growth, s.estimate, s.signal.qualifier()) {
                (Some(g), Some(e), Some(point)) => {
                    let excess = (e.lower - tolerance(point)) * self.firings.fired_after(point, g.from_cycle);
                    excess <= g.upper
                }
                _ => false,
            };
            if !held {
                s.verdict = Verdict::Inconclusive;
            }
        }
        out
    }
}

/// A statistical signal not judged yet: inconclusive, its figures kept.
fn undecided_like(s: &SignalVerdict) -> SignalVerdict {
    let mut v = s.clone();
    v.verdict = Verdict::Inconclusive;
    v.growth_below_budget = false;
    v
}

/// Judges a recorded run: statistical signals over the cycles after warm-up, exact signals over
/// every cycle (handles from the samples' retained counts), and the return to baseline when
/// `baseline` (before the first open) and `last` (after the last close) are given. The look is
/// the last one, at the index the config's [`Looks`](super::Looks) give the last sample's cycle.
pub fn analyze(
    cycles: &[CycleSample],
    baseline: Option<&Sample>,
    last: Option<&Sample>,
    cfg: &AnalysisConfig,
) -> RunVerdict {
    let mut a = Analysis::new(*cfg);
    if let Some(b) = baseline {
        a.baseline(b);
    }
    for c in cycles {
        a.sample(c);
    }
    if let Some(l) = last {
        a.last(l);
    }
    let done = cycles.last().map_or(0, |c| c.cycle + 1);
    a.look(Look::last(cfg.looks.index(done, true)))
}
