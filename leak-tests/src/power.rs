//! The power curve: for steady leaks of 4 B to 1 KiB a cycle and for bursts, how many cycles the
//! growth rule takes to call a leak, on a quiet and on a noisy store of the clean catalog. The runs
//! are simulated from recorded clean runs ([`crate::recorded`]) with the leak planted into their
//! unexplained bytes, and judged exactly as `check` judges (looks at 200 cycles, then every 10
//! while inconclusive, each at its share of the false-positive rate), with `--max-cycles` as long
//! as the table asks.

use leakcheck::verdict::{Analysis, AnalysisConfig, CycleSample, Look, Verdict};
use serde::{Deserialize, Serialize};

use crate::recorded::{clean_run, Leak, Noise, Rng, Simulation};

/// The quiet store (flat but for rare steps) and the noisy one (a DB kept open: its floor moves
/// by kilobytes).
pub const STORES: [&str; 2] = ["reference-check", "long-lived-db"];
/// The steady leaks of the curve, in bytes per cycle.
pub const STEADY: [f64; 7] = [4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 1024.0];
/// Cycles check runs by default, and most while inconclusive.
const CHECK: (u64, u64) = (200, 800);

/// One row of the curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PowerRow {
    /// The recorded store the noise is drawn from.
    pub store: String,
    /// The leak planted (`16 B/cycle`, `32 KiB in 1% of cycles`).
    pub leak: String,
    /// Simulated runs.
    pub runs: usize,
    /// Runs called a leak within `max_cycles`.
    pub caught: usize,
    /// Runs called a leak within check's default 800 cycles.
    pub caught_by_check: usize,
    /// Runs called clean (a miss).
    pub called_clean: usize,
    /// The median of the cycles to the leak verdict, over the runs that were called a leak.
    pub median_cycles: Option<u64>,
    /// The 90th percentile of them.
    pub p90_cycles: Option<u64>,
}

/// Folds `samples` as `check` would, looking at 200 cycles and every 10 after while inconclusive,
/// up to `max_cycles`: the verdict and the cycles it took.
pub fn check_like(samples: &[CycleSample], cfg: AnalysisConfig, max_cycles: u64) -> (Verdict, u64) {
    let cfg = cfg.looking_from(CHECK.0);
    let mut a = Analysis::new(cfg);
    let mut fed = 0;
    let mut end = CHECK.0;
    loop {
        while fed < samples.len() && samples[fed].cycle < end {
            a.sample(&samples[fed]);
            fed += 1;
        }
        let last = end >= max_cycles || fed >= samples.len();
        let v = a.look(Look { index: cfg.looks.index(end, last), last });
        if v.verdict != Verdict::Inconclusive || last {
            return (v.verdict, end);
        }
        end += 10;
    }
}

fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    (!sorted.is_empty()).then(|| sorted[((sorted.len() - 1) as f64 * p).round() as usize])
}

/// The curve: every store and leak, `runs` simulated runs each, judged up to `max_cycles`. Runs
/// two at a time (the machines have two cores).
pub fn curve(runs: usize, max_cycles: u64, seed: u64) -> Vec<PowerRow> {
    let mut leaks: Vec<(String, Leak)> = STEADY.iter().map(|&b| (format!("{b} B/cycle"), Leak::Steady(b))).collect();
    leaks.push(("32 KiB in 1% of cycles".to_string(), Leak::Bursts { bytes: 32768.0, rate: 0.01 }));
    let jobs: Vec<(&str, String, Leak)> =
        STORES.iter().flat_map(|s| leaks.iter().map(move |(n, l)| (*s, n.clone(), *l))).collect();
    leakcheck::workspace::in_parallel(jobs, 2, |(store, name, leak)| {
        let recorded = clean_run(store, 100).unwrap_or_else(|| panic!("{store} is a recorded clean run"));
        let sim = Simulation { cycles: max_cycles as usize, with_prefix: true, noise: Noise::None, leak };
        let mut rng = Rng(seed ^ (name.len() as u64) << 32);
        let (mut caught, mut by_check, mut clean) = (0, 0, 0);
        let mut cycles = Vec::new();
        for _ in 0..runs {
            let samples = recorded.simulate(&sim, &mut rng);
            let (v, at) = check_like(&samples, AnalysisConfig::default(), max_cycles);
            match v {
                Verdict::Leak => {
                    caught += 1;
                    by_check += usize::from(at <= CHECK.1);
                    cycles.push(at);
                }
                Verdict::Clean => clean += 1,
                // A run's verdict is never `NotMeasured`; counted as undecided if it were.
                Verdict::Inconclusive | Verdict::NotMeasured => {}
            }
        }
        cycles.sort_unstable();
        PowerRow {
            store: store.to_string(),
            leak: name,
            runs,
            caught,
            caught_by_check: by_check,
            called_clean: clean,
            median_cycles: percentile(&cycles, 0.5),
            p90_cycles: percentile(&cycles, 0.9),
        }
    })
}
