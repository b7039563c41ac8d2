//! The runner: `check` and `soak` for any [`Lifecycle`](crate::Lifecycle), as `leakcheck check` and `leakcheck
//! soak` run the reference store, and `compare` for two of their reports.
//!
//! - [`run`] makes the store (from a constructor given the run's [`Ledger`](crate::Ledger) and data directory),
//!   drives it through the cycles, keeps the report directory up to date (report.json,
//!   samples.csv, the plots, rewritten every `report_every` cycles, atomically, so a run killed
//!   with SIGKILL leaves a valid report) and returns a [`RunOutcome`]: the report, its text
//!   table, its exit code.
//! - [`check`] is the same judgement on a store the caller already made, for one call in
//!   `cargo test`.
//! - The command line around [`run`] is the `leakcheck-cli` crate (`cli/`): a user's soak binary
//!   gets leakcheck's subcommands, flags, exit codes and output in one call, with its own flags
//!   flattened in.
//!
//! `check` goes on past the cycles asked for while the memory verdict is inconclusive, deciding
//! every 10 cycles, up to `max_cycles` (default four times the cycles);
//! `soak` runs for a duration or a number of cycles and keeps the report directory current.

#[doc(hidden)]
pub mod attribute;
mod check;
mod ci;
mod compare;
mod drive;
mod heap;
pub(crate) mod outcome;
pub(crate) mod parallel;
mod plan;
mod progress;
mod settings;

pub use check::{check, Check};
pub use compare::{compare, compare_to_page};
pub use drive::run;
pub use outcome::{exit_code, RunError, RunOutcome};
pub use settings::{
    Annotations, Mode, RunOptions, StoreEnv, DEFAULT_CHECK_CYCLES, DEFAULT_MAX_CYCLES_FACTOR, DEFAULT_REPORT_EVERY,
    DEFAULT_SEED, DEFAULT_SUPPRESSIONS, EARLY_LOOK_CYCLES, MIN_CYCLES,
};
