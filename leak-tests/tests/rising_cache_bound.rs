//! A reported bound that rises with what it bounds is no bound: the kept-cache store with a 1 MiB
//! block cache whose capacity it raises by 256 KiB whenever the cache is 7/8 full
//! (`KeptCache::raising`), run as `leakcheck check` runs a clean-catalog store, is a leak at the
//! cache's own sites, though the store reports the cache within its capacity at every sample.
//! Process-wide measurement: one test in this file.

#[global_allocator]
static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;

use leak_tests::clean::KeptCache;
use leakcheck::fault::FaultPlan;
use leakcheck::runner::{DEFAULT_CHECK_CYCLES, DEFAULT_MAX_CYCLES_FACTOR, EARLY_LOOK_CYCLES};
use leakcheck::verdict::Consumer;
use leakcheck::{Harness, HarnessConfig, Ledger, Signal, Verdict};

#[test]
fn a_cache_whose_capacity_rises_as_it_fills_is_a_leak() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut store = KeptCache::raising(dir.path(), &ledger).expect("store");
    let cfg = HarnessConfig {
        cycles: DEFAULT_MAX_CYCLES_FACTOR * DEFAULT_CHECK_CYCLES,
        decide_after: Some(DEFAULT_CHECK_CYCLES),
        early_look: Some(EARLY_LOOK_CYCLES),
        plan: FaultPlan::parse("open.db=3%,work.read=5%,close.flush=5%").expect("plan"),
        seed: 1,
        ..HarnessConfig::default()
    };
    let report = Harness::new(cfg).run(&mut store, &ledger).expect("run");
    let retained = report.verdict.signal(Signal::RetainedBytes).expect("the record's verdict");
    let r = retained.retained.as_ref().expect("the record");
    assert_eq!(report.verdict.verdict, Verdict::Leak, "after {} cycles: {r:#?}", report.cycles_run);
    assert_eq!(retained.verdict, Verdict::Leak, "{r:#?}");
    // The cache's report did not explain it: its capacity rose.
    let cache = r.consumers.iter().find(|c| c.consumer == Consumer::BlockCache).expect("the block cache grew");
    assert!(cache.bound_rose, "{cache:?}");
    assert!(
        r.sites.iter().any(|s| s.recurs() && s.consumer == Some(Consumer::BlockCache)),
        "the cache's own sites leak: {:#?}",
        r.sites
    );
}
