//! `compare OLD NEW`: two reports read back and compared, and the comparison's page.

use std::path::Path;

use super::outcome::invalid;
use super::RunError;
use crate::report::{self, CompareLimits, Comparison};

/// `compare OLD NEW`: reads both reports and compares them (exit 1 on a regression:
/// [`Comparison::regressions`]).
///
/// # Errors
/// A report that cannot be read, or limits that are not non-negative numbers.
pub fn compare(old: &Path, new: &Path, limits: CompareLimits) -> Result<Comparison, RunError> {
    compare_to_page(old, new, limits, None)
}

/// [`compare`], and with `html` the comparison's page written there
/// (`report::write_compare_html`: both runs' series on one plot, the table of what regressed).
///
/// # Errors
/// As [`compare`]; and a samples CSV beside a report that does not read, or a page that cannot be
/// written.
pub fn compare_to_page(
    old: &Path,
    new: &Path,
    limits: CompareLimits,
    html: Option<&Path>,
) -> Result<Comparison, RunError> {
    let ok = |v: f64| v.is_finite() && v >= 0.0;
    if !(ok(limits.max_rate_increase_bytes) && ok(limits.max_overhead_increase)) {
        return Err(invalid("--max-rate-increase and --max-overhead-increase", "must be non-negative numbers"));
    }
    let failed = |source| RunError::Report { context: "compare".to_string(), source };
    let a = report::read(old).map_err(failed)?;
    let b = report::read(new).map_err(failed)?;
    let cmp = report::compare(&a, &b, limits);
    if let Some(out) = html {
        report::write_compare_html(out, (old, &a), (new, &b), &cmp).map_err(failed)?;
    }
    Ok(cmp)
}
