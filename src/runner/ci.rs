//! A finished run published for CI: GitHub Actions' job summary appended to
//! `$GITHUB_STEP_SUMMARY` and the JUnit file written (the workflow commands are printed by the
//! caller, [`RunOutcome::annotations`], on the stream it owns).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::outcome::{checkout_root, invalid};
use super::{RunError, RunOptions, RunOutcome};
use crate::report::{self, ReportError};

/// The environment variable GitHub Actions names the job summary's file in.
const STEP_SUMMARY_ENV: &str = "GITHUB_STEP_SUMMARY";

/// `--junit FILE`, checked before the run: its directory exists and it is not a directory.
pub(super) fn check_junit_path(path: &Path) -> Result<(), RunError> {
    if path.is_dir() {
        return Err(invalid("--junit", format!("{} is a directory; name the XML file to write", path.display())));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(invalid(
            "--junit",
            format!("{}: the directory {} does not exist", path.display(), parent.display()),
        ));
    }
    Ok(())
}

/// Writes the JUnit file (when asked) and appends the job summary (in GitHub Actions).
pub(super) fn publish(outcome: &RunOutcome, opts: &RunOptions) -> Result<(), RunError> {
    let failed = |context: String| move |source| RunError::Report { context, source };
    if let Some(path) = &opts.junit {
        report::write_atomic(path, report::junit_xml(&outcome.report).as_bytes())
            .map_err(failed(format!("--junit {}", path.display())))?;
    }
    if outcome.annotations {
        if let Some(file) = std::env::var_os(STEP_SUMMARY_ENV).filter(|f| !f.is_empty()) {
            let text = report::github::summary(&outcome.report, &checkout_root(), outcome.report_dir.as_deref());
            let path = PathBuf::from(file);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|source| ReportError::Io { path: path.clone(), source })
                .map_err(failed(format!("${STEP_SUMMARY_ENV}")))?;
        }
    }
    Ok(())
}
