//! The run in one line: the verdict, what leaked and where, or what a clean verdict rules out
//! and which signals measured nothing. The table's first line, report.html's headline, the job
//! summary's opening and report.json's `summary` are this line.

use serde::Serialize;

use super::words::rate;
use super::{Finding, RunReport};
use crate::signal::Signal;
use crate::verdict::{RuleKind, Verdict};

impl RunReport {
    /// The run in one line: `leak: 4 Options handles retained, created at src/store.rs:48:22 (owner
    /// task 0_0); and 1 more`, `clean after 300 cycles: rules out a continuing leak above 12 B/cycle
    /// (unexplained_bytes), ..; not measured: integrity`, or `inconclusive after 800 cycles: ..`.
    pub fn summary(&self) -> String {
        self.summary_of(&self.findings())
    }

    /// [`RunReport::summary`] from the report's findings, for a caller that has them already.
    pub(crate) fn summary_of(&self, findings: &[Finding]) -> String {
        let v = &self.verdict;
        let not_measured: Vec<String> =
            v.signals.iter().filter(|s| !s.measured()).map(|s| s.signal.to_string()).collect();
        let not_measured = if not_measured.is_empty() {
            String::new()
        } else {
            format!("; not measured: {}", not_measured.join(", "))
        };
        let line = match v.verdict {
            Verdict::Leak => {
                let leaks: Vec<_> = findings.iter().filter(|f| f.verdict == Verdict::Leak).collect();
                // Named by its signal, as the table's rows are.
                let first = leaks.first().map_or_else(
                    || "a judged signal".to_string(),
                    |f| match f.message.starts_with(&f.signal) {
                        true => f.message.clone(),
                        false => format!("{}: {}", f.signal, f.message),
                    },
                );
                let more = match leaks.len() {
                    0 | 1 => String::new(),
                    n => format!("; and {} more", n - 1),
                };
                let baseline = match self.baseline.as_ref().map(|b| b.passes()) {
                    Some(true) => " (none beyond the baseline: passes)",
                    Some(false) => " (beyond the baseline)",
                    None => "",
                };
                format!("leak{baseline}: {first}{more}")
            }
            Verdict::Clean => format!("clean after {} cycles: {}{not_measured}", self.cycles_run, self.rules_out()),
            Verdict::Inconclusive | Verdict::NotMeasured => {
                let why = match &v.bytes_unavailable {
                    // Its first sentence: the fix follows in the table.
                    Some(why) => format!("byte signals unavailable: {}", why.split(". ").next().unwrap_or(why)),
                    None => {
                        let undecided: Vec<String> = v
                            .signals
                            .iter()
                            .filter(|s| !s.informational && s.verdict == Verdict::Inconclusive)
                            // A corroborating signal's noise does not hold the run (as the verdict counts it).
                            .filter(|s| !s.corroborating() || s.growth_evidenced())
                            .map(|s| match s.more_cycles_needed {
                                Some(n) => format!("{} (about {n} more cycles needed)", s.signal),
                                None => s.signal.to_string(),
                            })
                            .collect();
                        if undecided.is_empty() {
                            "no signal decided".to_string()
                        } else {
                            format!("undecided: {}", undecided.join(", "))
                        }
                    }
                };
                format!("inconclusive after {} cycles: {why}{not_measured}", self.cycles_run)
            }
        };
        line.replace('\n', " ")
    }

    /// What a clean verdict rules out, by the signals that judged it.
    fn rules_out(&self) -> String {
        let v = &self.verdict;
        let mut parts = Vec::new();
        if let Some(ro) = &v.rules_out {
            parts.push(format!("a continuing leak above {}/cycle ({})", rate(ro.bytes_per_cycle), ro.signal));
        }
        let retained = self.signal(Signal::RetainedBytes).filter(|s| s.verdict == Verdict::Clean && !s.informational);
        if let Some(p) = retained.and_then(|s| s.retained.as_ref()).and_then(|r| r.rate_ruled_out()) {
            let every = 1.0 / p.max(1e-12);
            let every = if every >= 10.0 { format!("{every:.0}") } else { format!("{every:.1}") };
            parts.push(format!(
                "a leak of any size recurring in 1 of every {every} cycles or more often at any allocating stack, at \
                 99% power (retained_bytes)"
            ));
        }
        let exact: Vec<String> = v
            .signals
            .iter()
            .filter(|s| s.kind() == RuleKind::Exact && s.verdict == Verdict::Clean && !s.informational)
            .filter(|s| !matches!(s.family(), Signal::LiveHandlesOf | Signal::RetainedBytes))
            .map(|s| s.signal.to_string())
            .collect();
        if !exact.is_empty() {
            parts.push(format!("any residue of {} (exact)", exact.join(", ")));
        }
        if parts.is_empty() {
            "no judged signal found a leak".to_string()
        } else {
            format!("rules out {}", parts.join(", "))
        }
    }

    /// The report as report.json holds it: `summary` first, then the report's own fields.
    pub(crate) fn written(&self) -> Written<'_> {
        Written { summary: self.summary(), report: self }
    }
}

/// The report with its one-line summary, as written (`summary` is derived, and not read back).
#[derive(Serialize)]
pub(crate) struct Written<'a> {
    summary: String,
    #[serde(flatten)]
    report: &'a RunReport,
}
