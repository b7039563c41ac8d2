use super::*;

fn live(bytes: i64) -> Live {
    Live { bytes, allocations: i64::from(bytes != 0) }
}

#[test]
fn too_few_judged_cycles_rule_out_nothing() {
    // Cycles 5-6 judged: a leak from cycle 5 on would have one stacked block at most.
    let short = Retained::of(5, 6, [(5, live(1024)), (6, live(1024))]);
    let v = verdict(short);
    assert_eq!((v.verdict, v.more_cycles_needed), (Verdict::Inconclusive, Some(1)));
    let empty = Retained::of(5, 5, [(5, live(0))]);
    assert_eq!(verdict(empty).more_cycles_needed, Some(2));
    assert_eq!(verdict(Retained::of(5, 7, [(5, live(0))])).verdict, Verdict::Clean);
    // A stack already holding two cycles' allocations is a leak however short the run.
    let twice = [held(5, 1024, Some(4)), held(6, 1024, Some(4))];
    let r =
        Retained::of(5, 6, [(5, live(1024)), (6, live(1024))]).with_sites(sites(&twice, 5..=6, &name, &no_drain, &[]));
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

fn held(cycle: u64, size: u64, stack: Option<u32>) -> Held {
    Held { cycle, size, stack, growths: 0 }
}

fn name(id: u32) -> Vec<String> {
    vec![format!("store::site_{id} (src/store.rs:{id})")]
}

fn no_drain(_: u32) -> bool {
    false
}

#[test]
fn a_site_holding_two_cycles_is_a_leak_and_one_cycle_each_is_not() {
    // Three one-time residues, each from its own stack, in three cycles: clean, each listed.
    let once = [held(37, 32, Some(1)), held(45, 64, Some(2)), held(54, 1152, Some(3))];
    let r = Retained::of(20, 198, [(37, live(32)), (45, live(64)), (54, live(1152))]).with_sites(sites(
        &once,
        20..=198,
        &name,
        &no_drain,
        &[],
    ));
    assert_eq!((r.sites.len(), r.recurring_sites), (3, 0));
    assert_eq!(r.sites[0].function, "store::site_3 (src/store.rs:3)");
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // One stack in two cycles a hundred apart: a leak, even at 8 B.
    let rare = [held(60, 8, Some(7)), held(160, 8, Some(7)), held(37, 4096, Some(1))];
    let r = Retained::of(20, 198, [(37, live(4096)), (60, live(8)), (160, live(8))]).with_sites(sites(
        &rare,
        20..=198,
        &name,
        &no_drain,
        &[],
    ));
    assert_eq!((r.recurring_sites, r.recurring_bytes), (1, 16));
    let top = &r.sites[0];
    assert_eq!((top.cycles_holding, top.first_cycle, top.last_cycle), (2, 60, 160));
    let v = verdict(r);
    assert_eq!(v.verdict, Verdict::Leak);
    assert!(!v.informational);
    assert_eq!(v.estimate.map(|e| e.value), Some(16.0 / 179.0));
}

#[test]
fn allocations_before_the_watch_are_listed_by_size_and_never_decide() {
    // A leak's first two firings came before its size was watched; its later ones decide.
    let leak = [held(20, 48, None), held(21, 48, None), held(22, 48, Some(9)), held(23, 48, Some(9))];
    let s = sites(&leak, 20..=23, &name, &no_drain, &[]);
    assert_eq!(s.len(), 2);
    assert!(s[0].recurs() && s[0].stacked && s[0].cycles_holding == 2);
    assert_eq!(s[1].function, "no stack: 48 B blocks allocated before their size was watched");
    assert!(!s[1].recurs(), "sizes without stacks never decide");
    // Two one-time residues of one size, one before the watch and one after: not one site.
    let once = sites(&[held(37, 32, None), held(54, 32, Some(4))], 20..=198, &name, &no_drain, &[]);
    assert!(once.iter().all(|s| !s.recurs()));
}

#[test]
fn a_stack_that_gives_back_old_blocks_keeps_state_and_is_not_judged() {
    // A queue's two live blocks from one stack, allocated in two cycles: the stack has given
    // back older blocks during the run, so what it holds is its state.
    let queue = [held(120, 512, Some(3)), held(150, 512, Some(3))];
    let s = sites(&queue, 20..=198, &name, &|id| id == 3, &[]);
    assert!(s[0].drains && !s[0].recurs());
    let r = Retained::of(20, 198, [(120, live(512)), (150, live(512))]).with_sites(s);
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // The same blocks from a stack that never gave anything back: a leak.
    assert!(sites(&queue, 20..=198, &name, &no_drain, &[])[0].recurs());
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
fn a_judged_clean_record_decides_where_the_counter_could_not() {
    let clean = || verdict(Retained::of(20, 198, [(37, live(512))]));
    let mut run = undecided_run();
    assert!(run.undecided_only_by_the_counter(), "a clean record would decide it");
    let mut os = SignalVerdict::undecided(Signal::OpenFdsUnderDir.into(), Rule::Exact { expected: 0.0 });
    os.verdict = Verdict::Inconclusive;
    let mut with_os = undecided_run();
    with_os.signals.push(os);
    assert!(!Signal::OpenFdsUnderDir.corroborating());
    assert!(!with_os.undecided_only_by_the_counter(), "an undecided signal of its own is not the counter's");
    run.add_retained(clean());
    assert_eq!(run.verdict, Verdict::Clean);
    let counter = run.signal(Signal::UnexplainedBytes).map(|s| (s.verdict, s.informational));
    assert_eq!(counter, Some((Verdict::Inconclusive, true)), "shown, not judged");
    // Shown only (declared-shared handles alive): the counter still holds the run.
    let mut run = undecided_run();
    let mut shown = clean();
    shown.informational = true;
    run.add_retained(shown);
    assert_eq!(run.verdict, Verdict::Inconclusive);
    // A leak the counter found still counts, unless the cycles it grew over held less than it
    // would have left there (reference-4x8 seed 14: 68 B a cycle, the record clean).
    let counter_leak = |holds: Option<RecordHolds>| {
        let mut run = undecided_run();
        run.signals[0].verdict = Verdict::Leak;
        run.signals[0].record_holds = holds;
        run.verdict = Verdict::Leak;
        run
    };
    let holds = |bytes: i64| RecordHolds { from_cycle: 110, to_cycle: 198, bytes, leak_would_hold: 3_560.0 };
    for (holds, judged) in [(None, true), (Some(holds(3_560)), true), (Some(holds(1_312)), false)] {
        let mut run = counter_leak(holds);
        run.add_retained(clean());
        let want = if judged { Verdict::Leak } else { Verdict::Clean };
        assert_eq!(run.verdict, want, "{holds:?}");
        let counter = run.signal(Signal::UnexplainedBytes).map(|s| (s.verdict, s.informational));
        assert_eq!(counter, Some((Verdict::Leak, !judged)), "{holds:?}");
        // Without a judged clean record, the counter's leak stands whatever it held.
        let mut run = counter_leak(holds);
        let mut shown = clean();
        shown.informational = true;
        run.add_retained(shown);
        assert_eq!(run.verdict, Verdict::Leak, "{holds:?}");
    }
    // A leak the record found decides.
    let mut run = undecided_run();
    let leak = [held(60, 8, Some(7)), held(160, 8, Some(7))];
    run.add_retained(verdict(Retained::of(20, 198, [(60, live(8)), (160, live(8))]).with_sites(sites(
        &leak,
        20..=198,
        &name,
        &no_drain,
        &[],
    ))));
    assert_eq!(run.verdict, Verdict::Leak);
    assert!(!run.signal(Signal::UnexplainedBytes).is_some_and(|s| s.informational));
}

#[test]
fn a_stack_that_stopped_taking_early_is_a_high_water_mark() {
    // RocksDB's thread-local id map (reference-4x8, seed 3): new entries in cycles 21 and 35 of
    // 20-228, none since. A steady leak takes from cycles 36-228 too, but for a chance of 0.0055.
    let map = [held(21, 32, Some(2)), held(21, 32, Some(2)), held(35, 32, Some(2))];
    let s = sites(&map, 20..=228, &name, &no_drain, &[]);
    let chance = s[0].steady_chance.unwrap_or(1.0);
    assert!((chance - (16.0 * 15.0) / (209.0 * 208.0)).abs() < 1e-12, "{chance}");
    assert!(s[0].stopped() && !s[0].recurs() && !s[0].stop_undecided());
    let r = Retained::of(20, 228, [(21, live(64)), (35, live(32))]).with_sites(s);
    assert_eq!(verdict(r).verdict, Verdict::Clean);
    // Listed before larger memory kept once, which would otherwise push it off the list.
    let beside = [map.as_slice(), &[held(90, 4096, Some(9))]].concat();
    assert!(sites(&beside, 20..=228, &name, &no_drain, &[])[0].stopped());
    // Judged over 20-130 only, the same takings are not yet shown to have stopped: a leak, and
    // check would go on rather than stop there.
    let s = sites(&map, 20..=130, &name, &no_drain, &[]);
    assert!(s[0].recurs() && s[0].stop_undecided(), "{:?}", s[0].steady_chance);
    // A rare leak whose two takings are far apart, and one taking in the last cycles: leaks, and
    // decided so.
    for leak in [[held(60, 8, Some(7)), held(160, 8, Some(7))], [held(21, 8, Some(7)), held(197, 8, Some(7))]] {
        let s = sites(&leak, 20..=198, &name, &no_drain, &[]);
        assert!(s[0].recurs() && !s[0].stop_undecided(), "{:?}", s[0].steady_chance);
    }
    // A container grown by two judged cycles early on is a leak whatever came after.
    let grown = [Held { cycle: 30, size: 4096, stack: Some(5), growths: 2 }, held(25, 64, Some(5))];
    let s = sites(&grown, 20..=900, &name, &no_drain, &[]);
    assert!(s[0].recurs() && !s[0].stopped());
}

#[test]
fn a_stack_taking_only_when_a_handle_high_water_mark_rose_is_one() {
    // reference-4x8, seed 6: the thread-local id map took in cycles 24 and 139 of 20-798, each a
    // cycle with more column families open at once than ever before. As early as that, a steady
    // leak's takings come once in 42: not decided, a leak at the run's end. All at the two
    // judged high-water cycles: C(2, 2) / C(779, 2).
    let map = [held(24, 32, Some(2)), held(139, 32, Some(2))];
    let s = sites(&map, 20..=798, &name, &no_drain, &[]);
    assert!(s[0].recurs() && !s[0].at_handle_peaks, "{:?}", s[0].steady_chance);
    let peaks = [0, 1, 3, 7, 24, 139];
    let s = sites(&map, 20..=798, &name, &no_drain, &peaks);
    let chance = s[0].steady_chance.unwrap_or(1.0);
    assert!((chance - 2.0 / (779.0 * 778.0)).abs() < 1e-15, "{chance}");
    assert!(s[0].at_handle_peaks && s[0].stopped() && !s[0].recurs());
    // A taking outside the high-water cycles: the early-stop chance alone, and a leak.
    let beside = [map.as_slice(), &[held(700, 32, Some(2))]].concat();
    let s = sites(&beside, 20..=798, &name, &no_drain, &peaks);
    assert!(!s[0].at_handle_peaks && s[0].recurs());
    // A store whose handles open at once keep rising: every cycle is a high-water cycle, and a
    // leak taking in every one of them is still a leak.
    let every: Vec<u64> = (0..=198).collect();
    let leak: Vec<Held> = (20..=198).map(|c| held(c, 8, Some(7))).collect();
    let s = sites(&leak, 20..=198, &name, &no_drain, &every);
    assert!(s[0].recurs() && !s[0].stopped(), "{:?}", s[0].steady_chance);
    // A rare leak that happened to fire in two of many high-water cycles is not excused.
    let s = sites(&[held(60, 8, Some(7)), held(160, 8, Some(7))], 20..=198, &name, &no_drain, &every);
    assert!(s[0].recurs(), "{:?}", s[0].steady_chance);
}

#[test]
fn steady_chance_is_the_share_of_placements_all_as_early() {
    assert_eq!(steady_chance(2, 10, 10), 1.0);
    assert_eq!(steady_chance(3, 2, 10), 0.0);
    // C(4, 2) / C(8, 2) = 6 / 28.
    assert!((steady_chance(2, 4, 8) - 6.0 / 28.0).abs() < 1e-12);
    // Many takings bounded away from the end: vanishing, not a NaN or a panic.
    assert_eq!(steady_chance(5000, 6000, 1_000_000), 0.0);
}

#[test]
fn a_block_grown_by_two_judged_cycles_is_a_leak() {
    // A list kept across cycles: one block, from the cycle that last doubled it.
    let grown = |growths| [Held { cycle: 128, size: 131_072, stack: Some(5), growths }];
    for (growths, leak) in [(0, false), (1, false), (2, true), (3, true)] {
        let s = sites(&grown(growths), 20..=198, &name, &|_| true, &[]);
        assert_eq!(s[0].recurs(), leak, "growths {growths}");
        assert_eq!(s[0].growths, growths);
    }
    // Without its stack it never decides.
    let unstacked = [Held { cycle: 128, size: 131_072, stack: None, growths: 3 }];
    assert!(!sites(&unstacked, 20..=198, &name, &no_drain, &[])[0].recurs());
}
