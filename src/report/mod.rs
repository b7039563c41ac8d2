//! Run reports: a versioned JSON schema, a CSV of samples, crash-safe writing, reading back with
//! a schema check, comparison of two runs, and plots.
//!
//! Files are rewritten atomically (write a temporary file in the same directory, sync it, rename
//! it over the old one), so a run killed at any moment, even with SIGKILL, leaves the last
//! complete report behind, never a torn one.

mod atomic;
mod axis;
mod baseline;
mod compare;
mod csv;
mod error;
mod findings;
pub mod github;
mod html;
mod junit;
mod model;
mod plot;
mod read;
mod summary;
#[cfg(test)]
mod tests;
pub(crate) mod text;
pub(crate) mod words;
pub(crate) mod write;

pub use crate::probe::stacks::Place;
pub(crate) use atomic::write_atomic;
pub use baseline::DEFAULT_BASELINE_MARGIN;
pub use compare::{compare, CompareLimits, Comparison};
pub(crate) use csv::SamplesFile;
pub use csv::{parse_samples_csv, SAMPLES_COLUMNS};
pub use error::ReportError;
pub use html::HTML_FILE;
pub use junit::junit_xml;
pub(crate) use model::FLAME_FILE;
pub use model::{
    Against, BaselineCheck, CycleSummary, Finding, HeapFunction, HeapStack, RunReport, RunSettings, REPORT_FILE,
    SAMPLES_FILE, SCHEMA_VERSION,
};
pub use read::read;
pub(crate) use write::write_compare_html;
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use write::write_views;
