//! The verdict on a whole run ([`RunVerdict`]): every signal's, the leak rate, what a clean
//! verdict rules out and the return to the pre-run baseline, and how the record's verdict, the
//! reported consumers and the planned end weigh on them.

use serde::{Deserialize, Serialize};

use super::growth::BudgetFrom;
use super::model::SignalVerdict;
use super::outcome::Verdict;
use super::retained::RecordHolds;
use super::sites::rule::Grew;
use super::sites::ConsumersExplain;
use crate::probe::Sample;
use crate::signal::{Class, Signal, SignalId};

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
    /// The one-sided rate the bound holds at ([`Growth::upper_alpha`](super::Growth::upper_alpha)): the chance that a leak of
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
            // A clean record whose exact total kept no more than the counter's budget, or no more
            // than its own variability (the growth rule's budget, as a site's: a store whose live
            // bytes swing by more than the counter's budget from sample to sample, a cache turning
            // over), answers a counter's question it could not (undecided, never a leak it
            // measured): what the counter saw was not memory the run's cycles keep. A total that
            // kept more than its budget from too few rises to call (a loss or two late in the run)
            // leaves the question to the cycles to come, as one still rising in its last quarter
            // does.
            let total = self
                .signals
                .iter()
                .filter(|s| {
                    s.signal.signal() == crate::signal::Signal::RetainedBytes
                        && !s.informational
                        && s.verdict == Verdict::Clean
                })
                .find_map(|s| s.retained.as_ref()?.total.filter(|t| !t.leaks() && !t.whole_open()));
            let flat = |s: &SignalVerdict| {
                total.is_some_and(|t| {
                    // Nothing kept beyond its variability: no growth at all, or rises long past
                    // whose gaps are still being watched (a container's doublings early on).
                    let within =
                        matches!(t.grew, Grew::Flat | Grew::RareLosses { .. }) && t.kept_to_end <= t.budget_bytes;
                    within || (!t.open() && s.growth.is_none_or(|c| t.kept_to_end <= c.budget + c.data_allowance))
                })
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
