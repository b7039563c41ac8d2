//! `leakcheck sweep --fuzz`: the binding swept by generated programs instead of a list.
//!
//! A program is a sequence of steps, each an op of the model ([`ops::OPS`]: opening in every
//! mode, column families, reads and writes, iterators, snapshots, checkpoints, backups,
//! transactions, options and their callbacks) with arguments drawn from one class (valid, empty,
//! repeated, conflicting with the state, invalid, large). The generator tracks a model of the
//! fixture (open or closed, its column families) so every program it draws is valid; a seed
//! draws the same programs again. The fuzz first runs every op with every class as a program of
//! one step, then random sequences, until its duration is spent.
//!
//! Each program runs in a child process as a leakcheck `check`: a cycle opens the fixture (a DB
//! with a column family and 100 keys), runs the program many times (enough for about 20 ms of
//! calls), reopens the DB if the program closed it, and drops it. The verdict and the bytes per
//! run are the check's. A leaking program is shrunk (steps removed while it still leaks, then
//! each step's class made plainer) and printed as a Rust snippet against rust-rocksdb alone.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // the binding itself is what is swept

pub mod op;
pub mod ops;
pub mod planted;
pub mod prelude;
pub mod program;
pub mod reached;
pub mod setters;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leakcheck::harness::{CycleCtx, Lifecycle};
use leakcheck::{Ledger, Verdict};
use serde::{Deserialize, Serialize};

use crate::{SweepError, ROCKSDB_VERSION};
use op::{ArgClass, Op, Ran, Values};
use program::{Program, Step};

/// The op of that name, the planted ones included.
pub fn find_op(name: &str) -> Option<&'static Op> {
    all_ops().find(|o| o.name == name)
}

/// Every op this build has: the model's (0.22 and later), those of 0.23, 0.24 and 0.25 and
/// later, the planted ones (last).
pub fn all_ops() -> impl Iterator<Item = &'static Op> {
    ops::OPS
        .iter()
        .chain(ops::OPS_SINCE_0_23)
        .chain(ops::OPS_SINCE_0_24)
        .chain(ops::OPS_SINCE_0_25)
        .chain(planted::PLANTED_OPS)
}

/// Calls per cycle aim at this much time: a leak of a few bytes a call is then hundreds of bytes
/// a cycle.
const CYCLE_WORK: Duration = Duration::from_millis(20);

/// The most runs of a program per cycle.
const MAX_REPS: u64 = 200;

/// One program's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramRun {
    /// The program.
    pub program: Program,
    /// The check's verdict.
    pub verdict: Verdict,
    /// Unexplained bytes per run of the program: slope, interval's lower and upper ends.
    pub bytes_per_run: Option<[f64; 3]>,
    /// Runs per cycle.
    pub reps: u64,
    /// Cycles run.
    pub cycles: u64,
    /// Each step's result on the first run.
    pub results: Vec<Ran>,
    /// Seconds the check took.
    pub seconds: f64,
}

impl ProgramRun {
    /// The first panic among the steps, if any.
    pub fn panic(&self) -> Option<(usize, &str)> {
        self.results.iter().enumerate().find_map(|(i, r)| match r {
            Ran::Panic(m) => Some((i, m.as_str())),
            _ => None,
        })
    }
}

/// A program as a store for leakcheck's harness.
struct ProgramStore {
    steps: Vec<(&'static Op, program::Args, Values)>,
    dir: PathBuf,
    reps: u64,
    results: Option<Vec<Ran>>,
}

/// What a cycle holds: its directory and the fixture's DB (closed when a program closed it and
/// could not reopen it).
struct Fixture {
    dir: PathBuf,
    db: Option<rocksdb::DB>,
}

impl ProgramStore {
    /// Run `run` of the program against `f`, then the DB reopened if the program closed it.
    fn run_once(&self, f: &mut Fixture, run: u64) -> Vec<Ran> {
        let results = self
            .steps
            .iter()
            .map(|(op, args, values)| match args.per_run() {
                true => op.run(&mut f.db, &f.dir, &args.values(run)),
                false => op.run(&mut f.db, &f.dir, values),
            })
            .collect();
        if f.db.is_none() {
            f.db = prelude::reopen(&f.dir).ok();
        }
        results
    }

    fn fixture(&self, dir: PathBuf) -> Result<Fixture, SweepError> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|source| SweepError::Io { what: "clear the cycle's directory", source })?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|source| SweepError::Io { what: "make the cycle's directory", source })?;
        let db = prelude::fixture(&dir).map_err(|source| SweepError::RocksDb { what: "open the fixture", source })?;
        Ok(Fixture { dir, db: Some(db) })
    }
}

impl Lifecycle for ProgramStore {
    type Store = Fixture;
    type Error = SweepError;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Fixture, SweepError> {
        self.fixture(self.dir.join(format!("cycle{}", ctx.cycle % 2)))
    }

    fn work(&mut self, f: &mut Fixture, _ctx: &CycleCtx<'_>) -> Result<(), SweepError> {
        for run in 0..self.reps {
            let results = self.run_once(f, run);
            self.results.get_or_insert(results);
        }
        Ok(())
    }

    fn close(&mut self, f: Fixture, _ctx: &CycleCtx<'_>) -> Result<(), SweepError> {
        drop(f);
        Ok(())
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    fn default_faults(&self) -> String {
        "none".to_string()
    }
}

/// Runs `program` in this process (call it in a process of its own) as a check.
///
/// # Errors
/// An invalid program, no byte signal, or a check that could not run.
pub fn run_program(program: &Program) -> Result<ProgramRun, SweepError> {
    program::validate(program).map_err(SweepError::Program)?;
    leakcheck::probe::check_malloc_coverage().map_err(SweepError::Coverage)?;
    let scratch = tempfile::Builder::new()
        .prefix("leakcheck-fuzz")
        .tempdir()
        .map_err(|source| SweepError::Io { what: "temporary directory", source })?;
    let steps = program
        .steps
        .iter()
        .map(|s| find_op(&s.op).map(|op| (op, s.args.clone(), s.args.values(0))))
        .collect::<Option<Vec<_>>>()
        .ok_or(SweepError::Fixture("an op vanished after validation"))?;
    let mut store = ProgramStore { steps, dir: scratch.path().to_path_buf(), reps: 1, results: None };
    // Runs per cycle: one run timed (after one to warm up) on a fixture of its own.
    let mut calibration = store.fixture(scratch.path().join("calibrate"))?;
    store.run_once(&mut calibration, 0);
    let start = Instant::now();
    store.run_once(&mut calibration, 1);
    let once = start.elapsed().max(Duration::from_micros(1));
    drop(calibration);
    store.reps = (CYCLE_WORK.as_secs_f64() / once.as_secs_f64()).ceil().clamp(1.0, MAX_REPS as f64) as u64;
    let started = Instant::now();
    let ledger = Ledger::new();
    let outcome = leakcheck::check(&mut store, &ledger)
        .cycles(crate::CYCLES)
        .max_cycles(crate::MAX_CYCLES)
        .faults("none")
        .run()
        .map_err(|e| SweepError::Run { path: "program".to_string(), message: e.to_string() })?;
    let r = &outcome.report;
    let reps = store.reps as f64;
    Ok(ProgramRun {
        program: program.clone(),
        verdict: r.verdict.verdict,
        bytes_per_run: crate::bytes_per_cycle(r).map(|[v, lo, hi]| [v / reps, lo / reps, hi / reps]),
        reps: store.reps,
        cycles: r.cycles_run,
        results: store.results.take().unwrap_or_default(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// How the parent reaches a child: this program and the arguments that lead to the sweep.
#[derive(Debug, Clone)]
pub struct Exe {
    /// This program.
    pub path: PathBuf,
    /// The arguments before the sweep's own (`sweep` for `leakcheck sweep`).
    pub prefix: Vec<String>,
}

impl Exe {
    /// Runs `program` in a child (`--fuzz-one JSON`), which prints its [`ProgramRun`]. A child
    /// that outlives [`crate::CHILD_TIMEOUT`] is killed and reported as hung (a call that never
    /// returns is a finding of its own, not a reason to stop the fuzz).
    pub fn run(&self, program: &Program) -> Result<ProgramRun, SweepError> {
        let path = || "fuzz program".to_string();
        let json =
            serde_json::to_string(program).map_err(|e| SweepError::Run { path: path(), message: e.to_string() })?;
        let args: Vec<String> = self.prefix.iter().cloned().chain(["--fuzz-one".to_string(), json]).collect();
        crate::child_json(&self.path, &args).map_err(|failure| SweepError::Child { path: path(), failure })
    }
}

/// What a fuzz run is asked to do.
#[derive(Debug, Clone)]
pub struct FuzzConfig {
    /// The seed: the same seed draws the same programs.
    pub seed: u64,
    /// Time for drawing and running new programs (shrinking what leaked runs past it).
    pub duration: Duration,
    /// At most this many programs (the single-step ones included).
    pub programs: Option<u64>,
    /// Draw only from these ops (all of the model's when empty).
    pub ops: Vec<String>,
    /// Include the planted ops (the fuzz's proof that it can fail).
    pub plant: bool,
    /// Longest random program.
    pub max_len: usize,
    /// Checks a shrink may spend on one finding.
    pub shrink_checks: u32,
    /// Write fuzz.json and one snippet per finding here, rewritten after every batch.
    pub report: Option<PathBuf>,
}

/// A leak the fuzz found, shrunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzFinding {
    /// Its number in the report.
    pub id: usize,
    /// The shrunk program's steps (`op/class`).
    pub steps: Vec<String>,
    /// The shrunk program's run.
    pub run: ProgramRun,
    /// The program it was found in (an index into the report's programs).
    pub found_in: usize,
    /// Other programs that leaked and hold every step of this one.
    pub also_in: Vec<usize>,
    /// Checks the shrink spent.
    pub shrink_checks: u32,
    /// The write-up, when it is a known finding of the binding on this release.
    pub known: Option<String>,
    /// The shrunk program as Rust against rust-rocksdb alone.
    pub snippet: String,
}

/// A fuzz run's report (fuzz.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzReport {
    /// The rust-rocksdb release swept.
    pub rocksdb: String,
    /// The seed.
    pub seed: u64,
    /// The ops drawn from.
    pub ops: Vec<String>,
    /// Seconds spent so far.
    pub elapsed_s: f64,
    /// Whether the run finished (false while it runs, or when it was stopped).
    pub complete: bool,
    /// Every program run, in order.
    pub programs: Vec<ProgramRun>,
    /// The leaks found, shrunk.
    pub findings: Vec<FuzzFinding>,
    /// Programs whose child failed, with the error.
    pub failures: Vec<(usize, String)>,
    /// Programs whose child died by a signal, shrunk (absent from reports written before crashes
    /// were shrunk).
    #[serde(default)]
    pub crashes: Vec<FuzzCrash>,
}

/// A program that kills the process (its child died by a signal), shrunk to the fewest steps and
/// plainest classes that still die by the same signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzCrash {
    /// Its number among the report's crashes.
    pub id: usize,
    /// The signal's number.
    pub signal: i32,
    /// The shrunk program's failure, as the OS and the child's stderr describe it (first line).
    pub message: String,
    /// The shrunk program's steps (`op/class`).
    pub steps: Vec<String>,
    /// The shrunk program (replay it with `--program`).
    pub program: Program,
    /// The program it was found in.
    pub found_in: usize,
    /// Later programs that held its steps (and died by the same signal).
    pub also_in: Vec<usize>,
    /// Checks the shrink spent.
    pub shrink_checks: u32,
    /// The shrunk program as Rust against rust-rocksdb alone.
    pub snippet: String,
}

impl FuzzReport {
    /// Whether any finding is a leak that is not a known, written-up finding.
    pub fn new_leaks(&self) -> usize {
        self.findings.iter().filter(|f| f.known.is_none()).count()
    }
}

/// The known finding a shrunk program shows on this release: one whose `fuzz` labels name one of
/// its steps (`op` or `op/class`).
pub fn known(steps: &[Step]) -> Option<&'static crate::Finding> {
    crate::FINDINGS
        .iter()
        .filter(|f| f.releases.contains(&ROCKSDB_VERSION))
        .find(|f| steps.iter().any(|s| f.fuzz.iter().any(|l| *l == s.op || *l == s.label())))
}

/// Runs a fuzz: programs in children, two at a time, until the duration or the program count is
/// spent; each leak shrunk as it is found.
///
/// # Errors
/// An unknown op, no byte signal, or a report that cannot be written.
pub fn fuzz(exe: &Exe, cfg: &FuzzConfig, mut progress: impl FnMut(&str)) -> Result<FuzzReport, SweepError> {
    leakcheck::probe::check_malloc_coverage().map_err(SweepError::Coverage)?;
    let pool = program::pool(&cfg.ops, cfg.plant).map_err(SweepError::Program)?;
    let started = Instant::now();
    let mut report = FuzzReport {
        rocksdb: ROCKSDB_VERSION.to_string(),
        seed: cfg.seed,
        ops: pool.iter().map(|o| o.name.to_string()).collect(),
        elapsed_s: 0.0,
        complete: false,
        programs: Vec::new(),
        findings: Vec::new(),
        failures: Vec::new(),
        crashes: Vec::new(),
    };
    let singles = program::single_steps(&pool);
    let limit = cfg.programs.unwrap_or(u64::MAX);
    let mut next: u64 = 0;
    let draw = |i: u64| -> Program {
        match singles.get(i as usize) {
            Some(p) => p.clone(),
            None => program::random(cfg.seed, i, &pool, cfg.max_len),
        }
    };
    while next < limit && started.elapsed() < cfg.duration {
        let batch: Vec<Program> = (next..(next + 2).min(limit)).map(draw).collect();
        next += batch.len() as u64;
        let runs = leakcheck::workspace::in_parallel(batch.clone(), 2, |p| exe.run(&p));
        for (program, run) in batch.into_iter().zip(runs) {
            let index = report.programs.len();
            match run {
                Ok(run) => {
                    let leaked = run.verdict == Verdict::Leak;
                    progress(&format!(
                        "program {index}: {} -> {}",
                        labels(&program.steps).join(" "),
                        run.verdict.name()
                    ));
                    report.programs.push(run.clone());
                    if leaked {
                        absorb(exe, cfg, &mut report, index, run, &mut progress);
                    }
                }
                Err(e) => {
                    if let Some(signal) = e.signal() {
                        let failure = first_line(&e);
                        absorb_crash(exe, cfg, &mut report, (index, &program, failure), signal, &mut progress);
                    }
                    report.programs.push(ProgramRun {
                        program,
                        verdict: Verdict::Inconclusive,
                        bytes_per_run: None,
                        reps: 0,
                        cycles: 0,
                        results: Vec::new(),
                        seconds: 0.0,
                    });
                    report.failures.push((index, e.to_string()));
                }
            }
        }
        report.elapsed_s = started.elapsed().as_secs_f64();
        write_report(cfg, &report)?;
    }
    report.complete = true;
    report.elapsed_s = started.elapsed().as_secs_f64();
    write_report(cfg, &report)?;
    Ok(report)
}

fn labels(steps: &[Step]) -> Vec<String> {
    steps.iter().map(Step::label).collect()
}

/// A leaking program: counted under the finding it holds whole, or shrunk into a new finding.
fn absorb(
    exe: &Exe,
    cfg: &FuzzConfig,
    report: &mut FuzzReport,
    index: usize,
    run: ProgramRun,
    progress: &mut impl FnMut(&str),
) {
    let have = labels(&run.program.steps);
    if let Some(f) = report.findings.iter_mut().find(|f| f.steps.iter().all(|s| have.contains(s))) {
        f.also_in.push(index);
        return;
    }
    let shrunk = shrink(exe, run.program.clone(), Some(run), Keep::Leak, cfg.shrink_checks);
    let checks = shrunk.checks;
    let Some(shrunk) = shrunk.run else { return };
    let steps = labels(&shrunk.program.steps);
    if let Some(f) = report.findings.iter_mut().find(|f| f.steps == steps) {
        f.also_in.push(index);
        return;
    }
    let id = report.findings.len() + 1;
    let known = known(&shrunk.program.steps).map(|f| f.write_up.to_string());
    let bytes = shrunk.bytes_per_run.map_or("?".to_string(), |[v, lo, hi]| format!("{v:.0} B [{lo:.0}, {hi:.0}]"));
    let header = vec![
        format!("rust-rocksdb {ROCKSDB_VERSION}: leaks {bytes} per iteration of the loop below."),
        format!(
            "Found by `leakcheck sweep --fuzz --seed {}` (program {index}), shrunk to {} step(s) in {checks} checks.",
            cfg.seed,
            steps.len()
        ),
        format!("Cargo.toml: rocksdb = {{ version = \"={ROCKSDB_VERSION}\" }}"),
    ];
    let snippet = program::snippet(&shrunk.program, &header);
    progress(&format!(
        "finding {id}: {} leaks {bytes} per run{}",
        steps.join(" "),
        if known.is_some() { " (known)" } else { "" }
    ));
    report.findings.push(FuzzFinding {
        id,
        steps,
        run: shrunk,
        found_in: index,
        also_in: Vec::new(),
        shrink_checks: checks,
        known,
        snippet,
    });
}

/// A program that killed its child: counted under the crash whose steps it holds, or shrunk into a
/// new one. (Indices: the program's place in the report, which it takes after this returns.)
fn absorb_crash(
    exe: &Exe,
    cfg: &FuzzConfig,
    report: &mut FuzzReport,
    (index, program, failure): (usize, &Program, String),
    signal: i32,
    progress: &mut impl FnMut(&str),
) {
    let have = labels(&program.steps);
    let held = |c: &FuzzCrash| c.signal == signal && c.steps.iter().all(|s| have.contains(s));
    if let Some(c) = report.crashes.iter_mut().find(|c| held(c)) {
        c.also_in.push(index);
        return;
    }
    let shrunk = shrink(exe, program.clone(), None, Keep::Signal(signal), cfg.shrink_checks);
    let steps = labels(&shrunk.program.steps);
    if let Some(c) = report.crashes.iter_mut().find(|c| c.signal == signal && c.steps == steps) {
        c.also_in.push(index);
        return;
    }
    // The shrunk program's own failure (its stderr may name the cause, as an abort's does): the
    // found program's when nothing smaller crashed.
    let message = shrunk.failure.unwrap_or(failure);
    let id = report.crashes.len() + 1;
    let header = vec![
        format!("rust-rocksdb {ROCKSDB_VERSION}: the loop below kills the process ({message})."),
        format!(
            "Found by `leakcheck sweep --fuzz --seed {}` (program {index}), shrunk to {} step(s) in {} checks.",
            cfg.seed,
            steps.len(),
            shrunk.checks
        ),
        format!("Cargo.toml: rocksdb = {{ version = \"={ROCKSDB_VERSION}\" }}"),
    ];
    let snippet = program::snippet(&shrunk.program, &header);
    progress(&format!("crash {id}: {} ({message})", steps.join(" ")));
    report.crashes.push(FuzzCrash {
        id,
        signal,
        message,
        steps,
        program: shrunk.program,
        found_in: index,
        also_in: Vec::new(),
        shrink_checks: shrunk.checks,
        snippet,
    });
}

/// What a shrink must keep of the program it starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Its leak: a smaller program must still be called a leak.
    Leak,
    /// Its crash: a smaller program must still kill its child with this signal.
    Signal(i32),
}

impl Keep {
    fn holds(self, run: &Result<ProgramRun, SweepError>) -> bool {
        match (self, run) {
            (Keep::Leak, Ok(r)) => r.verdict == Verdict::Leak,
            (Keep::Signal(signal), Err(e)) => e.signal() == Some(signal),
            _ => false,
        }
    }
}

/// A shrink's result: the smallest program that kept the property, its run when it ran (a crash
/// has none), and the checks spent.
#[derive(Debug)]
pub struct Shrunk {
    /// The smallest program found.
    pub program: Program,
    /// Its run: `Some` for a leak (the `run` passed in, or a smaller program's).
    pub run: Option<ProgramRun>,
    /// For a crash: the first line of the smaller program's failure, when one replaced the
    /// program passed in.
    pub failure: Option<String>,
    /// Checks spent.
    pub checks: u32,
}

/// Shrinks a program that leaks or crashes (`keep`): steps removed while it keeps it (two
/// candidates at a time), a setters step halved down to one setter, then each step's class made
/// plainer, within `budget` checks.
pub fn shrink(exe: &Exe, program: Program, run: Option<ProgramRun>, keep: Keep, budget: u32) -> Shrunk {
    let mut best = Shrunk { program, run, failure: None, checks: 0 };
    // Runs the candidates two at a time; the first that keeps the property becomes the best.
    let try_pairs = |best: &mut Shrunk, candidates: Vec<Program>| -> bool {
        for pair in candidates.chunks(2) {
            if best.checks >= budget {
                return false;
            }
            best.checks += pair.len() as u32;
            let runs = leakcheck::workspace::in_parallel(pair.to_vec(), 2, |p| exe.run(&p));
            if let Some((p, r)) = pair.iter().zip(runs).find(|(_, r)| keep.holds(r)) {
                best.program = p.clone();
                keep_run(best, r);
                return true;
            }
        }
        false
    };
    // Removals: first every step alone, then each step left out.
    while best.program.steps.len() > 1 && best.checks < budget {
        let steps = &best.program.steps;
        let alone = (0..steps.len()).map(|i| Program { steps: with_prefix(steps, i) });
        let without = (0..steps.len()).map(|i| {
            let mut p = best.program.clone();
            p.steps.remove(i);
            p
        });
        let mut candidates: Vec<Program> = alone.chain(without).filter(|p| program::validate(p).is_ok()).collect();
        candidates.dedup();
        candidates.retain(|p| p.steps.len() < best.program.steps.len());
        if !try_pairs(&mut best, candidates) {
            break;
        }
    }
    // A setters step down to the one setter that keeps it, by halves.
    for i in 0..best.program.steps.len() {
        while best.program.steps[i].op == "options-setters" && best.checks < budget {
            let range = setters::parse_range(&best.program.steps[i].args.key.bytes(0));
            if range.len() <= 1 {
                break;
            }
            let mid = range.start + range.len() / 2;
            let halves: Vec<Program> = [range.start..mid, mid..range.end]
                .into_iter()
                .map(|r| {
                    let mut p = best.program.clone();
                    p.steps[i].args.key = program::Text::Lit(format!("{}..{}", r.start, r.end));
                    p
                })
                .collect();
            if !try_pairs(&mut best, halves) {
                break;
            }
        }
    }
    // Plainer classes, step by step.
    for i in 0..best.program.steps.len() {
        let current = best.program.steps[i].class;
        let op = find_op(&best.program.steps[i].op);
        let plainer: Vec<ArgClass> = ArgClass::ALL
            .iter()
            .copied()
            .take_while(|c| *c != current)
            .filter(|c| op.is_some_and(|o| o.classes.contains(c)))
            .collect();
        for class in plainer {
            if best.checks >= budget {
                return best;
            }
            let Some(candidate) = program::redraw(&best.program, i, class) else { continue };
            if program::validate(&candidate).is_err() {
                continue;
            }
            best.checks += 1;
            let run = exe.run(&candidate);
            if keep.holds(&run) {
                best.program = candidate;
                keep_run(&mut best, run);
                break;
            }
        }
    }
    best
}

/// A candidate that kept the property becomes the best: its run (a leak) or its failure (a crash).
fn keep_run(best: &mut Shrunk, run: Result<ProgramRun, SweepError>) {
    match run {
        Ok(r) => best.run = Some(r),
        Err(e) => best.failure = Some(first_line(&e)),
    }
}

/// The first line of an error, as a crash is listed.
fn first_line(e: &SweepError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// Step `i` alone, after a `close` when it needs the DB closed.
fn with_prefix(steps: &[Step], i: usize) -> Vec<Step> {
    let needs_closed = find_op(&steps[i].op).is_some_and(|o| o.needs == op::Needs::Closed);
    let close = steps.iter().take(i).rev().find(|s| s.op == "close").cloned();
    match (needs_closed, close) {
        (true, Some(c)) => vec![c, steps[i].clone()],
        _ => vec![steps[i].clone()],
    }
}

/// Writes fuzz.json and each finding's and crash's snippet (finding-N.rs, crash-N.rs) into the
/// report directory,
/// atomically (a run stopped midway leaves the last complete report).
fn write_report(cfg: &FuzzConfig, report: &FuzzReport) -> Result<(), SweepError> {
    let Some(dir) = &cfg.report else { return Ok(()) };
    let io = |what: &'static str| move |source| SweepError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io("make the report directory"))?;
    let json = serde_json::to_vec_pretty(report)
        .map_err(|e| SweepError::Run { path: "fuzz.json".to_string(), message: e.to_string() })?;
    write_atomic(&dir.join("fuzz.json"), &json).map_err(io("write fuzz.json"))?;
    for f in &report.findings {
        write_atomic(&dir.join(format!("finding-{}.rs", f.id)), f.snippet.as_bytes()).map_err(io("write a snippet"))?;
    }
    for c in &report.crashes {
        write_atomic(&dir.join(format!("crash-{}.rs", c.id)), c.snippet.as_bytes()).map_err(io("write a snippet"))?;
    }
    Ok(())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// The findings as a table, then each new finding's snippet.
pub fn summary(report: &FuzzReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let leaks = report.programs.iter().filter(|p| p.verdict == Verdict::Leak).count();
    let inconclusive = report.programs.iter().filter(|p| p.verdict == Verdict::Inconclusive).count();
    let _ = writeln!(
        out,
        "fuzz of rust-rocksdb {} (seed {}): {} programs in {:.0} s over {} ops: {leaks} leaked, {inconclusive} inconclusive, {} failed to run",
        report.rocksdb,
        report.seed,
        report.programs.len(),
        report.elapsed_s,
        report.ops.len(),
        report.failures.len()
    );
    let _ = writeln!(out, "{:>3}  {:<44} {:>26}  {:>5}  note", "id", "steps (shrunk)", "bytes/run [interval]", "seen");
    for f in &report.findings {
        let bytes = f.run.bytes_per_run.map_or("-".to_string(), |[v, lo, hi]| format!("{v:.1} [{lo:.1}, {hi:.1}]"));
        let note = f.known.as_ref().map_or("NEW: not a known finding".to_string(), |w| format!("known: {w}"));
        let _ =
            writeln!(out, "{:>3}  {:<44} {:>26}  {:>5}  {note}", f.id, f.steps.join(" "), bytes, 1 + f.also_in.len());
    }
    let mut panics: Vec<String> = report
        .programs
        .iter()
        .filter_map(|p| p.panic().map(|(i, m)| format!("{}: {m}", p.program.steps[i].label())))
        .collect();
    panics.sort();
    panics.dedup();
    for p in &panics {
        let _ = writeln!(out, "panic in the binding: {p}");
    }
    for c in &report.crashes {
        let _ = writeln!(
            out,
            "crash {}: {} (shrunk from program {}, seen {}): {}",
            c.id,
            c.steps.join(" "),
            c.found_in,
            1 + c.also_in.len(),
            c.message
        );
    }
    let crashed: std::collections::BTreeSet<usize> =
        report.crashes.iter().flat_map(|c| std::iter::once(c.found_in).chain(c.also_in.iter().copied())).collect();
    for (i, e) in report.failures.iter().filter(|(i, _)| !crashed.contains(i)) {
        let steps = report.programs.get(*i).map(|p| labels(&p.program.steps).join(" ")).unwrap_or_default();
        let _ = writeln!(out, "program {i} ({steps}) did not run: {}", e.lines().next().unwrap_or(""));
    }
    for f in report.findings.iter().filter(|f| f.known.is_none()) {
        let _ = writeln!(out, "\n--- finding {} ---\n{}", f.id, f.snippet);
    }
    out
}

/// Parses a duration: a number with `s`, `m` or `h` (`90s`, `10m`, `1h`).
///
/// # Errors
/// A text that is not one.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len()));
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a duration (for example 90s, 10m, 1h)"))?;
    let seconds = match unit {
        "s" | "" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (s, m or h)")),
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("`{text}`: a duration must be positive"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit_and_bad_ones_are_named() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("ten").unwrap_err().contains("ten"));
        assert!(parse_duration("5d").unwrap_err().contains("`d`"));
        assert!(parse_duration("0s").is_err());
    }
}
