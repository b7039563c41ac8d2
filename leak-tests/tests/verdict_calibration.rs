//! Calibration of the false-positive rate: exactly the judgement `check` and `soak` make, on
//! simulated clean runs whose noise is drawn from recorded clean runs (`leak-tests/data/clean-runs/`,
//! samples.csv files of the reference store and the clean-store catalog, re-recorded with
//! `scripts/record-clean-runs`).
//!
//! The simulation is a moving-block bootstrap of residuals ([`leak_tests::recorded`]), its first
//! 100 cycles as recorded, with noise added that the recorded runs do not show (AR(1) with rho
//! 0.95, a random walk) where a test asks for it.
//!
//! `check`: judged at 200 cycles, then every 10 while inconclusive, up to 800, each look at its
//! share of the run's false-positive rate. `soak`: a sample every 5th cycle, looked at 200, 400
//! and 800 cycles.
//! Asserted: the share of simulated runs called "leak" is within the configured rate (at most
//! twice it over 1,000 runs, which a true rate at the bound exceeds with probability below 0.1%).
//!
//! Pure computation (no process-wide signal is read): safe beside other tests.

use leak_tests::recorded::{clean_runs, Noise, Recorded, Rng, Simulation};
use leakcheck::verdict::{Analysis, AnalysisConfig, Look, Verdict};

/// Cycles of a simulated run taken as recorded.
const PREFIX: usize = 100;
const CHECK_CYCLES: usize = 200;
const MAX_CYCLES: usize = 800;
const RUNS: usize = 1000;

/// What the simulated runs of one recorded run came to.
#[derive(Default)]
struct Tally {
    runs: usize,
    check_leak: usize,
    check_clean: usize,
    soak_leak: usize,
    soak_clean: usize,
    looks: usize,
    named: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, t: &Tally) {
        self.runs += t.runs;
        self.check_leak += t.check_leak;
        self.check_clean += t.check_clean;
        self.soak_leak += t.soak_leak;
        self.soak_clean += t.soak_clean;
        self.looks += t.looks;
        for (k, v) in &t.named {
            *self.named.entry(k.clone()).or_default() += v;
        }
    }
}

fn simulate_runs(r: &Recorded, n: usize, seed: u64, null: Null) -> Tally {
    let cfg = AnalysisConfig::default();
    let check_cfg = cfg.looking_from(CHECK_CYCLES as u64);
    let mut rng = Rng(seed);
    let mut t = Tally { runs: n, ..Tally::default() };
    let sim = Simulation {
        cycles: MAX_CYCLES,
        with_prefix: null.prefix,
        noise: null.noise,
        leak: if null.drift > 0.0 {
            leak_tests::recorded::Leak::Steady(null.drift)
        } else {
            leak_tests::recorded::Leak::None
        },
    };
    for _ in 0..n {
        let samples = r.simulate(&sim, &mut rng);
        assert_eq!(samples.len(), MAX_CYCLES);
        // check: look at 200, then every 10 while inconclusive (or only the first look), the
        // samples folded as the harness folds them.
        let last = if null.first_look_only { CHECK_CYCLES } else { MAX_CYCLES };
        let mut a = Analysis::new(check_cfg);
        let mut fed = 0;
        let mut end = CHECK_CYCLES;
        let v = loop {
            t.looks += 1;
            for s in &samples[fed..end] {
                a.sample(s);
            }
            fed = end;
            let v = a.look(Look { index: check_cfg.looks.index(end as u64, end >= last), last: end >= last });
            if v.verdict != Verdict::Inconclusive || end >= last {
                break v;
            }
            end += 10;
        };
        if v.verdict == Verdict::Leak {
            t.check_leak += 1;
            for s in v.leaking_signals() {
                *t.named.entry(format!("check {}: {s} at cycle {end}", r.name)).or_default() += 1;
            }
        }
        t.check_clean += usize::from(v.verdict == Verdict::Clean);
        // soak: every 5th cycle, judged as the cycles double (200, 400) and at the end (800).
        let soak_cfg =
            AnalysisConfig { looks: leakcheck::verdict::Looks::Doubling { first: CHECK_CYCLES as u64 }, ..cfg };
        let mut a = Analysis::new(soak_cfg);
        let mut soak = None;
        for s in samples.iter().filter(|s| s.cycle % 5 == 0) {
            a.sample(s);
            let done = s.cycle + 5;
            let last = done as usize >= MAX_CYCLES;
            if soak_cfg.looks.due(done) || last {
                let v = a.look(Look { index: soak_cfg.looks.index(done, last), last });
                if v.verdict == Verdict::Leak && soak.is_none() {
                    soak = Some(v.clone());
                }
                if last {
                    soak.get_or_insert(v);
                }
            }
        }
        let v = soak.expect("a soak look");
        if v.verdict == Verdict::Leak {
            t.soak_leak += 1;
            for s in v.leaking_signals() {
                *t.named.entry(format!("soak {}: {s}", r.name)).or_default() += 1;
            }
        }
        t.soak_clean += usize::from(v.verdict == Verdict::Clean);
    }
    t
}

/// How simulated runs differ from the recorded ones.
#[derive(Debug, Clone, Copy)]
struct Null {
    /// The first cycles taken as recorded before the residual blocks.
    prefix: bool,
    /// Unexplained bytes added per cycle (from cycle 0).
    drift: f64,
    /// Noise added to the unexplained bytes.
    noise: Noise,
    /// Judge `check` at its first look only.
    first_look_only: bool,
    /// Which judgements the bound is asserted on.
    judged: Judged,
}

/// Which of `check` and `soak` a null is for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Judged {
    Both,
    Check,
    Soak,
}

/// Simulates RUNS runs from the recorded ones under `null`, prints the tallies and asserts that
/// `check` and `soak` called at most twice the configured rate of them leaks.
fn calibrate(null: Null) {
    let runs = clean_runs(PREFIX);
    assert!(runs.len() >= 5, "too few recorded clean runs: {}", runs.len());
    let rate = AnalysisConfig::default().false_positive_rate;
    let share = |i: usize| RUNS / runs.len() + usize::from(i < RUNS % runs.len());
    // Two threads (the machines have two cores), each taking every other recorded run.
    let tallies: Vec<(usize, Tally)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let runs = &runs;
                scope.spawn(move || {
                    (0..runs.len())
                        .filter(|i| i % 2 == w)
                        .map(|i| (i, simulate_runs(&runs[i], share(i), 20_261_130 + i as u64, null)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("simulation thread")).collect()
    });
    let mut all = Tally::default();
    let mut tallies = tallies;
    tallies.sort_by_key(|(i, _)| *i);
    for (i, t) in &tallies {
        eprintln!(
            "{:<24} {:>4} simulated runs: check {} leak, {} clean; soak {} leak, {} clean",
            runs[*i].name, t.runs, t.check_leak, t.check_clean, t.soak_leak, t.soak_clean
        );
        all.add(t);
    }
    let total = all.runs;
    eprintln!("{null:?}");
    eprintln!(
        "check: {}/{total} leak, {}/{total} clean ({:.1} looks a run); soak: {}/{total} leak, {}/{total} clean; configured rate {rate}",
        all.check_leak,
        all.check_clean,
        all.looks as f64 / total as f64,
        all.soak_leak,
        all.soak_clean,
    );
    for (k, v) in &all.named {
        eprintln!("  {k}: {v}");
    }
    assert_eq!(total, RUNS);
    let bound = (2.0 * rate * total as f64).ceil() as usize;
    if null.judged != Judged::Soak {
        assert!(
            all.check_leak <= bound,
            "check called {} of {total} clean runs a leak (bound {bound})",
            all.check_leak
        );
    }
    if null.judged != Judged::Check {
        assert!(all.soak_leak <= bound, "soak called {} of {total} clean runs a leak (bound {bound})", all.soak_leak);
    }
}

/// No trend past a realistic start: what a clean store's runs look like. Exactly `check`'s
/// looks (200, then every 10 while inconclusive, up to 800) and `soak`'s (200, 400, 800).
#[test]
fn simulated_clean_runs_are_called_leaks_within_the_configured_rate() {
    calibrate(Null { prefix: true, drift: 0.0, noise: Noise::None, first_look_only: false, judged: Judged::Both });
}

/// The least favourable clean store: unexplained bytes growing by exactly the budget over the
/// later half of `check`'s first look (4 KiB over 90 cycles), the whole run drawn from residual
/// blocks: the interval's own error rate, under the autocorrelation of real runs, at the look
/// where a clean run at the boundary is decided or goes on (61% of the rate).
#[test]
fn at_the_budget_checks_first_look_stays_within_the_rate() {
    let cfg = AnalysisConfig::default();
    let later_half = (CHECK_CYCLES - 1 - cfg.warmup_cycles) as f64 / 2.0;
    let drift = cfg.budgets.bytes.expect("a byte budget") / later_half;
    calibrate(Null { prefix: false, drift, noise: Noise::None, first_look_only: true, judged: Judged::Check });
}

/// The same at a soak's last look (4 KiB over the later 390 cycles of 800): a growth that is
/// within the budget at its earlier looks and exactly at it at the last.
#[test]
fn at_the_budget_a_soaks_last_look_stays_within_the_rate() {
    let cfg = AnalysisConfig::default();
    let later_half = (MAX_CYCLES - 5 - cfg.warmup_cycles) as f64 / 2.0;
    let drift = cfg.budgets.bytes.expect("a byte budget") / later_half;
    calibrate(Null { prefix: false, drift, noise: Noise::None, first_look_only: true, judged: Judged::Soak });
}

/// Strongly autocorrelated noise (AR(1), rho 0.95, stationary deviation 3.2 KiB) on top of the
/// recorded runs: `check`'s every look and a soak's stay within the rate.
#[test]
fn autocorrelated_noise_stays_within_the_rate() {
    calibrate(Null {
        prefix: true,
        drift: 0.0,
        noise: Noise::Ar { rho: 0.95, sd: 1024.0 },
        first_look_only: false,
        judged: Judged::Both,
    });
}

/// Memory that wanders like a random walk (steps of 256 B, 5 KiB over a check's later half):
/// `check`'s every look and a soak's stay within the rate.
#[test]
fn random_walk_noise_stays_within_the_rate() {
    calibrate(Null {
        prefix: true,
        drift: 0.0,
        noise: Noise::Walk { sd: 256.0 },
        first_look_only: false,
        judged: Judged::Both,
    });
}
