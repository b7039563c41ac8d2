//! A simulator of allocation histories: what the record of allocation generations holds, look by
//! look, for mixtures of clean patterns (caches turning over, pools, high-water registries,
//! containers, scratch buffers, lazy statics, RocksDB consumers reported or not) and leaks
//! (every cycle, every Nth, rare at random, late, at handle peaks, at a site shared with a clean
//! pattern), judged by the age rule exactly as the harness calls it
//! ([`leakcheck::workspace::age::judge`]).
//!
//! The rule is a function of the recorded history, so it is proven here first, on histories whose
//! truth is known: no clean mixture may be called a leak, and every leak must be found by the
//! cycle the power table states ([`Pattern::found_by`]). The proptest in
//! `tests/simulated_histories.rs` asserts both; `benches/simulated.rs` prints both rates over
//! 100,000 histories.
//!
//! What the simulator models of the record, as the hooks make it (docs/generations.md):
//! - a block belongs to the cycle that allocated it; a look judges the cycles from the warm-up to
//!   the last but one;
//! - a site's blocks carry its stack only once its size is watched (the cycle after one of its
//!   judged blocks outlived its cycle), and then only a sampled share of them (`stacked`: 1 for a
//!   rare size, less for a busy one);
//! - a site's window is the oldest age at which it gave a stacked block back; its size class's,
//!   the oldest age at which any block of the class (any site's, stacked or not) was given back;
//! - a container's block moves to the cycle that grew it, and its growths are recorded;
//! - a RocksDB consumer's share is explained when the store reports it.

use leakcheck::workspace::age::{self, Aged, ContainerGrowth, History, Open, Span};
use leakcheck::workspace::growth::{self, Consumer, Context, Key, Reading, SeriesSet};
use leakcheck::workspace::SplitMix64;

/// The warm-up: cycles before it are not judged (check's default).
pub const WARMUP: u64 = 20;
/// The most cycles a run has (check's default `--max-cycles`).
pub const MAX_CYCLES: u64 = 800;
/// Cycles between the record's looks.
pub const LOOK_EVERY: u64 = 5;
/// The planned end of a check asked for no cycles (check's default `--cycles`): before it, no
/// statistical signal calls a leak.
pub const PLANNED_END: u64 = 200;
/// Cycles between check's looks after its planned end, while undecided.
pub const CHECK_LOOK_EVERY: u64 = 10;

/// A random source for the simulator.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.below(hi - lo + 1)
    }

    /// Poisson with mean `mean` (small means: Knuth's product of uniforms).
    pub fn poisson(&mut self, mean: f64) -> u64 {
        let limit = (-mean).exp();
        let (mut k, mut p) = (0, self.unit());
        while p > limit {
            k += 1;
            p *= self.unit();
        }
        k
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.0.below(items.len() as u64) as usize]
    }
}

/// How long a cache's entries live.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lives {
    /// Exactly this many cycles (a FIFO cache at a steady rate).
    Fixed(u64),
    /// Memoryless, with this mean (random eviction).
    Geometric(f64),
    /// Heavy-tailed: at least `min` cycles, tail index `alpha` (above 1: a finite mean, as a cache
    /// of bounded capacity must have at a steady insertion rate).
    Pareto {
        /// The shortest life.
        min: u64,
        /// The tail index (1: very heavy).
        alpha: f64,
    },
}

impl Lives {
    fn draw(self, rng: &mut Rng) -> u64 {
        match self {
            Lives::Fixed(n) => n,
            Lives::Geometric(mean) => {
                let u = rng.unit().max(1e-12);
                (-(u.ln()) * mean).floor() as u64 + 1
            }
            Lives::Pareto { min, alpha } => {
                let u = rng.unit().max(1e-12);
                ((min as f64) / u.powf(1.0 / alpha)).min(1e7) as u64
            }
        }
    }
}

/// When a leak fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Firing {
    /// In each cycle from `from` on with probability `p` (1: every cycle).
    Rate {
        /// The fraction of cycles.
        p: f64,
        /// The first cycle it may fire in.
        from: u64,
    },
    /// In every `n`th cycle from `from` on.
    Every {
        /// The period.
        n: u64,
        /// The first cycle it fires in.
        from: u64,
    },
    /// In the cycles that raise a handle high-water mark, a store whose handles open at once keep
    /// rising in a fraction `p` of cycles.
    AtPeaks {
        /// The fraction of cycles that raise a mark.
        p: f64,
    },
}

impl Firing {
    fn fires(self, cycle: u64, peak: bool, rng: &mut Rng) -> bool {
        match self {
            Firing::Rate { p, from } => cycle >= from && rng.chance(p),
            Firing::Every { n, from } => cycle >= from && (cycle - from).is_multiple_of(n.max(1)),
            Firing::AtPeaks { .. } => peak,
        }
    }

    /// The fraction of cycles it fires in, and the first it may fire in.
    fn rate(self) -> (f64, u64) {
        match self {
            Firing::Rate { p, from } => (p, from),
            Firing::Every { n, from } => (1.0 / n.max(1) as f64, from),
            Firing::AtPeaks { p } => (p, 0),
        }
    }
}

/// A clean pattern or a leak, feeding one site.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// A cache turning over since before the run: full at its start (entries made in the set-up,
    /// given back as their lives end), then `per_cycle` entries a cycle (Poisson), each given back
    /// when its life ends.
    Turnover {
        /// Entries inserted a cycle, on average.
        per_cycle: f64,
        /// How long they live.
        lives: Lives,
    },
    /// `blocks` blocks allocated in the first `over` cycles (within the warm-up: a pool still
    /// filling after it cannot be told from a leak), never given back.
    Pool {
        /// Blocks.
        blocks: u64,
        /// Cycles they are spread over, from cycle 0.
        over: u64,
    },
    /// A registry sized by the most of a quantity ever seen: one block for each unit a cycle's
    /// draw exceeds the most before it. `bound`: the draw is Binomial(bound, 1/2) (it stops at
    /// its bound); `None`: a continuous draw (records ever rarer, never stopping).
    HighWater {
        /// The draw's bound.
        bound: Option<u64>,
    },
    /// An LRU cache of `capacity` entries, warm before the run, `per_cycle` lookups a cycle of
    /// keys drawn from `keys` with Zipf popularity of exponent `skew`: a miss inserts (a block),
    /// the least recently used entry is given back. Hot keys live long, cold ones die young.
    Lru {
        /// Entries it holds.
        capacity: u64,
        /// Lookups a cycle.
        per_cycle: u64,
        /// Distinct keys.
        keys: u64,
        /// Zipf exponent.
        skew: f64,
    },
    /// A lazy initialisation reached late: `blocks` blocks at cycle `at`, kept.
    Once {
        /// The cycle.
        at: u64,
        /// Its blocks.
        blocks: u64,
    },
    /// A container appended `per_cycle` elements a cycle (Poisson) from cycle `from` until it
    /// holds `bound` (it then drops its oldest: its buffer never grows again), its capacity
    /// doubling.
    Container {
        /// The first cycle it grows in.
        from: u64,
        /// Elements appended a cycle.
        per_cycle: f64,
        /// The most elements it holds.
        bound: u64,
    },
    /// A scratch buffer shrunk at the end of each cycle and grown back to its working size.
    Scratch,
    /// A RocksDB consumer (a block cache, a memtable) filling at `per_cycle` blocks a cycle from
    /// cycle 0 toward `capacity`, then evicting its oldest; `reported` through `MemoryConsumers`.
    Consumer {
        /// Blocks a cycle.
        per_cycle: f64,
        /// Its capacity, in blocks.
        capacity: u64,
        /// Whether the store reports it.
        reported: bool,
    },
    /// A leak: a block kept at each firing.
    Leak {
        /// When it fires.
        fires: Firing,
    },
    /// A collection that appends `per_cycle` blocks a cycle (Poisson) and drops its oldest every
    /// `drop_every` cycles: it gives back now and then, and grows without bound.
    Shedding {
        /// Blocks appended a cycle.
        per_cycle: f64,
        /// Cycles between two drops of its oldest.
        drop_every: u64,
    },
    /// A structure rebuilt every cycle (copy-on-write: the new copy made, the old one freed),
    /// `grow` bytes larger each time: its one block always the youngest cycle's, growing without
    /// bound.
    Rebuilt {
        /// Bytes it grows by a cycle.
        grow: u64,
    },
    /// Many small collections, one made a cycle and grown once by a realloc the cycle after, all
    /// kept: each "stopped", together without bound.
    GrewOnce,
    /// A RocksDB cache the store reports, whose capacity is raised as it fills and never lowered:
    /// a bound that rises with what it bounds is no bound.
    RisingBound {
        /// Blocks a cycle.
        per_cycle: f64,
    },
    /// One loader serving a busy partition (`busy` blocks a cycle, given back after 2) and a
    /// quiet one (`quiet` a cycle, kept for `quiet_life`), both from the run's start: two
    /// lifetimes at one stack, bounded once the quiet one is full.
    Loader {
        /// Busy blocks a cycle.
        busy: f64,
        /// Quiet blocks a cycle.
        quiet: f64,
        /// How long a quiet block is kept.
        quiet_life: u64,
    },
    /// A table of `keys` entries filled lazily: `draws` lookups a cycle (Poisson) of a key drawn
    /// at random, a miss adds its entry, kept: a coupon collector, filling at a falling rate.
    LazyTable {
        /// Its keys.
        keys: u64,
        /// Lookups a cycle.
        draws: f64,
    },
    /// A deferred free: blocks pile up (`per_cycle` a cycle) until a janitor frees them all; its
    /// interval starts at `first` and doubles at each run up to `cap` (backing off).
    Janitor {
        /// Blocks a cycle.
        per_cycle: f64,
        /// Its first interval.
        first: u64,
        /// Its longest interval.
        cap: u64,
    },
    /// A queue that keeps its last `capacity` entries, fed one a cycle from the run's start.
    Queue {
        /// Entries it keeps.
        capacity: u64,
    },
}

impl Pattern {
    /// Whether it leaks (grows without bound).
    pub fn leaks(&self) -> bool {
        match *self {
            Pattern::Leak { .. } | Pattern::Rebuilt { .. } | Pattern::GrewOnce | Pattern::RisingBound { .. } => true,
            Pattern::Shedding { per_cycle, drop_every } => per_cycle * drop_every as f64 > 1.0,
            _ => false,
        }
    }

    /// The cycle by which a clean pattern has stopped growing (its bound shown): a container
    /// when it last doubles, a RocksDB consumer when it is full (a fifth more, for the draw).
    /// Everything else is at its bound from the start or grows only by chance (a high-water mark).
    pub fn grows_until(&self) -> u64 {
        match *self {
            Pattern::Container { from, per_cycle, bound } => {
                from + (1.2 * (bound / 2 + 1) as f64 / per_cycle.max(1e-9)).ceil() as u64
            }
            Pattern::Consumer { per_cycle, capacity, .. } => {
                (1.2 * capacity as f64 / per_cycle.max(1e-9)).ceil() as u64
            }
            Pattern::Loader { quiet_life, .. } => quiet_life + 10,
            Pattern::Queue { capacity } => capacity + 1,
            // A coupon collector: half an entry missing, on average, after keys x (ln keys + ln 2)
            // lookups.
            Pattern::LazyTable { keys, draws } => {
                (keys as f64 * ((keys as f64).ln() + 2f64.ln()) / draws.max(1e-9)).ceil() as u64
            }
            // Its interval stops growing, then one more of its longest shows its bound.
            Pattern::Janitor { first, cap, .. } => {
                let (mut at, mut interval) = (0, first.max(1));
                while interval < cap {
                    at += interval;
                    interval = (interval * 2).min(cap);
                }
                at + 2 * cap
            }
            _ => 0,
        }
    }

    /// The look by which the power table says a leak is found with probability `power` (the rule's
    /// is [`age::POWER`]), at a site whose stacked share of blocks is `stacked` and whose window
    /// (if it shares its site with a cache) is `window`; `None` for a clean pattern.
    pub fn found_by(&self, stacked: f64, window: u64, power: f64) -> Option<u64> {
        let (p, from) = match *self {
            Pattern::Leak { fires } => fires.rate(),
            // Each rises in every cycle (a cache raised as it fills: in most).
            Pattern::Rebuilt { .. } | Pattern::GrewOnce => (1.0, 0),
            Pattern::RisingBound { per_cycle } => (1.0 - (-per_cycle).exp(), 0),
            Pattern::Shedding { per_cycle, .. } if self.leaks() => (1.0 - (-per_cycle).exp(), 0),
            _ => return None,
        };
        // Firings that carry the stack: the first after the warm-up does not (its size is watched
        // from the next cycle), the rest in the share `stacked`.
        let p = p * stacked;
        let mut late = age::LATE_HOLDS;
        while leakcheck_binomial_at_least(late, p, age::LATE_HOLDS) < power {
            late += 1;
        }
        let start = from.max(WARMUP);
        // The later half of the old cycles must hold `late` cycles of the leak: the old cycles
        // from the warm-up must number 2 x late, and at least `late` of them from its start on.
        // One cycle more for its first (unstacked) firing, the window's margin, then the next look.
        let old_to = (WARMUP + 2 * late).max(start + late) + (1.0 / p).ceil() as u64;
        let now = old_to + 2 * window + 1;
        Some(first_look_at_or_after(now.div_ceil(LOOK_EVERY) * LOOK_EVERY + 1))
    }
}

/// The first look of a check asked for no cycles (at its planned end, then every
/// [`CHECK_LOOK_EVERY`]) at or after `cycle`: before the planned end no leak is called.
pub fn first_look_at_or_after(cycle: u64) -> u64 {
    if cycle <= PLANNED_END {
        PLANNED_END
    } else {
        PLANNED_END + (cycle - PLANNED_END).div_ceil(CHECK_LOOK_EVERY) * CHECK_LOOK_EVERY
    }
}

/// P(Binomial(n, p) >= k), the power table's tail (the rule's own, re-derived for the table).
fn leakcheck_binomial_at_least(n: u64, p: f64, k: u64) -> f64 {
    if p >= 1.0 {
        return if n >= k { 1.0 } else { 0.0 };
    }
    let q = 1.0 - p;
    let mut term = q.powf(n as f64);
    let mut below = 0.0;
    for i in 0..k.min(n + 1) {
        below += term;
        term *= (n - i) as f64 / (i + 1) as f64 * p / q;
    }
    (1.0 - below).clamp(0.0, 1.0)
}

/// One site of a history: the patterns that feed it, the share of its blocks that carry its
/// stack once its size is watched, and its size class (sites of one class share its window).
#[derive(Debug, Clone, PartialEq)]
pub struct SiteSpec {
    /// What feeds it.
    pub patterns: Vec<Pattern>,
    /// The share of its blocks that carry its stack once its size is watched.
    pub stacked: f64,
    /// Its size class.
    pub class: usize,
}

/// A mixture: the sites of one simulated store.
#[derive(Debug, Clone, PartialEq)]
pub struct Mixture {
    /// Its sites.
    pub sites: Vec<SiteSpec>,
    /// The seed of its random draws.
    pub seed: u64,
}

impl Mixture {
    /// Whether any of its sites leaks.
    pub fn leaks(&self) -> bool {
        self.sites.iter().any(|s| s.patterns.iter().any(Pattern::leaks))
    }

    /// The look by which the power table says its leak is found (the earliest of its leaks), at
    /// `power`: the window it waits for is its site's, or its class's.
    pub fn found_by(&self, power: f64) -> Option<u64> {
        let class_window = |class: usize| {
            self.sites.iter().filter(|s| s.class == class).flat_map(|s| &s.patterns).map(window_of).max().unwrap_or(0)
        };
        self.sites
            .iter()
            .flat_map(|s| {
                let window = class_window(s.class);
                s.patterns.iter().filter_map(move |p| {
                    let own = p.found_by(s.stacked, window, power)?;
                    Some(host_found_by(s, p, own))
                })
            })
            .min()
    }
}

/// The look by which a leak `p` at a site that also turns over (a cache whose entries come and
/// go at random: its live bytes spread with them) is found: once its growth over the later half,
/// up to the last eighth, passes the budget the site's own spread sets (the rule's `z` of about
/// 5, for two levels: eight of the cache's deviations, with a fifth more), and at least at the
/// table's cycle `own`. A site that holds a constant amount (a cache that evicts as it inserts,
/// a pool, a scratch buffer whose every block is stacked) spreads nothing: the table's cycle.
fn host_found_by(site: &SiteSpec, p: &Pattern, own: u64) -> u64 {
    let Pattern::Leak { fires } = p else { return own };
    let weight = (1.0 / site.stacked.clamp(1e-9, 1.0)).round();
    let spread: f64 = site
        .patterns
        .iter()
        .map(|q| match *q {
            Pattern::Turnover { per_cycle, lives } => {
                let mean = match lives {
                    Lives::Fixed(n) => n as f64,
                    Lives::Geometric(m) => m,
                    Lives::Pareto { min, alpha } => min as f64 * alpha / (alpha - 1.0).max(0.5),
                };
                per_cycle * mean * (64.0 * weight).powi(2)
            }
            // Drawn at a weight above 1, its one block is in the estimate or not.
            Pattern::Scratch if weight > 1.0 => (4096.0 * weight).powi(2),
            _ => 0.0,
        })
        .sum();
    if spread == 0.0 {
        return own;
    }
    let (rate, from) = fires.rate();
    let mut n = own;
    while n <= MAX_CYCLES {
        let start = from.max(WARMUP);
        let half = WARMUP + (n - WARMUP) / 2;
        let eighth = n - (n - WARMUP) / 8;
        let grew = 8.0 * rate * eighth.saturating_sub(half.max(start)) as f64;
        // The draw's error of the leak's own blocks at both ends.
        let own_draw = (2.0 * rate * n.saturating_sub(start) as f64 * (weight - 1.0) * weight * 64.0).sqrt();
        if grew >= 1.2 * (8.0 * spread.sqrt() + 5.0 * own_draw) {
            return first_look_at_or_after(n);
        }
        n += CHECK_LOOK_EVERY;
    }
    n
}

/// The most a clean pattern's window can be (the oldest age at which it gives a block back), for
/// the power table of a leak that shares its site or size class: an upper bound, as the table
/// adds twice the window the run sees.
fn window_of(p: &Pattern) -> u64 {
    match *p {
        Pattern::Turnover { lives: Lives::Fixed(n), .. } => n,
        Pattern::Turnover { lives: Lives::Geometric(mean), .. } => (mean * 12.0) as u64,
        Pattern::Turnover { lives: Lives::Pareto { .. }, .. } => MAX_CYCLES,
        Pattern::Scratch => 1,
        Pattern::Lru { .. } => MAX_CYCLES,
        // Evicted after `capacity` more insertions, at a Poisson rate: a Gamma time of that mean,
        // whose largest over a run is well within 1.5 times it, and 10 cycles.
        Pattern::Consumer { per_cycle, capacity, .. } => (1.5 * capacity as f64 / per_cycle.max(1e-9)) as u64 + 10,
        _ => 0,
    }
}

/// How a check of the record stops (the harness's behaviour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// At the first look at or after this cycle where nothing is open and nothing leaks (check:
    /// its `--cycles`), or at a leak.
    Decided(u64),
    /// Every look to the last (a soak, or a check held open by another signal).
    Never,
    /// Every look to the last, from this planned end (the rule's own cycle, for the power table).
    From(u64),
}

/// What one simulated run showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The cycles run at the first look that found a leak.
    pub leak_at: Option<u64>,
    /// The cycles run at the look that decided clean.
    pub clean_at: Option<u64>,
    /// The run ended with a site's question open (inconclusive).
    pub open_at_end: bool,
    /// Looks taken.
    pub looks: u64,
    /// The site the first leak was found at.
    pub leak_site: Option<usize>,
    /// Why the first site still open at the end is (`rare losses`, `on schedule`, `unreported
    /// consumer`).
    pub open_reason: Option<&'static str>,
    /// The leak found was a clean pattern still growing into the last quarter of the judged
    /// cycles at the look that called it (a bound beyond the run: the "still growing" leak).
    pub still_growing: bool,
}

/// A live block of a site.
#[derive(Debug, Clone, Copy)]
struct Block {
    cycle: u64,
    bytes: u64,
    /// The weight of its stack: the sampling period it was drawn at (0: no stack).
    weight: f64,
}

impl Block {
    fn stacked(&self) -> bool {
        self.weight > 0.0
    }
}

/// A site's state while the run goes.
#[derive(Debug, Default)]
struct SiteState {
    /// Stacked bytes held per allocating cycle, ascending (what the look reads).
    holds: Vec<(u64, u64)>,
    /// Blocks to give back, by cycle.
    frees: std::collections::BTreeMap<u64, Vec<Block>>,
    /// The oldest age at which a stacked block was given back.
    turnover: Option<u64>,
    /// The oldest age at which any of its blocks was given back (for its class's window).
    any_turnover: Option<u64>,
    /// Watched from this cycle on.
    watched_from: Option<u64>,
    /// The cycle of its first stacked block (its stack was first taken).
    first_stacked: Option<u64>,
    /// Whether it fills a RocksDB consumer, and whether that is reported.
    consumer: Option<bool>,
    /// Per pattern state.
    high: u64,
    pool_done: u64,
    container: Option<ContainerState>,
    /// Consumer blocks, oldest first, for eviction.
    consumer_blocks: std::collections::VecDeque<Block>,
    /// An LRU cache's entries: key -> (last use, its block), and last use -> key.
    lru: Option<Lru>,
    /// Blocks made by the last cycle (to watch the size from the next).
    made_last: Vec<Block>,
    /// Its live bytes: all of them, its stacked blocks' (what the rule judges), and as the record
    /// estimates them (stacked blocks times their weights).
    exact: f64,
    stacked: f64,
    estimate: f64,
    /// The share of its blocks stacked once watched (what a class's older block given back is
    /// worth in stacked bytes, on average).
    share: f64,
    /// The sum over its stacked blocks given back of their size squared times their age, and times
    /// its square.
    turned: (f64, f64),
    /// Frees count as turnover (always, in the simulator: its runs have no teardown).
    judging: bool,
    /// Bytes made before it was watched, without a stack, given back since, and the sum of their
    /// sizes squared times their ages.
    drained: f64,
    drained_turned: (f64, f64),
    /// The blocks of a collection, a queue or a janitor's pile, oldest first.
    kept: std::collections::VecDeque<Block>,
    /// A rebuilt structure's one block.
    rebuilt: Option<Block>,
    /// Collections made last cycle, to grow once in this one.
    to_grow: Vec<Block>,
    /// A lazy table's keys present.
    keys: std::collections::BTreeSet<u64>,
    /// A janitor's next run and its interval.
    janitor: Option<(u64, u64)>,
    /// It is a reported cache whose capacity rises with it.
    rising_bound: bool,
}

/// An LRU cache under simulation.
#[derive(Debug, Default)]
struct Lru {
    entries: std::collections::HashMap<u64, (u64, Block)>,
    by_use: std::collections::BTreeMap<u64, u64>,
    tick: u64,
    /// Cumulative Zipf weights of the keys, for drawing.
    weights: Vec<f64>,
}

impl Lru {
    fn new(keys: u64, skew: f64) -> Lru {
        let mut total = 0.0;
        let weights = (1..=keys)
            .map(|k| {
                total += 1.0 / (k as f64).powf(skew);
                total
            })
            .collect();
        Lru { weights, ..Lru::default() }
    }

    fn draw(&self, rng: &mut Rng) -> u64 {
        let total = self.weights.last().copied().unwrap_or(1.0);
        let u = rng.unit() * total;
        self.weights.partition_point(|&w| w < u) as u64
    }

    /// A lookup of `key` at `cycle`: a hit refreshes it; a miss makes a block, and gives back the
    /// least recently used entry when full. Returns the block made and the one given back.
    fn lookup(&mut self, key: u64, capacity: u64, made: Block) -> (Option<Block>, Option<Block>) {
        self.tick += 1;
        if let Some((used, _)) = self.entries.get_mut(&key) {
            self.by_use.remove(used);
            *used = self.tick;
            self.by_use.insert(self.tick, key);
            return (None, None);
        }
        self.entries.insert(key, (self.tick, made));
        self.by_use.insert(self.tick, key);
        let mut evicted = None;
        if self.entries.len() as u64 > capacity {
            if let Some((_, old_key)) = self.by_use.pop_first() {
                evicted = self.entries.remove(&old_key).map(|(_, b)| b);
            }
        }
        (Some(made), evicted)
    }
}

#[derive(Debug, Clone, Copy)]
struct ContainerState {
    elements: u64,
    capacity: u64,
    /// The block (its cycle).
    block: Block,
    growth: Option<ContainerGrowth>,
    /// The cycle of the rise before the last one.
    last_rise: Option<u64>,
}

impl SiteState {
    fn add(&mut self, b: Block) {
        self.exact += b.bytes as f64;
        if !b.stacked() {
            return;
        }
        self.stacked += b.bytes as f64;
        self.estimate += b.bytes as f64 * b.weight;
        self.first_stacked = self.first_stacked.or(Some(b.cycle));
        match self.holds.last_mut() {
            Some((c, bytes)) if *c == b.cycle => *bytes += b.bytes,
            _ => {
                let at = self.holds.partition_point(|&(c, _)| c < b.cycle);
                if self.holds.get(at).is_some_and(|&(c, _)| c == b.cycle) {
                    self.holds[at].1 += b.bytes;
                } else {
                    self.holds.insert(at, (b.cycle, b.bytes));
                }
            }
        }
    }

    /// Gives `b` back at cycle `now`; `freed`: a free (not a realloc's move), which sets the
    /// windows. A block of the set-up has cycle -1, stored as `u64::MAX`.
    fn remove(&mut self, b: Block, now: u64, freed: bool) {
        if freed {
            let age = if b.cycle == u64::MAX { now + 1 } else { now - b.cycle };
            self.any_turnover = Some(self.any_turnover.map_or(age, |t| t.max(age)));
            if b.stacked() {
                self.turnover = Some(self.turnover.map_or(age, |t| t.max(age)));
            }
        }
        self.exact -= b.bytes as f64;
        if !b.stacked() {
            // Made before its size was watched: what a site's stacked blocks replace.
            if self.watched_from.is_some_and(|w| b.cycle == u64::MAX || b.cycle < w) {
                self.drained += b.bytes as f64 * self.share;
                if freed {
                    let age = if b.cycle == u64::MAX { now + 1 } else { now - b.cycle };
                    let turned = (b.bytes * b.bytes) as f64 * age as f64 * self.share;
                    self.drained_turned = (self.drained_turned.0 + turned, self.drained_turned.1 + turned * age as f64);
                }
            }
            return;
        }
        self.stacked -= b.bytes as f64;
        self.estimate -= b.bytes as f64 * b.weight;
        if freed && self.judging {
            let age = if b.cycle == u64::MAX { now + 1 } else { now - b.cycle };
            let turned = (b.bytes * b.bytes) as f64 * age as f64;
            self.turned = (self.turned.0 + turned, self.turned.1 + turned * age as f64);
        }
        let at = self.holds.partition_point(|&(c, _)| c < b.cycle);
        if let Some(h) = self.holds.get_mut(at).filter(|h| h.0 == b.cycle) {
            h.1 -= b.bytes.min(h.1);
            if h.1 == 0 {
                self.holds.remove(at);
            }
        }
    }

    /// The weight of a block made at `cycle` whose site stacks `share` of its blocks once
    /// watched: the sampling period when its stack is taken, 0 when not.
    fn stacked(&self, cycle: u64, share: f64, rng: &mut Rng) -> f64 {
        let taken = self.watched_from.is_some_and(|w| cycle >= w) && (share >= 1.0 || rng.chance(share));
        if taken {
            (1.0 / share.clamp(1e-9, 1.0)).round()
        } else {
            0.0
        }
    }
}

/// Runs a mixture: cycles from 0, looks every [`LOOK_EVERY`] cycles after the warm-up, as `stop`
/// says. Handle high-water marks (for leaks at handle peaks) rise in a fraction of cycles set by
/// the first such leak.
pub fn run(m: &Mixture, stop: Stop) -> Outcome {
    let mut rng = Rng::new(m.seed);
    let mut sites: Vec<SiteState> =
        m.sites.iter().map(|spec| SiteState { judging: true, share: spec.stacked, ..SiteState::default() }).collect();
    for (state, spec) in sites.iter_mut().zip(&m.sites) {
        state.consumer = spec.patterns.iter().find_map(|p| match p {
            Pattern::Consumer { reported, .. } => Some(*reported),
            Pattern::RisingBound { .. } => Some(true),
            _ => None,
        });
        for p in &spec.patterns {
            prefill(state, *p, &mut rng);
        }
    }
    let peak_rate = m
        .sites
        .iter()
        .flat_map(|s| &s.patterns)
        .find_map(|p| match p {
            Pattern::Leak { fires: Firing::AtPeaks { p } } => Some(*p),
            _ => None,
        })
        .unwrap_or(0.0);
    let mut out = Outcome::default();
    let mut set = SeriesSet::default();
    for cycle in 0..MAX_CYCLES {
        let peak = peak_rate > 0.0 && rng.chance(peak_rate);
        for (state, spec) in sites.iter_mut().zip(&m.sites) {
            // Sizes left behind by the last judged cycle are watched from this one.
            if state.watched_from.is_none() && cycle > WARMUP && !state.made_last.is_empty() {
                state.watched_from = Some(cycle);
            }
            state.made_last.clear();
            // What this cycle gives back (the judged frees set the window).
            if let Some(blocks) = state.frees.remove(&cycle) {
                for b in blocks {
                    state.remove(b, cycle, true);
                }
            }
            for p in &spec.patterns {
                step(state, *p, spec.stacked, cycle, peak, &mut rng);
            }
        }
        let run = cycle + 1;
        if cycle >= WARMUP {
            set.push(cycle, readings(&sites, m));
        }
        let planned = match stop {
            Stop::Decided(from) => from,
            Stop::Never => PLANNED_END,
            Stop::From(from) => from,
        };
        let looks_now = run >= planned && ((run - planned).is_multiple_of(CHECK_LOOK_EVERY) || run == MAX_CYCLES);
        if !looks_now {
            continue;
        }
        out.looks += 1;
        let index = 1 + (run - planned).div_ceil(CHECK_LOOK_EVERY);
        let alpha = 0.01 * 6.0 / (std::f64::consts::PI.powi(2) * (index * index) as f64) / 7.0;
        let consumer_of = |id: u32| match sites.get(id as usize - 1).and_then(|s| s.consumer) {
            Some(true) => Some(Consumer::BlockCache),
            Some(false) => Some(Consumer::Memtable),
            None => None,
        };
        let cx = Context {
            first: WARMUP,
            alpha,
            consumer_of: &consumer_of,
            periodic_window: u64::MAX,
            total_budget: 4096.0,
            suppressed: &|_| false,
            // Each simulated site is a function of its own.
            function_of: &|_| None,
        };
        let v = growth::judge(&mut set, &cx);
        // A container still on a steady leak's schedule is open, as the record judges it.
        let at = Span { first: WARMUP, last: cycle - 1 };
        let on_schedule = sites.iter().any(|state| {
            let mut h = History::of(&state.holds);
            h.growth = state.container.and_then(|c| c.growth);
            h.growth.is_some() && matches!(age::judge(&h, at).0, Aged::Open(Open::OnSchedule { .. }))
        });
        if std::env::var_os("SIM_TRACE").is_some() {
            for (id, j) in &v.sites {
                eprintln!("look {run}: site {id} {:?}", j.growth);
            }
        }
        if std::env::var_os("SIM_DEBUG").is_some() && v.leaks() {
            for (id, j) in v.sites.iter().filter(|(_, j)| j.leaks()) {
                eprintln!("leak at {run}: site {:?} {:?}", m.sites[*id as usize - 1], j.growth);
            }
            if let Some(t) = v.total.filter(|t| t.leaks()) {
                eprintln!("leak at {run}: the total {t:?}");
            }
        }
        if v.leaks() {
            out.leak_at = Some(run);
            out.leak_site = v.sites.iter().find(|(_, j)| j.leaks()).map(|(&id, _)| id as usize - 1);
            // The last quarter of the judged cycles: a pattern growing into it has not shown its
            // bound.
            let half = WARMUP + (run - WARMUP) / 2;
            let quarter = half + (run - half) / 2;
            let growing = |spec: &SiteSpec| spec.patterns.iter().any(|p| p.grows_until() >= quarter);
            out.still_growing = match out.leak_site {
                Some(i) => growing(&m.sites[i]),
                None => m.sites.iter().any(growing),
            };
            return out;
        }
        // A container is judged by its schedule: its doublings are not rare losses.
        let container =
            |id: &u32| sites.get(*id as usize - 1).is_some_and(|s| s.container.is_some_and(|c| c.growth.is_some()));
        let rare = |j: &growth::Judged| matches!(j.growth.grew, growth::Grew::RareLosses { .. });
        let open = on_schedule
            || v.sites.iter().any(|(id, j)| j.open() && !(container(id) && rare(j)))
            || v.rest.is_some_and(|r| r.open());
        let last = run == MAX_CYCLES;
        if last && open {
            out.open_reason = Some(if on_schedule {
                "on schedule"
            } else if v.sites.values().any(|j| j.unreported && !j.explained) {
                "unreported consumer"
            } else {
                "rare losses"
            });
        }
        if !open && out.clean_at.is_none() && matches!(stop, Stop::Decided(_)) {
            out.clean_at = Some(run);
            return out;
        }
        if last {
            out.open_at_end = open;
            if !open {
                out.clean_at = Some(run);
            }
        }
    }
    out
}

/// The record's readings after a cycle: each site's stacked bytes and their estimate (its
/// stacked blocks times their weights), what each size class drained, the exact total, and what a
/// reported consumer holds (with the allocator's rounding, as the store's report bounds it).
fn readings(sites: &[SiteState], m: &Mixture) -> Vec<Reading> {
    let mut out: Vec<Reading> = sites
        .iter()
        .zip(&m.sites)
        .enumerate()
        .map(|(i, (s, spec))| Reading {
            key: Key::Stack { id: i as u32 + 1 },
            value: s.stacked,
            var: 0.0,
            estimate: s.estimate,
            turned: s.turned,
            class: Some(spec.class as u32),
        })
        .collect();
    let mut drained: std::collections::BTreeMap<u32, (f64, (f64, f64))> = Default::default();
    for (s, spec) in sites.iter().zip(&m.sites) {
        let d = drained.entry(spec.class as u32).or_default();
        d.0 += s.drained;
        d.1 = (d.1 .0 + s.drained_turned.0, d.1 .1 + s.drained_turned.1);
    }
    out.extend(
        drained.into_iter().map(|(class, (d, turned))| Reading { turned, ..Reading::count(Key::Drained { class }, d) }),
    );
    out.push(Reading::of(Key::Total, sites.iter().map(|s| s.exact).sum()));
    let reported: Vec<f64> = sites.iter().filter(|s| s.consumer == Some(true)).map(|s| s.exact * 1.25).collect();
    if !reported.is_empty() {
        out.push(Reading::of(Key::Reported { consumer: Consumer::BlockCache }, reported.iter().sum()));
        // The capacity: fixed, but for a cache whose capacity is raised as it fills.
        let rising: f64 = sites.iter().filter(|s| s.rising_bound).map(|s| s.exact).sum();
        out.push(Reading::of(Key::CacheCapacity, (64 << 20) as f64 + rising));
    }
    out
}

/// What a pattern holds before the run: a cache turning over is full, its entries made in the
/// set-up (cycle -1) and given back as their lives end; an LRU cache is warm.
fn prefill(s: &mut SiteState, p: Pattern, rng: &mut Rng) {
    if let Pattern::Lru { capacity, keys, skew, .. } = p {
        let mut lru = Lru::new(keys, skew);
        for _ in 0..capacity * 8 {
            let key = lru.draw(rng);
            lru.lookup(key, capacity, Block { cycle: u64::MAX, bytes: 64, weight: 0.0 });
        }
        s.exact += 64.0 * lru.entries.len() as f64;
        s.lru = Some(lru);
    }
    if let Pattern::Turnover { per_cycle, lives } = p {
        let mean = match lives {
            Lives::Fixed(n) => n as f64,
            Lives::Geometric(m) => m,
            Lives::Pareto { min, alpha } => min as f64 * alpha / (alpha - 1.0).max(0.5),
        };
        for _ in 0..rng.poisson(per_cycle * mean) {
            // A residual life: uniform over a full one's length.
            let full = lives.draw(rng).max(1);
            let life = rng.between(1, full);
            let b = Block { cycle: u64::MAX, bytes: 64, weight: 0.0 };
            s.exact += b.bytes as f64;
            s.frees.entry(life - 1).or_default().push(b);
        }
    }
}

/// One cycle of one pattern at a site.
fn step(s: &mut SiteState, p: Pattern, share: f64, cycle: u64, peak: bool, rng: &mut Rng) {
    let judged = cycle >= WARMUP;
    let make = |s: &mut SiteState, rng: &mut Rng, bytes: u64, life: Option<u64>| {
        let b = Block { cycle, bytes, weight: s.stacked(cycle, share, rng) };
        s.add(b);
        if judged && life.is_none_or(|l| l > 0) {
            s.made_last.push(b);
        }
        match life {
            Some(0) => s.remove(b, cycle, true),
            Some(l) => s.frees.entry(cycle + l).or_default().push(b),
            None => {}
        }
    };
    match p {
        Pattern::Turnover { per_cycle, lives } => {
            for _ in 0..rng.poisson(per_cycle) {
                let life = lives.draw(rng);
                make(s, rng, 64, Some(life));
            }
        }
        Pattern::Pool { blocks, over } => {
            let due = (blocks * (cycle + 1)).div_ceil(over.max(1)).min(blocks);
            while s.pool_done < due {
                s.pool_done += 1;
                make(s, rng, 48, None);
            }
        }
        Pattern::HighWater { bound } => {
            let draw = match bound {
                Some(n) => (0..n).filter(|_| rng.chance(0.5)).count() as u64,
                // Records of a continuous draw: a new high in cycle t with chance 1/(t+1).
                None => s.high + u64::from(rng.chance(1.0 / (cycle + 1) as f64)),
            };
            while s.high < draw {
                s.high += 1;
                make(s, rng, 32, None);
            }
        }
        Pattern::Lru { capacity, per_cycle, .. } => {
            for _ in 0..per_cycle {
                let Some(lru) = s.lru.as_mut() else { return };
                let key = lru.draw(rng);
                if lru.entries.contains_key(&key) {
                    lru.lookup(key, capacity, Block { cycle, bytes: 0, weight: 0.0 });
                    continue;
                }
                let b = Block { cycle, bytes: 64, weight: s.stacked(cycle, share, rng) };
                let lru = s.lru.as_mut().expect("present above");
                let (_, evicted) = lru.lookup(key, capacity, b);
                s.add(b);
                if judged {
                    s.made_last.push(b);
                }
                if let Some(old) = evicted {
                    s.remove(old, cycle, true);
                }
            }
        }
        Pattern::Once { at, blocks } => {
            if cycle == at {
                for _ in 0..blocks {
                    make(s, rng, 96, None);
                }
            }
        }
        Pattern::Container { from, per_cycle, bound } => container(s, rng, cycle, from, per_cycle, bound),
        Pattern::Scratch => {
            // Grown back to its working size in each cycle, shrunk at its end: one block of the
            // current cycle, the last one's given back.
            make(s, rng, 4096, Some(1));
        }
        Pattern::Consumer { per_cycle, capacity, .. } => {
            for _ in 0..rng.poisson(per_cycle) {
                let b = Block { cycle, bytes: 4096, weight: s.stacked(cycle, share, rng) };
                s.add(b);
                if judged {
                    s.made_last.push(b);
                }
                s.consumer_blocks.push_back(b);
                if s.consumer_blocks.len() as u64 > capacity {
                    if let Some(old) = s.consumer_blocks.pop_front() {
                        s.remove(old, cycle, true);
                    }
                }
            }
        }
        Pattern::Leak { fires } => {
            if fires.fires(cycle, peak, rng) {
                make(s, rng, 8, None);
            }
        }
        Pattern::Shedding { per_cycle, drop_every } => {
            for _ in 0..rng.poisson(per_cycle) {
                let b = Block { cycle, bytes: 32, weight: s.stacked(cycle, share, rng) };
                s.add(b);
                note_made(s, b, judged);
                s.kept.push_back(b);
            }
            if cycle.is_multiple_of(drop_every.max(1)) {
                if let Some(old) = s.kept.pop_front() {
                    s.remove(old, cycle, true);
                }
            }
        }
        Pattern::Rebuilt { grow } => {
            if let Some(old) = s.rebuilt.take() {
                s.remove(old, cycle, true);
            }
            let b = Block { cycle, bytes: 64 + grow * cycle, weight: s.stacked(cycle, share, rng) };
            s.add(b);
            note_made(s, b, judged);
            s.rebuilt = Some(b);
        }
        Pattern::GrewOnce => {
            // Last cycle's collections grow once: the block moves (not a free) to this cycle, its
            // growth stacked as a realloc of an older block is.
            for old in std::mem::take(&mut s.to_grow) {
                s.remove(old, cycle, false);
                let weight = if judged { 1.0 } else { s.stacked(cycle, 1.0, rng) };
                let b = Block { cycle, bytes: 96, weight };
                s.add(b);
                note_made(s, b, judged);
            }
            let b = Block { cycle, bytes: 48, weight: s.stacked(cycle, share, rng) };
            s.add(b);
            note_made(s, b, judged);
            s.to_grow.push(b);
        }
        Pattern::RisingBound { per_cycle } => {
            s.rising_bound = true;
            for _ in 0..rng.poisson(per_cycle) {
                let b = Block { cycle, bytes: 4096, weight: s.stacked(cycle, share, rng) };
                s.add(b);
                note_made(s, b, judged);
            }
        }
        Pattern::Loader { busy, quiet, quiet_life } => {
            for _ in 0..rng.poisson(busy) {
                make(s, rng, 64, Some(2));
            }
            for _ in 0..rng.poisson(quiet) {
                make(s, rng, 64, Some(quiet_life));
            }
        }
        Pattern::LazyTable { keys, draws } => {
            for _ in 0..rng.poisson(draws) {
                let key = rng.between(0, keys - 1);
                if s.keys.insert(key) {
                    make(s, rng, 32, None);
                }
            }
        }
        Pattern::Janitor { per_cycle, first, cap } => {
            let (next, interval) = s.janitor.unwrap_or((first.max(1), first.max(1)));
            for _ in 0..rng.poisson(per_cycle) {
                let b = Block { cycle, bytes: 64, weight: s.stacked(cycle, share, rng) };
                s.add(b);
                note_made(s, b, judged);
                s.kept.push_back(b);
            }
            if cycle >= next {
                for old in std::mem::take(&mut s.kept) {
                    s.remove(old, cycle, true);
                }
                let interval = (interval * 2).min(cap.max(1));
                s.janitor = Some((cycle + interval, interval));
            } else {
                s.janitor = Some((next, interval));
            }
        }
        Pattern::Queue { capacity } => {
            let b = Block { cycle, bytes: 64, weight: s.stacked(cycle, share, rng) };
            s.add(b);
            note_made(s, b, judged);
            s.kept.push_back(b);
            if s.kept.len() as u64 > capacity {
                if let Some(old) = s.kept.pop_front() {
                    s.remove(old, cycle, true);
                }
            }
        }
    }
}

/// Notes a block a judged cycle made and keeps past it (its size is watched from the next cycle).
fn note_made(s: &mut SiteState, b: Block, judged: bool) {
    if judged {
        s.made_last.push(b);
    }
}

/// A container's cycle: appends, and a growth (its block moved to this cycle, stacked as every
/// growth of a block an earlier cycle made is) when its elements pass its capacity.
fn container(s: &mut SiteState, rng: &mut Rng, cycle: u64, from: u64, per_cycle: f64, bound: u64) {
    if cycle < from {
        return;
    }
    let mut c = s.container.unwrap_or(ContainerState {
        elements: 0,
        capacity: 0,
        block: Block { cycle, bytes: 0, weight: 0.0 },
        growth: None,
        last_rise: None,
    });
    c.elements = (c.elements + rng.poisson(per_cycle)).min(bound);
    if c.elements > c.capacity {
        let before = c.capacity;
        while c.capacity < c.elements {
            c.capacity = (c.capacity * 2).max(4);
        }
        // The old block is given back by the move (not a free that sets a window), the new one
        // is this cycle's, stacked when a judged cycle grows a block an earlier cycle made.
        let moved_from = c.block;
        if moved_from.bytes > 0 {
            s.remove(moved_from, cycle, false);
        }
        let grows_older = moved_from.bytes > 0 && moved_from.cycle < cycle && cycle >= WARMUP;
        let weight = if grows_older { 1.0 } else { s.stacked(cycle, 1.0, rng) };
        c.block = Block { cycle, bytes: c.capacity * 8, weight };
        s.add(c.block);
        if grows_older && before > 0 {
            let previous = c.last_rise.unwrap_or(moved_from.cycle);
            c.growth = Some(ContainerGrowth::new(cycle, previous, c.capacity as f64 / before as f64));
        }
        c.last_rise = Some(cycle);
    }
    s.container = Some(c);
}

/// A random clean pattern.
pub fn clean_pattern(rng: &mut Rng) -> Pattern {
    match rng.between(0, 9) {
        0 | 1 => Pattern::Turnover {
            per_cycle: rng.pick(&[0.2, 1.0, 3.0]),
            lives: match rng.between(0, 2) {
                0 => Lives::Fixed(rng.between(1, 150)),
                1 => Lives::Geometric(rng.between(1, 60) as f64),
                _ => Lives::Pareto { min: rng.between(1, 10), alpha: 2.5 },
            },
        },
        2 => Pattern::Pool { blocks: rng.between(1, 200), over: rng.between(1, WARMUP) },
        3 => Pattern::HighWater { bound: Some(rng.pick(&[8, 16, 32])) },
        4 => Pattern::Once { at: rng.between(0, MAX_CYCLES - 1), blocks: rng.between(1, 3) },
        5 => Pattern::Container {
            from: rng.between(0, 100),
            per_cycle: rng.pick(&[0.3, 1.0, 4.0]),
            bound: rng.pick(&[16, 64, 256, 1024]),
        },
        6 => {
            if rng.chance(0.5) {
                Pattern::Scratch
            } else {
                let capacity = rng.pick(&[16, 64, 256]);
                Pattern::Lru {
                    capacity,
                    per_cycle: rng.pick(&[1, 3, 8]),
                    keys: capacity * rng.pick(&[2, 4, 16]),
                    skew: rng.pick(&[0.8, 1.0, 1.2]),
                }
            }
        }
        _ => Pattern::Consumer {
            per_cycle: rng.pick(&[0.5, 3.0, 10.0]),
            capacity: rng.pick(&[50, 500, 5000, 50_000]),
            reported: rng.chance(0.5),
        },
    }
}

/// The stress cases: patterns between clean and leaking, each one site, which the bench reports
/// apart (how often the rule calls them a leak), as no claim covers them.
/// - `records`: blocks at the records of a continuous draw, a new high in cycle `t` with chance
///   `1/(t+1)`: memory that grows as `ln t`, without bound, ever more slowly;
/// - `slow high-water`: a registry at the high-water mark of a Binomial(128, 1/2) draw, which over
///   800 cycles is still setting records as a continuous draw does;
/// - `heavy tail`: a cache whose entries live a Pareto time of tail index 1.5 (a finite mean, an
///   infinite variance): some of them outlive twice the oldest age seen given back so far.
pub const STRESS: [&str; 3] = ["records", "slow high-water", "heavy tail"];

/// A stress history of kind `STRESS[kind]` (see [`STRESS`]).
pub fn stress(kind: usize, seed: u64) -> Mixture {
    let mut rng = Rng::new(seed ^ 0x57e5_5000);
    let pattern = match kind {
        0 => Pattern::HighWater { bound: None },
        1 => Pattern::HighWater { bound: Some(128) },
        _ => Pattern::Turnover {
            per_cycle: rng.pick(&[0.2, 1.0, 3.0]),
            lives: Lives::Pareto { min: rng.between(1, 10), alpha: 1.5 },
        },
    };
    Mixture { sites: vec![SiteSpec { patterns: vec![pattern], stacked: rng.pick(&[1.0, 0.5]), class: 0 }], seed }
}

/// A random leak.
pub fn leak_pattern(rng: &mut Rng) -> Pattern {
    let from = if rng.chance(0.25) { rng.between(WARMUP, 400) } else { 0 };
    let fires = match rng.between(0, 3) {
        0 => Firing::Rate { p: 1.0, from },
        1 => Firing::Every { n: rng.between(2, 20), from },
        2 => Firing::Rate { p: rng.pick(&[0.5, 0.2, 0.1, 0.05]), from },
        _ => Firing::AtPeaks { p: rng.pick(&[0.5, 0.1]) },
    };
    Pattern::Leak { fires }
}

/// A random mixture: one to four clean sites (two of them may share a size class), and, when
/// `leak`, a leak at a site of its own (of its own size class or a clean site's) or at a clean
/// site (a function whose normal path feeds a cache, say). Not at a RocksDB consumer's site: its
/// frames are RocksDB's own (a block read into the cache, a memtable's arena), and what a leak
/// there keeps below the consumer's report, with its rounding allowance, is explained.
pub fn mixture(seed: u64, leak: bool) -> Mixture {
    let mut rng = Rng::new(seed ^ 0x5eed_cafe);
    let n = rng.between(1, 4) as usize;
    let mut sites: Vec<SiteSpec> = (0..n)
        .map(|i| SiteSpec {
            patterns: vec![clean_pattern(&mut rng)],
            // A busy size class is sampled.
            stacked: rng.pick(&[1.0, 1.0, 0.5]),
            class: if i > 0 && rng.chance(0.2) { i - 1 } else { i },
        })
        .collect();
    if leak {
        let l = leak_pattern(&mut rng);
        let stacked = rng.pick(&[1.0, 1.0, 0.5, 0.25]);
        let host = rng.between(0, n as u64 - 1) as usize;
        let unshared =
            sites[host].patterns.iter().any(|p| matches!(p, Pattern::Container { .. } | Pattern::Consumer { .. }));
        match rng.between(0, 2) {
            0 if !unshared => {
                sites[host].patterns.push(l);
                sites[host].stacked = sites[host].stacked.min(stacked);
            }
            1 => sites.push(SiteSpec { patterns: vec![l], stacked, class: sites[host].class }),
            _ => sites.push(SiteSpec { patterns: vec![l], stacked, class: n }),
        }
    }
    Mixture { sites, seed }
}

/// Whether an open question at the end of a run names a container on schedule or an unreported
/// consumer (kept for the bench's breakdown).
pub fn open_kinds(m: &Mixture) -> Vec<&'static str> {
    m.sites
        .iter()
        .flat_map(|s| &s.patterns)
        .filter_map(|p| match p {
            Pattern::Container { .. } => Some("container"),
            Pattern::Consumer { reported: false, .. } => Some("unreported consumer"),
            _ => None,
        })
        .collect()
}
