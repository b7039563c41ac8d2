//! Both catalogs run as the detector's own test (`leakcheck mutants`): every planted leak of
//! [`crate::mutants::CATALOG`] must be caught (sensitivity) and every store of
//! [`crate::clean::CLEAN_CATALOG`] must come out clean (specificity). Process-wide signals need
//! one run per process: each run is a child process of the given executable, which runs it with
//! [`run_variant`] or [`run_clean_store`] and prints the outcome as one JSON line.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::check_settings::{CHECK_CYCLES, CHECK_MAX_CYCLES};
use crate::clean::{clean_store, run_clean_report, CleanOutcome, CLEAN_CATALOG};
use crate::mutants::{mutant, run_mutant, Mutant, MutantOutcome, CATALOG};
use leakcheck::harness::HarnessError;
use leakcheck::report::{ReportError, RunReport, RunSettings};
use leakcheck::Verdict;

/// A catalog run could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// No catalog entry has this name.
    #[error("unknown {catalog} `{name}`; known: {known}")]
    Unknown {
        /// `variant` or `clean store`.
        catalog: &'static str,
        /// The name given.
        name: String,
        /// The names there are.
        known: String,
    },
    /// A child process could not be started.
    #[error("running {what}: {source}")]
    Spawn {
        /// The run (`variant reference`).
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A child process failed.
    #[error("{what} failed: {stderr}")]
    Failed {
        /// The run.
        what: String,
        /// Its stderr.
        stderr: String,
    },
    /// A child process's output is not an outcome.
    #[error("output of {what}: {source}")]
    Output {
        /// The run.
        what: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The run itself failed (its store could not be set up).
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// A temporary directory could not be made.
    #[error("temporary directory: {0}")]
    TempDir(std::io::Error),
    /// The report of a clean-store run could not be written.
    #[error("{}: {source}", dir.display())]
    Report {
        /// The report directory.
        dir: PathBuf,
        /// Why.
        source: ReportError,
    },
}

fn unknown<'a>(catalog: &'static str, name: &str, known: impl Iterator<Item = &'a str>) -> CatalogError {
    CatalogError::Unknown { catalog, name: name.to_string(), known: known.collect::<Vec<_>>().join(", ") }
}

/// The planted-leak variant called `name`.
///
/// # Errors
/// [`CatalogError::Unknown`], listing the names there are.
pub fn variant(name: &str) -> Result<&'static Mutant, CatalogError> {
    mutant(name).ok_or_else(|| unknown("variant", name, CATALOG.iter().map(|m| m.name)))
}

/// Runs the planted-leak variant `name` for `cycles` cycles in this process (a temporary data
/// directory), for a child of [`run_catalogs`].
///
/// # Errors
/// An unknown name, or a store that cannot be set up.
pub fn run_variant(name: &str, cycles: u64) -> Result<MutantOutcome, CatalogError> {
    let m = variant(name)?;
    let dir = tempfile::Builder::new().prefix("leakcheck-mutant-").tempdir().map_err(CatalogError::TempDir)?;
    Ok(run_mutant(m, dir.path(), cycles)?)
}

/// Runs the clean-catalog store `name` with `seed` in this process, as `check` runs it, for a
/// child of [`run_catalogs`]; with `report_dir`, also writes the run's report there
/// (report.json, samples.csv).
///
/// # Errors
/// An unknown name, a store that cannot be set up, a report that cannot be written.
pub fn run_clean_store(name: &str, seed: u64, report_dir: Option<&Path>) -> Result<CleanOutcome, CatalogError> {
    let store = clean_store(name).ok_or_else(|| unknown("clean store", name, CLEAN_CATALOG.iter().map(|s| s.name)))?;
    let dir = tempfile::Builder::new().prefix("leakcheck-clean-").tempdir().map_err(CatalogError::TempDir)?;
    let started = Instant::now();
    let (outcome, harness) = run_clean_report(store, dir.path(), seed)?;
    if let Some(rd) = report_dir {
        let settings = RunSettings {
            command: format!("clean-store {name}"),
            store: name.to_string(),
            cycles: CHECK_CYCLES,
            max_cycles: Some(CHECK_MAX_CYCLES),
            plan: store.plan.to_string(),
            seed,
            tracking: "sites".to_string(),
            sample_every: 1,
            ..Default::default()
        };
        let r = RunReport::from_harness(settings, &harness, started.elapsed().as_secs_f64());
        let failed = |source| CatalogError::Report { dir: rd.to_path_buf(), source };
        leakcheck::workspace::prepare_dir(rd).map_err(failed)?;
        leakcheck::workspace::write_dir(rd, &r, &harness.samples).map_err(failed)?;
    }
    Ok(outcome)
}

/// What both catalogs showed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CatalogRun {
    /// One outcome per planted-leak variant, in catalog order.
    pub variants: Vec<MutantOutcome>,
    /// One outcome per clean-store run, by store and seed.
    pub clean: Vec<CleanOutcome>,
    /// Seeds per clean store.
    pub clean_seeds: u64,
    /// Seconds the whole run took.
    pub seconds: f64,
}

impl CatalogRun {
    /// Planted leaks caught by every expected signal class, and how many are planted.
    pub fn caught(&self) -> (usize, usize) {
        let planted = CATALOG.iter().filter(|m| !m.expected.is_empty());
        let caught = CATALOG
            .iter()
            .zip(&self.variants)
            .filter(|(m, o)| !m.expected.is_empty() && o.detected && m.expected.iter().all(|e| o.signals.contains(e)))
            .count();
        (caught, planted.count())
    }

    /// The reference store (nothing planted) was not flagged.
    pub fn reference_clean(&self) -> bool {
        CATALOG.iter().zip(&self.variants).filter(|(m, _)| m.expected.is_empty()).all(|(_, o)| !o.detected)
    }

    /// Every clean store came out clean in at least 19 of 20 runs (95%).
    pub fn specific(&self) -> bool {
        CLEAN_CATALOG.iter().all(|s| {
            let runs: Vec<&CleanOutcome> = self.clean.iter().filter(|o| o.store == s.name).collect();
            let ok = runs.iter().filter(|o| o.verdict == Verdict::Clean).count();
            runs.is_empty() || ok * 20 >= runs.len() * 19
        })
    }

    /// Every planted leak caught, the reference store not flagged, every clean store clean.
    pub fn ok(&self) -> bool {
        let (caught, planted) = self.caught();
        caught == planted && self.reference_clean() && self.specific()
    }

    /// The header of the variants' table.
    pub fn variants_header() -> String {
        format!("{:<32} {:<9} {:>8} {:>7}  {:<34} expected", "variant", "detected", "seconds", "cycles", "signals")
    }

    /// One variant's row.
    pub fn variant_row(m: &Mutant, o: &MutantOutcome) -> String {
        format!(
            "{:<32} {:<9} {:>8.2} {:>7}  {:<34} {}",
            o.variant,
            o.detected,
            o.seconds,
            o.cycles_to_verdict.map_or("-".to_string(), |c| c.to_string()),
            names(&o.signals),
            if m.expected.is_empty() { "clean".to_string() } else { names(m.expected) }
        )
    }

    /// The clean catalog's table: per store, runs called clean, mean seconds and cycles, and the
    /// runs that were not clean with the signals that held them.
    pub fn clean_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<26} {:>7} {:>8} {:>8}  not clean (seed: signals)",
            "clean store", "clean", "seconds", "cycles"
        );
        for store in &CLEAN_CATALOG {
            let mine: Vec<&CleanOutcome> = self.clean.iter().filter(|o| o.store == store.name).collect();
            let clean = mine.iter().filter(|o| o.verdict == Verdict::Clean).count();
            let failures: Vec<String> = mine
                .iter()
                .filter(|o| o.verdict != Verdict::Clean)
                .map(|o| {
                    format!(
                        "{}: {} {}",
                        o.seed,
                        o.verdict,
                        o.leaking.iter().chain(&o.inconclusive).cloned().collect::<Vec<_>>().join(",")
                    )
                })
                .collect();
            let n = mine.len().max(1) as f64;
            let _ = writeln!(
                out,
                "{:<26} {:>7} {:>8.1} {:>8.0}  {}",
                store.name,
                format!("{clean}/{}", mine.len()),
                mine.iter().map(|o| o.seconds).sum::<f64>() / n,
                mine.iter().map(|o| o.cycles as f64).sum::<f64>() / n,
                failures.join("; ")
            );
        }
        out
    }

    /// Every clean-store run on a line of its own: verdict, cycles, faulted cycles, seconds, the
    /// unexplained bytes per cycle with their interval, and what was not clean or warned (and the
    /// counter's leaks the record contradicted).
    pub fn clean_runs_table(&self) -> String {
        let mut out = format!(
            "{:<26} {:>5} {:<13} {:>7} {:>8} {:>8}  bytes/cycle [interval]  not clean / warnings\n",
            "clean store", "seed", "verdict", "cycles", "faulted", "seconds"
        );
        for o in &self.clean {
            let _ = writeln!(
                out,
                "{:<26} {:>5} {:<13} {:>7} {:>8} {:>8.1}  {:<22}  {}",
                o.store,
                o.seed,
                o.verdict.name(),
                o.cycles,
                o.faulted_cycles,
                o.seconds,
                o.bytes_per_cycle.map_or("-".to_string(), |[s, l, u]| format!("{s:.0} [{l:.0}, {u:.0}]")),
                o.leaking
                    .iter()
                    .chain(&o.inconclusive)
                    .chain(&o.warnings)
                    .cloned()
                    .chain(o.shown_leaks.iter().map(|s| format!("{s} (shown: the record held less)")))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        out
    }

    /// The closing line: sensitivity, specificity, time, ok or not.
    pub fn summary(&self) -> String {
        let (caught, planted) = self.caught();
        let called_clean = self.clean.iter().filter(|o| o.verdict == Verdict::Clean).count();
        format!(
            "sensitivity: {caught}/{planted} planted leaks caught; specificity: {called_clean}/{} clean-store runs called clean ({:.0} s): {}",
            self.clean.len(),
            self.seconds,
            if self.ok() { "ok" } else { "DETECTION GAPS, see the tables" }
        )
    }

    /// One array: the variants' objects, then one object per clean-store run (those carry
    /// `store` and `seed` instead of `variant`).
    pub fn json(&self) -> serde_json::Value {
        let variants = self.variants.iter().filter_map(|o| serde_json::to_value(o).ok());
        let clean = self.clean.iter().filter_map(|o| serde_json::to_value(o).ok());
        serde_json::Value::Array(variants.chain(clean).collect())
    }
}

/// `handles,fds`.
fn names(classes: &[leakcheck::Class]) -> String {
    classes.iter().map(|c| c.name()).collect::<Vec<_>>().join(",")
}

fn child<T: serde::de::DeserializeOwned>(exe: &Path, args: &[&str], what: String) -> Result<T, CatalogError> {
    let out =
        Command::new(exe).args(args).output().map_err(|source| CatalogError::Spawn { what: what.clone(), source })?;
    if !out.status.success() {
        return Err(CatalogError::Failed { what, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    serde_json::from_slice(&out.stdout).map_err(|source| CatalogError::Output { what, source })
}

/// Runs the planted-leak variant `name` in a child process of `exe` (`exe mutant NAME --cycles
/// N`, which calls [`run_variant`]): one variant per process, since jemalloc, RSS and fd counts
/// are process-wide.
///
/// # Errors
/// A child that cannot be started, fails, or prints something that is not an outcome.
pub fn variant_in_child(exe: &Path, name: &str, cycles: u64) -> Result<MutantOutcome, CatalogError> {
    child(exe, &["mutant", name, "--cycles", &cycles.to_string()], format!("variant {name}"))
}

/// Runs the clean-catalog store `name` with `seed` in a child process of `exe` (`exe clean-store
/// NAME --seed S`, which calls [`run_clean_store`]).
///
/// # Errors
/// A child that cannot be started, fails, or prints something that is not an outcome.
pub fn clean_store_in_child(exe: &Path, name: &str, seed: u64) -> Result<CleanOutcome, CatalogError> {
    child(exe, &["clean-store", name, "--seed", &seed.to_string()], format!("clean store {name}"))
}

/// What to run of both catalogs.
#[derive(Debug, Clone)]
pub struct CatalogPlan {
    /// Cycles per planted-leak variant.
    pub cycles: u64,
    /// The seeds each clean store runs with (none: the clean catalog is skipped).
    pub clean_seeds: Vec<u64>,
    /// Child processes at a time: each process's signals are its own, and two keep both cores of
    /// these machines busy.
    pub workers: usize,
}

enum Job {
    Variant(&'static Mutant),
    Clean(&'static str, u64),
}

enum Done {
    Variant(MutantOutcome),
    Clean(CleanOutcome),
}

/// Runs every variant ([`variant_in_child`]) and every clean store with each seed
/// ([`clean_store_in_child`]), `plan.workers` children at a time, the clean stores (the longest
/// runs) first so the workers finish together; `on_variant` is called as each variant finishes.
///
/// # Errors
/// A child that cannot be started, fails, or prints something that is not an outcome.
pub fn run_catalogs(
    exe: &Path,
    plan: &CatalogPlan,
    on_variant: impl Fn(&Mutant, &MutantOutcome) + Sync,
) -> Result<CatalogRun, CatalogError> {
    let started = Instant::now();
    let mut jobs: Vec<Job> =
        CLEAN_CATALOG.iter().flat_map(|s| plan.clean_seeds.iter().map(move |seed| Job::Clean(s.name, *seed))).collect();
    jobs.extend(CATALOG.iter().map(Job::Variant));
    let done = leakcheck::workspace::in_parallel(jobs, plan.workers.max(1), |job| match job {
        Job::Variant(m) => variant_in_child(exe, m.name, plan.cycles).inspect(|o| on_variant(m, o)).map(Done::Variant),
        Job::Clean(name, seed) => clean_store_in_child(exe, name, seed).map(Done::Clean),
    });
    let (mut variants, mut clean) = (Vec::with_capacity(CATALOG.len()), Vec::new());
    for d in done {
        match d? {
            Done::Variant(o) => variants.push(o),
            Done::Clean(o) => clean.push(o),
        }
    }
    clean.sort_by(|a, b| (&a.store, a.seed).cmp(&(&b.store, b.seed)));
    Ok(CatalogRun {
        variants,
        clean,
        clean_seeds: plan.clean_seeds.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
    })
}
