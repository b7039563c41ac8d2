//! What a run ends with: its outcome ([`RunOutcome`]), or why it could not start or finish
//! ([`RunError`]); and the exit codes of both.

use std::path::PathBuf;

use crate::fault::FaultPlanError;
use crate::harness::HarnessError;
use crate::ledger::LedgerError;
use crate::report::{ReportError, RunReport};
use crate::verdict::Verdict;

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
    /// The suppression file cannot be read or is not valid (the error names its line).
    #[error("--suppressions: {0}")]
    Suppressions(#[from] crate::suppress::SuppressionError),
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

pub(crate) fn invalid(option: &'static str, problem: impl Into<String>) -> RunError {
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
    /// Whether the run publishes GitHub Actions' annotations ([`RunOutcome::annotations`]).
    pub(crate) annotations: bool,
}

impl RunOutcome {
    /// The run's verdict.
    pub fn verdict(&self) -> Verdict {
        self.report.verdict.verdict
    }

    /// The process exit code of the verdict: 0 clean, 1 leak, 3 inconclusive (2 is a usage
    /// or environment error, [`RunError`]).
    pub fn exit_code(&self) -> u8 {
        if self.passes_baseline() {
            return 0;
        }
        exit_code(self.report.verdict.verdict)
    }

    /// Whether the run leaked only what its baseline report did, no more per cycle beyond the
    /// margin ([`RunOptions::baseline`](super::RunOptions::baseline)); false without a baseline.
    /// An inconclusive run does not pass: it decided nothing.
    pub fn passes_baseline(&self) -> bool {
        self.report.verdict.verdict == Verdict::Leak && self.report.baseline.as_ref().is_some_and(|b| b.passes())
    }

    /// The verdict table `leakcheck check` prints: header, cycles, one line per signal, leak
    /// rate, return to baseline, the ledger's retained handles, integrity problems, verdict.
    pub fn table(&self) -> String {
        crate::report::text::table(&self.report)
    }

    /// What `check` prints by default: the summary, the findings, the judged signals with their
    /// notes and the verdict; [`RunOutcome::table`] adds the raw signals shown for reference and
    /// the totals.
    pub fn brief(&self) -> String {
        crate::report::text::brief(&self.report)
    }

    /// GitHub Actions' workflow commands for the findings (`::error file=..,line=..::4 Options
    /// handles retained, created at ..`), one per line, when the run publishes them
    /// ([`Annotations`](super::Annotations)); else empty. Paths are relative to the checkout
    /// (`GITHUB_WORKSPACE`, else the current directory), so they land on the diff.
    pub fn annotations(&self) -> String {
        if self.annotations {
            crate::report::github::annotations(&self.report, &checkout_root())
        } else {
            String::new()
        }
    }

    /// The run in one line: the verdict, what leaked and where, or what the clean verdict rules
    /// out and which signals measured nothing ([`RunReport::summary`]); the table's first line.
    pub fn summary(&self) -> String {
        self.report.summary()
    }

    /// The report as pretty JSON (report.json's content, its `summary` first).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(&self.report.written()).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Panics unless the verdict is clean (or, with a baseline, leaks nothing the baseline did
    /// not), with what leaked and where first, then the verdict table (and in it the ledger's
    /// retained-handle table) as the message. Before it panics it prints the CI's workflow
    /// commands ([`RunOutcome::annotations`]; none outside CI) on stdout.
    ///
    /// # Panics
    /// When the verdict is leak (a new one, with a baseline) or inconclusive.
    #[track_caller]
    pub fn assert_clean(&self) {
        if self.report.verdict.verdict != Verdict::Clean && !self.passes_baseline() {
            // The workflow commands first (empty outside CI), so that the failure lands at its
            // line; the table opens with the summary: what leaked and where.
            print!("{}", self.annotations());
            panic!("leakcheck: the store is not clean. {}", self.table());
        }
    }
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

/// The process's name as invoked (`leakcheck`, `kv-soak`, `rocksdb-sweep`), for its messages.
pub fn tool_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| PathBuf::from(a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "leakcheck".to_string())
}

/// The exit code of a verdict: 0 clean, 1 leak, 3 inconclusive (or, never a run's verdict, not
/// measured: nothing decided).
pub fn exit_code(v: Verdict) -> u8 {
    match v {
        Verdict::Clean => 0,
        Verdict::Leak => 1,
        Verdict::Inconclusive | Verdict::NotMeasured => 3,
    }
}

/// Where paths in annotations are relative to: the repository's checkout (`GITHUB_WORKSPACE`),
/// else the current directory.
pub(crate) fn checkout_root() -> PathBuf {
    std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from).or_else(|| std::env::current_dir().ok()).unwrap_or_default()
}
