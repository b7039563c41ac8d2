//! The planted-leak catalog, run as the detector's own test.
//!
//! The variants are the reference store with one planted bug each
//! (`leakcheck::harness::reference::Variant`, marked `PLANTED(name)` in its code) and the catalog
//! of what each must trip is `leakcheck::harness::mutants::CATALOG`. This crate runs them: the
//! `leak-variant` binary runs one variant per process (process-wide signals stay clean), and
//! `tests/detection_matrix.rs` spawns it for every variant and checks the detection matrix.

use std::path::Path;
use std::process::ExitCode;

/// What both binaries do with one run: make a scratch directory, run `run` in it, print the
/// outcome it returns (one line of JSON) and exit 0; on any failure print `tool: ...` and exit 2.
pub fn run_in_scratch(tool: &str, run: impl FnOnce(&Path) -> Result<String, String>) -> ExitCode {
    let dir = match tempfile::Builder::new().prefix(tool).tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{tool}: cannot create a scratch directory: {e}");
            return ExitCode::from(2);
        }
    };
    match run(dir.path()) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{tool}: {e}");
            ExitCode::from(2)
        }
    }
}
