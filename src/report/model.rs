//! The report's schema: what a run was asked, what it found, per signal and per cycle.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::harness::{CycleRecord, HarnessReport, Phase};
use crate::ledger::LeakReport;
use crate::probe::stacks::Place;
use crate::verdict::{RunVerdict, SignalVerdict, Verdict};

/// The report schema's version. Readers reject other versions.
pub const SCHEMA_VERSION: u32 = 1;

/// The report file's name in a report directory.
pub const REPORT_FILE: &str = "report.json";
/// The samples file's name in a report directory.
pub const SAMPLES_FILE: &str = "samples.csv";
/// The heap growth's flame graph in a report directory (`--profile`).
pub(crate) const FLAME_FILE: &str = "heap-growth.svg";

/// What the run was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The command (`check`, `soak`).
    pub command: String,
    /// The store under test ([`crate::harness::StoreInfo::name`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub store: String,
    /// The store's own settings ([`crate::harness::StoreInfo::settings`]), written beside the
    /// run's (the reference store's `tasks` and `segments`).
    #[serde(flatten)]
    pub store_settings: BTreeMap<String, serde_json::Value>,
    /// Cycles asked for.
    pub cycles: u64,
    /// `check` only: how far the run may go on while the verdict is inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cycles: Option<u64>,
    /// Time limit in seconds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// The fault plan.
    pub plan: String,
    /// The seed.
    pub seed: u64,
    /// The ledger's tracking depth.
    pub tracking: String,
    /// A settled memory sample was taken every this many cycles (slopes are per cycle whatever
    /// it is).
    #[serde(default = "one")]
    pub sample_every: u64,
    /// The handle check's quiet period in milliseconds ([`crate::HarnessConfig::handle_quiet`]);
    /// absent from reports written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle_quiet_ms: Option<u64>,
    /// `--profile N`: heap profiling sampled one allocation per `2^N` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_lg_sample: Option<u32>,
}

impl RunSettings {
    /// The store's name and settings as one value (`reference store (tasks 2, segments 3)`).
    pub(crate) fn store_info(&self) -> crate::harness::StoreInfo {
        let mut info = crate::harness::StoreInfo::new(if self.store.is_empty() { "store" } else { &self.store });
        info.settings = self.store_settings.clone();
        info
    }
}

fn one() -> u64 {
    1
}

/// How the cycles ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleSummary {
    /// Cycles whose open returned an error.
    pub open_errors: u64,
    /// Cycles whose work returned an error.
    pub work_errors: u64,
    /// Cycles whose close returned an error.
    pub close_errors: u64,
    /// Cycles in which some phase panicked.
    pub panics: u64,
    /// Fault points fired, with counts.
    pub faults_fired: BTreeMap<String, u64>,
    /// Records checked by the integrity check.
    pub records_checked: u64,
    /// The first integrity problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity_problems: Vec<String>,
    /// The store's integrity counts ([`Integrity::count`](crate::Integrity::count)) summed over
    /// the cycles: one key each (a window store's `late_records_dropped`).
    #[serde(flatten)]
    pub counts: BTreeMap<String, u64>,
}

impl CycleSummary {
    /// Adds one cycle.
    pub(crate) fn add(&mut self, r: &CycleRecord) {
        let err = |p: &Phase| matches!(p, Phase::Error(_)) as u64;
        self.open_errors += err(&r.open);
        self.work_errors += err(&r.work);
        self.close_errors += err(&r.close);
        self.panics += [&r.open, &r.work, &r.close].iter().any(|p| matches!(p, Phase::Panic(_))) as u64;
        for (k, v) in &r.faults_fired {
            *self.faults_fired.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.integrity.counts {
            *self.counts.entry(k.clone()).or_default() += v;
        }
        self.records_checked += r.integrity.records_checked;
        for p in &r.integrity.problems {
            if self.integrity_problems.len() < 10 {
                self.integrity_problems.push(format!("cycle {}: {p}", r.cycle));
            }
        }
    }
}

/// A call stack of the heap's growth (from jemalloc's sampling profiler).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapStack {
    /// Estimated live bytes added per cycle by allocations from this stack.
    pub bytes_per_cycle: f64,
    /// Sampled live objects added over the profiled cycles.
    pub objects: i64,
    /// A one-sided 95% lower confidence bound on `bytes_per_cycle` from the number of samples
    /// (a stack sampled once or twice proves little growth).
    #[serde(default)]
    pub lower_bytes_per_cycle: f64,
    /// The part of `bytes_per_cycle` that a block cache filling accounts for: a stack that stores
    /// blocks in a cache (`fills_a_block_cache`) is explained up to the
    /// growth of the caches' usage within capacity (with the allocator's rounding, as the verdict
    /// counts it) over the same cycles, shared out largest stack first. 0 for any other stack.
    #[serde(default)]
    pub explained_bytes_per_cycle: f64,
    /// The stack's functions, innermost first, allocator frames left out (`file:line` after a
    /// name where debug info has it).
    pub frames: Vec<String>,
}

/// The heap's growth summed over the stacks that one function of the user's code is the innermost
/// of ([`crate::probe::stacks::own_function`]): a leak made of several native objects (an options
/// object and its table factory, cache and maps) is one entry here, several stacks above.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapFunction {
    /// The function, without `file:line`.
    pub function: String,
    /// Estimated live bytes added per cycle by its stacks.
    pub bytes_per_cycle: f64,
    /// Of which a block cache's fill explains ([`HeapStack::explained_bytes_per_cycle`]).
    pub explained_bytes_per_cycle: f64,
    /// A one-sided 95% lower bound on the unexplained growth, from the stacks' samples together
    /// (each sample taken to stand for the function's mean bytes per sample).
    pub unexplained_lower_bytes_per_cycle: f64,
    /// Sampled live objects added.
    pub objects: i64,
    /// How many stacks it sums.
    pub stacks: usize,
}

impl HeapFunction {
    /// The growth no cache filling accounts for: what functions are ranked by.
    pub(crate) fn unexplained_bytes_per_cycle(&self) -> f64 {
        (self.bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }
}

impl HeapStack {
    /// The growth no cache filling accounts for: what the stacks are ranked by.
    pub fn unexplained_bytes_per_cycle(&self) -> f64 {
        (self.bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }

    /// The 95% lower bound on the unexplained growth (the sampled bound less the explained part,
    /// which is measured, not sampled).
    pub fn unexplained_lower_bytes_per_cycle(&self) -> f64 {
        (self.lower_bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }
}

/// A run's report (schema version [`SCHEMA_VERSION`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunReport {
    /// The schema version.
    pub schema_version: u32,
    /// The tool and its version.
    pub tool: String,
    /// The verdict: clean, leak or inconclusive (`verdict`), every signal's (`signals`), the leak
    /// rate, what a clean verdict rules out, the return to baseline, and why the byte signals
    /// could not be trusted when so. Its fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub verdict: RunVerdict,
    /// False while a run is still going (a report rewritten mid-run).
    pub complete: bool,
    /// The run was stopped early by SIGINT or SIGTERM (the report covers the cycles run).
    #[serde(default)]
    pub interrupted: bool,
    /// What was asked.
    pub settings: RunSettings,
    /// Cycles run.
    pub cycles_run: u64,
    /// Wall time so far.
    pub elapsed_seconds: f64,
    /// Mean wall time per cycle, in milliseconds: the overhead figure `compare` watches.
    pub ms_per_cycle: f64,
    /// How the cycles ended.
    pub cycles_summary: CycleSummary,
    /// The ledger after the last cycle.
    pub ledger: LeakReport,
    /// Why the run ended before the cycles asked, when it did (check stops once an exact
    /// signal's residue makes the verdict a leak whatever later cycles do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::harness::Stopped>,
    /// The first cycle (0-based) the run's verdict was a leak (a soak runs on past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_leak_cycle: Option<u64>,
    /// With `--profile`: the call stacks whose live bytes grew most between the end of the
    /// warm-up and the end of the run (jemalloc's heap profile), the most unexplained growth
    /// first ([`HeapStack::unexplained_bytes_per_cycle`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_growth: Vec<HeapStack>,
    /// With `--profile`: the heap's growth summed per function of the user's code (every stack
    /// with a frame of it, not only those in `heap_growth`), the most unexplained first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_growth_by_function: Vec<HeapFunction>,
    /// Allocation generations: whether they were recorded, how, and per generation
    /// `[cycle, live_bytes, live_allocations]` at the end of the run.
    #[serde(default)]
    pub generations: crate::harness::GenerationsReport,
    /// How each suppression (known leaks the run accepts, `--suppressions`) was used: what it
    /// matched and its size per cycle, unused, or exceeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressions: Vec<crate::suppress::SuppressionUse>,
    /// The run held against a baseline report (`--baseline`): what is new, grown or known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineCheck>,
}

impl RunReport {
    /// Builds a report from a verdict and what surrounds it.
    pub(crate) fn new(
        settings: RunSettings,
        verdict: RunVerdict,
        summary: CycleSummary,
        ledger: LeakReport,
        cycles_run: u64,
        elapsed_seconds: f64,
        complete: bool,
    ) -> Self {
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool: format!("leakcheck {}", env!("CARGO_PKG_VERSION")),
            verdict,
            complete,
            interrupted: false,
            settings,
            cycles_run,
            elapsed_seconds,
            ms_per_cycle: if cycles_run > 0 { elapsed_seconds * 1e3 / cycles_run as f64 } else { 0.0 },
            cycles_summary: summary,
            ledger,
            stopped: None,
            first_leak_cycle: None,
            heap_growth: Vec::new(),
            heap_growth_by_function: Vec::new(),
            generations: crate::harness::GenerationsReport::default(),
            suppressions: Vec::new(),
            baseline: None,
        }
    }

    /// A report of a finished harness run.
    pub fn from_harness(settings: RunSettings, h: &HarnessReport, elapsed_seconds: f64) -> Self {
        let mut summary = CycleSummary::default();
        for r in &h.records {
            summary.add(r);
        }
        let mut r =
            Self::new(settings, h.verdict.clone(), summary, h.ledger.clone(), h.cycles_run, elapsed_seconds, true);
        r.stopped = h.stopped.clone();
        r.first_leak_cycle = h.first_leak_cycle;
        r.generations = h.generations.clone();
        r.suppressions = h.suppressions.clone();
        r
    }

    /// The entry of one signal (of a family: its first member).
    pub fn signal(&self, signal: crate::signal::Signal) -> Option<&SignalVerdict> {
        self.verdict.signal(signal)
    }

    /// Among the `within` first stacks of the heap's growth (`--profile`; the most unexplained
    /// first), the first with a frame naming `function` (a part of the frame's text, such as
    /// `KvService::options`).
    pub fn heap_stack_naming(&self, function: &str, within: usize) -> Option<&HeapStack> {
        self.heap_growth.iter().take(within).find(|g| g.frames.iter().any(|f| f.contains(function)))
    }

    /// Among the `within` first functions of the heap's growth by function, the first whose name
    /// contains `function`.
    pub fn heap_function_naming(&self, function: &str, within: usize) -> Option<&HeapFunction> {
        self.heap_growth_by_function.iter().take(within).find(|g| g.function.contains(function))
    }

    /// The bytes signal that the run's leak rate comes from.
    pub(crate) fn bytes_signal(&self) -> Option<&SignalVerdict> {
        let v = &self.verdict;
        v.leak_rate.as_ref().and_then(|r| v.signals.iter().find(|s| s.signal == r.signal))
    }
}

/// One thing that leaked, or that the run could not decide, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The signal that found it (`live_handles.Options`, `retained_bytes`,
    /// `open_fds_outside_dir`), or `baseline_return`.
    pub signal: String,
    /// `leak`, or `inconclusive` for a signal the run could not decide.
    pub verdict: Verdict,
    /// What and where in one sentence: `4 Options handles retained, created at src/store.rs:48:22
    /// (owner task 0_0 / segment 0)`.
    pub message: String,
    /// Where to fix it, when known: the creating line of a handle, the first frame of the user's
    /// code in an allocating stack, the line that dropped a close error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<Place>,
    /// Its size per cycle, in the signal's unit (bytes, handles, fds), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_cycle: Option<f64>,
    /// For an allocating stack: its frames, innermost first (what a suppression's `function`
    /// matches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
}

/// One leak of the run, against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Against {
    /// The leak.
    pub finding: Finding,
    /// The baseline's size per cycle of the same leak, when it had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_per_cycle: Option<f64>,
}

/// The run against its baseline: report.json's `baseline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BaselineCheck {
    /// The baseline report.
    pub file: String,
    /// The margin (a fraction of the baseline's size per cycle).
    pub margin: f64,
    /// Leaks the baseline did not have.
    pub new: Vec<Against>,
    /// Leaks the baseline had, now larger per cycle by more than the margin.
    pub more: Vec<Against>,
    /// Leaks the baseline had, no larger beyond the margin.
    pub known: Vec<Against>,
}
