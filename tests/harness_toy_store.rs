//! A user-defined store, written in the test, driven by the same harness: the harness is for
//! users' stores, not only the reference one. No RocksDB and no process-wide signal is judged
//! here (the verdict's byte signals are not asserted), so the tests may run in parallel.

use std::collections::BTreeMap;

use leakcheck::fault::FaultPlan;
use leakcheck::harness::Phase;
use leakcheck::{CycleCtx, HandleKind, Harness, HarnessConfig, Integrity, Ledger, Lifecycle, Signal, Token, Verdict};

const CONN: HandleKind = HandleKind::Other("connection");

/// A toy "store": a set of connections, a buffer, and a committed counter.
#[derive(Default)]
struct Toy {
    /// Forget the connection when flushing on close fails (a planted leak).
    leak_on_flush_error: bool,
    committed: u64,
    written: u64,
}

struct Open {
    conns: Vec<Token>,
}

impl Lifecycle for Toy {
    type Store = Open;
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.connect", "work.send", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Open, String> {
        let mut conns = Vec::new();
        for _ in 0..3 {
            if ctx.faults.check_error("open.connect") {
                return Err("connect refused".into()); // `conns` drops: nothing leaks
            }
            conns.push(ctx.ledger.register(CONN));
        }
        Ok(Open { conns })
    }

    fn work(&mut self, _store: &mut Open, ctx: &CycleCtx<'_>) -> Result<(), String> {
        if ctx.faults.check_error("work.send") {
            return Err("send failed".into());
        }
        self.written += 1;
        self.committed = self.written; // commit after the write, never before
        Ok(())
    }

    fn close(&mut self, mut store: Open, ctx: &CycleCtx<'_>) -> Result<(), String> {
        let flushed = if ctx.faults.check_error("close.flush") { Err("flush failed".to_string()) } else { Ok(()) };
        if flushed.is_err() && self.leak_on_flush_error {
            std::mem::forget(store.conns.pop());
        }
        drop(store);
        flushed
    }

    fn check(&mut self, _ctx: &CycleCtx<'_>) -> Integrity {
        let mut i = Integrity::default();
        i.records_checked = self.committed;
        if self.committed > self.written {
            i.violation("lost_records", self.committed - self.written);
        }
        i
    }
}

fn config(plan: &str, cycles: u64) -> HarnessConfig {
    let mut cfg = HarnessConfig { cycles, plan: FaultPlan::parse(plan).expect("plan"), ..HarnessConfig::default() };
    cfg.settle.timeout = std::time::Duration::from_millis(20);
    cfg
}

#[test]
fn a_correct_toy_store_is_clean_under_faults() {
    let ledger = Ledger::new();
    let mut toy = Toy::default();
    let report = Harness::new(config("open.connect=every:4,work.send=every:3,close.flush=every:2", 24))
        .run(&mut toy, &ledger)
        .expect("run");
    assert_eq!(report.cycles_run, 24);
    assert!(report.records.iter().all(|r| r.retained_handles.is_empty()));
    assert!(report.records.iter().any(|r| matches!(r.close, Phase::Error(_))));
    assert!(report.records.iter().any(|r| matches!(r.open, Phase::Error(_)) && r.work == Phase::Skipped));
    let handles = report.verdict.signal(Signal::LiveHandles).expect("handles signal");
    assert_eq!(handles.verdict, Verdict::Clean);
    assert_eq!(ledger.live(CONN), 0);
}

#[test]
fn a_leak_on_the_flush_error_path_is_caught_in_the_first_faulted_cycle() {
    let ledger = Ledger::new();
    let mut toy = Toy { leak_on_flush_error: true, ..Toy::default() };
    let report = Harness::new(config("close.flush=nth:3", 6)).run(&mut toy, &ledger).expect("run");
    let first = report.records.iter().position(|r| !r.retained_handles.is_empty());
    assert_eq!(first, Some(2), "the 3rd close fails and leaks");
    assert_eq!(report.records[2].retained_handles, BTreeMap::from([("connection".to_string(), 1)]));
    assert_eq!(report.records[2].faults_fired, BTreeMap::from([("close.flush".to_string(), 1)]));
    let handles = report.verdict.signal_named("live_handles.connection").expect("per-kind signal");
    assert_eq!((handles.verdict, handles.residue.and_then(|r| r.first_cycle)), (Verdict::Leak, Some(2)));
    assert_eq!(report.verdict.verdict, Verdict::Leak);
    let site = report.ledger.retained[0].site.as_deref().unwrap_or("");
    assert!(site.starts_with("tests/harness_toy_store.rs:"), "{site}");
}

#[test]
fn a_panic_in_close_is_an_outcome_and_the_checks_still_run() {
    let ledger = Ledger::new();
    let mut toy = Toy::default();
    let report = Harness::new(config("close.flush=every:2:panic", 4)).run(&mut toy, &ledger).expect("run");
    assert!(matches!(&report.records[1].close, Phase::Panic(m) if m.contains("close.flush")));
    // The store was moved into close and dropped while unwinding: nothing retained.
    assert!(report.records.iter().all(|r| r.retained_handles.is_empty()));
    assert_eq!(ledger.live(CONN), 0);
}

#[test]
fn an_unknown_fault_point_is_rejected_before_any_cycle() {
    let ledger = Ledger::new();
    let mut toy = Toy::default();
    let err = Harness::new(config("close.flsh=always", 4)).run(&mut toy, &ledger).expect_err("unknown point");
    assert!(err.to_string().contains("close.flsh") && err.to_string().contains("close.flush"), "{err}");
}

#[test]
fn parallel_runs_never_trigger_each_others_faults() {
    let runs: Vec<_> = [("close.flush=always", true), ("", false), ("close.flush=always", true), ("", false)]
        .into_iter()
        .map(|(plan, faulted)| {
            std::thread::spawn(move || {
                let ledger = Ledger::new();
                let mut toy = Toy::default();
                let report = Harness::new(config(plan, 20)).run(&mut toy, &ledger).expect("run");
                let failed = report.records.iter().filter(|r| matches!(r.close, Phase::Error(_))).count();
                (faulted, failed)
            })
        })
        .collect();
    for run in runs {
        let (faulted, failed) = run.join().expect("thread");
        assert_eq!(failed, if faulted { 20 } else { 0 });
    }
}

/// When native allocations do not show in jemalloc's counters (a build without the malloc
/// override, a tool preloaded in front of it), the byte signals are unavailable: the run cannot
/// be clean, and the report says why.
#[test]
fn invisible_native_allocations_make_a_run_inconclusive_not_clean() {
    let ledger = Ledger::new();
    let mut toy = Toy::default();
    let mut cfg = config("", 40);
    cfg.allocator_check = leakcheck::harness::simulated_invisible_allocations;
    let report = Harness::new(cfg).run(&mut toy, &ledger).expect("run");
    assert!(report.verdict.bytes_unavailable.is_some(), "the report says why the bytes are unavailable");
    assert_ne!(report.verdict.verdict, Verdict::Clean);
    let bytes: Vec<_> = report.verdict.signals.iter().filter(|s| s.class() == leakcheck::Class::Bytes).collect();
    assert!(!bytes.is_empty());
    assert!(bytes.iter().all(|s| s.verdict != Verdict::Clean), "{bytes:?}");
    // The exact signals still judge: nothing retained.
    assert_eq!(report.verdict.signal(Signal::LiveHandles).map(|s| s.verdict), Some(Verdict::Clean));
}
