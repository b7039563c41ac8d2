//! Synthetic series get the right verdicts under the growth rule: flat with noise, steady leaks
//! (down to a few bytes a cycle given cycles enough), a one-time step, a staircase, bursts, a
//! sawtooth (periodic compaction), an outlier burst; sparse sampling; exact signals; the
//! estimate of cycles still needed. Pure computation: tests may run in parallel.

use leakcheck::report::parse_samples_csv;
use leakcheck::verdict::{analyze, Analysis, AnalysisConfig, CycleSample, Look, Looks};
use leakcheck::{Signal, SignalVerdict, Verdict};

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

const BASE: f64 = 50e6;

/// Samples every `every` cycles of `cycles`, the bytes `BASE + f(cycle)` plus noise (made as a
/// samples CSV and read back: what it leaves out is absent, as in a recorded run).
fn series(cycles: u64, every: u64, seed: u64, sd: f64, f: impl Fn(u64) -> f64) -> Vec<CycleSample> {
    let mut noise = Noise(seed);
    let mut csv = String::from("cycle,allocated_bytes,explained_bytes,bookkeeping_bytes\n");
    for c in (0..cycles).step_by(every as usize) {
        csv.push_str(&format!("{c},{},0,0\n", (BASE + f(c) + noise.gauss(sd)).max(0.0).round() as u64));
    }
    parse_samples_csv(&csv).expect("samples")
}

fn bytes(samples: &[CycleSample], cfg: &AnalysisConfig) -> SignalVerdict {
    let v = analyze(samples, None, None, cfg).signal(Signal::UnexplainedBytes).expect("bytes signal").clone();
    eprintln!(
        "{:?} per cycle {:?} growth {:?} retention {:?} more {:?}",
        v.verdict, v.estimate, v.growth, v.retention, v.more_cycles_needed
    );
    v
}

/// `check`'s looks (200, then every 10 while inconclusive, up to `max`), the samples folded as
/// the harness folds them: the verdict and the cycles it took.
fn checked(samples: &[CycleSample], max: u64) -> (SignalVerdict, u64) {
    let cfg = AnalysisConfig::default().looking_from(200);
    let mut a = Analysis::new(cfg);
    let mut fed = 0;
    let mut end = 200;
    loop {
        while fed < samples.len() && samples[fed].cycle < end {
            a.sample(&samples[fed]);
            fed += 1;
        }
        let last = end >= max;
        let v = a.look(Look { index: cfg.looks.index(end, last), last });
        if v.verdict != Verdict::Inconclusive || last {
            return (v.signal(Signal::UnexplainedBytes).expect("bytes").clone(), end);
        }
        end += 10;
    }
}

#[test]
fn flat_with_noise_is_clean_for_many_seeds() {
    for seed in 0..20 {
        let v = bytes(&series(500, 1, seed, 2_000.0, |_| 0.0), &AnalysisConfig::default());
        assert_eq!(v.verdict, Verdict::Clean, "seed {seed}");
        assert!(v.rules_out_per_cycle().is_some_and(|r| r < 100.0), "{v:?}");
    }
}

#[test]
fn a_linear_leak_is_a_leak_at_its_rate() {
    for (seed, rate) in [(1, 128.0), (2, 256.0), (3, 1024.0), (4, 16384.0)] {
        let v = bytes(&series(500, 1, seed, 2_000.0, |c| rate * c as f64), &AnalysisConfig::default());
        assert_eq!(v.verdict, Verdict::Leak, "{rate} B/cycle");
        let per_cycle = v.estimate.expect("estimate").value;
        assert!((per_cycle - rate).abs() < rate * 0.25 + 20.0, "{rate} B/cycle estimated as {per_cycle}");
    }
}

/// The growth rule's point: a steady leak far below the old 64 B-a-cycle tolerance is found once
/// the run is long enough, by check on flat data and by a soak on noisy data.
#[test]
fn small_steady_leaks_are_found_given_cycles() {
    // 16 B a cycle on exactly flat bytes: check goes on past 200 cycles (growth is evidenced)
    // and calls it once the later half's growth passes the 4 KiB budget.
    let (v, at) = checked(&series(800, 1, 0, 0.0, |c| 16.0 * c as f64), 800);
    assert_eq!(v.verdict, Verdict::Leak, "{v:?}");
    assert!((500..=560).contains(&at), "16 B/cycle decided at {at}");
    // 4 B a cycle with 1 KiB of noise, a sample every 5th cycle, judged as a soak's last look.
    let cfg = AnalysisConfig { looks: Looks::Doubling { first: 200 }, ..Default::default() };
    let v = bytes(&series(50_000, 5, 3, 1_024.0, |c| 4.0 * c as f64), &cfg);
    assert_eq!(v.verdict, Verdict::Leak, "{v:?}");
    // Flat data judged clean rules out less the longer the run.
    let short =
        bytes(&series(500, 1, 4, 1_024.0, |_| 0.0), &AnalysisConfig::default()).rules_out_per_cycle().expect("clean");
    let long =
        bytes(&series(5_000, 1, 4, 1_024.0, |_| 0.0), &AnalysisConfig::default()).rules_out_per_cycle().expect("clean");
    assert!(long < short / 5.0, "rules out {short} B/cycle at 500 cycles, {long} at 5000");
}

#[test]
fn a_one_time_step_is_not_a_leak() {
    let v = bytes(&series(500, 1, 5, 2_000.0, |c| if c >= 120 { 4e6 } else { 0.0 }), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Clean);
    let at = v.retention.expect("retention").at_cycle;
    assert!((116..=124).contains(&at), "step found at {at}");
}

#[test]
fn a_staircase_is_a_leak() {
    // 64 KiB every 50 cycles: about 1300 B/cycle, in steps (an arena or a buffer that grows).
    let v = bytes(&series(500, 1, 6, 2_000.0, |c| (c / 50) as f64 * 65536.0), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Leak);
}

/// 32 KiB kept in a few cycles of many (a snapshot held now and then): repeated jumps are growth,
/// however flat the data between them.
#[test]
fn bursts_are_a_leak() {
    let bursts = [64u64, 133, 171, 242, 330, 391];
    let (v, at) =
        checked(&series(800, 1, 0, 0.0, |c| 32_768.0 * bursts.iter().filter(|&&b| c >= b).count() as f64), 800);
    assert_eq!(v.verdict, Verdict::Leak, "{v:?}");
    assert!(at <= 400, "decided at {at}");
}

#[test]
fn a_sawtooth_like_periodic_compaction_is_not_a_leak() {
    // Grows 1 MB over 40 cycles, then drops back (a memtable filling and flushing).
    let v = bytes(&series(500, 1, 7, 5_000.0, |c| (c % 40) as f64 * 25_000.0), &AnalysisConfig::default());
    assert_ne!(v.verdict, Verdict::Leak);
}

#[test]
fn an_outlier_burst_is_not_a_leak() {
    let v = bytes(
        &series(500, 1, 8, 2_000.0, |c| if (300..306).contains(&c) { 8e6 } else { 0.0 }),
        &AnalysisConfig::default(),
    );
    assert_eq!(v.verdict, Verdict::Clean);
}

#[test]
fn a_leak_riding_on_a_sawtooth_is_still_a_leak() {
    let v = bytes(
        &series(500, 1, 9, 5_000.0, |c| (c % 40) as f64 * 25_000.0 + 1024.0 * c as f64),
        &AnalysisConfig::default(),
    );
    assert_eq!(v.verdict, Verdict::Leak);
}

#[test]
fn too_few_cycles_near_the_budget_is_inconclusive_with_an_estimate() {
    let v = bytes(&series(80, 1, 10, 20_000.0, |c| 100.0 * c as f64), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Inconclusive);
    assert!(v.more_cycles_needed.is_some_and(|m| m > 0), "{v:?}");
    // The estimate extrapolates the current (noisy) growth, so it is a guide, not a promise; a
    // run long enough does decide.
    let v = bytes(&series(2000, 1, 10, 20_000.0, |c| 100.0 * c as f64), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Leak);
}

#[test]
fn exact_signals_flag_any_residue_from_its_first_cycle() {
    let mut samples = series(50, 1, 11, 0.0, |_| 0.0);
    let v = analyze(&samples, None, None, &AnalysisConfig::default());
    assert!(v.signal(Signal::LiveHandlesOf).is_none());
    for (i, s) in samples.iter_mut().enumerate() {
        if i >= 3 {
            s.retained_handles.insert("Options".into(), (i / 3) as u64);
        }
    }
    let v = analyze(&samples, None, None, &AnalysisConfig::default());
    let h = v.signal_named("live_handles.Options").expect("handle signal");
    assert_eq!(h.verdict, Verdict::Leak);
    assert_eq!(h.residue.map(|r| (r.max, r.first_cycle)), Some((16.0, Some(3))));
}

#[test]
fn long_runs_keep_a_bounded_analysis_and_the_rate() {
    let v = bytes(&series(200_000, 1, 12, 20_000.0, |c| 30.0 * c as f64), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Leak);
    let per_cycle = v.estimate.expect("estimate").value;
    assert!((per_cycle - 30.0).abs() < 3.0, "{per_cycle}");
}

#[test]
fn sparse_samples_give_growth_per_cycle() {
    // A sample every 5th cycle of a 300 B/cycle leak.
    let samples = series(1000, 5, 13, 2_000.0, |c| 300.0 * c as f64);
    let v = bytes(&samples, &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Leak);
    let per_cycle = v.estimate.expect("estimate").value;
    assert!((per_cycle - 300.0).abs() < 15.0, "{per_cycle} B/cycle");
    assert_eq!(v.cycles, samples.len() - 4, "the warm-up (cycles 0-15) left out");
}

#[test]
fn below_the_evidence_floor_a_statistical_signal_neither_clean_nor_leak() {
    // 25 cycles sampled every 5th: after a 20-cycle warm-up one sample is left. A steep line
    // would be called a leak from three points; the floor asks for more cycles instead.
    let v = bytes(&series(25, 5, 14, 0.0, |c| 50_000.0 * c as f64), &AnalysisConfig::default());
    assert_eq!(v.verdict, Verdict::Inconclusive);
    assert!(v.more_cycles_needed.is_some_and(|m| m >= 25), "{v:?}");
    // No warm-up, 20 points over 100 cycles: the floor is met and the leak is called.
    let cfg = AnalysisConfig { warmup_cycles: 0, ..Default::default() };
    assert_eq!(bytes(&series(100, 5, 14, 0.0, |c| 50_000.0 * c as f64), &cfg).verdict, Verdict::Leak);
}
