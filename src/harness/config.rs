//! The harness's settings and the errors that keep a run from starting.

use crate::fault::{FaultPlan, FaultPlanError};
use crate::ledger::Settle;
use crate::probe::ProbeError;
use crate::verdict::{AnalysisConfig, Look, Looks};

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
    /// The run's planned end: before it, only exact signals (handles, files and maps under the
    /// store's directory, swallowed close errors, integrity) may call a leak; a statistical one's
    /// leak (the byte signals, `retained_bytes` included) is held inconclusive, to be judged at the
    /// planned end, when a bound the run has not yet seen may have shown. Looks after it may call
    /// leaks. `None` (the default): [`decide_after`](HarnessConfig::decide_after), else
    /// [`cycles`](HarnessConfig::cycles).
    pub planned_end: Option<u64>,
    /// `leakcheck check`'s early look, at this many cycles (before
    /// [`decide_after`](HarnessConfig::decide_after)): it stops the run only clean, and only when
    /// nothing is in question. The look's verdict is clean; no stacked site of the record holds
    /// old residue from a cycle of the later half and no question is open (a leak recurring
    /// at a stack that gives nothing back in 1 of 9 cycles or more often would have left some
    /// there, at 100 cycles); and no judged count of descriptors, maps or threads has its later
    /// half above its first (one descriptor kept anywhere in the judged cycles does). Anything else
    /// goes on to `decide_after` as if the early look had not been: it calls no leak, so it
    /// spends none of the false-positive rate. `None` (the default): no early look.
    pub early_look: Option<u64>,
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
    /// Keep every cycle's full record in the report. Off (a long soak), each record goes to the
    /// observer and none is kept.
    pub keep_records: bool,
    /// [`Harness::fault_matrix`](super::Harness::fault_matrix): cycles run under each plan, to judge its bytes against clean
    /// cycles (at least [`MIN_MATRIX_REPEATS`](super::MIN_MATRIX_REPEATS); fewer skips the bytes judgement).
    pub matrix_repeats: u32,
    /// Run before the first cycle: proves that native (C and C++) allocations show in jemalloc's
    /// counters. When it fails, the byte signals are unavailable and the run cannot be clean
    /// (`RunVerdict::mark_bytes_unavailable`). Default: [`native_allocations_visible`].
    pub allocator_check: fn() -> Result<(), ProbeError>,
    /// Record every allocation with the cycle that made it (jemalloc's allocation hooks, see
    /// `generations`), so that report.json's `generations` says what each cycle
    /// still holds. Default `true`; where the allocator cannot be hooked the run says why.
    pub generations: bool,
    /// Known leaks the run accepts ([`Suppressions`](crate::Suppressions)): handles and
    /// allocating stacks they match, within their bounds, are not judged, and the report lists
    /// them with their size.
    pub suppressions: crate::suppress::Suppressions,
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
    /// The cycles before which no statistical signal calls a leak ([`HarnessConfig::planned_end`]).
    pub(crate) fn planned_end(&self) -> u64 {
        self.planned_end.or(self.decide_after).unwrap_or(self.cycles)
    }

    /// The analysis the run is judged with: looks counted from `decide_after` when it is set.
    pub(crate) fn judged_analysis(&self) -> AnalysisConfig {
        match self.decide_after {
            Some(first) => self.analysis.looking_from(first),
            None => self.analysis,
        }
    }

    /// Whether a look is due after `done` cycles, and which look it is.
    pub(super) fn look_after(&self, analysis: &AnalysisConfig, done: u64) -> Option<Look> {
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
            planned_end: None,
            early_look: None,
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
            suppressions: crate::suppress::Suppressions::none(),
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
    /// The store's data directory did not exist and could not be made.
    #[error("cannot make the store's data directory {}: {source}", path.display())]
    DataDir {
        /// The directory (`Lifecycle::data_dir`).
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store could not be set up (its causes follow as the error's source chain).
    #[error("cannot set up the store: {0}")]
    Setup(#[source] Box<dyn std::error::Error + Send + Sync>),
}
