//! The raw store, on rust-rocksdb's own types, is clean under its flush failing in a quarter of
//! the cycles, judged by the bytes: what each cycle allocated and never gave back, by stack. The
//! handle rows read `not measured` (it registers nothing). The byte signals are process-wide, so
//! this is the only check in this file (this file is its own process).

use leakcheck::verdict::Unmeasured;
use leakcheck::{Ledger, Signal, Verdict};
use raw_store::{OffsetStore, Variant};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[test]
fn the_raw_store_is_clean_by_its_bytes() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ledger = Ledger::new();
    // The directory does not exist yet: the check makes it before the first cycle.
    let mut store = OffsetStore::new(dir.path().join("offsets"), Variant::Clean);
    let outcome = leakcheck::check(&mut store, &ledger).faults("close.flush=25%").run()?;
    outcome.assert_clean();
    let r = &outcome.report;
    assert!(r.cycles_summary.close_errors > 0, "the flush failed in some cycles");
    // Judged by the bytes: both byte signals measured and clean.
    for signal in [Signal::UnexplainedBytes, Signal::RetainedBytes] {
        let row = r.signal(signal).ok_or("a byte row")?;
        assert!(!row.informational && row.verdict == Verdict::Clean, "{row:?}\n{outcome}");
    }
    // The handle rows measured nothing, and say so; the integrity check ran.
    let handles = r.signal(Signal::LiveHandles).ok_or("a live_handles row")?;
    assert_eq!(handles.not_measured, Some(Unmeasured::NoHandles));
    assert!(r.signal(Signal::Integrity).is_some_and(|s| s.verdict == Verdict::Clean));
    assert!(r.cycles_summary.records_checked > 0);
    let summary = outcome.summary();
    assert!(summary.starts_with("clean after ") && summary.contains("(retained_bytes)"), "{summary}");
    assert!(summary.contains("not measured: ") && summary.contains("live_handles"), "{summary}");
    Ok(())
}
