//! The reference store, run as `leakcheck check` runs it (a fault plan that reaches every close
//! path; check's default cycles, going on while the memory verdict is inconclusive, up to four
//! times as many), comes out
//! clean: the verdict `Clean`, no handle retained in any cycle, no swallowed close error, no lost
//! record, every segment reopenable.
//! Process-wide measurement: one test in this file.

use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::fault::FaultPlan;
use leakcheck::{Harness, HarnessConfig, Ledger, Signal, Verdict};

#[test]
fn the_reference_store_is_clean_under_faults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut store = ReferenceStore::new(ReferenceConfig::new(dir.path()), &ledger).expect("store");
    let cfg = HarnessConfig {
        cycles: leakcheck::runner::DEFAULT_MAX_CYCLES_FACTOR * leakcheck::runner::DEFAULT_CHECK_CYCLES,
        decide_after: Some(leakcheck::runner::DEFAULT_CHECK_CYCLES),
        plan: FaultPlan::parse(
            "close.marker=10%,close.flush=5%,work.write=5%,work.scan=5%,open.db=3%,work.malformed=5%",
        )
        .expect("plan"),
        seed: 7,
        ..HarnessConfig::default()
    };
    let report = Harness::new(cfg).run(&mut store, &ledger).expect("run");
    for s in &report.verdict.signals {
        eprintln!(
            "{:<28} {:<12} {:?} {}",
            s.signal.to_string(),
            s.verdict.name(),
            s.estimate,
            if s.informational { "(informational)" } else { "" }
        );
    }
    let faulted = report.records.iter().filter(|r| !r.faults_fired.is_empty()).count();
    assert!(faulted > 20, "the plan must fire: {faulted} faulted cycles");
    for name in [
        Signal::LiveHandles,
        Signal::SwallowedCloseErrors,
        Signal::Integrity,
        Signal::OpenFdsUnderDir,
        Signal::MapsUnderDir,
    ] {
        let s = report.verdict.signal(name).unwrap_or_else(|| panic!("signal {name}"));
        assert_eq!(s.verdict, Verdict::Clean, "{name}: {s:?}");
    }
    assert!(
        report.records.iter().any(|r| r.integrity.count_of("malformed_offsets_skipped") > 0),
        "malformed entries must be met"
    );
    assert!(report.verdict.leaking_signals().is_empty(), "{:?}", report.verdict.leaking_signals());
    assert_eq!(report.verdict.verdict, Verdict::Clean, "after {} cycles", report.cycles_run);
    let back = report.verdict.baseline_return.as_ref().expect("baseline return");
    assert_eq!((back.verdict, back.fds_under_dir_delta, back.maps_under_dir_delta), (Verdict::Clean, Some(0), Some(0)));
}
