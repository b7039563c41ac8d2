//! A run's allocation generations: one before the first cycle, then one per cycle, and what
//! each still holds at the end (see [`crate::probe::generations`]).

use serde::{Deserialize, Serialize};

use crate::probe::generations::{self, Generation, Generations, Live, MECHANISM};
use crate::verdict::retained::age::{self, Span};
use crate::verdict::retained::{sites, Held, SiteFacts};
use crate::verdict::{Consumer, LiveSeries, Retained};

/// What a run's generations hold at its end, for report.json's `generations`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GenerationsReport {
    /// Whether allocations were recorded by generation in this run.
    pub available: bool,
    /// How they were recorded (jemalloc's allocation hooks), when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Why they were not, when they were not (`--generations off`, or the allocator cannot be
    /// hooked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// False when the record missed allocations (its table could not grow): the figures are then
    /// not exact.
    pub exact: bool,
    /// Per generation, `[cycle, live_bytes, live_allocations]` at the end of the run: cycle -1 is
    /// the run's set-up before its first cycle. A long run keeps at most
    /// `MAX_GENERATIONS_LISTED` of them, evenly spread, the first and last included.
    pub generations: Vec<[i64; 3]>,
    /// What leakcheck's own bookkeeping held at the end (samples, the ledger's records, verdicts),
    /// never charged to a generation.
    pub bookkeeping: Live,
    /// Allocating stacks taken (the allocations of watched sizes), in this process so far.
    #[serde(default)]
    pub stacks_taken: u64,
    /// Distinct stacks among them.
    #[serde(default)]
    pub stacks_distinct: u32,
    /// Size classes watched at the end (sizes that cycles after the warm-up left behind).
    #[serde(default)]
    pub watched_sizes: u32,
    /// Of them, those focused on (every allocation's stack).
    #[serde(default)]
    pub focused_sizes: u32,
    /// Of them, those sampled at the boost budget (a sampled class that left something behind
    /// without a stack).
    #[serde(default)]
    pub boosted_sizes: u32,
    /// Of them, those sampled at the end: more allocations a cycle than the stack budget, so that
    /// not every allocation had its stack taken.
    #[serde(default)]
    pub sampled_sizes: u32,
    /// Declared-shared handles still alive after the store's `Lifecycle::let_go`: when any is,
    /// `retained_bytes` is shown, not judged.
    #[serde(default)]
    pub shared_alive: u64,
}

/// The most generations report.json lists (a soak's samples are bounded the same way).
pub(crate) const MAX_GENERATIONS_LISTED: usize = super::MAX_SOAK_SAMPLES;

/// What a look at the record is asked ([`RunGenerations::look`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordLook<'a> {
    /// The first judged cycle.
    pub(crate) from: u64,
    /// Known leaks the run accepts.
    pub(crate) suppressions: &'a crate::suppress::Suppressions,
    /// What the store's last sample said RocksDB accounts for.
    pub(crate) reported: Option<&'a crate::probe::RocksDbMemory>,
    /// Every site's frames named (the end's report), not only those that leak or are open.
    pub(crate) named: bool,
    /// The false-leak rate this look may spend on the record's series.
    pub(crate) alpha: f64,
    /// Leaks may be called: the run's planned end or later.
    pub(crate) callable: bool,
}

/// The youngest cycles `retained_bytes` leaves out: what the last cycle allocated may still be in
/// use by the store (state it carries to the next cycle).
pub(crate) const YOUNG_CYCLES: u64 = 1;

/// The generations of a run in progress.
#[derive(Debug)]
pub(crate) struct RunGenerations {
    gens: Option<&'static Generations>,
    notice: Option<String>,
    /// The generation of the set-up before the first cycle; cycle `c`'s is `setup + 1 + c`.
    setup: Generation,
    cycles: u64,
    /// Another run in this process started generations while this one ran (generations are
    /// process-wide): this run's figures are not its own alone.
    interleaved: bool,
    /// The last cycle-start read found the judged cycles holding something: the next reads them
    /// again (their survivors can only go, so once none is left only the youngest needs a count).
    judged_held: bool,
    /// The first cycle whose leftovers have their sizes watched (stacks taken for later
    /// allocations of those sizes).
    watch_from: u64,
    /// The store's `let_go` panicked: what it keeps across cycles may still be held.
    let_go_panicked: bool,
    /// Declared-shared handles still alive after `let_go`.
    shared_alive: u64,
    /// Stacks named so far to match suppressions, and whether one matched: each stack is named
    /// once (the symbolizer's work, and its memory, do not grow with the looks).
    suppressed_stacks: std::cell::RefCell<std::collections::BTreeMap<u32, bool>>,
    /// Stacks named so far to find the RocksDB consumer they fill (once each).
    consumers: std::cell::RefCell<std::collections::BTreeMap<u32, Option<Consumer>>>,
    /// Stacks named so far to find the function of the user's that made their allocations (once
    /// each), and those functions' ids.
    functions: std::cell::RefCell<Functions>,
    /// The first look whose record found a leak (a leak found stays found).
    leak_look: Option<Retained>,
    /// What the last look's judged cycles held that the rule does not explain (residue at sites
    /// that leak, are open or kept old residue, beyond a consumer's share; residue without a
    /// stack), per cycle: what a leak the counter found must be.
    unexplained: Vec<(u64, u64)>,
    /// When the run began: its pace turns a window in time into cycles.
    started: std::time::Instant,
    /// Live bytes per site, the record's total, what the size classes drained and what the store
    /// reports, sample by sample from the first judged cycle.
    series: crate::verdict::sites::series::SeriesSet,
    /// What the growth rule said at the last look.
    growth: Option<crate::verdict::sites::Verdicts>,
}

/// Stacks per cycle, about, that a watched size class costs: a class more common than this is
/// sampled (one allocation in `allocations / budget`). A leak of a size that common has some of
/// its firings stacked, not all: it takes more cycles to recur at its stack (docs/generations.md).
const STACK_BUDGET: u32 = 256;
/// Stacks per cycle, about, of a boosted class: a sampled class whose allocation survived the
/// cycle that made it without a stack (a leak in a class of thousands of allocations a cycle
/// would otherwise show at its stack once in tens of cycles). At most 4 classes are boosted,
/// each for [`BOOST_CYCLES`] after the last such survivor.
const BOOST_BUDGET: u32 = 4096;
/// Cycles a boost lasts unless renewed.
const BOOST_CYCLES: u32 = 16;

/// Whether a block without a stack, `age` generations old at a cycle's start, boosts its class
/// now: when it has just outlived the next cycle and the oldest age at which its class gave a
/// block back (`class_turnover`). Once per block and window, not at every later cycle: a block
/// the store keeps to the end boosts its class once, as a leak's blocks do one after another.
fn boost_due(age: u32, class_turnover: Option<u32>) -> bool {
    age == class_turnover.map_or(2, |window| window.saturating_add(1).max(2))
}

impl RunGenerations {
    /// Installs the hooks when `wanted` (once per process) and starts the set-up's generation.
    /// Stacks are taken for the sizes that cycles `watch_from..` leave behind.
    pub(crate) fn start(wanted: bool, watch_from: u64) -> Self {
        let (gens, notice) = match wanted.then(generations::install) {
            None => (None, Some("allocation generations off (--generations off)".to_string())),
            Some(Ok(g)) => (Some(g), None),
            Some(Err(e)) => (None, Some(format!("allocation generations unavailable: {e}"))),
        };
        let setup = gens.map_or(0, Generations::begin_run);
        if let Some(g) = gens {
            g.unwatch_all();
            g.start_run(setup);
            g.count_growths_from(u32::try_from(u64::from(setup) + 1 + watch_from).unwrap_or(u32::MAX));
        }
        RunGenerations {
            gens,
            notice,
            setup,
            cycles: 0,
            interleaved: false,
            judged_held: false,
            watch_from,
            let_go_panicked: false,
            shared_alive: 0,
            suppressed_stacks: Default::default(),
            functions: Default::default(),
            consumers: Default::default(),
            leak_look: None,
            unexplained: Vec::new(),
            started: std::time::Instant::now(),
            series: Default::default(),
            growth: None,
        }
    }

    /// Reads, after cycle `cycle` (a sample's), every site's live bytes, the record's total, what
    /// the watched classes drained and what the store reports (`reported`), into the series the
    /// growth rule judges. From the first judged cycle on; one read per stack, whatever the run's
    /// length.
    pub(crate) fn sample(&mut self, cycle: u64, reported: Option<&crate::probe::RocksDbMemory>) {
        use crate::verdict::sites::series::{Key, Reading};
        let Some(g) = self.gens.filter(|g| !self.interleaved && g.exact()) else {
            return;
        };
        if cycle < self.watch_from {
            return;
        }
        let (_, distinct) = g.stacks_taken();
        let mut readings = Vec::new();
        let mut classes = std::collections::BTreeSet::new();
        for id in (1..=distinct).chain([generations::OVERFLOW_STACK]) {
            let now = g.site_now(id);
            if now.stacked != 0 {
                readings.push(Reading {
                    estimate: now.live as f64,
                    turned: now.turned,
                    class: now.class,
                    ..Reading::of(Key::Stack { id }, now.stacked as f64)
                });
                classes.extend(now.class);
            }
        }
        for class in classes {
            let (drained, turned) = g.class_drained(class);
            readings.push(Reading { turned, ..Reading::count(Key::Drained { class }, drained) });
        }
        readings.push(Reading::of(Key::Total, g.run_live() as f64));
        if let Some(m) = reported {
            for consumer in Consumer::ALL.into_iter().filter(|k| !k.bounded_by_time()) {
                readings.push(Reading::of(Key::Reported { consumer }, consumer.budget(m)));
            }
            readings.push(Reading::of(Key::CacheCapacity, m.cache_capacity_bytes as f64));
        }
        self.series.push(cycle, readings);
    }

    /// Starts cycle `cycle`'s generation (cycles are numbered from 0, one after another), then
    /// watches the sizes of what the previous cycle still holds (its leftovers and what the store
    /// carries to this cycle): stacks for all allocations of a watched class, or, for a class
    /// too common for that, for about [`STACK_BUDGET`] of them a cycle.
    ///
    /// A sampled class is boosted when a judged cycle left a block of it without a stack (made
    /// while the class was watched: sampled out) that is older than the class turns over: kept
    /// past the next cycle, and past the oldest age at which any block of the class was given
    /// back in this run. A store that keeps state of a common size for a few cycles (segments,
    /// memtables) does not keep its class boosted, which would cost thousands of stacks a
    /// cycle; a leak's blocks outlive every turnover, and boost their class once they do.
    ///
    /// Cycles before `watch_from` (the warm-up) are not read. A correct store's cycles hold
    /// nothing, or what the store carries to the next cycle (the reference store: 5 allocations,
    /// 1.3 KiB); a count tells that without reading the record.
    pub(crate) fn cycle_begins(&mut self, cycle: u64) {
        self.cycles = self.cycles.max(cycle + 1);
        let Some(g) = self.gens else {
            return;
        };
        let generation = g.advance();
        if u64::from(generation) != u64::from(self.setup) + 1 + cycle {
            self.interleaved = true;
        }
        g.adapt(STACK_BUDGET, BOOST_BUDGET);
        let Some(previous) = cycle.checked_sub(1).filter(|c| *c >= self.watch_from) else {
            return;
        };
        let gen = self.generation(Some(previous));
        if !self.judged_held && g.live(gen).allocations == 0 {
            return;
        }
        let survivors = g.survivors(self.generation(Some(self.watch_from)), gen);
        self.judged_held = !survivors.is_empty();
        for s in survivors {
            let age = generation.saturating_sub(s.generation);
            // Kept past the next cycle and past its class's turnover without a stack although
            // its class was watched when it was made: sampled out. Boost the class so that a
            // leak in it shows at its stack.
            if s.stack.is_none()
                && boost_due(age, g.class_turnover(s.size))
                && g.watched_since(s.size).is_some_and(|since| since <= s.generation)
            {
                g.boost(s.size, BOOST_CYCLES);
            }
            // What the previous cycle and the one before it hold: their leftovers and the state
            // carried across a cycle (older sizes were watched when they were this young).
            if age <= 2 {
                g.watch(s.size);
            }
        }
    }

    /// What leakcheck's own bookkeeping holds now, exactly (every allocation made inside it: the
    /// harness's records and samples, the ledger's records, the observer's reports), when this
    /// run's allocations are recorded: what the byte counter subtracts as the harness's.
    pub(crate) fn bookkeeping_bytes(&self) -> Option<i64> {
        self.gens.filter(|g| !self.interleaved && g.exact()).map(|g| g.runner().bytes)
    }

    /// Whether the record missed allocations (its table could not grow): it is not judged.
    pub(crate) fn incomplete(&self) -> bool {
        self.gens.is_some_and(|g| !g.exact())
    }

    /// Whether this run's allocations are recorded by generation.
    pub(crate) fn recorded(&self) -> bool {
        self.gens.is_some() && !self.interleaved
    }

    /// Notes that `count` declared-shared handles were still alive after the store let go.
    pub(crate) fn shared_still_alive(&mut self, count: u64) {
        self.shared_alive = count;
    }

    /// Notes that the store's `Lifecycle::let_go` panicked.
    pub(crate) fn let_go_panicked(&mut self) {
        self.let_go_panicked = true;
    }

    /// The generation of `cycle`, or of the set-up for `None`.
    fn generation(&self, cycle: Option<u64>) -> Generation {
        let offset = cycle.map_or(0, |c| c + 1);
        u32::try_from(u64::from(self.setup) + offset).unwrap_or(u32::MAX)
    }

    /// The cycle of generation `g` (the set-up's and any before it: cycle 0).
    fn cycle_of(&self, g: Generation) -> u64 {
        u64::from(g.saturating_sub(self.setup + 1))
    }

    /// What cycles `from..=to` made and still hold, each with its cycle and its container's growth
    /// in cycles.
    fn held(&self, g: &Generations, from: u64, to: u64) -> Vec<Held> {
        let first = self.generation(Some(from));
        g.survivors(first, self.generation(Some(to)))
            .into_iter()
            .map(|s| Held {
                cycle: u64::from(s.generation - first) + from,
                size: s.size,
                stack: s.stack,
                chain: s
                    .chain
                    .map(|c| age::ContainerGrowth::new(self.cycle_of(c.last), self.cycle_of(c.before), c.factor)),
            })
            .collect()
    }

    /// The RocksDB consumer stack `id` fills, named once.
    fn consumer_of(&self, g: &Generations, id: u32) -> Option<Consumer> {
        *self.consumers.borrow_mut().entry(id).or_insert_with(|| Consumer::of_frames(&frames_of(g, id)))
    }

    /// Judges what cycles `from..` (all but the youngest) hold now: each site's live bytes by
    /// growth (the sites, the record's total, a RocksDB consumer's sites against its report: the
    /// error rate `alpha` split over the series), what the judged cycles hold by age (to call
    /// clean early and to describe it), at a look while the run goes (`named`: every site's
    /// frames, for the end's report; else only the sites that leak or are open), with `reported`,
    /// what the store's last sample said RocksDB accounts for. What `suppressions` accept is
    /// marked. A leak found at a look where leaks may be called (`callable`: the run's planned end
    /// or later) stays found ([`RunGenerations::leak_found`]).
    pub(crate) fn look(&mut self, at: RecordLook<'_>) -> Option<Retained> {
        let RecordLook { from, suppressions, reported, named, alpha, callable } = at;
        let (g, to) = self.judged_record()?;
        let from = from.min(to);
        let mut r = Retained::of(from, to, (from..=to).map(|c| (c, g.live(self.generation(Some(c))))));
        r.cycles_run = self.cycles;
        // The cycles the timer's window takes at this run's pace so far.
        let per_cycle = self.started.elapsed().as_secs_f64() / self.cycles.max(1) as f64;
        let periodic_window = (crate::verdict::consumer::TIMER_HOLDS_SECONDS / per_cycle.max(1e-6)).ceil() as u64;
        let growth = {
            let consumers = &self.consumers;
            let consumer =
                |id: u32| *consumers.borrow_mut().entry(id).or_insert_with(|| Consumer::of_frames(&frames_of(g, id)));
            let matched = &self.suppressed_stacks;
            let suppressed = |id: u32| {
                suppressions.names_functions()
                    && *matched.borrow_mut().entry(id).or_insert_with(|| suppressions.matches_stack(&frames_of(g, id)))
            };
            let functions = &self.functions;
            let function_of = |id: u32| functions.borrow_mut().of(id, || frames_of(g, id));
            let cx = crate::verdict::sites::Context {
                first: from,
                alpha,
                consumer_of: &consumer,
                periodic_window,
                total_budget: crate::verdict::Budgets::default().bytes.unwrap_or(0.0),
                suppressed: &suppressed,
                function_of: &function_of,
            };
            let series = &mut self.series;
            generations::bookkeeping(|| crate::verdict::sites::judge(series, &cx))
        };
        let held = if r.allocations > 0 { self.held(g, from, to) } else { Vec::new() };
        let cycle_of_gen = |gen: Generation| self.cycle_of(gen);
        let name = |id: u32| frames_of(g, id);
        let turnover = |id: u32| g.turnover(id).map(u64::from);
        let class_turnover = |size: u64| g.class_turnover(size).map(u64::from);
        let first_seen = |id: u32| g.first_seen(id).map(cycle_of_gen);
        let consumer = |id: u32| self.consumer_of(g, id);
        let facts = SiteFacts {
            name: &name,
            turnover: &turnover,
            class_turnover: &class_turnover,
            first_seen: &first_seen,
            consumer: &consumer,
            reported,
            periodic_window,
        };
        let all = generations::bookkeeping(|| sites(&held, Span { first: from, last: to }, &facts, &growth, named));
        let unexplained = generations::bookkeeping(|| self.unexplained_of(g, &held, &all, suppressions));
        r = generations::bookkeeping(|| {
            let mut all = all;
            suppressions.mark_sites(&mut all, r.cycles());
            r.with_sites(all).with_growth(&growth)
        });
        if named {
            r.plotted = generations::bookkeeping(|| {
                let plotted = crate::verdict::sites::plotted(&self.series, &growth);
                plotted
                    .into_iter()
                    .map(|(id, growth, points)| LiveSeries {
                        function: crate::probe::stacks::headline(&frames_of(g, id), 60),
                        growth,
                        points,
                    })
                    .collect()
            });
        }
        self.unexplained = unexplained;
        self.growth = Some(growth);
        if callable && r.leaks() && self.leak_look.is_none() {
            self.leak_look = Some(generations::bookkeeping(|| r.clone()));
        }
        Some(r)
    }

    /// What each reported consumer that explains its sites' growth (within its report and its
    /// bound) grew by over cycles `from..=to`, as the last look read the record.
    pub(crate) fn explained_growth(&self, from: u64, to: u64) -> Vec<(Consumer, f64)> {
        self.growth
            .as_ref()
            .map_or_else(Vec::new, |v| crate::verdict::sites::explained_growth(&self.series, v, from, to))
    }

    /// What the known leaks a suppression accepts grew by over cycles `from..=to`, as the last
    /// look read the record.
    pub(crate) fn suppressed_growth(&self, from: u64, to: u64) -> f64 {
        self.growth.as_ref().map_or(0.0, |v| crate::verdict::sites::suppressed_growth(&self.series, v, from, to))
    }

    /// The first look's record that found a leak, if one did.
    pub(crate) fn leak_found(&self) -> Option<&Retained> {
        self.leak_look.as_ref()
    }

    /// Per cycle, what `held` (judged at `sites`) holds that the rule does not explain as state:
    /// residue at sites that leak, are open, or keep old residue, beyond a consumer's share; and
    /// of the residue without a stack made after its size was watched (sampled out: a leak's
    /// firings may be there unnamed), the share its size's stacked residue has: sampling takes
    /// one allocation in so many whatever its stack, so a size's unstacked survivors are spread
    /// over its sites as its stacked ones are. When none of its survivors is stacked, nothing
    /// says where they came from: all of it once older than its size class's window (twice the
    /// oldest age a block of the class was given back at, as a site's residue is judged),
    /// nothing before (what the class turns over). Not a size's first sighting, before it was
    /// watched: the first cycle a size left something in, once per size (a leak's later firings
    /// are stacked or sampled). Not what a suppression accepts.
    fn unexplained_of(
        &self,
        g: &Generations,
        held: &[Held],
        sites: &[crate::verdict::RetainedSite],
        suppressions: &crate::suppress::Suppressions,
    ) -> Vec<(u64, u64)> {
        let share: std::collections::BTreeMap<u32, f64> =
            sites.iter().filter_map(|s| Some((s.stack?, s.unexplained_share()))).collect();
        let mask = self.suppressed_of(g, held, suppressions);
        // Per size: the stacked bytes, and of them those unexplained.
        let mut by_size: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
        for (h, &suppressed) in held.iter().zip(&mask) {
            if let (Some(id), false) = (h.stack, suppressed) {
                let e = by_size.entry(h.size).or_default();
                e.0 += h.size as f64;
                e.1 += h.size as f64 * share.get(&id).copied().unwrap_or(1.0);
            }
        }
        let mut per_cycle: std::collections::BTreeMap<u64, f64> = Default::default();
        for (h, suppressed) in held.iter().zip(mask) {
            let keep = match h.stack {
                _ if suppressed => 0.0,
                None => {
                    let made = self.generation(Some(h.cycle));
                    let age = self.cycles.saturating_sub(1 + h.cycle);
                    let young = || g.class_turnover(h.size).is_some_and(|t| age <= 2 * u64::from(t));
                    // Watched since an earlier generation: a block of the generation the watch
                    // began in may have been made before it, on another thread.
                    if g.watched_since(h.size).is_none_or(|since| since >= made) {
                        0.0
                    } else if let Some(&(all, unexplained)) = by_size.get(&h.size) {
                        unexplained / all
                    } else if young() {
                        0.0
                    } else {
                        1.0
                    }
                }
                Some(id) => share.get(&id).copied().unwrap_or(1.0),
            };
            *per_cycle.entry(h.cycle).or_default() += h.size as f64 * keep;
        }
        per_cycle.into_iter().map(|(c, b)| (c, b as u64)).filter(|&(_, b)| b > 0).collect()
    }

    /// What the last look found cycles `from..=to` hold that the rule does not explain as state
    /// ([`RunGenerations::look`]): what a leak the counter found over those cycles must be, if it
    /// is memory they kept.
    pub(crate) fn unexplained_bytes(&self, from: u64, to: u64) -> Option<i64> {
        self.judged_record()?;
        Some(self.unexplained.iter().filter(|(c, _)| (from..=to).contains(c)).map(|&(_, b)| b as i64).sum())
    }

    /// This run's record and the last cycle it judges (all but the youngest), when generations
    /// were recorded for this run alone and the record is complete (a record that missed
    /// allocations is never judged: [`RunGenerations::incomplete`]).
    fn judged_record(&self) -> Option<(&'static Generations, u64)> {
        let g = self.gens.filter(|g| !self.interleaved && g.exact())?;
        Some((g, self.cycles.checked_sub(1 + YOUNG_CYCLES)?))
    }

    /// The last cycle the record judges (all but the youngest), when this run's allocations are
    /// recorded for it alone.
    pub(crate) fn last_judged(&self) -> Option<u64> {
        self.judged_record().map(|(_, to)| to)
    }

    /// Bytes cycles `from..=to` allocated and still hold, when recorded for this run alone.
    pub(crate) fn held_bytes(&self, from: u64, to: u64) -> Option<i64> {
        let (g, _) = self.judged_record()?;
        Some(g.live_range(self.generation(Some(from)), self.generation(Some(to))).bytes)
    }

    /// [`held_bytes`](Self::held_bytes) less what the stacks a suppression names hold: what
    /// the counter's leak must be, if it is not a suppressed one.
    pub(crate) fn held_bytes_unsuppressed(
        &self,
        from: u64,
        to: u64,
        suppressions: &crate::suppress::Suppressions,
    ) -> Option<i64> {
        let total = self.held_bytes(from, to)?;
        if !suppressions.names_functions() {
            return Some(total);
        }
        let (g, _) = self.judged_record()?;
        let held = self.held(g, from, to);
        let mask = self.suppressed_of(g, &held, suppressions);
        let suppressed: i64 = held.iter().zip(mask).filter(|(_, s)| *s).map(|(h, _)| h.size as i64).sum();
        Some(total - suppressed)
    }

    /// What the leaks a suppression accepts hold, of everything the run's cycles allocated.
    pub(crate) fn suppressed_held_bytes(&self, suppressions: &crate::suppress::Suppressions) -> u64 {
        let Some(to) = self.last_judged().filter(|_| suppressions.names_functions()) else {
            return 0;
        };
        match (self.held_bytes(0, to), self.held_bytes_unsuppressed(0, to, suppressions)) {
            (Some(all), Some(rest)) => u64::try_from(all - rest).unwrap_or(0),
            _ => 0,
        }
    }

    /// For each of `held`, whether a suppression accepts it: blocks of a stack it names, and blocks without a
    /// stack (allocated before their size was watched, or in a sampled size) of a size whose every
    /// stacked block held is of such a stack. Stacks are named once each (cached).
    fn suppressed_of(&self, g: &Generations, held: &[Held], suppressions: &crate::suppress::Suppressions) -> Vec<bool> {
        if !suppressions.names_functions() {
            return vec![false; held.len()];
        }
        let mut matched = self.suppressed_stacks.borrow_mut();
        let mut by_stack =
            |id: u32| *matched.entry(id).or_insert_with(|| suppressions.matches_stack(&frames_of(g, id)));
        // Per size: whether every stacked block of it is suppressed.
        let mut sizes: std::collections::BTreeMap<u64, bool> = std::collections::BTreeMap::new();
        for h in held {
            if let Some(id) = h.stack {
                let all = sizes.entry(h.size).or_insert(true);
                *all &= by_stack(id);
            }
        }
        held.iter()
            .map(|h| match h.stack {
                Some(id) => by_stack(id),
                None => sizes.get(&h.size).copied().unwrap_or(false),
            })
            .collect()
    }

    /// Stops noting frees in the turnover windows: the store is about to let go of what it keeps
    /// across cycles, and that teardown says nothing of how its stacks turn over.
    pub(crate) fn stop_judging(&self) {
        if let Some(g) = self.gens {
            g.stop_judging();
        }
    }

    /// What every generation of the run holds now, thinned to at most `max` entries.
    pub(crate) fn report(&self, max: usize) -> GenerationsReport {
        let Some(g) = self.gens.filter(|_| !self.interleaved) else {
            let notice = if self.interleaved {
                Some("allocation generations not this run's alone: another run in this process started cycles while it ran (one run per process)".to_string())
            } else {
                self.notice.clone()
            };
            return GenerationsReport { notice, ..GenerationsReport::default() };
        };
        let (stacks, classes) = (g.stacks_taken(), g.watched_classes());
        let entries = self.cycles + 1;
        let stride = entries.div_ceil(max.max(2) as u64 - 1).max(1);
        let mut generations = Vec::with_capacity((entries / stride + 2) as usize);
        let mut push = |cycle: Option<u64>| {
            let live = g.live(self.generation(cycle));
            generations.push([cycle.map_or(-1, |c| c as i64), live.bytes, live.allocations]);
        };
        push(None);
        for c in 0..self.cycles {
            if (c + 1) % stride == 0 || c + 1 == self.cycles {
                push(Some(c));
            }
        }
        GenerationsReport {
            available: true,
            mechanism: Some(MECHANISM.to_string()),
            notice: if !g.exact() {
                Some(
                    "the allocation record missed allocations (its table could not grow): retained_bytes is not judged"
                        .to_string(),
                )
            } else if self.let_go_panicked {
                Some(
                    "the store's Lifecycle::let_go panicked: what it keeps across cycles may be counted as retained"
                        .to_string(),
                )
            } else if self.shared_alive > 0 {
                Some(format!(
                    "{} declared-shared handles still alive after Lifecycle::let_go: they were judged as they held, \
                     what a reported consumer holds explained (let go of them in Lifecycle::let_go to list what the \
                     cycles alone still hold)",
                    self.shared_alive
                ))
            } else {
                None
            },
            shared_alive: self.shared_alive,
            exact: g.exact(),
            generations,
            bookkeeping: g.runner(),
            stacks_taken: stacks.0 as u64,
            stacks_distinct: stacks.1,
            watched_sizes: classes.0,
            focused_sizes: classes.1,
            boosted_sizes: classes.2,
            sampled_sizes: classes.3,
        }
    }
}

/// The functions of the user's that made stacks' allocations themselves, by stack, with an id
/// each ([`crate::verdict::sites::Context::function_of`]).
#[derive(Debug, Default)]
struct Functions {
    of_stack: std::collections::BTreeMap<u32, Option<u32>>,
    ids: std::collections::BTreeMap<String, u32>,
}

impl Functions {
    /// The id of the function that made stack `id`'s allocations (`frames`, named when first
    /// asked), if the user's code made them.
    fn of(&mut self, id: u32, frames: impl FnOnce() -> Vec<String>) -> Option<u32> {
        if let Some(&f) = self.of_stack.get(&id) {
            return f;
        }
        let frames = frames();
        let function = crate::probe::stacks::made_by_own_function(&frames).map(|name| {
            let next = self.ids.len() as u32;
            *self.ids.entry(name.to_string()).or_insert(next)
        });
        self.of_stack.insert(id, function);
        function
    }
}

/// A recorded stack's frames, named, innermost first, cut where the harness called the store
/// (what called it, the harness, the test runner, main, is the same for every stack).
fn frames_of(g: &Generations, id: u32) -> Vec<String> {
    let stack = g.stack(id);
    let mut frames = crate::probe::symbols::named_frames(&stack, &crate::probe::symbols::resolve);
    if let Some(at) = frames.iter().position(|f| f.starts_with("leakcheck::harness::")) {
        frames.truncate(at);
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::boost_due;

    #[test]
    fn a_block_boosts_its_class_once_when_it_outlives_the_next_cycle_and_its_class_turnover() {
        // Ages at which a block kept from its cycle to the end of 100 boosts its class.
        let due = |turnover: Option<u32>| (0..100).filter(|&age| boost_due(age, turnover)).collect::<Vec<_>>();
        // A class never given back, or given back within its cycle or the next: past the next.
        assert_eq!(due(None), vec![2]);
        assert_eq!(due(Some(0)), vec![2]);
        assert_eq!(due(Some(1)), vec![2]);
        // A class the store keeps for six cycles (segments): once it is older than that.
        assert_eq!(due(Some(6)), vec![7]);
        // A window that never ends boosts nothing.
        assert_eq!(due(Some(u32::MAX)), Vec::<u32>::new());
    }
}
