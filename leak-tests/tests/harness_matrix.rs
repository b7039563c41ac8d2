//! The reference store through the automatic single- and pair-fault matrix: after every cycle,
//! zero retained handles, exactly the declared shared ones live, no swallowed close error, every
//! segment reopens (no LOCK held), no committed record lost; and no plan's bytes a leak against
//! clean cycles. Process-wide measurement: one test in this file.

use leak_tests::reference::{ReferenceConfig, ReferenceStore, FAULT_POINTS};
use leakcheck::{HandleKind, Harness, Ledger, Verdict};

#[test]
fn every_single_and_pair_fault_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    // Both layouts (task 1 migrates), one live segment per task: every fault point at a third of
    // the default's cost per cycle.
    let mut config = ReferenceConfig::new(dir.path());
    config.segments = 1;
    let tasks = u64::from(config.tasks);
    let mut store = ReferenceStore::new(config, &ledger).expect("store");
    let matrix = Harness::default().fault_matrix(&mut store, &ledger);

    // The clean recording cycle reaches every fault point but the injected-corruption one's
    // effect and the roll (which needs stream time to cross a segment boundary).
    for point in [
        "open.options",
        "open.db",
        "open.restore",
        "work.write",
        "work.commit",
        "work.scan",
        "close.marker",
        "close.flush",
    ] {
        assert!(matrix.points.iter().any(|p| p == point), "clean cycle never passed {point}: {:?}", matrix.points);
    }
    assert!(matrix.points.iter().all(|p| FAULT_POINTS.contains(&p.as_str())));
    let n = matrix.points.len();
    assert_eq!(matrix.entries.len(), 3 * n + n * (n - 1) / 2);

    for e in &matrix.entries {
        if let Some(b) = &e.bytes {
            eprintln!("{:<42} {:<12} {:?}", e.plan, b.verdict.name(), b.estimate);
        }
    }
    let mut panicked_in_close = 0;
    let mut failed_closes = 0;
    for e in &matrix.entries {
        let r = &e.record;
        assert!(r.retained_handles.is_empty(), "{}: retained {:?}", e.plan, r.retained_handles);
        assert_eq!(r.swallowed_close_errors, 0, "{}", e.plan);
        assert_eq!(r.integrity.total_violations(), 0, "{}: {:?}", e.plan, r.integrity);
        assert_eq!(r.integrity.violations_of("lost_records"), 0, "{}", e.plan);
        assert_eq!(
            (r.integrity.violations_of("locks_held"), r.integrity.violations_of("reopen_failures")),
            (0, 0),
            "{}: reopen after a faulted close",
            e.plan
        );
        assert!(e.clean, "{}", e.plan);
        assert_eq!(e.repeats, 6, "{}", e.plan);
        let bytes = e.bytes.as_ref().unwrap_or_else(|| panic!("{}: bytes not judged", e.plan));
        assert_ne!(bytes.verdict, Verdict::Leak, "{}: {bytes:?}", e.plan);
        if e.plan.starts_with("close.") && e.plan.ends_with(":panic") {
            panicked_in_close += matches!(r.close, leakcheck::harness::Phase::Panic(_)) as u32;
        }
        failed_closes += matches!(r.close, leakcheck::harness::Phase::Error(_)) as u32;
    }
    assert!(panicked_in_close >= 2, "close.marker and close.flush panics must be exercised");
    assert!(failed_closes > 0);
    assert!(matrix.clean_cycles_unclean.is_none(), "{:?}", matrix.clean_cycles_unclean);
    assert_eq!(matrix.verdict(), Verdict::Clean);
    // Exactly the declared shared handles are live: one cache and one write buffer manager per task.
    assert_eq!(ledger.live(HandleKind::Cache), tasks);
    assert_eq!(ledger.live(HandleKind::WriteBufferManager), tasks);
    assert_eq!(ledger.live_total(), 2 * tasks);
    eprintln!("{} fault points, {} plans, all clean", n, matrix.entries.len());
}
