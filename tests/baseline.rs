//! A run held against a baseline report: the leaks the baseline had pass, a leak it did not
//! have fails, and so does a known leak grown beyond the margin. Process-wide measurement
//! (jemalloc): one test in this file, its checks one after another.
// Rust's allocations reach jemalloc through its `malloc` override, which comes with rocksdb's
// `jemalloc` feature or with `unprefixed-malloc`.
#![cfg(any(feature = "rocksdb", feature = "unprefixed-malloc"))]

use std::path::Path;

use leakcheck::runner::RunOutcome;
use leakcheck::{CycleCtx, HandleKind, Ledger, Lifecycle, Verdict};

/// Forgets, every cycle, `n` handles of each kind named.
struct Forgets(Vec<(&'static str, usize)>);

impl Lifecycle for Forgets {
    type Store = ();
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<(), String> {
        for (kind, n) in &self.0 {
            for _ in 0..*n {
                std::mem::forget(ctx.ledger.register(HandleKind::Other(kind)));
            }
        }
        Ok(())
    }

    fn work(&mut self, _store: &mut (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }
}

fn check(leaks: Vec<(&'static str, usize)>, report: Option<&Path>, baseline: Option<&Path>) -> RunOutcome {
    let ledger = Ledger::new();
    let mut store = Forgets(leaks);
    let mut c = leakcheck::check(&mut store, &ledger).cycles(30);
    if let Some(dir) = report {
        c = c.report(dir);
    }
    if let Some(file) = baseline {
        c = c.baseline(file, 0.25);
    }
    c.run().expect("the check runs")
}

#[test]
fn only_what_the_baseline_did_not_leak_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base_dir = dir.path().join("base");
    let base = check(vec![("socket", 1)], Some(&base_dir), None);
    assert_eq!((base.verdict(), base.exit_code()), (Verdict::Leak, 1), "{base}");
    let baseline = base_dir.join("report.json");

    // The same leak: known, the run passes.
    let same = check(vec![("socket", 1)], None, Some(&baseline));
    let b = same.report.baseline.as_ref().expect("held against the baseline");
    assert_eq!((b.new.len(), b.more.len(), b.known.len()), (0, 0, 1), "{same}");
    assert!(same.passes_baseline(), "{same}");
    assert_eq!((same.verdict(), same.exit_code()), (Verdict::Leak, 0), "the verdict stays true: {same}");
    same.assert_clean();

    // A leak the baseline did not have: new, the run fails and says which.
    let new = check(vec![("socket", 1), ("timer", 1)], None, Some(&baseline));
    let b = new.report.baseline.as_ref().expect("held against the baseline");
    assert_eq!(b.new.len(), 1, "{new}");
    assert_eq!(b.new[0].finding.signal, "live_handles.timer");
    assert!(!new.passes_baseline() && new.exit_code() == 1, "{new}");
    assert!(new.table().contains("new since the baseline: 1 timer handle retained"), "{new}");

    // The known leak, three times as large: beyond the 25% margin.
    let more = check(vec![("socket", 3)], None, Some(&baseline));
    let b = more.report.baseline.as_ref().expect("held against the baseline");
    assert_eq!((b.new.len(), b.more.len()), (0, 1), "{more}");
    let grown = &b.more[0];
    assert!(grown.finding.per_cycle > grown.baseline_per_cycle.map(|p| p * 1.25), "{grown:?}");
    assert_eq!(more.exit_code(), 1, "{more}");

    // A baseline that is not a report: no run, the file named.
    let bogus = dir.path().join("bogus.json");
    std::fs::write(&bogus, "{}").expect("write");
    let ledger = Ledger::new();
    let err = leakcheck::check(&mut Forgets(Vec::new()), &ledger).cycles(30).baseline(&bogus, 0.25).run();
    let text = err.map(|o| o.verdict()).expect_err("a bad baseline stops the run").to_string();
    assert!(text.contains("--baseline") && text.contains("bogus.json"), "{text}");
}
