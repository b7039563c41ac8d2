//! What a run is asked to do ([`RunOptions`]) and what a store's constructor gets
//! ([`StoreEnv`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{ledger::Depth, ledger::Ledger};

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

/// Whether a run publishes its findings in GitHub Actions' terms: workflow commands at the
/// leaking lines and a Markdown job summary (`--annotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Annotations {
    /// GitHub Actions' when the run is in one (`GITHUB_ACTIONS=true`), else none.
    #[default]
    Auto,
    /// GitHub Actions' workflow commands and job summary (`$GITHUB_STEP_SUMMARY`, when set).
    Github,
    /// None.
    Off,
}

impl Annotations {
    /// Whether GitHub Actions' are published: asked, or `Auto` inside GitHub Actions.
    pub(crate) fn github(self) -> bool {
        match self {
            Annotations::Auto => std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            Annotations::Github => true,
            Annotations::Off => false,
        }
    }
}

impl std::str::FromStr for Annotations {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Annotations::Auto),
            "github" => Ok(Annotations::Github),
            "none" => Ok(Annotations::Off),
            other => Err(format!("unknown annotations `{other}`: expected auto, github or none")),
        }
    }
}

/// The suppression file a run reads from the current directory when none is named (a
/// project's root, where `cargo test` runs its tests).
pub const DEFAULT_SUPPRESSIONS: &str = "leakcheck.toml";

/// Cycles `check` runs when none are asked for.
pub const DEFAULT_CHECK_CYCLES: u64 = 200;
/// `check` asked for no cycles looks first at this many: it stops there clean when nothing is in
/// question, and else runs [`DEFAULT_CHECK_CYCLES`] as if it had not looked
/// ([`crate::harness::HarnessConfig::early_look`]). A check asked for its cycles (`--cycles`)
/// looks first at them.
pub const EARLY_LOOK_CYCLES: u64 = DEFAULT_CHECK_CYCLES / 2;
/// `check` goes on while the memory verdict is inconclusive up to this many times its cycles,
/// unless told otherwise (`--max-cycles`).
pub const DEFAULT_MAX_CYCLES_FACTOR: u64 = 4;
/// The fewest cycles that can give a verdict on memory.
pub const MIN_CYCLES: u64 = 30;
/// The seed of the fault plan's probabilities, unless told otherwise.
pub const DEFAULT_SEED: u64 = 1;
/// The report is rewritten every this many cycles, unless told otherwise.
pub const DEFAULT_REPORT_EVERY: u64 = 25;

/// What to run: the settings of `leakcheck check` and `leakcheck soak`, one field per flag (the
/// `leakcheck-cli` crate's `RunArgs` parses the flags into it); [`run`](super::run) validates it,
/// once, before anything is made.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `check` or `soak` (on the command line, the subcommand).
    pub mode: Mode,
    /// Cycles to run (with `duration`: at most this many). Default: [`DEFAULT_CHECK_CYCLES`]
    /// for `check`, which then stops clean at [`EARLY_LOOK_CYCLES`] when nothing is in question;
    /// a soak needs this or `duration`.
    pub cycles: Option<u64>,
    /// Run for this long.
    pub duration: Option<Duration>,
    /// `check` with cycles: how far to go on while the memory verdict is inconclusive
    /// (default [`DEFAULT_MAX_CYCLES_FACTOR`] times the cycles; equal to the cycles: never).
    pub max_cycles: Option<u64>,
    /// The fault plan (`close.marker=10%,open.db=nth:2`, or `none`). Default: the environment
    /// variable [`FAULTS_ENV`](crate::fault::FAULTS_ENV) when set, else [`Lifecycle::default_faults`](crate::Lifecycle::default_faults).
    pub faults: Option<String>,
    /// Seed of the plan's probabilities.
    pub seed: u64,
    /// The ledger's tracking depth. Default: `LEAKCHECK_TRACKING` when set, else sites.
    pub tracking: Option<Depth>,
    /// Directory for the report (report.html, report.json, samples.csv, plot.svg and, with feature `png`,
    /// plot.png). Required by `soak`.
    pub report: Option<PathBuf>,
    /// Rewrite the report every this many cycles.
    pub report_every: u64,
    /// Take a memory sample every this many cycles (default: 1 for check, 5 for soak).
    pub sample_every: Option<u64>,
    /// Where the store's data lives (default: a temporary directory, removed afterwards).
    pub dir: Option<PathBuf>,
    /// Show progress on stderr (a bar on a terminal, a line every 10 s otherwise). The command
    /// line shows it unless `check --json`.
    pub progress: bool,
    /// SIGINT and SIGTERM end the run after the cycle in progress, with a final report marked
    /// interrupted (installs a process-wide handler; the command line turns it on).
    pub interruptible: bool,
    /// Treat native allocations as invisible to jemalloc
    /// ([`crate::harness::simulated_invisible_allocations`]): the test suite uses it to prove such
    /// a run ends inconclusive, never clean.
    pub simulate_invisible_allocations: bool,
    /// `check`: run every cycle asked even once the verdict cannot change (by default check stops
    /// after the first cycle an exact signal's residue makes it a leak, unless it profiles the
    /// heap, whose stacks need the cycles), for a full table.
    pub all_cycles: bool,
    /// How long the handle check keeps waiting for retained handles once nothing in the process
    /// could release them (default 100 ms, [`HarnessConfig::handle_quiet`](crate::HarnessConfig::handle_quiet)): raise it above the
    /// delay of a close deferred where no thread, CPU or release shows it (a close queued on an
    /// idle pool thread that first sleeps).
    pub handle_quiet: Option<Duration>,
    /// Record every allocation with the cycle that made it (allocation generations, default on;
    /// [`HarnessConfig::generations`](crate::HarnessConfig::generations)).
    pub generations: bool,
    /// Profile the heap (feature `profiling`): sample one allocation per `2^N` bytes from the
    /// end of the first cycle, dump jemalloc's profile after the warm-up and at the end, and report the call
    /// stacks whose live bytes grew ([`RunReport::heap_growth`](crate::report::RunReport::heap_growth), and in the report directory
    /// `heap-first.pb.gz`, `heap-last.pb.gz`, `heap-growth.folded`). jemalloc must have been
    /// started with profiling (`leakcheck::heap_profiling_ready!()` in the binary, or
    /// `MALLOC_CONF=prof:true,prof_active:false`).
    pub profile: Option<u32>,
    /// Publish the findings for CI: GitHub Actions' workflow commands and job summary (default:
    /// when the run is in GitHub Actions).
    pub annotations: Annotations,
    /// Also write the verdict as a JUnit XML file here, for CI systems that read JUnit: one test
    /// case per judged signal, a failure per leak with its places.
    pub junit: Option<PathBuf>,
    /// Known leaks the run accepts, each with its reason ([`Suppressions`](crate::Suppressions)).
    /// Default: [`DEFAULT_SUPPRESSIONS`] in the current directory, when there is one.
    pub suppressions: Option<PathBuf>,
    /// A baseline report (report.json of an earlier run): the run then fails only on a leak the
    /// baseline did not have, or one larger per cycle by more than `baseline_margin`.
    pub baseline: Option<PathBuf>,
    /// How much larger per cycle than the baseline's a known leak may be (a fraction; default
    /// [`DEFAULT_BASELINE_MARGIN`](crate::report::DEFAULT_BASELINE_MARGIN)).
    pub baseline_margin: f64,
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
            annotations: Annotations::Auto,
            junit: None,
            suppressions: None,
            baseline: None,
            baseline_margin: crate::report::DEFAULT_BASELINE_MARGIN,
        }
    }
}

impl RunOptions {
    /// Options for `mode`, the rest at their defaults.
    pub fn new(mode: Mode) -> Self {
        RunOptions { mode, ..RunOptions::default() }
    }
}

/// What a store's constructor gets from [`run`](super::run).
#[derive(Debug, Clone, Copy)]
pub struct StoreEnv<'a> {
    /// The run's ledger: register the store's handles in it (the tracked wrappers take it).
    pub ledger: &'a Ledger,
    /// Where the store keeps its data (created; removed afterwards unless the user chose it).
    pub dir: &'a Path,
}
