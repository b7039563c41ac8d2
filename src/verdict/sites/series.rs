//! Series of live bytes, one per allocating site and a few more (the record's total, what a site
//! class drained, what RocksDB reports), sampled together and kept bounded: blocks of samples on
//! one timeline, each block's lowest value and the cumulative counters at its end. When
//! [`MAX_BLOCKS`] blocks are full, neighbours merge pairwise in every series at once, so a soak of
//! a million cycles holds as many numbers per series as one of a thousand, and a look costs the
//! same.
//!
//! What the rule needs at full resolution is kept as the samples come, per series: the largest
//! rise from one sample to the next and the largest give-back (the deepest fall below an earlier
//! value), from the first judged sample on.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::verdict::consumer::Consumer;

/// The most blocks a series keeps; merging halves them.
pub(crate) const MAX_BLOCKS: usize = 128;

/// The most allocating sites given a series of their own: the sites that hold bytes at a sample
/// after these are summed into one series ([`Key::Rest`]).
pub(crate) const MAX_SITE_SERIES: usize = 256;

/// What a series is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "series", rename_all = "snake_case")]
pub enum Key {
    /// Everything the run's set-up and cycles hold, exactly (stacked or not).
    Total,
    /// One allocating stack's live bytes (each stacked block weighted by its sampling period).
    Stack {
        /// Its id in this process's record.
        id: u32,
    },
    /// The sites beyond the 256 given a series of their own, summed.
    Rest,
    /// Bytes a watch class held before it was watched and gave back since (cumulative).
    Drained {
        /// The watch class.
        class: u32,
    },
    /// What the store reports a RocksDB consumer holds, with its rounding (its bound).
    Reported {
        /// The consumer.
        consumer: Consumer,
    },
    /// The block caches' capacities, as the store reports them.
    CacheCapacity,
}

/// One series: its blocks' lowest values and cumulative variance, and its running figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Series {
    mins: Vec<f64>,
    vars: Vec<f64>,
    /// Its estimate at the last reading ([`Reading::estimate`]).
    estimate: f64,
    /// Per block, the samples that rose above the one before.
    ups: Vec<u32>,
    /// The block being filled: its lowest value and the variance at its last sample.
    open: Option<(f64, f64)>,
    /// Its samples that rose.
    open_ups: u32,
    /// The last value pushed.
    last: Option<f64>,
    /// The highest value so far.
    high: f64,
    /// The largest rise from one sample to the next.
    max_rise: f64,
    /// The deepest fall below an earlier value.
    max_give_back: f64,
    /// Samples pushed into it, counting those before it existed.
    pushed: u64,
    /// Its turnover ([`Reading::turned`]) at its first reading and at its last, and the cycles of
    /// those readings.
    turned: Option<((f64, f64), u64)>,
    turned_last: ((f64, f64), u64),
}

impl Series {
    fn push(&mut self, value: f64, var: f64) {
        self.push_replacing(value, var, 0.0);
    }

    /// Pushes `value`, of which `replaced` (what its class's older blocks gave back since the last
    /// sample) may be a rise that replaced them rather than grew.
    fn push_replacing(&mut self, value: f64, var: f64, replaced: f64) {
        self.pushed += 1;
        match self.last {
            Some(last) => {
                self.open_ups += u32::from(value > last);
                self.max_rise = self.max_rise.max(value - last - replaced.max(0.0));
                self.max_give_back = self.max_give_back.max(self.high - value);
                self.high = self.high.max(value);
            }
            None => self.high = value,
        }
        self.last = Some(value);
        self.open = Some(match self.open {
            Some((low, _)) => (low.min(value), var),
            None => (value, var),
        });
    }

    fn close(&mut self) {
        if let Some((low, var)) = self.open.take() {
            self.mins.push(low);
            self.vars.push(var);
            self.ups.push(std::mem::take(&mut self.open_ups));
        }
    }

    fn halve(&mut self) {
        self.mins = self.mins.chunks(2).map(|p| p.iter().copied().fold(f64::INFINITY, f64::min)).collect();
        self.vars = self.vars.chunks(2).map(|p| p[p.len() - 1]).collect();
        self.ups = self.ups.chunks(2).map(|p| p.iter().sum()).collect();
    }

    /// A series that held `value` and `var` at every earlier sample (`earlier`: there were some,
    /// `open`: some in the open block).
    fn padded(blocks: usize, open: bool, earlier: bool, value: f64, var: f64) -> Series {
        Series {
            mins: vec![value; blocks],
            vars: vec![var; blocks],
            estimate: 0.0,
            ups: vec![0; blocks],
            open: open.then_some((value, var)),
            open_ups: 0,
            last: earlier.then_some(value),
            high: value,
            max_rise: 0.0,
            max_give_back: 0.0,
            pushed: 0,
            turned: None,
            turned_last: ((0.0, 0.0), 0),
        }
    }
}

/// A series as the rule reads it: per block (the open one last), the cycle of its last sample,
/// its lowest value and the cumulative variance then; and its running figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) ends: &'a [u64],
    pub(crate) mins: &'a [f64],
    /// Per block, a cumulative count at its end ([`Reading::var`]).
    pub(crate) vars: &'a [f64],
    /// Per block, its samples that rose above the one before (empty: unknown).
    pub(crate) ups: &'a [u32],
    pub(crate) max_rise: f64,
    pub(crate) max_give_back: f64,
    pub(crate) last: f64,
    /// Its estimate at the last reading ([`Reading::estimate`]).
    pub(crate) estimate: f64,
    /// The spread of a level that comes and goes as it turned over: its turnover
    /// ([`Reading::turned`]) per cycle since its first reading.
    pub(crate) spread: f64,
    /// It is computed from estimates (a total less sampled sites): its spread counts even where
    /// it never fell.
    pub(crate) noisy: bool,
}

/// The spread of a level that comes and goes, from its turnover's two moments at the start of a
/// span of `cycles` and at its end ([`Reading::turned`]): the rate of turnover times the lives of
/// what turned over, each life counted only as far as it is long against an eighth of the span
/// (what turns over faster is seen to come and go in the run, and its ups and downs with it).
fn spread(first: (f64, f64), last: (f64, f64), cycles: u64) -> f64 {
    let span = cycles.max(1) as f64;
    let (turned, turned2) = ((last.0 - first.0).max(0.0), (last.1 - first.1).max(0.0));
    turned.min(turned2 * 8.0 / span) / span
}

/// The series of a run, on one timeline of blocks.
#[derive(Debug, Clone, Default)]
pub struct SeriesSet {
    /// The first cycle taken (the first judged).
    first: Option<u64>,
    /// The cycle of each closed block's last sample.
    ends: Vec<u64>,
    /// Samples per block (a power of two), and in the open one.
    block: usize,
    open_samples: usize,
    open_end: u64,
    /// Samples taken.
    samples: u64,
    series: BTreeMap<Key, Series>,
    /// Sites summed into [`Key::Rest`].
    folded: BTreeSet<u32>,
    /// Per stack with a series: the watch class of its first stacked block.
    classes: BTreeMap<u32, u32>,
    /// Scratch for the views' ends (the closed blocks' and the open one's).
    all_ends: Vec<u64>,
    /// Scratch per series for the views (closed blocks and the open one).
    scratch: BTreeMap<Key, Columns>,
}

/// A series' blocks as a view reads them: lowest values, counts at their ends, rises.
type Columns = (Vec<f64>, Vec<f64>, Vec<u32>);

/// One sample of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The series.
    pub key: Key,
    /// Its value: a site's stacked bytes (each stacked block once: an exact record, thinned by
    /// the draw in a common class), the record's total, what RocksDB reports, or a count.
    pub value: f64,
    /// A cumulative count, read at each block's end (a class's drained bytes).
    pub var: f64,
    /// A site's live bytes as estimated from its stacked blocks' weights: the figure reported.
    pub estimate: f64,
    /// What it turned over so far: the sum over its blocks given back of their size squared
    /// times their age, and times their age squared (cumulative). Over a span of cycles the first
    /// grows by the spread of a level that comes and goes (a Poisson count of blocks, each living
    /// its age): what a site that turns over moves by without growing. Blocks it keeps add
    /// nothing. Only lives long against the span can leave that spread unseen by the run (what
    /// turns over quickly comes and goes many times in it): the second weighs them.
    pub turned: (f64, f64),
    /// A stack's: the watch class of its first stacked block.
    pub class: Option<u32>,
}

impl Reading {
    /// A reading of `key`'s value alone.
    pub fn of(key: Key, value: f64) -> Reading {
        Reading { key, value, var: 0.0, estimate: value, turned: (0.0, 0.0), class: None }
    }

    /// A cumulative count (its value at each block's end kept as its variance column).
    pub fn count(key: Key, value: f64) -> Reading {
        Reading { key, value, var: value, estimate: value, turned: (0.0, 0.0), class: None }
    }
}

impl SeriesSet {
    /// Takes the sample after cycle `cycle` (cycles increasing): `readings` of the series that
    /// have one (a stack's with the watch class of its first block). A stack without a reading
    /// holds nothing, another series its last value; a stack past [`MAX_SITE_SERIES`] is summed
    /// into [`Key::Rest`].
    pub fn push(&mut self, cycle: u64, readings: impl IntoIterator<Item = Reading>) {
        if self.block == 0 {
            self.block = 1;
        }
        self.first.get_or_insert(cycle);
        let blocks = self.ends.len();
        let given = self.gather(readings);
        let replaced = self.replaced(&given);
        for (key, r) in given {
            // A stack (or the rest) held nothing before it was first read; a cumulative or
            // reported series held what it first reads.
            let before = if matches!(key, Key::Stack { .. } | Key::Rest) { 0.0 } else { r.value };
            let (open, earlier) = (self.open_samples > 0, blocks > 0 || self.open_samples > 0);
            let samples = self.samples;
            let s = self.series.entry(key).or_insert_with(|| {
                let mut s = Series::padded(blocks, open, earlier, before, r.var);
                s.pushed = samples;
                s
            });
            let drained = match key {
                Key::Stack { id } => self.classes.get(&id).and_then(|c| replaced.get(c)).copied().unwrap_or(0.0),
                _ => 0.0,
            };
            s.estimate = r.estimate;
            s.push_replacing(r.value, r.var, drained);
            s.turned.get_or_insert((r.turned, cycle));
            s.turned_last = (r.turned, cycle);
        }
        // A series without a reading this sample holds its last value; a stack, nothing (every
        // stack that holds bytes is read).
        for (key, s) in self.series.iter_mut() {
            if s.pushed < self.samples + 1 {
                let last = if matches!(key, Key::Stack { .. }) { 0.0 } else { s.last.unwrap_or(0.0) };
                if matches!(key, Key::Stack { .. }) {
                    s.estimate = 0.0;
                }
                let var = s.open.map(|o| o.1).or_else(|| s.vars.last().copied()).unwrap_or(0.0);
                s.push(last, var);
            }
        }
        self.samples += 1;
        self.open_samples += 1;
        self.open_end = cycle;
        if self.open_samples >= self.block {
            self.close_block(cycle);
        }
    }

    /// The readings by series: a stack past [`MAX_SITE_SERIES`] summed into [`Key::Rest`].
    fn gather(&mut self, readings: impl IntoIterator<Item = Reading>) -> BTreeMap<Key, Reading> {
        let mut new_stacks = self.series.keys().filter(|k| matches!(k, Key::Stack { .. })).count();
        let mut rest = Reading::of(Key::Rest, 0.0);
        let mut given: BTreeMap<Key, Reading> = BTreeMap::new();
        for r in readings {
            if let Key::Stack { id } = r.key {
                let kept = self.series.contains_key(&r.key) || given.contains_key(&r.key);
                if !kept && (self.folded.contains(&id) || new_stacks >= MAX_SITE_SERIES) {
                    self.folded.insert(id);
                    rest.value += r.value;
                    rest.var += r.var;
                    rest.estimate += r.estimate;
                    rest.turned = (rest.turned.0 + r.turned.0, rest.turned.1 + r.turned.1);
                    continue;
                }
                if !kept {
                    new_stacks += 1;
                    if let Some(c) = r.class {
                        self.classes.insert(id, c);
                    }
                }
            }
            given.insert(r.key, r);
        }
        if !self.folded.is_empty() {
            given.insert(Key::Rest, rest);
        }
        given
    }

    /// What each class's older blocks gave back since the last sample.
    fn replaced(&self, given: &BTreeMap<Key, Reading>) -> BTreeMap<u32, f64> {
        given
            .iter()
            .filter_map(|(key, r)| match key {
                Key::Drained { class } => {
                    let last = self.series.get(key).and_then(|s| s.last).unwrap_or(r.value);
                    Some((*class, r.value - last))
                }
                _ => None,
            })
            .collect()
    }

    /// Closes the open block (its last sample after `cycle`), and halves every series at the
    /// bound.
    fn close_block(&mut self, cycle: u64) {
        self.ends.push(cycle);
        self.open_samples = 0;
        for s in self.series.values_mut() {
            s.close();
        }
        if self.ends.len() >= MAX_BLOCKS {
            self.ends = self.ends.chunks(2).map(|p| p[p.len() - 1]).collect();
            for s in self.series.values_mut() {
                s.halve();
            }
            self.block *= 2;
        }
    }

    /// The first cycle taken and the last, when any was.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        Some((self.first?, if self.open_samples > 0 { self.open_end } else { *self.ends.last()? }))
    }

    /// The series kept, by key.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Key> {
        self.series.keys()
    }

    /// The watch class of a stack's first stacked block, when it has a series.
    pub(crate) fn class_of(&self, id: u32) -> Option<u32> {
        self.classes.get(&id).copied()
    }

    /// Sites summed into the rest.
    #[cfg(test)]
    pub(crate) fn folded(&self) -> usize {
        self.folded.len()
    }

    /// Prepares the views of every series (the open block appended), for [`SeriesSet::view`].
    pub(crate) fn prepare(&mut self) {
        self.all_ends.clone_from(&self.ends);
        if self.open_samples > 0 {
            self.all_ends.push(self.open_end);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.retain(|k, _| self.series.contains_key(k));
        for (key, s) in &self.series {
            let (mins, vars, ups) = scratch.entry(*key).or_default();
            mins.clone_from(&s.mins);
            vars.clone_from(&s.vars);
            ups.clone_from(&s.ups);
            if let Some((low, var)) = s.open {
                mins.push(low);
                vars.push(var);
                ups.push(s.open_ups);
            }
        }
        self.scratch = scratch;
    }

    /// A series as the rule reads it, as of the last [`SeriesSet::prepare`].
    pub(crate) fn view(&self, key: &Key) -> Option<View<'_>> {
        let s = self.series.get(key)?;
        let (mins, vars, ups) = self.scratch.get(key)?;
        Some(View {
            ends: &self.all_ends,
            mins,
            vars,
            ups,
            max_rise: s.max_rise,
            max_give_back: s.max_give_back,
            last: s.last.unwrap_or(0.0),
            estimate: s.estimate,
            spread: s
                .turned
                .map_or(0.0, |(first, at)| spread(first, s.turned_last.0, s.turned_last.1.saturating_sub(at))),
            noisy: false,
        })
    }

    /// The spreads of several series summed ([`View::spread`]).
    pub(crate) fn spread_of(&self, keys: &[Key]) -> f64 {
        keys.iter().filter_map(|k| self.view(k)).map(|v| v.spread).sum()
    }

    /// The cycles of each block's last sample, as of the last [`SeriesSet::prepare`].
    pub(crate) fn block_ends(&self) -> &[u64] {
        &self.all_ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(id: u32, value: f64) -> Reading {
        Reading { class: Some(0), ..Reading::of(Key::Stack { id }, value) }
    }

    #[test]
    fn blocks_keep_their_floors_and_merge_in_step_at_the_bound() {
        let mut set = SeriesSet::default();
        for c in 0..1000u64 {
            // A leak of 8 B a cycle, and a site that comes and goes.
            set.push(c, [stack(1, 8.0 * c as f64), stack(2, if c % 2 == 0 { 100.0 } else { 0.0 })]);
        }
        set.prepare();
        let v = set.view(&Key::Stack { id: 1 }).expect("kept");
        assert!(v.mins.len() <= MAX_BLOCKS && v.mins.len() == set.block_ends().len());
        // Each block's floor is its first sample's value (rising); the last is the open block's.
        assert!(v.mins.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(v.max_rise, 8.0);
        assert_eq!(v.max_give_back, 0.0);
        let w = set.view(&Key::Stack { id: 2 }).expect("kept");
        assert!(w.mins.iter().all(|&m| m == 0.0));
        assert_eq!((w.max_rise, w.max_give_back), (100.0, 100.0));
        // The cost is bounded whatever the run's length.
        assert!(set.block_ends().len() <= MAX_BLOCKS);
    }

    #[test]
    fn a_site_first_read_late_held_nothing_before_and_sites_past_the_bound_are_summed() {
        let mut set = SeriesSet::default();
        for c in 0..10u64 {
            let mut readings = vec![stack(1, 5.0)];
            if c >= 5 {
                readings.extend((0..MAX_SITE_SERIES as u32 + 3).map(|i| stack(10 + i, 1.0)));
            }
            set.push(c, readings);
        }
        set.prepare();
        let late = set.view(&Key::Stack { id: 10 }).expect("kept");
        assert_eq!(late.mins[..5], [0.0; 5]);
        assert_eq!(set.folded(), 4);
        let rest = set.view(&Key::Rest).expect("the rest");
        assert_eq!(rest.last, 4.0);
    }
}
