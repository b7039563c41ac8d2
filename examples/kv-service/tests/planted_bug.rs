//! The same check catches the kv service's planted bug (a failed flush at close skips the release
//! of the DB's options), names the handle kind and the line that created it, and fails
//! `assert_clean` with the verdict table.

use kv_service::{Bug, KvService};
use leakcheck::{HandleKind, Ledger, Signal, Verdict};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[test]
fn a_release_skipped_on_a_failed_flush_is_caught() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ledger = Ledger::new();
    let mut service = KvService::new(dir.path().join("kv"), &ledger, 8 << 20)?.with_bug(Bug::SkipReleaseOnFlushError);
    // All 30 cycles, to count the leak (by default the check stops at the first retained handle
    // that outlives its settle: the verdict cannot change after it).
    let outcome =
        leakcheck::check(&mut service, &ledger).cycles(30).faults("close.flush=every:3").all_cycles().run()?;
    assert_eq!(outcome.verdict(), Verdict::Leak, "{outcome}");
    let r = &outcome.report;
    assert_eq!(r.signal(Signal::LiveHandles).map(|s| s.verdict), Some(Verdict::Leak));
    let options = r.ledger.retained.iter().find(|g| g.kind == HandleKind::Options).expect("the options are retained");
    assert!(options.site.as_deref().is_some_and(|s| s.contains("src/lib.rs")), "{options:?}");
    // Every third close fails: 10 of 30 cycles leave their options behind.
    assert_eq!(r.ledger.retained_of(leakcheck::HandleKind::Options), 10, "{}", r.ledger);

    let message = std::panic::catch_unwind(|| outcome.assert_clean()).expect_err("assert_clean panics on a leak");
    let text = message.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("verdict: leak") && text.contains("Options"), "{text}");
    Ok(())
}
