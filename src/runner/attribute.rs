//! `#[leakcheck::test]`: an ordinary test's body run as the cycles of a leak check.
//!
//! The body is the cycle: the check runs it under the judgement of [`check`](super::check) and
//! fails the test with the summary line and the findings unless the verdict is clean. Its first
//! look comes as soon as the record can decide ([`TEST_MIN_CYCLES`]: the warm-up and 3 judged
//! cycles, the last run aside): a body that gives back everything it allocated is clean there.
//! Under a fault plan the first look is at [`DEFAULT_TEST_MAX_CYCLES`]: a failure path needs
//! cycles to fire in before a clean verdict can speak for it.
//! Undecided, it goes on, looking every 10 cycles, up to [`DEFAULT_TEST_MAX_CYCLES`]; a leak stops
//! it at the cycle that decides it.
//!
//! **One check per process.** The byte and OS signals are process-wide. Under `cargo nextest`
//! every test has a process of its own, and the check runs in place. Under `cargo test` the
//! tests of a binary are threads of one process: an annotated test runs its own binary again as a
//! child, filtered to its exact name with one test thread, and takes the child's verdict (written
//! to a file the parent names), the way rusty-fork isolates a test. The parent judges nothing.
//!
//! **Its files.** The body's `TMPDIR` is a directory of the check's own, watched as a store's data
//! directory is: a file the body makes with `tempfile` (or under `std::env::temp_dir()`) and
//! leaves open, or mapped, when a cycle ends is an exact leak (`open_fds_under_dir`). Files
//! elsewhere, maps and threads are shown, not judged, in runs this short.
//!
//! **What fails the test.** A verdict other than clean; the body's own failure (a panic, or an
//! `Err`) in a cycle where no fault point fired, which is the test failing as it would without
//! the attribute (a panic is raised again with its payload, so `#[should_panic]` holds); a fault
//! plan naming a point the body never checked; a body checking points when no plan names them;
//! and a test binary whose allocations jemalloc does not see (the message names the line to add).
//! A failure the plan caused (an error or a panic in a cycle where a point fired) is the path the
//! check exists to run.

use std::any::Any;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::drive::drive;
use super::plan::validate_from;
use super::{Mode, RunOptions, DEFAULT_MAX_CYCLES_FACTOR, DEFAULT_SEED};
use crate::fault::FAULTS_ENV;
use crate::harness::{CycleCtx, Lifecycle, StoreInfo};
use crate::{ledger::Ledger, verdict::Verdict};

/// Cycles of an annotated test before the first judged one: what the first run keeps on
/// purpose (a `OnceLock`, a logger, RocksDB's thread pools and its process-wide state) is made in
/// it, and one more cycle lets a second-use initialisation settle. A test body has no cache to
/// fill and no arena to grow across cycles, as a long-lived store has (whose runs skip 20).
pub const TEST_WARMUP_CYCLES: usize = 2;

/// Cycles of an annotated test's first look, and the fewest `cycles` it takes: the warm-up, the
/// 3 judged cycles after which a record holding nothing old is clean, and the last cycle run
/// (never judged: it may still carry state).
pub const TEST_MIN_CYCLES: u64 = TEST_WARMUP_CYCLES as u64 + crate::verdict::retained::EARLY_JUDGED_CYCLES + 1;

/// How far an annotated test goes on while undecided, unless its attribute says otherwise
/// (`max_cycles`; with `cycles` and no `max_cycles`, four times its cycles).
pub const DEFAULT_TEST_MAX_CYCLES: u64 = 30;

/// Set in an annotated test's child process: the name of the one test it runs in place.
const CHILD_ENV: &str = "LEAKCHECK_TEST_CHILD";
/// Set in the child: the file it writes its verdict to, for the parent.
const OUTCOME_ENV: &str = "LEAKCHECK_TEST_OUTCOME";
/// Set in the child: the temporary directory the parent made for it (its `TMPDIR` too).
const TMPDIR_ENV: &str = "LEAKCHECK_TEST_TMPDIR";
/// When set, a directory: each annotated test writes its report directory (report.html,
/// report.json, ...) under it, named after the test.
pub const REPORTS_ENV: &str = "LEAKCHECK_TEST_REPORTS";

/// An annotated test's settings, as `#[leakcheck::test(...)]` wrote them.
#[doc(hidden)]
#[derive(Debug)]
pub struct TestSpec {
    /// `module_path!()::name`.
    pub path: &'static str,
    /// The test's file.
    pub file: &'static str,
    /// The test function's line.
    pub line: u32,
    /// `cycles`.
    pub cycles: Option<u64>,
    /// `max_cycles`.
    pub max_cycles: Option<u64>,
    /// `faults`.
    pub faults: Option<&'static str>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `suppressions`, from the package's root.
    pub suppressions: Option<&'static str>,
    /// `generations`.
    pub generations: bool,
}

/// The attribute's cycles, checked while the test compiles (a constant assertion).
#[doc(hidden)]
pub const fn check_cycles(cycles: Option<u64>, max_cycles: Option<u64>) {
    let first = match cycles {
        Some(c) => c,
        None => TEST_MIN_CYCLES,
    };
    if first < TEST_MIN_CYCLES {
        panic!("leakcheck::test: `cycles` is below leakcheck::runner::attribute::TEST_MIN_CYCLES: fewer cannot decide");
    }
    if let Some(m) = max_cycles {
        if m < first {
            panic!("leakcheck::test: `max_cycles` is below `cycles`");
        }
    }
}

/// What an annotated test's body may return: `()` or `Result<(), E: Debug>`.
#[doc(hidden)]
pub trait TestReturn {
    /// The body's failure, described as the test harness would.
    fn failure(self) -> Option<String>;
}

impl TestReturn for () {
    fn failure(self) -> Option<String> {
        None
    }
}

impl<E: std::fmt::Debug> TestReturn for Result<(), E> {
    fn failure(self) -> Option<String> {
        self.err().map(|e| format!("Error: {e:?}"))
    }
}

/// The ledger of the `#[leakcheck::test]` check running in this process: give it to the tracked
/// wrappers in a body, and handles the body keeps are found exactly, with the line that made
/// them. Outside such a check it is a ledger like any other.
pub fn test_ledger() -> &'static Ledger {
    static LEDGER: OnceLock<Ledger> = OnceLock::new();
    LEDGER.get_or_init(Ledger::new)
}

/// How an annotated test failed.
enum Failure {
    /// The body panicked on its own: raised again with its payload.
    Panic(Box<dyn Any + Send>),
    /// Anything else, said in words.
    Said(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::Panic(p) => panic_text(p.as_ref()),
            Failure::Said(s) => s.clone(),
        }
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic with a payload that is not a string".to_string())
}

/// Runs an annotated test: in place under nextest (or as the child of a `cargo test` parent),
/// else in a child process of its own. Panics unless the verdict is clean.
#[doc(hidden)]
pub fn run<R: TestReturn>(spec: &TestSpec, body: fn() -> R) {
    let name = libtest_name(spec.path);
    let child = std::env::var(CHILD_ENV).is_ok_and(|n| n == name);
    let result = if child || std::env::var_os("NEXTEST").is_some() {
        let result = in_place(spec, body);
        if child {
            if let Some(file) = std::env::var_os(OUTCOME_ENV) {
                write_outcome(Path::new(&file), &result);
            }
        }
        result
    } else {
        in_child(name)
    };
    match result {
        Ok(summary) => println!("{summary}"),
        Err(Failure::Panic(payload)) => resume_unwind(payload),
        Err(Failure::Said(text)) => panic!("{text}"),
    }
}

/// The test's name as the test harness knows it: the module path without the crate.
fn libtest_name(path: &str) -> &str {
    path.split_once("::").map_or(path, |(_, rest)| rest)
}

/// The child's verdict for the parent: `clean` or `fail`, a newline, then the words.
fn write_outcome(file: &Path, result: &Result<String, Failure>) {
    let text = match result {
        Ok(summary) => format!("clean\n{summary}"),
        Err(f) => format!("fail\n{}", f.text()),
    };
    if let Err(e) = std::fs::write(file, text) {
        eprintln!("leakcheck::test: cannot write the verdict to {}: {e}", file.display());
    }
}

/// Runs the test again as a child process of this binary and returns its verdict.
fn in_child(name: &str) -> Result<String, Failure> {
    let exe = std::env::current_exe().map_err(|e| {
        Failure::Said(format!(
            "leakcheck::test: cannot find this test binary to run {name} in a process of its own: {e}"
        ))
    })?;
    let scratch = tempfile::Builder::new().prefix("leakcheck-test-").tempdir().map_err(|e| {
        Failure::Said(format!("leakcheck::test: cannot make a temporary directory for {name}'s verdict: {e}"))
    })?;
    let file = scratch.path().join("outcome");
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| {
        Failure::Said(format!("leakcheck::test: cannot make {}'s temporary directory: {e}", tmp.display()))
    })?;
    let out = Command::new(&exe)
        .args([name, "--exact", "--test-threads", "1", "--include-ignored", "--nocapture"])
        .env(CHILD_ENV, name)
        .env(OUTCOME_ENV, &file)
        .env(TMPDIR_ENV, &tmp)
        .env("TMPDIR", &tmp)
        .output()
        .map_err(|e| Failure::Said(format!("leakcheck::test: cannot run {} for {name}: {e}", exe.display())))?;
    let printed = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter(|l| !harness_chatter(l, name))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    print!("{}", printed(&out.stdout));
    eprint!("{}", printed(&out.stderr));
    match std::fs::read_to_string(&file) {
        Ok(text) => match text.split_once('\n') {
            Some(("clean", summary)) => Ok(summary.to_string()),
            Some(("fail", words)) => Err(Failure::Said(words.to_string())),
            _ => Err(Failure::Said(format!("leakcheck::test: {name}'s child wrote an unreadable verdict: {text:?}"))),
        },
        Err(_) => Err(Failure::Said(format!(
            "leakcheck::test: {name}'s child process ({}) ended with {} before giving a verdict (its output is above)",
            exe.display(),
            out.status
        ))),
    }
}

/// The test harness's own lines in the child's output.
fn harness_chatter(line: &str, name: &str) -> bool {
    line.is_empty()
        || line.starts_with("running 1 test")
        || line.starts_with("test result:")
        || line.starts_with(&format!("test {name} ..."))
}

/// Runs the check in this process.
fn in_place<R: TestReturn>(spec: &TestSpec, body: fn() -> R) -> Result<String, Failure> {
    require_jemalloc(spec)?;
    let said = |e: &dyn std::fmt::Display| Failure::Said(format!("leakcheck::test {}: {e}", spec.path));
    let (tmp, _made) = temporary_directory().map_err(|e| said(&e))?;
    let plan = match (spec.faults, std::env::var(FAULTS_ENV)) {
        (Some(p), _) => Some(p.to_string()),
        (None, Ok(p)) => Some(p),
        (None, Err(_)) => None,
    };
    // A failure path needs cycles to fire in: with a plan in force the first look waits for the
    // cycles the verdict would go on to anyway, so that a clean verdict has seen the plan fire.
    let planned = plan
        .as_deref()
        .is_some_and(|p| p.trim() != "none" && crate::fault::FaultPlan::parse(p).is_ok_and(|p| !p.is_empty()));
    let first = if planned { DEFAULT_TEST_MAX_CYCLES } else { TEST_MIN_CYCLES };
    let cycles = spec.cycles.unwrap_or(first);
    let most = match spec.cycles {
        Some(c) => c.saturating_mul(DEFAULT_MAX_CYCLES_FACTOR),
        None => DEFAULT_TEST_MAX_CYCLES,
    };
    let mut options = RunOptions::new(Mode::Check);
    options.cycles = Some(cycles);
    options.max_cycles = Some(spec.max_cycles.unwrap_or(most));
    options.faults = Some(plan.clone().unwrap_or_else(|| "none".to_string()));
    options.seed = spec.seed.unwrap_or(DEFAULT_SEED);
    options.suppressions = spec.suppressions.map(PathBuf::from);
    options.generations = spec.generations;
    options.tracking = Some(test_ledger().depth());
    if let Some(dir) = std::env::var_os(REPORTS_ENV) {
        options.report = Some(Path::new(&dir).join(spec.path.replace("::", "-")));
    }
    let mut checked = validate_from(&options, TEST_MIN_CYCLES).map_err(|e| said(&e))?;
    checked.warmup_cycles = Some(TEST_WARMUP_CYCLES);
    // The run asked for: its cycles, else as far as it may go. Before it only exact signals
    // call a leak (a bound the body reaches at run 40 is no leak at run 11).
    checked.planned_end = Some(match spec.cycles {
        Some(c) => c,
        None => options.max_cycles.unwrap_or(most),
    });
    let stop = AtomicBool::new(false);
    let mut store = Body::new(spec.path, body, plan.as_deref(), &stop, tmp);
    let outcome = drive(&mut store, test_ledger(), &options, &checked, Some(&stop)).map_err(|e| said(&e))?;
    print!("{}", outcome.annotations());
    if let Some(failure) = store.failure.take() {
        return Err(failure);
    }
    points_agree(&store.named, plan.is_some()).map_err(|e| said(&e))?;
    if outcome.verdict() != Verdict::Clean && !outcome.passes_baseline() {
        return Err(Failure::Said(format!(
            "leakcheck: {} ({}:{}) is not clean. {}",
            spec.path,
            spec.file,
            spec.line,
            outcome.table()
        )));
    }
    Ok(outcome.summary())
}

/// The body's temporary directory, watched as a store's data directory is: every file under it
/// must be closed (and unmapped) when a cycle ends. It is `TMPDIR` for the body, so that
/// `tempfile::tempdir()` and `std::env::temp_dir()` make their files in it. A child process gets
/// it from its parent; in place (under nextest, a process per test) it is made here and `TMPDIR`
/// set before the first cycle, while the test's thread is the only one that runs its code.
fn temporary_directory() -> std::io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    if let Some(dir) = std::env::var_os(TMPDIR_ENV) {
        return Ok((PathBuf::from(dir), None));
    }
    let made = tempfile::Builder::new().prefix("leakcheck-test-").tempdir()?;
    let dir = made.path().to_path_buf();
    std::env::set_var("TMPDIR", &dir);
    Ok((dir, Some(made)))
}

/// The plan and the body agree on their points: every point the plan names was checked, and a
/// body that checks points runs under a plan (`faults = "none"` to run it without).
fn points_agree(named: &BTreeSet<String>, planned: bool) -> Result<(), String> {
    let checked = crate::fault::checked_points();
    let unchecked: Vec<&str> = named.iter().filter(|p| !checked.contains(*p)).map(String::as_str).collect();
    if !unchecked.is_empty() {
        return Err(format!(
            "the fault plan names {}, which the test never checked (leakcheck::fault(\"{}\") in the body)",
            unchecked.join(", "),
            unchecked[0]
        ));
    }
    if !planned && !checked.is_empty() {
        let points: Vec<&str> = checked.iter().map(String::as_str).collect();
        return Err(format!(
            "the test checks fault points {} but no plan names them: add faults = \"{}\" to the attribute \
             (or faults = \"none\" to run it without failures)",
            points.join(", "),
            points.iter().map(|p| format!("{p}=5%")).collect::<Vec<_>>().join(",")
        ));
    }
    Ok(())
}

/// The test binary allocates through jemalloc (Rust's heap and C's), or the test fails now with
/// the line to add.
fn require_jemalloc(spec: &TestSpec) -> Result<(), Failure> {
    if let Err(e) = crate::probe::check_global_allocator() {
        return Err(Failure::Said(format!(
            "leakcheck::test needs jemalloc as the test binary's global allocator ({e}): add \
             `#[global_allocator] static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;` to {}",
            spec.file
        )));
    }
    if let Err(e) = crate::probe::check_malloc_coverage() {
        return Err(Failure::Said(format!("leakcheck::test needs C's malloc to be jemalloc's: {e}")));
    }
    Ok(())
}

/// The test's body as a store: nothing to open or close, the body is the cycle's work.
struct Body<'a, R> {
    path: &'static str,
    body: fn() -> R,
    /// The points the plan in force names.
    named: BTreeSet<String>,
    /// The same, as the names [`Lifecycle::fault_points`] gives: made once per process, before
    /// the check, and kept for its life.
    points: Vec<&'static str>,
    /// The body's own failure, once it failed with no fault fired.
    failure: Option<Failure>,
    /// Set with the failure: the run ends after this cycle.
    stop: &'a AtomicBool,
    /// The body's `TMPDIR`: nothing under it may stay open after a cycle.
    tmp: PathBuf,
}

impl<'a, R: TestReturn> Body<'a, R> {
    fn new(path: &'static str, body: fn() -> R, plan: Option<&str>, stop: &'a AtomicBool, tmp: PathBuf) -> Self {
        let named: BTreeSet<String> = plan
            .and_then(|p| crate::fault::FaultPlan::parse(p).ok())
            .map(|p| p.points().map(str::to_string).collect())
            .unwrap_or_default();
        let points = named.iter().map(|p| &*Box::leak(p.clone().into_boxed_str())).collect();
        Body { path, body, named, points, failure: None, stop, tmp }
    }
}

/// What a body's failure says in a cycle record.
#[derive(Debug)]
struct BodyFailed(String);

impl std::fmt::Display for BodyFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<R: TestReturn> Lifecycle for Body<'_, R> {
    type Store = ();
    type Error = BodyFailed;

    fn fault_points(&self) -> Vec<&'static str> {
        // The plan is checked against what the body checked once the run ends (`points_agree`).
        self.points.clone()
    }

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<(), BodyFailed> {
        Ok(())
    }

    fn work(&mut self, _store: &mut (), ctx: &CycleCtx<'_>) -> Result<(), BodyFailed> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        crate::fault::enter(ctx.faults);
        let ran = catch_unwind(AssertUnwindSafe(self.body));
        let fired = crate::fault::leave();
        let failed = match ran {
            Ok(r) => match r.failure() {
                None => return Ok(()),
                Some(text) => Failure::Said(text),
            },
            Err(payload) if fired > 0 => resume_unwind(payload),
            Err(payload) => Failure::Panic(payload),
        };
        let text = failed.text();
        if fired == 0 {
            // The test failing on its own, as it would without the attribute.
            self.failure = Some(match failed {
                Failure::Said(t) => {
                    Failure::Said(format!("{}: the test failed in cycle {}: {t}", self.path, ctx.cycle + 1))
                }
                panic => panic,
            });
            self.stop.store(true, Ordering::Relaxed);
        }
        Err(BodyFailed(text))
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), BodyFailed> {
        Ok(())
    }

    fn default_faults(&self) -> String {
        "none".to_string()
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.tmp.clone())
    }

    fn describe(&self) -> StoreInfo {
        StoreInfo::new(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tests_name_is_its_path_without_the_crate() {
        assert_eq!(libtest_name("my_crate::tests::puts"), "tests::puts");
        assert_eq!(libtest_name("my_crate::puts"), "puts");
    }

    #[test]
    fn a_plan_must_match_the_points_the_body_checks() {
        // Nothing checked in this process's unit tests: a named point is unchecked.
        let named: BTreeSet<String> = ["flush".to_string()].into();
        let e = points_agree(&named, true).expect_err("flush was never checked");
        assert!(e.contains("flush"), "{e}");
        assert!(points_agree(&BTreeSet::new(), false).is_ok());
    }
}
