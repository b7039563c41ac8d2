//! The cycle harness: drives a store through open / work / close cycles with injected faults,
//! and after every cycle checks that every native resource was released and no data was lost.
//!
//! Users implement [`Lifecycle`] for their own store. The reference store (a segmented store
//! modelled on Kafka Streams' window stores) and the catalogs live in the `leak-tests` package.

mod config;
mod cycle;
mod generations;
mod lifecycle;
mod matrix;
mod release;
mod run;

pub use config::{
    native_allocations_visible, simulated_invisible_allocations, HarnessConfig, HarnessError, DEFAULT_HANDLE_QUIET,
};
pub use cycle::{CycleRecord, Phase};
pub use generations::GenerationsReport;
pub use lifecycle::{CycleCtx, Integrity, Lifecycle, StoreInfo};
pub use matrix::{MatrixEntry, MatrixReport, MIN_MATRIX_REPEATS};
use run::MAX_SOAK_SAMPLES;
pub use run::{Harness, HarnessReport, Progress, Stopped};
