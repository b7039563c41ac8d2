//! Per-signal verdicts over cycles.
//!
//! One before/after equality is useless for memory: a leak-free open/write/close cycle of a
//! small RocksDB moves jemalloc's allocated bytes by tens of kilobytes from one cycle to the next.
//! What tells a leak from that noise is that a leak **continues**: its memory stays and more
//! follows. Statistical signals are judged by the growth rule ([`growth`](GrowthRule)): growth
//! through the later half of the judged cycles against a budget that stops growing with the run,
//! so a longer run finds a smaller leak and a clean verdict states the smallest continuing leak
//! it rules out. Exact signals (live handles, files and maps under the store's directory after
//! close) need no statistics: any residue after settling is a leak. Fault points are judged per
//! firing (the `attribution` module).
//!
//! [`Analysis`] folds samples and cycle records as they come, in bounded memory, and gives a
//! verdict at any look for the same cost at a thousand cycles or a million; [`analyze`] is the
//! same judgement of a recorded series.

mod analysis;
mod attribution;
mod config;
pub(crate) mod consumer;
mod exact;
mod floors;
mod growth;
mod model;
mod outcome;
pub(crate) mod retained;
mod run;
pub(crate) mod sites;
pub(crate) mod stats;

pub(crate) use analysis::CycleFacts;
pub use analysis::{analyze, Analysis, Look};
pub(crate) use attribution::{mean_shift, shift_verdict};
pub use config::{AnalysisConfig, Budgets, CycleSample, Looks, Tolerances};
pub use consumer::Consumer;
pub use growth::{BudgetFrom, Growth, GrowthRule};
pub use model::{Estimate, Residue, Retention, Rule, RuleKind, SignalVerdict, Unmeasured};
pub use outcome::{Evidence, Verdict};
pub use retained::age::{AgeFacts, Aged, ContainerGrowth, Open};
pub use retained::{LiveSeries, RecordHolds, Retained, RetainedSite};
#[cfg(test)]
pub(crate) use run::aggregate;
pub use run::{BaselineReturn, LeakRate, RulesOut, RunVerdict};
pub use sites::rule::{Grew, SiteGrowth, LATE_RISES};
pub use sites::series::Key as SeriesKey;
pub use sites::{ConsumerGrowth, ConsumersExplain, Judged as SiteJudged};

#[cfg(test)]
mod tests;
