//! The age rule proven on simulated allocation histories (`leak_tests::simulate`), before any
//! store: random mixtures of clean patterns are never called a leak, and every leak is found by
//! the cycle the power table states. proptest shrinks a failure to the smallest mixture that
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
            prop_assert!(o.leak_at.is_none(), "a clean mixture called a leak after {:?} cycles: {m:?}", o.leak_at);
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
    // A function whose normal path puts a buffer in a small cache that evicts its oldest, and
    // whose error path (1 cycle in 4) forgets it: a leak, found within 60 cycles.
    let cache = Pattern::Turnover { per_cycle: 1.0, lives: Lives::Fixed(8) };
    let error_path = Pattern::Leak { fires: Firing::Every { n: 4, from: 0 } };
    for seed in 0..20 {
        let o = run(&one(vec![cache, error_path], seed), Stop::Never);
        assert!(o.leak_at.is_some_and(|at| at <= 80), "seed {seed}: {o:?}");
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
    // An 8 B leak in every cycle: found within 50 cycles.
    let every = Pattern::Leak { fires: Firing::Rate { p: 1.0, from: 0 } };
    assert!(run(&one(vec![every], 0), Stop::Never).leak_at.is_some_and(|at| at <= 50));
}

#[test]
fn rates_over_ten_thousand_histories() {
    let n = 10_000u64;
    let clean: Vec<_> = (0..n).map(|s| run(&mixture(s, false), Stop::Never)).collect();
    let false_leaks = clean.iter().filter(|o| o.leak_at.is_some()).count();
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
        "clean: {false_leaks} of {n} called a leak; leaks due by {MAX_CYCLES}: {found} of {due_in_run} found by the \
         table's cycle ({late} later); stress called a leak: {:?}",
        STRESS.iter().zip(&stressed).collect::<Vec<_>>()
    );
    // Measured 2026-12-06: 2 of 10,000; 99.8% found by the table's cycle.
    assert!(false_leaks * 1000 <= n as usize, "{false_leaks} clean histories of {n} called a leak");
    assert!(found as f64 >= 0.99 * due_in_run as f64, "power: {found} of {due_in_run}");
}
