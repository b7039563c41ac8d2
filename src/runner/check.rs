//! [`check`]: one call in `cargo test`.

use std::path::PathBuf;

use super::drive::drive;
use super::plan::validate;
use super::{Mode, RunError, RunOptions, RunOutcome};
use crate::harness::Lifecycle;
use crate::ledger::Ledger;

/// A leak check of `store`, whose handles are registered in `ledger`, as `leakcheck check` runs
/// one: the store's default fault plan (or the one given), [`super::DEFAULT_CHECK_CYCLES`]
/// cycles, going on while the memory verdict is inconclusive (up to four times the cycles).
///
/// ```no_run
/// # fn doc<L: leakcheck::Lifecycle>(store: &mut L, ledger: &leakcheck::Ledger) -> Result<(), leakcheck::runner::RunError> {
/// leakcheck::check(store, ledger).cycles(200).faults("close.flush=10%").run()?.assert_clean();
/// # Ok(()) }
/// ```
///
/// The byte and OS signals are process-wide (jemalloc's counters, RSS, open files): a test
/// running beside it in the same process adds its allocations to them. **Put each such check in
/// an integration-test file of its own** (each file is its own process under `cargo test`;
/// `cargo nextest` runs every test in its own process anyway), and make the test binary
/// allocate through jemalloc (`#[global_allocator] static A: tikv_jemallocator::Jemalloc`) with
/// native allocations routed to it (rocksdb's `jemalloc` feature), or the byte signals are
/// unavailable and the verdict cannot be clean.
pub fn check<'a, L: Lifecycle>(store: &'a mut L, ledger: &'a Ledger) -> Check<'a, L> {
    Check { store, ledger, options: RunOptions::new(Mode::Check) }
}

/// A check being set up: [`check`].
#[must_use = "a check does nothing until run"]
pub struct Check<'a, L> {
    store: &'a mut L,
    ledger: &'a Ledger,
    options: RunOptions,
}

impl<L> std::fmt::Debug for Check<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("options", &self.options).finish_non_exhaustive()
    }
}

impl<L: Lifecycle> Check<'_, L> {
    /// Cycles to run before the first verdict (at least [`super::MIN_CYCLES`]).
    pub fn cycles(mut self, cycles: u64) -> Self {
        self.options.cycles = Some(cycles);
        self
    }

    /// How far to go on while the memory verdict is inconclusive (equal to the cycles: never).
    pub fn max_cycles(mut self, cycles: u64) -> Self {
        self.options.max_cycles = Some(cycles);
        self
    }

    /// The fault plan (`close.flush=10%,open.db=nth:2`, or `none`), instead of the store's
    /// default.
    pub fn faults(mut self, plan: impl Into<String>) -> Self {
        self.options.faults = Some(plan.into());
        self
    }

    /// Seed of the plan's probabilities.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = seed;
        self
    }

    /// Take a memory sample every this many cycles (default 1).
    pub fn sample_every(mut self, cycles: u64) -> Self {
        self.options.sample_every = Some(cycles);
        self
    }

    /// Profile the heap, one sample per `2^lg_sample` bytes (19 is jemalloc's default), and
    /// report the call stacks that grew ([`RunOptions::profile`]). Needs leakcheck's `profiling`
    /// feature and a test binary started with the profiler ready
    /// (`leakcheck::heap_profiling_ready!()` in the test file, or
    /// `MALLOC_CONF=prof:true,prof_active:false`).
    pub fn profile(mut self, lg_sample: u32) -> Self {
        self.options.profile = Some(lg_sample);
        self
    }

    /// Also write the report directory (report.json, samples.csv, plots, report.html) here.
    pub fn report(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.report = Some(dir.into());
        self
    }

    /// Runs every cycle asked even once the verdict cannot change: by default the check stops
    /// after the first cycle an exact signal (a retained handle, a file left open under the
    /// store's directory, a swallowed close error, an integrity violation) makes it a leak.
    pub fn all_cycles(mut self) -> Self {
        self.options.all_cycles = true;
        self
    }

    /// Records every allocation with the cycle that made it (allocation generations; on by
    /// default). `false` turns it off: the run then costs jemalloc's fast path, and report.json's
    /// `generations` says they were off. See [`crate::HarnessConfig::generations`].
    pub fn generations(mut self, on: bool) -> Self {
        self.options.generations = on;
        self
    }

    /// How long the handle check keeps waiting for retained handles once nothing in the process
    /// could release them (default 100 ms): raise it above the delay of a close your store
    /// defers where no thread, CPU or release shows it (a close queued on an idle pool thread
    /// that first sleeps). See [`crate::HarnessConfig::handle_quiet`].
    pub fn handle_quiet(mut self, quiet: std::time::Duration) -> Self {
        self.options.handle_quiet = Some(quiet);
        self
    }

    /// Publishes the findings for CI ([`super::Annotations`]; default: GitHub Actions' inside
    /// GitHub Actions): the job summary appended to `$GITHUB_STEP_SUMMARY` when the check ends,
    /// the workflow commands printed on stdout by [`RunOutcome::assert_clean`] when it fails (the
    /// test harness shows them with the failing test's output). `run` itself prints nothing:
    /// [`RunOutcome::annotations`] has the commands, to print where the caller chooses.
    pub fn annotations(mut self, annotations: super::Annotations) -> Self {
        self.options.annotations = annotations;
        self
    }

    /// Known leaks to accept, each with its reason: a suppression file
    /// ([`Suppressions`](crate::Suppressions)). Default: `leakcheck.toml` in the current
    /// directory (the package's root under `cargo test`), when there is one.
    pub fn suppressions(mut self, file: impl Into<PathBuf>) -> Self {
        self.options.suppressions = Some(file.into());
        self
    }

    /// Holds the run against a baseline report (report.json of an earlier run): it then fails
    /// only on a leak the baseline did not have, or one larger per cycle by more than `margin`
    /// (a fraction; [`DEFAULT_BASELINE_MARGIN`](crate::report::DEFAULT_BASELINE_MARGIN) is a
    /// quarter). See [`RunOutcome::passes_baseline`].
    pub fn baseline(mut self, report: impl Into<PathBuf>, margin: f64) -> Self {
        self.options.baseline = Some(report.into());
        self.options.baseline_margin = margin;
        self
    }

    /// Also writes the verdict as JUnit XML to `file` (a test case per judged signal).
    pub fn junit(mut self, file: impl Into<PathBuf>) -> Self {
        self.options.junit = Some(file.into());
        self
    }

    /// Runs the check.
    ///
    /// # Errors
    /// A bad setting (fewer than 30 cycles, a plan naming a point the store does not have), or
    /// a report directory that cannot be written. A leak is not an error: it is the outcome's
    /// verdict ([`RunOutcome::assert_clean`]).
    pub fn run(self) -> Result<RunOutcome, RunError> {
        let mut options = self.options;
        // The ledger's depth is the caller's; the report says which it is.
        options.tracking = Some(self.ledger.depth());
        let plan = validate(&options)?;
        drive(self.store, self.ledger, &options, &plan, None)
    }
}
