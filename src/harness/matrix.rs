//! The automatic fault matrix ([`Harness::fault_matrix`]): every fault point a clean cycle
//! passes, failed alone and in pairs, each plan's cycle checked and its bytes judged against clean
//! cycles.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::cycle::{quiet_injected_panics, record_clean, Bookkeeping, Cycler};
use super::lifecycle::Lifecycle;
use super::{CycleRecord, Harness, HarnessConfig};
use crate::fault::{matrix_plans, FaultPlan, Faults};
use crate::verdict::{mean_shift, shift_verdict, Rule, SignalVerdict, Verdict};
use crate::{ledger::Ledger, probe::Probe, signal::Signal, signal::SignalId};

impl Harness {
    /// The automatic fault matrix: one recording cycle finds every fault point a clean cycle
    /// passes; then, after the warm-up's clean cycles, each plan of `matrix_plans` (each point
    /// failing always, on its 2nd call, or panicking; each pair failing) runs
    /// `matrix_repeats` times, each time followed by a clean cycle. Every cycle is checked for
    /// zero retained handles, no swallowed close error and intact data; and each plan's bytes:
    /// the change in unexplained bytes over its cycle and the clean one after it (so memory a
    /// failure holds only until the next cycle does not count) against the same change over two
    /// clean cycles (a pair after every third plan), as a Hodges-Lehmann shift per cycle under
    /// the plan, a leak above `tolerances.bytes_per_firing` at the run's error rate split over
    /// the plans.
    pub fn fault_matrix<L: Lifecycle>(&self, store: &mut L, ledger: &Ledger) -> MatrixReport {
        quiet_injected_panics();
        let cfg = &self.config;
        // The bytes need no directory; a directory that cannot be watched only loses the
        // per-directory counts, which the matrix does not judge.
        let probe =
            store.data_dir().and_then(|d| Probe::new().watch_dir(super::run::made(d).ok()?).ok()).unwrap_or_default();
        let bytes_visible = (cfg.allocator_check)().is_ok();
        let recorder = Faults::recording(&FaultPlan::none(), cfg.seed);
        let mut c = Cycler::new(ledger, cfg);
        let discovery = c.cycle(store, &recorder, 0);
        let points: BTreeSet<String> = recorder.passed().into_keys().collect();
        let plans = matrix_plans(&points);
        let clean = Faults::new(&FaultPlan::none(), cfg.seed);
        let mut cycle = 1;
        let mut run = |store: &mut L, faults: &Faults, c: &mut Cycler<'_>| {
            let record = c.cycle(store, faults, cycle);
            cycle += 1;
            record
        };
        let level = |store: &L, bk: &Bookkeeping| -> Option<f64> {
            let mut s = probe.settle(cfg.settle, None).sample;
            s.rocksdb = store.rocksdb_memory();
            s.bookkeeping_bytes = bk.bytes();
            s.unexplained_bytes().filter(|_| bytes_visible).map(|v| v as f64)
        };
        // Per plan: its first cycle, replaced by the first unclean one (so the entry is clean
        // exactly when the record it keeps is).
        let mut kept: Vec<Option<CycleRecord>> = vec![None; plans.len()];
        let mut changes: Vec<Vec<f64>> =
            c.bk.track(|| vec![Vec::with_capacity(cfg.matrix_repeats as usize); plans.len()]);
        let mut reference: Vec<f64> =
            c.bk.track(|| Vec::with_capacity(cfg.matrix_repeats as usize * plans.len() / 3 + 1));
        let mut warmup_unclean = None;
        let judged = cfg.matrix_repeats >= MIN_MATRIX_REPEATS;
        if judged {
            for _ in 0..cfg.analysis.warmup_cycles {
                let r = run(store, &clean, &mut c);
                keep_if_unclean(&mut c.bk, &mut warmup_unclean, r);
            }
        }
        for round in 0..cfg.matrix_repeats.max(1) {
            for (i, plan) in plans.iter().enumerate() {
                let before = level(store, &c.bk);
                // The plan's state and the records are the harness's memory: made, kept or
                // dropped inside its bookkeeping, before the level is read.
                let faults = c.bk.track(|| Faults::new(plan, cfg.seed.wrapping_add(u64::from(round))));
                let record = run(store, &faults, &mut c);
                let after_clean = run(store, &clean, &mut c);
                c.bk.track(|| {
                    drop(faults);
                    for r in [record, after_clean] {
                        if kept[i].as_ref().is_none_or(|k| record_clean(k) && !record_clean(&r)) {
                            kept[i] = Some(r);
                        }
                    }
                });
                let after = level(store, &c.bk);
                if let Some(d) = before.zip(after).map(|(b, a)| a - b) {
                    c.bk.track(|| changes[i].push(d));
                }
                if judged && i % 3 == 2 {
                    let before = level(store, &c.bk);
                    for _ in 0..2 {
                        let r = run(store, &clean, &mut c);
                        keep_if_unclean(&mut c.bk, &mut warmup_unclean, r);
                    }
                    if let Some(d) = before.zip(level(store, &c.bk)).map(|(b, a)| a - b) {
                        c.bk.track(|| reference.push(d));
                    }
                }
            }
        }
        let measured = Measured { judged, changes, reference };
        let entries = matrix_entries(cfg, &plans, &measured, kept, &discovery);
        MatrixReport { points: points.into_iter().collect(), discovery, entries, clean_cycles_unclean: warmup_unclean }
    }
}

/// What the fault matrix measured: per plan, the change in unexplained bytes over each of its
/// cycles and the clean one after; the same over pairs of clean cycles; whether bytes are judged.
struct Measured {
    judged: bool,
    changes: Vec<Vec<f64>>,
    reference: Vec<f64>,
}

/// One entry per plan: the record it keeps (its first unclean cycle, else its first) and its
/// bytes against the clean pairs', at the run's error rate split over the plans.
fn matrix_entries(
    cfg: &HarnessConfig,
    plans: &[FaultPlan],
    m: &Measured,
    mut kept: Vec<Option<CycleRecord>>,
    discovery: &CycleRecord,
) -> Vec<MatrixEntry> {
    let alpha = cfg.analysis.signal_alpha(1) / plans.len().max(1) as f64;
    let tolerance = cfg.analysis.tolerances.bytes_per_firing;
    let enough = |v: &[f64]| v.len() >= MIN_MATRIX_REPEATS as usize;
    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let bytes = (m.judged && enough(&m.changes[i]) && enough(&m.reference))
                .then(|| matrix_bytes(&plan.to_string(), &m.changes[i], &m.reference, tolerance, alpha));
            let record = kept[i].take().unwrap_or_else(|| discovery.clone());
            let leaks_bytes = bytes.as_ref().is_some_and(|b| b.verdict == Verdict::Leak);
            MatrixEntry {
                plan: plan.to_string(),
                clean: record_clean(&record) && !leaks_bytes,
                record,
                bytes,
                repeats: cfg.matrix_repeats.max(1),
            }
        })
        .collect()
}

/// A plan's bytes per cycle beyond clean cycles (the difference of the means, Welch's interval)
/// against `tolerance`.
fn matrix_bytes(plan: &str, changes: &[f64], reference: &[f64], tolerance: f64, alpha: f64) -> SignalVerdict {
    let mut v = SignalVerdict::undecided(SignalId::member(Signal::MatrixBytes, plan), Rule::Shift { tolerance, alpha });
    v.cycles = changes.len();
    if let Some(e) = mean_shift(changes, reference, alpha) {
        v.estimate = Some(e);
        v.verdict = shift_verdict(e, tolerance);
    }
    v
}

/// Keeps `r` in `slot` if it is the first unclean one, else drops it, inside the bookkeeping.
fn keep_if_unclean(bk: &mut Bookkeeping, slot: &mut Option<CycleRecord>, r: CycleRecord) {
    bk.track(|| {
        if !record_clean(&r) && slot.is_none() {
            *slot = Some(r);
        }
    });
}

/// The fewest repeats of a plan (and clean pairs) that the matrix judges bytes from.
pub const MIN_MATRIX_REPEATS: u32 = 5;

/// One plan of the fault matrix and what its cycle left behind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MatrixEntry {
    /// The plan.
    pub plan: String,
    /// Zero retained handles, no swallowed close error and intact data after every cycle of the
    /// plan and the clean cycle after it, and its bytes not a leak.
    pub clean: bool,
    /// The first cycle that was not clean, else the plan's first cycle.
    pub record: CycleRecord,
    /// Bytes per cycle under the plan against clean cycles (None: too few repeats, or native
    /// allocations not visible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<SignalVerdict>,
    /// Cycles run under the plan.
    #[serde(default)]
    pub repeats: u32,
}

/// The fault matrix's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MatrixReport {
    /// Fault points a clean cycle passes.
    pub points: Vec<String>,
    /// The clean recording cycle.
    pub discovery: CycleRecord,
    /// One entry per plan.
    pub entries: Vec<MatrixEntry>,
    /// The first clean cycle (of the warm-up or a reference pair) that was not clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_cycles_unclean: Option<CycleRecord>,
}

impl MatrixReport {
    /// Plans whose cycle was not clean.
    pub(crate) fn failures(&self) -> Vec<&MatrixEntry> {
        self.entries.iter().filter(|e| !e.clean).collect()
    }

    /// The matrix's verdict: clean when the discovery cycle and every entry are.
    pub fn verdict(&self) -> Verdict {
        if record_clean(&self.discovery) && self.clean_cycles_unclean.is_none() && self.failures().is_empty() {
            Verdict::Clean
        } else {
            Verdict::Leak
        }
    }
}
