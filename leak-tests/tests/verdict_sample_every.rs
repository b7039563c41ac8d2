//! Slopes are per cycle whatever the sampling: the same planted leak (1 KiB of C malloc per
//! cycle around the fresh-DB loop) gives the same slope, within its interval, when a settled
//! sample is taken every cycle, every 5th or every 10th. Process-wide measurement: one test in
//! this file; its three runs are sequential.

use leak_tests::fresh::FreshDbLoop;
use leak_tests::planted::PlantedMalloc;
use leakcheck::{Harness, HarnessConfig, Ledger, Signal, Verdict};

const CYCLES: u64 = 220;

#[test]
fn the_slope_is_per_cycle_at_any_sample_interval() {
    let mut slopes = Vec::new();
    for every in [1u64, 5, 10] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = Ledger::new();
        let mut store = PlantedMalloc::new(FreshDbLoop::new(dir.path(), 100), 1024, CYCLES);
        let cfg = HarnessConfig { cycles: CYCLES, sample_every: every, ..HarnessConfig::default() };
        let report = Harness::new(cfg).run(&mut store, &ledger).expect("run");
        let s = report.verdict.signal(Signal::UnexplainedBytes).expect("bytes signal").clone();
        eprintln!("sample every {every}: {:?} {:?} from {} samples", s.verdict, s.estimate, s.cycles);
        assert_eq!(s.verdict, Verdict::Leak, "every {every}: {s:?}");
        assert_eq!(report.samples.len() as u64, CYCLES.div_ceil(every));
        let e = s.estimate.expect("estimate");
        slopes.push((every, e.value, e.lower, e.upper));
    }
    // Each estimate lies within every other run's interval (or within 1% of it: these runs are
    // exact, their intervals a point), and near the planted 1 KiB (a per-sample slope would read
    // 5 and 10 times higher at every 5th and 10th cycle).
    for &(every, slope, _, _) in &slopes {
        assert!((900.0..1300.0).contains(&slope), "every {every}: {slope} B/cycle");
        for &(other, estimate, lower, upper) in &slopes {
            let (lower, upper) = (lower.min(0.99 * estimate), upper.max(1.01 * estimate));
            assert!(
                lower <= slope && slope <= upper,
                "every {every}: {slope} outside the interval of every {other}: [{lower}, {upper}]"
            );
        }
    }
}
