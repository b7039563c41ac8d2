//! What `leakcheck check` runs by default, which both catalogs run their stores with.

/// The settings of `leakcheck check`: cycles asked for, and the longest run while the memory
/// verdict is inconclusive.
pub const CHECK_CYCLES: u64 = leakcheck::runner::DEFAULT_CHECK_CYCLES;
/// `leakcheck check`'s early look, where it stops clean when nothing is in question.
pub const EARLY_LOOK_CYCLES: u64 = leakcheck::runner::EARLY_LOOK_CYCLES;
/// See [`CHECK_CYCLES`].
pub const CHECK_MAX_CYCLES: u64 = leakcheck::runner::DEFAULT_MAX_CYCLES_FACTOR * CHECK_CYCLES;

/// `leakcheck check`'s default fault plan ([`crate::reference::DEFAULT_PLAN`]).
pub const DEFAULT_CHECK_PLAN: &str = crate::reference::DEFAULT_PLAN;
