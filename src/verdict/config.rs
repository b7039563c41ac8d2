//! How a run is analysed: what a cycle left behind ([`CycleSample`]), the tolerances and budgets
//! of the statistical signals, when the run is looked at ([`Looks`]) and its error rate
//! ([`AnalysisConfig`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::growth::GrowthRule;
use super::outcome::Evidence;
use crate::probe::Sample;

/// What one cycle left behind, observed after it closed everything and the process settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleSample {
    /// 0-based cycle number.
    pub cycle: u64,
    /// Memory and OS resources.
    pub sample: Sample,
    /// Live handles per kind that were not declared shared (the ledger's retained counts).
    pub retained_handles: BTreeMap<String, u64>,
    /// Whether two consecutive samples agreed before the timeout.
    pub settled: bool,
}

impl CycleSample {
    /// A cycle's observations.
    pub fn new(cycle: u64, sample: Sample, retained_handles: BTreeMap<String, u64>, settled: bool) -> Self {
        CycleSample { cycle, sample, retained_handles, settled }
    }
}

/// Growth per cycle still called clean over a short later part, per statistical signal (the
/// growth rule's budget is this times the later part's cycles, up to [`Budgets`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// jemalloc allocated bytes (and unexplained bytes).
    pub allocated_bytes_per_cycle: f64,
    /// jemalloc resident bytes after purge (page-granular).
    pub resident_bytes_per_cycle: f64,
    /// RSS (page-granular, includes stacks and code).
    pub rss_bytes_per_cycle: f64,
    /// Open fds, maps and threads (all of the process).
    pub os_per_cycle: f64,
    /// Unexplained bytes left behind per firing of one fault point (`bytes_per_firing.*` signals).
    #[serde(default = "default_per_firing")]
    pub bytes_per_firing: f64,
    /// What RocksDB accounts for (memtables, table readers): it must level off. Growth of data
    /// legitimately grows table readers a little; memtables and table readers pinned by leaked
    /// iterators or versions grow by whole arena blocks and files.
    #[serde(default = "default_rocksdb_bytes")]
    pub rocksdb_bytes_per_cycle: f64,
}

fn default_per_firing() -> f64 {
    256.0
}

fn default_rocksdb_bytes() -> f64 {
    4096.0
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            allocated_bytes_per_cycle: 64.0,
            resident_bytes_per_cycle: 2048.0,
            rss_bytes_per_cycle: 4096.0,
            os_per_cycle: 0.02,
            bytes_per_firing: default_per_firing(),
            rocksdb_bytes_per_cycle: default_rocksdb_bytes(),
        }
    }
}

/// The growth a long run's later half may show in all, per kind of signal: the growth rule's
/// cap on the tolerance times the span. With it, a run of N cycles finds a steady leak of about
/// `2 x budget / N` per cycle, a soak of 50,000 cycles one of single bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// Bytes that jemalloc counts (allocated, unexplained, RocksDB's accounted part). Default
    /// 4 KiB: the recorded clean runs' later halves grow by at most 480 B (a container that
    /// doubles now and then), one block of RocksDB's is 4 KiB, and it keeps the interval of a
    /// store whose floor moves by a kilobyte (a DB kept open) able to call it clean within a
    /// check's 800 cycles. `None`: the tolerance alone, as before the growth rule.
    pub bytes: Option<f64>,
    /// The process's fds, file maps and threads outside the store's directory. Default 2: one
    /// more than a lazily opened descriptor.
    pub os: Option<f64>,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets { bytes: Some(4096.0), os: Some(2.0) }
    }
}

/// When a run is looked at; each look gets its part of the false-positive rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "looks", rename_all = "lowercase")]
pub enum Looks {
    /// Judged once, at the end (look 1).
    #[default]
    End,
    /// `check`: at `first` cycles, then every 10 while inconclusive.
    Decide {
        /// Cycles of the first look.
        first: u64,
    },
    /// `soak`: at `first` cycles, then each time the cycles double, and at the end.
    Doubling {
        /// Cycles of the first look.
        first: u64,
    },
}

/// Cycles between two looks of `check` while inconclusive.
pub(crate) const LOOK_EVERY: u64 = 10;

impl Looks {
    /// Whether a look is due after `done` cycles.
    pub fn due(self, done: u64) -> bool {
        match self {
            Looks::End => false,
            Looks::Decide { first } => done >= first && (done - first).is_multiple_of(LOOK_EVERY),
            Looks::Doubling { first } => {
                first > 0 && done >= first && done.is_multiple_of(first) && (done / first).is_power_of_two()
            }
        }
    }

    /// The index of the look after `done` cycles (1 for the first), counting a last look off
    /// the schedule as one of its own.
    pub fn index(self, done: u64, last: bool) -> u64 {
        match self {
            Looks::End => 1,
            Looks::Decide { first } if done > first => 1 + (done - first).div_ceil(LOOK_EVERY),
            Looks::Decide { .. } => 1,
            Looks::Doubling { first } if done >= first && first > 0 => {
                let passed = 1 + (done / first).ilog2() as u64;
                passed + u64::from(last && !self.due(done))
            }
            Looks::Doubling { .. } => 1,
        }
    }
}

/// How a run is analysed.
///
/// # Error rates
/// A run calls a clean store a leak with probability at most `false_positive_rate`, across its
/// judged statistical signals and every look at the verdict. The family is a union bound: the
/// seven judged statistical signals share each look's part alike, and look `j` ([`Looks`]) gets
/// `6 / (pi^2 j^2)` of the rate, so the parts over all looks sum to the rate whatever the
/// correlation between looks. A run judged once is look 1 (61% of the rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// Cycles skipped by statistical signals (caches filling, arenas growing).
    pub warmup_cycles: usize,
    /// The rate of false leak verdicts a whole run may have (over its signals and looks).
    #[serde(default = "default_false_positive_rate")]
    pub false_positive_rate: f64,
    /// When the run is looked at.
    #[serde(default, flatten)]
    pub looks: Looks,
    /// Tolerances of the statistical signals.
    pub tolerances: Tolerances,
    /// Budgets of the statistical signals.
    #[serde(default)]
    pub budgets: Budgets,
    /// Store instances opened and closed per cycle (tasks x segments), for the leak rate per
    /// instance.
    pub instances_per_cycle: u64,
    /// After the last close, allocated bytes may exceed the pre-run baseline by this much
    /// (RocksDB allocates process-wide state once, at the first open).
    pub baseline_tolerance_bytes: u64,
    /// The least evidence a statistical signal needs to decide.
    #[serde(default)]
    pub evidence: Evidence,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            warmup_cycles: 20,
            false_positive_rate: default_false_positive_rate(),
            looks: Looks::End,
            tolerances: Tolerances::default(),
            budgets: Budgets::default(),
            instances_per_cycle: 1,
            baseline_tolerance_bytes: 2 << 20,
            evidence: Evidence::default(),
        }
    }
}

fn default_false_positive_rate() -> f64 {
    0.01
}

/// The most statistical signals one analysis judges (bytes net of what is explained, RocksDB's
/// part, RSS outside jemalloc, fds and file maps outside the store's directory, threads, and the
/// bytes-per-firing family as one): each gets an equal share of a look's error rate.
pub(crate) const JUDGED_STATISTICAL_SIGNALS: u32 = 7;

impl AnalysisConfig {
    /// `check`'s looks: at `cycles`, then every 10 while inconclusive.
    pub fn looking_from(mut self, cycles: u64) -> Self {
        self.looks = Looks::Decide { first: cycles };
        self
    }

    /// The one-sided error rate one signal gets at look `look`.
    pub(crate) fn signal_alpha(&self, look: u64) -> f64 {
        let share = 6.0 / (std::f64::consts::PI.powi(2) * (look.max(1) as f64).powi(2));
        self.false_positive_rate * share / f64::from(JUDGED_STATISTICAL_SIGNALS)
    }

    /// The growth rule of the byte signals at look `look`.
    pub(crate) fn bytes_rule(&self, look: u64) -> GrowthRule {
        GrowthRule {
            tolerance_per_cycle: self.tolerances.allocated_bytes_per_cycle,
            budget: self.budgets.bytes,
            alpha: self.signal_alpha(look),
            counts: false,
        }
    }
}
