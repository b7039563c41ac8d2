//! `retained_bytes`: what the cycles' own allocations still hold, read from the allocation
//! generations ([`crate::probe::generations`]) at every look: a record, not an estimate.
//!
//! The figures are exact; the rule that judges them is [`age`]: each allocating site's residue
//! judged by how it ages against the site's turnover window, a container by its schedule, what a
//! reported RocksDB consumer accounts for explained ([`consumer`]). A leak is old residue that
//! keeps accumulating, whatever else the site gives back; state is residue within the site's
//! window, or old residue that stopped accumulating. Residue without a stack (allocated before its
//! size was watched) is listed by size, never judged: a leak's later allocations carry its stack.

pub(crate) mod age;

use serde::{Deserialize, Serialize};

use self::age::{AgeFacts, Aged, Open};
use super::consumer::Consumer;
use super::sites::rule::{Grew, SiteGrowth};
use super::sites::{ConsumerGrowth, Judged as SiteJudged, Verdicts};
use crate::probe::generations::Live;

/// What the record held against a leak the counter's growth rule found (`unexplained_bytes`,
/// `bytes_per_firing.*`): the smallest leak that rule calls (its threshold per cycle, or per
/// firing) leaves at least `leak_would_hold` bytes allocated in cycles `from_cycle..=to_cycle`
/// (where the counter grew, among the cycles the record judges) and still held when the counter
/// was last read; the record knows exactly what those cycles held then, before the store let go.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordHolds {
    /// The first cycle counted.
    pub from_cycle: u64,
    /// The last cycle counted.
    pub to_cycle: u64,
    /// Bytes those cycles allocated and still held before the store let go.
    pub bytes: i64,
    /// The least the smallest leak the rule calls leaves in them: the rule's threshold per cycle
    /// (or per firing) times the cycles (or the point's firings) counted.
    pub leak_would_hold: f64,
}

impl RecordHolds {
    /// Whether the cycles held less than the smallest leak the rule calls would have left: any
    /// leak they kept is below the rule's threshold, so its leak is not one these cycles kept
    /// (the counter moved with older memory given back, RocksDB's accounting, a working set that
    /// grows but is given back, a regression's coincidence), and a judged clean record, which
    /// judges leaks of any size by their stacks, decides the bytes.
    pub fn contradicts(&self) -> bool {
        (self.bytes as f64) < self.leak_would_hold
    }
}

/// What the judged generations still hold at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Where what is held was allocated: leaking sites first, then open ones, then by bytes (at
    /// most `MAX_SITES`).
    #[serde(default)]
    pub sites: Vec<RetainedSite>,
    /// Sites the rule calls a leak (all of them, listed or not).
    #[serde(default)]
    pub recurring_sites: u64,
    /// Bytes those sites hold.
    #[serde(default)]
    pub recurring_bytes: i64,
    /// Sites whose question is still open (all of them, listed or not).
    #[serde(default)]
    pub open_sites: u64,
    /// Sites holding old residue: older than twice the site's window, in any judged cycle (all of
    /// them, listed or not; residue without a stack counts, having no window). `Some(0)`: every
    /// judged cycle gave back all it allocated, beyond what still turns over. `None` in a report
    /// written before it was counted.
    #[serde(default)]
    pub old_sites: Option<u64>,
    /// Of them, stacked sites holding old residue from a cycle of the later half of their old
    /// cycles (residue without a stack is not judged). `Some(0)`: a leak recurring at a stack
    /// that gives nothing back would have left some there, and [`Retained::rate_ruled_out`] says
    /// at what rate. `None` in a report written before it was counted.
    #[serde(default)]
    pub late_old_sites: Option<u64>,
    /// The look whose record this is: the cycles run when it was read.
    #[serde(default)]
    pub cycles_run: u64,
    /// Whether the record was read after the store let go of what it keeps across cycles (the
    /// end of the run), rather than at a look while it ran.
    #[serde(default)]
    pub after_let_go: bool,
    /// The record's total (less what the store reports RocksDB holds) as the growth rule judged
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<SiteGrowth>,
    /// The sites past the most given a series of their own, summed, as the growth rule judged them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<SiteGrowth>,
    /// The RocksDB consumers whose sites grew, against what the store reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumers: Vec<ConsumerGrowth>,
    /// Series the growth rule judged (sites, the total, the rest), and of them those whose live
    /// bytes rose across the judged cycles (`None` in a report written before the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<(u64, u64)>,
    /// The sites the report plots, sample by sample: those that leak first, then open ones, then
    /// the largest (the end's report only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plotted: Vec<LiveSeries>,
}

/// One allocating site's live bytes as the record sampled them, with the growth rule's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LiveSeries {
    /// Its stack in a line: the innermost frame of the user's code where there is one.
    pub function: String,
    /// What the growth rule says of it.
    pub growth: SiteGrowth,
    /// Per block of samples: the cycle of its last sample and its lowest live bytes (as its
    /// stacked blocks' weights estimate them).
    pub points: Vec<(u64, f64)>,
}

impl Retained {
    /// The largest site the report plots, by the most it held at a block's floor.
    pub fn largest_plotted(&self) -> Option<&LiveSeries> {
        self.plotted.iter().max_by(|a, b| a.peak().total_cmp(&b.peak()))
    }
}

impl LiveSeries {
    /// The most it held at a block's floor.
    pub fn peak(&self) -> f64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max)
    }
}

impl RetainedSite {
    /// Whether the rule calls it a leak (a suppression aside): its live bytes kept growing
    /// ([`RetainedSite::live`]).
    pub fn recurs(&self) -> bool {
        self.suppressed.is_none() && self.live.is_some_and(|j| j.leaks())
    }

    /// Whether its question is still open (a suppression aside): rare losses too few to prove,
    /// growth at a RocksDB consumer nothing reports, a container on a leak's schedule.
    pub(crate) fn open(&self) -> bool {
        // A container is judged by its schedule: its doublings are not rare losses.
        let container_doubling =
            |j: &SiteJudged| self.growth.is_some() && matches!(j.growth.grew, Grew::RareLosses { .. });
        self.suppressed.is_none()
            && !self.recurs()
            && (self.live.is_some_and(|j| j.open() && !container_doubling(&j))
                || matches!(self.judged, Some(Aged::Open(Open::OnSchedule { .. }))))
    }

    /// Whether it holds residue older than twice its window (a suppression aside); residue
    /// without a stack has no window, and holds old residue whenever it holds any.
    fn holds_old_residue(&self) -> bool {
        self.suppressed.is_none() && self.bytes > 0 && (!self.stacked || self.facts.is_some_and(|f| f.old_holds > 0))
    }

    /// Whether a stacked site holds old residue from a cycle of the later half of its old cycles.
    /// Residue without a stack is not judged, here as by the rule: a leak's later allocations
    /// carry its stack (the record boosts a class that leaves blocks behind).
    fn holds_late_old_residue(&self) -> bool {
        self.stacked && self.holds_old_residue() && self.facts.is_some_and(|f| f.late_holds > 0)
    }
}

/// The most sites a [`Retained`] lists.
pub(crate) const MAX_SITES: usize = 20;

/// What one allocating site holds of the judged cycles' memory, and what the rule says of it. A
/// site is an allocating call stack; allocations made before their size was watched have no stack
/// and are grouped by usable size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RetainedSite {
    /// The stack in one line: its innermost frame and the first of the user's own code; for
    /// allocations without a stack, `no stack: N B blocks made before their size was watched, or sampled out`.
    pub function: String,
    /// The stack's frames, innermost first, the allocator's and the hooks' left out (empty
    /// without a stack, or while the look named only what it judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// Whether it is an allocating stack (else allocations of one size made before their size was
    /// watched).
    pub stacked: bool,
    /// Bytes held.
    pub bytes: i64,
    /// Allocations held.
    pub allocations: i64,
    /// Judged cycles whose allocations it holds.
    pub cycles_holding: u64,
    /// The first of them.
    pub first_cycle: u64,
    /// The last of them.
    pub last_cycle: u64,
    /// What the age rule says of it (a stacked site; `None`: not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Aged>,
    /// The facts the rule read: its window, its old and later-half cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<AgeFacts>,
    /// The oldest age at which it gave a block back while the run judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turnover: Option<u64>,
    /// The container it holds, when it grew across cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<age::ContainerGrowth>,
    /// The RocksDB consumer its frames fill, when they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<Consumer>,
    /// The share of its residue the consumer's report explains.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub explained_share: f64,
    /// What the growth rule says of its live bytes, sample by sample (`None`: it held nothing
    /// at any sample, or a report written before the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<SiteJudged>,
    /// A known leak the run accepts: where its suppression is written (`leakcheck.toml:7`). It
    /// does not count as a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
    /// Its stack's id in this process's record (not written: ids are the process's own).
    #[serde(skip)]
    pub(crate) stack: Option<u32>,
}

impl RetainedSite {
    /// The share (0 to 1) of its residue that counts against a leak the counter found: none for
    /// state the rule judged (residue within its window, a container that stopped, what a
    /// consumer explains); for the rest, what the consumer's share leaves; all of it for residue
    /// without a stack.
    pub(crate) fn unexplained_share(&self) -> f64 {
        match self.judged {
            None => 1.0,
            Some(Aged::State | Aged::Stopped | Aged::Explained | Aged::Empty) => 0.0,
            Some(_) => 1.0 - self.explained_share,
        }
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One allocation a judged cycle made and that is still live, for [`sites`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Held {
    pub cycle: u64,
    pub size: u64,
    /// The allocating stack's id, when it was taken.
    pub stack: Option<u32>,
    /// Its growth history in cycles, when it is a block grown across cycles.
    pub chain: Option<age::ContainerGrowth>,
}

/// What the record says of each stack, besides what it holds (the look's reader in
/// `harness::generations` supplies it from the hooks).
pub(crate) struct SiteFacts<'a> {
    /// A stack's frames, named, innermost first.
    pub name: &'a dyn Fn(u32) -> Vec<String>,
    /// The oldest age at which a stack gave a block back in the run.
    pub turnover: &'a dyn Fn(u32) -> Option<u64>,
    /// The same over a size's watch class.
    pub class_turnover: &'a dyn Fn(u64) -> Option<u64>,
    /// The cycle of a stack's first stacked block in the run.
    pub first_seen: &'a dyn Fn(u32) -> Option<u64>,
    /// The RocksDB consumer a stack fills (named and cached by the caller).
    pub consumer: &'a dyn Fn(u32) -> Option<Consumer>,
    /// What the store reports RocksDB accounts for (`None`: it reports nothing).
    pub reported: Option<&'a crate::probe::RocksDbMemory>,
    /// [`consumer::TIMER_HOLDS_SECONDS`] in cycles at the run's pace: the window of residue at
    /// RocksDB's periodic-task timer.
    pub periodic_window: u64,
}

/// A stack as [`sites`] judges it: its id, what it holds per cycle, the rule's verdict and facts,
/// and the RocksDB consumer its frames fill.
type Judged = (u32, Vec<(u64, u64)>, age::Aged, age::AgeFacts, Option<Consumer>);

#[derive(Default)]
struct Group {
    holds: std::collections::BTreeMap<u64, u64>,
    allocations: i64,
    sizes: std::collections::BTreeSet<u64>,
    growth: Option<age::ContainerGrowth>,
}

impl Group {
    fn add(&mut self, h: &Held) {
        *self.holds.entry(h.cycle).or_default() += h.size;
        self.allocations += 1;
        self.sizes.insert(h.size);
        if let Some(g) = h.chain {
            if self.growth.is_none_or(|o| g.last > o.last) {
                self.growth = Some(g);
            }
        }
    }

    fn bytes(&self) -> i64 {
        self.holds.values().sum::<u64>() as i64
    }

    fn site(&self, function: String, stacked: bool) -> RetainedSite {
        RetainedSite {
            function,
            frames: Vec::new(),
            stacked,
            bytes: self.bytes(),
            allocations: self.allocations,
            cycles_holding: self.holds.len() as u64,
            first_cycle: self.holds.keys().next().copied().unwrap_or(0),
            last_cycle: self.holds.keys().next_back().copied().unwrap_or(0),
            judged: None,
            facts: None,
            turnover: None,
            growth: self.growth,
            consumer: None,
            explained_share: 0.0,
            live: None,
            suppressed: None,
            stack: None,
        }
    }
}

/// Groups what judged cycles still hold by allocating stack and judges each stack by the age rule
/// ([`age::judge`]) at the look `at`: its window from `facts`, its container's schedule, and, for
/// a stack that holds old residue (a leak, one short of one, or kept), the RocksDB consumer its
/// frames fill (its share of the consumer's report explained, or, with no report, its question
/// open). Stacks are
/// named (`facts.name`) only when `named`, or when they leak or are open: a look reads frames only
/// where a verdict needs them.
///
/// Allocations made before their size was watched have no stack; they are grouped by usable
/// size, listed, and never judged: two one-time initialisations of one size class in two cycles
/// are not one site. A leak's later allocations, after its size is watched, carry its stack.
///
/// Leaking sites first, then open ones, then the most bytes.
pub(crate) fn sites(
    held: &[Held],
    at: age::Span,
    facts: &SiteFacts<'_>,
    growth: &Verdicts,
    named: bool,
) -> Vec<RetainedSite> {
    use std::collections::BTreeMap;
    let mut stacked: BTreeMap<u32, Group> = BTreeMap::new();
    let mut by_size: BTreeMap<u64, Group> = BTreeMap::new();
    for h in held {
        match h.stack {
            Some(id) => stacked.entry(id).or_default().add(h),
            None => by_size.entry(h.size).or_default().add(h),
        }
    }
    let now = at.last + 1;
    // First without consumers: only what holds old residue (a leak, one short of one, or kept)
    // asks which consumer it fills, so that only those stacks are named.
    let mut judged: Vec<Judged> = stacked
        .iter()
        .map(|(&id, g)| {
            let holds: Vec<(u64, u64)> = g.holds.iter().map(|(&c, &b)| (c, b)).collect();
            let (aged, f) = age::judge(&history(facts, now, id, g, &holds), at);
            let candidate =
                matches!(aged, age::Aged::Leak | age::Aged::Open(age::Open::OneShort { .. }) | age::Aged::Kept);
            let consumer = if candidate { (facts.consumer)(id) } else { None };
            (id, holds, aged, f, consumer)
        })
        .collect();
    let share = judge_with_consumers(&mut judged, &stacked, facts, now, at);
    let mut out: Vec<RetainedSite> = judged
        .into_iter()
        .map(|(id, _, aged, f, consumer)| {
            let g = &stacked[&id];
            let live = growth.sites.get(&id).copied();
            let wanted = named || live.is_some_and(|j| j.leaks() || j.open()) || matches!(aged, age::Aged::Open(_));
            let frames = if wanted { (facts.name)(id) } else { Vec::new() };
            let function = if frames.is_empty() {
                if wanted {
                    format!("stack {id} (not kept: the stacks' table was full)")
                } else {
                    format!("stack {id}")
                }
            } else {
                crate::probe::stacks::headline(&frames, 60)
            };
            let mut site = g.site(function, true);
            site.stack = Some(id);
            site.frames = frames;
            site.judged = Some(aged);
            site.facts = Some(f);
            site.turnover = (facts.turnover)(id);
            site.consumer = live.and_then(|j| j.consumer).or(consumer);
            site.explained_share = consumer.and_then(|k| share.get(&k).copied()).unwrap_or(0.0);
            site.live = live;
            site
        })
        .chain(growing_only(&stacked, facts, growth))
        .chain(by_size.iter().map(|(size, g)| {
            g.site(format!("no stack: {size} B blocks made before their size was watched, or sampled out"), false)
        }))
        .collect();
    out.sort_by(|a, b| {
        (b.recurs(), b.open())
            .cmp(&(a.recurs(), a.open()))
            .then_with(|| b.bytes.cmp(&a.bytes))
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

/// The sites whose live bytes grew (a leak, an open question, or growth that stopped) but that
/// hold nothing of the judged cycles by age: a structure rebuilt every cycle (its one block always
/// the youngest cycle's), a site whose blocks the run's last cycle made.
fn growing_only<'a>(
    stacked: &'a std::collections::BTreeMap<u32, Group>,
    facts: &'a SiteFacts<'_>,
    growth: &'a Verdicts,
) -> impl Iterator<Item = RetainedSite> + 'a {
    growth.sites.iter().filter(move |(id, j)| !stacked.contains_key(id) && (j.leaks() || j.open())).map(
        move |(&id, j)| {
            let frames = (facts.name)(id);
            let function = if frames.is_empty() {
                format!("stack {id} (not kept: the stacks' table was full)")
            } else {
                crate::probe::stacks::headline(&frames, 60)
            };
            let mut site = Group::default().site(function, true);
            site.bytes = j.growth.live_bytes as i64;
            site.frames = frames;
            site.stack = Some(id);
            site.consumer = j.consumer;
            site.live = Some(*j);
            site.judged = Some(Aged::Empty);
            site
        },
    )
}

/// A stack's history as the age rule reads it.
fn history<'h>(facts: &SiteFacts<'_>, now: u64, id: u32, g: &Group, holds: &'h [(u64, u64)]) -> age::History<'h> {
    let mut h = age::History::of(holds);
    h.turnover = (facts.turnover)(id);
    h.class_turnover = g.sizes.iter().filter_map(|&s| (facts.class_turnover)(s)).max();
    h.watched_for = (facts.first_seen)(id).map_or(0, |c| now.saturating_sub(c));
    h.growth = g.growth;
    h
}

/// Judges again the stacks whose old residue fills a consumer of RocksDB's (a cache, a
/// memtable): a share of the consumer's report each, or the time it holds what it holds.
/// Returns each consumer's share.
fn judge_with_consumers(
    judged: &mut [Judged],
    stacked: &std::collections::BTreeMap<u32, Group>,
    facts: &SiteFacts<'_>,
    now: u64,
    at: age::Span,
) -> std::collections::BTreeMap<Consumer, f64> {
    use std::collections::BTreeMap;
    // Each consumer's report spread over what its candidate stacks hold.
    let mut share: BTreeMap<Consumer, f64> = BTreeMap::new();
    if let Some(m) = facts.reported {
        for kind in Consumer::ALL.into_iter().filter(|k| !k.bounded_by_time()) {
            let held: u64 =
                judged.iter().filter(|j| j.4 == Some(kind)).map(|j| j.1.iter().map(|(_, b)| b).sum::<u64>()).sum();
            if held > 0 {
                share.insert(kind, (kind.budget(m) / held as f64).min(1.0));
            }
        }
    }
    for (id, holds, aged, f, consumer) in judged.iter_mut() {
        if let Some(kind) = *consumer {
            let g = &stacked[id];
            let mut h = history(facts, now, *id, g, holds);
            match facts.reported {
                // Held for a time: what is younger than it turns over.
                _ if kind.bounded_by_time() => h.turnover = h.turnover.max(Some(facts.periodic_window)),
                Some(_) => h.explained_share = share.get(&kind).copied().unwrap_or(0.0),
                None => h.unreported_consumer = true,
            }
            (*aged, *f) = age::judge(&h, at);
        }
    }
    share
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
            sites: Vec::new(),
            recurring_sites: 0,
            recurring_bytes: 0,
            open_sites: 0,
            old_sites: None,
            late_old_sites: None,
            cycles_run: to + 2,
            after_let_go: false,
            total: None,
            rest: None,
            consumers: Vec::new(),
            series: None,
            plotted: Vec::new(),
        }
    }

    /// Adds what the growth rule says of the record's total, the rest and the consumers: a total
    /// or a rest that leaks counts as a leaking site.
    pub(crate) fn with_growth(mut self, growth: &Verdicts) -> Retained {
        self.total = growth.total;
        self.rest = growth.rest;
        self.consumers.clone_from(&growth.consumers);
        self.series = Some((growth.judged, growth.rose));
        let wholes = [growth.total, growth.rest].into_iter().flatten().filter(|g| g.leaks()).count() as u64;
        self.recurring_sites += wholes;
        if growth.rest.is_some_and(|g| g.open()) {
            self.open_sites += 1;
        }
        // The total still rising in its last quarter, too rarely or too little to decide: a
        // question still open (a table that grows by allocating a larger one, a structure rebuilt
        // bigger every cycle). Its rises long past (a store's caches filled early) are not.
        if growth.total.is_some_and(|g| g.whole_open()) {
            self.open_sites += 1;
        }
        self
    }

    /// Sets the sites (from [`sites`], those a suppression accepts marked): counts the leaking
    /// and open ones, lists the leaks first, then the open ones, and keeps [`MAX_SITES`].
    pub(crate) fn with_sites(mut self, mut all: Vec<RetainedSite>) -> Retained {
        all.sort_by_key(|s| (!s.recurs(), !s.open()));
        let recurring = all.iter().filter(|s| s.recurs());
        self.recurring_sites = recurring.clone().count() as u64;
        self.recurring_bytes = recurring.map(|s| s.bytes).sum();
        self.open_sites = all.iter().filter(|s| s.open()).count() as u64;
        self.old_sites = Some(all.iter().filter(|s| s.holds_old_residue()).count() as u64);
        self.late_old_sites = Some(all.iter().filter(|s| s.holds_late_old_residue()).count() as u64);
        all.truncate(MAX_SITES);
        self.sites = all;
        self
    }

    /// Whether the rule calls a site a leak.
    pub(crate) fn leaks(&self) -> bool {
        self.recurring_sites > 0
    }

    /// Whether a site's question is open (and none leaks).
    pub(crate) fn open(&self) -> bool {
        !self.leaks() && self.open_sites > 0
    }

    /// The lowest rate of recurrence (the fraction of cycles a leak fires in) that this record
    /// rules out, with the rule's power, at a stack that gives nothing back: a leak recurring at
    /// that rate or more often since the first judged cycle would have left residue in
    /// [`age::LATE_HOLDS`] of the later half's cycles with probability [`age::POWER`]. `None`
    /// when too few cycles are judged to rule out even a leak in every cycle.
    ///
    /// When no site holds old residue at all ([`Retained::old_sites`] is 0), such a leak would
    /// have left some in any judged cycle it fired in, and the rate is the one that fires in at
    /// least one of them with that power, if lower; when none holds any from the later half
    /// ([`Retained::late_old_sites`] is 0), the same over the later half's cycles.
    pub fn rate_ruled_out(&self) -> Option<f64> {
        let late = age::late_cycles(self.span());
        let by_late_half = age::rate_ruled_out(late);
        let by_none_old =
            (self.nothing_old() && self.cycles() >= EARLY_JUDGED_CYCLES).then(|| age::rate_firing_in(self.cycles(), 1));
        let by_none_late_old =
            (self.nothing_old_late() && late >= EARLY_JUDGED_CYCLES).then(|| age::rate_firing_in(late, 1));
        [by_late_half, by_none_old, by_none_late_old].into_iter().flatten().reduce(f64::min)
    }

    /// Whether no site holds residue older than twice its window, in any judged cycle, and no
    /// site's live bytes (nor the total) rose across the judged cycles (a structure rebuilt bigger
    /// every cycle holds nothing old).
    pub(crate) fn nothing_old(&self) -> bool {
        self.old_sites == Some(0) && self.series.is_none_or(|(_, rose)| rose == 0) && !self.leaks() && !self.open()
    }

    /// Whether no site holds old residue from a cycle of the later half, and no question is open:
    /// what `check`'s early look asks of the record ([`crate::harness::HarnessConfig::early_look`]).
    pub(crate) fn nothing_old_late(&self) -> bool {
        self.late_old_sites == Some(0) && !self.leaks() && !self.open()
    }

    /// The judged cycles.
    pub(crate) fn span(&self) -> age::Span {
        age::Span { first: self.from_cycle, last: self.to_cycle }
    }

    /// Cycles more (from the last cycle run) after which the open sites' questions are answered
    /// if nothing changes: the later half past a site one cycle short of a leak, a container's
    /// next growth overdue. `None` when one cannot be answered by running on (residue at a
    /// consumer nobody reports).
    pub(crate) fn cycles_to_settle(&self) -> Option<u64> {
        let now = self.to_cycle + 1;
        self.sites
            .iter()
            .filter(|s| s.open())
            .map(|s| match (s.live.map(|j| (j.growth.grew, j.unreported)), s.judged) {
                (Some((Grew::RareLosses { settles_by }, false)), _) => Some(settles_by.saturating_sub(now)),
                (_, Some(Aged::Open(Open::OnSchedule { growth }))) => Some((growth.due() + 1).saturating_sub(now)),
                _ => None,
            })
            .try_fold(0, |most, n| n.map(|n| most.max(n)))
    }

    /// Cycles judged.
    pub(crate) fn cycles(&self) -> u64 {
        (self.to_cycle + 1).saturating_sub(self.from_cycle)
    }

    /// Bytes held per cycle judged.
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes as f64 / self.cycles().max(1) as f64
    }
}

/// Judged cycles a clean `retained_bytes` needs: with fewer, even a leak in every cycle would not
/// yet hold [`age::LATE_HOLDS`] of the later half's cycles, and nothing is ruled out (a leak found
/// already is still a leak).
pub(crate) fn min_judged_cycles() -> u64 {
    age::cycles_to_find(1.0)
}

/// Judged cycles after which a record whose sites hold no old residue at all is clean: a leak in
/// every cycle (the common leak of a test body, which does the same each run) would have left old
/// residue in each of them, and 3 cycles rule out, at [`age::POWER`], a leak recurring in 79% of
/// cycles or more. Fewer than [`min_judged_cycles`] cannot call a leak; this decides clean sooner.
pub(crate) const EARLY_JUDGED_CYCLES: u64 = 3;

#[cfg(test)]
mod tests;
