//! Exact signals: any residue after settling is a leak, from the first cycle on.

use super::model::{Residue, Rule, SignalVerdict};
use super::outcome::Verdict;
use crate::signal::SignalId;

/// One exact series, folded as it comes: the largest residue and the first cycle with one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExactSeries {
    expected: f64,
    max: f64,
    first_with_residue: Option<u64>,
    cycles: usize,
}

impl ExactSeries {
    /// A series whose every value must be `expected`.
    pub(crate) fn new(expected: f64) -> Self {
        ExactSeries { expected, max: f64::NEG_INFINITY, first_with_residue: None, cycles: 0 }
    }

    pub(crate) fn push(&mut self, cycle: u64, value: f64) {
        self.cycles += 1;
        self.max = self.max.max(value - self.expected);
        if value != self.expected && self.first_with_residue.is_none() {
            self.first_with_residue = Some(cycle);
        }
    }

    pub(crate) fn verdict(&self, signal: SignalId) -> SignalVerdict {
        let mut v = SignalVerdict::undecided(signal, Rule::Exact { expected: self.expected });
        v.cycles = self.cycles;
        if self.cycles == 0 {
            return v;
        }
        v.residue = Some(Residue { max: self.max, first_cycle: self.first_with_residue.map(|c| c as usize) });
        v.verdict = if self.first_with_residue.is_some() { Verdict::Leak } else { Verdict::Clean };
        v
    }
}
