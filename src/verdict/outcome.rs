//! What a signal, or a run, comes to ([`Verdict`]), and the least evidence a statistical signal
//! needs before it may decide ([`Evidence`]): the words every rule file of the verdict shares.

use serde::{Deserialize, Serialize};

/// The outcome for one signal, or for a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A signal whose source never reported in the run ([`SignalVerdict::not_measured`](super::SignalVerdict::not_measured) says
    /// which): neither clean nor a leak, and no part of the run's verdict. Never a run's verdict.
    #[serde(rename = "not_measured")]
    NotMeasured,
    /// No continuing growth beyond the budget (statistical) or no residue (exact).
    Clean,
    /// Not enough evidence either way yet.
    Inconclusive,
    /// Growth beyond the budget (statistical) or a residue (exact).
    Leak,
}

impl Verdict {
    /// The worst of two verdicts: leak over inconclusive over clean (over not measured).
    pub(crate) fn worst(self, other: Verdict) -> Verdict {
        self.max(other)
    }

    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::NotMeasured => "not measured",
            Verdict::Clean => "clean",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Leak => "leak",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The least evidence a statistical signal needs before it may say clean or leak. Below it the
/// verdict is inconclusive with the cycles still needed: an estimate from a handful of points
/// after a short run is not evidence (a 10-second soak called the clean reference store a leak
/// from 3 points).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Readable samples after warm-up.
    pub min_points: usize,
    /// Cycles those samples span after warm-up (first to last, inclusive).
    pub min_cycles: u64,
}

impl Default for Evidence {
    fn default() -> Self {
        Evidence { min_points: 10, min_cycles: 30 }
    }
}

impl Evidence {
    /// The floor of page-granular signals (resident memory, RSS): they move in 4 KiB steps and
    /// keep growing for a while after the warm-up (RocksDB's thread stacks and TLS are touched
    /// as its pools first do work: 13 KB a cycle over the first 50 cycles of a 1 x 2 store), so
    /// they decide only over 100 cycles after it.
    pub(crate) const PAGE_GRANULAR: Evidence = Evidence { min_points: 10, min_cycles: 100 };

    pub(crate) fn at_least(self, other: Evidence) -> Evidence {
        Evidence {
            min_points: self.min_points.max(other.min_points),
            min_cycles: self.min_cycles.max(other.min_cycles),
        }
    }
}
