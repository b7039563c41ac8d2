//! Writing a report directory: every file atomically, so a run killed at any moment leaves the
//! last complete report behind.

use std::fs;
use std::path::Path;

use super::atomic::write_atomic;
use super::csv::samples_csv;
use super::error::io_err;
use super::plot::{self, plot_svgs, Plot};
use super::read::read_samples_beside;
use super::{html, Comparison, ReportError, RunReport, FLAME_FILE, HTML_FILE, REPORT_FILE, SAMPLES_FILE};
use crate::verdict::CycleSample;

/// Checks that `dir` exists (creating it) and is writable, before any work, so a run never
/// starts only to fail at its first report.
///
/// # Errors
/// When the directory cannot be created or written.
pub fn prepare_dir(dir: &Path) -> Result<(), ReportError> {
    let existed = dir.exists();
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    match tempfile::Builder::new().prefix(".leakcheck-probe-").tempfile_in(dir) {
        Ok(probe) => {
            drop(probe);
            Ok(())
        }
        Err(source) => {
            if !existed {
                let _ = fs::remove_dir(dir);
            }
            Err(ReportError::Io { path: dir.to_path_buf(), source })
        }
    }
}

/// Writes the samples CSV, report.json, the plots and report.html into `dir`, each atomically.
///
/// # Errors
/// The I/O error, naming the file.
pub fn write_dir(dir: &Path, report: &RunReport, samples: &[CycleSample]) -> Result<(), ReportError> {
    write_atomic(&dir.join(SAMPLES_FILE), samples_csv(samples).as_bytes())?;
    write_views(dir, report, samples).map(drop)
}

/// Writes report.json, the plots' SVG and report.html into `dir`, each atomically and in that
/// order, so the page never shows a verdict the JSON does not have. The page shows the heap
/// growth's flame graph (`heap-growth.svg`, written before the final report) when the run was
/// profiled. Returns the plots (for plot.png).
///
/// # Errors
/// The I/O error, naming the file.
pub(crate) fn write_views(dir: &Path, report: &RunReport, samples: &[CycleSample]) -> Result<Vec<Plot>, ReportError> {
    let json = serde_json::to_vec_pretty(&report.written())
        .map_err(|source| ReportError::Parse { path: dir.join(REPORT_FILE), source })?;
    write_atomic(&dir.join(REPORT_FILE), &json)?;
    let plots = plot_svgs(report, samples);
    for plot in &plots {
        write_atomic(&dir.join(&plot.file_name), plot.svg.as_bytes())?;
    }
    let flame_path = dir.join(FLAME_FILE);
    let flame = match (report.complete && report.settings.profile_lg_sample.is_some())
        .then(|| fs::read_to_string(&flame_path))
    {
        Some(Ok(svg)) => Some(svg),
        // The run ended within the warm-up, or the files were not kept.
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Some(Err(source)) => return Err(ReportError::Io { path: flame_path, source }),
        None => None,
    };
    write_atomic(&dir.join(HTML_FILE), html::report_html(report, &plots, flame.as_deref(), samples.len()).as_bytes())?;
    Ok(plots)
}

/// Writes the page of a comparison to `out` atomically: the verdicts, rates and times side by
/// side, what regressed, and both runs' series on one plot (from the samples.csv beside each
/// report; the page says so when one has none).
///
/// # Errors
/// A samples CSV that does not read, or the page that cannot be written.
pub(crate) fn write_compare_html(
    out: &Path,
    (old_path, old): (&Path, &RunReport),
    (new_path, new): (&Path, &RunReport),
    comparison: &Comparison,
) -> Result<(), ReportError> {
    let mut notes = Vec::new();
    let mut series = |path: &Path| -> Result<Vec<CycleSample>, ReportError> {
        Ok(read_samples_beside(path)?.unwrap_or_else(|| {
            notes.push(format!("no {SAMPLES_FILE} beside {}: its series are not drawn", path.display()));
            Vec::new()
        }))
    };
    let (a, b) = (series(old_path)?, series(new_path)?);
    let title = format!(
        "old {} ({} cycles), new {} ({} cycles)",
        old.verdict.verdict, old.cycles_run, new.verdict.verdict, new.cycles_run
    );
    let plots = plot::compare_svgs(&title, &a, &b);
    let page = html::compare_html(
        (&old_path.display().to_string(), old),
        (&new_path.display().to_string(), new),
        comparison,
        &plots,
        &notes,
    );
    write_atomic(out, page.as_bytes())
}
