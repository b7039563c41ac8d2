//! The kv service releases everything it creates, under its default fault plan (every fault
//! point failing in 5% of its calls): one `leakcheck::check` call. The byte and OS signals are
//! process-wide, so this is the only check in this file (this file is its own process).

use kv_service::KvService;
use leakcheck::{HandleKind, Ledger, Signal, Verdict};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[test]
fn the_kv_service_is_clean_under_faults() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ledger = Ledger::new();
    let mut service = KvService::new(dir.path().join("kv"), &ledger, 8 << 20)?;
    let outcome = leakcheck::check(&mut service, &ledger).cycles(200).run()?;
    outcome.assert_clean();
    // What "clean" rests on: faults fired on every path, nothing retained, the bytes judged.
    let r = &outcome.report;
    let c = &r.cycles_summary;
    assert!(c.open_errors > 0 && c.work_errors > 0 && c.close_errors > 0, "every phase failed sometimes: {c:?}");
    assert_eq!(r.ledger.retained.len(), 0);
    assert_eq!(r.ledger.declared_shared.iter().map(|g| g.count).sum::<u64>(), 1, "the shared cache, declared");
    assert_eq!(ledger.live(HandleKind::Cache), 0, "let go of after the run (Lifecycle::let_go)");
    // The counter of the process's bytes, judged clean; or shown, not judged, where the record
    // decided and contradicts the counter, or the counter measured no growth (docs/verdict.md, "How
    // the record and the counter agree").
    let counter = r.signal(Signal::UnexplainedBytes).ok_or("no unexplained_bytes row")?;
    assert!(counter.verdict == Verdict::Clean || counter.informational, "{counter:?}");
    // What the cycles allocated and still hold once the cache is let go of, judged by stack.
    let retained = r.signal(Signal::RetainedBytes).ok_or("no retained_bytes row")?;
    assert!(!retained.informational && retained.verdict == Verdict::Clean, "{retained:?}");
    assert_eq!(r.generations.shared_alive, 0);
    assert!(c.records_checked > 0 && r.signal(Signal::Integrity).is_some_and(|s| s.verdict == Verdict::Clean), "{c:?}");
    Ok(())
}
