//! The planted-leak catalog, run as the detector's own test.
//!
//! The variants are the reference store with one planted bug each
//! (`leakcheck::harness::reference::Variant`, marked `PLANTED(name)` in its code) and the catalog
//! of what each must trip is `leakcheck::harness::mutants::CATALOG`. This crate runs them: the
//! `leak-variant` binary runs one variant per process (process-wide signals stay clean), and
//! `tests/detection_matrix.rs` spawns it for every variant and checks the detection matrix.
