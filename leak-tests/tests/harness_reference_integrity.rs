//! The reference store's data guarantees under heavy work-phase faults, and the reproducibility of
//! a seeded plan across worker threads. Only the ledger and the integrity check are asserted (no
//! process-wide signal), so the tests may share a process.
//!
//! Found by CI: a write error on one partition lets the other run ahead in stream time; a later
//! error before the retention step leaves an expired segment on disk; the lagging partition's
//! records for it are dropped as late while its offset advances. The check used to owe those
//! records; it now owes records from the retention floor, and this plan reaches the case within a
//! few dozen cycles (each of six seeds tried did, before the fix).

use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::fault::FaultPlan;
use leakcheck::harness::{CycleRecord, Phase};
use leakcheck::{Harness, HarnessConfig, Ledger};

fn run(plan: &str, seed: u64, cycles: u64) -> Vec<CycleRecord> {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut store = ReferenceStore::new(ReferenceConfig::new(dir.path()), &ledger).expect("store");
    let cfg = HarnessConfig {
        cycles,
        // Memory is not judged here: one sample at the start, one at the end.
        sample_every: cycles,
        plan: FaultPlan::parse(plan).expect("plan"),
        seed,
        ..HarnessConfig::default()
    };
    Harness::new(cfg).run(&mut store, &ledger).expect("run").records
}

#[test]
fn work_faults_lose_no_committed_record() {
    let records = run("work.write=20%,work.scan=30%,work.commit=5%,work.roll=5%", 11, 120);
    for r in &records {
        assert_eq!(r.integrity.total_violations(), 0, "cycle {}: {:?}", r.cycle, r.integrity);
        assert!(r.retained_handles.is_empty(), "cycle {}: {:?}", r.cycle, r.retained_handles);
    }
    let failed_work = records.iter().filter(|r| matches!(r.work, Phase::Error(_))).count();
    let late: u64 = records.iter().map(|r| r.integrity.count_of("late_records_dropped")).sum();
    let checked: u64 = records.iter().map(|r| r.integrity.records_checked).sum();
    assert!(failed_work > 30, "the plan must cut work short often: {failed_work} cycles");
    assert!(late > 0, "a lagging partition must meet an expired segment");
    assert!(checked > 10_000, "records must be checked: {checked}");
}

/// What a cycle did, without the messages (they name temporary directories).
fn shape(records: &[CycleRecord]) -> Vec<String> {
    let phase = |p: &Phase| match p {
        Phase::Ok => "ok",
        Phase::Error(_) => "error",
        Phase::Panic(_) => "panic",
        Phase::Skipped => "skipped",
    };
    records
        .iter()
        .map(|r| format!("{:?} {} {} {}", r.faults_fired, phase(&r.open), phase(&r.work), phase(&r.close)))
        .collect()
}

#[test]
fn a_seed_reproduces_its_faults_across_worker_threads() {
    // Two tasks on two worker threads check the same points at the same time; which check fails
    // must depend on the seed alone, not on which thread gets there first.
    let plan = "close.marker=20%,work.write=10%,work.scan=10%,open.db=5%";
    let first = shape(&run(plan, 5, 40));
    let again = shape(&run(plan, 5, 40));
    assert_eq!(first, again);
    let faulted = first.iter().filter(|s| !s.starts_with("{}")).count();
    assert!(faulted > 10, "the plan must fire: {faulted} faulted cycles");
    assert_ne!(first, shape(&run(plan, 6, 40)), "another seed, other faults");
}
