//! A signal's series as bounded block floors: what the growth rule reads.
//!
//! Memory that leaks stays: every later sample carries it. Memory a cycle merely used (a
//! memtable's arena, a buffer freed on the next cycle) shows as positive transients. The lowest
//! value of a block of consecutive samples (its floor) keeps the first and drops the second, and
//! floors still add up what was lost: a staircase of leaked bursts is a staircase of floors.
//!
//! The floors are kept at a bounded count: when there are [`MAX_FLOORS`], neighbours are merged
//! pairwise (the floor of two blocks is the lower of their floors), so a soak of a million cycles
//! holds as many numbers as one of a thousand and a look costs the same.

/// The most floors kept; merging halves them.
pub(crate) const MAX_FLOORS: usize = 512;

/// The lowest value of a block of consecutive samples, and where it was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Floor {
    /// The cycle of the lowest sample.
    pub(crate) cycle: u64,
    /// Its value.
    pub(crate) value: f64,
}

impl Floor {
    fn lower(self, other: Floor) -> Floor {
        if other.value < self.value {
            other
        } else {
            self
        }
    }
}

/// Floors of blocks of `block` samples each, oldest first; the last block fills up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Floors {
    full: Vec<Floor>,
    /// Samples per full block (a power of two).
    block: usize,
    /// The block being filled, and how many samples it has.
    open: Option<(Floor, usize)>,
    samples: u64,
    first_cycle: Option<u64>,
    last_cycle: Option<u64>,
}

impl Default for Floors {
    fn default() -> Self {
        Floors { full: Vec::new(), block: 1, open: None, samples: 0, first_cycle: None, last_cycle: None }
    }
}

impl Floors {
    /// Adds a sample (cycles increasing).
    pub(crate) fn push(&mut self, cycle: u64, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.samples += 1;
        self.first_cycle.get_or_insert(cycle);
        self.last_cycle = Some(cycle);
        let here = Floor { cycle, value };
        let (floor, n) = match self.open.take() {
            Some((f, n)) => (f.lower(here), n + 1),
            None => (here, 1),
        };
        if n < self.block {
            self.open = Some((floor, n));
            return;
        }
        self.full.push(floor);
        if self.full.len() >= MAX_FLOORS {
            self.full = self.full.chunks(2).map(|p| p.iter().copied().reduce(Floor::lower).unwrap_or(p[0])).collect();
            self.block *= 2;
        }
    }

    /// Samples pushed.
    pub(crate) fn samples(&self) -> u64 {
        self.samples
    }

    /// The first and last cycles pushed.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        self.first_cycle.zip(self.last_cycle)
    }

    /// The floors of full blocks of at least `block` samples: the kept floors merged in groups
    /// until a block holds `block` samples (rounded up to the kept resolution).
    pub(crate) fn at_block(&self, block: usize) -> Vec<Floor> {
        let group = block.div_ceil(self.block).max(1).next_power_of_two();
        self.full
            .chunks(group)
            .filter(|c| c.len() == group)
            .map(|c| c.iter().copied().reduce(Floor::lower).unwrap_or(c[0]))
            .collect()
    }

    /// The lowest value pushed at or after `cycle` (to the kept resolution: a merged block counts
    /// when its floor is there).
    pub(crate) fn lowest_from(&self, cycle: u64) -> Option<f64> {
        self.lowest_between(cycle, u64::MAX)
    }

    /// The lowest value pushed from cycle `from` to `to`, both included (to the kept resolution:
    /// a merged block counts when its floor is there).
    pub(crate) fn lowest_between(&self, from: u64, to: u64) -> Option<f64> {
        let open = self.open.map(|(f, _)| f);
        self.full.iter().chain(open.iter()).filter(|f| (from..=to).contains(&f.cycle)).map(|f| f.value).reduce(f64::min)
    }

    /// Whether the later half of the samples stays above the first: the lowest value pushed in
    /// the later half of the cycles is higher than the lowest in the first (to the kept
    /// resolution). What a leak does that went on while the samples were taken, whatever its
    /// size: each loss raises every later floor. False with fewer than two samples.
    pub(crate) fn later_half_rose(&self) -> bool {
        let Some((first, last)) = self.span() else {
            return false;
        };
        let mid = first + (last - first).div_ceil(2);
        match (self.lowest_between(first, mid.saturating_sub(1)), self.lowest_between(mid, last)) {
            (Some(early), Some(late)) if mid > first => late > early,
            _ => false,
        }
    }

    /// The block size the analysis uses: up to `preferred` samples, smaller while that would
    /// leave fewer than `min_floors` floors (a short or sparsely sampled run).
    pub(crate) fn analysis_block(&self, preferred: usize, min_floors: u64) -> usize {
        let mut b = preferred.max(1).next_power_of_two();
        while b > 1 && self.samples / b as u64 <= min_floors {
            b /= 2;
        }
        b.max(self.block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_later_half_rose_only_when_its_lowest_sample_is_above_the_first_halfs() {
        let floors = |values: &[f64]| {
            let mut f = Floors::default();
            for (c, &v) in values.iter().enumerate() {
                f.push(c as u64 + 20, v);
            }
            f
        };
        // Flat, a transient rise, a fall: nothing kept.
        assert!(!floors(&[5.0; 8]).later_half_rose());
        assert!(!floors(&[5.0, 5.0, 9.0, 5.0, 5.0, 9.0, 5.0, 5.0]).later_half_rose());
        assert!(!floors(&[5.0, 6.0, 7.0, 8.0, 4.0, 4.0, 4.0, 4.0]).later_half_rose());
        // One descriptor kept in the first half, and a staircase: the later half stays above.
        assert!(floors(&[5.0, 5.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0]).later_half_rose());
        assert!(floors(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).later_half_rose());
        // Too few samples to have halves.
        assert!(!floors(&[5.0]).later_half_rose());
        assert!(!floors(&[]).later_half_rose());
    }

    #[test]
    fn floors_keep_the_lowest_sample_of_each_block() {
        let mut f = Floors::default();
        for c in 0..12u64 {
            // A transient every third sample.
            f.push(c, 100.0 + c as f64 + if c % 3 == 0 { 1e6 } else { 0.0 });
        }
        let floors = f.at_block(4);
        assert_eq!(floors.len(), 3);
        assert_eq!(floors[0], Floor { cycle: 1, value: 101.0 });
        assert_eq!(floors[2], Floor { cycle: 8, value: 108.0 });
    }

    #[test]
    fn the_count_stays_bounded_and_floors_stay_exact() {
        let mut f = Floors::default();
        for c in 0..1_000_000u64 {
            f.push(c, 3.0 * c as f64);
        }
        assert!(f.full.len() < MAX_FLOORS);
        let floors = f.at_block(1);
        assert!(floors.len() >= MAX_FLOORS / 2 - 1);
        // Floors of a line are the line at their first sample.
        for w in floors.windows(2) {
            assert_eq!(w[1].value - w[0].value, 3.0 * (w[1].cycle - w[0].cycle) as f64);
        }
    }

    #[test]
    fn short_runs_get_smaller_blocks() {
        let mut f = Floors::default();
        for c in 0..36u64 {
            f.push(c * 5, 0.0);
        }
        assert_eq!(f.analysis_block(4, 40), 1);
        for c in 36..400u64 {
            f.push(c * 5, 0.0);
        }
        assert_eq!(f.analysis_block(4, 40), 4);
    }
}
