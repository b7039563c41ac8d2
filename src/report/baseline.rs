//! A run held against a baseline report (`--baseline report.json`): for projects that start with
//! known leaks and must not add any. A leak fails the run only when the baseline did not have it,
//! or when it leaks more per cycle than the baseline's by more than the margin.
//!
//! Leaks are matched by what stays when code moves: a retained handle group by its kind and the
//! file that created it (not the line), an allocating stack by the first function of the user's
//! code in it, any other leaking signal by its name.

use super::model::{Against, BaselineCheck, Finding};
use super::RunReport;
use crate::verdict::Verdict;

/// The margin a leak's size per cycle may grow by over the baseline's before it counts as
/// more: a quarter.
pub const DEFAULT_BASELINE_MARGIN: f64 = 0.25;

impl BaselineCheck {
    /// Holds `run` against `baseline` (read from `file`).
    pub(crate) fn of(run: &RunReport, baseline: &RunReport, file: &str, margin: f64) -> BaselineCheck {
        let before = baseline.findings();
        let mut check =
            BaselineCheck { file: file.to_string(), margin, new: Vec::new(), more: Vec::new(), known: Vec::new() };
        for finding in run.findings().into_iter().filter(|f| f.verdict == Verdict::Leak) {
            let key = identity(&finding);
            let base = before.iter().filter(|b| b.verdict == Verdict::Leak).find(|b| identity(b) == key);
            let baseline_per_cycle = base.and_then(|b| b.per_cycle);
            let grown = match (finding.per_cycle, baseline_per_cycle) {
                (Some(now), Some(then)) => now > then * (1.0 + margin) && now - then > f64::EPSILON,
                _ => false,
            };
            let entry = Against { finding, baseline_per_cycle };
            match (base, grown) {
                (None, _) => check.new.push(entry),
                (Some(_), true) => check.more.push(entry),
                (Some(_), false) => check.known.push(entry),
            }
        }
        check
    }

    /// Nothing new and nothing grown: the run passes against its baseline.
    pub(crate) fn passes(&self) -> bool {
        self.new.is_empty() && self.more.is_empty()
    }

    /// What is new or grown, one line each, then a line for what is known.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.new {
            out.push(format!("new since the baseline: {}", a.finding.message));
        }
        for a in &self.more {
            out.push(format!(
                "more than the baseline ({} per cycle, +{:.0}% allowed): {}",
                a.baseline_per_cycle.map_or("-".to_string(), |b| format!("{b:.2}")),
                self.margin * 100.0,
                a.finding.message
            ));
        }
        out.push(format!(
            "baseline {}: {} new, {} more, {} known leak{} as before",
            self.file,
            self.new.len(),
            self.more.len(),
            self.known.len(),
            if self.known.len() == 1 { "" } else { "s" }
        ));
        out
    }
}

/// What identifies a leak across runs and code changes: the signal, and the file (handles) or
/// the user's function (stacks) where it has a place.
fn identity(f: &Finding) -> (String, String) {
    let place = if f.frames.is_empty() {
        f.place.as_ref().map_or(String::new(), |p| p.file.clone())
    } else {
        crate::probe::stacks::own_function(&f.frames)
            .or_else(|| f.frames.first().map(|s| crate::probe::stacks::split_location(s).0))
            .unwrap_or_default()
            .to_string()
    };
    (f.signal.clone(), place)
}
