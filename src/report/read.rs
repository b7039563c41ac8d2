//! Reading a report back: report.json with its schema checked, and the samples beside it.

use std::fs;
use std::path::Path;

use super::csv::parse_samples_csv;
use super::error::io_err;
use super::{ReportError, RunReport, SAMPLES_FILE, SCHEMA_VERSION};
use crate::verdict::CycleSample;

/// Reads a report, checking its schema version first.
///
/// # Errors
/// When the file cannot be read, is not JSON, is not a report, or has another schema version.
pub fn read(path: &Path) -> Result<RunReport, ReportError> {
    let text = fs::read(path).map_err(io_err(path))?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })?;
    let found = value.get("schema_version").and_then(serde_json::Value::as_u64);
    match found {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(ReportError::SchemaVersion { path: path.to_path_buf(), found: v, expected: SCHEMA_VERSION })
        }
        None => {
            return Err(ReportError::Parse {
                path: path.to_path_buf(),
                source: serde::de::Error::custom("missing schema_version"),
            })
        }
    }
    serde_json::from_value(value).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })
}

/// The samples of the report at `report` (samples.csv beside it), `None` when there is no such
/// file (a report copied without it).
///
/// # Errors
/// A CSV that cannot be read or does not parse, naming the file.
pub(crate) fn read_samples_beside(report: &Path) -> Result<Option<Vec<CycleSample>>, ReportError> {
    let path = report.with_file_name(SAMPLES_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => {
            parse_samples_csv(&text).map(Some).map_err(|e| ReportError::SamplesFile { path, source: Box::new(e) })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ReportError::Io { path, source }),
    }
}
