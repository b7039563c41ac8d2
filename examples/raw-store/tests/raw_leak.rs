//! The raw store that parks its offsets options on a failed flush leaks C++ memory no handle
//! count sees: the byte signals call it a leak, and the finding names the store's own code that
//! allocated what was kept. The byte signals are process-wide, so this is the only check in this
//! file (this file is its own process).

use leakcheck::verdict::Unmeasured;
use leakcheck::{Ledger, Signal, Verdict};
use raw_store::{OffsetStore, Variant};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[test]
fn parked_options_are_a_leak_of_bytes_at_the_line_that_made_them() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ledger = Ledger::new();
    let mut store = OffsetStore::new(dir.path().join("offsets"), Variant::ParksOptionsOnFailedFlush);
    let outcome = leakcheck::check(&mut store, &ledger).faults("close.flush=25%").run()?;
    let r = &outcome.report;
    assert_eq!(outcome.verdict(), Verdict::Leak, "{outcome}");
    // Only the bytes could see it: every leaking signal is a byte signal, the handles unmeasured.
    let leaking = r.verdict.leaking_signals();
    assert!(leaking.iter().all(|s| s.signal().class() == leakcheck::Class::Bytes), "{leaking:?}\n{outcome}");
    assert!(leaking.iter().any(|s| s.signal() == Signal::RetainedBytes), "{leaking:?}\n{outcome}");
    let handles = r.signal(Signal::LiveHandles).ok_or("a live_handles row")?;
    assert_eq!(handles.not_measured, Some(Unmeasured::NoHandles));
    // The first finding is the kept allocation, at the store's own code that made it.
    let first = r.findings().into_iter().next().ok_or("a finding")?;
    assert_eq!(first.signal, "retained_bytes", "{outcome}");
    assert!(first.frames.iter().any(|f| f.contains("OffsetStore::open_db")), "{:?}\n{outcome}", first.frames);
    // Its place is the line that made the options parked.
    let made = include_str!("../src/lib.rs")
        .lines()
        .position(|l| l.contains("let mut offsets_options = Options::default();"))
        .ok_or("the line in src/lib.rs")?;
    let place = first.place.as_ref().ok_or("a place")?;
    assert!(place.file.ends_with("raw-store/src/lib.rs") && place.line as usize == made + 1, "{place}\n{outcome}");
    assert!(outcome.summary().starts_with("leak: retained_bytes: "), "{}", outcome.summary());
    Ok(())
}
