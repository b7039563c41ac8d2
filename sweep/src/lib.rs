//! `leakcheck sweep`: a leak sweep of the rust-rocksdb binding itself.
//!
//! Each API path of [`paths::all_paths`] runs in a process of its own (jemalloc's counters are
//! process-wide) as a leakcheck `check`: a cycle makes the path's fixture (a DB, a transaction
//! DB, or nothing), repeats its call many times and drops the fixture. The bytes per call are the
//! slope of the run's unexplained bytes over cycles divided by the calls per cycle, with its
//! interval; the verdict is the run's. A path that leaks and is a known, written-up finding of the
//! binding on this release stays in the table with its write-up and does not fail the sweep.
//!
//! It uses the binding directly (what it sweeps has no wrapper) and leakcheck without default
//! features, so it builds on older releases: `scripts/sweep-older 0.24.0`.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // the binding itself is what is swept

use std::path::PathBuf;
use std::process::Command;

use leakcheck::harness::{CycleCtx, Lifecycle};
use leakcheck::{Ledger, Signal, Verdict};
use serde::{Deserialize, Serialize};

pub mod fuzz;
pub mod paths;
pub mod surface;

pub use paths::{all_paths, path, SweepPath, PATHS, PLANTED};

/// The rust-rocksdb release this build sweeps (read from the build's Cargo.lock).
pub const ROCKSDB_VERSION: &str = env!("LEAKCHECK_SWEEP_ROCKSDB");

/// Cycles per path: a leak of one byte per call is then 10 to 200 bytes per cycle, above the
/// byte tolerance (64 B per cycle) for the paths with 200 calls per cycle.
pub const CYCLES: u64 = 40;

/// Cycles a path may go on while its verdict is inconclusive (deciding every 10).
pub const MAX_CYCLES: u64 = 160;

/// A leak of the binding, written up, on the releases it affects.
#[derive(Debug, Clone, Copy)]
pub struct Finding {
    /// The sweep path that shows it.
    pub path: &'static str,
    /// The rust-rocksdb releases it leaks on.
    pub releases: &'static [&'static str],
    /// The write-up, relative to the repository.
    pub write_up: &'static str,
    /// The fuzz steps that show it (`op` or `op/class` of [`fuzz::ops::OPS`]): a shrunk leaking
    /// program with one of these steps is this finding.
    pub fuzz: &'static [&'static str],
}

/// Known leaks of the binding: five fixed in 0.25.0 (rust-rocksdb PRs #1063 and #1057, and the
/// compaction-filter and column-family-metadata fixes of its changelog), one fixed in 0.23.0 that
/// the fuzz found in 0.22.0, two the fuzz found that 0.25.0 still has. Each is listed on the
/// releases the fuzz found it on (`scripts/sweep-older VERSION --fuzz`, 2026-12-03).
pub const FINDINGS: &[Finding] = &[
    Finding {
        path: "options-compaction-filter",
        releases: &["0.22.0", "0.23.0", "0.24.0"],
        write_up: "docs/binding-leaks/compaction-filter.md",
        fuzz: &["options-compaction-filter"],
    },
    Finding {
        path: "cf-metadata",
        releases: &["0.22.0", "0.23.0", "0.24.0"],
        write_up: "docs/binding-leaks/cf-metadata-name.md",
        fuzz: &["cf-metadata", "cf-metadata-cf"],
    },
    Finding {
        path: "create-cf-existing-fails",
        releases: &["0.22.0", "0.23.0", "0.24.0"],
        write_up: "docs/binding-leaks/create-cf-failure.md",
        // Every class that fails the call: an existing name (conflicting, repeated), an empty one,
        // one RocksDB refuses.
        fuzz: &["create-cf/conflicting", "create-cf/repeated", "create-cf/empty", "create-cf/large"],
    },
    Finding {
        path: "options-comparator",
        releases: &["0.22.0", "0.23.0", "0.24.0"],
        write_up: "docs/binding-leaks/set-comparator.md",
        fuzz: &["options-comparator", "open-with-comparator"],
    },
    Finding {
        path: "open-with-comparator",
        releases: &["0.22.0", "0.23.0", "0.24.0"],
        write_up: "docs/binding-leaks/set-comparator.md",
        fuzz: &["options-comparator", "open-with-comparator"],
    },
    // Found by the fuzz (`leakcheck sweep --fuzz`), not fixed in 0.25.0 (the newest release).
    // Found by the fuzz on 0.22.0, fixed in 0.23.0.
    Finding {
        path: "options-ratelimiter",
        releases: &["0.22.0"],
        write_up: "docs/binding-leaks/ratelimiter-wrapper.md",
        fuzz: &["ratelimiter/valid", "ratelimiter/invalid", "ratelimiter/large"],
    },
    Finding {
        path: "list-cf-missing-fails",
        releases: &["0.22.0", "0.23.0", "0.24.0", "0.25.0"],
        write_up: "docs/binding-leaks/list-cf-failure.md",
        fuzz: &["list-cf/empty", "list-cf/conflicting", "list-cf/large"],
    },
    Finding {
        path: "key-may-exist-value-absent",
        releases: &["0.22.0", "0.23.0", "0.24.0", "0.25.0"],
        write_up: "docs/binding-leaks/key-may-exist-value.md",
        fuzz: &["cf-key-may-exist-value"],
    },
];

/// The written-up finding of `path` on the release this build sweeps.
pub fn finding(path: &str) -> Option<&'static Finding> {
    FINDINGS.iter().find(|f| f.path == path && f.releases.contains(&ROCKSDB_VERSION))
}

/// What went wrong in a sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A call of the binding failed where it should succeed.
    #[error("{what}: {source}")]
    RocksDb {
        /// The call.
        what: &'static str,
        /// The binding's error.
        source: rocksdb::Error,
    },
    /// A call that must fail (the error path is the point) succeeded.
    #[error("{0}: expected an error, the call succeeded")]
    ExpectedFailure(&'static str),
    /// The path's fixture lacks what its call needs (a bug in the catalog).
    #[error("fixture: {0}")]
    Fixture(&'static str),
    /// A file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// No path of that name.
    #[error("no sweep path `{0}`; paths: {1}")]
    UnknownPath(String, String),
    /// This program could not be found to run the paths in children.
    #[error("cannot find this program to run the paths: {0}")]
    Exe(std::io::Error),
    /// Native allocations are not visible to jemalloc, so there is no byte signal to sweep with.
    #[error("no byte signal: {0}")]
    Coverage(leakcheck::probe::ProbeError),
    /// The binding's source could not be read.
    #[error("the binding's source: {0}")]
    Surface(surface::SurfaceError),
    /// A fuzz program that is not valid.
    #[error("program: {0}")]
    Program(#[from] fuzz::program::ProgramError),
    /// The check of a path could not run.
    #[error("{path}: {message}")]
    Run {
        /// The path.
        path: String,
        /// What failed.
        message: String,
    },
    /// The child that runs a path or a program failed: it could not start, exited with an error,
    /// died by a signal, hung, or printed no outcome.
    #[error("{path}: {failure}")]
    Child {
        /// The path or `fuzz program`.
        path: String,
        /// How the child failed.
        #[source]
        failure: ChildFailure,
    },
}

impl SweepError {
    /// The signal a child died by, when that is the error.
    pub fn signal(&self) -> Option<i32> {
        match self {
            SweepError::Child { failure: ChildFailure::Signal { signal, .. }, .. } => Some(*signal),
            _ => None,
        }
    }
}

/// `": text"`, or nothing for an empty text (a child that died without a word).
fn after_colon(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// How a child (a path's or a fuzz program's check) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChildFailure {
    /// It could not be started.
    #[error("{exe}: {error}")]
    Spawn {
        /// The program.
        exe: String,
        /// The OS error.
        error: String,
    },
    /// It outlived [`CHILD_TIMEOUT`] and was killed.
    #[error("hung: killed after {seconds} s")]
    Hung {
        /// The timeout.
        seconds: u64,
    },
    /// Waiting for it failed.
    #[error("wait for the child: {0}")]
    Wait(String),
    /// It died by a signal (a crash in the binding or in RocksDB).
    #[error("{status}{}", after_colon(stderr))]
    Signal {
        /// The signal's number.
        signal: i32,
        /// The exit status as the OS describes it (`signal: 11 (SIGSEGV)`).
        status: String,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// It exited with an error.
    #[error("{status}{}", after_colon(stderr))]
    Exit {
        /// The exit status.
        status: String,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// It succeeded but printed no outcome that parses.
    #[error("no outcome ({error}): {stderr}")]
    NoOutcome {
        /// The parse error.
        error: String,
        /// What it wrote on stderr.
        stderr: String,
    },
}

/// One path's result: one row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathOutcome {
    /// The path's name.
    pub path: String,
    /// The rust-rocksdb release swept.
    pub rocksdb: String,
    /// The run's verdict.
    pub verdict: Verdict,
    /// Unexplained bytes per call: slope, and the interval's lower and upper ends.
    pub bytes_per_call: Option<[f64; 3]>,
    /// Calls per cycle.
    pub calls_per_cycle: u32,
    /// Cycles run.
    pub cycles: u64,
    /// Cycles in which a call failed.
    pub failed_cycles: u64,
    /// The first failure, if any (a failed call is a broken path, not a leak).
    pub first_error: Option<String>,
    /// The write-up, when the path is a known finding on this release.
    pub known: Option<String>,
    /// How each suppression was used, when the path ran with a suppression file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressions: Vec<leakcheck::suppress::SuppressionUse>,
}

impl PathOutcome {
    /// Whether this row fails the sweep: a leak that is not a written-up finding, or a path
    /// whose calls failed.
    pub fn fails(&self) -> bool {
        (self.verdict == Verdict::Leak && self.known.is_none()) || self.failed_cycles > 0
    }
}

/// A path as a store for leakcheck's harness.
struct PathStore {
    path: &'static SweepPath,
    dir: PathBuf,
    failed_cycles: u64,
    first_error: Option<String>,
}

impl PathStore {
    /// Counts a failed cycle and keeps the first error's text.
    fn failed<T>(&mut self, r: Result<T, SweepError>) -> Result<T, SweepError> {
        if let Err(e) = &r {
            self.failed_cycles += 1;
            self.first_error.get_or_insert_with(|| e.to_string());
        }
        r
    }
}

impl Lifecycle for PathStore {
    type Store = paths::Fixture;
    type Error = SweepError;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<paths::Fixture, SweepError> {
        let dir = self.dir.join(format!("cycle{}", ctx.cycle % 2));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|source| SweepError::Io { what: "clear the cycle's directory", source })?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|source| SweepError::Io { what: "make the cycle's directory", source })?;
        let fixture = self.path.setup(&dir);
        self.failed(fixture)
    }

    fn work(&mut self, fixture: &mut paths::Fixture, ctx: &CycleCtx<'_>) -> Result<(), SweepError> {
        let calls = u64::from(self.path.calls_per_cycle);
        let r = (0..calls).try_for_each(|i| self.path.call(fixture, ctx.cycle * calls + i));
        self.failed(r)
    }

    fn close(&mut self, fixture: paths::Fixture, _ctx: &CycleCtx<'_>) -> Result<(), SweepError> {
        drop(fixture);
        Ok(())
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    fn default_faults(&self) -> String {
        "none".to_string()
    }
}

/// What a run's cycles kept, per cycle: by the allocation record when it was read (exact: what
/// the judged cycles still held, at the look that found a leak or at the end; the record stops a
/// leaking run at its first look, before the counter has an estimate), else the counter's
/// growth estimate with its interval.
pub(crate) fn bytes_per_cycle(r: &leakcheck::report::RunReport) -> Option<[f64; 3]> {
    let record = r.signal(Signal::RetainedBytes).filter(|s| s.measured()).and_then(|s| s.retained.as_ref());
    match record {
        Some(held) => {
            let b = held.bytes_per_cycle();
            Some([b, b, b])
        }
        None => r.signal(Signal::UnexplainedBytes).and_then(|s| s.estimate).map(|e| [e.value, e.lower, e.upper]),
    }
}

/// Runs one path in this process (call it in a process of its own).
///
/// # Errors
/// When the scratch directory cannot be made or the check cannot run (for example, native
/// allocations are not visible to jemalloc: the error says what to enable).
pub fn run_path(path: &'static SweepPath) -> Result<PathOutcome, SweepError> {
    run_path_suppressed(path, None)
}

/// [`run_path`] with the known leaks of a suppression file accepted (`rust-rocksdb-0.25.toml`
/// beside this crate lists the locked release's): a path whose leak the file names is clean.
///
/// # Errors
/// As [`run_path`]; also a suppression file that cannot be read.
pub fn run_path_suppressed(
    path: &'static SweepPath,
    suppressions: Option<&std::path::Path>,
) -> Result<PathOutcome, SweepError> {
    // The sweep is its bytes: without them every path would come out inconclusive.
    leakcheck::probe::check_malloc_coverage().map_err(SweepError::Coverage)?;
    let scratch = tempfile::Builder::new()
        .prefix("leakcheck-sweep")
        .tempdir()
        .map_err(|source| SweepError::Io { what: "temporary directory", source })?;
    let ledger = Ledger::new();
    let mut store = PathStore { path, dir: scratch.path().to_path_buf(), failed_cycles: 0, first_error: None };
    let mut check = leakcheck::check(&mut store, &ledger).cycles(CYCLES).max_cycles(MAX_CYCLES).faults("none");
    if let Some(file) = suppressions {
        check = check.suppressions(file);
    }
    let outcome = check.run().map_err(|e| SweepError::Run { path: path.name.to_string(), message: e.to_string() })?;
    let r = &outcome.report;
    let calls = f64::from(path.calls_per_cycle);
    let bytes_per_call = bytes_per_cycle(r).map(|[v, lo, hi]| [v / calls, lo / calls, hi / calls]);
    Ok(PathOutcome {
        path: path.name.to_string(),
        rocksdb: ROCKSDB_VERSION.to_string(),
        verdict: r.verdict.verdict,
        bytes_per_call,
        calls_per_cycle: path.calls_per_cycle,
        cycles: r.cycles_run,
        failed_cycles: store.failed_cycles,
        first_error: store.first_error.clone(),
        known: finding(path.name).map(|f| f.write_up.to_string()),
        suppressions: r.suppressions.clone(),
    })
}

/// Runs `names` (every path of [`all_paths`] when empty; planted leaks only by name), each in its own process: `exe` with `args` and then
/// `--one NAME`, which must print the path's [`PathOutcome`] as JSON. Two at a time.
///
/// # Errors
/// An unknown name, or a path process that failed or printed no outcome.
pub fn run_all(exe: &std::path::Path, args: &[String], names: &[String]) -> Result<Vec<PathOutcome>, SweepError> {
    let mut chosen: Vec<&'static SweepPath> = if names.is_empty() {
        all_paths().collect()
    } else {
        names
            .iter()
            .map(|n| path(n).ok_or_else(|| SweepError::UnknownPath(n.clone(), all_names())))
            .collect::<Result<_, _>>()?
    };
    chosen.sort_by_key(|c| all_paths().chain(PLANTED).position(|p| p.name == c.name)); // the table's order
    leakcheck::workspace::in_parallel(chosen, 2, |p| run_child(exe, args, p)).into_iter().collect()
}

fn run_child(exe: &std::path::Path, args: &[String], p: &SweepPath) -> Result<PathOutcome, SweepError> {
    let args: Vec<String> = args.iter().cloned().chain(["--one".to_string(), p.name.to_string()]).collect();
    child_json(exe, &args).map_err(|failure| SweepError::Child { path: p.name.to_string(), failure })
}

/// The longest a child (a path's or a fuzz program's check, 1 to 10 s) may run before it is
/// killed as hung.
pub const CHILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

/// Runs `exe` with `args` in a child and reads the JSON it prints on stdout: what a path's or a
/// program's child reports. A child that exits with an error, dies by a signal or outlives
/// [`CHILD_TIMEOUT`] (killed then) is an error naming how, with its stderr.
fn child_json<T: serde::de::DeserializeOwned>(exe: &std::path::Path, args: &[String]) -> Result<T, ChildFailure> {
    use std::os::unix::process::ExitStatusExt as _;
    let mut child = Command::new(exe)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ChildFailure::Spawn { exe: exe.display().to_string(), error: e.to_string() })?;
    // Both pipes drained while the child runs, so that neither fills and stalls it.
    fn drain(pipe: Option<impl std::io::Read>) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut b);
        }
        b
    }
    let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
    let (status, stdout, stderr) = std::thread::scope(|s| {
        let out = s.spawn(move || drain(out_pipe));
        let err = s.spawn(move || drain(err_pipe));
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() > CHILD_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(ChildFailure::Hung { seconds: CHILD_TIMEOUT.as_secs() });
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Err(e) => break Err(ChildFailure::Wait(e.to_string())),
            }
        };
        (status, out.join().unwrap_or_default(), err.join().unwrap_or_default())
    });
    let status = status?;
    let stderr = String::from_utf8_lossy(&stderr).trim().to_string();
    if let Some(signal) = status.signal() {
        return Err(ChildFailure::Signal { signal, status: status.to_string(), stderr });
    }
    if !status.success() {
        return Err(ChildFailure::Exit { status: status.to_string(), stderr });
    }
    serde_json::from_slice(&stdout).map_err(|e| ChildFailure::NoOutcome { error: e.to_string(), stderr })
}

/// Every path's name, comma-separated (the planted ones last).
pub fn all_names() -> String {
    all_paths().chain(PLANTED).map(|p| p.name).collect::<Vec<_>>().join(", ")
}

/// The table: one row per path.
pub fn table(outcomes: &[PathOutcome]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let release = outcomes.first().map_or(ROCKSDB_VERSION, |o| o.rocksdb.as_str());
    let _ = writeln!(
        out,
        "leak sweep of rust-rocksdb {release}: unexplained bytes per call (95% interval), {CYCLES}+ cycles per path"
    );
    let _ = writeln!(out, "{:<28} {:>6} {:<13} {:>22}  note", "path", "calls", "verdict", "bytes/call [interval]");
    for o in outcomes {
        let bytes = o.bytes_per_call.map_or("-".to_string(), |[s, l, u]| format!("{s:.2} [{l:.2}, {u:.2}]"));
        let note = match (&o.known, &o.first_error) {
            (_, Some(e)) => format!("calls failed in {} cycles: {e}", o.failed_cycles),
            (Some(w), None) if o.verdict == Verdict::Leak => format!("known finding: {w}"),
            (Some(w), None) => format!("known on this release ({w}), not seen"),
            (None, None) if o.verdict == Verdict::Leak => "LEAK: not a known finding".to_string(),
            (None, None) => String::new(),
        };
        let _ = writeln!(out, "{:<28} {:>6} {:<13} {:>22}  {note}", o.path, o.calls_per_cycle, o.verdict.name(), bytes);
    }
    let leaks = outcomes.iter().filter(|o| o.verdict == Verdict::Leak).count();
    let known = outcomes.iter().filter(|o| o.verdict == Verdict::Leak && o.known.is_some()).count();
    let failing = outcomes.iter().filter(|o| o.fails()).count();
    let _ =
        writeln!(out, "{} paths: {leaks} leak ({known} known findings), {failing} failing the sweep", outcomes.len());
    out
}

/// The sweep's exit code: 1 when a row fails it, 3 when none does but a verdict stayed
/// inconclusive, else 0.
pub fn exit_code(outcomes: &[PathOutcome]) -> u8 {
    if outcomes.iter().any(PathOutcome::fails) {
        1
    } else if outcomes.iter().any(|o| o.verdict == Verdict::Inconclusive) {
        3
    } else {
        0
    }
}

/// The command line of a sweep binary (`rocksdb-sweep ARGS`, `leakcheck sweep ARGS`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SweepArgs {
    /// Print the outcomes as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Name the paths, with their calls per cycle, and exit.
    #[arg(long)]
    pub list: bool,
    /// Prove the byte signal works (C malloc visible to jemalloc) and exit.
    #[arg(long)]
    pub coverage: bool,
    /// Run one path in this process and print its outcome as JSON (what each child does).
    #[arg(long, value_name = "PATH")]
    pub one: Option<String>,
    /// The paths to run, each in a process of its own (default: every path but the planted ones).
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Sweep by generated programs instead of the list of paths: every op of the model with
    /// every argument class, then random sequences, each leak shrunk to a snippet.
    #[arg(long)]
    pub fuzz: bool,
    /// The fuzz's seed (default: from the clock, printed): the same seed draws the same programs.
    #[arg(long, requires = "fuzz")]
    pub seed: Option<u64>,
    /// Time for drawing and running programs (90s, 10m, 1h); leaks found are shrunk after it.
    #[arg(long, requires = "fuzz", value_parser = fuzz::parse_duration, default_value = "10m")]
    pub duration: std::time::Duration,
    /// At most this many programs.
    #[arg(long, requires = "fuzz")]
    pub programs: Option<u64>,
    /// Draw only from these ops (comma-separated; `--list-ops` names them).
    #[arg(long, requires = "fuzz", value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Add the planted ops (copies of binding functions with a leak; built with the `planted` feature).
    #[arg(long, requires = "fuzz")]
    pub plant: bool,
    /// Longest random program, in steps.
    #[arg(long, requires = "fuzz", default_value_t = 6, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub max_len: u64,
    /// Checks a shrink may spend on one leak.
    #[arg(long, requires = "fuzz", default_value_t = 40)]
    pub shrink_checks: u32,
    /// Write fuzz.json (the seed, every program and its result, the findings) and each
    /// finding's snippet (finding-N.rs) into this directory.
    #[arg(long, requires = "fuzz", value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Run one program (a JSON file as fuzz.json holds them, or `-` for standard input) and
    /// print its result and its snippet.
    #[arg(long, value_name = "FILE", conflicts_with = "fuzz")]
    pub program: Option<PathBuf>,
    /// Name the fuzz's ops, with their classes and the binding functions they reach, and exit.
    #[arg(long)]
    pub list_ops: bool,
    /// Print the reached-functions table: every public function of the binding that reaches
    /// RocksDB's C API, with the ops that call it or why none does; and exit.
    #[arg(long)]
    pub reached: bool,
    /// Run one program given as JSON in this process and print its result as JSON (what each
    /// fuzz child does).
    #[arg(long, value_name = "JSON", hide = true)]
    pub fuzz_one: Option<String>,
}

/// Runs a sweep binary's command line: `prefix` is what leads to it when the binary runs the
/// sweep as a subcommand (`sweep`), so that each path's child gets the same command. Exit 0
/// clean, 1 a leak that is not a known finding (or a failing path), 3 inconclusive, 2 error.
pub fn cli(prefix: &[&str], args: &SweepArgs) -> u8 {
    let name = leakcheck::workspace::tool_name();
    match run_cli(prefix, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{name}: {e}");
            2
        }
    }
}

fn run_cli(prefix: &[&str], args: &SweepArgs) -> Result<u8, SweepError> {
    if let Some(json) = &args.fuzz_one {
        let program: fuzz::program::Program = serde_json::from_str(json)
            .map_err(|e| SweepError::Run { path: "--fuzz-one".to_string(), message: e.to_string() })?;
        let run = fuzz::run_program(&program)?;
        let line = serde_json::to_string(&run)
            .map_err(|e| SweepError::Run { path: "--fuzz-one".to_string(), message: e.to_string() })?;
        println!("{line}");
        return Ok(0);
    }
    if args.list_ops {
        for op in fuzz::all_ops() {
            let classes: Vec<&str> = op.classes.iter().map(|c| c.name()).collect();
            println!("{:<28} {:<44} {}", op.name, classes.join(","), op.reaches.join(" "));
        }
        return Ok(0);
    }
    if args.reached {
        let src = surface::binding_source(ROCKSDB_VERSION).map_err(SweepError::Surface)?;
        let rows = fuzz::reached::table(&src).map_err(SweepError::Surface)?;
        if args.json {
            let text = serde_json::to_string_pretty(&rows)
                .map_err(|e| SweepError::Run { path: "reached".to_string(), message: e.to_string() })?;
            println!("{text}");
        } else {
            print!("{}", fuzz::reached::render(&rows, ROCKSDB_VERSION));
        }
        return Ok(0);
    }
    let exe = || -> Result<fuzz::Exe, SweepError> {
        Ok(fuzz::Exe {
            path: std::env::current_exe().map_err(SweepError::Exe)?,
            prefix: prefix.iter().map(|p| p.to_string()).collect(),
        })
    };
    if let Some(file) = &args.program {
        let text = if file.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin())
        } else {
            std::fs::read_to_string(file)
        }
        .map_err(|source| SweepError::Io { what: "read the program", source })?;
        let program: fuzz::program::Program = serde_json::from_str(&text).map_err(|e| SweepError::Run {
            path: file.display().to_string(),
            message: format!("not a program: {e}"),
        })?;
        fuzz::program::validate(&program)?;
        let run = exe()?.run(&program)?;
        let bytes = run.bytes_per_run.map_or("-".to_string(), |[v, lo, hi]| format!("{v:.1} B [{lo:.1}, {hi:.1}]"));
        println!("{}: {} per run, {} runs per cycle, {} cycles", run.verdict.name(), bytes, run.reps, run.cycles);
        for (step, ran) in program.steps.iter().zip(&run.results) {
            println!("  {:<40} {ran:?}", step.label());
        }
        println!("{}", fuzz::program::snippet(&program, &[format!("rust-rocksdb {ROCKSDB_VERSION}")]));
        return Ok(if run.verdict == Verdict::Leak { 1 } else { 0 });
    }
    if args.fuzz {
        leakcheck::probe::check_malloc_coverage().map_err(SweepError::Coverage)?;
        let seed = args.seed.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs())
        });
        eprintln!("fuzz: seed {seed} (replay with --seed {seed})");
        let cfg = fuzz::FuzzConfig {
            seed,
            duration: args.duration,
            programs: args.programs,
            ops: args.ops.clone(),
            plant: args.plant,
            max_len: args.max_len as usize,
            shrink_checks: args.shrink_checks,
            report: args.report.clone(),
        };
        let report = fuzz::fuzz(&exe()?, &cfg, |line| eprintln!("fuzz: {line}"))?;
        if args.json {
            let text = serde_json::to_string_pretty(&report)
                .map_err(|e| SweepError::Run { path: "fuzz".to_string(), message: e.to_string() })?;
            println!("{text}");
        } else {
            print!("{}", fuzz::summary(&report));
        }
        return Ok(if report.new_leaks() > 0 { 1 } else { 0 });
    }
    if let Some(n) = &args.one {
        let p = path(n).ok_or_else(|| SweepError::UnknownPath(n.clone(), all_names()))?;
        let o = run_path(p)?;
        let line =
            serde_json::to_string(&o).map_err(|e| SweepError::Run { path: n.clone(), message: e.to_string() })?;
        println!("{line}");
        return Ok(0);
    }
    if args.list {
        for p in all_paths().chain(PLANTED) {
            println!("{:<28} {:>4} calls/cycle  {}", p.name, p.calls_per_cycle, p.what);
        }
        return Ok(0);
    }
    let c = leakcheck::probe::check_malloc_coverage().map_err(SweepError::Coverage)?;
    if args.coverage {
        println!(
            "allocator coverage: C malloc of {} B moved jemalloc's stats.allocated by +{} B (rust-rocksdb {ROCKSDB_VERSION})",
            c.native_bytes, c.allocated_delta_bytes
        );
        return Ok(0);
    }
    let exe = std::env::current_exe().map_err(SweepError::Exe)?;
    let prefix: Vec<String> = prefix.iter().map(|p| p.to_string()).collect();
    let outcomes = run_all(&exe, &prefix, &args.paths)?;
    if args.json {
        let text = serde_json::to_string_pretty(&outcomes)
            .map_err(|e| SweepError::Run { path: "all".to_string(), message: e.to_string() })?;
        println!("{text}");
    } else {
        print!("{}", table(&outcomes));
    }
    Ok(exit_code(&outcomes))
}
