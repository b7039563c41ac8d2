//! How small a native leak the bytes signal catches, how fast, and how often it cries wolf: the
//! sensitivity table of the verdict issue, for the fresh-directory loop and the reference store.

use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::fresh::FreshDbLoop;
use crate::planted::PlantedMalloc;
use crate::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::harness::{Harness, HarnessConfig, HarnessError, Lifecycle};
use leakcheck::verdict::Look;
use leakcheck::{Depth, Ledger, Verdict};

/// A store the table runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// A 2-column-family DB in a fresh directory per cycle ([`FreshDbLoop`]).
    FreshDb,
    /// The reference segmented store (2 tasks x 3 segments persisting across cycles).
    Reference,
}

impl Scenario {
    /// The scenario's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::FreshDb => "fresh-db",
            Scenario::Reference => "reference",
        }
    }
}

/// One row: a planted leak size and what it took to flag it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Detection {
    /// The scenario.
    pub scenario: Scenario,
    /// Bytes leaked per cycle through C malloc.
    pub leak_bytes_per_cycle: usize,
    /// Cycles after which the bytes signal first said "leak" (checked every 10 cycles), if
    /// within the limit.
    pub cycles_to_verdict: Option<u64>,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// The slope estimate at the verdict (or at the end), bytes per cycle.
    pub slope_per_cycle: Option<f64>,
}

/// Clean runs and how many were (wrongly) called leaking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FalsePositives {
    /// The scenario.
    pub scenario: Scenario,
    /// Clean runs.
    pub runs: u32,
    /// Cycles per run.
    pub cycles: u64,
    /// Runs whose bytes signal said "leak".
    pub false_positives: u32,
    /// Runs that stayed inconclusive.
    pub inconclusive: u32,
}

const BYTES_SIGNAL: leakcheck::Signal = leakcheck::Signal::UnexplainedBytes;

fn harness(cycles: u64, warmup: usize) -> Harness {
    // Integrity is not what is measured here; leave the reopen out of the cycle.
    let mut h = Harness::new(HarnessConfig { cycles, check_every: 0, ..HarnessConfig::default() });
    h.config.analysis.warmup_cycles = warmup;
    h
}

/// Warm-up cycles of each scenario: the fresh-DB loop keeps nothing across cycles and is flat
/// from its second cycle; the reference store's segments and caches fill over its first ones.
fn warmup_of(scenario: Scenario) -> usize {
    match scenario {
        Scenario::FreshDb => 10,
        Scenario::Reference => 20,
    }
}

/// Cycles between two looks at the statistical verdict while a run goes.
const CHECK_EVERY: usize = 5;

fn run<L: Lifecycle>(
    store: &mut L,
    ledger: &Ledger,
    cycles: u64,
    warmup: usize,
    stop_at_leak: bool,
) -> Result<(Option<u64>, Option<f64>, Verdict), HarnessError> {
    let h = harness(cycles, warmup);
    let analysis = h.config.analysis;
    let mut found = None;
    let mut slope = None;
    let mut looks = 0;
    let report = h.run_observed(store, ledger, |p| {
        if stop_at_leak && !p.record.retained_handles.is_empty() {
            // A leaked handle is exact: no statistics to wait for.
            found = Some(p.record.cycle + 1);
            return ControlFlow::Break(());
        }
        let n = p.samples.len();
        if stop_at_leak && n >= analysis.warmup_cycles + 2 * CHECK_EVERY && n % CHECK_EVERY == 0 {
            looks += 1;
            let v = p.analysis.judge(Look::interim(looks));
            if let Some(s) = v.signal(BYTES_SIGNAL) {
                slope = s.estimate.map(|e| e.value);
                if s.verdict == Verdict::Leak {
                    found = Some(p.record.cycle + 1);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    let bytes = report.verdict.signal(BYTES_SIGNAL);
    let verdict = bytes.map_or(Verdict::Inconclusive, |s| s.verdict);
    if found.is_none() {
        slope = bytes.and_then(|s| s.estimate).map(|e| e.value);
    }
    Ok((found, slope, verdict))
}

/// Runs the fresh-DB loop leaking one tracked Options handle per cycle until the ledger flags
/// it (the first cycle), for at most `max_cycles`.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn detect_forgotten_handle(dir: &Path, max_cycles: u64) -> Result<Detection, HarnessError> {
    let start = Instant::now();
    crate::create_store_dir(dir)?;
    let ledger = Ledger::with_depth(Depth::Counts);
    let mut store = PlantedMalloc::new(FreshDbLoop::new(dir, 100), 0, max_cycles).forgetting_options();
    let (found, slope, _) = run(&mut store, &ledger, max_cycles, warmup_of(Scenario::FreshDb), true)?;
    Ok(Detection {
        scenario: Scenario::FreshDb,
        leak_bytes_per_cycle: 0,
        cycles_to_verdict: found,
        seconds: start.elapsed().as_secs_f64(),
        slope_per_cycle: slope,
    })
}

/// Runs `scenario` with a planted leak of `leak` bytes per cycle for at most `max_cycles`,
/// stopping at the first leak verdict of the bytes signal.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn detect(scenario: Scenario, dir: &Path, leak: usize, max_cycles: u64) -> Result<Detection, HarnessError> {
    let start = Instant::now();
    let (found, slope, _) = run_scenario(scenario, dir, leak, max_cycles, true)?;
    Ok(Detection {
        scenario,
        leak_bytes_per_cycle: leak,
        cycles_to_verdict: found,
        seconds: start.elapsed().as_secs_f64(),
        slope_per_cycle: slope,
    })
}

/// Runs `scenario` clean `runs` times for `cycles` each and counts leak verdicts.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn false_positives(scenario: Scenario, dir: &Path, runs: u32, cycles: u64) -> Result<FalsePositives, HarnessError> {
    let mut fp = FalsePositives { scenario, runs, cycles, false_positives: 0, inconclusive: 0 };
    for i in 0..runs {
        let (_, _, verdict) = run_scenario(scenario, &dir.join(format!("clean-{i}")), 0, cycles, false)?;
        match verdict {
            Verdict::Leak => fp.false_positives += 1,
            Verdict::Inconclusive => fp.inconclusive += 1,
            Verdict::Clean => {}
        }
    }
    Ok(fp)
}

fn run_scenario(
    scenario: Scenario,
    dir: &Path,
    leak: usize,
    cycles: u64,
    stop_at_leak: bool,
) -> Result<(Option<u64>, Option<f64>, Verdict), HarnessError> {
    crate::create_store_dir(dir)?;
    let ledger = Ledger::with_depth(Depth::Counts);
    match scenario {
        Scenario::FreshDb => {
            let mut store = PlantedMalloc::new(FreshDbLoop::new(dir, 100), leak, cycles);
            run(&mut store, &ledger, cycles, warmup_of(scenario), stop_at_leak)
        }
        Scenario::Reference => {
            let inner =
                ReferenceStore::new(ReferenceConfig::new(dir), &ledger).map_err(|e| HarnessError::Setup(e.into()))?;
            let mut store = PlantedMalloc::new(inner, leak, cycles);
            run(&mut store, &ledger, cycles, warmup_of(scenario), stop_at_leak)
        }
    }
}
