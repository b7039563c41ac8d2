//! `leakcheck::check(..).profile(n)` in a `cargo test` binary started with the profiler ready: a
//! planted C allocation of 4 KiB per cycle is named by its call stack in the outcome's report.
//! Its own process (jemalloc's start-up options are per binary).

use leak_tests::fresh::FreshDbLoop;
use leak_tests::planted::PlantedMalloc;
use leakcheck::Ledger;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

leakcheck::heap_profiling_ready!();

#[test]
fn a_profiled_check_names_the_stack_of_a_raw_leak() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut store = PlantedMalloc::new(FreshDbLoop::new(dir.path(), 100), 4096, 200);
    let outcome =
        leakcheck::check(&mut store, &ledger).cycles(60).max_cycles(60).faults("none").profile(12).run().expect("run");
    // The stacks are the property here, not the verdict: at a fine rate the profiler's own
    // records move the byte signals (see docs/guide.md), so a 60-cycle verdict may stay open.
    let r = &outcome.report;
    let top = r.heap_growth.first().unwrap_or_else(|| panic!("no stack grew:\n{}", outcome.table()));
    assert!(top.frames.iter().take(2).any(|f| f.contains("PlantedMalloc")), "{:#?}", r.heap_growth);
    assert!((2048.0..8192.0).contains(&top.bytes_per_cycle), "{top:?}");
}
