//! leakcheck's command line: `check`, `soak` and `compare` with leakcheck's flags, output and exit
//! codes (0 clean, 1 leak or regression, 2 bad input or environment, 3 inconclusive), for any
//! store. Parsing and printing only: every decision is the library's ([`leakcheck::runner::run`]).
//! The `leakcheck` binary (feature `reference`, the default) is this command line on the built-in
//! reference store, with the catalogs and the binding sweep beside it; a user's soak binary takes
//! this crate without default features.
//!
//! A user's soak binary, with a flag of its own:
//!
//! ```no_run
//! # struct Kv; impl Kv { fn open(_: &std::path::Path, _: &leakcheck::Ledger, _: u32) -> Result<Kv, std::io::Error> { Ok(Kv) } }
//! # impl leakcheck::Lifecycle for Kv { type Store = (); type Error = String;
//! #   fn fault_points(&self) -> Vec<&'static str> { vec![] }
//! #   fn open(&mut self, _: &leakcheck::CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #   fn work(&mut self, _: &mut (), _: &leakcheck::CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #   fn close(&mut self, _: (), _: &leakcheck::CycleCtx<'_>) -> Result<(), String> { Ok(()) } }
//! #[derive(clap::Args, Debug, Clone)]
//! struct KvArgs {
//!     /// Shards of the store.
//!     #[arg(long, default_value_t = 2)]
//!     shards: u32,
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     leakcheck_cli::main(|args: &KvArgs, env| Kv::open(env.dir, env.ledger, args.shards))
//! }
//! ```
//! `kv-soak check`, `kv-soak soak --duration 8h --report DIR`, `kv-soak compare OLD NEW`, and
//! `--shards` on check and soak. A binary with no flags of its own takes [`NoArgs`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, FromArgMatches, Subcommand};

use leakcheck::harness::Lifecycle;
use leakcheck::report::CompareLimits;
use leakcheck::runner::{
    compare_to_page, run, Annotations, Mode, RunError, RunOptions, StoreEnv, DEFAULT_REPORT_EVERY, DEFAULT_SEED,
};
use leakcheck::Depth;

/// The flags of `check` and `soak`, one per field of [`RunOptions`] that a command line sets, and
/// how to print the outcome.
#[derive(Args, Debug, Clone)]
#[non_exhaustive]
pub struct RunArgs {
    /// Cycles to run (with `duration`: at most this many). Default: [`DEFAULT_CHECK_CYCLES`](leakcheck::runner::DEFAULT_CHECK_CYCLES)
    /// for `check`, which then stops clean at [`EARLY_LOOK_CYCLES`](leakcheck::runner::EARLY_LOOK_CYCLES)
    /// when nothing is in question; a soak needs this or `duration`.
    #[arg(
        long,
        help = "Cycles to run (with --duration: at most this many); check's default: 200, stopping clean at 100 when nothing is in question"
    )]
    pub cycles: Option<u64>,
    /// Run for this long.
    #[arg(long, value_parser = parse_duration, help = "Run for this long (for example 90s, 30m, 8h, 1h30m)")]
    pub duration: Option<Duration>,
    /// `check` with cycles: how far to go on while the memory verdict is inconclusive
    /// (default [`DEFAULT_MAX_CYCLES_FACTOR`](leakcheck::runner::DEFAULT_MAX_CYCLES_FACTOR) times the cycles; equal to the cycles: never).
    #[arg(
        long,
        help = "check: when the memory verdict is still inconclusive after --cycles, go on, deciding every 10 \
                    cycles, up to this many cycles (default: 4 x --cycles; equal to --cycles: never)"
    )]
    pub max_cycles: Option<u64>,
    /// The fault plan (`close.marker=10%,open.db=nth:2`, or `none`). Default: the environment
    /// variable [`FAULTS_ENV`](leakcheck::fault::FAULTS_ENV) when set, else [`Lifecycle::default_faults`].
    #[arg(
        long,
        help = "Fault plan, for example `close.marker=10%,open.db=nth:2` (default: the store's, which reaches its \
                    error paths; LEAKCHECK_FAULTS when set; `none` for no faults)"
    )]
    pub faults: Option<String>,
    /// Seed of the plan's probabilities.
    #[arg(long, default_value_t = DEFAULT_SEED, help = "Seed of the fault plan's probabilities")]
    pub seed: u64,
    /// The ledger's tracking depth. Default: `LEAKCHECK_TRACKING` when set, else sites.
    #[arg(long, help = "Ledger tracking depth: counts, sites or backtraces (default: LEAKCHECK_TRACKING, else sites)")]
    pub tracking: Option<Depth>,
    /// Directory for the report (report.html, report.json, samples.csv, plot.svg and, with feature `png`,
    /// plot.png). Required by `soak`.
    #[arg(long, help = "Directory for the report (report.html, report.json, samples.csv, plot.svg, plot.png)")]
    pub report: Option<PathBuf>,
    /// Rewrite the report every this many cycles.
    #[arg(
            long,
            default_value_t = DEFAULT_REPORT_EVERY,
            value_parser = clap::value_parser!(u64).range(1..),
            help = "Rewrite the report every this many cycles"
        )]
    pub report_every: u64,
    /// Take a memory sample every this many cycles (default: 1 for check, 5 for soak).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), help = "Take a memory sample every this many cycles")]
    pub sample_every: Option<u64>,
    /// Where the store's data lives (default: a temporary directory, removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Treat native allocations as invisible to jemalloc
    /// ([`leakcheck::harness::simulated_invisible_allocations`]): the test suite uses it to prove such
    /// a run ends inconclusive, never clean.
    #[arg(long, hide = true)]
    pub simulate_invisible_allocations: bool,
    /// `check`: run every cycle asked even once the verdict cannot change (by default check stops
    /// after the first cycle an exact signal's residue makes it a leak, unless it profiles the
    /// heap, whose stacks need the cycles), for a full table.
    #[arg(long, help = "check: run every cycle asked even once the verdict is decided (a full table)")]
    pub all_cycles: bool,
    /// How long the handle check keeps waiting for retained handles once nothing in the process
    /// could release them (default 100 ms, [`HarnessConfig::handle_quiet`](leakcheck::HarnessConfig::handle_quiet)): raise it above the
    /// delay of a close deferred where no thread, CPU or release shows it (a close queued on an
    /// idle pool thread that first sleeps).
    #[arg(
            long,
            value_name = "DURATION",
            value_parser = parse_duration,
            help = "How long the handle check waits for retained handles once nothing could release them (default \
                    100ms; at most the 2 s bound): raise it above the delay of a close deferred on an idle thread"
        )]
    pub handle_quiet: Option<Duration>,
    /// Record every allocation with the cycle that made it (allocation generations, default on;
    /// [`HarnessConfig::generations`](leakcheck::HarnessConfig::generations)).
    #[arg(
            long,
            value_name = "on|off",
            default_value = "on",
            action = clap::ArgAction::Set,
            value_parser = parse_on_off,
            help = "Record every allocation with the cycle that made it (allocation generations): on (default) or off"
        )]
    pub generations: bool,
    /// Profile the heap (feature `profiling`): sample one allocation per `2^N` bytes from the
    /// end of the first cycle, dump jemalloc's profile after the warm-up and at the end, and report the call
    /// stacks whose live bytes grew ([`RunReport::heap_growth`](leakcheck::report::RunReport::heap_growth), and in the report directory
    /// `heap-first.pb.gz`, `heap-last.pb.gz`, `heap-growth.folded`). jemalloc must have been
    /// started with profiling (`leakcheck::heap_profiling_ready!()` in the binary, or
    /// `MALLOC_CONF=prof:true,prof_active:false`).
    #[arg(
            long,
            value_name = "N",
            num_args = 0..=1,
            default_missing_value = "19",
            help = "Profile the heap with jemalloc's sampler, one sample per 2^N bytes (default 19, 512 KiB), and report \
                    the call stacks that grew; needs a build with the `profiling` feature, started with profiling ready \
                    (see docs/guide.md)"
        )]
    pub profile: Option<u32>,
    /// Print the report as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print every signal, the raw ones shown for reference too, and the totals (by default:
    /// the summary, the findings and the judged signals).
    #[arg(
        long,
        short,
        help = "Print every signal (the raw ones shown for reference too) and the totals; by default the summary, \
                the findings and the judged signals"
    )]
    pub verbose: bool,
    /// Publish the findings for CI: `github` prints GitHub Actions' workflow commands at the
    /// leaking lines and appends a job summary to `$GITHUB_STEP_SUMMARY`; `auto` (the default)
    /// does so inside GitHub Actions (`GITHUB_ACTIONS=true`); `none` never.
    #[arg(
        long,
        value_name = "WHERE",
        default_value = "auto",
        value_parser = |s: &str| s.parse::<Annotations>(),
        help = "Annotations for CI: github (workflow commands at the leaking lines, a job summary), none, or auto                 (github inside GitHub Actions)"
    )]
    pub annotations: Annotations,
    /// Also write the verdict as JUnit XML here: one test case per judged signal, a failure per
    /// leak with what leaked and where.
    #[arg(long, value_name = "FILE", help = "Also write the verdict as JUnit XML (a test case per judged signal)")]
    pub junit: Option<PathBuf>,
    /// Known leaks to accept, each with its reason (default: `leakcheck.toml` in the current
    /// directory, when there is one).
    #[arg(
        long,
        value_name = "FILE",
        help = "Known leaks to accept, each with its reason (default: ./leakcheck.toml when present)"
    )]
    pub suppressions: Option<PathBuf>,
    /// A baseline report (report.json of an earlier run): fail only on a leak it did not have,
    /// or one larger per cycle by more than `--baseline-margin`.
    #[arg(
        long,
        value_name = "REPORT",
        help = "A baseline report.json: fail only on a leak it did not have, or one larger per cycle beyond the margin"
    )]
    pub baseline: Option<PathBuf>,
    /// How much larger per cycle than the baseline's a known leak may be, as a fraction.
    #[arg(
        long,
        value_name = "FRACTION",
        default_value_t = leakcheck::report::DEFAULT_BASELINE_MARGIN,
        help = "How much larger per cycle than the baseline's a known leak may be (a fraction)"
    )]
    pub baseline_margin: f64,
}

impl RunArgs {
    /// The runner's options for `mode`, as the command line runs them: interruptible by SIGINT
    /// and SIGTERM, with progress on stderr unless `check --json`.
    pub fn options(&self, mode: Mode) -> RunOptions {
        let mut o = RunOptions::new(mode);
        o.cycles = self.cycles;
        o.duration = self.duration;
        o.max_cycles = self.max_cycles;
        o.faults = self.faults.clone();
        o.seed = self.seed;
        o.tracking = self.tracking;
        o.report = self.report.clone();
        o.report_every = self.report_every;
        o.sample_every = self.sample_every;
        o.dir = self.dir.clone();
        o.simulate_invisible_allocations = self.simulate_invisible_allocations;
        o.all_cycles = self.all_cycles;
        o.handle_quiet = self.handle_quiet;
        o.generations = self.generations;
        o.profile = self.profile;
        o.annotations = self.annotations;
        o.junit = self.junit.clone();
        o.suppressions = self.suppressions.clone();
        o.baseline = self.baseline.clone();
        o.baseline_margin = self.baseline_margin;
        o.progress = !(self.json && mode == Mode::Check);
        o.interruptible = true;
        o
    }
}

/// The flags of `compare`.
#[derive(Args, Debug, Clone)]
#[non_exhaustive]
pub struct CompareArgs {
    /// The older report.json.
    pub old: PathBuf,
    /// The newer report.json.
    pub new: PathBuf,
    /// Allowed growth of the leak rate, bytes per cycle.
    #[arg(long, default_value_t = 64.0)]
    pub max_rate_increase: f64,
    /// Allowed growth of the time per cycle, in percent.
    #[arg(long, default_value_t = 25.0)]
    pub max_overhead_increase: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the comparison as a page: both runs' series on one plot (from the samples.csv
    /// beside each report.json) and the table of what regressed.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// A store binary's subcommands; `S` holds the store's own flags (flattened into check and
/// soak). Embed it in a larger command line with `#[command(flatten)]`.
#[derive(Subcommand, Debug, Clone)]
pub enum StoreCommand<S: Args> {
    /// Leak-check the store: verdict table, exit 0 clean, 1 leak, 3 inconclusive.
    Check {
        /// Run settings.
        #[command(flatten)]
        run: RunArgs,
        /// The store's settings.
        #[command(flatten)]
        store: S,
    },
    /// A long run with progress, a crash-safe report rewritten as it goes, and plots.
    Soak {
        /// Run settings.
        #[command(flatten)]
        run: RunArgs,
        /// The store's settings.
        #[command(flatten)]
        store: S,
    },
    /// Compare two reports (old, new): exit 1 when the new run regressed in verdict, leak rate or
    /// time per cycle.
    Compare(CompareArgs),
}

/// No flags of the store's own.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct NoArgs {}

/// Parses the command line (`check`, `soak`, `compare`, with the store's flags `S`), runs it
/// with stores made by `make`, prints the outcome and returns the exit code. Errors print one
/// line, `NAME: problem`, to stderr (exit 2).
pub fn main<S, L, E, F>(make: F) -> ExitCode
where
    S: Args,
    L: Lifecycle,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
    F: FnOnce(&S, &StoreEnv<'_>) -> Result<L, E>,
{
    let name = tool_name();
    let command = StoreCommand::<S>::augment_subcommands(clap::Command::new(name.clone()))
        .subcommand_required(true)
        .arg_required_else_help(true);
    let parsed = command.try_get_matches().and_then(|m| StoreCommand::<S>::from_arg_matches(&m));
    match parsed {
        Ok(cmd) => exit(&name, execute(cmd, make)),
        Err(e) => parse_error(&name, e),
    }
}

/// Runs a parsed [`StoreCommand`] and prints its outcome: the exit code (0 clean, 1 leak or
/// regression, 3 inconclusive).
///
/// # Errors
/// [`RunError`]: exit 2 ([`exit`] prints it).
pub fn execute<S, L, E, F>(command: StoreCommand<S>, make: F) -> Result<u8, RunError>
where
    S: Args,
    L: Lifecycle,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
    F: FnOnce(&S, &StoreEnv<'_>) -> Result<L, E>,
{
    let (mode, args, store) = match command {
        StoreCommand::Check { run, store } => (Mode::Check, run, store),
        StoreCommand::Soak { run, store } => (Mode::Soak, run, store),
        StoreCommand::Compare(c) => return compare_command(&c),
    };
    let options = args.options(mode);
    let outcome = run(&options, |env| make(&store, env))?;
    // Workflow commands are read from either stream; with --json stdout is the report alone.
    let annotations = outcome.annotations();
    if args.json {
        eprint!("{annotations}");
        println!("{}", outcome.json());
    } else {
        print!("{annotations}");
        print!("{}", if args.verbose { outcome.table() } else { outcome.brief() });
        if let Some(dir) = &outcome.report_dir {
            println!("report: {}", dir.display());
        }
    }
    Ok(outcome.exit_code())
}

fn compare_command(c: &CompareArgs) -> Result<u8, RunError> {
    let limits = CompareLimits {
        max_rate_increase_bytes: c.max_rate_increase,
        max_overhead_increase: c.max_overhead_increase / 100.0,
    };
    let cmp = compare_to_page(&c.old, &c.new, limits, c.html.as_deref())?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&cmp).unwrap_or_default());
    } else {
        let rate = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} B/cycle"));
        println!("verdict       {} -> {}", cmp.verdicts.0, cmp.verdicts.1);
        println!("leak rate     {} -> {}", rate(cmp.rates.0), rate(cmp.rates.1));
        println!("retained      {} -> {}", rate(cmp.retained.0), rate(cmp.retained.1));
        println!("time/cycle    {:.2} ms -> {:.2} ms", cmp.ms_per_cycle.0, cmp.ms_per_cycle.1);
        if cmp.regressions.is_empty() {
            println!("no regression");
        }
        for r in &cmp.regressions {
            println!("regression: {r}");
        }
    }
    Ok(u8::from(!cmp.regressions.is_empty()))
}

pub use leakcheck::workspace::tool_name;

/// The exit code of a command's result; an error is printed as one line, `NAME: problem` (exit 2).
pub fn exit(name: &str, result: Result<u8, impl std::error::Error>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("{name}: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// Help and version print as clap prints them (exit 0; 2 when a subcommand is missing); any
/// other parse error is one line, `NAME: problem (see NAME --help)`, exit 2.
pub fn parse_error(name: &str, e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            eprintln!("{name}: {line} (see {name} --help)");
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, leaving out a cause whose text the line already holds
/// (typed errors here print their source themselves).
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// Parses `on` or `off` (`--generations`).
///
/// # Errors
/// A text naming what was expected.
pub fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("invalid value `{text}`: expected on or off")),
    }
}

/// Parses `90s`, `30m`, `8h`, `2d`, `1h30m`, `500ms`; a bare number is seconds.
///
/// # Errors
/// A text naming what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration `{text}`: expected for example 90s, 30m, 8h or 1h30m");
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let too_long = || format!("invalid duration `{text}`: too long");
        let secs = |per: u64| n.checked_mul(per).map(Duration::from_secs).ok_or_else(too_long);
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => secs(60)?,
            "h" => secs(3600)?,
            "d" => secs(86_400)?,
            _ => return Err(bad()),
        };
        total = total.checked_add(unit).ok_or_else(too_long)?;
        rest = &rest[unit_len..];
    }
    if total.is_zero() {
        return Err(format!("invalid duration `{text}`: must be longer than zero"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("8h"), Ok(Duration::from_secs(28800)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in [
            "",
            "8x",
            "h",
            "1.5h",
            "-3s",
            "0s",
            "3 h",
            "99999999999999999999h",
            "6000000000000000h",
            "18446744073709551615s1s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
