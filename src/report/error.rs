//! Why a report could not be read or written.

use std::path::{Path, PathBuf};

/// Reading or writing a report failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a report.
    #[error("{}: not a leakcheck report: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The report has another schema version.
    #[error("{}: report schema version {found}, this leakcheck reads version {expected}", path.display())]
    SchemaVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        expected: u32,
    },
    /// A samples CSV that does not read back.
    #[error("samples CSV, line {line}: {problem}")]
    Samples {
        /// The line (1-based).
        line: usize,
        /// What is wrong there.
        problem: String,
    },
    /// The samples CSV beside a report does not read back.
    #[error("{}: {source}", path.display())]
    SamplesFile {
        /// The CSV.
        path: PathBuf,
        /// What is wrong with it ([`ReportError::Samples`]).
        #[source]
        source: Box<ReportError>,
    },
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io { path: path.to_path_buf(), source }
}
