//! The verdict on one signal: one typed model, from the judgement to the report's JSON.
//!
//! The JSON keeps the field names and values reports have always had (`name`, `class`, `kind`,
//! `slope_per_cycle`, ...): [`SignalVerdict`] is written and read through a private wire form,
//! so an older report still reads back (`compare`), and nothing in the code compares a name,
//! class or kind as a string.

use serde::{Deserialize, Serialize};

use super::growth::{Growth, GrowthRule};
use super::outcome::Verdict;
use super::retained::{RecordHolds, Retained};
use super::sites::ConsumersExplain;
use crate::signal::{Class, Signal, SignalId};

/// How a signal is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Rule {
    /// Every value must equal `expected` (after settling); any residue is a leak.
    Exact {
        /// The value a clean run shows after every cycle (0, or the declared shared handles).
        expected: f64,
    },
    /// Growth through the later part of the run against a budget ([`GrowthRule`]).
    Growth(GrowthRule),
    /// A mean shift (bytes per fault firing, or per cycle under a plan of the fault matrix)
    /// against a tolerance: a leak when its lower bound is above it, clean when the upper is below.
    Shift {
        /// Bytes per firing (or per cycle) still called clean.
        tolerance: f64,
        /// One-sided error rate of each bound.
        alpha: f64,
    },
}

/// Whether a rule is exact or statistical: the report's `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// Any residue is a leak.
    Exact,
    /// Judged from an estimate and its interval.
    Statistical,
}

impl Rule {
    /// Exact or statistical.
    pub fn kind(&self) -> RuleKind {
        match self {
            Rule::Exact { .. } => RuleKind::Exact,
            Rule::Growth(_) | Rule::Shift { .. } => RuleKind::Statistical,
        }
    }

    /// The tolerance per cycle (per firing, for a shift), for statistical rules.
    pub fn tolerance(&self) -> Option<f64> {
        match self {
            Rule::Exact { .. } => None,
            Rule::Growth(g) => Some(g.tolerance_per_cycle),
            Rule::Shift { tolerance, .. } => Some(*tolerance),
        }
    }
}

/// An estimate with its confidence interval, in the signal's unit per cycle (per firing for a
/// shift).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Its lower confidence bound.
    pub lower: f64,
    /// Its upper confidence bound.
    pub upper: f64,
}

impl Estimate {
    /// An estimate and its bounds.
    pub(crate) fn new(value: f64, lower: f64, upper: f64) -> Self {
        Estimate { value, lower, upper }
    }
}

/// What an exact signal left: the largest residue and the first cycle with one.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Residue {
    /// The largest value minus the expected one.
    pub max: f64,
    /// The first cycle (0-based) with a residue.
    pub first_cycle: Option<usize>,
}

/// Memory kept once: a single level shift, followed by level data, left out of the growth.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Retention {
    /// Near this cycle ...
    pub at_cycle: usize,
    /// ... by this much, in the signal's unit.
    pub size: f64,
}

/// Why a signal measured nothing: its source never reported in the run. Such a row is
/// [`Verdict::NotMeasured`], neither clean nor a leak, and no part of the run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unmeasured {
    /// No handle was registered in the run's ledger: the store uses no tracked wrapper and
    /// registers nothing itself.
    NoHandles,
    /// No close result was made ([`crate::CloseResult`], a tracked DB's `close`): a close error
    /// dropped inside the store cannot be seen.
    NoCloseResults,
    /// The store defines no integrity check (`Lifecycle::check`).
    NoIntegrityCheck,
    /// The store reports no RocksDB memory (`Lifecycle::rocksdb_memory`).
    NoRocksdbMemory,
    /// The store names no data directory (`Lifecycle::data_dir`).
    NoDataDir,
    /// The allocation record missed allocations (its table could not grow): what the cycles hold
    /// is not known exactly, and `retained_bytes` is not judged.
    RecordIncomplete,
}

impl Unmeasured {
    /// The reason, as the report's rows say it.
    pub fn reason(self) -> &'static str {
        match self {
            Unmeasured::NoHandles => "no handle was registered in the ledger (no tracked wrapper, no Ledger::register)",
            Unmeasured::NoCloseResults => "no close result was made (CloseResult, a tracked DB's close)",
            Unmeasured::NoIntegrityCheck => "the store defines no integrity check (Lifecycle::check)",
            Unmeasured::NoRocksdbMemory => "the store reports no RocksDB memory (Lifecycle::rocksdb_memory)",
            Unmeasured::NoDataDir => "the store names no data directory (Lifecycle::data_dir)",
            Unmeasured::RecordIncomplete => {
                "the allocation record missed allocations (its table could not grow): what the cycles hold is not known exactly"
            }
        }
    }
}

impl std::fmt::Display for Unmeasured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason())
    }
}

/// The verdict on one signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
#[non_exhaustive]
pub struct SignalVerdict {
    /// Which signal (`unexplained_bytes`, `live_handles.Options`, ...).
    pub signal: SignalId,
    /// Clean, leak or inconclusive.
    pub verdict: Verdict,
    /// How it was judged.
    pub rule: Rule,
    /// Cycles judged (after warm-up for statistical signals; intervals or firings for a shift).
    pub cycles: usize,
    /// Statistical: the estimate per cycle (the later part's growth per cycle under the growth
    /// rule; bytes per firing for a shift).
    pub estimate: Option<Estimate>,
    /// The growth rule's measurement over the later part of the run.
    pub growth: Option<Growth>,
    /// Exact: what was left.
    pub residue: Option<Residue>,
    /// Inconclusive: about how many more cycles would decide, if the trend holds.
    pub more_cycles_needed: Option<u64>,
    /// A single level shift followed by level data: memory kept once (a pool or cache filling,
    /// or a leak that happened once), reported, not growth.
    pub retention: Option<Retention>,
    /// Shown for reference but not part of the run's verdict (raw byte signals, when the net
    /// ones are judged instead).
    pub informational: bool,
    /// Clean at the last look with growth evidenced below the budget: worth a look, not a leak.
    pub growth_below_budget: bool,
    /// `retained_bytes`: what the judged cycles' allocations still hold, by generation.
    pub retained: Option<Retained>,
    /// A leak the counter's growth rule found: what the record held where the leak would be.
    pub record_holds: Option<RecordHolds>,
    /// The counter's growth that the RocksDB consumers the store reports account for, within
    /// their bounds, as the record measured their sites (shown, not judged, when it covers the
    /// growth beyond the budget).
    pub explained_by: Option<ConsumersExplain>,
    /// [`Verdict::NotMeasured`]: why (the source that never reported).
    pub not_measured: Option<Unmeasured>,
}

impl SignalVerdict {
    /// `signal` judged under `rule` with nothing decided yet: inconclusive, no figures.
    pub(crate) fn undecided(signal: SignalId, rule: Rule) -> Self {
        SignalVerdict {
            signal,
            verdict: Verdict::Inconclusive,
            rule,
            cycles: 0,
            estimate: None,
            growth: None,
            residue: None,
            more_cycles_needed: None,
            retention: None,
            informational: false,
            growth_below_budget: false,
            retained: None,
            record_holds: None,
            explained_by: None,
            not_measured: None,
        }
    }

    /// `signal`, whose source never reported: [`Verdict::NotMeasured`], and why.
    pub(crate) fn unmeasured(signal: SignalId, rule: Rule, why: Unmeasured) -> Self {
        let mut v = SignalVerdict::undecided(signal, rule);
        v.verdict = Verdict::NotMeasured;
        v.not_measured = Some(why);
        v
    }

    /// Whether the signal measured anything ([`Verdict::NotMeasured`] if not).
    pub fn measured(&self) -> bool {
        self.verdict != Verdict::NotMeasured
    }

    /// The signal of the table this verdict is about ([`Signal::LiveHandlesOf`] for
    /// `live_handles.Options`).
    pub fn family(&self) -> Signal {
        self.signal.signal()
    }

    /// What it measures.
    pub fn class(&self) -> Class {
        self.signal.signal().class()
    }

    /// The unit of its values.
    pub fn unit(&self) -> &'static str {
        self.signal.signal().unit()
    }

    /// Whether it only corroborates ([`Signal::corroborating`]).
    pub fn corroborating(&self) -> bool {
        self.signal.signal().corroborating()
    }

    /// Exact or statistical.
    pub fn kind(&self) -> RuleKind {
        self.rule.kind()
    }

    /// Whether growth is evidenced: the later part's lower bound is above zero.
    pub(crate) fn growth_evidenced(&self) -> bool {
        self.growth.is_some_and(|g| g.lower > 0.0)
    }

    /// For a clean statistical verdict under the growth rule: the smallest continuing leak, per
    /// cycle, it rules out (the later part's upper bound per cycle).
    pub fn rules_out_per_cycle(&self) -> Option<f64> {
        (self.verdict == Verdict::Clean).then_some(self.growth?).map(|g| g.upper.max(0.0) / g.cycles().max(1) as f64)
    }
}

/// The report's form of a signal verdict (field names as they have always been).
#[derive(Serialize, Deserialize)]
struct Wire {
    name: SignalId,
    #[serde(default = "unknown_class")]
    class: Option<Class>,
    verdict: Verdict,
    #[serde(default)]
    unit: String,
    kind: RuleKind,
    #[serde(default)]
    informational: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slope_per_cycle: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lower: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    upper: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tolerance_per_cycle: Option<f64>,
    /// The growth rule's total budget (absent: the tolerance alone; a shift has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget_total: Option<f64>,
    /// One-sided error rate of the bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alpha: Option<f64>,
    /// `shift` for a mean shift; absent for the growth rule (and in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    method: Option<Method>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected: Option<f64>,
    /// The growth rule judged counts (every whole step a jump).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    counts: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    cycles: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    more_cycles_needed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_residue: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_cycle_with_residue: Option<usize>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    growth_below_tolerance: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_at_cycle: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_size: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    growth: Option<Growth>,
    /// Clean under the growth rule: the smallest continuing leak per cycle ruled out (written for
    /// readers of the JSON; derived from `growth` when read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rules_out_per_cycle: Option<f64>,
    /// `retained_bytes`: the judged generations' figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retained: Option<Retained>,
    /// A leak of the counter's: what the record held where the leak would be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record_holds: Option<RecordHolds>,
    /// The counter's growth the reported consumers account for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    explained_by: Option<ConsumersExplain>,
    /// False when the signal's source never reported (its verdict `not_measured`); written
    /// always, read as true from reports written before it existed.
    #[serde(default = "yes")]
    measured: bool,
    /// Not measured: which source never reported ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    not_measured: Option<Unmeasured>,
    /// ... and the reason in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Serialize, Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Method {
    Shift,
}

fn unknown_class() -> Option<Class> {
    None
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

impl From<SignalVerdict> for Wire {
    fn from(v: SignalVerdict) -> Wire {
        let rules_out_per_cycle = v.rules_out_per_cycle();
        let measured = v.measured();
        let (budget_total, alpha, method, expected) = match v.rule {
            Rule::Exact { expected } => (None, None, None, Some(expected)),
            Rule::Growth(g) => (g.budget, Some(g.alpha), None, None),
            Rule::Shift { alpha, .. } => (None, Some(alpha), Some(Method::Shift), None),
        };
        let counts = matches!(v.rule, Rule::Growth(g) if g.counts);
        Wire {
            class: Some(v.class()),
            unit: v.unit().to_string(),
            kind: v.kind(),
            tolerance_per_cycle: v.rule.tolerance(),
            budget_total,
            alpha,
            method,
            expected,
            counts,
            verdict: v.verdict,
            informational: v.informational,
            slope_per_cycle: v.estimate.map(|e| e.value),
            lower: v.estimate.map(|e| e.lower),
            upper: v.estimate.map(|e| e.upper),
            cycles: v.cycles,
            more_cycles_needed: v.more_cycles_needed,
            max_residue: v.residue.map(|r| r.max),
            first_cycle_with_residue: v.residue.and_then(|r| r.first_cycle),
            growth_below_tolerance: v.growth_below_budget,
            step_at_cycle: v.retention.map(|r| r.at_cycle),
            step_size: v.retention.map(|r| r.size),
            growth: v.growth,
            rules_out_per_cycle,
            retained: v.retained,
            record_holds: v.record_holds,
            explained_by: v.explained_by,
            measured,
            not_measured: v.not_measured,
            reason: v.not_measured.map(|u| u.reason().to_string()),
            name: v.signal,
        }
    }
}

impl TryFrom<Wire> for SignalVerdict {
    type Error = String;

    fn try_from(w: Wire) -> Result<SignalVerdict, String> {
        let rule = match (w.kind, w.method) {
            (RuleKind::Exact, _) => Rule::Exact { expected: w.expected.unwrap_or(0.0) },
            (RuleKind::Statistical, Some(Method::Shift)) => {
                Rule::Shift { tolerance: w.tolerance_per_cycle.unwrap_or(0.0), alpha: w.alpha.unwrap_or(0.0) }
            }
            (RuleKind::Statistical, None) => Rule::Growth(GrowthRule {
                tolerance_per_cycle: w
                    .tolerance_per_cycle
                    .ok_or_else(|| format!("{}: statistical without tolerance_per_cycle", w.name))?,
                budget: w.budget_total,
                alpha: w.alpha.unwrap_or(0.0),
                counts: w.counts,
            }),
        };
        if (w.verdict == Verdict::NotMeasured) != (!w.measured || w.not_measured.is_some()) {
            return Err(format!("{}: verdict {} with measured {}", w.name, w.verdict, w.measured));
        }
        let estimate = match (w.slope_per_cycle, w.lower, w.upper) {
            (Some(v), Some(l), Some(u)) => Some(Estimate::new(v, l, u)),
            _ => None,
        };
        Ok(SignalVerdict {
            verdict: w.verdict,
            rule,
            cycles: w.cycles,
            estimate,
            growth: w.growth,
            residue: w.max_residue.map(|max| Residue { max, first_cycle: w.first_cycle_with_residue }),
            more_cycles_needed: w.more_cycles_needed,
            retention: w.step_at_cycle.zip(w.step_size).map(|(at_cycle, size)| Retention { at_cycle, size }),
            informational: w.informational,
            growth_below_budget: w.growth_below_tolerance,
            retained: w.retained,
            record_holds: w.record_holds,
            explained_by: w.explained_by,
            not_measured: w.not_measured,
            signal: w.name,
        })
    }
}

impl SignalVerdict {
    /// The `retained_bytes` row: a leak when a site's live bytes (or the record's total) kept
    /// growing (the estimate is their growth per cycle over the later half); inconclusive while a
    /// site's question is open or too few cycles are judged; else clean.
    pub(crate) fn of_retained(r: Retained) -> SignalVerdict {
        let mut v = SignalVerdict::undecided(Signal::RetainedBytes.into(), Rule::Exact { expected: 0.0 });
        let need = super::retained::min_judged_cycles();
        v.verdict = match (r.leaks(), r.cycles()) {
            (true, _) => Verdict::Leak,
            (false, judged) if judged < super::retained::EARLY_JUDGED_CYCLES => {
                v.more_cycles_needed = Some(super::retained::EARLY_JUDGED_CYCLES - judged);
                Verdict::Inconclusive
            }
            // Nothing old anywhere: decided before a leak could be called.
            (false, judged) if judged < need && r.nothing_old() => Verdict::Clean,
            (false, judged) if judged < need => {
                v.more_cycles_needed = Some(need - judged);
                Verdict::Inconclusive
            }
            (false, _) if r.open() => {
                v.more_cycles_needed = r.cycles_to_settle();
                Verdict::Inconclusive
            }
            (false, _) => Verdict::Clean,
        };
        v.cycles = r.cycles() as usize;
        let sites: f64 =
            r.sites.iter().filter(|s| s.recurs()).filter_map(|s| s.live.map(|j| j.growth.bytes_per_cycle)).sum();
        let wholes = [r.total, r.rest].into_iter().flatten().filter(|g| g.leaks()).map(|g| g.bytes_per_cycle);
        let per_cycle = if sites > 0.0 { sites } else { wholes.fold(0.0, f64::max) };
        v.estimate = Some(Estimate::new(per_cycle, per_cycle, per_cycle));
        let largest = r.sites.iter().filter(|s| s.recurs()).map(|s| s.bytes).max().unwrap_or(0);
        let first = r.sites.iter().filter(|s| s.recurs()).map(|s| s.first_cycle).min();
        v.residue = Some(Residue { max: largest as f64, first_cycle: first.map(|c| c as usize) });
        v.retained = Some(r);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_reports_entry_reads_back() {
        let old = r#"{"name":"live_handles.Options","class":"handles","verdict":"leak","unit":"handles","kind":"exact",
            "informational":false,"max_residue":1.0,"first_cycle_with_residue":7}"#;
        let v: SignalVerdict = serde_json::from_str(old).expect("reads");
        assert_eq!(v.signal, SignalId::member(Signal::LiveHandlesOf, "Options"));
        assert_eq!(v.residue.and_then(|r| r.first_cycle), Some(7));
        let old = r#"{"name":"unexplained_bytes","class":"bytes","verdict":"clean","unit":"B","kind":"statistical",
            "slope_per_cycle":0.0,"lower":-3.0,"upper":2.0,"tolerance_per_cycle":64.0,"growth_below_tolerance":true}"#;
        let v: SignalVerdict = serde_json::from_str(old).expect("reads");
        assert!(matches!(v.rule, Rule::Growth(g) if g.tolerance_per_cycle == 64.0));
        assert!(v.growth_below_budget);
        assert!(serde_json::from_str::<SignalVerdict>(&old.replace("unexplained_bytes", "rss")).is_err());
    }

    #[test]
    fn a_verdict_writes_todays_field_names_and_reads_back_equal() {
        let mut v = SignalVerdict::undecided(
            SignalId::member(Signal::BytesPerFiring, "close.flush"),
            Rule::Shift { tolerance: 256.0, alpha: 1e-4 },
        );
        v.estimate = Some(Estimate::new(10.0, -5.0, 20.0));
        v.cycles = 33;
        let json = serde_json::to_value(&v).expect("writes");
        assert_eq!(json["name"], "bytes_per_firing.close.flush");
        assert_eq!(
            (json["class"].as_str(), json["kind"].as_str(), json["unit"].as_str()),
            (Some("bytes"), Some("statistical"), Some("B"))
        );
        assert_eq!(json["tolerance_per_cycle"], 256.0);
        let back: SignalVerdict = serde_json::from_value(json).expect("reads");
        assert_eq!(back, v);
    }
}
