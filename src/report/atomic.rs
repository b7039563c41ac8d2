//! Crash-safe writing: a file is replaced whole or not at all.

use std::io::Write;
use std::path::Path;

use super::error::io_err;
use super::ReportError;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced, renamed
/// over `path`.
///
/// # Errors
/// The I/O error, naming the file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp =
        tempfile::Builder::new().prefix(".leakcheck-").suffix(".tmp").tempfile_in(dir).map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| ReportError::Io { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}
