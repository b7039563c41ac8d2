//! One cycle: open, work and close run with panics caught, the handle settle, the integrity
//! check, and the record of what the cycle left ([`CycleRecord`]); the harness's own bookkeeping
//! kept apart from the store's memory.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use serde::{Deserialize, Serialize};

use super::generations::RunGenerations;
use super::lifecycle::{CycleCtx, Integrity, Lifecycle};
use super::release::ReleaseWatch;
use super::HarnessConfig;
use crate::fault::{Faults, InjectedPanic};
use crate::probe::jemalloc::ThreadCounters;
use crate::verdict::CycleFacts;
use crate::{ledger::HandleKind, ledger::Ledger, ledger::Settle};

/// How one phase of a cycle ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "message", rename_all = "lowercase")]
pub enum Phase {
    /// It returned normally.
    Ok,
    /// It returned an error.
    Error(String),
    /// It panicked.
    Panic(String),
    /// It did not run (open failed).
    Skipped,
}

/// What happened in one cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleRecord {
    /// 0-based cycle number.
    pub cycle: u64,
    /// Open's outcome.
    pub open: Phase,
    /// Work's outcome.
    pub work: Phase,
    /// Close's outcome.
    pub close: Phase,
    /// Fault points that fired, with how many times each.
    pub faults_fired: BTreeMap<String, u64>,
    /// Undeclared live handles per kind after the cycle (exact, checked every cycle).
    pub retained_handles: BTreeMap<String, u64>,
    /// Swallowed close errors recorded by the ledger during the cycle.
    pub swallowed_close_errors: usize,
    /// Caches and write buffer managers alive while the store was open (after work, before
    /// close) that were not declared shared. A cache per instance instead of one shared cache
    /// multiplies with tasks x segments, the amplification of KAFKA-20616; it is released at
    /// close, so only a look while the store is open sees it.
    pub unshared_caches_open: u64,
    /// Where those caches were created (`file:line:column`), when the ledger records sites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unshared_cache_sites: Vec<String>,
    /// Live handles declared shared beyond those live after the first cycle. Sharing is not a
    /// licence to grow: a store that declares one more shared cache per task or per cycle and
    /// never prunes them leaks behind the declaration. Exact: must stay 0.
    #[serde(default)]
    pub declared_shared_growth: u64,
    /// Where the handles declared shared after the first cycle were created, with their count
    /// (`src/store.rs:42:17 (x12)`), when the ledger records sites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_shared_growth_sites: Vec<String>,
    /// The store's integrity check.
    pub integrity: Integrity,
}

impl CycleRecord {
    /// What the verdict's exact signals and per-firing attribution read of the record.
    /// `ledger` says whether its sources ever reported (a handle registered, a close result made).
    pub(crate) fn facts(&self, ledger: &Ledger) -> CycleFacts<'_> {
        CycleFacts {
            cycle: self.cycle,
            retained_handles: &self.retained_handles,
            unshared_caches_open: self.unshared_caches_open,
            declared_shared_growth: self.declared_shared_growth,
            swallowed_close_errors: self.swallowed_close_errors as u64,
            integrity_violations: self.integrity.total_violations(),
            integrity_checked: self.integrity.checked(),
            handles_registered: ledger.registered_any(),
            close_results_made: ledger.close_results_made(),
            faults_fired: &self.faults_fired,
        }
    }
}

static QUIET_INJECTED_PANICS: Once = Once::new();

/// Injected panics are expected: keep them out of stderr, pass every other panic on.
pub(super) fn quiet_injected_panics() {
    QUIET_INJECTED_PANICS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<InjectedPanic>() {
                previous(info);
            }
        }));
    });
}

type Payload = Box<dyn std::any::Any + Send>;

/// A phase's raw outcome, holding what the store produced (its error, a panic's payload) so
/// that it can be described by the bookkeeping and dropped by the store side.
enum Raw<E> {
    Ok,
    Err(E),
    Panic(Payload),
    Skipped,
}

fn raw<E>(f: impl FnOnce() -> Result<(), E>) -> Raw<E> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Raw::Ok,
        Ok(Err(e)) => Raw::Err(e),
        Err(p) => Raw::Panic(p),
    }
}

fn panic_text(payload: &Payload) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .or_else(|| payload.downcast_ref::<InjectedPanic>().map(InjectedPanic::to_string))
        .unwrap_or_else(|| "panic with a non-string payload".to_string())
}

fn describe<E: fmt::Display>(r: &Raw<E>) -> Phase {
    match r {
        Raw::Ok => Phase::Ok,
        Raw::Err(e) => Phase::Error(e.to_string()),
        Raw::Panic(p) => Phase::Panic(panic_text(p)),
        Raw::Skipped => Phase::Skipped,
    }
}

/// The harness's own heap use on its thread: per-cycle records and samples grow with the run,
/// and would otherwise look like a leak of the store under test. Every bookkeeping step runs
/// inside [`Bookkeeping::track`], which adds what it retained (jemalloc's per-thread allocated
/// minus deallocated); the samples carry the total so the verdict can subtract it. Objects the
/// store made (its errors, panic payloads, integrity reports) are described inside `track` but
/// dropped outside it, so their release is not mistaken for the harness's.
pub(super) struct Bookkeeping {
    counters: Option<ThreadCounters>,
    net: i64,
}

impl Bookkeeping {
    pub(super) fn new() -> Self {
        Bookkeeping { counters: ThreadCounters::current().ok(), net: 0 }
    }

    pub(super) fn track<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let before = self.counters.as_ref().map(ThreadCounters::net);
        let out = crate::bookkeeping::bookkeeping(f);
        if let (Some(c), Some(b)) = (&self.counters, before) {
            self.net += c.net() - b;
        }
        out
    }

    pub(super) fn bytes(&self) -> Option<i64> {
        self.counters.as_ref().map(|_| self.net)
    }
}

/// How long the handle check waits once a leak is established (see
/// [`HarnessConfig::handle_settle`]): covers a worker thread still unwinding.
const SHORT_SETTLE: Settle = Settle {
    timeout: std::time::Duration::from_millis(25),
    initial_backoff: std::time::Duration::from_millis(1),
    max_backoff: std::time::Duration::from_millis(50),
    ..Settle::SAMPLES
};

/// Whether the long waits for deferred releases are still worth it: they stop once one of them
/// ran to its end with something still retained (a leak, established; waiting again each cycle
/// would only slow its run).
#[derive(Debug, Clone, Copy)]
pub(super) struct Patience {
    pub(super) patient: bool,
}

impl Patience {
    pub(super) fn handle_settle(&self, cfg: &HarnessConfig) -> Settle {
        if self.patient {
            cfg.handle_settle
        } else {
            SHORT_SETTLE
        }
    }

    pub(super) fn sample_settle(&self, cfg: &HarnessConfig) -> Settle {
        let mut s = cfg.settle;
        if !self.patient {
            s.pending_timeout = std::time::Duration::ZERO;
        }
        s
    }
}

pub(super) fn record_clean(r: &CycleRecord) -> bool {
    r.retained_handles.is_empty()
        && r.swallowed_close_errors == 0
        && r.unshared_caches_open == 0
        && r.declared_shared_growth == 0
        && r.integrity.total_violations() == 0
}

/// What a run carries from cycle to cycle: the harness's bookkeeping, the swallowed close errors
/// counted so far, and how patient the settles still are.
pub(super) struct Cycler<'a> {
    pub(super) ledger: &'a Ledger,
    cfg: &'a HarnessConfig,
    pub(super) bk: Bookkeeping,
    swallowed_total: usize,
    pub(super) patience: Patience,
    release: ReleaseWatch,
    pub(super) gens: RunGenerations,
}

impl<'a> Cycler<'a> {
    pub(super) fn new(ledger: &'a Ledger, cfg: &'a HarnessConfig) -> Self {
        Cycler {
            ledger,
            cfg,
            bk: Bookkeeping::new(),
            swallowed_total: ledger.swallowed_count(),
            patience: Patience { patient: true },
            release: ReleaseWatch::default(),
            gens: RunGenerations::start(cfg.generations, cfg.analysis.warmup_cycles as u64),
        }
    }

    /// Runs one cycle of `store` (open, work, close, the handle settle, the integrity check)
    /// and records it.
    pub(super) fn cycle<L: Lifecycle>(&mut self, store: &mut L, faults: &Faults, cycle: u64) -> CycleRecord {
        let (ledger, cfg) = (self.ledger, self.cfg);
        self.gens.cycle_begins(cycle);
        faults.set_cycle(cycle);
        let ctx = CycleCtx { cycle, ledger, faults };
        let mut work = Raw::Skipped;
        let mut close = Raw::Skipped;
        let mut unshared = 0;
        let mut unshared_sites = Vec::new();
        let open = match catch_unwind(AssertUnwindSafe(|| store.open(&ctx))) {
            Ok(Ok(mut opened)) => {
                work = raw(|| store.work(&mut opened, &ctx));
                unshared = unshared_caches(ledger);
                if unshared > 0 {
                    unshared_sites = unshared_cache_sites(ledger);
                }
                self.bk.track(|| self.release.closing());
                // Close runs whatever work did: it is the release path.
                close = raw(|| store.close(opened, &ctx));
                Raw::Ok
            }
            Ok(Err(e)) => Raw::Err(e),
            Err(p) => Raw::Panic(p),
        };
        if !matches!(open, Raw::Ok) {
            // A failed open is the release path of what it made.
            self.bk.track(|| self.release.closing());
        }
        let phases = self.bk.track(|| (describe(&open), describe(&work), describe(&close)));
        drop((open, work, close));
        let settle = self.patience.handle_settle(cfg);
        let release = &mut self.release;
        let counts = || cfg.suppressions.unsuppressed_counts(ledger, cycle + 1);
        let retained_handles = self.bk.track(|| release.wait(ledger, &counts, settle, cfg.handle_quiet));
        if !retained_handles.is_empty() {
            self.patience.patient = false;
        }
        let checked = (cfg.check_every > 0 && cycle.is_multiple_of(cfg.check_every))
            .then(|| catch_unwind(AssertUnwindSafe(|| store.check(&ctx))));
        let integrity = self.bk.track(|| integrity_of(&checked));
        drop(checked);
        self.bk.track(|| {
            let swallowed_now = ledger.swallowed_count();
            let swallowed_close_errors = swallowed_now.saturating_sub(self.swallowed_total);
            self.swallowed_total = swallowed_now;
            let (open, work, close) = phases;
            CycleRecord {
                cycle,
                open,
                work,
                close,
                faults_fired: faults.take_fired(),
                retained_handles,
                swallowed_close_errors,
                unshared_caches_open: unshared,
                unshared_cache_sites: unshared_sites,
                declared_shared_growth: 0,
                declared_shared_growth_sites: Vec::new(),
                integrity,
            }
        })
    }
}

/// The creation sites of the caches and write buffer managers retained while the store is open.
fn unshared_cache_sites(ledger: &Ledger) -> Vec<String> {
    let caches = [HandleKind::Cache, HandleKind::WriteBufferManager];
    ledger
        .report()
        .retained
        .into_iter()
        .filter(|g| caches.iter().any(|k| g.kind == *k))
        .filter_map(|g| g.site)
        .collect()
}

/// What the store's integrity check found (a panic in it is a violation of its own).
fn integrity_of(checked: &Option<std::thread::Result<Integrity>>) -> Integrity {
    match checked {
        None => Integrity::not_checked(),
        Some(Ok(i)) => i.clone(),
        Some(Err(p)) => {
            let mut i = Integrity::default();
            i.violation("check_panics", 1);
            i.problem(format!("integrity check panicked: {}", panic_text(p)));
            i
        }
    }
}

/// The handles declared shared after the first cycle: the baseline a store's shared set must not
/// grow past.
#[derive(Default)]
pub(super) struct SharedBaseline {
    /// How many handles were declared shared and live after the first cycle, and their ids
    /// (empty at counts depth, where the ledger keeps no entries).
    first: Option<(u64, BTreeSet<u64>)>,
}

impl SharedBaseline {
    pub(super) fn observe(&mut self, ledger: &Ledger, record: &mut CycleRecord) {
        let live: u64 = ledger.kind_snapshot().values().map(|c| c.declared_shared).sum();
        let Some((first_live, first_ids)) = &self.first else {
            let ids = ledger.report().declared_shared.iter().flat_map(|g| g.ids.iter().copied()).collect();
            self.first = Some((live, ids));
            return;
        };
        record.declared_shared_growth = live.saturating_sub(*first_live);
        if record.declared_shared_growth > 0 {
            // Where the newcomers were made: the groups holding ids the first cycle did not have.
            for g in ledger.report().declared_shared {
                let new = g.ids.iter().filter(|id| !first_ids.contains(id)).count();
                if let (Some(site), true) = (g.site, new > 0) {
                    record.declared_shared_growth_sites.push(format!("{site} (x{new})"));
                }
            }
        }
    }
}

fn unshared_caches(ledger: &Ledger) -> u64 {
    use crate::ledger::HandleKind;
    let kinds = ledger.kind_snapshot();
    [HandleKind::Cache, HandleKind::WriteBufferManager]
        .iter()
        .filter_map(|k| kinds.get(k))
        .map(|c| c.live.saturating_sub(c.declared_shared))
        .sum()
}
