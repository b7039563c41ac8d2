use super::*;
use crate::signal::Signal;
use crate::verdict::{Rule, SignalVerdict, Verdict};

fn verdict(r: Retained) -> SignalVerdict {
    SignalVerdict::of_retained(r)
}

fn live(bytes: i64) -> Live {
    Live { bytes, allocations: i64::from(bytes != 0) }
}

fn held(cycle: u64, size: u64, stack: Option<u32>) -> Held {
    Held { cycle, size, stack, chain: None }
}

fn span(first: u64, last: u64) -> age::Span {
    age::Span { first, last }
}

/// What the record says of stacks in these tests: named `store::site_N`, never given back, first
/// stacked at cycle 20, filling no consumer.
struct Record {
    turnover: std::collections::BTreeMap<u32, u64>,
    consumer: std::collections::BTreeMap<u32, Consumer>,
    reported: Option<crate::probe::RocksDbMemory>,
    /// A stack's live bytes per cycle from the look's first, where they are not what `held`
    /// makes them (blocks given back before the look).
    live: std::collections::BTreeMap<u32, Vec<f64>>,
    /// What the store reported at each cycle, where not `reported` throughout.
    reported_at: Option<fn(u64) -> crate::probe::RocksDbMemory>,
    /// The function of the user's that made a stack's allocations, where several stacks share one.
    function: std::collections::BTreeMap<u32, u32>,
}

impl Record {
    fn new() -> Record {
        Record {
            turnover: Default::default(),
            consumer: Default::default(),
            reported: None,
            live: Default::default(),
            reported_at: None,
            function: Default::default(),
        }
    }

    fn sites(&self, held: &[Held], at: age::Span) -> Vec<RetainedSite> {
        let name = |id: u32| vec![format!("store::site_{id} (src/store.rs:{id})")];
        let turnover = |id: u32| self.turnover.get(&id).copied();
        let class_turnover = |_: u64| None;
        let first_seen = |_: u32| Some(20);
        let consumer = |id: u32| self.consumer.get(&id).copied();
        let facts = SiteFacts {
            name: &name,
            turnover: &turnover,
            class_turnover: &class_turnover,
            first_seen: &first_seen,
            consumer: &consumer,
            reported: self.reported.as_ref(),
            periodic_window: 1000,
        };
        let reported = |c: u64| self.reported_at.map(|f| f(c)).or(self.reported);
        let function_of = |id: u32| Some(self.function.get(&id).copied().unwrap_or(1000 + id));
        sites(held, at, &facts, &growth_of(held, at, &self.live, &reported, &consumer, &function_of), true)
    }
}

/// The growth rule's verdicts on the stacks' live bytes: `live`'s where given, else `held` read
/// as live bytes per stack, each block live from its cycle on (what a record whose blocks are
/// never given back shows), with what `reported` says a consumer holds.
fn growth_of(
    held: &[Held],
    at: age::Span,
    live: &std::collections::BTreeMap<u32, Vec<f64>>,
    reported: &dyn Fn(u64) -> Option<crate::probe::RocksDbMemory>,
    consumer: &dyn Fn(u32) -> Option<Consumer>,
    function_of: &dyn Fn(u32) -> Option<u32>,
) -> crate::verdict::sites::Verdicts {
    use crate::verdict::sites::series::{Key, Reading, SeriesSet};
    let mut set = SeriesSet::default();
    for c in at.first..=at.last {
        let mut per: std::collections::BTreeMap<u32, f64> = Default::default();
        for h in held.iter().filter(|h| h.cycle <= c && !h.stack.is_some_and(|id| live.contains_key(&id))) {
            if let Some(id) = h.stack {
                *per.entry(id).or_default() += h.size as f64;
            }
        }
        for (&id, values) in live {
            per.insert(id, values.get((c - at.first) as usize).copied().unwrap_or(0.0));
        }
        let mut readings: Vec<_> = per.into_iter().map(|(id, v)| Reading::of(Key::Stack { id }, v)).collect();
        if let Some(m) = reported(c) {
            for consumer in Consumer::ALL.into_iter().filter(|k| !k.bounded_by_time()) {
                readings.push(Reading::of(Key::Reported { consumer }, consumer.budget(&m)));
            }
            readings.push(Reading::of(Key::CacheCapacity, m.cache_capacity_bytes as f64));
        }
        set.push(c, readings);
    }
    let cx = crate::verdict::sites::Context {
        first: at.first,
        alpha: 1e-4,
        consumer_of: consumer,
        periodic_window: 1000,
        total_budget: 4096.0,
        suppressed: &|_| false,
        function_of,
    };
    crate::verdict::sites::judge(&mut set, &cx)
}

fn every(from: u64, to: u64, size: u64, stack: u32) -> Vec<Held> {
    (from..=to).map(|c| held(c, size, Some(stack))).collect()
}

fn retained(from: u64, to: u64, held: &[Held], sites: Vec<RetainedSite>) -> Retained {
    let mut per_cycle: std::collections::BTreeMap<u64, i64> = Default::default();
    for h in held {
        *per_cycle.entry(h.cycle).or_default() += h.size as i64;
    }
    Retained::of(from, to, per_cycle.into_iter().map(|(c, b)| (c, live(b)))).with_sites(sites)
}

#[test]
fn too_few_judged_cycles_rule_out_nothing() {
    let r = Retained::of(20, 24, [(20, live(0))]);
    let v = verdict(r);
    assert_eq!((v.verdict, v.more_cycles_needed), (Verdict::Inconclusive, Some(min_judged_cycles() - 5)));
    assert_eq!(verdict(Retained::of(20, 27, [(20, live(0))])).verdict, Verdict::Clean);
    // A leak found is a leak however short the run.
    let leak = every(20, 27, 8, 7);
    let r = retained(20, 27, &leak, Record::new().sites(&leak, span(20, 27)));
    assert_eq!(verdict(r).verdict, Verdict::Leak);
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
    let none = Retained::of(20, 98, [(0, live(14_000)), (99, live(500))]);
    assert_eq!((none.bytes, none.generations_holding, none.first_cycle), (0, 0, None));
    assert_eq!(verdict(none).verdict, Verdict::Clean);
}

#[test]
fn kept_once_is_listed_and_an_accumulating_stack_is_a_leak_with_its_estimate() {
    // Three one-time residues, each from its own stack: clean, each listed, named.
    let once = [held(37, 32, Some(1)), held(45, 64, Some(2)), held(54, 1152, Some(3))];
    let r = retained(20, 198, &once, Record::new().sites(&once, span(20, 198)));
    assert_eq!((r.sites.len(), r.recurring_sites, r.open_sites), (3, 0, 0));
    assert_eq!(r.sites[0].function, "store::site_3 (src/store.rs:3)");
    assert_eq!(r.sites[0].judged, Some(Aged::Kept));
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // 8 B in every fourth cycle at one stack: a leak, its estimate the bytes per judged cycle.
    let leak: Vec<Held> = (20..=198).step_by(4).map(|c| held(c, 8, Some(7))).collect();
    let all = [leak.as_slice(), &once].concat();
    let r = retained(20, 198, &all, Record::new().sites(&all, span(20, 198)));
    assert_eq!((r.recurring_sites, r.recurring_bytes), (1, 8 * 45));
    assert!(r.sites[0].recurs() && r.sites[0].function.starts_with("store::site_7"));
    let v = verdict(r);
    assert_eq!((v.verdict, v.informational), (Verdict::Leak, false));
    // Its growth per cycle over the later half: 8 B every fourth cycle.
    assert!(v.estimate.is_some_and(|e| (e.value - 2.0).abs() < 0.1), "{:?}", v.estimate);
}

#[test]
fn allocations_before_the_watch_are_listed_by_size_and_never_decide() {
    let early: Vec<Held> = (20..=198).map(|c| held(c, 48, None)).collect();
    let s = Record::new().sites(&early, span(20, 198));
    assert_eq!(s[0].function, "no stack: 48 B blocks made before their size was watched, or sampled out");
    assert!(!s[0].recurs() && !s[0].open() && s[0].judged.is_none(), "sizes without stacks never decide");
}

#[test]
fn a_stack_that_turns_over_keeps_what_its_window_holds_and_a_leak_beside_it_is_found() {
    // A queue's blocks from the last 10 cycles, the stack giving back at age 5: state, its live
    // bytes flat at ten blocks.
    let queue = every(189, 198, 512, 3);
    let mut record = Record::new();
    record.turnover.insert(3, 5);
    record.live.insert(3, vec![5120.0; 179]);
    let r = retained(20, 198, &queue, record.sites(&queue, span(20, 198)));
    assert_eq!((r.sites[0].judged, verdict(r).verdict), (Some(Aged::State), Verdict::Clean));
    // The same stack also keeps one block in four cycles for good: its live bytes keep growing, a
    // leak, whatever it gives back.
    let lost: Vec<Held> = (20..189).step_by(4).map(|c| held(c, 512, Some(3))).collect();
    let both = [queue.as_slice(), &lost].concat();
    record.live.insert(3, (20..=198).map(|c| 5120.0 + 512.0 * ((c - 20) / 4 + 1).min(43) as f64).collect());
    assert!(record.sites(&both, span(20, 198))[0].recurs());
}

#[test]
fn a_leak_whose_stack_differs_from_cycle_to_cycle_grows_at_its_function() {
    // 64 B a cycle through one function of the user's, at one of 7 stacks in turn (its callers
    // differ): each stack rises one cycle in 7, too rarely to be a leak alone.
    let leak: Vec<Held> = (20..=59).map(|c| held(c, 64, Some(1 + (c % 7) as u32))).collect();
    let mut record = Record::new();
    let alone = record.sites(&leak, span(20, 59));
    assert!(alone.iter().all(|s| !s.recurs()), "{alone:#?}");
    record.function = (1..=7).map(|id| (id, 1)).collect();
    let sites = record.sites(&leak, span(20, 59));
    assert!(sites.iter().all(RetainedSite::recurs), "{sites:#?}");
    let r = retained(20, 59, &leak, sites);
    assert_eq!(verdict(r).verdict, Verdict::Leak);
    // Seven stacks through one function that each made their block once, long ago: no growth.
    let once: Vec<Held> = (1..=7).map(|id| held(20 + u64::from(id), 64, Some(id))).collect();
    let sites = record.sites(&once, span(20, 59));
    assert!(sites.iter().all(|s| !s.recurs() && !s.open()), "{sites:#?}");
}

#[test]
fn a_reported_consumer_explains_its_stacks_growth_within_its_report_and_an_unreported_one_stays_open() {
    let cache = every(20, 198, 4096, 5);
    let mut record = Record::new();
    record.consumer.insert(5, Consumer::BlockCache);
    // Not reported: open, the run inconclusive, never a leak.
    let r = retained(20, 198, &cache, record.sites(&cache, span(20, 198)));
    assert!(r.sites[0].open() && !r.leaks(), "{:?}", r.sites[0]);
    let v = verdict(r);
    assert_eq!((v.verdict, v.more_cycles_needed), (Verdict::Inconclusive, None));
    // Reported, its usage all it holds, cycle by cycle: explained, clean.
    record.reported =
        Some(crate::probe::RocksDbMemory { cache_total_bytes: 179 * 4096, ..crate::probe::RocksDbMemory::default() });
    record.reported_at = Some(|c| crate::probe::RocksDbMemory {
        cache_total_bytes: (c - 19) * 4096,
        ..crate::probe::RocksDbMemory::default()
    });
    let r = retained(20, 198, &cache, record.sites(&cache, span(20, 198)));
    assert!(r.sites[0].live.is_some_and(|j| j.explained), "{:?}", r.sites[0]);
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // Reported at a fixed figure below what it holds (a second cache, leaked each cycle): what
    // its stacks hold beyond the report grows, a leak.
    record.reported = Some(crate::probe::RocksDbMemory {
        cache_total_bytes: (179 * 4096 / 2) * 4 / 5,
        ..crate::probe::RocksDbMemory::default()
    });
    record.reported_at = None;
    let r = retained(20, 198, &cache, record.sites(&cache, span(20, 198)));
    assert!(r.leaks(), "{:?}", r.sites[0]);
    // Reported within a capacity that rises with it (raised and never lowered): no bound.
    record.reported_at = Some(|c| crate::probe::RocksDbMemory {
        cache_total_bytes: (c - 19) * 4096,
        cache_capacity_bytes: (c - 19) * 4096,
        ..crate::probe::RocksDbMemory::default()
    });
    let r = retained(20, 198, &cache, record.sites(&cache, span(20, 198)));
    assert!(r.leaks(), "{:?}", r.consumers);
}

#[test]
fn a_container_is_open_on_schedule_and_clean_once_it_misses_it() {
    let grown = |at: u64| {
        [Held { cycle: 128, size: 131_072, stack: Some(5), chain: Some(age::ContainerGrowth::new(128, 64, 2.0)) }]
            .map(|h| Held { cycle: h.cycle.min(at), ..h })
    };
    let r = retained(20, 198, &grown(198), Record::new().sites(&grown(198), span(20, 198)));
    assert!(r.open());
    let v = verdict(r);
    // Due by 128 + 2 x 64 x 1.5 = 320: a look after it settles.
    assert_eq!((v.verdict, v.more_cycles_needed), (Verdict::Inconclusive, Some(321 - 199)));
    let r = retained(20, 330, &grown(330), Record::new().sites(&grown(330), span(20, 330)));
    assert_eq!((r.sites[0].judged, verdict(r).verdict), (Some(Aged::Stopped), Verdict::Clean));
}

/// A run whose counter's growth rule could not decide, `unexplained_bytes` inconclusive.
fn undecided_run() -> crate::verdict::RunVerdict {
    let counter = SignalVerdict::undecided(Signal::UnexplainedBytes.into(), Rule::Exact { expected: 0.0 });
    crate::verdict::RunVerdict {
        verdict: Verdict::Inconclusive,
        signals: vec![counter],
        leak_rate: None,
        rules_out: None,
        baseline_return: None,
        bytes_unavailable: None,
        judged_at_cycles: None,
    }
}

#[test]
fn the_record_never_sets_the_counters_growth_aside() {
    let clean = || verdict(Retained::of(20, 198, [(37, live(512))]));
    let holds = |bytes: i64| RecordHolds { from_cycle: 110, to_cycle: 198, bytes, leak_would_hold: 3_560.0 };
    for verdict_of_counter in [Verdict::Inconclusive, Verdict::Leak] {
        // Whatever the cycles held where the counter's leak would be, its verdict stands: a
        // leak is a leak, an undecided growth keeps the run going.
        for held in [Some(holds(1_312)), Some(holds(65_536))] {
            let mut run = undecided_run();
            run.signals[0].verdict = verdict_of_counter;
            run.signals[0].record_holds = held;
            run.verdict = verdict_of_counter;
            run.add_retained(clean());
            assert_eq!(run.verdict, verdict_of_counter, "{held:?}");
            assert!(!run.signal(Signal::UnexplainedBytes).is_some_and(|s| s.informational));
        }
    }
    // A counter still below its evidence floor (no growth measured, nothing to compare): a clean
    // record decides a short run; one with growth measured but no comparison keeps it going.
    let mut run = undecided_run();
    run.add_retained(clean());
    assert_eq!(run.verdict, Verdict::Clean);
    assert!(run.signal(Signal::UnexplainedBytes).is_some_and(|s| s.informational));
    let mut run = undecided_run();
    run.signals[0].growth = Some(crate::verdict::Growth {
        from_cycle: 110,
        to_cycle: 198,
        growth: 900.0,
        lower: -100.0,
        upper: 1_900.0,
        upper_alpha: None,
        budget: 4096.0,
        budget_from: crate::verdict::BudgetFrom::Total,
        jumps: 0,
        still_growing: false,
        data_allowance: 0.0,
    });
    run.add_retained(clean());
    assert_eq!(run.verdict, Verdict::Inconclusive);
    // A leak the record found decides.
    let mut run = undecided_run();
    let leak = every(20, 198, 8, 7);
    run.add_retained(verdict(retained(20, 198, &leak, Record::new().sites(&leak, span(20, 198)))));
    assert_eq!(run.verdict, Verdict::Leak);
}

#[test]
fn a_record_holding_nothing_old_is_clean_after_three_judged_cycles() {
    let nothing: Vec<Held> = Vec::new();
    let r = retained(2, 4, &nothing, Vec::new());
    assert_eq!(verdict(r.clone()).verdict, Verdict::Clean);
    // A leak in every one of 3 cycles leaves residue in at least one at 79% of cycles or more.
    let p = r.rate_ruled_out().expect("a rate ruled out");
    assert!((p - (1.0 - 0.01f64.powf(1.0 / 3.0))).abs() < 1e-6, "{p}");
    // Two judged cycles: not yet.
    assert_eq!(verdict(retained(2, 3, &nothing, Vec::new())).verdict, Verdict::Inconclusive);
    // A stack that never gives back, holding one judged cycle's residue: old, so undecided until a
    // leak could be called.
    let once = vec![held(3, 64, Some(9))];
    let r = retained(2, 4, &once, Record::new().sites(&once, span(2, 4)));
    assert_eq!(verdict(r).verdict, Verdict::Inconclusive);
    // Residue without a stack is never judged, and so never decides early.
    let unstacked = vec![held(3, 64, None)];
    let r = retained(2, 4, &unstacked, Record::new().sites(&unstacked, span(2, 4)));
    assert_eq!(verdict(r).verdict, Verdict::Inconclusive);
    // A stack that turns over, holding only what its window still turns: state, clean.
    let mut record = Record::new();
    record.turnover.insert(5, 3);
    let young = vec![held(4, 64, Some(5))];
    let r = retained(2, 4, &young, record.sites(&young, span(2, 4)));
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // Long runs holding nothing old state the stronger rate: a leak would have fired in one of 27
    // cycles, not only in 4 of the later half's.
    let r = retained(2, 28, &nothing, Vec::new());
    let (p, late_half) = (r.rate_ruled_out().expect("a rate"), age::rate_ruled_out(age::late_cycles(r.span())));
    assert!(p < late_half.expect("27 judged cycles rule out something") / 2.0, "{p} {late_half:?}");
}

#[test]
fn check_s_early_look_asks_for_no_old_residue_in_the_later_half() {
    // Kept once in the first half (a stack that never gives back), nothing after: the later half
    // holds nothing old, and a leak at such a stack would have fired in one of its 40 cycles.
    let early = vec![held(30, 1024, Some(9))];
    let r = retained(20, 98, &early, Record::new().sites(&early, span(20, 98)));
    assert_eq!(verdict(r.clone()).verdict, Verdict::Clean);
    assert_eq!((r.old_sites, r.late_old_sites), (Some(1), Some(0)));
    assert!(r.nothing_old_late());
    let late = age::late_cycles(r.span());
    assert_eq!(late, 40);
    let p = r.rate_ruled_out().expect("a rate ruled out");
    assert!((p - age::rate_firing_in(late, 1)).abs() < 1e-9, "{p}");
    assert!(p < age::rate_ruled_out(late).expect("40 late cycles rule something out"));
    // The same residue kept in the later half: in question.
    let kept_late = vec![held(70, 1024, Some(9))];
    let r = retained(20, 98, &kept_late, Record::new().sites(&kept_late, span(20, 98)));
    assert_eq!(verdict(r.clone()).verdict, Verdict::Clean);
    assert_eq!(r.late_old_sites, Some(1));
    assert!(!r.nothing_old_late());
    // Residue without a stack is not judged, here as by the rule (a leak's later allocations
    // carry its stack), wherever it is.
    let unstacked = vec![held(70, 64, None)];
    let r = retained(20, 98, &unstacked, Record::new().sites(&unstacked, span(20, 98)));
    assert_eq!((r.old_sites, r.late_old_sites), (Some(1), Some(0)));
    assert!(r.nothing_old_late());
}
