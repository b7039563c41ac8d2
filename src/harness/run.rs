//! A run of cycles ([`Harness::run`]): samples, looks, the stop rules, and the report with the
//! record of what the cycles still hold once the store lets go.

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::cycle::{quiet_injected_panics, Cycler, SharedBaseline};
use super::generations::{GenerationsReport, MAX_GENERATIONS_LISTED};
use super::lifecycle::Lifecycle;
use super::{CycleRecord, HarnessConfig, HarnessError};
use crate::fault::Faults;
use crate::verdict::{Analysis, AnalysisConfig, CycleSample, Look, RunVerdict, Verdict};
use crate::{ledger::LeakReport, ledger::Ledger, probe::Probe, probe::Sample, signal::SignalId};

/// A run's result: every cycle, the samples and the verdicts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HarnessReport {
    /// Cycles run.
    pub cycles_run: u64,
    /// The fault plan, as text.
    pub plan: String,
    /// The seed.
    pub seed: u64,
    /// Before the first open.
    pub baseline: Sample,
    /// After the last close.
    pub last: Sample,
    /// One record per cycle.
    pub records: Vec<CycleRecord>,
    /// The settled samples (every `sample_every` cycles).
    pub samples: Vec<CycleSample>,
    /// The verdict per signal, integrity and swallowed close errors included.
    pub verdict: RunVerdict,
    /// The ledger's report after the last cycle.
    pub ledger: LeakReport,
    /// Why the run ended before its cycles, when it did.
    pub stopped: Option<Stopped>,
    /// The first cycle (0-based) the run's verdict was a leak: an exact signal's first residue,
    /// or the look that first judged a statistical leak.
    pub first_leak_cycle: Option<u64>,
    /// What each cycle's allocations still hold at the end ([`HarnessConfig::generations`]).
    #[serde(default)]
    pub generations: GenerationsReport,
    /// How each of [`HarnessConfig::suppressions`] was used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressions: Vec<crate::suppress::SuppressionUse>,
}

/// Why a run ended before its cycles.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stopped {
    /// An exact signal left a residue that outlived its settle
    /// ([`HarnessConfig::stop_on_exact_leak`]).
    ExactLeak {
        /// The signal.
        signal: SignalId,
        /// The cycle (0-based) the run stopped after.
        cycle: u64,
    },
    /// The observer stopped the run (an interrupt, the duration's end, an error).
    Asked {
        /// The cycle (0-based) the run stopped after.
        cycle: u64,
    },
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::ExactLeak { signal, cycle } => write!(
                f,
                "stopped after cycle {}: {signal} left a residue that outlived its settle, so the verdict is a leak \
                 whatever later cycles do",
                cycle + 1
            ),
            Stopped::Asked { cycle } => write!(f, "stopped after cycle {}", cycle + 1),
        }
    }
}

/// What the observer sees after each cycle.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The cycle just finished.
    pub record: &'a CycleRecord,
    /// Its sample, if one was taken.
    pub sample: Option<&'a CycleSample>,
    /// The samples kept so far (every one in a run that keeps its records; a bounded, evenly
    /// thinned set in a long soak).
    pub samples: &'a [CycleSample],
    /// The run's analysis so far: [`Analysis::current`] is the verdict between looks.
    pub analysis: &'a Analysis,
    /// The verdict of the look taken after this cycle, when one was due.
    pub judged: Option<&'a RunVerdict>,
    /// The first cycle the run's verdict was a leak, so far ([`HarnessReport::first_leak_cycle`]).
    pub first_leak_cycle: Option<u64>,
    /// What the judged cycles hold, as the allocation record's look after this cycle judged it by
    /// age, when one was taken (every few cycles once enough are judged, and at the counter's
    /// looks).
    pub retained: Option<&'a crate::verdict::Retained>,
}

/// The most samples a soak keeps in memory (for its plots): every sample is in samples.csv and
/// in the analysis; the kept ones are thinned evenly as the run grows.
pub(crate) const MAX_SOAK_SAMPLES: usize = 4096;

/// Samples kept, at most `max`: when full, every other one is dropped and only every `stride`-th
/// sample after it is kept, so the kept ones stay evenly spread over the run.
#[derive(Debug)]
struct Thinned {
    kept: Vec<CycleSample>,
    max: usize,
    stride: u64,
    seen: u64,
}

impl Thinned {
    fn new(max: usize) -> Self {
        Thinned { kept: Vec::new(), max: max.max(2), stride: 1, seen: 0 }
    }

    fn push(&mut self, s: CycleSample) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(s);
            if self.kept.len() >= self.max {
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    fn kept(&self) -> &[CycleSample] {
        &self.kept
    }

    fn into_vec(self) -> Vec<CycleSample> {
        self.kept
    }
}

/// Drives [`Lifecycle`]s.
#[derive(Debug, Clone, Default)]
pub struct Harness {
    /// Settings.
    pub config: HarnessConfig,
}

impl Harness {
    /// A harness with these settings.
    pub fn new(config: HarnessConfig) -> Self {
        Harness { config }
    }

    /// Runs the configured cycles.
    ///
    /// # Errors
    /// When the plan names an unknown point or the data directory cannot be watched.
    pub fn run<L: Lifecycle>(&self, store: &mut L, ledger: &Ledger) -> Result<HarnessReport, HarnessError> {
        self.run_observed(store, ledger, |_| ControlFlow::Continue(()))
    }

    /// Runs the configured cycles, calling `observe` after each; it may stop the run early.
    ///
    /// # Errors
    /// When the plan names an unknown point or the data directory cannot be watched.
    pub fn run_observed<L: Lifecycle>(
        &self,
        store: &mut L,
        ledger: &Ledger,
        mut observe: impl FnMut(&Progress<'_>) -> ControlFlow<()>,
    ) -> Result<HarnessReport, HarnessError> {
        let cfg = &self.config;
        cfg.plan.validate(&store.fault_points())?;
        quiet_injected_panics();
        let faults = Faults::new(&cfg.plan, cfg.seed);
        let probe = match store.data_dir() {
            Some(dir) => Probe::new().watch_dir(made(dir)?)?,
            None => Probe::new(),
        };
        let unavailable = (cfg.allocator_check)().err().map(|e| e.to_string());
        let mut run = Run::start(store, ledger, cfg, probe);
        run.bytes_visible = unavailable.is_none();
        for cycle in 0..cfg.cycles {
            if run.cycle(store, &faults, cycle, &mut observe).is_break() {
                break;
            }
        }
        Ok(run.finish(store, unavailable))
    }
}

/// The store's data directory, made (with its parents) when it does not exist yet: a store that
/// makes its directory in its first open is watched from before it.
pub(super) fn made(dir: PathBuf) -> Result<PathBuf, HarnessError> {
    match std::fs::create_dir_all(&dir) {
        Ok(()) => Ok(dir),
        Err(source) => Err(HarnessError::DataDir { path: dir, source }),
    }
}

/// A run in progress ([`Harness::run_observed`]): what it keeps of the cycles so far.
struct Run<'a> {
    c: Cycler<'a>,
    cfg: &'a HarnessConfig,
    judged_cfg: AnalysisConfig,
    probe: Probe,
    records: Vec<CycleRecord>,
    samples: Thinned,
    analysis: Analysis,
    /// The verdict of the last look.
    judged: Option<RunVerdict>,
    /// The record as its last look judged it.
    retained: Option<crate::verdict::Retained>,
    cycles_run: u64,
    stopped: Option<Stopped>,
    first_leak_cycle: Option<u64>,
    shared: SharedBaseline,
    baseline: Sample,
    /// Native allocations show in jemalloc's counters (and so in the generations' record).
    bytes_visible: bool,
}

/// `s` with RocksDB's figures for `store`.
fn with_rocksdb<L: Lifecycle>(store: &L, mut s: Sample) -> Sample {
    s.rocksdb = store.rocksdb_memory();
    s
}

impl<'a> Run<'a> {
    /// Before the first cycle: the baseline sample, and the harness's records made inside its
    /// bookkeeping.
    fn start<L: Lifecycle>(store: &L, ledger: &'a Ledger, cfg: &'a HarnessConfig, probe: Probe) -> Self {
        let mut judged_cfg = cfg.judged_analysis();
        judged_cfg.instances_per_cycle = store.instances_per_cycle();
        let mut c = Cycler::new(ledger, cfg);
        let records =
            c.bk.track(|| Vec::with_capacity(if cfg.keep_records { cfg.cycles.min(10_000) as usize } else { 0 }));
        let samples = c.bk.track(|| Thinned::new(if cfg.keep_records { usize::MAX } else { MAX_SOAK_SAMPLES }));
        let mut analysis = c.bk.track(|| Analysis::new(judged_cfg));
        if cfg.suppressions.names_functions() {
            // Stacks are named at looks to match them: the symbolizer's tables (tens of MB of debug
            // info, kept for the process's life) are read now, before the baseline.
            c.bk.track(crate::probe::symbols::warm);
        }
        let mut baseline = with_rocksdb(store, probe.settle(cfg.settle, None).sample);
        baseline.bookkeeping_bytes = c.gens.bookkeeping_bytes().or_else(|| c.bk.bytes());
        c.bk.track(|| analysis.baseline(&baseline));
        Run {
            c,
            cfg,
            judged_cfg,
            probe,
            records,
            samples,
            analysis,
            judged: None,
            retained: None,
            cycles_run: 0,
            stopped: None,
            first_leak_cycle: None,
            shared: SharedBaseline::default(),
            baseline,
            bytes_visible: false,
        }
    }

    /// One cycle, its sample when one is due, the record's look and the counter's look when due,
    /// and the observer; `Break` when the observer stops the run or check's verdict is decided.
    fn cycle<L: Lifecycle>(
        &mut self,
        store: &mut L,
        faults: &Faults,
        cycle: u64,
        observe: &mut impl FnMut(&Progress<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let cfg = self.cfg;
        let mut record = self.c.cycle(store, faults, cycle);
        let ledger = self.c.ledger;
        self.c.bk.track(|| {
            self.shared.observe(ledger, &mut record);
            self.analysis.record(&record.facts(ledger));
        });
        let sampled = cycle.is_multiple_of(cfg.sample_every.max(1)).then(|| self.sample(store, cycle, &record));
        self.cycles_run += 1;
        let (look, early, record_look) = self.looks(store, cycle, sampled.as_ref());
        let early_clean = early && self.early_look_is_clean();
        // Asked only while its answer is used: to stop, or until the first leak is known.
        let exact_leak =
            (cfg.stop_on_exact_leak || self.first_leak_cycle.is_none()).then(|| self.analysis.exact_leak()).flatten();
        let record_leak = self.c.gens.leak_found().is_some();
        let judged_leak = look.is_some() && self.judged.as_ref().is_some_and(|v| v.verdict == Verdict::Leak);
        if self.first_leak_cycle.is_none() && (exact_leak.is_some() || judged_leak || record_leak) {
            self.first_leak_cycle = Some(cycle);
        }
        // The observer runs outside the bookkeeping: what it keeps is not the harness's, and
        // must not be subtracted from the bytes judged.
        let progress = Progress {
            record: &record,
            sample: sampled.as_ref(),
            samples: self.samples.kept(),
            analysis: &self.analysis,
            judged: self.judged.as_ref().filter(|_| look.is_some() || early_clean),
            first_leak_cycle: self.first_leak_cycle,
            retained: self.retained.as_ref().filter(|_| record_look),
        };
        // Decided: a leak the record found (at any of its looks: a leak found stays found; it stops
        // the run as an exact signal's leak does, not with --all-cycles or --profile), or a look's
        // verdict, the record's joined to the counter's, that is a leak or clean.
        let decided = cfg.decide_after.is_some()
            && (early_clean
                || (record_leak && cfg.stop_on_exact_leak)
                || look.is_some()
                    && self.judged.as_ref().is_some_and(|v| matches!(v.verdict, Verdict::Leak | Verdict::Clean)));
        // The observer is the caller's monitoring (the runner's progress and reports), not the
        // store: what it allocates is not charged to the cycle's generation.
        let asked = crate::bookkeeping::bookkeeping(|| observe(&progress)).is_break();
        let exact = exact_leak.filter(|_| cfg.stop_on_exact_leak);
        let stop = asked || decided || exact.is_some();
        // A stop is recorded when it cuts the run short of its cycles; check's decision at its
        // look is its rule, not a stop.
        if stop && cycle + 1 < cfg.cycles {
            self.stopped = match exact {
                _ if asked => Some(Stopped::Asked { cycle }),
                Some(v) => Some(Stopped::ExactLeak { signal: v.signal, cycle }),
                None => None,
            };
        }
        self.c.bk.track(|| {
            if let Some(s) = sampled {
                self.samples.push(s);
            }
            if cfg.keep_records {
                self.records.push(record);
            }
        });
        if stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The looks due after `cycle`, taken: the counter's look (`Some` when due), whether
    /// check's early look is due, and whether the record was looked at (at its own looks and at
    /// the counter's: what the judged cycles hold, by age).
    fn looks<L: Lifecycle>(
        &mut self,
        store: &L,
        cycle: u64,
        sampled: Option<&CycleSample>,
    ) -> (Option<Look>, bool, bool) {
        let cfg = self.cfg;
        let look = cfg.look_after(&self.judged_cfg, cycle + 1);
        let early = look.is_none() && cfg.decide_after.is_some() && cfg.early_look == Some(cycle + 1);
        let warmup = self.judged_cfg.warmup_cycles as u64;
        let record_look = look.is_some() || early || record_look_due(cycle + 1, warmup);
        if record_look {
            let reported = sampled.map_or_else(|| store.rocksdb_memory(), |s| s.sample.rocksdb);
            self.look_at_the_record(reported.as_ref(), false, false);
        }
        if let Some(look) = look {
            let (analysis, gens, retained) = (&mut self.analysis, &self.c.gens, self.retained.as_ref());
            let mut v = self.c.bk.track(|| with_the_record(analysis.look(look), analysis, gens, retained, warmup));
            let planned = cfg.planned_end();
            if !look.last && cycle + 1 < planned {
                self.c.bk.track(|| v.hold_statistical_leaks(planned - (cycle + 1)));
            }
            // The verdict it replaces is dropped inside the bookkeeping too.
            self.c.bk.track(|| self.judged = Some(v));
        }
        (look, early, record_look)
    }

    /// `check`'s early look ([`HarnessConfig::early_look`]): judged as the first look is, the record
    /// joined, and kept as the run's verdict only when it is clean with nothing in question.
    fn early_look_is_clean(&mut self) -> bool {
        let warmup = self.judged_cfg.warmup_cycles as u64;
        let (analysis, gens, retained) = (&self.analysis, &self.c.gens, self.retained.as_ref());
        let quiet_record = retained.is_some_and(crate::verdict::Retained::nothing_old_late);
        if !quiet_record || analysis.count_rose().is_some() {
            return false;
        }
        let v = self.c.bk.track(|| with_the_record(analysis.judge(Look::interim(1)), analysis, gens, retained, warmup));
        let clean = v.verdict == Verdict::Clean;
        // A verdict not kept is dropped inside the bookkeeping, as one replaced is.
        self.c.bk.track(|| {
            if clean {
                self.judged = Some(v);
            }
        });
        clean
    }

    /// Reads and judges the record now ([`RunGenerations::look`](super::generations::RunGenerations::look)),
    /// when this run's native allocations are recorded.
    fn look_at_the_record(&mut self, reported: Option<&crate::probe::RocksDbMemory>, named: bool, last: bool) {
        if !self.bytes_visible || !self.c.gens.recorded() {
            return;
        }
        let done = self.cycles_run;
        let index = match self.cfg.look_after(&self.judged_cfg, done) {
            Some(look) => look.index,
            None => self.judged_cfg.looks.index(done, last),
        };
        let look = super::generations::RecordLook {
            from: self.judged_cfg.warmup_cycles as u64,
            suppressions: &self.cfg.suppressions,
            reported,
            named,
            alpha: self.judged_cfg.signal_alpha(index),
            callable: last || done >= self.cfg.planned_end(),
        };
        let gens = &mut self.c.gens;
        let r = self.c.bk.track(|| gens.look(look));
        self.c.bk.track(|| self.retained = r);
    }

    /// The settled sample after `record`'s cycle, given to the analysis. A sample that holds
    /// more files than the baseline makes later settles impatient (a leak is established).
    fn sample<L: Lifecycle>(&mut self, store: &L, cycle: u64, record: &CycleRecord) -> CycleSample {
        let settled = self.probe.settled_sample_towards(self.c.patience.sample_settle(self.cfg), &self.baseline);
        if settled.sample.holds_more_files_than(&self.baseline) {
            self.c.patience.patient = false;
        }
        let mut s = with_rocksdb(store, settled.sample);
        s.bookkeeping_bytes = self.c.gens.bookkeeping_bytes().or_else(|| self.c.bk.bytes());
        if self.bytes_visible {
            let gens = &mut self.c.gens;
            self.c.bk.track(|| gens.sample(cycle, s.rocksdb.as_ref()));
        }
        let sample = self.c.bk.track(|| CycleSample::new(cycle, s, record.retained_handles.clone(), settled.settled));
        self.c.bk.track(|| self.analysis.sample(&sample));
        sample
    }

    /// After the last cycle: the last sample, the record's last look while the store still holds
    /// what it keeps across cycles, and the last look (the one the run stopped at, judged again as
    /// the last, which can only turn growth evidenced below the budget from inconclusive to clean;
    /// else one more); then the store lets go (frees no longer count as turnover) and the record
    /// is read again, named, for the report: a leak found at a look stays found.
    fn finish<L: Lifecycle>(mut self, store: &mut L, unavailable: Option<String>) -> HarnessReport {
        let cfg = self.cfg;
        let mut last = with_rocksdb(store, self.probe.settle(cfg.settle, None).sample);
        last.bookkeeping_bytes = self.c.gens.bookkeeping_bytes().or_else(|| self.c.bk.bytes());
        if unavailable.is_none() {
            self.look_at_the_record(last.rocksdb.as_ref(), false, true);
        }
        let warmup = self.judged_cfg.warmup_cycles as u64;
        let mut verdict = crate::bookkeeping::bookkeeping(|| self.last_look(&last, unavailable.clone()));
        // The ledger as the run left it (declared-shared handles still listed), then the store lets
        // go of what it keeps across cycles, and what the cycles still hold after that is theirs.
        let ledger = self.c.bk.track(|| self.c.ledger.report());
        let mut retained = None;
        if unavailable.is_none() && self.c.gens.recorded() {
            // What the cycles held when the counter was last read, where its leaks would be.
            let (analysis, gens) = (&self.analysis, &self.c.gens);
            self.c.bk.track(|| record_holds(analysis, gens, &mut verdict, warmup));
            self.c.gens.stop_judging();
            if catch_unwind(AssertUnwindSafe(|| store.let_go())).is_err() {
                self.c.gens.let_go_panicked();
            }
            self.probe.settle(cfg.settle, None);
            // A declared-shared handle still alive (a cache the store did not let go of) is noted.
            let shared =
                self.c.bk.track(|| self.c.ledger.report().declared_shared.iter().map(|g| g.count).sum::<u64>());
            if shared > 0 {
                self.c.gens.shared_still_alive(shared);
            }
            self.look_at_the_record(store.rocksdb_memory().as_ref(), true, true);
            retained = self.c.bk.track(|| {
                let end = self.retained.take().map(|mut r| {
                    r.after_let_go = true;
                    r
                });
                // A leak found at a look stays as that look read it, with the sites' series as
                // the end read them (a look while the run goes names no frames).
                match (self.c.gens.leak_found().cloned(), end) {
                    (Some(mut found), Some(end)) => {
                        found.plotted = end.plotted;
                        Some(found)
                    }
                    (found, end) => found.or(end),
                }
            });
        }
        // What the generations hold once the last cycle settled; everything after is the harness's.
        let (generations, suppressed) = self.c.bk.track(|| match &unavailable {
            // Native allocations not visible (or treated so): the generations judge nothing either.
            Some(reason) => {
                let notice = format!("allocation generations unused: {reason}");
                (GenerationsReport { notice: Some(notice), ..GenerationsReport::default() }, 0)
            }
            None => {
                (self.c.gens.report(MAX_GENERATIONS_LISTED), self.c.gens.suppressed_held_bytes(&self.cfg.suppressions))
            }
        });
        verdict.allow_suppressed_bytes(suppressed);
        crate::bookkeeping::bookkeeping(|| self.report(last, verdict, ledger, generations, retained))
    }

    /// The last look, after the last sample.
    fn last_look(&mut self, last: &Sample, unavailable: Option<String>) -> RunVerdict {
        self.analysis.last(last);
        let done = self.cycles_run;
        let index = match self.cfg.look_after(&self.judged_cfg, done) {
            Some(look) => look.index,
            None => self.judged_cfg.looks.index(done, true),
        };
        let mut verdict = self.analysis.look(Look::last(index));
        if let Some(reason) = unavailable {
            verdict.mark_bytes_unavailable(reason);
        }
        verdict
    }

    /// The report, with the record's verdict added to the last look's.
    fn report(
        self,
        last: Sample,
        mut verdict: RunVerdict,
        ledger: LeakReport,
        generations: GenerationsReport,
        retained: Option<crate::verdict::Retained>,
    ) -> HarnessReport {
        let suppressions = self.cfg.suppressions.uses(&ledger, retained.as_ref(), self.cycles_run);
        if let Some(r) = retained {
            verdict.add_retained(crate::verdict::SignalVerdict::of_retained(r));
        } else if self.c.gens.incomplete() {
            let (signal, rule) =
                (crate::signal::Signal::RetainedBytes.into(), crate::verdict::Rule::Exact { expected: 0.0 });
            verdict.add_retained(crate::verdict::SignalVerdict::unmeasured(
                signal,
                rule,
                crate::verdict::Unmeasured::RecordIncomplete,
            ));
        }
        HarnessReport {
            cycles_run: self.cycles_run,
            plan: self.cfg.plan.to_string(),
            seed: self.cfg.seed,
            baseline: self.baseline,
            last,
            records: self.records,
            samples: self.samples.into_vec(),
            verdict,
            ledger,
            stopped: self.stopped,
            first_leak_cycle: self.first_leak_cycle,
            generations,
            suppressions,
        }
    }
}

/// `v` (a look's verdict) with the record's: what the counter's leaks and undecided growth would
/// leave in the cycles they grew over, and `retained_bytes` as the record's last look judged it
/// (or the look that found a leak).
fn with_the_record(
    mut v: RunVerdict,
    analysis: &Analysis,
    gens: &super::generations::RunGenerations,
    retained: Option<&crate::verdict::Retained>,
    warmup: u64,
) -> RunVerdict {
    if let Some(r) = retained {
        record_holds(analysis, gens, &mut v, warmup);
        v.add_retained(crate::verdict::SignalVerdict::of_retained(gens.leak_found().unwrap_or(r).clone()));
    }
    v
}

/// Cycles between the record's own looks (besides the counter's), once enough cycles are judged
/// for a clean record to rule something out: a leak stops check at the look that finds it.
const RECORD_LOOK_EVERY: u64 = 5;

/// Whether the record's own look is due after `done` cycles.
fn record_look_due(done: u64, warmup: u64) -> bool {
    let first = warmup + crate::verdict::retained::min_judged_cycles() + 1;
    done >= first && (done - first).is_multiple_of(RECORD_LOOK_EVERY)
}

/// Notes, on each leak and each undecided growth of the counter's growth rule, what the cycles it
/// grew over (those the record judges, from `warmup`) hold that the record's last look did not
/// explain as state, less what the stacks a suppression names hold.
fn record_holds(analysis: &Analysis, gens: &super::generations::RunGenerations, verdict: &mut RunVerdict, warmup: u64) {
    let Some(to) = gens.last_judged() else {
        return;
    };
    for (signal, first, last, would) in analysis.leaks_would_hold(verdict, warmup.min(to), to) {
        if let Some(bytes) = gens.unexplained_bytes(first, last) {
            let holds =
                crate::verdict::RecordHolds { from_cycle: first, to_cycle: last, bytes, leak_would_hold: would };
            verdict.note_record_holds(&signal, holds);
        }
    }
    consumers_explain(gens, verdict);
}

/// What the reported consumers account for of the byte counters' growth (leaks and undecided
/// growth), as the record measured their sites within their bounds: all of it in RocksDB's
/// accounting (`rocksdb_explained_bytes`), its rounding in the allocator's bytes beyond it
/// (`unexplained_bytes`: RocksDB charges what it asked for, jemalloc counts the class it rounded
/// to). A growth it covers beyond the budget is shown, not judged, with the figure.
fn consumers_explain(gens: &super::generations::RunGenerations, verdict: &mut RunVerdict) {
    use crate::signal::Signal;
    let asked: Vec<(SignalId, f64, crate::verdict::Growth)> = verdict
        .signals
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Leak | Verdict::Inconclusive) && !s.informational)
        .filter_map(|s| {
            let share = match s.family() {
                Signal::RocksdbExplainedBytes => 1.0,
                Signal::UnexplainedBytes => crate::probe::CACHE_ROUNDING,
                _ => return None,
            };
            Some((s.signal.clone(), share, s.growth?))
        })
        .collect();
    for (signal, share, g) in asked {
        let grown = gens.explained_growth(g.from_cycle, g.to_cycle);
        // A known leak a suppression accepts is the allocator's bytes beyond RocksDB's accounting.
        let suppressed = if share < 1.0 { gens.suppressed_growth(g.from_cycle, g.to_cycle) } else { 0.0 };
        if grown.is_empty() && suppressed == 0.0 {
            continue;
        }
        let explained = crate::verdict::ConsumersExplain {
            consumers: grown.iter().map(|(k, _)| *k).collect(),
            bytes: share * grown.iter().map(|(_, b)| b).sum::<f64>() + suppressed,
            suppressed_bytes: suppressed,
            from_cycle: g.from_cycle,
            to_cycle: g.to_cycle,
        };
        verdict.explain_by_consumers(&signal, explained);
    }
}
