//! Live bytes per allocating site, sample by sample ([`series`]), and the rule that judges them by
//! growth ([`rule`]): a leak is live memory that keeps growing, at its allocating site or in
//! total. This file judges a run's series together: each site's share of what its size class's
//! older blocks gave back, the error rate split over the series judged, the sites of a RocksDB
//! consumer summed against what the store reports it holds, and the record's total.

pub(crate) mod rule;
pub(crate) mod series;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use self::rule::{Measure, SiteGrowth};
use self::series::{Key, SeriesSet, View};
use crate::verdict::consumer::Consumer;

/// What a run's series are judged with at a look.
#[allow(missing_debug_implementations)] // a closure
pub struct Context<'a> {
    /// The first judged cycle.
    pub first: u64,
    /// The false-leak rate this look may spend on the record's series, split over them.
    pub alpha: f64,
    /// The RocksDB consumer a stack's frames fill, named when asked (only for sites that grow).
    pub consumer_of: &'a dyn Fn(u32) -> Option<Consumer>,
    /// Cycles RocksDB's periodic-task timer holds what it holds, at the run's pace.
    pub periodic_window: u64,
    /// The least the record's total must grow by to be a leak (the byte counter's total budget):
    /// the total holds the store's data and caches, whose small steps no site explains.
    pub total_budget: f64,
    /// Whether a stack is a known leak the run accepts (a suppression names it), asked only of
    /// sites that grew.
    pub suppressed: &'a dyn Fn(u32) -> bool,
    /// The function of the user's code that made a stack's allocation itself (only the standard
    /// library and the allocator inside it), as an id of this run's, asked only of sites that rose.
    pub function_of: &'a dyn Fn(u32) -> Option<u32>,
}

/// A site as the growth rule judged it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Judged {
    /// The rule's facts and verdict, what a consumer explains set aside.
    pub growth: SiteGrowth,
    /// The RocksDB consumer its frames fill, when it was asked (a site that grew).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<Consumer>,
    /// Its growth is a consumer's that the store reports within its bound, or that holds by time
    /// within its window.
    #[serde(default)]
    pub explained: bool,
    /// It grew at a consumer's frames that nothing reports: open.
    #[serde(default)]
    pub unreported: bool,
    /// A suppression names it: a known leak the run accepts, taken out of the total.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suppressed: bool,
    /// What the rule says of the stacks through the same function of the user's that made the
    /// allocation, summed, when two or more of them rose and the sum leaks or is open: a leak
    /// whose stack differs from cycle to cycle (its callers, a recursion's depth) grows there
    /// while each stack alone rose only now and then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_function: Option<SiteGrowth>,
}

impl Judged {
    /// Whether it is a leak.
    pub fn leaks(&self) -> bool {
        (self.growth.leaks() || self.by_function.is_some_and(|g| g.leaks())) && !self.explained && !self.unreported
    }

    /// Whether its question is open.
    pub fn open(&self) -> bool {
        !self.explained && (self.unreported || self.growth.open() || self.by_function.is_some_and(|g| g.open()))
    }
}

/// A RocksDB consumer's growing sites summed, less what the store reports the consumer holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConsumerGrowth {
    /// The consumer.
    pub consumer: Consumer,
    /// Its sites that grew.
    pub sites: u64,
    /// What they hold beyond the report, judged (`None` with no report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_report: Option<SiteGrowth>,
    /// The report's bound rose over the judged cycles (a cache whose capacity was raised): it
    /// bounds nothing, and the sites are judged as any other.
    #[serde(default)]
    pub bound_rose: bool,
}

/// What the RocksDB consumers the store reports account for of a counter's growth: their sites'
/// growth over the counter's later part, as the record measured it, within the consumers' bounds
/// (a cache within its capacity, memtables not yet flushed, the readers of the files the store
/// holds), times the share of it the counter sees (all of it in RocksDB's accounting, its rounding
/// in the allocator's bytes beyond it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConsumersExplain {
    /// The consumers.
    pub consumers: Vec<Consumer>,
    /// The bytes they account for.
    pub bytes: f64,
    /// Of them, what the known leaks a suppression accepts grew by.
    #[serde(default)]
    pub suppressed_bytes: f64,
    /// Over cycles from ...
    pub from_cycle: u64,
    /// ... to.
    pub to_cycle: u64,
}

/// Everything the growth rule says of a run's series at a look.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    /// Each allocating stack's.
    pub sites: BTreeMap<u32, Judged>,
    /// The record's total, less what the store reports RocksDB holds.
    pub total: Option<SiteGrowth>,
    /// The sites past the most given a series of their own, summed.
    pub rest: Option<SiteGrowth>,
    /// The RocksDB consumers whose sites grew.
    pub consumers: Vec<ConsumerGrowth>,
    /// Series judged (the error rate's split).
    pub judged: u64,
    /// Series whose last value is above their first judged one (what an early clean must not
    /// have).
    pub rose: u64,
}

impl Verdicts {
    /// Whether any series leaks.
    pub fn leaks(&self) -> bool {
        self.sites.values().any(Judged::leaks)
            || self.total.is_some_and(|g| g.leaks())
            || self.rest.is_some_and(|g| g.leaks())
    }

    /// Whether any series' question is open.
    pub fn open(&self) -> bool {
        self.sites.values().any(Judged::open) || self.rest.is_some_and(|g| g.open())
    }
}

/// A view of a series computed from others, block by block (a consumer's sites less its report).
struct Owned {
    mins: Vec<f64>,
    vars: Vec<f64>,
    spread: f64,
}

impl Owned {
    /// The view, with its running figures read off its blocks.
    fn view<'a>(&'a self, ends: &'a [u64]) -> View<'a> {
        let (mut high, mut rise, mut give_back) = (f64::NEG_INFINITY, 0.0f64, 0.0f64);
        for w in self.mins.windows(2) {
            rise = rise.max(w[1] - w[0]);
        }
        for &m in &self.mins {
            high = high.max(m);
            give_back = give_back.max(high - m);
        }
        View {
            ends,
            mins: &self.mins,
            vars: &self.vars,
            ups: &[],
            max_rise: rise,
            max_give_back: give_back,
            last: self.mins.last().copied().unwrap_or(0.0),
            estimate: self.mins.last().copied().unwrap_or(0.0),
            spread: self.spread,
            noisy: true,
        }
    }
}

/// What a stacked byte of a series stands for (its estimate over its stacked bytes at its last
/// reading).
fn scale(v: &View<'_>) -> f64 {
    if v.last > 0.0 {
        (v.estimate / v.last).max(1.0)
    } else {
        1.0
    }
}

/// Several series' block floors summed, each scaled by what its stacked bytes stand for: their
/// estimate beside exact bytes (a total, a report). `None` when none of them is kept.
fn estimated(set: &SeriesSet, keys: &[Key]) -> Option<Vec<f64>> {
    keys.iter().filter_map(|k| set.view(k)).fold(None, |acc, v| {
        let k = scale(&v);
        let mut sum = acc.unwrap_or_else(|| vec![0.0; v.mins.len()]);
        for (s, m) in sum.iter_mut().zip(v.mins) {
            *s += m * k;
        }
        Some(sum)
    })
}

/// The normal quantile the rule's spread is taken at, for `series` judged at `alpha`.
fn quantile(alpha: f64, series: u64) -> f64 {
    crate::verdict::stats::normal_quantile(1.0 - (alpha / series.max(1) as f64).clamp(1e-300, 0.5))
}

/// Judges every series of `set` at a look ([`Context`]).
pub fn judge(set: &mut SeriesSet, cx: &Context<'_>) -> Verdicts {
    set.prepare();
    let keys: Vec<Key> = set.keys().copied().collect();
    let stacks: Vec<u32> =
        keys.iter().filter_map(|k| if let Key::Stack { id } = k { Some(*id) } else { None }).collect();
    let measured: BTreeMap<u32, Measure> =
        stacks.iter().filter_map(|&id| Some((id, rule::measure(&set.view(&Key::Stack { id })?, cx.first)?))).collect();
    let functions = function_groups(&measured, cx);
    let judged = stacks.len() as u64 + 2 + functions.len() as u64;
    let z = quantile(cx.alpha, judged);
    let mut out = Verdicts { judged, ..Verdicts::default() };
    out.rose = keys
        .iter()
        .filter(|k| matches!(k, Key::Stack { .. } | Key::Rest | Key::Total))
        .filter_map(|k| set.view(k))
        .filter(|v| v.mins.first().is_some_and(|&first| v.last > first))
        .count() as u64;
    let shares = drain_shares(set, &measured);
    for (&id, m) in &measured {
        let (drained, class_spread) = shares.get(&id).copied().unwrap_or((0.0, 0.0));
        let growth = rule::judge(m, drained, class_spread, z);
        let suppressed = growth.growth_bytes + growth.drained_bytes > 0.0 && (cx.suppressed)(id);
        let judged =
            Judged { growth, consumer: None, explained: false, unreported: false, suppressed, by_function: None };
        out.sites.insert(id, judged);
    }
    functions_judged(set, cx, &functions, &mut out.sites, z);
    out.consumers = consumers(set, cx, &mut out.sites, z);
    if let Some(m) = set.view(&Key::Rest).and_then(|v| rule::measure(&v, cx.first)) {
        out.rest = Some(rule::judge(&m, 0.0, 0.0, z));
    }
    out.total = total(set, cx, &out.sites, z);
    out
}

/// The stacks that rose, by the function of the user's that made their allocations, where two or
/// more did.
fn function_groups(measured: &BTreeMap<u32, Measure>, cx: &Context<'_>) -> Vec<Vec<u32>> {
    let mut groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for id in measured.iter().filter(|(_, m)| m.rose()).map(|(&id, _)| id) {
        if let Some(function) = (cx.function_of)(id) {
            groups.entry(function).or_default().push(id);
        }
    }
    groups.into_values().filter(|ids| ids.len() > 1).collect()
}

/// Judges each function's stacks summed ([`Judged::by_function`]), as a consumer's are: their
/// series' floors added, moving as their comings and goings spread them. A sum that leaks or is
/// open marks each of its stacks that neither a suppression names nor leaks alone.
fn functions_judged(set: &SeriesSet, cx: &Context<'_>, groups: &[Vec<u32>], sites: &mut BTreeMap<u32, Judged>, z: f64) {
    let ends = set.block_ends().to_vec();
    for ids in groups {
        let keys: Vec<Key> = ids.iter().map(|&id| Key::Stack { id }).collect();
        let Some(mins) = estimated(set, &keys) else { continue };
        let summed = Owned { mins, vars: Vec::new(), spread: set.spread_of(&keys) };
        let Some(g) = rule::measure(&summed.view(&ends), cx.first).map(|m| rule::judge(&m, 0.0, 0.0, z)) else {
            continue;
        };
        if !(g.leaks() || g.open()) {
            continue;
        }
        for id in ids {
            if let Some(j) = sites.get_mut(id).filter(|j| !j.suppressed && !j.growth.leaks()) {
                j.by_function = Some(g);
            }
        }
    }
}

/// Per stack, what its size class's older blocks (made before the class was watched) gave back
/// over the blocks it is measured on, up to its own rise, and how they turned over (what the
/// site replacing them moves by as they did): a site replacing them rises while
/// nothing grows. Each site may take all of it: two sites of one class can each replace them, and
/// a drain split between them would call the one that replaces a leak. A leak in a class whose
/// older blocks are still going is excused as much, until they are gone (docs/verdict.md).
fn drain_shares(set: &SeriesSet, measured: &BTreeMap<u32, Measure>) -> BTreeMap<u32, (f64, f64)> {
    let mut shares = BTreeMap::new();
    for (&id, m) in measured {
        let Some(view) = set.class_of(id).and_then(|class| set.view(&Key::Drained { class })) else { continue };
        // Growth is read from block floors, anywhere in their blocks: the drain from the end of
        // the block before the first to the end of the last.
        let (from, to) = m.blocks();
        let end = |i: usize| view.vars.get(i).or(view.vars.last()).copied().unwrap_or(0.0);
        let before = from.checked_sub(1).map_or_else(|| view.vars.first().copied().unwrap_or(0.0), end);
        let drained = (end(to) - before).max(0.0).min(m.raw.max(0.0));
        if drained > 0.0 || view.spread > 0.0 {
            shares.insert(id, (drained, view.spread));
        }
    }
    shares
}

/// The growth of the sites of each reported consumer that explains them (within its report and
/// its bound) from cycle `from` to `to`, by their series' floors at the blocks holding those
/// cycles: what those consumers account for of a counter's growth over the same cycles.
/// Reads the series as the look that judged `v` prepared them.
pub(crate) fn explained_growth(set: &SeriesSet, v: &Verdicts, from: u64, to: u64) -> Vec<(Consumer, f64)> {
    let mut out: BTreeMap<Consumer, f64> = BTreeMap::new();
    for (&id, j) in &v.sites {
        let (Some(k), true) = (j.consumer, j.explained && !j.consumer.is_some_and(Consumer::bounded_by_time)) else {
            continue;
        };
        *out.entry(k).or_default() += grew_between(set, id, from, to);
    }
    out.into_iter().filter(|(_, g)| *g > 0.0).collect()
}

/// What the known leaks a suppression accepts grew by from cycle `from` to `to` (as
/// [`explained_growth`] reads them).
pub(crate) fn suppressed_growth(set: &SeriesSet, v: &Verdicts, from: u64, to: u64) -> f64 {
    v.sites.iter().filter(|(_, j)| j.suppressed).map(|(&id, _)| grew_between(set, id, from, to)).sum::<f64>().max(0.0)
}

/// The most sites [`plotted`] gives.
pub(crate) const PLOTTED_SITES: usize = 6;

/// The sites a report plots, as the look that judged `v` prepared their series: those that leak
/// first, then open ones, then by the most they held at a block's floor (a store that let go of
/// everything at the end holds nothing at its last sample), at most [`PLOTTED_SITES`]; each with
/// its verdict and its live bytes per block (the block's end cycle, its lowest value as its
/// blocks' weights estimate it).
pub(crate) fn plotted(set: &SeriesSet, v: &Verdicts) -> Vec<Plotted> {
    // Leaks first, then open ones, then the most held: sorted on (not leaking, not open, -peak).
    let mut ranked: Vec<((bool, bool, f64), Plotted)> = v
        .sites
        .iter()
        .filter_map(|(&id, j)| {
            let view = set.view(&Key::Stack { id })?;
            let k = scale(&view);
            let points: Vec<(u64, f64)> = view.ends.iter().zip(view.mins).map(|(&c, &m)| (c, m * k)).collect();
            let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
            (peak > 0.0).then_some(((!j.leaks(), !j.open(), -peak), (id, j.growth, points)))
        })
        .collect();
    ranked.sort_by(|(a, _), (b, _)| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2)));
    ranked.into_iter().take(PLOTTED_SITES).map(|(_, p)| p).collect()
}

/// A plotted site: its stack, its verdict, and its live bytes per block ([`plotted`]).
pub(crate) type Plotted = (u32, SiteGrowth, Vec<(u64, f64)>);

/// A stack's series' floor at the block holding cycle `to` less its floor at the block holding
/// `from`.
fn grew_between(set: &SeriesSet, id: u32, from: u64, to: u64) -> f64 {
    let ends = set.block_ends();
    let block = |cycle: u64| ends.partition_point(|&e| e < cycle).min(ends.len().saturating_sub(1));
    let Some(view) = set.view(&Key::Stack { id }) else { return 0.0 };
    let at = |i: usize| view.mins.get(i).copied().unwrap_or(0.0);
    (at(block(to)) - at(block(from))) * scale(&view)
}

/// The consumers' growing sites: those whose frames fill a RocksDB consumer (asked only of sites
/// that leak or are open) are summed per consumer; a reported consumer's sum less its report is
/// judged as a series, a time-bounded one is explained within its window, an unreported one is
/// open. A frame of the user's code between the allocation and the consumer makes the site the
/// user's ([`Consumer::of_frames`]).
fn consumers(set: &SeriesSet, cx: &Context<'_>, sites: &mut BTreeMap<u32, Judged>, z: f64) -> Vec<ConsumerGrowth> {
    let mut groups: BTreeMap<Consumer, Vec<u32>> = BTreeMap::new();
    for (&id, j) in sites.iter_mut() {
        // Every site that grew at all: a consumer's growth is judged against its report here and
        // taken out of the total.
        if j.growth.growth_bytes + j.growth.drained_bytes > 0.0 || j.growth.open() {
            j.consumer = (cx.consumer_of)(id);
        }
        if let (Some(k), true) = (j.consumer, j.growth.leaks() || j.growth.open()) {
            groups.entry(k).or_default().push(id);
        }
    }
    let span = set.span().map_or(0, |(first, last)| last.saturating_sub(first.max(cx.first)));
    let ends = set.block_ends().to_vec();
    let mut out = Vec::new();
    for (consumer, ids) in groups {
        let mut g = ConsumerGrowth { consumer, sites: ids.len() as u64, beyond_report: None, bound_rose: false };
        let reported = set.view(&Key::Reported { consumer });
        let explained = if consumer.bounded_by_time() {
            span < cx.periodic_window
        } else if let Some(report) = reported {
            g.bound_rose = consumer == Consumer::BlockCache
                && set.view(&Key::CacheCapacity).is_some_and(|c| c.mins.first().is_some_and(|&f| c.last > f));
            let keys: Vec<Key> = ids.iter().map(|&id| Key::Stack { id }).collect();
            let spread = set.spread_of(&keys);
            let beyond = estimated(set, &keys).map(|mins| Owned {
                mins: mins.iter().zip(report.mins).map(|(a, b)| a - b).collect(),
                vars: Vec::new(),
                spread,
            });
            let growth =
                beyond.and_then(|o| rule::measure(&o.view(&ends), cx.first).map(|m| rule::judge(&m, 0.0, 0.0, z)));
            g.beyond_report = growth;
            !g.bound_rose && growth.is_none_or(|b| !b.leaks() && !b.open())
        } else {
            for id in &ids {
                if let Some(j) = sites.get_mut(id) {
                    j.unreported = true;
                }
            }
            false
        };
        for id in &ids {
            if let Some(j) = sites.get_mut(id) {
                j.explained = explained;
            }
        }
        out.push(g);
    }
    out
}

/// The record's total less what the store reports RocksDB holds and what the sites a consumer
/// explains (or leaves open, unreported) hold, judged with the byte counter's total budget at
/// least.
fn total(set: &SeriesSet, cx: &Context<'_>, sites: &BTreeMap<u32, Judged>, z: f64) -> Option<SiteGrowth> {
    let total = set.view(&Key::Total)?;
    let mut less: Vec<Key> = Consumer::ALL.into_iter().map(|consumer| Key::Reported { consumer }).collect();
    // The sites that fill a consumer (judged against its report, or open with none), and the known
    // leaks a suppression accepts.
    less.extend(sites.iter().filter(|(_, j)| j.consumer.is_some() || j.suppressed).map(|(&id, _)| Key::Stack { id }));
    let minus = estimated(set, &less);
    // The total moves with every site's comings and goings (and those of the consumers' sites
    // taken out, estimated from their draws).
    let all: Vec<Key> = sites.keys().map(|&id| Key::Stack { id }).collect();
    let drained = set.keys().filter(|k| matches!(k, Key::Drained { .. })).filter_map(|k| set.view(k));
    let spread = set.spread_of(&all) + drained.map(|v| v.spread).sum::<f64>();
    let owned = Owned {
        mins: total
            .mins
            .iter()
            .enumerate()
            .map(|(i, t)| t - minus.as_ref().and_then(|m| m.get(i)).copied().unwrap_or(0.0))
            .collect(),
        vars: vec![0.0; total.mins.len()],
        spread,
    };
    let ends = set.block_ends().to_vec();
    let mut view = owned.view(&ends);
    if minus.is_none() {
        (view.max_rise, view.max_give_back) = (total.max_rise, total.max_give_back);
    }
    view.max_rise = view.max_rise.max(cx.total_budget);
    let m = rule::measure(&view, cx.first)?;
    Some(rule::judge(&m, 0.0, 0.0, z))
}
