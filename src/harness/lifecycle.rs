//! What a user implements: the store's life in cycles ([`Lifecycle`]), what a cycle's code gets
//! ([`CycleCtx`]), what its checks report ([`Integrity`]) and how it describes itself
//! ([`StoreInfo`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::fault::Faults;
use crate::ledger::Ledger;
use crate::probe::RocksDbMemory;

/// What a cycle's code gets: which cycle, the ledger to register handles in, the faults to check.
#[derive(Debug, Clone, Copy)]
pub struct CycleCtx<'a> {
    /// 0-based cycle number.
    pub cycle: u64,
    /// The run's ledger.
    pub ledger: &'a Ledger,
    /// The run's fault plan in force.
    pub faults: &'a Faults,
}

/// What the store's own checks found after a cycle (the harness runs them after close).
///
/// The counters are the store's, by name: a [`violation`](Integrity::violation) breaks a
/// guarantee (a lost record, a lock still held, a directory left behind) and fails the run's
/// `integrity` signal; a [`count`](Integrity::count) is reported and not a failure (late records
/// dropped by a window store). In the report JSON both are keys of the cycle's record, as a
/// store's own fields would be.
///
/// ```
/// let mut found = leakcheck::Integrity::default();
/// found.records_checked = 100;
/// found.violation("lost_records", 2);
/// found.count("late_records_dropped", 5);
/// found.problem("record 17 missing after reopen");
/// assert_eq!(found.total_violations(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Integrity {
    /// Records whose presence was checked.
    pub records_checked: u64,
    /// Broken guarantees, by the store's name for them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub violations: BTreeMap<String, u64>,
    /// Counts reported but not failures, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
    /// Human-readable descriptions of the first problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// No check ran (the store defines none, or none was due this cycle): the `integrity` signal
    /// of a run with no checked cycle reads `not measured`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    not_checked: bool,
}

impl Integrity {
    /// What a cycle without a check reports: nothing checked, and so nothing found.
    pub(crate) fn not_checked() -> Self {
        Integrity { not_checked: true, ..Integrity::default() }
    }

    /// Whether a check ran.
    pub(crate) fn checked(&self) -> bool {
        !self.not_checked
    }

    /// Adds `n` to the violation `name` (the key appears even when `n` is 0: the check ran).
    pub fn violation(&mut self, name: &str, n: u64) {
        *self.violations.entry(name.to_owned()).or_default() += n;
    }

    /// Adds `n` to the count `name`, reported but not a failure.
    pub fn count(&mut self, name: &str, n: u64) {
        *self.counts.entry(name.to_owned()).or_default() += n;
    }

    /// The violation `name` (0 when the store never reported it).
    pub fn violations_of(&self, name: &str) -> u64 {
        self.violations.get(name).copied().unwrap_or(0)
    }

    /// The count `name` (0 when the store never reported it).
    pub fn count_of(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }

    /// All violations: what the `integrity` signal judges (exactly zero when clean).
    pub fn total_violations(&self) -> u64 {
        self.violations.values().sum()
    }

    /// Records a problem's description (the first 20 are kept).
    pub fn problem(&mut self, text: impl Into<String>) {
        if self.problems.len() < 20 {
            self.problems.push(text.into());
        }
    }

    /// Adds another report's counters and problems.
    pub fn merge(&mut self, other: Integrity) {
        self.not_checked &= other.not_checked;
        self.records_checked += other.records_checked;
        for (k, v) in other.violations {
            *self.violations.entry(k).or_default() += v;
        }
        for (k, v) in other.counts {
            *self.counts.entry(k).or_default() += v;
        }
        for p in other.problems {
            self.problem(p);
        }
    }
}

/// A store the harness can drive. `open` makes a [`Lifecycle::Store`] (options, caches, DBs,
/// column families, restored state), `work` uses it, `close` releases it and reports a close
/// error. Long-lived state (a shared cache, the data directory, what was committed) lives in the
/// implementing value across cycles.
pub trait Lifecycle {
    /// The open store.
    type Store;
    /// The store's error type.
    type Error: fmt::Display;

    /// Every fault point the store checks: plans naming others are rejected. Default: none (a
    /// store without injected faults; any plan naming a point is rejected).
    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Opens the store.
    ///
    /// # Errors
    /// The store's error; nothing it made may stay allocated.
    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store, Self::Error>;

    /// Does one cycle's work.
    ///
    /// # Errors
    /// The store's error; the harness closes the store anyway.
    fn work(&mut self, store: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<(), Self::Error>;

    /// Closes the store, releasing everything whether or not a step fails.
    ///
    /// # Errors
    /// The first close error.
    fn close(&mut self, store: Self::Store, ctx: &CycleCtx<'_>) -> Result<(), Self::Error>;

    /// Checks the store's data after close (reopen, offsets not ahead of data, no LOCK held).
    /// Without one the run's `integrity` signal reads `not measured`.
    fn check(&mut self, _ctx: &CycleCtx<'_>) -> Integrity {
        Integrity::not_checked()
    }

    /// The directory whose open files and maps must return to zero after close.
    fn data_dir(&self) -> Option<PathBuf> {
        None
    }

    /// Store instances (tasks x segments) opened per cycle, for the leak rate per instance.
    fn instances_per_cycle(&self) -> u64 {
        1
    }

    /// RocksDB's accounting of the long-lived objects (shared caches) alive between cycles.
    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        None
    }

    /// What the store is, for reports and their headers: a name and its settings (the
    /// reference store's tasks and segments, say). Default: `store`, no settings.
    fn describe(&self) -> StoreInfo {
        StoreInfo::new("store")
    }

    /// Lets go of what the store keeps across cycles (a shared cache, a write-buffer manager, a DB
    /// kept open, a pool), once, after the last cycle and its sample. What the cycles allocated
    /// and is still held afterwards is what they leaked (`retained_bytes`): a cache still alive
    /// holds what many cycles allocated, from one stack, and cannot be told from a leak.
    /// Default: nothing, for a store that keeps nothing native across cycles. The harness does not
    /// open the store again in the same run; a store run again makes them anew.
    fn let_go(&mut self) {}

    /// The fault plan `check` and `soak` use when none is given (the runner's `--faults`).
    /// Default: every point of [`Lifecycle::fault_points`] failing with an error in 5% of its
    /// calls, so that the error paths an ordinary open/close test never reaches are run. Rates are
    /// per call: override this when a point is checked many times a cycle (at 5%, a point
    /// checked 50 times fails in 92% of cycles, and what follows it in the cycle rarely runs).
    fn default_faults(&self) -> String {
        self.fault_points().iter().map(|p| format!("{p}=5%")).collect::<Vec<_>>().join(",")
    }
}

/// What a store says about itself ([`Lifecycle::describe`]): shown in the run's header and
/// plots, kept in the report's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoreInfo {
    /// What the store is (`reference store`, `kv service`).
    pub name: String,
    /// Its settings (name to value), written into the report's `settings` beside the run's own.
    pub settings: BTreeMap<String, serde_json::Value>,
}

impl StoreInfo {
    /// A store called `name`, with no settings.
    pub fn new(name: impl Into<String>) -> Self {
        StoreInfo { name: name.into(), settings: BTreeMap::new() }
    }

    /// Adds a setting.
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.settings.insert(name.into(), value.into());
        self
    }
}

impl fmt::Display for StoreInfo {
    /// `reference store (tasks 2, segments 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.settings.iter().enumerate() {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            write!(f, "{}{k} {v}", if i == 0 { " (" } else { ", " })?;
        }
        if !self.settings.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}
