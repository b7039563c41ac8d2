//! Per-signal verdicts over cycles.
//!
//! One before/after equality is useless for memory: a leak-free open/write/close cycle of a
//! small RocksDB moves jemalloc's allocated bytes by tens of kilobytes from one cycle to the next.
//! What tells a leak from that noise is that a leak **continues**: its memory stays and more
//! follows. Statistical signals are judged by the growth rule ([`growth`](GrowthRule)): growth
//! through the later half of the judged cycles against a budget that stops growing with the run,
//! so a longer run finds a smaller leak and a clean verdict states the smallest continuing leak
//! it rules out. Exact signals (live handles, files and maps under the store's directory after
//! close) need no statistics: any residue after settling is a leak. Fault points are judged per
//! firing (the `attribution` module).
//!
//! [`Analysis`] folds samples and cycle records as they come, in bounded memory, and gives a
//! verdict at any look for the same cost at a thousand cycles or a million; [`analyze`] is the
//! same judgement of a recorded series.

mod analysis;
mod attribution;
mod exact;
mod floors;
mod growth;
mod model;
pub(crate) mod retained;
pub(crate) mod sites;
pub(crate) mod stats;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub(crate) use analysis::CycleFacts;
pub use analysis::{Analysis, Look};
pub(crate) use attribution::{mean_shift, shift_verdict};
pub use growth::{BudgetFrom, Growth, GrowthRule};
pub use model::{Estimate, Residue, Retention, Rule, RuleKind, SignalVerdict, Unmeasured};
pub use retained::age::{AgeFacts, Aged, ContainerGrowth, Open};
pub use retained::consumer::Consumer;
pub use retained::{RecordHolds, Retained, RetainedSite};
pub use sites::rule::{Grew, SiteGrowth, LATE_RISES};
pub use sites::series::Key as SeriesKey;
pub use sites::{ConsumerGrowth, ConsumersExplain, Judged as SiteJudged};

use crate::probe::Sample;
use crate::signal::{Class, Signal, SignalId};

/// The outcome for one signal, or for a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A signal whose source never reported in the run ([`SignalVerdict::not_measured`] says
    /// which): neither clean nor a leak, and no part of the run's verdict. Never a run's verdict.
    #[serde(rename = "not_measured")]
    NotMeasured,
    /// No continuing growth beyond the budget (statistical) or no residue (exact).
    Clean,
    /// Not enough evidence either way yet.
    Inconclusive,
    /// Growth beyond the budget (statistical) or a residue (exact).
    Leak,
}

impl Verdict {
    /// The worst of two verdicts: leak over inconclusive over clean (over not measured).
    pub(crate) fn worst(self, other: Verdict) -> Verdict {
        self.max(other)
    }

    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::NotMeasured => "not measured",
            Verdict::Clean => "clean",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Leak => "leak",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The least evidence a statistical signal needs before it may say clean or leak. Below it the
/// verdict is inconclusive with the cycles still needed: an estimate from a handful of points
/// after a short run is not evidence (a 10-second soak called the clean reference store a leak
/// from 3 points).
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
    pub(crate) const PAGE_GRANULAR: Evidence = Evidence { min_points: 10, min_cycles: 100 };

    fn at_least(self, other: Evidence) -> Evidence {
        Evidence {
            min_points: self.min_points.max(other.min_points),
            min_cycles: self.min_cycles.max(other.min_cycles),
        }
    }
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

/// Growth per cycle still called clean over a short later part, per statistical signal (the
/// growth rule's budget is this times the later part's cycles, up to [`Budgets`]).
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
    /// What RocksDB accounts for (memtables, table readers): it must level off. Growth of data
    /// legitimately grows table readers a little; memtables and table readers pinned by leaked
    /// iterators or versions grow by whole arena blocks and files.
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

/// The growth a long run's later half may show in all, per kind of signal: the growth rule's
/// cap on the tolerance times the span. With it, a run of N cycles finds a steady leak of about
/// `2 x budget / N` per cycle, a soak of 50,000 cycles one of single bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// Bytes that jemalloc counts (allocated, unexplained, RocksDB's accounted part). Default
    /// 4 KiB: the recorded clean runs' later halves grow by at most 480 B (a container that
    /// doubles now and then), one block of RocksDB's is 4 KiB, and it keeps the interval of a
    /// store whose floor moves by a kilobyte (a DB kept open) able to call it clean within a
    /// check's 800 cycles. `None`: the tolerance alone, as before the growth rule.
    pub bytes: Option<f64>,
    /// The process's fds, file maps and threads outside the store's directory. Default 2: one
    /// more than a lazily opened descriptor.
    pub os: Option<f64>,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets { bytes: Some(4096.0), os: Some(2.0) }
    }
}

/// When a run is looked at; each look gets its part of the false-positive rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "looks", rename_all = "lowercase")]
pub enum Looks {
    /// Judged once, at the end (look 1).
    #[default]
    End,
    /// `check`: at `first` cycles, then every 10 while inconclusive.
    Decide {
        /// Cycles of the first look.
        first: u64,
    },
    /// `soak`: at `first` cycles, then each time the cycles double, and at the end.
    Doubling {
        /// Cycles of the first look.
        first: u64,
    },
}

/// Cycles between two looks of `check` while inconclusive.
pub(crate) const LOOK_EVERY: u64 = 10;

impl Looks {
    /// Whether a look is due after `done` cycles.
    pub fn due(self, done: u64) -> bool {
        match self {
            Looks::End => false,
            Looks::Decide { first } => done >= first && (done - first).is_multiple_of(LOOK_EVERY),
            Looks::Doubling { first } => {
                first > 0 && done >= first && done.is_multiple_of(first) && (done / first).is_power_of_two()
            }
        }
    }

    /// The index of the look after `done` cycles (1 for the first), counting a last look off
    /// the schedule as one of its own.
    pub fn index(self, done: u64, last: bool) -> u64 {
        match self {
            Looks::End => 1,
            Looks::Decide { first } if done > first => 1 + (done - first).div_ceil(LOOK_EVERY),
            Looks::Decide { .. } => 1,
            Looks::Doubling { first } if done >= first && first > 0 => {
                let passed = 1 + (done / first).ilog2() as u64;
                passed + u64::from(last && !self.due(done))
            }
            Looks::Doubling { .. } => 1,
        }
    }
}

/// How a run is analysed.
///
/// # Error rates
/// A run calls a clean store a leak with probability at most `false_positive_rate`, across its
/// judged statistical signals and every look at the verdict. The family is a union bound: the
/// seven judged statistical signals share each look's part alike, and look `j` ([`Looks`]) gets
/// `6 / (pi^2 j^2)` of the rate, so the parts over all looks sum to the rate whatever the
/// correlation between looks. A run judged once is look 1 (61% of the rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// Cycles skipped by statistical signals (caches filling, arenas growing).
    pub warmup_cycles: usize,
    /// The rate of false leak verdicts a whole run may have (over its signals and looks).
    #[serde(default = "default_false_positive_rate")]
    pub false_positive_rate: f64,
    /// When the run is looked at.
    #[serde(default, flatten)]
    pub looks: Looks,
    /// Tolerances of the statistical signals.
    pub tolerances: Tolerances,
    /// Budgets of the statistical signals.
    #[serde(default)]
    pub budgets: Budgets,
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
            looks: Looks::End,
            tolerances: Tolerances::default(),
            budgets: Budgets::default(),
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
/// part, RSS outside jemalloc, fds and file maps outside the store's directory, threads, and the
/// bytes-per-firing family as one): each gets an equal share of a look's error rate.
pub(crate) const JUDGED_STATISTICAL_SIGNALS: u32 = 7;

impl AnalysisConfig {
    /// `check`'s looks: at `cycles`, then every 10 while inconclusive.
    pub fn looking_from(mut self, cycles: u64) -> Self {
        self.looks = Looks::Decide { first: cycles };
        self
    }

    /// The one-sided error rate one signal gets at look `look`.
    pub(crate) fn signal_alpha(&self, look: u64) -> f64 {
        let share = 6.0 / (std::f64::consts::PI.powi(2) * (look.max(1) as f64).powi(2));
        self.false_positive_rate * share / f64::from(JUDGED_STATISTICAL_SIGNALS)
    }

    /// The growth rule of the byte signals at look `look`.
    pub(crate) fn bytes_rule(&self, look: u64) -> GrowthRule {
        GrowthRule {
            tolerance_per_cycle: self.tolerances.allocated_bytes_per_cycle,
            budget: self.budgets.bytes,
            alpha: self.signal_alpha(look),
            counts: false,
        }
    }
}

/// Leak rate of the bytes signal, attributed per cycle and per store instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LeakRate {
    /// The signal the rate comes from (`unexplained_bytes` when RocksDB was asked, else
    /// `allocated_bytes`).
    pub signal: SignalId,
    /// Growth per cycle over the later part of the run.
    pub bytes_per_cycle: f64,
    /// The same per store instance opened in a cycle (tasks x segments): the amplification that
    /// made KAFKA-20616 serious shows as the same rate per instance at any scale.
    pub bytes_per_instance: f64,
    /// Instances per cycle used for the division.
    pub instances_per_cycle: u64,
}

/// What a clean verdict rules out: no continuing leak of `bytes_per_cycle` or more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RulesOut {
    /// The byte signal judged.
    pub signal: SignalId,
    /// The smallest continuing leak per cycle ruled out: the later part's upper bound per cycle,
    /// plus what a filling cache's rounding could hide ([`RulesOut::cache_rounding_bytes_per_cycle`]).
    pub bytes_per_cycle: f64,
    /// The same per store instance.
    pub bytes_per_instance: f64,
    /// The later part it was measured over: from this cycle ...
    pub from_cycle: u64,
    /// ... to this one.
    pub to_cycle: u64,
    /// The budget that applied over it.
    pub budget_bytes: f64,
    /// Where the budget came from.
    pub budget_from: BudgetFrom,
    /// Part of `bytes_per_cycle`: the growth, per cycle, of the allowance for the allocator's
    /// rounding of cached entries ([`crate::probe::CACHE_ROUNDING`] of the caches' usage). It is
    /// subtracted at its bound because RocksDB does not say which sizes it cached, so while a
    /// cache fills a leak up to this size could hide in it; 0 once the caches are full.
    #[serde(default)]
    pub cache_rounding_bytes_per_cycle: f64,
    /// The one-sided rate the bound holds at ([`Growth::upper_alpha`]): the chance that a leak of
    /// `bytes_per_cycle` would have been called clean. Absent in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_alpha: Option<f64>,
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
    /// Allowed on top of it: the live SST files a DB still open gained since the baseline, at
    /// `LIVE_FILE_BYTES` each (the store's data, not a leak of its lifecycle).
    #[serde(default)]
    pub data_allowance_bytes: u64,
    /// Allowed on top of it: what the leaks a suppression accepts hold (the record's blocks of the
    /// stacks it names), known and accepted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub suppressed_bytes: u64,
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

impl BaselineReturn {
    pub(crate) fn judge(b: &Sample, l: &Sample, tolerance_bytes: u64) -> BaselineReturn {
        let delta = |a: Option<u64>, b: Option<u64>| Some(b? as i64 - a? as i64);
        let allocated_delta_bytes = delta(b.allocated_bytes(), l.allocated_bytes());
        let unexplained_delta_bytes = if b.has_explanation() && l.has_explanation() {
            b.unexplained_bytes().zip(l.unexplained_bytes()).map(|(b, l)| l - b)
        } else {
            None
        };
        let fds_under_dir_delta = delta(b.process.open_fds_under_dir, l.process.open_fds_under_dir);
        let maps_under_dir_delta = delta(b.process.maps_under_dir, l.process.maps_under_dir);
        let files = |s: &Sample| s.rocksdb.map_or(0, |m| m.live_sst_files);
        let data_allowance_bytes = (files(l).saturating_sub(files(b)) as f64 * crate::probe::LIVE_FILE_BYTES) as u64;
        let mut r = BaselineReturn {
            verdict: Verdict::Clean,
            allocated_delta_bytes,
            unexplained_delta_bytes,
            tolerance_bytes,
            data_allowance_bytes,
            suppressed_bytes: 0,
            fds_under_dir_delta,
            maps_under_dir_delta,
            fds_delta: delta(b.process.open_fds, l.process.open_fds),
            threads_delta: delta(b.process.threads, l.process.threads),
        };
        r.verdict = r.judged();
        r
    }

    /// Clean when the judged bytes are within the tolerance and the allowances, and nothing is
    /// left open or mapped under the store's directory.
    fn judged(&self) -> Verdict {
        let allowed =
            self.tolerance_bytes.saturating_add(self.data_allowance_bytes).saturating_add(self.suppressed_bytes);
        let ok = self.unexplained_delta_bytes.or(self.allocated_delta_bytes).is_none_or(|d| d <= allowed as i64)
            && self.fds_under_dir_delta.is_none_or(|d| d == 0)
            && self.maps_under_dir_delta.is_none_or(|d| d == 0);
        if ok {
            Verdict::Clean
        } else {
            Verdict::Leak
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The verdict on a whole run: every signal's, the leak rate and the return to baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunVerdict {
    /// The worst of the signals' verdicts and the baseline return.
    pub verdict: Verdict,
    /// One verdict per signal.
    pub signals: Vec<SignalVerdict>,
    /// The bytes signal's growth per cycle and per instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_rate: Option<LeakRate>,
    /// When the bytes signal is clean: the smallest continuing leak it rules out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_out: Option<RulesOut>,
    /// The return to the pre-run baseline, when both samples were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_return: Option<BaselineReturn>,
    /// Why the byte signals cannot be trusted (native allocations invisible to jemalloc), when
    /// so: they cannot call the run clean then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_unavailable: Option<String>,
    /// The look the statistical signals were judged at (its cycles), when the run was looked at
    /// before its end (an interim soak report shows the last look's statistical verdicts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_at_cycles: Option<u64>,
}

impl RunVerdict {
    /// The verdict of one signal (of a family: its first member).
    pub fn signal(&self, signal: Signal) -> Option<&SignalVerdict> {
        self.signals.iter().find(|s| s.family() == signal)
    }

    /// The verdict of one signal by its name in reports (`live_handles.Options`).
    pub fn signal_named(&self, name: &str) -> Option<&SignalVerdict> {
        let id: SignalId = name.parse().ok()?;
        self.signals.iter().find(|s| s.signal == id)
    }

    /// The judged (not informational) signals that found a leak.
    pub fn leaking_signals(&self) -> Vec<&SignalId> {
        self.signals.iter().filter(|s| s.verdict == Verdict::Leak && !s.informational).map(|s| &s.signal).collect()
    }

    /// Adds the `retained_bytes` verdict, after the statistical signals and before the exact ones,
    /// and lets it decide the run: a site whose live bytes keep growing is a leak whatever the
    /// aggregate byte count says (a leak beside memory given back, or too small for the counter's
    /// noise). It never sets a measured growth aside: a leak the counter's growth rule found
    /// stands beside it, and what the record held where that leak would be is only shown
    /// ([`SignalVerdict::record_holds`]). A counter still below its evidence floor has measured no
    /// growth: beside a clean record it is shown, not judged (a short run is the record's to
    /// decide).
    pub(crate) fn add_retained(&mut self, v: SignalVerdict) {
        let at = self
            .signals
            .iter()
            .position(|s| !crate::signal::Signal::STATISTICAL.contains(&s.family()))
            .unwrap_or(self.signals.len());
        let recorded = !v.informational && matches!(v.verdict, Verdict::Clean | Verdict::Inconclusive | Verdict::Leak);
        if !v.informational {
            self.verdict = self.verdict.worst(v.verdict);
            if v.verdict == Verdict::Leak {
                self.rules_out = None;
            }
        }
        self.signals.insert(at, v);
        if recorded {
            let clean = self.signals.iter().any(|s| {
                s.signal.signal() == crate::signal::Signal::RetainedBytes
                    && !s.informational
                    && s.verdict == Verdict::Clean
            });
            // A clean record whose exact total did not grow by the counter's budget answers a
            // counter's question it could not (undecided, never a leak it measured): what the
            // counter saw was not memory the run's cycles hold.
            let total_growth = self
                .signals
                .iter()
                .filter(|s| {
                    s.signal.signal() == crate::signal::Signal::RetainedBytes
                        && !s.informational
                        && s.verdict == Verdict::Clean
                })
                .find_map(|s| s.retained.as_ref()?.total.filter(|t| !t.leaks() && !t.open()))
                .map(|t| t.kept_to_end);
            let flat = |s: &SignalVerdict| {
                total_growth.is_some_and(|g| s.growth.is_none_or(|c| g <= c.budget + c.data_allowance))
            };
            for s in self
                .signals
                .iter_mut()
                .filter(|s| clean && (counter_without_growth(s) || (counter_undecided(s) && flat(s))))
            {
                s.informational = true;
            }
            let mut verdict = aggregate(&mut self.signals);
            if let Some(b) = &self.baseline_return {
                verdict = verdict.worst(b.verdict);
            }
            self.verdict = verdict;
        }
    }

    /// Holds every statistical signal's leak (the byte signals, `retained_bytes` included, the
    /// OS counts outside the store's directory) inconclusive for `more` cycles: before the run's
    /// planned end only exact signals call a leak, so that a bound the run has not reached yet
    /// can still show.
    pub(crate) fn hold_statistical_leaks(&mut self, more: u64) {
        let mut held = false;
        for s in self.signals.iter_mut().filter(|s| s.verdict == Verdict::Leak && !s.informational) {
            let family = s.family();
            if crate::signal::Signal::STATISTICAL.contains(&family) || family == crate::signal::Signal::RetainedBytes {
                s.verdict = Verdict::Inconclusive;
                s.more_cycles_needed = Some(s.more_cycles_needed.unwrap_or(0).max(more));
                held = true;
            }
        }
        if held {
            self.rules_out = None;
            let mut verdict = aggregate(&mut self.signals);
            if let Some(b) = &self.baseline_return {
                verdict = verdict.worst(b.verdict);
            }
            if self.bytes_unavailable.is_some() {
                verdict = verdict.worst(Verdict::Inconclusive);
            }
            self.verdict = verdict;
        }
    }

    /// Notes what the record held where a leak of the counter's (`signal`) would be
    /// ([`Analysis::leaks_would_hold`](crate::verdict::Analysis)): a judged clean
    /// `retained_bytes` that held less there shows that leak, not judges it.
    pub(crate) fn note_record_holds(&mut self, signal: &SignalId, holds: RecordHolds) {
        if let Some(s) = self.signals.iter_mut().find(|s| &s.signal == signal) {
            s.record_holds = Some(holds);
        }
    }

    /// Notes what the reported consumers account for of a counter's growth (`signal`), and shows
    /// it, not judges it, when the growth's lower bound less that is within the budget: a
    /// measured growth set aside only by a consumer within its bound, with its figure.
    pub(crate) fn explain_by_consumers(&mut self, signal: &SignalId, explained: ConsumersExplain) {
        let Some(s) = self.signals.iter_mut().find(|s| &s.signal == signal) else { return };
        let fits = s.growth.is_some_and(|g| g.lower - explained.bytes <= g.budget + g.data_allowance);
        if fits && matches!(s.verdict, Verdict::Leak | Verdict::Inconclusive) {
            s.informational = true;
        }
        s.explained_by = Some(explained);
    }

    /// Allows, in the return to baseline, the bytes the leaks a suppression accepts hold, and
    /// judges the run again.
    pub(crate) fn allow_suppressed_bytes(&mut self, bytes: u64) {
        let Some(b) = self.baseline_return.as_mut().filter(|_| bytes > 0) else {
            return;
        };
        b.suppressed_bytes = bytes;
        b.verdict = b.judged();
        let b = b.verdict;
        let mut verdict = aggregate(&mut self.signals).worst(b);
        if self.bytes_unavailable.is_some() {
            verdict = verdict.worst(Verdict::Inconclusive);
        }
        self.verdict = verdict;
    }

    /// Marks the byte signals unavailable for `reason` (native allocations do not show in
    /// jemalloc's counters): a byte signal that looked clean becomes inconclusive, and so does the
    /// run. A leak stays a leak (what is visible did grow).
    pub(crate) fn mark_bytes_unavailable(&mut self, reason: String) {
        for s in self.signals.iter_mut().filter(|s| s.class() == Class::Bytes && s.verdict == Verdict::Clean) {
            s.verdict = Verdict::Inconclusive;
            s.growth_below_budget = false;
        }
        self.rules_out = None;
        self.verdict = self.verdict.worst(Verdict::Inconclusive);
        self.bytes_unavailable = Some(reason);
    }
}

/// The counter's growth rule undecided (not a leak) on the bytes.
fn counter_undecided(s: &SignalVerdict) -> bool {
    let counted = [
        crate::signal::Signal::UnexplainedBytes,
        crate::signal::Signal::RocksdbExplainedBytes,
        crate::signal::Signal::BytesPerFiring,
    ];
    !s.informational && s.verdict == Verdict::Inconclusive && counted.contains(&s.family())
}

/// The counter's growth rule undecided with no growth measured to compare with the record (below
/// its evidence floor: too few samples).
fn counter_without_growth(s: &SignalVerdict) -> bool {
    let counted = [crate::signal::Signal::UnexplainedBytes, crate::signal::Signal::RocksdbExplainedBytes];
    !s.informational
        && s.verdict == Verdict::Inconclusive
        && counted.contains(&s.family())
        && s.growth.is_none()
        && s.record_holds.is_none()
}

/// The run's verdict from its signals: the worst of the judged (not informational) ones. A
/// corroborating signal's "inconclusive" without growth evidenced does not judge
/// ([`Signal::corroborating`]: coarse signals can call a leak, but their noise alone does not
/// hold a run once the exact byte count and the exact per-directory and per-handle signals have
/// decided; growth they see does, so the run looks longer): it is marked shown, not judged
/// ([`SignalVerdict::informational`]), so that every view of the run says so, never
/// "inconclusive" beside a verdict it did not hold.
pub(crate) fn aggregate(signals: &mut [SignalVerdict]) -> Verdict {
    for s in signals.iter_mut() {
        if !s.informational && s.corroborating() && s.verdict == Verdict::Inconclusive && !s.growth_evidenced() {
            s.informational = true;
        }
    }
    signals.iter().filter(|s| !s.informational).map(|s| s.verdict).fold(Verdict::Clean, Verdict::worst)
}

/// Judges a recorded run: statistical signals over the cycles after warm-up, exact signals over
/// every cycle (handles from the samples' retained counts), and the return to baseline when
/// `baseline` (before the first open) and `last` (after the last close) are given. The look is
/// the last one, at the index the config's [`Looks`] give the last sample's cycle.
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

#[cfg(test)]
mod tests;
