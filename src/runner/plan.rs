//! The options checked against each other before any file is made, and turned into the
//! harness's settings and the report's.

use std::path::Path;
use std::time::Duration;

use super::outcome::invalid;
use super::{
    Mode, RunError, RunOptions, DEFAULT_CHECK_CYCLES, DEFAULT_MAX_CYCLES_FACTOR, DEFAULT_SUPPRESSIONS,
    EARLY_LOOK_CYCLES, MIN_CYCLES,
};
use crate::fault::{FaultPlan, FaultPlanError, FAULTS_ENV};
use crate::harness::Lifecycle;
use crate::report::RunSettings;
use crate::verdict::Looks;
use crate::{harness::HarnessConfig, ledger::Depth};

/// The options checked against each other, before any file is made.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) depth: Depth,
    pub(super) cycles: u64,
    pub(super) max_cycles: Option<u64>,
    pub(super) sample_every: u64,
    pub(super) suppressions: crate::suppress::Suppressions,
    /// The baseline report and its path, when one was given.
    pub(super) baseline: Option<(crate::report::RunReport, String)>,
    /// Cycles before the first judged one, when not the analysis's default.
    pub(super) warmup_cycles: Option<usize>,
    /// The planned end, when it is not the cycles asked for (`#[leakcheck::test]` without
    /// `cycles`: its `max_cycles`): before it only exact signals call a leak.
    pub(super) planned_end: Option<u64>,
}

pub(super) fn validate(opts: &RunOptions) -> Result<Plan, RunError> {
    validate_from(opts, MIN_CYCLES)
}

/// [`validate`], with `min_cycles` the fewest cycles asked for that can decide.
pub(super) fn validate_from(opts: &RunOptions, min_cycles: u64) -> Result<Plan, RunError> {
    let soak = opts.mode == Mode::Soak;
    let depth = match opts.tracking {
        Some(d) => d,
        None => Depth::from_env()?.unwrap_or_default(),
    };
    if let Some(text) = &opts.faults {
        parse_plan(text)?;
    }
    if soak && opts.report.is_none() {
        return Err(invalid("soak", "needs a report directory (--report DIR), where the report is kept up to date"));
    }
    if soak && opts.duration.is_none() && opts.cycles.is_none() {
        return Err(invalid("soak", "needs --duration or --cycles"));
    }
    if opts.duration.is_some_and(|d| d.is_zero()) {
        return Err(invalid("--duration", "must be longer than zero"));
    }
    if opts.report_every == 0 {
        return Err(invalid("--report-every", "must be at least 1"));
    }
    if opts.sample_every == Some(0) {
        return Err(invalid("--sample-every", "must be at least 1"));
    }
    let cycles = match (opts.cycles, opts.duration) {
        (Some(c), _) => c,
        (None, Some(_)) => u64::MAX,
        (None, None) => DEFAULT_CHECK_CYCLES,
    };
    if cycles < min_cycles {
        return Err(invalid(
            "--cycles",
            format!("{cycles}: at least {min_cycles} cycles are needed for a verdict on memory"),
        ));
    }
    // How far `check` may go on while the verdict is inconclusive: the verdict says how many more
    // cycles would decide, and a check should give a verdict, not a shrug.
    let max_cycles = match (opts.max_cycles, soak || opts.duration.is_some()) {
        (Some(_), true) => {
            return Err(invalid("--max-cycles", "applies to check with --cycles, not to soak or --duration"))
        }
        (None, true) => None,
        (Some(m), false) if m < cycles => {
            return Err(invalid("--max-cycles", format!("{m}: less than --cycles {cycles}")))
        }
        (Some(m), false) => Some(m),
        (None, false) => Some(cycles.saturating_mul(DEFAULT_MAX_CYCLES_FACTOR)),
    };
    if let Some(path) = &opts.junit {
        super::ci::check_junit_path(path)?;
    }
    let sample_every = opts.sample_every.unwrap_or(if soak { 5 } else { 1 });
    let suppressions = suppressions_of(opts)?;
    if !(opts.baseline_margin.is_finite() && opts.baseline_margin >= 0.0) {
        return Err(invalid("--baseline-margin", format!("{}: a fraction of zero or more", opts.baseline_margin)));
    }
    let baseline = match &opts.baseline {
        Some(path) => {
            let report = crate::report::read(path)
                .map_err(|source| RunError::Report { context: format!("--baseline {}", path.display()), source })?;
            Some((report, path.display().to_string()))
        }
        None => None,
    };
    Ok(Plan { depth, cycles, max_cycles, sample_every, suppressions, baseline, warmup_cycles: None, planned_end: None })
}

/// The suppressions in force: the file asked for, else [`DEFAULT_SUPPRESSIONS`] in the current
/// directory when there is one, else none.
fn suppressions_of(opts: &RunOptions) -> Result<crate::suppress::Suppressions, RunError> {
    let default = Path::new(DEFAULT_SUPPRESSIONS);
    match &opts.suppressions {
        Some(path) => Ok(crate::suppress::Suppressions::from_path(path)?),
        None if default.is_file() => Ok(crate::suppress::Suppressions::from_path(default)?),
        None => Ok(crate::suppress::Suppressions::none()),
    }
}

fn parse_plan(text: &str) -> Result<FaultPlan, FaultPlanError> {
    if text.trim() == "none" {
        Ok(FaultPlan::none())
    } else {
        FaultPlan::parse(text)
    }
}

/// The plan in force: the option, else the environment, else the store's default; checked
/// against the store's points.
pub(super) fn plan_for<L: Lifecycle>(opts: &RunOptions, store: &L) -> Result<FaultPlan, RunError> {
    let text = match (&opts.faults, std::env::var(FAULTS_ENV)) {
        (Some(t), _) => t.clone(),
        (None, Ok(t)) => t,
        (None, Err(_)) => store.default_faults(),
    };
    let plan = parse_plan(&text)?;
    plan.validate(&store.fault_points())?;
    Ok(plan)
}

/// The settings the report records.
pub(super) fn settings_of<L: Lifecycle>(store: &L, opts: &RunOptions, plan: &Plan, faults: &FaultPlan) -> RunSettings {
    let info = store.describe();
    RunSettings {
        command: opts.mode.name().to_string(),
        store: info.name,
        store_settings: info.settings,
        cycles: plan.cycles,
        max_cycles: plan.max_cycles,
        duration_seconds: opts.duration.map(|d| d.as_secs_f64()),
        plan: faults.to_string(),
        seed: opts.seed,
        tracking: plan.depth.name().to_string(),
        sample_every: plan.sample_every,
        handle_quiet_ms: Some(handle_quiet_of(opts).as_millis() as u64),
        profile_lg_sample: opts.profile,
    }
}

/// The harness's settings: check stops once decided; a soak runs on, looked at as its cycles
/// double, without keeping every cycle's record.
pub(super) fn harness_config(opts: &RunOptions, plan: &Plan, faults: FaultPlan) -> HarnessConfig {
    let soak = opts.mode == Mode::Soak;
    let mut hc = HarnessConfig {
        cycles: plan.max_cycles.unwrap_or(plan.cycles),
        decide_after: (!soak).then_some(plan.cycles),
        // Check: the cycles asked for (or the attribute's `max_cycles`); a soak: its first look.
        planned_end: Some(plan.planned_end.unwrap_or(if soak { DEFAULT_CHECK_CYCLES } else { plan.cycles })),
        // Only where the cycles are check's default, and every cycle is not asked for.
        early_look: (!soak
            && opts.cycles.is_none()
            && opts.duration.is_none()
            && !opts.all_cycles
            && opts.profile.is_none())
        .then_some(EARLY_LOOK_CYCLES),
        // With --profile the stacks of the growth need the cycles past the warm-up: run them all.
        stop_on_exact_leak: !soak && !opts.all_cycles && opts.profile.is_none(),
        plan: faults,
        seed: opts.seed,
        sample_every: plan.sample_every,
        keep_records: !soak,
        handle_quiet: handle_quiet_of(opts),
        generations: opts.generations,
        suppressions: plan.suppressions.clone(),
        ..HarnessConfig::default()
    };
    if let Some(w) = plan.warmup_cycles {
        hc.analysis.warmup_cycles = w;
    }
    if soak {
        hc.analysis.looks = Looks::Doubling { first: DEFAULT_CHECK_CYCLES };
    }
    if opts.simulate_invisible_allocations {
        hc.allocator_check = crate::harness::simulated_invisible_allocations;
    }
    hc
}

/// The handle check's quiet period: `--handle-quiet`, else the harness's default.
fn handle_quiet_of(opts: &RunOptions) -> Duration {
    opts.handle_quiet.unwrap_or(crate::harness::DEFAULT_HANDLE_QUIET)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The early look is check's at its default cycles only: asked for cycles, a duration, every
    /// cycle or a heap profile, or a soak, it looks first where asked.
    #[test]
    fn check_looks_early_only_at_its_default_cycles() {
        let early = |opts: &RunOptions| {
            let plan = validate(opts).expect("valid options");
            harness_config(opts, &plan, FaultPlan::none()).early_look
        };
        let check = RunOptions::new(Mode::Check);
        assert_eq!(early(&check), Some(EARLY_LOOK_CYCLES));
        let mut asked = check.clone();
        asked.cycles = Some(DEFAULT_CHECK_CYCLES);
        assert_eq!(early(&asked), None);
        let mut for_a_while = check.clone();
        for_a_while.duration = Some(Duration::from_secs(60));
        assert_eq!(early(&for_a_while), None);
        let mut every = check.clone();
        every.all_cycles = true;
        assert_eq!(early(&every), None);
        let mut soak = RunOptions::new(Mode::Soak);
        soak.cycles = Some(1_000);
        soak.report = Some(std::env::temp_dir().join("leakcheck-plan-test-never-written"));
        assert_eq!(early(&soak), None);
    }
}
