//! `retained_bytes`: what the cycles' own allocations still hold at the end of a run, read from
//! the allocation generations ([`crate::probe::generations`]) — a record, not an estimate.
//!
//! The figures are exact. How they decide a run is still being settled (issue 41): residue in
//! two or more judged cycles is not yet a leak, because one-time initialisations reached late (a
//! fault path firing for the first time) leave residue in scattered cycles too; recurrence has to
//! be judged per allocating stack. Until then the row is informational: clean when no judged
//! cycle holds anything, inconclusive otherwise, and never decides the run.

use serde::{Deserialize, Serialize};

use super::model::{Estimate, Residue, Rule, SignalVerdict};
use super::Verdict;
use crate::probe::generations::Live;
use crate::signal::Signal;

/// What the judged generations still hold at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Retained {
    /// The first cycle judged (the first after the warm-up).
    pub from_cycle: u64,
    /// The last cycle judged: the youngest cycles are left out, their memory may still be in
    /// use (a store's state carried to the next cycle).
    pub to_cycle: u64,
    /// Bytes those cycles allocated and still hold.
    pub bytes: i64,
    /// Allocations those cycles made that are still live.
    pub allocations: i64,
    /// How many of those cycles hold anything.
    pub generations_holding: u64,
    /// Of the cycles holding anything: bytes each, the median.
    pub median_bytes: i64,
    /// ... the least.
    pub min_bytes: i64,
    /// ... the most.
    pub max_bytes: i64,
    /// The first cycle holding anything.
    pub first_cycle: Option<u64>,
    /// The last cycle holding anything.
    pub last_cycle: Option<u64>,
}

impl Retained {
    /// The figures of cycles `from..=to`, given what each cycle's generation holds.
    pub(crate) fn of(from: u64, to: u64, live: impl IntoIterator<Item = (u64, Live)>) -> Retained {
        let mut holding: Vec<(u64, i64)> = Vec::new();
        let (mut bytes, mut allocations) = (0, 0);
        for (cycle, l) in live {
            if cycle < from || cycle > to {
                continue;
            }
            bytes += l.bytes;
            allocations += l.allocations;
            if l.bytes > 0 {
                holding.push((cycle, l.bytes));
            }
        }
        let mut sizes: Vec<i64> = holding.iter().map(|&(_, b)| b).collect();
        sizes.sort_unstable();
        Retained {
            from_cycle: from,
            to_cycle: to,
            bytes,
            allocations,
            generations_holding: holding.len() as u64,
            median_bytes: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
            min_bytes: sizes.first().copied().unwrap_or(0),
            max_bytes: sizes.last().copied().unwrap_or(0),
            first_cycle: holding.first().map(|&(c, _)| c),
            last_cycle: holding.last().map(|&(c, _)| c),
        }
    }

    /// Cycles judged.
    pub fn cycles(&self) -> u64 {
        (self.to_cycle + 1).saturating_sub(self.from_cycle)
    }

    /// Bytes held per cycle judged.
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes as f64 / self.cycles().max(1) as f64
    }
}

/// The `retained_bytes` row, informational for now (see the module docs): clean when no judged
/// cycle holds anything, else inconclusive (held, not yet judged).
pub(crate) fn verdict(r: Retained) -> SignalVerdict {
    let mut v = SignalVerdict::undecided(Signal::RetainedBytes.into(), Rule::Exact { expected: 0.0 });
    v.verdict = if r.generations_holding == 0 { Verdict::Clean } else { Verdict::Inconclusive };
    v.cycles = r.cycles() as usize;
    let per_cycle = r.bytes_per_cycle();
    v.estimate = Some(Estimate::new(per_cycle, per_cycle, per_cycle));
    v.residue = Some(Residue { max: r.max_bytes as f64, first_cycle: r.first_cycle.map(|c| c as usize) });
    v.retained = Some(r);
    v.informational = true;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(bytes: i64) -> Live {
        Live { bytes, allocations: i64::from(bytes != 0) }
    }

    #[test]
    fn figures_of_the_judged_cycles_only() {
        let gens = [
            (0, live(14_000)),
            (5, live(0)),
            (20, live(1024)),
            (21, live(0)),
            (30, live(3000)),
            (40, live(2048)),
            (99, live(500)),
        ];
        let r = Retained::of(20, 98, gens);
        assert_eq!((r.bytes, r.allocations, r.generations_holding), (6072, 3, 3));
        assert_eq!((r.min_bytes, r.median_bytes, r.max_bytes), (1024, 2048, 3000));
        assert_eq!((r.first_cycle, r.last_cycle, r.cycles()), (Some(20), Some(40), 79));
        let v = verdict(r);
        assert_eq!((v.verdict, v.informational), (Verdict::Inconclusive, true));
        let none = Retained::of(20, 98, [(0, live(14_000)), (99, live(500))]);
        assert_eq!((none.bytes, none.generations_holding, none.first_cycle), (0, 0, None));
        assert_eq!(verdict(none).verdict, Verdict::Clean);
    }
}
