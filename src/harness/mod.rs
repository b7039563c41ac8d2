//! The cycle harness: drives a store through open / work / close cycles with injected faults,
//! and after every cycle checks that every native resource was released and no data was lost.
//!
//! Users implement [`Lifecycle`] for their own store. The reference store (a segmented store
//! modelled on Kafka Streams' window stores) and the catalogs live in the `leak-tests` package.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Once;

use serde::{Deserialize, Serialize};

use crate::fault::{matrix_plans, FaultPlan, FaultPlanError, Faults, InjectedPanic};
use crate::probe::jemalloc::ThreadCounters;
use crate::probe::{ProbeError, RocksDbMemory};
use crate::verdict::{
    mean_shift, shift_verdict, Analysis, AnalysisConfig, CycleFacts, CycleSample, Look, Looks, Rule, RunVerdict,
    SignalVerdict, Verdict,
};
use crate::{HandleKind, LeakReport, Ledger, Probe, Sample, Settle, Signal, SignalId};

mod generations;
mod release;

pub use generations::{GenerationsReport, MAX_GENERATIONS_LISTED};
use release::ReleaseWatch;

/// What a cycle's code gets: which cycle, the ledger to register handles in, the faults to check.
#[derive(Debug, Clone, Copy)]
pub struct CycleCtx<'a> {
    /// 0-based cycle number.
    pub cycle: u64,
    /// The run's ledger.
    pub ledger: &'a Ledger,
    /// The run's fault plan in force.
    pub faults: &'a Faults,
}

/// What the store's own checks found after a cycle (the harness runs them after close).
///
/// The counters are the store's, by name: a [`violation`](Integrity::violation) breaks a
/// guarantee (a lost record, a lock still held, a directory left behind) and fails the run's
/// `integrity` signal; a [`count`](Integrity::count) is reported and not a failure (late records
/// dropped by a window store). In the report JSON both are keys of the cycle's record, as a
/// store's own fields would be.
///
/// ```
/// let mut found = leakcheck::Integrity::default();
/// found.records_checked = 100;
/// found.violation("lost_records", 2);
/// found.count("late_records_dropped", 5);
/// found.problem("record 17 missing after reopen");
/// assert_eq!(found.total_violations(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Integrity {
    /// Records whose presence was checked.
    pub records_checked: u64,
    /// Broken guarantees, by the store's name for them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub violations: BTreeMap<String, u64>,
    /// Counts reported but not failures, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
    /// Human-readable descriptions of the first problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl Integrity {
    /// Adds `n` to the violation `name` (the key appears even when `n` is 0: the check ran).
    pub fn violation(&mut self, name: &str, n: u64) {
        *self.violations.entry(name.to_owned()).or_default() += n;
    }

    /// Adds `n` to the count `name`, reported but not a failure.
    pub fn count(&mut self, name: &str, n: u64) {
        *self.counts.entry(name.to_owned()).or_default() += n;
    }

    /// The violation `name` (0 when the store never reported it).
    pub fn violations_of(&self, name: &str) -> u64 {
        self.violations.get(name).copied().unwrap_or(0)
    }

    /// The count `name` (0 when the store never reported it).
    pub fn count_of(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }

    /// All violations: what the `integrity` signal judges (exactly zero when clean).
    pub fn total_violations(&self) -> u64 {
        self.violations.values().sum()
    }

    /// Records a problem's description (the first 20 are kept).
    pub fn problem(&mut self, text: impl Into<String>) {
        if self.problems.len() < 20 {
            self.problems.push(text.into());
        }
    }

    /// Adds another report's counters and problems.
    pub fn merge(&mut self, other: Integrity) {
        self.records_checked += other.records_checked;
        for (k, v) in other.violations {
            *self.violations.entry(k).or_default() += v;
        }
        for (k, v) in other.counts {
            *self.counts.entry(k).or_default() += v;
        }
        for p in other.problems {
            self.problem(p);
        }
    }
}

/// A store the harness can drive. `open` makes a [`Lifecycle::Store`] (options, caches, DBs,
/// column families, restored state), `work` uses it, `close` releases it and reports a close
/// error. Long-lived state (a shared cache, the data directory, what was committed) lives in the
/// implementing value across cycles.
pub trait Lifecycle {
    /// The open store.
    type Store;
    /// The store's error type.
    type Error: fmt::Display;

    /// Every fault point the store checks: plans naming others are rejected.
    fn fault_points(&self) -> Vec<&'static str>;

    /// Opens the store.
    ///
    /// # Errors
    /// The store's error; nothing it made may stay allocated.
    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store, Self::Error>;

    /// Does one cycle's work.
    ///
    /// # Errors
    /// The store's error; the harness closes the store anyway.
    fn work(&mut self, store: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<(), Self::Error>;

    /// Closes the store, releasing everything whether or not a step fails.
    ///
    /// # Errors
    /// The first close error.
    fn close(&mut self, store: Self::Store, ctx: &CycleCtx<'_>) -> Result<(), Self::Error>;

    /// Checks the store's data after close (reopen, offsets not ahead of data, no LOCK held).
    fn check(&mut self, _ctx: &CycleCtx<'_>) -> Integrity {
        Integrity::default()
    }

    /// The directory whose open files and maps must return to zero after close.
    fn data_dir(&self) -> Option<PathBuf> {
        None
    }

    /// Store instances (tasks x segments) opened per cycle, for the leak rate per instance.
    fn instances_per_cycle(&self) -> u64 {
        1
    }

    /// RocksDB's accounting of the long-lived objects (shared caches) alive between cycles.
    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        None
    }

    /// What the store is, for reports and their headers: a name and its settings (the
    /// reference store's tasks and segments, say). Default: `store`, no settings.
    fn describe(&self) -> StoreInfo {
        StoreInfo::new("store")
    }

    /// Lets go of what the store keeps across cycles (a shared cache, a write-buffer manager, a DB
    /// kept open, a pool), once, after the last cycle and its sample. What the cycles allocated
    /// and is still held afterwards is what they leaked (`retained_bytes`): a cache still alive
    /// holds what many cycles allocated, from one stack, and cannot be told from a leak.
    /// Default: nothing, for a store that keeps nothing native across cycles. The harness does not
    /// open the store again in the same run; a store run again makes them anew.
    fn let_go(&mut self) {}

    /// The fault plan `check` and `soak` use when none is given (the runner's `--faults`).
    /// Default: every point of [`Lifecycle::fault_points`] failing with an error in 5% of its
    /// calls, so that the error paths an ordinary open/close test never reaches are run. Rates are
    /// per call: override this when a point is checked many times a cycle (at 5%, a point
    /// checked 50 times fails in 92% of cycles, and what follows it in the cycle rarely runs).
    fn default_faults(&self) -> String {
        self.fault_points().iter().map(|p| format!("{p}=5%")).collect::<Vec<_>>().join(",")
    }
}

/// What a store says about itself ([`Lifecycle::describe`]): shown in the run's header and
/// plots, kept in the report's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoreInfo {
    /// What the store is (`reference store`, `kv service`).
    pub name: String,
    /// Its settings (name to value), written into the report's `settings` beside the run's own.
    pub settings: BTreeMap<String, serde_json::Value>,
}

impl StoreInfo {
    /// A store called `name`, with no settings.
    pub fn new(name: impl Into<String>) -> Self {
        StoreInfo { name: name.into(), settings: BTreeMap::new() }
    }

    /// Adds a setting.
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.settings.insert(name.into(), value.into());
        self
    }
}

impl fmt::Display for StoreInfo {
    /// `reference store (tasks 2, segments 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.settings.iter().enumerate() {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            write!(f, "{}{k} {v}", if i == 0 { " (" } else { ", " })?;
        }
        if !self.settings.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// How one phase of a cycle ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "message", rename_all = "lowercase")]
pub enum Phase {
    /// It returned normally.
    Ok,
    /// It returned an error.
    Error(String),
    /// It panicked.
    Panic(String),
    /// It did not run (open failed).
    Skipped,
}

/// What happened in one cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleRecord {
    /// 0-based cycle number.
    pub cycle: u64,
    /// Open's outcome.
    pub open: Phase,
    /// Work's outcome.
    pub work: Phase,
    /// Close's outcome.
    pub close: Phase,
    /// Fault points that fired, with how many times each.
    pub faults_fired: BTreeMap<String, u64>,
    /// Undeclared live handles per kind after the cycle (exact, checked every cycle).
    pub retained_handles: BTreeMap<String, u64>,
    /// Swallowed close errors recorded by the ledger during the cycle.
    pub swallowed_close_errors: usize,
    /// Caches and write buffer managers alive while the store was open (after work, before
    /// close) that were not declared shared. A cache per instance instead of one shared cache
    /// multiplies with tasks x segments, the amplification of KAFKA-20616; it is released at
    /// close, so only a look while the store is open sees it.
    pub unshared_caches_open: u64,
    /// Where those caches were created (`file:line:column`), when the ledger records sites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unshared_cache_sites: Vec<String>,
    /// Live handles declared shared beyond those live after the first cycle. Sharing is not a
    /// licence to grow: a store that declares one more shared cache per task or per cycle and
    /// never prunes them leaks behind the declaration. Exact: must stay 0.
    #[serde(default)]
    pub declared_shared_growth: u64,
    /// Where the handles declared shared after the first cycle were created, with their count
    /// (`src/store.rs:42:17 (x12)`), when the ledger records sites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_shared_growth_sites: Vec<String>,
    /// The store's integrity check.
    pub integrity: Integrity,
}

impl CycleRecord {
    /// What the verdict's exact signals and per-firing attribution read of the record.
    pub fn facts(&self) -> CycleFacts<'_> {
        CycleFacts {
            cycle: self.cycle,
            retained_handles: &self.retained_handles,
            unshared_caches_open: self.unshared_caches_open,
            declared_shared_growth: self.declared_shared_growth,
            swallowed_close_errors: self.swallowed_close_errors as u64,
            integrity_violations: self.integrity.total_violations(),
            faults_fired: &self.faults_fired,
        }
    }

    /// The record without its texts (phase messages, fault names, problems, sites): what the
    /// exact signals need, in a few dozen bytes, for long soaks.
    pub fn stripped(self) -> CycleRecord {
        let strip = |p: Phase| match p {
            Phase::Error(_) => Phase::Error(String::new()),
            Phase::Panic(_) => Phase::Panic(String::new()),
            other => other,
        };
        let mut integrity = self.integrity;
        integrity.problems = Vec::new();
        CycleRecord {
            open: strip(self.open),
            work: strip(self.work),
            close: strip(self.close),
            faults_fired: BTreeMap::new(),
            unshared_cache_sites: Vec::new(),
            declared_shared_growth_sites: Vec::new(),
            integrity,
            ..self
        }
    }
}

/// The harness's settings.
#[derive(Debug, Clone)]
pub struct HarnessConfig {
    /// Cycles to run (a stop request from the observer, or a decision past
    /// [`decide_after`](HarnessConfig::decide_after), ends the run earlier).
    pub cycles: u64,
    /// `leakcheck check`'s rule: run this many cycles, then go on only while the memory verdict
    /// is inconclusive, looking again every 10 cycles and stopping as soon as it decides;
    /// `cycles` is then the most the run takes. Each later look gets a smaller part of the
    /// false-positive rate ([`AnalysisConfig`]), and the final verdict is judged as the look that
    /// stopped the run. `None` (the default): run `cycles`.
    pub decide_after: Option<u64>,
    /// Stop after the first cycle an exact signal (handles, files under the store's directory,
    /// swallowed close errors, integrity) leaves a residue that outlived its settle: the verdict
    /// is then a leak whatever later cycles do (`leakcheck check`'s default; `false`, the
    /// default here, runs every cycle).
    pub stop_on_exact_leak: bool,
    /// Take a settled memory sample every this many cycles (1: every cycle).
    pub sample_every: u64,
    /// Run the store's integrity check every this many cycles (0: never).
    pub check_every: u64,
    /// Settling before each memory sample (default [`Settle::SAMPLES`]).
    pub settle: Settle,
    /// Settling before the per-cycle handle check: how long at most to wait for handles still
    /// retained (a close finishing on another thread) before calling them leaked. A cycle that
    /// retains nothing does not wait, and the wait ends sooner when nothing could release them
    /// ([`HarnessConfig::handle_quiet`]). Once a cycle's handles outlast the wait, the leak is
    /// established and later cycles wait only 25 ms, so a store that leaks every cycle is not
    /// slowed by it; the same holds for files and maps under the data directory
    /// ([`Settle::pending_timeout`]).
    pub handle_settle: Settle,
    /// The handle wait ends once this long has passed with nothing in the process that could
    /// release a handle: no handle released, no thread started since close began still running,
    /// no thread starting or ending, no other thread using CPU (above 1% of a core). A release
    /// deferred in a way none of that shows (a close queued on an idle pool thread that first
    /// sleeps) needs a value longer than its delay; a value at or above
    /// [`HarnessConfig::handle_settle`]'s timeout turns the rule off. Default 100 ms.
    pub handle_quiet: std::time::Duration,
    /// How the samples are judged.
    pub analysis: AnalysisConfig,
    /// The fault plan.
    pub plan: FaultPlan,
    /// Seed of the plan's probabilities.
    pub seed: u64,
    /// Keep every cycle's full record in the report. A long soak passes each full record to the
    /// observer and keeps only [`CycleRecord::stripped`] ones.
    pub keep_records: bool,
    /// [`Harness::fault_matrix`]: cycles run under each plan, to judge its bytes against clean
    /// cycles (at least [`MIN_MATRIX_REPEATS`]; fewer skips the bytes judgement).
    pub matrix_repeats: u32,
    /// Run before the first cycle: proves that native (C and C++) allocations show in jemalloc's
    /// counters. When it fails, the byte signals are unavailable and the run cannot be clean
    /// ([`RunVerdict::mark_bytes_unavailable`]). Default: [`native_allocations_visible`].
    pub allocator_check: fn() -> Result<(), ProbeError>,
    /// Record every allocation with the cycle that made it (jemalloc's allocation hooks, see
    /// [`crate::probe::generations`]), so that report.json's `generations` says what each cycle
    /// still holds. Default `true`; where the allocator cannot be hooked the run says why.
    pub generations: bool,
}

/// [`HarnessConfig::handle_quiet`]'s default.
pub const DEFAULT_HANDLE_QUIET: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether C `malloc` goes through jemalloc (see [`crate::probe::check_malloc_coverage`]): a
/// build without the unprefixed override, or a tool preloaded in front of it, hides RocksDB's
/// heap from every byte signal. Takes a few milliseconds.
///
/// # Errors
/// [`ProbeError::MallocNotRouted`], with the diagnosis naming the likely cause and its fix.
pub fn native_allocations_visible() -> Result<(), ProbeError> {
    crate::probe::check_malloc_coverage().map(|_| ())
}

/// An allocator check that reports native allocations invisible, as a build without the
/// unprefixed override would: for test suites proving such a run ends inconclusive, never clean.
///
/// # Errors
/// Always: [`ProbeError::MallocNotRouted`], its diagnosis saying it is simulated.
pub fn simulated_invisible_allocations() -> Result<(), ProbeError> {
    Err(ProbeError::MallocNotRouted {
        requested_bytes: 4 << 20,
        allocated_delta_bytes: 0,
        diagnosis: "Simulated: the run was asked to treat native allocations as invisible.".to_string(),
    })
}

impl HarnessConfig {
    /// The analysis the run is judged with: looks counted from `decide_after` when it is set.
    pub(crate) fn judged_analysis(&self) -> AnalysisConfig {
        match self.decide_after {
            Some(first) => self.analysis.looking_from(first),
            None => self.analysis,
        }
    }

    /// Whether a look is due after `done` cycles, and which look it is.
    fn look_after(&self, analysis: &AnalysisConfig, done: u64) -> Option<Look> {
        let last = done >= self.cycles;
        let due = analysis.looks.due(done) || (last && analysis.looks != Looks::End);
        due.then(|| Look { index: analysis.looks.index(done, last), last })
    }
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            cycles: 100,
            decide_after: None,
            stop_on_exact_leak: false,
            sample_every: 1,
            check_every: 1,
            settle: Settle::SAMPLES,
            // Handles are released by the threads that own them, sometimes well after close
            // returned (a store that finishes closing on another thread); clean cycles pay
            // nothing for the wait.
            handle_settle: Settle { timeout: std::time::Duration::from_secs(2), ..Settle::default() },
            handle_quiet: DEFAULT_HANDLE_QUIET,
            analysis: AnalysisConfig::default(),
            plan: FaultPlan::none(),
            seed: 0,
            keep_records: true,
            matrix_repeats: 6,
            allocator_check: native_allocations_visible,
            generations: true,
        }
    }
}

/// The harness could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The plan names a point the store does not have.
    #[error(transparent)]
    Plan(#[from] FaultPlanError),
    /// The store's data directory cannot be watched.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The store could not be set up (its causes follow as the error's source chain).
    #[error("cannot set up the store: {0}")]
    Setup(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A run's result: every cycle, the samples and the verdicts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HarnessReport {
    /// Cycles run.
    pub cycles_run: u64,
    /// The fault plan, as text.
    pub plan: String,
    /// The seed.
    pub seed: u64,
    /// Before the first open.
    pub baseline: Sample,
    /// After the last close.
    pub last: Sample,
    /// One record per cycle.
    pub records: Vec<CycleRecord>,
    /// The settled samples (every `sample_every` cycles).
    pub samples: Vec<CycleSample>,
    /// The verdict per signal, integrity and swallowed close errors included.
    pub verdict: RunVerdict,
    /// The ledger's report after the last cycle.
    pub ledger: LeakReport,
    /// Why the run ended before its cycles, when it did.
    pub stopped: Option<Stopped>,
    /// The first cycle (0-based) the run's verdict was a leak: an exact signal's first residue,
    /// or the look that first judged a statistical leak.
    pub first_leak_cycle: Option<u64>,
    /// What each cycle's allocations still hold at the end ([`HarnessConfig::generations`]).
    #[serde(default)]
    pub generations: GenerationsReport,
}

/// Why a run ended before its cycles.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stopped {
    /// An exact signal left a residue that outlived its settle
    /// ([`HarnessConfig::stop_on_exact_leak`]).
    ExactLeak {
        /// The signal.
        signal: SignalId,
        /// The cycle (0-based) the run stopped after.
        cycle: u64,
    },
    /// The observer stopped the run (an interrupt, the duration's end, an error).
    Asked {
        /// The cycle (0-based) the run stopped after.
        cycle: u64,
    },
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::ExactLeak { signal, cycle } => write!(
                f,
                "stopped after cycle {}: {signal} left a residue that outlived its settle, so the verdict is a leak \
                 whatever later cycles do",
                cycle + 1
            ),
            Stopped::Asked { cycle } => write!(f, "stopped after cycle {}", cycle + 1),
        }
    }
}

/// What the observer sees after each cycle.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The cycle just finished.
    pub record: &'a CycleRecord,
    /// Its sample, if one was taken.
    pub sample: Option<&'a CycleSample>,
    /// The samples kept so far (every one in a run that keeps its records; a bounded, evenly
    /// thinned set in a long soak).
    pub samples: &'a [CycleSample],
    /// The run's analysis so far: [`Analysis::current`] is the verdict between looks.
    pub analysis: &'a Analysis,
    /// The verdict of the look taken after this cycle, when one was due.
    pub judged: Option<&'a RunVerdict>,
    /// The first cycle the run's verdict was a leak, so far ([`HarnessReport::first_leak_cycle`]).
    pub first_leak_cycle: Option<u64>,
}

/// The most samples a soak keeps in memory (for its plots): every sample is in samples.csv and
/// in the analysis; the kept ones are thinned evenly as the run grows.
pub const MAX_SOAK_SAMPLES: usize = 4096;

/// Samples kept, at most `max`: when full, every other one is dropped and only every `stride`-th
/// sample after it is kept, so the kept ones stay evenly spread over the run.
#[derive(Debug)]
struct Thinned {
    kept: Vec<CycleSample>,
    max: usize,
    stride: u64,
    seen: u64,
}

impl Thinned {
    fn new(max: usize) -> Self {
        Thinned { kept: Vec::new(), max: max.max(2), stride: 1, seen: 0 }
    }

    fn push(&mut self, s: CycleSample) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(s);
            if self.kept.len() >= self.max {
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    fn kept(&self) -> &[CycleSample] {
        &self.kept
    }

    fn into_vec(self) -> Vec<CycleSample> {
        self.kept
    }
}

static QUIET_INJECTED_PANICS: Once = Once::new();

/// Injected panics are expected: keep them out of stderr, pass every other panic on.
fn quiet_injected_panics() {
    QUIET_INJECTED_PANICS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<InjectedPanic>() {
                previous(info);
            }
        }));
    });
}

type Payload = Box<dyn std::any::Any + Send>;

/// A phase's raw outcome, holding what the store produced (its error, a panic's payload) so
/// that it can be described by the bookkeeping and dropped by the store side.
enum Raw<E> {
    Ok,
    Err(E),
    Panic(Payload),
    Skipped,
}

fn raw<E>(f: impl FnOnce() -> Result<(), E>) -> Raw<E> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Raw::Ok,
        Ok(Err(e)) => Raw::Err(e),
        Err(p) => Raw::Panic(p),
    }
}

fn panic_text(payload: &Payload) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .or_else(|| payload.downcast_ref::<InjectedPanic>().map(InjectedPanic::to_string))
        .unwrap_or_else(|| "panic with a non-string payload".to_string())
}

fn describe<E: fmt::Display>(r: &Raw<E>) -> Phase {
    match r {
        Raw::Ok => Phase::Ok,
        Raw::Err(e) => Phase::Error(e.to_string()),
        Raw::Panic(p) => Phase::Panic(panic_text(p)),
        Raw::Skipped => Phase::Skipped,
    }
}

/// The harness's own heap use on its thread: per-cycle records and samples grow with the run,
/// and would otherwise look like a leak of the store under test. Every bookkeeping step runs
/// inside [`Bookkeeping::track`], which adds what it retained (jemalloc's per-thread allocated
/// minus deallocated); the samples carry the total so the verdict can subtract it. Objects the
/// store made (its errors, panic payloads, integrity reports) are described inside `track` but
/// dropped outside it, so their release is not mistaken for the harness's.
struct Bookkeeping {
    counters: Option<ThreadCounters>,
    net: i64,
}

impl Bookkeeping {
    fn new() -> Self {
        Bookkeeping { counters: ThreadCounters::current().ok(), net: 0 }
    }

    fn track<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let before = self.counters.as_ref().map(ThreadCounters::net);
        let out = crate::probe::generations::bookkeeping(f);
        if let (Some(c), Some(b)) = (&self.counters, before) {
            self.net += c.net() - b;
        }
        out
    }

    fn bytes(&self) -> Option<i64> {
        self.counters.as_ref().map(|_| self.net)
    }
}

/// How long the handle check waits once a leak is established (see
/// [`HarnessConfig::handle_settle`]): covers a worker thread still unwinding.
pub(crate) const SHORT_SETTLE: Settle = Settle {
    timeout: std::time::Duration::from_millis(25),
    initial_backoff: std::time::Duration::from_millis(1),
    max_backoff: std::time::Duration::from_millis(50),
    ..Settle::SAMPLES
};

/// Whether the long waits for deferred releases are still worth it: they stop once one of them
/// ran to its end with something still retained (a leak, established; waiting again each cycle
/// would only slow its run).
#[derive(Debug, Clone, Copy)]
struct Patience {
    patient: bool,
}

impl Patience {
    fn handle_settle(&self, cfg: &HarnessConfig) -> Settle {
        if self.patient {
            cfg.handle_settle
        } else {
            SHORT_SETTLE
        }
    }

    fn sample_settle(&self, cfg: &HarnessConfig) -> Settle {
        let mut s = cfg.settle;
        if !self.patient {
            s.pending_timeout = std::time::Duration::ZERO;
        }
        s
    }
}

/// Drives [`Lifecycle`]s.
#[derive(Debug, Clone, Default)]
pub struct Harness {
    /// Settings.
    pub config: HarnessConfig,
}

impl Harness {
    /// A harness with these settings.
    pub fn new(config: HarnessConfig) -> Self {
        Harness { config }
    }

    /// Runs the configured cycles.
    ///
    /// # Errors
    /// When the plan names an unknown point or the data directory cannot be watched.
    pub fn run<L: Lifecycle>(&self, store: &mut L, ledger: &Ledger) -> Result<HarnessReport, HarnessError> {
        self.run_observed(store, ledger, |_| ControlFlow::Continue(()))
    }

    /// Runs the configured cycles, calling `observe` after each; it may stop the run early.
    ///
    /// # Errors
    /// When the plan names an unknown point or the data directory cannot be watched.
    pub fn run_observed<L: Lifecycle>(
        &self,
        store: &mut L,
        ledger: &Ledger,
        mut observe: impl FnMut(&Progress<'_>) -> ControlFlow<()>,
    ) -> Result<HarnessReport, HarnessError> {
        let cfg = &self.config;
        cfg.plan.validate(&store.fault_points())?;
        quiet_injected_panics();
        let faults = Faults::new(&cfg.plan, cfg.seed);
        let probe = match store.data_dir() {
            Some(dir) => Probe::new().watch_dir(dir)?,
            None => Probe::new(),
        };
        let unavailable = (cfg.allocator_check)().err().map(|e| e.to_string());
        let mut run = Run::start(store, ledger, cfg, probe);
        run.bytes_visible = unavailable.is_none();
        for cycle in 0..cfg.cycles {
            if run.cycle(store, &faults, cycle, &mut observe).is_break() {
                break;
            }
        }
        Ok(run.finish(store, unavailable))
    }

    /// The automatic fault matrix: one recording cycle finds every fault point a clean cycle
    /// passes; then, after the warm-up's clean cycles, each plan of `matrix_plans` (each point
    /// failing always, on its 2nd call, or panicking; each pair failing) runs
    /// `matrix_repeats` times, each time followed by a clean cycle. Every cycle is checked for
    /// zero retained handles, no swallowed close error and intact data; and each plan's bytes:
    /// the change in unexplained bytes over its cycle and the clean one after it (so memory a
    /// failure holds only until the next cycle does not count) against the same change over two
    /// clean cycles (a pair after every third plan), as a Hodges-Lehmann shift per cycle under
    /// the plan, a leak above `tolerances.bytes_per_firing` at the run's error rate split over
    /// the plans.
    pub fn fault_matrix<L: Lifecycle>(&self, store: &mut L, ledger: &Ledger) -> MatrixReport {
        quiet_injected_panics();
        let cfg = &self.config;
        // The bytes need no directory; a directory that cannot be watched only loses the
        // per-directory counts, which the matrix does not judge.
        let probe = store.data_dir().and_then(|d| Probe::new().watch_dir(d).ok()).unwrap_or_default();
        let bytes_visible = (cfg.allocator_check)().is_ok();
        let recorder = Faults::recording(&FaultPlan::none(), cfg.seed);
        let mut c = Cycler::new(ledger, cfg);
        let discovery = c.cycle(store, &recorder, 0);
        let points: BTreeSet<String> = recorder.passed().into_keys().collect();
        let plans = matrix_plans(&points);
        let clean = Faults::new(&FaultPlan::none(), cfg.seed);
        let mut cycle = 1;
        let mut run = |store: &mut L, faults: &Faults, c: &mut Cycler<'_>| {
            let record = c.cycle(store, faults, cycle);
            cycle += 1;
            record
        };
        let level = |store: &L, bk: &Bookkeeping| -> Option<f64> {
            let mut s = probe.settle(cfg.settle, None).sample;
            s.rocksdb = store.rocksdb_memory();
            s.bookkeeping_bytes = bk.bytes();
            s.unexplained_bytes().filter(|_| bytes_visible).map(|v| v as f64)
        };
        // Per plan: its first cycle, replaced by the first unclean one (so the entry is clean
        // exactly when the record it keeps is).
        let mut kept: Vec<Option<CycleRecord>> = vec![None; plans.len()];
        let mut changes: Vec<Vec<f64>> =
            c.bk.track(|| vec![Vec::with_capacity(cfg.matrix_repeats as usize); plans.len()]);
        let mut reference: Vec<f64> =
            c.bk.track(|| Vec::with_capacity(cfg.matrix_repeats as usize * plans.len() / 3 + 1));
        let mut warmup_unclean = None;
        let judged = cfg.matrix_repeats >= MIN_MATRIX_REPEATS;
        if judged {
            for _ in 0..cfg.analysis.warmup_cycles {
                let r = run(store, &clean, &mut c);
                keep_if_unclean(&mut c.bk, &mut warmup_unclean, r);
            }
        }
        for round in 0..cfg.matrix_repeats.max(1) {
            for (i, plan) in plans.iter().enumerate() {
                let before = level(store, &c.bk);
                // The plan's state and the records are the harness's memory: made, kept or
                // dropped inside its bookkeeping, before the level is read.
                let faults = c.bk.track(|| Faults::new(plan, cfg.seed.wrapping_add(u64::from(round))));
                let record = run(store, &faults, &mut c);
                let after_clean = run(store, &clean, &mut c);
                c.bk.track(|| {
                    drop(faults);
                    for r in [record, after_clean] {
                        if kept[i].as_ref().is_none_or(|k| record_clean(k) && !record_clean(&r)) {
                            kept[i] = Some(r);
                        }
                    }
                });
                let after = level(store, &c.bk);
                if let Some(d) = before.zip(after).map(|(b, a)| a - b) {
                    c.bk.track(|| changes[i].push(d));
                }
                if judged && i % 3 == 2 {
                    let before = level(store, &c.bk);
                    for _ in 0..2 {
                        let r = run(store, &clean, &mut c);
                        keep_if_unclean(&mut c.bk, &mut warmup_unclean, r);
                    }
                    if let Some(d) = before.zip(level(store, &c.bk)).map(|(b, a)| a - b) {
                        c.bk.track(|| reference.push(d));
                    }
                }
            }
        }
        let measured = Measured { judged, changes, reference };
        let entries = matrix_entries(cfg, &plans, &measured, kept, &discovery);
        MatrixReport { points: points.into_iter().collect(), discovery, entries, clean_cycles_unclean: warmup_unclean }
    }
}

/// A run in progress ([`Harness::run_observed`]): what it keeps of the cycles so far.
struct Run<'a> {
    c: Cycler<'a>,
    cfg: &'a HarnessConfig,
    judged_cfg: AnalysisConfig,
    probe: Probe,
    records: Vec<CycleRecord>,
    samples: Thinned,
    analysis: Analysis,
    /// The verdict of the last look.
    judged: Option<RunVerdict>,
    cycles_run: u64,
    stopped: Option<Stopped>,
    first_leak_cycle: Option<u64>,
    shared: SharedBaseline,
    baseline: Sample,
    /// Native allocations show in jemalloc's counters (and so in the generations' record).
    bytes_visible: bool,
}

/// `s` with RocksDB's figures for `store`.
fn with_rocksdb<L: Lifecycle>(store: &L, mut s: Sample) -> Sample {
    s.rocksdb = store.rocksdb_memory();
    s
}

impl<'a> Run<'a> {
    /// Before the first cycle: the baseline sample, and the harness's records made inside its
    /// bookkeeping.
    fn start<L: Lifecycle>(store: &L, ledger: &'a Ledger, cfg: &'a HarnessConfig, probe: Probe) -> Self {
        let mut judged_cfg = cfg.judged_analysis();
        judged_cfg.instances_per_cycle = store.instances_per_cycle();
        let mut c = Cycler::new(ledger, cfg);
        let records =
            c.bk.track(|| Vec::with_capacity(if cfg.keep_records { cfg.cycles.min(10_000) as usize } else { 0 }));
        let samples = c.bk.track(|| Thinned::new(if cfg.keep_records { usize::MAX } else { MAX_SOAK_SAMPLES }));
        let mut analysis = c.bk.track(|| Analysis::new(judged_cfg));
        let mut baseline = with_rocksdb(store, probe.settle(cfg.settle, None).sample);
        baseline.bookkeeping_bytes = c.bk.bytes();
        c.bk.track(|| analysis.baseline(&baseline));
        Run {
            c,
            cfg,
            judged_cfg,
            probe,
            records,
            samples,
            analysis,
            judged: None,
            cycles_run: 0,
            stopped: None,
            first_leak_cycle: None,
            shared: SharedBaseline::default(),
            baseline,
            bytes_visible: false,
        }
    }

    /// One cycle, its sample when one is due, the look when one is due, and the observer;
    /// `Break` when the observer stops the run or check's verdict is decided.
    fn cycle<L: Lifecycle>(
        &mut self,
        store: &mut L,
        faults: &Faults,
        cycle: u64,
        observe: &mut impl FnMut(&Progress<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let cfg = self.cfg;
        let mut record = self.c.cycle(store, faults, cycle);
        let ledger = self.c.ledger;
        self.c.bk.track(|| {
            self.shared.observe(ledger, &mut record);
            self.analysis.record(&record.facts());
        });
        let sampled = cycle.is_multiple_of(cfg.sample_every.max(1)).then(|| self.sample(store, cycle, &record));
        self.cycles_run += 1;
        let look = cfg.look_after(&self.judged_cfg, cycle + 1);
        if let Some(look) = look {
            // The verdict it replaces is dropped inside the bookkeeping too.
            self.c.bk.track(|| self.judged = Some(self.analysis.look(look)));
        }
        // Asked only while its answer is used: to stop, or until the first leak is known.
        let exact_leak =
            (cfg.stop_on_exact_leak || self.first_leak_cycle.is_none()).then(|| self.analysis.exact_leak()).flatten();
        if self.first_leak_cycle.is_none() {
            let judged_leak = look.is_some() && self.judged.as_ref().is_some_and(|v| v.verdict == Verdict::Leak);
            if exact_leak.is_some() || judged_leak {
                self.first_leak_cycle = Some(cycle);
            }
        }
        // The observer runs outside the bookkeeping: what it keeps is not the harness's, and
        // must not be subtracted from the bytes judged.
        let progress = Progress {
            record: &record,
            sample: sampled.as_ref(),
            samples: self.samples.kept(),
            analysis: &self.analysis,
            judged: self.judged.as_ref().filter(|_| look.is_some()),
            first_leak_cycle: self.first_leak_cycle,
        };
        // Decided at a look: the verdict, or, where only the counter's growth rule is undecided, a
        // record of the judged cycles that already settles their bytes (what the end's record,
        // after the store lets go, would judge clean). Not while a stack of the record may yet
        // turn out to have stopped taking: more cycles tell.
        let warmup = self.judged_cfg.warmup_cycles as u64;
        let decided = cfg.decide_after.is_some()
            && look.is_some()
            && self.judged.as_ref().is_some_and(|v| match v.verdict {
                Verdict::Leak => true,
                Verdict::Clean => !self.c.bk.track(|| self.c.gens.stop_undecided(warmup)),
                Verdict::Inconclusive => {
                    self.bytes_visible
                        && v.undecided_only_by_the_counter()
                        && self.c.bk.track(|| self.c.gens.settled(warmup))
                }
            });
        // The observer is the caller's monitoring (the runner's progress and reports), not the
        // store: what it allocates is not charged to the cycle's generation.
        let asked = crate::probe::generations::bookkeeping(|| observe(&progress)).is_break();
        let exact = exact_leak.filter(|_| cfg.stop_on_exact_leak);
        let stop = asked || decided || exact.is_some();
        // A stop is recorded when it cuts the run short of its cycles; check's decision at its
        // look is its rule, not a stop.
        if stop && cycle + 1 < cfg.cycles {
            self.stopped = match exact {
                _ if asked => Some(Stopped::Asked { cycle }),
                Some(v) => Some(Stopped::ExactLeak { signal: v.signal, cycle }),
                None => None,
            };
        }
        self.c.bk.track(|| {
            if let Some(s) = sampled {
                self.samples.push(s);
            }
            if cfg.keep_records {
                self.records.push(record);
            }
        });
        if stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The settled sample after `record`'s cycle, given to the analysis. A sample that holds
    /// more files than the baseline makes later settles impatient (a leak is established).
    fn sample<L: Lifecycle>(&mut self, store: &L, cycle: u64, record: &CycleRecord) -> CycleSample {
        let settled = self.probe.settled_sample_towards(self.c.patience.sample_settle(self.cfg), &self.baseline);
        if settled.sample.holds_more_files_than(&self.baseline) {
            self.c.patience.patient = false;
        }
        let mut s = with_rocksdb(store, settled.sample);
        s.bookkeeping_bytes = self.c.bk.bytes();
        let sample = self.c.bk.track(|| CycleSample::new(cycle, s, record.retained_handles.clone(), settled.settled));
        self.c.bk.track(|| self.analysis.sample(&sample));
        sample
    }

    /// After the last cycle: the last sample and the last look (the one the run stopped at,
    /// judged again as the last, which can only turn growth evidenced below the budget from
    /// inconclusive to clean; else one more), then the record of what the cycles still hold
    /// once the store lets go.
    fn finish<L: Lifecycle>(mut self, store: &mut L, unavailable: Option<String>) -> HarnessReport {
        let cfg = self.cfg;
        let mut last = with_rocksdb(store, self.probe.settle(cfg.settle, None).sample);
        last.bookkeeping_bytes = self.c.bk.bytes();
        let mut verdict = crate::probe::generations::bookkeeping(|| self.last_look(&last, unavailable.clone()));
        // The ledger as the run left it (declared-shared handles still listed), then the store lets
        // go of what it keeps across cycles, and what the cycles still hold after that is theirs.
        let ledger = self.c.bk.track(|| self.c.ledger.report());
        let warmup = self.judged_cfg.warmup_cycles as u64;
        if unavailable.is_none() && self.c.gens.recorded() {
            // What the cycles held when the counter was last read, where its leaks would be.
            crate::probe::generations::bookkeeping(|| self.record_holds(&mut verdict, warmup));
            if catch_unwind(AssertUnwindSafe(|| store.let_go())).is_err() {
                self.c.gens.let_go_panicked();
            }
            self.probe.settle(cfg.settle, None);
            // A declared-shared handle still alive (a cache the store did not let go of) may hold
            // what many cycles allocated, from one stack: retained_bytes is then shown, not judged.
            let shared =
                self.c.bk.track(|| self.c.ledger.report().declared_shared.iter().map(|g| g.count).sum::<u64>());
            if shared > 0 {
                self.c.gens.shared_still_alive(shared);
            }
        }
        // What the generations hold once the last cycle settled; everything after is the harness's.
        let (generations, retained) = self.c.bk.track(|| match &unavailable {
            // Native allocations not visible (or treated so): the generations judge nothing either.
            Some(reason) => {
                let notice = format!("allocation generations unused: {reason}");
                (GenerationsReport { notice: Some(notice), ..GenerationsReport::default() }, None)
            }
            None => (self.c.gens.report(MAX_GENERATIONS_LISTED), self.c.gens.retained(warmup)),
        });
        crate::probe::generations::bookkeeping(|| self.report(last, verdict, ledger, generations, retained))
    }

    /// The last look, after the last sample.
    fn last_look(&mut self, last: &Sample, unavailable: Option<String>) -> RunVerdict {
        self.analysis.last(last);
        let done = self.cycles_run;
        let index = match self.cfg.look_after(&self.judged_cfg, done) {
            Some(look) => look.index,
            None => self.judged_cfg.looks.index(done, true),
        };
        let mut verdict = self.analysis.look(Look::last(index));
        if let Some(reason) = unavailable {
            verdict.mark_bytes_unavailable(reason);
        }
        verdict
    }

    /// Notes, on each leak the counter's growth rule found, what the cycles it grew over (those
    /// the record judges, from `warmup`) hold now.
    fn record_holds(&self, verdict: &mut RunVerdict, warmup: u64) {
        let Some(to) = self.c.gens.last_judged() else {
            return;
        };
        for (signal, first, last, would) in self.analysis.leaks_would_hold(verdict, warmup.min(to), to) {
            if let Some(bytes) = self.c.gens.held_bytes(first, last) {
                let holds =
                    crate::verdict::RecordHolds { from_cycle: first, to_cycle: last, bytes, leak_would_hold: would };
                verdict.note_record_holds(&signal, holds);
            }
        }
    }

    /// The report, with the record's verdict added to the last look's.
    fn report(
        self,
        last: Sample,
        mut verdict: RunVerdict,
        ledger: LeakReport,
        generations: GenerationsReport,
        retained: Option<crate::verdict::Retained>,
    ) -> HarnessReport {
        if let Some(r) = retained {
            let mut v = crate::verdict::retained::verdict(r);
            // What a cache still alive holds may look like a leak: such a leak is shown, not judged.
            // A clean record is clean with it counted.
            v.informational |= generations.shared_alive > 0 && v.verdict == Verdict::Leak;
            verdict.add_retained(v);
        }
        HarnessReport {
            cycles_run: self.cycles_run,
            plan: self.cfg.plan.to_string(),
            seed: self.cfg.seed,
            baseline: self.baseline,
            last,
            records: self.records,
            samples: self.samples.into_vec(),
            verdict,
            ledger,
            stopped: self.stopped,
            first_leak_cycle: self.first_leak_cycle,
            generations,
        }
    }
}

/// What the fault matrix measured: per plan, the change in unexplained bytes over each of its
/// cycles and the clean one after; the same over pairs of clean cycles; whether bytes are judged.
struct Measured {
    judged: bool,
    changes: Vec<Vec<f64>>,
    reference: Vec<f64>,
}

/// One entry per plan: the record it keeps (its first unclean cycle, else its first) and its
/// bytes against the clean pairs', at the run's error rate split over the plans.
fn matrix_entries(
    cfg: &HarnessConfig,
    plans: &[FaultPlan],
    m: &Measured,
    mut kept: Vec<Option<CycleRecord>>,
    discovery: &CycleRecord,
) -> Vec<MatrixEntry> {
    let alpha = cfg.analysis.signal_alpha(1) / plans.len().max(1) as f64;
    let tolerance = cfg.analysis.tolerances.bytes_per_firing;
    let enough = |v: &[f64]| v.len() >= MIN_MATRIX_REPEATS as usize;
    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let bytes = (m.judged && enough(&m.changes[i]) && enough(&m.reference))
                .then(|| matrix_bytes(&plan.to_string(), &m.changes[i], &m.reference, tolerance, alpha));
            let record = kept[i].take().unwrap_or_else(|| discovery.clone());
            let leaks_bytes = bytes.as_ref().is_some_and(|b| b.verdict == Verdict::Leak);
            MatrixEntry {
                plan: plan.to_string(),
                clean: record_clean(&record) && !leaks_bytes,
                record,
                bytes,
                repeats: cfg.matrix_repeats.max(1),
            }
        })
        .collect()
}

/// A plan's bytes per cycle beyond clean cycles (the difference of the means, Welch's interval)
/// against `tolerance`.
fn matrix_bytes(plan: &str, changes: &[f64], reference: &[f64], tolerance: f64, alpha: f64) -> SignalVerdict {
    let mut v = SignalVerdict::undecided(SignalId::member(Signal::MatrixBytes, plan), Rule::Shift { tolerance, alpha });
    v.cycles = changes.len();
    if let Some(e) = mean_shift(changes, reference, alpha) {
        v.estimate = Some(e);
        v.verdict = shift_verdict(e, tolerance);
    }
    v
}

/// Keeps `r` in `slot` if it is the first unclean one, else drops it, inside the bookkeeping.
fn keep_if_unclean(bk: &mut Bookkeeping, slot: &mut Option<CycleRecord>, r: CycleRecord) {
    bk.track(|| {
        if !record_clean(&r) && slot.is_none() {
            *slot = Some(r);
        }
    });
}

/// The fewest repeats of a plan (and clean pairs) that the matrix judges bytes from.
pub const MIN_MATRIX_REPEATS: u32 = 5;

fn record_clean(r: &CycleRecord) -> bool {
    r.retained_handles.is_empty()
        && r.swallowed_close_errors == 0
        && r.unshared_caches_open == 0
        && r.declared_shared_growth == 0
        && r.integrity.total_violations() == 0
}

/// What a run carries from cycle to cycle: the harness's bookkeeping, the swallowed close errors
/// counted so far, and how patient the settles still are.
struct Cycler<'a> {
    ledger: &'a Ledger,
    cfg: &'a HarnessConfig,
    bk: Bookkeeping,
    swallowed_total: usize,
    patience: Patience,
    release: ReleaseWatch,
    gens: generations::RunGenerations,
}

impl<'a> Cycler<'a> {
    fn new(ledger: &'a Ledger, cfg: &'a HarnessConfig) -> Self {
        Cycler {
            ledger,
            cfg,
            bk: Bookkeeping::new(),
            swallowed_total: ledger.swallowed_count(),
            patience: Patience { patient: true },
            release: ReleaseWatch::default(),
            gens: generations::RunGenerations::start(cfg.generations, cfg.analysis.warmup_cycles as u64),
        }
    }

    /// Runs one cycle of `store` (open, work, close, the handle settle, the integrity check)
    /// and records it.
    fn cycle<L: Lifecycle>(&mut self, store: &mut L, faults: &Faults, cycle: u64) -> CycleRecord {
        let (ledger, cfg) = (self.ledger, self.cfg);
        self.gens.cycle_begins(cycle);
        let peak_rises = ledger.peak_rises();
        faults.set_cycle(cycle);
        let ctx = CycleCtx { cycle, ledger, faults };
        let mut work = Raw::Skipped;
        let mut close = Raw::Skipped;
        let mut unshared = 0;
        let mut unshared_sites = Vec::new();
        let open = match catch_unwind(AssertUnwindSafe(|| store.open(&ctx))) {
            Ok(Ok(mut opened)) => {
                work = raw(|| store.work(&mut opened, &ctx));
                unshared = unshared_caches(ledger);
                if unshared > 0 {
                    unshared_sites = unshared_cache_sites(ledger);
                }
                self.bk.track(|| self.release.closing());
                // Close runs whatever work did: it is the release path.
                close = raw(|| store.close(opened, &ctx));
                Raw::Ok
            }
            Ok(Err(e)) => Raw::Err(e),
            Err(p) => Raw::Panic(p),
        };
        if !matches!(open, Raw::Ok) {
            // A failed open is the release path of what it made.
            self.bk.track(|| self.release.closing());
        }
        let phases = self.bk.track(|| (describe(&open), describe(&work), describe(&close)));
        drop((open, work, close));
        let settle = self.patience.handle_settle(cfg);
        let release = &mut self.release;
        let retained_handles = self.bk.track(|| release.wait(ledger, settle, cfg.handle_quiet));
        // A mark raised by handles the cycle never gave back is a leak's, not a high-water mark.
        if ledger.peak_rises() != peak_rises && retained_handles.is_empty() {
            self.gens.handles_peaked(cycle);
        }
        if !retained_handles.is_empty() {
            self.patience.patient = false;
        }
        let checked = (cfg.check_every > 0 && cycle.is_multiple_of(cfg.check_every))
            .then(|| catch_unwind(AssertUnwindSafe(|| store.check(&ctx))));
        let integrity = self.bk.track(|| integrity_of(&checked));
        drop(checked);
        self.bk.track(|| {
            let swallowed_now = ledger.swallowed_count();
            let swallowed_close_errors = swallowed_now.saturating_sub(self.swallowed_total);
            self.swallowed_total = swallowed_now;
            let (open, work, close) = phases;
            CycleRecord {
                cycle,
                open,
                work,
                close,
                faults_fired: faults.take_fired(),
                retained_handles,
                swallowed_close_errors,
                unshared_caches_open: unshared,
                unshared_cache_sites: unshared_sites,
                declared_shared_growth: 0,
                declared_shared_growth_sites: Vec::new(),
                integrity,
            }
        })
    }
}

/// The creation sites of the caches and write buffer managers retained while the store is open.
fn unshared_cache_sites(ledger: &Ledger) -> Vec<String> {
    let caches = [HandleKind::Cache, HandleKind::WriteBufferManager];
    ledger
        .report()
        .retained
        .into_iter()
        .filter(|g| caches.iter().any(|k| g.kind == *k))
        .filter_map(|g| g.site)
        .collect()
}

/// What the store's integrity check found (a panic in it is a violation of its own).
fn integrity_of(checked: &Option<std::thread::Result<Integrity>>) -> Integrity {
    match checked {
        None => Integrity::default(),
        Some(Ok(i)) => i.clone(),
        Some(Err(p)) => {
            let mut i = Integrity::default();
            i.violation("check_panics", 1);
            i.problem(format!("integrity check panicked: {}", panic_text(p)));
            i
        }
    }
}

/// The handles declared shared after the first cycle: the baseline a store's shared set must not
/// grow past.
#[derive(Default)]
struct SharedBaseline {
    /// How many handles were declared shared and live after the first cycle, and their ids
    /// (empty at counts depth, where the ledger keeps no entries).
    first: Option<(u64, BTreeSet<u64>)>,
}

impl SharedBaseline {
    fn observe(&mut self, ledger: &Ledger, record: &mut CycleRecord) {
        let live: u64 = ledger.kind_snapshot().values().map(|c| c.declared_shared).sum();
        let Some((first_live, first_ids)) = &self.first else {
            let ids = ledger.report().declared_shared.iter().flat_map(|g| g.ids.iter().copied()).collect();
            self.first = Some((live, ids));
            return;
        };
        record.declared_shared_growth = live.saturating_sub(*first_live);
        if record.declared_shared_growth > 0 {
            // Where the newcomers were made: the groups holding ids the first cycle did not have.
            for g in ledger.report().declared_shared {
                let new = g.ids.iter().filter(|id| !first_ids.contains(id)).count();
                if let (Some(site), true) = (g.site, new > 0) {
                    record.declared_shared_growth_sites.push(format!("{site} (x{new})"));
                }
            }
        }
    }
}

fn unshared_caches(ledger: &Ledger) -> u64 {
    use crate::HandleKind;
    let kinds = ledger.kind_snapshot();
    [HandleKind::Cache, HandleKind::WriteBufferManager]
        .iter()
        .filter_map(|k| kinds.get(k))
        .map(|c| c.live.saturating_sub(c.declared_shared))
        .sum()
}

/// One plan of the fault matrix and what its cycle left behind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MatrixEntry {
    /// The plan.
    pub plan: String,
    /// Zero retained handles, no swallowed close error and intact data after every cycle of the
    /// plan and the clean cycle after it, and its bytes not a leak.
    pub clean: bool,
    /// The first cycle that was not clean, else the plan's first cycle.
    pub record: CycleRecord,
    /// Bytes per cycle under the plan against clean cycles (None: too few repeats, or native
    /// allocations not visible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<SignalVerdict>,
    /// Cycles run under the plan.
    #[serde(default)]
    pub repeats: u32,
}

/// The fault matrix's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MatrixReport {
    /// Fault points a clean cycle passes.
    pub points: Vec<String>,
    /// The clean recording cycle.
    pub discovery: CycleRecord,
    /// One entry per plan.
    pub entries: Vec<MatrixEntry>,
    /// The first clean cycle (of the warm-up or a reference pair) that was not clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_cycles_unclean: Option<CycleRecord>,
}

impl MatrixReport {
    /// Plans whose cycle was not clean.
    pub fn failures(&self) -> Vec<&MatrixEntry> {
        self.entries.iter().filter(|e| !e.clean).collect()
    }

    /// The matrix's verdict: clean when the discovery cycle and every entry are.
    pub fn verdict(&self) -> Verdict {
        if record_clean(&self.discovery) && self.clean_cycles_unclean.is_none() && self.failures().is_empty() {
            Verdict::Clean
        } else {
            Verdict::Leak
        }
    }
}
