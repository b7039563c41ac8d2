//! The growth rule proven on simulated allocation histories (`leak_tests::simulate`), before any
//! store: random mixtures of clean patterns are never called a leak while their bound shows (a
//! bound beyond the run is the "still growing" leak, by design), and every leak is found by the
//! cycle the power table states. proptest shrinks a failure to the smallest mixture that
//! shows it. A fixed seed keeps the suite repeatable; `PROPTEST_RNG_SEED` explores others.
//!
//! The rates over many histories (false leaks, power, what stays open) are
//! `rates_over_ten_thousand_histories` here and `cargo bench -p leak-tests --bench simulated`
//! (100,000 histories, printed).

use leak_tests::simulate::{
    mixture, run, stress, Firing, Lives, Mixture, Pattern, SiteSpec, Stop, MAX_CYCLES, STRESS, WARMUP,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn runner(cases: u32) -> TestRunner {
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0x1eac_c4ec);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config { cases, ..Config::default() }, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn lives() -> impl Strategy<Value = Lives> {
    prop_oneof![
        (1u64..150).prop_map(Lives::Fixed),
        (1u64..60).prop_map(|m| Lives::Geometric(m as f64)),
        (1u64..10).prop_map(|min| Lives::Pareto { min, alpha: 2.5 }),
    ]
}

/// The clean patterns the rule claims to judge clean (not the stress cases).
fn clean() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        (prop::sample::select(vec![0.2, 1.0, 3.0]), lives())
            .prop_map(|(per_cycle, lives)| Pattern::Turnover { per_cycle, lives }),
        (1u64..200, 1u64..=WARMUP).prop_map(|(blocks, over)| Pattern::Pool { blocks, over }),
        prop::sample::select(vec![8u64, 16, 32]).prop_map(|b| Pattern::HighWater { bound: Some(b) }),
        (0..MAX_CYCLES, 1u64..4).prop_map(|(at, blocks)| Pattern::Once { at, blocks }),
        (0u64..100, prop::sample::select(vec![0.3, 1.0, 4.0]), prop::sample::select(vec![16u64, 64, 256, 1024]))
            .prop_map(|(from, per_cycle, bound)| Pattern::Container { from, per_cycle, bound }),
        Just(Pattern::Scratch),
        (prop::sample::select(vec![16u64, 64, 256]), prop::sample::select(vec![1u64, 3, 8]), 2u64..16, 0.8f64..1.2)
            .prop_map(|(capacity, per_cycle, keys, skew)| Pattern::Lru {
                capacity,
                per_cycle,
                keys: capacity * keys,
                skew
            }),
        (
            prop::sample::select(vec![0.5, 3.0, 10.0]),
            prop::sample::select(vec![50u64, 500, 5000, 50_000]),
            any::<bool>()
        )
            .prop_map(|(per_cycle, capacity, reported)| Pattern::Consumer { per_cycle, capacity, reported }),
    ]
}

fn site(patterns: impl Strategy<Value = Vec<Pattern>>, class: usize) -> impl Strategy<Value = SiteSpec> {
    (patterns, prop::sample::select(vec![1.0, 0.5, 0.25])).prop_map(move |(patterns, stacked)| SiteSpec {
        patterns,
        stacked,
        class,
    })
}

/// One to four clean sites, the later ones sometimes sharing the first one's size class.
fn clean_sites() -> impl Strategy<Value = Vec<SiteSpec>> {
    (1usize..=4, any::<u8>()).prop_flat_map(|(n, shared)| {
        (0..n)
            .map(|i| site(clean().prop_map(|p| vec![p]), if shared & (1 << i) != 0 { 0 } else { i }))
            .collect::<Vec<_>>()
    })
}

fn leak() -> impl Strategy<Value = Pattern> {
    let from = prop_oneof![Just(0u64), WARMUP..400];
    prop_oneof![
        from.clone().prop_map(|from| Firing::Rate { p: 1.0, from }),
        (2u64..20, from.clone()).prop_map(|(n, from)| Firing::Every { n, from }),
        (prop::sample::select(vec![0.5, 0.2, 0.1, 0.05]), from).prop_map(|(p, from)| Firing::Rate { p, from }),
        prop::sample::select(vec![0.5, 0.1]).prop_map(|p| Firing::AtPeaks { p }),
    ]
    .prop_map(|fires| Pattern::Leak { fires })
}

/// Clean sites, and a leak at a site of its own (of its own size class or the first site's), or
/// at a clean site that is not a container's or a RocksDB consumer's (their frames are not the
/// store's; see `simulate::mixture`).
fn leaking_sites() -> impl Strategy<Value = Vec<SiteSpec>> {
    (clean_sites(), leak(), 0usize..3, prop::sample::select(vec![1.0, 0.5, 0.25])).prop_map(
        |(mut sites, leak, place, stacked)| {
            let n = sites.len();
            let host = sites.iter().position(|s| {
                !s.patterns.iter().any(|p| matches!(p, Pattern::Container { .. } | Pattern::Consumer { .. }))
            });
            match (place, host) {
                (0, Some(h)) => {
                    sites[h].patterns.push(leak);
                    sites[h].stacked = sites[h].stacked.min(stacked);
                }
                (1, _) => sites.push(SiteSpec { patterns: vec![leak], stacked, class: 0 }),
                _ => sites.push(SiteSpec { patterns: vec![leak], stacked, class: n }),
            }
            sites
        },
    )
}

#[test]
fn no_clean_mixture_is_called_a_leak() {
    runner(1500)
        .run(&(clean_sites(), any::<u64>()), |(sites, seed)| {
            let m = Mixture { sites, seed };
            let o = run(&m, Stop::Never);
            prop_assert!(
                o.leak_at.is_none() || o.still_growing,
                "a clean mixture called a leak after {:?} cycles, its bound shown: {m:?}",
                o.leak_at
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_leak_is_found_by_the_power_tables_cycle() {
    // At a power of 1 - 1e-9 the table's cycle is one no leak of the mixture misses by chance in
    // any run of the suite; at the rule's own power (0.99), rates_over_ten_thousand_histories.
    runner(1500)
        .run(&(leaking_sites(), any::<u64>()), |(sites, seed)| {
            let m = Mixture { sites, seed };
            let due = m.found_by(1.0 - 1e-9).expect("a leaking mixture has a table cycle");
            let o = run(&m, Stop::Never);
            if due <= MAX_CYCLES {
                prop_assert!(
                    o.leak_at.is_some_and(|at| at <= due),
                    "a leak due by cycle {due} found at {:?}: {m:?}",
                    o.leak_at
                );
            }
            Ok(())
        })
        .unwrap();
}

/// The issue's cases, one by one.
#[test]
fn the_issues_shapes_are_judged_as_they_are() {
    let one = |patterns: Vec<Pattern>, seed: u64| Mixture {
        sites: vec![SiteSpec { patterns, stacked: 1.0, class: 0 }],
        seed,
    };
    // A function whose normal path puts a buffer in a small cache that evicts its oldest as it
    // inserts, and whose error path (1 cycle in 4) forgets it: a leak at the planned end, or a
    // look or two later where the cache's older entries were still going at it.
    let cache = Pattern::Lru { capacity: 8, per_cycle: 1, keys: 64, skew: 1.0 };
    let error_path = Pattern::Leak { fires: Firing::Every { n: 4, from: 0 } };
    for seed in 0..20 {
        let o = run(&one(vec![cache, error_path], seed), Stop::Decided(200));
        assert!(o.leak_at.is_some_and(|at| at <= 220), "seed {seed}: {o:?}");
    }
    // A log of recent events that doubles until it holds its last 512, then never grows: clean,
    // decided (its next growth missed) by 300 cycles, not held open.
    let log = Pattern::Container { from: 0, per_cycle: 4.0, bound: 512 };
    for seed in 0..20 {
        let o = run(&one(vec![log], seed), Stop::Decided(200));
        assert!(o.leak_at.is_none() && o.clean_at.is_some_and(|at| at <= 300), "seed {seed}: {o:?}");
    }
    // A 64 MiB block cache filling at 14 KB a cycle (about 4 blocks), reported: clean at 200.
    let cache = Pattern::Consumer { per_cycle: 3.5, capacity: 16_384, reported: true };
    for seed in 0..20 {
        let o = run(&one(vec![cache], seed), Stop::Decided(200));
        assert_eq!((o.leak_at, o.clean_at), (None, Some(200)), "seed {seed}");
    }
    // The same cache not reported: never called a leak, open (inconclusive) at the end.
    let cache = Pattern::Consumer { per_cycle: 3.5, capacity: 16_384, reported: false };
    let o = run(&one(vec![cache], 1), Stop::Decided(200));
    assert!(o.leak_at.is_none() && o.open_at_end, "{o:?}");
    // An 8 B leak in every cycle: found at the planned end, and not before.
    let every = Pattern::Leak { fires: Firing::Rate { p: 1.0, from: 0 } };
    assert_eq!(run(&one(vec![every], 0), Stop::Never).leak_at, Some(200));
    assert_eq!(run(&one(vec![every], 0), Stop::Decided(50)).leak_at, Some(50));
}

/// The classes the growth rule was built for (issue 71), each with random parameters over 20
/// seeds: the unbounded found at the planned end, the bounded never called a leak once their
/// bound shows, and repeated losses too rare for the run left open, not clean.
#[test]
fn the_issues_classes_are_judged_as_they_are() {
    let one = |patterns: Vec<Pattern>, stacked: f64, seed: u64| Mixture {
        sites: vec![SiteSpec { patterns, stacked, class: 0 }],
        seed,
    };
    let mut rng = leak_tests::simulate::Rng::new(71);
    for seed in 0..20 {
        let stacked = rng.pick(&[1.0, 1.0, 0.5]);
        // Unbounded: a collection dropping its oldest now and then while it grows; a structure
        // rebuilt bigger every cycle (its one block always the youngest cycle's); many small
        // collections that each grew once; a reported cache whose capacity is raised as it fills.
        let unbounded = [
            Pattern::Shedding { per_cycle: rng.pick(&[1.0, 3.0]), drop_every: rng.between(2, 8) },
            Pattern::Rebuilt { grow: rng.between(8, 256) },
            Pattern::GrewOnce,
            Pattern::RisingBound { per_cycle: rng.pick(&[0.5, 3.0]) },
        ];
        for p in unbounded {
            // Every stack taken: found; those that never give back by the power table's cycle,
            // the collection that gives back its oldest once its growth passes what it gives back.
            let o = run(&one(vec![p], 1.0, seed), Stop::Decided(200));
            let due = match p {
                Pattern::Shedding { .. } => MAX_CYCLES,
                _ => one(vec![p], 1.0, seed).found_by(leakcheck::workspace::age::POWER).expect("a leak"),
            };
            assert!(o.leak_at.is_some_and(|at| at <= due), "{p:?} seed {seed}: {o:?}, due {due}");
            // Sampled (a busy size class): never clean; the draw's error can leave a site that
            // gives back open past the run (docs/verdict.md, its power). (A structure rebuilt
            // bigger each cycle changes size class each time: the hooks never sample it.)
            if !matches!(p, Pattern::Rebuilt { .. }) {
                let o = run(&one(vec![p], stacked, seed), Stop::Decided(200));
                assert!(o.leak_at.is_some() || o.open_at_end, "{p:?} stacked {stacked} seed {seed}: {o:?}");
            }
        }
        // Bounded: two lifetimes at one stack; a table filled lazily at a falling rate; a deferred
        // free whose interval grows to a cap; a queue of the last 64 fed one a cycle.
        let bounded = [
            Pattern::Loader { busy: 3.0, quiet: rng.pick(&[0.2, 1.0]), quiet_life: rng.between(20, 80) },
            Pattern::LazyTable { keys: rng.pick(&[16, 32, 64]), draws: rng.pick(&[1.0, 2.0]) },
            Pattern::Janitor { per_cycle: rng.pick(&[0.5, 2.0]), first: rng.between(2, 10), cap: rng.between(16, 48) },
            Pattern::Queue { capacity: 64 },
        ];
        for p in bounded {
            let o = run(&one(vec![p], stacked, seed), Stop::Decided(200));
            assert!(o.leak_at.is_none() || o.still_growing, "{p:?} stacked {stacked} seed {seed}: {o:?}");
            // Its bound shown well before the planned end: clean within twice its cycles (a
            // lazy table's last few entries come late, and its rises stay open until their gaps
            // have lengthened).
            if p.grows_until() < 150 {
                assert!(
                    o.leak_at.is_none() && o.clean_at.is_some_and(|at| at <= 400),
                    "{p:?} stacked {stacked} seed {seed}: {o:?}"
                );
            }
        }
    }
    // A queue of the last 64 in a run too short to see it evict: the "still growing" leak.
    let o = run(&one(vec![Pattern::Queue { capacity: 64 }], 1.0, 0), Stop::Decided(50));
    assert!(o.leak_at == Some(50) && o.still_growing, "{o:?}");
    // Repeated losses at a site that gives nothing back, too rare for the run's length (1.5% of
    // cycles, about 2.7 in the judged cycles of 200): not clean at the planned end while they
    // repeat at their pace (open, or found later), unless their gaps lengthen; a loss kept once is
    // clean. The first firing makes its size watched and carries no stack, so two stacked losses
    // need three firings: in 50.6% of runs (Poisson of mean 2.7).
    let rare = Pattern::Leak { fires: Firing::Rate { p: 0.015, from: 0 } };
    let not_clean =
        (0..400).filter(|&seed| run(&one(vec![rare], 1.0, seed), Stop::Decided(200)).clean_at != Some(200)).count();
    assert!(not_clean >= 160, "rare losses not clean at 200 in only {not_clean} of 400 runs");
}

#[test]
fn rates_over_ten_thousand_histories() {
    let n = 10_000u64;
    let clean: Vec<_> = (0..n).map(|s| run(&mixture(s, false), Stop::Never)).collect();
    let false_leaks = clean.iter().filter(|o| o.leak_at.is_some() && !o.still_growing).count();
    let still_growing = clean.iter().filter(|o| o.still_growing).count();
    let (mut found, mut due_in_run, mut late) = (0, 0, 0);
    for seed in 0..n {
        let m = mixture(seed, true);
        let due = m.found_by(leakcheck::workspace::age::POWER).expect("a leak");
        if due > MAX_CYCLES {
            continue;
        }
        due_in_run += 1;
        match run(&m, Stop::Never).leak_at {
            Some(at) if at <= due => found += 1,
            _ => late += 1,
        }
    }
    let stressed: Vec<usize> = (0..STRESS.len())
        .map(|k| (0..n).filter(|&s| run(&stress(k, s), Stop::Never).leak_at.is_some()).count())
        .collect();
    println!(
        "clean: {false_leaks} of {n} called a leak ({still_growing} more still growing at the planned end); leaks due \
         by {MAX_CYCLES}: {found} of {due_in_run} found by the table's cycle ({late} later); stress called a leak: {:?}",
        STRESS.iter().zip(&stressed).collect::<Vec<_>>()
    );
    // Measured 2026-12-06: 2 of 10,000; 99.8% found by the table's cycle.
    assert!(false_leaks * 1000 <= n as usize, "{false_leaks} clean histories of {n} called a leak");
    assert!(found as f64 >= 0.99 * due_in_run as f64, "power: {found} of {due_in_run}");
}
