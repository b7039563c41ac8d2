//! The fault matrix judges bytes: a leak of 1 KiB whenever the close-time marker write fails
//! (the planted `marker-failure-leaks-bytes`) makes exactly the plans in which that write fails
//! a leak, at about 1 KiB per failed close, and no other plan. Process-wide measurement: one
//! test in this file.

use leak_tests::reference::{ReferenceConfig, ReferenceStore, Variant};
use leakcheck::{Harness, Ledger, Verdict};

#[test]
fn a_leak_on_one_error_path_is_the_matrix_entry_of_that_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut config = ReferenceConfig::new(dir.path());
    config.variant = Variant::MarkerFailureLeaksBytes;
    // One live segment per task: every fault point at a third of the default's cost per cycle.
    config.segments = 1;
    let closes = u64::from(config.tasks) * u64::from(config.segments);
    let mut store = ReferenceStore::new(config, &ledger).expect("store");
    let matrix = Harness::default().fault_matrix(&mut store, &ledger);
    for e in &matrix.entries {
        let bytes = e.bytes.as_ref().unwrap_or_else(|| panic!("{}: bytes not judged", e.plan));
        eprintln!("{:<40} {:<12} {:?}", e.plan, bytes.verdict.name(), bytes.estimate);
    }
    let marker_always =
        matrix.entries.iter().find(|e| e.plan == "close.marker=always").expect("close.marker=always planned");
    let bytes = marker_always.bytes.as_ref().expect("judged");
    assert_eq!(bytes.verdict, Verdict::Leak, "{bytes:?}");
    assert!(!marker_always.clean);
    // Every segment's marker write fails: about 1 KiB per segment closed in the cycle (a cycle
    // may close fewer when an earlier step failed; never more).
    let per_cycle = bytes.estimate.expect("shift").value;
    assert!(
        per_cycle > 0.5 * 1024.0 * closes as f64 && per_cycle < 1.5 * 1024.0 * closes as f64,
        "{per_cycle} for {closes} closes"
    );
    for e in matrix.entries.iter().filter(|e| !e.plan.contains("close.marker")) {
        let b = e.bytes.as_ref().expect("judged");
        assert_ne!(b.verdict, Verdict::Leak, "{}: {b:?}", e.plan);
    }
    assert_eq!(matrix.verdict(), Verdict::Leak);
}
