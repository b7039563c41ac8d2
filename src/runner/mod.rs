//! The runner: `check` and `soak` for any [`Lifecycle`], as `leakcheck check` and `leakcheck
//! soak` run the reference store, and `compare` for two of their reports.
//!
//! - [`run`] makes the store (from a constructor given the run's [`Ledger`] and data directory),
//!   drives it through the cycles, keeps the report directory up to date (report.json,
//!   samples.csv, the plots, rewritten every `report_every` cycles, atomically, so a run killed
//!   with SIGKILL leaves a valid report) and returns a [`RunOutcome`]: the report, its text
//!   table, its exit code.
//! - [`check`] is the same judgement on a store the caller already made, for one call in
//!   `cargo test`.
//! - `cli` (feature `cli`) is the command line around [`run`]: a user's soak binary gets
//!   leakcheck's subcommands, flags, exit codes and output in one call, with its own flags
//!   flattened in.
//!
//! `check` goes on past the cycles asked for while the memory verdict is inconclusive, deciding
//! every 10 cycles, up to `max_cycles` (default four times the cycles);
//! `soak` runs for a duration or a number of cycles and keeps the report directory current.

mod check;
#[cfg(feature = "cli")]
pub mod cli;
mod heap;
mod progress;
pub(crate) mod text;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub use check::{check, Check};

use crate::fault::{FaultPlan, FaultPlanError, FAULTS_ENV};
use crate::harness::{HarnessError, Lifecycle};
use crate::ledger::LedgerError;
use crate::report::{self, CompareLimits, Comparison, CycleSummary, ReportError, RunReport, RunSettings};
use crate::verdict::{CycleSample, Looks};
use crate::{Depth, Harness, HarnessConfig, Ledger, Verdict};

use progress::Progress;

/// `check` decides (the default); `soak` keeps going for its duration or cycles and keeps the
/// report directory current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// A leak check: a verdict, going on while it is inconclusive, up to `max_cycles`.
    #[default]
    Check,
    /// A long run with progress and a crash-safe report; needs a report directory.
    Soak,
}

impl Mode {
    /// `check` or `soak`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Check => "check",
            Mode::Soak => "soak",
        }
    }
}

/// Cycles `check` runs when none are asked for.
pub const DEFAULT_CHECK_CYCLES: u64 = 200;
/// `check` goes on while the memory verdict is inconclusive up to this many times its cycles,
/// unless told otherwise (`--max-cycles`).
pub const DEFAULT_MAX_CYCLES_FACTOR: u64 = 4;
/// The fewest cycles that can give a verdict on memory.
pub const MIN_CYCLES: u64 = 30;
/// The seed of the fault plan's probabilities, unless told otherwise.
pub const DEFAULT_SEED: u64 = 1;
/// The report is rewritten every this many cycles, unless told otherwise.
pub const DEFAULT_REPORT_EVERY: u64 = 25;

/// What to run: the settings of `leakcheck check` and `leakcheck soak`, one field per flag.
/// With feature `cli` this is also the flags' parser (`#[command(flatten)]` it into a command
/// line); [`run`] validates it, once, before anything is made.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RunOptions {
    /// `check` or `soak` (on the command line, the subcommand).
    #[cfg_attr(feature = "cli", arg(skip))]
    pub mode: Mode,
    /// Cycles to run (with `duration`: at most this many). Default: [`DEFAULT_CHECK_CYCLES`]
    /// for `check`; a soak needs this or `duration`.
    #[cfg_attr(feature = "cli", arg(long, help = "Cycles to run (with --duration: at most this many)"))]
    pub cycles: Option<u64>,
    /// Run for this long.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_parser = cli::parse_duration, help = "Run for this long (for example 90s, 30m, 8h, 1h30m)")
    )]
    pub duration: Option<Duration>,
    /// `check` with cycles: how far to go on while the memory verdict is inconclusive
    /// (default [`DEFAULT_MAX_CYCLES_FACTOR`] times the cycles; equal to the cycles: never).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            help = "check: when the memory verdict is still inconclusive after --cycles, go on, deciding every 10 \
                    cycles, up to this many cycles (default: 4 x --cycles; equal to --cycles: never)"
        )
    )]
    pub max_cycles: Option<u64>,
    /// The fault plan (`close.marker=10%,open.db=nth:2`, or `none`). Default: the environment
    /// variable [`FAULTS_ENV`] when set, else [`Lifecycle::default_faults`].
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            help = "Fault plan, for example `close.marker=10%,open.db=nth:2` (default: the store's, which reaches its \
                    error paths; LEAKCHECK_FAULTS when set; `none` for no faults)"
        )
    )]
    pub faults: Option<String>,
    /// Seed of the plan's probabilities.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_SEED, help = "Seed of the fault plan's probabilities"))]
    pub seed: u64,
    /// The ledger's tracking depth. Default: `LEAKCHECK_TRACKING` when set, else sites.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            help = "Ledger tracking depth: counts, sites or backtraces (default: LEAKCHECK_TRACKING, else sites)"
        )
    )]
    pub tracking: Option<Depth>,
    /// Directory for the report (report.html, report.json, samples.csv, plot.svg and, with feature `png`,
    /// plot.png). Required by `soak`.
    #[cfg_attr(
        feature = "cli",
        arg(long, help = "Directory for the report (report.html, report.json, samples.csv, plot.svg, plot.png)")
    )]
    pub report: Option<PathBuf>,
    /// Rewrite the report every this many cycles.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            default_value_t = DEFAULT_REPORT_EVERY,
            value_parser = clap::value_parser!(u64).range(1..),
            help = "Rewrite the report every this many cycles"
        )
    )]
    pub report_every: u64,
    /// Take a memory sample every this many cycles (default: 1 for check, 5 for soak).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_parser = clap::value_parser!(u64).range(1..), help = "Take a memory sample every this many cycles")
    )]
    pub sample_every: Option<u64>,
    /// Where the store's data lives (default: a temporary directory, removed afterwards).
    #[cfg_attr(feature = "cli", arg(long))]
    pub dir: Option<PathBuf>,
    /// Show progress on stderr (a bar on a terminal, a line every 10 s otherwise). The command
    /// line shows it unless `check --json`.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub progress: bool,
    /// SIGINT and SIGTERM end the run after the cycle in progress, with a final report marked
    /// interrupted (installs a process-wide handler; the command line turns it on).
    #[cfg_attr(feature = "cli", arg(skip))]
    pub interruptible: bool,
    /// Treat native allocations as invisible to jemalloc
    /// ([`crate::harness::simulated_invisible_allocations`]): the test suite uses it to prove such
    /// a run ends inconclusive, never clean.
    #[cfg_attr(feature = "cli", arg(long, hide = true))]
    pub simulate_invisible_allocations: bool,
    /// `check`: run every cycle asked even once the verdict cannot change (by default check stops
    /// after the first cycle an exact signal's residue makes it a leak, unless it profiles the
    /// heap, whose stacks need the cycles), for a full table.
    #[cfg_attr(
        feature = "cli",
        arg(long, help = "check: run every cycle asked even once the verdict is decided (a full table)")
    )]
    pub all_cycles: bool,
    /// How long the handle check keeps waiting for retained handles once nothing in the process
    /// could release them (default 100 ms, [`HarnessConfig::handle_quiet`]): raise it above the
    /// delay of a close deferred where no thread, CPU or release shows it (a close queued on an
    /// idle pool thread that first sleeps).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "DURATION",
            value_parser = cli::parse_duration,
            help = "How long the handle check waits for retained handles once nothing could release them (default \
                    100ms; at most the 2 s bound): raise it above the delay of a close deferred on an idle thread"
        )
    )]
    pub handle_quiet: Option<Duration>,
    /// Record every allocation with the cycle that made it (allocation generations, default on;
    /// [`HarnessConfig::generations`]).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "on|off",
            default_value = "on",
            action = clap::ArgAction::Set,
            value_parser = cli::parse_on_off,
            help = "Record every allocation with the cycle that made it (allocation generations): on (default) or off"
        )
    )]
    pub generations: bool,
    /// Profile the heap (feature `profiling`): sample one allocation per `2^N` bytes from the
    /// end of the first cycle, dump jemalloc's profile after the warm-up and at the end, and report the call
    /// stacks whose live bytes grew ([`RunReport::heap_growth`], and in the report directory
    /// `heap-first.pb.gz`, `heap-last.pb.gz`, `heap-growth.folded`). jemalloc must have been
    /// started with profiling (`leakcheck::heap_profiling_ready!()` in the binary, or
    /// `MALLOC_CONF=prof:true,prof_active:false`).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "N",
            num_args = 0..=1,
            default_missing_value = "19",
            help = "Profile the heap with jemalloc's sampler, one sample per 2^N bytes (default 19, 512 KiB), and report \
                    the call stacks that grew; needs a build with the `profiling` feature, started with profiling ready \
                    (see docs/guide.md)"
        )
    )]
    pub profile: Option<u32>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            mode: Mode::Check,
            cycles: None,
            duration: None,
            max_cycles: None,
            faults: None,
            seed: DEFAULT_SEED,
            tracking: None,
            report: None,
            report_every: DEFAULT_REPORT_EVERY,
            sample_every: None,
            dir: None,
            progress: false,
            interruptible: false,
            simulate_invisible_allocations: false,
            all_cycles: false,
            handle_quiet: None,
            generations: true,
            profile: None,
        }
    }
}

impl RunOptions {
    /// Options for `mode`, the rest at their defaults.
    pub fn new(mode: Mode) -> Self {
        RunOptions { mode, ..RunOptions::default() }
    }
}

/// What a store's constructor gets from [`run`].
#[derive(Debug, Clone, Copy)]
pub struct StoreEnv<'a> {
    /// The run's ledger: register the store's handles in it (the tracked wrappers take it).
    pub ledger: &'a Ledger,
    /// Where the store keeps its data (created; removed afterwards unless the user chose it).
    pub dir: &'a Path,
}

/// A run could not start or finish. Every variant names the option or file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// An option is out of range or contradicts another.
    #[error("{option}: {problem}")]
    Invalid {
        /// The option (`--cycles`).
        option: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The fault plan does not parse, or names a point the store does not have.
    #[error("--faults: {0}")]
    Faults(#[from] FaultPlanError),
    /// The tracking depth is unknown.
    #[error("--tracking: {0}")]
    Tracking(#[from] LedgerError),
    /// A directory could not be made.
    #[error("{option} {}: {source}", path.display())]
    Dir {
        /// The option (`--dir`), or `temporary directory`.
        option: &'static str,
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store's constructor failed (its causes follow as the error's source chain).
    #[error("cannot set up the store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The harness could not start (the data directory cannot be watched).
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// The report could not be written or read.
    #[error("{context}: {source}")]
    Report {
        /// What was being done (`--report /tmp/r`, `writing the report`).
        context: String,
        /// Why it failed.
        source: ReportError,
    },
    /// The signal handler for SIGINT and SIGTERM could not be installed.
    #[error("signal handler: {0}")]
    Signal(std::io::Error),
    /// The PNG plot could not be drawn.
    #[error("drawing plot.png: {0}")]
    Png(String),
    /// `--profile`: the heap profiler is unavailable, or a profile could not be taken or read.
    #[error("--profile: {0}")]
    Profile(crate::probe::ProbeError),
}

fn invalid(option: &'static str, problem: impl Into<String>) -> RunError {
    RunError::Invalid { option, problem: problem.into() }
}

/// A finished run: its report, and where it was written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The report (what `--json` prints and report.json holds).
    pub report: RunReport,
    /// The report directory, when one was asked for.
    pub report_dir: Option<PathBuf>,
}

impl RunOutcome {
    /// The run's verdict.
    pub fn verdict(&self) -> Verdict {
        self.report.verdict.verdict
    }

    /// The process exit code of the verdict: 0 clean, 1 leak, 3 inconclusive (2 is a usage
    /// or environment error, [`RunError`]).
    pub fn exit_code(&self) -> u8 {
        exit_code(self.report.verdict.verdict)
    }

    /// The verdict table `leakcheck check` prints: header, cycles, one line per signal, leak
    /// rate, return to baseline, the ledger's retained handles, integrity problems, verdict.
    pub fn table(&self) -> String {
        text::table(&self.report)
    }

    /// The report as pretty JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(&self.report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Panics unless the verdict is clean, with the verdict table (and in it the ledger's
    /// retained-handle table) as the message.
    ///
    /// # Panics
    /// When the verdict is leak or inconclusive.
    #[track_caller]
    pub fn assert_clean(&self) {
        if self.report.verdict.verdict != Verdict::Clean {
            panic!("leakcheck: the store is not clean ({})\n\n{}", self.report.verdict.verdict, self.table());
        }
    }
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

/// The process's name as invoked (`leakcheck`, `kv-soak`, `rocksdb-sweep`), for its messages.
#[doc(hidden)]
pub fn tool_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| PathBuf::from(a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "leakcheck".to_string())
}

/// The exit code of a verdict: 0 clean, 1 leak, 3 inconclusive.
pub fn exit_code(v: Verdict) -> u8 {
    match v {
        Verdict::Clean => 0,
        Verdict::Leak => 1,
        Verdict::Inconclusive => 3,
    }
}

/// The options checked against each other, before any file is made.
#[derive(Debug, Clone)]
struct Plan {
    depth: Depth,
    cycles: u64,
    max_cycles: Option<u64>,
    sample_every: u64,
}

fn validate(opts: &RunOptions) -> Result<Plan, RunError> {
    let soak = opts.mode == Mode::Soak;
    let depth = match opts.tracking {
        Some(d) => d,
        None => Depth::from_env()?.unwrap_or_default(),
    };
    if let Some(text) = &opts.faults {
        parse_plan(text)?;
    }
    if soak && opts.report.is_none() {
        return Err(invalid("soak", "needs a report directory (--report DIR), where the report is kept up to date"));
    }
    if soak && opts.duration.is_none() && opts.cycles.is_none() {
        return Err(invalid("soak", "needs --duration or --cycles"));
    }
    if opts.duration.is_some_and(|d| d.is_zero()) {
        return Err(invalid("--duration", "must be longer than zero"));
    }
    if opts.report_every == 0 {
        return Err(invalid("--report-every", "must be at least 1"));
    }
    if opts.sample_every == Some(0) {
        return Err(invalid("--sample-every", "must be at least 1"));
    }
    let cycles = match (opts.cycles, opts.duration) {
        (Some(c), _) => c,
        (None, Some(_)) => u64::MAX,
        (None, None) => DEFAULT_CHECK_CYCLES,
    };
    if cycles < MIN_CYCLES {
        return Err(invalid(
            "--cycles",
            format!("{cycles}: at least {MIN_CYCLES} cycles are needed for a verdict on memory"),
        ));
    }
    // How far `check` may go on while the verdict is inconclusive: the verdict says how many more
    // cycles would decide, and a check should give a verdict, not a shrug.
    let max_cycles = match (opts.max_cycles, soak || opts.duration.is_some()) {
        (Some(_), true) => {
            return Err(invalid("--max-cycles", "applies to check with --cycles, not to soak or --duration"))
        }
        (None, true) => None,
        (Some(m), false) if m < cycles => {
            return Err(invalid("--max-cycles", format!("{m}: less than --cycles {cycles}")))
        }
        (Some(m), false) => Some(m),
        (None, false) => Some(cycles.saturating_mul(DEFAULT_MAX_CYCLES_FACTOR)),
    };
    let sample_every = opts.sample_every.unwrap_or(if soak { 5 } else { 1 });
    Ok(Plan { depth, cycles, max_cycles, sample_every })
}

fn parse_plan(text: &str) -> Result<FaultPlan, FaultPlanError> {
    if text.trim() == "none" {
        Ok(FaultPlan::none())
    } else {
        FaultPlan::parse(text)
    }
}

/// The plan in force: the option, else the environment, else the store's default; checked
/// against the store's points.
fn plan_for<L: Lifecycle>(opts: &RunOptions, store: &L) -> Result<FaultPlan, RunError> {
    let text = match (&opts.faults, std::env::var(FAULTS_ENV)) {
        (Some(t), _) => t.clone(),
        (None, Ok(t)) => t,
        (None, Err(_)) => store.default_faults(),
    };
    let plan = parse_plan(&text)?;
    plan.validate(&store.fault_points())?;
    Ok(plan)
}

/// Makes the store with `make` and runs it as `leakcheck check` or `soak` does.
///
/// Every problem with the options is found before any file is made (the data directory, if
/// temporary, and the store come next; the report directory last, once the plan is known to fit
/// the store).
///
/// # Errors
/// [`RunError`]: a bad option, a constructor that failed, a report that cannot be written.
pub fn run<L, E, F>(opts: &RunOptions, make: F) -> Result<RunOutcome, RunError>
where
    L: Lifecycle,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
    F: FnOnce(&StoreEnv<'_>) -> Result<L, E>,
{
    let plan = validate(opts)?;
    let scratch;
    let data = match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|source| RunError::Dir { option: "--dir", path: d.clone(), source })?;
            d.join("leakcheck-store")
        }
        None => {
            scratch = tempfile::Builder::new().prefix("leakcheck-").tempdir().map_err(|source| RunError::Dir {
                option: "temporary directory",
                path: std::env::temp_dir(),
                source,
            })?;
            scratch.path().join("store")
        }
    };
    let ledger = Ledger::with_depth(plan.depth);
    let mut store = make(&StoreEnv { ledger: &ledger, dir: &data }).map_err(|e| RunError::Store(e.into()))?;
    drive(&mut store, &ledger, opts, &plan)
}

/// Runs `store` (already made, its handles registered in `ledger`) as [`run`] does.
fn drive<L: Lifecycle>(store: &mut L, ledger: &Ledger, opts: &RunOptions, plan: &Plan) -> Result<RunOutcome, RunError> {
    let faults = plan_for(opts, store)?;
    if let Some(dir) = &opts.report {
        report::prepare_dir(dir)
            .map_err(|source| RunError::Report { context: format!("--report {}", dir.display()), source })?;
    }
    let stop = if opts.interruptible { Some(crate::sys::stop_on_interrupt().map_err(RunError::Signal)?) } else { None };
    let settings = settings_of(store, opts, plan, &faults);
    let hc = harness_config(opts, plan, faults);
    let warmup = hc.judged_analysis().warmup_cycles as u64;
    let heap = opts.profile.map(|lg| heap::HeapRun::start(lg, opts.report.as_deref(), warmup)).transpose()?;
    let csv = opts
        .report
        .as_ref()
        .map(|dir| report::SamplesFile::create(&dir.join(report::SAMPLES_FILE)))
        .transpose()
        .map_err(|source| RunError::Report { context: "writing the report".to_string(), source })?;
    let total = (plan.cycles != u64::MAX).then_some(plan.cycles);
    let mut watch = Watch {
        opts,
        ledger,
        settings,
        progress: Progress::new(total, !opts.progress),
        started: Instant::now(),
        summary: CycleSummary::default(),
        slope: None,
        error: None,
        interrupted: false,
        csv,
        heap,
        stop,
    };
    let result = Harness::new(hc).run_observed(store, ledger, |p| watch.after_cycle(p));
    watch.progress.finish();
    if let Some(e) = watch.error.take() {
        return Err(e);
    }
    watch.finish(result?)
}

/// The settings the report records.
fn settings_of<L: Lifecycle>(store: &L, opts: &RunOptions, plan: &Plan, faults: &FaultPlan) -> RunSettings {
    let info = store.describe();
    RunSettings {
        command: opts.mode.name().to_string(),
        store: info.name,
        store_settings: info.settings,
        cycles: plan.cycles,
        max_cycles: plan.max_cycles,
        duration_seconds: opts.duration.map(|d| d.as_secs_f64()),
        plan: faults.to_string(),
        seed: opts.seed,
        tracking: plan.depth.name().to_string(),
        sample_every: plan.sample_every,
        handle_quiet_ms: Some(handle_quiet_of(opts).as_millis() as u64),
        profile_lg_sample: opts.profile,
    }
}

/// The harness's settings: check stops once decided; a soak runs on, looked at as its cycles
/// double, without keeping every cycle's record.
fn harness_config(opts: &RunOptions, plan: &Plan, faults: FaultPlan) -> HarnessConfig {
    let soak = opts.mode == Mode::Soak;
    let mut hc = HarnessConfig {
        cycles: plan.max_cycles.unwrap_or(plan.cycles),
        decide_after: (!soak).then_some(plan.cycles),
        // With --profile the stacks of the growth need the cycles past the warm-up: run them all.
        stop_on_exact_leak: !soak && !opts.all_cycles && opts.profile.is_none(),
        plan: faults,
        seed: opts.seed,
        sample_every: plan.sample_every,
        keep_records: !soak,
        handle_quiet: handle_quiet_of(opts),
        generations: opts.generations,
        ..HarnessConfig::default()
    };
    if soak {
        hc.analysis.looks = Looks::Doubling { first: DEFAULT_CHECK_CYCLES };
    }
    if opts.simulate_invisible_allocations {
        hc.allocator_check = crate::harness::simulated_invisible_allocations;
    }
    hc
}

/// The handle check's quiet period: `--handle-quiet`, else the harness's default.
fn handle_quiet_of(opts: &RunOptions) -> Duration {
    opts.handle_quiet.unwrap_or(crate::harness::DEFAULT_HANDLE_QUIET)
}

/// What [`drive`] keeps while the harness runs: the report being written, the progress line, the
/// heap profile, and why the run stopped early.
struct Watch<'a> {
    opts: &'a RunOptions,
    ledger: &'a Ledger,
    settings: RunSettings,
    progress: Progress,
    started: Instant,
    summary: CycleSummary,
    slope: Option<f64>,
    error: Option<RunError>,
    interrupted: bool,
    csv: Option<report::SamplesFile>,
    heap: Option<heap::HeapRun>,
    stop: Option<&'static std::sync::atomic::AtomicBool>,
}

impl Watch<'_> {
    /// After each cycle: samples appended, the report rewritten every `report_every` cycles, the
    /// progress line, the heap profile; stops on an error, an interrupt or the duration's end.
    /// (Past the cycles asked for, the harness itself stops once the memory signals decide.)
    fn after_cycle(&mut self, p: &crate::harness::Progress<'_>) -> ControlFlow<()> {
        self.summary.add(p.record);
        let cycle = p.record.cycle + 1;
        if let (Some(f), Some(s)) = (self.csv.as_mut(), p.sample) {
            f.push(s);
        }
        if cycle.is_multiple_of(self.opts.report_every) || cycle == 1 {
            if let Err(e) = self.interim_report(p, cycle) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        let (ledger, slope) = (self.ledger, self.slope);
        self.progress.tick(cycle, || {
            let unexplained = p.samples.last().and_then(|s| s.sample.unexplained_bytes()).unwrap_or(0) as f64;
            format!(
                "retained handles {}  unexplained {}  slope {}",
                ledger.retained_counts().values().sum::<u64>(),
                text::human_bytes(unexplained),
                slope.map_or("-".to_string(), |s| format!("{s:+.1} B/cycle"))
            )
        });
        if let Some(Err(e)) = self.heap.as_mut().map(|h| h.after_cycle(cycle, heap::cache_fill(p.samples))) {
            self.error = Some(e);
            return ControlFlow::Break(());
        }
        if self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            self.interrupted = true;
            return ControlFlow::Break(());
        }
        if self.opts.duration.is_some_and(|d| self.started.elapsed() >= d) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// The verdict so far, and the report with it when there is a report directory.
    fn interim_report(&mut self, p: &crate::harness::Progress<'_>, cycle: u64) -> Result<(), RunError> {
        let interim = p.judged.cloned().unwrap_or_else(|| p.analysis.current());
        self.slope = interim.leak_rate.as_ref().map(|r| r.bytes_per_cycle);
        let (Some(dir), Some(f)) = (&self.opts.report, self.csv.as_mut()) else {
            return Ok(());
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut r = RunReport::new(
            self.settings.clone(),
            interim,
            self.summary.clone(),
            self.ledger.report(),
            cycle,
            elapsed,
            false,
        );
        r.first_leak_cycle = p.first_leak_cycle;
        write_report(dir, f, &r, p.samples, false)
    }

    /// The final report, with the heap growth when profiled.
    fn finish(mut self, h: crate::harness::HarnessReport) -> Result<RunOutcome, RunError> {
        let elapsed = self.started.elapsed().as_secs_f64();
        // The observer saw every cycle's full record: its summary is the run's, soak or check.
        let mut r = RunReport::new(
            self.settings,
            h.verdict.clone(),
            self.summary,
            h.ledger.clone(),
            h.cycles_run,
            elapsed,
            true,
        );
        r.interrupted = self.interrupted;
        r.stopped = h.stopped.clone().filter(|s| !matches!(s, crate::harness::Stopped::Asked { .. }));
        r.first_leak_cycle = h.first_leak_cycle;
        r.generations = h.generations.clone();
        if let Some(heap) = self.heap {
            let growth = heap.finish(h.cycles_run, heap::cache_fill(&h.samples))?;
            r.heap_growth = growth.stacks;
            r.heap_growth_by_function = growth.functions;
        }
        if let (Some(dir), Some(f)) = (&self.opts.report, self.csv.as_mut()) {
            write_report(dir, f, &r, &h.samples, true)?;
        }
        Ok(RunOutcome { report: r, report_dir: self.opts.report.clone() })
    }
}

/// Appends the new samples to samples.csv (synced), then writes report.json and the plots, each
/// atomically (PNG only in the final report, with feature `png`: rendering takes longer than a
/// cycle). The plots draw the samples kept in memory (every one in a check, an evenly thinned set
/// in a long soak).
fn write_report(
    dir: &Path,
    csv: &mut report::SamplesFile,
    r: &RunReport,
    samples: &[CycleSample],
    last: bool,
) -> Result<(), RunError> {
    let failed = |source| RunError::Report { context: "writing the report".to_string(), source };
    csv.flush().map_err(failed)?;
    let plots = report::write_views(dir, r, samples).map_err(failed)?;
    #[cfg(feature = "png")]
    if last {
        for plot in &plots {
            let png = png_of(&plot.svg)?;
            report::write_atomic(&dir.join(plot.file_name.replace(".svg", ".png")), &png).map_err(failed)?;
        }
    }
    let _ = (last, plots);
    Ok(())
}

/// Renders the SVG to PNG with the system's fonts (text is left out where none are installed).
#[cfg(feature = "png")]
fn png_of(svg: &str) -> Result<Vec<u8>, RunError> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| RunError::Png(e.to_string()))?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| RunError::Png("empty plot".to_string()))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| RunError::Png(e.to_string()))
}

/// Runs `f` on every job, `workers` at a time, taking the jobs in order, and returns the results
/// in the jobs' order. For runs that each start a process of their own (process-wide signals
/// must not mix): the catalogs, the detection matrix and the binding sweep take two at a time.
#[doc(hidden)]
pub fn in_parallel<J: Send, R: Send>(jobs: Vec<J>, workers: usize, f: impl Fn(J) -> R + Sync) -> Vec<R> {
    let queue = std::sync::Mutex::new(jobs.into_iter().enumerate().rev().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            // The queue's guard moves into `and_then` and is dropped there: no worker holds the
            // queue while its job runs.
            s.spawn(|| {
                while let Some((i, job)) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    let r = f(job);
                    if let Ok(mut all) = results.lock() {
                        all.push((i, r));
                    }
                }
            });
        }
    });
    let mut all = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// `compare OLD NEW`: reads both reports and compares them (exit 1 on a regression:
/// [`Comparison::regressions`]).
///
/// # Errors
/// A report that cannot be read, or limits that are not non-negative numbers.
pub fn compare(old: &Path, new: &Path, limits: CompareLimits) -> Result<Comparison, RunError> {
    compare_to_page(old, new, limits, None)
}

/// [`compare`], and with `html` the comparison's page written there
/// ([`report::write_compare_html`]: both runs' series on one plot, the table of what regressed).
///
/// # Errors
/// As [`compare`]; and a samples CSV beside a report that does not read, or a page that cannot be
/// written.
pub fn compare_to_page(
    old: &Path,
    new: &Path,
    limits: CompareLimits,
    html: Option<&Path>,
) -> Result<Comparison, RunError> {
    let ok = |v: f64| v.is_finite() && v >= 0.0;
    if !(ok(limits.max_rate_increase_bytes) && ok(limits.max_overhead_increase)) {
        return Err(invalid("--max-rate-increase and --max-overhead-increase", "must be non-negative numbers"));
    }
    let failed = |source| RunError::Report { context: "compare".to_string(), source };
    let a = report::read(old).map_err(failed)?;
    let b = report::read(new).map_err(failed)?;
    let cmp = report::compare(&a, &b, limits);
    if let Some(out) = html {
        report::write_compare_html(out, (old, &a), (new, &b), &cmp).map_err(failed)?;
    }
    Ok(cmp)
}
