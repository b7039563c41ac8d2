//! The ledger on its own (no RocksDB): counts, sites, owners, holds, shared handles, swallowed
//! close errors, scoping. No process-wide signals here, so tests may run in parallel.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use leakcheck::{assert_no_leaks, owner_scope, CloseResult, Depth, HandleKind, Ledger, Settle};

const SOCKET: HandleKind = HandleKind::Other("socket");

#[test]
fn register_and_release_move_the_live_count() {
    let ledger = Ledger::new();
    let a = ledger.register(HandleKind::Options);
    let b = ledger.register(HandleKind::Options);
    assert_eq!(ledger.live(HandleKind::Options), 2);
    drop(a);
    assert_eq!(ledger.live(HandleKind::Options), 1);
    drop(b);
    assert_eq!(ledger.live(HandleKind::Options), 0);
    let report = ledger.report();
    assert!(report.is_clean(), "{report}");
    let counts = report.kinds["Options"];
    assert_eq!((counts.created, counts.released, counts.live), (2, 2, 0));
}

#[test]
fn a_forgotten_handle_is_reported_with_this_files_line_and_owner() {
    let ledger = Ledger::new();
    let line;
    {
        let _task = owner_scope("task 0_1");
        let _segment = owner_scope("segment 1717");
        let _cf = owner_scope("offsets");
        line = line!() + 1;
        let token = ledger.register(HandleKind::Options);
        std::mem::forget(token);
    }
    let report = ledger.report();
    assert_eq!(report.retained_count(), 1, "{report}");
    let group = &report.retained[0];
    assert_eq!(group.kind, HandleKind::Options);
    let site = group.site.as_deref().expect("site at default depth");
    assert!(site.starts_with(&format!("tests/ledger_core.rs:{line}:")), "site {site}");
    assert_eq!(group.owner.as_deref(), Some("task 0_1 / segment 1717 / offsets"));
    let text = report.to_string();
    assert!(text.contains(site) && text.contains("task 0_1 / segment 1717 / offsets"), "{text}");
    assert!(ledger.verify_with(Settle::NONE).is_err());
}

#[test]
fn box_leak_and_arc_cycles_are_retained_handles() {
    struct Node {
        _token: leakcheck::Token,
        next: Mutex<Option<Arc<Node>>>,
    }
    let ledger = Ledger::new();
    let _leaked: &'static mut leakcheck::Token = Box::leak(Box::new(ledger.register(SOCKET)));
    let a = Arc::new(Node { _token: ledger.register(SOCKET), next: Mutex::new(None) });
    let b = Arc::new(Node { _token: ledger.register(SOCKET), next: Mutex::new(Some(a.clone())) });
    *a.next.lock().unwrap() = Some(b.clone());
    drop((a, b));
    assert_eq!(ledger.report().retained_count(), 3);
}

#[test]
fn parallel_ledgers_never_see_each_others_handles() {
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            std::thread::spawn(move || {
                let ledger = Ledger::new();
                let mut kept = Vec::new();
                for i in 0..1000u64 {
                    let token = ledger.register(HandleKind::Iterator);
                    if i % 100 == t {
                        kept.push(token);
                    }
                }
                (t, ledger.report())
            })
        })
        .collect();
    for th in threads {
        let (_t, report) = th.join().expect("thread");
        // Each ledger saw exactly its own 1000 registrations, 10 of them still alive.
        let c = report.kinds["Iterator"];
        assert_eq!((c.created, c.live), (1000, 10), "{report}");
    }
}

#[test]
fn a_held_handle_is_a_deferred_release_naming_its_holder() {
    let ledger = Ledger::new();
    let cache = ledger.register(HandleKind::Cache);
    let db = ledger.register(HandleKind::Db);
    let hold = cache.held_by(&db);
    drop(cache);
    // The native cache lives on inside the DB.
    assert_eq!(ledger.live(HandleKind::Cache), 1);
    let report = ledger.report();
    let group = report.retained.iter().find(|g| g.kind == HandleKind::Cache).expect("cache group");
    assert!(group.wrapper_dropped, "{report}");
    assert_eq!(group.held_by.len(), 1, "{report}");
    assert!(group.held_by[0].starts_with(&format!("DB #{}", db.id())), "{report}");
    // The DB releases what it holds when it goes.
    drop(hold);
    drop(db);
    assert_eq!(ledger.live(HandleKind::Cache), 0);
    assert_no_leaks!(ledger);
}

#[test]
fn declared_shared_handles_pass_and_one_extra_cache_fails_by_name() {
    let ledger = Ledger::new();
    let shared_cache = ledger.register(HandleKind::Cache);
    let wbm = ledger.register(HandleKind::WriteBufferManager);
    ledger.declare_shared(&shared_cache);
    wbm.declare_shared();
    let report = ledger.verify_with(Settle::NONE).expect("declared shared handles are expected");
    assert_eq!(report.declared_shared.len(), 2);

    let extra_line = line!() + 1;
    let extra = ledger.register(HandleKind::Cache);
    let err = ledger.verify_with(Settle::NONE).expect_err("an undeclared cache is a leak");
    assert_eq!(err.report.retained_of(HandleKind::Cache), 1);
    let msg = err.to_string();
    assert!(msg.contains("Cache") && msg.contains(&format!("ledger_core.rs:{extra_line}:")), "{msg}");
    drop(extra);
    assert!(ledger.verify_with(Settle::NONE).is_ok());
    drop((shared_cache, wbm));
    assert_eq!(ledger.live_total(), 0);
}

#[test]
fn a_close_error_dropped_unobserved_is_swallowed_and_a_taken_one_is_not() {
    let ledger = Ledger::new();
    let _scope = owner_scope("task 1_0");
    let line = line!() + 1;
    let _ = CloseResult::<String>::new(&ledger, "segment store", Err("marker write failed".into()));
    let observed: CloseResult<String> = CloseResult::new(&ledger, "segment store", Err("second".into()));
    assert_eq!(observed.into_result(), Err("second".to_string()));
    let fine: CloseResult<String> = CloseResult::new(&ledger, "segment store", Ok(()));
    drop(fine);

    let report = ledger.report();
    assert!(!report.is_clean());
    assert_eq!(report.swallowed_close_errors.len(), 1, "{report}");
    let s = &report.swallowed_close_errors[0];
    assert_eq!(s.error, "marker write failed");
    assert!(s.site.starts_with(&format!("tests/ledger_core.rs:{line}:")), "{}", s.site);
    assert_eq!(s.owner.as_deref(), Some("task 1_0"));
    assert!(report.to_string().contains("marker write failed"));
}

#[test]
fn counts_depth_keeps_exact_counts_without_sites() {
    let ledger = Ledger::with_depth(Depth::Counts);
    let t = ledger.register(HandleKind::WriteBatch);
    std::mem::forget(t);
    let report = ledger.report();
    assert_eq!(report.retained_count(), 1);
    assert_eq!(report.retained[0].site, None);
    // Raising the depth later: old handles stay counted (without site), new ones get sites.
    ledger.set_depth(Depth::Sites);
    std::mem::forget(ledger.register(HandleKind::WriteBatch));
    let report = ledger.report();
    assert_eq!(report.retained_of(HandleKind::WriteBatch), 2, "{report}");
    assert_eq!(report.retained.iter().filter(|g| g.site.is_some()).count(), 1);
}

#[test]
fn backtraces_depth_captures_a_backtrace() {
    let ledger = Ledger::with_depth(Depth::Backtraces);
    std::mem::forget(ledger.register(SOCKET));
    let report = ledger.report();
    assert!(report.retained[0].backtrace.as_deref().is_some_and(|b| !b.is_empty()));
}

#[test]
fn the_guard_panics_on_a_leak_but_not_while_already_panicking() {
    let ledger = Ledger::new();
    let leaked = catch_unwind(AssertUnwindSafe(|| {
        let _guard = ledger.guard().settle(Settle::NONE);
        std::mem::forget(ledger.register(SOCKET));
    }));
    let msg = leaked.expect_err("guard must panic");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("socket"), "{msg}");

    let other = catch_unwind(AssertUnwindSafe(|| {
        let _guard = ledger.guard().settle(Settle::NONE);
        panic!("the test's own failure");
    }));
    let msg = other.expect_err("the test's panic propagates");
    assert_eq!(msg.downcast_ref::<&str>().copied(), Some("the test's own failure"));
}

#[test]
fn verify_waits_for_a_handle_released_by_another_thread() {
    let ledger = Ledger::new();
    let token = ledger.register(HandleKind::Snapshot);
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        drop(token);
    });
    assert!(ledger.verify().is_ok());
    t.join().expect("thread");
}

#[test]
fn depth_parses_strictly() {
    assert_eq!("counts".parse::<Depth>().ok(), Some(Depth::Counts));
    assert_eq!("backtraces".parse::<Depth>().ok(), Some(Depth::Backtraces));
    let err = "verbose".parse::<Depth>().expect_err("unknown depth");
    assert!(err.to_string().contains("verbose"));
}

#[test]
fn reports_round_trip_through_json() {
    let ledger = Ledger::new();
    let _scope = owner_scope("task 2_3");
    std::mem::forget(ledger.register(HandleKind::Env));
    let report = ledger.report();
    let json = serde_json::to_string(&report).expect("serialize");
    let back: leakcheck::LeakReport = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, report);
}
