//! Synthetic series get the right verdicts: flat with noise, a linear leak, a one-time step, a
//! staircase, a sawtooth (periodic compaction), an outlier burst; exact signals; the estimate of
//! cycles still needed. Pure computation: tests may run in parallel.

use leakcheck::verdict::{judge, judge_at, theil_sen, Evidence, Rule};
use leakcheck::{Signal, Verdict};

/// splitmix64 + Box-Muller: reproducible Gaussian noise without a dependency.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn gauss(&mut self, sd: f64) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

const N: usize = 500;
const BASE: f64 = 50e6;
const RULE: Rule = Rule::Statistical { tolerance_per_cycle: 64.0, confidence: 0.99 };

fn series(seed: u64, sd: f64, f: impl Fn(usize) -> f64) -> Vec<Option<f64>> {
    let mut noise = Noise(seed);
    (0..N).map(|i| Some(BASE + f(i) + noise.gauss(sd))).collect()
}

fn verdict_of(values: &[Option<f64>]) -> leakcheck::SignalVerdict {
    let v = judge(Signal::AllocatedBytes, values, RULE, 20);
    eprintln!("{:?} slope {:?} [{:?}, {:?}] step {:?}", v.verdict, v.slope_per_cycle, v.lower, v.upper, v.step_at_cycle);
    v
}

#[test]
fn flat_with_noise_is_clean_for_many_seeds() {
    for seed in 0..20 {
        let v = verdict_of(&series(seed, 20_000.0, |_| 0.0));
        assert_eq!(v.verdict, Verdict::Clean, "seed {seed}");
    }
}

#[test]
fn a_linear_leak_is_a_leak_at_its_rate() {
    for (seed, rate) in [(1, 128.0), (2, 256.0), (3, 1024.0), (4, 16384.0)] {
        let v = verdict_of(&series(seed, 20_000.0, |i| rate * i as f64));
        assert_eq!(v.verdict, Verdict::Leak, "{rate} B/cycle");
        let slope = v.slope_per_cycle.expect("slope");
        assert!((slope - rate).abs() < rate * 0.25 + 20.0, "{rate} B/cycle estimated as {slope}");
    }
}

#[test]
fn a_one_time_step_is_not_a_leak() {
    let v = verdict_of(&series(5, 20_000.0, |i| if i >= 240 { 4e6 } else { 0.0 }));
    assert_eq!(v.verdict, Verdict::Clean);
    let step = v.step_at_cycle.expect("step found");
    assert!((235..=245).contains(&step), "step found at {step}");
}

#[test]
fn a_staircase_is_a_leak() {
    // 64 KiB every 50 cycles: about 1300 B/cycle, in steps (an arena or a buffer that grows).
    let v = verdict_of(&series(6, 2_000.0, |i| (i / 50) as f64 * 65536.0));
    assert_eq!(v.verdict, Verdict::Leak);
}

#[test]
fn a_sawtooth_like_periodic_compaction_is_not_a_leak() {
    // Grows 1 MB over 40 cycles, then drops back (a memtable filling and flushing).
    let v = verdict_of(&series(7, 5_000.0, |i| (i % 40) as f64 * 25_000.0));
    assert_ne!(v.verdict, Verdict::Leak);
}

#[test]
fn an_outlier_burst_is_not_a_leak() {
    let v = verdict_of(&series(8, 20_000.0, |i| if (300..306).contains(&i) { 8e6 } else { 0.0 }));
    assert_eq!(v.verdict, Verdict::Clean);
}

#[test]
fn a_leak_riding_on_a_sawtooth_is_still_a_leak() {
    let v = verdict_of(&series(9, 5_000.0, |i| (i % 40) as f64 * 25_000.0 + 1024.0 * i as f64));
    assert_eq!(v.verdict, Verdict::Leak);
}

#[test]
fn too_few_cycles_near_the_tolerance_is_inconclusive_with_an_estimate() {
    let mut noise = Noise(10);
    let values: Vec<Option<f64>> = (0..60).map(|i| Some(BASE + 100.0 * i as f64 + noise.gauss(20_000.0))).collect();
    let v = judge(Signal::AllocatedBytes, &values, RULE, 10);
    assert_eq!(v.verdict, Verdict::Inconclusive);
    let more = v.more_cycles_needed.expect("an estimate");
    eprintln!("{v:?}");
    assert!(more > 0, "{v:?}");
    // The estimate extrapolates the current (noisy) slope, so it is a guide, not a promise; a run
    // long enough does decide.
    let longer: Vec<Option<f64>> =
        (0..2000).map(|i| Some(BASE + 100.0 * i as f64 + noise.gauss(20_000.0))).collect();
    let decided = judge(Signal::AllocatedBytes, &longer, RULE, 10);
    eprintln!("{decided:?}");
    assert_eq!(decided.verdict, Verdict::Leak);
}

#[test]
fn exact_signals_flag_any_residue_from_its_first_cycle() {
    let rule = Rule::Exact { expected: 0.0 };
    let clean = vec![Some(0.0); 50];
    assert_eq!(judge_at(Signal::LiveHandlesOf, Some("Options"), &(0..clean.len() as u64).collect::<Vec<_>>(), &clean, rule, 0, Evidence::default()).verdict, Verdict::Clean);
    let mut leaked: Vec<Option<f64>> = (0..50).map(|i| Some((i / 3) as f64)).collect();
    leaked[1] = None; // unreadable cycles are skipped, not zeros
    let v = judge_at(Signal::LiveHandlesOf, Some("Options"), &(0..leaked.len() as u64).collect::<Vec<_>>(), &leaked, rule, 0, Evidence::default());
    assert_eq!(v.verdict, Verdict::Leak);
    assert_eq!(v.first_cycle_with_residue, Some(3));
    assert_eq!(v.max_residue, Some(16.0));
}

#[test]
fn long_runs_are_block_averaged() {
    let mut noise = Noise(11);
    let values: Vec<f64> = (0..20_000).map(|i| BASE + 300.0 * i as f64 + noise.gauss(20_000.0)).collect();
    let s = theil_sen(&values, 0.99).expect("slope");
    assert_eq!(s.block, 20);
    assert!((s.slope_per_cycle - 300.0).abs() < 5.0, "{s:?}");
}

#[test]
fn sparse_samples_give_the_slope_per_cycle_and_gaps_stay_at_their_cycle() {
    let mut noise = Noise(12);
    // A sample every 5th cycle of a 300 B/cycle leak, with two samples unreadable.
    let cycles: Vec<u64> = (0..N as u64).step_by(5).collect();
    let mut values: Vec<Option<f64>> = cycles.iter().map(|&c| Some(BASE + 300.0 * c as f64 + noise.gauss(2_000.0))).collect();
    values[30] = None;
    values[31] = None;
    let v = judge_at(Signal::AllocatedBytes, None, &cycles, &values, RULE, 20, Evidence::default());
    assert_eq!(v.verdict, Verdict::Leak);
    let slope = v.slope_per_cycle.expect("slope");
    assert!((slope - 300.0).abs() < 15.0, "{slope} B/cycle");
    assert_eq!(v.cycles, cycles.len() - 4 - 2, "warm-up (cycles 0-15) and the gaps left out");
}

#[test]
fn below_the_evidence_floor_a_statistical_signal_neither_clean_nor_leak() {

    // 25 cycles sampled every 5th: after a 20-cycle warm-up one sample is left. A steep line
    // would be called a leak from three points; the floor asks for more cycles instead.
    let cycles: Vec<u64> = (0..25).step_by(5).collect();
    let values: Vec<Option<f64>> = cycles.iter().map(|&c| Some(BASE + 50_000.0 * c as f64)).collect();
    let v = judge_at(Signal::AllocatedBytes, None, &cycles, &values, RULE, 20, Evidence::default());
    assert_eq!(v.verdict, Verdict::Inconclusive);
    let more = v.more_cycles_needed.expect("cycles needed");
    assert!(more >= 30, "{more}");
    // No warm-up, 12 points over 60 cycles: the floor is met and the leak is called.
    let cycles: Vec<u64> = (0..60).step_by(5).collect();
    let values: Vec<Option<f64>> = cycles.iter().map(|&c| Some(BASE + 50_000.0 * c as f64)).collect();
    assert_eq!(judge_at(Signal::AllocatedBytes, None, &cycles, &values, RULE, 0, Evidence::default()).verdict, Verdict::Leak);
    // Exact signals are not held back: a residue is a fact.
    let exact = Rule::Exact { expected: 0.0 };
    assert_eq!(judge_at(Signal::LiveHandles, None, &[0, 1], &[Some(0.0), Some(1.0)], exact, 0, Evidence::default()).verdict, Verdict::Leak);
}
