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
    /// The verdict the run stopped on (or ended with): a leak, or with [`time_to_verdict`] a
    /// clean look; inconclusive when the cycles ran out first.
    #[serde(default = "inconclusive")]
    pub verdict: Verdict,
    /// With a clean verdict: the smallest continuing leak it rules out, bytes per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_out_per_cycle: Option<f64>,
    /// Complete runs made ([`time_to_verdict`] runs ever longer ones until one decides; 1
    /// otherwise).
    #[serde(default = "one")]
    pub runs: u32,
    /// Cycles of all those runs together.
    #[serde(default)]
    pub cycles_in_all: u64,
}

fn one() -> u32 {
    1
}

fn inconclusive() -> Verdict {
    Verdict::Inconclusive
}

impl Detection {
    fn of(scenario: Scenario, leak_bytes_per_cycle: usize, found: Found, started: Instant) -> Self {
        Detection {
            scenario,
            leak_bytes_per_cycle,
            cycles_to_verdict: found.cycles,
            seconds: started.elapsed().as_secs_f64(),
            slope_per_cycle: found.slope,
            verdict: found.verdict,
            rules_out_per_cycle: found.rules_out,
            runs: 1,
            cycles_in_all: found.cycles_run,
        }
    }
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
/// from its second cycle (a clean run's unexplained bytes are the same from its first sample;
/// 5 cycles leave room); the reference store's segments and caches fill over its first ones.
fn warmup_of(scenario: Scenario) -> usize {
    match scenario {
        Scenario::FreshDb => 5,
        Scenario::Reference => 20,
    }
}

/// Cycles between two looks at the statistical verdict while a run goes.
const CHECK_EVERY: usize = 5;

/// When a run stops before its last cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopAt {
    /// Never: a clean run for the false-positive rate.
    Never,
    /// At the first leak verdict: a retained handle, or the bytes signal at a look.
    Leak,
    /// At a retained handle only: otherwise the run goes to its end, where the whole verdict
    /// (the allocation generations' `retained_bytes` with it) is read.
    Handle,
}

/// What a run found.
struct Found {
    /// Cycles to the verdict it stopped on, if it stopped on one.
    cycles: Option<u64>,
    /// The bytes signal's slope there (or at the end), bytes per cycle.
    slope: Option<f64>,
    /// The verdict it stopped on, or the bytes signal's at the end.
    verdict: Verdict,
    /// A clean verdict's bound on a continuing leak, bytes per cycle.
    rules_out: Option<f64>,
    /// Cycles the run made.
    cycles_run: u64,
}

fn run<L: Lifecycle>(
    store: &mut L,
    ledger: &Ledger,
    cycles: u64,
    warmup: usize,
    stop: StopAt,
) -> Result<Found, HarnessError> {
    let h = harness(cycles, warmup);
    let analysis = h.config.analysis;
    let mut found = None;
    let mut slope = None;
    let mut decided = Verdict::Inconclusive;
    let mut looks = 0;
    let report = h.run_observed(store, ledger, |p| {
        if stop != StopAt::Never && !p.record.retained_handles.is_empty() {
            // A leaked handle is exact: no statistics to wait for.
            (found, decided) = (Some(p.record.cycle + 1), Verdict::Leak);
            return ControlFlow::Break(());
        }
        let n = p.samples.len();
        if stop == StopAt::Leak && n >= analysis.warmup_cycles + 2 * CHECK_EVERY && n % CHECK_EVERY == 0 {
            looks += 1;
            let v = p.analysis.judge(Look::interim(looks));
            if let Some(s) = v.signal(BYTES_SIGNAL) {
                slope = s.estimate.map(|e| e.value);
                if s.verdict == Verdict::Leak {
                    (found, decided) = (Some(p.record.cycle + 1), s.verdict);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    let cycles_run = report.cycles_run;
    if found.is_some() {
        // A leak rules nothing out.
        return Ok(Found { cycles: found, slope, verdict: decided, rules_out: None, cycles_run });
    }
    let bytes = report.verdict.signal(BYTES_SIGNAL);
    // A counter shown, not judged (the generations decided) bounds nothing the verdict states.
    let judged = bytes.filter(|s| !s.informational);
    let (verdict, cycles) = match stop {
        // The whole verdict at the run's end, the generations' retained_bytes with it.
        StopAt::Handle => {
            let v = report.verdict.verdict;
            (v, (v != Verdict::Inconclusive).then_some(cycles_run))
        }
        _ => (bytes.map_or(Verdict::Inconclusive, |s| s.verdict), None),
    };
    Ok(Found {
        cycles,
        slope: bytes.and_then(|s| s.estimate).map(|e| e.value),
        verdict,
        rules_out: judged.and_then(leakcheck::SignalVerdict::rules_out_per_cycle),
        cycles_run,
    })
}

/// The lengths of the complete runs [`time_to_verdict`] makes, shortest first: from the warm-up
/// and 2 more cycles (one judged cycle, and the youngest, which is never judged) one cycle longer
/// each time up to 16 judged cycles, then a quarter longer each time; the last is `max_cycles`.
fn run_lengths(warmup: u64, max_cycles: u64) -> Vec<u64> {
    let mut lengths = Vec::new();
    let mut n = warmup + 2;
    while n < max_cycles {
        lengths.push(n);
        n = if n < warmup + 16 { n + 1 } else { n + n.div_ceil(4) };
    }
    lengths.push(max_cycles);
    lengths
}

/// A leak planted in the fresh-DB loop for [`time_to_verdict`], each cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planted {
    /// None: the clean loop.
    Nothing,
    /// 1 KiB of C malloc.
    Malloc1k,
    /// A tracked Options forgotten (`mem::forget`): unreachable.
    ForgetOptions,
    /// A tracked Options parked in a process-wide registry: reachable to the end, never released.
    ParkOptions,
}

impl Planted {
    /// Every planted leak, in the order tables list them.
    pub const ALL: [Planted; 4] = [Planted::ForgetOptions, Planted::Malloc1k, Planted::ParkOptions, Planted::Nothing];

    /// The name on the command line (`time-to-verdict --leak NAME`, scripts/memcheck-loop).
    pub fn name(self) -> &'static str {
        match self {
            Planted::Nothing => "none",
            Planted::Malloc1k => "malloc-1k",
            Planted::ForgetOptions => "forget-options",
            Planted::ParkOptions => "park-options",
        }
    }

    /// The planted leak named `name`, if any.
    pub fn named(name: &str) -> Option<Planted> {
        Planted::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The shortest complete run of the fresh-DB loop with `planted` whose verdict is decided: runs of
/// ever more cycles (the warm-up and 2 more first, at most `max_cycles`), each judged whole at its
/// end as `check` judges one (the allocation generations' `retained_bytes` included), until one
/// says leak or clean. A retained handle is a leak at once, in the cycle that retained it.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn time_to_verdict(planted: Planted, dir: &Path, max_cycles: u64) -> Result<Detection, HarnessError> {
    let start = Instant::now();
    let bytes = if planted == Planted::Malloc1k { 1024 } else { 0 };
    let warmup = warmup_of(Scenario::FreshDb);
    let (mut runs, mut cycles_in_all) = (0, 0);
    let mut last = None;
    for cycles in run_lengths(warmup as u64, max_cycles.max(1)) {
        let run_dir = dir.join(format!("run-{cycles}"));
        crate::create_store_dir(&run_dir)?;
        let ledger = Ledger::with_depth(Depth::Counts);
        let store = PlantedMalloc::new(FreshDbLoop::new(&run_dir, 100), bytes, cycles);
        let mut store = match planted {
            Planted::ForgetOptions => store.forgetting_options(),
            Planted::ParkOptions => store.parking_options(),
            Planted::Nothing | Planted::Malloc1k => store,
        };
        let found = run(&mut store, &ledger, cycles, warmup, StopAt::Handle)?;
        runs += 1;
        cycles_in_all += found.cycles_run;
        let decided = found.cycles.is_some();
        last = Some(found);
        if decided {
            break;
        }
    }
    let found = last.unwrap_or(Found {
        cycles: None,
        slope: None,
        verdict: Verdict::Inconclusive,
        rules_out: None,
        cycles_run: 0,
    });
    let mut d = Detection::of(Scenario::FreshDb, bytes, found, start);
    (d.runs, d.cycles_in_all) = (runs, cycles_in_all);
    Ok(d)
}

/// Runs `scenario` with a planted leak of `leak` bytes per cycle for at most `max_cycles`,
/// stopping at the first leak verdict of the bytes signal.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn detect(scenario: Scenario, dir: &Path, leak: usize, max_cycles: u64) -> Result<Detection, HarnessError> {
    let start = Instant::now();
    let found = run_scenario(scenario, dir, leak, max_cycles, StopAt::Leak)?;
    Ok(Detection::of(scenario, leak, found, start))
}

/// Runs `scenario` clean `runs` times for `cycles` each and counts leak verdicts.
///
/// # Errors
/// When the scenario's directory cannot be prepared or watched.
pub fn false_positives(scenario: Scenario, dir: &Path, runs: u32, cycles: u64) -> Result<FalsePositives, HarnessError> {
    let mut fp = FalsePositives { scenario, runs, cycles, false_positives: 0, inconclusive: 0 };
    for i in 0..runs {
        let found = run_scenario(scenario, &dir.join(format!("clean-{i}")), 0, cycles, StopAt::Never)?;
        match found.verdict {
            Verdict::Leak => fp.false_positives += 1,
            // A run's verdict is never `NotMeasured`; counted as undecided if it were.
            Verdict::Inconclusive | Verdict::NotMeasured => fp.inconclusive += 1,
            Verdict::Clean => {}
        }
    }
    Ok(fp)
}

fn run_scenario(scenario: Scenario, dir: &Path, leak: usize, cycles: u64, stop: StopAt) -> Result<Found, HarnessError> {
    crate::create_store_dir(dir)?;
    let ledger = Ledger::with_depth(Depth::Counts);
    match scenario {
        Scenario::FreshDb => {
            let mut store = PlantedMalloc::new(FreshDbLoop::new(dir, 100), leak, cycles);
            run(&mut store, &ledger, cycles, warmup_of(scenario), stop)
        }
        Scenario::Reference => {
            let inner =
                ReferenceStore::new(ReferenceConfig::new(dir), &ledger).map_err(|e| HarnessError::Setup(e.into()))?;
            let mut store = PlantedMalloc::new(inner, leak, cycles);
            run(&mut store, &ledger, cycles, warmup_of(scenario), stop)
        }
    }
}
